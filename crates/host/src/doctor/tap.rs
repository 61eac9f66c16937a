//! The doctor's tap: a relay between Codex and a stdio plugin that records every line both ways
//! (`formwork doctor-tap --record FILE -- PROGRAM ARGS...`, which the doctor writes into the
//! Codex config it runs with). The doctor reads the record to see what the plugin asked for and
//! what Codex answered it, which Codex's own client never sees when Codex answers by itself.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

/// How much of one line goes into the record; the relay passes every line whole.
const MAX_RECORDED_BYTES: usize = 1024 * 1024;

/// Runs `program` with `args`, relaying stdin to it and its stdout back line by line, and
/// appending each line to `record` as `{"from": "codex" | "plugin", "line": ...}`. Returns the
/// plugin's exit code (its stderr passes through).
pub fn run(record: &Path, program: &str, args: &[String]) -> std::io::Result<i32> {
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(record)?;
    let file = Arc::new(Mutex::new(file));
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()?;
    let (Some(mut to_plugin), Some(from_plugin)) = (child.stdin.take(), child.stdout.take()) else {
        return Err(std::io::Error::other(
            "the plugin's stdio pipes are missing",
        ));
    };
    let inbound = {
        let file = Arc::clone(&file);
        std::thread::spawn(move || {
            relay(std::io::stdin().lock(), &mut to_plugin, &file, "codex");
            // Codex closed its end: so does the plugin's stdin.
            drop(to_plugin);
        })
    };
    relay(
        BufReader::new(from_plugin),
        &mut std::io::stdout().lock(),
        &file,
        "plugin",
    );
    let status = child.wait()?;
    drop(inbound);
    Ok(status.code().unwrap_or(1))
}

/// Copies lines from `from` to `to` until either end closes, recording each.
fn relay(mut from: impl BufRead, to: &mut impl Write, record: &Mutex<std::fs::File>, who: &str) {
    let mut line = Vec::new();
    loop {
        line.clear();
        match from.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        if to.write_all(&line).and_then(|()| to.flush()).is_err() {
            return;
        }
        let text = String::from_utf8_lossy(&line[..line.len().min(MAX_RECORDED_BYTES)]);
        let entry = json!({ "from": who, "line": text.trim_end_matches(['\n', '\r']) });
        if let Ok(mut file) = record.lock() {
            let _ = writeln!(file, "{entry}");
        }
    }
}

/// One message the tap recorded.
#[derive(Debug, Clone, PartialEq)]
pub struct Tapped {
    /// `codex` or `plugin`: who sent it.
    pub from: String,
    /// The JSON-RPC message (`null` when the line was not JSON).
    pub message: Value,
}

/// Reads a tap's record.
pub fn read(record: &Path) -> Vec<Tapped> {
    let mut text = String::new();
    if let Ok(mut file) = std::fs::File::open(record) {
        let _ = file.read_to_string(&mut text);
    }
    text.lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .map(|entry| Tapped {
            from: entry["from"].as_str().unwrap_or_default().to_owned(),
            message: entry["line"]
                .as_str()
                .and_then(|line| serde_json::from_str(line).ok())
                .unwrap_or(Value::Null),
        })
        .collect()
}
