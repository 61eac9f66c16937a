//! The floor of the benchmark: the least a client can do per elicitation round trip.
//!
//! A raw newline JSON-RPC client with no runtime and no schema work: it spawns the plugin, does the handshake,
//! calls the tool, and answers each `elicitation/create` line with one fixed pre-serialised result in a single
//! write. Only the request id is picked out of an elicitation line; no other line is on the hot path.
//!
//! Over plain Streamable HTTP ([`call_bench_http`]), the same with blocking sockets and no HTTP library: the
//! tool call's event stream on one connection, each answer one write on another, its `202` read before the next
//! event.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
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

    let initialize = initialize_request();
    writeln!(stdin, "{initialize}")?;
    let response = read_message(&mut stdout, &mut line)?;
    if response.get("result").is_none() {
        bail!("initialize failed: {response}");
    }
    writeln!(
        stdin,
        r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#
    )?;
    let call = bench_call(tool_args);
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

/// Runs the `bench` tool of the plain-HTTP plugin at `url` (`http://HOST:PORT/PATH`) with `tool_args` and
/// returns its `CallToolResult`.
pub fn call_bench_http(url: &str, tool_args: &Value) -> Result<Value> {
    let rest = url
        .strip_prefix("http://")
        .with_context(|| format!("the HTTP floor speaks plain http only, not {url}"))?;
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let path = if path.is_empty() { "/" } else { path };
    let mut control = Http::connect(authority, path)?;

    let initialize = initialize_request();
    control.post(&initialize.to_string(), None)?;
    let head = control.head()?;
    let session = head
        .session
        .clone()
        .context("initialize was answered without an Mcp-Session-Id")?;
    let body = control.body(&head)?;
    if !String::from_utf8_lossy(&body).contains(r#""result""#) {
        bail!("initialize failed: {}", String::from_utf8_lossy(&body));
    }
    control.post(
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        Some(&session),
    )?;
    let head = control.head()?;
    control.body(&head)?;

    let mut stream = Http::connect(authority, path)?;
    let call = bench_call(tool_args);
    stream.post(&call.to_string(), Some(&session))?;
    let head = stream.head()?;
    if !head.chunked {
        bail!("the tool call was not answered with a chunked event stream");
    }
    let mut events = Vec::new();
    loop {
        let Some(end) = find(&events, b"\n\n") else {
            if !stream.chunk(&mut events)? {
                bail!("the tool call's event stream ended before its result");
            }
            continue;
        };
        let event: Vec<u8> = events.drain(..end + 2).collect();
        let event = String::from_utf8_lossy(&event);
        let data = event
            .lines()
            .find_map(|line| line.strip_prefix("data:"))
            .unwrap_or_default();
        if data.trim().is_empty() {
            continue; // a priming event or a comment
        }
        if data.contains(ELICITATION) {
            let id = request_id(data).with_context(|| format!("no id in {data}"))?;
            control.post(
                &format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{ANSWER}}}"),
                Some(&session),
            )?;
            let head = control.head()?;
            control.body(&head)?;
            continue;
        }
        let message: Value =
            serde_json::from_str(data.trim()).with_context(|| format!("parsing {data}"))?;
        if message.get("id") != Some(&Value::from(2)) {
            continue;
        }
        return match (message.get("result"), message.get("error")) {
            (Some(result), _) => Ok(result.clone()),
            (None, Some(error)) => bail!("tools/call failed: {error}"),
            (None, None) => bail!("tools/call answered with neither result nor error: {message}"),
        };
    }
}

/// One keep-alive HTTP/1.1 connection of the floor, read through a buffer.
struct Http {
    socket: BufReader<TcpStream>,
    authority: String,
    path: String,
}

struct Head {
    session: Option<String>,
    length: Option<usize>,
    chunked: bool,
}

impl Http {
    fn connect(authority: &str, path: &str) -> Result<Http> {
        let socket =
            TcpStream::connect(authority).with_context(|| format!("connecting to {authority}"))?;
        socket.set_nodelay(true)?;
        Ok(Http {
            socket: BufReader::new(socket),
            authority: authority.to_owned(),
            path: path.to_owned(),
        })
    }

    /// One write: the request head and `body`.
    fn post(&mut self, body: &str, session: Option<&str>) -> Result<()> {
        let mut request = format!(
            "POST {} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n",
            self.path,
            self.authority,
            body.len()
        );
        if let Some(session) = session {
            request.push_str(&format!(
                "Mcp-Session-Id: {session}\r\nMcp-Protocol-Version: 2025-11-25\r\n"
            ));
        }
        request.push_str("\r\n");
        request.push_str(body);
        self.socket.get_mut().write_all(request.as_bytes())?;
        Ok(())
    }

    fn line(&mut self) -> Result<String> {
        let mut line = String::new();
        if self.socket.read_line(&mut line)? == 0 {
            bail!("the plugin closed the connection");
        }
        Ok(line.trim_end().to_owned())
    }

    fn head(&mut self) -> Result<Head> {
        let status_line = self.line()?;
        let status: u16 = status_line
            .split(' ')
            .nth(1)
            .and_then(|code| code.parse().ok())
            .with_context(|| format!("not an HTTP status line: {status_line}"))?;
        let mut head = Head {
            session: None,
            length: None,
            chunked: false,
        };
        loop {
            let line = self.line()?;
            if line.is_empty() {
                break;
            }
            let Some((name, value)) = line.split_once(':') else {
                bail!("not a header line: {line}");
            };
            let value = value.trim();
            match name.to_ascii_lowercase().as_str() {
                "mcp-session-id" => head.session = Some(value.to_owned()),
                "content-length" => head.length = value.parse().ok(),
                "transfer-encoding" => head.chunked = value.eq_ignore_ascii_case("chunked"),
                _ => {}
            }
        }
        if !(200..300).contains(&status) {
            bail!("the plugin answered HTTP {status}");
        }
        Ok(head)
    }

    /// The whole body of a response whose `head` was read.
    fn body(&mut self, head: &Head) -> Result<Vec<u8>> {
        let mut body = Vec::new();
        if head.chunked {
            while self.chunk(&mut body)? {}
        } else if let Some(length) = head.length {
            body.resize(length, 0);
            self.socket.read_exact(&mut body)?;
        }
        Ok(body)
    }

    /// Appends the next chunk of a chunked body to `into`; false at the last (empty) chunk.
    fn chunk(&mut self, into: &mut Vec<u8>) -> Result<bool> {
        let size = self.line()?;
        let size = usize::from_str_radix(size.split(';').next().unwrap_or_default(), 16)
            .with_context(|| format!("not a chunk size: {size}"))?;
        let start = into.len();
        into.resize(start + size, 0);
        self.socket.read_exact(&mut into[start..])?;
        self.line()?;
        Ok(size > 0)
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}

/// The floor's `initialize` (id 1), on either transport.
fn initialize_request() -> Value {
    serde_json::json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": { "elicitation": { "form": {} } },
            "clientInfo": { "name": "bench-floor", "version": "0.1.0" },
        },
    })
}

/// The `tools/call` of the `bench` tool (id 2), on either transport.
fn bench_call(tool_args: &Value) -> Value {
    serde_json::json!({
        "jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": { "name": "bench", "arguments": tool_args },
    })
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
