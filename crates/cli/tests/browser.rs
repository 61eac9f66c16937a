//! The workbench in a real browser: `formwork serve` with the TS SDK plugin (tests/peers/ts_plugin.mjs) as server
//! `ts` and tests/browser/markup_plugin.mjs as server `markup`, driven in headless Chromium from Debian's packages (`/usr/bin/chromium`) by playwright-core from the test
//! peers. The cases live in tests/browser/run.mjs (one line each on stdout, then `N passed, M failed`); a failed
//! case leaves a screenshot under target/browser-failures/. `cargo xtask test` installs both the browser and the
//! npm package. MCP Apps have a run of their own (tests/browser/apps.mjs, `mcp_apps_in_headless_chromium`), and so
//! have the model loop against the simulated provider (tests/browser/model.mjs, `model_loop_in_headless_chromium`)
//! and the Codex runtime, `formwork serve --runtime codex` with real Codex and the simulated provider, its forms
//! answered, declined, cancelled, ended by Stop or a new message, or answered by another app-server client on
//! Codex's socket (tests/browser/codex.mjs, `codex_runtime_in_headless_chromium`).

#![allow(clippy::unwrap_used)]

mod common;

use std::ffi::OsStr;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::{node_bin_dir, peers_dir, run};
use formwork_testkit::{OAuthExample, Serve, SimProvider, repo_root};

const CHROMIUM: &str = "/usr/bin/chromium";

/// One browser run at a time: on two cores, runs side by side starve each other's frames
/// (the apps run's clicks were lost while the model run went on beside it).
static ONE_RUN_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_run_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE_RUN_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A whole browser run, at most: on a 2-core machine the workbench run takes about 20 s and the apps run 85–110 s
/// (more while other tests build or run beside it).
const RUN_TIMEOUT: Duration = Duration::from_secs(300);

/// `formwork serve` on `config` and `data_dir` with these arguments and environment variables besides.
fn start_serve(config: &Path, data_dir: &Path, extra: &[&OsStr], env: &[(&str, &str)]) -> Serve {
    start_serve_in(config, data_dir, extra, env, None)
}

/// [`start_serve`], in the working directory `cwd` when given.
fn start_serve_in(
    config: &Path,
    data_dir: &Path,
    extra: &[&OsStr],
    env: &[(&str, &str)],
    cwd: Option<&Path>,
) -> Serve {
    let mut command = Command::new(env!("CARGO_BIN_EXE_formwork"));
    if let Some(cwd) = cwd {
        command.current_dir(cwd);
    }
    command
        .arg("serve")
        .arg("--data-dir")
        .arg(data_dir)
        .args(["--port", "0", "--config"])
        .arg(config)
        .args(extra)
        .envs(env.iter().copied());
    Serve::start(&mut command)
}

/// tests/peers/video_cdn.mjs, the stand-in for the CDN that `server-video-resource` fetches its videos from
/// (this machine has no internet): a proxy whose `CONNECT test-videos.co.uk:443` reaches an HTTPS server with a
/// certificate from a test CA made here. Stopped when dropped (its stdin closes).
struct VideoCdn {
    child: Child,
    port: u16,
    ca: PathBuf,
    log: PathBuf,
}

impl VideoCdn {
    fn start(dir: &Path) -> Self {
        let authority = common::TestCa::new("formwork video CDN test CA");
        let (leaf, key) = authority.issue("test-videos.co.uk");
        let (ca, certificate, key_file, log) = (
            dir.join("cdn-ca.pem"),
            dir.join("cdn-cert.pem"),
            dir.join("cdn-key.pem"),
            dir.join("cdn.log"),
        );
        std::fs::write(&ca, &authority.pem).unwrap();
        std::fs::write(&certificate, leaf.pem()).unwrap();
        std::fs::write(&key_file, key.serialize_pem()).unwrap();
        std::fs::write(&log, "").unwrap();
        let mut child = Command::new(node_bin_dir().join("node"))
            .arg(peers_dir().join("npm/video_cdn.mjs"))
            .args([&certificate, &key_file, &log])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut first = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut first)
            .unwrap();
        let port = first
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("video_cdn.mjs printed no port: {first:?}"));
        Self {
            child,
            port,
            ca,
            log,
        }
    }
}

