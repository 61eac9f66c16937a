//! Sessions: a transcript, the plugins connected for it, the running turn, and its form queue.
//!
//! A UI drives a session only through [`Host::command`] and the events of [`Host::subscribe`].
//! Plugin connections are per session, so a plugin's elicitation is routed by the connection it
//! arrives on, and forms of different sessions never wait on each other.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::{broadcast, oneshot};
use tokio_util::sync::CancellationToken;

use crate::broker::{ApprovalOutcome, Card, FormQueue, Waiter};
use crate::events::{Command, Event, FormAnswer, FormBody, Role, SessionId};
use crate::plugin::{ConnectOptions, Plugin, PluginTarget};
use crate::responder::{BoxFuture, FormPrompt, FormReply, FormResponder, PromptKind};
use crate::runtime_policy::{ApprovalCard, RuntimePolicy};

/// Reasons a form ends without the person, as recorded in the transcript.
pub mod reason {
    /// The person sent a new message.
    pub const NEW_MESSAGE: &str = "new-message";
    /// The person stopped the turn.
    pub const STOPPED: &str = "stopped";
    /// The plugin exited, or cancelled its request.
    pub const PLUGIN_GONE: &str = "plugin-gone";
    /// No UI was attached for longer than the grace period.
    pub const UI_GONE: &str = "ui-gone";
    /// The per-form time limit ran out.
    pub const TIMED_OUT: &str = "timed-out";
}

/// A plugin the host can connect sessions to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerSpec {
    /// Its name in the config.
    pub name: String,
    /// How to reach it.
    pub target: PluginTarget,
}

/// Settings of the runtime that are not policy.
#[derive(Debug, Clone)]
pub struct HostOptions {
    /// How long a session keeps its forms after the last UI detached.
    pub ui_grace: Duration,
    /// An optional limit on how long one form may stay on screen.
    pub form_time_limit: Option<Duration>,
    /// The request timeout of plugin calls (paused while a form is open).
    pub request_timeout: Duration,
    /// Pass plugins' stderr through.
    pub inherit_stderr: bool,
}

impl Default for HostOptions {
    fn default() -> Self {
        HostOptions {
            ui_grace: Duration::from_secs(30),
            form_time_limit: None,
            request_timeout: Duration::from_secs(60),
            inherit_stderr: false,
        }
    }
}

/// Why a command was refused.
#[derive(Debug, thiserror::Error, PartialEq)]
#[non_exhaustive]
pub enum CommandError {
    /// There is no session with this id.
    #[error("no session `{0}`")]
    NoSession(String),
    /// There is no such server in the config.
    #[error("no server `{0}` is configured")]
    NoServer(String),
    /// The form or approval is not open (already answered, cancelled, or unknown).
    #[error("`{0}` is not open")]
    NotOpen(String),
    /// The form is open but waiting behind another; only the card on screen can be answered.
    #[error("`{0}` is waiting behind another form")]
    NotShown(String),
    /// The answer does not fit the form; the card stays open.
    #[error("the answer does not validate:\n{0}")]
    Invalid(String),
    /// The answer's shape does not fit the card (e.g. a URL answer for a form).
    #[error("{0}")]
    Mismatch(String),
}

/// The runtime: sessions and the plugins they use.
#[derive(Clone)]
pub struct Host {
    inner: Arc<HostInner>,
}

struct HostInner {
    servers: Vec<ServerSpec>,
    policy: Arc<dyn RuntimePolicy>,
    options: HostOptions,
    sessions: Mutex<HashMap<SessionId, Arc<Session>>>,
    ids: AtomicU64,
}

struct Session {
    id: SessionId,
    host: Weak<HostInner>,
    state: Mutex<SessionState>,
}

#[derive(Default)]
struct SessionState {
    log: Vec<Event>,
    subscribers: Option<broadcast::Sender<Event>>,
    plugins: HashMap<String, Arc<Plugin>>,
    turn: Option<Turn>,
    cards: FormQueue,
    attached_uis: usize,
    ui_gone_timer: Option<CancellationToken>,
    allowed_for_session: Vec<(String, String)>,
}

struct Turn {
    id: String,
    calls: HashMap<String, CancellationToken>,
}

