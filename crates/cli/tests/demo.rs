//! `formwork demo` (docs/cli.md): the bundled demo plugin, with no terminal and no answers, accepts defaults.

mod common;

use common::formwork;

#[test]
fn demo_without_a_terminal_accepts_defaults() {
    let output = formwork(&["demo"], None);
    output.assert_code(0);
    let result = output.json();
    assert!(
        result["content"].is_array(),
        "no CallToolResult on stdout: {output}"
    );
    assert_ne!(result["isError"], true, "{output}");
}

/// `FORMWORK_LOG=formwork::wire=trace` logs every message to and from the plugin, whole and in
/// order, as plain text when stderr is not a terminal.
#[test]
fn wire_trace_logs_each_message_whole() {
    let output = common::run(
        std::process::Command::new(env!("CARGO_BIN_EXE_formwork"))
            .arg("demo")
            .env("FORMWORK_LOG", "formwork::wire=trace"),
        None,
        std::time::Duration::from_secs(60),
    );
    output.assert_code(0);
    assert!(
        !output.stderr.contains('\u{1b}'),
        "colour codes in a log that is not a terminal: {output}"
    );
    let wire = common::wire(&output);
    let steps: Vec<String> = wire
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
        common::compact(&wire[5].1),
        r#"{"jsonrpc":"2.0","id":0,"result":{"action":"accept","content":{"target":"staging","replicas":2,"channels":["email"]}}}"#
    );
}
