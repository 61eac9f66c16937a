//! Turns the text of one `formwork.toml` into a [`FileConfig`] (what that file sets), or into
//! a [`ConfigError`] that names the file, the line and column, and the dotted key. Layering
//! files into one [`Config`] is `super::layers`.
//!
//! Strictness follows one rule: a key that could change what a plugin may do, or how it is
//! reached, is never ignored. So every key inside `[mcp_servers.<name>]`, its `tools` and the
//! granular policy must be one formwork implements, or a Codex key that is harmless to skip;
//! anything else (a typo included) is an error; `[model_providers.<id>]` is read the same way
//! (`super::providers`), since it decides where the person's messages go. Only at the top
//! level and in `[features]`, where Codex itself has many settings that mean nothing to
//! formwork (`sandbox_mode`, `profiles`, ...), are Codex's keys accepted and listed in
//! [`Config::ignored_keys`].

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::Duration;

use indexmap::IndexMap;
use rmcp::model::ProtocolVersion;
use serde::Deserialize;
use toml_edit::{Document, TableLike};

use super::builtin::builtin_server;
use super::error::{ConfigError, dotted, key_segment};
use super::oauth::{build_oauth, check_resource};
use super::providers::{self, RawProvider};
use crate::oauth_choices::CredentialsStoreMode;
use crate::store_url::StoreUrl;

use super::types::{
    ApprovalMode, ApprovalPolicy, Config, MAX_PENDING_FORMS_LIMIT, ModelProvider, Runtime,
    SensitiveFields, ServerConfig, ToolConfig, Transport, TrustLevel,
};

/// Top-level keys formwork reads.
const TOP_LEVEL_KEYS: &[&str] = &[
    "approval_policy",
    "codex",
    "elicitations_auto_deny",
    "features",
    "forms",
    "mcp_oauth_callback_port",
    "mcp_oauth_credentials_store",
    "mcp_servers",
    "model",
    "model_provider",
    "model_providers",
    "projects",
    "runtime",
    "store",
    "tool_output_token_limit",
];

/// The longest `startup_timeout_sec` or `tool_timeout_sec` accepted, in seconds: one day.
pub const MAX_TIMEOUT_SECS: u64 = 86_400;

/// Top-level keys of Codex's `config.toml` that formwork accepts and ignores, so a Codex
/// configuration can be used as a starting point.
const CODEX_TOP_LEVEL_KEYS: &[&str] = &[
    "agents",
    "analytics",
    "approvals_reviewer",
    "apps",
    "chatgpt_base_url",
    "check_for_update_on_startup",
    "cli_auth_credentials_store",
    "compact_prompt",
    "default_permissions",
    "developer_instructions",
    "disable_paste_burst",
    "experimental_compact_prompt_file",
    "experimental_instructions_file",
    "experimental_use_freeform_apply_patch",
    "experimental_use_rmcp_client",
    "experimental_use_unified_exec_tool",
    "feedback",
    "file_opener",
    "forced_chatgpt_workspace_id",
    "forced_login_method",
    "ghost_snapshot",
    "hide_agent_reasoning",
    "history",
    "include_apply_patch_tool",
    "instructions",
    "log_dir",
    "memories",
    "model_auto_compact_token_limit",
    "model_context_window",
    "model_max_output_tokens",
    "model_reasoning_effort",
    "model_reasoning_summary",
    "model_supports_reasoning_summaries",
    "model_verbosity",
    "notice",
    "notify",
    "oss_provider",
    "otel",
    "permissions",
    "personality",
    "plan_mode_reasoning_effort",
    "preferred_auth_method",
    "profile",
    "profiles",
    "project_doc_fallback_filenames",
    "project_doc_max_bytes",
    "project_root_markers",
    "review_model",
    "sandbox_mode",
    "sandbox_workspace_write",
    "service_tier",
    "shell_environment_policy",
    "show_raw_agent_reasoning",
    "skills",
    "sqlite_home",
    "suppress_unstable_features_warning",
    "tools",
    "tui",
    "web_search",
    "windows",
    "windows_wsl_setup_acknowledged",
];

