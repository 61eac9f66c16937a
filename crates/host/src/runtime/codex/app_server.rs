//! One `codex app-server` process and formwork's JSON-RPC connection to it: requests out with
//! their answers back, and everything Codex sends on its own (its requests to the client, which
//! must each be answered, and its notifications) handed to one [`Inbound`] channel in the order
//! they came.
//!
//! Codex listens on a Unix socket in its home (`app-server.sock`, WebSocket framing, one
//! JSON-RPC message per text frame), so other app-server clients can join formwork's threads
//! (`thread/resume`) and answer what it asks: Codex then tells formwork the request was
//! resolved. The process is started through `sh`, which holds a pipe from formwork and ends
//! Codex when that pipe closes: when formwork drops the connection, or exits however it exits.
//!
//! One formwork process at a time runs Codex in a home: a lock file there (`flock`, dropped by
//! the kernel when the process dies) keeps a second one from taking its socket.

use std::collections::HashMap;
use std::fs::File;
use std::io::Write as _;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use futures::{SinkExt, StreamExt};
use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg};
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};
use tokio_tungstenite::tungstenite::Message;
use tokio_util::sync::CancellationToken;

use crate::jsonrpc::{self, Incoming, RawId, RpcError};
use crate::transport::{Frame, MAX_FRAME_BYTES, Outgoing};

/// How long Codex may take to open its socket, take the WebSocket and answer `initialize`,
/// all told.
const START_TIMEOUT: Duration = Duration::from_secs(60);
/// Past this size Codex's log starts over, the previous one kept as `<log>.1`.
const LOG_CAP_BYTES: u64 = 8 * 1024 * 1024;
/// How long Codex has to end after SIGTERM before it is killed.
const STOP_GRACE_SECS: u32 = 5;
/// The lock file in `CODEX_HOME` held while formwork runs Codex there.
const LOCK_FILE: &str = "formwork.lock";

/// The file in `CODEX_HOME` that Codex's own log (its stderr) goes to.
pub const LOG_FILE: &str = "formwork-app-server.log";
/// The socket in `CODEX_HOME` Codex listens on.
pub const SOCKET_FILE: &str = "app-server.sock";

/// How formwork runs Codex.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodexOptions {
    /// The `codex` program (a path, or a name found on `PATH`).
    pub command: String,
    /// Its `CODEX_HOME`.
    pub home: PathBuf,
    /// The working directory of its threads.
    pub cwd: PathBuf,
    /// Declare the `openai/form` extension, so that Codex offers it to the plugins
    /// (`features.openai_elicitation`).
    pub openai_form: bool,
    /// The `RUST_LOG` Codex runs with; its log goes to [`LOG_FILE`] in its home.
    pub log_filter: String,
}

impl CodexOptions {
    /// The default log filter: Codex's own warnings, and its MCP client's view of each
    /// elicitation, which the doctor reads.
    pub const DEFAULT_LOG_FILTER: &'static str = "warn,codex_mcp=info,codex_rmcp_client=info";
}

/// Something Codex sent without being asked.
#[derive(Debug)]
pub enum Inbound {
    /// A request to the client; answer it with [`AppServer::respond`].
    Request {
        /// Its id, as Codex wrote it.
        id: RawId,
        /// The method.
        method: String,
        /// The params (`null` when absent or unreadable).
        params: Value,
    },
    /// A notification.
    Notification {
        /// The method.
        method: String,
        /// The params (`null` when absent or unreadable).
        params: Value,
    },
    /// A line of Codex's own log (its stderr), also appended to [`LOG_FILE`].
    Log(String),
    /// The connection is gone; nothing follows.
    Closed(String),
}

/// Why a request to Codex failed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum CodexError {
    /// Another formwork process runs Codex in this home.
    #[error(
        "another formwork process runs Codex in {home} (its lock {lock} is held): give this one a `[codex] home` of its own"
    )]
    HomeTaken {
        /// The home.
        home: PathBuf,
        /// The lock file.
        lock: PathBuf,
    },
    /// Codex could not be started.
    #[error("codex app-server could not be started ({command}): {reason}")]
    Start {
        /// The command.
        command: String,
        /// Why.
        reason: String,
    },
    /// Codex answered with an error.
    #[error("codex answered {method} with an error: {error}")]
    Rpc {
        /// The request's method.
        method: String,
        /// The error.
        error: Box<RpcError>,
    },
    /// The process ended before it answered.
    #[error("codex app-server is gone: {0}")]
    Gone(String),
    /// It answered without what the request is for.
    #[error("codex answered {method} without {missing}")]
    Unexpected {
        /// The request's method.
        method: String,
        /// What the answer lacks.
        missing: &'static str,
    },
    /// It did not answer in time.
    #[error("codex app-server did not answer {method} within {seconds} s")]
    Timeout {
        /// The request's method.
        method: String,
        /// The limit.
        seconds: u64,
    },
}

