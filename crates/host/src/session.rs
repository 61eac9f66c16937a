//! Sessions: a transcript, the plugins connected for it, the running turn, and its form queue.
//!
//! A UI drives a session only through [`Host::command`] and the events of [`Host::subscribe`].
//! Plugin connections are per session, so a plugin's elicitation is routed by the connection it
//! arrives on, and forms of different sessions never wait on each other.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::{broadcast, oneshot};
use tokio_util::sync::CancellationToken;

use std::path::PathBuf;
use std::sync::RwLock;

use crate::broker::{Card, FormQueue, Waiter};
use crate::config::{Config, Transport};
use crate::events::{Command, Event, FormAnswer, FormBody, Role, SessionId};
use crate::plugin::{ConnectOptions, Plugin, PluginTarget};
use crate::policy::{
    self, ApprovalAnswer, ApprovalCard, ApprovalChoice, ApprovalNeed, ApprovalRequest,
    CardRendering, SessionApprovals,
};
use crate::responder::{BoxFuture, FormPrompt, FormReply, FormResponder, PromptKind};
use crate::store::Store;

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
    /// The host stopped (gracefully, or it was killed and the store found the form open).
    pub const HOST_STOPPED: &str = crate::store::HOST_STOPPED;
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
    /// The formwork binary, which built-in servers run as (`formwork demo-plugin`).
    pub builtin_exe: Option<PathBuf>,
}

