//! An app's session deleted or restarted, and its tool calls under the person's policy.

use super::*;

/// Deleting a session ends its followers' stream and removes what the store and the data
/// directory keep of it: its transcript, its app state and its uploads; a restarted host does not
/// bring it back, and the other session stays.
#[tokio::test]
async fn a_deleted_session_leaves_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("formwork.db");
    let store = formwork_host::store::Store::open(&path).unwrap();
    let host = Host::with_store(config(dir.path(), true), HostOptions::default(), store)
        .await
        .unwrap();
    let mut s = Watch::open(&host);
    let kept = host.create_session();
    let (call_id, _) = s.called("probe", "open-probe").await;
    let set = s
        .app(
            &call_id,
            json!({"jsonrpc": "2.0", "id": 1, "method": "ui/update-model-context",
                   "params": {"structuredContent": {"a": 1}}}),
        )
        .await;
    assert_eq!(set["result"], json!({}));
    let upload = host.save_upload(&s.session, "notes.txt", b"notes").unwrap();
    assert!(upload.path.exists());

    host.delete_session(&s.session).await.unwrap();
    assert!(!upload.path.exists());
    assert!(!upload.path.parent().unwrap().exists());
    // What was sent before comes first, then the stream ends.
    loop {
        match tokio::time::timeout(Duration::from_secs(5), s.events.recv()).await {
            Ok(Err(broadcast::error::RecvError::Closed)) => break,
            Ok(_) => {}
            Err(_) => panic!("the deleted session's stream did not end"),
        }
    }
    assert_eq!(host.sessions(), std::slice::from_ref(&kept));
    assert!(matches!(
        host.command(&s.session, Command::StopTurn),
        Err(formwork_host::CommandError::NoSession(_))
    ));
    assert!(matches!(
        host.delete_session(&s.session).await,
        Err(formwork_host::CommandError::NoSession(_))
    ));
    host.shutdown().await;

    let store = formwork_host::store::Store::open(&path).unwrap();
    let stored: Vec<String> = store
        .list_sessions()
        .await
        .unwrap()
        .into_iter()
        .map(|record| record.id)
        .collect();
    assert_eq!(stored, [kept]);
    assert!(store.app_states(&s.session).await.unwrap().is_empty());
}

/// What an app left behind (model context, a widget's state) is kept per invocation across a
/// restart; after it, an app whose server is gone says so, and an ordinary call still has none.
#[tokio::test]
async fn app_state_survives_a_restart_and_a_gone_server_is_unavailable() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("formwork.db");
    let store = formwork_host::store::Store::open(&path).unwrap();
    let host = Host::with_store(config(dir.path(), true), HostOptions::default(), store)
        .await
        .unwrap();
    let mut s = Watch::open(&host);
    let (call_id, _) = s.called("probe", "open-probe").await;
    let (ordinary, _) = s.called("bystander", "leak").await;
    let context = json!({"structuredContent": {"zeta": 1, "alpha": 2}});
    let set = s
        .app(
            &call_id,
            json!({"jsonrpc": "2.0", "id": 1, "method": "ui/update-model-context", "params": context}),
        )
        .await;
    assert_eq!(set["result"], json!({}));
    let widget = s
        .app(
            &call_id,
            json!({"jsonrpc": "2.0", "id": 2, "method": "openai/setWidgetState",
                   "params": {"state": {"count": 3}}}),
        )
        .await;
    assert_eq!(widget["result"], json!({}));
    let session = s.session.clone();
    host.shutdown().await;

    let store = formwork_host::store::Store::open(&path).unwrap();
    let host = Host::with_store(config(dir.path(), true), HostOptions::default(), store)
        .await
        .unwrap();
    assert_eq!(
        host.app_model_context(&session).unwrap(),
        [(call_id.clone(), context)]
    );
    let app = host.open_app(&session, &call_id).await.unwrap();
    assert_eq!(app.widget_state, Some(json!({"count": 3})));
    host.shutdown().await;

    // Back without the probe server.
    let store = formwork_host::store::Store::open(&path).unwrap();
    let host = Host::with_store(config(dir.path(), false), HostOptions::default(), store)
        .await
        .unwrap();
    let replayed = host.events(&session).unwrap();
    assert!(replayed.iter().any(|event| matches!(
        &**event,
        Event::ToolCallApp { call_id: id, resource_uri } if *id == call_id && resource_uri == "ui://probe/app.html"
    )));
    assert_eq!(
        host.open_app(&session, &call_id).await.unwrap_err(),
        AppError::Unavailable(
            "the app's server `probe` is not configured or not enabled any more".to_owned()
        )
    );
    assert_eq!(
        host.open_app(&session, &ordinary).await.unwrap_err(),
        AppError::NoApp(ordinary.clone())
    );
    host.shutdown().await;
}

