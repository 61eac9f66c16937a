//! Shared helpers of the black-box tests: the real `formwork` binary against real peers installed by
//! `cargo xtask peers` under `$FORMWORK_PEERS`. What every crate's tests share (the peers, `formwork serve`, the
//! OAuth example, the simulated provider) is formwork-testkit's; what this module uses of it is re-exported.
//!
//! Every run of the binary is bounded by a timeout, so a hang fails the test instead of blocking CI, and it must
//! leave nothing running behind it (a plugin that outlives `formwork` fails the test too).
#![allow(dead_code)] // each test binary uses its own subset

use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

pub use formwork_testkit::{TIMEOUT, kill_group, node_bin_dir, peers_dir, without_user_config};
use formwork_testkit::{free_port, wait_listening};
use serde_json::Value;

/// `sh -c` command line of a node script: `name` is relative to `$FORMWORK_PEERS/npm`.
pub fn node_plugin(name: &str) -> String {
    format!(
        "{} {}",
        quote(&node_bin_dir().join("node")),
        quote(&peers_dir().join("npm").join(name))
    )
}

/// `sh -c` command line of a Python fixture from tests/peers, run in the peers' venv.
pub fn python_plugin(name: &str) -> String {
    format!(
        "{} {}",
        quote(&peers_dir().join("venv/bin/python")),
        quote(&peers_dir().join("npm").join(name))
    )
}

/// `@modelcontextprotocol/server-everything` over stdio, run directly with node (no npx download).
pub fn everything_plugin() -> String {
    format!(
        "{} stdio",
        node_plugin("node_modules/@modelcontextprotocol/server-everything/dist/index.js")
    )
}

/// Single-quotes a path for `sh -c`.
pub fn quote(path: &Path) -> String {
    format!("'{}'", path.display().to_string().replace('\'', r"'\''"))
}

/// What one run of a program gave.
#[derive(Debug)]
pub struct Output {
    pub args: Vec<String>,
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
    pub elapsed: Duration,
}

impl Output {
    /// Panics, showing the whole run, unless the exit code is `code`.
    pub fn assert_code(&self, code: i32) -> &Self {
        assert_eq!(self.code, code, "unexpected exit code of {self}");
        self
    }

    /// stdout parsed as JSON.
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|err| panic!("stdout is not JSON ({err}): {self}"))
    }

    /// The text blocks of the `CallToolResult` on stdout, joined by newlines.
    pub fn text(&self) -> String {
        let result = self.json();
        let Some(content) = result["content"].as_array() else {
            panic!("stdout is no CallToolResult with content: {self}");
        };
        let texts: Vec<&str> = content
            .iter()
            .filter_map(|block| block["text"].as_str())
            .collect();
        texts.join("\n")
    }

    /// The JSON a fixture tool reports after its `result: ` prefix (what the plugin's SDK received).
    pub fn plugin_result(&self) -> Value {
        let text = self.text();
        let Some(json) = text.strip_prefix("result: ") else {
            panic!("the plugin reported no `result: `: {self}");
        };
        serde_json::from_str(json).unwrap_or_else(|err| panic!("bad result JSON ({err}): {self}"))
    }

    /// Panics unless some stderr line mentions `needle`.
    pub fn assert_stderr_mentions(&self, needle: &str) -> &Self {
        assert!(
            self.stderr.lines().any(|line| line.contains(needle)),
            "stderr does not mention `{needle}`: {self}"
        );
        self
    }
}

impl std::fmt::Display for Output {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "\n  args: {:?}\n  exit: {} after {:.1?}\n  stdout: {}\n  stderr: {}",
            self.args,
            self.code,
            self.elapsed,
            shorten(&self.stdout),
            shorten(&self.stderr)
        )
    }
}

fn shorten(text: &str) -> String {
    const LIMIT: usize = 4000;
    if text.len() <= LIMIT {
        return text.to_string();
    }
    let cut = (0..=LIMIT)
        .rev()
        .find(|idx| text.is_char_boundary(*idx))
        .unwrap_or(0);
    format!("{}… ({} bytes)", &text[..cut], text.len())
}

