//! One Streamable HTTP connection: its shared state, the task that sends its messages in order
//! (a request's answer read beside the others), signing requests in, following a redirect, and
//! ending the MCP session when the connection closes.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use futures::StreamExt;
use futures::channel::mpsc;
use serde_json::Value;

use super::exchange::post;
use super::headers::{
    ACCEPT_BOTH, LAST_EVENT_ID_HEADER, METHOD_HEADER, NAME_HEADER, RoutingHeaders, SESSION_HEADER,
    VERSION_HEADER, check_header, valid_value,
};
use super::listening::{listen, open_listener};
use crate::HostError;
use crate::jsonrpc;
use crate::transport::auth::{self, Authorizer};
use crate::transport::http1::{Endpoint, EndpointError, Response, SendError};
use crate::transport::{Frame, Outgoing, Queued, Sent, Transport};

/// How long after a broken stream the plugin's endpoint is tried, to tell a plugin gone.
const EXIT_SETTLE: std::time::Duration = std::time::Duration::from_millis(200);
/// How long a notification or response may wait for the plugin's acknowledgement (202).
const ACKNOWLEDGE_WAIT: std::time::Duration = std::time::Duration::from_secs(30);
/// How many times one message is sent again after the server refused its authorization.
const MAX_REFUSALS: u32 = 3;
/// How long ending the MCP session (the `DELETE`) may take when the connection closes.
const CLOSE_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// State shared by the POST tasks of one connection.
pub(super) struct Shared {
    pub(super) endpoint: Arc<Endpoint>,
    /// Where a 307 or 308 within the server's origin moved the connection (every later message
    /// goes there).
    pub(super) moved: Mutex<Option<(url::Url, Arc<Endpoint>)>>,
    pub(super) url: String,
    pub(super) session_id: Mutex<Option<String>>,
    pub(super) protocol_version: Arc<OnceLock<String>>,
    pub(super) incoming: mpsc::UnboundedSender<Frame>,
    /// The configured headers (`http_headers`, bearer token), checked at connect.
    pub(super) extra_headers: Vec<(String, String)>,
    /// Signs requests in where the server asks for it (OAuth); never with a configured
    /// `Authorization` header.
    pub(super) auth: Option<Arc<Authorizer>>,
    /// A reachability check is under way: when a plugin dies, every open stream breaks at
    /// once, and one check answers for all of them.
    pub(super) probing: AtomicBool,
}

