//! A restart keeps the transcript; a second open of a live database is refused, through a symlink
//! too.

use super::*;

#[tokio::test]
async fn restart_keeps_the_transcript_and_cancels_what_was_pending() {
    let (_dir, path) = temp_db();
    let store = Store::open(&path).unwrap();
    assert_eq!(store.recovery(), Recovery::default());
    assert_eq!(store.path(), Some(path.as_path()));
    store.create_session("s", Some("Before")).await.unwrap();
    let (message, request, render, rendering) =
        (raw(ARGUMENTS), raw(REQUEST), raw(RENDER), raw(RENDERING));
    store
        .append_entry("s", PlainEntryKind::UserMessage, &message)
        .await
        .unwrap();
    store
        .begin_invocation(NewInvocation {
            id: "running",
            session: "s",
            server: "p",
            tool: "t",
            arguments: Some(&message),
            asked_by: None,
        })
        .await
        .unwrap();
    for (id, resolve) in [("answered", true), ("open-1", false), ("open-2", false)] {
        store
            .insert_form(NewForm {
                id,
                session: "s",
                invocation: Some("running"),
                plugin: "p",
                request: &request,
                render: Some(&render),
                asked_as: None,
            })
            .await
            .unwrap();
        if resolve {
            store
                .resolve_form(
                    id,
                    FormResolution::Declined {
                        reason: Some("user"),
                    },
                )
                .await
                .unwrap();
        }
    }
    store
        .insert_approval(NewApproval {
            id: "card",
            session: "s",
            invocation: None,
            server: "p",
            tool: "t",
            rendering: &rendering,
        })
        .await
        .unwrap();
    let before = snapshot(&store.transcript("s").await.unwrap());
    store.close().await;
    assert!(matches!(
        store.session("s").await.unwrap_err(),
        StoreError::Closed
    ));
    assert!(matches!(
        store.create_session("late", None).await.unwrap_err(),
        StoreError::Closed
    ));

    let store = Store::open(&path).unwrap();
    assert_eq!(
        store.recovery(),
        Recovery {
            forms_cancelled: 2,
            approvals_cancelled: 1,
            invocations_cancelled: 1,
        }
    );
    let transcript = store.transcript("s").await.unwrap();
    // What was there is unchanged; the endings the restart recorded follow, in order.
    assert_eq!(snapshot(&transcript[..before.len()]), before);
    let endings: Vec<(EntryKind, String)> = transcript[before.len()..]
        .iter()
        .map(|entry| (entry.kind, entry.payload.get().to_owned()))
        .collect();
    assert_eq!(
        endings,
        [
            (EntryKind::FormEnd, r#"{"id":"open-1"}"#.to_owned()),
            (EntryKind::FormEnd, r#"{"id":"open-2"}"#.to_owned()),
            (EntryKind::ApprovalEnd, r#"{"id":"card"}"#.to_owned()),
            (EntryKind::InvocationEnd, r#"{"id":"running"}"#.to_owned()),
        ]
    );
    for entry in &transcript {
        match &entry.detail {
            Some(EntryDetail::Form(form)) if form.id == "answered" => {
                assert_eq!(form.status, FormStatus::Declined);
                assert_eq!(form.reason.as_deref(), Some("user"));
            }
            Some(EntryDetail::Form(form)) => {
                assert_eq!(form.status, FormStatus::Cancelled);
                assert_eq!(form.reason.as_deref(), Some(HOST_STOPPED));
                assert!(form.resolved_at.is_some());
                assert_eq!(form.request.get(), REQUEST);
            }
            Some(EntryDetail::Approval(card)) => {
                assert_eq!(card.status, ApprovalStatus::Cancelled);
                assert_eq!(card.reason.as_deref(), Some(HOST_STOPPED));
            }
            Some(EntryDetail::Invocation(call)) => {
                assert_eq!(call.status, InvocationStatus::Cancelled);
                assert_eq!(call.error.as_deref(), Some(HOST_STOPPED));
            }
            None => assert_eq!(entry.payload.get(), ARGUMENTS),
        }
    }
    let session = store.session("s").await.unwrap().unwrap();
    assert_eq!(session.title.as_deref(), Some("Before"));
    store.close().await;

    // A third start finds nothing left to cancel.
    let store = Store::open(&path).unwrap();
    assert_eq!(store.recovery(), Recovery::default());
    store.close().await;
}

/// What a restart must keep: order, kinds and payload text.
fn snapshot(transcript: &[formwork_host::store::TranscriptEntry]) -> Vec<(u64, EntryKind, String)> {
    transcript
        .iter()
        .map(|entry| (entry.seq, entry.kind, entry.payload.get().to_owned()))
        .collect()
}

#[tokio::test]
async fn a_second_open_of_a_live_database_is_refused() {
    let (_dir, path) = temp_db();
    let first = Store::open(&path).unwrap();
    let error = Store::open(&path).unwrap_err();
    assert!(matches!(error, StoreError::Locked { .. }), "{error}");
    assert!(error.to_string().contains(&path.display().to_string()));
    first.close().await;
    Store::open(&path).unwrap().close().await;
}

/// However the database is named (through a symlinked data directory, a symlinked database
/// file, or a path with `..`), a second open finds the live lock and leaves the first host's
/// pending form alone.
#[tokio::test]
async fn a_database_reached_through_a_symlink_finds_the_live_lock() {
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().join("real");
    let path = real.join("formwork.db");
    let first = Store::open(&path).unwrap();
    first.create_session("s1", None).await.unwrap();
    let request = raw(REQUEST);
    first
        .insert_form(NewForm {
            id: "f1",
            session: "s1",
            invocation: None,
            plugin: "p",
            request: &request,
            render: None,
            asked_as: None,
        })
        .await
        .unwrap();

    let linked_dir = dir.path().join("linked-dir");
    std::os::unix::fs::symlink(&real, &linked_dir).unwrap();
    let other_dir = dir.path().join("other");
    std::fs::create_dir(&other_dir).unwrap();
    std::os::unix::fs::symlink(&path, other_dir.join("formwork.db")).unwrap();
    let names = [
        linked_dir.join("formwork.db"),
        other_dir.join("formwork.db"),
        other_dir.join("../real/formwork.db"),
    ];
    for name in &names {
        let error = Store::open(name).unwrap_err();
        assert!(
            matches!(error, StoreError::Locked { .. }),
            "{}: {error}",
            name.display()
        );
        let message = error.to_string();
        assert!(message.contains(&name.display().to_string()), "{message}");
    }
    let form = first.form("f1").await.unwrap().unwrap();
    assert_eq!(form.status, FormStatus::Pending);
    first.close().await;

    // The same database: opened through the symlink, it is the one that cancels the form.
    let again = Store::open(&names[1]).unwrap();
    assert_eq!(again.recovery().forms_cancelled, 1);
    again.close().await;
}
