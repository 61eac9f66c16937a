//! The approval policy as pure decisions: whether a plugin's form may reach the person, whether
//! a tool call needs the person's approval, what the approval card looks like in its two
//! renderings, and what an answer to it means. No I/O; the session layer acts on the results
//! and writes each `reason` to the log and the transcript.
//!
//! The names and the semantics are Codex's (measured on Codex 0.171.0 and read in its source):
//!
//! - Plugin forms: `elicitations_auto_deny` declines all; `approval_policy = "never"` declines;
//!   granular with `mcp_elicitations = false` declines; `untrusted`, `on-request` and granular
//!   with `mcp_elicitations = true` let the form through.
//! - Tool calls: the mode is `tools.<tool>.approval_mode`, else the server's
//!   `default_tools_approval_mode`, else `approve` for formwork's built-in servers and `auto`
//!   for all others. `approve` never asks; `prompt` always asks; `writes` asks unless the tool
//!   says `readOnlyHint: true`; `auto` asks when the tool says `destructiveHint: true`, never
//!   when it says `readOnlyHint: true`, and otherwise unless it says both
//!   `destructiveHint: false` and `openWorldHint: false` (a missing hint counts as its MCP
//!   default, `true`). A call that needs approval under policy `never` fails.
//! - Answers: Allow, Allow for this session, Always allow (written to the config), Deny. The
//!   remember-options are offered, and honoured, only under `auto`; under `prompt` and `writes`
//!   they count as a plain Allow.
//!
//! Approvals only ever narrow what a plugin may do: nothing here changes a plugin's own forms,
//! and no setting turns a declined form or a disabled tool into an allowed one.

use std::collections::HashSet;
use std::fmt;

use formwork_forms::render::{
    BlockType, InputKind, Question, QuestionOption, RenderAnswers, RenderBlock,
};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::config::{ApprovalMode, ApprovalPolicy, Config, ServerConfig, Transport, dotted};

/// The error of a tool call that needs approval while the policy is `never` (Codex's text).
pub const NEVER_POLICY_MESSAGE: &str =
    "MCP tool call requires approval, but approval policy is never";
/// The error of a tool call the person denied (Codex's text).
pub const DENIED_MESSAGE: &str = "user rejected MCP tool call";
/// The error of a tool call whose approval was cancelled (Codex's text).
pub const CANCELLED_MESSAGE: &str = "user cancelled MCP tool call";
/// The header of the approval question (Codex's text).
pub const APPROVAL_HEADER: &str = "Approve app tool call?";
/// The prefix of the approval question's id and of the approval form's request id.
pub const APPROVAL_ID_PREFIX: &str = "mcp_tool_call_approval_";
/// `_meta.codex_approval_kind` of the approval form.
pub const APPROVAL_KIND: &str = "mcp_tool_call";

// ---------------------------------------------------------------------------------------------
// Plugin forms

/// Why a plugin's form may reach the person.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ElicitationAllowed {
    /// `approval_policy = "untrusted"`.
    Untrusted,
    /// `approval_policy = "on-request"`.
    OnRequest,
    /// Granular policy with `mcp_elicitations = true`.
    Granular,
}

/// Why a plugin's form is declined before the person sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ElicitationDeclined {
    /// `elicitations_auto_deny = true`.
    AutoDeny,
    /// `approval_policy = "never"`.
    PolicyNever,
    /// Granular policy with `mcp_elicitations = false`.
    GranularDisallowed,
}

/// Whether a plugin's form (an MCP elicitation) may reach the person. The checks run in
/// Codex's order: auto-deny first, then the policy.
pub fn elicitation_gate(config: &Config) -> Result<ElicitationAllowed, ElicitationDeclined> {
    if config.elicitations_auto_deny {
        return Err(ElicitationDeclined::AutoDeny);
    }
    match config.approval_policy {
        ApprovalPolicy::Never => Err(ElicitationDeclined::PolicyNever),
        ApprovalPolicy::Granular(granular) if !granular.mcp_elicitations => {
            Err(ElicitationDeclined::GranularDisallowed)
        }
        ApprovalPolicy::Granular(_) => Ok(ElicitationAllowed::Granular),
        ApprovalPolicy::Untrusted => Ok(ElicitationAllowed::Untrusted),
        ApprovalPolicy::OnRequest => Ok(ElicitationAllowed::OnRequest),
    }
}

