//! `formwork` against tests/peers/hostile_plugin.py, a hand-written plugin that sends malformed and malicious
//! `elicitation/create` requests (no real peer does this on purpose). Every case must end, at the plugin, as a
//! `decline` or a JSON-RPC error, never a hang (the plugin reports `timeout` after 5 s), and the host must keep
//! serving afterwards. The few well-formed forms among the cases are answered `cancel`, because these runs have no
//! terminal and no answers: that `cancel` is how a test sees that formwork rendered a form it should have refused.

mod common;

use std::process::Command;
use std::time::Duration;

use common::{Answers, Output, call, compact, formwork, peers_dir, python_plugin};
use serde_json::{Value, json};

/// What the plugin may get back for a case.
#[derive(Clone, Copy, Debug)]
enum Expect {
    /// formwork refused the form itself.
    Decline,
    /// Refused as a form, or as a JSON-RPC request.
    DeclineOrError,
    /// A well-formed form: rendered, so answered `cancel` here.
    Rendered,
    /// A well-formed form in an unusual envelope: rendered, or refused as a request.
    RenderedOrError,
    /// Markup in text: refused, or rendered as plain text (see `markup_is_kept_verbatim`).
    DeclineOrRendered,
}

const DECLINE: &str = r#"result:{"action":"decline"}"#;
const CANCEL: &str = r#"result:{"action":"cancel"}"#;

impl Expect {
    fn allows(self, outcome: &str) -> bool {
        let error = outcome.starts_with("error:");
        match self {
            Expect::Decline => outcome == DECLINE,
            Expect::DeclineOrError => outcome == DECLINE || error,
            Expect::Rendered => outcome == CANCEL,
            Expect::RenderedOrError => outcome == CANCEL || error,
            Expect::DeclineOrRendered => outcome == DECLINE || outcome == CANCEL,
        }
    }
}

/// One test per case (the index is the plugin's `CASES` index), and the table `all_cases` checks against.
macro_rules! hostile_cases {
    ($($index:literal $name:ident: $expect:ident,)*) => {
        const TABLE: &[(&str, Expect)] = &[$((stringify!($name), Expect::$expect),)*];
        $(
            #[test]
            fn $name() {
                check_case($index, Expect::$expect);
            }
        )*
    };
}

hostile_cases! {
    0 params_is_an_array: DeclineOrError,
    1 params_is_a_string: DeclineOrError,
    2 params_is_null: DeclineOrError,
    3 message_missing: DeclineOrError,
    4 message_is_a_number: DeclineOrError,
    5 requested_schema_missing: DeclineOrError,
    6 requested_schema_is_an_array: DeclineOrError,
    7 requested_schema_is_a_string: DeclineOrError,
    8 requested_schema_type_is_not_object: DeclineOrError,
    9 properties_missing: DeclineOrError,
    10 properties_is_an_array: DeclineOrError,
    11 property_is_not_an_object: DeclineOrError,
    12 nested_object_property: Decline,
    13 array_of_objects: Decline,
    14 ref_keyword: Decline,
    15 unknown_type: Decline,
    16 type_is_an_array: Decline,
    17 enum_empty: Decline,
    18 enum_of_numbers: Decline,
    19 enum_names_wrong_length: Decline,
    20 default_outside_enum: Decline,
    21 default_outside_range: Decline,
    22 default_shorter_than_min_length: Decline,
    23 min_items_above_the_number_of_options: Decline,
    24 bad_pattern: Decline,
    25 unknown_mode: DeclineOrError,
    26 url_mode_without_url: DeclineOrError,
    27 url_mode_with_javascript_url: DeclineOrError,
    28 title_of_1_mb: DeclineOrError,
    29 ten_thousand_properties: DeclineOrError,
    30 nested_10000_deep: DeclineOrError,
    31 markup_in_text: DeclineOrRendered,
    32 request_id_null: DeclineOrError,
    33 request_id_huge: RenderedOrError,
    34 garbage_line_then_a_valid_request: Rendered,
    35 duplicate_request_ids: RenderedOrError,
    36 complete_for_an_unknown_id_then_a_nested_form: Decline,
    37 response_to_a_request_never_sent_then_a_nested_form: Decline,
    38 params_written_with_spaces_and_escapes: Rendered,
}

fn hostile() -> String {
    python_plugin("hostile_plugin.py")
}

/// Runs case `index` alone and checks each outcome the plugin saw and formwork's exit code.
fn check_case(index: usize, expect: Expect) {
    let output = call(
        &hostile(),
        "hostile",
        Some(json!({ "case": index })),
        Answers::Nothing,
    );
    // A tool result at all proves the host still served the plugin after the case.
    let text = output.text();
    let outcomes: Vec<&str> = text.split(' ').collect();
    for outcome in &outcomes {
        assert!(
            expect.allows(outcome),
            "case {index}: `{outcome}` is not {expect:?}: {output}"
        );
    }
    if outcomes.iter().all(|outcome| *outcome == DECLINE) {
        // A declined form alone does not change the exit code, and the reason is printed.
        output
            .assert_code(0)
            .assert_stderr_mentions("declined form from");
    } else if outcomes.contains(&CANCEL) {
        output.assert_code(2); // a rendered form with no terminal and no answers
    } else {
        assert!(matches!(output.code, 0 | 2), "case {index}: {output}");
    }
}

