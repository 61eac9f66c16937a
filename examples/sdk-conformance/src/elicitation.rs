//! The three tools that ask the user: `test_elicitation` (tools-call-elicitation),
//! `test_elicitation_sep1034_defaults` (a default for each primitive type) and
//! `test_elicitation_sep1330_enums` (the five enum shapes).
//!
//! The first two ask through formwork-sdk, from Rust types (`UserDetails`, `Defaults`), which also
//! checks the answer against the form. The third must send the deprecated `enumNames` shape,
//! which formwork-sdk never writes (it writes titled `oneOf`), so it sends its form, authored as
//! JSON in field order, with rmcp's `create_elicitation` instead. This module is the only one that
//! asks; the rest of the server reaches it through `tools` and `call`.

use formwork_sdk::{Ask, Asker, Elicit, Forms};
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ContentBlock, ElicitRequestParams, ElicitResult,
};
use rmcp::service::{ElicitationMode, RequestContext};
use rmcp::{ErrorData, Peer, RoleServer};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::fixtures::from_json;

/// The definitions of the elicitation tools, for `tools/list`.
pub fn tools() -> [Value; 3] {
    [
        json!({
            "name": "test_elicitation",
            "description": "Asks the user for a username and an email address",
            "inputSchema": {
                "type": "object",
                "properties": {"message": {"type": "string", "description": "The message to show the user"}},
                "required": ["message"],
            },
        }),
        json!({
            "name": "test_elicitation_sep1034_defaults",
            "description": "Asks with a default value for each primitive type (SEP-1034)",
            "inputSchema": {"type": "object", "properties": {}},
        }),
        json!({
            "name": "test_elicitation_sep1330_enums",
            "description": "Asks with each kind of enum field (SEP-1330)",
            "inputSchema": {"type": "object", "properties": {}},
        }),
    ]
}

/// tools-call-elicitation: two required strings.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
struct UserDetails {
    /// User's response
    username: String,
    /// User's email address
    email: String,
}

impl Elicit for UserDetails {}

/// The states of `Defaults::status`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Status {
    Active,
    Inactive,
    Pending,
}

fn john_doe() -> String {
    "John Doe".to_owned()
}

fn thirty() -> i64 {
    30
}

fn ninety_five_and_a_half() -> f64 {
    95.5
}

fn active() -> Status {
    Status::Active
}

fn yes() -> bool {
    true
}

/// elicitation-sep1034-defaults: a default for a string, an integer, a number, an enum and a
/// boolean.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
struct Defaults {
    /// User name
    #[serde(default = "john_doe")]
    name: String,
    /// User age
    #[serde(default = "thirty")]
    age: i64,
    /// User score
    #[serde(default = "ninety_five_and_a_half")]
    score: f64,
    /// User status
    #[serde(default = "active")]
    status: Status,
    /// Verification status
    #[serde(default = "yes")]
    verified: bool,
}

impl Elicit for Defaults {}

/// Runs the elicitation tool of `request`, or returns `None` when it is not one of them.
pub async fn call(
    request: &CallToolRequestParams,
    context: &RequestContext<RoleServer>,
    forms: &Forms,
) -> Option<Result<rmcp::model::CallToolResponse, ErrorData>> {
    match request.name.as_ref() {
        "test_elicitation" => {
            let message = request
                .arguments
                .as_ref()
                .and_then(|arguments| arguments.get("message"))
                .and_then(Value::as_str)
                .map(str::to_owned);
            let Some(message) = message else {
                let err = ErrorData::invalid_params("missing string argument `message`", None);
                return Some(Err(err));
            };
            let tool = move |ask: Asker| async move {
                let answer = ask.ask::<UserDetails>(&message).await?;
                Ok(report("User response", answer))
            };
            Some(forms.run(request, context, tool).await)
        }
        "test_elicitation_sep1034_defaults" => {
            let tool = |ask: Asker| async move {
                let message = "Please review and update the form fields with defaults";
                let answer = ask.ask::<Defaults>(message).await?;
                Ok(report("Elicitation completed", answer))
            };
            Some(forms.run(request, context, tool).await)
        }
        "test_elicitation_sep1330_enums" => Some(
            ask_raw(&context.peer, enums(), "Elicitation completed")
                .await
                .map(Into::into),
        ),
        _ => None,
    }
}

