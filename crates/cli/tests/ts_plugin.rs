//! `formwork` against a plugin written with the official TypeScript SDK (tests/peers/ts_plugin.mjs). The SDK
//! validates accepted content with Ajv, and each tool reports the ElicitResult the SDK handed back, so an accepted
//! answer proves both what formwork sent and that a strict real peer took it.

mod common;

use common::{Answers, Output, call, node_plugin};
use serde_json::{Value, json};

fn ts_call(tool: &str, answers: Answers) -> Output {
    call(&node_plugin("ts_plugin.mjs"), tool, None, answers)
}

/// `tool` asked for one form; formwork answered `content`; the plugin's SDK received exactly `content`.
fn check_accepted(tool: &str, content: Value) {
    let output = ts_call(
        tool,
        Answers::Script(json!([{ "action": "accept", "content": content }])),
    );
    output.assert_code(0);
    assert_eq!(
        output.plugin_result(),
        json!({ "action": "accept", "content": content }),
        "{output}"
    );
}

/// formwork refuses `content` for `tool`: exit 2, stderr names `field`, and the plugin got `cancel`, not `content`.
fn check_rejected(tool: &str, content: Value, field: &str) {
    let output = ts_call(
        tool,
        Answers::Script(json!([{ "action": "accept", "content": content }])),
    );
    output.assert_code(2).assert_stderr_mentions(field);
    assert_eq!(
        output.plugin_result(),
        json!({ "action": "cancel" }),
        "{output}"
    );
}

// ---- every field kind, accepted and passed by the SDK's Ajv check ----

#[test]
fn string_with_length_and_pattern() {
    check_accepted("ask_string", json!({ "nickname": "ada-99" }));
}

#[test]
fn email() {
    check_accepted("ask_email", json!({ "email": "ada@example.com" }));
}

#[test]
fn uri() {
    check_accepted("ask_uri", json!({ "homepage": "https://example.com/ada" }));
}

#[test]
fn date() {
    check_accepted("ask_date", json!({ "birthday": "1815-12-10" }));
}

#[test]
fn date_time() {
    check_accepted("ask_datetime", json!({ "meeting": "2026-11-29T10:30:00Z" }));
}

#[test]
fn integer() {
    check_accepted("ask_integer", json!({ "age": 36 }));
}

#[test]
fn number() {
    check_accepted("ask_number", json!({ "score": 7.25 }));
}

#[test]
fn boolean() {
    check_accepted("ask_boolean", json!({ "agree": true }));
}

#[test]
fn untitled_enum() {
    check_accepted("ask_enum", json!({ "color": "blue" }));
}

#[test]
fn titled_enum() {
    check_accepted("ask_titled", json!({ "size": "l" }));
}

#[test]
fn legacy_enum_names() {
    check_accepted("ask_legacy", json!({ "legacy": "b" }));
}

#[test]
fn untitled_multi_select() {
    check_accepted("ask_multi", json!({ "tags": ["x", "z"] }));
}

#[test]
fn titled_multi_select() {
    check_accepted("ask_titled_multi", json!({ "toppings": ["ch", "pe"] }));
}

#[test]
fn ten_field_form_with_every_answer() {
    check_accepted(
        "ask_form",
        json!({
            "name": "Grace", "email": "grace@example.com", "age": 85, "score": 9.5, "subscribe": true,
            "color": "red", "size": "s", "legacy": "a", "tags": ["y", "z"], "toppings": ["ol"]
        }),
    );
}

#[test]
fn ten_field_form_defaults_fill_what_the_answer_omits() {
    let answer = json!({ "name": "Grace", "email": "grace@example.com", "color": "blue" });
    let output = ts_call("ask_form", Answers::Script(json!([answer])));
    output.assert_code(0);
    let expected = json!({
        "name": "Grace", "email": "grace@example.com", "age": 36, "score": 7.5, "subscribe": false,
        "color": "blue", "size": "m", "tags": ["x"]
    });
    assert_eq!(
        output.plugin_result(),
        json!({ "action": "accept", "content": expected }),
        "{output}"
    );
}

