//! Between session events and the store: each event becomes the row it stands for, and a
//! stored transcript becomes the events a UI replays after a restart.
//!
//! Turn boundaries and `form_shown` are not stored: they describe a live session only.

use std::sync::Arc;

use serde_json::Value;
use serde_json::value::RawValue;

use formwork_forms::{ElicitationRequest, JsonText};

use crate::responder::FormAction;
use crate::session::{Event, Role};
use crate::store::{
    AppRecord, ApprovalChoice, ApprovalResolution, ApprovalStatus, EntryDetail, EntryKind,
    FormResolution, FormStatus, InvocationOutcome, InvocationStatus, NewApproval, NewForm,
    NewInvocation, PlainEntryKind, RoundRecord, Store, StoreError, ToolResult, TranscriptEntry,
};

/// What a plugin sent that its event leaves out (UIs never see it), kept until the event is
/// stored.
pub(crate) enum Sent {
    /// A form's params as the plugin sent them, and the id it was asked under as JSON text (a
    /// round's form: its `inputRequests` key).
    Form {
        params: Arc<RawValue>,
        asked_as: Option<String>,
    },
    /// A round's `requestState`, to send again if another replica carries the call on.
    RoundState(String),
}

/// Writes one event of `session`, with what its plugin `sent` that the event leaves out.
/// Returns after the store committed it.
pub(crate) async fn write(
    store: &Store,
    session: &str,
    event: &Event,
    sent: Option<&Sent>,
) -> Result<(), StoreError> {
    match event {
        Event::MessageAdded { role, text } => {
            let kind = match role {
                Role::User => PlainEntryKind::UserMessage,
                Role::Assistant => PlainEntryKind::AssistantMessage,
            };
            let payload = raw(&serde_json::json!({ "text": text }))?;
            store.append_entry(session, kind, &payload).await.map(drop)
        }
        Event::Diagnostic { code, message } => {
            let payload = raw(&serde_json::json!({ "code": code, "message": message }))?;
            store
                .append_entry(session, PlainEntryKind::Diagnostic, &payload)
                .await
                .map(drop)
        }
        Event::ToolCallStarted {
            call_id,
            server,
            tool,
            arguments,
            asked_by,
        } => {
            let arguments = raw(arguments)?;
            store
                .begin_invocation(NewInvocation {
                    id: call_id,
                    session,
                    server,
                    tool,
                    arguments: Some(&arguments),
                    asked_by: asked_by.as_deref(),
                })
                .await
                .map(drop)
        }
        Event::ToolCallFinished {
            call_id,
            result,
            error,
        } => {
            let text = result.as_ref().map(Value::to_string);
            let outcome = match (&text, error) {
                (Some(text), _) => InvocationOutcome::Completed(ToolResult::from_json(text)?),
                (None, Some(error)) => InvocationOutcome::Failed { error },
                (None, None) => InvocationOutcome::Failed { error: "no result" },
            };
            store.finish_invocation(call_id, outcome).await
        }
        Event::ToolCallRound {
            call_id,
            round,
            asked,
            ..
        } => {
            let state = match sent {
                Some(Sent::RoundState(state)) => Some(state.as_str()),
                _ => None,
            };
            store.record_round(call_id, *round, asked, state).await
        }
        Event::ToolCallApp {
            call_id,
            resource_uri,
        } => {
            store
                .record_app(
                    call_id,
                    AppRecord {
                        resource_uri: resource_uri.clone(),
                    },
                )
                .await
        }
        Event::FormRequested {
            form_id,
            call_id,
            plugin,
            body,
            ..
        } => {
            let body = raw(body)?;
            let (params, asked_as) = match sent {
                Some(Sent::Form { params, asked_as }) => (Some(&**params), asked_as.as_deref()),
                _ => (None, None),
            };
            store
                .insert_form(NewForm {
                    id: form_id,
                    session,
                    invocation: call_id.as_deref(),
                    plugin,
                    // What the plugin sent, and what the person was shown.
                    request: params.unwrap_or(&body),
                    render: Some(&body),
                    asked_as,
                })
                .await
                .map(drop)
        }
        Event::FormResolved {
            form_id,
            action,
            content,
            reason,
        } => {
            let content = content.as_ref().map(raw).transpose()?;
            let resolution = match action {
                FormAction::Accept => FormResolution::Accepted {
                    content: content.as_deref(),
                },
                FormAction::Decline => FormResolution::Declined {
                    reason: reason.as_deref(),
                },
                FormAction::Cancel => FormResolution::Cancelled {
                    reason: reason.as_deref().unwrap_or("cancelled by the person"),
                },
            };
            store.resolve_form(form_id, resolution).await
        }
        Event::ApprovalRequested {
            approval_id,
            call_id,
            server,
            tool,
            body,
            ..
        } => {
            let body = raw(body)?;
            store
                .insert_approval(NewApproval {
                    id: approval_id,
                    session,
                    invocation: Some(call_id),
                    server,
                    tool,
                    rendering: &body,
                })
                .await
                .map(drop)
        }
        Event::ApprovalResolved {
            approval_id,
            choice,
            cancelled,
            reason,
        } => {
            let resolution = if *cancelled {
                ApprovalResolution::Cancelled {
                    reason: reason.as_deref().unwrap_or("cancelled"),
                }
            } else {
                ApprovalResolution::Answered {
                    choice: *choice,
                    reason: reason.as_deref(),
                }
            };
            store.resolve_approval(approval_id, resolution).await
        }
        Event::TurnStarted { .. }
        | Event::TurnEnded { .. }
        | Event::FormShown { .. }
        | Event::MessageDelta { .. }
        | Event::FormCompleted { .. }
        | Event::SignedIn { .. }
        // An offer for the page that saw the failure; the failure's text keeps the fix.
        | Event::OlderProtocolOffered { .. } => Ok(()),
    }
}

