//! The effective policy as a report, for `formwork config check` and `formwork doctor`.

use serde_json::{Map, Value, json};

use super::approval::ModeSource;
use super::card::card_rendering;
use super::gate::elicitation_gate;
use crate::config::{ApprovalMode, Config, ServerConfig, Transport};

/// The effective policy as JSON, for `formwork config check`: the policy, whether plugin forms
/// get through and why, the card rendering, and per server its transport, enabled state and
/// effective default approval mode with its source. Environment variables and HTTP headers
/// are listed by name only, since their values are often secrets.
pub fn effective_policy(config: &Config) -> Value {
    let gate = match elicitation_gate(config) {
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
        "approval_card": card_rendering(config),
        "mcp_servers": servers,
        "ignored_keys": config.ignored_keys,
    })
}

fn describe_server(name: &str, server: &ServerConfig) -> Value {
    // The server-wide default: what a tool without its own approval_mode gets.
    let (mode, source) = match server.default_tools_approval_mode {
        Some(mode) => (mode, ModeSource::Server),
        None if server.builtin => (ApprovalMode::Approve, ModeSource::BuiltinDefault),
        None => (ApprovalMode::Auto, ModeSource::Default),
    };
    let mut out = Map::new();
    out.insert("enabled".into(), server.enabled.into());
    out.insert("builtin".into(), server.builtin.into());
    match &server.transport {
        Transport::Stdio {
            command,
            args,
            env,
            cwd,
        } => {
            out.insert("transport".into(), "stdio".into());
            out.insert("command".into(), command.clone().into());
            out.insert("args".into(), json!(args));
            if !env.is_empty() {
                out.insert("env".into(), json!(env.keys().collect::<Vec<_>>()));
            }
            if let Some(cwd) = cwd {
                out.insert("cwd".into(), cwd.display().to_string().into());
            }
        }
        Transport::StreamableHttp {
            url,
            http_headers,
            bearer_token_env_var,
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
            if let Some(var) = bearer_token_env_var {
                out.insert("bearer_token_env_var".into(), var.clone().into());
            }
        }
        Transport::Builtin { args } => {
            out.insert("transport".into(), "builtin".into());
            out.insert("args".into(), json!(args));
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
