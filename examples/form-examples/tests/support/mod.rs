//! Running the examples' bins under a client, bounded in time.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::Value;

/// The bin of one example, built by cargo for this package's tests.
pub fn bin(name: &str) -> PathBuf {
    let path = match name {
        "deploy-target" => env!("CARGO_BIN_EXE_deploy-target"),
        "clear-cache" => env!("CARGO_BIN_EXE_clear-cache"),
        "release-note" => env!("CARGO_BIN_EXE_release-note"),
        "pick-strategy" => env!("CARGO_BIN_EXE_pick-strategy"),
        "cad-part" => env!("CARGO_BIN_EXE_cad-part"),
        other => panic!("no example bin {other}"),
    };
    PathBuf::from(path)
}

/// What one run gave.
#[derive(Debug)]
pub struct Output {
    pub args: Vec<String>,
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Output {
    /// stdout parsed as JSON.
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|err| panic!("stdout is not JSON ({err}): {self}"))
    }
}

impl std::fmt::Display for Output {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "\n  args: {:?}\n  exit: {}\n  stdout: {}\n  stderr: {}",
            self.args, self.code, self.stdout, self.stderr
        )
    }
}

/// Runs `command` in its own process group, with no stdin and a home where no user config
/// exists; the group is killed when it outlives a minute.
pub fn run(command: &mut Command) -> Output {
    let timeout = Duration::from_secs(60);
    let args: Vec<String> = std::iter::once(command.get_program())
        .chain(command.get_args())
        .map(|arg| arg.to_string_lossy().into_owned())
        .collect();
    command
        .env("HOME", "/nonexistent/formwork-test-home")
        .env("XDG_CONFIG_HOME", "/nonexistent/formwork-test-home")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let started = Instant::now();
    let mut child = command
        .spawn()
        .unwrap_or_else(|err| panic!("cannot start {args:?}: {err}"));
    let group = child.id();
    let stdout = read_all(child.stdout.take());
    let stderr = read_all(child.stderr.take());
    let status = loop {
        if let Some(status) = child.try_wait().expect("waiting for the child") {
            break status;
        }
        if started.elapsed() > timeout {
            kill_group(group);
            let _ = child.wait();
            panic!("{args:?} did not finish within {timeout:?}; it was killed");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let linger = Duration::from_secs(10);
    let (Ok(stdout), Ok(stderr)) = (stdout.recv_timeout(linger), stderr.recv_timeout(linger))
    else {
        kill_group(group);
        panic!("{args:?} exited ({status}) but something it started still held its output");
    };
    Output {
        args,
        code: status.code().unwrap_or(-1),
        stdout,
        stderr,
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

fn kill_group(group: u32) {
    let _ = Command::new("kill")
        .args(["-KILL", "--", &format!("-{group}")])
        .status();
}
