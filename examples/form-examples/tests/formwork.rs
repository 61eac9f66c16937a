//! Each example under `formwork call`, in both protocol eras: `auto` (formwork speaks 2026-07-28,
//! which rmcp offers, so forms come as `input_required` rounds) and `--protocol 2025-11-25` (forms
//! are pushed as `elicitation/create`). For each: accept, decline and cancel, the exact reply and
//! the exact form. By default formwork declares no `openai/elicitation` extension, so the CAD part
//! falls back to its arguments, and the release note to its plain form; with
//! `features.openai_elicitation` both are shown as they are.
//!
//! The `formwork` binary is the one beside the examples' bins: `cargo test --workspace` (and so
//! `cargo xtask test`) builds it; alone, run `cargo build -p formwork` first.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};
use support::{Output, bin, run};

const ERAS: [&str; 2] = ["auto", "2025-11-25"];

fn formwork() -> PathBuf {
    let path = bin("deploy-target").with_file_name("formwork");
    assert!(
        path.is_file(),
        "{} is missing: build it with `cargo build -p formwork` (cargo test --workspace does)",
        path.display()
    );
    path
}

enum Answers {
    Script(Value),
    Defaults,
}

/// `formwork call --plugin <example bin> <tool> --protocol <era>` with the wire logged.
fn call(example: &str, tool: &str, era: &str, args: Option<Value>, answers: Answers) -> Output {
    call_configured(None, example, tool, era, args, answers)
}

/// [`call`] under the config `toml`, when given.
fn call_configured(
    toml: Option<&str>,
    example: &str,
    tool: &str,
    era: &str,
    args: Option<Value>,
    answers: Answers,
) -> Output {
    let dir = tempfile::tempdir().expect("a temp dir");
    let mut command = Command::new(formwork());
    command
        .args(["call", tool, "--protocol", era, "--plugin"])
        .arg(bin(example))
        .env("FORMWORK_LOG", "formwork::wire=trace");
    if let Some(toml) = toml {
        let file = dir.path().join("formwork.toml");
        std::fs::write(&file, toml).expect("writing the config");
        command.arg("--config").arg(file);
    }
    if let Some(args) = args {
        command.args(["--args", &args.to_string()]);
    }
    match answers {
        Answers::Script(script) => {
            let file = dir.path().join("answers.json");
            std::fs::write(&file, script.to_string()).expect("writing the answers");
            command.arg("--answers").arg(file);
        }
        Answers::Defaults => {
            command.arg("--accept-defaults");
        }
    }
    run(&mut command)
}

/// The messages on the wire, in order: `("out" | "in", body)`.
fn wire(output: &Output) -> Vec<(String, Value)> {
    output
        .stderr
        .lines()
        .filter_map(|line| {
            let (_, rest) = line.split_once(" formwork::wire: ")?;
            let (head, body) = rest.split_once(" body=")?;
            let direction = head
                .split_once("direction=")?
                .1
                .trim_matches('"')
                .to_owned();
            Some((direction, serde_json::from_str(body).ok()?))
        })
        .collect()
}

/// The forms the plugin asked for, in order, whichever way they came: the params of a pushed
/// `elicitation/create` (without rmcp's `_meta` progress token), or of each input request.
fn forms(output: &Output) -> Vec<Value> {
    let mut forms = Vec::new();
    for (direction, body) in wire(output) {
        if direction != "in" {
            continue;
        }
        if body["method"] == "elicitation/create" {
            let mut params = body["params"].clone();
            if let Some(params) = params.as_object_mut() {
                params.remove("_meta");
            }
            forms.push(params);
        }
        if let Some(requests) = body["result"]["inputRequests"].as_object() {
            for (key, request) in requests {
                assert_eq!(request["method"], "elicitation/create", "{key}: {output}");
                forms.push(request["params"].clone());
            }
        }
    }
    forms
}

/// The input request keys of each `input_required` round, in order (2026-07-28 only).
fn round_keys(output: &Output) -> Vec<String> {
    wire(output)
        .iter()
        .filter_map(|(_, body)| body["result"]["inputRequests"].as_object())
        .flat_map(|requests| requests.keys().cloned().collect::<Vec<_>>())
        .collect()
}

/// Asserts the exit code and the tool's text reply.
fn assert_reply(output: &Output, code: i32, text: &str) {
    assert_eq!(output.code, code, "{output}");
    assert_eq!(output.json()["content"][0]["text"], text, "{output}");
    assert_eq!(output.json()["isError"], code == 1, "{output}");
}

