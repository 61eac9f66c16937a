//! The approval card: its two renderings (a `request_user_input` question, or an MCP
//! elicitation form) and what an answer to it means.

use formwork_forms::render::{
    BlockType, InputKind, Question, QuestionOption, RenderAnswers, RenderBlock,
};
use serde::Serialize;
use serde_json::{Map, Value, json};

use super::approval::{ApprovalNeed, RememberOffers, ToolApproval};
use super::{
    APPROVAL_HEADER, APPROVAL_ID_PREFIX, APPROVAL_KIND, CANCELLED_MESSAGE, DENIED_MESSAGE,
    tool_name,
};
use crate::approval_choice::ApprovalChoice;
use crate::config::{ApprovalMode, Config, dotted};

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
            message: if self.read_from.is_empty() {
                format!(
                    "Allow the {} MCP server to run tool \"{}\"?",
                    self.server, self.tool
                )
            } else {
                format!(
                    "Allow the {} MCP server to run tool \"{}\"? This turn has read from {}.",
                    self.server,
                    self.tool,
                    self.read_from.join(", ")
                )
            },
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
                thumbnail: None,
            })
            .collect();
        RenderBlock {
            block_type: BlockType::RequestUserInput,
            message: self.message.clone(),
            questions: vec![Question {
                sensitive: false,
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
                option_images: false,
                resource: None,
                schema: formwork_forms::JsonText::new(&json!({ "type": "string", "enum": labels })),
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
