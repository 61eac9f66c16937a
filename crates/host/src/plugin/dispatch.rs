//! The connection's read loop: every frame the plugin sends is classified and dispatched here;
//! its requests are served on this same task, side by side with the reading.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use futures::stream::FuturesUnordered;
use futures::{FutureExt, StreamExt};
use serde_json::{Value, json};

use super::{ServedRequest, Shared, elicitation};
use crate::budget::clipped;
use crate::jsonrpc::{self, Incoming, Params, RawId, RpcError};
use crate::transport::{self, Frame, Frames};

/// Reads frames until the transport closes, then fails every pending request.
///
/// The plugin's requests are served here too, side by side with the reading: each is one future
/// in `requests`, polled when it can make progress, so a form that waits for a person holds up
/// nothing else.
pub(super) async fn read_loop(shared: Arc<Shared>, mut incoming: Frames) {
    let mut requests = FuturesUnordered::new();
    let closed = shared.closed.cancelled();
    tokio::pin!(closed);
    let reason = loop {
        tokio::select! {
            biased;
            () = &mut closed => break "the connection was closed".to_owned(),
            served = requests.next(), if !requests.is_empty() => {
                if let Some(Err(_)) = served {
                    tracing::error!(target: "formwork::plugin", plugin = %shared.name, "serving a request panicked; it stays unanswered");
                }
            }
            frame = incoming.next() => match frame {
                Some(Frame::Message(text, stream_of)) => {
                    if let Some((id, method, params)) = dispatch(&shared, jsonrpc::parse_frame(&text)) {
                        let serve = serve_request(Arc::clone(&shared), id, method, params, stream_of);
                        // Boxed: the set keeps a spare node the size of its future.
                        requests.push(Box::pin(AssertUnwindSafe(serve).catch_unwind()));
                    }
                }
                Some(Frame::Oversized) => {
                    if let Some(suppressed) = shared.may_log() {
                        tracing::warn!(
                            target: "formwork::plugin",
                            plugin = %shared.name,
                            limit = transport::MAX_FRAME_BYTES,
                            suppressed,
                            "discarded a message larger than the limit"
                        );
                    }
                }
                Some(Frame::Closed(reason)) => break reason,
                None => break "the transport stopped".to_owned(),
            },
        }
    };
    tracing::info!(target: "formwork::plugin", plugin = %shared.name, %reason, "plugin disconnected");
    if let Ok(mut slot) = shared.closed_reason.lock() {
        slot.get_or_insert(reason);
    }
    shared.closed.cancel();
    let pending = shared
        .pending
        .lock()
        .map(|mut pending| std::mem::take(&mut *pending))
        .unwrap_or_default();
    drop(pending);
    // The requests still being served see the connection closed and end at once, unanswered.
    while requests.next().await.is_some() {}
}

/// Handles one message; a request is handed back, to be served.
fn dispatch(shared: &Shared, message: Incoming) -> Option<(RawId, String, Params)> {
    match message {
        Incoming::Response { id, outcome } => {
            let sender = id
                .as_u64()
                .and_then(|id| shared.pending.lock().ok().and_then(|mut p| p.remove(&id)));
            match sender {
                Some(sender) => {
                    let _ = sender.send(outcome.map_err(Box::new));
                }
                None => {
                    if let Some(suppressed) = shared.may_log() {
                        tracing::warn!(
                            target: "formwork::plugin",
                            plugin = %shared.name,
                            id = %clipped(id.as_json()),
                            suppressed,
                            "response to an unknown request id"
                        );
                    }
                }
            }
        }
        Incoming::Request { id, method, params } => return Some((id, method, params)),
        Incoming::Notification { method, params } => on_notification(shared, &method, params),
        Incoming::Invalid { id, code, reason } => {
            if let Some(suppressed) = shared.may_log() {
                tracing::warn!(target: "formwork::plugin", plugin = %shared.name, reason = %clipped(&reason), suppressed, "invalid message");
            }
            shared.send(jsonrpc::error_response(id.as_ref(), code, &reason));
        }
    }
    None
}

