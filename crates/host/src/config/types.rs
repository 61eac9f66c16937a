//! The configuration as the rest of formwork sees it, after loading and validation. The key
//! names and values follow Codex's `config.toml`, so a `[mcp_servers.<name>]` table can be
//! copied between the two.

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use indexmap::IndexMap;
use serde::de::{self, MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};

use crate::oauth_choices::{CredentialsStoreMode, Grant};
use crate::store_url::StoreUrl;

/// The configuration in force: the layers that applied, merged (or the embedded default when
/// no file applied). See the [module documentation](crate::config) for the layering rules.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// Every file considered, lowest layer first, with whether it applied and why. Empty for
    /// the embedded default and for text that did not come from a file.
    pub sources: Vec<ConfigSource>,
    /// `approval_policy`: which prompts may reach the person. Default `on-request`.
    pub approval_policy: ApprovalPolicy,
    /// `elicitations_auto_deny`: decline every plugin form before it reaches the person.
    /// Default `false`.
    pub elicitations_auto_deny: bool,
    /// `[features]`.
    pub features: Features,
    /// `[forms]`.
    pub forms: FormsConfig,
    /// `[mcp_servers.<name>]`: the lower layer's servers in its file order (a table an upper
    /// layer replaces keeps its place), then the upper layer's new ones, then every built-in
    /// server no layer mentions.
    pub mcp_servers: IndexMap<String, ServerConfig>,
    /// `mcp_oauth_credentials_store`: where the OAuth tokens of remote servers are kept.
    /// Default `auto`.
    pub mcp_oauth_credentials_store: CredentialsStoreMode,
    /// `mcp_oauth_callback_port`: the port on 127.0.0.1 that receives the browser's redirect
    /// after a sign-in; `None` (the default) picks a free one each time.
    pub mcp_oauth_callback_port: Option<u16>,
    /// `model`: the name of the model the person's messages go to, as its provider knows it;
    /// `None`: the built-in provider's default (see [`Config::model_choice`]).
    pub model: Option<String>,
    /// `model_provider`: the id of the provider those messages go to: `openai` or `oss` (built
    /// in), or a `[model_providers.<id>]` key; `None`: `openai`, when a model is named at all.
    pub model_provider: Option<String>,
    /// `[model_providers.<id>]`: the providers the files add, checked, in file order (an
    /// upper layer's table replaces a lower one of the same id whole, in its place). The
    /// built-in providers are not in it: no file may name them.
    pub model_providers: IndexMap<String, ModelProvider>,
    /// `tool_output_token_limit`: how much of one tool's output the model sees, in tokens
    /// (counted as 4 bytes each; see [`ModelChoice::tool_output_max_bytes`]). Default
    /// [`DEFAULT_TOOL_OUTPUT_TOKEN_LIMIT`](crate::config::DEFAULT_TOOL_OUTPUT_TOKEN_LIMIT).
    pub tool_output_token_limit: u64,
    /// `runtime`: what answers the person's messages. Default [`Runtime::Formwork`].
    pub runtime: Runtime,
    /// `[codex]`: how formwork runs Codex when `runtime = "codex"`.
    pub codex: CodexConfig,
    /// `[store]`: where sessions and transcripts are kept.
    pub store: StoreConfig,
    /// Dotted keys that Codex knows and formwork accepts without using, in file order, lowest
    /// layer first (a key two layers set is listed once).
    pub ignored_keys: Vec<String>,
}

/// `runtime`: who runs the conversation a person's message starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Runtime {
    /// `"formwork"`, the default: formwork's own model loop talks to `model_provider`'s
    /// `model` and is the MCP client of the plugins.
    #[default]
    Formwork,
    /// `"codex"`: `codex app-server` talks to the model and is the MCP client of the plugins;
    /// formwork writes its configuration, shows its forms and approvals, and answers them.
    Codex,
}

impl Runtime {
    /// The name used in the file and on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Runtime::Formwork => "formwork",
            Runtime::Codex => "codex",
        }
    }

    /// Parses the name used in the file and on the command line.
    pub fn parse(name: &str) -> Option<Runtime> {
        match name {
            "formwork" => Some(Runtime::Formwork),
            "codex" => Some(Runtime::Codex),
            _ => None,
        }
    }
}