/// Connects to a Streamable HTTP endpoint. Nothing is sent until the first message.
pub(crate) fn connect(
    url: &str,
    protocol_version: Arc<OnceLock<String>>,
    extra_headers: Vec<(String, String)>,
    auth: Option<Arc<Authorizer>>,
) -> Result<Transport, HostError> {
    let failed = |reason| HostError::Connect {
        target: url.to_owned(),
        reason,
    };
    let endpoint = Endpoint::shared(url).map_err(|err| failed(err.to_string()))?;
    for (name, value) in &extra_headers {
        check_header(name, value).map_err(|err| failed(err.to_string()))?;
    }
    // A configured Authorization header is the server's credential: OAuth stays out of its way.
    let auth = auth.filter(|_| {
        !extra_headers
            .iter()
            .any(|(name, _)| name.eq_ignore_ascii_case("authorization"))
    });
    // futures' channels allocate per message; tokio's reserve a block of 32 up front, which
    // every idle session would hold.
    let (incoming_tx, incoming) = mpsc::unbounded();
    let (outgoing, mut outgoing_rx) = mpsc::unbounded::<(String, Sent)>();
    let queued = Arc::new(Queued::default());
    let counted = Arc::clone(&queued);
    let shared = Arc::new(Shared {
        endpoint,
        moved: Mutex::new(None),
        url: url.to_owned(),
        session_id: Mutex::new(None),
        protocol_version,
        incoming: incoming_tx,
        extra_headers,
        auth,
        probing: AtomicBool::new(false),
    });

    let driver = tokio::spawn(async move {
        // Request streams and the listener live here, so closing the connection ends them.
        let mut streams = tokio::task::JoinSet::new();
        // The stream of each request still open, to end it when the request is cancelled.
        let mut open: HashMap<u64, tokio::task::AbortHandle> = HashMap::new();
        let mut requests: HashMap<tokio::task::Id, u64> = HashMap::new();
        while let Some((message, kind)) = outgoing_rx.next().await {
            counted.taken(message.len());
            if counted.is_full() {
                break;
            }
            while let Some(ended) = streams.try_join_next_with_id() {
                let task = ended.map_or_else(|err| err.id(), |(task, ())| task);
                if let Some(request) = requests.remove(&task) {
                    open.remove(&request);
                }
            }
            if let Sent::Cancel(id) = kind
                && let Some(stream) = open.remove(&id)
            {
                // The answer is not wanted any more: stop reading it, and free the socket.
                stream.abort();
            }
            if let Sent::Request(id) = kind {
                // A request's answer may be a long event stream: read it beside the others.
                let shared = Arc::clone(&shared);
                let stream = streams.spawn(async move { post(&shared, message, Some(id)).await });
                requests.insert(stream.id(), id);
                open.insert(id, stream);
            } else {
                // Notifications and responses are acknowledged at once (202). Sending them in
                // order matters: `notifications/initialized` must arrive before the next call.
                // A server that never acknowledges would hold up everything after: it gets
                // a time limit.
                // Boxed, like the listener's opening and the session's closing below: the
                // driver lives as long as the connection and would otherwise hold room for
                // them all the time.
                if tokio::time::timeout(ACKNOWLEDGE_WAIT, Box::pin(post(&shared, message, None)))
                    .await
                    .is_err()
                {
                    tracing::warn!(target: "formwork::transport", url = %shared.url, "the plugin did not acknowledge a message within {} s", ACKNOWLEDGE_WAIT.as_secs());
                }
                if kind == Sent::Initialized {
                    // Open the listening stream before anything else is sent: a server may put
                    // a request that belongs to no call (an elicitation, say) on it, and drops
                    // it if the stream is not there yet.
                    if let Some(response) = Box::pin(open_listener(&shared)).await {
                        let shared = Arc::clone(&shared);
                        streams.spawn(async move { listen(&shared, response).await });
                    }
                }
            }
        }
        streams.abort_all();
        Box::pin(close_session(&shared)).await;
        let _ = shared
            .incoming
            .unbounded_send(Frame::Closed("the connection was closed".to_owned()));
    });

    Ok(Transport {
        outgoing: Outgoing::Channel {
            sender: outgoing,
            queued,
        },
        incoming: Box::pin(incoming),
        tasks: vec![driver],
    })
}

impl Shared {
    /// Sends one request with the session's headers; `accept` is the `Accept` header.
    pub(super) async fn send(
        &self,
        method: &str,
        accept: &str,
        body: &str,
    ) -> Result<Response, SendError> {
        self.send_resuming(method, accept, body, None).await
    }

    /// [`Shared::send`], resuming an event stream after the event `last_event_id` when given.
    async fn send_resuming(
        &self,
        method: &str,
        accept: &str,
        body: &str,
        last_event_id: Option<&str>,
    ) -> Result<Response, SendError> {
        Box::pin(self.send_signed(method, accept, body, last_event_id))
            .await
            .map(|(response, _)| response)
    }

