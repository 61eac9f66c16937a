//! The Codex runtime's bridge: a session is a Codex thread, a message is a Codex turn, and
//! everything Codex sends about the thread becomes the session's own events and cards, the
//! same ones formwork's model loop makes, so a UI needs no second path.
//!
//! - Agent message deltas and items: `message_delta` and `message_added`. MCP tool calls:
//!   `tool_call_started` / `tool_call_finished` (so do Codex's commands and file changes, as
//!   calls of the server `codex`).
//! - `mcpServer/elicitation/request`: through the form engine, the session's gate and queue
//!   and card (the same path as a direct plugin's form), answered `{action, content, _meta}`.
//!   The executor logs each one as received, forwarded (a card) and answered.
//! - Codex's tool approvals (its form with `_meta.codex_approval_kind = "mcp_tool_call"`, or
//!   its fallback question), command and file-change approvals: approval cards. The model's
//!   own `request_user_input` questions: a form card.
//! - `serverRequest/resolved` for a request still on screen: another client answered it; the
//!   card ends (`answered-elsewhere`), and formwork sends nothing.
//! - Anything else is logged and skipped; an unknown request gets a JSON-RPC error.
//!
//! One `codex app-server` serves every session of the host, each session on its own thread;
//! the thread id is stored, so a restarted host resumes the thread.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use formwork_forms::{ParseOptions, parse_request_with};
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot, watch};
use tokio_util::sync::CancellationToken;

use crate::config::ApprovalMode;
use crate::events::{Event, Role};
use crate::jsonrpc::{RawId, code};
use crate::policy::{
    self, APPROVAL_ID_PREFIX, ApprovalAnswer, ApprovalCard, ApprovalChoice, RememberOffers,
};
use crate::responder::{FormAction, FormPrompt, FormReply};
use crate::runtime::codex::log::LogNotice;
use crate::runtime::codex::protocol::{
    self, ApprovalAskedAs, Question, ServerRequest, ToolApprovalAsk,
};
use crate::runtime::codex::{AppServer, CodexError, Inbound};

use super::cards::EndBy;
use super::model_turn::Outcome;
use super::{HostInner, Session, reason};

/// The server name of Codex's own work (its commands and file changes) in the transcript.
pub const CODEX_SERVER: &str = "codex";
/// How long a stopped turn may take to say it ended.
const INTERRUPT_WAIT: Duration = Duration::from_secs(10);
/// Turn ends kept for a turn whose start is still being answered.
const MAX_EARLY_ENDS: usize = 8;
/// How long starting or resuming a thread may take (Codex starts its MCP servers then).
const THREAD_TIMEOUT: Duration = Duration::from_secs(120);

/// Each process gets the next number, so a thread knows whether this process has loaded it.
static GENERATIONS: AtomicU64 = AtomicU64::new(1);

/// The running app-server and the sessions whose threads it has loaded.
pub(super) struct CodexLink {
    server: Arc<AppServer>,
    generation: u64,
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
    loaded_in: Option<u64>,
    /// Held while the thread is started or resumed, so that two calls start one thread.
    starting: Arc<tokio::sync::Mutex<()>>,
    /// Turn ends waited for, by Codex's turn id; and ends that came before the wait.
    waiting: HashMap<String, oneshot::Sender<TurnEnd>>,
    ended: std::collections::VecDeque<(String, TurnEnd)>,
    /// Codex's items shown as calls: item id → (formwork's call id, server).
    items: HashMap<String, (String, String)>,
    /// Palette calls going through Codex now: (server, call id).
    palette: Vec<(String, String)>,
    /// Codex's requests waiting for the person, by id: the card, and what ends it.
    open: HashMap<RawId, OpenRequest>,
}

struct OpenRequest {
    card: Option<String>,
    resolved: CancellationToken,
}

/// How Codex said a turn ended.
#[derive(Debug, Clone)]
struct TurnEnd {
    status: String,
    error: Option<String>,
}

