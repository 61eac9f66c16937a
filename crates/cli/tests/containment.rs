//! What formwork hands a plugin and what it lets through to the terminal: a plugin's environment is
//! what its config gave it, whatever formwork's own holds. The plugin is the real
//! `@modelcontextprotocol/server-everything`, whose `get-env` tool returns its process's environment.

mod common;

use std::process::Command;
use std::time::Duration;

use common::{Output, TempFile, everything_plugin, node_bin_dir, peers_dir, run};
use serde_json::{Map, Value, json};

/// Runs formwork with exactly `vars` as its environment (and no user config).
fn formwork_with_env(args: &[&str], vars: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_formwork"));
    cmd.env_clear().args(args);
    for (name, value) in vars {
        cmd.env(name, value);
    }
    run(&mut cmd, None, Duration::from_secs(60))
}

/// The environment `get-env` reports, as a JSON object.
fn plugin_env(output: &Output) -> Map<String, Value> {
    output.assert_code(0);
    match serde_json::from_str(&output.text()) {
        Ok(Value::Object(env)) => env,
        _ => panic!("get-env returned no JSON object: {output}"),
    }
}

/// formwork's environment in these tests: the base set a plugin may get, and secrets it must not.
fn formworks_env<'a>(path: &'a str, data_dir: &'a str) -> Vec<(&'a str, &'a str)> {
    vec![
        ("PATH", path),
        ("HOME", "/nonexistent/home"),
        ("LANG", "C.UTF-8"),
        ("TZ", "Europe/Berlin"),
        ("FORMWORK_DATA_DIR", data_dir),
        ("OPENAI_API_KEY", "sk-openai-secret"),
        ("CORP_KEY", "corp-secret"),
        ("REMOTE_TOKEN", "remote-secret"),
        ("TENANT", "tenant-secret"),
        ("PASSED", "passed-value"),
        ("UNNAMED", "unnamed-value"),
    ]
}

/// A configured server gets the base set, its `env` table and the variables its `env_vars` names,
/// and nothing else: not the provider's `env_key`, not another server's bearer token or header
/// variable, not formwork's own variables.
#[test]
fn a_configured_plugin_gets_its_env_table_and_env_vars_and_nothing_else() {
    let data = tempdir("configured");
    let everything =
        peers_dir().join("npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    let config = TempFile::new(&format!(
        r#"
model_provider = "corp"
model = "corp-model"
[model_providers.corp]
name = "Corp"
base_url = "http://127.0.0.1:9/v1"
env_key = "CORP_KEY"

[mcp_servers.everything]
command = {node}
args = [{script}, "stdio"]
env = {{ GIVEN = "from-the-table", LANG = "de_DE.UTF-8" }}
env_vars = ["PASSED", "NOT_SET_ANYWHERE"]
default_tools_approval_mode = "approve"

[mcp_servers.remote]
url = "http://127.0.0.1:9/mcp"
bearer_token_env_var = "REMOTE_TOKEN"
env_http_headers = {{ X-Tenant = "TENANT" }}
"#,
        node = json!(node_bin_dir().join("node")),
        script = json!(everything),
    ));
    let config_path = config.path.display().to_string();
    let path = std::env::var("PATH").unwrap_or_default();
    let data_dir = data.display().to_string();
    let output = formwork_with_env(
        &[
            "call",
            "get-env",
            "--server",
            "everything",
            "--config",
            &config_path,
        ],
        &formworks_env(&path, &data_dir),
    );
    let env = plugin_env(&output);
    let names: Vec<&str> = env.keys().map(String::as_str).collect();
    // `sh` adds PWD; LANG is the table's, which wins over formwork's.
    let mut expected = vec!["GIVEN", "HOME", "LANG", "PASSED", "PATH", "PWD", "TZ"];
    let mut names_sorted = names.clone();
    names_sorted.sort();
    expected.sort();
    assert_eq!(names_sorted, expected, "{output}");
    assert_eq!(env["GIVEN"], "from-the-table");
    assert_eq!(env["LANG"], "de_DE.UTF-8");
    assert_eq!(env["PASSED"], "passed-value");
    assert_eq!(env["TZ"], "Europe/Berlin");

    // `config check` names what the server will receive, never a value.
    let check = formwork_with_env(
        &["config", "check", "--config", &config_path],
        &formworks_env(&path, &data_dir),
    );
    check.assert_code(0);
    assert_eq!(
        check.json()["mcp_servers"]["everything"]["receives_env"],
        json!(["GIVEN", "HOME", "LANG", "PASSED", "PATH", "TZ"]),
        "{check}"
    );
    assert_eq!(
        check.json()["mcp_servers"]["everything"]["env_vars"],
        json!(["PASSED", "NOT_SET_ANYWHERE"]),
        "{check}"
    );
    assert!(!check.stdout.contains("passed-value"), "{check}");
    let _ = std::fs::remove_dir_all(&data);
}

/// A plugin named on the command line gets the base set only.
#[test]
fn a_plugin_named_on_the_command_line_gets_the_base_set_only() {
    let data = tempdir("adhoc");
    let path = std::env::var("PATH").unwrap_or_default();
    let data_dir = data.display().to_string();
    let output = formwork_with_env(
        &["call", "get-env", "--plugin", &everything_plugin()],
        &formworks_env(&path, &data_dir),
    );
    let env = plugin_env(&output);
    let mut names: Vec<&str> = env.keys().map(String::as_str).collect();
    names.sort();
    assert_eq!(names, ["HOME", "LANG", "PATH", "PWD", "TZ"], "{output}");
    assert_eq!(env["HOME"], "/nonexistent/home");
    let _ = std::fs::remove_dir_all(&data);
}

fn tempdir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "formwork-containment-{name}-{}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).expect("creating a temporary directory");
    dir
}