/// `email` is required without a default, so `--accept-defaults` cannot answer this form (docs/cli.md).
#[test]
fn ten_field_form_accept_defaults_reports_the_required_email() {
    let output = ts_call("ask_form", Answers::AcceptDefaults);
    output.assert_code(2).assert_stderr_mentions("email");
    assert_eq!(
        output.plugin_result(),
        json!({ "action": "cancel" }),
        "{output}"
    );
}

#[test]
fn url_mode_accepted_and_completion_notice_taken() {
    let output = ts_call("ask_url", Answers::Script(json!([{ "action": "accept" }])));
    output
        .assert_code(0)
        .assert_stderr_mentions("https://example.com/login");
    assert_eq!(
        output.plugin_result(),
        json!({ "action": "accept" }),
        "{output}"
    );
    // The SDK refuses to send `notifications/elicitation/complete` unless formwork declared `elicitation.url`.
    assert!(!output.stderr.contains("notifier:"), "{output}");
}

/// A scripted accept of a link in clear text to a private address: the URL is printed with its
/// bidirectional control escaped, and the host's two warnings follow.
#[test]
fn url_mode_warnings_and_escapes_on_stderr() {
    let output = call(
        &node_plugin("ts_plugin.mjs"),
        "ask_url_to",
        Some(json!({ "url": "http://10.0.0.1/a\u{202e}b" })),
        Answers::Script(json!([{ "action": "accept" }])),
    );
    output.assert_code(0);
    assert_eq!(
        output.plugin_result(),
        json!({ "action": "accept" }),
        "{output}"
    );
    let lines: Vec<&str> = output
        .stderr
        .lines()
        .filter(|line| line.starts_with("formwork: form 1: "))
        .collect();
    assert_eq!(
        lines,
        [
            "formwork: form 1: accepted the URL http://10.0.0.1/a\\u{202e}b (domain 10.0.0.1); open it yourself",
            "formwork: form 1: warning: The link uses plain http: what you see and type there is not encrypted.",
            "formwork: form 1: warning: The link leads to an address on a private or local network, not to a site on the internet.",
        ],
        "{output}"
    );
    assert!(!output.stderr.contains('\u{202e}'), "{output}");
}

#[test]
fn answers_are_consumed_one_per_form_in_order() {
    let output = ts_call(
        "ask_twice",
        Answers::Script(json!([{ "color": "red" }, { "action": "decline" }])),
    );
    output.assert_code(0);
    let expected =
        json!([{ "action": "accept", "content": { "color": "red" } }, { "action": "decline" }]);
    assert_eq!(output.plugin_result(), expected, "{output}");
}

// ---- a wrong answer for each constraint: caught by formwork, never sent ----

#[test]
fn rejects_string_too_short() {
    check_rejected("ask_string", json!({ "nickname": "ab" }), "nickname");
}

#[test]
fn rejects_string_too_long() {
    check_rejected("ask_string", json!({ "nickname": "abcdefghi" }), "nickname");
}

#[test]
fn rejects_pattern_mismatch() {
    check_rejected("ask_string", json!({ "nickname": "ABC!" }), "nickname");
}

#[test]
fn rejects_bad_email() {
    check_rejected("ask_email", json!({ "email": "not-an-email" }), "email");
}

#[test]
fn rejects_bad_uri() {
    check_rejected("ask_uri", json!({ "homepage": "not a uri" }), "homepage");
}

#[test]
fn rejects_bad_date() {
    check_rejected("ask_date", json!({ "birthday": "2026-13-45" }), "birthday");
}

#[test]
fn rejects_bad_date_time() {
    check_rejected("ask_datetime", json!({ "meeting": "yesterday" }), "meeting");
}

#[test]
fn rejects_integer_out_of_range() {
    check_rejected("ask_integer", json!({ "age": 200 }), "age");
}

#[test]
fn rejects_non_integer() {
    check_rejected("ask_integer", json!({ "age": 2.5 }), "age");
}

#[test]
fn rejects_number_out_of_range() {
    check_rejected("ask_number", json!({ "score": 11 }), "score");
}

