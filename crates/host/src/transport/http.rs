//! The Streamable HTTP transport (MCP 2025-03-26 and later), client side.
//!
//! Every outgoing message is a POST. The answer to a request is either a JSON body or an SSE
//! stream that may carry requests from the plugin (an elicitation, say) before the response
//! itself. Messages the plugin sends outside a request arrive on an optional GET stream.
//!
//! A server may end either stream early and let the client resume it (SEP-1699): when its events
//! carried an `id`, the stream is resumed with a GET bearing `Last-Event-ID`, after the server's
//! `retry` delay, and the rest of it (a call's response, say) comes there.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use futures::StreamExt;
use futures::channel::mpsc;
use serde::Deserialize;
use serde_json::Value;

use super::auth::{self, Authorizer};
use super::http1::{Endpoint, Response, SendError};
use super::{Frame, MAX_FRAME_BYTES, Outgoing, Queued, Sent, Transport};
use crate::HostError;
use crate::jsonrpc;

const SESSION_HEADER: &str = "mcp-session-id";
const VERSION_HEADER: &str = "mcp-protocol-version";
/// 2026-07-28: a request's method and the name it concerns, mirrored from its body so that
/// whatever sits in front of the plugin can route it without reading the body.
const METHOD_HEADER: &str = "mcp-method";
const NAME_HEADER: &str = "mcp-name";
const LAST_EVENT_ID_HEADER: &str = "last-event-id";
/// How long to wait for the listening stream's headers before going on without it.
const LISTENER_WAIT: std::time::Duration = std::time::Duration::from_secs(5);
/// The pause before the listening stream, ended by the server, is opened again; it doubles, up
/// to the maximum, while each stream lasts less than `LISTENER_SHORT`.
const LISTENER_REOPEN: std::time::Duration = std::time::Duration::from_secs(1);
const LISTENER_REOPEN_MAX: std::time::Duration = std::time::Duration::from_secs(60);
/// Failed reopenings of the listening stream in a row after which it is given up (about 5
/// minutes of pauses, doubling from 1 s to 60 s).
const MAX_LISTENER_FAILURES: u32 = 10;
const LISTENER_SHORT: std::time::Duration = std::time::Duration::from_secs(10);
/// The pause before a call's event stream is resumed when the server never sent `retry`. The
/// spec leaves it to the client. A server ends a stream to be spared the open connection for a
/// while; a second grants it that, and holds the call's answer up by less than a person notices.
const DEFAULT_RETRY: std::time::Duration = std::time::Duration::from_secs(1);
/// The longest a server's `retry` makes formwork wait before resuming a stream: longer ones
/// would outlast the call that waits (60 s by default), or leave the listening stream shut.
const MAX_RETRY: std::time::Duration = std::time::Duration::from_secs(30);
/// Resumptions in a row that bring nothing (no message) before a call fails: a server that ends
/// every resumed stream at once would otherwise be asked again forever. The listening stream
/// falls back to its own pacing past it.
const MAX_FRUITLESS_RESUMPTIONS: u32 = 5;
/// The longest event `id` kept to resume after: it goes back in a request header. A longer one
/// ends resumption, like an empty one.
const MAX_EVENT_ID_BYTES: usize = 1024;
/// How long after a broken stream the plugin's endpoint is tried, to tell a plugin gone.
const EXIT_SETTLE: std::time::Duration = std::time::Duration::from_millis(200);
/// The longest a request holds one of its endpoint's permits (see `Endpoint::opening`).
const OPENING_HOLD: std::time::Duration = std::time::Duration::from_secs(1);
/// How long a notification or response may wait for the plugin's acknowledgement (202).
const ACKNOWLEDGE_WAIT: std::time::Duration = std::time::Duration::from_secs(30);
/// How many same-origin redirects (307, 308) one message follows.
const MAX_REDIRECTS: u32 = 3;
/// How many times one message is sent again after the server refused its authorization.
const MAX_REFUSALS: u32 = 3;
/// How long ending the MCP session (the `DELETE`) may take when the connection closes.
const CLOSE_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// State shared by the POST tasks of one connection.
struct Shared {
    endpoint: Arc<Endpoint>,
    /// Where a 307 or 308 within the server's origin moved the connection (every later message
    /// goes there).
    moved: Mutex<Option<(url::Url, Arc<Endpoint>)>>,
    url: String,
    session_id: Mutex<Option<String>>,
    protocol_version: Arc<OnceLock<String>>,
    incoming: mpsc::UnboundedSender<Frame>,
    /// The configured headers (`http_headers`, bearer token), checked at connect.
    extra_headers: Vec<(String, String)>,
    /// Signs requests in where the server asks for it (OAuth); never with a configured
    /// `Authorization` header.
    auth: Option<Arc<Authorizer>>,
    /// A reachability check is under way: when a plugin dies, every open stream breaks at
    /// once, and one check answers for all of them.
    probing: AtomicBool,
}

/// The parts of an incoming message the transport needs to know.
#[derive(Deserialize)]
struct IncomingHead {
    #[serde(default)]
    id: Option<Value>,
    #[serde(default)]
    result: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    error: Option<serde::de::IgnoredAny>,
}

/// The headers of a request that carries the 2026-07-28 envelope (its protocol version in
/// `params._meta`), which the server checks against the body.
struct RoutingHeaders {
    version: String,
    method: String,
    name: Option<String>,
}

impl RoutingHeaders {
    fn of(body: &str) -> Option<Self> {
        #[derive(Deserialize)]
        struct Head {
            method: String,
            params: Params,
        }
        #[derive(Deserialize)]
        struct Params {
            #[serde(rename = "_meta")]
            meta: Meta,
            name: Option<String>,
            uri: Option<String>,
        }
        #[derive(Deserialize)]
        struct Meta {
            #[serde(rename = "io.modelcontextprotocol/protocolVersion")]
            version: String,
        }
        if !body.contains("io.modelcontextprotocol/protocolVersion") {
            return None;
        }
        let head: Head = serde_json::from_str(body).ok()?;
        let name = match head.method.as_str() {
            "tools/call" | "prompts/get" => head.params.name,
            "resources/read" => head.params.uri,
            _ => None,
        };
        Some(RoutingHeaders {
            version: header_value(&head.params.meta.version),
            method: header_value(&head.method),
            name: name.as_deref().map(header_value),
        })
    }
}

