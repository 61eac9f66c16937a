//! Strategy with a custom option: a choice plus a text that only the "Custom" option needs.
//!
//! The form cannot say "required when Custom is chosen", so the plugin checks it: Custom with an
//! empty text is asked again with a message that says why, at most three times in all, then the
//! tool gives up with an error result. A text next to any other choice is ignored. Without forms,
//! the `strategy` and `custom` arguments are checked the same way.

use formwork_sdk::{Ask, Asker, Elicit};
use rmcp::model::{CallToolResult, ErrorData, JsonObject};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::{done, failed, text_argument};

/// How many times the form is shown before the tool gives up.
pub const ATTEMPTS: usize = 3;

/// How a release rolls out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    #[schemars(title = "Rolling update")]
    Rolling,
    #[schemars(title = "Blue-green")]
    BlueGreen,
    #[schemars(title = "Canary")]
    Canary,
    #[schemars(title = "Custom (describe it below)")]
    Custom,
}

impl Kind {
    fn title(self) -> &'static str {
        match self {
            Kind::Rolling => "rolling update",
            Kind::BlueGreen => "blue-green",
            Kind::Canary => "canary",
            Kind::Custom => "custom",
        }
    }
}

/// The form: a choice, and a text for the custom option.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct StrategyForm {
    #[schemars(title = "Strategy", extend("default" = "rolling"))]
    pub strategy: Kind,
    #[schemars(
        title = "Custom strategy",
        description = "Needed when the strategy is Custom; ignored otherwise.",
        length(max = 200)
    )]
    pub custom: Option<String>,
}

impl Elicit for StrategyForm {}

pub(crate) fn tool() -> Value {
    json!({
        "name": "pick_strategy",
        "description": "Choose how a release rolls out; a custom strategy needs a description.",
        "inputSchema": {"type": "object", "properties": {
            "strategy": {"type": "string", "enum": ["rolling", "blue-green", "canary", "custom"],
                         "description": "Used only when the client cannot show forms."},
            "custom": {"type": "string", "description": "The custom strategy, with strategy `custom`."}
        }},
    })
}

/// The result for a valid choice, or `None` when Custom has no text.
fn chosen(kind: Kind, custom: Option<&str>, how: &str) -> Option<CallToolResult> {
    match (kind, custom.map(str::trim)) {
        (Kind::Custom, Some(text)) if !text.is_empty() => Some(done(format!(
            "Rolling out with a custom strategy{how}: {text}"
        ))),
        (Kind::Custom, _) => None,
        (kind, _) => Some(done(format!("Rolling out with {}{how}.", kind.title()))),
    }
}

pub(crate) async fn call(ask: Asker, arguments: &JsonObject) -> Result<CallToolResult, ErrorData> {
    let mut message = "How should the release roll out?";
    for _ in 0..ATTEMPTS {
        let result = match ask.ask::<StrategyForm>(message).await? {
            Ask::Accepted(form) => chosen(form.strategy, form.custom.as_deref(), ""),
            Ask::Declined => Some(done("No strategy: the form was declined.")),
            Ask::Cancelled => Some(done("No strategy: the form was cancelled.")),
            Ask::Invalid(reason) => Some(failed(format!(
                "No strategy: the answer did not fit: {reason}"
            ))),
            Ask::NotSupported => {
                let kind = text_argument(arguments, "strategy")
                    .and_then(|name| serde_json::from_value::<Kind>(json!(name)).ok());
                let how = " (the arguments: this client shows no forms)";
                return Ok(kind
                    .and_then(|kind| chosen(kind, text_argument(arguments, "custom"), how))
                    .unwrap_or_else(|| {
                        failed(
                            "No strategy: this client shows no forms; pass `strategy` \
                             (rolling, blue-green, canary, or custom with `custom`).",
                        )
                    }));
            }
        };
        if let Some(result) = result {
            return Ok(result);
        }
        message =
            "Custom needs a description: say how the release rolls out, or pick another strategy.";
    }
    Ok(failed(format!(
        "No strategy: Custom was chosen {ATTEMPTS} times without a description."
    )))
}