#[test]
fn rejects_boolean_as_string() {
    check_rejected("ask_boolean", json!({ "agree": "yes" }), "agree");
}

#[test]
fn rejects_value_not_in_enum() {
    check_rejected("ask_enum", json!({ "color": "purple" }), "color");
}

#[test]
fn rejects_value_not_in_titled_options() {
    check_rejected("ask_titled", json!({ "size": "xl" }), "size");
}

#[test]
fn rejects_too_many_items() {
    check_rejected("ask_multi", json!({ "tags": ["x", "y", "z"] }), "tags");
}

#[test]
fn rejects_too_few_items() {
    check_rejected("ask_multi", json!({ "tags": [] }), "tags");
}

#[test]
fn rejects_item_not_in_enum() {
    check_rejected(
        "ask_titled_multi",
        json!({ "toppings": ["anchovies"] }),
        "toppings",
    );
}

#[test]
fn rejects_missing_required_field() {
    check_rejected("ask_enum", json!({}), "color");
}

// ---- answer sources and exit codes of docs/cli.md ----

#[test]
fn no_terminal_and_no_flag_cancels() {
    let output = ts_call("ask_enum", Answers::Nothing);
    output.assert_code(2);
    assert!(
        !output.stderr.trim().is_empty(),
        "no message on stderr: {output}"
    );
    assert_eq!(
        output.plugin_result(),
        json!({ "action": "cancel" }),
        "{output}"
    );
}

#[test]
fn a_form_beyond_the_answers_cancels() {
    let output = ts_call("ask_twice", Answers::Script(json!([{ "color": "green" }])));
    output.assert_code(2);
    let expected =
        json!([{ "action": "accept", "content": { "color": "green" } }, { "action": "cancel" }]);
    assert_eq!(output.plugin_result(), expected, "{output}");
}

#[test]
fn tool_error_exits_1() {
    let output = ts_call("fail", Answers::Nothing);
    output.assert_code(1);
    assert_eq!(
        output.json(),
        json!({ "content": [{ "type": "text", "text": "this tool always fails" }], "isError": true })
    );
}

#[test]
fn plugin_crash_mid_form_exits_2_quickly() {
    let output = ts_call(
        "crash_mid_form",
        Answers::Script(json!([{ "action": "decline" }])),
    );
    output.assert_code(2);
    assert!(
        output.elapsed.as_secs() < 10,
        "took {:?}: {output}",
        output.elapsed
    );
    let stderr = output.stderr.to_lowercase();
    let clear = [
        "exit",
        "closed",
        "terminated",
        "died",
        "crash",
        "connection",
        "eof",
    ];
    assert!(
        clear.iter().any(|word| stderr.contains(word)),
        "no clear message on stderr: {output}"
    );
}

/// Answers are never logged below `trace`: at `debug` for everything the answer appears nowhere
/// on stderr; at `trace` for `formwork::wire` it does, in the message sent to the plugin.
#[test]
fn answers_are_logged_only_at_trace() {
    let script = common::TempFile::new(
        &json!([{ "action": "accept", "content": { "nickname": "zq-mark7" } }]).to_string(),
    );
    let run = |filter: &str| {
        common::run(
            std::process::Command::new(env!("CARGO_BIN_EXE_formwork"))
                .args([
                    "call",
                    "ask_string",
                    "--plugin",
                    &node_plugin("ts_plugin.mjs"),
                ])
                .arg("--answers")
                .arg(&script.path)
                .env("FORMWORK_LOG", filter),
            None,
            std::time::Duration::from_secs(60),
        )
    };
    let debug = run("debug");
    debug.assert_code(0);
    assert_eq!(
        debug.plugin_result(),
        json!({ "action": "accept", "content": { "nickname": "zq-mark7" } })
    );
    assert!(debug.stderr.contains("form answered"), "{debug}");
    assert!(!debug.stderr.contains("zq-mark7"), "{debug}");
    let trace = run("formwork::wire=trace");
    assert!(trace.stderr.contains(r#""nickname":"zq-mark7""#), "{trace}");
}
