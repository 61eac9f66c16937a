//! An app's messages relayed over the session socket (`app_rpc`, answered by `app_reply`), with
//! the probe app of `tests/peers/app_probe_plugin.mjs` (the TypeScript SDK) as the app's plugin.

mod common;

use common::{Server, peers_dir};
use serde_json::{Value, json};

fn probe_server() -> String {
    let peers = peers_dir();
    format!(
        "[mcp_servers.probe]\ncommand = {node:?}\nargs = [{script:?}]\ndefault_tools_approval_mode = \"approve\"\n",
        node = peers
            .join("npm/node_modules/.bin/node")
            .display()
            .to_string(),
        script = peers.join("npm/app_probe_plugin.mjs").display().to_string(),
    )
}

fn echo(doc: &str, relay: u64) -> Value {
    json!({
        "type": "app_rpc",
        "doc": doc,
        "relay": relay,
        "message": {
            "jsonrpc": "2.0",
            "id": "a1",
            "method": "tools/call",
            "params": {"name": "app-echo", "arguments": {"word": "hi"}},
        },
        "context": null,
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_app_message_on_the_socket_is_answered_there_for_its_own_session_only() {
    let server = Server::start(&probe_server(), None).await;
    let mut socket = server.socket(&server.session).await;
    socket.snapshot().await;
    socket
        .send(
            json!({"type": "call_tool", "server": "probe", "tool": "open-probe", "arguments": {}}),
        )
        .await;
    let declared = socket.until("tool_call_app").await;
    let call_id = declared["call_id"].as_str().expect("a call id").to_owned();
    socket.until("tool_call_finished").await;
    let opened = server
        .post(&format!("/api/sessions/{}/apps/{call_id}", server.session))
        .await;
    assert_eq!(opened.status, 200);
    let doc = opened.json()["doc"]
        .as_str()
        .expect("a document")
        .to_owned();

    socket.send(echo(&doc, 7)).await;
    assert_eq!(
        socket.until("app_reply").await,
        json!({
            "type": "app_reply",
            "relay": 7,
            "response": {
                "jsonrpc": "2.0",
                "id": "a1",
                "result": {
                    "content": [{"type": "text", "text": "{\"word\":\"hi\"}"}],
                    "structuredContent": {"echo": {"word": "hi"}},
                },
            },
            "open_link": null,
        })
    );

    // The socket of another session cannot speak for this session's app.
    let other = server.post("/api/sessions").await.json()["id"]
        .as_str()
        .expect("a session")
        .to_owned();
    let mut intruder = server.socket(&other).await;
    intruder.snapshot().await;
    intruder.send(echo(&doc, 8)).await;
    assert_eq!(
        intruder.until("app_reply").await,
        json!({"type": "app_reply", "relay": 8, "error": "no such app document"})
    );

    socket.send(json!({"type": "app_rpc", "doc": doc})).await;
    let refused = socket.until("command_error").await;
    assert_eq!(
        (refused["error"].as_str(), refused["message"].as_str()),
        (
            Some("bad_command"),
            Some("not an app message: missing field `relay`")
        )
    );
}
