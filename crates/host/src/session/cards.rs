//! The cards of a session: plugin forms and approval cards, queued, answered and ended.

use std::collections::HashSet;
use std::sync::Arc;

use formwork_forms::{ElicitationRequest, FieldError, FieldKind, FormRequest};
use serde_json::Value;
use serde_json::value::RawValue;
use tokio::sync::oneshot;

use crate::broker::{Card, Waiter};
use crate::events::{Event, FormAnswer};
use crate::policy::{self, ApprovalAnswer, ApprovalCard, ApprovalChoice, CardRendering};
use crate::responder::{BoxFuture, FormPrompt, FormReply};
use crate::store::StoreError;

use super::model_turn::MODEL_MEMBER;
use super::{CommandError, Session, SessionState, reason};

impl super::Host {
    /// The card on screen in `session`, for a UI that asks its own way (the terminal's
    /// `formwork chat`): its id, the plugin, and what it asks, a form with its parsed schema
    /// (to check answers as they are typed) or the approval card. `None` when nothing is shown.
    pub fn shown_card(&self, session: &str) -> Result<Option<ShownCard>, CommandError> {
        let session = self.inner.session(session)?;
        let state = session.lock();
        let Some(card) = state.cards.shown() else {
            return Ok(None);
        };
        let asks = match &card.waiter {
            Waiter::Elicitation { form, .. } => {
                let mut request = card.body.clone();
                if let (ElicitationRequest::Form(shown), Some(form)) = (&mut request, form) {
                    shown.form = Some(Arc::clone(form));
                }
                CardAsks::Form(request)
            }
            Waiter::Approval { card, .. } => CardAsks::Approval(card.as_ref().clone()),
        };
        Ok(Some(ShownCard {
            id: card.id.clone(),
            plugin: card.plugin.clone(),
            asks,
        }))
    }
}

/// The card on screen ([`Host::shown_card`](super::Host::shown_card)).
#[derive(Debug, Clone)]
pub struct ShownCard {
    /// The form's or approval's id, to answer it with.
    pub id: String,
    /// The server that asks.
    pub plugin: String,
    /// What it asks.
    pub asks: CardAsks,
}

/// What a shown card asks for.
#[derive(Debug, Clone)]
pub enum CardAsks {
    /// A plugin's form (with its parsed form) or URL.
    Form(ElicitationRequest),
    /// Whether a tool call may run.
    Approval(ApprovalCard),
}

impl Session {
    /// Puts a card in the queue and announces it; `request` is a plugin form's params, for the
    /// store.
    pub(super) fn push_card(&self, card: Card, request: Option<Box<RawValue>>) {
        self.push_card_locked(self.lock(), card, request);
    }

    /// [`Session::push_card`] under a lock already held (and let go of here).
    fn push_card_locked(
        &self,
        mut state: std::sync::MutexGuard<'_, SessionState>,
        card: Card,
        request: Option<Box<RawValue>>,
    ) {
        let waiting = state.cards.shown().is_some();
        // Announced at once, shown maybe later: the transcript keeps the order of arrival.
        let event = announce(&card, waiting);
        let id = card.id.clone();
        state.cards.push(card);
        self.emit_locked_with(&mut state, event, request, None);
        drop(state);
        if !waiting {
            tracing::info!(target: "formwork::form", marker = "form-shown", session = %self.id, form = %id, "card shown");
            self.arm_time_limit(&id);
        }
    }

    pub(super) fn arm_time_limit(&self, card_id: &str) {
        let Some(limit) = self
            .host
            .upgrade()
            .and_then(|host| host.options.form_time_limit)
        else {
            return;
        };
        let Some(session) = self.me.upgrade() else {
            return;
        };
        let card_id = card_id.to_owned();
        tokio::spawn(async move {
            tokio::time::sleep(limit).await;
            session.end_card(&card_id, EndBy::Host(reason::TIMED_OUT));
        });
    }

    /// The elicitation path: policy, routing, then the queue. `call_id`: the call the form
    /// belongs to, when the connection knows; else the turn's only call, if it has one.
    pub(super) fn ask(
        self: &Arc<Self>,
        server: &str,
        prompt: FormPrompt,
        call_id: Option<String>,
    ) -> BoxFuture<FormReply> {
        self.ask_card(server, prompt, call_id, Asker::Plugin).1
    }