/// The answer as `<summary>: action=…, content=…`.
fn report<T: Serialize>(summary: &str, answer: Ask<T>) -> CallToolResult {
    let (action, content) = match answer {
        Ask::Accepted(content) => ("accept", serde_json::to_value(content).unwrap_or_default()),
        Ask::Declined => ("decline", json!({})),
        Ask::Cancelled => ("cancel", json!({})),
        Ask::NotSupported => {
            let text = "The client does not support form elicitation.";
            return CallToolResult::error(vec![ContentBlock::text(text)]);
        }
        Ask::Invalid(reason) => {
            let text = format!("The answer does not fit the form: {reason}");
            return CallToolResult::error(vec![ContentBlock::text(text)]);
        }
    };
    let text = format!("{summary}: action={action}, content={content}");
    CallToolResult::success(vec![ContentBlock::text(text)])
}

/// Sends the form with rmcp and reports the answer as `<summary>: action=…, content=…`.
async fn ask_raw(
    peer: &Peer<RoleServer>,
    params: Value,
    summary: &str,
) -> Result<CallToolResult, ErrorData> {
    if !peer
        .supported_elicitation_modes()
        .contains(&ElicitationMode::Form)
    {
        let text = "The client does not support form elicitation.";
        return Ok(CallToolResult::error(vec![ContentBlock::text(text)]));
    }
    let params: ElicitRequestParams = from_json(params)?;
    let answer: ElicitResult = match peer.create_elicitation(params).await {
        Ok(answer) => answer,
        Err(err) => {
            let text = format!("Elicitation failed: {err}");
            return Ok(CallToolResult::error(vec![ContentBlock::text(text)]));
        }
    };
    let action = serde_json::to_value(&answer.action)
        .map_err(|err| ErrorData::internal_error(err.to_string(), None))?;
    let action = action.as_str().unwrap_or_default();
    let content = answer.content.unwrap_or_else(|| json!({}));
    let text = format!("{summary}: action={action}, content={content}");
    Ok(CallToolResult::success(vec![ContentBlock::text(text)]))
}

/// elicitation-sep1330-enums: untitled and titled single choice, the legacy `enumNames`, untitled
/// and titled multiple choice.
fn enums() -> Value {
    json!({
        "message": "Please choose an option of each kind",
        "requestedSchema": {
            "type": "object",
            "properties": {
                "untitledSingle": {
                    "type": "string",
                    "description": "Untitled single choice",
                    "enum": ["option1", "option2", "option3"],
                },
                "titledSingle": {
                    "type": "string",
                    "description": "Titled single choice",
                    "oneOf": [
                        {"const": "value1", "title": "First Option"},
                        {"const": "value2", "title": "Second Option"},
                        {"const": "value3", "title": "Third Option"},
                    ],
                },
                "legacyEnum": {
                    "type": "string",
                    "description": "Titled single choice, legacy form",
                    "enum": ["opt1", "opt2", "opt3"],
                    "enumNames": ["Option One", "Option Two", "Option Three"],
                },
                "untitledMulti": {
                    "type": "array",
                    "description": "Untitled multiple choice",
                    "items": {"type": "string", "enum": ["option1", "option2", "option3"]},
                },
                "titledMulti": {
                    "type": "array",
                    "description": "Titled multiple choice",
                    "items": {"anyOf": [
                        {"const": "value1", "title": "First Choice"},
                        {"const": "value2", "title": "Second Choice"},
                        {"const": "value3", "title": "Third Choice"},
                    ]},
                },
            },
            "required": [],
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// rmcp's request type carries the raw form to the wire unchanged: same fields, same order.
    #[test]
    fn the_raw_form_reaches_the_wire_as_written() {
        let form = enums();
        let params: ElicitRequestParams = from_json(form.clone()).expect("rmcp reads the form");
        let wire = serde_json::to_value(&params).expect("rmcp writes the form");
        let mut expected = json!({"mode": "form"});
        expected
            .as_object_mut()
            .expect("an object")
            .extend(form.as_object().expect("an object").clone());
        assert_eq!(
            serde_json::to_string(&wire).expect("json"),
            serde_json::to_string(&expected).expect("json"),
        );
    }

    /// The typed forms are the ones the suite asks for, in field order.
    #[test]
    fn the_typed_forms_are_the_suites() {
        assert_eq!(
            UserDetails::form().expect("a form").to_value().to_string(),
            r#"{"type":"object","properties":{"username":{"type":"string","description":"User's response"},"email":{"type":"string","description":"User's email address"}},"required":["username","email"]}"#
        );
        assert_eq!(
            Defaults::form().expect("a form").to_value().to_string(),
            r#"{"type":"object","properties":{"name":{"type":"string","description":"User name","default":"John Doe"},"age":{"type":"integer","description":"User age","default":30},"score":{"type":"number","description":"User score","default":95.5},"status":{"type":"string","description":"User status","enum":["active","inactive","pending"],"default":"active"},"verified":{"type":"boolean","description":"Verification status","default":true}}}"#
        );
    }
}