type Pending = HashMap<u64, oneshot::Sender<Result<Value, RpcError>>>;

/// A running `codex app-server` and the connection to it. Dropping it, or losing the
/// connection, ends the process and frees its home.
pub struct AppServer {
    /// The process's stdin (holding it keeps Codex running) and the home's lock.
    running: Mutex<Option<(Outgoing, Flock<File>)>>,
    outgoing: mpsc::UnboundedSender<String>,
    pending: Mutex<Option<Pending>>,
    next_id: AtomicU64,
    gone: CancellationToken,
    log: PathBuf,
}

impl Drop for AppServer {
    fn drop(&mut self) {
        self.gone.cancel();
    }
}

impl AppServer {
    /// Starts `codex app-server` with `options.home` as its `CODEX_HOME`, connects to its
    /// socket, initializes the connection, and hands everything Codex sends unasked to
    /// `inbound`.
    pub async fn start(
        options: &CodexOptions,
        inbound: mpsc::UnboundedSender<Inbound>,
    ) -> Result<std::sync::Arc<AppServer>, CodexError> {
        let failed = |reason: String| CodexError::Start {
            command: options.command.clone(),
            reason,
        };
        let deadline = tokio::time::Instant::now() + START_TIMEOUT;
        std::fs::create_dir_all(&options.home)
            .map_err(|err| failed(format!("cannot create {}: {err}", options.home.display())))?;
        let lock = lock_home(&options.home).map_err(|err| match err {
            Some(err) => failed(err),
            None => CodexError::HomeTaken {
                home: options.home.clone(),
                lock: options.home.join(LOCK_FILE),
            },
        })?;
        let log = options.home.join(LOG_FILE);
        let socket = options.home.join(SOCKET_FILE);
        // A socket left by a Codex that is gone would be taken for the new one's; with the
        // home's lock held, no live one of formwork's is using it.
        let _ = std::fs::remove_file(&socket);
        let mut log_file = LogFile::open(log.clone())
            .map_err(|err| failed(format!("cannot open {}: {err}", log.display())))?;
        let process = crate::transport::stdio::spawn(
            &command_line(options, &socket),
            crate::transport::stdio::ChildEnv::Inherit,
            false,
        )
        .map_err(|err| failed(err.to_string()))?;
        // Codex's stderr: each line to the log file, and to whoever reads it.
        let (exited_tx, mut exited) = tokio::sync::watch::channel(false);
        {
            let mut lines = process.incoming;
            let inbound = inbound.clone();
            tokio::spawn(async move {
                while let Some(frame) = lines.next().await {
                    match frame {
                        Frame::Message(line, _) => {
                            log_file.append(&line);
                            let _ = inbound.send(Inbound::Log(line));
                        }
                        Frame::Oversized => {
                            log_file
                                .append("[formwork: a log line past the size limit was skipped]");
                        }
                        Frame::Closed(_) => break,
                    }
                }
                let _ = exited_tx.send(true);
            });
        }
        let connected = async {
            loop {
                if let Ok(stream) = tokio::net::UnixStream::connect(&socket).await {
                    break Ok(stream);
                }
                tokio::select! {
                    () = tokio::time::sleep(Duration::from_millis(20)) => {}
                    // Codex's stderr closes when it has exited.
                    _ = exited.wait_for(|exited| *exited) => {
                        break Err("it exited before it listened".to_owned());
                    }
                }
            }
        };
        let stream = match tokio::time::timeout_at(deadline, connected).await {
            Ok(Ok(stream)) => stream,
            Ok(Err(reason)) => return Err(failed(with_log_tail(reason, &log))),
            Err(_) => {
                return Err(failed(with_log_tail(
                    format!(
                        "its socket did not open within {} s",
                        START_TIMEOUT.as_secs()
                    ),
                    &log,
                )));
            }
        };
        let config = tokio_tungstenite::tungstenite::protocol::WebSocketConfig::default()
            .max_message_size(Some(MAX_FRAME_BYTES))
            .max_frame_size(Some(MAX_FRAME_BYTES));
        let handshake =
            tokio_tungstenite::client_async_with_config("ws://localhost/", stream, Some(config));
        let (socket_stream, _) = match tokio::time::timeout_at(deadline, handshake).await {
            Ok(Ok(connected)) => connected,
            Ok(Err(err)) => {
                return Err(failed(format!(
                    "its socket did not take a WebSocket: {err}"
                )));
            }
            Err(_) => {
                return Err(failed(format!(
                    "its socket did not take a WebSocket within {} s",
                    START_TIMEOUT.as_secs()
                )));
            }
        };
        let (mut sink, mut stream) = socket_stream.split();
        let (outgoing, mut to_send) = mpsc::unbounded_channel::<String>();
        let server = std::sync::Arc::new(AppServer {
            running: Mutex::new(Some((process.outgoing, lock))),
            outgoing,
            pending: Mutex::new(Some(HashMap::new())),
            next_id: AtomicU64::new(1),
            gone: CancellationToken::new(),
            log,
        });
        let gone = server.gone.clone();
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    message = to_send.recv() => match message {
                        Some(message) => {
                            crate::transport::trace_out(&message);
                            if sink.send(Message::text(message)).await.is_err() {
                                break;
                            }
                        }
                        None => break,
                    },
                    () = gone.cancelled() => break,
                }
            }
            let _ = sink.close().await;
        });
        let reader = std::sync::Arc::downgrade(&server);
        let gone = server.gone.clone();
        tokio::spawn(async move {
            let closed = loop {
                let message = tokio::select! {
                    message = stream.next() => message,
                    () = gone.cancelled() => break "formwork closed it".to_owned(),
                };
                match message {
                    Some(Ok(Message::Text(text))) => {
                        crate::transport::trace_in(&text);
                        let Some(server) = reader.upgrade() else {
                            return;
                        };
                        server.read(&text, &inbound);
                    }
                    Some(Ok(Message::Close(_))) | None => {
                        break "it closed the connection".to_owned();
                    }
                    Some(Ok(_)) => {}
                    Some(Err(err)) => break format!("the connection failed: {err}"),
                }
            };
            if let Some(server) = reader.upgrade() {
                server.close(&closed);
            }
            let _ = inbound.send(Inbound::Closed(closed));
        });
        let mut capabilities = json!({ "experimentalApi": true });
        if options.openai_form {
            capabilities["extensions"] = json!({ "openai/form": {} });
        }
        let initialize = json!({
            "clientInfo": {
                "name": "formwork",
                "title": "formwork",
                "version": env!("CARGO_PKG_VERSION"),
            },
            "capabilities": capabilities,
        });
        match tokio::time::timeout_at(deadline, server.request("initialize", initialize)).await {
            Ok(Ok(_)) => {}
            Ok(Err(err)) => return Err(failed(with_log_tail(err.to_string(), &server.log))),
            Err(_) => {
                return Err(failed(with_log_tail(
                    format!(
                        "it did not answer initialize within {} s",
                        START_TIMEOUT.as_secs()
                    ),
                    &server.log,
                )));
            }
        }
        server.notify("initialized", None);
        Ok(server)
    }

    /// Sends a request and waits for its answer (as long as the process lives).
    pub async fn request(&self, method: &str, params: Value) -> Result<Value, CodexError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (answer, answered) = oneshot::channel();
        {
            let mut pending = self
                .pending
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            let Some(pending) = pending.as_mut() else {
                return Err(CodexError::Gone("it has exited".to_owned()));
            };
            pending.insert(id, answer);
        }
        // Given up (a timeout, a dropped caller): the answer is no longer waited for.
        let _forget = ForgetOnDrop { server: self, id };
        tracing::debug!(target: "formwork::codex", id, method, "request to codex");
        self.send(jsonrpc::request(id, method, Some(params)));
        match answered.await {
            Ok(Ok(result)) => Ok(result),
            Ok(Err(error)) => Err(CodexError::Rpc {
                method: method.to_owned(),
                error: Box::new(error),
            }),
            Err(_) => Err(CodexError::Gone(self.gone_reason())),
        }
    }

    /// Like [`AppServer::request`], given up after `limit`.
    pub async fn request_within(
        &self,
        method: &str,
        params: Value,
        limit: Duration,
    ) -> Result<Value, CodexError> {
        tokio::time::timeout(limit, self.request(method, params))
            .await
            .unwrap_or_else(|_| {
                Err(CodexError::Timeout {
                    method: method.to_owned(),
                    seconds: limit.as_secs(),
                })
            })
    }

    /// `thread/start` in `cwd` under `approval_policy`: the new thread's id.
    pub async fn start_thread(
        &self,
        cwd: &str,
        approval_policy: &Value,
        limit: Duration,
    ) -> Result<String, CodexError> {
        let params = super::protocol::thread_start(cwd, approval_policy);
        let answer = self.request_within("thread/start", params, limit).await?;
        id_at(&answer, "/thread/id", "thread/start")
    }

    /// `turn/start` of one text message on `thread`: the turn's id.
    pub async fn start_turn(
        &self,
        thread: &str,
        text: &str,
        approval_policy: &Value,
        limit: Duration,
    ) -> Result<String, CodexError> {
        let params = super::protocol::turn_start(thread, text, approval_policy);
        let answer = self.request_within("turn/start", params, limit).await?;
        id_at(&answer, "/turn/id", "turn/start")
    }

    /// Answers Codex's request `id` with `result`.
    pub fn respond(&self, id: &RawId, result: &Value) {
        self.send(jsonrpc::response(id, result));
    }

    /// Answers Codex's request `id` with an error.
    pub fn respond_error(&self, id: &RawId, code: i64, message: &str) {
        self.send(jsonrpc::error_response(Some(id), code, message));
    }

    /// Sends a notification.
    pub fn notify(&self, method: &str, params: Option<Value>) {
        self.send(jsonrpc::notification(method, params));
    }

    /// Whether the process has gone.
    pub fn is_gone(&self) -> bool {
        self.gone.is_cancelled()
    }

    /// Resolves once the process has gone.
    pub async fn gone(&self) {
        self.gone.cancelled().await;
    }

    /// Codex's own log: its stderr, appended to in its home.
    pub fn log_file(&self) -> &Path {
        &self.log
    }

    fn send(&self, message: String) {
        let _ = self.outgoing.send(message);
    }

    fn read(&self, text: &str, inbound: &mpsc::UnboundedSender<Inbound>) {
        let params = |params: jsonrpc::Params| {
            jsonrpc::read_params(params.as_deref())
                .and_then(Result::ok)
                .unwrap_or(Value::Null)
        };
        match jsonrpc::parse_frame(text) {
            Incoming::Response { id, outcome } => {
                let waiter = id.as_u64().and_then(|id| {
                    self.pending
                        .lock()
                        .ok()
                        .and_then(|mut pending| pending.as_mut()?.remove(&id))
                });
                let Some(waiter) = waiter else {
                    tracing::debug!(target: "formwork::codex", %id, "an answer to no request of formwork's; ignored");
                    return;
                };
                let outcome =
                    outcome.map(|raw| serde_json::from_str(raw.get()).unwrap_or(Value::Null));
                let _ = waiter.send(outcome);
            }
            Incoming::Request {
                id,
                method,
                params: raw,
            } => {
                let _ = inbound.send(Inbound::Request {
                    id,
                    method,
                    params: params(raw),
                });
            }
            Incoming::Notification {
                method,
                params: raw,
            } => {
                let _ = inbound.send(Inbound::Notification {
                    method,
                    params: params(raw),
                });
            }
            Incoming::Invalid { id, code, reason } => {
                tracing::warn!(target: "formwork::codex", %reason, "codex sent a message formwork cannot read; skipped");
                if let Some(id) = id {
                    self.respond_error(&id, code, &reason);
                }
            }
        }
    }

    /// Fails every request still waiting; later ones fail at once.
    fn close(&self, reason: &str) {
        if self.gone.is_cancelled() {
            return;
        }
        tracing::warn!(target: "formwork::codex", %reason, log = %self.log.display(), "codex app-server is gone");
        if let Ok(mut pending) = self.pending.lock() {
            pending.take();
        }
        // Ends Codex if it still runs, and frees the home for the next start.
        if let Ok(mut running) = self.running.lock() {
            running.take();
        }
        self.gone.cancel();
    }

    fn gone_reason(&self) -> String {
        format!("it exited; its log is {}", self.log.display())
    }
}