fn declined_and_cancelled(example: &str, tool: &str, args: Option<Value>, what: &str) {
    for era in ERAS {
        for action in ["decline", "cancel"] {
            let output = call(
                example,
                tool,
                era,
                args.clone(),
                Answers::Script(json!([{"action": action}])),
            );
            let done = if action == "decline" {
                "declined"
            } else {
                "cancelled"
            };
            assert_reply(&output, 0, &format!("{what}{done}."));
        }
    }
}

#[test]
fn deployment_target_is_one_choice() {
    let form = json!({"mode": "form", "message": "Where should the build go?", "requestedSchema": {
        "type": "object",
        "properties": {"target": {"type": "string", "title": "Target", "description": "Where the build goes.",
            "oneOf": [
                {"const": "development", "title": "Development"},
                {"const": "staging", "title": "Staging"},
                {"const": "production", "title": "Production"},
            ],
            "default": "staging"}},
        "required": ["target"],
    }});
    for era in ERAS {
        let output = call(
            "deploy-target",
            "choose_target",
            era,
            None,
            Answers::Script(json!([{"target": "production"}])),
        );
        assert_reply(&output, 0, "Deploying to production.");
        assert_eq!(forms(&output), std::slice::from_ref(&form), "{era}");
        let output = call(
            "deploy-target",
            "choose_target",
            era,
            None,
            Answers::Defaults,
        );
        assert_reply(&output, 0, "Deploying to staging.");
    }
    declined_and_cancelled(
        "deploy-target",
        "choose_target",
        None,
        "Not deployed: the target form was ",
    );
}

/// A cache directory with two files, a subdirectory holding one, and a symlink to a file outside.
struct Cache {
    dir: tempfile::TempDir,
    outside: tempfile::TempDir,
}