    /// [`Shared::send_resuming`], also saying which generation of the OAuth token the request
    /// carried.
    pub(super) async fn send_signed(
        &self,
        method: &str,
        accept: &str,
        body: &str,
        last_event_id: Option<&str>,
    ) -> Result<(Response, Option<u64>), SendError> {
        let bearer = match &self.auth {
            Some(auth) => auth.bearer().await,
            None => None,
        };
        let session = self.session_id.lock().ok().and_then(|id| id.clone());
        let mut headers = vec![("accept", accept)];
        if !body.is_empty() {
            headers.push(("content-type", "application/json"));
        }
        // Header values the plugin chose are sent only when they cannot break the request.
        if let Some(id) = session.as_deref().filter(|id| valid_value(id)) {
            headers.push((SESSION_HEADER, id));
        }
        // The parser keeps only ids that are valid header values.
        if let Some(id) = last_event_id {
            headers.push((LAST_EVENT_ID_HEADER, id));
        }
        let routing = RoutingHeaders::of(body);
        match &routing {
            Some(routing) => {
                headers.push((VERSION_HEADER, &routing.version));
                headers.push((METHOD_HEADER, &routing.method));
                if let Some(name) = &routing.name {
                    headers.push((NAME_HEADER, name));
                }
            }
            None => {
                if let Some(version) = self.protocol_version.get().filter(|v| valid_value(v)) {
                    headers.push((VERSION_HEADER, version));
                }
            }
        }
        for (name, value) in &self.extra_headers {
            headers.push((name, value));
        }
        if let Some((_, value)) = &bearer {
            headers.push(("authorization", value));
        }
        let endpoint = self.current_endpoint();
        let response = endpoint
            .send(method, &headers, body.as_bytes())
            .await
            .map_err(|err| {
                let reason = format!("the HTTP request to {} failed: {err}", self.url);
                match err {
                    SendError::Unreachable(_) => SendError::Unreachable(reason),
                    SendError::Failed(_) => SendError::Failed(reason),
                }
            })?;
        if let Some(id) = &response.session_id
            && let Ok(mut session) = self.session_id.lock()
        {
            *session = Some(id.clone());
        }
        Ok((response, bearer.map(|(generation, _)| generation)))
    }

    /// The endpoint messages go to: the configured one, or where a redirect moved them.
    fn current_endpoint(&self) -> Arc<Endpoint> {
        self.moved
            .lock()
            .ok()
            .and_then(|moved| moved.as_ref().map(|(_, endpoint)| Arc::clone(endpoint)))
            .unwrap_or_else(|| Arc::clone(&self.endpoint))
    }

    /// Follows a 307 or 308 to `location` when it stays in the server's origin (the only
    /// redirect MCP requests may take: a message and its credentials are not resent elsewhere).
    /// A relative `location` is resolved against the URL of the request it answers: where an
    /// earlier redirect moved the connection, if one did.
    pub(super) fn follow(&self, location: &str) -> Result<(), RedirectError> {
        let base = url::Url::parse(&self.url)?;
        let current = self
            .moved
            .lock()
            .ok()
            .and_then(|moved| moved.as_ref().map(|(url, _)| url.clone()))
            .unwrap_or_else(|| base.clone());
        let next = current
            .join(location)
            .map_err(|source| RedirectError::NotAUrl {
                location: location.to_owned(),
                source,
            })?;
        if next.origin() != base.origin() {
            return Err(RedirectError::OtherOrigin(
                next.origin().ascii_serialization(),
            ));
        }
        let endpoint = Endpoint::shared(next.as_str())?;
        if let Ok(mut moved) = self.moved.lock() {
            *moved = Some((next, endpoint));
        }
        Ok(())
    }

    pub(super) fn has_session(&self) -> bool {
        self.session_id.lock().is_ok_and(|id| id.is_some())
    }

    /// After a request or a stream broke: if the plugin cannot be reached any more, the
    /// connection is over (its forms end, its calls fail), not only that one exchange.
    pub(super) async fn check_reachable(&self, what: &str) {
        if self.probing.swap(true, Ordering::AcqRel) {
            return;
        }
        // A process that is exiting may still hold its listening socket for a moment after
        // its connections closed.
        tokio::time::sleep(EXIT_SETTLE).await;
        if let Err(reason) = self.current_endpoint().reachable().await {
            let _ = self
                .incoming
                .unbounded_send(Frame::Closed(format!("{what}, and {reason}")));
        }
        self.probing.store(false, Ordering::Release);
    }

