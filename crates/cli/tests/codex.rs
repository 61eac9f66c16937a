//! The Codex runtime from the command line, against real Codex 0.171.0: `formwork chat --runtime
//! codex` (the `codex` on PATH, the pinned npm package's launcher) runs the bundled demo plugin's
//! and a formwork-sdk example's forms through `codex app-server`; the `config.toml` formwork writes
//! for Codex, key by key, and what a refresh keeps; and `formwork doctor --runtime codex`, which
//! names each row of the plugin-forms symptom table as real Codex provokes it
//! (tests/peers/doctor_plugin.mjs, on the official TS SDK). The model is the one hand-written fake,
//! tests/peers/sim_provider.py.

#![allow(clippy::unwrap_used)]

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::{Output, TempFile, node_plugin, run};
use formwork_testkit::SimProvider;
use serde_json::{Value, json};

/// The native binary of the pinned `@openai/codex`.
fn codex_binary() -> PathBuf {
    common::peers_dir()
        .join("npm/node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex")
}

/// A formwork-sdk example plugin's binary (built with the workspace, beside `formwork`).
fn example(name: &str) -> PathBuf {
    let binary = Path::new(env!("CARGO_BIN_EXE_formwork")).with_file_name(name);
    assert!(
        binary.is_file(),
        "{} is missing: `cargo build -p form-examples` (cargo xtask test builds it)",
        binary.display()
    );
    binary
}

fn model_config(sim: &SimProvider) -> String {
    format!(
        "runtime = \"codex\"\nmodel_provider = \"sim\"\nmodel = \"sim-model\"\n\n\
         [model_providers.sim]\nname = \"Sim\"\nbase_url = {:?}\nwire_api = \"responses\"\n\
         request_max_retries = 0\n",
        sim.url
    )
}

/// `formwork chat` with `config`, answering from `answers`; the `codex` on PATH is the npm
/// package's launcher unless the config names one.
fn chat(config: &TempFile, answers: &Value, message: &str) -> Output {
    chat_with_env(config, answers, message, &[])
}

/// [`chat`] with `env` added to formwork's environment.
fn chat_with_env(
    config: &TempFile,
    answers: &Value,
    message: &str,
    env: &[(&str, &str)],
) -> Output {
    let answers = TempFile::new(&answers.to_string());
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_formwork"));
    command
        .args(["chat", "--config"])
        .arg(&config.path)
        .arg("--answers")
        .arg(&answers.path)
        .arg(message)
        .envs(env.iter().copied());
    run(&mut command, None, Duration::from_secs(90))
}

#[test]
fn chat_runs_the_demo_plugins_forms_through_codex_on_path() {
    let sim = SimProvider::start(&json!({"rules": [{"match": "deploy", "steps": [
        {"text": "Deploying.", "calls": [{"name": "deploy", "namespace": "mcp__demo", "arguments": {"service": "web"}}]},
        {"echo": true}
    ]}]}));
    let home = tempfile::tempdir().unwrap();
    let config = TempFile::new(&format!(
        "{}\n[codex]\nhome = {:?}\n",
        model_config(&sim),
        home.path().display().to_string()
    ));
    let output = chat(
        &config,
        &json!([{"target": "production", "replicas": 3, "channels": ["chat"]}, {"confirm": true}]),
        "deploy the web service",
    );
    output.assert_code(0);
    output.assert_stderr_mentions("formwork: the model calls demo.deploy");
    let deployed = "Deployed web to production with 3 replica(s); notified: chat; note: none.";
    assert!(
        output.stdout.starts_with("Deploying.\nseen: ") && output.stdout.contains(deployed),
        "{output}"
    );
    // Codex ran in formwork's home, not the person's ~/.codex, with its log there.
    assert!(home.path().join("config.toml").is_file());
    assert!(home.path().join("formwork-app-server.log").is_file());
}

#[test]
fn chat_runs_a_formwork_sdk_examples_form_through_codex() {
    let sim = SimProvider::start(&json!({"rules": [{"match": "target", "steps": [
        {"calls": [{"name": "choose_target", "namespace": "mcp__target", "arguments": {}}]},
        {"echo": true}
    ]}]}));
    let home = tempfile::tempdir().unwrap();
    let config = TempFile::new(&format!(
        "{}\n[codex]\ncommand = {:?}\nhome = {:?}\n\n[mcp_servers.demo]\nenabled = false\n\n\
         [mcp_servers.target]\ncommand = {:?}\n",
        model_config(&sim),
        codex_binary().display().to_string(),
        home.path().display().to_string(),
        example("deploy-target").display().to_string(),
    ));
    let output = chat(
        &config,
        &json!([{"target": "production"}]),
        "choose a target",
    );
    output.assert_code(0);
    assert!(output.stdout.contains("production"), "{output}");
}