/// Takes a request off the waiting list when its caller stops waiting.
struct ForgetOnDrop<'a> {
    server: &'a AppServer,
    id: u64,
}

impl Drop for ForgetOnDrop<'_> {
    fn drop(&mut self) {
        if let Ok(mut pending) = self.server.pending.lock()
            && let Some(pending) = pending.as_mut()
        {
            pending.remove(&self.id);
        }
    }
}

/// Takes the home's lock: `Err(None)` when another process holds it.
fn lock_home(home: &Path) -> Result<Flock<File>, Option<String>> {
    let path = home.join(LOCK_FILE);
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .open(&path)
        .map_err(|err| Some(format!("cannot open {}: {err}", path.display())))?;
    match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
        Ok(locked) => Ok(locked),
        Err((_, Errno::EWOULDBLOCK)) => Err(None),
        Err((_, errno)) => Err(Some(format!("cannot lock {}: {errno}", path.display()))),
    }
}

/// Codex's log file, private to the person, started over past [`LOG_CAP_BYTES`].
struct LogFile {
    path: PathBuf,
    file: File,
    size: u64,
}

impl LogFile {
    fn open(path: PathBuf) -> std::io::Result<LogFile> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o600)
            .open(&path)?;
        let size = file.metadata()?.len();
        Ok(LogFile { path, file, size })
    }

    fn append(&mut self, line: &str) {
        if self.size > LOG_CAP_BYTES {
            let mut kept = self.path.clone().into_os_string();
            kept.push(".1");
            let _ = std::fs::rename(&self.path, kept);
            match LogFile::open(self.path.clone()) {
                Ok(fresh) => *self = fresh,
                Err(err) => {
                    tracing::warn!(target: "formwork::codex", %err, "codex's log could not start over");
                    self.size = 0;
                }
            }
        }
        if writeln!(self.file, "{line}").is_ok() {
            self.size += line.len() as u64 + 1;
        }
    }
}