impl Drop for VideoCdn {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.wait();
    }
}

/// Makes the database refuse one answer, as a full or failing disk would: the accepted nickname `no-store` (the
/// `answer-not-stored` case of run.mjs). The trigger reaches the server's own connection through the file.
fn refuse_one_answer(database: &Path) {
    let conn = rusqlite::Connection::open(database).unwrap();
    conn.execute_batch(
        "CREATE TRIGGER refuse_no_store BEFORE UPDATE OF status ON forms
         WHEN NEW.status = 'accepted' AND json_extract(NEW.content, '$.nickname') = 'no-store'
         BEGIN SELECT RAISE(ABORT, 'the database refused this answer'); END;",
    )
    .unwrap();
}

#[test]
fn workbench_in_headless_chromium() {
    let _one = one_run_at_a_time();
    assert!(
        Path::new(CHROMIUM).exists(),
        "{CHROMIUM} is missing: `cargo xtask test` installs Debian's chromium package when run as root"
    );
    let peers = peers_dir();
    assert!(
        peers.join("npm/node_modules/playwright-core").is_dir(),
        "playwright-core is not in {}: run `cargo xtask peers`",
        peers.display()
    );
    let root = repo_root();
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("formwork.toml");
    let node = node_bin_dir().join("node").display().to_string();
    // `ts`: one tool per field kind; `markup`: HTML in every text it sends; `ts2`: the TS SDK 2
    // plugin that asks through 2026-07-28 rounds; `demo`: the TS SDK's OAuth example, signed in to
    // from the page (its tokens in the data directory's file); `py`: the Python SDK plugin, which pushes
    // its forms and so fails on 2026-07-28 until the page's offer pins 2025-11-25. None needs an
    // approval card.
    let oauth = OAuthExample::start();
    // OpenAI's form extension is on for the `openai-*` cases; the other cases send core forms only.
    std::fs::write(
        &config,
        format!(
            "[features]\nopenai_elicitation = true\n\n[mcp_servers.ts]\ncommand = {node:?}\nargs = [{:?}]\ndefault_tools_approval_mode = \"approve\"\n\n\
             [mcp_servers.markup]\ncommand = {node:?}\nargs = [{:?}, {:?}]\ndefault_tools_approval_mode = \"approve\"\n\n\
             [mcp_servers.ts2]\ncommand = {node:?}\nargs = [{:?}]\ndefault_tools_approval_mode = \"approve\"\n\n\
             [mcp_servers.demo]\nurl = {:?}\ndefault_tools_approval_mode = \"approve\"\n\n\
             [mcp_servers.py]\ncommand = {:?}\nargs = [{:?}]\ndefault_tools_approval_mode = \"approve\"\n",
            peers.join("npm/ts_plugin.mjs").display().to_string(),
            root.join("tests/browser/markup_plugin.mjs").display().to_string(),
            peers.join("npm/node_modules").display().to_string(),
            peers.join("npm/ts2_mrtr_plugin.mjs").display().to_string(),
            oauth.url,
            peers.join("venv/bin/python").display().to_string(),
            peers.join("npm/py_plugin.py").display().to_string(),
        ),
    )
    .unwrap();
    let data_dir = dir.path().join("data");
    std::fs::create_dir_all(&data_dir).unwrap();

    // No keyring: the sign-in's tokens go to the data directory's file.
    let serve = start_serve(
        &config,
        &data_dir,
        &[],
        &[(
            "DBUS_SESSION_BUS_ADDRESS",
            "unix:path=/nonexistent/formwork-test-bus",
        )],
    );
    refuse_one_answer(&data_dir.join("formwork.db"));
    run_cases(serve, "run.mjs", &[]);
    drop(oauth);
}

