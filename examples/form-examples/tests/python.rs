//! The examples against the official Python SDK client (`mcp` 2.3.0, tests/peers/sdk_py_client.py)
//! where formwork cannot go yet: the CAD part's OpenAI form (the client declares
//! `extensions["openai/elicitation"]`), the release note's patterned form, and clients that
//! declare no elicitation at all (every example falls back to its arguments). Needs
//! `FORMWORK_PEERS` (`cargo xtask peers`).

mod support;

use std::path::PathBuf;
use std::process::Command;

use formwork_testkit::peers_dir;
use serde_json::{Value, json};
use support::{Output, bin, run};

/// What one client run saw: its report and the messages the plugin sent.
struct Run {
    report: Value,
    sent: Vec<Value>,
    output: Output,
}

/// The Python client in `mode` ("legacy" or "2026-07-28") calls `tool` of `example` with
/// `arguments`; `answers` is a JSON list of ElicitResults, or "none" to declare no elicitation.
fn py(mode: &str, example: &str, tool: &str, arguments: Value, answers: &str, openai: bool) -> Run {
    let dir = tempfile::tempdir().expect("a temp dir");
    let log = dir.path().join("wire.log");
    let client =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/peers/sdk_py_client.py");
    let output = run(Command::new(peers_dir().join("venv/bin/python"))
        .arg(client)
        .args([
            mode,
            "auto",
            tool,
            answers,
            if openai { "openai" } else { "core" },
        ])
        .arg(&log)
        .arg("--")
        .arg(bin(example))
        .env("SDK_CLIENT_ARGUMENTS", arguments.to_string()));
    assert_eq!(output.code, 0, "the client failed: {output}");
    let sent = std::fs::read_to_string(&log)
        .unwrap_or_default()
        .lines()
        .filter_map(|line| line.strip_prefix("< "))
        .map(|line| serde_json::from_str(line).expect("a JSON line from the plugin"))
        .collect();
    Run {
        report: output.json(),
        sent,
        output,
    }
}