impl fmt::Display for Runtime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `[codex]`: the Codex formwork runs under `runtime = "codex"`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CodexConfig {
    /// `command`: the `codex` program; `None` finds `codex` on `PATH`.
    pub command: Option<String>,
    /// `home`: the `CODEX_HOME` formwork runs Codex with, and whose `config.toml` it writes;
    /// `None`: `codex` in formwork's data directory, so a person's `~/.codex` is never
    /// touched unless named here. A relative path is relative to the file that names it.
    pub home: Option<PathBuf>,
}

/// `[store]`: where formwork keeps sessions, transcripts, forms and approvals.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StoreConfig {
    /// `url`: a SQLite file's path (relative to the file that names it) or a
    /// `postgres://USER@HOST:PORT/DATABASE` URL; `None`: `formwork.db` in the data directory.
    /// `--store` on the command line wins over it.
    pub url: Option<StoreUrl>,
    /// `lease_seconds` (1 to 3600): on PostgreSQL, how long after a replica stops renewing
    /// them another may take its running calls over; `None`: 10 seconds.
    pub lease: Option<std::time::Duration>,
}

/// Which layer a configuration file is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Layer {
    /// `$XDG_CONFIG_HOME/formwork/formwork.toml` (else `~/.config/formwork/formwork.toml`):
    /// always applies, and is the only file whose `[projects]` table counts.
    User,
    /// The `formwork.toml` found walking up from the working directory: applies on top of the
    /// user config only when its directory is trusted.
    Project,
    /// The file named with `--config`: trusted, applies on top of the user config in place of
    /// any project file.
    Explicit,
}

/// What became of one configuration file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceStatus {
    /// The user config or the `--config` file was read and applied.
    Applied,
    /// The user config does not exist (nothing to apply).
    Missing,
    /// The project's file was read and applied: the user config trusts its directory.
    Trusted,
    /// The project's file was not read: the user config does not trust its directory.
    NotTrusted,
    /// The project's file was not read: the user config marks its directory
    /// `trust_level = "untrusted"`.
    MarkedUntrusted,
    /// The project's file was not read: there is no user config (neither `XDG_CONFIG_HOME` nor
    /// `HOME` names a directory), so no trust can be recorded for it.
    NoUserConfig,
    /// No `formwork.toml` in the working directory or any directory above it.
    NotFound,
    /// The `formwork.toml` found walking up is the user config itself, which applied as such.
    UserConfig,
}

/// One configuration file considered when loading, and what became of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigSource {
    /// Its layer.
    pub layer: Layer,
    /// The file; `None` only for a project layer where no `formwork.toml` was found.
    pub file: Option<PathBuf>,
    /// For the project layer: the project directory (canonical) whose trust decided, or the
    /// directory the search started from when nothing was found.
    pub project: Option<PathBuf>,
    /// What became of it.
    pub status: SourceStatus,
}

impl ConfigSource {
    /// Whether the file's settings are part of the configuration.
    pub fn applied(&self) -> bool {
        matches!(self.status, SourceStatus::Applied | SourceStatus::Trusted)
    }

    /// Why it applied or not, in words.
    pub fn reason(&self) -> String {
        let project = self
            .project
            .as_deref()
            .map_or_else(String::new, |dir| dir.display().to_string());
        match (self.layer, self.status) {
            (Layer::User, SourceStatus::Missing) => {
                "the user config; there is no such file, so nothing of it applies".to_owned()
            }
            (Layer::User, _) => "the user config: it always applies".to_owned(),
            (Layer::Explicit, _) => "named with --config: it applies on top of the user config, \
                                     and no project formwork.toml is looked for"
                .to_owned(),
            (Layer::Project, SourceStatus::Trusted) => format!(
                "project {project} is trusted ({} = \"trusted\" in the user config)",
                super::error::dotted(["projects", project.as_str(), "trust_level"])
            ),
            (Layer::Project, SourceStatus::MarkedUntrusted) => format!(
                "not read: project {project} is marked trust_level = \"untrusted\" in the user \
                 config"
            ),
            (Layer::Project, SourceStatus::NotFound) => {
                format!("no formwork.toml in {project} or any directory above it")
            }
            (Layer::Project, SourceStatus::UserConfig) => {
                "this is the user config, which applies as such".to_owned()
            }
            (Layer::Project, SourceStatus::NoUserConfig) => {
                format!("not read: project {project} is not trusted; {NO_USER_CONFIG}")
            }
            (Layer::Project, _) => format!(
                "not read: project {project} is not trusted; run `formwork trust {}` to use it",
                shell_word(&project)
            ),
        }
    }