/// The events of stored transcript entries, in their order, as a UI replays them.
pub(crate) fn replay(entries: Vec<TranscriptEntry>) -> Vec<Event> {
    let mut events = Vec::new();
    for entry in entries {
        let payload: Value = serde_json::from_str(entry.payload.get()).unwrap_or(Value::Null);
        let text = |key: &str| {
            payload
                .get(key)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        match (entry.kind, entry.detail) {
            (EntryKind::UserMessage, _) => events.push(Event::MessageAdded {
                role: Role::User,
                text: text("text"),
            }),
            (EntryKind::AssistantMessage, _) => events.push(Event::MessageAdded {
                role: Role::Assistant,
                text: text("text"),
            }),
            (EntryKind::Diagnostic, _) => events.push(Event::Diagnostic {
                code: text("code"),
                message: text("message"),
            }),
            (EntryKind::Invocation, Some(EntryDetail::Invocation(call))) => {
                events.push(Event::ToolCallStarted {
                    call_id: call.id,
                    server: call.server,
                    tool: call.tool,
                    arguments: JsonText::new(
                        &parse(call.arguments.as_deref()).unwrap_or(Value::Null),
                    ),
                    asked_by: call.asked_by,
                });
            }
            (EntryKind::InvocationEnd, Some(EntryDetail::Invocation(call))) => {
                events.push(finished_call(call));
            }
            (EntryKind::InvocationRound, Some(EntryDetail::Invocation(call))) => {
                if let Ok(round) = RoundRecord::from_payload(entry.payload.get(), entry.at) {
                    events.push(Event::ToolCallRound {
                        call_id: call.id,
                        round: round.round,
                        asked: round.asked,
                        request_state: round.request_state,
                    });
                }
            }
            (EntryKind::InvocationApp, Some(EntryDetail::Invocation(call))) => {
                if let Ok(app) = AppRecord::from_payload(entry.payload.get()) {
                    events.push(Event::ToolCallApp {
                        call_id: call.id,
                        resource_uri: app.resource_uri,
                    });
                }
            }
            (EntryKind::Form, Some(EntryDetail::Form(form))) => {
                let body: Option<ElicitationRequest> = form
                    .render
                    .as_deref()
                    .and_then(|render| serde_json::from_str(render.get()).ok());
                if let Some(body) = body {
                    events.push(Event::FormRequested {
                        form_id: form.id,
                        call_id: form.invocation,
                        plugin: form.plugin,
                        waiting: false,
                        body,
                    });
                }
            }
            (EntryKind::FormEnd, Some(EntryDetail::Form(form))) => {
                let action = match form.status {
                    FormStatus::Accepted => FormAction::Accept,
                    FormStatus::Declined => FormAction::Decline,
                    FormStatus::Cancelled | FormStatus::Pending => FormAction::Cancel,
                };
                events.push(Event::FormResolved {
                    form_id: form.id,
                    action,
                    content: parse(form.content.as_deref()).and_then(|v| v.as_object().cloned()),
                    reason: form.reason,
                });
            }
            (EntryKind::Approval, Some(EntryDetail::Approval(approval))) => {
                if let Ok(body) =
                    serde_json::from_str::<ElicitationRequest>(approval.rendering.get())
                {
                    events.push(Event::ApprovalRequested {
                        approval_id: approval.id,
                        call_id: approval.invocation.unwrap_or_default(),
                        server: approval.server,
                        tool: approval.tool,
                        waiting: false,
                        body,
                    });
                }
            }
            (EntryKind::ApprovalEnd, Some(EntryDetail::Approval(approval))) => {
                events.push(Event::ApprovalResolved {
                    approval_id: approval.id,
                    choice: approval.choice.unwrap_or(ApprovalChoice::Deny),
                    cancelled: approval.status == ApprovalStatus::Cancelled,
                    reason: approval.reason,
                });
            }
            _ => {}
        }
    }
    events
}

/// The event that ends a stored call: its result, or why it has none.
fn finished_call(call: crate::store::InvocationRecord) -> Event {
    if call.status != InvocationStatus::Completed {
        return Event::ToolCallFinished {
            error: Some(call.error.unwrap_or_else(|| call.status.to_string())),
            call_id: call.id,
            result: None,
        };
    }
    let mut result = serde_json::Map::new();
    for (key, part) in [
        ("content", &call.content),
        ("structuredContent", &call.structured_content),
        ("_meta", &call.meta),
    ] {
        if let Some(value) = parse(part.as_deref()) {
            result.insert(key.to_owned(), value);
        }
    }
    if call.is_error {
        result.insert("isError".to_owned(), Value::Bool(true));
    }
    Event::ToolCallFinished {
        call_id: call.id,
        result: Some(Value::Object(result)),
        error: None,
    }
}

fn raw(value: &impl serde::Serialize) -> Result<Box<RawValue>, StoreError> {
    serde_json::value::to_raw_value(value)
        .map_err(|err| StoreError::Commit(format!("an event could not be written as JSON: {err}")))
}

fn parse(raw: Option<&RawValue>) -> Option<Value> {
    raw.and_then(|raw| serde_json::from_str(raw.get()).ok())
}
