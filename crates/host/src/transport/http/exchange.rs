//! One POST and its answer: a JSON body, or an event stream whose messages are forwarded until
//! the response to the request.

use serde::Deserialize;
use serde_json::Value;

use super::connection::{Refusal, Shared};
use super::headers::ACCEPT_BOTH;
use super::resume::resume;
use super::sse::{SseEvent, SseParser};
use crate::transport::http1::{Body, ReadError, Response, SendError};
use crate::transport::{self, Frame, MAX_FRAME_BYTES};

/// The longest a request holds one of its endpoint's permits (see `Endpoint::opening`).
pub(super) const OPENING_HOLD: std::time::Duration = std::time::Duration::from_secs(1);
/// How many same-origin redirects (307, 308) one message follows.
const MAX_REDIRECTS: u32 = 3;

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

/// Sends `body` and reads what answers it: a JSON body, or an event stream whose messages go
/// to the connection. An `async` block, not an `async fn`, which would keep a second copy of its
/// arguments for as long as the stream is read.
#[expect(
    clippy::manual_async_fn,
    reason = "an `async fn` keeps a second copy of its arguments while it waits"
)]
pub(super) fn post(
    shared: &Shared,
    body: String,
    request_id: Option<u64>,
) -> impl Future<Output = ()> + Send {
    async move {
        transport::trace_out(&body);
        // Boxed, like every step but reading an event stream: they are short, and the task lives
        // on as long as the call's stream; unboxed, room for their state would be held all that
        // time.
        // Only the body is kept while the stream is read, which may be as long as a person
        // takes: the head and its strings are freed. (In a block: a local of the whole task
        // would keep room for the response beside the body.)
        let mut body = {
            let Some(response) = Box::pin(send(shared, body, request_id)).await else {
                return;
            };
            if !response.content_type.starts_with("text/event-stream") {
                Box::pin(read_whole(shared, response, request_id)).await;
                return;
            }
            response.into_body()
        };
        let mut parser = SseParser::default();
        let read = read_sse(shared, &mut body, request_id, &mut parser).await;
        drop(body);
        if let Some(id) = request_id
            && !read.answered
            && let Err(err) = Box::pin(resume(shared, id, parser)).await
        {
            let reason = err.to_string();
            shared.fail_request(request_id, reason.clone());
            Box::pin(shared.check_reachable(&reason)).await;
        }
    }
}

/// Reads an answer that is not an event stream: one JSON message, or the reason it cannot be
/// taken.
async fn read_whole(shared: &Shared, response: Response, request_id: Option<u64>) {
    if response.content_type.starts_with("application/json") {
        match Box::pin(read_limited(response)).await {
            Ok(body) => {
                transport::trace_in(&body);
                let _ = shared.incoming.unbounded_send(Frame::Message(body, None));
            }
            Err(err) => shared.fail_request(request_id, err.to_string()),
        }
    } else {
        shared.fail_request(
            request_id,
            format!(
                "the plugin answered with content type `{}`",
                response.content_type
            ),
        );
    }
}

/// Sends the POST until it is answered with a body to read: signed again when refused,
/// redirects followed. `None` when the answer was empty (202, 204) or an error status, or the
/// exchange failed; each of those is handled here.
async fn send(shared: &Shared, body: String, request_id: Option<u64>) -> Option<Response> {
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
                return None;
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
                return None;
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
                return None;
            }
        };
        if matches!(response.status, 307 | 308) && redirects < MAX_REDIRECTS {
            redirects += 1;
            let location = response.location.clone().unwrap_or_default();
            let _ = response.read_to_end(64 * 1024).await;
            match shared.follow(&location) {
                Ok(()) => continue,
                Err(err) => {
                    shared.fail_request(request_id, err.to_string());
                    return None;
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
        return None;
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
            transport::trace_in(body);
            let _ = shared
                .incoming
                .unbounded_send(Frame::Message(body.to_owned(), None));
            return None;
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
            return None;
        }
        shared.fail_request(request_id, reason);
        return None;
    }
    Some(response)
}

/// Why a JSON answer could not be read.
#[derive(Debug, thiserror::Error)]
enum AnswerError {
    #[error(transparent)]
    Read(#[from] ReadError),
    #[error("the plugin's answer is not UTF-8")]
    NotUtf8,
}

async fn read_limited(response: Response) -> Result<String, AnswerError> {
    let body = response.read_to_end(MAX_FRAME_BYTES).await?;
    String::from_utf8(body).map_err(|_| AnswerError::NotUtf8)
}

/// How reading one connection of an event stream went.
pub(super) struct Read {
    /// The response to the stream's request was among its events.
    pub(super) answered: bool,
    /// It brought at least one message.
    pub(super) delivered: bool,
}

/// Forwards every `data` event of one connection of an SSE stream, until the response to
/// `request_id` or the end of the connection; `parser` follows the stream across connections.
pub(super) async fn read_sse(
    shared: &Shared,
    body: &mut Body,
    request_id: Option<u64>,
    parser: &mut SseParser,
) -> Read {
    let mut read = Read {
        answered: false,
        delivered: false,
    };
    while let Ok(Some(chunk)) = body.chunk().await {
        for event in parser.feed(&chunk) {
            match event {
                // Empty events only prime the stream for resumption.
                SseEvent::Data(data) if data.trim().is_empty() => {}
                SseEvent::Data(data) => {
                    transport::trace_in(&data);
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
