//! Sessions: a transcript, the plugins connected for it, the running turn, and its form queue.
//!
//! A UI drives a session only through [`Host::command`] and the events of [`Host::subscribe`].
//! A plugin's elicitation is routed by the connection it arrives on (a session's own), or by the
//! call whose stream carried it (a connection shared by sessions, see `connections.rs`); forms
//! of different sessions never wait on each other.

mod app_cache;
mod apps;
mod auth;
mod calls;
mod cards;
mod codex;
mod codex_events;
mod codex_requests;
pub use cards::{CardAsks, ShownCard};
mod connections;
mod model_turn;
mod older_protocol;
mod replicas;
mod reply_after_commit;
mod saving;
mod sign_in;
mod wire;

pub use apps::{
    APPS_PROTOCOL_VERSION, AppError, AppReply, MAX_APP_CARDS, MAX_APP_REQUESTS_IN_FLIGHT,
    MAX_APP_TEXT_BYTES, OpenedApp,
};
pub use calls::server_target;
pub use wire::{
    AppAnswer, AppMessage, AppRpc, Command, CommandError, CommandErrorKind, EndReason, Event,
    FormAnswer, Role, SessionId, SocketMessage, TurnEndReason,
};

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock, Weak};
use std::time::Duration;

use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use crate::config::Config;
use crate::persist::Sent;
use crate::plugin::PluginTarget;
use crate::policy::SessionApprovals;
use crate::store::{Store, StoreError};

use reply_after_commit::ReplyAfterCommit;

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
    /// Where remote servers' OAuth tokens are kept (`mcp_oauth_credentials_store`, its file in
    /// this directory); `None` keeps a sign-in for its connection only.
    pub data_dir: Option<PathBuf>,
    /// The model that answers the person's messages (see `crate::agent`); `None` records
    /// messages only.
    pub model: Option<crate::config::ModelChoice>,
    /// Whether the UI shows MCP Apps: the sessions' connections declare the extension
    /// (`io.modelcontextprotocol/ui`) only then. A terminal, which shows none, says `false`.
    pub shows_apps: bool,
    /// Run the conversation in real Codex (`codex app-server`) instead of formwork's own
    /// model loop: messages become Codex turns, and the palette's calls go through Codex too.
    /// [`HostOptions::model`] then only names the model written into Codex's config.
    pub codex: Option<crate::runtime::codex::CodexOptions>,
}

impl Default for HostOptions {
    fn default() -> Self {
        HostOptions {
            ui_grace: Duration::from_secs(30),
            form_time_limit: None,
            request_timeout: Duration::from_secs(60),
            inherit_stderr: false,
            builtin_exe: None,
            data_dir: None,
            model: None,
            shows_apps: true,
            codex: None,
        }
    }
}