/// A value as a header carries it: as is when it is plain visible ASCII, else (spaces at its
/// ends, other characters, or what looks like the wrapping itself) base64 in `=?base64?…?=`.
fn header_value(value: &str) -> String {
    use base64::Engine as _;
    let plain = !value.is_empty()
        && value.bytes().all(|b| (0x20..0x7f).contains(&b))
        && value.trim() == value
        && !(value.starts_with("=?base64?") && value.ends_with("?="));
    if plain {
        value.to_owned()
    } else {
        let encoded = base64::engine::general_purpose::STANDARD.encode(value);
        format!("=?base64?{encoded}?=")
    }
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
    let endpoint = Endpoint::shared(url).map_err(failed)?;
    for (name, value) in &extra_headers {
        check_header(name, value).map_err(failed)?;
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
    async fn send(&self, method: &str, accept: &str, body: &str) -> Result<Response, SendError> {
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
    async fn send_signed(
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
    fn follow(&self, location: &str) -> Result<(), String> {
        let base = url::Url::parse(&self.url).map_err(|err| err.to_string())?;
        let current = self
            .moved
            .lock()
            .ok()
            .and_then(|moved| moved.as_ref().map(|(url, _)| url.clone()))
            .unwrap_or_else(|| base.clone());
        let next = current.join(location).map_err(|err| {
            format!("the plugin redirected to `{location}`, which is not a URL: {err}")
        })?;
        if next.origin() != base.origin() {
            return Err(format!(
                "the plugin redirected to another origin ({}); formwork follows redirects of MCP requests only within the server's origin",
                next.origin().ascii_serialization()
            ));
        }
        let endpoint = Endpoint::shared(next.as_str())?;
        if let Ok(mut moved) = self.moved.lock() {
            *moved = Some((next, endpoint));
        }
        Ok(())
    }

    fn has_session(&self) -> bool {
        self.session_id.lock().is_ok_and(|id| id.is_some())
    }

    /// After a request or a stream broke: if the plugin cannot be reached any more, the
    /// connection is over (its forms end, its calls fail), not only that one exchange.
    async fn check_reachable(&self, what: &str) {
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
    async fn sign_again_if_refused(
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
    fn fail_request(&self, request_id: Option<u64>, reason: String) {
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

/// What became of a response that may have refused its request for want of a token.
enum Refusal {
    /// It did not (or its request was refused too often already): it goes on as it is.
    No(Response),
    /// Signed in (or refreshed) again: the request goes again.
    SignedAgain,
    /// Signing in again failed.
    Failed(auth::AuthError),
}

/// A status that says the server cannot take the request now, and may in a moment.
fn unavailable_for_now(status: u16) -> bool {
    status >= 500 || status == 408 || status == 429
}

/// Headers the transport sets itself, or whose meaning it does not implement (`expect` would
/// ask for an interim answer first); configuration may not set them.
const OWN_HEADERS: [&str; 17] = [
    "host",
    "content-length",
    "transfer-encoding",
    "connection",
    "keep-alive",
    "proxy-connection",
    "upgrade",
    "te",
    "trailer",
    "expect",
    "accept",
    "content-type",
    SESSION_HEADER,
    VERSION_HEADER,
    METHOD_HEADER,
    NAME_HEADER,
    LAST_EVENT_ID_HEADER,
];

/// A configured header must be a valid name and value, and not one the transport sets itself.
fn check_header(name: &str, value: &str) -> Result<(), String> {
    let token = |b: u8| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b);
    if name.is_empty() || !name.bytes().all(token) {
        return Err(format!("`{name}` is not a valid HTTP header name"));
    }
    if OWN_HEADERS.iter().any(|own| own.eq_ignore_ascii_case(name)) {
        return Err(format!("the header `{name}` is set by formwork itself"));
    }
    if !valid_value(value) {
        return Err(format!(
            "the value of the header `{name}` has characters HTTP does not allow"
        ));
    }
    Ok(())
}

/// Visible ASCII, spaces and tabs: nothing that could end a header line.
fn valid_value(value: &str) -> bool {
    value
        .bytes()
        .all(|b| b == b'\t' || (0x20..0x7f).contains(&b))
}

const ACCEPT_BOTH: &str = "application/json, text/event-stream";
const ACCEPT_EVENTS: &str = "text/event-stream";

async fn post(shared: &Shared, body: String, request_id: Option<u64>) {
    super::trace_out(&body);
    // Boxed: sending (a connect, maybe a TLS handshake) is short, and the task lives on as long
    // as the call's stream; unboxed, its state would be held all that time.
    let mut refusals = 0;
    let mut redirects = 0;
    let response = loop {
        let sent = {
            let mut sending = Box::pin(shared.send_signed("POST", ACCEPT_BOTH, &body, None));
            // A request takes one of the endpoint's permits while the plugin has yet to start
            // answering, for a moment at most: a server that answers a call only when it ends
            // must not hold one for as long as a person takes. Responses and notifications
            // take none.
            match request_id {
                Some(_) => {
                    let permit = shared.endpoint.opening.acquire().await;
                    let first = tokio::time::timeout(OPENING_HOLD, sending.as_mut()).await;
                    drop(permit);
                    match first {
                        Ok(sent) => sent,
                        Err(_) => sending.as_mut().await,
                    }
                }
                None => sending.as_mut().await,
            }
        };
        let (response, generation) = match sent {
            Ok(sent) => sent,
            Err(SendError::Unreachable(reason)) => {
                let _ = shared.incoming.unbounded_send(Frame::Closed(reason));
                return;
            }
            // A request's exchange broke: it fails, and the plugin may still be there for the
            // others. A response or notification that did not arrive (a form's answer, say)
            // cannot be failed on its own: the connection is over.
            Err(SendError::Failed(reason)) => {
                if request_id.is_some() {
                    shared.fail_request(request_id, reason.clone());
                    Box::pin(shared.check_reachable(&reason)).await;
                } else {
                    let _ = shared.incoming.unbounded_send(Frame::Closed(reason));
                }
                return;
            }
        };
        let response = match shared
            .sign_again_if_refused(response, generation, &mut refusals)
            .await
        {
            Refusal::No(response) => response,
            Refusal::SignedAgain => continue,
            Refusal::Failed(err) => {
                shared.fail_request(request_id, err.to_string());
                return;
            }
        };
        if matches!(response.status, 307 | 308) && redirects < MAX_REDIRECTS {
            redirects += 1;
            let location = response.location.clone().unwrap_or_default();
            let _ = response.read_to_end(64 * 1024).await;
            match shared.follow(&location) {
                Ok(()) => continue,
                Err(reason) => {
                    shared.fail_request(request_id, reason);
                    return;
                }
            }
        }
        if let (Some(auth), Some(generation)) = (&shared.auth, generation) {
            auth.accepted(generation);
        }
        break response;
    };
    drop(body);
    let status = response.status;
    if status == 202 || status == 204 {
        // Read to its (empty) end, so that the connection goes back to the pool.
        let _ = response.read_to_end(64 * 1024).await;
        if request_id.is_some() {
            shared.fail_request(
                request_id,
                format!("the plugin answered a request with HTTP {status} and no body"),
            );
        }
        return;
    }
    if !(200..300).contains(&status) {
        let json = response.content_type.starts_with("application/json");
        let text = response.read_to_end(64 * 1024).await.unwrap_or_default();
        // A JSON-RPC error for the request itself (2026-07-28 servers answer e.g. an
        // unsupported version with HTTP 400 and one) reaches it with its code.
        if json
            && let Some(id) = request_id
            && let Ok(body) = std::str::from_utf8(&text)
            && let Ok(head) = serde_json::from_str::<IncomingHead>(body)
            && head.error.is_some()
            && head.id.as_ref().and_then(Value::as_u64) == Some(id)
        {
            super::trace_in(body);
            let _ = shared
                .incoming
                .unbounded_send(Frame::Message(body.to_owned(), None));
            return;
        }
        let snippet: String = String::from_utf8_lossy(&text).chars().take(300).collect();
        let mut reason = format!("the plugin answered HTTP {status}: {snippet}");
        if status == 401 && shared.auth.is_none() {
            let configured = shared
                .extra_headers
                .iter()
                .any(|(name, _)| name.eq_ignore_ascii_case("authorization"));
            reason.push_str(if configured {
                " (it refused the configured Authorization header)"
            } else {
                " (it asks for a sign-in, which formwork does for a configured server: add it as \
                 [mcp_servers.NAME] and run `formwork login NAME`)"
            });
        }
        if status == 404 && shared.has_session() {
            // The spec's sign that the plugin no longer knows the session (it restarted, say):
            // this connection is over, and the next use of the server starts a new one.
            shared.fail_request(request_id, reason.clone());
            let _ = shared
                .incoming
                .unbounded_send(Frame::Closed(format!("its MCP session is gone ({reason})")));
            return;
        }
        shared.fail_request(request_id, reason);
        return;
    }
    let content_type = response.content_type.clone();
    if content_type.starts_with("text/event-stream") {
        let mut parser = SseParser::default();
        let read = read_sse(shared, response, request_id, &mut parser).await;
        if let Some(id) = request_id
            && !read.answered
            && let Err(reason) = Box::pin(resume(shared, id, parser)).await
        {
            shared.fail_request(request_id, reason.clone());
            Box::pin(shared.check_reachable(&reason)).await;
        }
    } else if content_type.starts_with("application/json") {
        match read_limited(response).await {
            Ok(body) => {
                super::trace_in(&body);
                let _ = shared.incoming.unbounded_send(Frame::Message(body, None));
            }
            Err(reason) => shared.fail_request(request_id, reason),
        }
    } else {
        shared.fail_request(
            request_id,
            format!("the plugin answered with content type `{content_type}`"),
        );
    }
}

const ENDED_UNANSWERED: &str = "the plugin closed its event stream before answering";

/// Follows a call's event stream that the server ended before the response: while its events
/// carried an `id`, waits the server's `retry` delay (exactly that) and resumes the stream with a
/// GET bearing `Last-Event-ID`, on which the rest of the call comes (its forms, its response).
/// A resumption that fails (the server down for a moment, a 5xx) or brings nothing new is tried
/// again after the same delay, [`MAX_FRUITLESS_RESUMPTIONS`] times in a row at most; one the
/// server refuses for want of a token is signed (refreshed) again like any request.
/// `Err` is why the call fails; a session or a plugin gone is told to the connection here.
async fn resume(shared: &Shared, request_id: u64, mut parser: SseParser) -> Result<(), String> {
    let mut fruitless = 0;
    let mut refusals = 0;
    // Why the last resumption failed, when it did.
    let mut failure: Option<SendError> = None;
    let mut pause = true;
    loop {
        if shared.incoming.is_closed() {
            // Nobody waits for the answer any more.
            return Ok(());
        }
        let Some(last_id) = parser.last_id.clone() else {
            return Err(ENDED_UNANSWERED.to_owned());
        };
        if fruitless == MAX_FRUITLESS_RESUMPTIONS {
            return match failure {
                None => Err(format!(
                    "{ENDED_UNANSWERED}, and ended it again each of the \
                     {MAX_FRUITLESS_RESUMPTIONS} times it was resumed in a row, with nothing new"
                )),
                Some(SendError::Failed(reason)) => Err(format!(
                    "{ENDED_UNANSWERED}, and its resumption failed {MAX_FRUITLESS_RESUMPTIONS} \
                     times in a row; the last time: {reason}"
                )),
                Some(SendError::Unreachable(reason)) => {
                    let _ = shared
                        .incoming
                        .unbounded_send(Frame::Closed(format!("{ENDED_UNANSWERED}, and {reason}")));
                    Ok(())
                }
            };
        }
        if pause {
            tokio::time::sleep(parser.retry.unwrap_or(DEFAULT_RETRY)).await;
        }
        pause = true;
        // A server that ended many calls' streams at once sees them all back after the same
        // delay: like a call's POST, each waits its turn for one of the endpoint's permits.
        let mut resumed = Box::pin(shared.send_signed("GET", ACCEPT_EVENTS, "", Some(&last_id)));
        let permit = shared.endpoint.opening.acquire().await;
        let first = tokio::time::timeout(OPENING_HOLD, resumed.as_mut()).await;
        drop(permit);
        let sent = match first {
            Ok(sent) => sent,
            Err(_) => resumed.await,
        };
        let (response, generation) = match sent {
            Ok(sent) => sent,
            Err(err) => {
                failure = Some(err);
                fruitless += 1;
                continue;
            }
        };
        let response = match shared
            .sign_again_if_refused(response, generation, &mut refusals)
            .await
        {
            Refusal::No(response) => response,
            Refusal::SignedAgain => {
                // Resume at once.
                pause = false;
                continue;
            }
            Refusal::Failed(err) => return Err(err.to_string()),
        };
        let status = response.status;
        if status == 404 && shared.has_session() {
            let reason = "the plugin answered HTTP 404 to the resumption of a call's event stream";
            shared.fail_request(Some(request_id), reason.to_owned());
            let _ = shared
                .incoming
                .unbounded_send(Frame::Closed(format!("its MCP session is gone ({reason})")));
            return Ok(());
        }
        if unavailable_for_now(status) {
            let _ = response.read_to_end(64 * 1024).await;
            failure = Some(SendError::Failed(format!("it answered HTTP {status}")));
            fruitless += 1;
            continue;
        }
        if !(200..300).contains(&status) {
            return Err(format!(
                "{ENDED_UNANSWERED}, and answered HTTP {status} to its resumption"
            ));
        }
        if let (Some(auth), Some(generation)) = (&shared.auth, generation) {
            auth.accepted(generation);
        }
        if !response.content_type.starts_with("text/event-stream") {
            return Err(format!(
                "{ENDED_UNANSWERED}, and answered its resumption with content type `{}`",
                response.content_type
            ));
        }
        parser.resumed();
        let read = read_sse(shared, response, Some(request_id), &mut parser).await;
        if read.answered {
            return Ok(());
        }
        failure = None;
        fruitless = if read.delivered { 0 } else { fruitless + 1 };
    }
}

/// Opens the optional GET stream for messages the plugin sends outside any request. `None`
/// when the plugin offers none (405) or does not answer within a moment.
async fn open_listener(shared: &Shared) -> Option<Response> {
    let request = shared.send("GET", ACCEPT_EVENTS, "");
    let response = tokio::time::timeout(LISTENER_WAIT, request)
        .await
        .ok()?
        .ok()?;
    listening(response)
}

fn listening(response: Response) -> Option<Response> {
    let listening = (200..300).contains(&response.status)
        && response.content_type.starts_with("text/event-stream");
    listening.then_some(response)
}

/// Reads the listening stream; when the server ends it, opens it again (the spec lets a server
/// end it at any time), unless the plugin is gone: with no call running, that is where it shows.
/// Once its events carried an `id`, the new stream resumes after the last one (`Last-Event-ID`).
async fn listen(shared: &Shared, mut response: Response) {
    let mut parser = SseParser::default();
    let mut backoff = LISTENER_REOPEN / 2;
    let mut fruitless = 0;
    loop {
        let opened = tokio::time::Instant::now();
        let read = read_sse(shared, response, None, &mut parser).await;
        if shared.incoming.is_closed() {
            // Nobody reads what it would bring.
            return;
        }
        let short = opened.elapsed() < LISTENER_SHORT;
        fruitless = if short && !read.delivered {
            fruitless + 1
        } else {
            0
        };
        // The server's `retry` paces it, unless it keeps ending the stream at once with nothing;
        // then, or without one, a server that ends the stream at once is asked less and less often.
        let pause = match parser.retry {
            Some(retry) if fruitless <= MAX_FRUITLESS_RESUMPTIONS => retry,
            _ => {
                backoff = if short {
                    (backoff * 2).min(LISTENER_REOPEN_MAX)
                } else {
                    LISTENER_REOPEN
                };
                backoff
            }
        };
        response = match Box::pin(reopen_listener(shared, &mut parser, pause)).await {
            Some(reopened) => reopened,
            None => return,
        };
    }
}

/// Opens the listening stream again after `pause`, resuming after the last event `id` seen.
/// A reopening that fails for a moment (no answer, a 5xx) is tried again less and less often,
/// [`MAX_LISTENER_FAILURES`] times in a row at most, and one refused for want of a token is
/// signed again; `None` when the stream is over: the server offers none any more, its session
/// or the plugin is gone (told to the connection here), it failed that often, or nobody reads
/// the connection.
async fn reopen_listener(
    shared: &Shared,
    parser: &mut SseParser,
    mut pause: std::time::Duration,
) -> Option<Response> {
    let mut refusals = 0;
    let mut failures = 0;
    loop {
        if failures == MAX_LISTENER_FAILURES {
            tracing::warn!(
                target: "formwork::transport",
                url = %shared.url,
                "the listening stream could not be opened again {MAX_LISTENER_FAILURES} times in a row; \
                 messages the plugin sends outside a request are no longer received"
            );
            return None;
        }
        tokio::time::sleep(pause).await;
        if shared.incoming.is_closed() {
            return None;
        }
        parser.resumed();
        pause = (pause * 2).clamp(LISTENER_REOPEN, LISTENER_REOPEN_MAX);
        let reopened = tokio::time::timeout(
            LISTENER_WAIT,
            shared.send_signed("GET", ACCEPT_EVENTS, "", parser.last_id.as_deref()),
        );
        let (reopened, generation) = match Box::pin(reopened).await {
            Ok(Ok(reopened)) => reopened,
            Ok(Err(SendError::Unreachable(reason))) => {
                let _ = shared.incoming.unbounded_send(Frame::Closed(format!(
                    "its listening stream ended, and {reason}"
                )));
                return None;
            }
            Ok(Err(SendError::Failed(_))) | Err(_) => {
                failures += 1;
                continue;
            }
        };
        let reopened = match shared
            .sign_again_if_refused(reopened, generation, &mut refusals)
            .await
        {
            Refusal::No(reopened) => reopened,
            Refusal::SignedAgain => {
                pause = std::time::Duration::ZERO;
                continue;
            }
            Refusal::Failed(_) => return None,
        };
        let status = reopened.status;
        if status == 404 && shared.has_session() {
            let _ = shared.incoming.unbounded_send(Frame::Closed(
                "its MCP session is gone (HTTP 404 to the listening stream)".to_owned(),
            ));
            return None;
        }
        if unavailable_for_now(status) {
            // Its body is read to reuse the connection, but a body that never comes ends nothing.
            let _ = tokio::time::timeout(LISTENER_WAIT, reopened.read_to_end(64 * 1024)).await;
            failures += 1;
            continue;
        }
        if let (Some(auth), Some(generation)) = (&shared.auth, generation) {
            auth.accepted(generation);
        }
        return listening(reopened);
    }
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

async fn read_limited(response: Response) -> Result<String, String> {
    let body = response.read_to_end(MAX_FRAME_BYTES).await?;
    String::from_utf8(body).map_err(|_| "the plugin's answer is not UTF-8".to_owned())
}

/// How reading one connection of an event stream went.
struct Read {
    /// The response to the stream's request was among its events.
    answered: bool,
    /// It brought at least one message.
    delivered: bool,
}

/// Forwards every `data` event of one connection of an SSE stream, until the response to
/// `request_id` or the end of the connection; `parser` follows the stream across connections.
async fn read_sse(
    shared: &Shared,
    mut response: Response,
    request_id: Option<u64>,
    parser: &mut SseParser,
) -> Read {
    let mut read = Read {
        answered: false,
        delivered: false,
    };
    while let Ok(Some(chunk)) = response.chunk().await {
        for event in parser.feed(&chunk) {
            match event {
                // Empty events only prime the stream for resumption.
                SseEvent::Data(data) if data.trim().is_empty() => {}
                SseEvent::Data(data) => {
                    super::trace_in(&data);
                    read.delivered = true;
                    if let Some(id) = request_id
                        && let Ok(head) = serde_json::from_str::<IncomingHead>(&data)
                        && head.id.as_ref().and_then(Value::as_u64) == Some(id)
                        && (head.result.is_some() || head.error.is_some())
                    {
                        read.answered = true;
                    }
                    if shared
                        .incoming
                        .unbounded_send(Frame::Message(data, request_id))
                        .is_err()
                    {
                        return read;
                    }
                }
                SseEvent::Oversized => {
                    read.delivered = true;
                    let _ = shared.incoming.unbounded_send(Frame::Oversized);
                }
            }
        }
        if read.answered {
            // The response ends the stream's purpose (spec: the server closes it after).
            break;
        }
    }
    read
}

pub(crate) enum SseEvent {
    Data(String),
    Oversized,
}

/// A small incremental parser for `text/event-stream`: `data` makes the messages, `id` and
/// `retry` tell how to resume the stream. One parser follows a stream across its connections.
#[derive(Default)]
pub(crate) struct SseParser {
    line: Vec<u8>,
    data: String,
    has_data: bool,
    oversized: bool,
    last_was_cr: bool,
    /// The `id` in force for the event being read (an event without one keeps the last).
    id: Option<String>,
    /// The `id` in force at the last whole event: the stream resumes after it.
    last_id: Option<String>,
    /// The server's `retry`: how long to wait before resuming.
    retry: Option<std::time::Duration>,
    /// A line of this connection's stream has ended: a byte order mark is no longer its start.
    past_first_line: bool,
}

/// The UTF-8 byte order mark, which a stream may start with (and which is not part of it).
const BYTE_ORDER_MARK: &[u8] = b"\xEF\xBB\xBF";

impl SseParser {
    /// A new connection continues the stream: what the last one left half read is dropped.
    fn resumed(&mut self) {
        self.line.clear();
        self.data.clear();
        self.has_data = false;
        self.oversized = false;
        self.last_was_cr = false;
        self.past_first_line = false;
        self.id.clone_from(&self.last_id);
    }

    pub(crate) fn feed(&mut self, bytes: &[u8]) -> Vec<SseEvent> {
        let mut events = Vec::new();
        for &byte in bytes {
            if byte == b'\n' && self.last_was_cr {
                self.last_was_cr = false;
                continue;
            }
            self.last_was_cr = byte == b'\r';
            if byte == b'\n' || byte == b'\r' {
                let mut line = std::mem::take(&mut self.line);
                if !std::mem::replace(&mut self.past_first_line, true)
                    && line.starts_with(BYTE_ORDER_MARK)
                {
                    line.drain(..BYTE_ORDER_MARK.len());
                }
                if let Some(event) = self.end_line(&line) {
                    events.push(event);
                }
            } else if self.line.len() <= MAX_FRAME_BYTES {
                self.line.push(byte);
            } else {
                self.oversized = true;
            }
        }
        events
    }

    fn end_line(&mut self, line: &[u8]) -> Option<SseEvent> {
        if line.is_empty() {
            // An event is whole: even one without data moves the point to resume after.
            self.last_id.clone_from(&self.id);
            let event = if self.oversized {
                Some(SseEvent::Oversized)
            } else if self.has_data {
                Some(SseEvent::Data(std::mem::take(&mut self.data)))
            } else {
                None
            };
            self.data.clear();
            self.has_data = false;
            self.oversized = false;
            return event;
        }
        let text = String::from_utf8_lossy(line);
        let (field, value) = match text.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (text.as_ref(), ""),
        };
        match field {
            "data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
                if self.data.len() > MAX_FRAME_BYTES {
                    self.oversized = true;
                    self.data.clear();
                }
            }
            // SSE ignores an id with a NUL; an empty one ends resumption, and so does one that
            // could not be sent back in a header.
            "id" if !value.contains('\0') => {
                let sendable =
                    !value.is_empty() && value.len() <= MAX_EVENT_ID_BYTES && valid_value(value);
                self.id = sendable.then(|| value.to_owned());
            }
            "retry" if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) => {
                // Digits beyond a u64 are a delay longer than any call waits, too.
                let millis = value.parse().unwrap_or(u64::MAX);
                self.retry = Some(std::time::Duration::from_millis(millis).min(MAX_RETRY));
            }
            _ => {}
        }
        None
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use tokio::io::AsyncBufReadExt;

    fn events(chunks: &[&str]) -> Vec<String> {
        let mut parser = SseParser::default();
        chunks
            .iter()
            .flat_map(|chunk| events_of(&mut parser, chunk))
            .collect()
    }

    #[test]
    fn parses_sse_events_across_chunks() {
        assert_eq!(
            events(&[
                "event: message\ndata: {\"a\"",
                ":1}\n\n",
                ": comment\r\n",
                "data: x\r\ndata: y\r\n\r\n"
            ]),
            vec!["{\"a\":1}".to_owned(), "x\ny".to_owned()]
        );
        assert_eq!(events(&["id: 1\nretry: 500\n\n"]), Vec::<String>::new());
    }

    /// A byte order mark is skipped at the start of each connection's stream (split across
    /// reads too), and only there.
    #[test]
    fn a_byte_order_mark_starts_a_stream_and_is_not_part_of_it() {
        let data = |events: Vec<SseEvent>| -> Vec<String> {
            events
                .into_iter()
                .map(|event| match event {
                    SseEvent::Data(data) => data,
                    SseEvent::Oversized => "<oversized>".to_owned(),
                })
                .collect()
        };
        let mut parser = SseParser::default();
        assert_eq!(data(parser.feed(b"\xEF\xBB")), Vec::<String>::new());
        assert_eq!(data(parser.feed(b"\xBFdata: a\n\n")), ["a"]);
        // Later in the stream it is a field name's first bytes: that line is no field it knows.
        assert_eq!(
            data(parser.feed(b"\xEF\xBB\xBFdata: b\n\ndata: c\n\n")),
            ["c"]
        );
        parser.resumed();
        assert_eq!(data(parser.feed(b"\xEF\xBB\xBFdata: d\n\n")), ["d"]);
    }

    /// The point to resume after moves with each whole event, even one without data, and not
    /// with one a broken connection left half read; `retry` is kept while valid.
    #[test]
    fn follows_the_last_event_id_and_retry() {
        let mut parser = SseParser::default();
        let _ = parser.feed(b"id: e1\nretry: 500\ndata: \n\n");
        assert_eq!(parser.last_id.as_deref(), Some("e1"));
        assert_eq!(parser.retry, Some(std::time::Duration::from_millis(500)));
        // An event without an id keeps the last one; a retry that is not a number is ignored.
        let _ = parser.feed(b"retry: soon\ndata: x\n\n");
        assert_eq!(parser.last_id.as_deref(), Some("e1"));
        assert_eq!(parser.retry, Some(std::time::Duration::from_millis(500)));
        let _ = parser.feed(b"id: e2\ndata: half");
        assert_eq!(parser.last_id.as_deref(), Some("e1"));
        parser.resumed();
        assert_eq!(events_of(&mut parser, "data: y\n\n"), ["y"]);
        assert_eq!(parser.last_id.as_deref(), Some("e1"));
        let _ = parser.feed(b"id: e3\n\n");
        assert_eq!(parser.last_id.as_deref(), Some("e3"));
        // SSE ignores an id with a NUL; one that cannot go back in a header, or an empty one,
        // leaves nothing to resume after.
        let _ = parser.feed(b"id: a\0b\n\n");
        assert_eq!(parser.last_id.as_deref(), Some("e3"));
        let _ = parser.feed(b"id: a\x01b\n\n");
        assert_eq!(parser.last_id, None);
        let _ = parser.feed(b"id: e4\n\n");
        let long = format!("id: {}\n\n", "i".repeat(MAX_EVENT_ID_BYTES + 1));
        let _ = parser.feed(long.as_bytes());
        assert_eq!(parser.last_id, None);
        let _ = parser.feed(b"id: e5\n\nid\n\n");
        assert_eq!(parser.last_id, None);
        // A retry longer than any call waits counts as the longest formwork waits.
        let _ = parser.feed(b"retry: 99999999999\n\n");
        assert_eq!(parser.retry, Some(MAX_RETRY));
        let _ = parser.feed(b"retry: 800\n\n");
        assert_eq!(parser.retry, Some(std::time::Duration::from_millis(800)));
        let _ = parser.feed(format!("retry: {}\n\n", "9".repeat(40)).as_bytes());
        assert_eq!(parser.retry, Some(MAX_RETRY));
    }

    fn events_of(parser: &mut SseParser, chunk: &str) -> Vec<String> {
        parser
            .feed(chunk.as_bytes())
            .into_iter()
            .map(|event| match event {
                SseEvent::Data(data) => data,
                SseEvent::Oversized => "<oversized>".to_owned(),
            })
            .collect()
    }

    /// One request as a scripted server read it.
    #[derive(Debug)]
    struct Seen {
        method: String,
        last_event_id: Option<String>,
        body: String,
        at: std::time::Instant,
    }

    /// A server on a local port that reads one request per connection, answers it with what
    /// `answer` gives (the whole response after the status line's `HTTP/1.1 `), and closes the
    /// connection; every request is reported.
    async fn scripted_server(
        answer: impl Fn(&Seen) -> String + Send + Sync + 'static,
    ) -> (String, tokio::sync::mpsc::UnboundedReceiver<Seen>) {
        scripted_server_awaiting(move |request| {
            let text = answer(request);
            Box::pin(async move { text })
        })
        .await
    }

    /// [`scripted_server`] with an answer that may take its time.
    async fn scripted_server_awaiting(
        answer: impl Fn(&Seen) -> futures::future::BoxFuture<'static, String> + Send + Sync + 'static,
    ) -> (String, tokio::sync::mpsc::UnboundedReceiver<Seen>) {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        let (seen, requests) = tokio::sync::mpsc::unbounded_channel();
        let answer = Arc::new(answer);
        tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                let (answer, seen) = (Arc::clone(&answer), seen.clone());
                tokio::spawn(async move {
                    let mut socket = tokio::io::BufReader::new(socket);
                    let mut head = Vec::new();
                    loop {
                        let mut line = String::new();
                        if socket.read_line(&mut line).await.unwrap_or(0) == 0 {
                            return;
                        }
                        if line == "\r\n" {
                            break;
                        }
                        head.push(line.trim_end().to_owned());
                    }
                    let header = |name: &str| {
                        head.iter().find_map(|line| {
                            let (field, value) = line.split_once(": ")?;
                            field.eq_ignore_ascii_case(name).then(|| value.to_owned())
                        })
                    };
                    let length = header("content-length").map_or(0, |n| n.parse().unwrap());
                    let mut body = vec![0; length];
                    socket.read_exact(&mut body).await.unwrap();
                    let request = Seen {
                        method: head[0].split(' ').next().unwrap().to_owned(),
                        last_event_id: header("last-event-id"),
                        body: String::from_utf8(body).unwrap(),
                        at: std::time::Instant::now(),
                    };
                    let answering = answer(&request);
                    let _ = seen.send(request);
                    let response = format!("HTTP/1.1 {}", answering.await);
                    let _ = socket.get_mut().write_all(response.as_bytes()).await;
                    let _ = socket.get_mut().shutdown().await;
                });
            }
        });
        (url, requests)
    }

    /// An event stream of `events` that ends when the connection closes.
    fn event_stream(events: &str) -> String {
        format!("200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n{events}")
    }

    const ACCEPTED: &str = "202 Accepted\r\ncontent-length: 0\r\nconnection: close\r\n\r\n";

    /// The next frame, which must come within ten seconds.
    async fn next_frame(transport: &mut Transport) -> Frame {
        tokio::time::timeout(
            std::time::Duration::from_secs(10),
            transport.incoming.next(),
        )
        .await
        .expect("no frame within ten seconds")
        .expect("the frames ended")
    }

    /// A call whose stream ends before its response, and whose every resumption ends again
    /// with nothing new (a new priming id only), fails after `MAX_FRUITLESS_RESUMPTIONS`
    /// resumptions, each after the last id seen.
    #[tokio::test]
    async fn a_call_resumed_again_and_again_to_no_avail_fails() {
        let gets = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counted = Arc::clone(&gets);
        let (url, mut requests) = scripted_server(move |request| match request.method.as_str() {
            "GET" => {
                let n = counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
                event_stream(&format!("id: g{n}\ndata: \n\n"))
            }
            _ => event_stream("id: p0\nretry: 10\ndata: \n\n"),
        })
        .await;
        let mut transport = connect(&url, Arc::new(OnceLock::new()), Vec::new(), None).unwrap();
        let call = jsonrpc::request(1, "tools/call", Some(serde_json::json!({"name": "t"})));
        transport.outgoing.send(call, Sent::Request(1)).unwrap();
        let Frame::Message(answer, None) = next_frame(&mut transport).await else {
            panic!("not a message");
        };
        assert_eq!(
            serde_json::from_str::<Value>(&answer).unwrap(),
            serde_json::json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32603, "message":
                "the plugin closed its event stream before answering, and ended it again each \
                 of the 5 times it was resumed in a row, with nothing new"}})
        );
        let mut seen = Vec::new();
        while let Ok(request) = requests.try_recv() {
            seen.push((request.method, request.last_event_id));
        }
        let get = |id: &str| ("GET".to_owned(), Some(id.to_owned()));
        assert_eq!(
            seen,
            [
                ("POST".to_owned(), None),
                get("p0"),
                get("g1"),
                get("g2"),
                get("g3"),
                get("g4")
            ]
        );
    }

    /// A resumption the server cannot take at the moment (503) is tried again after its
    /// `retry`, and the call gets its answer; one it refuses outright (400) ends the call.
    #[tokio::test]
    async fn a_resumption_the_server_cannot_take_now_is_tried_again() {
        let gets = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counted = Arc::clone(&gets);
        let (url, mut requests) = scripted_server(move |request| match request.method.as_str() {
            "GET" => match counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst) {
                0 => "503 Service Unavailable\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                    .to_owned(),
                1 => event_stream("id: g1\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n"),
                _ => "400 Bad Request\r\ncontent-length: 0\r\nconnection: close\r\n\r\n".to_owned(),
            },
            _ => event_stream("id: p0\nretry: 10\ndata: \n\n"),
        })
        .await;
        let mut transport = connect(&url, Arc::new(OnceLock::new()), Vec::new(), None).unwrap();
        let call = jsonrpc::request(1, "tools/call", Some(serde_json::json!({"name": "t"})));
        transport.outgoing.send(call, Sent::Request(1)).unwrap();
        let Frame::Message(answer, Some(1)) = next_frame(&mut transport).await else {
            panic!("not call 1's answer");
        };
        assert_eq!(answer, r#"{"jsonrpc":"2.0","id":1,"result":{}}"#);
        let mut seen = Vec::new();
        while let Ok(request) = requests.try_recv() {
            seen.push((request.method, request.last_event_id));
        }
        let get = ("GET".to_owned(), Some("p0".to_owned()));
        assert_eq!(seen, [("POST".to_owned(), None), get.clone(), get]);
        let call = jsonrpc::request(2, "tools/call", Some(serde_json::json!({"name": "t"})));
        transport.outgoing.send(call, Sent::Request(2)).unwrap();
        let Frame::Message(answer, None) = next_frame(&mut transport).await else {
            panic!("not a message");
        };
        assert_eq!(
            serde_json::from_str::<Value>(&answer).unwrap(),
            serde_json::json!({"jsonrpc": "2.0", "id": 2, "error": {"code": -32603, "message":
                "the plugin closed its event stream before answering, and answered HTTP 400 \
                 to its resumption"}})
        );
    }

    /// A resumed call's stream brings its response, tagged with the call; cancelling a call
    /// while its resumption waits stops it: no GET is made for it.
    #[tokio::test]
    async fn a_cancelled_call_is_not_resumed_and_the_other_is() {
        let (url, mut requests) = scripted_server(|request| {
            let message: Value = serde_json::from_str(&request.body).unwrap_or_default();
            match (request.method.as_str(), &request.last_event_id) {
                ("GET", Some(id)) => {
                    let call = id.trim_start_matches('c');
                    event_stream(&format!(
                        "id: {id}-1\ndata: {{\"jsonrpc\":\"2.0\",\"id\":{call},\"result\":{{}}}}\n\n"
                    ))
                }
                _ if message.get("id").is_some() => {
                    event_stream(&format!("id: c{}\nretry: 300\ndata: \n\n", message["id"]))
                }
                _ => ACCEPTED.to_owned(),
            }
        })
        .await;
        let mut transport = connect(&url, Arc::new(OnceLock::new()), Vec::new(), None).unwrap();
        for id in [1, 2] {
            let call = jsonrpc::request(id, "tools/call", Some(serde_json::json!({"name": "t"})));
            transport.outgoing.send(call, Sent::Request(id)).unwrap();
        }
        for _ in 0..2 {
            assert_eq!(requests.recv().await.unwrap().method, "POST");
        }
        let cancel =
            r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}"#;
        transport
            .outgoing
            .send(cancel.to_owned(), Sent::Cancel(1))
            .unwrap();
        let Frame::Message(answer, Some(2)) = next_frame(&mut transport).await else {
            panic!("not call 2's answer");
        };
        assert_eq!(answer, r#"{"jsonrpc":"2.0","id":2,"result":{}}"#);
        // Call 1 would have been resumed by now, with call 2.
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        let mut seen = Vec::new();
        while let Ok(request) = requests.try_recv() {
            seen.push((request.method, request.last_event_id));
        }
        assert_eq!(
            seen,
            [
                ("POST".to_owned(), None),
                ("GET".to_owned(), Some("c2".to_owned()))
            ]
        );
    }

    /// Calls whose streams a server ends all at once are resumed at most `MAX_OPENING` at a
    /// time, like calls started at once; every one gets its answer.
    #[tokio::test]
    async fn calls_resumed_at_once_open_a_bounded_number_at_a_time() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        const CALLS: u64 = 300;
        let waiting = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let (counted, highest) = (Arc::clone(&waiting), Arc::clone(&most));
        let (url, _requests) = scripted_server_awaiting(move |request| {
            let message: Value = serde_json::from_str(&request.body).unwrap_or_default();
            match &request.last_event_id {
                Some(id) => {
                    let (waiting, most, call) =
                        (Arc::clone(&counted), Arc::clone(&highest), id.clone());
                    Box::pin(async move {
                        let now = waiting.fetch_add(1, Ordering::SeqCst) + 1;
                        most.fetch_max(now, Ordering::SeqCst);
                        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                        waiting.fetch_sub(1, Ordering::SeqCst);
                        event_stream(&format!(
                            "data: {{\"jsonrpc\":\"2.0\",\"id\":{call},\"result\":{{}}}}\n\n"
                        ))
                    })
                }
                None => {
                    let text =
                        event_stream(&format!("id: {}\nretry: 0\ndata: \n\n", message["id"]));
                    Box::pin(async move { text })
                }
            }
        })
        .await;
        let mut transport = connect(&url, Arc::new(OnceLock::new()), Vec::new(), None).unwrap();
        for id in 0..CALLS {
            let call = jsonrpc::request(id, "tools/call", Some(serde_json::json!({"name": "t"})));
            transport.outgoing.send(call, Sent::Request(id)).unwrap();
        }
        let mut answered = std::collections::HashSet::new();
        while (answered.len() as u64) < CALLS {
            let Frame::Message(text, Some(id)) = next_frame(&mut transport).await else {
                panic!("not a call's message");
            };
            assert_eq!(
                text,
                format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{}}}}"#)
            );
            answered.insert(id);
        }
        let most = most.load(Ordering::SeqCst);
        assert!(
            (2..=super::super::http1::MAX_OPENING).contains(&most),
            "{most} resumptions waited at once"
        );
    }

    /// A plugin gone while its call's stream waits to be resumed ends the connection.
    #[tokio::test]
    async fn a_plugin_gone_before_the_resumption_ends_the_connection() {
        use tokio::io::AsyncWriteExt;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let url = format!("http://{address}/mcp");
        let mut transport = connect(&url, Arc::new(OnceLock::new()), Vec::new(), None).unwrap();
        let call = jsonrpc::request(1, "tools/call", Some(serde_json::json!({"name": "t"})));
        transport.outgoing.send(call, Sent::Request(1)).unwrap();
        let (socket, _) = listener.accept().await.unwrap();
        drop(listener);
        // The request is read whole first: closing with unread bytes would reset the connection.
        let mut socket = tokio::io::BufReader::new(socket);
        let mut length = 0;
        loop {
            let mut line = String::new();
            socket.read_line(&mut line).await.unwrap();
            if line == "\r\n" {
                break;
            }
            if let Some(n) = line.strip_prefix("content-length: ") {
                length = n.trim().parse().unwrap();
            }
        }
        let mut body = vec![0; length];
        tokio::io::AsyncReadExt::read_exact(&mut socket, &mut body)
            .await
            .unwrap();
        let answer = format!("HTTP/1.1 {}", event_stream("id: p0\nretry: 50\ndata: \n\n"));
        socket.get_mut().write_all(answer.as_bytes()).await.unwrap();
        drop(socket);
        let Frame::Closed(reason) = next_frame(&mut transport).await else {
            panic!("the connection did not end");
        };
        assert!(
            reason.starts_with(&format!(
                "the plugin closed its event stream before answering, and the HTTP request to \
                 {url} failed: "
            )),
            "{reason}"
        );
    }

    /// A resumption answered 404 while the connection has a session: the session is gone.
    #[tokio::test]
    async fn a_resumption_answered_404_ends_the_session() {
        let (url, _requests) = scripted_server(|request| match request.method.as_str() {
            "GET" => "404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n".to_owned(),
            _ => "200 OK\r\ncontent-type: text/event-stream\r\nmcp-session-id: s1\r\n\
                  connection: close\r\n\r\nid: p0\nretry: 10\ndata: \n\n"
                .to_owned(),
        })
        .await;
        let mut transport = connect(&url, Arc::new(OnceLock::new()), Vec::new(), None).unwrap();
        let call = jsonrpc::request(1, "tools/call", Some(serde_json::json!({"name": "t"})));
        transport.outgoing.send(call, Sent::Request(1)).unwrap();
        let Frame::Message(answer, None) = next_frame(&mut transport).await else {
            panic!("not a message");
        };
        let reason = "the plugin answered HTTP 404 to the resumption of a call's event stream";
        assert_eq!(
            serde_json::from_str::<Value>(&answer).unwrap()["error"]["message"],
            reason
        );
        let Frame::Closed(closed) = next_frame(&mut transport).await else {
            panic!("the connection did not end");
        };
        assert_eq!(closed, format!("its MCP session is gone ({reason})"));
    }

    /// A resumption answered with anything but an event stream fails the call with the status.
    #[tokio::test]
    async fn a_resumption_refused_fails_the_call_with_the_status() {
        let (url, _requests) = scripted_server(|request| match request.method.as_str() {
            "GET" => "405 Method Not Allowed\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                .to_owned(),
            _ => event_stream("id: p0\nretry: 10\ndata: \n\n"),
        })
        .await;
        let mut transport = connect(&url, Arc::new(OnceLock::new()), Vec::new(), None).unwrap();
        let call = jsonrpc::request(1, "tools/call", Some(serde_json::json!({"name": "t"})));
        transport.outgoing.send(call, Sent::Request(1)).unwrap();
        let Frame::Message(answer, None) = next_frame(&mut transport).await else {
            panic!("not a message");
        };
        assert_eq!(
            serde_json::from_str::<Value>(&answer).unwrap()["error"]["message"],
            "the plugin closed its event stream before answering, and answered HTTP 405 to its \
             resumption"
        );
    }

    /// The listening stream, ended by the server after an event with an id, is opened again
    /// after the server's `retry` (not the host's own pause of a second) with `Last-Event-ID`.
    #[tokio::test]
    async fn the_listening_stream_resumes_after_the_servers_retry() {
        let (url, mut requests) = scripted_server(|request| match request.method.as_str() {
            "GET" if request.last_event_id.is_none() => event_stream(
                "id: l1\nretry: 50\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/x\"}\n\n",
            ),
            // The resumed stream stays open.
            "GET" => "200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: 1000\r\n\r\n"
                .to_owned(),
            _ => ACCEPTED.to_owned(),
        })
        .await;
        let mut transport = connect(&url, Arc::new(OnceLock::new()), Vec::new(), None).unwrap();
        let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
        transport
            .outgoing
            .send(initialized.to_owned(), Sent::Initialized)
            .unwrap();
        let Frame::Message(message, None) = next_frame(&mut transport).await else {
            panic!("not a message");
        };
        assert_eq!(message, r#"{"jsonrpc":"2.0","method":"notifications/x"}"#);
        let mut gets = Vec::new();
        while gets.len() < 2 {
            let request = requests.recv().await.unwrap();
            if request.method == "GET" {
                gets.push(request);
            }
        }
        assert_eq!(gets[0].last_event_id, None);
        assert_eq!(gets[1].last_event_id.as_deref(), Some("l1"));
        let pause = gets[1].at - gets[0].at;
        assert!(
            pause >= std::time::Duration::from_millis(50)
                && pause < std::time::Duration::from_millis(500),
            "reopened after {pause:?}"
        );
    }

    /// A connection to `url` that has said `initialized` (so it opens its listening stream), and
    /// the first `count` GETs the server got, each within ten seconds.
    async fn listening_gets(
        url: &str,
        requests: &mut tokio::sync::mpsc::UnboundedReceiver<Seen>,
        count: usize,
    ) -> (Transport, Vec<Seen>) {
        let transport = connect(url, Arc::new(OnceLock::new()), Vec::new(), None).unwrap();
        let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
        transport
            .outgoing
            .send(initialized.to_owned(), Sent::Initialized)
            .unwrap();
        let mut gets = Vec::new();
        while gets.len() < count {
            let request = tokio::time::timeout(std::time::Duration::from_secs(10), requests.recv())
                .await
                .unwrap()
                .unwrap();
            if request.method == "GET" {
                gets.push(request);
            }
        }
        (transport, gets)
    }

    /// A listening stream whose reopening the server cannot take at the moment (503) is opened
    /// again a second later, still after the last event id.
    #[tokio::test]
    async fn a_listening_stream_is_reopened_after_a_moment_the_server_could_not_take_it() {
        let gets = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counted = Arc::clone(&gets);
        let (url, mut requests) = scripted_server(move |request| match request.method.as_str() {
            "GET" => match counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst) {
                0 => event_stream("id: l1\nretry: 10\ndata: \n\n"),
                1 => "503 Service Unavailable\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                    .to_owned(),
                _ => "200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: 1000\r\n\r\n"
                    .to_owned(),
            },
            _ => ACCEPTED.to_owned(),
        })
        .await;
        let (transport, gets) = listening_gets(&url, &mut requests, 3).await;
        let ids: Vec<_> = gets
            .iter()
            .map(|get| get.last_event_id.as_deref())
            .collect();
        assert_eq!(ids, [None, Some("l1"), Some("l1")]);
        let pause = gets[2].at - gets[1].at;
        assert!(
            pause >= LISTENER_REOPEN && pause < LISTENER_REOPEN * 3,
            "reopened after {pause:?}"
        );
        drop(transport);
    }

    /// A listening stream the server cannot take again, ever (503 to every reopening), is tried
    /// `MAX_LISTENER_FAILURES` times after it ended, then given up: no GET after those.
    #[tokio::test(start_paused = true)]
    async fn a_listening_stream_that_cannot_be_reopened_is_given_up_after_a_bound() {
        let gets = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counted = Arc::clone(&gets);
        let (url, mut requests) = scripted_server(move |request| match request.method.as_str() {
            "GET" => match counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst) {
                0 => event_stream("id: l1\nretry: 10\ndata: \n\n"),
                _ => "503 Service Unavailable\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                    .to_owned(),
            },
            _ => ACCEPTED.to_owned(),
        })
        .await;
        let transport = connect(&url, Arc::new(OnceLock::new()), Vec::new(), None).unwrap();
        let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
        transport
            .outgoing
            .send(initialized.to_owned(), Sent::Initialized)
            .unwrap();
        // The pauses double from a second to a minute: ten of them take about five minutes.
        let mut seen = 0;
        let hour_later = tokio::time::Instant::now() + std::time::Duration::from_secs(3600);
        while let Ok(Some(request)) = tokio::time::timeout_at(hour_later, requests.recv()).await {
            seen += usize::from(request.method == "GET");
        }
        let bound = 1 + MAX_LISTENER_FAILURES as usize;
        assert_eq!(seen, bound);
        assert_eq!(gets.load(std::sync::atomic::Ordering::SeqCst), bound);
    }

    /// A server that ends every listening stream at once with nothing but a priming event is
    /// reopened after its `retry` `MAX_FRUITLESS_RESUMPTIONS` times, then after the host's own
    /// pause of a second.
    #[tokio::test]
    async fn a_listening_stream_ended_at_once_again_and_again_falls_back_to_the_hosts_pause() {
        let (url, mut requests) = scripted_server(|request| match request.method.as_str() {
            "GET" => event_stream("id: l\nretry: 10\ndata: \n\n"),
            _ => ACCEPTED.to_owned(),
        })
        .await;
        let (_transport, gets) =
            listening_gets(&url, &mut requests, MAX_FRUITLESS_RESUMPTIONS as usize + 2).await;
        let gets: Vec<_> = gets.iter().map(|get| get.at).collect();
        let pauses: Vec<_> = gets.windows(2).map(|pair| pair[1] - pair[0]).collect();
        let (paced, own) = pauses.split_at(MAX_FRUITLESS_RESUMPTIONS as usize);
        assert!(
            paced
                .iter()
                .all(|pause| *pause < std::time::Duration::from_millis(500)),
            "{pauses:?}"
        );
        assert!(own[0] >= LISTENER_REOPEN, "{pauses:?}");
    }

    /// An event over the limit is reported and skipped, whether one line or many make it too
    /// big, and the events after it are read as usual.
    #[test]
    fn an_event_over_the_limit_is_skipped_and_the_stream_goes_on() {
        let long_line = format!("data: {}\n\n", "x".repeat(MAX_FRAME_BYTES + 1));
        let half = format!("data: {}\n", "y".repeat(MAX_FRAME_BYTES / 2 + 1));
        assert_eq!(
            events(&[
                &long_line,
                "data: ok\n\n",
                &half,
                &half,
                "\n",
                "data: ok again\n\n"
            ]),
            ["<oversized>", "ok", "<oversized>", "ok again"]
        );
    }

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
        let fit = super::super::MAX_QUEUED_BYTES / message.len();
        // The first may already be on its way out of the channel.
        assert!((fit..=fit + 1).contains(&sent), "{sent} sent, {fit} fit");
        assert_eq!(
            transport.outgoing.send("{}".to_owned(), Sent::Other),
            Err(super::super::QueueFull)
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
            most.load(Ordering::SeqCst) <= super::super::http1::MAX_OPENING,
            "{} requests waited at once",
            most.load(Ordering::SeqCst)
        );
        server.abort();
    }

    #[test]
    fn refuses_headers_it_cannot_send_or_sets_itself() {
        assert_eq!(check_header("X-Team", "a b\tc"), Ok(()));
        assert_eq!(
            check_header("X Team", "a"),
            Err("`X Team` is not a valid HTTP header name".to_owned())
        );
        assert_eq!(
            check_header("Mcp-Session-Id", "a"),
            Err("the header `Mcp-Session-Id` is set by formwork itself".to_owned())
        );
        assert_eq!(
            check_header("X-Team", "a\r\nX-Evil: 1"),
            Err("the value of the header `X-Team` has characters HTTP does not allow".to_owned())
        );
    }

    #[test]
    fn a_2026_request_mirrors_its_method_and_name_in_headers() {
        let body = r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"déployer","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#;
        let routing = RoutingHeaders::of(body).unwrap();
        assert_eq!(routing.version, "2026-07-28");
        assert_eq!(routing.method, "tools/call");
        // Not plain ASCII: base64 in the wrapping the spec gives.
        assert_eq!(routing.name.as_deref(), Some("=?base64?ZMOpcGxveWVy?="));
        let read = r#"{"jsonrpc":"2.0","id":4,"method":"resources/read","params":{"uri":"file:///a b","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#;
        assert_eq!(
            RoutingHeaders::of(read).unwrap().name.as_deref(),
            Some("file:///a b")
        );
        assert_eq!(header_value(" padded"), "=?base64?IHBhZGRlZA==?=");
        // A handshake-era request carries no envelope, and gets none of these headers.
        assert!(RoutingHeaders::of(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#).is_none());
    }
}
