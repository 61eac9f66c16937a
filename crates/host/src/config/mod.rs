//! `formwork.toml`: the approval policy, the feature switches, the MCP servers and the model,
//! with Codex's key names so a `[mcp_servers.<name>]` or `[model_providers.<id>]` table reads
//! the same in both.
//!
//! ```toml
//! approval_policy = { granular = { sandbox_approval = false, rules = false, mcp_elicitations = true } }
//! elicitations_auto_deny = false
//! model = "llama3.2"
//! model_provider = "local"
//!
//! [features]
//! tool_call_mcp_elicitation = false
//! openai_elicitation = false
//!
//! [mcp_servers.shop]
//! command = "python3"
//! args = ["shop.py"]
//! default_tools_approval_mode = "writes"
//!
//! [mcp_servers.shop.tools.refund]
//! approval_mode = "prompt"
//!
//! [model_providers.local]
//! base_url = "http://127.0.0.1:8080/v1"
//! wire_api = "chat"
//! ```
//!
//! # Layers and trust
//!
//! A command's configuration is layered from up to two files, over the embedded default:
//!
//! 1. The **user config**, `$XDG_CONFIG_HOME/formwork/formwork.toml` (else
//!    `~/.config/formwork/formwork.toml`): applies whenever it exists.
//! 2. On top of it, either the file named with **`--config FILE`** (explicit, so trusted; no
//!    project file is then looked for), or the **project's** `formwork.toml`: the nearest one
//!    in the working directory or a directory above it, up to the filesystem root (the search
//!    stops at the first one found). The project's file applies only when the user config has
//!    `[projects."<dir>"] trust_level = "trusted"` for exactly the canonical path of the
//!    directory holding it (no ancestor counts, no symlinked spelling). Otherwise it is not
//!    read at all, not even parsed, so a cloned repository cannot start its servers; a project
//!    marked `trust_level = "untrusted"` is skipped the same way. `[projects]` counts only in
//!    the user config: in any other file it is accepted and listed in
//!    [`Config::ignored_keys`], so a project cannot trust itself.
//!
//! "On top" means: a scalar the upper file sets (`approval_policy`, `elicitations_auto_deny`,
//! `features.*`, `model`, `model_provider`, ...) wins over the lower one; an upper
//! `[mcp_servers.<name>]` table replaces the lower table of that name whole (launch keys,
//! approval modes, tools; two halves of a launch command are never merged), keeping its place
//! in the order, and so does an upper `[model_providers.<id>]` table; built-in servers no
//! layer names still come last with their defaults. [`Config::sources`] says which files applied and why.
//!
//! Loading ([`Config::load_layered`], [`Config::from_toml`]) is pure apart from reading the
//! files; a bad file becomes a [`ConfigError`] naming file, line, column and dotted key, and
//! a value out of range (a timeout over [`MAX_TIMEOUT_SECS`]) is such an error too.
//!
//! # Writes
//!
//! Writing ([`import`], [`sync`], [`remember_always_allow`], [`trust_project`],
//! [`revoke_trust`]) edits one file in place with `toml_edit`, so comments, order and
//! formatting of everything it does not touch stay byte-for-byte. Writes go to the `--config`
//! file or the user config, never to a project file: `import` and `sync` edit
//! [`Config::writable_path`], Always allow edits the file that holds the server's table
//! ([`Config::remember_file`]; it is not offered for a server whose table is a project's), and
//! `formwork trust` (with or without `--revoke`) edits the user config. The file is replaced
//! atomically (a temporary file created exclusively beside the real file, with its mode,
//! fsynced, renamed over it); a symlinked config is written through, the link kept. A file
//! formwork creates is `0600`, in directories created `0700`.
//!
//! What the settings decide lives in [`crate::policy`].

mod builtin;
mod edit;
mod error;
mod import;
mod layers;
mod load;
mod oauth;
mod providers;
mod types;

use std::path::{Path, PathBuf};