/// What one file sets, before layering: `None` (or an empty map) for what it leaves out.
#[derive(Debug)]
pub(crate) struct FileConfig {
    pub(crate) approval_policy: Option<ApprovalPolicy>,
    pub(crate) elicitations_auto_deny: Option<bool>,
    pub(crate) tool_call_mcp_elicitation: Option<bool>,
    pub(crate) openai_elicitation: Option<bool>,
    /// `[forms] max_pending`, checked.
    pub(crate) max_pending_forms: Option<usize>,
    /// `[forms] sensitive_fields`.
    pub(crate) sensitive_fields: Option<SensitiveFields>,
    /// The file's own server tables, in file order (no built-in defaults).
    pub(crate) mcp_servers: IndexMap<String, ServerConfig>,
    pub(crate) ignored_keys: Vec<String>,
    /// `[projects."<dir>"]`, validated; only the user config's counts.
    pub(crate) projects: Option<IndexMap<PathBuf, Option<TrustLevel>>>,
    pub(crate) mcp_oauth_credentials_store: Option<CredentialsStoreMode>,
    /// `mcp_oauth_callback_port`, checked.
    pub(crate) mcp_oauth_callback_port: Option<u16>,
    pub(crate) model: Option<String>,
    pub(crate) model_provider: Option<String>,
    /// The file's own `[model_providers.<id>]` tables, checked, in file order.
    pub(crate) model_providers: IndexMap<String, ModelProvider>,
    /// `tool_output_token_limit`, checked.
    pub(crate) tool_output_token_limit: Option<u64>,
    pub(crate) runtime: Option<Runtime>,
    /// `[codex] command`.
    pub(crate) codex_command: Option<String>,
    /// `[codex] home`, made absolute against the file's directory.
    pub(crate) codex_home: Option<PathBuf>,
    /// `[store] url`, parsed; a SQLite path made absolute against the file's directory.
    pub(crate) store_url: Option<StoreUrl>,
    /// `[store] lease_seconds`.
    pub(crate) store_lease: Option<std::time::Duration>,
}

/// Parses one file by itself: its settings over the embedded default, as if it were the only
/// layer. `path` names it in errors, in [`Config::sources`] (as an explicit file) and in each
/// server's [`ServerConfig::file`].
pub(crate) fn parse(text: &str, path: Option<&Path>) -> Result<Config, ConfigError> {
    let file = parse_file(text, path)?;
    let sources = path
        .map(super::layers::explicit_source)
        .into_iter()
        .collect();
    Ok(super::layers::assemble(
        sources,
        vec![(super::Layer::Explicit, file)],
    ))
}