impl fmt::Display for ElicitationAllowed {
    /// The reason, for the log and the transcript.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ElicitationAllowed::Untrusted => {
                r#"plugin forms are shown: approval_policy = "untrusted" allows them"#
            }
            ElicitationAllowed::OnRequest => {
                r#"plugin forms are shown: approval_policy = "on-request" allows them"#
            }
            ElicitationAllowed::Granular => {
                "plugin forms are shown: approval_policy granular.mcp_elicitations = true"
            }
        })
    }
}

impl fmt::Display for ElicitationDeclined {
    /// The reason, for the log, the transcript and the plugin.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ElicitationDeclined::AutoDeny => {
                "plugin form declined: elicitations_auto_deny = true declines every plugin form"
            }
            ElicitationDeclined::PolicyNever => {
                r#"plugin form declined: approval_policy = "never" declines plugin forms"#
            }
            ElicitationDeclined::GranularDisallowed => {
                "plugin form declined: approval_policy granular.mcp_elicitations = false"
            }
        })
    }
}

// ---------------------------------------------------------------------------------------------
// Tool calls

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
    if let Some(mode) = server.default_tools_approval_mode {
        return (mode, ModeSource::Server);
    }
    if server.builtin {
        (ApprovalMode::Approve, ModeSource::BuiltinDefault)
    } else {
        (ApprovalMode::Auto, ModeSource::Default)
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
            let (needed, why) = requires_approval(mode, annotations);
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

// ---------------------------------------------------------------------------------------------
// The approval card

/// What the host knows about the call being approved.
#[derive(Debug, Clone, Copy)]
pub struct ApprovalRequest<'a> {
    /// The call's id; the card's id is `mcp_tool_call_approval_<call_id>`.
    pub call_id: &'a str,
    /// The tool's `title`, if it has one.
    pub tool_title: Option<&'a str>,
    /// The tool's `description`, if it has one.
    pub tool_description: Option<&'a str>,
    /// The call's arguments.
    pub arguments: Option<&'a Value>,
}

/// How the approval card is shown, chosen by `features.tool_call_mcp_elicitation`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CardRendering {
    /// A `request_user_input` question ([`ApprovalCard::render_block`]); the default.
    RequestUserInput,
    /// An elicitation-style form with `_meta.codex_approval_kind = "mcp_tool_call"`
    /// ([`ApprovalCard::elicitation_params`]).
    McpElicitation,
}

/// The rendering `config` asks for.
pub fn card_rendering(config: &Config) -> CardRendering {
    if config.features.tool_call_mcp_elicitation {
        CardRendering::McpElicitation
    } else {
        CardRendering::RequestUserInput
    }
}

/// One of the card's choices.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalChoice {
    /// Run this call.
    Allow,
    /// Run this call and later calls of the tool in this session.
    AllowForSession,
    /// Run this call and write `approval_mode = "approve"` for the tool to the config.
    AlwaysAllow,
    /// Do not run the call.
    Deny,
}

impl ApprovalChoice {
    /// The option's label.
    pub fn label(self) -> &'static str {
        match self {
            ApprovalChoice::Allow => "Allow",
            ApprovalChoice::AllowForSession => "Allow for this session",
            ApprovalChoice::AlwaysAllow => "Always allow",
            ApprovalChoice::Deny => "Deny",
        }
    }

    /// The option's description.
    pub fn description(self) -> &'static str {
        match self {
            ApprovalChoice::Allow => "Run the tool and continue.",
            ApprovalChoice::AllowForSession => {
                "Run the tool and remember this choice for this session."
            }
            ApprovalChoice::AlwaysAllow => {
                "Run the tool and remember this choice in the config for future tool calls."
            }
            ApprovalChoice::Deny => "Do not run the tool.",
        }
    }
}

/// Codex's labels, read as answers too so a UI made for Codex works unchanged.
const CODEX_ALWAYS_LABEL: &str = "Allow and don't ask me again";
const CODEX_CANCEL_LABEL: &str = "Cancel";
const CODEX_DECLINE_MARKER: &str = "__codex_mcp_decline__";

