//! The 2026-07-28 part of `cargo xtask bench`: one form round (`input_required` → answer →
//! retry → complete), from both sides.
//!
//! - **Client side**: formwork against the official Python SDK client (`mcp` 2.3.0, its own round
//!   driver with an auto-accepting callback, `tests/peers/bench_py_client.py`), both driving one
//!   instrument plugin on the TS SDK 2.4.0 (`tests/peers/bench_mrtr_plugin.mjs`), which times each
//!   round itself from handing `input_required` to stdout to the retry's bytes on stdin.
//! - **Server side**: formwork-sdk (`crates/sdk/examples/bench_plugin.rs`) against the Python SDK
//!   server (`tests/peers/bench_py_server.py`, a resolver with `Elicit`), both serving the same form
//!   to one client, [`drive`] below, a raw JSON-RPC client in Rust that times a whole round.
//!
//! Each side alternates its two contenders over several rounds of fresh processes and pools the
//! samples; the targets are medians at most half the Python SDK's.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

use super::{micros, percentile, ratio, shell_quote};
use crate::{cargo, run_command, target_dir};

/// formwork's median over the Python SDK client's, and formwork-sdk's over the Python SDK
/// server's: each must stay at or below this.
const TARGET_VS_PYTHON: f64 = 0.5;

/// Rounds per call of the instrument's tool: every client allows ten, and the first of each
/// call (cold paths) is not counted.
const ROUNDS_PER_CALL: usize = 9;

/// The fixtures of this part, copied with the rest of the bench's by its setup.
pub const FIXTURES: [&str; 3] = [INSTRUMENT, PY_CLIENT, PY_SERVER];
const INSTRUMENT: &str = "bench_mrtr_plugin.mjs";
const PY_CLIENT: &str = "bench_py_client.py";
const PY_SERVER: &str = "bench_py_server.py";

/// The answer every bench form gets: accept with the form's defaults.
const ANSWER: &str = r#"{"action":"accept","content":{"strategy":"safe","dry_run":true,"retries":3,"target":"staging"}}"#;

/// How the 2026-07-28 part runs.
pub struct Options {
    /// Rounds of each side (fresh processes each); 0 skips the part.
    pub rounds: usize,
    /// Calls per round: formwork processes, Python client calls, and server rounds / 10.
    pub calls: usize,
}

/// What the part needs from the rest of the bench.
pub struct Tools<'a> {
    pub root: &'a Path,
    pub formwork: &'a Path,
    /// The instrument's command without its file (taskset, node, node's flags).
    pub node_command: &'a [String],
    pub npm_dir: &'a Path,
}

pub fn run(tools: &Tools<'_>, options: &Options) -> Result<()> {
    let target = target_dir(tools.root);
    run_command(
        cargo()
            .args([
                "build",
                "--release",
                "--quiet",
                "--package",
                "formwork-sdk",
                "--example",
                "bench_plugin",
            ])
            .current_dir(tools.root),
    )
    .context("building formwork-sdk's bench plugin")?;
    let python = target.join("peers/venv/bin/python");
    let mut instrument = tools.node_command.to_vec();
    instrument.push(display(&tools.npm_dir.join(INSTRUMENT)));

    let mut client_side: [Vec<u64>; 2] = Default::default();
    let mut server_side: [Vec<u64>; 2] = Default::default();
    let sdk_plugin = vec![display(&target.join("release/examples/bench_plugin"))];
    let py_server = vec![display(&python), display(&tools.npm_dir.join(PY_SERVER))];
    for round in 0..options.rounds {
        for offset in 0..2 {
            match (round + offset) % 2 {
                0 => {
                    for _ in 0..options.calls {
                        client_side[0].extend(formwork_call(tools.formwork, &instrument)?);
                    }
                }
                _ => client_side[1].extend(python_client(&python, tools, &instrument, options)?),
            }
        }
        for offset in 0..2 {
            let idx = (round + offset) % 2;
            let server = if idx == 0 { &sdk_plugin } else { &py_server };
            server_side[idx].extend(drive(server, options.calls * 10)?);
        }
        eprintln!(
            "xtask: 2026-07-28 round {}/{} done",
            round + 1,
            options.rounds
        );
    }
    println!();
    println!(
        "2026-07-28 form round, {} rounds of fresh processes per contender",
        options.rounds
    );
    report(
        "client side (timed in the TS SDK 2.4 instrument plugin)",
        ["formwork", "Python SDK client"],
        client_side,
        "formwork median / Python SDK client median",
    );
    report(
        "server side (timed in one raw client, a whole round: two requests)",
        ["formwork-sdk", "Python SDK server"],
        server_side,
        "formwork-sdk median / Python SDK server median",
    );
    Ok(())
}

fn report(title: &str, names: [&str; 2], samples: [Vec<u64>; 2], what: &str) {
    println!("{title}");
    println!(
        "{:<20} {:>7} {:>10} {:>10}",
        "who", "samples", "median", "p99"
    );
    let mut medians = [0; 2];
    for ((slot, name), mut samples) in medians.iter_mut().zip(names).zip(samples) {
        samples.sort_unstable();
        *slot = percentile(&samples, 0.5);
        println!(
            "{name:<20} {:>7} {:>10} {:>10}",
            samples.len(),
            micros(*slot),
            micros(percentile(&samples, 0.99))
        );
    }
    let value = ratio(medians[0], medians[1]);
    let verdict = if value <= TARGET_VS_PYTHON {
        "PASS"
    } else {
        "MISS"
    };
    println!("{what:<46} {value:>6.2}x  target <= {TARGET_VS_PYTHON:.1}x  {verdict}");
}