/// The config formwork writes for Codex, key by key; a refresh rewrites formwork's keys only,
/// keeps what the person added to the file and an explicit `prompt` they set, and changes
/// nothing the second time.
#[test]
fn the_config_written_for_codex_and_what_a_refresh_keeps() {
    let sim = SimProvider::start(&json!({"rules": [{"match": ".", "steps": [{"text": "hello"}]}]}));
    let home = tempfile::tempdir().unwrap();
    let node = common::node_bin_dir().join("node").display().to_string();
    let text = format!(
        "{}\n[codex]\ncommand = {:?}\nhome = {:?}\n\n\
         [mcp_servers.ts]\ncommand = {node:?}\nargs = [\"plugin.mjs\", \"--flag\"]\nenv = {{ TEAM = \"forms\" }}\n\
         enabled_tools = [\"ask_enum\"]\nstartup_timeout_sec = 20\ntool_timeout_sec = 2.5\n\n\
         [mcp_servers.ts.tools.ask_enum]\napproval_mode = \"prompt\"\n\n\
         [mcp_servers.remote]\nurl = \"http://127.0.0.1:9/mcp\"\nhttp_headers = {{ X-Team = \"forms\" }}\n\
         bearer_token_env_var = \"REMOTE_TOKEN\"\ndefault_tools_approval_mode = \"writes\"\n\n\
         [mcp_servers.off]\ncommand = \"off\"\nenabled = false\n",
        model_config(&sim),
        codex_binary().display().to_string(),
        home.path().display().to_string(),
    );
    let config = TempFile::new(&text);
    chat(&config, &json!([]), "hi").assert_code(0);
    let exe = env!("CARGO_BIN_EXE_formwork");
    let written = std::fs::read_to_string(home.path().join("config.toml")).unwrap();
    let expected = format!(
        "model = \"sim-model\"\nmodel_provider = \"sim\"\n\n\
         [model_providers.sim]\nname = \"Sim\"\nbase_url = {:?}\nwire_api = \"responses\"\n\
         request_max_retries = 0\nstream_max_retries = 5\nstream_idle_timeout_ms = 300000\n\n\
         [mcp_servers.ts]\ncommand = {node:?}\nargs = [\"plugin.mjs\", \"--flag\"]\nenv = {{ TEAM = \"forms\" }}\n\
         enabled_tools = [\"ask_enum\"]\nstartup_timeout_sec = 20\ntool_timeout_sec = 2.5\n\
         default_tools_approval_mode = \"approve\"\n\n\
         [mcp_servers.ts.tools.ask_enum]\napproval_mode = \"prompt\"\n\n\
         [mcp_servers.remote]\nurl = \"http://127.0.0.1:9/mcp\"\nhttp_headers = {{ X-Team = \"forms\" }}\n\
         bearer_token_env_var = \"REMOTE_TOKEN\"\ndefault_tools_approval_mode = \"writes\"\n\n\
         [mcp_servers.off]\ncommand = \"off\"\nenabled = false\ndefault_tools_approval_mode = \"approve\"\n\n\
         [mcp_servers.demo]\ncommand = {exe:?}\nargs = [\"demo-plugin\"]\ndefault_tools_approval_mode = \"approve\"\n\n\
         [features]\ntool_call_mcp_elicitation = false\n",
        sim.url
    );
    assert_eq!(written, expected);

    // The person edits Codex's file: a key of their own in a managed table, a server of their
    // own, and an explicit prompt on a server formwork had written `approve` for.
    let edited = written
        .replace(
            "[mcp_servers.demo]\n",
            "[mcp_servers.demo]\nenv_vars = [\"LANG\"]\n",
        )
        .replace(
            "[mcp_servers.off]\ncommand = \"off\"\nenabled = false\ndefault_tools_approval_mode = \"approve\"",
            "[mcp_servers.off]\ncommand = \"off\"\nenabled = false\ndefault_tools_approval_mode = \"prompt\"",
        )
        + "\n# mine\n[mcp_servers.mine]\ncommand = \"mine\"\n";
    std::fs::write(home.path().join("config.toml"), &edited).unwrap();
    // formwork's config drops a server and a key.
    let fewer = text
        .replace("[mcp_servers.remote]\nurl = \"http://127.0.0.1:9/mcp\"\nhttp_headers = { X-Team = \"forms\" }\nbearer_token_env_var = \"REMOTE_TOKEN\"\ndefault_tools_approval_mode = \"writes\"\n\n", "")
        .replace("tool_timeout_sec = 2.5\n", "");
    std::fs::write(&config.path, &fewer).unwrap();
    chat(&config, &json!([]), "hi").assert_code(0);
    let refreshed = std::fs::read_to_string(home.path().join("config.toml")).unwrap();
    let expected = edited
        .replace("tool_timeout_sec = 2.5\n", "")
        .replace("[mcp_servers.remote]\nurl = \"http://127.0.0.1:9/mcp\"\nhttp_headers = { X-Team = \"forms\" }\nbearer_token_env_var = \"REMOTE_TOKEN\"\ndefault_tools_approval_mode = \"writes\"\n\n", "");
    assert_eq!(refreshed, expected);
    // Idempotent: the same config writes nothing new.
    chat(&config, &json!([]), "hi").assert_code(0);
    assert_eq!(
        std::fs::read_to_string(home.path().join("config.toml")).unwrap(),
        refreshed
    );
}

