//! `formwork chat`: one message to the model in the terminal, against the simulated provider
//! (tests/peers/sim_provider.py, the one hand-written fake) and the TS SDK plugin as server `ts`.
//! Forms are answered from `--answers`, as `formwork call` answers them.

#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use common::{TempFile, node_bin_dir, peers_dir, run};
use formwork_testkit::SimProvider;
use serde_json::{Value, json};

fn config(sim: &SimProvider, approval: &str) -> TempFile {
    let node = node_bin_dir().join("node").display().to_string();
    let plugin = peers_dir().join("npm/ts_plugin.mjs").display().to_string();
    TempFile::new(&format!(
        "model_provider = \"sim\"\nmodel = \"sim-1\"\n\n\
         [model_providers.sim]\nname = \"Sim\"\nbase_url = {:?}\nwire_api = \"chat\"\nrequest_max_retries = 0\n\n\
         [mcp_servers.ts]\ncommand = {node:?}\nargs = [{plugin:?}]\ndefault_tools_approval_mode = {approval:?}\n\
         enabled_tools = [\"ask_enum\", \"fail\"]\n\n\
         [mcp_servers.demo]\nenabled = false\n",
        sim.url
    ))
}

fn chat(config: &TempFile, answers: Option<&Value>, message: &str) -> common::Output {
    let answers = answers.map(|answers| TempFile::new(&answers.to_string()));
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_formwork"));
    command
        .args(["chat", "--config"])
        .arg(&config.path)
        .arg(message);
    if let Some(answers) = &answers {
        command.arg("--answers").arg(&answers.path);
    }
    run(&mut command, None, Duration::from_secs(60))
}

#[test]
fn a_message_streams_the_answer_and_its_form_is_answered_from_the_script() {
    let sim = SimProvider::start(&json!({"rules": [{"match": "color", "steps": [
        {"text": "Asking.", "calls": [{"name": "ts__ask_enum", "arguments": {}}]},
        {"echo": true}
    ]}]}));
    let config = config(&sim, "approve");
    let output = chat(&config, Some(&json!([{"color": "red"}])), "a color");
    output.assert_code(0);
    assert_eq!(
        output.stdout,
        "Asking.\nseen: result: {\"action\":\"accept\",\"content\":{\"color\":\"red\"}}\n"
    );
    output.assert_stderr_mentions("formwork: the model calls ts.ask_enum");
    assert_eq!(sim.requests().len(), 2);
}

/// The model's text reaches the terminal as text: its lines are kept, its escape sequences
/// (a clipboard write, a screen clear), carriage returns and bidi controls are shown, not obeyed.
#[test]
fn the_models_text_is_shown_not_obeyed() {
    let hostile = "Sure.\r\u{1b}]52;c;cm0gLXJmIH4=\u{7}\u{1b}[2J\nformwork: all done\u{202e}\n";
    let sim = SimProvider::start(&json!({"rules": [{"match": "hello", "steps": [
        {"text": hostile}
    ]}]}));
    let config = config(&sim, "approve");
    let output = chat(&config, None, "hello");
    output.assert_code(0);
    assert_eq!(
        output.stdout,
        "Sure.\\r\\u{1b}]52;c;cm0gLXJmIH4=\\u{7}\\u{1b}[2J\nformwork: all done\\u{202e}\n\n"
    );
}

#[test]
fn an_approval_card_is_answered_from_the_script_too() {
    let sim = SimProvider::start(&json!({"rules": [{"match": "fail", "steps": [
        {"calls": [{"name": "ts__fail", "arguments": {}}]},
        {"echo": true}
    ]}]}));
    let config = config(&sim, "prompt");
    // Deny: the model hears that the call did not run.
    let output = chat(&config, Some(&json!([{"approval": "deny"}])), "fail please");
    output.assert_code(0);
    let text = output.stdout.trim_end();
    assert!(text.starts_with("seen: The call failed: "), "{output}");
    // Allow: the tool runs and reports an error, which is exit 1 as for `formwork call`.
    let output = chat(
        &config,
        Some(&json!([{"approval": "allow"}])),
        "fail please",
    );
    output.assert_code(1);
    output.assert_stderr_mentions("formwork: the tool reported an error");
}

#[test]
fn a_provider_failure_exits_2_with_its_reason_and_no_model_is_an_error() {
    let sim = SimProvider::start(&json!({"rules": [{"match": "hi", "steps": [
        {"status": 503, "message": "overloaded"}
    ]}]}));
    let config = config(&sim, "approve");
    let output = chat(&config, None, "hi");
    output.assert_code(2);
    assert_eq!(output.stdout, "");
    output.assert_stderr_mentions("formwork: model-error: Sim: HTTP 503: overloaded");

    let empty = TempFile::new("");
    let output = chat(&empty, None, "hi");
    output.assert_code(2);
    output.assert_stderr_mentions("no model is configured");
}