    /// The line to print on stderr when this file was skipped because its project is not
    /// trusted; `None` otherwise (a project marked untrusted is skipped without a word). It
    /// suggests `formwork trust` only where there is a user config to record the trust in.
    pub fn skipped_notice(&self) -> Option<String> {
        let file = self.file.as_deref().unwrap_or(Path::new("formwork.toml"));
        let project = self
            .project
            .as_deref()
            .map_or_else(String::new, |dir| dir.display().to_string());
        match self.status {
            SourceStatus::NotTrusted => Some(format!(
                "skipped {} (project {project} is not trusted); run `formwork trust {}` to use it",
                file.display(),
                shell_word(&project)
            )),
            SourceStatus::NoUserConfig => Some(format!(
                "skipped {} (project {project} is not trusted; {NO_USER_CONFIG})",
                file.display()
            )),
            _ => None,
        }
    }
}

impl Serialize for ConfigSource {
    /// `{"layer", "file", "applied", "reason"}`, as `formwork config check` prints it.
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut out = serializer.serialize_struct("ConfigSource", 4)?;
        out.serialize_field("layer", &self.layer)?;
        out.serialize_field(
            "file",
            &self.file.as_ref().map(|file| file.display().to_string()),
        )?;
        out.serialize_field("applied", &self.applied())?;
        out.serialize_field("reason", &self.reason())?;
        out.end()
    }
}

/// Why a project cannot be trusted where there is no user config.
const NO_USER_CONFIG: &str = "trust cannot be recorded: there is no user config, as neither \
                              XDG_CONFIG_HOME nor HOME names a directory";

/// A path as one shell word: as is when it only holds characters a shell leaves alone,
/// single-quoted otherwise.
fn shell_word(text: &str) -> String {
    let plain = !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+,:@%=".contains(c));
    if plain {
        text.to_owned()
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

/// `projects."<dir>".trust_level` in the user config.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TrustLevel {
    /// The project's `formwork.toml` applies.
    Trusted,
    /// The project's `formwork.toml` is never read.
    Untrusted,
}

/// `approval_policy`, with Codex's names: `"untrusted"`, `"on-request"`, `"never"`, or
/// `{ granular = { ... } }`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub enum ApprovalPolicy {
    /// `"untrusted"`.
    #[serde(rename = "untrusted")]
    Untrusted,
    /// `"on-request"`, the default.
    #[default]
    #[serde(rename = "on-request")]
    OnRequest,
    /// `"never"`: nothing is ever asked; plugin forms are declined and tool calls that need
    /// approval fail.
    #[serde(rename = "never")]
    Never,
    /// `{ granular = { ... } }`: one switch per kind of prompt.
    #[serde(rename = "granular")]
    Granular(GranularApproval),
}

/// The switches of a granular approval policy. `true` lets that kind of prompt reach the
/// person; `false` declines it without asking. Only `mcp_elicitations` matters to formwork:
/// the others belong to Codex's shell, rules, skills and permission prompts and are kept so a
/// Codex policy can be copied unchanged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GranularApproval {
    /// Shell command approvals (Codex); required, as in Codex.
    pub sandbox_approval: bool,
    /// Prompts from execpolicy rules (Codex); required, as in Codex.
    pub rules: bool,
    /// Skill script approvals (Codex); default `false`, as in Codex.
    #[serde(default)]
    pub skill_approval: bool,
    /// Prompts of the `request_permissions` tool (Codex); default `false`, as in Codex.
    #[serde(default)]
    pub request_permissions: bool,
    /// Plugin forms (MCP elicitations); required, as in Codex.
    pub mcp_elicitations: bool,
}

/// `default_tools_approval_mode` and `tools.<tool>.approval_mode`: when a tool call needs the
/// person's approval.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ApprovalMode {
    /// Decided by the tool's annotations (`destructiveHint`, `readOnlyHint`, `openWorldHint`).
    Auto,
    /// Always ask.
    Prompt,
    /// Ask unless the tool says `readOnlyHint: true`.
    Writes,
    /// Never ask.
    Approve,
}