#[test]
fn case_table_matches_the_plugin() {
    let output = call(&hostile(), "cases", None, Answers::Nothing);
    output.assert_code(0);
    assert_eq!(
        output.text(),
        TABLE.len().to_string(),
        "the plugin's cases and this file's table differ"
    );
}

/// Every case in one plugin process, then a ping from the plugin: the host survives all of them in a row.
#[test]
fn all_cases_in_one_process_then_the_host_still_answers() {
    let args = ["call", "all_cases", "--plugin", &hostile()];
    let output = common::run(
        Command::new(env!("CARGO_BIN_EXE_formwork")).args(args),
        None,
        Duration::from_secs(40 * 5 + 30),
    );
    let report: Value =
        serde_json::from_str(&output.text()).unwrap_or_else(|err| panic!("{err}: {output}"));
    let entries = report.as_array().expect("a list of outcomes");
    assert_eq!(entries.len(), TABLE.len() + 1, "{output}");
    let mut wrong = Vec::new();
    for (entry, (name, expect)) in entries.iter().zip(TABLE) {
        let outcome = entry["outcome"].as_str().unwrap_or_default();
        if !outcome.split(' ').all(|part| expect.allows(part)) {
            wrong.push(format!(
                "{name} ({}): `{outcome}` is not {expect:?}",
                entry["name"]
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "cases ended wrongly:\n{}\n{output}",
        wrong.join("\n")
    );
    assert_eq!(
        entries[TABLE.len()]["outcome"],
        "result:{}",
        "the host did not answer the final ping: {output}"
    );
    output.assert_code(2); // the well-formed forms among the cases were cancelled: no terminal, no answers
}

#[test]
fn markup_is_kept_verbatim() {
    let params = Command::new(peers_dir().join("venv/bin/python"))
        .arg(peers_dir().join("npm/hostile_plugin.py"))
        .args(["--print-params", "31"])
        .output()
        .expect("running hostile_plugin.py --print-params");
    let output = formwork(&["schema", "check", "-"], Some(&params.stdout));
    if output.code == 1 {
        return; // refused as a whole: nothing rendered
    }
    output.assert_code(0);
    let mut texts = Vec::new();
    collect_strings(&output.json(), &mut texts);
    for markup in [
        "Hello <b>there</b> <script>alert('message')</script>",
        "<script>alert('title')</script>",
        r#"<img src=x onerror="alert(1)">"#,
    ] {
        assert!(
            texts.contains(&markup.to_string()),
            "`{markup}` not kept verbatim in the render: {output}"
        );
    }
}

fn collect_strings(value: &Value, into: &mut Vec<String>) {
    match value {
        Value::String(text) => into.push(text.clone()),
        Value::Array(items) => items.iter().for_each(|item| collect_strings(item, into)),
        Value::Object(map) => map.values().for_each(|item| collect_strings(item, into)),
        _ => {}
    }
}

/// `formwork tools` merges both pages of `tools/list` and prints each tool exactly as sent (keys, order, extras).
#[test]
fn tools_are_printed_exactly_as_sent() {
    let expected = Command::new(peers_dir().join("venv/bin/python"))
        .arg(peers_dir().join("npm/hostile_plugin.py"))
        .arg("--print-tools")
        .output()
        .expect("running hostile_plugin.py --print-tools");
    let expected: Value =
        serde_json::from_slice(&expected.stdout).expect("the plugin's tools JSON");
    let output = formwork(&["tools", "--plugin", &hostile()], None);
    output.assert_code(0);
    assert_eq!(compact(&output.json()), compact(&expected), "{output}");
}

/// `formwork call` prints the CallToolResult exactly as sent, its key order kept, and passes the plugin's stderr
/// through to its own.
#[test]
fn echo_result_is_printed_exactly_as_sent() {
    let output: Output = call(
        &hostile(),
        "echo",
        Some(json!({ "message": "still here" })),
        Answers::Nothing,
    );
    output
        .assert_code(0)
        .assert_stderr_mentions("hostile plugin stderr: still here");
    let expected = r#"{"isError":false,"content":[{"type":"text","text":"still here"}],"structuredContent":{"b":1,"a":2}}"#;
    assert_eq!(compact(&output.json()), expected, "{output}");
}

/// `flood {kind, count}` on the hostile plugin: what the plugin counted, and formwork's stderr.
fn flood(kind: &str, count: u64) -> (String, String) {
    let output = call(
        &hostile(),
        "flood",
        Some(json!({ "kind": kind, "count": count })),
        Answers::Nothing,
    );
    output.assert_code(0);
    (output.text(), output.stderr)
}

/// MCP has no batches: a JSON array of a million elements is one invalid message, answered by
/// one error, not a million.
#[test]
fn a_json_array_gets_one_error_whatever_its_length() {
    let (text, _) = flood("array", 1_000_000);
    assert_eq!(text, "errors:1 ping:result:{}");
}

/// A line over the 16 MiB limit is skipped; the plugin stays connected and is answered.
#[test]
fn a_line_over_the_limit_is_skipped_and_the_connection_goes_on() {
    let (text, stderr) = flood("oversized", 17);
    assert_eq!(text, "errors:0 ping:result:{}");
    assert!(
        stderr.contains("discarded a message larger than the limit"),
        "{stderr}"
    );
}

/// Every broken line gets its error reply, but the warnings about them are bounded: a burst of
/// 20, then one a second, the rest counted.
#[test]
fn a_flood_of_garbage_logs_a_bounded_number_of_warnings() {
    let (text, stderr) = flood("garbage", 10_000);
    assert_eq!(text, "errors:10000 ping:result:{}");
    let warnings = stderr.matches("invalid message").count();
    assert!(
        (20..=25).contains(&warnings),
        "{warnings} warnings:\n{stderr}"
    );
}

/// A plugin whose tool list never ends: `formwork tools` stops after the page limit, and after
/// the byte limit when the pages are large, with an error that says so.
#[test]
fn an_endless_tool_list_is_cut_off_with_an_error() {
    for (page_bytes, says) in [
        (10, "the tool list goes on for more than 100 pages"),
        (1_000_000, "the tool list is longer than 16777216 bytes"),
    ] {
        let plugin = format!("{} --endless-tools {page_bytes}", hostile());
        let output = formwork(&["tools", "--plugin", &plugin], None);
        output.assert_code(2).assert_stderr_mentions(says);
    }
}

/// A plugin's error text reaches the terminal with its control characters escaped and its extra
/// lines indented, so it can neither drive the terminal nor pass for a line of formwork's.
#[test]
fn a_plugins_error_message_is_printed_inert() {
    let output = call(
        &hostile(),
        "rpc_error",
        Some(json!({ "message": "boom\u{1b}[2J\nformwork: all is well" })),
        Answers::Nothing,
    );
    output.assert_code(2);
    assert!(!output.stderr.contains('\u{1b}'), "{output}");
    assert!(
        output
            .stderr
            .contains("boom\\u{1b}[2J\n  formwork: all is well"),
        "{output}"
    );
}

/// Malformed or unexpected 2026-07-28 `input_required` results end the call with an error that
/// says what is wrong; a form that cannot be shown is declined and the call goes on.
#[test]
fn malformed_rounds_end_the_call_with_a_clear_error() {
    let plugin = format!("{} --modern", python_plugin("hostile_plugin.py"));
    for (kind, expected) in [
        ("requests_not_object", "`inputRequests` must be an object"),
        ("no_method", r#"inputRequests["a"] has no `method`"#),
        (
            "unknown_kind",
            r#"inputRequests["a"] asks for `tasks/create`, which formwork does not know"#,
        ),
        (
            "roots",
            r#"inputRequests["a"] asks for `roots/list`, which formwork does not offer (it declares no roots capability)"#,
        ),
        (
            "params_not_object",
            r#"inputRequests["a"]: elicitation/create params must be an object"#,
        ),
        (
            "neither",
            "an `input_required` result needs `inputRequests` or `requestState`",
        ),
        ("state_not_string", "`requestState` must be a string"),
        (
            "other_type",
            "the result type `task` is not one formwork handles",
        ),
    ] {
        let output = call(
            &plugin,
            "hostile_round",
            Some(json!({ "kind": kind })),
            Answers::AcceptDefaults,
        );
        output.assert_code(2);
        output.assert_stderr_mentions(&format!(
            "formwork: tools/call returned an invalid result: {expected}"
        ));
    }
    let output = call(
        &plugin,
        "hostile_round",
        Some(json!({ "kind": "unshowable_schema" })),
        Answers::AcceptDefaults,
    );
    output.assert_code(0);
    assert_eq!(
        output.text(),
        r#"retried with {"inputResponses":{"a":{"action":"decline"}},"requestState":"kept"}"#
    );
}

/// A plugin that answers `server/discover` only after formwork moved on to `initialize`, and
/// then refuses `initialize` as a 2026-07-28-only server does, is asked again: it connects in
/// the modern era.
#[test]
fn a_late_discover_answer_still_gets_the_modern_era() {
    let plugin = format!("{} --modern-slow", python_plugin("hostile_plugin.py"));
    let output = formwork(&["doctor", "--plugin", &plugin], None);
    let connection = &output.json()["connection"];
    assert_eq!(connection["connected"], true, "{output}");
    assert_eq!(connection["era"], "modern", "{output}");
    assert_eq!(
        connection["era_reason"],
        r#"`server/discover` offered ["2026-07-28"] (after its first answer came too late)"#
    );
}
