//! The form queue and every trigger that cancels a form.

use super::*;

#[tokio::test]
async fn a_second_form_waits_until_the_first_ends() {
    let host = host(config("", approve()));
    let mut s = Watch::open(&host);
    s.call("ask_enum");
    let (first, waiting) = s.form().await;
    assert!(!waiting);
    s.call("ask_boolean");
    let (second, waiting) = s.form().await;
    assert!(waiting, "the second form must wait");
    let refused = host.command(
        &s.session,
        Command::AnswerForm {
            form_id: second.clone(),
            answer: FormAnswer::Decline,
        },
    );
    assert!(refused.is_err(), "a waiting form cannot be answered");
    s.answer(&first, json!({"color": "red"}));
    let shown = s
        .next(|event| match event {
            Event::FormShown { form_id } => Some(form_id.clone()),
            _ => None,
        })
        .await;
    assert_eq!(shown, second);
    s.answer(&second, json!({"agree": true}));
    let mut texts = vec![s.finished().await.unwrap(), s.finished().await.unwrap()];
    texts.sort();
    assert_eq!(
        texts,
        [
            r#"result: {"action":"accept","content":{"agree":true}}"#,
            r#"result: {"action":"accept","content":{"color":"red"}}"#,
        ]
    );
    host.shutdown().await;
}

#[tokio::test]
async fn forms_of_different_sessions_never_wait_on_each_other() {
    let host = host(config("", approve()));
    let mut a = Watch::open(&host);
    let mut b = Watch::open(&host);
    a.call("ask_enum");
    b.call("ask_enum");
    let (form_a, waiting_a) = a.form().await;
    let (form_b, waiting_b) = b.form().await;
    assert!(!waiting_a && !waiting_b);
    b.answer(&form_b, json!({"color": "blue"}));
    assert_eq!(
        b.finished().await.unwrap(),
        r#"result: {"action":"accept","content":{"color":"blue"}}"#
    );
    a.answer(&form_a, json!({"color": "green"}));
    assert_eq!(
        a.finished().await.unwrap(),
        r#"result: {"action":"accept","content":{"color":"green"}}"#
    );
    host.shutdown().await;
}

/// Opens a form, then a second one behind it, then applies `trigger`; both end as cancel
/// with `why`, and the plugin receives `cancel`.
async fn both_forms_cancelled_by(trigger: impl FnOnce(&Watch), why: &str) {
    let host = host(config("", approve()));
    let mut s = Watch::open(&host);
    s.call("ask_enum");
    s.form().await;
    s.call("ask_boolean");
    s.form().await;
    trigger(&s);
    for _ in 0..2 {
        let (_, action, reason) = s.resolved().await;
        assert_eq!((action.as_str(), reason.as_deref()), ("cancel", Some(why)));
    }
    if why != EndReason::Stopped.as_str() {
        for _ in 0..2 {
            assert_eq!(
                s.finished().await.unwrap(),
                r#"result: {"action":"cancel"}"#
            );
        }
    }
    host.shutdown().await;
}

#[tokio::test]
async fn a_new_message_cancels_the_pending_and_the_waiting_form() {
    both_forms_cancelled_by(
        |s| {
            s.send(Command::SendMessage {
                text: "never mind".to_owned(),
            })
        },
        EndReason::NewMessage.as_str(),
    )
    .await;
}

#[tokio::test]
async fn stopping_the_turn_cancels_its_forms_and_calls() {
    let host = host(config("", approve()));
    let mut s = Watch::open(&host);
    s.call("ask_enum");
    s.form().await;
    s.send(Command::StopTurn);
    let (_, action, why) = s.resolved().await;
    assert_eq!(
        (action.as_str(), why.as_deref()),
        ("cancel", Some(EndReason::Stopped.as_str()))
    );
    assert_eq!(s.finished().await.unwrap_err(), "the turn was stopped");
    let ended = s
        .next(|event| match event {
            Event::TurnEnded { reason, .. } => Some(*reason),
            _ => None,
        })
        .await;
    assert_eq!(ended, TurnEndReason::Stopped);
    host.shutdown().await;
}