impl ApprovalMode {
    /// The name used in the file.
    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalMode::Auto => "auto",
            ApprovalMode::Prompt => "prompt",
            ApprovalMode::Writes => "writes",
            ApprovalMode::Approve => "approve",
        }
    }

    /// Parses the name used in the file.
    pub fn parse(name: &str) -> Option<ApprovalMode> {
        match name {
            "auto" => Some(ApprovalMode::Auto),
            "prompt" => Some(ApprovalMode::Prompt),
            "writes" => Some(ApprovalMode::Writes),
            "approve" => Some(ApprovalMode::Approve),
            _ => None,
        }
    }
}

impl fmt::Display for ApprovalMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Display for ApprovalPolicy {
    /// The policy as it would be written in the file.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ApprovalPolicy::Untrusted => f.write_str("\"untrusted\""),
            ApprovalPolicy::OnRequest => f.write_str("\"on-request\""),
            ApprovalPolicy::Never => f.write_str("\"never\""),
            ApprovalPolicy::Granular(granular) => write!(
                f,
                "{{ granular = {{ sandbox_approval = {}, rules = {}, skill_approval = {}, \
                 request_permissions = {}, mcp_elicitations = {} }} }}",
                granular.sandbox_approval,
                granular.rules,
                granular.skill_approval,
                granular.request_permissions,
                granular.mcp_elicitations
            ),
        }
    }
}

/// `[forms]`: formwork's own limits on plugin forms.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct FormsConfig {
    /// `max_pending`: the most forms of one tool call, or of one session, that may wait for
    /// the person at once; a form past it is declined when it arrives. Default
    /// [`DEFAULT_MAX_PENDING_FORMS`].
    pub max_pending: usize,
    /// `sensitive_fields`: what happens to a form with a field that asks for a secret.
    pub sensitive_fields: SensitiveFields,
}

/// The default of `[forms] max_pending`.
pub const DEFAULT_MAX_PENDING_FORMS: usize = 16;

/// The largest `[forms] max_pending` accepted.
pub const MAX_PENDING_FORMS_LIMIT: usize = 1000;

impl Default for FormsConfig {
    fn default() -> Self {
        FormsConfig {
            max_pending: DEFAULT_MAX_PENDING_FORMS,
            sensitive_fields: SensitiveFields::Warn,
        }
    }
}

/// `[forms] sensitive_fields`: a form whose field names a secret (a password, a token, a card
/// number...) is shown with a warning (`"warn"`, the default) or declined whole (`"decline"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SensitiveFields {
    /// Shown, with a plain warning on the card.
    #[default]
    Warn,
    /// Declined before it reaches the person.
    Decline,
}

/// `[features]`. Only the flags formwork acts on are kept; other Codex feature flags are
/// accepted and listed in [`Config::ignored_keys`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct Features {
    /// `tool_call_mcp_elicitation`: show the tool-call approval card as an MCP-elicitation
    /// style form (`_meta.codex_approval_kind = "mcp_tool_call"`) instead of a
    /// `request_user_input` question. Default `false`.
    pub tool_call_mcp_elicitation: bool,
    /// `openai_elicitation`: speak OpenAI's form extension (`openai/elicitation`). formwork
    /// then declares `extensions["openai/elicitation"] = {"form": {}}`, accepts the
    /// `openai/elicitation/create` method and `mode: "openai/form"` as compatibility shapes,
    /// renders `_meta["openai/elicitation"].requestedSchema` in place of an empty core schema,
    /// and reads the extension's schema vocabulary (thumbnails, free-text lists, resource
    /// pickers). Default `false`.
    pub openai_elicitation: bool,
}

