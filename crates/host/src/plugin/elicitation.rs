//! Serving `elicitation/create` (and, with `features.openai_elicitation`, the extension's
//! `openai/elicitation/create`, which takes the same params): raw params in, a form for the
//! responder, an `ElicitResult` out.
//!
//! The params are read from the JSON of the request as is, so the exact mode, every schema
//! keyword, the property order and the request `_meta` reach `formwork_forms` untouched.

use std::future::Future;
use std::sync::Arc;

use formwork_forms::{ElicitationRequest, Form, ParseOptions, RequestText, parse_request_with};
use serde_json::Value;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::{CountedAgainst, Shared};
use crate::budget::clipped;
use crate::jsonrpc::{self, Params, RawId, RpcError};
use crate::responder::{DeclineNotice, FormAction, FormPrompt, FormReply};

/// Counts a form as open until it ends, however it ends, against the timeout of the host's
/// request whose stream carried it (see [`Shared::form_opened`]).
struct OpenForm<'a> {
    shared: &'a Shared,
    counted_against: CountedAgainst,
}

impl<'a> OpenForm<'a> {
    fn enter(shared: &'a Shared, stream_of: Option<u64>) -> Self {
        let counted_against = shared.form_opened(stream_of);
        OpenForm {
            shared,
            counted_against,
        }
    }
}

impl Drop for OpenForm<'_> {
    fn drop(&mut self) {
        self.shared.form_closed(self.counted_against);
    }
}

/// What [`handle`] produced for one `elicitation/create`.
pub(crate) struct Answer {
    /// The result (or error) for the plugin.
    pub(crate) result: Result<Value, RpcError>,
    /// The form that was answered, parsed again to check the answer. Freeing a form takes
    /// longer than sending the answer, so the caller drops it after sending.
    pub(crate) form: Option<Form>,
}

/// Serves one `elicitation/create`: reads it, hands it to the responder, checks the reply.
///
/// An `async` block, not an `async fn`, which would keep a second copy of its arguments while
/// the form waits; what is read before the wait is made in a block of its own for the same
/// reason.
#[expect(
    clippy::manual_async_fn,
    reason = "an `async fn` keeps a second copy of its arguments while it waits"
)]
pub(crate) fn handle<'a>(
    shared: &'a Shared,
    id: &'a RawId,
    method: &'a str,
    params: Params,
    stream_of: Option<u64>,
    cancelled: CancellationToken,
) -> impl Future<Output = Answer> + Send + 'a {
    async move {
        let (prompt, text, url_flow, _open) = {
            let (request, text) = match read(shared, id, method, params, stream_of) {
                Ok(read) => read,
                Err(result) => return Answer { result, form: None },
            };
            let open = OpenForm::enter(shared, stream_of);
            // A URL flow waits for `notifications/elicitation/complete` only if the person
            // accepted.
            let url_flow = match &request {
                ElicitationRequest::Url(request) => request.elicitation_id.clone(),
                ElicitationRequest::Form(_) => None,
            };
            let url_completed = url_flow.as_ref().map(|elicitation_id| {
                let (done, completed) = watch::channel(false);
                if let Ok(mut flows) = shared.url_flows.lock() {
                    flows.insert(elicitation_id.clone(), done);
                }
                completed
            });
            // The text is kept here, not the parsed form: the form is parsed again for the last
            // check of what the responder returns, so that a waiting form holds no parsed copy.
            let prompt = FormPrompt {
                plugin: shared.name.clone(),
                request_id: id.to_value(),
                call_request: stream_of,
                params: text.clone(),
                request,
                url_completed,
                cancelled: cancelled.clone(),
            };
            (prompt, text, url_flow, open)
        };
        tracing::info!(target: "formwork::form", marker = "form-shown", plugin = %shared.name, id = %clipped(id.as_json()), "form shown");
        // The responder first: when the form is cancelled it sees that too, and may end its side
        // of the form before its future is dropped.
        let reply = tokio::select! {
            biased;
            reply = shared.responder.respond(prompt) => reply,
            () = cancelled.cancelled() => FormReply::cancel(),
        };
        let (reply, form) = checked(reply, &text, shared, id);
        if let Some(elicitation_id) = url_flow
            && reply.action != FormAction::Accept
            && let Ok(mut flows) = shared.url_flows.lock()
        {
            flows.remove(&elicitation_id);
        }
        tracing::info!(target: "formwork::form", marker = "result-sent", plugin = %shared.name, id = %clipped(id.as_json()), action = reply.action.as_str(), "form answered");
        Answer {
            result: Ok(reply.to_result()),
            form,
        }
    }
}

