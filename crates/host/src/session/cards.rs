//! The cards of a session: a plugin's form or an approval of a tool call ([`CardAsks`] says
//! which), queued one on screen at a time, answered and ended.
//!
//! The path of one card: [`Session::ask`] (a plugin's form, after the policy gates) or
//! `push_approval` queues it and announces it; [`Session::answer_form`] or
//! [`Session::answer_approval`] reads the person's answer against it, and the answer (a
//! [`CardAnswer`] of the card's kind) goes to whoever waits once its record is committed
//! ([`ReplyAfterCommit`]). A card the host ends ([`Session::end_card`]) is told `cancel` at
//! once. Every card ends exactly once, through [`CardQueue::take`] or [`CardQueue::drain`], so
//! no plugin is left waiting. The queue only keeps order; it decides nothing about policy.

use std::collections::{HashSet, VecDeque};
use std::future::Future;
use std::sync::Arc;

use formwork_forms::render::RenderText;
use formwork_forms::{ElicitationRequest, FieldError, FieldKind, FormRequest, RequestText};
use serde_json::Value;
use tokio::sync::oneshot;

use super::wire::{Event, FormAnswer};
use crate::future::BoxFuture;
use crate::persist::Sent;
use crate::policy::{self, ApprovalAnswer, ApprovalCard, ApprovalChoice, CardRendering};
use crate::responder::{FormPrompt, FormReply};

use super::model_turn::MODEL_MEMBER;
use super::replicas::HeldElsewhere;
use super::reply_after_commit::ReplyAfterCommit;
use super::{CommandError, EndReason, Session, SessionState};

/// One card, shown or waiting.
pub(crate) struct Card {
    pub id: String,
    /// The tool call it belongs to, when known.
    pub call_id: Option<String>,
    /// The server that asks (for an approval: whose tool would run).
    pub plugin: String,
    /// What a UI draws: the form without its parsed schema, or the approval's rendering.
    pub shown: ElicitationRequest,
    /// What it asks, to read answers with.
    pub asks: CardAsks,
    /// Where the answer goes (see `ReplyAfterCommit` for when).
    pub reply: oneshot::Sender<CardAnswer>,
}

/// What a card asks for.
#[derive(Debug, Clone)]
pub enum CardAsks {
    /// A form or a URL, as the params it was asked with: [`RequestText::parse`] gives the
    /// request with its parsed [`Form`](formwork_forms::Form), which checks answers. A waiting
    /// form keeps the text only, a fraction of the parsed form's size.
    Form(RequestText),
    /// Whether a tool call may run (boxed: most cards are forms, and a queue holds its cards
    /// inline).
    Approval(Box<ApprovalCard>),
}

/// The answer to a card, of the card's own kind.
#[derive(Debug)]
pub(crate) enum CardAnswer {
    /// Boxed: a card's channel holds room for its answer as long as the card is open.
    Form(Box<FormReply>),
    Approval(ApprovalAnswer),
}

impl Card {
    /// A form card for `request`, parsed from `text`, and the reply to come: `cancel` when the
    /// card goes away unanswered. The card keeps the text; `request`'s parsed form is dropped.
    pub fn form(
        id: String,
        call_id: Option<String>,
        plugin: String,
        mut request: ElicitationRequest,
        text: RequestText,
    ) -> (Card, impl Future<Output = FormReply> + Send + use<>) {
        request.take_form();
        let (reply, answer) = oneshot::channel();
        let card = Card {
            id,
            call_id,
            plugin,
            shown: request,
            asks: CardAsks::Form(text),
            reply,
        };
        let answer = async move {
            match answer.await {
                Ok(CardAnswer::Form(reply)) => *reply,
                _ => FormReply::cancel(),
            }
        };
        (card, answer)
    }

    /// An approval card shown as `shown`, and the answer to come: cancelled for `why_dropped`
    /// when the card goes away unanswered.
    pub fn approval(
        id: String,
        call_id: Option<String>,
        approval: ApprovalCard,
        shown: ElicitationRequest,
        why_dropped: EndReason,
    ) -> (Card, impl Future<Output = ApprovalAnswer> + Send + use<>) {
        let (reply, answer) = oneshot::channel();
        let fallback = approval.clone();
        let card = Card {
            id,
            call_id,
            plugin: approval.server.clone(),
            shown,
            asks: CardAsks::Approval(Box::new(approval)),
            reply,
        };
        let answer = async move {
            match answer.await {
                Ok(CardAnswer::Approval(answer)) => answer,
                _ => fallback.cancel(why_dropped.as_str()),
            }
        };
        (card, answer)
    }

    /// A plugin's form (not an approval).
    pub fn is_form(&self) -> bool {
        matches!(self.asks, CardAsks::Form(_))
    }