/// Why an added file was not stored ([`Host::save_upload`]).
#[derive(Debug, thiserror::Error)]
pub enum UploadError {
    /// There is no session with this id.
    #[error("no session `{0}`")]
    NoSession(String),
    /// The host keeps no files: it has no store on disk.
    #[error("this host keeps no files (it has no store on disk)")]
    NoStore,
    /// Writing the copy failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// How many events a slow UI may fall behind before it is sent the whole session again. The
/// model's text streams as many small deltas.
const EVENT_BUFFER: usize = 256;

/// The runtime: sessions and the plugins they use.
#[derive(Clone)]
pub struct Host {
    inner: Arc<HostInner>,
}

struct HostInner {
    /// Replaced whole when the person's Always allow rewrites it; calls keep the one they began with.
    config: RwLock<Arc<Config>>,
    options: HostOptions,
    store: Option<Store>,
    /// The tasks that write sessions' events to `store`.
    writers: Option<saving::Writers>,
    sessions: Mutex<HashMap<SessionId, Arc<Session>>>,
    ids: AtomicU64,
    /// This host's mark in the ids it mints, random per process: hosts sharing one store (and
    /// their sessions, calls and cards) never mint the same id, whatever their clocks say.
    instance: String,
    /// Connections of `share_session` servers, by name and URL: one serves every session.
    shared_connections: Mutex<connections::ConnectionCells>,
    /// Cancelled when the host stops: running calls end at once, before their cards are
    /// cancelled, so that no call goes on with the cancellations (a 2026-07-28 call would send
    /// them in a retry).
    stopping: CancellationToken,
    /// Remote servers' OAuth tokens (see `auth.rs`); opened on first use.
    token_store: std::sync::OnceLock<Option<Arc<crate::TokenStore>>>,
    /// The running `codex app-server`, under [`HostOptions::codex`]; started on first use and
    /// again after it exits.
    codex: tokio::sync::Mutex<Option<Arc<codex::CodexLink>>>,
    /// The bytes of app documents all sessions keep (`app_cache.rs`).
    app_documents: app_cache::CacheBudget,
}

struct Session {
    id: SessionId,
    host: Weak<HostInner>,
    /// Itself, so that `emit` can hand it to a writer of the store.
    me: Weak<Session>,
    state: Mutex<SessionState>,
}

#[derive(Default)]
struct SessionState {
    log: Vec<Arc<Event>>,
    subscribers: Option<broadcast::Sender<Arc<Event>>>,
    plugins: connections::ConnectionCells,
    turn: Option<Turn>,
    cards: cards::CardQueue,
    attached_uis: usize,
    ui_gone_timer: Option<CancellationToken>,
    approvals: OnFirstUse<SessionApprovals>,
    /// How many more diagnostics plugins may bring about now.
    diagnostics: crate::budget::LogBudget,
    /// What is not yet written to the store, in order (`saving.rs`).
    saving: saving::SaveQueue,
    /// The `file://` URIs of the files the person added in this session ([`Host::save_upload`]):
    /// the only local files an answer may name.
    uploads: OnFirstUse<HashSet<String>>,
    /// The documents of its apps and what they left behind.
    apps: OnFirstUse<apps::SessionApps>,
    /// The model's conversation and its turn.
    model: OnFirstUse<model_turn::ModelState>,
    /// The session's Codex thread, under the Codex runtime.
    codex: OnFirstUse<codex::CodexState>,
    /// The open cards another replica holds (`replicas.rs`): an answer given here is read
    /// against it and committed here, and that replica replies.
    held_elsewhere: OnFirstUse<HashMap<String, replicas::HeldElsewhere>>,
}

/// A part of a session's state that most sessions never use: it takes no room until it is
/// first written.
struct OnFirstUse<T>(Option<Box<T>>);

impl<T> Default for OnFirstUse<T> {
    fn default() -> Self {
        OnFirstUse(None)
    }
}

impl<T: Default> OnFirstUse<T> {
    /// The part, if it was ever written.
    fn get(&self) -> Option<&T> {
        self.0.as_deref()
    }

    /// The part, if it was ever written, to change.
    fn get_mut(&mut self) -> Option<&mut T> {
        self.0.as_deref_mut()
    }

    /// The part, made now if need be.
    fn made(&mut self) -> &mut T {
        self.0.get_or_insert_default()
    }
}

#[derive(Default)]
struct Turn {
    id: String,
    calls: HashMap<String, CancellationToken>,
    /// Set by stop: the turn ends (as `stopped`) once its last call has finished.
    stopped: bool,
    /// The calls of the turn the model made (not the person, not an app): a list, which takes
    /// less room than a set in every turn, and a turn makes few calls.
    model_calls: Vec<String>,
    /// The servers whose output the model took in during the turn (a tool's result, an app's
    /// model context): a later call of the model to another server asks
    /// (`ToolApproval::after_reading`).
    read_from: std::collections::BTreeSet<String>,
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
        // Listening first: what other replicas commit while this host loads is not missed.
        let notices = store.follow().await?;
        let mut loaded = HashMap::new();
        for record in store.list_sessions().await? {
            let id = record.id.clone();
            if let Some(last) = host.inner.load_session(&store, record).await? {
                loaded.insert(id, last);
            }
        }
        if let Some(notices) = notices {
            replicas::follow(Arc::downgrade(&host.inner), store, notices, loaded);
        }
        Ok(host)
    }

