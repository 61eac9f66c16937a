//! `formwork` against Python plugins: the official `mcp` 2.3.0 SDK (tests/peers/py_plugin.py) and fastmcp 4.1.6
//! (tests/peers/fastmcp_plugin.py). Both validate accepted content with Pydantic and report what they kept.
//!
//! Both plugins ask with `ctx.elicit`, which sends `elicitation/create` and so works only on a handshake
//! connection; yet both offer 2026-07-28 in `server/discover`. So these runs ask for 2025-11-25.
//! `a_plugin_that_pushes_forms_fails_on_2026` shows what `auto` does with them.

mod common;

use common::{Answers, Output, call, call_with, python_plugin};
use serde_json::json;

/// `tool` of `plugin` answered with `answers` ends with exit `code` and the plugin's text `expected`.
fn check(plugin: &str, tool: &str, answers: Answers, code: i32, expected: &str) -> Output {
    let output = call_with(
        &python_plugin(plugin),
        tool,
        None,
        answers,
        &["--protocol", "2025-11-25"],
    );
    output.assert_code(code);
    assert_eq!(output.text(), expected, "{output}");
    output
}

const MCP: &str = "py_plugin.py";
const FASTMCP: &str = "fastmcp_plugin.py";

#[test]
fn mcp_accepts_answers() {
    let answers = json!([{ "name": "Grace", "age": 85, "subscribe": true, "color": "red" }]);
    check(
        MCP,
        "ask",
        Answers::Script(answers),
        0,
        r#"action=accept data={"name":"Grace","age":85,"subscribe":true,"color":"red"}"#,
    );
}

/// Every field of the model has a default, and its schema carries a top-level `title`.
#[test]
fn mcp_accepts_defaults() {
    check(
        MCP,
        "ask",
        Answers::AcceptDefaults,
        0,
        r#"action=accept data={"name":"Ada","age":36,"subscribe":false,"color":"green"}"#,
    );
}

#[test]
fn mcp_partial_answer_gets_the_other_defaults() {
    let answers = json!([{ "action": "accept", "content": { "color": "blue" } }]);
    check(
        MCP,
        "ask",
        Answers::Script(answers),
        0,
        r#"action=accept data={"name":"Ada","age":36,"subscribe":false,"color":"blue"}"#,
    );
}

#[test]
fn mcp_decline() {
    check(
        MCP,
        "ask",
        Answers::Script(json!([{ "action": "decline" }])),
        0,
        "action=decline",
    );
}

#[test]
fn mcp_invalid_answer_is_not_sent() {
    let output = check(
        MCP,
        "ask",
        Answers::Script(json!([{ "age": 151 }])),
        2,
        "action=cancel",
    );
    output.assert_stderr_mentions("age");
}

#[test]
fn fastmcp_accepts_answers() {
    let answers = json!([{ "action": "accept", "content": { "name": "Linus", "age": 55 } }]);
    check(
        FASTMCP,
        "ask_person",
        Answers::Script(answers),
        0,
        r#"action=accept data={"name": "Linus", "age": 55}"#,
    );
}

#[test]
fn fastmcp_defaults_fill_what_the_answer_omits() {
    let answers = json!([{ "name": "Linus" }]);
    check(
        FASTMCP,
        "ask_person",
        Answers::Script(answers),
        0,
        r#"action=accept data={"name": "Linus", "age": 36}"#,
    );
}

/// `name` is required without a default (docs/cli.md: reported, answered `cancel`, exit 2).
#[test]
fn fastmcp_accept_defaults_reports_the_required_name() {
    let output = check(
        FASTMCP,
        "ask_person",
        Answers::AcceptDefaults,
        2,
        "action=cancel",
    );
    output.assert_stderr_mentions("name");
}

#[test]
fn fastmcp_decline() {
    check(
        FASTMCP,
        "ask_person",
        Answers::Script(json!([{ "action": "decline" }])),
        0,
        "action=decline",
    );
}

#[test]
fn fastmcp_single_choice() {
    check(
        FASTMCP,
        "pick_color",
        Answers::Script(json!([{ "value": "green" }])),
        0,
        r#"action=accept data="green""#,
    );
}

/// fastmcp's multi-select schema has `items: {enum: [...]}` without `type: "string"`: a real peer sends it.
#[test]
fn fastmcp_multi_choice() {
    let answers = json!([{ "value": ["cheese", "peppers"] }]);
    check(
        FASTMCP,
        "pick_toppings",
        Answers::Script(answers),
        0,
        r#"action=accept data=["cheese", "peppers"]"#,
    );
}

#[test]
fn fastmcp_choice_declined() {
    check(
        FASTMCP,
        "pick_color",
        Answers::Script(json!([{ "action": "decline" }])),
        0,
        "action=decline",
    );
}

/// With `auto`, a plugin that offers 2026-07-28 gets it, and `ctx.elicit` (a server-to-client
/// request) cannot be sent there: the SDK fails the call, and formwork reports the plugin's error
/// with the fix.
#[test]
fn a_plugin_that_pushes_forms_fails_on_2026() {
    let output = call(&python_plugin(MCP), "ask", None, Answers::AcceptDefaults);
    output.assert_code(2);
    output.assert_stderr_mentions(
        "tools/call failed: Cannot send 'elicitation/create': this transport context has no back-channel for server-initiated requests. (code -32600); \
         `py_plugin.py` pushes its forms (elicitation/create), which 2026-07-28 does not carry: speak 2025-11-25 to it \
         (--protocol 2025-11-25)",
    );
}

/// fastmcp's `ctx.elicit` on 2026-07-28 fails the call the same way, and the fix is named.
#[test]
fn a_fastmcp_plugin_that_pushes_forms_gets_the_fix_named() {
    let output = call(
        &python_plugin(FASTMCP),
        "pick_color",
        None,
        Answers::AcceptDefaults,
    );
    output.assert_stderr_mentions(
        "formwork: `fastmcp_plugin.py` pushes its forms (elicitation/create), which 2026-07-28 does not carry: speak 2025-11-25 to it (--protocol 2025-11-25)",
    );
}