    /// [`Session::ask`], also giving the card's id when the form became a card (`None` when
    /// it was declined before the queue).
    pub(super) fn ask_card(
        self: &Arc<Self>,
        server: &str,
        prompt: FormPrompt,
        call_id: Option<String>,
        asker: Asker,
    ) -> (Option<String>, BoxFuture<FormReply>) {
        let Some(host) = self.host.upgrade() else {
            return (None, Box::pin(async { FormReply::cancel() }));
        };
        let config = host.config();
        if asker == Asker::Plugin {
            let gate = policy::elicitation_gate(&config);
            let verdict = match &gate {
                Ok(allowed) => allowed.to_string(),
                Err(declined) => declined.to_string(),
            };
            tracing::info!(target: "formwork::policy", marker = "policy-decision", session = %self.id, plugin = server, allowed = gate.is_ok(), reason = %verdict, "plugin form");
            if gate.is_err() {
                self.plugin_diagnostic(
                    "elicitation-declined-by-policy",
                    format!("{server}: {verdict}"),
                );
                return (None, Box::pin(async { FormReply::decline() }));
            }
        }
        // A form outside a turn belongs to an app's tool call, or to nothing.
        let (outside, app_call) = {
            let state = self.lock();
            let outside = state.turn.is_none() && call_id.is_none() && !state.app_calls_running();
            let app_call = call_id
                .is_none()
                .then(|| state.only_app_call().cloned())
                .flatten();
            (outside, app_call)
        };
        if outside {
            self.plugin_diagnostic(
                "elicitation-outside-turn",
                format!("{server} asked for a form while no tool call of this session was running; declined"),
            );
            return (None, Box::pin(async { FormReply::decline() }));
        }
        let call_id = call_id.or(app_call).or_else(|| {
            let state = self.lock();
            let mut calls = state
                .turn
                .as_ref()?
                .calls
                .keys()
                .filter(|member| *member != MODEL_MEMBER);
            match (calls.next(), calls.next()) {
                (Some(call), None) => Some(call.clone()),
                _ => None,
            }
        });
        let forms = config.forms;
        let (reply, answer) = oneshot::channel();
        let mut body = prompt.request;
        let completion = prompt.url_completed;
        let form_id = self.new_id("f");
        // Counted and queued under one lock, so that forms arriving together cannot pass the
        // limit side by side.
        let state = self.lock();
        let of_call = call_id
            .as_deref()
            .map_or(0, |call| state.cards.forms_of_call(call).len());
        let of_session = state.cards.pending_forms();
        if let Err(refused) = policy::form_gate(&forms, &body, of_call, of_session) {
            drop(state);
            tracing::info!(target: "formwork::policy", marker = "policy-decision", session = %self.id, plugin = server, allowed = false, reason = %refused, "plugin form");
            self.plugin_diagnostic(refused.code(), format!("{server}: {refused}"));
            return (None, Box::pin(async { FormReply::decline() }));
        }
        // The card keeps the form to check answers; what is shown and stored is the rest.
        let form = body.take_form();
        self.push_card_locked(
            state,
            Card {
                id: form_id.clone(),
                call_id,
                plugin: server.to_owned(),
                body,
                waiter: Waiter::Elicitation { form, reply },
            },
            Some(prompt.params),
        );
        if let Some(mut completed) = completion {
            // Ends when the plugin reports completion, or when no completion can come any more
            // (sender dropped: the flow was not accepted, or the connection closed).
            let session = Arc::downgrade(self);
            let form_id = form_id.clone();
            tokio::spawn(async move {
                if completed.wait_for(|done| *done).await.is_ok()
                    && let Some(session) = session.upgrade()
                {
                    session.emit(Event::FormCompleted { form_id });
                }
            });
        }
        // The connection may drop this future as soon as the plugin is gone (its own select
        // can win the race); the guard then ends the card, so it never lingers on screen.
        let guard = CardGuard {
            session: Arc::clone(self),
            card_id: form_id.clone(),
        };
        let cancelled = prompt.cancelled;
        let reply = Box::pin(async move {
            tokio::select! {
                reply = answer => reply.unwrap_or_else(|_| FormReply::cancel()),
                () = cancelled.cancelled() => {
                    drop(guard);
                    FormReply::cancel()
                }
            }
        });
        (Some(form_id), reply)
    }