impl Host {
    /// A runtime over `servers`, applying `policy`.
    pub fn new(servers: Vec<ServerSpec>, policy: Arc<dyn RuntimePolicy>, options: HostOptions) -> Self {
        Host {
            inner: Arc::new(HostInner {
                servers,
                policy,
                options,
                sessions: Mutex::new(HashMap::new()),
                ids: AtomicU64::new(1),
            }),
        }
    }

    /// The configured servers.
    pub fn servers(&self) -> &[ServerSpec] {
        &self.inner.servers
    }

    /// Opens a new, empty session.
    pub fn create_session(&self) -> SessionId {
        let id = format!("s{}", self.inner.next_id());
        let session = Arc::new(Session {
            id: id.clone(),
            host: Arc::downgrade(&self.inner),
            state: Mutex::new(SessionState::default()),
        });
        if let Ok(mut sessions) = self.inner.sessions.lock() {
            sessions.insert(id.clone(), session);
        }
        id
    }

    /// Everything that happened in the session so far, and the live stream of what follows.
    pub fn subscribe(&self, session: &str) -> Result<(Vec<Event>, broadcast::Receiver<Event>), CommandError> {
        let session = self.inner.session(session)?;
        let mut state = session.lock();
        let sender = state
            .subscribers
            .get_or_insert_with(|| broadcast::channel(256).0)
            .clone();
        Ok((state.log.clone(), sender.subscribe()))
    }

    /// Marks a UI attached to the session until the returned guard is dropped. When the last
    /// guard goes, the session's forms are cancelled after the grace period.
    pub fn attach_ui(&self, session: &str) -> Result<UiGuard, CommandError> {
        let session = self.inner.session(session)?;
        {
            let mut state = session.lock();
            state.attached_uis += 1;
            if let Some(timer) = state.ui_gone_timer.take() {
                timer.cancel();
            }
        }
        Ok(UiGuard { session })
    }

    /// Carries out a UI command. Tool calls run in the background; their progress arrives as
    /// events.
    pub fn command(&self, session: &str, command: Command) -> Result<(), CommandError> {
        let session = self.inner.session(session)?;
        match command {
            Command::SendMessage { text } => {
                session.cancel_cards(crate::session::reason::NEW_MESSAGE);
                session.emit(Event::MessageAdded {
                    role: Role::User,
                    text,
                });
                Ok(())
            }
            Command::CallTool {
                server,
                tool,
                arguments,
            } => session.call_tool(&server, &tool, arguments).map(|_| ()),
            Command::AnswerForm { form_id, answer } => session.answer_form(&form_id, answer),
            Command::AnswerApproval {
                approval_id,
                choice,
            } => session.answer_approval(&approval_id, &choice),
            Command::StopTurn => {
                session.stop_turn();
                Ok(())
            }
        }
    }

    /// Closes every plugin connection of every session.
    pub async fn shutdown(&self) {
        let sessions: Vec<Arc<Session>> = self
            .inner
            .sessions
            .lock()
            .map(|mut sessions| sessions.drain().map(|(_, session)| session).collect())
            .unwrap_or_default();
        for session in sessions {
            session.cancel_cards(reason::STOPPED);
            let plugins: Vec<Arc<Plugin>> = session.lock().plugins.drain().map(|(_, p)| p).collect();
            for plugin in plugins {
                if let Ok(plugin) = Arc::try_unwrap(plugin) {
                    plugin.close().await;
                }
            }
        }
    }
}

/// Keeps a session's UI counted as attached.
pub struct UiGuard {
    session: Arc<Session>,
}

impl Drop for UiGuard {
    fn drop(&mut self) {
        let Some(host) = self.session.host.upgrade() else {
            return;
        };
        let grace = host.options.ui_grace;
        let timer = CancellationToken::new();
        {
            let mut state = self.session.lock();
            state.attached_uis = state.attached_uis.saturating_sub(1);
            if state.attached_uis > 0 {
                return;
            }
            state.ui_gone_timer = Some(timer.clone());
        }
        let session = Arc::clone(&self.session);
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                tokio::select! {
                    () = tokio::time::sleep(grace) => session.cancel_cards(reason::UI_GONE),
                    () = timer.cancelled() => {}
                }
            });
        }
    }
}

impl HostInner {
    fn next_id(&self) -> u64 {
        self.ids.fetch_add(1, Ordering::Relaxed)
    }