/// Runs the browser cases of `tests/browser/<script>` against `serve` (with `env` besides the
/// peers), then stops the server; fails unless every case passed. Returns the server's stderr.
fn run_cases(serve: Serve, script: &str, env: &[(&str, &Path)]) -> String {
    run_some_cases(serve, script, None, env)
}

/// [`run_cases`], of only the cases `filter` names (comma-separated) when given.
fn run_some_cases(
    serve: Serve,
    script: &str,
    filter: Option<&str>,
    env: &[(&str, &Path)],
) -> String {
    let url = serve.url().unwrap().to_owned();
    let args: Vec<&OsStr> = std::iter::once(OsStr::new(&url))
        .chain(filter.map(OsStr::new))
        .collect();
    let output = run_script(script, &args, env);
    let server_stderr = serve.stop();
    check_passed(script, &output, &server_stderr);
    server_stderr
}

/// Runs `node tests/browser/<script> ARGS` (with `env` besides the peers) and returns what it
/// printed.
fn run_script(script: &str, args: &[&OsStr], env: &[(&str, &Path)]) -> common::Output {
    let root = repo_root();
    let mut node = Command::new(node_bin_dir().join("node"));
    node.arg(root.join("tests/browser").join(script))
        .args(args)
        .env("FORMWORK_PEERS", peers_dir())
        .env("FORMWORK_BROWSER_SCREENSHOTS", screenshots())
        .env("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1");
    for (key, value) in env {
        node.env(key, value);
    }
    run(&mut node, None, RUN_TIMEOUT)
}

fn screenshots() -> PathBuf {
    repo_root().join("target/browser-failures")
}

/// Fails unless the run of `script` passed every case it ran.
fn check_passed(script: &str, output: &common::Output, server_stderr: &str) {
    let screenshots = screenshots();
    // Shown with --nocapture, and in the panic message below when a case failed.
    eprintln!("{}", output.stdout);
    let passed = output
        .stdout
        .lines()
        .filter(|line| line.starts_with("ok "))
        .count();
    let summary = output
        .stdout
        .lines()
        .rev()
        .find(|line| line.contains(" passed, "))
        .unwrap_or_default();
    assert!(
        output.code == 0
            && passed > 0
            && summary.starts_with(&format!("{passed} passed, 0 failed")),
        "{script} cases failed (screenshots in {}):{output}\nformwork serve stderr:\n{server_stderr}",
        screenshots.display()
    );
}

/// Replicas in the workbench (tests/browser/replicas.mjs): three `formwork serve` on one
/// PostgreSQL database (a throwaway cluster) with one token and a 1 s lease. A card started on A
/// is answered on B; A is SIGKILLed while a 2026-07-28 round's card is open, the round is
/// answered on B, and B or C carries the call on, its next round answered on C; then A is
/// started again and shows the whole transcript, as B does.
#[test]
fn replicas_in_headless_chromium() {
    let _one = one_run_at_a_time();
    let peers = peers_dir();
    let dir = tempfile::tempdir().unwrap();
    let database = formwork_testkit::postgres::Cluster::shared().new_database();
    let config = dir.path().join("formwork.toml");
    let node = node_bin_dir().join("node").display().to_string();
    std::fs::write(
        &config,
        format!(
            "[store]\nlease_seconds = 1\n\n\
             [mcp_servers.ts]\ncommand = {node:?}\nargs = [{:?}]\ndefault_tools_approval_mode = \"approve\"\n\n\
             [mcp_servers.py]\ncommand = {:?}\nargs = [{:?}]\ndefault_tools_approval_mode = \"approve\"\n\
             env = {{ PY_MRTR_STATE_KEY = \"replicas-share-this-request-state-key-0123456789\" }}\n\n\
             [mcp_servers.demo]\nenabled = false\n",
            peers.join("npm/ts_plugin.mjs").display().to_string(),
            peers.join("venv/bin/python").display().to_string(),
            peers.join("npm/py_mrtr_plugin.py").display().to_string(),
        ),
    )
    .unwrap();
    let token = "replicas-of-one-deployment-share-this-token";
    let start = |name: &str| {
        start_serve(
            &config,
            &dir.path().join(name),
            &[OsStr::new("--store"), OsStr::new(&database)],
            &[("FORMWORK_TOKEN", token)],
        )
    };
    let (mut a, b, c) = (start("a"), start("b"), start("c"));
    let a_pid = a.id().to_string();
    let (a_url, b_url, c_url) = (a.url().unwrap(), b.url().unwrap(), c.url().unwrap());
    let live = run_script(
        "replicas.mjs",
        &[
            OsStr::new("live"),
            OsStr::new(a_url),
            OsStr::new(b_url),
            OsStr::new(c_url),
        ],
        &[("FORMWORK_REPLICA_A_PID", Path::new(&a_pid))],
    );
    check_passed("replicas.mjs live", &live, &c.stderr());
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&a.wait_dead()),
        Some(9),
        "A was killed"
    );
    let session = live
        .stdout
        .lines()
        .find_map(|line| line.strip_prefix("session "))
        .expect("the session of the killed replica")
        .to_owned();

    let again = start("a-again");
    let restarted = run_script(
        "replicas.mjs",
        &[
            OsStr::new("restarted"),
            OsStr::new(again.url().unwrap()),
            OsStr::new(b.url().unwrap()),
            OsStr::new(&session),
        ],
        &[],
    );
    check_passed("replicas.mjs restarted", &restarted, &again.stderr());
    for serve in [again, b, c] {
        let stderr = serve.stop();
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}

