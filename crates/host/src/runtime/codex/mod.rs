//! The executor over real Codex: `codex app-server` talks to the model and is the MCP client
//! of the plugins; formwork starts it with a `CODEX_HOME` of its own, writes its `config.toml`
//! from formwork's config (`config_file.rs`), and speaks its JSON-RPC protocol over a
//! WebSocket on a Unix socket in that home (`app_server.rs`; the messages formwork reads and
//! writes are in `protocol.rs`). Turning Codex's events into the session's events, and its
//! requests into cards, is the session layer's (`session/codex.rs`).

mod app_server;
mod config_file;
pub mod log;
pub mod protocol;

pub use app_server::{AppServer, CodexError, CodexOptions, Inbound, LOG_FILE, SOCKET_FILE};
pub use config_file::{
    CONFIG_FILE, ConfigFileError, MANAGED_FILE, TomlEditError, Written, approval_policy,
    only_server, redacted, tool_approval_mode, write as write_config,
};