    fn session(&self, id: &str) -> Result<Arc<Session>, CommandError> {
        self.sessions
            .lock()
            .ok()
            .and_then(|sessions| sessions.get(id).cloned())
            .ok_or_else(|| CommandError::NoSession(id.to_owned()))
    }

    fn server(&self, name: &str) -> Result<&ServerSpec, CommandError> {
        self.servers
            .iter()
            .find(|server| server.name == name)
            .ok_or_else(|| CommandError::NoServer(name.to_owned()))
    }
}

impl Session {
    fn lock(&self) -> std::sync::MutexGuard<'_, SessionState> {
        // A poisoned lock means a panic elsewhere already; keep serving with the data as is.
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn emit(&self, event: Event) {
        let mut state = self.lock();
        Self::emit_locked(&mut state, event);
    }

    fn emit_locked(state: &mut SessionState, event: Event) {
        if let Some(subscribers) = &state.subscribers {
            let _ = subscribers.send(event.clone());
        }
        state.log.push(event);
    }

    fn new_id(&self, prefix: &str) -> String {
        let number = self.host.upgrade().map_or(0, |host| host.next_id());
        format!("{prefix}{number}")
    }

    fn diagnostic(&self, code: &str, message: String) {
        tracing::info!(target: "formwork::session", session = %self.id, code, %message, "diagnostic");
        self.emit(Event::Diagnostic {
            code: code.to_owned(),
            message,
        });
    }

    /// Starts a tool call in the background and returns its id.
    fn call_tool(self: &Arc<Self>, server: &str, tool: &str, arguments: Option<Value>) -> Result<String, CommandError> {
        let host = self.host.upgrade().ok_or_else(|| CommandError::NoSession(self.id.clone()))?;
        let spec = host.server(server)?.clone();
        let call_id = self.new_id("c");
        let token = CancellationToken::new();
        {
            let mut state = self.lock();
            if state.turn.is_none() {
                let turn_id = format!("t{}", host.next_id());
                state.turn = Some(Turn {
                    id: turn_id.clone(),
                    calls: HashMap::new(),
                });
                Self::emit_locked(&mut state, Event::TurnStarted { turn_id });
            }
            if let Some(turn) = state.turn.as_mut() {
                turn.calls.insert(call_id.clone(), token.clone());
            }
            Self::emit_locked(
                &mut state,
                Event::ToolCallStarted {
                    call_id: call_id.clone(),
                    server: server.to_owned(),
                    tool: tool.to_owned(),
                    arguments: arguments.clone().unwrap_or(Value::Object(Default::default())),
                },
            );
        }
        let session = Arc::clone(self);
        let tool = tool.to_owned();
        let id = call_id.clone();
        tokio::spawn(async move {
            let outcome = tokio::select! {
                outcome = session.run_call(&spec, &id, &tool, arguments) => outcome,
                () = token.cancelled() => Err(format!("the turn was {}", reason::STOPPED)),
            };
            let (result, error) = match outcome {
                Ok(result) => (Some(result), None),
                Err(error) => (None, Some(error)),
            };
            session.finish_call(&id, result, error);
        });
        Ok(call_id)
    }

    async fn run_call(self: &Arc<Self>, spec: &ServerSpec, call_id: &str, tool: &str, arguments: Option<Value>) -> Result<Value, String> {
        let plugin = self.plugin(spec).await.map_err(|err| err.to_string())?;
        let host = self.host.upgrade().ok_or_else(|| "the host is shutting down".to_owned())?;
        let annotations = tool_annotations(&plugin, tool).await;
        let allowed_before = self
            .lock()
            .allowed_for_session
            .iter()
            .any(|(s, t)| s == &spec.name && t == tool);
        if !allowed_before
            && let Some(card) = host.policy.approval_card(&spec.name, tool, call_id, &arguments, &annotations)?
        {
            self.ask_approval(&spec.name, tool, call_id, card).await?;
        }
        plugin
            .call_tool(tool, arguments)
            .await
            .map_err(|err| err.to_string())
    }