/// Parses the text of one file.
pub(crate) fn parse_file(text: &str, path: Option<&Path>) -> Result<FileConfig, ConfigError> {
    let doc = Document::parse(text)
        .map_err(|err| ConfigError::invalid(path, text, err.span(), "", err.message()))?;
    let ctx = Ctx {
        text,
        path,
        doc: &doc,
    };
    let mut ignored_keys = Vec::new();

    for (key, _) in doc.as_table().iter() {
        if TOP_LEVEL_KEYS.contains(&key) {
            continue;
        }
        if CODEX_TOP_LEVEL_KEYS.contains(&key) {
            ignored_keys.push(key_segment(key));
            continue;
        }
        return Err(ctx.error(
            &[key],
            format!(
                "unknown key; formwork reads {}, and accepts Codex's other settings \
                 (sandbox_mode, profiles, ...) without using them",
                TOP_LEVEL_KEYS.join(", ")
            ),
        ));
    }

    let deserializer = toml::Deserializer::parse(text)
        .map_err(|err| ConfigError::invalid(path, text, err.span(), "", err.message()))?;
    let raw: RawConfig = serde_path_to_error::deserialize(deserializer).map_err(|err| {
        let key = dotted_path(err.path());
        let inner = err.into_inner();
        ConfigError::invalid(path, text, inner.span(), key, inner.message())
    })?;

    let features = read_features(&ctx, &raw.features, &mut ignored_keys)?;
    if raw.model.as_deref() == Some("") {
        return Err(ctx.error(&["model"], "the model's name is empty"));
    }
    let mut model_providers = IndexMap::new();
    for (id, provider) in raw.model_providers {
        let provider = providers::build_provider(&ctx, &id, provider, &mut ignored_keys)?;
        model_providers.insert(id, provider);
    }
    let tool_output_token_limit = providers::token_limit(&ctx, raw.tool_output_token_limit)?;
    let mut mcp_servers = IndexMap::new();
    for (name, server) in raw.mcp_servers {
        let server = build_server(&ctx, &name, server, &mut ignored_keys)?;
        mcp_servers.insert(name, server);
    }
    let projects = raw
        .projects
        .map(|projects| read_projects(&ctx, projects))
        .transpose()?;
    let max_pending_forms = match raw.forms.max_pending {
        None => None,
        Some(count) => match usize::try_from(count) {
            Ok(count @ 1..=MAX_PENDING_FORMS_LIMIT) => Some(count),
            _ => {
                return Err(ctx.error(
                    &["forms", "max_pending"],
                    format!("expected a whole number from 1 to {MAX_PENDING_FORMS_LIMIT}"),
                ));
            }
        },
    };

    let mcp_oauth_callback_port = match raw.mcp_oauth_callback_port {
        None => None,
        Some(port) => match u16::try_from(port) {
            Ok(port @ 1..) => Some(port),
            _ => {
                return Err(ctx.error(
                    &["mcp_oauth_callback_port"],
                    "expected a port from 1 to 65535 (leave it out for a free port each time)",
                ));
            }
        },
    };

    if raw.codex.command.as_deref().is_some_and(str::is_empty) {
        return Err(ctx.error(&["codex", "command"], "the command is empty"));
    }
    if raw
        .codex
        .home
        .as_ref()
        .is_some_and(|home| home.as_os_str().is_empty())
    {
        return Err(ctx.error(&["codex", "home"], "the directory is empty"));
    }
    let codex_home = raw
        .codex
        .home
        .map(|home| match path.and_then(Path::parent) {
            Some(dir) if home.is_relative() => dir.join(home),
            _ => home,
        });

    let store_url = match raw.store.url {
        None => None,
        Some(text) => match StoreUrl::parse(&text) {
            Ok(StoreUrl::Sqlite(database)) => {
                Some(StoreUrl::Sqlite(match path.and_then(Path::parent) {
                    Some(dir) if database.is_relative() => dir.join(database),
                    _ => database,
                }))
            }
            Ok(url) => Some(url),
            Err(error) => return Err(ctx.error(&["store", "url"], error.to_string())),
        },
    };
    let store_lease = match raw.store.lease_seconds {
        None => None,
        Some(seconds @ 1..=3600) => Some(std::time::Duration::from_secs(seconds)),
        Some(seconds) => {
            return Err(ctx.error(
                &["store", "lease_seconds"],
                format!("must be 1 to 3600 seconds, not {seconds}"),
            ));
        }
    };

    Ok(FileConfig {
        approval_policy: raw.approval_policy,
        elicitations_auto_deny: raw.elicitations_auto_deny,
        tool_call_mcp_elicitation: features.tool_call_mcp_elicitation,
        openai_elicitation: features.openai_elicitation,
        max_pending_forms,
        sensitive_fields: raw.forms.sensitive_fields,
        mcp_servers,
        ignored_keys,
        projects,
        mcp_oauth_credentials_store: raw.mcp_oauth_credentials_store,
        mcp_oauth_callback_port,
        model: raw.model,
        model_provider: raw.model_provider,
        model_providers,
        tool_output_token_limit,
        runtime: raw.runtime,
        codex_command: raw.codex.command,
        codex_home,
        store_url,
        store_lease,
    })
}

/// The embedded default: no file, on-request policy, built-in servers only.
pub(crate) fn embedded() -> Config {
    super::layers::assemble(Vec::new(), Vec::new())
}