/// `formwork doctor --runtime codex` against the doctor plugin (with `plugin_flags`), with
/// `config` above its table.
fn doctor(config: &str, plugin_flags: &str, tool: &str) -> (Output, Value) {
    let server = format!(
        "[mcp_servers.doc]\ncommand = \"sh\"\nargs = [\"-c\", {:?}]\n",
        format!("{} {plugin_flags}", node_plugin("doctor_plugin.mjs")),
    );
    doctor_of("doc", &format!("{config}\n{server}"), tool)
}

/// `formwork doctor --runtime codex --server SERVER --tool TOOL` with `config` (which has the
/// server's table): its output and report.
fn doctor_of(server: &str, config: &str, tool: &str) -> (Output, Value) {
    doctor_seeded(server, config, tool, None)
}

/// [`doctor_of`], with `codex_config` already in the Codex runtime's home (the person's own).
fn doctor_seeded(
    server: &str,
    config: &str,
    tool: &str,
    codex_config: Option<&str>,
) -> (Output, Value) {
    let data = tempfile::tempdir().unwrap();
    if let Some(text) = codex_config {
        std::fs::create_dir_all(data.path().join("codex")).unwrap();
        std::fs::write(data.path().join("codex/config.toml"), text).unwrap();
    }
    let config = TempFile::new(&format!(
        "{config}\n[codex]\ncommand = {:?}\n\n[mcp_servers.demo]\nenabled = false\n",
        codex_binary().display().to_string(),
    ));
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_formwork"));
    command
        .args(["doctor", "--runtime", "codex", "--json", "--server", server])
        .args(["--tool", tool, "--wait", "2", "--config"])
        .arg(&config.path)
        .env("FORMWORK_DATA_DIR", data.path());
    let output = run(&mut command, None, Duration::from_secs(120));
    let report = output.json();
    (output, report)
}