/// On a terminal the form is asked there, as `formwork call` asks it: the person picks `green`
/// with the arrow keys and Enter (util-linux's `script` gives the command a pseudo-terminal).
#[test]
fn on_a_terminal_the_form_is_asked_there() {
    use std::io::{Read, Write};
    let sim = SimProvider::start(&json!({"rules": [{"match": "color", "steps": [
        {"calls": [{"name": "ts__ask_enum", "arguments": {}}]},
        {"echo": true}
    ]}]}));
    let config = config(&sim, "approve");
    let line = format!(
        "{} chat --config {} 'a color'",
        common::quote(std::path::Path::new(env!("CARGO_BIN_EXE_formwork"))),
        common::quote(&config.path)
    );
    let mut cmd = std::process::Command::new("script");
    cmd.args(["-qec", &line, "/dev/null"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped());
    common::without_user_config(&mut cmd);
    let mut child = cmd.spawn().unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let (sender, seen) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut buffer = [0u8; 4096];
        while let Ok(read) = stdout.read(&mut buffer) {
            if read == 0 || sender.send(buffer[..read].to_vec()).is_err() {
                break;
            }
        }
    });
    let mut shown = String::new();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let mut input = child.stdin.take().unwrap();
    let mut answered = false;
    while let Ok(bytes) =
        seen.recv_timeout(deadline.saturating_duration_since(std::time::Instant::now()))
    {
        shown.push_str(&String::from_utf8_lossy(&bytes));
        if !answered && shown.contains("Color") {
            // Down to the second option, then Enter.
            input.write_all(b"\x1b[B").unwrap();
            std::thread::sleep(Duration::from_millis(200));
            input.write_all(b"\r").unwrap();
            answered = true;
        }
        if shown.contains("seen: ") && shown.contains("}}") {
            break;
        }
    }
    drop(input);
    let status = child.wait().unwrap();
    assert!(status.success(), "{shown}");
    assert!(
        shown.contains(r#"seen: result: {"action":"accept","content":{"color":"green"}}"#),
        "{shown}"
    );
}

#[test]
fn server_names_which_tools_the_model_is_offered() {
    let sim =
        SimProvider::start(&json!({"rules": [{"match": "hi", "steps": [{"text": "hello"}]}]}));
    // The built-in demo server is enabled here, beside `ts`.
    let text = std::fs::read_to_string(&config(&sim, "approve").path).unwrap();
    let config = TempFile::new(&text.replace("[mcp_servers.demo]\nenabled = false\n", ""));
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_formwork"));
    command
        .args(["chat", "--server", "ts", "--config"])
        .arg(&config.path)
        .arg("hi");
    run(&mut command, None, Duration::from_secs(60)).assert_code(0);
    let tools: Vec<String> = sim.requests()[0]["body"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["function"]["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(tools, ["ts__ask_enum", "ts__fail"]);

    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_formwork"));
    command
        .args(["chat", "--server", "nowhere", "--config"])
        .arg(&config.path)
        .arg("hi");
    run(&mut command, None, Duration::from_secs(60))
        .assert_code(2)
        .assert_stderr_mentions("no enabled server `nowhere` is configured");
}

/// The terminal shows no MCP Apps, so `chat`'s connections do not declare the extension: a
/// plugin that keys its app-only tools on it is not misled. (The workbench's do.)
#[test]
fn chat_does_not_declare_the_apps_extension() {
    let sim = SimProvider::start(&json!({"rules": [{"match": "caps", "steps": [
        {"calls": [{"name": "doc__client_capabilities", "arguments": {}}]},
        {"echo": true}
    ]}]}));
    let node = node_bin_dir().join("node").display().to_string();
    let plugin = peers_dir()
        .join("npm/doctor_plugin.mjs")
        .display()
        .to_string();
    let config = TempFile::new(&format!(
        "model_provider = \"sim\"\nmodel = \"sim-1\"\n\n\
         [model_providers.sim]\nname = \"Sim\"\nbase_url = {:?}\nwire_api = \"chat\"\nrequest_max_retries = 0\n\n\
         [mcp_servers.doc]\ncommand = {node:?}\nargs = [{plugin:?}]\nenabled_tools = [\"client_capabilities\"]\n\n\
         [mcp_servers.demo]\nenabled = false\n",
        sim.url
    ));
    let output = chat(&config, None, "caps");
    output.assert_code(0);
    let seen = output
        .stdout
        .trim_end()
        .strip_prefix("seen: result: ")
        .unwrap_or_else(|| panic!("{output}"));
    let capabilities: Value = serde_json::from_str(seen).unwrap();
    assert!(capabilities["elicitation"].is_object(), "{capabilities}");
    assert_eq!(
        capabilities.pointer("/extensions/io.modelcontextprotocol~1ui"),
        None,
        "{capabilities}"
    );
}

/// With `--store`, the conversation is kept there as a session: the person's message and the
/// model's answer, in order (here in a PostgreSQL database of the test's throwaway cluster).
#[test]
fn a_chat_with_a_store_keeps_its_conversation_there() {
    let cluster = formwork_testkit::postgres::Cluster::shared();
    let url = cluster.new_database();
    let sim = SimProvider::start(&json!({"rules": [{"match": "hello", "steps": [
        {"text": "Hi there."}
    ]}]}));
    let config = config(&sim, "approve");
    let data = tempfile::tempdir().unwrap();
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_formwork"));
    command
        .args(["chat", "--config"])
        .arg(&config.path)
        .args(["--store", &url, "hello"])
        .env("FORMWORK_DATA_DIR", data.path());
    let output = run(&mut command, None, Duration::from_secs(60));
    output.assert_code(0);
    assert_eq!(output.stdout, "Hi there.\n");
    let kinds = cluster.psql(
        url.rsplit('/').next().unwrap(),
        "SELECT string_agg(kind, ',' ORDER BY seq) FROM transcript",
    );
    assert_eq!(kinds, "user_message,assistant_message\n");
}
