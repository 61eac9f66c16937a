//! `formwork` against plugins that ask through 2026-07-28 rounds, on the official Python SDK
//! (tests/peers/py_mrtr_plugin.py) and TypeScript SDK 2.4.0 (tests/peers/ts2_mrtr_plugin.mjs):
//! `server/discover` instead of `initialize`, the request envelope
//! in every `_meta`, and each `input_required` result answered and retried under a new id with the
//! same params, `inputResponses` and `requestState` as it came.

#![allow(clippy::unwrap_used)]

mod common;

use std::process::Command;
use std::time::Duration;

use common::{Output, TempFile, node_plugin, python_plugin};
use serde_json::{Value, json};

const PLUGIN: &str = "py_mrtr_plugin.py";

/// `formwork call <tool>` of the Python plugin with `answers`, the wire logged.
fn call(tool: &str, answers: Value, flags: &[&str]) -> Output {
    call_plugin(&python_plugin(PLUGIN), tool, answers, flags)
}

fn call_plugin(plugin: &str, tool: &str, answers: Value, flags: &[&str]) -> Output {
    call_target("--plugin", plugin, tool, answers, flags)
}

/// `formwork call <tool> <--plugin CMD | --url URL>` with `answers`, the wire logged.
fn call_target(kind: &str, target: &str, tool: &str, answers: Value, flags: &[&str]) -> Output {
    let file = TempFile::new(&answers.to_string());
    let path = file.path.display().to_string();
    let mut args = vec!["call", tool, kind, target, "--answers", &path];
    args.extend(flags);
    common::run(
        Command::new(env!("CARGO_BIN_EXE_formwork"))
            .args(&args)
            .env("FORMWORK_LOG", "formwork::wire=trace"),
        None,
        Duration::from_secs(60),
    )
}

/// The `tools/call` requests formwork sent, in order.
fn calls(output: &Output) -> Vec<Value> {
    common::wire(output)
        .into_iter()
        .filter(|(direction, body)| direction == "out" && body["method"] == "tools/call")
        .map(|(_, body)| body)
        .collect()
}

/// The results the plugin sent for `tools/call`, in order.
fn results(output: &Output) -> Vec<Value> {
    let ids: Vec<Value> = calls(output)
        .iter()
        .map(|call| call["id"].clone())
        .collect();
    common::wire(output)
        .into_iter()
        .filter(|(direction, body)| direction == "in" && ids.contains(&body["id"]))
        .map(|(_, body)| body["result"].clone())
        .collect()
}

fn without(mut value: Value, keys: &[&str]) -> Value {
    if let Some(object) = value.as_object_mut() {
        for key in keys {
            object.remove(*key);
        }
    }
    value
}

#[test]
fn two_rounds_go_under_new_ids_with_the_same_params_and_the_state_echoed() {
    let output = call(
        "deploy",
        json!([{"target": "production"}, {"confirm": true}]),
        &[],
    );
    output.assert_code(0);
    assert_eq!(
        output.text(),
        r#"target: accept {"target":"production"}; confirm: {"confirm":true}"#,
        "{output}"
    );
    let steps: Vec<String> = common::wire(&output)
        .iter()
        .map(|(direction, body)| {
            let what = body["method"]
                .as_str()
                .map_or_else(|| format!("response {}", body["id"]), str::to_owned);
            format!("{direction} {what}")
        })
        .collect();
    assert_eq!(
        steps,
        [
            "out server/discover",
            "in response 0",
            "out tools/call",
            "in response 1",
            "out tools/call",
            "in response 2",
            "out tools/call",
            "in response 3",
        ],
        "{output}"
    );
    let calls = calls(&output);
    let results = results(&output);
    assert_eq!(results[0]["resultType"], "input_required");
    assert_eq!(results[1]["resultType"], "input_required");
    assert_eq!(results[2]["resultType"], "complete");
    // The first request: the tool, and the envelope in `_meta`.
    assert_eq!(
        common::compact(&calls[0]["params"]),
        r#"{"name":"deploy","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{},"url":{}}},"io.modelcontextprotocol/clientInfo":{"name":"formwork","version":"0.1.0"}}}"#
    );
    for (round, call) in calls.iter().enumerate().skip(1) {
        // Each retry: the same params, plus the answers and the state of the result before.
        assert_eq!(
            without(call["params"].clone(), &["inputResponses", "requestState"]),
            calls[0]["params"]
        );
        let asked = &results[round - 1];
        assert_eq!(call["params"]["requestState"], asked["requestState"]);
        let keys: Vec<&String> = asked["inputRequests"].as_object().unwrap().keys().collect();
        let answered: Vec<&String> = call["params"]["inputResponses"]
            .as_object()
            .unwrap()
            .keys()
            .collect();
        assert_eq!(answered, keys);
    }
    let first_answer = calls[1]["params"]["inputResponses"]
        .as_object()
        .unwrap()
        .values()
        .next()
        .unwrap();
    assert_eq!(
        common::compact(first_answer),
        r#"{"action":"accept","content":{"target":"production"}}"#
    );
}