/// The person's answer to an approval card, after normalisation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovalAnswer {
    /// What the call does now. A cancelled card is a [`ApprovalChoice::Deny`].
    pub choice: ApprovalChoice,
    /// Whether the card was cancelled (or left unanswered) rather than answered with Deny.
    pub cancelled: bool,
    /// Why, for the log and the transcript.
    pub reason: String,
}

impl ApprovalAnswer {
    /// Whether the tool call runs.
    pub fn runs_tool(&self) -> bool {
        self.choice != ApprovalChoice::Deny
    }

    /// Whether later calls of the tool in this session run without a card.
    pub fn remembers_for_session(&self) -> bool {
        matches!(
            self.choice,
            ApprovalChoice::AllowForSession | ApprovalChoice::AlwaysAllow
        )
    }

    /// Whether `approval_mode = "approve"` is to be written for the tool
    /// ([`crate::config::remember_always_allow`]).
    pub fn writes_config(&self) -> bool {
        self.choice == ApprovalChoice::AlwaysAllow
    }

    /// The error the tool call fails with when it does not run.
    pub fn failure_message(&self) -> Option<&'static str> {
        match (self.choice, self.cancelled) {
            (ApprovalChoice::Deny, true) => Some(CANCELLED_MESSAGE),
            (ApprovalChoice::Deny, false) => Some(DENIED_MESSAGE),
            _ => None,
        }
    }
}

/// Under `prompt` and `writes` every call asks again, so "for this session" and "always"
/// count as a plain Allow (Codex's `normalize_approval_decision_for_mode`).
pub fn normalize_choice(mode: ApprovalMode, choice: ApprovalChoice) -> ApprovalChoice {
    match (mode, choice) {
        (
            ApprovalMode::Prompt | ApprovalMode::Writes,
            ApprovalChoice::AllowForSession | ApprovalChoice::AlwaysAllow,
        ) => ApprovalChoice::Allow,
        _ => choice,
    }
}

/// The approval card of one tool call, as data; render it with [`ApprovalCard::render_block`]
/// or [`ApprovalCard::elicitation_params`] and read the answer back with the matching
/// `answer_from_*`.
#[derive(Debug, Clone, PartialEq)]
pub struct ApprovalCard {
    /// `mcp_tool_call_approval_<call_id>`: the question id, and the id of the form request.
    pub id: String,
    /// The server.
    pub server: String,
    /// The tool.
    pub tool: String,
    /// The approval mode that asked for the card.
    pub mode: ApprovalMode,
    /// The remember-options offered.
    pub offers: RememberOffers,
    /// `Allow the <server> MCP server to run tool "<tool>"?`
    pub message: String,
    /// The tool's title.
    pub tool_title: Option<String>,
    /// The tool's description.
    pub tool_description: Option<String>,
    /// The call's arguments (`{}` when there are none).
    pub arguments: Value,
}

impl ToolApproval {
    /// The card for this call, when the verdict is [`ApprovalNeed::Card`].
    pub fn card(&self, request: &ApprovalRequest<'_>) -> Option<ApprovalCard> {
        let ApprovalNeed::Card(offers) = self.need else {
            return None;
        };
        Some(ApprovalCard {
            id: format!("{APPROVAL_ID_PREFIX}{}", request.call_id),
            server: self.server.clone(),
            tool: self.tool.clone(),
            mode: self.mode,
            offers,
            message: format!(
                "Allow the {} MCP server to run tool \"{}\"?",
                self.server, self.tool
            ),
            tool_title: request.tool_title.map(str::to_owned),
            tool_description: request.tool_description.map(str::to_owned),
            arguments: request
                .arguments
                .cloned()
                .unwrap_or_else(|| Value::Object(Map::new())),
        })
    }
}

impl ApprovalCard {
    /// The choices offered, in order: Allow, the offered remember-options, Deny.
    pub fn choices(&self) -> Vec<ApprovalChoice> {
        let mut choices = vec![ApprovalChoice::Allow];
        if self.offers.session {
            choices.push(ApprovalChoice::AllowForSession);
        }
        if self.offers.always {
            choices.push(ApprovalChoice::AlwaysAllow);
        }
        choices.push(ApprovalChoice::Deny);
        choices
    }