    async fn ask_approval(&self, server: &str, tool: &str, call_id: &str, card: ApprovalCard) -> Result<(), String> {
        let (reply, answer) = oneshot::channel();
        let approval_id = self.new_id("a");
        self.push_card(Card {
            id: approval_id.clone(),
            call_id: Some(call_id.to_owned()),
            plugin: server.to_owned(),
            body: card.body,
            waiter: Waiter::Approval { reply },
        }, Some((server, tool)));
        let outcome = answer.await.unwrap_or(ApprovalOutcome::Cancelled(reason::STOPPED.to_owned()));
        let host = self.host.upgrade().ok_or_else(|| "the host is shutting down".to_owned())?;
        match outcome {
            ApprovalOutcome::Cancelled(why) => Err(format!("the approval was cancelled ({why})")),
            ApprovalOutcome::Chosen(choice) => match host.policy.apply_approval(server, tool, &choice)? {
                crate::runtime_policy::Approved::Once => Ok(()),
                crate::runtime_policy::Approved::ForSession => {
                    self.lock().allowed_for_session.push((server.to_owned(), tool.to_owned()));
                    Ok(())
                }
            },
        }
    }

    fn finish_call(&self, call_id: &str, result: Option<Value>, error: Option<String>) {
        let mut state = self.lock();
        Self::emit_locked(
            &mut state,
            Event::ToolCallFinished {
                call_id: call_id.to_owned(),
                result,
                error,
            },
        );
        let turn_over = match state.turn.as_mut() {
            Some(turn) => {
                turn.calls.remove(call_id);
                turn.calls.is_empty()
            }
            None => false,
        };
        if turn_over && let Some(turn) = state.turn.take() {
            Self::emit_locked(
                &mut state,
                Event::TurnEnded {
                    turn_id: turn.id,
                    reason: "completed".to_owned(),
                },
            );
        }
    }

    /// The session's connection to `spec`, connected on first use.
    async fn plugin(self: &Arc<Self>, spec: &ServerSpec) -> Result<Arc<Plugin>, crate::HostError> {
        if let Some(plugin) = self.lock().plugins.get(&spec.name) {
            return Ok(Arc::clone(plugin));
        }
        let host = self.host.upgrade().ok_or_else(|| crate::HostError::Connect {
            target: spec.target.to_string(),
            reason: "the host is shutting down".to_owned(),
        })?;
        let responder = Arc::new(SessionResponder {
            session: Arc::downgrade(self),
            server: spec.name.clone(),
        });
        let mut options = ConnectOptions::new(spec.name.clone(), responder);
        options.request_timeout = host.options.request_timeout;
        options.inherit_stderr = host.options.inherit_stderr;
        let plugin = Arc::new(Plugin::connect(&spec.target, options).await?);
        let mut state = self.lock();
        let plugin = state.plugins.entry(spec.name.clone()).or_insert(plugin);
        Ok(Arc::clone(plugin))
    }

    fn stop_turn(&self) {
        self.cancel_cards(reason::STOPPED);
        let turn = self.lock().turn.take();
        if let Some(turn) = turn {
            for token in turn.calls.values() {
                token.cancel();
            }
            self.emit(Event::TurnEnded {
                turn_id: turn.id,
                reason: reason::STOPPED.to_owned(),
            });
        }
    }

    /// Puts a card in the queue and announces it when it goes on screen.
    fn push_card(&self, card: Card, approval_of: Option<(&str, &str)>) {
        let mut state = self.lock();
        let event = announce(&card, approval_of);
        let id = card.id.clone();
        if state.cards.push(card) {
            Self::emit_locked(&mut state, event);
            drop(state);
            self.arm_time_limit(&id);
        } else {
            // Announced now, shown later: the transcript keeps the order of arrival.
            Self::emit_locked(&mut state, event);
        }
    }

    fn arm_time_limit(&self, card_id: &str) {
        let Some(limit) = self.host.upgrade().and_then(|host| host.options.form_time_limit) else {
            return;
        };
        let Some(host) = self.host.upgrade() else { return };
        let Ok(session) = host.session(&self.id) else { return };
        let card_id = card_id.to_owned();
        tokio::spawn(async move {
            tokio::time::sleep(limit).await;
            session.end_card(&card_id, EndBy::Host(reason::TIMED_OUT));
        });
    }

