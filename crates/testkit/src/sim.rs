//! The simulated model provider, tests/peers/sim_provider.py: the one hand-written fake.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use serde_json::Value;

use crate::repo_root;

/// The simulated model provider running a script (its rules, see tests/peers/sim_provider.py); it
/// exits with the test, however the test ends (it watches its stdin). Its request log is read back.
pub struct SimProvider {
    child: Child,
    /// Its base URL, `http://127.0.0.1:PORT/v1`.
    pub url: String,
    log: PathBuf,
    _dir: tempfile::TempDir,
}

impl SimProvider {
    pub fn start(script: &Value) -> SimProvider {
        let dir = tempfile::tempdir().expect("a temp dir");
        let script_file = dir.path().join("script.json");
        std::fs::write(&script_file, script.to_string()).expect("writing the script");
        let log = dir.path().join("requests.jsonl");
        let mut child = Command::new("python3")
            .arg(repo_root().join("tests/peers/sim_provider.py"))
            .arg(&script_file)
            .arg(&log)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("starting tests/peers/sim_provider.py");
        let mut url = String::new();
        BufReader::new(child.stdout.take().expect("its stdout"))
            .read_line(&mut url)
            .expect("its URL");
        SimProvider {
            child,
            url: url.trim().to_owned(),
            log,
            _dir: dir,
        }
    }

    /// The requests it received (`{"path", "headers", "body", "received_ns"}`), in order.
    pub fn requests(&self) -> Vec<Value> {
        self.entries()
            .into_iter()
            .filter(|entry| entry.get("body").is_some())
            .collect()
    }

    /// Every line of its log, in order.
    pub fn entries(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .map(|line| serde_json::from_str(line).expect("a log line is JSON"))
            .collect()
    }
}

impl Drop for SimProvider {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