/// How a `formwork call` answers the forms the plugin asks for.
pub enum Answers {
    /// `--answers FILE` with this JSON array.
    Script(Value),
    /// `--accept-defaults`.
    AcceptDefaults,
    /// Neither flag (and stdin is not a terminal).
    Nothing,
}

/// `formwork call <tool> --plugin <plugin> [--args <args>]` with the given answers.
pub fn call(plugin: &str, tool: &str, args: Option<Value>, answers: Answers) -> Output {
    call_with(plugin, tool, args, answers, &[])
}

/// [`call`] with more flags (e.g. `--protocol`).
pub fn call_with(
    plugin: &str,
    tool: &str,
    args: Option<Value>,
    answers: Answers,
    flags: &[&str],
) -> Output {
    let mut argv = vec![
        "call".to_string(),
        tool.to_string(),
        "--plugin".to_string(),
        plugin.to_string(),
    ];
    argv.extend(flags.iter().map(|flag| (*flag).to_string()));
    if let Some(args) = args {
        argv.extend(["--args".to_string(), args.to_string()]);
    }
    // Kept alive until the run ends: the file is removed on drop.
    let _file = match answers {
        Answers::Script(script) => {
            let file = TempFile::new(&script.to_string());
            argv.extend(["--answers".to_string(), file.path.display().to_string()]);
            Some(file)
        }
        Answers::AcceptDefaults => {
            argv.push("--accept-defaults".to_string());
            None
        }
        Answers::Nothing => None,
    };
    formwork(&argv, None)
}

/// The messages of a run with `FORMWORK_LOG=formwork::wire=trace`, in order: `("out" | "in",
/// body)`.
pub fn wire(output: &Output) -> Vec<(String, Value)> {
    output
        .stderr
        .lines()
        .filter_map(|line| {
            let (_, rest) = line.split_once(" formwork::wire: ")?;
            let (head, body) = rest.split_once(" body=")?;
            let direction = head
                .split_once("direction=")?
                .1
                .trim_matches('"')
                .to_owned();
            Some((
                direction,
                serde_json::from_str(body).expect("a logged body is JSON"),
            ))
        })
        .collect()
}

/// Runs the `formwork` binary with `args` (and `stdin`, or none), bounded by [`TIMEOUT`].
pub fn formwork<S: AsRef<str>>(args: &[S], stdin: Option<&[u8]>) -> Output {
    run(
        Command::new(env!("CARGO_BIN_EXE_formwork")).args(args.iter().map(AsRef::as_ref)),
        stdin,
        TIMEOUT,
    )
}