impl Run {
    /// The tool's text reply.
    fn reply(&self) -> &str {
        self.report["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_else(|| panic!("no text reply: {}", self.output))
    }

    /// The input requests of each `input_required` result, in order.
    fn rounds(&self) -> Vec<Value> {
        self.sent
            .iter()
            .filter(|message| message["result"]["resultType"] == "input_required")
            .map(|message| message["result"]["inputRequests"].clone())
            .collect()
    }

    /// The requests the plugin pushed to the client.
    fn pushed(&self) -> Vec<Value> {
        self.sent
            .iter()
            .filter(|message| message.get("method").is_some())
            .cloned()
            .collect()
    }
}

fn part_form() -> Value {
    json!({
        "type": "object",
        "properties": {
            "part": {"type": "string", "title": "Part", "description": "The parts in the catalogue.", "oneOf": [
                {"const": "hex-bolt", "title": "M6 hex bolt", "description": "A fastener for the main joint",
                 "x-openai-thumbnail": {"src": "https://example.com/parts/hex-bolt.png", "mimeType": "image/png"}},
                {"const": "washer", "title": "M6 washer", "description": "Spreads the bolt's load",
                 "x-openai-thumbnail": {"src": "https://example.com/parts/washer.png", "mimeType": "image/png"}},
                {"const": "nut", "title": "M6 nut", "description": "Locks the bolt in place",
                 "x-openai-thumbnail": {"src": "https://example.com/parts/nut.png", "mimeType": "image/png"}},
            ]},
            "material": {"type": "string", "title": "Material", "description": "Pick a suggestion or type your own.",
                "x-openai-suggestions": [
                    {"const": "steel", "title": "Zinc-plated steel"},
                    {"const": "stainless", "title": "A2 stainless steel", "description": "For parts that get wet"},
                    {"const": "brass", "title": "Brass"},
                ]},
            "drawing": {"type": "string", "title": "Drawing",
                "description": "The drawing to check the part against (optional).", "format": "uri",
                "x-openai-input": {
                    "type": "resource",
                    "options": [
                        {"uri": "cad://drawings/m6-assembly.step", "name": "m6-assembly.step",
                         "title": "M6 assembly", "mimeType": "model/step"},
                        {"uri": "cad://drawings/m6-bolt.stl", "name": "m6-bolt.stl", "mimeType": "model/stl"},
                    ],
                    "userOptions": {"kind": "file", "accept": [".stl", ".step"]},
                }},
        },
        "required": ["part", "material"],
    })
}

const GOOD_PART: &str = r#"{"action":"accept","content":{"part":"hex-bolt","material":"brass","drawing":"cad://drawings/m6-bolt.stl"}}"#;

#[test]
fn cad_part_on_2026_sends_the_openai_form_in_meta() {
    let run = py(
        "2026-07-28",
        "cad-part",
        "inspect_part",
        json!({}),
        &format!("[{GOOD_PART}]"),
        true,
    );
    assert_eq!(
        run.rounds(),
        [
            json!({"ask-feb7cdfe05be1fb9": {"method": "elicitation/create", "params": {
                "_meta": {"openai/elicitation": {"requestedSchema": part_form()}},
                "mode": "form",
                "message": "Choose a part to inspect",
                "requestedSchema": {"type": "object", "properties": {}},
            }}})
        ]
    );
    assert_eq!(
        run.reply(),
        "Inspecting hex-bolt in brass, against cad://drawings/m6-bolt.stl."
    );
    for (action, text) in [
        ("decline", "No part inspected: the form was declined."),
        ("cancel", "No part inspected: the form was cancelled."),
    ] {
        let answers = format!(r#"[{{"action":"{action}"}}]"#);
        let run = py(
            "2026-07-28",
            "cad-part",
            "inspect_part",
            json!({}),
            &answers,
            true,
        );
        assert_eq!(run.reply(), text);
    }
    // A part that is not in the catalogue does not fit: formwork-sdk asks again. An uploaded
    // drawing is a URI of the client's own (the picker allows uploads).
    let answers = r#"[{"action":"accept","content":{"part":"bolt","material":"brass"}},
        {"action":"accept","content":{"part":"nut","material":"titanium","drawing":"file:///home/me/nut.stl"}}]"#;
    let run = py(
        "2026-07-28",
        "cad-part",
        "inspect_part",
        json!({}),
        answers,
        true,
    );
    assert_eq!(run.rounds().len(), 2);
    assert_eq!(
        run.reply(),
        "Inspecting nut in titanium, against file:///home/me/nut.stl."
    );
}

/// Before 2026-07-28 the OpenAI form is pushed as `openai/elicitation/create`; the Python SDK
/// has no handler for it, so its -32601 comes back as the call's error.
#[test]
fn cad_part_on_the_handshake_pushes_openai_elicitation_create() {
    let run = py(
        "legacy",
        "cad-part",
        "inspect_part",
        json!({}),
        &format!("[{GOOD_PART}]"),
        true,
    );
    assert_eq!(
        run.pushed(),
        [
            json!({"jsonrpc": "2.0", "id": 0, "method": "openai/elicitation/create", "params": {
                "_meta": {"progressToken": 0},
                "mode": "form",
                "message": "Choose a part to inspect",
                "requestedSchema": part_form(),
            }})
        ]
    );
    assert_eq!(
        run.report["error"],
        json!({"code": -32603, "message": "the elicitation request failed: Mcp error: -32601: Method not found(\"openai/elicitation/create\")"})
    );
}

/// Without the extension nothing is sent and the arguments decide (formwork's tests show it on
/// 2026-07-28; here the handshake mode, where the extension alone would be enough).
#[test]
fn cad_part_without_the_extension_reads_its_arguments() {
    let run = py(
        "legacy",
        "cad-part",
        "inspect_part",
        json!({"part": "hex-bolt"}),
        "[]",
        false,
    );
    assert_eq!(run.pushed(), Vec::<Value>::new());
    assert_eq!(
        run.reply(),
        "Inspecting hex-bolt in steel (the arguments: this client shows no OpenAI forms)."
    );
}

/// A client with the extension gets the note with its `pattern`, and checks it; the SDK checks
/// it again, and asks again on 2026-07-28 when it does not match.
#[test]
fn release_note_with_the_extension_carries_its_pattern() {
    let answers = r#"[{"action":"accept","content":{"note":"fixed it"}},{"action":"accept","content":{"note":"Added: dark mode"}}]"#;
    let run = py(
        "2026-07-28",
        "release-note",
        "release_note",
        json!({}),
        answers,
        true,
    );
    let form = json!({"ask-1ef0891db1c34c1b": {"method": "elicitation/create", "params": {
        "_meta": {"openai/elicitation": {"requestedSchema": {
            "type": "object",
            "properties": {"note": {"type": "string", "title": "Release note",
                "description": "Added, Changed, Fixed or Removed, a colon, then what changed.",
                "maxLength": 120, "pattern": "^(Added|Changed|Fixed|Removed): \\S"}},
            "required": ["note"],
        }}},
        "mode": "form",
        "message": "What goes in the changelog?",
        "requestedSchema": {"type": "object", "properties": {}},
    }}});
    assert_eq!(run.rounds(), [form.clone(), form]);
    assert_eq!(run.reply(), "Recorded release note: Added: dark mode");
}

/// A client that declares no elicitation: nothing is asked, and each example reads its
/// arguments (or says which to pass). What is asked does not depend on the mode, so the cases run
/// on 2026-07-28, and the handshake mode checks one.
#[test]
fn without_elicitation_every_example_reads_its_arguments() {
    let cache = tempfile::tempdir().expect("a temp dir");
    std::fs::write(cache.path().join("old.cache"), "x").expect("a file");
    let dir = cache.path().display().to_string();
    for (mode, example, tool, arguments, reply) in [
        (
            "legacy",
            "deploy-target",
            "choose_target",
            json!({"target": "development"}),
            "Deploying to development (the `target` argument: this client shows no forms).",
        ),
        (
            "2026-07-28",
            "deploy-target",
            "choose_target",
            json!({}),
            "Not deployed: this client shows no forms; pass `target` (development, staging or production) as an argument.",
        ),
        (
            "2026-07-28",
            "release-note",
            "release_note",
            json!({"note": "Removed: the old API"}),
            "Recorded release note (the `note` argument: this client shows no forms): Removed: the old API",
        ),
        (
            "2026-07-28",
            "pick-strategy",
            "pick_strategy",
            json!({"strategy": "custom", "custom": "by hand"}),
            "Rolling out with a custom strategy (the arguments: this client shows no forms): by hand",
        ),
        (
            "2026-07-28",
            "pick-strategy",
            "pick_strategy",
            json!({"strategy": "custom"}),
            "No strategy: this client shows no forms; pass `strategy` (rolling, blue-green, canary, or custom with `custom`).",
        ),
        (
            "2026-07-28",
            "clear-cache",
            "clear_cache",
            json!({"dir": dir}),
            "Nothing deleted: this client shows no forms; pass `confirm: true` to delete.",
        ),
    ] {
        let run = py(mode, example, tool, arguments, "none", false);
        assert_eq!(run.pushed(), Vec::<Value>::new(), "{mode} {tool}");
        assert_eq!(run.rounds(), Vec::<Value>::new(), "{mode} {tool}");
        assert_eq!(run.reply(), reply, "{mode} {tool}");
    }
    assert!(cache.path().join("old.cache").is_file());
    let arguments = json!({"dir": dir, "confirm": true});
    let run = py(
        "legacy",
        "clear-cache",
        "clear_cache",
        arguments,
        "none",
        false,
    );
    assert_eq!(
        run.reply(),
        format!(
            "Deleted 1 file(s) from {dir} (the `confirm` argument: this client shows no forms)."
        )
    );
    assert!(!cache.path().join("old.cache").exists());
}