#[test]
fn a_declined_form_is_answered_in_the_retry_like_any_other() {
    let output = call("deploy", json!([{"action": "decline"}]), &[]);
    output.assert_code(0);
    assert_eq!(output.text(), "target: decline; confirm: not asked");
    let calls = calls(&output);
    assert_eq!(calls.len(), 2);
    let answer = calls[1]["params"]["inputResponses"]
        .as_object()
        .unwrap()
        .values()
        .next()
        .unwrap();
    assert_eq!(common::compact(answer), r#"{"action":"decline"}"#);
}

#[test]
fn two_forms_of_one_round_are_both_answered_in_one_retry() {
    let output = call("two_forms", json!([{"name": "Ada"}, {"color": "red"}]), &[]);
    output.assert_code(0);
    assert_eq!(
        output.text(),
        r#"name: accept {"name":"Ada"}; color: accept {"color":"red"}"#
    );
    let calls = calls(&output);
    assert_eq!(calls.len(), 2, "{output}");
    assert_eq!(
        calls[1]["params"]["inputResponses"]
            .as_object()
            .unwrap()
            .len(),
        2
    );
}

#[test]
fn a_state_only_result_is_retried_with_the_state_and_no_answers() {
    let output = call("state_only", json!([]), &[]);
    output.assert_code(0);
    assert_eq!(output.text(), "state: come back later; responses: None");
    let calls = calls(&output);
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[1]["params"].get("inputResponses"), None);
    assert_eq!(
        calls[1]["params"]["requestState"],
        results(&output)[0]["requestState"]
    );
}

#[test]
fn a_mebibyte_of_state_comes_back_whole() {
    let output = call("big_state", json!([{"n": 1}]), &[]);
    output.assert_code(0);
    assert_eq!(output.text(), "state came back with 1048576 bytes");
}

#[test]
fn a_url_form_inside_a_round_is_answered_accept() {
    let output = call("open_url", json!([{"action": "accept"}]), &[]);
    output.assert_code(0);
    assert_eq!(output.text(), "link: accept");
    let calls = calls(&output);
    assert_eq!(
        common::compact(&calls[1]["params"]["inputResponses"]),
        r#"{"link":{"action":"accept"}}"#
    );
}

#[test]
fn a_plugin_that_never_stops_asking_is_given_up_after_ten_rounds() {
    let answers: Vec<Value> = (0..20).map(|n| json!({"n": n})).collect();
    let output = call("endless", Value::Array(answers), &[]);
    output.assert_code(2);
    output.assert_stderr_mentions(
        "tools/call returned an invalid result: the plugin still asked for input after 10 rounds; formwork stopped retrying",
    );
    assert_eq!(calls(&output).len(), 11);
}