/// MCP Apps in the workbench (tests/browser/apps.mjs): five published apps of the test peers
/// (budget allocator, system monitor, basic, debug, and video resource behind [`VideoCdn`]), the
/// probe plugin's hostile app and skybridge widget (tests/peers/app_probe_plugin.mjs) beside the
/// bystander plugin it attacks, and a scripted model that calls the app-only `poll-system-stats`
/// (refused) and `get-system-info` (an app of the model's call).
#[test]
fn mcp_apps_in_headless_chromium() {
    let _one = one_run_at_a_time();
    assert!(
        Path::new(CHROMIUM).exists(),
        "{CHROMIUM} is missing: `cargo xtask test` installs Debian's chromium package when run as root"
    );
    let peers = peers_dir();
    let bin = peers.join("npm/node_modules/.bin");
    assert!(
        bin.join("mcp-budget-allocator-server").exists(),
        "the MCP Apps servers are not in {}: run `cargo xtask peers`",
        bin.display()
    );

    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path().join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    let node = node_bin_dir().join("node").display().to_string();
    let quoted = |path: &Path| format!("{:?}", path.display().to_string());
    let mut config = String::new();
    for (name, server) in [
        ("budget-allocator", "mcp-budget-allocator-server"),
        ("system-monitor", "mcp-system-monitor-server"),
        ("basic", "mcp-server-basic-vanillajs"),
        ("debug", "mcp-server-debug"),
    ] {
        config.push_str(&format!(
            "[mcp_servers.{name}]\ncommand = {node:?}\nargs = [{}, \"--stdio\"]\n\
             default_tools_approval_mode = \"approve\"\n",
            quoted(&bin.join(server).canonicalize().unwrap()),
        ));
        if name == "debug" {
            config.push_str(&format!(
                "env = {{ DEBUG_LOG_FILE = {} }}\n",
                quoted(&logs.join("debug.log"))
            ));
        }
        config.push('\n');
    }
    let cdn = VideoCdn::start(dir.path());
    config.push_str(&format!(
        "[mcp_servers.video]\ncommand = {node:?}\nargs = [{}, \"--stdio\"]\n\
         default_tools_approval_mode = \"approve\"\nenv = {{ NODE_USE_ENV_PROXY = \"1\", \
         HTTPS_PROXY = \"http://127.0.0.1:{}\", NODE_EXTRA_CA_CERTS = {}, NODE_NO_WARNINGS = \"1\" }}\n\n",
        quoted(&bin.join("mcp-video-resource-server").canonicalize().unwrap()),
        cdn.port,
        quoted(&cdn.ca),
    ));
    for (name, script, variable, log) in [
        ("probe", "app_probe_plugin.mjs", "PROBE_LOG", "probe.log"),
        (
            "bystander",
            "bystander_plugin.mjs",
            "BYSTANDER_LOG",
            "bystander.log",
        ),
    ] {
        config.push_str(&format!(
            "[mcp_servers.{name}]\ncommand = {node:?}\nargs = [{}]\n\
             default_tools_approval_mode = \"approve\"\nenv = {{ {variable} = {} }}\n\n",
            quoted(&peers.join("npm").join(script)),
            quoted(&logs.join(log)),
        ));
    }
    // The person asks for a card on every call of the probe's app-erase, an app's call too.
    config.push_str("[mcp_servers.probe.tools.app-erase]\napproval_mode = \"prompt\"\n\n");
    // A remote plugin with an app (TS SDK over Streamable HTTP): its app gets no local service.
    let remote = common::HttpPlugin::start(&[]);
    config.push_str(&format!(
        "[mcp_servers.remote]\nurl = {:?}\ndefault_tools_approval_mode = \"approve\"\n\n",
        remote.url
    ));
    let config_file = dir.path().join("formwork.toml");
    std::fs::write(&config_file, config).unwrap();
    let model = dir.path().join("model.json");
    std::fs::write(
        &model,
        r#"[
  {"match": "(?i)poll the stats", "reply": "Polled.",
   "call": {"server": "system-monitor", "tool": "poll-system-stats"}},
  {"match": "(?i)system info", "reply": "Here is the system.",
   "call": {"server": "system-monitor", "tool": "get-system-info"}}
]"#,
    )
    .unwrap();
    let data_dir = dir.path().join("data");
    std::fs::create_dir_all(&data_dir).unwrap();

    // The app log lines (notifications/message of the apps) on stderr, for the check below.
    let serve = start_serve(
        &config_file,
        &data_dir,
        &["--scripted-model".as_ref(), model.as_os_str()],
        &[("FORMWORK_LOG", "warn,formwork::app_log=info")],
    );
    let server_stderr = run_cases(
        serve,
        "apps.mjs",
        &[
            ("FORMWORK_APPS_LOGS", &logs),
            ("FORMWORK_VIDEO_CDN_LOG", &cdn.log),
        ],
    );
    // server-debug's four log buttons (notifications/message) reached the host's log.
    for level in ["debug", "info", "warning", "error"] {
        let line = format!("level={level} data=\"Debug log data\"");
        assert!(
            server_stderr
                .lines()
                .any(|logged| logged.contains("formwork::app_log: app log")
                    && logged.contains(&line)),
            "no app log line with {line} in the stderr of formwork serve:\n{server_stderr}"
        );
    }
}

