//! Answers and approvals stored before they go on, and the diagnostics of declined forms.

use super::*;

/// A host over a store at `path`, and a second connection to the same database through which
/// a test makes the store misbehave the way a disk can (refusing writes, holding the lock).
async fn stored_host(path: &std::path::Path, server_extra: &str) -> (Host, rusqlite::Connection) {
    let store = formwork_host::store::Store::open(path).unwrap();
    let host = Host::with_store(config("", server_extra), HostOptions::default(), store)
        .await
        .unwrap();
    let meddler = rusqlite::Connection::open(path).unwrap();
    meddler.busy_timeout(Duration::from_secs(10)).unwrap();
    (host, meddler)
}

/// The events of the session as JSON, from the first that `from` accepts.
fn events_from(host: &Host, session: &str, from: impl Fn(&Value) -> bool) -> Vec<Value> {
    let events: Vec<Value> = host
        .events(session)
        .unwrap()
        .iter()
        .map(|event| serde_json::to_value(event.as_ref()).unwrap())
        .collect();
    let start = events.iter().position(from).unwrap();
    events[start..].to_vec()
}

/// While the store cannot commit, the answer does not reach the plugin; it gets there once the
/// answer is stored.
#[tokio::test]
async fn an_answer_reaches_the_plugin_only_once_it_is_stored() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("formwork.db");
    let (host, meddler) = stored_host(&path, approve()).await;
    let mut s = Watch::open(&host);
    s.call("ask_enum");
    let (form, _) = s.form().await;
    let stored = |meddler: &rusqlite::Connection| -> String {
        meddler
            .query_row("SELECT status FROM forms WHERE id = ?1", [&form], |row| {
                row.get(0)
            })
            .unwrap_or_default()
    };
    // The form's row is in; from now on the writer waits for the lock this connection holds.
    while stored(&meddler) != "pending" {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    meddler.execute_batch("BEGIN IMMEDIATE").unwrap();
    s.answer(&form, json!({"color": "green"}));
    let early = tokio::time::timeout(Duration::from_secs(1), s.finished()).await;
    assert!(
        early.is_err(),
        "the plugin had the answer before it was stored: {early:?}"
    );
    meddler.execute_batch("COMMIT").unwrap();
    assert_eq!(
        s.finished().await.unwrap(),
        r#"result: {"action":"accept","content":{"color":"green"}}"#
    );
    assert_eq!(stored(&meddler), "accepted");
    host.shutdown().await;
}

/// An answer the store refuses never reaches the plugin: it gets `cancel`, the card ends again
/// as cancelled (`not-stored`), and a diagnostic names the store's error.
#[tokio::test]
async fn an_answer_that_cannot_be_stored_ends_the_form_as_cancel() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("formwork.db");
    let (host, meddler) = stored_host(&path, approve()).await;
    meddler
        .execute_batch(
            "CREATE TRIGGER refuse_answers BEFORE UPDATE OF status ON forms
             WHEN NEW.status = 'accepted'
             BEGIN SELECT RAISE(ABORT, 'the disk refused the answer'); END;",
        )
        .unwrap();
    let mut s = Watch::open(&host);
    s.call("ask_enum");
    let (form, _) = s.form().await;
    s.answer(&form, json!({"color": "red"}));
    assert_eq!(
        s.finished().await.unwrap(),
        r#"result: {"action":"cancel"}"#
    );
    let session = s.session.clone();
    let ended = events_from(&host, &session, |event| event["type"] == "form_resolved");
    assert_eq!(
        ended[..3],
        [
            json!({"type": "form_resolved", "form_id": form, "action": "accept", "content": {"color": "red"}}),
            json!({"type": "form_resolved", "form_id": form, "action": "cancel", "reason": "not-stored"}),
            json!({"type": "diagnostic", "code": "answer-not-stored", "message": format!(
                "the answer to form {form} could not be stored, so the plugin was told `cancel`: \
                 database error: the disk refused the answer"
            )}),
        ]
    );
    assert_eq!(ended[3]["type"], "tool_call_finished");
    host.shutdown().await;
    // What the store kept is what the plugin got.
    let status: (String, Option<String>, Option<String>) = meddler
        .query_row(
            "SELECT status, reason, content FROM forms WHERE id = ?1",
            [&form],
            |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)),
        )
        .unwrap();
    assert_eq!(
        status,
        ("cancelled".to_owned(), Some("not-stored".to_owned()), None)
    );
}

