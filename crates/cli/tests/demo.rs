//! `formwork demo` (docs/cli.md): the bundled demo plugin (crates/cli/src/demo_plugin.rs, on
//! formwork-sdk) in both protocol eras. With `auto` it is spoken to in 2026-07-28, and its forms
//! come as `input_required` rounds; `--protocol 2025-11-25` gets the handshake and pushed
//! `elicitation/create` requests. Same forms, same answers, same replies.

mod common;

use std::process::Command;

use common::{Answers, Output, compact, formwork, quote};
use serde_json::{Value, json};

/// The deploy form, exactly as the demo sends it.
const DEPLOY_FORM: &str = r#"{"type":"object","properties":{"target":{"type":"string","title":"Target","description":"Where the new version goes.","oneOf":[{"const":"staging","title":"Staging"},{"const":"production","title":"Production"}],"default":"staging"},"replicas":{"type":"integer","title":"Replicas","description":"How many instances to run.","minimum":1,"maximum":10,"default":2},"channels":{"type":"array","title":"Notify","description":"Who hears about it.","maxItems":2,"items":{"anyOf":[{"const":"email","title":"Email"},{"const":"chat","title":"Team chat"},{"const":"pager","title":"Pager"}]},"default":["email"]},"note":{"type":"string","title":"Release note","description":"One line for the changelog (optional).","maxLength":200}},"required":["target","replicas"]}"#;

/// The reply to the deploy form accepted with its defaults.
const DEPLOYED_WITH_DEFAULTS: &str = r#"Deployed web to staging with 2 replica(s); notified: email; note: none. Content received: {"target":"staging","replicas":2,"channels":["email"]}"#;

/// The demo plugin as a `--plugin` command: this formwork binary, as `formwork demo-plugin`.
fn demo_plugin() -> String {
    format!(
        "{} demo-plugin",
        quote(std::path::Path::new(env!("CARGO_BIN_EXE_formwork")))
    )
}

/// `formwork call <tool>` of the demo plugin in `era` ("auto" or a version), the wire logged.
fn call(era: &str, tool: &str, answers: Answers) -> Output {
    let mut args = vec![
        "call".to_owned(),
        tool.to_owned(),
        "--plugin".to_owned(),
        demo_plugin(),
        "--protocol".to_owned(),
        era.to_owned(),
    ];
    let _file = match answers {
        Answers::Script(script) => {
            let file = common::TempFile::new(&script.to_string());
            args.extend(["--answers".to_owned(), file.path.display().to_string()]);
            Some(file)
        }
        Answers::AcceptDefaults => {
            args.push("--accept-defaults".to_owned());
            None
        }
        Answers::Nothing => None,
    };
    common::run(
        Command::new(env!("CARGO_BIN_EXE_formwork"))
            .args(&args)
            .env("FORMWORK_LOG", "formwork::wire=trace"),
        None,
        common::TIMEOUT,
    )
}

/// Each message on the wire as `direction method` or `direction response <id>`.
fn steps(output: &Output) -> Vec<String> {
    common::wire(output)
        .iter()
        .map(|(direction, body)| {
            let what = body["method"]
                .as_str()
                .map_or_else(|| format!("response {}", body["id"]), str::to_owned);
            format!("{direction} {what}")
        })
        .collect()
}

/// The body of message `index`, compact, with a `requestState` replaced by `<state>`.
fn message(output: &Output, index: usize) -> String {
    let mut body = common::wire(output)
        .get(index)
        .map(|(_, body)| body.clone())
        .unwrap_or_else(|| panic!("no message {index}: {output}"));
    for pointer in ["/result/requestState", "/params/requestState"] {
        if let Some(state) = body.pointer_mut(pointer) {
            *state = json!("<state>");
        }
    }
    compact(&body)
}

const META: &str = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{},"url":{}}},"io.modelcontextprotocol/clientInfo":{"name":"formwork","version":"0.1.0"}}"#;

#[test]
fn demo_without_a_terminal_accepts_defaults() {
    let output = formwork(&["demo"], None);
    output.assert_code(0);
    assert_eq!(output.text(), DEPLOYED_WITH_DEFAULTS, "{output}");
    output.assert_stderr_mentions(
        "formwork: no terminal to ask on; the demo accepts every form with its defaults",
    );
}