/// The model loop in the workbench (tests/browser/model.mjs): the simulated provider
/// (tests/peers/sim_provider.py, the one hand-written fake) on the Responses wire for every case, then
/// a restarted `formwork serve` on the same data directory, on the Chat Completions wire, continues a
/// conversation and runs a call with its form again.
#[test]
fn model_loop_in_headless_chromium() {
    let _one = one_run_at_a_time();
    assert!(
        Path::new(CHROMIUM).exists(),
        "{CHROMIUM} is missing: `cargo xtask test` installs Debian's chromium package when run as root"
    );
    let peers = peers_dir();
    let dir = tempfile::tempdir().unwrap();
    let call = |tool: &str| serde_json::json!([{"calls": [{"name": format!("ts__{tool}"), "arguments": {}}]}, {"echo": true}]);
    let mut color = call("ask_enum");
    color[0]["text"] = "Let me ask the plugin.".into();
    // The bubble streams for over a second: a slow machine's page still shows it streaming.
    color[0]["delay_ms"] = 400.into();
    let rules = serde_json::json!({"rules": [
        {"match": "pick a color", "steps": color},
        {"match": "decline test|cancel test", "steps": call("ask_enum")},
        {"match": "wait for me", "steps": call("ask_then_hold")},
        {"match": "hold on", "steps": call("hold")},
        {"match": "abort report", "steps": call("last_abort")},
        {"match": "refused", "steps": [{"status": 401, "message": "Incorrect API key provided"}]},
        {"match": "limited", "steps": [{"text": "made it", "first": [{"status": 429, "retry_after": 1, "message": "slow down"}]}]},
        {"match": "remember apples", "steps": [{"text": "Noted."}]},
        {"match": "what did I say", "steps": [{"recall": true}]}
    ]});
    let sim = SimProvider::start(&rules);
    let base_url = sim.url.as_str();

    let node = node_bin_dir().join("node").display().to_string();
    let config = dir.path().join("formwork.toml");
    let mut text = format!(
        "[mcp_servers.ts]\ncommand = {node:?}\nargs = [{:?}]\ndefault_tools_approval_mode = \"approve\"\n\
         enabled_tools = [\"ask_enum\", \"ask_then_hold\", \"hold\", \"last_abort\"]\n\n\
         [mcp_servers.demo]\nenabled = false\n\n",
        peers.join("npm/ts_plugin.mjs").display().to_string(),
    );
    for (id, wire) in [("simr", "responses"), ("simc", "chat")] {
        text.push_str(&format!(
            "[model_providers.{id}]\nname = \"Sim\"\nbase_url = {base_url:?}\nwire_api = {wire:?}\n\
             env_key = \"FORMWORK_TEST_SIM_KEY\"\nrequest_max_retries = 1\nstream_max_retries = 1\n\n"
        ));
    }
    std::fs::write(&config, text).unwrap();
    let data_dir = dir.path().join("data");
    std::fs::create_dir_all(&data_dir).unwrap();
    let key = [("FORMWORK_TEST_SIM_KEY", "sk-sim-test")];
    let model = |provider: &'static str| -> Vec<&'static OsStr> {
        vec![
            "--model-provider".as_ref(),
            provider.as_ref(),
            "--model".as_ref(),
            "sim-1".as_ref(),
        ]
    };

    let serve = start_serve(&config, &data_dir, &model("simr"), &key);
    run_some_cases(
        serve,
        "model.mjs",
        Some(
            "call-form,decline-reaches-the-model,cancel-reaches-the-model,stop,new-message-cancels-the-turn,provider-401,provider-429,restart-before",
        ),
        &[],
    );
    let serve = start_serve(&config, &data_dir, &model("simc"), &key);
    run_some_cases(serve, "model.mjs", Some("restart-after,call-form"), &[]);
    // Both wires were used, and the key went to the provider as its bearer token.
    let requests = sim.requests();
    let paths: std::collections::BTreeSet<&str> = requests
        .iter()
        .map(|entry| entry["path"].as_str().unwrap())
        .collect();
    assert_eq!(
        paths.into_iter().collect::<Vec<_>>(),
        ["/v1/chat/completions", "/v1/responses"]
    );
    assert!(
        requests
            .iter()
            .all(|entry| entry["headers"]["authorization"] == "Bearer sk-sim-test")
    );
}