/// One `formwork call` of the instrument's tool: its samples.
fn formwork_call(formwork: &Path, instrument: &[String]) -> Result<Vec<u64>> {
    let plugin: Vec<String> = instrument.iter().map(|word| shell_quote(word)).collect();
    let arguments = json!({ "rounds": ROUNDS_PER_CALL }).to_string();
    let output = Command::new(formwork)
        .args(["call", "--plugin", &plugin.join(" "), "bench_rounds"])
        .args(["--args", &arguments, "--accept-defaults"])
        .output()
        .context("starting formwork")?;
    if !output.status.success() {
        bail!(
            "formwork failed: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    let result: Value = serde_json::from_slice(&output.stdout).context("formwork's result")?;
    let text = result
        .pointer("/content/0/text")
        .and_then(Value::as_str)
        .context("no text in formwork's result")?;
    samples(text)
}

/// One Python SDK client process making `options.calls` calls: their samples.
fn python_client(
    python: &Path,
    tools: &Tools<'_>,
    instrument: &[String],
    options: &Options,
) -> Result<Vec<u64>> {
    let output = Command::new(python)
        .arg(tools.npm_dir.join(PY_CLIENT))
        .arg(options.calls.to_string())
        .arg(ROUNDS_PER_CALL.to_string())
        .args(instrument)
        .output()
        .context("starting the Python SDK client")?;
    if !output.status.success() {
        bail!(
            "the Python SDK client failed: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    samples(String::from_utf8_lossy(&output.stdout).trim())
}

fn samples(text: &str) -> Result<Vec<u64>> {
    let parsed: Value = serde_json::from_str(text).with_context(|| format!("parsing {text}"))?;
    parsed
        .get("ns")
        .and_then(Value::as_array)
        .with_context(|| format!("no `ns` in {text}"))?
        .iter()
        .map(|ns| ns.as_u64().with_context(|| format!("not a duration: {ns}")))
        .collect()
}

/// Serves `rounds` form rounds of `server`'s `bench_round` after as many warm-up rounds, over
/// stdio, as a raw 2026-07-28 client: the time of each whole round (the call, its
/// `input_required`, the retry with the answer, the complete result), in nanoseconds.
fn drive(server: &[String], rounds: usize) -> Result<Vec<u64>> {
    let (program, args) = server.split_first().context("no server command")?;
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .with_context(|| format!("spawning {}", server.join(" ")))?;
    let (Some(mut stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        bail!("the server's stdio pipes are missing");
    };
    let mut stdout = BufReader::new(stdout);
    let envelope = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
        "io.modelcontextprotocol/clientInfo": {"name": "bench-driver", "version": "0.1.0"},
    });
    let mut next_id = 0_u64;
    let mut request = |stdin: &mut dyn Write, method: &str, params: Value| -> Result<u64> {
        let id = next_id;
        next_id += 1;
        let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        writeln!(stdin, "{message}")?;
        Ok(id)
    };
    let discover = request(&mut stdin, "server/discover", json!({"_meta": envelope}))?;
    let answer = response(&mut stdout, discover)?;
    if answer.get("supportedVersions").is_none() {
        bail!("{} does not speak 2026-07-28: {answer}", server.join(" "));
    }
    let call = json!({"name": "bench_round", "arguments": {}, "_meta": envelope});
    let accept: Value = serde_json::from_str(ANSWER)?;
    let mut samples = Vec::with_capacity(rounds);
    for round in 0..rounds * 2 {
        let started = Instant::now();
        let id = request(&mut stdin, "tools/call", call.clone())?;
        let asked = response(&mut stdout, id)?;
        let (Some(requests), Some(state)) = (
            asked.get("inputRequests").and_then(Value::as_object),
            asked.get("requestState"),
        ) else {
            bail!("expected input_required, got {asked}");
        };
        let mut retry = call.clone();
        let responses: serde_json::Map<String, Value> = requests
            .keys()
            .map(|key| (key.clone(), accept.clone()))
            .collect();
        retry["inputResponses"] = Value::Object(responses);
        retry["requestState"] = state.clone();
        let id = request(&mut stdin, "tools/call", retry)?;
        let done = response(&mut stdout, id)?;
        let elapsed = started.elapsed();
        let text = done.pointer("/content/0/text").and_then(Value::as_str);
        if !text.is_some_and(|text| text.starts_with("accept")) {
            bail!("the round did not end with the answer: {done}");
        }
        if round >= rounds {
            samples.push(u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX));
        }
    }
    drop(stdin);
    let _ = child.wait();
    Ok(samples)
}

/// The result of request `id`, skipping notifications.
fn response(stdout: &mut impl BufRead, id: u64) -> Result<Value> {
    let mut line = String::new();
    loop {
        line.clear();
        if stdout.read_line(&mut line)? == 0 {
            bail!("the server closed its stdout");
        }
        let message: Value =
            serde_json::from_str(&line).with_context(|| format!("parsing {line}"))?;
        if message.get("id") != Some(&Value::from(id)) {
            continue;
        }
        return match (message.get("result"), message.get("error")) {
            (Some(result), _) => Ok(result.clone()),
            (None, error) => bail!("request {id} failed: {}", error.unwrap_or(&Value::Null)),
        };
    }
}

fn display(path: &Path) -> String {
    PathBuf::from(path).display().to_string()
}