/// `FORMWORK_LOG=formwork::wire=trace` logs every message to and from the plugin, whole and in
/// order, as plain text when stderr is not a terminal. The demo speaks 2026-07-28: its form is
/// an `input_required` result, and formwork calls again with the answer and the state.
#[test]
fn wire_trace_logs_each_message_whole() {
    let output = common::run(
        Command::new(env!("CARGO_BIN_EXE_formwork"))
            .arg("demo")
            .env("FORMWORK_LOG", "formwork::wire=trace"),
        None,
        common::TIMEOUT,
    );
    output.assert_code(0);
    assert!(
        !output.stderr.contains('\u{1b}'),
        "colour codes in a log that is not a terminal: {output}"
    );
    assert_eq!(
        steps(&output),
        [
            "out server/discover",
            "in response 0",
            "out tools/call",
            "in response 1",
            "out tools/call",
            "in response 2",
        ],
        "{output}"
    );
    assert_eq!(
        message(&output, 2),
        format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"deploy",{META}}}}}"#
        )
    );
    assert_eq!(
        message(&output, 3),
        format!(
            r#"{{"jsonrpc":"2.0","id":1,"result":{{"resultType":"input_required","inputRequests":{{"ask-117e5ff95512ed09":{{"method":"elicitation/create","params":{{"mode":"form","message":"How should `web` be deployed?","requestedSchema":{DEPLOY_FORM}}}}}}},"requestState":"<state>"}}}}"#
        )
    );
    assert_eq!(
        message(&output, 4),
        format!(
            r#"{{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{{"name":"deploy","inputResponses":{{"ask-117e5ff95512ed09":{{"action":"accept","content":{{"target":"staging","replicas":2,"channels":["email"]}}}}}},"requestState":"<state>",{META}}}}}"#
        )
    );
    let wire = common::wire(&output);
    assert_eq!(
        wire[4].1["params"]["requestState"],
        wire[3].1["result"]["requestState"]
    );
    assert_eq!(
        message(&output, 5),
        compact(&json!({"jsonrpc": "2.0", "id": 2, "result": {
            "resultType": "complete",
            "content": [{"type": "text", "text": DEPLOYED_WITH_DEFAULTS}],
            "isError": false,
        }}))
    );
}

/// Pinned to 2025-11-25 the same demo pushes the same form as `elicitation/create` (rmcp adds a
/// `progressToken` to every request it sends).
#[test]
fn on_2025_11_25_the_form_is_pushed() {
    let output = call("2025-11-25", "deploy", Answers::AcceptDefaults);
    output.assert_code(0);
    assert_eq!(
        steps(&output),
        [
            "out initialize",
            "in response 0",
            "out notifications/initialized",
            "out tools/call",
            "in elicitation/create",
            "out response 0",
            "in response 1",
        ],
        "{output}"
    );
    assert_eq!(
        message(&output, 4),
        format!(
            r#"{{"jsonrpc":"2.0","id":0,"method":"elicitation/create","params":{{"_meta":{{"progressToken":0}},"mode":"form","message":"How should `web` be deployed?","requestedSchema":{DEPLOY_FORM}}}}}"#
        )
    );
    assert_eq!(
        message(&output, 5),
        r#"{"jsonrpc":"2.0","id":0,"result":{"action":"accept","content":{"target":"staging","replicas":2,"channels":["email"]}}}"#
    );
    assert_eq!(output.text(), DEPLOYED_WITH_DEFAULTS);
}

/// Production takes a second form, in both eras (a second round on 2026-07-28).
#[test]
fn production_is_confirmed_by_a_second_form() {
    for era in ["auto", "2025-11-25"] {
        let answers = json!([{"target": "production", "replicas": 3, "channels": [], "note": "Fixed: login"}, {"confirm": true}]);
        let output = call(era, "deploy", Answers::Script(answers));
        output.assert_code(0);
        assert_eq!(
            output.text(),
            r#"Deployed web to production with 3 replica(s); notified: nobody; note: Fixed: login. Content received: {"target":"production","replicas":3,"channels":[],"note":"Fixed: login"}"#,
            "{era}: {output}"
        );
        let rounds = steps(&output)
            .iter()
            .filter(|step| *step == "out tools/call")
            .count();
        assert_eq!(rounds, if era == "auto" { 3 } else { 1 }, "{output}");
        let output = call(
            era,
            "deploy",
            Answers::Script(json!([{"target": "production"}, {"action": "decline"}])),
        );
        output.assert_code(0);
        assert_eq!(
            output.text(),
            "Deployment of web to production was not confirmed.",
            "{era}: {output}"
        );
    }
}

#[test]
fn a_declined_or_cancelled_form_stops_the_tool() {
    for era in ["auto", "2025-11-25"] {
        for (action, text) in [
            (
                "decline",
                "Deployment of web stopped: the form was declined.",
            ),
            (
                "cancel",
                "Deployment of web stopped: the form was cancelled.",
            ),
        ] {
            let output = call(era, "deploy", Answers::Script(json!([{"action": action}])));
            output.assert_code(0);
            assert_eq!(output.text(), text, "{era}: {output}");
        }
        let output = call(
            era,
            "pick_color",
            Answers::Script(json!([{"color": "green"}])),
        );
        output.assert_code(0);
        assert_eq!(output.text(), r#"You picked "green"."#, "{era}: {output}");
        let output = call(
            era,
            "pick_color",
            Answers::Script(json!([{"action": "decline"}])),
        );
        assert_eq!(
            output.text(),
            "No color: the form was declined.",
            "{era}: {output}"
        );
    }
}

/// The built-in server lists its own tools, then those of examples/form-examples.
#[test]
fn the_demo_serves_the_examples_tools_too() {
    let output = formwork(&["tools", "--server", "demo"], None);
    output.assert_code(0);
    let names: Vec<Value> = output
        .json()
        .as_array()
        .map(|tools| tools.iter().map(|tool| tool["name"].clone()).collect())
        .unwrap_or_default();
    assert_eq!(
        names,
        [
            "deploy",
            "pick_color",
            "choose_target",
            "clear_cache",
            "release_note",
            "pick_strategy",
            "inspect_part",
        ],
        "{output}"
    );
    let output = formwork(
        &["demo", "choose_target", "--answers", "/dev/stdin"],
        Some(br#"[{"target": "production"}]"#),
    );
    output.assert_code(0);
    assert_eq!(output.text(), "Deploying to production.", "{output}");
}
