//! Which calls get an app, and its document: its policy, the cache, a new connection, a tool listed
//! late.

use super::*;

/// Only a call whose tool, or else result, declares a UI gets an app: by the nested key, the flat
/// key, or the result's `_meta`; an ordinary tool never does.
#[tokio::test]
async fn only_calls_that_declare_a_ui_get_an_app() {
    let dir = tempfile::tempdir().unwrap();
    let host = Host::new(config(dir.path(), true), HostOptions::default());
    let mut s = Watch::open(&host);
    for (tool, uri) in [
        ("open-probe", Some("ui://probe/app.html")),
        ("open-probe-flat", Some("ui://probe/app.html")),
        ("open-probe-late", Some("ui://probe/app.html")),
        ("model-only", None),
    ] {
        let (call_id, events) = s.called("probe", tool).await;
        assert_eq!(
            app_of(&events),
            uri.map(str::to_owned).into_iter().collect::<Vec<_>>(),
            "{tool}"
        );
        let opened = host.open_app(&s.session, &call_id).await;
        match uri {
            Some(_) => assert!(opened.is_ok(), "{tool}: {opened:?}"),
            None => assert_eq!(opened.unwrap_err(), AppError::NoApp(call_id.clone())),
        }
    }
    // A UI named by the tool is announced before the call's result; one named by the result
    // just before its end.
    let (_, events) = s.called("probe", "open-probe").await;
    let started = events
        .iter()
        .position(|event| matches!(event, Event::ToolCallStarted { .. }))
        .unwrap();
    assert!(
        matches!(events[started + 1], Event::ToolCallApp { .. }),
        "{events:?}"
    );
    let (_, events) = s.called("probe", "open-probe-late").await;
    assert!(
        matches!(events[events.len() - 2], Event::ToolCallApp { .. }),
        "{events:?}"
    );
    host.shutdown().await;
}

/// The document comes with its policy: the declared origin kept, the injecting entry dropped.
/// A declared UI that the server does not have is an error, not an ordinary call.
#[tokio::test]
async fn the_document_carries_its_policy_and_a_missing_one_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let host = Host::new(config(dir.path(), true), HostOptions::default());
    let mut s = Watch::open(&host);
    let (call_id, _) = s.called("probe", "open-probe").await;
    let app = host.open_app(&s.session, &call_id).await.unwrap();
    assert_eq!(app.server, "probe");
    assert_eq!(app.tool["name"], "open-probe");
    assert_eq!(app.document.mime_type, "text/html;profile=mcp-app");
    assert_eq!(
        app.document.policy.csp,
        "default-src 'none'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; \
         img-src 'self' data: blob:; media-src 'self' data: blob:; font-src 'self'; \
         connect-src 'self' https://declared.example; frame-src 'none'; object-src 'none'; \
         base-uri 'self'; form-action 'none'"
    );
    // The probe is local (stdio): a loopback entry would need one explicit port.
    assert_eq!(
        app.document.policy.dropped,
        [
            "ui.csp.connectDomains: \"https://x.example; script-src *\": contains whitespace or a control character",
            "ui.csp.connectDomains: \"http://127.0.0.1:*\": an entry on this machine or its private network needs an explicit port",
            "ui.csp.connectDomains: \"http://localhost:*\": an entry on this machine or its private network needs an explicit port",
        ]
    );

    // Metadata on the read content without the policy: the listing's policy holds.
    let (listed, _) = s.called("probe", "open-probe-listed").await;
    let policy = host
        .open_app(&s.session, &listed)
        .await
        .unwrap()
        .document
        .policy
        .clone();
    assert!(
        policy
            .csp
            .contains("; connect-src 'self' https://listed.example; "),
        "{}",
        policy.csp
    );
    assert_eq!(policy.allow, "microphone");

    let (missing, _) = s.called("probe", "open-missing").await;
    let AppError::Unavailable(why) = host.open_app(&s.session, &missing).await.unwrap_err() else {
        panic!("not unavailable")
    };
    assert!(
        why.starts_with("the app's resource ui://probe/missing.html could not be read: "),
        "{why}"
    );
    host.shutdown().await;
}

/// The document is read once per session and server, and again after the server says its
/// resources changed.
#[tokio::test]
async fn documents_are_cached_until_the_server_says_its_resources_changed() {
    let dir = tempfile::tempdir().unwrap();
    let host = Host::new(config(dir.path(), true), HostOptions::default());
    let mut s = Watch::open(&host);
    let (first, _) = s.called("probe", "open-probe").await;
    let (second, _) = s.called("probe", "open-probe-flat").await;
    let a = host.open_app(&s.session, &first).await.unwrap();
    let b = host.open_app(&s.session, &second).await.unwrap();
    assert!(Arc::ptr_eq(&a.document, &b.document));
    assert!(a.document.html.contains(r#"data-version="1""#));
    s.called("probe", "bump-app").await;
    // The notification follows the bump's result on the same stream; give it a moment.
    let mut c = host.open_app(&s.session, &first).await.unwrap();
    for _ in 0..50 {
        if !Arc::ptr_eq(&a.document, &c.document) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
        c = host.open_app(&s.session, &first).await.unwrap();
    }
    assert!(c.document.html.contains(r#"data-version="2""#));
    host.shutdown().await;
}

/// A document is cached per connection: once the plugin has ended and another process serves
/// the server, the app's document is read again from it, though neither said its resources
/// changed.
#[tokio::test]
async fn a_new_connection_reads_the_document_again() {
    let dir = tempfile::tempdir().unwrap();
    let host = Host::new(config(dir.path(), true), HostOptions::default());
    let mut s = Watch::open(&host);
    let (call_id, _) = s.called("probe", "open-probe").await;
    let first = host.open_app(&s.session, &call_id).await.unwrap();
    let process = |html: &str| {
        let at = html.find("data-process=\"").unwrap() + "data-process=\"".len();
        html[at..].split('"').next().unwrap().to_owned()
    };
    let before = process(&first.document.html);
    s.called("probe", "exit-probe").await;
    // The host sees the process gone a moment after the result.
    let mut again = host.open_app(&s.session, &call_id).await;
    for _ in 0..100 {
        if again
            .as_ref()
            .is_ok_and(|app| process(&app.document.html) != before)
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
        again = host.open_app(&s.session, &call_id).await;
    }
    let again = again.unwrap();
    assert!(!Arc::ptr_eq(&first.document, &again.document));
    assert_ne!(process(&again.document.html), before);
    assert!(again.document.html.contains(r#"data-version="1""#));
    host.shutdown().await;
}

/// The tool list an app's calls are checked against is listed again after the server says its
/// tools changed: a tool it lists only then becomes callable.
#[tokio::test]
async fn a_tool_listed_after_tools_list_changed_is_seen() {
    let dir = tempfile::tempdir().unwrap();
    let host = Host::new(config(dir.path(), true), HostOptions::default());
    let mut s = Watch::open(&host);
    let (call_id, _) = s.called("probe", "open-probe").await;
    let before = s.tool_from_app(&call_id, "app-version", json!({})).await;
    assert_eq!(refused(&before), "`probe` lists no tool `app-version`");
    s.called("probe", "bump-app").await;
    let mut after = Value::Null;
    for _ in 0..50 {
        after = s.tool_from_app(&call_id, "app-version", json!({})).await;
        if after.get("result").is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(after["result"]["content"][0]["text"], "v2", "{after}");
    host.shutdown().await;
}
