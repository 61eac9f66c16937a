//! Every approval-policy rule exercised from a terminal: `formwork call --config F --server ts`
//! against the official TypeScript SDK plugin, configured in a temporary formwork.toml.

#![allow(clippy::unwrap_used)]

mod common;

use std::path::{Path, PathBuf};

use common::{Output as Run, formwork, peers_dir};

/// Writes a config with the TS plugin as server `ts`; `top` goes before the server table and
/// `server` inside it.
fn config(dir: &Path, top: &str, server: &str) -> PathBuf {
    let peers = peers_dir();
    let node = peers.join("npm/node_modules/.bin/node");
    let plugin = peers.join("npm/ts_plugin.mjs");
    let path = dir.join("formwork.toml");
    let text = format!(
        "{top}\n[mcp_servers.ts]\ncommand = {:?}\nargs = [{:?}]\n{server}\n",
        node.display().to_string(),
        plugin.display().to_string()
    );
    std::fs::write(&path, text).unwrap();
    path
}

fn call(config: &Path, tool: &str, answers: &str) -> Run {
    let dir = config.parent().unwrap();
    let answers_path = dir.join("answers.json");
    std::fs::write(&answers_path, answers).unwrap();
    formwork(
        &[
            "call",
            "--config",
            config.to_str().unwrap(),
            "--server",
            "ts",
            tool,
            "--answers",
            answers_path.to_str().unwrap(),
        ],
        None,
    )
}