/// One `[mcp_servers.<name>]` table.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerConfig {
    /// How to reach the server.
    pub transport: Transport,
    /// `enabled`: `false` leaves the server out entirely. Default `true`.
    pub enabled: bool,
    /// Whether the name is one of formwork's built-in servers (see
    /// [`crate::config::BUILTIN_SERVERS`]). Built-in servers are managed by formwork: their
    /// tools default to `approve`, and `config sync` rewrites their launch keys.
    pub builtin: bool,
    /// `default_tools_approval_mode`, when the file sets it.
    pub default_tools_approval_mode: Option<ApprovalMode>,
    /// `tools.<tool>`, in file order.
    pub tools: IndexMap<String, ToolConfig>,
    /// `enabled_tools`: when set, only these tools are offered.
    pub enabled_tools: Option<Vec<String>>,
    /// `disabled_tools`: these tools are never offered (applied after `enabled_tools`).
    pub disabled_tools: Vec<String>,
    /// `startup_timeout_sec`: how long connecting and listing tools may take.
    pub startup_timeout: Option<Duration>,
    /// `tool_timeout_sec`: how long one tool call may take.
    pub tool_timeout: Option<Duration>,
    /// `protocol_version`: the version to speak; `None` (`"auto"`, the default): 2026-07-28 when
    /// the server offers it in `server/discover`, else the `initialize` handshake.
    pub protocol_version: Option<rmcp::model::ProtocolVersion>,
    /// The file whose table this is; `None` for a built-in server no file names (and for text
    /// that did not come from a file).
    pub file: Option<PathBuf>,
}

impl ServerConfig {
    /// A server named on the command line rather than in a file: reached by `transport`, with
    /// every setting at its default.
    pub fn adhoc(transport: Transport) -> ServerConfig {
        ServerConfig {
            transport,
            enabled: true,
            builtin: false,
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

    /// Whether `enabled_tools` and `disabled_tools` let the server offer this tool.
    pub fn exposes_tool(&self, tool: &str) -> bool {
        let allowed = self
            .enabled_tools
            .as_ref()
            .is_none_or(|enabled| enabled.iter().any(|name| name == tool));
        allowed && !self.disabled_tools.iter().any(|name| name == tool)
    }

    /// `tools.<tool>.approval_mode`, when the file sets it.
    pub fn tool_approval_mode(&self, tool: &str) -> Option<ApprovalMode> {
        self.tools.get(tool).and_then(|config| config.approval_mode)
    }
}

/// How a server is reached.
#[derive(Debug, Clone, PartialEq)]
pub enum Transport {
    /// `command` (+ `args`, `env`, `cwd`): a process spoken to over stdio.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Variables set in its environment.
        env: IndexMap<String, String>,
        /// `env_vars`: variables of formwork's environment passed through to it. Beyond these
        /// and `env`, a plugin gets only the few every program needs (`BASE_ENV`).
        env_vars: Vec<String>,
        /// Its working directory.
        cwd: Option<PathBuf>,
    },
    /// `url` (+ `http_headers`, `env_http_headers`, `bearer_token_env_var`, the OAuth keys): a
    /// Streamable HTTP endpoint.
    StreamableHttp {
        /// The endpoint.
        url: String,
        /// Headers sent with every request.
        http_headers: IndexMap<String, String>,
        /// `env_http_headers`: headers sent with every request, each the value of the
        /// environment variable it names (header name to variable name).
        env_http_headers: IndexMap<String, String>,
        /// The environment variable whose value is sent as `Authorization: Bearer <value>`.
        bearer_token_env_var: Option<String>,
        /// `scopes`: the OAuth scopes to ask for instead of the discovered ones (empty: the
        /// discovered ones).
        scopes: Vec<String>,
        /// `oauth_resource`: the RFC 8707 resource to ask tokens for instead of the
        /// discovered one.
        oauth_resource: Option<String>,
        /// `[mcp_servers.<name>.oauth]`: formwork's own OAuth client settings (boxed: most
        /// servers have none, and it would double the size of every transport).
        oauth: Box<OAuthConfig>,
        /// formwork's own key: one connection (one MCP session) serves every formwork session,
        /// and each form is routed by the call on whose response stream it arrives.
        share_session: bool,
    },
    /// A built-in server whose table names no `command` or `url`: the running formwork
    /// binary, started with these arguments.
    Builtin {
        /// The arguments, e.g. `["demo-plugin"]`.
        args: Vec<String>,
    },
}

/// `[mcp_servers.<name>.oauth]`: how formwork presents itself to the server's authorization
/// server. Names of variables and files only; the secrets are read by
/// `Transport::auth_settings` (in `crate::sign_on`, which hands them to the transport).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct OAuthConfig {
    /// `client_id`: a client registered with the authorization server beforehand.
    pub client_id: Option<String>,
    /// `client_secret_env_var`: the environment variable holding that client's secret.
    pub client_secret_env_var: Option<String>,
    /// `client_metadata_url`: the https URL of a client ID metadata document.
    pub client_metadata_url: Option<String>,
    /// `issuer`: the only authorization server (by its metadata's `issuer`) that this server's
    /// sign-ins may use, and so the only one its client secret or key is ever sent to.
    pub issuer: Option<String>,
    /// `grant`: `"authorization_code"` (the default) or `"client_credentials"`.
    pub grant: Grant,
    /// `private_key_file`: a PKCS#8 PEM key that signs the client's assertion
    /// (`private_key_jwt`, client credentials only); a relative path is relative to the
    /// directory of the file that names it.
    pub private_key_file: Option<PathBuf>,
    /// `signing_algorithm`: the JWS algorithm of that assertion (default `ES256`).
    pub signing_algorithm: Option<String>,
    /// The `idp_*` keys and `id_token_env_var`, which the `cross_app_access` grant needs (and
    /// only it takes).
    pub identity_provider: Option<IdentityProviderConfig>,
}

