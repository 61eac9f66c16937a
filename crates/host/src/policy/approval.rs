//! Tool approval: whether a tool call needs the person's approval, and what this session's
//! earlier answers already allow.

use std::collections::HashSet;

use serde::Serialize;
use serde_json::Value;

use super::card::{ApprovalAnswer, ApprovalCard};
use super::{NEVER_POLICY_MESSAGE, tool_name};
use crate::config::{ApprovalMode, ApprovalPolicy, Config, ServerConfig, dotted};

/// What the policy says about one tool call.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolApproval {
    /// The server.
    pub server: String,
    /// The tool.
    pub tool: String,
    /// The approval mode that applies.
    pub mode: ApprovalMode,
    /// Where the mode comes from.
    pub mode_source: ModeSource,
    /// What has to happen before the call runs.
    pub need: ApprovalNeed,
    /// Why, for the log and the transcript.
    pub reason: String,
    /// The other servers whose output the model took in earlier in the turn, when that is why
    /// the call asks ([`ToolApproval::after_reading`]); the card names them.
    pub read_from: Vec<String>,
}

impl ToolApproval {
    /// The verdict on a model's call made after the turn took in output of `read_from`, other
    /// servers (a tool's result, an app's model context): a call that `auto` would run because
    /// of its annotations asks instead, since what the model read may be steering it to pass
    /// that data on. `approve`, `prompt` and the other modes keep their verdict, and so does a
    /// call the person allowed for the session (applied after this).
    pub fn after_reading(mut self, read_from: &[String], config: &Config) -> ToolApproval {
        if read_from.is_empty() || self.mode != ApprovalMode::Auto || self.need != ApprovalNeed::Run
        {
            return self;
        }
        let why = format!("this turn has read from {}", read_from.join(", "));
        if config.approval_policy == ApprovalPolicy::Never {
            self.need = ApprovalNeed::Fail(NEVER_POLICY_MESSAGE.to_owned());
            self.reason = format!("{NEVER_POLICY_MESSAGE}: {why}");
        } else {
            self.need = ApprovalNeed::Card(RememberOffers {
                session: true,
                always: config.remember_file(&self.server).is_some(),
            });
            self.reason = format!("approval needed: {why}");
        }
        self.read_from = read_from.to_vec();
        self
    }
}

/// What has to happen before a tool call runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApprovalNeed {
    /// Nothing: run it.
    Run,
    /// Show the approval card, offering these remember-options.
    Card(RememberOffers),
    /// Do not run it; the call fails with this message.
    Fail(String),
}

/// Which remember-options an approval card offers besides Allow and Deny.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct RememberOffers {
    /// Allow for this session.
    pub session: bool,
    /// Always allow (written to the config).
    pub always: bool,
}

/// Where an approval mode comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModeSource {
    /// `mcp_servers.<server>.tools.<tool>.approval_mode`.
    Tool,
    /// `mcp_servers.<server>.default_tools_approval_mode`.
    Server,
    /// The default of formwork's built-in servers (`approve`).
    BuiltinDefault,
    /// The default of every other server (`auto`).
    Default,
}

impl ModeSource {
    /// The source as a person would look for it in the file.
    pub fn describe(self, server: &str, tool: &str) -> String {
        match self {
            ModeSource::Tool => format!(
                "{}.approval_mode",
                dotted(["mcp_servers", server, "tools", tool])
            ),
            ModeSource::Server => format!(
                "{}.default_tools_approval_mode",
                dotted(["mcp_servers", server])
            ),
            ModeSource::BuiltinDefault => "the default for formwork's built-in servers".into(),
            ModeSource::Default => "the default for servers formwork does not manage".into(),
        }
    }
}

/// The approval mode for a tool of a server, and where it comes from. A server that is not
/// configured at all (one given on the command line) gets the `auto` default.
pub fn approval_mode(config: &Config, server: &str, tool: &str) -> (ApprovalMode, ModeSource) {
    let Some(server) = config.server(server) else {
        return (ApprovalMode::Auto, ModeSource::Default);
    };
    if let Some(mode) = server.tool_approval_mode(tool) {
        return (mode, ModeSource::Tool);
    }
    server_default_mode(server)
}

/// What a tool of `server` without an `approval_mode` of its own gets: the server's
/// `default_tools_approval_mode`, else `approve` for a built-in server and `auto` for others.
pub fn server_default_mode(server: &ServerConfig) -> (ApprovalMode, ModeSource) {
    match server.default_tools_approval_mode {
        Some(mode) => (mode, ModeSource::Server),
        None if server.builtin => (ApprovalMode::Approve, ModeSource::BuiltinDefault),
        None => (ApprovalMode::Auto, ModeSource::Default),
    }
}