impl super::Host {
    /// The Codex thread `session` runs in, once it has one (under the Codex runtime). Another
    /// app-server client may join it on Codex's socket with `thread/resume`.
    pub fn codex_thread(&self, session: &str) -> Result<Option<String>, super::CommandError> {
        Ok(self.inner.session(session)?.lock().codex.thread.clone())
    }
}

impl HostInner {
    /// The app-server, started (config written first) on first use and again after it exited.
    pub(super) async fn codex(self: &Arc<Self>) -> Result<Arc<CodexLink>, String> {
        let options = self
            .options
            .codex
            .as_ref()
            .ok_or_else(|| "the Codex runtime is not on".to_owned())?;
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
        )
        .map_err(|err| format!("Codex's config could not be written: {err}"))?;
        tracing::info!(target: "formwork::codex", config = %written.path.display(), changed = written.changed, "codex config written");
        let (inbound, incoming) = mpsc::unbounded_channel();
        let server = AppServer::start(options, inbound)
            .await
            .map_err(|err| err.to_string())?;
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

    /// Writes Codex's config again (after the person's Always allow changed formwork's).
    fn refresh_codex_config(&self) {
        let Some(options) = &self.options.codex else {
            return;
        };
        let exe = self
            .options
            .builtin_exe
            .clone()
            .or_else(|| std::env::current_exe().ok())
            .unwrap_or_else(|| "formwork".into());
        if let Err(err) = crate::runtime::codex::write_config(
            &options.home,
            &self.config(),
            self.options.model.as_ref(),
            &exe,
        ) {
            tracing::warn!(target: "formwork::codex", %err, "codex config not refreshed");
        }
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
                        refuse(
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
                    Some(session) => session.on_codex_notification(&method, &params),
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
                    session.codex_gone(&why);
                }
                return;
            }
        }
    }
}

/// Answers a request formwork does not serve, so Codex never waits on it.
fn refuse(server: &AppServer, id: &RawId, method: &str, why: &str) {
    if method == protocol::ELICITATION_REQUEST {
        server.respond(id, &protocol::elicitation_answer("decline", None, None));
    } else {
        server.respond_error(
            id,
            code::METHOD_NOT_FOUND,
            &format!("formwork does not serve {method}: {why}"),
        );
    }
}

