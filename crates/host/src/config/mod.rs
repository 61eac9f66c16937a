//! `formwork.toml`: the approval policy, the feature switches and the MCP servers, with Codex's
//! key names so a `[mcp_servers.<name>]` table reads the same in both.
//!
//! ```toml
//! approval_policy = { granular = { sandbox_approval = false, rules = false, mcp_elicitations = true } }
//! elicitations_auto_deny = false
//!
//! [features]
//! tool_call_mcp_elicitation = false
//!
//! [mcp_servers.shop]
//! command = "python3"
//! args = ["shop.py"]
//! default_tools_approval_mode = "writes"
//!
//! [mcp_servers.shop.tools.refund]
//! approval_mode = "prompt"
//! ```
//!
//! Loading ([`Config::load`], [`Config::from_toml`]) is pure apart from reading the file; a bad
//! file becomes a [`ConfigError`] naming file, line, column and dotted key, and so does a value
//! out of range (a timeout over [`MAX_TIMEOUT_SECS`]). Writing
//! ([`import`], [`sync`], [`remember_always_allow`]) edits the file in place with `toml_edit`,
//! so comments, order and formatting of everything it does not touch stay byte-for-byte. The
//! file is replaced atomically (a temporary file created exclusively beside the real file, with
//! its mode, fsynced, renamed over it); a symlinked config is written through, the link kept. A
//! file formwork creates is `0600`, in directories created `0700`.
//! What the settings decide lives in [`crate::policy`].

mod builtin;
mod edit;
mod error;
mod import;
mod load;
mod types;

use std::path::{Path, PathBuf};

pub use builtin::{BUILTIN_SERVERS, BuiltinServer, builtin_server};
pub use edit::{RememberOutcome, SyncAction, SyncChange, SyncReport, remember_always_allow, sync};
pub(crate) use error::dotted;
pub use error::{ConfigError, Invalid, NO_FILE};
pub use import::{ImportReport, ImportedServer, SkippedServer, import};
pub use load::MAX_TIMEOUT_SECS;
pub use types::{
    ApprovalMode, ApprovalPolicy, Config, Features, GranularApproval, ServerConfig, ToolConfig,
    Transport,
};

/// The file looked for in the working directory when no `--config` is given.
pub const DEFAULT_CONFIG_FILE: &str = "formwork.toml";

impl Config {
    /// The embedded default used when there is no file: policy `on-request`, no auto-deny,
    /// every feature off, and only the built-in servers (whose tools default to `approve`).
    pub fn embedded() -> Config {
        load::embedded()
    }

    /// Parses configuration text. `path` names the file in errors and in [`Config::path`].
    pub fn from_toml(text: &str, path: Option<&Path>) -> Result<Config, ConfigError> {
        load::parse(text, path)
    }

    /// Reads and parses a file.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        load::parse(&text, Some(path))
    }

    /// [`Config::load`] for `Some(path)`, the embedded default for `None`.
    pub fn load_optional(path: Option<&Path>) -> Result<Config, ConfigError> {
        match path {
            Some(path) => Config::load(path),
            None => Ok(Config::embedded()),
        }
    }

    /// The server with this name, whether enabled or not.
    pub fn server(&self, name: &str) -> Option<&ServerConfig> {
        self.mcp_servers.get(name)
    }

    /// Whether the server `name` is a Streamable HTTP server with `share_session = true`.
    pub fn shares_session(&self, name: &str) -> bool {
        self.server(name).is_some_and(|server| {
            matches!(
                server.transport,
                Transport::StreamableHttp {
                    share_session: true,
                    ..
                }
            )
        })
    }
}

/// The configuration file a command uses: the `--config` value when given, else
/// `./formwork.toml` when that file exists, else none (the embedded default).
pub fn resolve_path(explicit: Option<&Path>) -> Option<PathBuf> {
    match explicit {
        Some(path) => Some(path.to_path_buf()),
        None => {
            let default = Path::new(DEFAULT_CONFIG_FILE);
            default.is_file().then(|| default.to_path_buf())
        }
    }
}

/// The file a writing command (`import`, `sync`, Always allow) edits: the `--config` value when
/// given, else `./formwork.toml` (created when missing).
pub fn writable_path(explicit: Option<&Path>) -> PathBuf {
    explicit.map_or_else(|| PathBuf::from(DEFAULT_CONFIG_FILE), Path::to_path_buf)
}
