//! formwork-sdk under real Codex 0.171.0: `codex app-server` (stdio JSON-RPC) runs this binary
//! again as its MCP server (`support/plugin.rs`, behind the tap of `tests/peers/sdk_py_client.py`),
//! and a simulated Responses model (`tests/peers/codex_model.py`, the one hand-written fake) makes
//! it call the `deploy` tool. Codex speaks MCP 2025-06-18 to its servers, so the SDK pushes
//! `elicitation/create`; the test checks what reaches the app-server client as
//! `mcpServer/elicitation/request`, answers it, and reads from the model's log what the tool
//! returned to the model.

mod support;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use formwork_sdk::Elicit;
use serde_json::{Value, json};

use support::plugin::Deploy;
use support::{Case, peers_dir, repo_root};

/// How long any one step may take; a whole case takes about a second.
const STEP: Duration = Duration::from_secs(30);

/// The MCP server's name in Codex's config; the model sees its tools in namespace `mcp__sdk`.
const SERVER: &str = "sdk";

/// The native binary of `@openai/codex` 0.171.0 (its linux-x64 package), not the node launcher.
fn codex_binary() -> PathBuf {
    let binary = peers_dir().join(
        "npm/node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex",
    );
    assert!(
        binary.is_file(),
        "Codex is not installed at {}: run `cargo xtask peers` (the test needs linux x86_64, the \
         platform of the pinned `@openai/codex-linux-x64` package)",
        binary.display()
    );
    binary
}

/// A child process that is killed when the test is done with it.
struct Kill(Child);

impl Drop for Kill {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Lines of a child's stdout, read on a thread so that a silent peer fails the test instead of
/// hanging it.
fn lines(stdout: impl std::io::Read + Send + 'static) -> Receiver<String> {
    let (send, receive) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if send.send(line).is_err() {
                break;
            }
        }
    });
    receive
}

/// The simulated model, listening on a free port.
fn model(log: &Path) -> (Kill, u16) {
    let mut child = Command::new("python3")
        .arg(repo_root().join("tests/peers/codex_model.py"))
        .arg(log)
        .arg(format!("mcp__{SERVER}"))
        .arg("deploy")
        .stdout(Stdio::piped())
        .spawn()
        .expect("starting tests/peers/codex_model.py");
    let stdout = child.stdout.take().expect("the model's stdout");
    let child = Kill(child);
    let port = lines(stdout)
        .recv_timeout(STEP)
        .expect("the model prints its port")
        .parse()
        .expect("a port number");
    (child, port)
}

/// A TOML basic string (JSON's escapes are valid in one).
fn toml(text: &str) -> String {
    serde_json::to_string(text).expect("a string serializes")
}

/// One `codex app-server` and every message it has sent so far.
struct AppServer {
    stdin: ChildStdin,
    lines: Receiver<String>,
    seen: Vec<Value>,
    stderr: PathBuf,
    _child: Kill,
}