/// The rows that apply, each with its cause.
fn applying(report: &Value) -> Vec<(String, String)> {
    report["symptoms"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|row| row["applies"] == true)
        .map(|row| {
            (
                row["id"].as_str().unwrap().to_owned(),
                row["cause"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn assert_only(report: &Value, id: &str, needles: &[&str]) {
    let rows = applying(report);
    assert_eq!(
        rows.iter().map(|(row, _)| row.as_str()).collect::<Vec<_>>(),
        [id],
        "{report:#}"
    );
    for needle in needles {
        assert!(
            rows[0].1.contains(needle),
            "{needle:?} not in {}",
            rows[0].1
        );
    }
}

#[test]
fn doctor_under_codex_names_each_row_as_codex_provokes_it() {
    // A clean plugin: nothing applies, and the plugin got the doctor's `cancel`.
    let (output, report) = doctor("", "", "choose_strategy");
    output.assert_code(0);
    assert_eq!(
        applying(&report),
        Vec::<(String, String)>::new(),
        "{report:#}"
    );
    assert_eq!(report["call"]["outcome"], "returned");
    assert_eq!(
        report["plugin_requests"],
        json!([{"method": "elicitation/create", "mode": "form", "message": "Choose how to continue",
                "answer": {"action": "cancel"}}])
    );

    // formwork's auto-deny: Codex forwards the form, formwork declines it before any card.
    let (output, report) = doctor("elicitations_auto_deny = true", "", "choose_strategy");
    output.assert_code(1);
    assert_only(
        &report,
        "declined-before-ui",
        &[
            "elicitations_auto_deny = true",
            "marker=codex-elicitation-received",
        ],
    );
    assert_eq!(
        report["plugin_requests"][0]["answer"],
        json!({"action": "decline"})
    );

    // A policy that rejects forms: Codex declines them itself; nothing reaches formwork.
    for (policy, named) in [
        ("approval_policy = \"never\"", "approval_policy = \"never\""),
        (
            "approval_policy = { granular = { sandbox_approval = false, rules = false, mcp_elicitations = false } }",
            "mcp_elicitations = false",
        ),
    ] {
        let (output, report) = doctor(policy, "", "choose_strategy");
        output.assert_code(1);
        assert_only(
            &report,
            "declined-before-ui",
            &[named, "no mcpServer/elicitation/request reached formwork"],
        );
        assert_eq!(report["requests"], json!([]));
        assert_eq!(
            report["plugin_requests"][0]["answer"],
            json!({"action": "decline"})
        );
    }

    // No active turn: a form asked while Codex lists the plugin's tools at the thread's start.
    let (output, report) = doctor("", "--ask-while-listing", "choose_strategy");
    output.assert_code(1);
    assert_only(
        &report,
        "declined-before-ui",
        &["no turn or call of its client is active"],
    );

    // openai/form: Codex does not offer it unless formwork declares it.
    let (output, report) = doctor("", "", "ask_openai_form");
    output.assert_code(1);
    assert_only(
        &report,
        "openai-form-unsupported",
        &[
            "The MCP client does not support openai/form requests.",
            "features.openai_elicitation is off",
        ],
    );
}

#[test]
fn doctor_under_codex_names_approvals_schemas_and_a_stuck_plugin() {
    // An approval form on every call: the server's explicit prompt, kept in Codex's config.
    let server = format!(
        "[mcp_servers.doc]\ncommand = \"sh\"\nargs = [\"-c\", {:?}]\ndefault_tools_approval_mode = \"prompt\"\n",
        node_plugin("doctor_plugin.mjs"),
    );
    let (output, report) = doctor_of("doc", &server, "choose_strategy");
    output.assert_code(1);
    assert_only(
        &report,
        "tool-approval",
        &[
            "Codex asked the person to approve the call of `choose_strategy`",
            "Codex's config says mcp_servers.doc.default_tools_approval_mode = \"prompt\"",
        ],
    );
    assert_eq!(report["requests"][0]["kind"], "tool-approval");

    // The person's own prompt for one tool, in the Codex runtime's config: the doctor's Codex
    // has it too, and names the key. The plugin's environment is not shown.
    let server = format!(
        "[mcp_servers.doc]\ncommand = \"sh\"\nargs = [\"-c\", {:?}]\nenv = {{ DOC_TOKEN = \"s3cret\" }}\n",
        node_plugin("doctor_plugin.mjs"),
    );
    let (output, report) = doctor_seeded(
        "doc",
        &server,
        "choose_strategy",
        Some("[mcp_servers.doc.tools.choose_strategy]\napproval_mode = \"prompt\"\n"),
    );
    output.assert_code(1);
    assert_only(
        &report,
        "tool-approval",
        &["Codex's config says mcp_servers.doc.tools.choose_strategy.approval_mode = \"prompt\""],
    );
    let written = report["codex"]["config"].as_str().unwrap();
    assert!(
        written.contains("env = { DOC_TOKEN = \"<redacted>\" }") && !written.contains("s3cret"),
        "{written}"
    );

    // A schema Codex's MCP client cannot read: a nested object.
    let (output, report) = doctor("", "", "ask_nested");
    output.assert_code(1);
    assert_only(
        &report,
        "schema-unsupported",
        &[
            "Codex's MCP client could not read the plugin's elicitation/create",
            "-32602",
        ],
    );

    // A plugin that hangs after the cancel.
    let (output, report) = doctor("", "", "ask_then_hang");
    output.assert_code(1);
    assert_only(
        &report,
        "no-continue-after-answer",
        &["had not ended 2 s after"],
    );
}

/// The Python SDK's typed form carries a top-level `title`, which Codex refuses before any client
/// sees it; only Codex's log says so, and the doctor reads it.
#[test]
fn doctor_under_codex_reads_codexs_log_for_a_refused_schema() {
    let server = format!(
        "[mcp_servers.py]\ncommand = {:?}\nargs = [{:?}]\n",
        common::peers_dir()
            .join("venv/bin/python")
            .display()
            .to_string(),
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/peers/py_plugin.py")
            .display()
            .to_string(),
    );
    let (output, report) = doctor_of("py", &server, "ask");
    output.assert_code(1);
    assert_only(
        &report,
        "schema-unsupported",
        &["failed to parse typed MCP elicitation schema (unknown field `title`"],
    );
    assert_eq!(report["requests"], json!([]));
    assert_eq!(
        report["plugin_requests"][0]["answer"],
        json!({"action": "cancel"})
    );
}

/// The processes whose command line mentions `needle`.
fn processes_mentioning(needle: &str) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|entry| {
            let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
            let cmdline = std::fs::read(entry.path().join("cmdline")).ok()?;
            String::from_utf8_lossy(&cmdline)
                .contains(needle)
                .then_some(pid)
        })
        .collect()
}

/// formwork killed outright (SIGKILL, no shutdown of its own) in the middle of a Codex turn:
/// Codex, which would wait for its stalled model, does not outlive it.
#[test]
fn codex_does_not_outlive_a_killed_formwork() {
    let sim = SimProvider::start(&json!({"rules": [{"match": ".", "steps": [{"stall": true}]}]}));
    let home = tempfile::tempdir().unwrap();
    let codex_home = home.path().join("codex-of-a-killed-formwork");
    let config = TempFile::new(&format!(
        "{}\n[codex]\ncommand = {:?}\nhome = {:?}\n\n[mcp_servers.demo]\nenabled = false\n",
        model_config(&sim),
        codex_binary().display().to_string(),
        codex_home.display().to_string()
    ));
    let mut chat = common::without_user_config(&mut std::process::Command::new(env!(
        "CARGO_BIN_EXE_formwork"
    )))
    .args(["chat", "--accept-defaults", "--config"])
    .arg(&config.path)
    .arg("hello")
    .stdin(std::process::Stdio::null())
    .stdout(std::process::Stdio::null())
    .stderr(std::process::Stdio::null())
    .spawn()
    .unwrap();
    let needle = codex_home.display().to_string();
    // Codex is up once the model has been asked.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while sim.requests().is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "Codex never asked the model"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(!processes_mentioning(&needle).is_empty());
    chat.kill().unwrap();
    chat.wait().unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(15);
    loop {
        let left = processes_mentioning(&needle);
        if left.is_empty() {
            break;
        }
        if std::time::Instant::now() > deadline {
            for pid in &left {
                common::kill_group(*pid);
            }
            panic!("Codex outlived formwork by 15 s: {left:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Codex runs commands its model chose: it gets formwork's environment, but never the
/// workbench's access token (`FORMWORK_TOKEN`), so nothing it runs can reach the workbench.
#[test]
fn codex_gets_formworks_environment_but_not_the_access_token() {
    let sim = SimProvider::start(&json!({"rules": [{"match": ".", "steps": [{"text": "hello"}]}]}));
    let dir = tempfile::tempdir().unwrap();
    let seen = dir.path().join("seen-env");
    let codex = dir.path().join("codex");
    // A stand-in that writes down its environment and stops: no Codex speaks to formwork here.
    std::fs::write(&codex, format!("#!/bin/sh\nenv > '{}'\n", seen.display())).unwrap();
    std::fs::set_permissions(&codex, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let config = TempFile::new(&format!(
        "{}\n[codex]\ncommand = {:?}\nhome = {:?}\n",
        model_config(&sim),
        codex.display().to_string(),
        dir.path().join("home").display().to_string(),
    ));
    let token = "t".repeat(40);
    let output = chat_with_env(
        &config,
        &json!([]),
        "hi",
        &[
            ("FORMWORK_TOKEN", &token),
            ("FORMWORK_SEEN_BY_CODEX", "yes"),
        ],
    );
    assert_ne!(output.code, 0, "{output}");
    let env = std::fs::read_to_string(&seen).unwrap_or_else(|err| panic!("{err}: {output}"));
    assert!(
        env.lines().any(|line| line == "FORMWORK_SEEN_BY_CODEX=yes"),
        "{env}"
    );
    assert!(!env.contains("FORMWORK_TOKEN"), "{env}");
}
