//! formwork-sdk against real clients: the official Python SDK (`mcp` 2.3.0) in handshake and
//! 2026-07-28 modes, and the TS SDK 1.32.2 client. Each test runs this binary again as the plugin
//! (`support/plugin.rs`) behind a tap that records the exact lines on the wire.
//!
//! The harness is our own (`harness = false`): the binary must be able to serve stdio without the
//! test runner writing to stdout.

mod support;

use std::process::Command;

use serde_json::{Value, json};

use support::{Case, peers_dir, repo_root};

/// What one client run saw: its printed report and the wire lines (`> ` to the plugin, `< ` from
/// it).
struct Run {
    report: Value,
    wire: Vec<String>,
}

impl Run {
    /// The messages the plugin sent, parsed.
    fn sent(&self) -> Vec<Value> {
        self.wire
            .iter()
            .filter_map(|line| line.strip_prefix("< "))
            .map(|line| serde_json::from_str(line).expect("a JSON line from the plugin"))
            .collect()
    }

    /// The messages the client sent, parsed.
    fn received(&self) -> Vec<Value> {
        self.wire
            .iter()
            .filter_map(|line| line.strip_prefix("> "))
            .map(|line| serde_json::from_str(line).expect("a JSON line from the client"))
            .collect()
    }
}

/// The Python client, with the environment (the client's and the plugin's) extended by `env`.
fn py(
    mode: &str,
    scenario: &str,
    tool: &str,
    answers: &str,
    openai: bool,
    env: &[(&str, &str)],
) -> Run {
    let dir = tempfile::tempdir().expect("a temp dir");
    let log = dir.path().join("wire.log");
    let mut command = Command::new(peers_dir().join("venv/bin/python"));
    command
        .arg(repo_root().join("tests/peers/sdk_py_client.py"))
        .args([
            mode,
            scenario,
            tool,
            answers,
            if openai { "openai" } else { "core" },
        ])
        .arg(&log)
        .arg("--")
        .arg(std::env::current_exe().expect("the test binary"))
        .env("FORMWORK_SDK_PLUGIN", "1")
        .envs(env.iter().copied());
    finish(command, &log)
}

fn finish(mut command: Command, log: &std::path::Path) -> Run {
    let output = command.output().expect("running the client");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "client failed: {}\nstdout: {stdout}\nstderr: {}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    let report = serde_json::from_str(stdout.trim()).unwrap_or_else(|error| {
        panic!(
            "client printed no JSON ({error}): {stdout}\nstderr: {}",
            String::from_utf8_lossy(&output.stderr)
        )
    });
    let wire = std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect();
    Run { report, wire }
}

/// The TS SDK 1.32.2 client (`era` None) or the TS SDK 2.4.0 client in `era`.
fn ts(era: Option<&str>, tool: &str, answers: &str) -> Run {
    let dir = tempfile::tempdir().expect("a temp dir");
    let log = dir.path().join("wire.log");
    let mut command = Command::new(peers_dir().join("npm/node_modules/.bin/node"));
    match era {
        None => command.arg(peers_dir().join("npm/sdk_ts_client.mjs")),
        Some(era) => command
            .arg(peers_dir().join("npm/sdk_ts2_client.mjs"))
            .arg(era),
    };
    command
        .args([tool, answers, "--"])
        .arg(peers_dir().join("venv/bin/python"))
        .arg(repo_root().join("tests/peers/sdk_py_client.py"))
        .arg("--tap")
        .arg(&log)
        .arg(std::env::current_exe().expect("the test binary"))
        .env("FORMWORK_SDK_PLUGIN", "1");
    finish(command, &log)
}

/// The tool's text reply, from a client's report.
fn reply(run: &Run) -> &str {
    run.report["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text reply in {}", run.report))
}

/// The requests the plugin sent to the client (not responses).
fn pushed(run: &Run) -> Vec<Value> {
    run.sent()
        .into_iter()
        .filter(|message| message.get("method").is_some())
        .collect()
}