    /// The card as a `request_user_input` block with one single-choice question (Codex's
    /// fallback approval question, with formwork's Always allow and Deny).
    pub fn render_block(&self) -> RenderBlock {
        let choices = self.choices();
        let labels: Vec<&str> = choices.iter().map(|choice| choice.label()).collect();
        let options = choices
            .iter()
            .map(|choice| QuestionOption {
                label: choice.label().to_owned(),
                description: choice.description().to_owned(),
                value: Value::String(choice.label().to_owned()),
            })
            .collect();
        RenderBlock {
            block_type: BlockType::RequestUserInput,
            message: self.message.clone(),
            questions: vec![Question {
                id: self.id.clone(),
                header: APPROVAL_HEADER.to_owned(),
                question: self.message.clone(),
                is_other: false,
                is_secret: false,
                options: Some(options),
                input: InputKind::SingleSelect,
                multi_select: false,
                required: true,
                default: None,
                minimum: None,
                maximum: None,
                exclusive_minimum: None,
                exclusive_maximum: None,
                multiple_of: None,
                min_length: None,
                max_length: None,
                min_items: None,
                max_items: None,
                format: None,
                pattern: None,
                suggestions: None,
                schema: formwork_forms::SchemaText::new(
                    &json!({ "type": "string", "enum": labels }),
                ),
            }],
        }
    }

    /// The card as elicitation-style form params: `mode: "form"`, the message, an empty
    /// `requestedSchema`, and `_meta` with `codex_approval_kind = "mcp_tool_call"`, the
    /// remember-options in `persist`, and the tool and its arguments.
    pub fn elicitation_params(&self) -> Value {
        let mut meta = Map::new();
        meta.insert("codex_approval_kind".into(), APPROVAL_KIND.into());
        match (self.offers.session, self.offers.always) {
            (true, true) => {
                meta.insert("persist".into(), json!(["session", "always"]));
            }
            (true, false) => {
                meta.insert("persist".into(), "session".into());
            }
            (false, true) => {
                meta.insert("persist".into(), "always".into());
            }
            (false, false) => {}
        }
        meta.insert("tool_name".into(), self.tool.clone().into());
        if let Some(title) = &self.tool_title {
            meta.insert("tool_title".into(), title.clone().into());
        }
        if let Some(description) = &self.tool_description {
            meta.insert("tool_description".into(), description.clone().into());
        }
        meta.insert("tool_params".into(), self.arguments.clone());
        meta.insert("tool_params_display".into(), self.params_display());
        json!({
            "mode": "form",
            "message": self.message,
            "requestedSchema": { "type": "object", "properties": {} },
            "_meta": Value::Object(meta),
        })
    }

    /// `[{name, value, display_name}]` for each argument, sorted by name.
    fn params_display(&self) -> Value {
        let mut params: Vec<(&String, &Value)> = self
            .arguments
            .as_object()
            .map(|arguments| arguments.iter().collect())
            .unwrap_or_default();
        params.sort_by(|left, right| left.0.cmp(right.0));
        Value::Array(
            params
                .into_iter()
                .map(|(name, value)| json!({ "name": name, "value": value, "display_name": name }))
                .collect(),
        )
    }

    /// Reads the answer to [`ApprovalCard::render_block`]: the chosen label of this card's
    /// question. No answer, Codex's `Cancel`, or an unknown label cancels.
    pub fn answer_from_render(&self, answers: &RenderAnswers) -> ApprovalAnswer {
        let labels = answers
            .answers
            .get(&self.id)
            .map(|answer| answer.answers.as_slice())
            .unwrap_or_default();
        self.answer_from_labels(labels, "the approval question was not answered")
    }