    pub(super) fn answer_form(
        &self,
        form_id: &str,
        answer: FormAnswer,
    ) -> Result<(), CommandError> {
        let end = {
            let state = self.lock();
            let card = match state.cards.shown() {
                Some(card) if card.id == form_id => card,
                _ => return Err(Self::not_open_error(&state, form_id)),
            };
            match &card.waiter {
                Waiter::Elicitation { form, .. } => {
                    let reply = reply_for(form.as_deref(), answer, &state.uploads)?;
                    mark_named_uploads_used(reply.content.as_ref(), &state.uploads);
                    EndBy::Person(reply)
                }
                Waiter::Approval { card, .. } => EndBy::Approved(approval_from_form(card, answer)?),
            }
        };
        self.end_card(form_id, end);
        Ok(())
    }

    pub(super) fn answer_approval(
        &self,
        approval_id: &str,
        choice: ApprovalChoice,
    ) -> Result<(), CommandError> {
        let answer = {
            let state = self.lock();
            match state.cards.shown() {
                Some(Card {
                    id,
                    waiter: Waiter::Approval { card, .. },
                    ..
                }) if id == approval_id => card.answer(choice),
                Some(card) if card.id == approval_id => {
                    return Err(CommandError::Mismatch(format!(
                        "`{approval_id}` is a form; answer it with answer_form"
                    )));
                }
                _ => return Err(Self::not_open_error(&state, approval_id)),
            }
        };
        self.end_card(approval_id, EndBy::Approved(answer));
        Ok(())
    }

    fn not_open_error(state: &SessionState, id: &str) -> CommandError {
        if state.cards.len() > 1 && state.cards.shown().is_some_and(|card| card.id != id) {
            // It may be waiting; only the card on screen can be answered.
            CommandError::NotShown(id.to_owned())
        } else {
            CommandError::NotOpen(id.to_owned())
        }
    }

    /// Cancels every card of the session (on screen and waiting) for `why`.
    pub(super) fn cancel_cards(&self, why: &'static str) {
        let cards = self.lock().cards.drain();
        for card in cards {
            self.finish_card(card, EndBy::Host(why));
        }
    }

    /// Ends one card and moves the next up.
    pub(super) fn end_card(&self, card_id: &str, by: EndBy) {
        let (card, next) = {
            let mut state = self.lock();
            let Some((card, next)) = state.cards.take(card_id) else {
                return;
            };
            (card, next.map(|next| next.id.clone()))
        };
        self.finish_card(card, by);
        if let Some(next) = next {
            tracing::info!(target: "formwork::form", marker = "form-shown", session = %self.id, form = %next, "card shown");
            self.emit(Event::FormShown {
                form_id: next.clone(),
            });
            self.arm_time_limit(&next);
        }
    }

    /// Announces how a card ended and tells whoever waits for it. A card the person answered
    /// is told only once the resolution is stored, so a plugin never holds an answer the
    /// transcript lacks; if it cannot be stored, the card ends as cancelled after all
    /// ([`Session::not_stored`]). A card the host ended is told at once: it gets `cancel`, which
    /// is also what a restart records for a resolution that never reached the store.
    fn finish_card(&self, card: Card, by: EndBy) {
        let id = card.id;
        let by_person = !matches!(by, EndBy::Host(_));
        match card.waiter {
            Waiter::Elicitation { reply, .. } => {
                let (answer, why) = match by {
                    EndBy::Person(answer) => (answer, None),
                    EndBy::Host(why) => (FormReply::cancel(), Some(why.to_owned())),
                    EndBy::Approved(_) => (FormReply::cancel(), None),
                };
                tracing::info!(target: "formwork::form", marker = "answer", session = %self.id, form = %id, action = answer.action.as_str(), reason = why.as_deref().unwrap_or("the person answered"), "form ended");
                let event = Event::FormResolved {
                    form_id: id.clone(),
                    action: answer.action,
                    content: answer.content.clone(),
                    reason: why,
                };
                self.tell(event, by_person, reply, answer, move |session, err| {
                    let cancel = FormReply::cancel();
                    let resolution = Event::FormResolved {
                        form_id: id.clone(),
                        action: cancel.action,
                        content: None,
                        reason: Some(reason::NOT_STORED.to_owned()),
                    };
                    session.not_stored(
                        resolution,
                        format!("the answer to form {id} could not be stored, so the plugin was told `cancel`: {err}"),
                    );
                    cancel
                });
            }
            Waiter::Approval { card, reply } => {
                let answer = match by {
                    EndBy::Approved(answer) => answer,
                    EndBy::Host(why) => card.cancel(why),
                    EndBy::Person(_) => card.cancel("answered as a form"),
                };
                let event = approval_resolved(&id, &answer);
                self.tell(event, by_person, reply, answer, move |session, err| {
                    let cancelled = card.cancel(reason::NOT_STORED);
                    session.not_stored(
                        approval_resolved(&id, &cancelled),
                        format!("the answer to approval {id} could not be stored, so the tool call does not run: {err}"),
                    );
                    cancelled
                });
            }
        }
    }