impl Session {
    /// Starts Codex's turn for the person's message `text`; a turn still running was stopped
    /// by the caller, and this one begins once it is over.
    pub(super) fn start_codex_turn(self: &Arc<Self>, text: String) {
        let token = match self.host.upgrade() {
            Some(host) => host.stopping.child_token(),
            None => return,
        };
        let (ended_tx, ended_rx) = watch::channel(false);
        let previous = {
            let mut state = self.lock();
            state.model.current = Some(token.clone());
            state.model.ended.replace(ended_rx)
        };
        let session = Arc::clone(self);
        tokio::spawn(async move {
            if let Some(mut previous) = previous {
                let _ = previous.wait_for(|ended| *ended).await;
            }
            let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
            while session
                .lock()
                .turn
                .as_ref()
                .is_some_and(|turn| turn.stopped)
                && tokio::time::Instant::now() < deadline
            {
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
            session.saved().await;
            if !token.is_cancelled() {
                session.begin_model_member(&token);
                let outcome = session.codex_turn(&text, &token).await;
                session.end_model_member(outcome);
            }
            let _ = ended_tx.send(true);
        });
    }

    async fn codex_turn(self: &Arc<Self>, text: &str, token: &CancellationToken) -> Outcome {
        let Some(host) = self.host.upgrade() else {
            return Outcome::Stopped;
        };
        let started = async {
            let link = host.codex().await?;
            let thread = self.codex_thread(&host, &link).await?;
            let policy = crate::runtime::codex::approval_policy(&host.config());
            let response = link
                .server
                .request_within(
                    "turn/start",
                    protocol::turn_start(&thread, text, &policy),
                    THREAD_TIMEOUT,
                )
                .await
                .map_err(|err| err.to_string())?;
            let turn = response
                .pointer("/turn/id")
                .and_then(Value::as_str)
                .ok_or_else(|| "codex started a turn without an id".to_owned())?
                .to_owned();
            Ok::<_, String>((link, thread, turn))
        };
        let (link, thread, turn) = tokio::select! {
            biased;
            () = token.cancelled() => return Outcome::Stopped,
            started = started => match started {
                Ok(started) => started,
                Err(err) => {
                    self.diagnostic("model-error", format!("Codex could not start the turn: {err}"));
                    return Outcome::Failed;
                }
            },
        };
        tracing::info!(target: "formwork::codex", session = %self.id, %thread, %turn, "codex turn started");
        let (done, ended) = oneshot::channel();
        let early = {
            let mut state = self.lock();
            let early = state
                .codex
                .ended
                .iter()
                .position(|(id, _)| *id == turn)
                .and_then(|at| state.codex.ended.remove(at))
                .map(|(_, end)| end);
            if early.is_none() {
                state.codex.waiting.insert(turn.clone(), done);
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
        self.lock().codex.waiting.remove(&turn);
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
    /// (or host) had it.
    async fn codex_thread(
        self: &Arc<Self>,
        host: &Arc<HostInner>,
        link: &Arc<CodexLink>,
    ) -> Result<String, String> {
        let starting = Arc::clone(&self.lock().codex.starting);
        let _one_at_a_time = starting.lock().await;
        let (thread, loaded) = {
            let state = self.lock();
            (
                state.codex.thread.clone(),
                state.codex.loaded_in == Some(link.generation),
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
                let response = link
                    .server
                    .request_within(
                        "thread/start",
                        protocol::thread_start(&cwd, &policy),
                        THREAD_TIMEOUT,
                    )
                    .await
                    .map_err(|err| err.to_string())?;
                let thread = response
                    .pointer("/thread/id")
                    .and_then(Value::as_str)
                    .ok_or_else(|| "codex started a thread without an id".to_owned())?
                    .to_owned();
                tracing::info!(target: "formwork::codex", session = %self.id, %thread, "codex thread started");
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
        state.codex.thread = Some(thread.clone());
        state.codex.loaded_in = Some(link.generation);
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
        let link = host.codex().await?;
        let thread = self.codex_thread(&host, &link).await?;
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
        Box::pin(self.approve_call(&host, server, call_id, tool, &listed, arguments.as_ref()))
            .await?;
        let arguments = arguments.unwrap_or_else(|| json!({}));
        self.lock()
            .codex
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

    /// A request of Codex's: a card now (so cards keep Codex's order), the answer once the
    /// person gives it.
    fn on_codex_request(
        self: &Arc<Self>,
        link: &Arc<CodexLink>,
        id: RawId,
        method: &str,
        params: &Value,
    ) {
        match protocol::read_request(method, params) {
            ServerRequest::Form {
                server,
                turn,
                params,
            } => {
                tracing::info!(target: "formwork::codex", marker = "codex-elicitation-received", session = %self.id, plugin = %server, id = %id, turn = turn.as_deref().unwrap_or("none"), "mcpServer/elicitation/request received");
                self.codex_form(link, id, &server, params);
            }
            ServerRequest::ToolApproval(ask) => self.codex_tool_approval(link, id, ask, params),
            ServerRequest::Questions { questions } => self.codex_questions(link, id, &questions),
            ServerRequest::Command {
                command,
                cwd,
                reason: why,
            } => {
                let mut message = match (&command, &cwd) {
                    (Some(command), Some(cwd)) => {
                        format!("Allow Codex to run `{command}` in {cwd}?")
                    }
                    (Some(command), None) => format!("Allow Codex to run `{command}`?"),
                    _ => "Allow Codex to run a command?".to_owned(),
                };
                if let Some(why) = why {
                    message.push_str(&format!(" ({why})"));
                }
                let arguments = json!({ "command": command, "cwd": cwd });
                self.codex_work_approval(link, id, params, "command", message, arguments);
            }
            ServerRequest::FileChange {
                reason: why,
                grant_root,
            } => {
                let mut message = "Allow Codex to change files?".to_owned();
                if let Some(root) = &grant_root {
                    message = format!("Allow Codex to write under {root} for this session?");
                }
                if let Some(why) = why {
                    message.push_str(&format!(" ({why})"));
                }
                let arguments = json!({ "grantRoot": grant_root });
                self.codex_work_approval(link, id, params, "file_change", message, arguments);
            }
            ServerRequest::Unsupported => {
                tracing::info!(target: "formwork::codex", session = %self.id, method, "a request formwork does not serve; refused");
                refuse(&link.server, &id, method, "formwork has no such card");
            }
        }
    }

    /// A plugin's form through Codex: the same engine, gate, queue and card as a direct
    /// plugin's.
    fn codex_form(self: &Arc<Self>, link: &Arc<CodexLink>, id: RawId, server: &str, params: Value) {
        let openai = self
            .host
            .upgrade()
            .is_some_and(|host| host.config().features.openai_elicitation);
        let request = match parse_request_with(
            &params,
            ParseOptions {
                openai_elicitation: openai,
            },
        ) {
            Ok(request) => request,
            Err(decline) => {
                tracing::info!(target: "formwork::codex", marker = "codex-elicitation-declined", session = %self.id, plugin = %server, id = %id, reason = %decline, "mcpServer/elicitation/request declined: it cannot be shown");
                self.plugin_diagnostic(
                    "form-declined",
                    format!("{server}: the form could not be shown: {decline}"),
                );
                link.server
                    .respond(&id, &protocol::elicitation_answer("decline", None, None));
                return;
            }
        };
        let form = request.form().cloned();
        let resolved = CancellationToken::new();
        let prompt = FormPrompt {
            plugin: server.to_owned(),
            request_id: id.to_value(),
            call_request: None,
            params: serde_json::value::to_raw_value(&params).unwrap_or_else(|_| empty_params()),
            request,
            url_completed: None,
            cancelled: resolved.clone(),
        };
        let call_id = self.codex_call_of(server);
        let (card, reply) = self.ask_card(server, prompt, call_id);
        if let Some(card) = &card {
            tracing::info!(target: "formwork::codex", marker = "codex-elicitation-forwarded", session = %self.id, plugin = %server, id = %id, form = %card, "mcpServer/elicitation/request forwarded to a card");
        }
        self.track(&id, card, resolved.clone());
        let session = Arc::clone(self);
        let server_name = server.to_owned();
        let app_server = Arc::clone(&link.server);
        tokio::spawn(async move {
            let reply = reply.await;
            if !session.untrack(&id) {
                return;
            }
            let reply = checked(reply, form.as_deref());
            let content = reply
                .content
                .filter(|_| reply.action == FormAction::Accept)
                .map(Value::Object);
            let answer = protocol::elicitation_answer(
                reply.action.as_str(),
                content,
                reply.meta.map(Value::Object),
            );
            app_server.respond(&id, &answer);
            tracing::info!(target: "formwork::codex", marker = "codex-elicitation-answered", session = %session.id, plugin = %server_name, id = %id, action = reply.action.as_str(), "mcpServer/elicitation/request answered");
        });
    }

    /// The model's own questions, as a form card; answered with each question's label or text.
    fn codex_questions(self: &Arc<Self>, link: &Arc<CodexLink>, id: RawId, questions: &[Question]) {
        let schema = protocol::questions_schema(questions);
        let params = json!({ "mode": "form", "message": "Codex asks", "requestedSchema": schema });
        let request = match parse_request_with(
            &params,
            ParseOptions {
                openai_elicitation: true,
            },
        ) {
            Ok(request) => request,
            Err(decline) => {
                self.diagnostic(
                    "form-declined",
                    format!("Codex's questions could not be shown: {decline}"),
                );
                link.server.respond(&id, &protocol::questions_answer(None));
                return;
            }
        };
        let form = request.form().cloned();
        let resolved = CancellationToken::new();
        let prompt = FormPrompt {
            plugin: CODEX_SERVER.to_owned(),
            request_id: id.to_value(),
            call_request: None,
            params: serde_json::value::to_raw_value(&params).unwrap_or_else(|_| empty_params()),
            request,
            url_completed: None,
            cancelled: resolved.clone(),
        };
        let (card, reply) = self.ask_card(CODEX_SERVER, prompt, None);
        self.track(&id, card, resolved);
        let session = Arc::clone(self);
        let app_server = Arc::clone(&link.server);
        tokio::spawn(async move {
            let reply = reply.await;
            if !session.untrack(&id) {
                return;
            }
            let reply = checked(reply, form.as_deref());
            app_server.respond(&id, &protocol::questions_answer(reply.content.as_ref()));
        });
    }

    /// Codex asks whether an MCP tool call may run: an approval card of the call.
    fn codex_tool_approval(
        self: &Arc<Self>,
        link: &Arc<CodexLink>,
        id: RawId,
        ask: ToolApprovalAsk,
        params: &Value,
    ) {
        tracing::info!(target: "formwork::codex", marker = "codex-approval-received", session = %self.id, plugin = %ask.server, id = %id, "codex asks for a tool approval");
        let call_id = params
            .get("itemId")
            .and_then(Value::as_str)
            .and_then(|item| {
                self.lock()
                    .codex
                    .items
                    .get(item)
                    .map(|(call, _)| call.clone())
            })
            .or_else(|| self.codex_call_of(&ask.server))
            .unwrap_or_default();
        let offers = RememberOffers {
            session: ask.session,
            always: ask.always,
        };
        let card = ApprovalCard {
            id: format!("{APPROVAL_ID_PREFIX}{call_id}"),
            server: ask.server.clone(),
            tool: ask.tool.clone().unwrap_or_default(),
            mode: if ask.session || ask.always {
                ApprovalMode::Auto
            } else {
                ApprovalMode::Prompt
            },
            offers,
            message: ask.message.clone(),
            tool_title: None,
            tool_description: ask.tool_description.clone(),
            arguments: ask.arguments.clone().unwrap_or_else(|| json!({})),
        };
        let Some(host) = self.host.upgrade() else {
            return;
        };
        let rendering = policy::card_rendering(&host.config());
        let (approval, answer) = self.push_approval(&call_id, card.clone(), rendering);
        let resolved = CancellationToken::new();
        self.track(&id, Some(approval), resolved.clone());
        let session = Arc::clone(self);
        let app_server = Arc::clone(&link.server);
        tokio::spawn(async move {
            let answer = tokio::select! {
                answer = answer => answer,
                () = resolved.cancelled() => card.cancel(reason::ANSWERED_ELSEWHERE),
            };
            if !session.untrack(&id) {
                return;
            }
            let response = match &ask.asked_as {
                ApprovalAskedAs::Form => {
                    let (action, persist) = match (answer.choice, answer.cancelled) {
                        (_, true) => ("cancel", None),
                        (ApprovalChoice::Deny, false) => ("decline", None),
                        (ApprovalChoice::Allow, _) => ("accept", None),
                        (ApprovalChoice::AllowForSession, _) => ("accept", Some("session")),
                        (ApprovalChoice::AlwaysAllow, _) => ("accept", Some("always")),
                    };
                    let meta = persist.map(|persist| json!({ "persist": persist }));
                    let content = (action == "accept").then(|| json!({}));
                    protocol::elicitation_answer(action, content, meta)
                }
                ApprovalAskedAs::Question(question) => {
                    // Codex's question offers no refusal of its own: a Deny is its Cancel.
                    let label = match (answer.choice, answer.cancelled) {
                        (_, true) | (ApprovalChoice::Deny, false) => "Cancel",
                        (ApprovalChoice::Allow, _) => "Allow",
                        (ApprovalChoice::AllowForSession, _) => "Allow for this session",
                        (ApprovalChoice::AlwaysAllow, _) => "Allow and don't ask me again",
                    };
                    json!({ "answers": { question: { "answers": [label] } } })
                }
            };
            app_server.respond(&id, &response);
            tracing::info!(target: "formwork::codex", marker = "codex-approval-answered", session = %session.id, id = %id, choice = answer.choice.as_str(), cancelled = answer.cancelled, "codex tool approval answered");
            if let Some(host) = session.host.upgrade() {
                session.settle_approval(&host, &card, &answer);
                if answer.writes_config() {
                    host.refresh_codex_config();
                }
            }
        });
    }

    /// Codex asks whether its own work (a command, a file change) may go ahead.
    fn codex_work_approval(
        self: &Arc<Self>,
        link: &Arc<CodexLink>,
        id: RawId,
        params: &Value,
        what: &str,
        message: String,
        arguments: Value,
    ) {
        let call_id = params
            .get("itemId")
            .and_then(Value::as_str)
            .and_then(|item| {
                self.lock()
                    .codex
                    .items
                    .get(item)
                    .map(|(call, _)| call.clone())
            })
            .unwrap_or_default();
        let card = ApprovalCard {
            id: format!("{APPROVAL_ID_PREFIX}{call_id}"),
            server: CODEX_SERVER.to_owned(),
            tool: what.to_owned(),
            mode: ApprovalMode::Auto,
            offers: RememberOffers {
                session: true,
                always: false,
            },
            message,
            tool_title: None,
            tool_description: None,
            arguments,
        };
        let Some(host) = self.host.upgrade() else {
            return;
        };
        let rendering = policy::card_rendering(&host.config());
        let (approval, answer) = self.push_approval(&call_id, card.clone(), rendering);
        let resolved = CancellationToken::new();
        self.track(&id, Some(approval), resolved.clone());
        let session = Arc::clone(self);
        let app_server = Arc::clone(&link.server);
        tokio::spawn(async move {
            let answer: ApprovalAnswer = tokio::select! {
                answer = answer => answer,
                () = resolved.cancelled() => card.cancel(reason::ANSWERED_ELSEWHERE),
            };
            if !session.untrack(&id) {
                return;
            }
            let decision = match (answer.choice, answer.cancelled) {
                (_, true) => "cancel",
                (ApprovalChoice::Deny, false) => "decline",
                (ApprovalChoice::AllowForSession | ApprovalChoice::AlwaysAllow, _) => {
                    "acceptForSession"
                }
                (ApprovalChoice::Allow, _) => "accept",
            };
            app_server.respond(&id, &json!({ "decision": decision }));
        });
    }

    /// A notification about the session's thread.
    fn on_codex_notification(self: &Arc<Self>, method: &str, params: &Value) {
        let text = |pointer: &str| params.pointer(pointer).and_then(Value::as_str);
        match method {
            "item/agentMessage/delta" => {
                if let (Some(item), Some(delta)) = (text("/itemId"), text("/delta")) {
                    self.emit_transient(Event::MessageDelta {
                        message_id: item.to_owned(),
                        delta: delta.to_owned(),
                    });
                }
            }
            "item/started" => self.codex_item_started(params.get("item").unwrap_or(&Value::Null)),
            "item/completed" => {
                self.codex_item_completed(params.get("item").unwrap_or(&Value::Null));
            }
            "turn/completed" => {
                let Some(turn) = text("/turn/id") else {
                    return;
                };
                let end = TurnEnd {
                    status: text("/turn/status").unwrap_or("completed").to_owned(),
                    error: text("/turn/error/message").map(str::to_owned),
                };
                let mut state = self.lock();
                match state.codex.waiting.remove(turn) {
                    Some(waiter) => {
                        let _ = waiter.send(end);
                    }
                    None => {
                        // The end came before its turn/start's answer (or the turn is another
                        // client's): kept for a moment, a few at most.
                        if state.codex.ended.len() == MAX_EARLY_ENDS {
                            state.codex.ended.pop_front();
                        }
                        state.codex.ended.push_back((turn.to_owned(), end));
                    }
                }
            }
            "serverRequest/resolved" => {
                let Some(id) = params.get("requestId").and_then(RawId::from_value) else {
                    return;
                };
                let open = self.lock().codex.open.remove(&id);
                if let Some(open) = open {
                    tracing::info!(target: "formwork::codex", session = %self.id, %id, "another client answered codex's request; its card ends");
                    if let Some(card) = &open.card {
                        self.end_card(card, EndBy::Host(reason::ANSWERED_ELSEWHERE));
                    }
                    open.resolved.cancel();
                }
            }
            "error" => {
                let message = text("/error/message").unwrap_or("no message");
                if params.get("willRetry").and_then(Value::as_bool) == Some(true) {
                    self.diagnostic("model-retry", format!("Codex: {message}; it tries again"));
                } else {
                    tracing::info!(target: "formwork::codex", session = %self.id, %message, "codex reported an error");
                }
            }
            "mcpServer/startupStatus/updated" => {
                if text("/status") == Some("failed") {
                    let name = text("/name").unwrap_or("a server");
                    let error = text("/error").unwrap_or("no reason given");
                    self.plugin_diagnostic(
                        "codex-server",
                        format!("Codex could not start {name}: {error}"),
                    );
                }
            }
            _ => {
                tracing::debug!(target: "formwork::codex", session = %self.id, method, "codex notification skipped");
            }
        }
    }

    fn codex_item_started(self: &Arc<Self>, item: &Value) {
        let Some(item_id) = item.get("id").and_then(Value::as_str) else {
            return;
        };
        let (server, tool, arguments) = match item.get("type").and_then(Value::as_str) {
            Some("mcpToolCall") => (
                item.get("server")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
                item.get("tool")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
                item.get("arguments").cloned().unwrap_or_else(|| json!({})),
            ),
            Some("commandExecution") => (
                CODEX_SERVER.to_owned(),
                "command".to_owned(),
                json!({ "command": item.get("command"), "cwd": item.get("cwd") }),
            ),
            Some("fileChange") => (
                CODEX_SERVER.to_owned(),
                "file_change".to_owned(),
                json!({ "changes": item.get("changes") }),
            ),
            _ => return,
        };
        let call_id = self.new_id("c");
        let mut state = self.lock();
        if state.codex.items.contains_key(item_id) {
            return;
        }
        state
            .codex
            .items
            .insert(item_id.to_owned(), (call_id.clone(), server.clone()));
        self.emit_locked(
            &mut state,
            Event::ToolCallStarted {
                call_id,
                server,
                tool,
                arguments,
            },
        );
    }

    fn codex_item_completed(self: &Arc<Self>, item: &Value) {
        let kind = item.get("type").and_then(Value::as_str);
        if kind == Some("agentMessage") {
            let text = item.get("text").and_then(Value::as_str).unwrap_or_default();
            if !text.is_empty() {
                self.emit(Event::MessageAdded {
                    role: Role::Assistant,
                    text: text.to_owned(),
                });
            }
            return;
        }
        if !matches!(
            kind,
            Some("mcpToolCall" | "commandExecution" | "fileChange")
        ) {
            return;
        }
        // An item Codex completes without having started it (its start came before this
        // session loaded the thread) is shown whole.
        self.codex_item_started(item);
        let Some(item_id) = item.get("id").and_then(Value::as_str) else {
            return;
        };
        let Some((call_id, _)) = self.lock().codex.items.remove(item_id) else {
            return;
        };
        let (result, error) = item_outcome(item);
        self.finish_call(&call_id, result, error);
    }

    /// Ends the calls of items Codex left open (a stopped or failed turn).
    fn close_codex_items(&self, why: &str) {
        let items: Vec<(String, String)> = self
            .lock()
            .codex
            .items
            .drain()
            .map(|(_, call)| call)
            .collect();
        for (call_id, _) in items {
            self.finish_call(&call_id, None, Some(why.to_owned()));
        }
    }

    /// The process is gone: what waited on it ends.
    fn codex_gone(&self, why: &str) {
        let open: Vec<OpenRequest> = {
            let mut state = self.lock();
            state.codex.loaded_in = None;
            state.codex.open.drain().map(|(_, open)| open).collect()
        };
        for open in open {
            if let Some(card) = &open.card {
                self.end_card(card, EndBy::Host(reason::PLUGIN_GONE));
            }
            open.resolved.cancel();
        }
        self.close_codex_items(&format!("codex app-server exited: {why}"));
    }

    /// Whether a call of `server` runs through Codex in this session.
    fn codex_runs(&self, server: &str) -> bool {
        let state = self.lock();
        state.codex.items.values().any(|(_, of)| of == server)
            || state.codex.palette.iter().any(|(of, _)| of == server)
    }

    /// The formwork call a form of `server` belongs to: the only call of that server running
    /// through Codex (a tool call of the turn, or a palette call).
    fn codex_call_of(&self, server: &str) -> Option<String> {
        let state = self.lock();
        let mut calls = state
            .codex
            .items
            .values()
            .filter(|(_, of)| of == server)
            .map(|(call, _)| call)
            .chain(
                state
                    .codex
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

    fn track(&self, id: &RawId, card: Option<String>, resolved: CancellationToken) {
        self.lock()
            .codex
            .open
            .insert(id.clone(), OpenRequest { card, resolved });
    }

    /// Stops tracking a request about to be answered; `false` when another client answered it
    /// first (then nothing is sent).
    fn untrack(&self, id: &RawId) -> bool {
        self.lock().codex.open.remove(id).is_some()
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

/// What a completed item gave: a call's result as MCP's `CallToolResult`, or its error.
fn item_outcome(item: &Value) -> (Option<Value>, Option<String>) {
    let failed = item.get("status").and_then(Value::as_str) == Some("failed");
    match item.get("type").and_then(Value::as_str) {
        Some("mcpToolCall") => {
            if let Some(message) = item.pointer("/error/message").and_then(Value::as_str) {
                return (None, Some(message.to_owned()));
            }
            let Some(result) = item.get("result").filter(|result| result.is_object()) else {
                return (None, Some("Codex gave no result".to_owned()));
            };
            let mut call_result = serde_json::Map::new();
            for key in ["content", "structuredContent", "_meta"] {
                if let Some(value) = result.get(key).filter(|value| !value.is_null()) {
                    call_result.insert(key.to_owned(), value.clone());
                }
            }
            if failed {
                call_result.insert("isError".to_owned(), json!(true));
            }
            (Some(Value::Object(call_result)), None)
        }
        Some("commandExecution") => {
            let output = item
                .get("aggregatedOutput")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let exit = item.get("exitCode").and_then(Value::as_i64);
            let mut result = json!({ "content": [{ "type": "text", "text": output }] });
            if failed || exit.is_some_and(|code| code != 0) {
                result["isError"] = json!(true);
            }
            (Some(result), None)
        }
        _ => {
            let status = item
                .get("status")
                .and_then(Value::as_str)
                .unwrap_or("completed");
            let result = json!({ "content": [{ "type": "text", "text": status }] });
            (Some(result), None)
        }
    }
}

/// The last guard before content reaches Codex: accepted content must validate.
fn checked(reply: FormReply, form: Option<&formwork_forms::Form>) -> FormReply {
    match (reply.action, form, &reply.content) {
        (FormAction::Accept, Some(form), Some(content)) if form.validate(content).is_err() => {
            tracing::error!(target: "formwork::codex", "an accepted answer does not validate; sending cancel");
            FormReply::cancel()
        }
        _ => reply,
    }
}

fn empty_params() -> Box<serde_json::value::RawValue> {
    serde_json::value::RawValue::NULL.to_owned()
}