    /// The elicitation path: policy, routing, then the queue.
    fn ask(self: &Arc<Self>, server: &str, prompt: FormPrompt) -> BoxFuture<FormReply> {
        let Some(host) = self.host.upgrade() else {
            return Box::pin(async { FormReply::cancel() });
        };
        if let Err(why) = host.policy.elicitation_gate(server) {
            self.diagnostic("elicitation-declined-by-policy", format!("{server}: {why}"));
            return Box::pin(async { FormReply::decline() });
        }
        if self.lock().turn.is_none() {
            self.diagnostic(
                "elicitation-outside-turn",
                format!("{server} asked for a form while no tool call of this session was running; declined"),
            );
            return Box::pin(async { FormReply::decline() });
        }
        let (reply, answer) = oneshot::channel();
        let (body, form) = match prompt.kind {
            PromptKind::Form { message, form } => (
                FormBody::Form {
                    render: form.render(&message),
                    meta: prompt.meta.clone(),
                },
                Some(form),
            ),
            PromptKind::Url {
                message, url, domain, ..
            } => (FormBody::Url { message, url, domain }, None),
        };
        let form_id = self.new_id("f");
        let call_id = self.lock().turn.as_ref().and_then(|turn| {
            (turn.calls.len() == 1).then(|| turn.calls.keys().next().cloned()).flatten()
        });
        self.push_card(
            Card {
                id: form_id.clone(),
                call_id,
                plugin: server.to_owned(),
                body,
                waiter: Waiter::Elicitation { form, reply },
            },
            None,
        );
        let session = Arc::clone(self);
        let cancelled = prompt.cancelled;
        Box::pin(async move {
            tokio::select! {
                reply = answer => reply.unwrap_or_else(|_| FormReply::cancel()),
                () = cancelled.cancelled() => {
                    session.end_card(&form_id, EndBy::Host(reason::PLUGIN_GONE));
                    FormReply::cancel()
                }
            }
        })
    }

    fn answer_form(&self, form_id: &str, answer: FormAnswer) -> Result<(), CommandError> {
        let reply = {
            let state = self.lock();
            let card = match state.cards.shown() {
                Some(card) if card.id == form_id => card,
                _ => return Err(self.not_open_error(&state, form_id)),
            };
            let Waiter::Elicitation { form, .. } = &card.waiter else {
                return Err(CommandError::Mismatch(format!("`{form_id}` is an approval; answer it with answer_approval")));
            };
            reply_for(form.as_deref(), answer)?
        };
        self.end_card(form_id, EndBy::Person(reply));
        Ok(())
    }

    fn answer_approval(&self, approval_id: &str, choice: &str) -> Result<(), CommandError> {
        {
            let state = self.lock();
            match state.cards.shown() {
                Some(card) if card.id == approval_id && card.is_approval() => {}
                Some(card) if card.id == approval_id => {
                    return Err(CommandError::Mismatch(format!("`{approval_id}` is a form; answer it with answer_form")));
                }
                _ => return Err(self.not_open_error(&state, approval_id)),
            }
        }
        if !matches!(choice, "allow" | "allow_for_session" | "always_allow" | "deny") {
            return Err(CommandError::Mismatch(format!("`{choice}` is not an approval choice")));
        }
        self.end_card(approval_id, EndBy::Chose(choice.to_owned()));
        Ok(())
    }

    fn not_open_error(&self, state: &SessionState, id: &str) -> CommandError {
        let _ = self;
        if state.cards.len() > 1 && state.cards.shown().is_some_and(|card| card.id != id) {
            // It may be waiting; only the card on screen can be answered.
            CommandError::NotShown(id.to_owned())
        } else {
            CommandError::NotOpen(id.to_owned())
        }
    }

    /// Cancels every card of the session (on screen and waiting) for `why`.
    fn cancel_cards(&self, why: &'static str) {
        let cards = self.lock().cards.drain();
        for card in cards {
            self.finish_card(card, EndBy::Host(why));
        }
    }

    /// Ends one card and moves the next up.
    fn end_card(&self, card_id: &str, by: EndBy) {
        let (card, next) = {
            let mut state = self.lock();
            let Some((card, next)) = state.cards.take(card_id) else {
                return;
            };
            (card, next.map(|next| next.id.clone()))
        };
        self.finish_card(card, by);
        if let Some(next) = next {
            self.emit(Event::FormShown { form_id: next.clone() });
            self.arm_time_limit(&next);
        }
    }

