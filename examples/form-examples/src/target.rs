//! Deployment target: one single-choice question. Without forms, the `target` argument decides.

use formwork_sdk::{Ask, Asker, Elicit};
use rmcp::model::{CallToolResult, ErrorData, JsonObject};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::{done, failed, text_argument};

/// Where a build can go.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Environment {
    #[schemars(title = "Development")]
    Development,
    #[schemars(title = "Staging")]
    Staging,
    #[schemars(title = "Production")]
    Production,
}

impl Environment {
    fn name(self) -> &'static str {
        match self {
            Environment::Development => "development",
            Environment::Staging => "staging",
            Environment::Production => "production",
        }
    }
}

/// The form: the target, staging unless the person picks another.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct TargetForm {
    #[schemars(
        title = "Target",
        description = "Where the build goes.",
        extend("default" = "staging")
    )]
    pub target: Environment,
}

impl Elicit for TargetForm {}

pub(crate) fn tool() -> Value {
    json!({
        "name": "choose_target",
        "description": "Deploy the current build; asks where it goes (one choice).",
        "inputSchema": {"type": "object", "properties": {
            "target": {"type": "string", "enum": ["development", "staging", "production"],
                       "description": "Used only when the client cannot show forms."}
        }},
    })
}

pub(crate) async fn call(ask: Asker, arguments: &JsonObject) -> Result<CallToolResult, ErrorData> {
    Ok(
        match ask.ask::<TargetForm>("Where should the build go?").await? {
            Ask::Accepted(form) => done(format!("Deploying to {}.", form.target.name())),
            Ask::Declined => done("Not deployed: the target form was declined."),
            Ask::Cancelled => done("Not deployed: the target form was cancelled."),
            Ask::Invalid(reason) => {
                failed(format!("Not deployed: the answer did not fit: {reason}"))
            }
            Ask::NotSupported => match text_argument(arguments, "target")
                .and_then(|name| serde_json::from_value::<Environment>(json!(name)).ok())
            {
                Some(target) => done(format!(
                    "Deploying to {} (the `target` argument: this client shows no forms).",
                    target.name()
                )),
                None => failed(
                    "Not deployed: this client shows no forms; pass `target` \
                 (development, staging or production) as an argument.",
                ),
            },
        },
    )
}