/// Reads the params into a request (and keeps them as text), or gives the result at once: an
/// error for params that cannot be read, `decline` for a request that cannot be shown.
fn read(
    shared: &Shared,
    id: &RawId,
    method: &str,
    params: Params,
    stream_of: Option<u64>,
) -> Result<(ElicitationRequest, RequestText), Result<Value, RpcError>> {
    let Some(text) = params else {
        return Err(Err(invalid_params(format!("{method} needs params"))));
    };
    let params: Value = match serde_json::from_str(text.get()) {
        Ok(params) => params,
        Err(err) => {
            return Err(Err(invalid_params(format!(
                "{method} params could not be read: {err}"
            ))));
        }
    };
    if !params.is_object() {
        return Err(Err(invalid_params(format!(
            "{method} params must be an object"
        ))));
    }
    tracing::info!(target: "formwork::form", marker = "request-received", plugin = %shared.name, id = %clipped(id.as_json()), "elicitation received");

    let options = ParseOptions {
        openai_elicitation: shared.extensions.openai_elicitation,
    };
    match parse_request_with(&params, options) {
        Ok(request) => Ok((request, RequestText::new(Arc::from(text), options))),
        Err(decline) => {
            let reason = decline.to_string();
            tracing::info!(target: "formwork::form", marker = "declined", plugin = %shared.name, id = %clipped(id.as_json()), %reason, "form declined");
            shared.responder.declined(&DeclineNotice {
                plugin: shared.name.clone(),
                request_id: id.to_value(),
                call_request: stream_of,
                reason,
            });
            Err(Ok(FormReply::decline().to_result()))
        }
    }
}

/// The last guard before content reaches the plugin: accepted form content must validate
/// against the form parsed again from `text`, and a URL-mode accept carries no content.
/// Returns the reply and the form it was checked against.
fn checked(
    reply: FormReply,
    text: &RequestText,
    shared: &Shared,
    id: &RawId,
) -> (FormReply, Option<Form>) {
    if reply.action != FormAction::Accept {
        let reply = FormReply {
            content: None,
            ..reply
        };
        return (reply, None);
    }
    let form = match text.parse() {
        Ok(mut request) => request.take_form().map(Arc::unwrap_or_clone),
        // Not reached: these params were parsed once already, and parsing is pure.
        Err(decline) => {
            tracing::error!(target: "formwork::form", plugin = %shared.name, id = %clipped(id.as_json()), %decline, "the form could not be parsed again to check its answer; sending cancel");
            return (FormReply::cancel(), None);
        }
    };
    let Some(form) = form else {
        let reply = FormReply {
            content: None,
            ..reply
        };
        return (reply, None);
    };
    let content = reply.content.unwrap_or_default();
    let reply = match form.validate(&content) {
        Ok(()) => FormReply {
            content: Some(content),
            ..reply
        },
        Err(errors) => {
            // The fields only: the messages may quote the answers, which are never logged.
            let fields: Vec<&str> = errors
                .errors
                .iter()
                .map(|error| error.field.as_str())
                .collect();
            tracing::error!(target: "formwork::form", plugin = %shared.name, id = %clipped(id.as_json()), ?fields, "the responder accepted content that does not validate; sending cancel");
            FormReply::cancel()
        }
    };
    (reply, Some(form))
}

fn invalid_params(message: String) -> RpcError {
    RpcError {
        code: jsonrpc::code::INVALID_PARAMS,
        message,
        data: None,
    }
}
