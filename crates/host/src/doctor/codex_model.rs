//! The doctor's model under the Codex runtime: a Responses endpoint on 127.0.0.1 that asks Codex
//! to call exactly the tool the person named, then ends the turn. It lets the doctor run the
//! call inside a real Codex turn (where Codex's approvals and routing apply) without a real
//! model; it is the doctor's instrument, never a conversation's model.

use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// The largest request body the endpoint reads (Codex sends the whole conversation).
const MAX_BODY: usize = 16 * 1024 * 1024;

/// A running endpoint; dropping it stops it.
pub(crate) struct DoctorModel {
    /// Its base URL, `http://127.0.0.1:PORT/v1`.
    pub url: String,
    task: JoinHandle<()>,
}

impl Drop for DoctorModel {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl DoctorModel {
    /// Listens for Codex's requests: the first asks for `tool` of `namespace` with `arguments`,
    /// later ones (which carry its output) end the turn.
    pub(crate) async fn start(
        namespace: String,
        tool: String,
        arguments: Value,
    ) -> std::io::Result<DoctorModel> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let url = format!("http://{}/v1", listener.local_addr()?);
        let call = json!({
            "type": "function_call",
            "id": "fc_doctor",
            "call_id": "call_doctor",
            "namespace": namespace,
            "name": tool,
            "arguments": arguments.to_string(),
        });
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let call = call.clone();
                tokio::spawn(async move {
                    let _ =
                        tokio::time::timeout(Duration::from_secs(60), serve(stream, call)).await;
                });
            }
        });
        Ok(DoctorModel { url, task })
    }
}

async fn serve(mut stream: TcpStream, call: Value) -> std::io::Result<()> {
    let mut buffer = Vec::new();
    let head_end = loop {
        let mut chunk = [0_u8; 8192];
        let read = stream.read(&mut chunk).await?;
        if read == 0 {
            return Ok(());
        }
        buffer.extend_from_slice(&chunk[..read]);
        if let Some(at) = buffer.windows(4).position(|window| window == b"\r\n\r\n") {
            break at + 4;
        }
        if buffer.len() > MAX_BODY {
            return Ok(());
        }
    };
    let head = String::from_utf8_lossy(&buffer[..head_end]).to_lowercase();
    let length = head
        .lines()
        .find_map(|line| line.strip_prefix("content-length:"))
        .and_then(|value| value.trim().parse::<usize>().ok())
        .unwrap_or(0)
        .min(MAX_BODY);
    while buffer.len() < head_end + length {
        let mut chunk = vec![0_u8; 65536];
        let read = stream.read(&mut chunk).await?;
        if read == 0 {
            break;
        }
        buffer.extend_from_slice(&chunk[..read]);
    }
    let is_responses = head
        .lines()
        .next()
        .is_some_and(|line| line.starts_with("post ") && line.contains("/responses"));
    if !is_responses {
        return stream
            .write_all(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
            .await;
    }
    let body: Value = serde_json::from_slice(&buffer[head_end..]).unwrap_or(Value::Null);
    let answered = body["input"].as_array().is_some_and(|items| {
        items
            .iter()
            .any(|item| item["type"] == "function_call_output")
    });
    let item = if answered {
        json!({"type": "message", "role": "assistant", "id": "msg_doctor",
               "content": [{"type": "output_text", "text": "done"}]})
    } else {
        call
    };
    let usage = json!({"input_tokens": 1, "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 1, "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 2});
    let events = [
        (
            "response.created",
            json!({"type": "response.created", "response": {"id": "resp_doctor"}}),
        ),
        (
            "response.output_item.done",
            json!({"type": "response.output_item.done", "output_index": 0, "item": item}),
        ),
        (
            "response.completed",
            json!({"type": "response.completed", "response": {"id": "resp_doctor", "usage": usage}}),
        ),
    ];
    let sse: String = events
        .iter()
        .map(|(name, data)| format!("event: {name}\ndata: {data}\n\n"))
        .collect();
    let response = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{sse}",
        sse.len()
    );
    stream.write_all(response.as_bytes()).await
}
