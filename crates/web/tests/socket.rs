//! The session socket end to end: the page's commands against a real plugin (the TypeScript
//! SDK fixture), and what the plugin's SDK received back.

mod common;

use common::{Server, plugin_result, ts_server};
use serde_json::{Value, json};

fn call(tool: &str) -> Value {
    json!({"type": "call_tool", "server": "ts", "tool": tool, "arguments": {}})
}

fn render(form_id: &Value, answers: Value) -> Value {
    json!({"type": "answer_form", "form_id": form_id, "answer": {"action": "render", "answers": {"answers": answers}}})
}

fn action(form_id: &Value, action: &str) -> Value {
    json!({"type": "answer_form", "form_id": form_id, "answer": {"action": action}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_form_is_answered_after_a_refused_answer_and_the_plugin_gets_the_content() {
    let server = Server::ts().await;
    let mut socket = server.socket(&server.session).await;
    assert_eq!(socket.snapshot().await, Vec::<Value>::new());

    socket.send(call("ask_form")).await;
    let started = socket.until("tool_call_started").await;
    assert_eq!(
        (started["server"].as_str(), started["tool"].as_str()),
        (Some("ts"), Some("ask_form"))
    );
    let form = socket.until("form_requested").await;
    assert_eq!(form["plugin"], "ts");
    assert_eq!(form["waiting"], false);
    assert_eq!(form["call_id"], started["call_id"]);
    assert_eq!(form["body"]["mode"], "form");
    let questions = form["body"]["render"]["questions"]
        .as_array()
        .expect("questions");
    assert_eq!(questions.len(), 10);
    let form_id = form["form_id"].clone();

    // An answer that does not validate: the host's messages come back, and the card stays open.
    socket
        .send(render(&form_id, json!({"name": {"answers": ["Grace"]}, "email": {"answers": ["grace@example.com"]}, "age": {"answers": ["200"]}})))
        .await;
    let error = socket.until("command_error").await;
    assert_eq!(error["error"], "invalid");
    assert_eq!(
        error["errors"],
        json!([{"field": "age", "message": "must be at most 150"}]),
        "{error}"
    );
    assert_eq!(error["command"]["form_id"], form_id);

    socket
        .send(render(&form_id, json!({"name": {"answers": ["Grace"]}, "email": {"answers": ["grace@example.com"]}, "size": {"answers": ["Large"]}})))
        .await;
    let resolved = socket.until("form_resolved").await;
    let content = json!({"name": "Grace", "email": "grace@example.com", "age": 36, "score": 7.5, "subscribe": false,
                         "color": "green", "size": "l", "tags": ["x"]});
    assert_eq!(resolved["action"], "accept");
    assert_eq!(resolved["content"], content);
    let finished = socket.until("tool_call_finished").await;
    assert_eq!(
        plugin_result(&finished),
        json!({"action": "accept", "content": content})
    );
    let ended = socket.until("turn_ended").await;
    assert_eq!(ended["reason"], "completed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn decline_cancel_and_a_new_message_reach_the_plugin() {
    let server = Server::ts().await;
    let mut socket = server.socket(&server.session).await;
    socket.snapshot().await;

    for (answer, expected) in [("decline", "decline"), ("cancel", "cancel")] {
        socket.send(call("ask_enum")).await;
        let form = socket.until("form_requested").await;
        socket.send(action(&form["form_id"], answer)).await;
        let resolved = socket.until("form_resolved").await;
        assert_eq!(resolved["action"], expected);
        assert_eq!(resolved.get("reason"), None, "{resolved}");
        let finished = socket.until("tool_call_finished").await;
        assert_eq!(plugin_result(&finished), json!({"action": expected}));
    }

    // With no model, a message is recorded and cancels the open form, as in a real chat.
    socket.send(call("ask_enum")).await;
    let form = socket.until("form_requested").await;
    socket
        .send(json!({"type": "send_message", "text": "never mind"}))
        .await;
    let resolved = socket.until("form_resolved").await;
    assert_eq!(resolved["form_id"], form["form_id"]);
    assert_eq!(
        (resolved["action"].as_str(), resolved["reason"].as_str()),
        (Some("cancel"), Some("new-message"))
    );
    let message = socket.until("message_added").await;
    assert_eq!(
        message,
        json!({"type": "message_added", "role": "user", "text": "never mind"})
    );
    let finished = socket.until("tool_call_finished").await;
    assert_eq!(plugin_result(&finished), json!({"action": "cancel"}));

    // The form is over: answering it now is refused.
    socket.send(action(&form["form_id"], "decline")).await;
    let error = socket.until("command_error").await;
    assert_eq!(error["error"], "not_open", "{error}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn validation_errors_name_their_field_whatever_its_key_holds() {
    let server = Server::ts().await;
    let mut socket = server.socket(&server.session).await;
    socket.snapshot().await;
    socket.send(call("ask_colon_key")).await;
    let form = socket.until("form_requested").await;
    socket
        .send(render(
            &form["form_id"],
            json!({"code: id": {"answers": ["12a"]}}),
        ))
        .await;
    let error = socket.until("command_error").await;
    assert_eq!(
        error["errors"],
        json!([{"field": "code: id", "message": "must match the pattern `^[0-9]+$`"}]),
        "{error}"
    );
    socket
        .send(render(
            &form["form_id"],
            json!({"code: id": {"answers": ["12"]}}),
        ))
        .await;
    let finished = socket.until("tool_call_finished").await;
    assert_eq!(
        plugin_result(&finished),
        json!({"action": "accept", "content": {"code: id": "12"}})
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_url_request_shows_url_and_domain_and_is_accepted() {
    let server = Server::ts().await;
    let mut socket = server.socket(&server.session).await;
    socket.snapshot().await;
    socket.send(call("ask_url")).await;
    let form = socket.until("form_requested").await;
    assert_eq!(
        form["body"],
        json!({"mode": "url", "message": "Log in please", "url": "https://example.com/login", "domain": "example.com", "warnings": [], "elicitation_id": "e-42"})
    );
    socket.send(action(&form["form_id"], "accept_url")).await;
    let resolved = socket.until("form_resolved").await;
    assert_eq!(resolved["action"], "accept");
    let finished = socket.until("tool_call_finished").await;
    assert_eq!(plugin_result(&finished), json!({"action": "accept"}));
}

/// A link in clear text to this computer comes with the host's two warnings, code and sentence,
/// the address written as one integer judged and shown as the address it opens.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_url_request_to_this_computer_carries_warnings() {
    let server = Server::ts().await;
    let mut socket = server.socket(&server.session).await;
    socket.snapshot().await;
    socket
        .send(json!({"type": "call_tool", "server": "ts", "tool": "ask_url_to", "arguments": {"url": "http://2130706433:9/callback"}}))
        .await;
    let form = socket.until("form_requested").await;
    assert_eq!(
        form["body"],
        json!({
            "mode": "url",
            "message": "Open this link",
            "url": "http://2130706433:9/callback",
            "domain": "127.0.0.1",
            "warnings": [
                {"code": "plain_http", "message": "The link uses plain http: what you see and type there is not encrypted."},
                {"code": "loopback", "message": "The link leads to this computer (a loopback address), not to a site on the internet."},
            ],
            "elicitation_id": "e-to",
        })
    );
    socket.send(action(&form["form_id"], "decline")).await;
    let finished = socket.until("tool_call_finished").await;
    assert_eq!(plugin_result(&finished), json!({"action": "decline"}));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_page_gets_the_whole_story_and_bad_commands_are_answered() {
    let server = Server::ts().await;
    let mut first = server.socket(&server.session).await;
    first.snapshot().await;
    first.send(call("ask_boolean")).await;
    let form = first.until("form_requested").await;

    // A page opened now sees everything so far, then the form's end live.
    let mut second = server.socket(&server.session).await;
    let snapshot = second.snapshot().await;
    let kinds: Vec<&str> = snapshot
        .iter()
        .filter_map(|event| event["type"].as_str())
        .collect();
    assert_eq!(
        kinds,
        ["turn_started", "tool_call_started", "form_requested"]
    );
    assert_eq!(snapshot[2], form);
    second
        .send(render(
            &form["form_id"],
            json!({"agree": {"answers": ["true"]}}),
        ))
        .await;
    let resolved = first.until("form_resolved").await;
    assert_eq!(resolved["content"], json!({"agree": true}));
    assert_eq!(second.until("form_resolved").await, resolved);

    for (bad, why) in [
        (json!("not a command"), "not a command"),
        (json!({"type": "launch_missiles"}), "not a command"),
        (
            json!({"type": "call_tool", "server": "nope", "tool": "x"}),
            "no server",
        ),
    ] {
        second.send(bad.clone()).await;
        let error = second.until("command_error").await;
        assert!(
            error["message"].as_str().is_some_and(|m| m.contains(why)),
            "{bad} -> {error}"
        );
        assert_eq!(
            error["command"],
            if bad.is_object() {
                bad
            } else {
                json!("not a command")
            }
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approval_cards_allow_and_deny() {
    let server = Server::start(&ts_server("ts", "prompt"), None).await;
    let mut socket = server.socket(&server.session).await;
    socket.snapshot().await;

    socket.send(call("fail")).await;
    let card = socket.until("approval_requested").await;
    assert_eq!(
        (card["server"].as_str(), card["tool"].as_str()),
        (Some("ts"), Some("fail"))
    );
    socket
        .send(json!({"type": "answer_approval", "approval_id": card["approval_id"], "choice": "deny"}))
        .await;
    let resolved = socket.until("approval_resolved").await;
    assert_eq!(resolved["choice"], "deny");
    let finished = socket.until("tool_call_finished").await;
    assert!(finished["error"].is_string(), "{finished}");

    socket.send(call("fail")).await;
    let card = socket.until("approval_requested").await;
    socket
        .send(json!({"type": "answer_approval", "approval_id": card["approval_id"], "choice": "allow"}))
        .await;
    assert_eq!(socket.until("approval_resolved").await["choice"], "allow");
    let finished = socket.until("tool_call_finished").await;
    assert_eq!(
        finished["result"]["isError"], true,
        "the tool ran: {finished}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_scripted_model_calls_a_tool_and_replies_when_it_returns() {
    let model = r#"[
        {"match": "(?i)colou?r", "reply": "Noted your color.", "call": {"server": "ts", "tool": "ask_enum"}},
        {"match": "(?i)^hello", "reply": "Hello! Ask me for a color."}
    ]"#;
    let server = Server::start(&ts_server("ts", "approve"), Some(model)).await;
    let mut socket = server.socket(&server.session).await;
    socket.snapshot().await;

    socket
        .send(json!({"type": "send_message", "text": "hello there"}))
        .await;
    assert_eq!(socket.until("message_added").await["role"], "user");
    let reply = socket.until("message_added").await;
    assert_eq!(
        reply,
        json!({"type": "message_added", "role": "assistant", "text": "Hello! Ask me for a color."})
    );

    socket
        .send(json!({"type": "send_message", "text": "Pick a colour"}))
        .await;
    let started = socket.until("tool_call_started").await;
    assert_eq!(started["tool"], "ask_enum");
    let form = socket.until("form_requested").await;
    socket
        .send(render(
            &form["form_id"],
            json!({"color": {"answers": ["blue"]}}),
        ))
        .await;
    let finished = socket.until("tool_call_finished").await;
    assert_eq!(
        plugin_result(&finished),
        json!({"action": "accept", "content": {"color": "blue"}})
    );
    let reply = socket.until("message_added").await;
    assert_eq!(reply["text"], "Noted your color.");

    // A page opened later sees the replies in their places.
    let mut later = server.socket(&server.session).await;
    let texts: Vec<String> = later
        .snapshot()
        .await
        .iter()
        .filter(|event| event["type"] == "message_added")
        .map(|event| {
            format!(
                "{}: {}",
                event["role"].as_str().unwrap_or(""),
                event["text"].as_str().unwrap_or("")
            )
        })
        .collect();
    assert_eq!(
        texts,
        [
            "user: hello there",
            "assistant: Hello! Ask me for a color.",
            "user: Pick a colour",
            "assistant: Noted your color."
        ]
    );
}

/// A command over 1 MiB ends the socket; the session and its forms are unharmed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_over_a_mebibyte_ends_the_socket() {
    let server = Server::ts().await;
    let mut socket = server.socket(&server.session).await;
    socket.snapshot().await;
    let text = "x".repeat(1 << 20);
    socket
        .send(json!({"type": "send_message", "text": text}))
        .await;
    assert!(socket.ends().await, "the socket stayed open");
    let mut again = server.socket(&server.session).await;
    assert!(
        again.snapshot().await.is_empty(),
        "the message was not taken"
    );
}
