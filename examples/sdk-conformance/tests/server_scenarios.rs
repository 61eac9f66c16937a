//! The official MCP conformance suite (`@modelcontextprotocol/conformance` 0.1.16, server mode)
//! against `sdk-conformance`: every server scenario, in one run of the suite, must pass with no
//! check failing or warning. Needs the test peers (`FORMWORK_PEERS`, set by `cargo xtask test`),
//! whose node 22 runs the suite.

mod common;

use std::collections::BTreeMap;
use std::fs::File;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{
    Server, node_bin_dir, npm_peers_dir, path_with_node, wait_bounded, wait_bounded_output,
};
use serde_json::Value;

/// What `conformance list --server` names in 0.1.16: the run must report on each of them.
const SCENARIOS: [&str; 32] = [
    "server-initialize",
    "logging-set-level",
    "ping",
    "completion-complete",
    "tools-list",
    "tools-call-simple-text",
    "tools-call-image",
    "tools-call-audio",
    "tools-call-embedded-resource",
    "tools-call-mixed-content",
    "tools-call-with-logging",
    "tools-call-error",
    "tools-call-with-progress",
    "tools-call-sampling",
    "tools-call-elicitation",
    "json-schema-2020-12",
    "elicitation-sep1034-defaults",
    "server-sse-polling",
    "server-sse-multiple-streams",
    "elicitation-sep1330-enums",
    "resources-list",
    "resources-read-text",
    "resources-read-binary",
    "resources-templates-read",
    "resources-subscribe",
    "resources-unsubscribe",
    "prompts-list",
    "prompts-get-simple",
    "prompts-get-with-args",
    "prompts-get-embedded-resource",
    "prompts-get-with-image",
    "dns-rebinding-protection",
];

/// The whole suite takes about 3 s; this only bounds a hang.
const SUITE_TIMEOUT: Duration = Duration::from_secs(120);

#[test]
fn every_server_scenario_passes() {
    let server = Server::start();
    let dir = tempfile::tempdir().expect("temp dir");
    let results = dir.path().join("results");
    let log_path = dir.path().join("suite.log");
    let log = File::create(&log_path).expect("suite log");
    let started = Instant::now();
    let suite = Command::new(node_bin_dir().join("conformance"))
        .args(["server", "--url", &server.url(), "--suite", "all", "-o"])
        .arg(&results)
        .env("PATH", path_with_node())
        .stdout(log.try_clone().expect("suite log"))
        .stderr(log)
        .spawn()
        .expect("start the conformance suite");
    let status = wait_bounded(suite, SUITE_TIMEOUT);
    let elapsed = started.elapsed();
    let output = std::fs::read_to_string(&log_path).unwrap_or_default();

    let checks = read_results(&results);
    let summary = summarize(&checks);
    eprintln!(
        "{summary}{} scenarios in {:.1} s",
        checks.len(),
        elapsed.as_secs_f64()
    );
    let reported: Vec<&str> = checks.keys().map(String::as_str).collect();
    let mut expected = SCENARIOS.to_vec();
    expected.sort_unstable();
    assert_eq!(
        reported, expected,
        "the suite did not report on exactly the 32 server scenarios:\n{output}"
    );
    let failing: Vec<String> = checks
        .iter()
        .flat_map(|(scenario, checks)| {
            checks
                .iter()
                .filter(|check| !matches!(check.status.as_str(), "SUCCESS" | "INFO"))
                .map(move |check| format!("{scenario}: {check}"))
        })
        .collect();
    assert!(
        failing.is_empty(),
        "checks that did not pass:\n{}\n\n{summary}\n{output}",
        failing.join("\n")
    );
    assert!(
        status.success(),
        "the suite exited with {status}:\n{output}"
    );
}

/// `logging/setLevel` filters: with the level at `warning` the logging tool's `info` messages are
/// not sent; at `info` they are (`tests/peers/log_level_client.mjs`, on the TS SDK).
#[test]
fn log_messages_below_the_level_are_not_sent() {
    let server = Server::start();
    let client = Command::new(node_bin_dir().join("node"))
        .arg(npm_peers_dir().join("log_level_client.mjs"))
        .arg(server.url())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the log-level client");
    let (status, stdout, stderr) = wait_bounded_output(client, Duration::from_secs(60));
    assert!(status.success(), "log-level client: {status}\n{stderr}");
    assert_eq!(
        stdout,
        "[\"Tool execution started\",\"Tool processing data\",\"Tool execution completed\"]\n",
        "{stderr}"
    );
}

/// One check of a scenario, as the suite writes it in `checks.json`.
struct Check {
    id: String,
    status: String,
    error: Option<String>,
}

impl std::fmt::Display for Check {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.id, self.status)?;
        if let Some(error) = &self.error {
            write!(f, ": {error}")?;
        }
        Ok(())
    }
}

/// The checks of each scenario, from `<dir>/server-<scenario>-<timestamp>/checks.json`.
fn read_results(dir: &Path) -> BTreeMap<String, Vec<Check>> {
    let mut scenarios = BTreeMap::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return scenarios;
    };
    for entry in entries {
        let path = entry.expect("results entry").path();
        let name = path
            .file_name()
            .and_then(|name| name.to_str())
            .unwrap_or_default();
        // The timestamp is like 2026-12-01T10-34-31-169Z: six fields joined by `-`.
        let scenario = name
            .strip_prefix("server-")
            .and_then(|rest| rest.rsplitn(7, '-').nth(6))
            .unwrap_or(name)
            .to_owned();
        let text = std::fs::read_to_string(path.join("checks.json")).expect("checks.json");
        let checks: Vec<Value> = serde_json::from_str(&text).expect("checks.json holds an array");
        let checks = checks
            .iter()
            .map(|check| Check {
                id: text_field(check, "id"),
                status: text_field(check, "status"),
                error: check
                    .get("errorMessage")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
            })
            .collect();
        scenarios.insert(scenario, checks);
    }
    scenarios
}

fn text_field(check: &Value, name: &str) -> String {
    check
        .get(name)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

/// One line per scenario: how many of its checks passed (INFO checks only log what was sent).
fn summarize(checks: &BTreeMap<String, Vec<Check>>) -> String {
    let mut summary = String::new();
    for (scenario, checks) in checks {
        let verdicts: Vec<&Check> = checks
            .iter()
            .filter(|check| check.status != "INFO")
            .collect();
        let passed = verdicts
            .iter()
            .filter(|check| check.status == "SUCCESS")
            .count();
        let mark = if passed == verdicts.len() {
            "ok  "
        } else {
            "FAIL"
        };
        summary.push_str(&format!(
            "{mark} {scenario}: {passed}/{} checks\n",
            verdicts.len()
        ));
    }
    summary
}