impl Default for HostOptions {
    fn default() -> Self {
        HostOptions {
            ui_grace: Duration::from_secs(30),
            form_time_limit: None,
            request_timeout: Duration::from_secs(60),
            inherit_stderr: false,
            builtin_exe: None,
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
    config: RwLock<Config>,
    options: HostOptions,
    store: Option<Store>,
    sessions: Mutex<HashMap<SessionId, Arc<Session>>>,
    ids: AtomicU64,
}

struct Session {
    id: SessionId,
    host: Weak<HostInner>,
    /// Itself, so that `emit` can start the task that writes events to the store.
    me: Weak<Session>,
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
    approvals: SessionApprovals,
    /// Events not yet written to the store, in order; one task writes them at a time.
    unsaved: VecDeque<Event>,
    saving: bool,
}

struct Turn {
    id: String,
    calls: HashMap<String, CancellationToken>,
    /// Set by stop: the turn ends (as `stopped`) once its last call has finished.
    stopped: bool,
}

impl Host {
    /// A runtime over the servers of `config`, applying its policy, keeping nothing on disk.
    pub fn new(config: Config, options: HostOptions) -> Self {
        Host::build(config, options, None)
    }

    /// A runtime that records every session in `store` and brings back the sessions stored
    /// there (their forms that were pending when the last host stopped show as cancelled).
    pub async fn with_store(
        config: Config,
        options: HostOptions,
        store: Store,
    ) -> Result<Self, crate::store::StoreError> {
        let host = Host::build(config, options, Some(store.clone()));
        for record in store.list_sessions().await? {
            let events = crate::persist::replay(&store, &record.id).await?;
            let session = host.inner.new_session(record.id.clone(), events);
            if let Ok(mut sessions) = host.inner.sessions.lock() {
                sessions.insert(record.id, session);
            }
        }
        Ok(host)
    }

    fn build(config: Config, options: HostOptions, store: Option<Store>) -> Self {
        Host {
            inner: Arc::new(HostInner {
                config: RwLock::new(config),
                options,
                store,
                sessions: Mutex::new(HashMap::new()),
                ids: AtomicU64::new(1),
            }),
        }
    }

    /// The sessions, oldest first.
    pub fn sessions(&self) -> Vec<SessionId> {
        let mut ids: Vec<SessionId> = self
            .inner
            .sessions
            .lock()
            .map(|sessions| sessions.keys().cloned().collect())
            .unwrap_or_default();
        ids.sort();
        ids
    }

    /// The configuration in force (it changes when the person chooses Always allow).
    pub fn config(&self) -> Config {
        self.inner.config()
    }

    /// Opens a new, empty session.
    pub fn create_session(&self) -> SessionId {
        let id = self.inner.unique_id("s");
        let session = self.inner.new_session(id.clone(), Vec::new());
        if let Some(store) = &self.inner.store {
            // The session's row goes first; its events queue behind it.
            let store = store.clone();
            let session_id = id.clone();
            session.lock().saving = true;
            let me = Arc::clone(&session);
            tokio::spawn(async move {
                if let Err(err) = store.create_session(&session_id, None).await {
                    tracing::error!(target: "formwork::store", session = %session_id, %err, "session not stored");
                }
                me.save_pending().await;
            });
        }
        if let Ok(mut sessions) = self.inner.sessions.lock() {
            sessions.insert(id.clone(), session);
        }
        id
    }

    /// Everything that happened in the session so far, and the live stream of what follows.
    pub fn subscribe(
        &self,
        session: &str,
    ) -> Result<(Vec<Event>, broadcast::Receiver<Event>), CommandError> {
        let session = self.inner.session(session)?;
        let mut state = session.lock();
        let sender = state
            .subscribers
            .get_or_insert_with(|| broadcast::channel(16).0)
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

    /// Adds the assistant's (a model's) message to the transcript.
    pub fn add_assistant_message(&self, session: &str, text: String) -> Result<(), CommandError> {
        self.inner.session(session)?.emit(Event::MessageAdded {
            role: Role::Assistant,
            text,
        });
        Ok(())
    }

    /// Adds a diagnostic to the transcript (a UI's own notice, e.g. a model's failed call).
    pub fn add_diagnostic(
        &self,
        session: &str,
        code: &str,
        message: String,
    ) -> Result<(), CommandError> {
        self.inner.session(session)?.diagnostic(code, message);
        Ok(())
    }

    /// Stops the host: open forms end as cancelled (`host-stopped`), every plugin connection
    /// is closed, and the store is flushed and closed.
    pub async fn shutdown(&self) {
        let sessions: Vec<Arc<Session>> = self
            .inner
            .sessions
            .lock()
            .map(|mut sessions| sessions.drain().map(|(_, session)| session).collect())
            .unwrap_or_default();
        for session in &sessions {
            session.cancel_cards(reason::HOST_STOPPED);
            let plugins: Vec<Arc<Plugin>> =
                session.lock().plugins.drain().map(|(_, p)| p).collect();
            for plugin in plugins {
                if let Ok(plugin) = Arc::try_unwrap(plugin) {
                    plugin.close().await;
                }
            }
        }
        if let Some(store) = &self.inner.store {
            for session in &sessions {
                session.saved().await;
            }
            store.close().await;
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

    /// An id unique across restarts of the host: the start time and a counter.
    fn unique_id(&self, prefix: &str) -> String {
        let millis = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |elapsed| elapsed.as_millis());
        format!("{prefix}{millis:x}-{}", self.next_id())
    }

    fn new_session(self: &Arc<Self>, id: SessionId, log: Vec<Event>) -> Arc<Session> {
        Arc::new_cyclic(|me| Session {
            id,
            host: Arc::downgrade(self),
            me: me.clone(),
            state: Mutex::new(SessionState {
                log,
                ..SessionState::default()
            }),
        })
    }

    fn session(&self, id: &str) -> Result<Arc<Session>, CommandError> {
        self.sessions
            .lock()
            .ok()
            .and_then(|sessions| sessions.get(id).cloned())
            .ok_or_else(|| CommandError::NoSession(id.to_owned()))
    }

    fn config(&self) -> Config {
        self.config
            .read()
            .map(|config| config.clone())
            .unwrap_or_else(|poisoned| poisoned.into_inner().clone())
    }

    /// How to reach the configured server `name`.
    fn target(&self, name: &str) -> Result<PluginTarget, CommandError> {
        let config = self.config();
        let server = config
            .server(name)
            .filter(|server| server.enabled)
            .ok_or_else(|| CommandError::NoServer(name.to_owned()))?;
        Ok(server_target(
            &server.transport,
            self.options.builtin_exe.as_deref(),
        ))
    }
}

impl Session {
    fn lock(&self) -> std::sync::MutexGuard<'_, SessionState> {
        // A poisoned lock means a panic elsewhere already; keep serving with the data as is.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn emit(&self, event: Event) {
        let mut state = self.lock();
        self.emit_locked(&mut state, event);
    }

    fn emit_locked(&self, state: &mut SessionState, event: Event) {
        if let Some(subscribers) = &state.subscribers {
            let _ = subscribers.send(event.clone());
        }
        let has_store = self.host.upgrade().is_some_and(|host| host.store.is_some());
        if has_store {
            state.unsaved.push_back(event.clone());
            if !state.saving
                && let Some(me) = self.me.upgrade()
            {
                state.saving = true;
                tokio::spawn(async move { me.save_pending().await });
            }
        }
        state.log.push(event);
    }

    /// Waits until every event emitted so far is in the store (at most a few seconds).
    async fn saved(&self) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        while tokio::time::Instant::now() < deadline {
            let done = {
                let state = self.lock();
                !state.saving && state.unsaved.is_empty()
            };
            if done {
                return;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// Writes queued events in order until none is left.
    async fn save_pending(&self) {
        let Some(store) = self.host.upgrade().and_then(|host| host.store.clone()) else {
            return;
        };
        loop {
            let next = {
                let mut state = self.lock();
                let next = state.unsaved.pop_front();
                if next.is_none() {
                    state.saving = false;
                }
                next
            };
            let Some(event) = next else { return };
            if let Err(err) = crate::persist::write(&store, &self.id, &event).await {
                tracing::error!(target: "formwork::store", session = %self.id, %err, "event not stored");
            }
        }
    }

    fn new_id(&self, prefix: &str) -> String {
        self.host
            .upgrade()
            .map_or_else(|| format!("{prefix}0"), |host| host.unique_id(prefix))
    }

    fn diagnostic(&self, code: &str, message: String) {
        tracing::info!(target: "formwork::session", session = %self.id, code, %message, "diagnostic");
        self.emit(Event::Diagnostic {
            code: code.to_owned(),
            message,
        });
    }

    /// Starts a tool call in the background and returns its id.
    fn call_tool(
        self: &Arc<Self>,
        server: &str,
        tool: &str,
        arguments: Option<Value>,
    ) -> Result<String, CommandError> {
        let host = self
            .host
            .upgrade()
            .ok_or_else(|| CommandError::NoSession(self.id.clone()))?;
        let target = host.target(server)?;
        let call_id = self.new_id("c");
        let token = CancellationToken::new();
        {
            let mut state = self.lock();
            if state.turn.is_none() {
                let turn_id = host.unique_id("t");
                state.turn = Some(Turn {
                    id: turn_id.clone(),
                    calls: HashMap::new(),
                    stopped: false,
                });
                self.emit_locked(&mut state, Event::TurnStarted { turn_id });
            }
            if let Some(turn) = state.turn.as_mut() {
                turn.calls.insert(call_id.clone(), token.clone());
            }
            self.emit_locked(
                &mut state,
                Event::ToolCallStarted {
                    call_id: call_id.clone(),
                    server: server.to_owned(),
                    tool: tool.to_owned(),
                    arguments: arguments
                        .clone()
                        .unwrap_or(Value::Object(Default::default())),
                },
            );
        }
        let session = Arc::clone(self);
        let tool = tool.to_owned();
        let server = server.to_owned();
        let id = call_id.clone();
        tokio::spawn(async move {
            let outcome = tokio::select! {
                outcome = session.run_call(&server, &target, &id, &tool, arguments) => outcome,
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

    async fn run_call(
        self: &Arc<Self>,
        server: &str,
        target: &PluginTarget,
        call_id: &str,
        tool: &str,
        arguments: Option<Value>,
    ) -> Result<Value, String> {
        let plugin = self
            .plugin(server, target)
            .await
            .map_err(|err| err.to_string())?;
        let host = self
            .host
            .upgrade()
            .ok_or_else(|| "the host is shutting down".to_owned())?;
        let config = host.config();
        // The tool's annotations matter unless the mode approves every call anyway.
        let (mode, _) = policy::approval_mode(&config, server, tool);
        let listed = if mode == crate::config::ApprovalMode::Approve {
            Value::Null
        } else {
            listed_tool(&plugin, tool).await
        };
        let verdict = policy::tool_approval(&config, server, tool, listed.get("annotations"));
        let verdict = self.lock().approvals.apply(verdict);
        tracing::info!(target: "formwork::policy", marker = "policy-decision", session = %self.id, server, tool, reason = %verdict.reason, "tool approval");
        match &verdict.need {
            ApprovalNeed::Run => {}
            ApprovalNeed::Fail(message) => return Err(message.clone()),
            ApprovalNeed::Card(_) => {
                let request = ApprovalRequest {
                    call_id,
                    tool_title: listed.get("title").and_then(Value::as_str),
                    tool_description: listed.get("description").and_then(Value::as_str),
                    arguments: arguments.as_ref(),
                };
                if let Some(card) = verdict.card(&request) {
                    let answer = self
                        .ask_approval(call_id, card.clone(), policy::card_rendering(&config))
                        .await;
                    self.settle_approval(&host, &card, &answer);
                    if let Some(message) = answer.failure_message() {
                        return Err(message.to_owned());
                    }
                }
            }
        }
        plugin
            .call_tool(tool, arguments)
            .await
            .map_err(|err| err.to_string())
    }

    /// Shows the approval card and waits for the person.
    async fn ask_approval(
        &self,
        call_id: &str,
        card: ApprovalCard,
        rendering: CardRendering,
    ) -> ApprovalAnswer {
        let (reply, answer) = oneshot::channel();
        let approval_id = self.new_id("a");
        let body = approval_body(&card, rendering);
        let fallback = card.clone();
        self.push_card(Card {
            id: approval_id,
            call_id: Some(call_id.to_owned()),
            plugin: card.server.clone(),
            body,
            waiter: Waiter::Approval {
                card: Box::new(card),
                reply,
            },
        });
        answer
            .await
            .unwrap_or_else(|_| fallback.cancel(reason::STOPPED))
    }

    /// Remembers what the answer allows beyond this call.
    fn settle_approval(&self, host: &HostInner, card: &ApprovalCard, answer: &ApprovalAnswer) {
        tracing::info!(target: "formwork::policy", marker = "answer", session = %self.id, reason = %answer.reason, "approval answered");
        self.lock().approvals.record(card, answer);
        if !answer.writes_config() {
            return;
        }
        let path = host
            .config()
            .path
            .clone()
            .unwrap_or_else(|| crate::config::writable_path(None));
        let written = crate::config::remember_always_allow(&path, &card.server, &card.tool)
            .and_then(|_| Config::load(&path));
        match written {
            Ok(config) => {
                if let Ok(mut slot) = host.config.write() {
                    *slot = config;
                }
            }
            Err(err) => self.diagnostic(
                "always-allow-not-saved",
                format!("Always allow could not be written: {err}"),
            ),
        }
    }

    fn finish_call(&self, call_id: &str, result: Option<Value>, error: Option<String>) {
        let mut state = self.lock();
        self.emit_locked(
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
            let reason = if turn.stopped {
                reason::STOPPED
            } else {
                "completed"
            };
            self.emit_locked(
                &mut state,
                Event::TurnEnded {
                    turn_id: turn.id,
                    reason: reason.to_owned(),
                },
            );
        }
    }

    /// The session's connection to the server `name`, connected on first use.
    async fn plugin(
        self: &Arc<Self>,
        name: &str,
        target: &PluginTarget,
    ) -> Result<Arc<Plugin>, crate::HostError> {
        if let Some(plugin) = self.lock().plugins.get(name) {
            return Ok(Arc::clone(plugin));
        }
        let host = self
            .host
            .upgrade()
            .ok_or_else(|| crate::HostError::Connect {
                target: target.to_string(),
                reason: "the host is shutting down".to_owned(),
            })?;
        let responder = Arc::new(SessionResponder {
            session: Arc::downgrade(self),
            server: name.to_owned(),
        });
        let mut options = ConnectOptions::new(name.to_owned(), responder);
        options.request_timeout = host.options.request_timeout;
        options.inherit_stderr = host.options.inherit_stderr;
        let plugin = Arc::new(Plugin::connect(target, options).await?);
        let mut state = self.lock();
        let plugin = state.plugins.entry(name.to_owned()).or_insert(plugin);
        Ok(Arc::clone(plugin))
    }

    /// Cancels the turn's forms and abandons its calls; the turn ends when they have.
    fn stop_turn(&self) {
        self.cancel_cards(reason::STOPPED);
        let mut state = self.lock();
        if let Some(turn) = state.turn.as_mut() {
            turn.stopped = true;
            for token in turn.calls.values() {
                token.cancel();
            }
        }
    }

    /// Puts a card in the queue and announces it.
    fn push_card(&self, card: Card) {
        let mut state = self.lock();
        let waiting = state.cards.shown().is_some();
        // Announced at once, shown maybe later: the transcript keeps the order of arrival.
        let event = announce(&card, waiting);
        let id = card.id.clone();
        state.cards.push(card);
        self.emit_locked(&mut state, event);
        drop(state);
        if !waiting {
            tracing::info!(target: "formwork::form", marker = "form-shown", session = %self.id, form = %id, "card shown");
            self.arm_time_limit(&id);
        }
    }

    fn arm_time_limit(&self, card_id: &str) {
        let Some(limit) = self
            .host
            .upgrade()
            .and_then(|host| host.options.form_time_limit)
        else {
            return;
        };
        let Some(host) = self.host.upgrade() else {
            return;
        };
        let Ok(session) = host.session(&self.id) else {
            return;
        };
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
        let gate = policy::elicitation_gate(&host.config());
        let verdict = match &gate {
            Ok(allowed) => allowed.to_string(),
            Err(declined) => declined.to_string(),
        };
        tracing::info!(target: "formwork::policy", marker = "policy-decision", session = %self.id, plugin = server, allowed = gate.is_ok(), reason = %verdict, "plugin form");
        if gate.is_err() {
            self.diagnostic(
                "elicitation-declined-by-policy",
                format!("{server}: {verdict}"),
            );
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
                message,
                url,
                domain,
                ..
            } => (
                FormBody::Url {
                    message,
                    url,
                    domain,
                },
                None,
            ),
        };
        let form_id = self.new_id("f");
        let call_id = self.lock().turn.as_ref().and_then(|turn| {
            (turn.calls.len() == 1)
                .then(|| turn.calls.keys().next().cloned())
                .flatten()
        });
        self.push_card(Card {
            id: form_id.clone(),
            call_id,
            plugin: server.to_owned(),
            body,
            waiter: Waiter::Elicitation { form, reply },
        });
        // The connection may drop this future as soon as the plugin is gone (its own select
        // can win the race); the guard then ends the card, so it never lingers on screen.
        let guard = CardGuard {
            session: Arc::clone(self),
            card_id: form_id,
        };
        let cancelled = prompt.cancelled;
        Box::pin(async move {
            tokio::select! {
                reply = answer => reply.unwrap_or_else(|_| FormReply::cancel()),
                () = cancelled.cancelled() => {
                    drop(guard);
                    FormReply::cancel()
                }
            }
        })
    }

    fn answer_form(&self, form_id: &str, answer: FormAnswer) -> Result<(), CommandError> {
        let end = {
            let state = self.lock();
            let card = match state.cards.shown() {
                Some(card) if card.id == form_id => card,
                _ => return Err(self.not_open_error(&state, form_id)),
            };
            match &card.waiter {
                Waiter::Elicitation { form, .. } => {
                    EndBy::Person(reply_for(form.as_deref(), answer)?)
                }
                Waiter::Approval { card, .. } => EndBy::Approved(approval_from_form(card, answer)?),
            }
        };
        self.end_card(form_id, end);
        Ok(())
    }

    fn answer_approval(&self, approval_id: &str, choice: &str) -> Result<(), CommandError> {
        let choice: ApprovalChoice = serde_json::from_value(Value::String(choice.to_owned()))
            .map_err(|_| CommandError::Mismatch(format!("`{choice}` is not an approval choice")))?;
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
                _ => return Err(self.not_open_error(&state, approval_id)),
            }
        };
        self.end_card(approval_id, EndBy::Approved(answer));
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
            tracing::info!(target: "formwork::form", marker = "form-shown", session = %self.id, form = %next, "card shown");
            self.emit(Event::FormShown {
                form_id: next.clone(),
            });
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
                    EndBy::Approved(_) => (FormReply::cancel(), None),
                };
                tracing::info!(target: "formwork::form", marker = "answer", session = %self.id, form = %id, action = answer.action.as_str(), reason = why.as_deref().unwrap_or("the person answered"), "form ended");
                self.emit(Event::FormResolved {
                    form_id: id,
                    action: answer.action.as_str().to_owned(),
                    content: answer.content.clone(),
                    reason: why,
                });
                let _ = reply.send(answer);
            }
            Waiter::Approval { card, reply } => {
                let answer = match by {
                    EndBy::Approved(answer) => answer,
                    EndBy::Host(why) => card.cancel(why),
                    EndBy::Person(_) => card.cancel("answered as a form"),
                };
                self.emit(Event::ApprovalResolved {
                    approval_id: id,
                    choice: serde_json::to_value(answer.choice)
                        .ok()
                        .and_then(|choice| choice.as_str().map(str::to_owned))
                        .unwrap_or_default(),
                    reason: Some(answer.reason.clone()),
                });
                let _ = reply.send(answer);
            }
        }
    }
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
enum EndBy {
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
fn approval_body(card: &ApprovalCard, rendering: CardRendering) -> FormBody {
    match rendering {
        CardRendering::RequestUserInput => FormBody::Form {
            render: card.render_block(),
            meta: None,
        },
        CardRendering::McpElicitation => {
            let params = card.elicitation_params();
            let meta = params.get("_meta").and_then(Value::as_object).cloned();
            let render = match formwork_forms::parse_request(&params) {
                Ok(formwork_forms::ElicitationRequest::Form(request)) => {
                    request.form.render(&request.message)
                }
                _ => card.render_block(),
            };
            FormBody::Form { render, meta }
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

/// How to reach a configured server. Built-in servers run as `builtin_exe` (the formwork
/// binary; the current executable when `None`) with their arguments.
pub fn server_target(transport: &Transport, builtin_exe: Option<&std::path::Path>) -> PluginTarget {
    match transport {
        Transport::Stdio {
            command,
            args,
            env,
            cwd,
        } => {
            let mut line = String::new();
            if let Some(cwd) = cwd {
                line.push_str(&format!(
                    "cd {} && ",
                    shell_quote(&cwd.display().to_string())
                ));
            }
            line.push_str("exec env");
            for (key, value) in env {
                line.push_str(&format!(" {}", shell_quote(&format!("{key}={value}"))));
            }
            line.push_str(&format!(" {}", shell_quote(command)));
            for arg in args {
                line.push_str(&format!(" {}", shell_quote(arg)));
            }
            PluginTarget::Command(line)
        }
        Transport::StreamableHttp { url, .. } => PluginTarget::Url(url.clone()),
        Transport::Builtin { args } => {
            let exe = builtin_exe
                .map(std::path::Path::to_path_buf)
                .or_else(|| std::env::current_exe().ok())
                .unwrap_or_else(|| PathBuf::from("formwork"));
            let mut line = format!("exec {}", shell_quote(&exe.display().to_string()));
            for arg in args {
                line.push_str(&format!(" {}", shell_quote(arg)));
            }
            PluginTarget::Command(line)
        }
    }
}

/// Quotes a word for `sh -c`.
fn shell_quote(word: &str) -> String {
    format!("'{}'", word.replace('\'', r"'\''"))
}

/// Turns a UI answer into the reply for the plugin, validating it against the form.
fn reply_for(
    form: Option<&formwork_forms::Form>,
    answer: FormAnswer,
) -> Result<FormReply, CommandError> {
    let invalid =
        |errors: formwork_forms::ValidationErrors| CommandError::Invalid(errors.to_string());
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

/// The tool's entry in `tools/list` (annotations, title, description), or `null`.
async fn listed_tool(plugin: &Plugin, tool: &str) -> Value {
    match plugin.list_tools().await {
        Ok(tools) => tools
            .into_iter()
            .find(|t| t.get("name").and_then(Value::as_str) == Some(tool))
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
                format!(
                    "{}: the form could not be shown: {}",
                    notice.plugin, notice.reason
                ),
            );
        }
    }
}
