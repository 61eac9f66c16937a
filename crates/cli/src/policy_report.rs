//! The effective policy as a report: what `formwork config check` prints (with `sources`) and
//! the `policy` entry of `formwork doctor`'s report. A presentation of the loaded config; the
//! decisions it quotes are `formwork_host::policy`'s.

use formwork_host::PluginEnv;
use formwork_host::config::{Config, OAuthConfig, ServerConfig, Transport};
use formwork_host::policy;
use serde_json::{Map, Value, json};

/// The effective policy as JSON: the policy, whether plugin forms
/// get through and why, the card rendering, and per server its transport, enabled state and
/// effective default approval mode with its source. Environment variables and HTTP headers
/// are listed by name only, since their values are often secrets.
pub fn effective_policy(config: &Config) -> Value {
    let gate = match policy::elicitation_gate(config) {
        Ok(allowed) => json!({ "allowed": true, "reason": allowed.to_string() }),
        Err(declined) => json!({ "allowed": false, "reason": declined.to_string() }),
    };
    let servers: Map<String, Value> = config
        .mcp_servers
        .iter()
        .map(|(name, server)| (name.clone(), describe_server(name, server)))
        .collect();
    json!({
        "config": config.top_file().map(|path| path.display().to_string()),
        "approval_policy": config.approval_policy,
        "elicitations_auto_deny": config.elicitations_auto_deny,
        "plugin_forms": gate,
        "features": config.features,
        "forms": config.forms,
        "approval_card": policy::card_rendering(config),
        "mcp_servers": servers,
        "mcp_oauth_credentials_store": config.mcp_oauth_credentials_store,
        "mcp_oauth_callback_port": config.mcp_oauth_callback_port,
        "ignored_keys": config.ignored_keys,
    })
}

/// `[mcp_servers.<name>.oauth]` as set: names of variables and files, never their contents.
fn describe_oauth(oauth: &OAuthConfig) -> Value {
    let mut out = Map::new();
    out.insert("grant".into(), oauth.grant.as_str().into());
    let optional = [
        ("client_id", oauth.client_id.clone()),
        ("client_secret_env_var", oauth.client_secret_env_var.clone()),
        ("client_metadata_url", oauth.client_metadata_url.clone()),
        ("issuer", oauth.issuer.clone()),
        (
            "private_key_file",
            oauth
                .private_key_file
                .as_ref()
                .map(|file| file.display().to_string()),
        ),
        ("signing_algorithm", oauth.signing_algorithm.clone()),
    ];
    let idp = oauth.identity_provider.as_ref();
    let optional = optional.into_iter().chain([
        (
            "idp_token_endpoint",
            idp.map(|idp| idp.token_endpoint.clone()),
        ),
        ("idp_client_id", idp.map(|idp| idp.client_id.clone())),
        (
            "idp_client_secret_env_var",
            idp.and_then(|idp| idp.client_secret_env_var.clone()),
        ),
        (
            "id_token_env_var",
            idp.map(|idp| idp.id_token_env_var.clone()),
        ),
    ]);
    for (key, value) in optional {
        if let Some(value) = value {
            out.insert(key.into(), value.into());
        }
    }
    Value::Object(out)
}

