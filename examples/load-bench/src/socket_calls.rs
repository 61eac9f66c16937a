//! The host's share of a page's tool call, for the MCP Apps part of `cargo xtask bench`
//! (`tests/browser/bench.mjs`): the page's `call_tool` command made by a plain WebSocket client
//! on a session's socket of `formwork serve`, with no browser in between. Beside the browser's own
//! call and the direct call it splits the page's time into the browser's part and the host's.
//!
//! usage: load-bench --socket-calls <workbench origin> <token> <session> <server> <tool> <arguments JSON> <count>
//!
//! It prints `{"ms":[...]}`: each call's duration in milliseconds, from sending the command to
//! reading its `tool_call_finished`, one call after the other, as the page's bench times them.

use std::time::Instant;

use anyhow::{Context, bail};
use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;

/// What the socket's calls are made against.
pub struct Target<'a> {
    /// `http://127.0.0.1:PORT`, as the page's origin.
    pub origin: &'a str,
    pub token: &'a str,
    pub session: &'a str,
}

pub async fn calls(
    target: &Target<'_>,
    server: &str,
    tool: &str,
    arguments: &str,
    count: usize,
) -> anyhow::Result<()> {
    let arguments: Value =
        serde_json::from_str(arguments).with_context(|| format!("arguments {arguments}"))?;
    let host = target
        .origin
        .strip_prefix("http://")
        .with_context(|| format!("origin {} is not http://HOST:PORT", target.origin))?;
    let url = format!("ws://{host}/api/sessions/{}/socket", target.session);
    let mut request = url.into_client_request()?;
    let headers = request.headers_mut();
    // What a browser sends: the lock wants the origin, and the token as the second subprotocol.
    headers.insert("Origin", HeaderValue::from_str(target.origin)?);
    headers.insert(
        "Sec-WebSocket-Protocol",
        HeaderValue::from_str(&format!("formwork, formwork.token.{}", target.token))?,
    );
    let (mut socket, _) = tokio_tungstenite::connect_async(request)
        .await
        .context("opening the session's socket")?;
    // Small messages both ways, as the page's: sent at once, not held for more.
    if let tokio_tungstenite::MaybeTlsStream::Plain(stream) = socket.get_ref() {
        stream.set_nodelay(true)?;
    }
    read_until(&mut socket, "snapshot_done").await?;
    let command = json!({
        "type": "call_tool",
        "server": server,
        "tool": tool,
        "arguments": arguments,
    })
    .to_string();
    let mut ms = Vec::with_capacity(count);
    for i in 0..count {
        let started = Instant::now();
        socket.send(Message::text(command.clone())).await?;
        let finished = read_until(&mut socket, "tool_call_finished").await?;
        ms.push(started.elapsed().as_secs_f64() * 1e3);
        if finished.get("error").is_some_and(|error| !error.is_null()) {
            bail!("call {}: {finished}", i + 1);
        }
    }
    socket.close(None).await.ok();
    println!("{}", json!({ "ms": ms }));
    Ok(())
}

/// Reads the socket's messages up to the first of type `wanted`, which it returns; a refused
/// command ends the run.
async fn read_until<S>(socket: &mut S, wanted: &str) -> anyhow::Result<Value>
where
    S: StreamExt<Item = Result<Message, tokio_tungstenite::tungstenite::Error>> + Unpin,
{
    while let Some(message) = socket.next().await {
        let Message::Text(text) = message? else {
            continue;
        };
        let message: Value = serde_json::from_str(text.as_str())?;
        match message.get("type").and_then(Value::as_str) {
            Some(kind) if kind == wanted => return Ok(message),
            Some("command_error") => bail!("the host refused the command: {message}"),
            _ => {}
        }
    }
    bail!("the socket closed before {wanted}")
}
