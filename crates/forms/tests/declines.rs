//! Every decline rule: unsupported or hostile input is declined as a whole, naming the property and
//! the rule. The cases are data in `tests/fixtures/declines.json`; their messages are recorded in
//! the snapshot `declines`.

#![allow(clippy::unwrap_used)]

mod common;

use std::time::{Duration, Instant};

use common::{check_snapshot, fixture};
use formwork_forms::limits::{
    MAX_DEPTH, MAX_OPTIONS, MAX_PATTERN_BYTES, MAX_PROPERTIES, MAX_TEXT_BYTES,
};
use formwork_forms::{Decline, parse_request, parse_schema};
use serde_json::{Map, Value, json};

/// Parses `params` (or `schema`), expects a decline with `rule` and `property`, and returns it.
fn check(
    name: &str,
    params: Option<&Value>,
    schema: Option<&Value>,
    rule: &str,
    property: Option<&str>,
) -> Decline {
    let started = Instant::now();
    let decline = match (params, schema) {
        (Some(params), None) => parse_request(params).err(),
        (None, Some(schema)) => {
            // A schema case must decline both alone and inside a request.
            let inside = parse_request(&json!({"message": "m", "requestedSchema": schema})).err();
            let alone = parse_schema(schema).err();
            let key = |d: &Option<Decline>| d.as_ref().map(|d| (d.rule, d.property.clone()));
            assert_eq!(
                key(&inside),
                key(&alone),
                "{name}: parse_request and parse_schema disagree"
            );
            alone
        }
        _ => panic!("{name}: give exactly one of params and schema"),
    };
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{name}: took {:?}",
        started.elapsed()
    );
    let decline = decline.unwrap_or_else(|| panic!("{name}: was accepted"));
    assert_eq!(decline.rule.as_str(), rule, "{name}: {decline}");
    assert_eq!(decline.property.as_deref(), property, "{name}: {decline}");
    decline
}

#[test]
fn decline_table() {
    let cases = fixture("declines.json");
    let mut messages = Map::new();
    for case in cases.as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        let property = case.get("property").and_then(Value::as_str);
        let decline = check(
            name,
            case.get("params"),
            case.get("schema"),
            case["rule"].as_str().unwrap(),
            property,
        );
        assert!(
            messages
                .insert(name.to_owned(), Value::String(decline.to_string()))
                .is_none(),
            "duplicate case {name}"
        );
    }
    check_snapshot("declines", &Value::Object(messages));
}

fn one_property(schema: Value) -> Value {
    json!({"type": "object", "properties": {"field": schema}})
}

#[test]
fn megabyte_title_declines_quickly() {
    let schema = one_property(json!({"type": "string", "title": "t".repeat(1_000_000)}));
    let decline = check(
        "1 MB title",
        None,
        Some(&schema),
        "too-large",
        Some("field"),
    );
    assert!(
        decline.to_string().len() < 200,
        "the message must not echo the text"
    );
}

#[test]
fn text_limits_are_inclusive() {
    let at_limit =
        one_property(json!({"type": "string", "description": "d".repeat(MAX_TEXT_BYTES)}));
    assert!(parse_schema(&at_limit).is_ok());
    let over =
        one_property(json!({"type": "string", "description": "d".repeat(MAX_TEXT_BYTES + 1)}));
    check(
        "description over the limit",
        None,
        Some(&over),
        "too-large",
        Some("field"),
    );
    let label = one_property(
        json!({"type": "string", "oneOf": [{"const": "x", "title": "l".repeat(MAX_TEXT_BYTES + 1)}]}),
    );
    check(
        "option label over the limit",
        None,
        Some(&label),
        "too-large",
        Some("field"),
    );
    let message = json!({"message": "m".repeat(MAX_TEXT_BYTES + 1), "requestedSchema": {"type": "object", "properties": {}}});
    check(
        "message over the limit",
        Some(&message),
        None,
        "too-large",
        None,
    );
}