/// A stopped call is cancelled at the plugin too (`notifications/cancelled`), so a tool that
/// would run on does not.
#[tokio::test]
async fn stopping_a_turn_cancels_its_calls_at_the_plugin() {
    let host = host(config("", approve()));
    let mut s = Watch::open(&host);
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("running");
    s.send(Command::CallTool {
        server: "ts".to_owned(),
        tool: "hold".to_owned(),
        arguments: Some(json!({ "marker": marker })),
    });
    // Stopped only once the tool runs in the plugin.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while !marker.exists() {
        assert!(tokio::time::Instant::now() < deadline, "`hold` never ran");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    s.send(Command::StopTurn);
    assert_eq!(s.finished().await.unwrap_err(), "the turn was stopped");
    s.call("last_abort");
    assert_eq!(
        s.finished().await.unwrap(),
        r#"aborted: "the host no longer waits for it""#
    );
    host.shutdown().await;
}

#[tokio::test]
async fn a_plugin_that_exits_cancels_its_form() {
    let host = host(config("", approve()));
    let mut s = Watch::open(&host);
    s.call("crash_mid_form");
    s.form().await;
    // The form's end and the call's end race; both must come, in either order.
    let (mut resolved, mut error) = (None, None);
    while resolved.is_none() || error.is_none() {
        s.next(|event| match event {
            Event::FormResolved { action, reason, .. } => {
                resolved = Some((action.to_string(), reason.clone()));
                Some(())
            }
            Event::ToolCallFinished {
                error: Some(text), ..
            } => {
                error = Some(text.clone());
                Some(())
            }
            _ => None,
        })
        .await;
    }
    assert_eq!(
        resolved,
        Some((
            "cancel".to_owned(),
            Some(EndReason::PluginGone.as_str().to_owned())
        ))
    );
    let error = error.unwrap();
    assert!(error.contains("went away"), "{error}");
    // The session's next call starts the plugin again.
    s.call("last_abort");
    assert_eq!(s.finished().await.unwrap(), "aborted: null");
    host.shutdown().await;
}

#[tokio::test]
async fn a_ui_gone_past_the_grace_period_cancels_forms_and_a_quick_return_keeps_them() {
    let options = HostOptions {
        ui_grace: Duration::from_millis(400),
        ..HostOptions::default()
    };
    let host = host_with(config("", approve()), options);
    let mut s = Watch::open(&host);
    let ui = host.attach_ui(&s.session).unwrap();
    s.call("ask_enum");
    let (form, _) = s.form().await;
    drop(ui);
    tokio::time::sleep(Duration::from_millis(100)).await;
    let ui = host.attach_ui(&s.session).unwrap();
    tokio::time::sleep(Duration::from_millis(600)).await;
    // Back within the grace period: the form is still open and can be answered.
    s.answer(&form, json!({"color": "red"}));
    assert_eq!(
        s.finished().await.unwrap(),
        r#"result: {"action":"accept","content":{"color":"red"}}"#
    );
    s.call("ask_enum");
    s.form().await;
    drop(ui);
    let (_, action, why) = s.resolved().await;
    assert_eq!(
        (action.as_str(), why.as_deref()),
        ("cancel", Some(EndReason::UiGone.as_str()))
    );
    assert_eq!(
        s.finished().await.unwrap(),
        r#"result: {"action":"cancel"}"#
    );
    host.shutdown().await;
}

#[tokio::test]
async fn the_per_form_time_limit_cancels() {
    let options = HostOptions {
        form_time_limit: Some(Duration::from_millis(300)),
        ..HostOptions::default()
    };
    let host = host_with(config("", approve()), options);
    let mut s = Watch::open(&host);
    s.call("ask_enum");
    s.form().await;
    let (_, action, why) = s.resolved().await;
    assert_eq!(
        (action.as_str(), why.as_deref()),
        ("cancel", Some(EndReason::TimedOut.as_str()))
    );
    assert_eq!(
        s.finished().await.unwrap(),
        r#"result: {"action":"cancel"}"#
    );
    host.shutdown().await;
}

#[tokio::test]
async fn a_form_outside_any_tool_call_is_declined_with_a_diagnostic() {
    let host = host(config("", approve()));
    let mut s = Watch::open(&host);
    s.call("ask_later");
    assert_eq!(s.finished().await.unwrap(), "scheduled");
    let code = s
        .next(|event| match event {
            Event::Diagnostic { code, .. } => Some(code.clone()),
            _ => None,
        })
        .await;
    assert_eq!(code, "elicitation-outside-turn");
    s.call("last_outcome");
    assert_eq!(
        s.finished().await.unwrap(),
        r#"result: {"action":"decline"}"#
    );
    host.shutdown().await;
}
