//! Server-initiated disconnection of a request's SSE stream (SEP-1699), for the `test_reconnection`
//! tool of the `server-sse-polling` scenario.
//!
//! rmcp 3.11 already numbers the events of each request's stream, opens it with a priming event
//! that carries `retry`, can end it early (`LocalSessionHandle::close_sse_stream`) and replays what
//! the client missed when it comes back with a GET and `Last-Event-ID`. What it lacks is the glue:
//! a handler is not told which stream its request rides on, and nobody learns when the client has
//! come back. And once a response is written to a stream whose client has gone, rmcp drops that
//! stream's cache, so the response is lost unless the client resumed first. `ReconnectingSessions`
//! wraps `LocalSessionManager` to give the handler a `RequestStream` (in the request's extensions)
//! and to tell it when the client resumed, so the tool answers only then.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures::Stream;
use rmcp::model::{ClientJsonRpcMessage, GetExtensions, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::SessionManager;
use rmcp::transport::streamable_http_server::session::ServerSseMessage;
use rmcp::transport::streamable_http_server::session::SessionId;
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionHandle, LocalSessionManager, LocalSessionManagerError, SessionError,
    SessionTransport,
};
use tokio::sync::Notify;

/// A `LocalSessionManager` whose request streams can be ended by their own request's handler.
pub struct ReconnectingSessions {
    inner: LocalSessionManager,
    resumes: Arc<Resumes>,
}

impl ReconnectingSessions {
    /// Sessions whose request streams open with a priming event carrying `retry`.
    pub fn new(retry: Duration) -> Self {
        let mut inner = LocalSessionManager::default();
        inner.session_config.sse_retry = Some(retry);
        Self {
            inner,
            resumes: Arc::default(),
        }
    }

    async fn session(
        &self,
        id: &SessionId,
    ) -> Result<LocalSessionHandle, LocalSessionManagerError> {
        self.inner
            .sessions
            .read()
            .await
            .get(id)
            .cloned()
            .ok_or_else(|| LocalSessionManagerError::SessionNotFound(id.clone()))
    }
}

/// The SSE response stream that carries one request, as its handler finds it in
/// `RequestContext::extensions`.
#[derive(Clone)]
pub struct RequestStream {
    session: LocalSessionHandle,
    key: StreamKey,
    resumes: Arc<Resumes>,
}

impl RequestStream {
    /// Ends the stream with a priming event that tells the client to reconnect after `retry`, then
    /// waits until the client resumes it (GET with `Last-Event-ID`), for at most `patience`.
    /// Returns whether it did resume in time.
    pub async fn close_and_await_resume(
        &self,
        retry: Duration,
        patience: Duration,
    ) -> Result<bool, SessionError> {
        // Registered before the stream ends, so a resume cannot come before anyone waits for it.
        let resumed = self.resumes.register(self.key.clone());
        let closed = self
            .session
            .close_sse_stream(self.key.http_request_id, Some(retry))
            .await;
        let came_back = match closed {
            Ok(()) => tokio::time::timeout(patience, resumed.notified())
                .await
                .is_ok(),
            Err(_) => false,
        };
        self.resumes.forget(&self.key);
        closed.map(|()| came_back)
    }
}

/// A request stream: the session, and rmcp's number for the HTTP request within it.
#[derive(Clone, PartialEq, Eq, Hash)]
struct StreamKey {
    session: SessionId,
    http_request_id: u64,
}

/// The streams whose handlers wait for the client to resume them.
#[derive(Default)]
struct Resumes(Mutex<HashMap<StreamKey, Arc<Notify>>>);

impl Resumes {
    fn register(&self, key: StreamKey) -> Arc<Notify> {
        let notify = Arc::new(Notify::new());
        self.lock().insert(key, notify.clone());
        notify
    }

    fn forget(&self, key: &StreamKey) {
        self.lock().remove(key);
    }

    fn resumed(&self, key: &StreamKey) {
        if let Some(notify) = self.lock().get(key) {
            // A permit is kept if the handler is not waiting yet.
            notify.notify_one();
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<StreamKey, Arc<Notify>>> {
        // The map stays consistent whatever panicked while holding it: each operation is one call.
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The HTTP request number in one of rmcp's request-stream event ids, `<index>/<http request>`
/// (events of the standalone GET stream have no `/`).
fn http_request_of(event_id: &str) -> Option<u64> {
    event_id.split_once('/')?.1.parse().ok()
}

impl SessionManager for ReconnectingSessions {
    type Error = LocalSessionManagerError;
    type Transport = SessionTransport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        self.inner.create_session().await
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        self.inner.initialize_session(id, message).await
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        self.inner.has_session(id).await
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        self.inner.close_session(id).await
    }

    /// What `LocalSessionManager::create_stream` does, plus the `RequestStream` extension.
    async fn create_stream(
        &self,
        id: &SessionId,
        mut message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let session = self.session(id).await?;
        let receiver = session.establish_request_wise_channel().await?;
        if let (ClientJsonRpcMessage::Request(request), Some(http_request_id)) =
            (&mut message, receiver.http_request_id)
        {
            request.request.extensions_mut().insert(RequestStream {
                session: session.clone(),
                key: StreamKey {
                    session: id.clone(),
                    http_request_id,
                },
                resumes: self.resumes.clone(),
            });
        }
        session
            .push_message(message, receiver.http_request_id)
            .await?;
        let mut events = receiver.inner;
        Ok(futures::stream::poll_fn(move |cx| events.poll_recv(cx)))
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        self.inner.accept_message(id, message).await
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.inner.create_standalone_stream(id).await
    }

    /// Resumes as `LocalSessionManager` does, then wakes the handler waiting for that stream.
    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let http_request_id = http_request_of(&last_event_id);
        let stream = self.inner.resume(id, last_event_id).await?;
        if let Some(http_request_id) = http_request_id {
            self.resumes.resumed(&StreamKey {
                session: id.clone(),
                http_request_id,
            });
        }
        Ok(stream)
    }
}