#[test]
fn sampling_which_formwork_does_not_declare_fails_the_call() {
    let output = call("sample", json!([]), &[]);
    output.assert_code(2);
    output.assert_stderr_mentions(
        r#"inputRequests["capital"] asks for `sampling/createMessage`, which formwork does not offer (it declares no sampling capability)"#,
    );
    assert_eq!(calls(&output).len(), 1);
}

/// The same resolver tool on a handshake connection: the SDK pushes `elicitation/create`.
#[test]
fn the_same_tool_on_2025_11_25_pushes_its_forms() {
    let output = call(
        "deploy",
        json!([{"target": "production"}, {"confirm": false}]),
        &["--protocol", "2025-11-25"],
    );
    output.assert_code(0);
    assert_eq!(
        output.text(),
        r#"target: accept {"target":"production"}; confirm: {"confirm":false}"#
    );
    let methods: Vec<String> = common::wire(&output)
        .iter()
        .filter_map(|(_, body)| body["method"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(
        methods,
        [
            "initialize",
            "notifications/initialized",
            "tools/call",
            "elicitation/create",
            "elicitation/create"
        ]
    );
}

/// The TypeScript SDK 2.4.0 plugin: two rounds with its own state, two forms in one round, a
/// state-only round and URL mode, each ending with what the plugin received.
#[test]
fn the_typescript_sdk_2_plugin_gets_every_round_answered() {
    let plugin = node_plugin("ts2_mrtr_plugin.mjs");
    let deploy = call_plugin(
        &plugin,
        "deploy",
        json!([{"target": "production"}, {"confirm": true}]),
        &[],
    );
    deploy.assert_code(0);
    assert_eq!(
        deploy.text(),
        r#"target: production; confirm: accept {"confirm":true}"#
    );
    let sent = calls(&deploy);
    assert_eq!(sent.len(), 3);
    assert_eq!(sent[1]["params"].get("requestState"), None);
    assert_eq!(
        sent[2]["params"]["requestState"],
        r#"{"target":"production"}"#
    );
    for (tool, answers, expected) in [
        (
            "two_forms",
            json!([{"name": "Ada"}, {"color": "red"}]),
            r#"name: accept {"name":"Ada"}; color: accept {"color":"red"}"#,
        ),
        ("state_only", json!([]), "state: come back later"),
        ("open_url", json!([{"action": "accept"}]), "link: accept"),
    ] {
        let output = call_plugin(&plugin, tool, answers, &[]);
        output.assert_code(0);
        assert_eq!(output.text(), expected, "{tool}: {output}");
    }
    // On a handshake connection the SDK's shim pushes the same forms.
    let legacy = call_plugin(
        &plugin,
        "deploy",
        json!([{"target": "production"}, {"confirm": true}]),
        &["--protocol", "2025-11-25"],
    );
    assert_eq!(
        legacy.text(),
        r#"target: production; confirm: accept {"confirm":true}"#
    );
    assert_eq!(calls(&legacy).len(), 1);
}

/// The same rounds over Streamable HTTP: the Python SDK's modern endpoint checks that the
/// `MCP-Protocol-Version`, `Mcp-Method` and `Mcp-Name` headers match each request's body.
#[test]
fn rounds_over_streamable_http() {
    let port = formwork_testkit::free_port();
    let mut server = Command::new(common::peers_dir().join("venv/bin/python"))
        .arg(common::peers_dir().join("npm").join(PLUGIN))
        .args(["--http", &port.to_string()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "no server on {port}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let url = format!("http://127.0.0.1:{port}/mcp");
    let output = call_target(
        "--url",
        &url,
        "deploy",
        json!([{"target": "production"}, {"confirm": true}]),
        &[],
    );
    let _ = server.kill();
    let _ = server.wait();
    output.assert_code(0);
    assert_eq!(
        output.text(),
        r#"target: accept {"target":"production"}; confirm: {"confirm":true}"#,
        "{output}"
    );
    assert_eq!(calls(&output).len(), 3);
}