impl AppServer {
    fn start(dir: &Path, model_port: u16, tap: &Path) -> AppServer {
        let home = dir.join("codex-home");
        let work = dir.join("work");
        for path in [&home, &work] {
            std::fs::create_dir_all(path).expect("creating a dir for Codex");
        }
        let plugin = std::env::current_exe().expect("the test binary");
        let tap_args = [
            repo_root().join("tests/peers/sdk_py_client.py"),
            PathBuf::from("--tap"),
            tap.to_owned(),
            plugin,
        ]
        .iter()
        .map(|arg| toml(&arg.to_string_lossy()))
        .collect::<Vec<_>>()
        .join(",");
        let python = peers_dir().join("venv/bin/python");
        let overrides = [
            r#"model_provider="mock""#.to_owned(),
            format!(
                r#"model_providers.mock={{name="mock",base_url="http://127.0.0.1:{model_port}/v1",wire_api="responses"}}"#
            ),
            r#"model="mock-model""#.to_owned(),
            format!(
                "mcp_servers.{SERVER}.command={}",
                toml(&python.to_string_lossy())
            ),
            format!("mcp_servers.{SERVER}.args=[{tap_args}]"),
            format!(r#"mcp_servers.{SERVER}.env={{FORMWORK_SDK_PLUGIN="1"}}"#),
            format!(r#"mcp_servers.{SERVER}.default_tools_approval_mode="approve""#),
            // The plugin starts behind the Python tap; on a busy machine that can take a while.
            format!("mcp_servers.{SERVER}.startup_timeout_sec=30"),
        ];
        let stderr = dir.join("codex.stderr");
        let mut command = Command::new(codex_binary());
        command.arg("app-server");
        for value in &overrides {
            command.arg("-c").arg(value);
        }
        let mut child = command
            .env("CODEX_HOME", &home)
            .current_dir(&work)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&stderr).expect("a file for Codex's stderr"))
            .spawn()
            .expect("starting codex app-server");
        let stdin = child.stdin.take().expect("Codex's stdin");
        let stdout = child.stdout.take().expect("Codex's stdout");
        AppServer {
            stdin,
            lines: lines(stdout),
            seen: Vec::new(),
            stderr,
            _child: Kill(child),
        }
    }

    fn send(&mut self, message: Value) {
        writeln!(self.stdin, "{message}").expect("writing to Codex");
        self.stdin.flush().expect("flushing to Codex");
    }

    /// The first message Codex sent (earlier or from now on) that `wanted` accepts.
    fn wait(&mut self, what: &str, wanted: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + STEP;
        let mut checked = 0;
        loop {
            if let Some(found) = self.seen[checked..].iter().find(|message| wanted(message)) {
                return found.clone();
            }
            checked = self.seen.len();
            let line = match self
                .lines
                .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            {
                Ok(line) => line,
                Err(error) => panic!(
                    "no {what} from Codex ({}); it sent {:#?}\nstderr: {}",
                    match error {
                        RecvTimeoutError::Timeout => "timed out",
                        RecvTimeoutError::Disconnected => "it exited",
                    },
                    self.seen,
                    std::fs::read_to_string(&self.stderr).unwrap_or_default()
                ),
            };
            let message: Value = serde_json::from_str(&line).unwrap_or_else(|error| {
                panic!("Codex sent a line that is not JSON ({error}): {line}")
            });
            let finished = message["method"] == "turn/completed" && !wanted(&message);
            self.seen.push(message);
            assert!(
                !finished,
                "the turn ended before {what} came; Codex sent {:#?}\nstderr: {}",
                self.seen,
                std::fs::read_to_string(&self.stderr).unwrap_or_default()
            );
        }
    }

    /// Sends a request and returns its result.
    fn request(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.send(json!({"id": id, "method": method, "params": params}));
        let response = self.wait(method, |message| {
            message["id"] == id && message.get("method").is_none()
        });
        assert!(
            response.get("error").is_none(),
            "{method} failed: {response}"
        );
        response["result"].clone()
    }
}

/// What one turn saw: the elicitation request Codex made, the requests the model got, and the
/// plugin's side of the wire (`> ` from Codex, `< ` from the plugin).
struct Turn {
    elicitation: Value,
    thread: String,
    turn: String,
    model_requests: Vec<Value>,
    wire: Vec<Value>,
}