/// `stream_of`: the host's request on whose response stream the request came (HTTP).
///
/// An `async` block, not an `async fn`, which would keep a second copy of its arguments while
/// the form waits for the person.
#[expect(
    clippy::manual_async_fn,
    reason = "an `async fn` keeps a second copy of its arguments while it waits"
)]
fn serve_request(
    shared: Arc<Shared>,
    id: RawId,
    method: String,
    params: Params,
    stream_of: Option<u64>,
) -> impl Future<Output = ()> + Send {
    async move {
        let cancelled = shared.closed.child_token();
        let registered = shared
            .in_flight
            .lock()
            .map(|mut in_flight| in_flight.insert(id.clone(), cancelled.clone()).is_none())
            .unwrap_or(false);
        if !registered {
            shared.send(jsonrpc::error_response(
                Some(&id),
                jsonrpc::code::INVALID_REQUEST,
                "a request with this id is already in progress",
            ));
            return;
        }
        // Boxed: only a doctor or a test observes.
        let observed = shared
            .on_request
            .as_ref()
            .map(|_| Box::new(jsonrpc::read_params(params.as_deref()).and_then(Result::ok)));
        let (outcome, form) = match method.as_str() {
            "ping" => (Ok(json!({})), None),
            // The extension's method is served only when formwork declared the extension.
            "elicitation/create" | super::OPENAI_ELICITATION_METHOD
                if method == "elicitation/create" || shared.extensions.openai_elicitation =>
            {
                let answer = elicitation::handle(
                    &shared,
                    &id,
                    &method,
                    params,
                    stream_of,
                    cancelled.clone(),
                )
                .await;
                (answer.result, answer.form)
            }
            other => (
                Err(RpcError {
                    code: jsonrpc::code::METHOD_NOT_FOUND,
                    message: format!("formwork does not handle `{other}`"),
                    data: None,
                }),
                None,
            ),
        };
        if let Ok(mut in_flight) = shared.in_flight.lock() {
            in_flight.remove(&id);
        }
        if let (Some(observer), Some(params)) = (&shared.on_request, observed) {
            observer(&ServedRequest {
                id: id.to_value(),
                method: method.clone(),
                params: *params,
                answer: (!cancelled.is_cancelled()).then(|| outcome.clone()),
                on_call_stream: stream_of.is_some(),
            });
        }
        // A request the plugin cancelled gets no answer; one whose plugin is gone cannot get one.
        if cancelled.is_cancelled() {
            return;
        }
        shared.send(match outcome {
            Ok(result) => jsonrpc::response(&id, &result),
            Err(error) => jsonrpc::error_response(Some(&id), error.code, &error.message),
        });
        // Freed only now that the answer is on its way (see `elicitation::Answer`).
        drop(form);
    }
}

fn on_notification(shared: &Shared, method: &str, params: Params) {
    let params = jsonrpc::read_params(params.as_deref())
        .and_then(Result::ok)
        .unwrap_or(Value::Null);
    match method {
        "notifications/elicitation/complete" => {
            let id = params.get("elicitationId").and_then(Value::as_str);
            let flow =
                id.and_then(|id| shared.url_flows.lock().ok().and_then(|mut f| f.remove(id)));
            match flow {
                Some(flow) => {
                    let _ = flow.send(true);
                    tracing::info!(target: "formwork::form", plugin = %shared.name, elicitation_id = id, "url elicitation complete");
                }
                None => {
                    tracing::debug!(target: "formwork::form", plugin = %shared.name, "completion for an unknown elicitation ignored")
                }
            }
        }
        "notifications/cancelled" => {
            let key = params.get("requestId").and_then(RawId::from_value);
            let token = key.and_then(|key| {
                shared
                    .in_flight
                    .lock()
                    .ok()
                    .and_then(|f| f.get(&key).cloned())
            });
            if let Some(token) = token {
                token.cancel();
            }
        }
        "notifications/tools/list_changed" => {
            shared.changes.tools.fetch_add(1, Ordering::AcqRel);
        }
        "notifications/resources/list_changed" => {
            shared.changes.resources.fetch_add(1, Ordering::AcqRel);
        }
        "notifications/message" => {
            let level = params
                .get("level")
                .and_then(Value::as_str)
                .unwrap_or("info");
            let data = params.get("data").unwrap_or(&Value::Null).to_string();
            if let Some(suppressed) = shared.may_log() {
                tracing::info!(target: "formwork::plugin_log", plugin = %shared.name, level = %clipped(level), data = %clipped(&data), suppressed, "plugin log");
            }
        }
        other => {
            tracing::debug!(target: "formwork::plugin", plugin = %shared.name, method = %clipped(other), "notification ignored")
        }
    }
}