pub(crate) fn builtin_default(args: &[&str]) -> ServerConfig {
    ServerConfig {
        transport: Transport::Builtin {
            args: args.iter().map(|arg| (*arg).to_owned()).collect(),
        },
        enabled: true,
        builtin: true,
        default_tools_approval_mode: None,
        tools: IndexMap::new(),
        enabled_tools: None,
        disabled_tools: Vec::new(),
        startup_timeout: None,
        tool_timeout: None,
        protocol_version: None,
        file: None,
    }
}

#[derive(Deserialize)]
struct RawConfig {
    approval_policy: Option<ApprovalPolicy>,
    elicitations_auto_deny: Option<bool>,
    #[serde(default)]
    features: IndexMap<String, toml::Value>,
    #[serde(default)]
    mcp_servers: IndexMap<String, RawServer>,
    projects: Option<IndexMap<String, RawProject>>,
    #[serde(default)]
    forms: RawForms,
    mcp_oauth_credentials_store: Option<CredentialsStoreMode>,
    mcp_oauth_callback_port: Option<i64>,
    model: Option<String>,
    model_provider: Option<String>,
    #[serde(default)]
    model_providers: IndexMap<String, RawProvider>,
    tool_output_token_limit: Option<i64>,
    runtime: Option<Runtime>,
    #[serde(default)]
    codex: RawCodex,
    #[serde(default)]
    store: RawStore,
}

/// The `[store]` table.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawStore {
    url: Option<String>,
    lease_seconds: Option<u64>,
}

/// The `[codex]` table.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawCodex {
    command: Option<String>,
    home: Option<PathBuf>,
}

/// The `[forms]` table.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawForms {
    max_pending: Option<i64>,
    sensitive_fields: Option<SensitiveFields>,
}

/// One `[projects."<dir>"]` table.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawProject {
    trust_level: Option<TrustLevel>,
}

/// A server table as written. Codex keys that formwork skips are typed as any value so they
/// pass; everything else unknown is rejected by serde.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawServer {
    command: Option<String>,
    args: Option<Vec<String>>,
    env: Option<IndexMap<String, String>>,
    cwd: Option<std::path::PathBuf>,
    url: Option<String>,
    http_headers: Option<IndexMap<String, String>>,
    env_http_headers: Option<IndexMap<String, String>>,
    bearer_token_env_var: Option<String>,
    scopes: Option<Vec<String>>,
    oauth_resource: Option<String>,
    oauth: Option<RawOAuth>,
    share_session: Option<bool>,
    enabled: Option<bool>,
    enabled_tools: Option<Vec<String>>,
    disabled_tools: Option<Vec<String>>,
    startup_timeout_sec: Option<f64>,
    tool_timeout_sec: Option<f64>,
    default_tools_approval_mode: Option<ApprovalMode>,
    protocol_version: Option<String>,
    #[serde(default)]
    tools: IndexMap<String, ToolConfig>,
    env_vars: Option<Vec<String>>,
    // Codex keys formwork accepts and does not use: startup bookkeeping and parallelism that
    // formwork does not have.
    startup_timeout_ms: Option<toml::Value>,
    required: Option<toml::Value>,
    supports_parallel_tool_calls: Option<toml::Value>,
}

/// `[mcp_servers.<name>.oauth]` as written (formwork's own table, not Codex's).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawOAuth {
    pub(super) client_id: Option<String>,
    pub(super) client_secret_env_var: Option<String>,
    pub(super) client_metadata_url: Option<String>,
    pub(super) issuer: Option<String>,
    pub(super) grant: Option<String>,
    pub(super) private_key_file: Option<PathBuf>,
    pub(super) signing_algorithm: Option<String>,
    pub(super) idp_token_endpoint: Option<String>,
    pub(super) idp_client_id: Option<String>,
    pub(super) idp_client_secret_env_var: Option<String>,
    pub(super) id_token_env_var: Option<String>,
}

pub(super) struct Ctx<'a> {
    text: &'a str,
    pub(super) path: Option<&'a Path>,
    doc: &'a Document<&'a str>,
}