/// The results the plugin sent for `tools/call`, with each `requestState` replaced by "<state>".
fn call_results(run: &Run) -> Vec<Value> {
    let calls: Vec<Value> = run
        .received()
        .into_iter()
        .filter(|message| message["method"] == "tools/call")
        .map(|message| message["id"].clone())
        .collect();
    run.sent()
        .into_iter()
        .filter(|message| calls.contains(&message["id"]) && message.get("method").is_none())
        .map(|mut message| {
            if let Some(state) = message.pointer_mut("/result/requestState") {
                *state = json!("<state>");
            }
            message
        })
        .collect()
}

fn deploy_form() -> Value {
    json!({
        "type": "object",
        "properties": {
            "target": {"type": "string", "description": "Where the build goes", "oneOf": [
                {"const": "staging", "title": "Staging"},
                {"const": "production", "title": "Production"},
            ]},
            "replicas": {"type": "integer", "title": "Replicas", "minimum": 1, "maximum": 5},
            "notify": {"type": "boolean", "default": false},
            "contact": {"type": "string", "format": "email"},
        },
        "required": ["target", "replicas"],
    })
}

fn confirm_form() -> Value {
    json!({
        "type": "object",
        "properties": {"sure": {"type": "boolean", "description": "Really?"}},
        "required": ["sure"],
    })
}

fn part_form() -> Value {
    json!({
        "type": "object",
        "properties": {
            "part": {"type": "string", "oneOf": [
                {"const": "hex-bolt", "title": "M6 hex bolt", "description": "A fastener for the main joint",
                 "x-openai-thumbnail": {"src": "https://example.com/hex-bolt.png", "mimeType": "image/png"}},
                {"const": "washer", "title": "M6 washer"},
            ]},
            "code": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]+$", "x-openai-suggestions": [
                {"const": "CAD-1", "title": "The first part"},
            ]},
            "file": {"type": "string", "format": "uri", "x-openai-input": {
                "type": "resource",
                "options": [{"uri": "cad://parts/hex-bolt.stl", "name": "hex-bolt.stl"}],
            }},
            "extras": {"type": "array", "maxItems": 2, "items": {"type": "string", "format": "uri"}, "x-openai-input": {
                "type": "resource",
                "selection": "explicit",
                "options": [
                    {"uri": "cad://parts/washer.stl", "name": "washer.stl"},
                    {"uri": "cad://parts/nut.stl", "name": "nut.stl"},
                ],
            }},
        },
        "required": ["part", "code", "file", "extras"],
    })
}

/// The questions' keys: a digest of each question as sent, the same in every run.
const DEPLOY_KEY: &str = "ask-b8d04d00ea37ac7a";
const CONFIRM_KEY: &str = "ask-6ed0eae01c3bae54";
const PART_KEY: &str = "ask-0c9442ef2c9e9dbc";

const GOOD_DEPLOY: &str = r#"{"action":"accept","content":{"target":"production","replicas":3,"contact":"ops@example.com"}}"#;
const DEPLOYED: &str = r#"Accepted(Deploy { target: Production, replicas: 3, notify: false, contact: Some("ops@example.com") })"#;
const BAD_DEPLOY: &str = r#"{"action":"accept","content":{"target":"production","replicas":9}}"#;
const GOOD_PART: &str = r#"{"action":"accept","content":{"part":"hex-bolt","code":"CAD-7","file":"cad://parts/hex-bolt.stl","extras":["cad://parts/nut.stl"]}}"#;
const PARTED: &str = r#"Accepted(Part { part: HexBolt, code: "CAD-7", file: "cad://parts/hex-bolt.stl", extras: ["cad://parts/nut.stl"] })"#;
const BAD_PART: &str = r#"{"action":"accept","content":{"part":"hex-bolt","code":"cad-7","file":"file:///etc/passwd","extras":["cad://parts/nut.stl","file:///etc/shadow","not a uri"]}}"#;

fn handshake_push_sends_the_flat_form_and_reads_the_answer() {
    let run = py(
        "legacy",
        "auto",
        "deploy",
        &format!("[{GOOD_DEPLOY}]"),
        false,
        &[],
    );
    assert_eq!(
        pushed(&run),
        [
            json!({"jsonrpc": "2.0", "id": 0, "method": "elicitation/create", "params": {
                "_meta": {"progressToken": 0},
                "mode": "form",
                "message": "Where to deploy?",
                "requestedSchema": deploy_form(),
            }})
        ]
    );
    assert_eq!(reply(&run), DEPLOYED);
}