    fn build(config: Config, options: HostOptions, store: Option<Store>) -> Self {
        Host {
            inner: Arc::new(HostInner {
                config: RwLock::new(Arc::new(config)),
                options,
                writers: store.as_ref().map(|_| saving::Writers::start()),
                store,
                sessions: Mutex::new(HashMap::new()),
                ids: AtomicU64::new(1),
                instance: crate::instance::random_mark(),
                shared_connections: Mutex::new(HashMap::new()),
                stopping: CancellationToken::new(),
                token_store: std::sync::OnceLock::new(),
                codex: tokio::sync::Mutex::new(None),
                app_documents: app_cache::CacheBudget::new(app_cache::MAX_CACHED_DOCUMENT_BYTES),
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
    pub fn config(&self) -> Arc<Config> {
        self.inner.config()
    }

    /// The model that answers the person's messages, when there is one.
    pub fn model(&self) -> Option<&crate::config::ModelChoice> {
        self.inner.options.model.as_ref()
    }

    /// Whether Codex runs the conversation ([`HostOptions::codex`]).
    pub fn runs_codex(&self) -> bool {
        self.inner.options.codex.is_some()
    }

    /// Opens a new, empty session.
    pub fn create_session(&self) -> SessionId {
        let id = self.inner.unique_id("s");
        let session = self.inner.new_session(id.clone(), Vec::new());
        if let Some(writers) = &self.inner.writers {
            // The session's row goes first; its events queue behind it.
            let mut state = session.lock();
            state.saving.row = true;
            writers.wake(&mut state.saving, Arc::clone(&session));
        }
        if let Ok(mut sessions) = self.inner.sessions.lock() {
            sessions.insert(id.clone(), session);
        }
        id
    }

    /// Deletes a session: its turn stops (its cards are cancelled, its calls abandoned), its
    /// connections close, it leaves the list, and what the store and the data directory keep of
    /// it goes: its transcript and its uploads. A UI following it sees its events end.
    pub async fn delete_session(&self, session: &str) -> Result<(), CommandError> {
        let forgotten = self.inner.session(session)?;
        self.inner.forget_session(session)?;
        if let Some(store) = &self.inner.store {
            // What it had queued (its row first of all) is written before the delete: a row
            // written after it would bring the session back at the next start.
            forgotten.saved().await;
            if let Err(err) = store.delete_session(session).await {
                tracing::error!(target: "formwork::store", session, %err, "session not deleted from the store");
            }
            if let Some(root) = store.uploads_dir() {
                let folder = root.join(session);
                let removed =
                    tokio::task::spawn_blocking(move || std::fs::remove_dir_all(folder)).await;
                if let Ok(Err(err)) = removed
                    && err.kind() != std::io::ErrorKind::NotFound
                {
                    tracing::warn!(target: "formwork::store", session, %err, "the session's uploads were not removed");
                }
            }
        }
        Ok(())
    }

    /// How to reach the enabled server `name` (built-in servers run as
    /// [`HostOptions::builtin_exe`]).
    pub fn server_target(&self, name: &str) -> Result<PluginTarget, CommandError> {
        self.inner.target(name)
    }

    /// Whether the session exists.
    pub fn has_session(&self, session: &str) -> bool {
        self.inner.session(session).is_ok()
    }

    /// Copies a file the person adds to a resource picker into the session's uploads (beside
    /// the database, see [`crate::store::save_upload`]) and returns the copy, whose `file://`
    /// URI the picker may then answer. Only URIs made here for this session are accepted in an
    /// answer. Blocks on the file system: call it off the async threads.
    pub fn save_upload(
        &self,
        session: &str,
        name: &str,
        bytes: &[u8],
    ) -> Result<crate::store::Upload, UploadError> {
        let handle = self
            .inner
            .session(session)
            .map_err(|_| UploadError::NoSession(session.to_owned()))?;
        let root = self
            .inner
            .store
            .as_ref()
            .and_then(Store::uploads_dir)
            .ok_or(UploadError::NoStore)?;
        let upload = crate::store::save_upload(&root, session, name, bytes)?;
        handle.lock().uploads.made().insert(upload.uri.clone());
        Ok(upload)
    }

    /// Everything that happened in the session so far, without following it.
    pub fn events(&self, session: &str) -> Result<Vec<Arc<Event>>, CommandError> {
        Ok(self.inner.session(session)?.lock().log.clone())
    }

    /// Everything that happened in the session so far, and the live stream of what follows.
    /// Events are shared, not copied: a form's render block exists once however many UIs see it.
    #[allow(clippy::type_complexity)]
    pub fn subscribe(
        &self,
        session: &str,
    ) -> Result<(Vec<Arc<Event>>, broadcast::Receiver<Arc<Event>>), CommandError> {
        let session = self.inner.session(session)?;
        let mut state = session.lock();
        let sender = state
            .subscribers
            .get_or_insert_with(|| broadcast::channel(EVENT_BUFFER).0)
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
                session.cancel_cards(EndReason::NewMessage);
                let codex = self.inner.options.codex.is_some();
                let model = self.inner.options.model.clone().filter(|_| !codex);
                if codex || model.is_some() {
                    // The turn running is over: its model request and calls end.
                    session.stop_turn();
                }
                session.emit(Event::MessageAdded {
                    role: Role::User,
                    text: text.clone(),
                });
                if codex {
                    session.start_codex_turn(text);
                } else if let Some(choice) = model {
                    session.start_model_turn(choice, text);
                }
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
            } => session.answer_approval(&approval_id, choice),
            Command::StopTurn => {
                session.stop_turn();
                Ok(())
            }
            Command::SignIn { server } => session.sign_in(&server),
            Command::UseOlderProtocol { call_id } => session.use_older_protocol(&call_id),
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
        self.inner.stopping.cancel();
        let mut cells = Vec::new();
        for session in &sessions {
            session.cancel_cards(EndReason::HostStopped);
            cells.extend(session.lock().plugins.drain().map(|(_, cell)| cell));
        }
        // Answers the person gave go to their plugins only once stored: let them leave while
        // the connections are still open.
        if self.inner.store.is_some() {
            for session in &sessions {
                session.saved().await;
            }
        }
        if let Ok(mut shared) = self.inner.shared_connections.lock() {
            cells.extend(shared.drain().map(|(_, cell)| cell));
        }
        // Out of their cells, so that each connection is held once and can be closed.
        let connections = cells
            .into_iter()
            .filter_map(|cell| Arc::into_inner(cell)?.into_inner());
        for connection in connections {
            if let Ok(plugin) = Arc::try_unwrap(connection.plugin) {
                plugin.close().await;
            }
        }
        // Codex ends with its stdin, and its plugins with it.
        self.inner.codex.lock().await.take();
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
                    () = tokio::time::sleep(grace) => session.cancel_cards(EndReason::UiGone),
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

    /// An id unique across restarts of the host and across the hosts of one store: the time, this
    /// host's mark and a counter (ids of one host sort by time).
    fn unique_id(&self, prefix: &str) -> String {
        let millis = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |elapsed| elapsed.as_millis());
        format!("{prefix}{millis:x}-{}-{}", self.instance, self.next_id())
    }

    fn new_session(self: &Arc<Self>, id: SessionId, log: Vec<Event>) -> Arc<Session> {
        let mut state = SessionState::default();
        for event in log {
            state.apps.note(&event, &state.log);
            state.log.push(Arc::new(event));
        }
        Arc::new_cyclic(|me| Session {
            id,
            host: Arc::downgrade(self),
            me: me.clone(),
            state: Mutex::new(state),
        })
    }

    /// Brings back a stored session with its transcript, apps' state, model history and Codex
    /// thread, and returns the `seq` of its last entry; `None` if it is gone from the store.
    async fn load_session(
        self: &Arc<Self>,
        store: &Store,
        record: crate::store::SessionRecord,
    ) -> Result<Option<u64>, StoreError> {
        let entries = match store.transcript(&record.id).await {
            Ok(entries) => entries,
            Err(StoreError::NotFound { .. }) => return Ok(None),
            Err(err) => return Err(err),
        };
        let last = entries.last().map_or(0, |entry| entry.seq);
        let open = replicas::open_cards(&entries, &self.config());
        let session = self.new_session(record.id.clone(), crate::persist::replay(entries));
        if !open.is_empty() {
            session.lock().held_elsewhere.made().extend(open);
        }
        session.restore_app_state(store.app_states(&record.id).await?);
        session.restore_model_history(store.model_items(&record.id).await?);
        if let Some(thread) = &record.codex_thread {
            session.lock().codex.made().thread = Some(thread.clone());
        }
        if let Ok(mut sessions) = self.sessions.lock() {
            sessions.entry(record.id).or_insert(session);
        }
        Ok(Some(last))
    }

    /// Takes the session out of the host: its turn stops (its cards are cancelled, its calls
    /// abandoned), its connections close, and the UIs following it see their events end.
    fn forget_session(&self, id: &str) -> Result<(), CommandError> {
        let handle = self.session(id)?;
        handle.stop_turn();
        if let Ok(mut sessions) = self.sessions.lock() {
            sessions.remove(id);
        }
        let mut state = handle.lock();
        state.plugins.clear();
        // Its followers' streams end now, not once its last call has let go of it.
        state.subscribers = None;
        Ok(())
    }

    fn session(&self, id: &str) -> Result<Arc<Session>, CommandError> {
        self.sessions
            .lock()
            .ok()
            .and_then(|sessions| sessions.get(id).cloned())
            .ok_or_else(|| CommandError::NoSession(id.to_owned()))
    }

    fn config(&self) -> Arc<Config> {
        self.config
            .read()
            .map(|config| Arc::clone(&config))
            .unwrap_or_else(|poisoned| Arc::clone(&poisoned.into_inner()))
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
        self.emit_locked_with(state, event, None, None);
    }

    /// Emits `event` and sends `then` once it is stored. Events stay in emission order: `then`
    /// waits for the events emitted before this one, too.
    fn emit_then(&self, event: Event, then: ReplyAfterCommit) {
        let mut state = self.lock();
        let queued = self.emit_locked_with(&mut state, event, None, Some(then));
        drop(state);
        if let Some(then) = queued {
            then.committed(self, Ok(()));
        }
    }

    /// Emits `event` with what the plugin `sent` that it leaves out.
    fn emit_sent(&self, event: Event, sent: Sent) {
        let mut state = self.lock();
        self.emit_locked_with(&mut state, event, Some(sent), None);
    }

    /// Emits `event`; `sent` is kept only until the event is stored, and `then` runs after
    /// that. Without a store nothing waits: `then` is handed back, for the caller to run once
    /// it has let go of the state.
    fn emit_locked_with(
        &self,
        state: &mut SessionState,
        event: Event,
        sent: Option<Sent>,
        then: Option<ReplyAfterCommit>,
    ) -> Option<ReplyAfterCommit> {
        let event = Arc::new(event);
        if let Some(subscribers) = &state.subscribers {
            let _ = subscribers.send(Arc::clone(&event));
        }
        let host = self.host.upgrade();
        let unqueued = if let Some(writers) = host.as_ref().and_then(|host| host.writers.as_ref()) {
            state.saving.events.push_back(saving::Unsaved {
                event: Arc::clone(&event),
                sent,
                then: then.map(Box::new),
            });
            if let Some(me) = self.me.upgrade() {
                writers.wake(&mut state.saving, me);
            }
            None
        } else {
            then
        };
        state.apps.note(&event, &state.log);
        state.log.push(event);
        unqueued
    }

    /// Sends `event` to the UIs following the session, without keeping it: the model's text
    /// deltas, which the whole message replaces.
    fn emit_transient(&self, event: Event) {
        let state = self.lock();
        if let Some(subscribers) = &state.subscribers {
            let _ = subscribers.send(Arc::new(event));
        }
    }

    /// Writes the session's row, then its queued events in order, until none is left.
    async fn save_pending(&self) {
        let Some(store) = self.host.upgrade().and_then(|host| host.store.clone()) else {
            return;
        };
        let row = std::mem::take(&mut self.lock().saving.row);
        if row && let Err(err) = store.create_session(&self.id, None).await {
            tracing::error!(target: "formwork::store", session = %self.id, %err, "session not stored");
        }
        loop {
            let next = {
                let mut state = self.lock();
                let next = state.saving.events.pop_front();
                if next.is_none() {
                    state.saving.queued = false;
                    // A session may wait a long time before its next event: its queue holds
                    // no room meanwhile.
                    state.saving.events = std::collections::VecDeque::new();
                }
                next
            };
            let Some(saving::Unsaved { event, sent, then }) = next else {
                return;
            };
            let stored = crate::persist::write(&store, &self.id, &event, sent.as_ref()).await;
            if let Err(err) = &stored {
                tracing::error!(target: "formwork::store", session = %self.id, %err, "event not stored");
            }
            if let Some(then) = then {
                then.committed(self, stored);
            }
        }
    }

    /// Waits until every event emitted so far is in the store (at most a few seconds).
    async fn saved(&self) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        while tokio::time::Instant::now() < deadline {
            if self.lock().saving.all_written() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
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

    /// A diagnostic a plugin's doing brings about (a form declined, say): bounded by the
    /// session's budget (see [`crate::budget`]), so that a plugin sending such forms in a loop
    /// cannot grow the transcript without end; those left out are counted in the next one.
    fn plugin_diagnostic(&self, code: &str, message: String) {
        let taken = self.lock().diagnostics.take(tokio::time::Instant::now());
        match taken {
            None => {}
            Some(0) => self.diagnostic(code, message),
            Some(left_out) => self.diagnostic(
                code,
                format!("{message} ({left_out} more like this were left out)"),
            ),
        }
    }
}