/// An approval the store refuses does not let the call run: it fails as cancelled.
#[tokio::test]
async fn an_approval_that_cannot_be_stored_cancels_the_call() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("formwork.db");
    let (host, meddler) = stored_host(&path, "default_tools_approval_mode = \"prompt\"").await;
    meddler
        .execute_batch(
            "CREATE TRIGGER refuse_allow BEFORE UPDATE OF status ON approvals
             WHEN NEW.choice = 'allow'
             BEGIN SELECT RAISE(ABORT, 'the disk refused the answer'); END;",
        )
        .unwrap();
    let mut s = Watch::open(&host);
    s.call("ask_enum");
    let approval = s
        .next(|event| match event {
            Event::ApprovalRequested { approval_id, .. } => Some(approval_id.clone()),
            _ => None,
        })
        .await;
    s.send(Command::AnswerApproval {
        approval_id: approval.clone(),
        choice: formwork_host::policy::ApprovalChoice::Allow,
    });
    assert_eq!(
        s.finished().await.unwrap_err(),
        "user cancelled MCP tool call"
    );
    let session = s.session.clone();
    let ended = events_from(&host, &session, |event| {
        event["type"] == "approval_resolved"
    });
    assert_eq!(
        ended[..4],
        [
            json!({"type": "approval_resolved", "approval_id": approval, "choice": "allow",
                   "reason": "the person allowed this call of tool \"ask_enum\" of server ts"}),
            json!({"type": "approval_resolved", "approval_id": approval, "choice": "deny", "cancelled": true,
                   "reason": "approval of tool \"ask_enum\" of server ts cancelled: not-stored"}),
            json!({"type": "diagnostic", "code": "answer-not-stored", "message": format!(
                "the answer to approval {approval} could not be stored, so the tool call does \
                 not run: database error: the disk refused the answer"
            )}),
            json!({"type": "tool_call_finished", "call_id": ended[3]["call_id"],
                   "error": "user cancelled MCP tool call"}),
        ]
    );
    host.shutdown().await;
}

/// A plugin that makes the session decline form after form writes a bounded number of
/// diagnostics into the transcript: a burst of 20, then one a second.
#[tokio::test]
async fn declined_forms_bring_a_bounded_number_of_diagnostics() {
    let host = host(config("[forms]\nmax_pending = 1", approve()));
    let s = Watch::open(&host);
    s.send(Command::CallTool {
        server: "ts".to_owned(),
        tool: "ask_many".to_owned(),
        arguments: Some(json!({ "count": 60 })),
    });
    let form = until_logged(&host, &s.session, "the one form", |events| {
        events.iter().find_map(|event| match &**event {
            Event::FormRequested { form_id, .. } => Some(form_id.clone()),
            _ => None,
        })
    })
    .await;
    // The other 59 are declined as they come; the call ends once the one shown is answered.
    tokio::time::sleep(Duration::from_millis(500)).await;
    s.answer(&form, json!({"agree": true}));
    let diagnostics = until_logged(&host, &s.session, "the call's end", |events| {
        let finished = events
            .iter()
            .any(|event| matches!(&**event, Event::ToolCallFinished { .. }));
        finished.then(|| {
            events
                .iter()
                .filter(|event| matches!(&***event, Event::Diagnostic { .. }))
                .count()
        })
    })
    .await;
    assert!(
        (20..=23).contains(&diagnostics),
        "{diagnostics} diagnostics"
    );
    host.shutdown().await;
}

/// A cancelled approval says so in a field of its own, not only in its reason, live and after
/// a restart; an answered one does not.
#[tokio::test]
async fn a_cancelled_approval_is_marked_cancelled() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("formwork.db");
    let (host, _meddler) = stored_host(&path, "default_tools_approval_mode = \"prompt\"").await;
    let mut s = Watch::open(&host);
    s.call("ask_enum");
    s.next(|event| matches!(event, Event::ApprovalRequested { .. }).then_some(()))
        .await;
    s.send(Command::StopTurn);
    let resolved = s
        .next(|event| match event {
            Event::ApprovalResolved { .. } => Some(serde_json::to_value(event).unwrap()),
            _ => None,
        })
        .await;
    assert_eq!(resolved["choice"], "deny");
    assert_eq!(resolved["cancelled"], true, "{resolved}");
    assert_eq!(
        resolved["reason"],
        "approval of tool \"ask_enum\" of server ts cancelled: stopped"
    );
    let session = s.session.clone();
    host.shutdown().await;
    let (host, _meddler) = stored_host(&path, "default_tools_approval_mode = \"prompt\"").await;
    let replayed: Vec<Value> = host
        .events(&session)
        .unwrap()
        .iter()
        .filter(|event| matches!(&***event, Event::ApprovalResolved { .. }))
        .map(|event| serde_json::to_value(&**event).unwrap())
        .collect();
    assert_eq!(replayed, [resolved]);
    host.shutdown().await;
}
