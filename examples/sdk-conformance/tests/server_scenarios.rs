//! The official MCP conformance suite (`@modelcontextprotocol/conformance` 0.1.16, server mode)
//! against `sdk-conformance`: every server scenario, in one run of the suite, must pass with no
//! check failing or warning. Needs the test peers (`FORMWORK_PEERS`, set by `cargo xtask test`),
//! whose node 22 runs the suite.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

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

/// A browser page on another site may reach a loopback server (DNS rebinding, or a plain
/// cross-origin request): the server refuses a foreign `Origin` even when `Host` is its own, and
/// accepts its own origin. (The suite's scenario only sends both headers foreign at once.)
#[test]
fn a_foreign_origin_is_refused() {
    let server = Server::start();
    let own = format!("http://127.0.0.1:{}", server.port);
    for (origin, expected) in [
        ("http://evil.example.com", 403),
        ("http://localhost.evil.example.com", 403),
        (own.as_str(), 200),
    ] {
        assert_eq!(
            initialize_status(server.port, origin),
            expected,
            "Origin: {origin}"
        );
    }
}

/// The server under test, killed when dropped.
struct Server {
    child: Child,
    port: u16,
}

impl Server {
    /// Starts `sdk-conformance --port 0` and reads the port it chose from its first line.
    fn start() -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_sdk-conformance"))
            .args(["--port", "0"])
            .stdout(Stdio::piped())
            .spawn()
            .expect("start sdk-conformance");
        let stdout = child.stdout.take().expect("piped stdout");
        let mut line = String::new();
        BufReader::new(stdout)
            .read_line(&mut line)
            .expect("read the server's first line");
        let port = line
            .trim()
            .strip_prefix("listening ")
            .and_then(|port| port.parse().ok());
        let Some(port) = port else {
            let _ = child.kill();
            panic!("sdk-conformance did not say where it listens: {line:?}");
        };
        Self { child, port }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
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

/// The HTTP status of an `initialize` POST with the server's own `Host` and the given `Origin`.
fn initialize_status(port: u16, origin: &str) -> u16 {
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"origin-test","version":"1"}}}"#;
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nOrigin: {origin}\r\n\
         Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("read timeout");
    stream.write_all(request.as_bytes()).expect("send");
    let mut head = [0; 12];
    stream.read_exact(&mut head).expect("status line");
    let head = String::from_utf8_lossy(&head);
    head.strip_prefix("HTTP/1.1 ")
        .and_then(|code| code.trim().parse().ok())
        .unwrap_or_else(|| panic!("not an HTTP status line: {head:?}"))
}

/// Waits for `child`, killing it and failing the test after `timeout`.
fn wait_bounded(mut child: Child, timeout: Duration) -> ExitStatus {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(status) = child.try_wait().expect("wait for the suite") {
            return status;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the conformance suite did not finish in {timeout:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Node 22 and the suite, from the `node` and conformance npm packages of the test peers.
fn node_bin_dir() -> PathBuf {
    let Some(peers) = std::env::var_os("FORMWORK_PEERS") else {
        panic!("FORMWORK_PEERS is not set: run `cargo xtask test` to install the test peers");
    };
    let dir = PathBuf::from(peers).join("npm/node_modules/.bin");
    assert!(
        dir.join("conformance").is_file(),
        "{} has no conformance suite: run `cargo xtask peers`",
        dir.display()
    );
    dir
}

/// `PATH` with node 22 first: the suite crashes on older node.
fn path_with_node() -> OsString {
    let mut path = OsString::from(node_bin_dir());
    path.push(":");
    path.push(std::env::var_os("PATH").unwrap_or_default());
    path
}
