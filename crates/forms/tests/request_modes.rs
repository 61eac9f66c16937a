//! `parse_request`: modes, URL requests, `_meta`, and the parts of params left to the caller.

#![allow(clippy::unwrap_used)]

use formwork_forms::{ElicitationRequest, UrlWarning, parse_request};
use serde_json::{Value, json};

fn form(params: Value) -> formwork_forms::FormRequest {
    match parse_request(&params) {
        Ok(ElicitationRequest::Form(request)) => request,
        other => panic!("{params}: {other:?}"),
    }
}

fn url(params: Value) -> formwork_forms::UrlRequest {
    match parse_request(&params) {
        Ok(ElicitationRequest::Url(request)) => *request,
        other => panic!("{params}: {other:?}"),
    }
}

#[test]
fn absent_mode_is_form() {
    let request =
        form(json!({"message": "m", "requestedSchema": {"type": "object", "properties": {}}}));
    assert_eq!(request.render.block().unwrap().message, "m");
    assert!(request.form.as_ref().unwrap().fields().is_empty());
    assert!(request.meta.is_none());
}

#[test]
fn empty_form_is_a_confirmation() {
    let request = form(
        json!({"mode": "form", "message": "Continue?", "requestedSchema": {"type": "object", "properties": {}}}),
    );
    assert!(
        request
            .form
            .as_ref()
            .unwrap()
            .render("Continue?")
            .questions
            .is_empty()
    );
    assert!(
        request
            .form
            .as_ref()
            .unwrap()
            .default_content()
            .unwrap()
            .is_empty()
    );
}

#[test]
fn meta_keeps_key_order_and_task_is_ignored() {
    let params: Value = serde_json::from_str(
        r#"{"mode":"form","message":"m","task":{"ttl":60000},"_meta":{"z":1,"a":{"y":2,"b":3},"progressToken":"t"},
            "requestedSchema":{"type":"object","properties":{"b":{"type":"string"},"a":{"type":"string"}}}}"#,
    )
    .unwrap();
    let request = form(params);
    let meta = request.meta.unwrap();
    assert_eq!(
        serde_json::to_string(&meta).unwrap(),
        r#"{"z":1,"a":{"y":2,"b":3},"progressToken":"t"}"#
    );
    let keys: Vec<&str> = request
        .form
        .as_ref()
        .unwrap()
        .fields()
        .iter()
        .map(|f| f.key.as_str())
        .collect();
    assert_eq!(keys, ["b", "a"]);
}

#[test]
fn null_meta_is_none() {
    let request = form(
        json!({"message": "m", "_meta": null, "requestedSchema": {"type": "object", "properties": {}}}),
    );
    assert!(request.meta.is_none());
}

#[test]
fn top_level_title_and_schema_uri_are_accepted() {
    let request = form(json!({"message": "m", "requestedSchema": {
        "$schema": "https://json-schema.org/draft/2020-12/schema", "title": "Form", "description": "d",
        "type": "object", "additionalProperties": false, "properties": {"a": {"type": "string"}}}}));
    assert_eq!(request.form.as_ref().unwrap().title(), Some("Form"));
    assert_eq!(request.form.as_ref().unwrap().description(), Some("d"));
    assert_eq!(
        request.form.as_ref().unwrap().schema()["additionalProperties"],
        json!(false)
    );
}

#[test]
fn url_mode() {
    let request = url(
        json!({"mode": "url", "message": "Log in please", "url": "https://example.com/login", "elicitationId": "e-42", "_meta": {"k": "v"}}),
    );
    assert_eq!(request.url, "https://example.com/login");
    assert_eq!(request.domain, "example.com");
    assert_eq!(request.elicitation_id.as_deref(), Some("e-42"));
    assert_eq!(request.meta.unwrap().to_value()["k"], json!("v"));
    assert_eq!(request.warnings, []);
}