impl Ctx<'_> {
    /// An error at a key path, positioned at that key in the file (or the nearest table that
    /// exists).
    pub(super) fn error(&self, keys: &[&str], message: impl Into<String>) -> ConfigError {
        ConfigError::invalid(
            self.path,
            self.text,
            locate(self.doc.as_table(), keys),
            dotted(keys.iter().copied()),
            message,
        )
    }
}

/// The span of the last key of `keys` in the document, or of the deepest key found.
fn locate(root: &dyn TableLike, keys: &[&str]) -> Option<Range<usize>> {
    let mut table = root;
    let mut found = None;
    for key in keys {
        let Some((key, item)) = table.get_key_value(key) else {
            break;
        };
        found = key.span().or_else(|| item.span()).or(found);
        match item.as_table_like() {
            Some(next) => table = next,
            None => break,
        }
    }
    found
}

/// The `[features]` flags one file sets.
struct FileFeatures {
    tool_call_mcp_elicitation: Option<bool>,
    openai_elicitation: Option<bool>,
}

/// `features.tool_call_mcp_elicitation` and `features.openai_elicitation`, when the file sets
/// them; other features are listed as ignored.
fn read_features(
    ctx: &Ctx<'_>,
    raw: &IndexMap<String, toml::Value>,
    ignored_keys: &mut Vec<String>,
) -> Result<FileFeatures, ConfigError> {
    let mut features = FileFeatures {
        tool_call_mcp_elicitation: None,
        openai_elicitation: None,
    };
    for (name, value) in raw {
        let slot = match name.as_str() {
            "tool_call_mcp_elicitation" => &mut features.tool_call_mcp_elicitation,
            "openai_elicitation" => &mut features.openai_elicitation,
            _ => {
                ignored_keys.push(dotted(["features", name.as_str()]));
                continue;
            }
        };
        let value = value.as_bool().ok_or_else(|| {
            ctx.error(
                &["features", name],
                format!("expected true or false, found {}", value.type_str()),
            )
        })?;
        *slot = Some(value);
    }
    Ok(features)
}

/// `[projects]`: every key an absolute directory path. Which entry counts is decided by
/// `super::layers`.
fn read_projects(
    ctx: &Ctx<'_>,
    raw: IndexMap<String, RawProject>,
) -> Result<IndexMap<PathBuf, Option<TrustLevel>>, ConfigError> {
    let mut projects = IndexMap::new();
    for (dir, project) in raw {
        if !Path::new(&dir).is_absolute() {
            return Err(ctx.error(
                &["projects", &dir],
                "a project is named by the absolute path of its directory",
            ));
        }
        projects.insert(PathBuf::from(dir), project.trust_level);
    }
    Ok(projects)
}

/// A timeout in seconds as a [`Duration`]: positive, finite and at most
/// [`MAX_TIMEOUT_SECS`].
fn timeout(
    ctx: &Ctx<'_>,
    keys: &[&str],
    seconds: Option<f64>,
) -> Result<Option<Duration>, ConfigError> {
    let Some(seconds) = seconds else {
        return Ok(None);
    };
    // The comparisons also turn away NaN and the infinities.
    let in_range = seconds > 0.0 && seconds <= MAX_TIMEOUT_SECS as f64;
    let duration = if in_range {
        Duration::try_from_secs_f64(seconds).ok()
    } else {
        None
    };
    match duration {
        Some(duration) => Ok(Some(duration)),
        None => Err(ctx.error(
            keys,
            format!("expected a positive number of seconds, at most {MAX_TIMEOUT_SECS} (one day)"),
        )),
    }
}