/// The enterprise identity provider of the `cross_app_access` grant, which trades the
/// person's ID token for a grant this server's authorization server takes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdentityProviderConfig {
    /// `idp_token_endpoint`: the provider's token endpoint (https, or http to localhost).
    pub token_endpoint: String,
    /// `idp_client_id`: formwork's client at the provider.
    pub client_id: String,
    /// `idp_client_secret_env_var`: the variable holding that client's secret, if it has one.
    pub client_secret_env_var: Option<String>,
    /// `id_token_env_var`: the variable holding the person's ID token from the provider.
    pub id_token_env_var: String,
}

/// A variable a server's table names, unset or empty when a connection needs its value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the environment variable `{variable}` ({key}) is not set")]
pub struct VariableUnset {
    /// The variable.
    pub variable: String,
    /// The key that names it, e.g. `bearer_token_env_var`.
    pub key: &'static str,
}

/// The value of the environment variable `variable`, which the key `key` names; set and not
/// empty.
pub(crate) fn read_variable(variable: &str, key: &'static str) -> Result<String, VariableUnset> {
    std::env::var(variable)
        .ok()
        .filter(|value| !value.is_empty())
        .ok_or_else(|| VariableUnset {
            variable: variable.to_owned(),
            key,
        })
}

impl Transport {
    /// The headers sent with every HTTP request: `http_headers`, then each of
    /// `env_http_headers` with the value of its variable (left out while it is unset), then
    /// `Authorization: Bearer` with the value of `bearer_token_env_var` (which must be set).
    /// None for other transports.
    pub fn http_headers(&self) -> Result<Vec<(String, String)>, VariableUnset> {
        let Transport::StreamableHttp {
            http_headers,
            env_http_headers,
            bearer_token_env_var,
            ..
        } = self
        else {
            return Ok(Vec::new());
        };
        let mut headers: Vec<(String, String)> = http_headers
            .iter()
            .map(|(name, value)| (name.clone(), value.clone()))
            .collect();
        for (name, variable) in env_http_headers {
            // As in Codex: a header whose variable is unset (or empty) is left out.
            match std::env::var(variable)
                .ok()
                .filter(|value| !value.is_empty())
            {
                Some(value) => headers.push((name.clone(), value)),
                None => tracing::warn!(
                    target: "formwork::config",
                    header = %name,
                    %variable,
                    "env_http_headers: the variable is not set; the header is left out"
                ),
            }
        }
        if let Some(variable) = bearer_token_env_var {
            let token = read_variable(variable, "bearer_token_env_var")?;
            headers.push(("authorization".to_owned(), format!("Bearer {token}")));
        }
        Ok(headers)
    }
}

/// One `[mcp_servers.<name>.tools.<tool>]` table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolConfig {
    /// `approval_mode`, overriding the server's default for this tool.
    pub approval_mode: Option<ApprovalMode>,
}

impl<'de> Deserialize<'de> for ApprovalMode {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ModeVisitor;
        impl Visitor<'_> for ModeVisitor {
            type Value = ApprovalMode;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(r#"one of "auto", "prompt", "writes", "approve""#)
            }
            fn visit_str<E: de::Error>(self, value: &str) -> Result<ApprovalMode, E> {
                ApprovalMode::parse(value).ok_or_else(|| {
                    E::custom(format!(
                        r#"unknown approval mode "{value}", expected one of "auto", "prompt", "writes", "approve""#
                    ))
                })
            }
        }
        deserializer.deserialize_str(ModeVisitor)
    }
}

