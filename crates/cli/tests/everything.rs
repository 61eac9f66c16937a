//! `formwork` against `@modelcontextprotocol/server-everything` 2026.8.31, the reference server, over stdio and
//! Streamable HTTP. server-everything does not validate what it receives, so these tests read back exactly what
//! formwork sent from the `Raw result:` block it echoes.

mod common;

use common::{Answers, EverythingHttp, Output, call, everything_plugin, formwork};
use serde_json::{Value, json};

/// Calls `trigger-elicitation-request` over stdio with `answers`.
fn trigger_form(answers: Answers) -> Output {
    call(
        &everything_plugin(),
        "trigger-elicitation-request",
        None,
        answers,
    )
}

/// The ElicitResult server-everything received, from its `Raw result:` text block.
fn raw_result(output: &Output) -> Value {
    let text = output.text();
    let Some((_, raw)) = text.split_once("Raw result: ") else {
        panic!("no `Raw result:` in the tool result: {output}");
    };
    serde_json::from_str(raw).unwrap_or_else(|err| panic!("bad Raw result JSON ({err}): {output}"))
}

fn full_answers() -> Value {
    json!({
        "name": "Grace Hopper",
        "check": true,
        "firstLine": "Call me Ishmael.",
        "email": "grace@example.com",
        "homepage": "https://example.org/grace",
        "birthdate": "1906-12-09",
        "integer": 7,
        "number": 2.5,
        "untitledSingleSelectEnum": "Joey",
        "untitledMultipleSelectEnum": ["Piano", "Drums"],
        "titledSingleSelectEnum": "hero-3",
        "titledMultipleSelectEnum": ["fish-2", "fish-3"],
        "legacyTitledEnum": "pet-4"
    })
}

#[test]
fn tools_lists_both_elicitation_tools() {
    let output = formwork(&["tools", "--plugin", &everything_plugin()], None);
    output.assert_code(0);
    let tools = output.json();
    let names: Vec<&str> = tools
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|tool| tool["name"].as_str())
        .collect();
    // Both appear only when formwork declares form *and* url elicitation.
    for expected in [
        "trigger-elicitation-request",
        "trigger-url-elicitation",
        "echo",
    ] {
        assert!(
            names.contains(&expected),
            "`{expected}` missing from {names:?}: {output}"
        );
    }
}

#[test]
fn form_accepted_with_full_answers() {
    let content = full_answers();
    let output = trigger_form(Answers::Script(
        json!([{ "action": "accept", "content": content }]),
    ));
    output.assert_code(0);
    assert_eq!(
        raw_result(&output),
        json!({ "action": "accept", "content": content }),
        "{output}"
    );
    let text = output.text();
    for line in [
        "✅ User provided the requested information!",
        "- Name: Grace Hopper",
        "- Agreed to terms: true",
        "- Email: grace@example.com",
        "- Homepage: https://example.org/grace",
        "- Birthdate: 1906-12-09",
        "- Favorite Integer: 7",
        "- Favorite Number: 2.5",
    ] {
        assert!(text.contains(line), "`{line}` missing: {output}");
    }
}

#[test]
#[allow(clippy::approx_constant)] // 3.14 is server-everything's default for `number`, not an attempt at π
fn form_defaults_fill_what_the_answer_omits() {
    let output = trigger_form(Answers::Script(json!([{ "name": "Grace Hopper" }])));
    output.assert_code(0);
    let expected = json!({
        "name": "Grace Hopper",
        "firstLine": "It was a dark and stormy night.",
        "integer": 42,
        "number": 3.14,
        "untitledSingleSelectEnum": "Monica",
        "untitledMultipleSelectEnum": ["Guitar"],
        "titledSingleSelectEnum": "hero-1",
        "titledMultipleSelectEnum": ["fish-1"],
        "legacyTitledEnum": "pet-1"
    });
    assert_eq!(
        raw_result(&output),
        json!({ "action": "accept", "content": expected }),
        "{output}"
    );
}

/// `name` is required and has no default: `--accept-defaults` must report it and answer `cancel` (docs/cli.md).
#[test]
fn form_accept_defaults_cannot_invent_the_required_name() {
    let output = trigger_form(Answers::AcceptDefaults);
    output.assert_code(2).assert_stderr_mentions("name");
    assert_eq!(
        raw_result(&output),
        json!({ "action": "cancel" }),
        "{output}"
    );
}

#[test]
fn form_declined() {
    let output = trigger_form(Answers::Script(json!([{ "action": "decline" }])));
    output.assert_code(0);
    assert!(
        output
            .text()
            .contains("❌ User declined to provide the requested information."),
        "{output}"
    );
    assert_eq!(
        raw_result(&output),
        json!({ "action": "decline" }),
        "{output}"
    );
}

#[test]
fn form_cancelled() {
    let output = trigger_form(Answers::Script(json!([{ "action": "cancel" }])));
    output.assert_code(0);
    assert!(
        output
            .text()
            .contains("⚠️ User cancelled the elicitation dialog."),
        "{output}"
    );
    assert_eq!(
        raw_result(&output),
        json!({ "action": "cancel" }),
        "{output}"
    );
}

#[test]
fn url_elicitation_accepted() {
    let args = json!({ "url": "https://example.com/auth", "elicitationId": "elic-1" });
    let output = call(
        &everything_plugin(),
        "trigger-url-elicitation",
        Some(args),
        Answers::Script(json!([{}])),
    );
    output
        .assert_code(0)
        .assert_stderr_mentions("https://example.com/auth");
    let text = output.text();
    assert!(
        text.contains("✅ User completed the URL elicitation flow.\nElicitation ID: elic-1"),
        "{output}"
    );
    assert_eq!(
        raw_result(&output),
        json!({ "action": "accept" }),
        "{output}"
    );
}

/// The same server over Streamable HTTP (`--url`): tools, then a form answered through the SSE stream.
#[test]
fn streamable_http_tools_and_form() {
    let server = EverythingHttp::start();
    let url = format!("http://127.0.0.1:{}/mcp", server.port);

    let tools = formwork(&["tools", "--url", &url], None);
    tools.assert_code(0);
    let listed = tools.json();
    let names: Vec<&str> = listed
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|tool| tool["name"].as_str())
        .collect();
    assert!(
        names.contains(&"trigger-elicitation-request"),
        "{names:?}: {tools}"
    );

    let content = full_answers();
    let answers =
        common::TempFile::new(&json!([{ "action": "accept", "content": content }]).to_string());
    let path = answers.path.display().to_string();
    let output = formwork(
        &[
            "call",
            "trigger-elicitation-request",
            "--url",
            &url,
            "--answers",
            &path,
        ],
        None,
    );
    output.assert_code(0);
    assert_eq!(
        raw_result(&output),
        json!({ "action": "accept", "content": content }),
        "{output}"
    );
}