fn describe_server(name: &str, server: &ServerConfig) -> Value {
    // The server-wide default: what a tool without its own approval_mode gets.
    let (mode, source) = policy::server_default_mode(server);
    let mut out = Map::new();
    out.insert("enabled".into(), server.enabled.into());
    out.insert("builtin".into(), server.builtin.into());
    match &server.transport {
        Transport::Stdio {
            command,
            args,
            env,
            env_vars,
            cwd,
        } => {
            out.insert("transport".into(), "stdio".into());
            out.insert("command".into(), command.clone().into());
            out.insert("args".into(), json!(args));
            if !env.is_empty() {
                out.insert("env".into(), json!(env.keys().collect::<Vec<_>>()));
            }
            if !env_vars.is_empty() {
                out.insert("env_vars".into(), json!(env_vars));
            }
            let given = PluginEnv {
                set: env.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
                pass: env_vars.clone(),
            };
            out.insert("receives_env".into(), json!(given.names_now()));
            if let Some(cwd) = cwd {
                out.insert("cwd".into(), cwd.display().to_string().into());
            }
        }
        Transport::StreamableHttp {
            url,
            http_headers,
            env_http_headers,
            bearer_token_env_var,
            scopes,
            oauth_resource,
            oauth,
            share_session,
        } => {
            out.insert("transport".into(), "streamable_http".into());
            out.insert("url".into(), url.clone().into());
            if *share_session {
                out.insert("share_session".into(), true.into());
            }
            if !http_headers.is_empty() {
                out.insert(
                    "http_headers".into(),
                    json!(http_headers.keys().collect::<Vec<_>>()),
                );
            }
            if !env_http_headers.is_empty() {
                out.insert("env_http_headers".into(), json!(env_http_headers));
            }
            if let Some(var) = bearer_token_env_var {
                out.insert("bearer_token_env_var".into(), var.clone().into());
            }
            if !scopes.is_empty() {
                out.insert("scopes".into(), json!(scopes));
            }
            if let Some(resource) = oauth_resource {
                out.insert("oauth_resource".into(), resource.clone().into());
            }
            if **oauth != OAuthConfig::default() {
                out.insert("oauth".into(), describe_oauth(oauth));
            }
        }
        Transport::Builtin { args } => {
            out.insert("transport".into(), "builtin".into());
            out.insert("args".into(), json!(args));
            out.insert(
                "receives_env".into(),
                json!(PluginEnv::default().names_now()),
            );
        }
    }
    out.insert("default_tools_approval_mode".into(), json!(mode));
    out.insert(
        "approval_mode_source".into(),
        source.describe(name, "").into(),
    );
    let tools: Map<String, Value> = server
        .tools
        .iter()
        .filter_map(|(tool, config)| config.approval_mode.map(|mode| (tool.clone(), json!(mode))))
        .collect();
    if !tools.is_empty() {
        out.insert("tools".into(), Value::Object(tools));
    }
    if let Some(enabled) = &server.enabled_tools {
        out.insert("enabled_tools".into(), json!(enabled));
    }
    if !server.disabled_tools.is_empty() {
        out.insert("disabled_tools".into(), json!(server.disabled_tools));
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    /// The effective policy of `input` loaded as if it were `formwork.toml`.
    fn report(input: &str) -> Value {
        match Config::from_toml(input, Some(Path::new("formwork.toml"))) {
            Ok(config) => effective_policy(&config),
            Err(err) => panic!("input:\n{input}\ndoes not load: {err}"),
        }
    }

    /// Checks that `expected` is contained in the effective policy of `input` (objects
    /// compared key by key, everything else exactly).
    fn check(input: &str, expected: Value) {
        let actual = report(input);
        assert!(
            contains(&actual, &expected),
            "input:\n{input}\nexpected (subset):\n{expected:#}\nactual:\n{actual:#}"
        );
    }

    fn contains(actual: &Value, expected: &Value) -> bool {
        match (actual, expected) {
            (Value::Object(actual), Value::Object(expected)) => {
                expected.iter().all(|(key, value)| {
                    actual
                        .get(key)
                        .is_some_and(|actual| contains(actual, value))
                })
            }
            _ => actual == expected,
        }
    }

    #[test]
    fn empty_file_is_the_embedded_default() {
        check(
            "",
            json!({
                "approval_policy": "on-request",
                "elicitations_auto_deny": false,
                "plugin_forms": {"allowed": true},
                "features": {"tool_call_mcp_elicitation": false, "openai_elicitation": false},
                "approval_card": "request_user_input",
                "mcp_servers": {"demo": {
                    "enabled": true, "builtin": true, "transport": "builtin", "args": ["demo-plugin"],
                    "default_tools_approval_mode": "approve",
                    "approval_mode_source": "the default for formwork's built-in servers"
                }},
                "ignored_keys": []
            }),
        );
    }

    #[test]
    fn wework_recommended_shape() {
        check(
            r#"
approval_policy = { granular = { sandbox_approval = false, rules = false, skill_approval = false, request_permissions = false, mcp_elicitations = true } }

[mcp_servers.example_plugin]
command = "python3"
args = ["plugin.py"]
default_tools_approval_mode = "approve"

[features]
tool_call_mcp_elicitation = false
"#,
            json!({
                "approval_policy": {"granular": {
                    "sandbox_approval": false, "rules": false, "skill_approval": false,
                    "request_permissions": false, "mcp_elicitations": true
                }},
                "plugin_forms": {"allowed": true,
                    "reason": "plugin forms are shown: approval_policy granular.mcp_elicitations = true"},
                "mcp_servers": {"example_plugin": {
                    "builtin": false, "transport": "stdio", "command": "python3", "args": ["plugin.py"],
                    "default_tools_approval_mode": "approve",
                    "approval_mode_source": "mcp_servers.example_plugin.default_tools_approval_mode"
                }}
            }),
        );
    }

    #[test]
    fn granular_as_a_table_with_codex_defaults() {
        // skill_approval and request_permissions may be left out, as in Codex.
        check(
            "[approval_policy.granular]\nsandbox_approval = true\nrules = true\nmcp_elicitations = false\n",
            json!({
                "approval_policy": {"granular": {
                    "sandbox_approval": true, "rules": true, "skill_approval": false,
                    "request_permissions": false, "mcp_elicitations": false
                }},
                "plugin_forms": {"allowed": false}
            }),
        );
    }

    #[test]
    fn other_policies_and_auto_deny() {
        check(
            "approval_policy = \"never\"\n",
            json!({"approval_policy": "never", "plugin_forms": {"allowed": false}}),
        );
        check(
            "approval_policy = \"untrusted\"\nelicitations_auto_deny = true\n",
            json!({"approval_policy": "untrusted", "elicitations_auto_deny": true,
                   "plugin_forms": {"allowed": false}}),
        );
    }

    #[test]
    fn servers_tools_and_secrets_listed_by_name_only() {
        check(
            r#"
[features]
tool_call_mcp_elicitation = true

[mcp_servers.shop]
command = "node"
args = ["shop.js"]
env = { SHOP_TOKEN = "secret" }
cwd = "/srv/shop"
enabled_tools = ["refund", "browse"]
disabled_tools = ["browse"]
tool_timeout_sec = 30

[mcp_servers.shop.tools.refund]
approval_mode = "prompt"

[mcp_servers.docs]
url = "https://docs.example.com/mcp"
http_headers = { X-Api-Key = "secret" }
bearer_token_env_var = "DOCS_TOKEN"
default_tools_approval_mode = "writes"
enabled = false
"#,
            json!({
                "approval_card": "mcp_elicitation",
                "mcp_servers": {
                    "shop": {"transport": "stdio", "env": ["SHOP_TOKEN"], "cwd": "/srv/shop",
                             "default_tools_approval_mode": "auto",
                             "approval_mode_source": "the default for servers formwork does not manage",
                             "tools": {"refund": "prompt"},
                             "enabled_tools": ["refund", "browse"], "disabled_tools": ["browse"]},
                    "docs": {"enabled": false, "transport": "streamable_http",
                             "url": "https://docs.example.com/mcp", "http_headers": ["X-Api-Key"],
                             "bearer_token_env_var": "DOCS_TOKEN", "default_tools_approval_mode": "writes"},
                    "demo": {"builtin": true}
                }
            }),
        );
    }

    #[test]
    fn codex_keys_formwork_does_not_use_are_accepted_and_listed() {
        check(
            r#"
model_reasoning_effort = "high"
sandbox_mode = "workspace-write"
[profiles.fast]
model = "o4-mini"
[features]
web_search_request = true
unified_exec = { enabled = true }
[mcp_servers.s]
command = "x"
startup_timeout_ms = 5000
required = true
"#,
            json!({"ignored_keys": [
                "model_reasoning_effort", "sandbox_mode", "profiles", "features.web_search_request",
                "features.unified_exec", "mcp_servers.s.startup_timeout_ms", "mcp_servers.s.required"
            ]}),
        );
    }

    #[test]
    fn builtin_server_keeps_an_explicit_mode_and_may_name_no_command() {
        check(
            "[mcp_servers.demo]\ndefault_tools_approval_mode = \"prompt\"\n",
            json!({"mcp_servers": {"demo": {
                "builtin": true, "transport": "builtin", "default_tools_approval_mode": "prompt",
                "approval_mode_source": "mcp_servers.demo.default_tools_approval_mode"
            }}}),
        );
        // Written out in full by `config sync`, it is still the managed built-in server.
        check(
            "[mcp_servers.demo]\ncommand = \"/usr/bin/formwork\"\nargs = [\"demo-plugin\"]\n",
            json!({"mcp_servers": {"demo": {
                "builtin": true, "transport": "stdio", "default_tools_approval_mode": "approve"
            }}}),
        );
    }

    #[test]
    fn effective_policy_reports_the_gate_and_card() {
        let policy =
            report("approval_policy = \"never\"\n[features]\ntool_call_mcp_elicitation = true\n");
        assert_eq!(
            policy["plugin_forms"],
            json!({"allowed": false, "reason": "plugin form declined: approval_policy = \"never\" declines plugin forms"})
        );
        assert_eq!(policy["approval_card"], "mcp_elicitation");
    }

    #[test]
    fn the_forms_settings_are_reported_with_their_defaults() {
        assert_eq!(
            report("")["forms"],
            json!({"max_pending": 16, "sensitive_fields": "warn"})
        );
        assert_eq!(
            report("[forms]\nmax_pending = 4\nsensitive_fields = \"decline\"\n")["forms"],
            json!({"max_pending": 4, "sensitive_fields": "decline"})
        );
    }
}