    fn finish_card(&self, card: Card, by: EndBy) {
        let id = card.id;
        match card.waiter {
            Waiter::Elicitation { reply, .. } => {
                let (answer, why) = match by {
                    EndBy::Person(answer) => (answer, None),
                    EndBy::Host(why) => (FormReply::cancel(), Some(why.to_owned())),
                    EndBy::Chose(_) => (FormReply::cancel(), None),
                };
                self.emit(Event::FormResolved {
                    form_id: id,
                    action: answer.action.as_str().to_owned(),
                    content: answer.content.clone(),
                    reason: why,
                });
                let _ = reply.send(answer);
            }
            Waiter::Approval { reply } => {
                let (outcome, choice, why) = match by {
                    EndBy::Chose(choice) => (ApprovalOutcome::Chosen(choice.clone()), choice, None),
                    EndBy::Host(why) => (ApprovalOutcome::Cancelled(why.to_owned()), "deny".to_owned(), Some(why.to_owned())),
                    EndBy::Person(_) => (ApprovalOutcome::Cancelled("answered as a form".to_owned()), "deny".to_owned(), None),
                };
                self.emit(Event::ApprovalResolved {
                    approval_id: id,
                    choice,
                    reason: why,
                });
                let _ = reply.send(outcome);
            }
        }
    }
}

/// How a card ended.
enum EndBy {
    /// The person answered a form.
    Person(FormReply),
    /// The person chose on an approval card.
    Chose(String),
    /// The host ended it, for this reason.
    Host(&'static str),
}

fn announce(card: &Card, approval_of: Option<(&str, &str)>) -> Event {
    match (&card.waiter, approval_of) {
        (Waiter::Approval { .. }, Some((server, tool))) => Event::ApprovalRequested {
            approval_id: card.id.clone(),
            call_id: card.call_id.clone().unwrap_or_default(),
            server: server.to_owned(),
            tool: tool.to_owned(),
            body: card.body.clone(),
        },
        _ => Event::FormRequested {
            form_id: card.id.clone(),
            call_id: card.call_id.clone(),
            plugin: card.plugin.clone(),
            body: card.body.clone(),
        },
    }
}

/// Turns a UI answer into the reply for the plugin, validating it against the form.
fn reply_for(form: Option<&formwork_forms::Form>, answer: FormAnswer) -> Result<FormReply, CommandError> {
    let invalid = |errors: formwork_forms::ValidationErrors| CommandError::Invalid(errors.to_string());
    match (answer, form) {
        (FormAnswer::Decline, _) => Ok(FormReply::decline()),
        (FormAnswer::Cancel, _) => Ok(FormReply::cancel()),
        (FormAnswer::AcceptUrl, None) => Ok(FormReply::accept_url()),
        (FormAnswer::AcceptUrl, Some(_)) => Err(CommandError::Mismatch("this is a form, not a URL request".to_owned())),
        (FormAnswer::Render { .. } | FormAnswer::Accept { .. }, None) => {
            Err(CommandError::Mismatch("a URL request is accepted with accept_url".to_owned()))
        }
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

/// The tool's `annotations` from `tools/list`, or `null` when unknown.
async fn tool_annotations(plugin: &Plugin, tool: &str) -> Value {
    match plugin.tools().await {
        Ok(tools) => tools
            .iter()
            .find(|t| t.get("name").and_then(Value::as_str) == Some(tool))
            .and_then(|t| t.get("annotations").cloned())
            .unwrap_or(Value::Null),
        Err(_) => Value::Null,
    }
}

/// Routes a session's plugin's forms into the session's queue.
struct SessionResponder {
    session: Weak<Session>,
    server: String,
}

impl FormResponder for SessionResponder {
    fn respond(&self, prompt: FormPrompt) -> BoxFuture<FormReply> {
        match self.session.upgrade() {
            Some(session) => session.ask(&self.server, prompt),
            None => Box::pin(async { FormReply::cancel() }),
        }
    }

    fn declined(&self, notice: &crate::responder::DeclineNotice) {
        if let Some(session) = self.session.upgrade() {
            session.diagnostic(
                "form-declined",
                format!("{}: the form could not be shown: {}", notice.plugin, notice.reason),
            );
        }
    }
}