/// Runs `cmd` in its own process group with piped output, killing the whole group when it outlives `timeout`. A run
/// of the `formwork` binary gets no user config ([`without_user_config`]).
pub fn run(cmd: &mut Command, stdin: Option<&[u8]>, timeout: Duration) -> Output {
    if cmd.get_program() == env!("CARGO_BIN_EXE_formwork") {
        without_user_config(cmd);
    }
    let args: Vec<String> = std::iter::once(cmd.get_program())
        .chain(cmd.get_args())
        .map(|arg| arg.to_string_lossy().into_owned())
        .collect();
    cmd.stdin(if stdin.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .process_group(0);
    let started = Instant::now();
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|err| panic!("cannot start {args:?}: {err}"));
    let group = child.id();
    if let (Some(input), Some(mut pipe)) = (stdin, child.stdin.take()) {
        let input = input.to_vec();
        std::thread::spawn(move || pipe.write_all(&input));
    }
    let stdout = read_all(child.stdout.take());
    let stderr = read_all(child.stderr.take());

    let status = loop {
        if let Some(status) = child.try_wait().expect("waiting for the child") {
            break status;
        }
        if started.elapsed() > timeout {
            kill_group(group);
            let _ = child.wait();
            let stderr = stderr
                .recv_timeout(Duration::from_secs(5))
                .unwrap_or_default();
            panic!(
                "{args:?} did not finish within {timeout:?}; it was killed. stderr:\n{}",
                shorten(&stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    // Output ends when the last holder of the pipes exits: a plugin left running would keep them open.
    let linger = Duration::from_secs(10);
    let (Ok(stdout), Ok(stderr)) = (stdout.recv_timeout(linger), stderr.recv_timeout(linger))
    else {
        kill_group(group);
        panic!(
            "{args:?} exited ({status}) but something it started still held its output {linger:?} later"
        );
    };
    Output {
        args,
        code: status.code().unwrap_or(-1),
        stdout,
        stderr,
        elapsed: started.elapsed(),
    }
}

fn read_all(pipe: Option<impl Read + Send + 'static>) -> mpsc::Receiver<String> {
    let (sender, receiver) = mpsc::channel();
    if let Some(mut pipe) = pipe {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = pipe.read_to_end(&mut bytes);
            let _ = sender.send(String::from_utf8_lossy(&bytes).into_owned());
        });
    }
    receiver
}

/// A file in the temp dir, removed on drop.
pub struct TempFile {
    pub path: PathBuf,
}

impl TempFile {
    pub fn new(content: &str) -> Self {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let name = format!(
            "formwork-test-{}-{}.json",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let path = std::env::temp_dir().join(name);
        std::fs::write(&path, content).expect("writing a temp file");
        Self { path }
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Re-serialises JSON compactly, keys in the order they came: compares content *and* key order.
pub fn compact(value: &Value) -> String {
    serde_json::to_string(value).expect("serialising JSON")
}

/// `mcp-server-everything streamableHttp` on a free local port, killed on drop.
pub struct EverythingHttp {
    group: u32,
    child: std::process::Child,
    pub port: u16,
}

impl EverythingHttp {
    pub fn start() -> Self {
        let port = free_port();
        let script = peers_dir()
            .join("npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
        let child = Command::new(node_bin_dir().join("node"))
            .arg(script)
            .arg("streamableHttp")
            .env("PORT", port.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .expect("starting server-everything over HTTP");
        let server = Self {
            group: child.id(),
            child,
            port,
        };
        wait_listening("server-everything", "127.0.0.1", port);
        server
    }
}

impl Drop for EverythingHttp {
    fn drop(&mut self) {
        kill_group(self.group);
        let _ = self.child.wait();
    }
}

/// A certificate authority made with rcgen for one test: its certificate as PEM, and leaf
/// certificates it issues.
pub struct TestCa {
    issuer: rcgen::Issuer<'static, rcgen::KeyPair>,
    pub pem: String,
}

impl TestCa {
    pub fn new(name: &str) -> TestCa {
        use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair, KeyUsagePurpose};
        let key = KeyPair::generate().expect("a key");
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("CA parameters");
        params.distinguished_name.push(DnType::CommonName, name);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign];
        let certificate = params.self_signed(&key).expect("the CA certificate");
        TestCa {
            pem: certificate.pem(),
            issuer: rcgen::Issuer::new(params, key),
        }
    }

    /// A certificate for `host` (its subject alternative name and common name), and its key.
    pub fn issue(&self, host: &str) -> (rcgen::Certificate, rcgen::KeyPair) {
        let key = rcgen::KeyPair::generate().expect("a key");
        let mut params = rcgen::CertificateParams::new(vec![host.to_owned()]).expect("parameters");
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, host);
        let certificate = params
            .signed_by(&key, &self.issuer)
            .expect("the server certificate");
        (certificate, key)
    }
}

/// `tests/peers/http_plugin.mjs` (TS SDK, Streamable HTTP) with `flags`, killed on drop.
pub struct HttpPlugin {
    child: std::process::Child,
    /// Its MCP endpoint, `http://127.0.0.1:PORT/mcp`.
    pub url: String,
}

impl HttpPlugin {
    pub fn start(flags: &[&str]) -> Self {
        use std::io::BufRead;
        let mut child = std::process::Command::new(node_bin_dir().join("node"))
            .arg(peers_dir().join("npm/http_plugin.mjs"))
            .arg("0")
            .args(flags)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("starting http_plugin.mjs");
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().expect("its stdout"))
            .read_line(&mut line)
            .expect("its first line");
        let port = line
            .trim()
            .strip_prefix("listening ")
            .expect("`listening <port>`");
        let url = format!("http://127.0.0.1:{port}/mcp");
        HttpPlugin { child, url }
    }
}

impl Drop for HttpPlugin {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
