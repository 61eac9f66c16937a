//! CAD part: an OpenAI form, with a thumbnail and a description on each option, suggested
//! materials, and a resource picker for the drawing (offered drawings, or an uploaded `.stl` or
//! `.step` file).
//!
//! Only clients that declare `extensions["openai/elicitation"].form` can show it; formwork-sdk
//! sends nothing to any other client, and the tool reads its `part` and `material` arguments
//! instead.

use formwork_sdk::openai::{ResourceInput, ResourceOption, Suggestion, Thumbnail, UserOptions};
use formwork_sdk::{Ask, Asker, Elicit, FormSchema, SchemaError};
use rmcp::model::{CallToolResult, ErrorData, JsonObject};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::{done, failed, text_argument};

/// The parts in the catalogue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Part {
    /// M6 hex bolt
    ///
    /// A fastener for the main joint
    HexBolt,
    /// M6 washer
    ///
    /// Spreads the bolt's load
    Washer,
    /// M6 nut
    ///
    /// Locks the bolt in place
    Nut,
}

impl Part {
    fn name(self) -> &'static str {
        match self {
            Part::HexBolt => "hex-bolt",
            Part::Washer => "washer",
            Part::Nut => "nut",
        }
    }
}

/// The form: which part, in what material, from which drawing.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct PartForm {
    #[schemars(title = "Part")]
    pub part: Part,
    #[schemars(
        title = "Material",
        description = "Pick a suggestion or type your own."
    )]
    pub material: String,
    #[schemars(
        title = "Drawing",
        description = "The drawing to check the part against (optional)."
    )]
    pub drawing: Option<String>,
}

impl Elicit for PartForm {
    fn customize(form: &mut FormSchema) -> Result<(), SchemaError> {
        for part in [Part::HexBolt, Part::Washer, Part::Nut] {
            let src = format!("https://example.com/parts/{}.png", part.name());
            form.thumbnail(
                "part",
                part.name(),
                Thumbnail::new(src).mime_type("image/png"),
            )?;
        }
        form.suggestions(
            "material",
            vec![
                Suggestion::new("steel", "Zinc-plated steel"),
                Suggestion::new("stainless", "A2 stainless steel")
                    .description("For parts that get wet"),
                Suggestion::new("brass", "Brass"),
            ],
        )?
        .resource_input(
            "drawing",
            ResourceInput::new(vec![
                ResourceOption::new("cad://drawings/m6-assembly.step", "m6-assembly.step")
                    .title("M6 assembly")
                    .mime_type("model/step"),
                ResourceOption::new("cad://drawings/m6-bolt.stl", "m6-bolt.stl")
                    .mime_type("model/stl"),
            ])
            .user_options(UserOptions::files().accept([".stl", ".step"])),
        )?;
        Ok(())
    }
}

pub(crate) fn tool() -> Value {
    json!({
        "name": "inspect_part",
        "description": "Open a CAD part for inspection; asks which one (an OpenAI form with pictures and a file picker).",
        "inputSchema": {"type": "object", "properties": {
            "part": {"type": "string", "enum": ["hex-bolt", "washer", "nut"],
                     "description": "Used only when the client cannot show OpenAI forms."},
            "material": {"type": "string", "description": "Used only when the client cannot show OpenAI forms."}
        }},
    })
}

pub(crate) async fn call(ask: Asker, arguments: &JsonObject) -> Result<CallToolResult, ErrorData> {
    Ok(
        match ask.ask::<PartForm>("Choose a part to inspect").await? {
            Ask::Accepted(form) => done(format!(
                "Inspecting {} in {}, against {}.",
                form.part.name(),
                form.material,
                form.drawing.as_deref().unwrap_or("no drawing")
            )),
            Ask::Declined => done("No part inspected: the form was declined."),
            Ask::Cancelled => done("No part inspected: the form was cancelled."),
            Ask::Invalid(reason) => failed(format!(
                "No part inspected: the answer did not fit: {reason}"
            )),
            Ask::NotSupported => match text_argument(arguments, "part")
                .and_then(|name| serde_json::from_value::<Part>(json!(name)).ok())
            {
                Some(part) => done(format!(
                    "Inspecting {} in {} (the arguments: this client shows no OpenAI forms).",
                    part.name(),
                    text_argument(arguments, "material").unwrap_or("steel")
                )),
                None => failed(
                    "No part inspected: this client shows no OpenAI forms; pass `part` \
                 (hex-bolt, washer or nut) as an argument.",
                ),
            },
        },
    )
}