    /// When `response` refused its request for want of a token (or of one with more scope), signs
    /// in or refreshes, so that the request goes again: at most [`MAX_REFUSALS`] times per
    /// request (`refusals` counts them); the authorizer itself never repeats a step that did not
    /// help. `generation` is that of the token the request carried.
    pub(super) async fn sign_again_if_refused(
        &self,
        response: Response,
        generation: Option<u64>,
        refusals: &mut u32,
    ) -> Refusal {
        let Some(auth) = &self.auth else {
            return Refusal::No(response);
        };
        let status = response.status;
        if *refusals >= MAX_REFUSALS
            || !auth::asks_for_authorization(status, response.www_authenticate.as_deref())
        {
            return Refusal::No(response);
        }
        *refusals += 1;
        let challenge = response.www_authenticate.clone();
        // Read to its end, so that the connection goes back to the pool.
        let _ = response.read_to_end(64 * 1024).await;
        match Box::pin(auth.refused(status, challenge.as_deref(), generation)).await {
            Ok(()) => Refusal::SignedAgain,
            Err(err) => Refusal::Failed(err),
        }
    }

    /// Answers a request of ours with a synthetic error, so that its caller does not wait forever.
    pub(super) fn fail_request(&self, request_id: Option<u64>, reason: String) {
        match request_id {
            Some(id) => {
                let id = jsonrpc::RawId::from_value(&Value::from(id));
                let frame =
                    jsonrpc::error_response(id.as_ref(), jsonrpc::code::INTERNAL_ERROR, &reason);
                let _ = self.incoming.unbounded_send(Frame::Message(frame, None));
            }
            None => tracing::warn!(target: "formwork::transport", %reason, "HTTP delivery failed"),
        }
    }
}

/// Why a redirect was not followed.
#[derive(Debug, thiserror::Error)]
pub(super) enum RedirectError {
    /// The connection's own URL does not parse (it did when the connection was made).
    #[error("{0}")]
    OwnUrl(#[from] url::ParseError),
    #[error("the plugin redirected to `{location}`, which is not a URL: {source}")]
    NotAUrl {
        location: String,
        source: url::ParseError,
    },
    #[error(
        "the plugin redirected to another origin ({0}); formwork follows redirects of MCP requests only within the server's origin"
    )]
    OtherOrigin(String),
    #[error(transparent)]
    Endpoint(#[from] EndpointError),
}

/// What became of a response that may have refused its request for want of a token.
pub(super) enum Refusal {
    /// It did not (or its request was refused too often already): it goes on as it is.
    No(Response),
    /// Signed in (or refreshed) again: the request goes again.
    SignedAgain,
    /// Signing in again failed.
    Failed(auth::AuthError),
}

/// A status that says the server cannot take the request now, and may in a moment.
pub(super) fn unavailable_for_now(status: u16) -> bool {
    status >= 500 || status == 408 || status == 429
}

