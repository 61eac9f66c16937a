//! Real requests (server-everything, the TS SDK, Python `mcp` and fastmcp, the seed examples, OpenAI
//! extensions) parse, render and give defaults as recorded in `tests/snapshots`.

#![allow(clippy::unwrap_used)]

mod common;

use common::{check_snapshot, fixture};
use formwork_forms::{ElicitationRequest, ParseOptions, parse_request_with};
use serde_json::{Value, json};

/// Parses `tests/fixtures/requests/<name>.json` and checks its render block, its default content,
/// and the content when only `fill` (typed values for the required fields without defaults) is
/// answered, against the snapshot `<name>`.
fn check(name: &str, fill: Value) {
    check_with(name, fill, ParseOptions::default(), "/requestedSchema");
}

/// [`check`] with `options`; `shown` points at the schema in the params that the form is made
/// of (an OpenAI form's is in `_meta`).
fn check_with(name: &str, fill: Value, options: ParseOptions, shown: &str) {
    let params = fixture(&format!("requests/{name}.json"));
    let request = match parse_request_with(&params, options) {
        Ok(ElicitationRequest::Form(request)) => request,
        other => panic!("{name}: {other:?}"),
    };
    let form = request.form.as_deref().unwrap();
    // The form gives back the schema as sent.
    let schema = params.pointer(shown).unwrap();
    assert_eq!(form.schema(), schema, "{name}");
    let defaults = match form.default_content() {
        Ok(content) => json!({ "content": content }),
        Err(errors) => json!({ "errors": errors.to_string().lines().collect::<Vec<_>>() }),
    };
    if let Some(content) = defaults.get("content") {
        form.validate(content.as_object().unwrap()).unwrap();
    }
    // The property schemas reach the UI verbatim, in order.
    let properties = schema["properties"].as_object().unwrap();
    let block = serde_json::to_value(&request.render).unwrap();
    assert_eq!(
        request.render.block().unwrap(),
        form.render(params["message"].as_str().unwrap()),
        "{name}"
    );
    let schemas: Vec<&Value> = block["questions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| &q["schema"])
        .collect();
    assert_eq!(
        schemas,
        properties.values().collect::<Vec<_>>(),
        "{name}: schemas differ from the request's"
    );
    let filled = form
        .content_from_typed(fill.as_object().unwrap())
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    let actual = json!({
        "meta": request.meta,
        "render": block,
        "defaults": defaults,
        "filled": {"typed": fill, "content": filled},
    });
    check_snapshot(name, &actual);
}

#[test]
fn server_everything_13_fields() {
    check("server_everything", json!({"name": "Ada Lovelace"}));
}

#[test]
fn ts_sdk_form() {
    check("ts_sdk", json!({"email": "ada@example.com"}));
}

#[test]
fn python_mcp_form_with_top_level_title() {
    check("python_mcp", json!({}));
}

#[test]
fn fastmcp_form() {
    check("fastmcp_form", json!({"name": "Ada"}));
}

#[test]
fn fastmcp_wrapped_value() {
    check("fastmcp_value", json!({"value": "blue"}));
}

#[test]
fn seed_single_choice() {
    check("seed_strategy", json!({"strategy": "safe"}));
}

#[test]
fn seed_custom_option_as_two_fields() {
    check(
        "seed_custom_option",
        json!({"strategy": "custom", "customStrategy": "Inspect the diff first"}),
    );
}

#[test]
fn openai_extensions_and_unknown_keywords() {
    check(
        "openai_extensions",
        json!({"code": "ABC-1234", "quantity": 25}),
    );
}

/// A 2026-07-28 OpenAI form (the schema in `_meta`) using all of the extension's vocabulary.
#[test]
fn openai_form_with_pickers_images_and_lists() {
    check_with(
        "openai_cad_form",
        json!({"code": "CAD-1234", "part": "cad://parts/washer"}),
        ParseOptions {
            openai_elicitation: true,
        },
        "/_meta/openai~1elicitation/requestedSchema",
    );
}
