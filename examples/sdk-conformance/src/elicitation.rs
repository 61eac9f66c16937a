//! The three tools that ask the user (`elicitation/create`): `test_elicitation`
//! (tools-call-elicitation), `test_elicitation_sep1034_defaults` (a default for each primitive
//! type) and `test_elicitation_sep1330_enums` (the five enum shapes).
//!
//! This module is the only one that sends elicitation requests; the rest of the server reaches it
//! through `tools` and `call`. Each form is authored as JSON in the order its fields should be
//! shown (serde_json keeps insertion order) and read into rmcp's request type, which keeps that
//! order, instead of being built with rmcp's schema builder, which sorts the fields by name.

use rmcp::model::{CallToolResult, ContentBlock, ElicitRequestParams, ElicitResult, JsonObject};
use rmcp::service::ElicitationMode;
use rmcp::{ErrorData, Peer, RoleServer};
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

/// Runs the elicitation tool `name`, or returns `None` when `name` is not one of them.
pub async fn call(
    name: &str,
    arguments: &JsonObject,
    peer: &Peer<RoleServer>,
) -> Option<Result<CallToolResult, ErrorData>> {
    let (params, summary) = match name {
        "test_elicitation" => {
            let Some(message) = arguments.get("message").and_then(Value::as_str) else {
                let err = ErrorData::invalid_params("missing string argument `message`", None);
                return Some(Err(err));
            };
            (user_details(message), "User response")
        }
        "test_elicitation_sep1034_defaults" => (defaults(), "Elicitation completed"),
        "test_elicitation_sep1330_enums" => (enums(), "Elicitation completed"),
        _ => return None,
    };
    Some(ask(peer, params, summary).await)
}

/// Sends the form and reports the answer as `<summary>: action=…, content=…`.
async fn ask(
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

/// tools-call-elicitation: two required strings.
fn user_details(message: &str) -> Value {
    json!({
        "message": message,
        "requestedSchema": {
            "type": "object",
            "properties": {
                "username": {"type": "string", "description": "User's response"},
                "email": {"type": "string", "description": "User's email address"},
            },
            "required": ["username", "email"],
        },
    })
}

/// elicitation-sep1034-defaults: a default for a string, an integer, a number, an enum and a
/// boolean.
fn defaults() -> Value {
    json!({
        "message": "Please review and update the form fields with defaults",
        "requestedSchema": {
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "User name", "default": "John Doe"},
                "age": {"type": "integer", "description": "User age", "default": 30},
                "score": {"type": "number", "description": "User score", "default": 95.5},
                "status": {
                    "type": "string",
                    "description": "User status",
                    "enum": ["active", "inactive", "pending"],
                    "default": "active",
                },
                "verified": {"type": "boolean", "description": "Verification status", "default": true},
            },
            "required": [],
        },
    })
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

    /// rmcp's request type carries each form to the wire unchanged: same fields, same order.
    #[test]
    fn forms_reach_the_wire_as_written() {
        for form in [
            user_details("Please provide your information"),
            defaults(),
            enums(),
        ] {
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
    }
}