    /// The answer when the host ends the card for `why`: `cancel`, or a cancelled approval.
    pub fn cancelled(&self, why: EndReason) -> CardAnswer {
        match &self.asks {
            CardAsks::Form(_) => CardAnswer::Form(Box::new(FormReply::cancel())),
            CardAsks::Approval(approval) => CardAnswer::Approval(approval.cancel(why.as_str())),
        }
    }
}

/// The cards of one session.
#[derive(Default)]
pub(crate) struct CardQueue {
    shown: Option<Card>,
    waiting: VecDeque<Card>,
}

impl CardQueue {
    /// Adds a card. Returns `true` when it went straight on screen.
    pub fn push(&mut self, card: Card) -> bool {
        if self.shown.is_none() {
            self.shown = Some(card);
            true
        } else {
            self.waiting.push_back(card);
            false
        }
    }

    /// The card on screen.
    pub fn shown(&self) -> Option<&Card> {
        self.shown.as_ref()
    }

    /// Takes the card `id` out of the queue, wherever it is. When it was on screen the next
    /// waiting card moves up; that card is returned second so the caller can announce it.
    pub fn take(&mut self, id: &str) -> Option<(Card, Option<&Card>)> {
        if self.shown.as_ref().is_some_and(|card| card.id == id) {
            let card = self.shown.take()?;
            self.shown = self.waiting.pop_front();
            return Some((card, self.shown.as_ref()));
        }
        let index = self.waiting.iter().position(|card| card.id == id)?;
        let card = self.waiting.remove(index)?;
        Some((card, None))
    }

    /// Takes every card out, the one on screen first, then the waiting ones in order.
    pub fn drain(&mut self) -> Vec<Card> {
        self.shown
            .take()
            .into_iter()
            .chain(self.waiting.drain(..))
            .collect()
    }

    /// The plugin forms (not approvals) that belong to the call `call_id`, on screen or waiting.
    pub fn forms_of_call(&self, call_id: &str) -> Vec<String> {
        self.all()
            .filter(|card| card.call_id.as_deref() == Some(call_id) && card.is_form())
            .map(|card| card.id.clone())
            .collect()
    }

    /// How many plugin forms (not approvals) are open, shown or waiting.
    pub fn pending_forms(&self) -> usize {
        self.all().filter(|card| card.is_form()).count()
    }

    /// How many cards are open (shown or waiting).
    pub fn len(&self) -> usize {
        usize::from(self.shown.is_some()) + self.waiting.len()
    }

    fn all(&self) -> impl Iterator<Item = &Card> {
        self.shown.iter().chain(self.waiting.iter())
    }
}

