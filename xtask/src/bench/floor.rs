//! The floor of the benchmark: the least a client can do per elicitation round trip.
//!
//! A raw newline JSON-RPC client with no runtime and no schema work: it spawns the plugin, does the handshake,
//! calls the tool, and answers each `elicitation/create` line with one fixed pre-serialised result in a single
//! write. Only the request id is picked out of an elicitation line; no other line is on the hot path.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};
use serde_json::Value;

/// The answer `bench_plugin.mjs` expects: accept with the form's defaults.
const ANSWER: &str = r#"{"action":"accept","content":{"strategy":"safe","dry_run":true,"retries":3,"target":"staging"}}"#;

const ELICITATION: &str = r#""method":"elicitation/create""#;

/// Runs the plugin's `bench` tool with `tool_args` and returns its `CallToolResult`.
pub fn call_bench(plugin_command: &[String], tool_args: &Value) -> Result<Value> {
    let (program, args) = plugin_command.split_first().context("no plugin command")?;
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .with_context(|| format!("spawning {}", plugin_command.join(" ")))?;
    let (Some(mut stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        bail!("the plugin's stdio pipes are missing");
    };
    let mut stdout = BufReader::new(stdout);
    let mut line = String::new();

    let initialize = serde_json::json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": { "elicitation": { "form": {} } },
            "clientInfo": { "name": "bench-floor", "version": "0.1.0" },
        },
    });
    writeln!(stdin, "{initialize}")?;
    let response = read_message(&mut stdout, &mut line)?;
    if response.get("result").is_none() {
        bail!("initialize failed: {response}");
    }
    writeln!(
        stdin,
        r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#
    )?;
    let call = serde_json::json!({
        "jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": { "name": "bench", "arguments": tool_args },
    });
    writeln!(stdin, "{call}")?;

    let result = loop {
        line.clear();
        if stdout.read_line(&mut line)? == 0 {
            bail!("the plugin closed its stdout before the tool result");
        }
        if line.contains(ELICITATION) {
            let id = request_id(&line).with_context(|| format!("no id in {line}"))?;
            // One write per answer: ChildStdin is unbuffered, so this is one write(2).
            stdin.write_all(
                format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{ANSWER}}}\n").as_bytes(),
            )?;
            continue;
        }
        let message: Value =
            serde_json::from_str(&line).with_context(|| format!("parsing {line}"))?;
        if message.get("id") != Some(&Value::from(2)) {
            continue; // a notification (log, progress): nothing to answer
        }
        match (message.get("result"), message.get("error")) {
            (Some(result), _) => break result.clone(),
            (None, Some(error)) => bail!("tools/call failed: {error}"),
            (None, None) => bail!("tools/call answered with neither result nor error: {message}"),
        }
    };
    drop(stdin);
    let status = child.wait().context("waiting for the plugin")?;
    if !status.success() {
        bail!("the plugin exited with {status}");
    }
    Ok(result)
}

fn read_message(stdout: &mut impl BufRead, line: &mut String) -> Result<Value> {
    line.clear();
    if stdout.read_line(line)? == 0 {
        bail!("the plugin closed its stdout");
    }
    serde_json::from_str(line).with_context(|| format!("parsing {line}"))
}

/// The raw JSON of the top-level `"id"` of a request line, echoed back verbatim. The TypeScript SDK writes `id`
/// last, and the benchmark's params hold no `"id"` key, so the last occurrence is the top-level one.
fn request_id(line: &str) -> Option<&str> {
    let start = line.rfind(r#""id":"#)? + r#""id":"#.len();
    let rest = &line[start..];
    let end = rest.find([',', '}'])?;
    Some(rest[..end].trim()).filter(|id| !id.is_empty())
}

#[cfg(test)]
mod tests {
    use super::request_id;

    #[test]
    fn request_id_takes_the_raw_top_level_id() {
        let line =
            r#"{"method":"elicitation/create","params":{"message":"m"},"jsonrpc":"2.0","id":17}"#;
        assert_eq!(request_id(line), Some("17"));
        assert_eq!(
            request_id(r#"{"jsonrpc":"2.0","id":"a-1","method":"x"}"#),
            Some(r#""a-1""#)
        );
        assert_eq!(request_id(r#"{"jsonrpc":"2.0","method":"x"}"#), None);
    }
}