fn handshake_decline_and_cancel_are_outcomes() {
    let run = py(
        "legacy",
        "auto",
        "deploy_twice",
        r#"[{"action":"decline"},{"action":"cancel"}]"#,
        false,
        &[],
    );
    assert_eq!(
        run.report["received"].as_array().map(|list| list
            .iter()
            .map(|params| params["requestedSchema"].clone())
            .collect::<Vec<_>>()),
        Some(vec![deploy_form(), confirm_form()])
    );
    assert_eq!(reply(&run), "Declined then Cancelled");
}

fn handshake_content_that_does_not_fit_is_invalid() {
    let run = py(
        "legacy",
        "auto",
        "deploy",
        &format!("[{BAD_DEPLOY}]"),
        false,
        &[],
    );
    assert_eq!(reply(&run), r#"Invalid("replicas: must be at most 5")"#);
}

fn handshake_without_the_capability_sends_nothing() {
    let run = py("legacy", "auto", "deploy", "none", false, &[]);
    assert_eq!(pushed(&run), Vec::<Value>::new());
    assert_eq!(reply(&run), "NotSupported");
    // An OpenAI form needs the extension, even where core elicitation is declared.
    let run = py("legacy", "auto", "pick_part", "[]", false, &[]);
    assert_eq!(pushed(&run), Vec::<Value>::new());
    assert_eq!(reply(&run), "NotSupported");
}

fn handshake_openai_form_goes_as_openai_elicitation_create() {
    // The Python SDK has no `openai/elicitation/create` handler: declaring the extension anyway
    // shows the request on the wire, and the client's -32601 comes back as the call's error.
    let run = py(
        "legacy",
        "auto",
        "pick_part",
        &format!("[{GOOD_PART}]"),
        true,
        &[],
    );
    assert_eq!(
        pushed(&run),
        [
            json!({"jsonrpc": "2.0", "id": 0, "method": "openai/elicitation/create", "params": {
                "_meta": {"progressToken": 0},
                "mode": "form",
                "message": "Choose a part",
                "requestedSchema": part_form(),
            }})
        ]
    );
    assert_eq!(
        run.report["error"],
        json!({"code": -32603, "message": "the elicitation request failed: Mcp error: -32601: Method not found(\"openai/elicitation/create\")"})
    );
}

fn modern_asks_take_one_round_each() {
    let run = py(
        "2026-07-28",
        "auto",
        "deploy_twice",
        &format!(r#"[{GOOD_DEPLOY},{{"action":"accept","content":{{"sure":true}}}}]"#),
        false,
        &[],
    );
    assert_eq!(pushed(&run), Vec::<Value>::new());
    assert_eq!(
        call_results(&run),
        [
            json!({"jsonrpc": "2.0", "id": 1, "result": {
                "resultType": "input_required",
                "inputRequests": {DEPLOY_KEY: {"method": "elicitation/create", "params": {
                    "mode": "form", "message": "Where to deploy?", "requestedSchema": deploy_form(),
                }}},
                "requestState": "<state>",
            }}),
            json!({"jsonrpc": "2.0", "id": 2, "result": {
                "resultType": "input_required",
                "inputRequests": {CONFIRM_KEY: {"method": "elicitation/create", "params": {
                    "mode": "form", "message": "Deploy now?", "requestedSchema": confirm_form(),
                }}},
                "requestState": "<state>",
            }}),
            json!({"jsonrpc": "2.0", "id": 3, "result": {
                "resultType": "complete",
                "content": [{"type": "text", "text": format!("{DEPLOYED} then Accepted(Confirm {{ sure: true }})")}],
                "isError": false,
            }}),
        ]
    );
}

fn modern_content_that_does_not_fit_is_asked_again() {
    let run = py(
        "2026-07-28",
        "auto",
        "deploy",
        &format!("[{BAD_DEPLOY},{GOOD_DEPLOY}]"),
        false,
        &[],
    );
    let asked: Vec<Value> = call_results(&run)
        .iter()
        .map(|message| message["result"]["inputRequests"].clone())
        .collect();
    let question = json!({DEPLOY_KEY: {"method": "elicitation/create", "params": {
        "mode": "form", "message": "Where to deploy?", "requestedSchema": deploy_form(),
    }}});
    assert_eq!(asked, [question.clone(), question, Value::Null]);
    assert_eq!(reply(&run), DEPLOYED);
}

fn modern_decline_is_an_outcome() {
    let run = py(
        "2026-07-28",
        "auto",
        "deploy",
        r#"[{"action":"decline"}]"#,
        false,
        &[],
    );
    assert_eq!(reply(&run), "Declined");
}

fn modern_without_the_capability_asks_nothing() {
    let run = py("2026-07-28", "auto", "deploy", "none", false, &[]);
    assert_eq!(
        call_results(&run),
        [json!({"jsonrpc": "2.0", "id": 1, "result": {
            "resultType": "complete",
            "content": [{"type": "text", "text": "NotSupported"}],
            "isError": false,
        }})]
    );
    let run = py("2026-07-28", "auto", "pick_part", "[]", false, &[]);
    assert_eq!(reply(&run), "NotSupported");
}

fn modern_openai_form_travels_in_meta() {
    let run = py(
        "2026-07-28",
        "auto",
        "pick_part",
        &format!("[{GOOD_PART}]"),
        true,
        &[],
    );
    assert_eq!(
        call_results(&run)[0],
        json!({"jsonrpc": "2.0", "id": 1, "result": {
            "resultType": "input_required",
            "inputRequests": {PART_KEY: {"method": "elicitation/create", "params": {
                "_meta": {"openai/elicitation": {"requestedSchema": part_form()}},
                "mode": "form",
                "message": "Choose a part",
                "requestedSchema": {"type": "object", "properties": {}},
            }}},
            "requestState": "<state>",
        }})
    );
    assert_eq!(reply(&run), PARTED);
}

fn modern_openai_content_that_does_not_fit_is_asked_again() {
    // A bad pattern, a URI not offered, an extra item past maxItems that is not a URI either.
    let run = py(
        "2026-07-28",
        "auto",
        "pick_part",
        &format!("[{BAD_PART},{GOOD_PART}]"),
        true,
        &[],
    );
    let asked: Vec<Value> = call_results(&run)
        .iter()
        .map(|message| message["result"]["inputRequests"][PART_KEY]["params"]["message"].clone())
        .collect();
    assert_eq!(
        asked,
        [json!("Choose a part"), json!("Choose a part"), Value::Null]
    );
    assert_eq!(reply(&run), PARTED);
}

/// One manual round: the first call by hand, then a retry changed as `retry` says.
fn retry(retry: &str, env: &[(&str, &str)]) -> Run {
    py(
        "2026-07-28",
        &format!("manual:{retry}"),
        "deploy",
        &format!("[{GOOD_DEPLOY}]"),
        false,
        env,
    )
}

fn refused(run: &Run) {
    assert_eq!(
        run.report["error"],
        json!({"code": -32602, "message": "requestState is invalid or expired"}),
        "{}",
        run.report
    );
}

fn modern_state_round_trips_untouched() {
    let run = retry("answer", &[]);
    assert_eq!(run.report["result"]["content"][0]["text"], DEPLOYED);
}

fn modern_a_retry_without_the_answer_asks_again() {
    let run = retry("unanswered", &[]);
    let mut result = run.report["result"].clone();
    assert!(result["requestState"].is_string(), "{result}");
    result["requestState"] = json!("<state>");
    assert_eq!(
        result,
        json!({
            "resultType": "input_required",
            "inputRequests": {DEPLOY_KEY: {"method": "elicitation/create", "params": {
                "mode": "form", "message": "Where to deploy?", "requestedSchema": deploy_form(),
            }}},
            "requestState": "<state>",
        })
    );
}

fn modern_tampered_state_is_refused() {
    refused(&retry("tamper", &[]));
}

fn modern_state_replayed_on_another_tool_is_refused() {
    refused(&retry("other-tool", &[]));
}

fn modern_state_replayed_with_other_arguments_is_refused() {
    refused(&retry("other-args", &[]));
}

fn modern_state_replayed_by_another_principal_is_refused() {
    refused(&retry("other-principal", &[]));
}

fn modern_expired_state_is_refused() {
    refused(&retry("late", &[("FORMWORK_SDK_TTL_MS", "200")]));
}

fn modern_a_state_is_accepted_once() {
    let run = retry("replay", &[]);
    assert_eq!(run.report["result"]["content"][0]["text"], DEPLOYED);
    assert_eq!(
        run.report["replay"],
        json!({"error": {"code": -32602, "message": "requestState was already used"}})
    );
}

fn modern_used_states_past_the_limit_are_refused_as_expired() {
    // With room for one record, the second state's record drops the first state's: the first
    // state is then refused as expired, never accepted again.
    let run = retry("limit", &[("FORMWORK_SDK_CONSUMED_LIMIT", "1")]);
    assert_eq!(run.report["result"]["content"][0]["text"], DEPLOYED);
    assert_eq!(
        run.report["other"]["result"]["content"][0]["text"],
        DEPLOYED
    );
    assert_eq!(
        run.report["replay"],
        json!({"error": {"code": -32602, "message": "requestState is invalid or expired"}})
    );
}

fn confirm_question(message: &str) -> Value {
    json!({"method": "elicitation/create", "params": {
        "mode": "form", "message": message, "requestedSchema": confirm_form(),
    }})
}

const STAGING_KEY: &str = "ask-4e1ced230c628302";
const PRODUCTION_KEY: &str = "ask-b4754a2f494f32ca";

/// Yes to staging, no to production, by the question's message.
const STAGING_ONLY: &str = r#"{"Deploy to staging?": {"action": "accept", "content": {"sure": true}},
    "Deploy to production?": {"action": "decline"}}"#;

fn modern_an_answer_reaches_only_the_question_it_answers() {
    // `deploy_both` asks its two questions in another order each run: the yes given to staging
    // must never become a yes to production.
    let run = py(
        "2026-07-28",
        "auto",
        "deploy_both",
        STAGING_ONLY,
        false,
        &[],
    );
    assert_eq!(
        reply(&run),
        "staging Accepted(Confirm { sure: true }), production Declined"
    );
    let asked: Vec<Value> = call_results(&run)
        .iter()
        .map(|message| message["result"]["inputRequests"].clone())
        .collect();
    assert_eq!(
        asked,
        [
            json!({STAGING_KEY: confirm_question("Deploy to staging?")}),
            json!({PRODUCTION_KEY: confirm_question("Deploy to production?")}),
            Value::Null,
        ]
    );
}

/// `deploy_both_at_once` answered by hand, the retry's `inputResponses` changed as `retry` says.
fn both_at_once(retry: &str, answers: &str) -> Run {
    py(
        "2026-07-28",
        &format!("manual:{retry}"),
        "deploy_both_at_once",
        answers,
        false,
        &[],
    )
}

fn modern_questions_asked_at_once_share_a_round() {
    let run = both_at_once("answer", STAGING_ONLY);
    let mut first = run.report["first"].clone();
    first["requestState"] = json!("<state>");
    assert_eq!(
        first,
        json!({
            "resultType": "input_required",
            "inputRequests": {
                STAGING_KEY: confirm_question("Deploy to staging?"),
                PRODUCTION_KEY: confirm_question("Deploy to production?"),
            },
            "requestState": "<state>",
        })
    );
    assert_eq!(
        reply(&run),
        "staging Accepted(Confirm { sure: true }), production Declined"
    );
}

fn modern_input_responses_bind_by_key_in_any_order() {
    let run = both_at_once("reversed", STAGING_ONLY);
    let sent: Vec<Value> = run
        .received()
        .into_iter()
        .filter_map(|message| message.pointer("/params/inputResponses").cloned())
        .collect();
    let keys: Vec<Vec<String>> = sent
        .iter()
        .map(|responses| {
            responses
                .as_object()
                .map_or_else(Vec::new, |map| map.keys().cloned().collect())
        })
        .collect();
    assert_eq!(keys, [[PRODUCTION_KEY, STAGING_KEY]]);
    assert_eq!(
        reply(&run),
        "staging Accepted(Confirm { sure: true }), production Declined"
    );
}

fn modern_a_response_to_a_question_not_asked_is_ignored() {
    // Besides the answer asked for: an answer to the question `deploy_twice` asks next, and one
    // to a question nobody asked. The next question is still asked.
    let extra = json!({
        CONFIRM_KEY: {"action": "accept", "content": {"sure": true}},
        "ask-0000000000000000": {"action": "accept", "content": {"sure": true}},
    });
    let run = py(
        "2026-07-28",
        "manual:extra",
        "deploy_twice",
        &format!("[{GOOD_DEPLOY}]"),
        false,
        &[("SDK_CLIENT_EXTRA_RESPONSES", &extra.to_string())],
    );
    let mut result = run.report["result"].clone();
    result["requestState"] = json!("<state>");
    assert_eq!(
        result,
        json!({
            "resultType": "input_required",
            "inputRequests": {CONFIRM_KEY: confirm_question("Deploy now?")},
            "requestState": "<state>",
        })
    );
}

fn modern_a_question_left_unanswered_is_asked_again_alone() {
    let run = both_at_once(
        "answer",
        r#"{"Deploy to staging?": {"action": "accept", "content": {"sure": true}}}"#,
    );
    let first_keys: Vec<&String> = run.report["first"]["inputRequests"]
        .as_object()
        .map_or_else(Vec::new, |requests| requests.keys().collect());
    assert_eq!(first_keys, [STAGING_KEY, PRODUCTION_KEY]);
    let mut result = run.report["result"].clone();
    result["requestState"] = json!("<state>");
    assert_eq!(
        result,
        json!({
            "resultType": "input_required",
            "inputRequests": {PRODUCTION_KEY: confirm_question("Deploy to production?")},
            "requestState": "<state>",
        })
    );
}

fn ts1_push_reads_the_answers() {
    let run = ts(
        None,
        "deploy_twice",
        &format!(r#"[{GOOD_DEPLOY},{{"action":"decline"}}]"#),
    );
    assert_eq!(
        run.report["received"],
        json!([
            {"mode": "form", "message": "Where to deploy?", "requestedSchema": deploy_form(), "_meta": {"progressToken": 0}},
            {"mode": "form", "message": "Deploy now?", "requestedSchema": confirm_form(), "_meta": {"progressToken": 1}},
        ])
    );
    assert_eq!(reply(&run), format!("{DEPLOYED} then Declined"));
}

fn ts1_content_that_does_not_fit_is_invalid() {
    let run = ts(None, "deploy", &format!("[{BAD_DEPLOY}]"));
    assert_eq!(reply(&run), r#"Invalid("replicas: must be at most 5")"#);
}

fn ts2_modern_rounds_ask_again_and_carry_answers() {
    let run = ts(
        Some("2026-07-28"),
        "deploy_twice",
        &format!(r#"[{BAD_DEPLOY},{GOOD_DEPLOY},{{"action":"accept","content":{{"sure":true}}}}]"#),
    );
    assert_eq!(pushed(&run), Vec::<Value>::new());
    let asked: Vec<Value> = call_results(&run)
        .iter()
        .map(|message| message["result"]["inputRequests"].clone())
        .collect();
    let deploy = json!({DEPLOY_KEY: {"method": "elicitation/create", "params": {
        "mode": "form", "message": "Where to deploy?", "requestedSchema": deploy_form(),
    }}});
    let confirm = json!({CONFIRM_KEY: {"method": "elicitation/create", "params": {
        "mode": "form", "message": "Deploy now?", "requestedSchema": confirm_form(),
    }}});
    assert_eq!(asked, [deploy.clone(), deploy, confirm, Value::Null]);
    assert_eq!(
        reply(&run),
        format!("{DEPLOYED} then Accepted(Confirm {{ sure: true }})")
    );
}

fn ts2_handshake_push_reads_the_answer() {
    let run = ts(Some("legacy"), "deploy", &format!("[{GOOD_DEPLOY}]"));
    assert_eq!(
        run.report["received"],
        json!([{"mode": "form", "message": "Where to deploy?", "requestedSchema": deploy_form(), "_meta": {"progressToken": 0}}])
    );
    assert_eq!(reply(&run), DEPLOYED);
}

const CASES: &[Case] = &[
    (
        "handshake_push_sends_the_flat_form_and_reads_the_answer",
        handshake_push_sends_the_flat_form_and_reads_the_answer,
    ),
    (
        "handshake_decline_and_cancel_are_outcomes",
        handshake_decline_and_cancel_are_outcomes,
    ),
    (
        "handshake_content_that_does_not_fit_is_invalid",
        handshake_content_that_does_not_fit_is_invalid,
    ),
    (
        "handshake_without_the_capability_sends_nothing",
        handshake_without_the_capability_sends_nothing,
    ),
    (
        "handshake_openai_form_goes_as_openai_elicitation_create",
        handshake_openai_form_goes_as_openai_elicitation_create,
    ),
    (
        "modern_asks_take_one_round_each",
        modern_asks_take_one_round_each,
    ),
    (
        "modern_content_that_does_not_fit_is_asked_again",
        modern_content_that_does_not_fit_is_asked_again,
    ),
    ("modern_decline_is_an_outcome", modern_decline_is_an_outcome),
    (
        "modern_without_the_capability_asks_nothing",
        modern_without_the_capability_asks_nothing,
    ),
    (
        "modern_openai_form_travels_in_meta",
        modern_openai_form_travels_in_meta,
    ),
    (
        "modern_openai_content_that_does_not_fit_is_asked_again",
        modern_openai_content_that_does_not_fit_is_asked_again,
    ),
    (
        "modern_state_round_trips_untouched",
        modern_state_round_trips_untouched,
    ),
    (
        "modern_a_retry_without_the_answer_asks_again",
        modern_a_retry_without_the_answer_asks_again,
    ),
    (
        "modern_tampered_state_is_refused",
        modern_tampered_state_is_refused,
    ),
    (
        "modern_state_replayed_on_another_tool_is_refused",
        modern_state_replayed_on_another_tool_is_refused,
    ),
    (
        "modern_state_replayed_with_other_arguments_is_refused",
        modern_state_replayed_with_other_arguments_is_refused,
    ),
    (
        "modern_state_replayed_by_another_principal_is_refused",
        modern_state_replayed_by_another_principal_is_refused,
    ),
    (
        "modern_expired_state_is_refused",
        modern_expired_state_is_refused,
    ),
    (
        "modern_a_state_is_accepted_once",
        modern_a_state_is_accepted_once,
    ),
    (
        "modern_used_states_past_the_limit_are_refused_as_expired",
        modern_used_states_past_the_limit_are_refused_as_expired,
    ),
    (
        "modern_an_answer_reaches_only_the_question_it_answers",
        modern_an_answer_reaches_only_the_question_it_answers,
    ),
    (
        "modern_questions_asked_at_once_share_a_round",
        modern_questions_asked_at_once_share_a_round,
    ),
    (
        "modern_input_responses_bind_by_key_in_any_order",
        modern_input_responses_bind_by_key_in_any_order,
    ),
    (
        "modern_a_response_to_a_question_not_asked_is_ignored",
        modern_a_response_to_a_question_not_asked_is_ignored,
    ),
    (
        "modern_a_question_left_unanswered_is_asked_again_alone",
        modern_a_question_left_unanswered_is_asked_again_alone,
    ),
    ("ts1_push_reads_the_answers", ts1_push_reads_the_answers),
    (
        "ts2_modern_rounds_ask_again_and_carry_answers",
        ts2_modern_rounds_ask_again_and_carry_answers,
    ),
    (
        "ts2_handshake_push_reads_the_answer",
        ts2_handshake_push_reads_the_answer,
    ),
    (
        "ts1_content_that_does_not_fit_is_invalid",
        ts1_content_that_does_not_fit_is_invalid,
    ),
];

fn main() {
    support::main(CASES);
}