pub use builtin::{BUILTIN_SERVERS, BuiltinServer, builtin_server};
pub use edit::{
    RememberOutcome, SyncAction, SyncChange, SyncReport, TrustReport, remember_always_allow,
    remember_protocol_version, revoke_trust, sync, trust_project,
};
pub(crate) use edit::{child_table, set_value, write_atomically};
pub(crate) use error::dotted;
pub use error::{ConfigError, Invalid, NO_FILE};
pub use import::{ImportReport, ImportedServer, SkippedServer, import};
pub use layers::{ConfigLocations, find_project_file, user_config_path};
pub use load::{MAX_TIMEOUT_SECS, UnknownProtocolVersion, parse_protocol_version};
pub use providers::{
    BUILTIN_MODEL_PROVIDERS, DEFAULT_TOOL_OUTPUT_TOKEN_LIMIT, MAX_PROVIDER_RETRIES,
    ModelChoiceError,
};
pub(crate) use types::read_variable;
pub use types::{
    ApprovalMode, ApprovalPolicy, CodexConfig, Config, ConfigSource, DEFAULT_MAX_PENDING_FORMS,
    Features, FormsConfig, GranularApproval, IdentityProviderConfig, Layer,
    MAX_PENDING_FORMS_LIMIT, ModelChoice, ModelProvider, OAuthConfig, Runtime, SensitiveFields,
    ServerConfig, SourceStatus, StoreConfig, ToolConfig, Transport, TrustLevel, VariableUnset,
    WireApi,
};

/// The name of every configuration file: the user config's and a project's.
pub const DEFAULT_CONFIG_FILE: &str = "formwork.toml";

impl Config {
    /// The embedded default used when there is no file: policy `on-request`, no auto-deny,
    /// every feature off, and only the built-in servers (whose tools default to `approve`).
    pub fn embedded() -> Config {
        load::embedded()
    }

    /// Parses the text of one file by itself, over the embedded default (no user config, no
    /// project). `path` names the file in errors and, as an explicit file, in
    /// [`Config::sources`].
    pub fn from_toml(text: &str, path: Option<&Path>) -> Result<Config, ConfigError> {
        load::parse(text, path)
    }

    /// Reads and parses one file by itself, as [`Config::from_toml`] does.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        load::parse(&text, Some(path))
    }

    /// The layered configuration of a command: the user config, then the `--config` file or
    /// a trusted project's file (see the [module documentation](self)). An untrusted
    /// project's file is not read; it is listed in [`Config::sources`] with
    /// [`SourceStatus::NotTrusted`] (or [`SourceStatus::NoUserConfig`] where there is no user
    /// config to trust it in), whose [`ConfigSource::skipped_notice`] is the line a command
    /// prints.
    pub fn load_layered(locations: &ConfigLocations) -> Result<Config, ConfigError> {
        layers::load(locations)
    }

    /// The same files read again, with the same layers and trust decisions (after a write).
    pub fn reload(&self) -> Result<Config, ConfigError> {
        layers::reload(self)
    }

    /// The applied file of the highest layer, if any applied.
    pub fn top_file(&self) -> Option<&Path> {
        self.applied_files().last().copied()
    }

    /// The applied files for messages: `a.toml`, `a.toml and b.toml`, or the built-in default.
    pub fn describe_files(&self) -> String {
        let files: Vec<String> = self
            .applied_files()
            .iter()
            .map(|file| file.display().to_string())
            .collect();
        if files.is_empty() {
            "the built-in default config (no formwork.toml)".to_owned()
        } else {
            files.join(" and ")
        }
    }

    fn applied_files(&self) -> Vec<&Path> {
        self.sources
            .iter()
            .filter(|source| source.applied())
            .filter_map(|source| source.file.as_deref())
            .collect()
    }

    /// The file `config import` and `config sync` edit: the `--config` file, else the user
    /// config (created when missing). `None` when there is neither.
    pub fn writable_path(&self) -> Option<&Path> {
        let named = |layer: Layer| {
            self.sources
                .iter()
                .find(|source| source.layer == layer)
                .and_then(|source| source.file.as_deref())
        };
        named(Layer::Explicit).or_else(|| named(Layer::User))
    }

    /// The file Always allow for `server` writes to: the one holding the server's table when
    /// that is the user config or the `--config` file; for a built-in server no file names,
    /// [`Config::writable_path`]. `None` when the table is a project's (formwork does not
    /// write project files), or the server is not configured.
    pub fn remember_file(&self, server: &str) -> Option<PathBuf> {
        let server = self.server(server)?;
        match &server.file {
            None => self.writable_path().map(Path::to_path_buf),
            Some(file) => self
                .sources
                .iter()
                .any(|source| {
                    source.layer != Layer::Project
                        && source.applied()
                        && source.file.as_ref() == Some(file)
                })
                .then(|| file.clone()),
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