impl<'de> Deserialize<'de> for ApprovalPolicy {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct PolicyVisitor;
        impl<'de> Visitor<'de> for PolicyVisitor {
            type Value = ApprovalPolicy;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(
                    r#""untrusted", "on-request", "never" or a { granular = { ... } } table"#,
                )
            }
            fn visit_str<E: de::Error>(self, value: &str) -> Result<ApprovalPolicy, E> {
                match value {
                    "untrusted" => Ok(ApprovalPolicy::Untrusted),
                    "on-request" => Ok(ApprovalPolicy::OnRequest),
                    "never" => Ok(ApprovalPolicy::Never),
                    other => Err(E::custom(format!(
                        r#"unknown approval policy "{other}", expected "untrusted", "on-request", "never" or {{ granular = {{ ... }} }}"#
                    ))),
                }
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ApprovalPolicy, A::Error> {
                let Some(key) = map.next_key::<String>()? else {
                    return Err(de::Error::custom(
                        "an approval policy table needs its `granular` key",
                    ));
                };
                if key != "granular" {
                    return Err(de::Error::custom(format!(
                        "unknown approval policy table `{key}`, expected `granular`"
                    )));
                }
                let granular = map.next_value::<GranularApproval>()?;
                if let Some(extra) = map.next_key::<String>()? {
                    return Err(de::Error::custom(format!(
                        "unexpected key `{extra}` beside `granular`"
                    )));
                }
                Ok(ApprovalPolicy::Granular(granular))
            }
        }
        deserializer.deserialize_any(PolicyVisitor)
    }
}

/// Which HTTP API a model provider speaks (`wire_api`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WireApi {
    /// `POST {base_url}/responses`, the Responses API (OpenAI's own).
    Responses,
    /// `POST {base_url}/chat/completions`, what local OpenAI-compatible servers speak.
    Chat,
}

impl WireApi {
    /// The name the config uses.
    pub fn as_str(self) -> &'static str {
        match self {
            WireApi::Responses => "responses",
            WireApi::Chat => "chat",
        }
    }
}

/// One model provider: a built-in one, or a `[model_providers.<id>]` table. Not serialized:
/// its header values may be secrets (`config check` shows their names only).
#[derive(Debug, Clone, PartialEq)]
pub struct ModelProvider {
    /// `name`: shown to the person.
    pub name: String,
    /// `base_url`: `/responses` or `/chat/completions` is appended.
    pub base_url: String,
    /// `env_key`: the environment variable holding the API key, sent as a bearer token. The
    /// key itself is never in a file.
    pub env_key: Option<String>,
    /// `wire_api`. Default `responses`.
    pub wire_api: WireApi,
    /// `http_headers`: sent with every request.
    pub http_headers: IndexMap<String, String>,
    /// `env_http_headers`: header name to environment variable; skipped when it is unset.
    pub env_http_headers: IndexMap<String, String>,
    /// `query_params`: appended to every request's URL.
    pub query_params: IndexMap<String, String>,
    /// `request_max_retries`: how often a request that failed before its stream began (a
    /// transport error, 429 or 5xx) is sent again. Default 4, at most 100.
    pub request_max_retries: u32,
    /// `stream_max_retries`: how often a stream that broke off is requested again. Default 5,
    /// at most 100.
    pub stream_max_retries: u32,
    /// `stream_idle_timeout_ms`: the longest wait for the next event of a stream. Default
    /// 300 000 ms.
    pub stream_idle_timeout: Duration,
}

/// The model a session talks to: the provider (by id) and the model's name.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelChoice {
    /// The provider's id: `openai`, `oss`, or a `[model_providers.<id>]` key.
    pub provider_id: String,
    /// The provider.
    pub provider: ModelProvider,
    /// The model's name as the provider knows it.
    pub model: String,
    /// How many bytes of one tool's output the model sees at most (`tool_output_token_limit`
    /// tokens, counted as 4 bytes each); the rest is cut and the transcript says so.
    pub tool_output_max_bytes: usize,
}