/// Plain http and a host in the person's own machine or network are warned about; an address in
/// integer form is judged, and shown as its domain, as the address it opens.
#[test]
fn url_warnings() {
    let cases = [
        ("https://example.com/", "example.com", vec![]),
        (
            "http://example.com/",
            "example.com",
            vec![UrlWarning::PlainHttp],
        ),
        (
            "https://app.localhost:3000/",
            "app.localhost",
            vec![UrlWarning::Loopback],
        ),
        (
            "http://2130706433:9000/cb",
            "127.0.0.1",
            vec![UrlWarning::PlainHttp, UrlWarning::Loopback],
        ),
        (
            "https://[::ffff:10.1.2.3]/",
            "[::ffff:a01:203]",
            vec![UrlWarning::PrivateAddress],
        ),
        (
            "https://192.168.0.1/admin",
            "192.168.0.1",
            vec![UrlWarning::PrivateAddress],
        ),
    ];
    for (text, domain, warnings) in cases {
        let request = url(json!({"mode": "url", "message": "m", "url": text}));
        assert_eq!(request.url, text);
        assert_eq!(request.domain, domain, "{text}");
        assert_eq!(request.warnings, warnings, "{text}");
    }
}

#[test]
fn url_mode_without_elicitation_id_2026() {
    let request =
        url(json!({"mode": "url", "message": "m", "url": "http://localhost:3000/auth?x=1"}));
    assert_eq!(request.domain, "localhost");
    assert!(request.elicitation_id.is_none());
}

#[test]
fn url_keeps_the_text_and_shows_punycode() {
    let request = url(json!({"mode": "url", "message": "m", "url": "https://bücher.example/ä"}));
    assert_eq!(request.url, "https://bücher.example/ä");
    assert_eq!(request.domain, "xn--bcher-kva.example");
    let request = url(json!({"mode": "url", "message": "m", "url": "https://[::1]:8443/"}));
    assert_eq!(request.domain, "[::1]");
}

#[test]
fn decline_display_names_the_property() {
    let decline = parse_request(&json!({"message": "m", "requestedSchema": {"type": "object", "properties": {"age": {"type": "integer", "default": "x"}}}})).unwrap_err();
    assert_eq!(
        decline.to_string(),
        "property `age`: `default` \"x\" is not allowed: it must be an integer, not a string"
    );
    assert_eq!(decline.rule.as_str(), "default-outside-constraints");
    assert_eq!(decline.rule.to_string(), "default-outside-constraints");
}

#[test]
fn a_request_serializes_as_what_is_shown_and_reads_back_without_its_form() {
    let mut request = parse_request(&json!({"message": "Pick", "_meta": {"k": 1},
        "requestedSchema": {"type": "object", "properties": {"a": {"type": "boolean"}}}}))
    .unwrap();
    let text = serde_json::to_string(&request).unwrap();
    assert_eq!(
        text,
        r#"{"mode":"form","render":{"type":"request_user_input","message":"Pick","questions":[{"id":"a","header":"a","question":"a","isOther":false,"isSecret":false,"options":[{"label":"true","description":"","value":true},{"label":"false","description":"","value":false}],"input":"boolean","multiSelect":false,"required":false,"schema":{"type":"boolean"}}]},"meta":{"k":1}}"#
    );
    let back: ElicitationRequest = serde_json::from_str(&text).unwrap();
    assert_eq!(back, request);
    assert!(back.form().is_none());
    assert!(request.take_form().is_some());
    assert!(request.form().is_none());

    let url = parse_request(&json!({"mode": "url", "message": "Sign in", "url": "https://a.example/x", "elicitationId": "e1"}))
        .unwrap();
    assert_eq!(
        serde_json::to_string(&url).unwrap(),
        r#"{"mode":"url","message":"Sign in","url":"https://a.example/x","domain":"a.example","warnings":[],"elicitation_id":"e1"}"#
    );
}
