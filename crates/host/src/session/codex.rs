//! The Codex runtime's bridge: a session is a Codex thread, a message is a Codex turn, and
//! everything Codex sends about the thread becomes the session's own events and cards, the
//! same ones formwork's model loop makes, so a UI needs no second path.
//!
//! This file holds the app-server of the host (started on first use, again after it exits),
//! the dispatcher that hands each of Codex's messages to its thread's session, the session's
//! thread (started, or resumed after a restart: its id is stored), its turns (a message is
//! one; Stop or a new message interrupts it) and the palette's calls through Codex. What Codex
//! tells is turned into events in `codex_events.rs`; what it asks, into cards in
//! `codex_requests.rs`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::jsonrpc::RawId;
use crate::runtime::codex::log::LogNotice;
use crate::runtime::codex::protocol;
use crate::runtime::codex::{AppServer, CodexError, ConfigFileError, Inbound};

use super::model_turn::Outcome;
use super::{EndReason, HostInner, Session};

/// The server name of Codex's own work (its commands and file changes) in the transcript.
pub const CODEX_SERVER: &str = "codex";
/// How long a stopped turn may take to say it ended.
const INTERRUPT_WAIT: Duration = Duration::from_secs(10);
/// Turn ends kept for a turn whose start is still being answered.
pub(super) const MAX_EARLY_ENDS: usize = 8;
/// How long starting or resuming a thread may take (Codex starts its MCP servers then).
const THREAD_TIMEOUT: Duration = Duration::from_secs(120);

/// Each process gets the next number, so a thread knows whether this process has loaded it.
static GENERATIONS: AtomicU64 = AtomicU64::new(1);

/// The running app-server and the sessions whose threads it has loaded.
pub(super) struct CodexLink {
    pub(super) server: Arc<AppServer>,
    /// Which start of the app-server this is: requests of different starts never meet.
    pub(super) generation: u64,
    threads: Mutex<HashMap<String, Weak<Session>>>,
}

impl CodexLink {
    fn session(&self, thread: &str) -> Option<Arc<Session>> {
        self.threads.lock().ok()?.get(thread)?.upgrade()
    }

    fn sessions(&self) -> Vec<Arc<Session>> {
        self.threads
            .lock()
            .map(|threads| threads.values().filter_map(Weak::upgrade).collect())
            .unwrap_or_default()
    }
}

/// A session's side of Codex.
#[derive(Default)]
pub(super) struct CodexState {
    /// Its thread, once started (or as stored by an earlier host).
    pub(super) thread: Option<String>,
    /// The process generation that has the thread loaded.
    pub(super) loaded_in: Option<u64>,
    /// Held while the thread is started or resumed, so that two calls start one thread.
    starting: Arc<tokio::sync::Mutex<()>>,
    /// Turn ends waited for, by Codex's turn id; and ends that came before the wait.
    pub(super) waiting: HashMap<String, oneshot::Sender<TurnEnd>>,
    pub(super) ended: std::collections::VecDeque<(String, TurnEnd)>,
    /// Codex's items shown as calls: item id → (formwork's call id, server).
    pub(super) items: HashMap<String, (String, String)>,
    /// Palette calls going through Codex now: (server, call id).
    pub(super) palette: Vec<(String, String)>,
    /// Codex's requests waiting for the person, by the app-server's start and the request's
    /// id: the card, and what ends it.
    pub(super) open: HashMap<(u64, RawId), OpenRequest>,
}

/// A request of Codex's waiting for the person: its card, and what ends the card when another
/// client answers first.
pub(super) struct OpenRequest {
    pub(super) card: Option<String>,
    pub(super) resolved: CancellationToken,
}

/// How Codex said a turn ended.
#[derive(Debug, Clone)]
pub(super) struct TurnEnd {
    pub(super) status: String,
    pub(super) error: Option<String>,
}

impl super::Host {
    /// The Codex thread `session` runs in, once it has one (under the Codex runtime). Another
    /// app-server client may join it on Codex's socket with `thread/resume`.
    pub fn codex_thread(&self, session: &str) -> Result<Option<String>, super::CommandError> {
        let session = self.inner.session(session)?;
        let state = session.lock();
        Ok(state.codex.get().and_then(|codex| codex.thread.clone()))
    }
}