    /// Reads the result of [`ApprovalCard::elicitation_params`] (`{action, content?, _meta?}`):
    /// `accept` is Allow, or Allow for this session / Always allow when `_meta.persist` is
    /// `"session"` / `"always"` (or the content answers the question with that label);
    /// `decline` is Deny; `cancel`, or anything else, cancels.
    pub fn answer_from_elicitation(&self, result: &Value) -> ApprovalAnswer {
        match result.get("action").and_then(Value::as_str) {
            Some("accept") => {
                let persist = result
                    .get("_meta")
                    .and_then(|meta| meta.get("persist"))
                    .and_then(Value::as_str);
                match persist {
                    Some("session") => return self.answer(ApprovalChoice::AllowForSession),
                    Some("always") => return self.answer(ApprovalChoice::AlwaysAllow),
                    _ => {}
                }
                let labels: Vec<String> = match result
                    .get("content")
                    .and_then(|content| content.get(&self.id))
                {
                    Some(Value::String(label)) => vec![label.clone()],
                    Some(Value::Array(items)) => items
                        .iter()
                        .filter_map(|item| item.as_str().map(str::to_owned))
                        .collect(),
                    _ => Vec::new(),
                };
                if labels.is_empty() {
                    self.answer(ApprovalChoice::Allow)
                } else {
                    let answer = self.answer_from_labels(&labels, "");
                    // As in Codex, an accepted form never turns into a cancel.
                    if answer.cancelled {
                        self.answer(ApprovalChoice::Allow)
                    } else {
                        answer
                    }
                }
            }
            Some("decline") => self.answer(ApprovalChoice::Deny),
            Some("cancel") => self.cancel("the approval form was cancelled"),
            _ => self.cancel("the approval form's answer has no valid action"),
        }
    }

    /// The answer for a choice made directly (a UI that sends the choice itself), normalised
    /// for the card's mode and offers.
    pub fn answer(&self, choice: ApprovalChoice) -> ApprovalAnswer {
        let mut effective = normalize_choice(self.mode, choice);
        if (effective == ApprovalChoice::AllowForSession && !self.offers.session)
            || (effective == ApprovalChoice::AlwaysAllow && !self.offers.always)
        {
            effective = ApprovalChoice::Allow;
        }
        let tool = tool_name(&self.server, &self.tool);
        let mut reason = match effective {
            ApprovalChoice::Allow => format!("the person allowed this call of {tool}"),
            ApprovalChoice::AllowForSession => {
                format!("the person allowed {tool} for this session")
            }
            ApprovalChoice::AlwaysAllow => format!(
                "the person always allowed {tool}; {}.approval_mode = \"approve\" goes into the config",
                dotted(["mcp_servers", &self.server, "tools", &self.tool])
            ),
            ApprovalChoice::Deny => format!("the person denied this call of {tool}"),
        };
        if effective != choice && normalize_choice(self.mode, choice) == choice {
            reason.push_str(&format!(
                " (\"{}\" counts as \"Allow\": this card does not offer it)",
                choice.label()
            ));
        } else if effective != choice {
            reason.push_str(&format!(
                " (\"{}\" counts as \"Allow\" under approval mode \"{}\")",
                choice.label(),
                self.mode
            ));
        }
        ApprovalAnswer {
            choice: effective,
            cancelled: false,
            reason,
        }
    }

    /// A cancelled card: the call does not run.
    pub fn cancel(&self, why: &str) -> ApprovalAnswer {
        ApprovalAnswer {
            choice: ApprovalChoice::Deny,
            cancelled: true,
            reason: format!(
                "approval of {} cancelled: {why}",
                tool_name(&self.server, &self.tool)
            ),
        }
    }

    /// Reads chosen labels, the most cautious first: Deny beats every Allow.
    fn answer_from_labels(&self, labels: &[String], unanswered: &str) -> ApprovalAnswer {
        let has = |wanted: &[&str]| labels.iter().any(|label| wanted.contains(&label.as_str()));
        if has(&[ApprovalChoice::Deny.label(), CODEX_DECLINE_MARKER]) {
            self.answer(ApprovalChoice::Deny)
        } else if has(&[ApprovalChoice::AllowForSession.label()]) {
            self.answer(ApprovalChoice::AllowForSession)
        } else if has(&[ApprovalChoice::AlwaysAllow.label(), CODEX_ALWAYS_LABEL]) {
            self.answer(ApprovalChoice::AlwaysAllow)
        } else if has(&[ApprovalChoice::Allow.label()]) {
            self.answer(ApprovalChoice::Allow)
        } else if has(&[CODEX_CANCEL_LABEL]) {
            self.cancel("the person chose Cancel")
        } else if labels.is_empty() {
            self.cancel(unanswered)
        } else {
            self.cancel(&format!("unknown answer {:?}", labels.join(", ")))
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The effective policy

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

/// `tool "deploy" of server demo`, for reasons.
fn tool_name(server: &str, tool: &str) -> String {
    format!("tool {tool:?} of server {server}")
}