async fn close_session(shared: &Shared) {
    let session = shared.session_id.lock().ok().and_then(|id| id.clone());
    if session.is_none() {
        return;
    }
    let delete = async {
        if let Ok(response) = shared.send("DELETE", ACCEPT_BOTH, "").await {
            let _ = response.read_to_end(64 * 1024).await;
        }
    };
    if tokio::time::timeout(CLOSE_WAIT, delete).await.is_err() {
        tracing::debug!(target: "formwork::transport", url = %shared.url, "the plugin did not answer the end of its session");
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use tokio::io::AsyncBufReadExt;

    use super::*;

    #[tokio::test]
    async fn configured_headers_ride_every_request() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        let headers = vec![
            ("X-Team".to_owned(), "forms".to_owned()),
            ("authorization".to_owned(), "Bearer t0ken".to_owned()),
        ];
        let transport = connect(&url, Arc::new(OnceLock::new()), headers, None).unwrap();
        transport
            .outgoing
            .send(
                r#"{"jsonrpc":"2.0","method":"notifications/x"}"#.to_owned(),
                Sent::Other,
            )
            .unwrap();
        let (socket, _) = listener.accept().await.unwrap();
        let mut lines = tokio::io::BufReader::new(socket).lines();
        let mut head = Vec::new();
        while let Some(line) = lines.next_line().await.unwrap() {
            if line.is_empty() {
                break;
            }
            head.push(line);
        }
        assert_eq!(head[0], "POST /mcp HTTP/1.1");
        assert!(head.contains(&"X-Team: forms".to_owned()), "{head:?}");
        assert!(
            head.contains(&"authorization: Bearer t0ken".to_owned()),
            "{head:?}"
        );
    }

    /// A plugin that never answers the `DELETE` of its session holds up the end of the
    /// connection for `CLOSE_WAIT`, no longer.
    #[tokio::test(start_paused = true)]
    async fn ending_a_session_the_plugin_never_answers_gives_up() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        tokio::spawn(async move {
            let (socket, _) = listener.accept().await.unwrap();
            let mut reader = tokio::io::BufReader::new(socket);
            let mut line = String::new();
            // The first request's head and its two-byte body, then an answer with a session.
            while reader.read_line(&mut line).await.unwrap() > 2 {
                line.clear();
            }
            let mut body = [0; 2];
            tokio::io::AsyncReadExt::read_exact(&mut reader, &mut body)
                .await
                .unwrap();
            let answer = "HTTP/1.1 202 Accepted\r\nmcp-session-id: s1\r\ncontent-length: 0\r\n\r\n";
            tokio::io::AsyncWriteExt::write_all(reader.get_mut(), answer.as_bytes())
                .await
                .unwrap();
            // The DELETE is read and never answered.
            std::future::pending::<()>().await;
        });
        let Transport {
            outgoing,
            mut incoming,
            ..
        } = connect(&url, Arc::new(OnceLock::new()), Vec::new(), None).unwrap();
        outgoing.send("{}".to_owned(), Sent::Other).unwrap();
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        let started = tokio::time::Instant::now();
        drop(outgoing);
        let frame = futures::StreamExt::next(&mut incoming).await;
        assert!(matches!(frame, Some(Frame::Closed(_))), "{frame:?}");
        assert_eq!(started.elapsed(), CLOSE_WAIT);
    }

    /// A notification the plugin takes but never acknowledges holds up the next message for
    /// `ACKNOWLEDGE_WAIT`, no longer.
    #[tokio::test(start_paused = true)]
    async fn an_unacknowledged_message_holds_up_the_next_one_for_a_while_only() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        let (arrived, mut arrivals) = tokio::sync::mpsc::unbounded_channel();
        tokio::spawn(async move {
            let mut held = Vec::new();
            while let Ok((socket, _)) = listener.accept().await {
                let _ = arrived.send(tokio::time::Instant::now());
                // Read, and never answer.
                held.push(socket);
            }
        });
        let transport = connect(&url, Arc::new(OnceLock::new()), Vec::new(), None).unwrap();
        let started = tokio::time::Instant::now();
        for _ in 0..2 {
            transport
                .outgoing
                .send(r#"{"jsonrpc":"2.0","method":"n"}"#.to_owned(), Sent::Other)
                .unwrap();
        }
        let first = arrivals.recv().await.unwrap();
        let second = arrivals.recv().await.unwrap();
        assert_eq!(first - started, std::time::Duration::ZERO);
        assert_eq!(second - started, ACKNOWLEDGE_WAIT);
    }

    /// A plugin that takes the connection but never reads: what waits for it is bounded, and
    /// the message that would pass the bound is refused.
    #[tokio::test]
    async fn what_waits_for_a_plugin_that_never_reads_is_bounded() {
        // Never accepted: the kernel takes the connection and a few buffers' worth, no more.
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        let transport = connect(&url, Arc::new(OnceLock::new()), Vec::new(), None).unwrap();
        let message = format!(
            r#"{{"jsonrpc":"2.0","method":"n","params":"{}"}}"#,
            "x".repeat(1 << 20)
        );
        let sent = (0..64)
            .take_while(|_| {
                transport
                    .outgoing
                    .send(message.clone(), Sent::Other)
                    .is_ok()
            })
            .count();
        let fit = crate::transport::MAX_QUEUED_BYTES / message.len();
        // The first may already be on its way out of the channel.
        assert!((fit..=fit + 1).contains(&sent), "{sent} sent, {fit} fit");
        assert_eq!(
            transport.outgoing.send("{}".to_owned(), Sent::Other),
            Err(crate::transport::QueueFull)
        );
        drop(listener);
    }

    /// Many calls started at once reach the plugin at most `MAX_OPENING` at a time; the rest
    /// wait their turn, and every one is answered.
    #[tokio::test]
    async fn calls_started_at_once_open_a_bounded_number_at_a_time() {
        tokio::time::timeout(std::time::Duration::from_secs(60), calls_started_at_once())
            .await
            .expect("the calls did not all finish within a minute");
    }

    async fn calls_started_at_once() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        use tokio::io::AsyncWriteExt;
        const CALLS: u64 = 600;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        let waiting = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let server = {
            let (waiting, most) = (Arc::clone(&waiting), Arc::clone(&most));
            tokio::spawn(async move {
                loop {
                    let (socket, _) = listener.accept().await.unwrap();
                    let (waiting, most) = (Arc::clone(&waiting), Arc::clone(&most));
                    tokio::spawn(async move {
                        let mut socket = tokio::io::BufReader::new(socket);
                        let mut head = String::new();
                        loop {
                            let mut line = String::new();
                            if socket.read_line(&mut line).await.unwrap_or(0) == 0 {
                                return;
                            }
                            if line == "\r\n" {
                                break;
                            }
                            head.push_str(&line);
                        }
                        let length: usize = head
                            .lines()
                            .find_map(|line| line.strip_prefix("content-length: "))
                            .map_or(0, |n| n.trim().parse().unwrap());
                        let mut body = vec![0; length];
                        tokio::io::AsyncReadExt::read_exact(&mut socket, &mut body)
                            .await
                            .unwrap();
                        let message: Value = serde_json::from_slice(&body).unwrap();
                        let Some(id) = message.get("method").and(message.get("id")) else {
                            let ack = "HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n";
                            socket.get_mut().write_all(ack.as_bytes()).await.unwrap();
                            return;
                        };
                        let now = waiting.fetch_add(1, Ordering::SeqCst) + 1;
                        most.fetch_max(now, Ordering::SeqCst);
                        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
                        waiting.fetch_sub(1, Ordering::SeqCst);
                        let answer = format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{}}}}"#);
                        let response = format!(
                            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{answer}",
                            answer.len()
                        );
                        socket
                            .get_mut()
                            .write_all(response.as_bytes())
                            .await
                            .unwrap();
                    });
                }
            })
        };
        let mut transport = connect(&url, Arc::new(OnceLock::new()), Vec::new(), None).unwrap();
        for id in 0..CALLS {
            transport
                .outgoing
                .send(
                    jsonrpc::request(id, "tools/call", Some(serde_json::json!({"name": "t"}))),
                    Sent::Request(id),
                )
                .unwrap();
        }
        let mut answered = std::collections::HashSet::new();
        while (answered.len() as u64) < CALLS {
            match transport.incoming.next().await.unwrap() {
                Frame::Message(text, _) => {
                    let message: Value = serde_json::from_str(&text).unwrap();
                    assert!(message.get("result").is_some(), "{text}");
                    answered.insert(message["id"].as_u64().unwrap());
                }
                other => panic!("{other:?}"),
            }
        }
        assert!(
            most.load(Ordering::SeqCst) <= crate::transport::http1::MAX_OPENING,
            "{} requests waited at once",
            most.load(Ordering::SeqCst)
        );
        server.abort();
    }
}