/// The id at `pointer` of `method`'s answer.
fn id_at(answer: &Value, pointer: &str, method: &str) -> Result<String, CodexError> {
    answer
        .pointer(pointer)
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| CodexError::Unexpected {
            method: method.to_owned(),
            missing: "an id",
        })
}

/// `reason`, and the end of Codex's log when it has one.
fn with_log_tail(reason: String, log: &Path) -> String {
    let tail = std::fs::read_to_string(log)
        .map(|log| {
            let lines: Vec<&str> = log.lines().rev().take(5).collect();
            lines.into_iter().rev().collect::<Vec<_>>().join("\n")
        })
        .unwrap_or_default();
    if tail.is_empty() {
        reason
    } else {
        format!("{reason}; the end of its log ({}):\n{tail}", log.display())
    }
}

/// `sh` starts Codex listening on `socket`, its stderr on sh's stdout (for formwork to read
/// and log); a subshell ends it when formwork's pipe (sh's stdin, kept as fd 3) closes (Codex
/// catches SIGTERM for a graceful shutdown, which does not always end, so SIGKILL follows after
/// [`STOP_GRACE_SECS`]), and sh ends that subshell and exits when Codex does. Each word is
/// quoted for `sh`.
fn command_line(options: &CodexOptions, socket: &Path) -> String {
    let quote = |word: &str| format!("'{}'", word.replace('\'', r"'\''"));
    format!(
        "exec 3<&0; CODEX_HOME={} RUST_LOG={} {} app-server --listen {} < /dev/null 2>&1 > /dev/null 3<&- & \
         codex=$!; (read -r _ <&3; kill $codex; sleep {STOP_GRACE_SECS}; kill -9 $codex) > /dev/null 2>&1 & \
         watcher=$!; exec 3<&-; \
         wait $codex; status=$?; kill $watcher 2> /dev/null; exit $status",
        quote(&options.home.display().to_string()),
        quote(&options.log_filter),
        quote(&options.command),
        quote(&format!("unix://{}", socket.display())),
    )
}
