//! `formwork schema check [FILE|-]` (docs/cli.md): the render block of a schema, or why it is declined.
//! The fixture `fixtures/everything-elicitation.json` is the exact `params` server-everything 2026.8.31 sends for
//! `trigger-elicitation-request` (captured from the installed package; identical to peers.md §2).

mod common;

use std::path::PathBuf;

use common::{Output, formwork};
use serde_json::{Value, json};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn everything_params() -> Value {
    let text = std::fs::read_to_string(fixture("everything-elicitation.json"))
        .expect("reading the fixture");
    serde_json::from_str(&text).expect("fixture JSON")
}

/// `schema check -` with `input` on stdin.
fn check_stdin(input: &Value) -> Output {
    formwork(
        &["schema", "check", "-"],
        Some(input.to_string().as_bytes()),
    )
}

/// The render block's questions, after checking the block's shape.
fn questions(output: &Output, message: &str) -> Vec<Value> {
    output.assert_code(0);
    let block = output.json();
    assert_eq!(block["type"], "request_user_input", "{output}");
    assert_eq!(block["message"], message, "{output}");
    block["questions"]
        .as_array()
        .cloned()
        .unwrap_or_else(|| panic!("no questions: {output}"))
}

#[test]
fn everything_schema_renders_13_questions() {
    let path = fixture("everything-elicitation.json");
    let output = formwork(
        &["schema", "check", path.to_str().expect("utf-8 path")],
        None,
    );
    let questions = questions(&output, "Please provide inputs for the following fields:");
    let ids: Vec<&str> = questions
        .iter()
        .filter_map(|question| question["id"].as_str())
        .collect();
    assert_eq!(
        ids,
        [
            "name",
            "check",
            "firstLine",
            "email",
            "homepage",
            "birthdate",
            "integer",
            "number",
            "untitledSingleSelectEnum",
            "untitledMultipleSelectEnum",
            "titledSingleSelectEnum",
            "titledMultipleSelectEnum",
            "legacyTitledEnum"
        ],
        "{output}"
    );
    let schema = &everything_params()["requestedSchema"]["properties"];
    assert_eq!(
        questions[10],
        json!({
            "id": "titledSingleSelectEnum",
            "header": "Titled Single Select Enum",
            "question": "Choose your favorite hero",
            "isOther": false,
            "isSecret": false,
            "options": [
                { "label": "Superman", "description": "", "value": "hero-1" },
                { "label": "Green Lantern", "description": "", "value": "hero-2" },
                { "label": "Wonder Woman", "description": "", "value": "hero-3" }
            ],
            "input": "single_select",
            "multiSelect": false,
            "required": false,
            "default": "hero-1",
            "schema": schema["titledSingleSelectEnum"]
        }),
        "{output}"
    );
    assert_eq!(
        questions[6],
        json!({
            "id": "integer",
            "header": "Integer",
            "question": "Your favorite integer (do not give us your phone number, pin, or other sensitive info)",
            "isOther": false,
            "isSecret": false,
            "input": "integer",
            "multiSelect": false,
            "required": false,
            "default": 42,
            "minimum": 1,
            "maximum": 100,
            "schema": schema["integer"]
        }),
        "{output}"
    );
}

/// A bare `requestedSchema` on stdin renders the same questions as the whole params.
#[test]
fn bare_schema_on_stdin_renders_the_same_questions() {
    let params = everything_params();
    let from_params = check_stdin(&params);
    let from_schema = check_stdin(&params["requestedSchema"]);
    from_schema.assert_code(0);
    assert_eq!(
        questions(
            &from_params,
            "Please provide inputs for the following fields:"
        ),
        from_schema.json()["questions"]
            .as_array()
            .cloned()
            .unwrap_or_default(),
        "{from_schema}"
    );
}

#[test]
fn stdin_is_read_when_no_file_is_given() {
    let output = formwork(
        &["schema", "check"],
        Some(everything_params().to_string().as_bytes()),
    );
    assert_eq!(
        questions(&output, "Please provide inputs for the following fields:").len(),
        13
    );
}

#[test]
fn nested_object_is_declined_naming_the_property() {
    let schema = json!({
        "type": "object",
        "properties": {
            "name": { "type": "string" },
            "address": { "type": "object", "properties": { "street": { "type": "string" } } }
        }
    });
    let output = check_stdin(&schema);
    output.assert_code(1);
    let declined = &output.json()["declined"];
    assert_eq!(declined["property"], "address", "{output}");
    assert_eq!(declined["rule"], "nested-object", "{output}");
    let reason = declined["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("address"),
        "the reason does not name the property: {output}"
    );
}

#[test]
fn declined_without_a_property_gives_null() {
    let output = check_stdin(&json!({ "mode": "telepathy", "message": "think of a number" }));
    output.assert_code(1);
    let declined = &output.json()["declined"];
    assert_eq!(declined["property"], Value::Null, "{output}");
    assert!(
        declined["rule"]
            .as_str()
            .is_some_and(|rule| !rule.is_empty()),
        "{output}"
    );
}

#[test]
fn unreadable_input_exits_2() {
    formwork(
        &["schema", "check", "/nonexistent/formwork/schema.json"],
        None,
    )
    .assert_code(2);
    formwork(&["schema", "check", "-"], Some(b"this is not JSON {")).assert_code(2);
}

/// A field that names a secret carries the mark; one that only looks alike does not.
#[test]
fn a_field_that_names_a_secret_is_marked_sensitive() {
    let output = check_stdin(&json!({
        "type": "object",
        "properties": {
            "apiKey": {"type": "string", "title": "Key"},
            "max_tokens": {"type": "integer"},
            "pin": {"type": "string", "title": "支付密码"}
        }
    }));
    let marks: Vec<(String, Value)> = questions(&output, "")
        .iter()
        .map(|q| {
            (
                q["id"].as_str().expect("an id").to_owned(),
                q["sensitive"].clone(),
            )
        })
        .collect();
    assert_eq!(
        marks,
        [
            ("apiKey".to_owned(), json!(true)),
            ("max_tokens".to_owned(), Value::Null),
            ("pin".to_owned(), json!(true)),
        ]
    );
}

#[test]
fn openai_elicitation_reads_the_extension_vocabulary() {
    let schema = json!({"type": "object", "properties": {"part": {
        "type": "string", "format": "uri",
        "x-openai-input": {"type": "resource", "options": [{"uri": "cad://parts/washer", "name": "washer"}]}
    }}});
    let output = formwork(
        &["schema", "check", "--openai-elicitation", "-"],
        Some(schema.to_string().as_bytes()),
    );
    let shown = questions(&output, "");
    assert_eq!(shown[0]["input"], "resource", "{output}");
    assert_eq!(
        shown[0]["options"],
        json!([{"label": "washer", "description": "", "value": "cad://parts/washer"}]),
        "{output}"
    );
    // Without the flag, the same property is a `uri` text field.
    let plain = questions(&check_stdin(&schema), "");
    assert_eq!(plain[0]["input"], "text");
    let declined = formwork(
        &["schema", "check", "--openai-elicitation", "-"],
        Some(
            json!({"type": "object", "properties": {"part": {"type": "string", "format": "uri",
                "x-openai-input": {"type": "resource", "userOptions": {"kind": "directory"}}}}})
            .to_string()
            .as_bytes(),
        ),
    );
    declined.assert_code(1);
    assert_eq!(
        declined.json(),
        json!({"declined": {"property": "part", "rule": "unsupported-input", "reason":
            "property `part`: asks for a directory (`userOptions.kind: \"directory\"`); formwork can add files only"}})
    );
}