    /// Emits a card's resolution and sends `answer` to whoever waits: at once when the host
    /// ended the card, else once the resolution is stored. When the store refuses it, `refused`
    /// ends the card again and gives what is sent instead.
    fn tell<T: Send + 'static>(
        &self,
        resolution: Event,
        by_person: bool,
        reply: oneshot::Sender<T>,
        answer: T,
        refused: impl FnOnce(&Session, StoreError) -> T + Send + 'static,
    ) {
        if !by_person {
            self.emit(resolution);
            let _ = reply.send(answer);
            return;
        }
        self.emit_then(
            resolution,
            Box::new(move |session, stored| {
                let answer = match stored {
                    Ok(()) => answer,
                    Err(err) => refused(session, err),
                };
                let _ = reply.send(answer);
            }),
        );
    }

    /// A person's answer that the store refused: the card ends again, as cancelled
    /// (`resolution`), and the diagnostic `answer-not-stored` says why.
    fn not_stored(&self, resolution: Event, message: String) {
        self.emit(resolution);
        self.diagnostic("answer-not-stored", message);
    }
}

/// The event that ends an approval card with `answer`.
fn approval_resolved(approval_id: &str, answer: &ApprovalAnswer) -> Event {
    Event::ApprovalResolved {
        approval_id: approval_id.to_owned(),
        choice: answer.choice,
        cancelled: answer.cancelled,
        reason: Some(answer.reason.clone()),
    }
}

/// Who asks with a form: a plugin's form passes the person's elicitation policy first; the
/// model's own questions (Codex's `request_user_input`) are not a plugin's and do not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Asker {
    Plugin,
    Model,
}

/// Ends its card as `plugin-gone` when dropped; a card already ended is left alone.
struct CardGuard {
    session: Arc<Session>,
    card_id: String,
}

impl Drop for CardGuard {
    fn drop(&mut self) {
        self.session
            .end_card(&self.card_id, EndBy::Host(reason::PLUGIN_GONE));
    }
}