fn build_server(
    ctx: &Ctx<'_>,
    name: &str,
    raw: RawServer,
    ignored_keys: &mut Vec<String>,
) -> Result<ServerConfig, ConfigError> {
    let at = |key: &'static str| -> Vec<&str> {
        if key.is_empty() {
            vec!["mcp_servers", name]
        } else {
            vec!["mcp_servers", name, key]
        }
    };
    if !valid_server_name(name) {
        return Err(ctx.error(
            &at(""),
            "a server name may only use letters, digits, '_' and '-'",
        ));
    }

    let skipped = [
        ("startup_timeout_ms", raw.startup_timeout_ms.is_some()),
        ("required", raw.required.is_some()),
        (
            "supports_parallel_tool_calls",
            raw.supports_parallel_tool_calls.is_some(),
        ),
    ];
    for (key, present) in skipped {
        if present {
            ignored_keys.push(dotted(at(key)));
        }
    }

    let startup_timeout = timeout(ctx, &at("startup_timeout_sec"), raw.startup_timeout_sec)?;
    let tool_timeout = timeout(ctx, &at("tool_timeout_sec"), raw.tool_timeout_sec)?;
    let protocol_version = match raw.protocol_version.as_deref() {
        None => None,
        Some(text) => parse_protocol_version(text)
            .map_err(|reason| ctx.error(&at("protocol_version"), reason.to_string()))?,
    };

    let builtin = builtin_server(name);
    let http_keys = http_keys(&raw);
    let transport = match (raw.command, raw.url) {
        (Some(_), Some(_)) => {
            return Err(ctx.error(
                &at("url"),
                "a server has either `command` (stdio) or `url` (Streamable HTTP), not both",
            ));
        }
        (Some(command), None) => {
            for (key, present) in http_keys {
                if present {
                    return Err(ctx.error(
                        &at(key),
                        "only a `url` (Streamable HTTP) server takes this key",
                    ));
                }
            }
            if command.trim().is_empty() {
                return Err(ctx.error(&at("command"), "the command is empty"));
            }
            let env_vars = raw.env_vars.unwrap_or_default();
            if let Some(bad) = env_vars.iter().find(|name| !valid_variable_name(name)) {
                return Err(ctx.error(
                    &at("env_vars"),
                    format!("`{bad}` is not a variable name (letters, digits and '_', not starting with a digit)"),
                ));
            }
            Transport::Stdio {
                command,
                args: raw.args.unwrap_or_default(),
                env: raw.env.unwrap_or_default(),
                env_vars,
                cwd: raw.cwd,
            }
        }
        (None, Some(url)) => {
            for (key, present) in [
                ("args", raw.args.is_some()),
                ("env", raw.env.is_some()),
                ("env_vars", raw.env_vars.is_some()),
                ("cwd", raw.cwd.is_some()),
            ] {
                if present {
                    return Err(
                        ctx.error(&at(key), "only a `command` (stdio) server takes this key")
                    );
                }
            }
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(ctx.error(&at("url"), "expected an http:// or https:// URL"));
            }
            let http_headers = raw.http_headers.unwrap_or_default();
            if raw.bearer_token_env_var.is_some()
                && http_headers
                    .keys()
                    .any(|name| name.eq_ignore_ascii_case("authorization"))
            {
                return Err(ctx.error(
                    &at("bearer_token_env_var"),
                    "`http_headers` already has an Authorization header; keep one of the two",
                ));
            }
            let env_http_headers = raw.env_http_headers.unwrap_or_default();
            for header in env_http_headers.keys() {
                let keys = ["mcp_servers", name, "env_http_headers", header.as_str()];
                if http_headers
                    .keys()
                    .any(|other| other.eq_ignore_ascii_case(header))
                {
                    return Err(ctx.error(
                        &keys,
                        "`http_headers` already has this header; keep one of the two",
                    ));
                }
                if raw.bearer_token_env_var.is_some()
                    && header.eq_ignore_ascii_case("authorization")
                {
                    return Err(ctx.error(
                        &keys,
                        "`bearer_token_env_var` already sends an Authorization header; keep one \
                         of the two",
                    ));
                }
            }
            if let Some(resource) = &raw.oauth_resource {
                check_resource(resource)
                    .map_err(|reason| ctx.error(&at("oauth_resource"), reason.to_string()))?;
            }
            let oauth = match raw.oauth {
                Some(oauth) => Box::new(build_oauth(ctx, name, oauth)?),
                None => Box::default(),
            };
            Transport::StreamableHttp {
                url,
                http_headers,
                env_http_headers,
                bearer_token_env_var: raw.bearer_token_env_var,
                scopes: raw.scopes.unwrap_or_default(),
                oauth_resource: raw.oauth_resource,
                oauth,
                share_session: raw.share_session.unwrap_or(false),
            }
        }
        (None, None) => match builtin {
            Some(builtin) => {
                for (key, present) in [
                    ("args", raw.args.is_some()),
                    ("env", raw.env.is_some()),
                    ("cwd", raw.cwd.is_some()),
                ]
                .into_iter()
                .chain(http_keys)
                {
                    if present {
                        return Err(ctx.error(
                            &at(key),
                            "a built-in server without `command` takes no launch keys; \
                             run `formwork config sync` to write them out in full",
                        ));
                    }
                }
                Transport::Builtin {
                    args: builtin.args.iter().map(|arg| (*arg).to_owned()).collect(),
                }
            }
            None => {
                return Err(ctx.error(
                    &at(""),
                    "a server needs `command` (stdio) or `url` (Streamable HTTP)",
                ));
            }
        },
    };

    Ok(ServerConfig {
        transport,
        enabled: raw.enabled.unwrap_or(true),
        builtin: builtin.is_some(),
        default_tools_approval_mode: raw.default_tools_approval_mode,
        tools: raw.tools,
        enabled_tools: raw.enabled_tools,
        disabled_tools: raw.disabled_tools.unwrap_or_default(),
        startup_timeout,
        tool_timeout,
        protocol_version,
        file: ctx.path.map(Path::to_path_buf),
    })
}