impl super::Host {
    /// The card on screen in `session`, for a UI that asks its own way (the terminal's
    /// `formwork chat`): its id, the plugin, and what it asks, a form with its parsed schema
    /// (to check answers as they are typed) or the approval card. `None` when nothing is shown.
    pub fn shown_card(&self, session: &str) -> Result<Option<ShownCard>, CommandError> {
        let session = self.inner.session(session)?;
        let state = session.lock();
        Ok(state.cards.shown().map(|card| ShownCard {
            id: card.id.clone(),
            plugin: card.plugin.clone(),
            asks: card.asks.clone(),
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

impl Session {
    /// Puts a card in the queue and announces it; `sent` is what a plugin form's plugin sent,
    /// for the store.
    pub(super) fn push_card(&self, card: Card, sent: Option<Sent>) {
        self.push_card_locked(self.lock(), card, sent);
    }

    /// [`Session::push_card`] under a lock already held (and let go of here).
    fn push_card_locked(
        &self,
        mut state: std::sync::MutexGuard<'_, SessionState>,
        card: Card,
        sent: Option<Sent>,
    ) {
        let waiting = state.cards.shown().is_some();
        // Announced at once, shown maybe later: the transcript keeps the order of arrival.
        let event = announce(&card, waiting);
        let id = card.id.clone();
        state.cards.push(card);
        self.emit_locked_with(&mut state, event, sent, None);
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
            session.end_card(&card_id, EndReason::TimedOut);
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
        let completion = prompt.url_completed;
        let form_id = self.new_id("f");
        // Counted and queued under one lock, so that forms arriving together cannot pass the
        // limit side by side.
        let state = self.lock();
        let of_call = call_id
            .as_deref()
            .map_or(0, |call| state.cards.forms_of_call(call).len());
        let of_session = state.cards.pending_forms();
        if let Err(refused) = policy::form_gate(&forms, &prompt.request, of_call, of_session) {
            drop(state);
            tracing::info!(target: "formwork::policy", marker = "policy-decision", session = %self.id, plugin = server, allowed = false, reason = %refused, "plugin form");
            self.plugin_diagnostic(refused.code(), format!("{server}: {refused}"));
            return (None, Box::pin(async { FormReply::decline() }));
        }
        let sent = Sent::Form {
            params: Arc::clone(prompt.params.params()),
            asked_as: Some(prompt.request_id.to_string()),
        };
        let (card, answer) = Card::form(
            form_id.clone(),
            call_id,
            server.to_owned(),
            prompt.request,
            prompt.params,
        );
        self.push_card_locked(state, card, Some(sent));
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
                reply = answer => reply,
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
        let answer = {
            let state = self.lock();
            let here = state.cards.shown().is_some_and(|card| card.id == form_id);
            if !here && state.held_by_other(form_id).is_some() {
                drop(state);
                return self.answer_form_held_elsewhere(form_id, answer);
            }
            let card = match state.cards.shown() {
                Some(card) if card.id == form_id => card,
                _ => return Err(Self::not_open_error(&state, form_id)),
            };
            match &card.asks {
                CardAsks::Form(text) => {
                    let form = parsed_form(text)?;
                    let reply = reply_for(form.as_deref(), answer, state.uploads.get())?;
                    mark_named_uploads_used(reply.content.as_ref(), state.uploads.get());
                    CardAnswer::Form(Box::new(reply))
                }
                CardAsks::Approval(card) => CardAnswer::Approval(approval_from_form(card, answer)?),
            }
        };
        self.answered(form_id, answer);
        Ok(())
    }

    pub(super) fn answer_approval(
        &self,
        approval_id: &str,
        choice: ApprovalChoice,
    ) -> Result<(), CommandError> {
        let answer = {
            let state = self.lock();
            let here = state
                .cards
                .shown()
                .is_some_and(|card| card.id == approval_id);
            match state.held_by_other(approval_id) {
                Some(HeldElsewhere::Approval) if !here => {
                    drop(state);
                    self.answer_approval_held_elsewhere(approval_id, choice);
                    return Ok(());
                }
                Some(HeldElsewhere::Form(_)) if !here => {
                    return Err(CommandError::Mismatch(format!(
                        "`{approval_id}` is a form; answer it with answer_form"
                    )));
                }
                _ => {}
            }
            match state.cards.shown() {
                Some(card) if card.id == approval_id => match &card.asks {
                    CardAsks::Approval(approval) => approval.answer(choice),
                    CardAsks::Form(_) => {
                        return Err(CommandError::Mismatch(format!(
                            "`{approval_id}` is a form; answer it with answer_form"
                        )));
                    }
                },
                _ => return Err(Self::not_open_error(&state, approval_id)),
            }
        };
        self.answered(approval_id, CardAnswer::Approval(answer));
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
    pub(super) fn cancel_cards(&self, why: EndReason) {
        let cards = self.lock().cards.drain();
        for card in cards {
            self.cancel_card(card, why);
        }
    }

    /// Ends the card `card_id` as the host, for `why`, and moves the next one up.
    pub(super) fn end_card(&self, card_id: &str, why: EndReason) {
        if let Some(card) = self.take_card(card_id) {
            self.cancel_card(card, why);
        }
    }

    /// Ends the card `card_id` with the person's answer, and moves the next one up.
    pub(super) fn answered(&self, card_id: &str, answer: CardAnswer) {
        if let Some(card) = self.take_card(card_id) {
            self.answer_card(card, answer);
        }
    }

    /// Takes the card `card_id` out of the queue and shows the next one.
    pub(super) fn take_card(&self, card_id: &str) -> Option<Card> {
        let (card, next) = {
            let mut state = self.lock();
            let (card, next) = state.cards.take(card_id)?;
            (card, next.map(|next| next.id.clone()))
        };
        if let Some(next) = next {
            tracing::info!(target: "formwork::form", marker = "form-shown", session = %self.id, form = %next, "card shown");
            self.emit(Event::FormShown {
                form_id: next.clone(),
            });
            self.arm_time_limit(&next);
        }
        Some(card)
    }

    /// Records that the host ended `card` for `why` and tells whoever waits `cancel` at once:
    /// that is also what a restart records for a card it finds open.
    fn cancel_card(&self, card: Card, why: EndReason) {
        let answer = card.cancelled(why);
        log_form_end(&self.id, &card.id, &answer, Some(why.as_str()));
        self.emit(resolution(&card.id, &answer, Some(why.as_str())));
        let _ = card.reply.send(answer);
    }

    /// Records the person's `answer` to `card` and sends it once the record is committed
    /// ([`ReplyAfterCommit`]), so a plugin never holds an answer the transcript lacks.
    fn answer_card(&self, card: Card, answer: CardAnswer) {
        log_form_end(&self.id, &card.id, &answer, None);
        let resolution = resolution(&card.id, &answer, None);
        self.emit_then(resolution, ReplyAfterCommit::new(card, answer));
    }
}

fn log_form_end(session: &str, card_id: &str, answer: &CardAnswer, why: Option<&str>) {
    if let CardAnswer::Form(reply) = answer {
        tracing::info!(target: "formwork::form", marker = "answer", session, form = card_id, action = reply.action.as_str(), reason = why.unwrap_or("the person answered"), "form ended");
    }
}

/// The event that records how the card `card_id` ended with `answer`; `why` is the host's
/// reason for a form it ended.
pub(super) fn resolution(card_id: &str, answer: &CardAnswer, why: Option<&str>) -> Event {
    match answer {
        CardAnswer::Form(reply) => Event::FormResolved {
            form_id: card_id.to_owned(),
            action: reply.action,
            content: reply.content.clone(),
            reason: why.map(str::to_owned),
        },
        CardAnswer::Approval(answer) => Event::ApprovalResolved {
            approval_id: card_id.to_owned(),
            choice: answer.choice,
            cancelled: answer.cancelled,
            reason: Some(answer.reason.clone()),
        },
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
        self.session.end_card(&self.card_id, EndReason::PluginGone);
    }
}

fn announce(card: &Card, waiting: bool) -> Event {
    match &card.asks {
        CardAsks::Approval(approval) => Event::ApprovalRequested {
            approval_id: card.id.clone(),
            call_id: card.call_id.clone().unwrap_or_default(),
            server: approval.server.clone(),
            tool: approval.tool.clone(),
            waiting,
            body: card.shown.clone(),
        },
        CardAsks::Form(_) => Event::FormRequested {
            form_id: card.id.clone(),
            call_id: card.call_id.clone(),
            plugin: card.plugin.clone(),
            waiting,
            body: card.shown.clone(),
        },
    }
}

/// The approval card in the rendering the config asks for.
pub(super) fn approval_body(card: &ApprovalCard, rendering: CardRendering) -> ElicitationRequest {
    let shown = |render| {
        ElicitationRequest::Form(FormRequest {
            render: RenderText::new(&render),
            meta: None,
            form: None,
        })
    };
    match rendering {
        CardRendering::RequestUserInput => shown(card.render_block()),
        CardRendering::McpElicitation => {
            let params = card.elicitation_params();
            match formwork_forms::parse_request(&params) {
                Ok(mut request @ ElicitationRequest::Form(_)) => {
                    request.take_form();
                    request
                }
                _ => shown(card.render_block()),
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

/// The form of a card's request, parsed again to read an answer with (`None` for a URL).
pub(super) fn parsed_form(
    text: &RequestText,
) -> Result<Option<Arc<formwork_forms::Form>>, CommandError> {
    // Parsed once already when the card was made, and parsing is pure: not expected to fail.
    let mut request = text.parse().map_err(|decline| {
        CommandError::Mismatch(format!("the form could not be read again: {decline}"))
    })?;
    Ok(request.take_form())
}

/// Turns a UI answer into the reply for the plugin, validating it against the form. A local
/// file a resource picker names must be one of `uploads`, the copies the host made for this
/// session (if it made any).
pub(super) fn reply_for(
    form: Option<&formwork_forms::Form>,
    answer: FormAnswer,
    uploads: Option<&HashSet<String>>,
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
pub(super) fn mark_named_uploads_used(
    content: Option<&formwork_forms::Content>,
    uploads: Option<&HashSet<String>>,
) {
    let (Some(content), Some(uploads)) = (content, uploads) else {
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
    uploads: Option<&HashSet<String>>,
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
            if uri.starts_with("file:") && !uploads.is_some_and(|uploads| uploads.contains(uri)) {
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn card(id: &str) -> Card {
        let params =
            serde_json::json!({"mode": "url", "message": "", "url": "https://example.com"});
        let (request, text) = RequestText::read(&params, Default::default()).unwrap();
        Card::form(id.to_owned(), None, "p".to_owned(), request, text).0
    }

    #[test]
    fn one_card_on_screen_and_the_rest_in_order() {
        let mut queue = CardQueue::default();
        assert!(queue.push(card("a")));
        assert!(!queue.push(card("b")));
        assert!(!queue.push(card("c")));
        assert_eq!(queue.len(), 3);
        let (taken, next) = queue.take("a").unwrap();
        assert_eq!(taken.id, "a");
        assert_eq!(next.unwrap().id, "b");
        let (taken, next) = queue.take("c").unwrap();
        assert_eq!(taken.id, "c");
        assert!(next.is_none());
        assert_eq!(queue.shown().unwrap().id, "b");
        let drained: Vec<String> = queue.drain().into_iter().map(|card| card.id).collect();
        assert_eq!(drained, ["b"]);
        assert_eq!(queue.len(), 0);
    }
}