impl Cache {
    fn new() -> Cache {
        let dir = tempfile::tempdir().expect("a temp dir");
        let outside = tempfile::tempdir().expect("a temp dir");
        std::fs::write(dir.path().join("a.cache"), "a").expect("a file");
        std::fs::write(dir.path().join("b.cache"), "bb").expect("a file");
        std::fs::create_dir(dir.path().join("nested")).expect("a dir");
        std::fs::write(dir.path().join("nested/c.cache"), "c").expect("a file");
        std::fs::write(outside.path().join("keep"), "keep").expect("a file");
        std::os::unix::fs::symlink(outside.path().join("keep"), dir.path().join("link"))
            .expect("a symlink");
        Cache { dir, outside }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// What is left, as sorted relative paths (the outside file as `outside/keep`).
    fn left(&self) -> Vec<String> {
        let mut left: Vec<String> = ["a.cache", "b.cache", "link", "nested/c.cache"]
            .into_iter()
            .filter(|name| self.path().join(name).symlink_metadata().is_ok())
            .map(str::to_owned)
            .collect();
        if self.outside.path().join("keep").is_file() {
            left.push("outside/keep".to_owned());
        }
        left
    }
}

const EVERYTHING: [&str; 5] = [
    "a.cache",
    "b.cache",
    "link",
    "nested/c.cache",
    "outside/keep",
];

#[test]
fn cache_deletion_deletes_only_when_accepted() {
    for era in ERAS {
        // Declined, cancelled, or accepted without ticking the box (the default): nothing goes.
        for (answers, text) in [
            (
                Answers::Script(json!([{"action": "decline"}])),
                "Nothing deleted: the confirmation was declined.",
            ),
            (
                Answers::Script(json!([{"action": "cancel"}])),
                "Nothing deleted: the confirmation was cancelled.",
            ),
            (
                Answers::Defaults,
                "Nothing deleted: the deletion was not ticked.",
            ),
            (
                Answers::Script(json!([{"delete": false}])),
                "Nothing deleted: the deletion was not ticked.",
            ),
        ] {
            let cache = Cache::new();
            // `confirm` counts only where no form can be shown.
            let args = json!({"dir": cache.path(), "confirm": true});
            let output = call("clear-cache", "clear_cache", era, Some(args), answers);
            assert_reply(&output, 0, text);
            assert_eq!(cache.left(), EVERYTHING, "{era}: {output}");
        }
        let cache = Cache::new();
        let dir = cache.path().display().to_string();
        let output = call(
            "clear-cache",
            "clear_cache",
            era,
            Some(json!({"dir": dir})),
            Answers::Script(json!([{"delete": true}])),
        );
        assert_reply(&output, 0, &format!("Deleted 2 file(s) from {dir}."));
        // Only the regular files directly in the directory.
        assert_eq!(
            cache.left(),
            ["link", "nested/c.cache", "outside/keep"],
            "{era}: {output}"
        );
        assert_eq!(
            forms(&output),
            [
                json!({"mode": "form", "message": format!("Delete the 2 file(s) in {dir}?"), "requestedSchema": {
                    "type": "object",
                    "properties": {"delete": {"type": "boolean", "title": "Delete them",
                        "description": "The files are gone for good; nothing is deleted unless this is ticked.",
                        "default": false}},
                }})
            ],
            "{era}"
        );
        // Nothing to delete: no question at all.
        let empty = tempfile::tempdir().expect("a temp dir");
        let output = call(
            "clear-cache",
            "clear_cache",
            era,
            Some(json!({"dir": empty.path()})),
            Answers::Script(json!([])),
        );
        assert_reply(
            &output,
            0,
            &format!(
                "Nothing to delete: {} holds no files.",
                empty.path().display()
            ),
        );
        assert_eq!(forms(&output), Vec::<Value>::new(), "{era}");
    }
}

#[test]
fn release_note_falls_back_to_a_plain_form_checked_by_the_plugin() {
    let form = json!({"mode": "form", "message": "What goes in the changelog?", "requestedSchema": {
        "type": "object",
        "properties": {"note": {"type": "string", "title": "Release note",
            "description": "Added, Changed, Fixed or Removed, a colon, then what changed.",
            "maxLength": 120}},
        "required": ["note"],
    }});
    for era in ERAS {
        let output = call(
            "release-note",
            "release_note",
            era,
            None,
            Answers::Script(json!([{"note": "Fixed: the login loop"}])),
        );
        assert_reply(&output, 0, "Recorded release note: Fixed: the login loop");
        // formwork declares no openai/elicitation: the patterned form is not sent, the plain one
        // is, without `pattern`.
        assert_eq!(forms(&output), std::slice::from_ref(&form), "{era}");
        let keys = if era == "auto" {
            vec!["ask-3129f1efbfc877fa"]
        } else {
            vec![]
        };
        assert_eq!(round_keys(&output), keys, "{era}");
        let output = call(
            "release-note",
            "release_note",
            era,
            None,
            Answers::Script(json!([{"note": "fixed the login loop"}])),
        );
        assert_reply(
            &output,
            1,
            r#"Not recorded: "fixed the login loop" does not match ^(Added|Changed|Fixed|Removed): \S (e.g. "Fixed: the login loop")."#,
        );
    }
    declined_and_cancelled(
        "release-note",
        "release_note",
        None,
        "No release note: the form was ",
    );
}

#[test]
fn strategy_custom_needs_a_text_and_is_asked_again() {
    let form = |message: &str| {
        json!({"mode": "form", "message": message, "requestedSchema": {
            "type": "object",
            "properties": {
                "strategy": {"type": "string", "title": "Strategy", "description": "How a release rolls out.",
                    "oneOf": [
                        {"const": "rolling", "title": "Rolling update"},
                        {"const": "blue-green", "title": "Blue-green"},
                        {"const": "canary", "title": "Canary"},
                        {"const": "custom", "title": "Custom (describe it below)"},
                    ],
                    "default": "rolling"},
                "custom": {"type": "string", "title": "Custom strategy",
                    "description": "Needed when the strategy is Custom; ignored otherwise.", "maxLength": 200},
            },
            "required": ["strategy"],
        }})
    };
    let first = form("How should the release roll out?");
    let again = form(
        "Custom needs a description: say how the release rolls out, or pick another strategy.",
    );
    for era in ERAS {
        let output = call(
            "pick-strategy",
            "pick_strategy",
            era,
            None,
            Answers::Script(json!([{"strategy": "canary", "custom": "ignored"}])),
        );
        assert_reply(&output, 0, "Rolling out with canary.");
        assert_eq!(forms(&output), std::slice::from_ref(&first), "{era}");
        let output = call(
            "pick-strategy",
            "pick_strategy",
            era,
            None,
            Answers::Script(json!([
                {"strategy": "custom"},
                {"strategy": "custom", "custom": "  "},
                {"strategy": "custom", "custom": "one region at a time"},
            ])),
        );
        assert_reply(
            &output,
            0,
            "Rolling out with a custom strategy: one region at a time",
        );
        assert_eq!(
            forms(&output),
            [first.clone(), again.clone(), again.clone()],
            "{era}"
        );
        let keys = if era == "auto" {
            // The last two forms are the same question asked twice: each has a key of its own.
            vec![
                "ask-8324b5c6daa6e452",
                "ask-cad59943c89ff834",
                "ask-b2e9d0e6bab15001",
            ]
        } else {
            vec![]
        };
        assert_eq!(round_keys(&output), keys, "{era}");
        let output = call(
            "pick-strategy",
            "pick_strategy",
            era,
            None,
            Answers::Script(
                json!([{"strategy": "custom"}, {"strategy": "custom"}, {"strategy": "custom"}]),
            ),
        );
        assert_reply(
            &output,
            1,
            "No strategy: Custom was chosen 3 times without a description.",
        );
    }
    declined_and_cancelled(
        "pick-strategy",
        "pick_strategy",
        None,
        "No strategy: the form was ",
    );
}

/// formwork declares no `openai/elicitation` extension: the CAD form is never sent, and the
/// tool reads its arguments.
#[test]
fn cad_part_falls_back_to_its_arguments_under_formwork() {
    for era in ERAS {
        let output = call(
            "cad-part",
            "inspect_part",
            era,
            Some(json!({"part": "washer", "material": "brass"})),
            Answers::Script(json!([])),
        );
        assert_reply(
            &output,
            0,
            "Inspecting washer in brass (the arguments: this client shows no OpenAI forms).",
        );
        assert_eq!(forms(&output), Vec::<Value>::new(), "{era}");
        let calls = wire(&output)
            .iter()
            .filter(|(_, body)| body["method"] == "tools/call")
            .count();
        assert_eq!(calls, 1, "{era}: {output}");
        let output = call(
            "cad-part",
            "inspect_part",
            era,
            None,
            Answers::Script(json!([])),
        );
        assert_reply(
            &output,
            1,
            "No part inspected: this client shows no OpenAI forms; pass `part` (hex-bolt, washer or nut) as an argument.",
        );
    }
}

const OPENAI_ON: &str = "[features]\nopenai_elicitation = true\n";

/// With `features.openai_elicitation` formwork shows the CAD form: in `_meta` of an embedded
/// `elicitation/create` on 2026-07-28, as `openai/elicitation/create` before; the part, the
/// material typed over the suggestions and an offered drawing reach the tool.
#[test]
fn cad_part_is_shown_with_openai_elicitation_on() {
    for era in ERAS {
        let output = call_configured(
            Some(OPENAI_ON),
            "cad-part",
            "inspect_part",
            era,
            None,
            Answers::Script(
                json!([{"part": "washer", "material": "bronze", "drawing": "cad://drawings/m6-bolt.stl"}]),
            ),
        );
        assert_reply(
            &output,
            0,
            "Inspecting washer in bronze, against cad://drawings/m6-bolt.stl.",
        );
        let asked: Vec<Value> = wire(&output)
            .into_iter()
            .filter_map(|(direction, body)| match direction.as_str() {
                "in" if body["method"] == "openai/elicitation/create" => {
                    Some(body["params"].clone())
                }
                "in" => body["result"]["inputRequests"]
                    .as_object()
                    .and_then(|requests| requests.values().next())
                    .map(|request| request["params"].clone()),
                _ => None,
            })
            .collect();
        assert_eq!(asked.len(), 1, "{era}: {output}");
        let schema = if era == "auto" {
            assert_eq!(
                asked[0]["requestedSchema"],
                json!({"type": "object", "properties": {}}),
                "{era}"
            );
            &asked[0]["_meta"]["openai/elicitation"]["requestedSchema"]
        } else {
            &asked[0]["requestedSchema"]
        };
        assert_eq!(
            schema["properties"]["part"]["oneOf"][1]["x-openai-thumbnail"]["src"],
            "https://example.com/parts/washer.png",
            "{era}"
        );
        let output = call_configured(
            Some(OPENAI_ON),
            "cad-part",
            "inspect_part",
            era,
            None,
            Answers::Script(json!([{"action": "decline"}])),
        );
        assert_reply(&output, 0, "No part inspected: the form was declined.");
    }
}

/// With `features.openai_elicitation` formwork gets the patterned release note and checks the
/// pattern itself: a note that does not match never reaches the plugin.
#[test]
fn release_note_keeps_its_pattern_with_openai_elicitation_on() {
    for era in ERAS {
        let output = call_configured(
            Some(OPENAI_ON),
            "release-note",
            "release_note",
            era,
            None,
            Answers::Script(json!([{"note": "Added: dark mode"}])),
        );
        assert_reply(&output, 0, "Recorded release note: Added: dark mode");
        let output = call_configured(
            Some(OPENAI_ON),
            "release-note",
            "release_note",
            era,
            None,
            Answers::Script(json!([{"note": "dark mode"}])),
        );
        // Exit 2: formwork refused the answer and sent `cancel` in its place.
        assert_eq!(output.code, 2, "{output}");
        assert_eq!(
            output.json()["content"][0]["text"],
            "No release note: the form was cancelled."
        );
        assert!(
            output
                .stderr
                .contains("note: must match the pattern `^(Added|Changed|Fixed|Removed): \\S`"),
            "{output}"
        );
    }
}
