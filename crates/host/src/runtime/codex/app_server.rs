//! One `codex app-server` process and the JSON-RPC connection to it over its stdio: requests
//! out with their answers back, and everything Codex sends on its own (its requests to the
//! client, which must each be answered, and its notifications) handed to one [`Inbound`]
//! channel in the order they came.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use futures::StreamExt;
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::jsonrpc::{self, Incoming, RawId, RpcError};
use crate::transport::{Frame, Outgoing, Sent};

/// How long Codex may take to answer `initialize`.
const INITIALIZE_TIMEOUT: Duration = Duration::from_secs(60);

/// The file in `CODEX_HOME` that Codex's own log (its stderr) goes to.
pub const LOG_FILE: &str = "formwork-app-server.log";

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
    /// The process is gone; nothing follows.
    Closed(String),
}

/// Why a request to Codex failed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum CodexError {
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

/// A running `codex app-server`. Dropping it closes Codex's stdin, which ends the process
/// (its process group is terminated if it lingers).
pub struct AppServer {
    outgoing: Outgoing,
    pending: Mutex<Option<Pending>>,
    next_id: AtomicU64,
    gone: CancellationToken,
    log: PathBuf,
}

impl AppServer {
    /// Starts `codex app-server` with `options.home` as its `CODEX_HOME`, initializes the
    /// connection, and hands everything Codex sends unasked to `inbound`.
    pub async fn start(
        options: &CodexOptions,
        inbound: mpsc::UnboundedSender<Inbound>,
    ) -> Result<std::sync::Arc<AppServer>, CodexError> {
        std::fs::create_dir_all(&options.home).map_err(|err| CodexError::Start {
            command: options.command.clone(),
            reason: format!("cannot create {}: {err}", options.home.display()),
        })?;
        let log = options.home.join(LOG_FILE);
        let line = command_line(options, &log);
        let transport =
            crate::transport::stdio::spawn(&line, false).map_err(|err| CodexError::Start {
                command: options.command.clone(),
                reason: err.to_string(),
            })?;
        let server = std::sync::Arc::new(AppServer {
            outgoing: transport.outgoing,
            pending: Mutex::new(Some(HashMap::new())),
            next_id: AtomicU64::new(1),
            gone: CancellationToken::new(),
            log,
        });
        let reader = std::sync::Arc::downgrade(&server);
        let mut incoming = transport.incoming;
        tokio::spawn(async move {
            let closed = loop {
                match incoming.next().await {
                    Some(Frame::Message(text, _)) => {
                        let Some(server) = reader.upgrade() else {
                            return;
                        };
                        server.read(&text, &inbound);
                    }
                    Some(Frame::Oversized) => {
                        tracing::warn!(target: "formwork::codex", "codex sent a message over the size limit; it was skipped");
                    }
                    Some(Frame::Closed(reason)) => break reason,
                    None => break "its output ended".to_owned(),
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
        match tokio::time::timeout(INITIALIZE_TIMEOUT, server.request("initialize", initialize))
            .await
        {
            Ok(Ok(_)) => {}
            Ok(Err(err)) => return Err(server.start_failed(options, err.to_string())),
            Err(_) => {
                return Err(server.start_failed(
                    options,
                    format!(
                        "it did not answer initialize within {} s",
                        INITIALIZE_TIMEOUT.as_secs()
                    ),
                ));
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
        if self.outgoing.send(message, Sent::Other).is_err() {
            self.close("it does not read what formwork sends");
        }
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
        self.gone.cancel();
    }

    fn gone_reason(&self) -> String {
        format!("it exited; its log is {}", self.log.display())
    }

    fn start_failed(&self, options: &CodexOptions, reason: String) -> CodexError {
        let tail = std::fs::read_to_string(&self.log)
            .map(|log| {
                let lines: Vec<&str> = log.lines().rev().take(5).collect();
                lines.into_iter().rev().collect::<Vec<_>>().join("\n")
            })
            .unwrap_or_default();
        CodexError::Start {
            command: options.command.clone(),
            reason: if tail.is_empty() {
                reason
            } else {
                format!("{reason}; the end of its log:\n{tail}")
            },
        }
    }
}

/// `exec env CODEX_HOME=… RUST_LOG=… <codex> app-server 2>> <log>`, each word quoted for `sh`.
fn command_line(options: &CodexOptions, log: &Path) -> String {
    let quote = |word: &str| format!("'{}'", word.replace('\'', r"'\''"));
    format!(
        "exec env {} {} {} app-server 2>> {}",
        quote(&format!("CODEX_HOME={}", options.home.display())),
        quote(&format!("RUST_LOG={}", options.log_filter)),
        quote(&options.command),
        quote(&log.display().to_string()),
    )
}