/// An app's `tools/call` goes through the person's policy and into the transcript: a tool the
/// person set to `prompt` asks with a card that names the app (Deny: the app hears it and the
/// plugin hears nothing; Allow: it runs), while under `auto` a destructive tool of the app's own
/// server runs without a card, annotations asking nothing for apps. Each call is the
/// transcript's, as the app's.
#[tokio::test]
async fn an_apps_tool_calls_follow_the_persons_policy_and_are_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = config(dir.path(), true);
    let probe = config.mcp_servers.get_mut("probe").unwrap();
    for (tool, mode) in [
        ("app-echo", ApprovalMode::Prompt),
        ("app-erase", ApprovalMode::Auto),
    ] {
        probe.tools.insert(
            tool.to_owned(),
            ToolConfig {
                approval_mode: Some(mode),
            },
        );
    }
    let host = Host::new(config, HostOptions::default());
    let mut s = Watch::open(&host);
    let (invocation, _) = s.called("probe", "open-probe").await;
    let session = s.session.clone();
    let call_app = |n: u64, tool: &str| {
        spawn_app(
            &host,
            &session,
            &invocation,
            json!({"jsonrpc": "2.0", "id": n, "method": "tools/call",
                   "params": {"name": tool, "arguments": {"n": n}}}),
        )
    };
    let answer = |s: &Watch, approval_id: &str, choice: ApprovalChoice| {
        s.host
            .command(
                &s.session,
                Command::AnswerApproval {
                    approval_id: approval_id.to_owned(),
                    choice,
                },
            )
            .unwrap();
    };

    // Denied: the app hears the refusal; the call is in the transcript, as the app's.
    let denied = call_app(1, "app-echo");
    let (started, approval_id, card_call, message) = s.approval().await;
    let (app_call, server, tool, arguments, asked_by) = started.expect("the call started first");
    assert_eq!(
        (
            server.as_str(),
            tool.as_str(),
            &arguments,
            asked_by.as_deref()
        ),
        (
            "probe",
            "app-echo",
            &json!({"n": 1}),
            Some(invocation.as_str())
        )
    );
    assert_eq!(card_call, app_call);
    assert_eq!(
        message,
        "The app of probe · open-probe asks. Allow the probe MCP server to run tool \"app-echo\"?"
    );
    answer(&s, &approval_id, ApprovalChoice::Deny);
    let reply = denied.await.unwrap().response.unwrap();
    let refusal = refused(&reply);
    assert_eq!(refusal, "user rejected MCP tool call");
    let ended = s
        .next(|event| match event {
            Event::ToolCallFinished {
                call_id,
                result,
                error,
            } if *call_id == app_call => Some((result.clone(), error.clone())),
            _ => None,
        })
        .await;
    assert_eq!(ended, (None, Some(refusal.clone())));

    // Allowed: it runs, and its result is the transcript's too.
    let allowed = call_app(2, "app-echo");
    let (started, approval_id, _, _) = s.approval().await;
    let app_call = started.unwrap().0;
    answer(&s, &approval_id, ApprovalChoice::Allow);
    let reply = allowed.await.unwrap().response.unwrap();
    assert_eq!(
        reply["result"]["structuredContent"],
        json!({"echo": {"n": 2}}),
        "{reply}"
    );
    let result = s
        .next(|event| match event {
            Event::ToolCallFinished {
                call_id, result, ..
            } if *call_id == app_call => Some(result.clone()),
            _ => None,
        })
        .await;
    assert_eq!(result, Some(reply["result"].clone()));

    // `auto` and a destructive tool: no card for the app's own server's tool.
    let erased = s.tool_from_app(&invocation, "app-erase", json!({})).await;
    assert_eq!(erased["result"]["content"][0]["text"], "erased", "{erased}");
    let asked: Vec<Option<String>> = host
        .events(&s.session)
        .unwrap()
        .iter()
        .filter_map(|event| match &**event {
            Event::ToolCallStarted { asked_by, .. } => Some(asked_by.clone()),
            _ => None,
        })
        .collect();
    let by_app = Some(invocation.clone());
    assert_eq!(asked, [None, by_app.clone(), by_app.clone(), by_app]);
    assert_eq!(
        logged(dir.path(), "probe.log")
            .lines()
            .filter(|line| line.starts_with("app-"))
            .collect::<Vec<_>>(),
        [r#"app-echo {"n":2}"#, "app-erase {}"]
    );
    host.shutdown().await;
}