/// One turn in which the model calls `deploy` and the app-server client answers the form with
/// `answer`.
fn turn(answer: Value) -> Turn {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("a dir under target/");
    let model_log = dir.path().join("model.jsonl");
    let tap = dir.path().join("wire.log");
    let (_model, port) = model(&model_log);
    let mut codex = AppServer::start(dir.path(), port, &tap);
    codex.request(
        1,
        "initialize",
        json!({"clientInfo": {"name": "formwork-sdk-test", "version": "0"},
               "capabilities": {"experimentalApi": true}}),
    );
    codex.send(json!({"method": "initialized"}));
    let started = codex.request(
        2,
        "thread/start",
        json!({"cwd": dir.path().join("work"), "approvalPolicy": "on-request",
               "sandbox": "read-only", "ephemeral": true}),
    );
    let thread = started["thread"]["id"]
        .as_str()
        .expect("a thread id")
        .to_owned();
    // The model's first answer calls the tool, so the server must be listed by then.
    let status = codex.wait("startup status of the plugin", |message| {
        message["method"] == "mcpServer/startupStatus/updated"
            && message["params"]["name"] == SERVER
            && message["params"]["status"] != "starting"
    });
    assert_eq!(status["params"]["status"], "ready", "{status}");
    let turn = codex.request(
        3,
        "turn/start",
        json!({"threadId": thread,
               "input": [{"type": "text", "text": "deploy", "text_elements": []}]}),
    )["turn"]["id"]
        .as_str()
        .expect("a turn id")
        .to_owned();
    let request = codex.wait("mcpServer/elicitation/request", |message| {
        message["method"] == "mcpServer/elicitation/request"
    });
    codex.send(json!({"id": request["id"], "result": answer}));
    let completed = codex.wait("turn/completed", |message| {
        message["method"] == "turn/completed"
    });
    assert_eq!(
        completed["params"]["turn"]["status"], "completed",
        "{completed}"
    );
    let model_requests = std::fs::read_to_string(&model_log)
        .expect("the model's log")
        .lines()
        .map(|line| serde_json::from_str(line).expect("a JSON line in the model's log"))
        .collect();
    let wire = std::fs::read_to_string(&tap)
        .expect("the tap's log")
        .lines()
        .map(|line| {
            let (side, message) = line.split_at(2);
            let message: Value = serde_json::from_str(message).expect("a JSON line on the wire");
            json!({"side": side.trim(), "message": message})
        })
        .collect();
    Turn {
        elicitation: request,
        thread,
        turn,
        model_requests,
        wire,
    }
}

/// The form formwork-sdk makes for `Deploy`, as the plugin writes it.
fn sdk_form() -> Value {
    Deploy::form().expect("Deploy is a form").to_value()
}

impl Turn {
    /// Checks what Codex asked the client, byte for byte, and what the plugin sent it.
    fn assert_the_form_arrived(&self) {
        // The plugin pushes the SDK's form as it is; rmcp adds a progress token of its own.
        let pushed: Vec<String> = self
            .wire
            .iter()
            .filter(|line| line["side"] == "<" && line["message"]["method"].is_string())
            .map(|line| line["message"].to_string())
            .collect();
        assert_eq!(
            pushed,
            [format!(
                r#"{{"jsonrpc":"2.0","id":0,"method":"elicitation/create","params":{{"_meta":{{"progressToken":0}},"mode":"form","message":"Where to deploy?","requestedSchema":{}}}}}"#,
                sdk_form()
            )]
        );
        // Codex drops that `_meta` and hands on the same form, with `properties` in name order
        // (it reads the schema into a sorted map); every field keeps its own keys' order.
        let mut sorted = sdk_form();
        if let Some(properties) = sorted["properties"].as_object_mut() {
            properties.sort_keys();
        }
        let expected = json!({
            "threadId": self.thread,
            "turnId": self.turn,
            "serverName": SERVER,
            "environmentId": null,
            "mode": "form",
            "_meta": null,
            "message": "Where to deploy?",
            "requestedSchema": sorted,
        });
        assert_eq!(
            self.elicitation["method"], "mcpServer/elicitation/request",
            "{}",
            self.elicitation
        );
        assert_eq!(self.elicitation["params"].to_string(), expected.to_string());
        assert_eq!(self.elicitation["params"]["requestedSchema"], sdk_form());
    }

    /// What Codex answered the plugin's `elicitation/create` with.
    fn plugin_got(&self) -> String {
        self.wire
            .iter()
            .find(|line| {
                line["side"] == ">"
                    && line["message"]["id"] == 0
                    && line["message"].get("method").is_none()
            })
            .map(|line| line["message"].to_string())
            .expect("Codex answered the elicitation")
    }