/// How a card ended.
pub(super) enum EndBy {
    /// The person answered a form.
    Person(FormReply),
    /// The person answered an approval card.
    Approved(ApprovalAnswer),
    /// The host ended it, for this reason.
    Host(&'static str),
}

fn announce(card: &Card, waiting: bool) -> Event {
    match &card.waiter {
        Waiter::Approval { card: approval, .. } => Event::ApprovalRequested {
            approval_id: card.id.clone(),
            call_id: card.call_id.clone().unwrap_or_default(),
            server: approval.server.clone(),
            tool: approval.tool.clone(),
            waiting,
            body: card.body.clone(),
        },
        Waiter::Elicitation { .. } => Event::FormRequested {
            form_id: card.id.clone(),
            call_id: card.call_id.clone(),
            plugin: card.plugin.clone(),
            waiting,
            body: card.body.clone(),
        },
    }
}

/// The approval card in the rendering the config asks for.
pub(super) fn approval_body(card: &ApprovalCard, rendering: CardRendering) -> ElicitationRequest {
    let shown = |render, meta| {
        ElicitationRequest::Form(FormRequest {
            render: Arc::new(render),
            meta,
            form: None,
        })
    };
    match rendering {
        CardRendering::RequestUserInput => shown(card.render_block(), None),
        CardRendering::McpElicitation => {
            let params = card.elicitation_params();
            match formwork_forms::parse_request(&params) {
                Ok(mut request @ ElicitationRequest::Form(_)) => {
                    request.take_form();
                    request
                }
                _ => shown(card.render_block(), None),
            }
        }
    }
}

/// An approval card answered through `answer_form`: render answers for the question
/// rendering, accept/decline/cancel for the elicitation rendering.
fn approval_from_form(
    card: &ApprovalCard,
    answer: FormAnswer,
) -> Result<ApprovalAnswer, CommandError> {
    Ok(match answer {
        FormAnswer::Render { answers } => card.answer_from_render(&answers),
        FormAnswer::Accept { .. } => card.answer(ApprovalChoice::Allow),
        FormAnswer::Decline => card.answer(ApprovalChoice::Deny),
        FormAnswer::Cancel => card.cancel("the approval card was cancelled"),
        FormAnswer::AcceptUrl => {
            return Err(CommandError::Mismatch(
                "an approval card is not a URL request".to_owned(),
            ));
        }
    })
}

/// Turns a UI answer into the reply for the plugin, validating it against the form. A local
/// file a resource picker names must be one of `uploads`, the copies the host made for this
/// session.
fn reply_for(
    form: Option<&formwork_forms::Form>,
    answer: FormAnswer,
    uploads: &HashSet<String>,
) -> Result<FormReply, CommandError> {
    let reply = content_for(form, answer)?;
    if let (Some(form), Some(content)) = (form, &reply.content) {
        let errors = foreign_files(form, content, uploads);
        if !errors.is_empty() {
            return Err(CommandError::Invalid(formwork_forms::ValidationErrors {
                errors,
            }));
        }
    }
    Ok(reply)
}

/// Marks the uploads an accepted answer names as used now, so that they are kept another week
/// (`store::UPLOAD_KEPT_FOR`).
fn mark_named_uploads_used(content: Option<&formwork_forms::Content>, uploads: &HashSet<String>) {
    let Some(content) = content else {
        return;
    };
    let named = content.values().flat_map(answered_uris);
    for uri in named.filter(|uri| uploads.contains(*uri)) {
        crate::store::mark_upload_used(uri);
    }
}

/// The URIs an answer's value names: one string, or a list of them (a resource picker's).
fn answered_uris(value: &Value) -> Vec<&str> {
    match value {
        Value::String(uri) => vec![uri.as_str()],
        Value::Array(items) => items.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

/// One error per `file:` URI in a resource picker's answer that the host did not make.
fn foreign_files(
    form: &formwork_forms::Form,
    content: &formwork_forms::Content,
    uploads: &HashSet<String>,
) -> Vec<FieldError> {
    let mut errors = Vec::new();
    for field in form.fields() {
        if !matches!(field.kind, FieldKind::Resource(_)) {
            continue;
        }
        for uri in content
            .get(&field.key)
            .map(answered_uris)
            .unwrap_or_default()
        {
            if uri.starts_with("file:") && !uploads.contains(uri) {
                errors.push(FieldError {
                    field: field.key.clone(),
                    message: "names a local file that was not added in this session".to_owned(),
                });
            }
        }
    }
    errors
}

fn content_for(
    form: Option<&formwork_forms::Form>,
    answer: FormAnswer,
) -> Result<FormReply, CommandError> {
    let invalid = CommandError::Invalid;
    match (answer, form) {
        (FormAnswer::Decline, _) => Ok(FormReply::decline()),
        (FormAnswer::Cancel, _) => Ok(FormReply::cancel()),
        (FormAnswer::AcceptUrl, None) => Ok(FormReply::accept_url()),
        (FormAnswer::AcceptUrl, Some(_)) => Err(CommandError::Mismatch(
            "this is a form, not a URL request".to_owned(),
        )),
        (FormAnswer::Render { .. } | FormAnswer::Accept { .. }, None) => Err(
            CommandError::Mismatch("a URL request is accepted with accept_url".to_owned()),
        ),
        (FormAnswer::Render { answers }, Some(form)) => form
            .content_from_render_answers(&answers)
            .map(FormReply::accept)
            .map_err(invalid),
        (FormAnswer::Accept { content }, Some(form)) => form
            .content_from_typed(&content)
            .map(FormReply::accept)
            .map_err(invalid),
    }
}
