//! The configuration as the rest of formwork sees it, after loading and validation. The key
//! names and values follow Codex's `config.toml`, so a `[mcp_servers.<name>]` table can be
//! copied between the two.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use indexmap::IndexMap;
use serde::de::{self, MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};

/// A loaded `formwork.toml` (or the embedded default when there is no file).
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// The file it was read from; `None` for the embedded default.
    pub path: Option<PathBuf>,
    /// `approval_policy`: which prompts may reach the person. Default `on-request`.
    pub approval_policy: ApprovalPolicy,
    /// `elicitations_auto_deny`: decline every plugin form before it reaches the person.
    /// Default `false`.
    pub elicitations_auto_deny: bool,
    /// `[features]`.
    pub features: Features,
    /// `[mcp_servers.<name>]`, in file order, followed by every built-in server the file does
    /// not mention.
    pub mcp_servers: IndexMap<String, ServerConfig>,
    /// Dotted keys that Codex knows and formwork accepts without using, in file order.
    pub ignored_keys: Vec<String>,
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

/// `[features]`. Only the flags formwork acts on are kept; other Codex feature flags are
/// accepted and listed in [`Config::ignored_keys`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct Features {
    /// `tool_call_mcp_elicitation`: show the tool-call approval card as an MCP-elicitation
    /// style form (`_meta.codex_approval_kind = "mcp_tool_call"`) instead of a
    /// `request_user_input` question. Default `false`.
    pub tool_call_mcp_elicitation: bool,
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
}

impl ServerConfig {
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
        /// Variables added to its environment.
        env: IndexMap<String, String>,
        /// Its working directory.
        cwd: Option<PathBuf>,
    },
    /// `url` (+ `http_headers`, `bearer_token_env_var`): a Streamable HTTP endpoint.
    StreamableHttp {
        /// The endpoint.
        url: String,
        /// Headers sent with every request.
        http_headers: IndexMap<String, String>,
        /// The environment variable whose value is sent as `Authorization: Bearer <value>`.
        bearer_token_env_var: Option<String>,
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

impl Transport {
    /// The headers sent with every HTTP request: `http_headers`, then `Authorization: Bearer`
    /// with the value of `bearer_token_env_var`. None for other transports.
    pub fn http_headers(&self) -> Result<Vec<(String, String)>, String> {
        let Transport::StreamableHttp {
            http_headers,
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
        if let Some(variable) = bearer_token_env_var {
            let token = std::env::var(variable)
                .ok()
                .filter(|token| !token.is_empty())
                .ok_or_else(|| {
                    format!(
                        "the environment variable `{variable}` (bearer_token_env_var) is not set"
                    )
                })?;
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