/// The keys only a `url` server takes, and whether the table has each.
fn http_keys(raw: &RawServer) -> [(&'static str, bool); 7] {
    [
        ("http_headers", raw.http_headers.is_some()),
        ("env_http_headers", raw.env_http_headers.is_some()),
        ("bearer_token_env_var", raw.bearer_token_env_var.is_some()),
        ("scopes", raw.scopes.is_some()),
        ("oauth_resource", raw.oauth_resource.is_some()),
        ("oauth", raw.oauth.is_some()),
        ("share_session", raw.share_session.is_some()),
    ]
}

/// Reads a `protocol_version`: `"auto"` (`None`: 2026-07-28 when the plugin offers it, else the
/// handshake) or a version formwork knows.
pub fn parse_protocol_version(
    text: &str,
) -> Result<Option<ProtocolVersion>, UnknownProtocolVersion> {
    if text == "auto" {
        return Ok(None);
    }
    let known = ProtocolVersion::KNOWN_VERSIONS;
    match known.iter().find(|version| version.as_str() == text) {
        Some(version) => Ok(Some(version.clone())),
        None => Err(UnknownProtocolVersion {
            text: text.to_owned(),
        }),
    }
}

/// A `protocol_version` that is neither `"auto"` nor a version formwork knows.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "`{text}` is not a protocol version formwork knows; use \"auto\" or one of {}",
    known_versions()
)]
pub struct UnknownProtocolVersion {
    /// The value given.
    pub text: String,
}

/// The versions formwork knows, for a message.
fn known_versions() -> String {
    let names: Vec<&str> = ProtocolVersion::KNOWN_VERSIONS
        .iter()
        .map(ProtocolVersion::as_str)
        .collect();
    names.join(", ")
}

/// Codex's rule for server names.
pub(crate) fn valid_server_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// A name `env_vars` may pass through: what a shell would take as one.
fn valid_variable_name(name: &str) -> bool {
    name.chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// serde_path_to_error's path as TOML would write it.
fn dotted_path(path: &serde_path_to_error::Path) -> String {
    use serde_path_to_error::Segment;
    let mut out = String::new();
    for segment in path.iter() {
        match segment {
            Segment::Seq { index } => out.push_str(&format!("[{index}]")),
            Segment::Map { key } | Segment::Enum { variant: key } => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(&key_segment(key));
            }
            Segment::Unknown => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push('?');
            }
        }
    }
    out
}