/// Why a session cannot reach Codex: the runtime is off, or its process or the session's
/// thread did not start.
#[derive(Debug, thiserror::Error)]
pub(super) enum CodexStartError {
    #[error("the Codex runtime is not on")]
    Off,
    #[error("Codex's config could not be written: {0}")]
    Config(#[from] ConfigFileError),
    #[error(transparent)]
    Codex(#[from] CodexError),
    #[error("the thread's start failed: {0}")]
    ThreadTask(#[from] tokio::task::JoinError),
}

impl HostInner {
    /// The app-server, started (config written first) on first use and again after it exited.
    pub(super) async fn codex(self: &Arc<Self>) -> Result<Arc<CodexLink>, CodexStartError> {
        let options = self.options.codex.as_ref().ok_or(CodexStartError::Off)?;
        let mut slot = self.codex.lock().await;
        if let Some(link) = slot.as_ref().filter(|link| !link.server.is_gone()) {
            return Ok(Arc::clone(link));
        }
        let exe = self
            .options
            .builtin_exe
            .clone()
            .or_else(|| std::env::current_exe().ok())
            .unwrap_or_else(|| "formwork".into());
        let written = crate::runtime::codex::write_config(
            &options.home,
            &self.config(),
            self.options.model.as_ref(),
            &exe,
        )?;
        tracing::info!(target: "formwork::codex", config = %written.path.display(), changed = written.changed, "codex config written");
        let (inbound, incoming) = mpsc::unbounded_channel();
        let server = AppServer::start(options, inbound).await?;
        tracing::info!(target: "formwork::codex", home = %options.home.display(), "codex app-server started");
        let link = Arc::new(CodexLink {
            server,
            generation: GENERATIONS.fetch_add(1, Ordering::Relaxed),
            threads: Mutex::new(HashMap::new()),
        });
        tokio::spawn(dispatch(Arc::downgrade(&link), incoming));
        *slot = Some(Arc::clone(&link));
        Ok(link)
    }
}

/// Hands each message of Codex's to the session of its thread, notifications in order.
async fn dispatch(link: Weak<CodexLink>, mut incoming: mpsc::UnboundedReceiver<Inbound>) {
    while let Some(message) = incoming.recv().await {
        let Some(link) = link.upgrade() else {
            return;
        };
        match message {
            Inbound::Request { id, method, params } => {
                match protocol::thread_of(&params).and_then(|thread| link.session(thread)) {
                    Some(session) => session.on_codex_request(&link, id, &method, &params),
                    None => {
                        tracing::info!(target: "formwork::codex", %method, "a request of codex's for no session of this host; refused");
                        super::codex_requests::refuse(
                            &link.server,
                            &id,
                            &method,
                            "it concerns no session of formwork's",
                        );
                    }
                }
            }
            Inbound::Notification { method, params } => {
                match protocol::thread_of(&params).and_then(|thread| link.session(thread)) {
                    Some(session) => {
                        session.on_codex_notification(link.generation, &method, &params);
                    }
                    None => {
                        tracing::debug!(target: "formwork::codex", %method, "codex notification skipped")
                    }
                }
            }
            Inbound::Log(line) => {
                if let Some(LogNotice::SchemaRefused { server, reason }) =
                    crate::runtime::codex::log::read_line(&line)
                {
                    tracing::info!(target: "formwork::codex", marker = "codex-elicitation-refused", plugin = %server, %reason, "codex refused a form's schema before it reached formwork");
                    for session in link.sessions() {
                        if session.codex_runs(&server) {
                            session.plugin_diagnostic(
                                "form-declined",
                                format!(
                                    "{server}: Codex could not read the form's requestedSchema ({reason}) and answered cancel without showing it; Codex takes only `$schema`, `type`, `properties` and `required` at the schema's top level"
                                ),
                            );
                        }
                    }
                }
            }
            Inbound::Closed(why) => {
                for session in link.sessions() {
                    session.codex_gone(link.generation, &why);
                }
                return;
            }
        }
    }
}

impl Session {
    /// Starts Codex's turn for the person's message `text`; a turn still running was stopped
    /// by the caller, and this one begins once it is over.
    pub(super) fn start_codex_turn(self: &Arc<Self>, text: String) {
        self.start_turn(async {}, move |session, token| {
            Box::pin(async move { session.codex_turn(&text, &token).await })
        });
    }

    async fn codex_turn(self: &Arc<Self>, text: &str, token: &CancellationToken) -> Outcome {
        let Some(host) = self.host.upgrade() else {
            return Outcome::Stopped;
        };
        // Stopped before the thread is ready: no turn exists yet (the thread's start goes on
        // on its own, and is kept).
        let ready = async {
            let link = host.codex().await?;
            let thread = self.codex_thread(&host, &link).await?;
            Ok::<_, CodexStartError>((link, thread))
        };
        let ready = tokio::select! {
            biased;
            () = token.cancelled() => return Outcome::Stopped,
            ready = ready => ready,
        };
        // Once asked for, the turn is waited for even when stopped meanwhile, so that it is
        // interrupted below rather than left running.
        let policy = crate::runtime::codex::approval_policy(&host.config());
        let started = match ready {
            Ok((link, thread)) => link
                .server
                .start_turn(&thread, text, &policy, THREAD_TIMEOUT)
                .await
                .map(|turn| (link, thread, turn))
                .map_err(CodexStartError::from),
            Err(err) => Err(err),
        };
        let (link, thread, turn) = match started {
            Ok(started) => started,
            Err(err) => {
                self.diagnostic(
                    "model-error",
                    format!("Codex could not start the turn: {err}"),
                );
                return Outcome::Failed;
            }
        };
        tracing::info!(target: "formwork::codex", session = %self.id, %thread, %turn, "codex turn started");
        let (done, ended) = oneshot::channel();
        let early = {
            let mut state = self.lock();
            let codex = state.codex.made();
            let early = codex
                .ended
                .iter()
                .position(|(id, _)| *id == turn)
                .and_then(|at| codex.ended.remove(at))
                .map(|(_, end)| end);
            if early.is_none() {
                codex.waiting.insert(turn.clone(), done);
            }
            early
        };
        let end = match early {
            Some(end) => Some(end),
            None => {
                tokio::pin!(ended);
                tokio::select! {
                    end = &mut ended => end.ok(),
                    () = link.server.gone() => None,
                    () = token.cancelled() => {
                        let interrupt = link.server.request_within(
                            "turn/interrupt",
                            protocol::turn_interrupt(&thread, &turn),
                            INTERRUPT_WAIT,
                        );
                        if let Err(err) = interrupt.await {
                            tracing::warn!(target: "formwork::codex", %err, "codex turn not interrupted");
                        }
                        tokio::time::timeout(INTERRUPT_WAIT, ended).await.ok().and_then(Result::ok)
                    }
                }
            }
        };
        self.close_codex_items(if token.is_cancelled() {
            "the turn was stopped"
        } else {
            "the turn ended before the call did"
        });
        self.lock().codex.made().waiting.remove(&turn);
        match end {
            Some(end) => match end.status.as_str() {
                "completed" => Outcome::Completed,
                "interrupted" => Outcome::Stopped,
                _ => {
                    self.diagnostic(
                        "model-error",
                        format!(
                            "Codex's turn failed: {}",
                            end.error.as_deref().unwrap_or("it gave no reason")
                        ),
                    );
                    Outcome::Failed
                }
            },
            None if token.is_cancelled() => Outcome::Stopped,
            None => {
                self.diagnostic(
                    "model-error",
                    format!(
                        "codex app-server exited during the turn; its log is {}",
                        link.server.log_file().display()
                    ),
                );
                Outcome::Failed
            }
        }
    }

    /// The session's thread in `link`'s process: started, or resumed when an earlier process
    /// (or host) had it. The work runs on its own task, so a caller that stops waiting (Stop)
    /// leaves no half-started thread behind.
    async fn codex_thread(
        self: &Arc<Self>,
        host: &Arc<HostInner>,
        link: &Arc<CodexLink>,
    ) -> Result<String, CodexStartError> {
        let (session, host, link) = (Arc::clone(self), Arc::clone(host), Arc::clone(link));
        tokio::spawn(async move { session.open_codex_thread(&host, &link).await }).await?
    }

    async fn open_codex_thread(
        self: &Arc<Self>,
        host: &Arc<HostInner>,
        link: &Arc<CodexLink>,
    ) -> Result<String, CodexStartError> {
        let starting = Arc::clone(&self.lock().codex.made().starting);
        let _one_at_a_time = starting.lock().await;
        let (thread, loaded) = {
            let mut state = self.lock();
            let codex = state.codex.made();
            (
                codex.thread.clone(),
                codex.loaded_in == Some(link.generation),
            )
        };
        let config = host.config();
        let policy = crate::runtime::codex::approval_policy(&config);
        let cwd = host
            .options
            .codex
            .as_ref()
            .map(|options| options.cwd.display().to_string())
            .unwrap_or_default();
        if let Some(thread) = &thread
            && loaded
        {
            return Ok(thread.clone());
        }
        let resumed = match &thread {
            Some(thread) => {
                match link
                    .server
                    .request_within(
                        "thread/resume",
                        protocol::thread_resume(thread, &cwd, &policy),
                        THREAD_TIMEOUT,
                    )
                    .await
                {
                    Ok(_) => {
                        tracing::info!(target: "formwork::codex", session = %self.id, %thread, "codex thread resumed");
                        Some(thread.clone())
                    }
                    Err(err) => {
                        self.diagnostic(
                            "codex-thread",
                            format!("Codex could not resume this session's thread {thread} ({err}); a new thread starts, without the earlier conversation"),
                        );
                        None
                    }
                }
            }
            None => None,
        };
        let thread = match resumed {
            Some(thread) => thread,
            None => {
                let thread = link
                    .server
                    .start_thread(&cwd, &policy, THREAD_TIMEOUT)
                    .await?;
                tracing::info!(target: "formwork::codex", session = %self.id, %thread, "codex thread started");
                // Kept at once: whatever happens next, the session's next turn uses this thread.
                self.lock().codex.made().thread = Some(thread.clone());
                if let Some(store) = &host.store
                    && let Err(err) = store.set_codex_thread(&self.id, &thread).await
                {
                    tracing::error!(target: "formwork::store", session = %self.id, %err, "the codex thread was not stored");
                }
                thread
            }
        };
        if let Ok(mut threads) = link.threads.lock() {
            threads.insert(thread.clone(), self.me.clone());
        }
        // Codex starts the thread's servers in the background; listing their tools waits for
        // them, so that the model is offered every server's tools, as formwork's own loop does.
        match link
            .server
            .request_within(
                "mcpServerStatus/list",
                protocol::all_server_tools(&thread),
                THREAD_TIMEOUT,
            )
            .await
        {
            Ok(status) => {
                for (server, error) in protocol::tool_errors(&status) {
                    self.plugin_diagnostic(
                        "model-tools",
                        format!("the tools of {server} are not offered to the model: {error}"),
                    );
                }
            }
            Err(err) => {
                tracing::warn!(target: "formwork::codex", session = %self.id, %err, "codex did not list its servers' tools");
            }
        }
        let mut state = self.lock();
        let codex = state.codex.made();
        codex.thread = Some(thread.clone());
        codex.loaded_in = Some(link.generation);
        Ok(thread)
    }

    /// A palette call through Codex (`mcpServer/tool/call`): formwork's approval policy first,
    /// as for any palette call, then the call on the session's thread.
    pub(super) async fn run_codex_call(
        self: &Arc<Self>,
        server: &str,
        call_id: &str,
        tool: &str,
        arguments: Option<Value>,
    ) -> Result<Value, String> {
        let host = self
            .host
            .upgrade()
            .ok_or_else(|| "the host is shutting down".to_owned())?;
        // The call's error is what the person and the model read: the reason in words.
        let link = host.codex().await.map_err(|err| err.to_string())?;
        let thread = self
            .codex_thread(&host, &link)
            .await
            .map_err(|err| err.to_string())?;
        let listed = link
            .server
            .request_within(
                "mcpServerStatus/list",
                protocol::server_tools(&thread, server),
                THREAD_TIMEOUT,
            )
            .await
            .ok()
            .and_then(|status| listed_tool(&status, server, tool))
            .unwrap_or(Value::Null);
        let call = super::calls::ApprovedCall {
            server,
            call_id,
            tool,
            listed: &listed,
            arguments: arguments.as_ref(),
        };
        Box::pin(self.approve_call(&host, &call, None))
            .await
            .map_err(|err| err.to_string())?;
        let arguments = arguments.unwrap_or_else(|| json!({}));
        self.lock()
            .codex
            .made()
            .palette
            .push((server.to_owned(), call_id.to_owned()));
        let _done = PaletteCall {
            session: Arc::clone(self),
            call_id: call_id.to_owned(),
        };
        link.server
            .request(
                "mcpServer/tool/call",
                protocol::tool_call(&thread, server, tool, &arguments),
            )
            .await
            .map_err(|err| match err {
                CodexError::Rpc { error, .. } => error.message,
                other => other.to_string(),
            })
    }

    /// The app-server of start `generation` is gone: what waited on it ends. A later start's
    /// thread, requests and calls are not its own and stay.
    fn codex_gone(&self, generation: u64, why: &str) {
        let (open, current) = {
            let mut state = self.lock();
            let Some(codex) = state.codex.get_mut() else {
                return;
            };
            let current = codex.loaded_in == Some(generation);
            if current {
                codex.loaded_in = None;
            }
            let keys: Vec<(u64, RawId)> = codex
                .open
                .keys()
                .filter(|(of, _)| *of == generation)
                .cloned()
                .collect();
            let open: Vec<OpenRequest> = keys
                .iter()
                .filter_map(|key| codex.open.remove(key))
                .collect();
            (open, current)
        };
        for open in open {
            self.end_open_request(open, EndReason::PluginGone);
        }
        if current {
            self.close_codex_items(&format!("codex app-server exited: {why}"));
        }
    }

    /// Ends a request's card (if it has one) with `why`, and what waits for its answer.
    pub(super) fn end_open_request(&self, open: OpenRequest, why: EndReason) {
        if let Some(card) = &open.card {
            self.end_card(card, why);
        }
        open.resolved.cancel();
    }

    /// Whether a call of `server` runs through Codex in this session.
    pub(super) fn codex_runs(&self, server: &str) -> bool {
        let state = self.lock();
        state.codex.get().is_some_and(|codex| {
            codex.items.values().any(|(_, of)| of == server)
                || codex.palette.iter().any(|(of, _)| of == server)
        })
    }

    /// The formwork call a form of `server` belongs to: the only call of that server running
    /// through Codex (a tool call of the turn, or a palette call).
    pub(super) fn codex_call_of(&self, server: &str) -> Option<String> {
        let state = self.lock();
        let codex = state.codex.get()?;
        let mut calls = codex
            .items
            .values()
            .filter(|(_, of)| of == server)
            .map(|(call, _)| call)
            .chain(
                codex
                    .palette
                    .iter()
                    .filter(|(of, _)| of == server)
                    .map(|(_, call)| call),
            );
        match (calls.next(), calls.next()) {
            (Some(call), None) => Some(call.clone()),
            _ => None,
        }
    }
}

/// Takes a palette call off the session's list once it ends, however it ends.
struct PaletteCall {
    session: Arc<Session>,
    call_id: String,
}

impl Drop for PaletteCall {
    fn drop(&mut self) {
        self.session
            .lock()
            .codex
            .made()
            .palette
            .retain(|(_, call)| call != &self.call_id);
    }
}

/// The tool `tool` of `server` in an `mcpServerStatus/list` answer.
fn listed_tool(status: &Value, server: &str, tool: &str) -> Option<Value> {
    status
        .get("data")?
        .as_array()?
        .iter()
        .find(|entry| entry.get("name").and_then(Value::as_str) == Some(server))?
        .get("tools")?
        .get(tool)
        .cloned()
}