/// The Codex runtime in the workbench (tests/browser/codex.mjs): `formwork serve --runtime codex`
/// runs the conversation in real Codex (`codex app-server`, the native binary of the pinned
/// `@openai/codex`) against the simulated Responses model, with the TS SDK plugin as server `ts`;
/// Codex's forms are the page's cards. One case answers a form from a second app-server client
/// (tests/peers/codex_other_client.py) on Codex's socket in its `CODEX_HOME`.
#[test]
fn codex_runtime_in_headless_chromium() {
    let _one = one_run_at_a_time();
    assert!(
        Path::new(CHROMIUM).exists(),
        "{CHROMIUM} is missing: `cargo xtask test` installs Debian's chromium package when run as root"
    );
    let peers = peers_dir();
    let codex = peers.join(
        "npm/node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex",
    );
    assert!(
        codex.is_file(),
        "Codex is not installed at {}: run `cargo xtask peers`",
        codex.display()
    );
    let dir = tempfile::tempdir().unwrap();
    // One rule per case, keyed by its message: call `ask_enum` through Codex's namespace of the
    // server (or the built-in demo's `deploy`), then repeat the tool's output.
    let ask = serde_json::json!([
        {"calls": [{"name": "ask_enum", "namespace": "mcp__ts", "arguments": {}}]},
        {"echo": true}
    ]);
    let rules: Vec<serde_json::Value> = [
        "answer test",
        "decline test",
        "cancel test",
        "stop test",
        "new message test",
        "elsewhere test",
    ]
    .iter()
    .map(|message| serde_json::json!({"match": format!("^{message}$"), "steps": ask}))
    .chain([
        serde_json::json!({"match": "^never mind$", "steps": [{"text": "Fine."}]}),
        serde_json::json!({"match": "^deploy test$", "steps": [
            {"calls": [{"name": "deploy", "namespace": "mcp__demo", "arguments": {"service": "web"}}]},
            {"echo": true}
        ]}),
    ])
    .collect();
    let sim = SimProvider::start(&serde_json::json!({ "rules": rules }));

    let home = dir.path().join("codex-home");
    let node = node_bin_dir().join("node").display().to_string();
    let config = dir.path().join("formwork.toml");
    std::fs::write(
        &config,
        format!(
            "model_provider = \"sim\"\nmodel = \"sim-1\"\n\n\
             [model_providers.sim]\nname = \"Sim\"\nbase_url = {:?}\nwire_api = \"responses\"\n\
             request_max_retries = 0\nstream_max_retries = 0\n\n\
             [codex]\ncommand = {:?}\nhome = {:?}\n\n\
             [mcp_servers.ts]\ncommand = {node:?}\nargs = [{:?}]\ndefault_tools_approval_mode = \"approve\"\n\
             enabled_tools = [\"ask_enum\"]\n",
            sim.url,
            codex.display().to_string(),
            home.display().to_string(),
            peers.join("npm/ts_plugin.mjs").display().to_string(),
        ),
    )
    .unwrap();
    let data_dir = dir.path().join("data");
    let work = dir.path().join("work");
    std::fs::create_dir_all(&data_dir).unwrap();
    std::fs::create_dir_all(&work).unwrap();

    // Codex works in a directory of its own, not in this repository.
    let serve = start_serve_in(
        &config,
        &data_dir,
        &["--runtime".as_ref(), "codex".as_ref()],
        &[],
        Some(&work),
    );
    run_cases(serve, "codex.mjs", &[("FORMWORK_CODEX_HOME", &home)]);
    // Every request went to the Responses wire, each offering the plugin's tools in Codex's namespace.
    let requests = sim.requests();
    for request in &requests {
        assert_eq!(request["path"], "/v1/responses", "{request:#}");
        assert!(
            request["body"]["tools"]
                .as_array()
                .is_some_and(|tools| tools.iter().any(|tool| tool["name"] == "mcp__ts")),
            "{request:#}"
        );
    }
    // How many requests carried each message (its thread's later requests carry it too): the model
    // was asked again with the tool's output after an answer, and never after Stop or a new message
    // (whose "never mind" was asked once, on the same thread).
    let carrying = |message: &str| {
        requests
            .iter()
            .filter(|request| {
                request["body"]["input"].as_array().is_some_and(|input| {
                    input.iter().any(|item| {
                        item["role"] == "user"
                            && item["content"].as_array().is_some_and(|parts| {
                                parts.iter().any(|part| part["text"] == message)
                            })
                    })
                })
            })
            .count()
    };
    let counts: Vec<(&str, usize)> = [
        "answer test",
        "decline test",
        "cancel test",
        "stop test",
        "new message test",
        "never mind",
        "elsewhere test",
    ]
    .into_iter()
    .map(|message| (message, carrying(message)))
    .collect();
    assert_eq!(
        counts,
        [
            ("answer test", 2),
            ("decline test", 2),
            ("cancel test", 2),
            ("stop test", 1),
            ("new message test", 2),
            ("never mind", 1),
            ("elsewhere test", 2),
        ],
        "{requests:#?}"
    );
}