fn text(run: &Run) -> String {
    let result: serde_json::Value = serde_json::from_str(&run.stdout).unwrap_or_default();
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[test]
fn the_policy_gate_decides_whether_plugin_forms_reach_the_person() {
    let dir = tempfile::tempdir().unwrap();
    let approve = "default_tools_approval_mode = \"approve\"";
    let rows = [
        ("approval_policy = \"on-request\"", true),
        ("approval_policy = \"untrusted\"", true),
        ("approval_policy = \"never\"", false),
        ("elicitations_auto_deny = true", false),
        (
            "approval_policy = { granular = { sandbox_approval = false, rules = false, mcp_elicitations = true } }",
            true,
        ),
        (
            "approval_policy = { granular = { sandbox_approval = false, rules = false, mcp_elicitations = false } }",
            false,
        ),
    ];
    for (top, shown) in rows {
        let path = config(dir.path(), top, approve);
        let run = call(&path, "ask_enum", r#"[{"color": "red"}]"#);
        if shown {
            assert_eq!(run.code, 0, "{top}\n{run:?}");
            assert_eq!(
                text(&run),
                r#"result: {"action":"accept","content":{"color":"red"}}"#,
                "{top}"
            );
        } else {
            assert_eq!(run.code, 0, "{top}\n{run:?}");
            assert_eq!(text(&run), r#"result: {"action":"decline"}"#, "{top}");
            assert!(
                run.stderr.contains("declined by policy"),
                "{top}\n{}",
                run.stderr
            );
        }
    }
}

#[test]
fn a_prompt_server_asks_for_approval_and_allow_runs_the_tool() {
    let dir = tempfile::tempdir().unwrap();
    let path = config(dir.path(), "", "default_tools_approval_mode = \"prompt\"");
    let run = call(
        &path,
        "ask_enum",
        r#"[{"approval": "allow"}, {"color": "blue"}]"#,
    );
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        text(&run),
        r#"result: {"action":"accept","content":{"color":"blue"}}"#
    );
}

#[test]
fn deny_fails_the_call_without_running_the_tool() {
    let dir = tempfile::tempdir().unwrap();
    let path = config(dir.path(), "", "default_tools_approval_mode = \"prompt\"");
    let run = call(&path, "ask_enum", r#"[{"approval": "deny"}]"#);
    assert_eq!(run.code, 2, "{run:?}");
    assert_eq!(run.stdout, "");
    assert!(
        run.stderr.contains("user rejected MCP tool call"),
        "{}",
        run.stderr
    );
}

#[test]
fn never_with_a_tool_that_needs_approval_fails_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let path = config(
        dir.path(),
        "approval_policy = \"never\"",
        "default_tools_approval_mode = \"prompt\"",
    );
    let run = call(&path, "ask_enum", "[]");
    assert_eq!(run.code, 2, "{run:?}");
    assert!(
        run.stderr
            .contains("MCP tool call requires approval, but approval policy is never"),
        "{}",
        run.stderr
    );
}

#[test]
fn always_allow_is_written_to_the_config_and_later_calls_run_without_a_card() {
    let dir = tempfile::tempdir().unwrap();
    // Unannotated tools of a server formwork does not manage need a card under `auto`.
    let path = config(dir.path(), "", "");
    let run = call(
        &path,
        "ask_enum",
        r#"[{"approval": "always_allow"}, {"color": "green"}]"#,
    );
    assert_eq!(run.code, 0, "{run:?}");
    let written = std::fs::read_to_string(&path).unwrap();
    assert!(written.contains("approval_mode = \"approve\""), "{written}");
    let again = call(&path, "ask_enum", r#"[{"color": "red"}]"#);
    assert_eq!(again.code, 0, "{again:?}");
    assert_eq!(
        text(&again),
        r#"result: {"action":"accept","content":{"color":"red"}}"#
    );
}

#[test]
fn accept_defaults_never_approves_a_tool_call() {
    let dir = tempfile::tempdir().unwrap();
    let path = config(dir.path(), "", "default_tools_approval_mode = \"prompt\"");
    let run = formwork(
        &[
            "call",
            "--config",
            path.to_str().unwrap(),
            "--server",
            "ts",
            "ask_enum",
            "--accept-defaults",
        ],
        None,
    );
    assert_eq!(run.code, 2, "{run:?}");
    assert!(
        run.stderr.contains("does not approve tool calls"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_bad_config_names_file_line_and_key() {
    let dir = tempfile::tempdir().unwrap();
    let path = config(dir.path(), "", "default_tools_approval_mode = \"ask\"");
    let run = call(&path, "ask_enum", "[]");
    assert_eq!(run.code, 2, "{run:?}");
    let shown = format!("{}:", path.display());
    assert!(run.stderr.contains(&shown), "{}", run.stderr);
    assert!(
        run.stderr
            .contains("mcp_servers.ts.default_tools_approval_mode"),
        "{}",
        run.stderr
    );
}

/// Always allow from `formwork call` inside a trusted project: the approval goes into the user config, which holds
/// the server's table; the project's file is left byte-for-byte as it was.
#[test]
fn always_allow_inside_a_trusted_project_writes_the_user_config() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let project = root.join("proj");
    std::fs::create_dir_all(&project).unwrap();
    let user_dir = root.join("xdg/formwork");
    std::fs::create_dir_all(&user_dir).unwrap();
    let user = config(&user_dir, "", "");
    let mut user_text = std::fs::read_to_string(&user).unwrap();
    user_text.push_str(&format!(
        "\n[projects.\"{}\"]\ntrust_level = \"trusted\"\n",
        project.display()
    ));
    std::fs::write(&user, &user_text).unwrap();
    let project_file = project.join("formwork.toml");
    let project_text = "# the project's settings\napproval_policy = \"on-request\"\n";
    std::fs::write(&project_file, project_text).unwrap();
    let answers = root.join("answers.json");
    std::fs::write(
        &answers,
        r#"[{"approval": "always_allow"}, {"color": "green"}]"#,
    )
    .unwrap();

    let run = common::run(
        std::process::Command::new(env!("CARGO_BIN_EXE_formwork"))
            .args(["call", "--server", "ts", "ask_enum", "--answers"])
            .arg(&answers)
            .current_dir(&project)
            .env("XDG_CONFIG_HOME", root.join("xdg")),
        None,
        common::TIMEOUT,
    );
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        run.stderr,
        format!(
            "formwork: always allowed: wrote the tool's approval_mode to {}\n",
            user.display()
        )
    );
    // The tool's table goes right after its server's; everything else stays as it was.
    assert_eq!(
        std::fs::read_to_string(&user).unwrap(),
        user_text.replacen(
            "\n\n\n[projects.",
            "\n\n[mcp_servers.ts.tools.ask_enum]\napproval_mode = \"approve\"\n\n\n[projects.",
            1
        )
    );
    assert_eq!(
        std::fs::read_to_string(&project_file).unwrap(),
        project_text
    );
}
