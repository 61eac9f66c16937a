//! An app's `ui/initialize`, its messages and links, and a form during its tool call.

use super::*;

/// `ui/initialize` answers the host's capabilities and context: the page's, plus the tool.
#[tokio::test]
async fn initialize_answers_capabilities_and_context() {
    let dir = tempfile::tempdir().unwrap();
    let host = Host::new(config(dir.path(), true), HostOptions::default());
    let mut s = Watch::open(&host);
    let (call_id, _) = s.called("probe", "open-probe").await;
    let reply = s
        .app(
            &call_id,
            json!({"jsonrpc": "2.0", "id": 0, "method": "ui/initialize",
                   "params": {"appInfo": {"name": "t", "version": "1"}, "appCapabilities": {},
                              "protocolVersion": "2026-01-26"}}),
        )
        .await;
    let result = &reply["result"];
    assert_eq!(result["protocolVersion"], "2026-01-26");
    assert_eq!(result["hostInfo"]["name"], "formwork");
    assert_eq!(
        result["hostCapabilities"],
        json!({
            "openLinks": {}, "serverTools": {}, "serverResources": {}, "logging": {},
            "updateModelContext": {"text": {}, "structuredContent": {}},
            "message": {"text": {}},
            "sandbox": {"csp": {"connectDomains": ["https://declared.example"]}, "permissions": {}},
        })
    );
    assert_eq!(result["hostContext"]["theme"], "dark");
    assert_eq!(result["hostContext"]["toolInfo"]["id"], call_id);
    assert_eq!(
        result["hostContext"]["toolInfo"]["tool"]["name"],
        "open-probe"
    );
    let ping = s
        .app(
            &call_id,
            json!({"jsonrpc": "2.0", "id": "p", "method": "ping"}),
        )
        .await;
    assert_eq!(ping, json!({"jsonrpc": "2.0", "id": "p", "result": {}}));
    let unknown = s
        .app(
            &call_id,
            json!({"jsonrpc": "2.0", "id": 1, "method": "sampling/createMessage", "params": {}}),
        )
        .await;
    assert_eq!(unknown["error"]["code"], -32601, "{unknown}");
    host.shutdown().await;
}

/// `ui/message` and `ui/open-link` ask the person with a card of the call; only "yes" lets them
/// through.
#[tokio::test]
async fn messages_and_links_ask_the_person_first() {
    let dir = tempfile::tempdir().unwrap();
    let host = Host::new(config(dir.path(), true), HostOptions::default());
    let mut s = Watch::open(&host);
    let (call_id, _) = s.called("probe", "open-probe").await;

    // What cannot be sent as the person's text is refused before anyone is asked.
    for (params, why) in [
        (
            json!({"role": "assistant", "content": [{"type": "text", "text": "I agree"}]}),
            "an app's message is sent as the person: its `role` must be \"user\"",
        ),
        (
            json!({"role": "user", "content": [{"type": "text", "text": "see"},
                   {"type": "image", "data": "AA==", "mimeType": "image/png"}]}),
            "formwork sends an app's message as text blocks only",
        ),
        (
            json!({"role": "user", "content": []}),
            "`ui/message` needs text content",
        ),
    ] {
        let reply = s
            .app(
                &call_id,
                json!({"jsonrpc": "2.0", "id": 1, "method": "ui/message", "params": params}),
            )
            .await;
        assert_eq!(
            reply["error"],
            json!({"code": -32602, "message": why}),
            "{reply}"
        );
    }

    let send = spawn_app(
        &host,
        &s.session,
        &call_id,
        json!({"jsonrpc": "2.0", "id": 1, "method": "ui/message",
               "params": {"role": "user", "content": [{"type": "text", "text": "Book it"}]}}),
    );
    let (form_id, card_call, message) = s.card().await;
    assert_eq!(card_call.as_deref(), Some(call_id.as_str()));
    assert_eq!(
        message,
        "The app of probe · open-probe wants to send this message as you:\n\nBook it"
    );
    s.choose(&form_id, "yes");
    let reply = send.await.unwrap();
    assert_eq!(
        reply.response,
        Some(json!({"jsonrpc": "2.0", "id": 1, "result": {}}))
    );
    s.next(|event| match event {
        Event::MessageAdded { text, .. } if text == "Book it" => Some(()),
        _ => None,
    })
    .await;

    let session = s.session.clone();
    let open = |url: &str| {
        spawn_app(
            &host,
            &session,
            &call_id,
            json!({"jsonrpc": "2.0", "id": 2, "method": "ui/open-link", "params": {"url": url}}),
        )
    };
    let script = open("javascript:alert(1)").await.unwrap();
    assert_eq!(
        refused(script.response.as_ref().unwrap()),
        "only http and https links can be opened"
    );
    let link = open("https://example.com/a?b=1");
    let (form_id, _, message) = s.card().await;
    assert_eq!(
        message,
        "The app of probe · open-probe wants to open a link:\n\nhttps://example.com/a?b=1"
    );
    s.choose(&form_id, "no");
    let denied = link.await.unwrap();
    assert_eq!(denied.open_link, None);
    assert_eq!(
        refused(denied.response.as_ref().unwrap()),
        "the person did not open the link"
    );
    let link = open("https://example.com/a?b=1");
    let (form_id, _, _) = s.card().await;
    s.choose(&form_id, "yes");
    assert_eq!(
        link.await.unwrap().open_link.as_deref(),
        Some("https://example.com/a?b=1")
    );
    host.shutdown().await;
}

/// A form the plugin asks for during an app's tool call is a card of the app's call, though no
/// turn is running.
#[tokio::test]
async fn a_form_during_an_apps_tool_call_is_a_card_of_its_call() {
    let dir = tempfile::tempdir().unwrap();
    let host = Host::new(config(dir.path(), true), HostOptions::default());
    let mut s = Watch::open(&host);
    let (call_id, _) = s.called("probe", "open-probe").await;
    let ask = spawn_app(
        &host,
        &s.session,
        &call_id,
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
               "params": {"name": "ask-during-app", "arguments": {}}}),
    );
    let (form_id, card_call, _) = s.card().await;
    assert_eq!(card_call.as_deref(), Some(call_id.as_str()));
    let Some(Event::FormRequested { body, .. }) = host
        .events(&s.session)
        .unwrap()
        .iter()
        .rev()
        .find(|event| matches!(***event, Event::FormRequested { .. }))
        .map(|event| (**event).clone())
    else {
        panic!("no form")
    };
    let body = serde_json::to_value(&body).unwrap();
    let field = body["render"]["questions"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    host.command(
        &s.session,
        Command::AnswerForm {
            form_id,
            answer: FormAnswer::Accept {
                content: json!({field: "from the person"})
                    .as_object()
                    .unwrap()
                    .clone(),
            },
        },
    )
    .unwrap();
    let reply = ask.await.unwrap().response.unwrap();
    assert!(
        reply["result"].to_string().contains("from the person"),
        "{reply}"
    );
    host.shutdown().await;
}
