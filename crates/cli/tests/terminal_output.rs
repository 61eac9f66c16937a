//! What `tools`, `call` and `doctor` print to a terminal: a summary for people, and with
//! `--json` (or piped, as every other test runs them) exactly their JSON. The terminal is a real
//! pseudo-terminal from util-linux's `script`; the plugin is the real server-everything.

#![allow(clippy::unwrap_used)]

mod common;

use std::process::Command;

use common::{everything_plugin, quote};

/// Runs `formwork ARGS` with its stdout on a pseudo-terminal; what it printed there (stderr is
/// left out), with the terminal's `\r\n` as `\n`.
fn on_terminal(args: &[&str]) -> String {
    let mut line = quote(std::path::Path::new(env!("CARGO_BIN_EXE_formwork")));
    for arg in args {
        line.push(' ');
        line.push_str(&format!("'{}'", arg.replace('\'', r"'\''")));
    }
    line.push_str(" 2>/dev/null");
    let mut cmd = Command::new("script");
    cmd.args(["-qec", &line, "/dev/null"]);
    common::without_user_config(&mut cmd);
    let output = cmd.output().unwrap();
    String::from_utf8(output.stdout)
        .unwrap()
        .replace("\r\n", "\n")
}

#[test]
fn tools_are_a_table_on_a_terminal_and_json_with_the_flag() {
    let plugin = everything_plugin();
    let table = on_terminal(&["tools", "--plugin", &plugin]);
    let lines: Vec<&str> = table.lines().collect();
    assert!(
        lines[0].starts_with("TOOL ") && lines[0].ends_with("  DESCRIPTION"),
        "{table}"
    );
    let echo = lines.iter().find(|line| line.starts_with("echo ")).unwrap();
    assert!(echo.ends_with("  Echoes back the input string"), "{table}");
    let count = lines.last().unwrap();
    assert!(count.ends_with(" tools") && count.len() < 12, "{table}");

    let json = on_terminal(&["tools", "--plugin", &plugin, "--json"]);
    let tools: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert!(
        tools
            .as_array()
            .unwrap()
            .iter()
            .any(|tool| tool["name"] == "echo")
    );
}

#[test]
fn a_call_shows_its_text_and_outcome_on_a_terminal() {
    let plugin = everything_plugin();
    let shown = on_terminal(&[
        "call",
        "--plugin",
        &plugin,
        "echo",
        "--args",
        r#"{"message":"hi there"}"#,
    ]);
    assert_eq!(shown, "Echo: hi there\n✓ The tool returned.\n");
    let json = on_terminal(&[
        "call",
        "--plugin",
        &plugin,
        "echo",
        "--args",
        r#"{"message":"hi"}"#,
        "--json",
    ]);
    let result: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(
        result,
        serde_json::json!({"content": [{"type": "text", "text": "Echo: hi"}]})
    );
}

#[test]
fn the_doctor_is_a_checklist_on_a_terminal() {
    let plugin = everything_plugin();
    let shown = on_terminal(&["doctor", "--plugin", &plugin]);
    let first = shown.lines().next().unwrap();
    assert!(first.starts_with("✓ Connected to "), "{shown}");
    assert!(
        first.ends_with("(protocol 2025-11-25, handshake)"),
        "{shown}"
    );
    let rest: Vec<&str> = shown.lines().skip(1).collect();
    assert_eq!(
        rest,
        [
            "✓ 15 tools listed",
            "? The MCP client does not support openai/form requests. (a --tool call tells)",
            "? Plugin receives action: \"decline\", but logs do not contain mcpServer/elicitation/request (a --tool call tells)",
            "? No form appears, but logs contain mcpServer/elicitation/request (a --tool call tells)",
            "✓ Every MCP tool call shows an \"Allow this MCP tool call\" form",
            "? The form appears but the plugin does not continue after submit (a --tool call tells)",
            "✓ A tool that asks for a form fails on a 2026-07-28 connection (\"no back-channel\", \"server-initiated requests\")",
        ],
        "{shown}"
    );
}

#[test]
fn config_check_is_a_summary_on_a_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("formwork.toml");
    std::fs::write(
        &config,
        "model = \"qwen3\"\nmodel_provider = \"lab\"\n\
         [model_providers.lab]\nname = \"Lab\"\nbase_url = \"http://127.0.0.1:8080/v1\"\nwire_api = \"chat\"\n\
         [mcp_servers.docs]\nurl = \"https://docs.example/mcp\"\n",
    )
    .unwrap();
    let config = config.display().to_string();
    let shown = on_terminal(&["config", "check", "--config", &config]);
    let lines: Vec<&str> = shown.lines().collect();
    assert_eq!(
        lines[1],
        format!(
            "✓ explicit {config}: named with --config: it applies on top of the user config, and no project formwork.toml is looked for"
        )
    );
    assert_eq!(
        lines[2],
        "✓ plugin forms are shown: approval_policy = \"on-request\" allows them"
    );
    assert_eq!(
        lines[3],
        "  approval_policy on-request · approval card request_user_input · at most 16 forms pending"
    );
    assert_eq!(
        lines[4],
        "  model: qwen3 via Lab (chat, http://127.0.0.1:8080/v1); no API key is sent"
    );
    assert_eq!(
        &lines[5..],
        [
            "  docs  https://docs.example/mcp  tools: auto",
            "  demo  built in  tools: approve"
        ]
    );
    let json = on_terminal(&["config", "check", "--config", &config, "--json"]);
    let report: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(
        report["mcp_servers"]["docs"]["url"],
        "https://docs.example/mcp"
    );
}