/// Whether a tool call needs the person's approval under `mode`, given the tool's raw
/// `annotations` object (hints that are missing or not booleans count as absent), with the
/// reason in words.
pub fn requires_approval(mode: ApprovalMode, annotations: Option<&Value>) -> (bool, &'static str) {
    let hint = |name: &str| {
        annotations
            .and_then(|annotations| annotations.get(name))
            .and_then(Value::as_bool)
    };
    let read_only = hint("readOnlyHint");
    let destructive = hint("destructiveHint");
    let open_world = hint("openWorldHint");
    match mode {
        ApprovalMode::Approve => (false, "approval mode \"approve\" never asks"),
        ApprovalMode::Prompt => (true, "approval mode \"prompt\" always asks"),
        ApprovalMode::Writes if read_only == Some(true) => (
            false,
            "approval mode \"writes\" and the tool says readOnlyHint: true",
        ),
        ApprovalMode::Writes => (
            true,
            "approval mode \"writes\" and the tool does not say readOnlyHint: true",
        ),
        ApprovalMode::Auto if destructive == Some(true) => (
            true,
            "approval mode \"auto\" and the tool says destructiveHint: true",
        ),
        ApprovalMode::Auto if read_only == Some(true) => (
            false,
            "approval mode \"auto\" and the tool says readOnlyHint: true",
        ),
        ApprovalMode::Auto if destructive != Some(false) => (
            true,
            "approval mode \"auto\" and the tool does not say destructiveHint: false",
        ),
        ApprovalMode::Auto if open_world != Some(false) => (
            true,
            "approval mode \"auto\" and the tool does not say openWorldHint: false",
        ),
        ApprovalMode::Auto => (
            false,
            "approval mode \"auto\" and the tool says destructiveHint: false and openWorldHint: false",
        ),
    }
}

/// The policy's verdict on calling `tool` of `server`, whose raw `annotations` object (from
/// `tools/list`) is given as sent.
///
/// A server that is configured but disabled, or a tool that `enabled_tools`/`disabled_tools`
/// leaves out, fails whatever the mode: approvals never widen what the file allows.
pub fn tool_approval(
    config: &Config,
    server: &str,
    tool: &str,
    annotations: Option<&Value>,
) -> ToolApproval {
    approval_for(config, server, tool, annotations, Asker::Session)
}

/// The verdict on an app's `tools/call` of `tool`, a tool of the app's own server. What the
/// person configured applies as to any call (a disabled tool, `prompt`, `writes`, the
/// `never` policy); under `auto` no annotation asks for a card: the app calls its own server
/// over the channel its invocation opened, as MCP Apps hosts do.
pub fn app_tool_approval(
    config: &Config,
    server: &str,
    tool: &str,
    annotations: Option<&Value>,
) -> ToolApproval {
    approval_for(config, server, tool, annotations, Asker::App)
}

/// Who asks for a call: it decides whether `auto` reads the tool's annotations.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Asker {
    /// The person (the palette) or the model.
    Session,
    /// An app, for a tool of its own server.
    App,
}

fn approval_for(
    config: &Config,
    server: &str,
    tool: &str,
    annotations: Option<&Value>,
    asker: Asker,
) -> ToolApproval {
    let (mode, mode_source) = approval_mode(config, server, tool);
    let source = mode_source.describe(server, tool);
    let (need, reason) = match config.server(server) {
        Some(server_config) if !server_config.enabled => {
            let message = format!(
                "{} is disabled in the config",
                dotted(["mcp_servers", server])
            );
            (ApprovalNeed::Fail(message.clone()), message)
        }
        Some(server_config) if !server_config.exposes_tool(tool) => {
            let message = format!(
                "tool {tool:?} is left out by {}'s enabled_tools/disabled_tools",
                dotted(["mcp_servers", server])
            );
            (ApprovalNeed::Fail(message.clone()), message)
        }
        _ => {
            let (needed, why) = match asker {
                Asker::App if mode == ApprovalMode::Auto => (
                    false,
                    "an app calls its own server's tool under approval mode \"auto\"",
                ),
                _ => requires_approval(mode, annotations),
            };
            if !needed {
                (
                    ApprovalNeed::Run,
                    format!("no approval needed: {why} ({source})"),
                )
            } else if config.approval_policy == ApprovalPolicy::Never {
                (
                    ApprovalNeed::Fail(NEVER_POLICY_MESSAGE.to_owned()),
                    format!("{NEVER_POLICY_MESSAGE}: {why} ({source})"),
                )
            } else {
                let remember = mode == ApprovalMode::Auto;
                // Always allow needs a file formwork may write the approval into.
                let offers = RememberOffers {
                    session: remember,
                    always: remember && config.remember_file(server).is_some(),
                };
                (
                    ApprovalNeed::Card(offers),
                    format!("approval needed: {why} ({source})"),
                )
            }
        }
    };
    ToolApproval {
        server: server.to_owned(),
        tool: tool.to_owned(),
        mode,
        mode_source,
        need,
        reason,
        read_from: Vec::new(),
    }
}

/// The tools a person allowed "for this session" (or "always"), so later calls of the same
/// tool in the same session run without a card. Only `auto` mode remembers, as in Codex.
#[derive(Debug, Clone, Default)]
pub struct SessionApprovals {
    granted: HashSet<(String, String)>,
}

impl SessionApprovals {
    /// No approvals yet.
    pub fn new() -> SessionApprovals {
        SessionApprovals::default()
    }

    /// Remembers an answer that allows the tool for the rest of the session.
    pub fn record(&mut self, card: &ApprovalCard, answer: &ApprovalAnswer) {
        if card.mode == ApprovalMode::Auto && answer.remembers_for_session() {
            self.granted
                .insert((card.server.clone(), card.tool.clone()));
        }
    }

    /// Turns a card into a plain run when the person already allowed this tool in this
    /// session; any other verdict is returned unchanged.
    pub fn apply(&self, mut approval: ToolApproval) -> ToolApproval {
        let key = (approval.server.clone(), approval.tool.clone());
        if matches!(approval.need, ApprovalNeed::Card(_)) && self.granted.contains(&key) {
            approval.need = ApprovalNeed::Run;
            approval.reason = format!(
                "no approval needed: the person allowed {} for this session",
                tool_name(&approval.server, &approval.tool)
            );
        }
        approval
    }
}
