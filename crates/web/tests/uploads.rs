//! Files the person adds to a resource picker (`features.openai_elicitation`): stored beside the
//! database, private, and answered to the TS SDK plugin as the `file://` URI of the copy; a
//! local file the session did not add is refused.
#![allow(clippy::unwrap_used)]

mod common;

use std::os::unix::fs::PermissionsExt;

use common::{Server, plugin_result, ts_server};
use formwork_host::store::Store;
use serde_json::{Value, json};

fn config() -> String {
    format!(
        "[features]\nopenai_elicitation = true\n{}",
        ts_server("ts", "approve")
    )
}

/// `openai/elicitation/create` with one picker that takes `.stl` files beside two resources.
fn ask_for_a_part() -> Value {
    json!({"type": "call_tool", "server": "ts", "tool": "raw_request", "arguments": {
        "method": "openai/elicitation/create",
        "params": {"mode": "form", "message": "Choose a CAD part", "requestedSchema": {
            "type": "object", "required": ["part"], "properties": {"part": {
                "type": "string", "format": "uri", "title": "Part",
                "x-openai-input": {"type": "resource",
                    "options": [{"uri": "cad://parts/washer", "name": "washer"}],
                    "userOptions": {"kind": "file", "accept": [".stl"]}}}}}}
    }})
}

fn render(form_id: &Value, answers: Value) -> Value {
    json!({"type": "answer_form", "form_id": form_id, "answer": {"action": "render", "answers": {"answers": answers}}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_added_file_is_copied_and_answered_by_its_uri() {
    let data = tempfile::tempdir().unwrap();
    let store = Store::open(data.path().join("formwork.db")).unwrap();
    let server = Server::start_with_store(&config(), store).await;
    let mut socket = server.socket(&server.session).await;
    socket.send(ask_for_a_part()).await;
    let form = socket.until("form_requested").await;
    let question = &form["body"]["render"]["questions"][0];
    assert_eq!(question["input"], "resource");
    assert_eq!(
        question["resource"],
        json!({"uploads": {"accept": [".stl"]}})
    );
    let form_id = form["form_id"].clone();

    // The person adds a file: the host keeps a private copy in the session's uploads.
    let added = server
        .post_body(
            &format!(
                "/api/sessions/{}/uploads?name=my%20bolt.stl",
                server.session
            ),
            b"solid bolt",
        )
        .await;
    assert_eq!(added.status, 201, "{}", added.body);
    let added = added.json();
    let dir = data
        .path()
        .canonicalize()
        .unwrap()
        .join("uploads")
        .join(&server.session);
    let copy = dir.join("1-my_bolt.stl");
    assert_eq!(
        added,
        json!({"uri": url::Url::from_file_path(&copy).unwrap().to_string(), "name": "1-my_bolt.stl"})
    );
    assert_eq!(std::fs::read(&copy).unwrap(), b"solid bolt");
    assert_eq!(
        std::fs::metadata(&copy).unwrap().permissions().mode() & 0o777,
        0o600
    );
    assert_eq!(
        std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777,
        0o700
    );

    // A local file the session did not add is refused; the card stays open.
    socket
        .send(render(
            &form_id,
            json!({"part": {"answers": ["file:///tmp/elsewhere/bolt.stl"]}}),
        ))
        .await;
    let error = socket.until("command_error").await;
    assert_eq!(error["error"], "invalid");
    assert_eq!(
        error["errors"],
        json!([{"field": "part", "message": "names a local file that was not added in this session"}])
    );

    let uri = added["uri"].clone();
    socket
        .send(render(&form_id, json!({"part": {"answers": [uri]}})))
        .await;
    let finished = socket.until("tool_call_finished").await;
    assert_eq!(
        plugin_result(&finished),
        json!({"action": "accept", "content": {"part": uri}})
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_store_there_is_nowhere_to_keep_a_file() {
    let server = Server::start(&config(), None).await;
    let refused = server
        .post_body(
            &format!("/api/sessions/{}/uploads?name=a.stl", server.session),
            b"x",
        )
        .await;
    assert_eq!(refused.status, 409);
    assert_eq!(
        refused.body,
        "formwork: this host keeps no files (it has no store on disk)\n"
    );
    let unknown = server
        .post_body("/api/sessions/nope/uploads?name=a.stl", b"x")
        .await;
    assert_eq!(unknown.status, 404);
}
