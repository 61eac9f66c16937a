//! What the store keeps: JSON byte for byte, an app's caller, the transcript in order, typed
//! errors; each test on both engines.

use super::*;

on_both_engines!(
    json_round_trips_byte_for_byte_with_result_parts_apart,
    an_apps_call_keeps_who_asked,
    transcript_is_ordered_and_joined_with_its_rows,
    wrong_ids_and_second_endings_are_typed_errors,
    rounds_apps_model_items_and_deletion,
    concurrent_appends_to_one_session_take_consecutive_seqs,
);

async fn json_round_trips_byte_for_byte_with_result_parts_apart(engine: Engine) {
    let (_dir, store) = fresh(engine).await;
    store.create_session("s1", Some("First")).await.unwrap();

    let message = raw(r#"{"text":"hello","attachments":[],"at":"2025-01-01"}"#);
    store
        .append_entry("s1", PlainEntryKind::UserMessage, &message)
        .await
        .unwrap();

    let arguments = raw(ARGUMENTS);
    store
        .begin_invocation(NewInvocation {
            id: "i1",
            session: "s1",
            server: "files",
            tool: "read",
            arguments: Some(&arguments),
            asked_by: None,
        })
        .await
        .unwrap();
    let result = format!(
        r#"{{"_meta":{META},"isError":true,"content":{CONTENT},"structuredContent":{STRUCTURED},"extra":1}}"#
    );
    let parts = ToolResult::from_json(&result).unwrap();
    store
        .finish_invocation("i1", InvocationOutcome::Completed(parts))
        .await
        .unwrap();

    let invocation = store.invocation("i1").await.unwrap().unwrap();
    assert_eq!(invocation.arguments.unwrap().get(), ARGUMENTS);
    assert_eq!(invocation.content.unwrap().get(), CONTENT);
    assert_eq!(invocation.structured_content.unwrap().get(), STRUCTURED);
    assert_eq!(invocation.meta.unwrap().get(), META);
    assert!(invocation.is_error);
    assert_eq!(invocation.status, InvocationStatus::Completed);
    assert!(invocation.finished_at.is_some());

    let (request, render, answer) = (raw(REQUEST), raw(RENDER), raw(ANSWER));
    store
        .insert_form(NewForm {
            id: "f1",
            session: "s1",
            invocation: Some("i1"),
            plugin: "files",
            request: &request,
            render: Some(&render),
            asked_as: Some(r#""ask-1""#),
        })
        .await
        .unwrap();
    store
        .resolve_form(
            "f1",
            FormResolution::Accepted {
                content: Some(&answer),
            },
        )
        .await
        .unwrap();
    let form = store.form("f1").await.unwrap().unwrap();
    assert_eq!(form.request.get(), REQUEST);
    assert_eq!(form.render.unwrap().get(), RENDER);
    assert_eq!(form.content.unwrap().get(), ANSWER);
    assert_eq!(form.status, FormStatus::Accepted);
    assert_eq!(form.invocation.as_deref(), Some("i1"));
    assert_eq!(form.asked_as.as_deref(), Some(r#""ask-1""#));

    let rendering = raw(RENDERING);
    store
        .insert_approval(NewApproval {
            id: "a1",
            session: "s1",
            invocation: Some("i1"),
            server: "files",
            tool: "rm",
            rendering: &rendering,
        })
        .await
        .unwrap();
    store
        .resolve_approval(
            "a1",
            ApprovalResolution::Answered {
                choice: ApprovalChoice::AllowForSession,
                reason: None,
            },
        )
        .await
        .unwrap();
    let approval = store.approval("a1").await.unwrap().unwrap();
    assert_eq!(approval.rendering.get(), RENDERING);
    assert_eq!(approval.status, ApprovalStatus::Answered);
    assert_eq!(approval.choice, Some(ApprovalChoice::AllowForSession));

    let transcript = store.transcript("s1").await.unwrap();
    assert_eq!(transcript[0].payload.get(), message.get());
}

/// A call an app made keeps the invocation whose app asked.
async fn an_apps_call_keeps_who_asked(engine: Engine) {
    let (_dir, store) = fresh(engine).await;
    store.create_session("s1", None).await.unwrap();
    for (id, asked_by) in [("i1", None), ("i2", Some("i1"))] {
        store
            .begin_invocation(NewInvocation {
                id,
                session: "s1",
                server: "p",
                tool: "t",
                arguments: None,
                asked_by,
            })
            .await
            .unwrap();
    }
    let asked = |id: &'static str| {
        let store = &store;
        async move { store.invocation(id).await.unwrap().unwrap().asked_by }
    };
    assert_eq!(asked("i1").await, None);
    assert_eq!(asked("i2").await.as_deref(), Some("i1"));
}

async fn transcript_is_ordered_and_joined_with_its_rows(engine: Engine) {
    let (_dir, store) = fresh(engine).await;
    store.create_session("s", None).await.unwrap();
    let other = store.create_session("other", None).await.unwrap();
    assert_eq!(other.title, None);

    let user = raw(r#"{"text":"list files"}"#);
    let assistant = raw(r#"{"text":"done"}"#);
    let diagnostic = raw(r#"{"message":"form declined: no active turn"}"#);
    let (request, rendering) = (raw(REQUEST), raw(RENDERING));
    let mut seqs = Vec::new();
    seqs.push(
        store
            .append_entry("s", PlainEntryKind::UserMessage, &user)
            .await
            .unwrap(),
    );
    seqs.push(
        store
            .begin_invocation(NewInvocation {
                id: "call",
                session: "s",
                server: "fs",
                tool: "ls",
                arguments: None,
                asked_by: None,
            })
            .await
            .unwrap(),
    );
    seqs.push(
        store
            .insert_approval(NewApproval {
                id: "card",
                session: "s",
                invocation: Some("call"),
                server: "fs",
                tool: "ls",
                rendering: &rendering,
            })
            .await
            .unwrap(),
    );
    seqs.push(
        store
            .insert_form(NewForm {
                id: "form",
                session: "s",
                invocation: None,
                plugin: "fs",
                request: &request,
                render: None,
                asked_as: None,
            })
            .await
            .unwrap(),
    );
    seqs.push(
        store
            .append_entry("s", PlainEntryKind::Diagnostic, &diagnostic)
            .await
            .unwrap(),
    );
    seqs.push(
        store
            .append_entry("s", PlainEntryKind::AssistantMessage, &assistant)
            .await
            .unwrap(),
    );
    // Another session's entries do not take this session's numbers.
    assert_eq!(
        store
            .append_entry("other", PlainEntryKind::UserMessage, &user)
            .await
            .unwrap(),
        1
    );
    assert_eq!(seqs, [1, 2, 3, 4, 5, 6]);

    store
        .finish_invocation(
            "call",
            InvocationOutcome::Failed {
                error: "plugin went away",
            },
        )
        .await
        .unwrap();

    let transcript = store.transcript("s").await.unwrap();
    let kinds: Vec<EntryKind> = transcript.iter().map(|entry| entry.kind).collect();
    assert_eq!(
        kinds,
        [
            EntryKind::UserMessage,
            EntryKind::Invocation,
            EntryKind::Approval,
            EntryKind::Form,
            EntryKind::Diagnostic,
            EntryKind::AssistantMessage,
            EntryKind::InvocationEnd,
        ]
    );
    assert_eq!(transcript[1].payload.get(), r#"{"id":"call"}"#);
    match &transcript[1].detail {
        Some(EntryDetail::Invocation(call)) => {
            assert_eq!(call.status, InvocationStatus::Failed);
            assert_eq!(call.error.as_deref(), Some("plugin went away"));
            assert!(call.arguments.is_none());
        }
        other => panic!("expected the invocation, got {other:?}"),
    }
    assert!(
        matches!(&transcript[2].detail, Some(EntryDetail::Approval(card)) if card.id == "card")
    );
    assert!(
        matches!(&transcript[3].detail, Some(EntryDetail::Form(form)) if form.render.is_none())
    );
    assert!(transcript[4].detail.is_none());
    assert_eq!(transcript[5].payload.get(), assistant.get());

    let sessions = store.list_sessions().await.unwrap();
    assert_eq!(sessions.len(), 2);
    store.set_session_title("s", Some("Files")).await.unwrap();
    let session = store.session("s").await.unwrap().unwrap();
    assert_eq!(session.title.as_deref(), Some("Files"));
    assert!(session.updated_at >= session.created_at);
}

async fn wrong_ids_and_second_endings_are_typed_errors(engine: Engine) {
    let (_dir, store) = fresh(engine).await;
    store.create_session("s", None).await.unwrap();
    let payload = raw("{}");

    let duplicate = store.create_session("s", None).await.unwrap_err();
    assert!(matches!(
        duplicate,
        StoreError::AlreadyExists {
            kind: "session",
            ..
        }
    ));
    let missing = store
        .append_entry("nope", PlainEntryKind::UserMessage, &payload)
        .await
        .unwrap_err();
    assert!(matches!(
        missing,
        StoreError::NotFound {
            kind: "session",
            ..
        }
    ));
    let missing = store.transcript("nope").await.unwrap_err();
    assert!(matches!(
        missing,
        StoreError::NotFound {
            kind: "session",
            ..
        }
    ));
    let missing = store
        .insert_form(NewForm {
            id: "f",
            session: "s",
            invocation: Some("no-such-call"),
            plugin: "p",
            request: &payload,
            render: None,
            asked_as: None,
        })
        .await
        .unwrap_err();
    assert!(matches!(
        missing,
        StoreError::NotFound {
            kind: "invocation",
            ..
        }
    ));
    let missing = store
        .resolve_form("nope", FormResolution::Declined { reason: None })
        .await
        .unwrap_err();
    assert!(matches!(missing, StoreError::NotFound { kind: "form", .. }));

    // A failed write undoes only itself: the form above left no row and no transcript entry.
    assert!(store.form("f").await.unwrap().is_none());
    assert!(store.transcript("s").await.unwrap().is_empty());

    store
        .insert_form(NewForm {
            id: "f",
            session: "s",
            invocation: None,
            plugin: "p",
            request: &payload,
            render: None,
            asked_as: None,
        })
        .await
        .unwrap();
    store
        .resolve_form("f", FormResolution::Cancelled { reason: "timeout" })
        .await
        .unwrap();
    let late = store
        .resolve_form("f", FormResolution::Accepted { content: None })
        .await
        .unwrap_err();
    assert!(matches!(
        late,
        StoreError::AlreadyResolved {
            kind: "form",
            status: "cancelled",
            ..
        }
    ));
    let form = store.form("f").await.unwrap().unwrap();
    assert_eq!(form.status, FormStatus::Cancelled);
    assert_eq!(form.reason.as_deref(), Some("timeout"));

    let again = store
        .insert_form(NewForm {
            id: "f",
            session: "s",
            invocation: None,
            plugin: "p",
            request: &payload,
            render: None,
            asked_as: None,
        })
        .await
        .unwrap_err();
    assert!(matches!(
        again,
        StoreError::AlreadyExists { kind: "form", .. }
    ));

    assert!(matches!(
        ToolResult::from_json("[1]").unwrap_err(),
        StoreError::ToolResult(_)
    ));
}

/// The rest of the contract: a call's rounds and app, the app's state, the model's items, the
/// Codex thread, and deleting a session with all of it.
async fn rounds_apps_model_items_and_deletion(engine: Engine) {
    let (_dir, store) = fresh(engine).await;
    for session in ["s", "other"] {
        store.create_session(session, None).await.unwrap();
    }
    store
        .begin_invocation(NewInvocation {
            id: "i",
            session: "s",
            server: "p",
            tool: "t",
            arguments: None,
            asked_by: None,
        })
        .await
        .unwrap();
    let asked = ["b".to_owned(), "a".to_owned()];
    store
        .record_round("i", 1, &asked, Some("st\u{e9}\"1"))
        .await
        .unwrap();
    store.record_round("i", 2, &asked[..1], None).await.unwrap();
    let app = AppRecord {
        resource_uri: "ui://p/app.html".to_owned(),
    };
    store.record_app("i", app).await.unwrap();
    let rounds: Vec<(u32, Vec<String>, bool, Option<String>)> = store
        .rounds("i")
        .await
        .unwrap()
        .into_iter()
        .map(|round| (round.round, round.asked, round.request_state, round.state))
        .collect();
    assert_eq!(
        rounds,
        [
            (1, asked.to_vec(), true, Some("st\u{e9}\"1".to_owned())),
            (2, vec!["b".to_owned()], false, None)
        ]
    );

    const CONTEXT: &str = r#"{"z":1,"a":[2.50]}"#;
    store
        .save_app_state("i", AppStatePart::WidgetState, r#"{"old":true}"#.to_owned())
        .await
        .unwrap();
    store
        .save_app_state("i", AppStatePart::WidgetState, r#"{"n":1}"#.to_owned())
        .await
        .unwrap();
    store
        .save_app_state("i", AppStatePart::ModelContext, CONTEXT.to_owned())
        .await
        .unwrap();
    let states = store.app_states("s").await.unwrap();
    assert_eq!(states.len(), 1);
    assert_eq!(states[0].invocation, "i");
    assert_eq!(states[0].model_context.as_ref().unwrap().get(), CONTEXT);
    assert_eq!(states[0].widget_state.as_ref().unwrap().get(), r#"{"n":1}"#);
    let missing = store
        .save_app_state("nope", AppStatePart::WidgetState, "{}".to_owned())
        .await
        .unwrap_err();
    assert!(
        matches!(
            missing,
            StoreError::NotFound {
                kind: "invocation",
                ..
            }
        ),
        "{missing}"
    );

    let items = |texts: &[&str]| {
        texts
            .iter()
            .map(|text| (*text).to_owned())
            .collect::<Vec<_>>()
    };
    store
        .append_model_items("s", items(&[r#"{"b":1,"a":2}"#, "[1]"]))
        .await
        .unwrap();
    store.append_model_items("s", items(&["3"])).await.unwrap();
    store
        .append_model_items("other", items(&["x"]))
        .await
        .unwrap();
    assert_eq!(
        store.model_items("s").await.unwrap(),
        items(&[r#"{"b":1,"a":2}"#, "[1]", "3"])
    );

    store.set_codex_thread("s", "thread-1").await.unwrap();
    let session = store.session("s").await.unwrap().unwrap();
    assert_eq!(session.codex_thread.as_deref(), Some("thread-1"));
    let kinds: Vec<EntryKind> = store
        .transcript("s")
        .await
        .unwrap()
        .iter()
        .map(|entry| entry.kind)
        .collect();
    assert_eq!(
        kinds,
        [
            EntryKind::Invocation,
            EntryKind::InvocationRound,
            EntryKind::InvocationRound,
            EntryKind::InvocationApp
        ]
    );

    store.delete_session("s").await.unwrap();
    store.delete_session("s").await.unwrap();
    assert!(store.session("s").await.unwrap().is_none());
    assert!(store.invocation("i").await.unwrap().is_none());
    assert!(store.app_states("s").await.unwrap().is_empty());
    assert!(store.model_items("s").await.unwrap().is_empty());
    assert!(store.rounds("i").await.unwrap().is_empty());
    assert_eq!(store.model_items("other").await.unwrap(), items(&["x"]));
    let ids: Vec<String> = store
        .list_sessions()
        .await
        .unwrap()
        .into_iter()
        .map(|session| session.id)
        .collect();
    assert_eq!(ids, ["other"]);
}

/// Writers of one session at once: each append gets its own `seq`, with none skipped, and each
/// model item its own place.
async fn concurrent_appends_to_one_session_take_consecutive_seqs(engine: Engine) {
    const WRITERS: u64 = 50;
    let (_dir, store) = fresh(engine).await;
    store.create_session("s", None).await.unwrap();
    let mut tasks = tokio::task::JoinSet::new();
    for idx in 0..WRITERS {
        let store = store.clone();
        tasks.spawn(async move {
            let message = raw(&format!(r#"{{"n":{idx}}}"#));
            let seq = store
                .append_entry("s", PlainEntryKind::UserMessage, &message)
                .await
                .unwrap();
            store
                .append_model_items("s", vec![idx.to_string()])
                .await
                .unwrap();
            seq
        });
    }
    let mut seqs = Vec::new();
    while let Some(seq) = tasks.join_next().await {
        seqs.push(seq.unwrap());
    }
    seqs.sort_unstable();
    assert_eq!(seqs, (1..=WRITERS).collect::<Vec<_>>());
    let transcript = store.transcript("s").await.unwrap();
    assert_eq!(transcript.len() as u64, WRITERS);
    let mut items: Vec<u64> = store
        .model_items("s")
        .await
        .unwrap()
        .iter()
        .map(|item| item.parse().unwrap())
        .collect();
    items.sort_unstable();
    assert_eq!(items, (0..WRITERS).collect::<Vec<_>>());
}
