//! The bounds of an app: its cards, its questions, its requests in flight.

use super::*;

/// An app holds at most `MAX_APP_CARDS` cards at once: one more question is refused without a
/// card, and so is a tool call that would need an approval.
#[tokio::test]
async fn an_app_holds_a_few_cards_at_most() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = config(dir.path(), true);
    config.mcp_servers.get_mut("probe").unwrap().tools.insert(
        "app-echo".to_owned(),
        ToolConfig {
            approval_mode: Some(ApprovalMode::Prompt),
        },
    );
    let host = Host::new(config, HostOptions::default());
    let mut s = Watch::open(&host);
    let (invocation, _) = s.called("probe", "open-probe").await;
    let session = s.session.clone();
    let message = |n: usize| {
        json!({"jsonrpc": "2.0", "id": n, "method": "ui/message",
               "params": {"role": "user", "content": {"type": "text", "text": "hi"}}})
    };
    let waiting: Vec<_> = (0..formwork_host::MAX_APP_CARDS - 1)
        .map(|n| spawn_app(&host, &session, &invocation, message(n)))
        .collect();
    for _ in 0..formwork_host::MAX_APP_CARDS - 1 {
        s.card().await;
    }
    let approval = spawn_app(
        &host,
        &session,
        &invocation,
        json!({"jsonrpc": "2.0", "id": "t", "method": "tools/call",
               "params": {"name": "app-echo", "arguments": {}}}),
    );
    s.next(|event| matches!(event, Event::ApprovalRequested { .. }).then_some(()))
        .await;
    let full = format!(
        "{} questions of this app already wait for the person, the most an app may have",
        formwork_host::MAX_APP_CARDS
    );
    let one_more = s.app(&invocation, message(99)).await;
    assert_eq!(refused(&one_more), full);
    let call = s.tool_from_app(&invocation, "app-echo", json!({})).await;
    assert_eq!(refused(&call), full);
    host.shutdown().await;
    for waiting in waiting {
        waiting.await.unwrap();
    }
    approval.await.unwrap();
    assert_eq!(
        logged(dir.path(), "probe.log")
            .lines()
            .filter(|l| l.starts_with("app-echo"))
            .count(),
        0
    );
}

/// An app cannot bury the person in questions: past `[forms] max_pending` cards of its call, a
/// `ui/message` is refused at once, without a card.
#[tokio::test]
async fn an_apps_questions_are_bounded_by_the_pending_limit() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = config(dir.path(), true);
    config.forms.max_pending = 2;
    let host = Host::new(config, HostOptions::default());
    let mut s = Watch::open(&host);
    let (call_id, _) = s.called("probe", "open-probe").await;
    let session = s.session.clone();
    let ask = |n: u64| {
        spawn_app(
            &host,
            &session,
            &call_id,
            json!({"jsonrpc": "2.0", "id": n, "method": "ui/message",
                   "params": {"role": "user", "content": {"type": "text", "text": "hi"}}}),
        )
    };
    let waiting = [ask(1), ask(2)];
    s.card().await;
    s.card().await;
    let third = ask(3).await.unwrap();
    assert_eq!(
        refused(third.response.as_ref().unwrap()),
        "2 questions of this app already wait for the person ([forms] max_pending)"
    );
    host.shutdown().await;
    for waiting in waiting {
        let reply = waiting.await.unwrap();
        assert_eq!(
            refused(reply.response.as_ref().unwrap()),
            "the person did not send the app's message"
        );
    }
}

/// The apps of a session have at most `MAX_APP_REQUESTS_IN_FLIGHT` requests served at once: one
/// more is refused at once, and a slot frees when a request ends.
#[tokio::test]
async fn an_apps_requests_in_flight_are_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = config(dir.path(), true);
    config.forms.max_pending = 1000;
    let host = Host::new(config, HostOptions::default());
    let mut s = Watch::open(&host);
    // Each app holds a few cards at most: the requests come from the apps of several calls.
    let mut invocations = Vec::new();
    for _ in 0..formwork_host::MAX_APP_REQUESTS_IN_FLIGHT.div_ceil(formwork_host::MAX_APP_CARDS) {
        invocations.push(s.called("probe", "open-probe").await.0);
    }
    let call_id = invocations[0].clone();
    let message = |n: usize| {
        json!({"jsonrpc": "2.0", "id": n, "method": "ui/message",
               "params": {"role": "user", "content": {"type": "text", "text": "hi"}}})
    };
    let waiting: Vec<_> = (0..formwork_host::MAX_APP_REQUESTS_IN_FLIGHT)
        .map(|n| {
            let app = &invocations[n / formwork_host::MAX_APP_CARDS];
            spawn_app(&host, &s.session, app, message(n))
        })
        .collect();
    // More cards than a subscriber's buffer holds: read the session's log.
    let mut cards = Vec::new();
    for _ in 0..1500 {
        cards = host
            .events(&s.session)
            .unwrap()
            .iter()
            .filter_map(|event| match &**event {
                Event::FormRequested { form_id, .. } => Some(form_id.clone()),
                _ => None,
            })
            .collect();
        if cards.len() == formwork_host::MAX_APP_REQUESTS_IN_FLIGHT {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(cards.len(), formwork_host::MAX_APP_REQUESTS_IN_FLIGHT);
    let one_more = s
        .app(
            &call_id,
            json!({"jsonrpc": "2.0", "id": "x", "method": "ping"}),
        )
        .await;
    assert_eq!(
        refused(&one_more),
        format!(
            "the apps of this session already have {} requests in flight",
            formwork_host::MAX_APP_REQUESTS_IN_FLIGHT
        )
    );
    s.choose(&cards[0], "no");
    let mut freed = Value::Null;
    for _ in 0..50 {
        freed = s
            .app(
                &call_id,
                json!({"jsonrpc": "2.0", "id": "y", "method": "ping"}),
            )
            .await;
        if freed.get("result").is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(freed, json!({"jsonrpc": "2.0", "id": "y", "result": {}}));
    host.shutdown().await;
    for waiting in waiting {
        waiting.await.unwrap();
    }
}