#[test]
fn too_many_properties() {
    let properties: Map<String, Value> = (0..=MAX_PROPERTIES)
        .map(|i| (format!("p{i}"), json!({"type": "boolean"})))
        .collect();
    let schema = json!({"type": "object", "properties": properties});
    check(
        "too many properties",
        None,
        Some(&schema),
        "too-large",
        None,
    );
    let properties: Map<String, Value> = (0..MAX_PROPERTIES)
        .map(|i| (format!("p{i}"), json!({"type": "boolean"})))
        .collect();
    assert!(parse_schema(&json!({"type": "object", "properties": properties})).is_ok());
}

#[test]
fn too_many_options() {
    let values: Vec<String> = (0..=MAX_OPTIONS).map(|i| format!("v{i}")).collect();
    check(
        "too many enum values",
        None,
        Some(&one_property(json!({"type": "string", "enum": values}))),
        "too-large",
        Some("field"),
    );
    let values: Vec<String> = (0..MAX_OPTIONS).map(|i| format!("v{i}")).collect();
    assert!(parse_schema(&one_property(json!({"type": "string", "enum": values}))).is_ok());
}

#[test]
fn long_pattern() {
    let schema =
        one_property(json!({"type": "string", "pattern": "a".repeat(MAX_PATTERN_BYTES + 1)}));
    check(
        "long pattern",
        None,
        Some(&schema),
        "too-large",
        Some("field"),
    );
}

#[test]
fn catastrophic_pattern_with_hostile_default_is_fast() {
    // `(a+)+$` backtracks exponentially on "aaaa…!" in a backtracking engine.
    let schema = one_property(
        json!({"type": "string", "pattern": "^(a+)+$", "default": format!("{}!", "a".repeat(5000))}),
    );
    check(
        "catastrophic pattern",
        None,
        Some(&schema),
        "default-outside-constraints",
        Some("field"),
    );
    let polynomial = one_property(
        json!({"type": "string", "pattern": "\\d*\\d*\\d*\\d*\\d*x", "default": "1".repeat(15_000)}),
    );
    check(
        "polynomial pattern",
        None,
        Some(&polynomial),
        "default-outside-constraints",
        Some("field"),
    );
}

#[test]
fn deep_unknown_keyword_declines() {
    let mut deep = json!("bottom");
    for _ in 0..=MAX_DEPTH {
        deep = json!([deep]);
    }
    let schema = one_property(json!({"type": "string", "x-deep": deep}));
    check("deep nesting", None, Some(&schema), "too-large", None);
}

#[test]
fn huge_request_declines() {
    let blob: Vec<String> = (0..200).map(|_| "x".repeat(10_000)).collect();
    let params = json!({"message": "m", "_meta": {"blob": blob}, "requestedSchema": {"type": "object", "properties": {}}});
    check("2 MB of _meta", Some(&params), None, "too-large", None);
}

#[test]
fn long_key_is_clipped_in_the_message() {
    let key = "k".repeat(5000);
    let schema = json!({"type": "object", "properties": {key: {"type": "string"}}});
    let decline = parse_schema(&schema).unwrap_err();
    assert_eq!(decline.rule.as_str(), "too-large");
    assert!(decline.to_string().len() < 300);
}

#[test]
fn duplicate_options_decline_the_same_in_short_and_long_lists() {
    // Short lists are compared pairwise and long ones hashed: both name the first repeat.
    for count in [4, 40] {
        let mut values: Vec<String> = (0..count).map(|i| format!("v{i}")).collect();
        values[count - 1] = "v1".to_owned();
        let schema = one_property(json!({"type": "string", "enum": values}));
        let decline = check(
            "repeated value",
            None,
            Some(&schema),
            "duplicate-option",
            Some("field"),
        );
        assert!(decline.to_string().contains("\"v1\" twice"), "{decline}");

        let options: Vec<Value> = (0..count)
            .map(|i| json!({"const": format!("v{i}"), "title": if i == 2 || i == count - 1 { "Same".to_owned() } else { format!("V{i}") }}))
            .collect();
        let schema = one_property(json!({"type": "string", "oneOf": options}));
        let decline = check(
            "repeated label",
            None,
            Some(&schema),
            "duplicate-option",
            Some("field"),
        );
        assert!(
            decline.to_string().contains("label \"Same\" twice"),
            "{decline}"
        );
    }
}