    /// The tool's text as the model got it in its second request (the first is what made it
    /// call the tool); Codex puts a line of timing before it.
    fn tool_output(&self) -> String {
        let paths: Vec<&Value> = self.model_requests.iter().map(|r| &r["path"]).collect();
        assert_eq!(paths, ["/v1/responses", "/v1/responses"]);
        let outputs: Vec<&Value> = self.model_requests[1]["body"]["input"]
            .as_array()
            .expect("the input items")
            .iter()
            .filter(|item| item["type"] == "function_call_output")
            .collect();
        assert_eq!(outputs.len(), 1, "{outputs:?}");
        assert_eq!(outputs[0]["call_id"], "call_1");
        let parts = outputs[0]["output"].as_array().expect("output parts");
        assert_eq!(parts.len(), 2, "{parts:?}");
        let timing = parts[0]["text"].as_str().expect("the timing line");
        assert!(
            timing.starts_with("Wall time: ") && timing.ends_with(" seconds\nOutput:"),
            "{timing:?}"
        );
        assert_eq!(parts[1]["type"], "input_text");
        parts[1]["text"]
            .as_str()
            .expect("the tool's text")
            .to_owned()
    }
}

fn accepted_form_reaches_the_tool() {
    let turn = turn(json!({
        "action": "accept",
        "content": {"target": "production", "replicas": 3, "notify": true, "contact": "ops@example.com"},
    }));
    turn.assert_the_form_arrived();
    assert_eq!(
        turn.plugin_got(),
        r#"{"jsonrpc":"2.0","id":0,"result":{"action":"accept","content":{"target":"production","replicas":3,"notify":true,"contact":"ops@example.com"}}}"#
    );
    assert_eq!(
        turn.tool_output(),
        r#"Accepted(Deploy { target: Production, replicas: 3, notify: true, contact: Some("ops@example.com") })"#
    );
}

fn declined_form_is_an_outcome() {
    let turn = turn(json!({"action": "decline", "content": null}));
    turn.assert_the_form_arrived();
    assert_eq!(
        turn.plugin_got(),
        r#"{"jsonrpc":"2.0","id":0,"result":{"action":"decline"}}"#
    );
    assert_eq!(turn.tool_output(), "Declined");
}

/// An answer that does not fit the form (`replicas` above its maximum) never becomes
/// `Accepted`: on this handshake-era connection the SDK reports it as `Invalid`.
fn content_that_does_not_fit_is_invalid() {
    let turn = turn(json!({
        "action": "accept",
        "content": {"target": "staging", "replicas": 9},
    }));
    turn.assert_the_form_arrived();
    assert_eq!(
        turn.plugin_got(),
        r#"{"jsonrpc":"2.0","id":0,"result":{"action":"accept","content":{"target":"staging","replicas":9}}}"#
    );
    assert_eq!(
        turn.tool_output(),
        r#"Invalid("replicas: must be at most 5")"#
    );
}

fn cancelled_form_is_an_outcome() {
    let turn = turn(json!({"action": "cancel", "content": null}));
    turn.assert_the_form_arrived();
    assert_eq!(
        turn.plugin_got(),
        r#"{"jsonrpc":"2.0","id":0,"result":{"action":"cancel"}}"#
    );
    assert_eq!(turn.tool_output(), "Cancelled");
}

const CASES: &[Case] = &[
    (
        "accepted_form_reaches_the_tool",
        accepted_form_reaches_the_tool,
    ),
    ("declined_form_is_an_outcome", declined_form_is_an_outcome),
    ("cancelled_form_is_an_outcome", cancelled_form_is_an_outcome),
    (
        "content_that_does_not_fit_is_invalid",
        content_that_does_not_fit_is_invalid,
    ),
];

fn main() {
    support::main(CASES);
}
