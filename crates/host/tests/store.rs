//! The persistence layer at its boundary: a real SQLite file on disk, reopened as a restarted
//! host would, written by a thousand tasks at once, and killed with SIGKILL mid-write.
//!
//! The kill test re-executes this test binary as a child (`STORE_CHILD` selects what it does);
//! the child's functions are ordinary tests that return at once when the variable is unset.
#![allow(clippy::unwrap_used)]

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime};

use formwork_host::store::{
    ApprovalChoice, ApprovalResolution, ApprovalStatus, EntryDetail, EntryKind, FormResolution,
    FormStatus, HOST_STOPPED, InvocationOutcome, InvocationStatus, NewApproval, NewForm,
    NewInvocation, PlainEntryKind, Recovery, Store, StoreError, ToolResult,
};
use serde_json::value::RawValue;

/// Selects a child mode when this binary is re-executed by a test.
const CHILD_ENV: &str = "STORE_CHILD";
/// The database the child writes to.
const CHILD_DB_ENV: &str = "STORE_CHILD_DB";

fn raw(text: &str) -> Box<RawValue> {
    RawValue::from_string(text.to_owned()).unwrap()
}

fn temp_db() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("data").join("formwork.db");
    (dir, path)
}

// JSON deliberately out of alphabetical order, with spellings a re-serialiser would change.
const ARGUMENTS: &str = r#"{"zeta":1,"alpha":{"y":[1.50,1e3,-0.0],"b":"\u00e9\n"},"m":null}"#;
const CONTENT: &str =
    r#"[{"type":"text","text":"hi","annotations":{"priority":1,"audience":["user"]}}]"#;
const STRUCTURED: &str = r#"{"total":12.0,"items":[{"z":1,"a":2}]}"#;
const META: &str = r#"{"progressToken":7,"io.formwork/trace":{"b":1,"a":0}}"#;
const REQUEST: &str = r#"{"mode":"form","message":"Who?","requestedSchema":{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"}},"required":["name"]},"_meta":{"z":1,"a":2}}"#;
const RENDER: &str =
    r#"{"fields":[{"key":"name","widget":"text"},{"key":"age","widget":"number"}]}"#;
const ANSWER: &str = r#"{"name":"Ada","age":36}"#;
const RENDERING: &str =
    r#"{"title":"Run rm?","destructive":true,"args":{"path":"/tmp/x","force":false}}"#;

#[tokio::test]
async fn json_round_trips_byte_for_byte_with_result_parts_apart() {
    let store = Store::open_in_memory().unwrap();
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
#[tokio::test]
async fn an_apps_call_keeps_who_asked() {
    let store = Store::open_in_memory().unwrap();
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

#[tokio::test]
async fn transcript_is_ordered_and_joined_with_its_rows() {
    let store = Store::open_in_memory().unwrap();
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

#[tokio::test]
async fn wrong_ids_and_second_endings_are_typed_errors() {
    let store = Store::open_in_memory().unwrap();
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

/// The mode bits of `path`.
fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
}

/// Every directory the store creates is 0700 and every file 0600, `-wal` and `-shm` included,
/// under the usual umask that would make them 0755 and 0644.
#[tokio::test]
async fn the_data_directory_and_the_database_files_are_private() {
    nix::sys::stat::umask(nix::sys::stat::Mode::from_bits_truncate(0o022));
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("a/b/data");
    let path = Store::path_in(&data);
    let store = Store::open(&path).unwrap();
    store.create_session("s1", None).await.unwrap();
    let message = raw(r#"{"text":"a secret answer"}"#);
    store
        .append_entry("s1", PlainEntryKind::UserMessage, &message)
        .await
        .unwrap();
    let report = |names: &[&str]| -> Vec<String> {
        names
            .iter()
            .map(|name| format!("{name} {:o}", mode(&dir.path().join(name))))
            .collect()
    };
    assert_eq!(
        report(&["a", "a/b", "a/b/data"]),
        ["a 700", "a/b 700", "a/b/data 700"]
    );
    assert_eq!(
        report(&[
            "a/b/data/formwork.db",
            "a/b/data/formwork.db-wal",
            "a/b/data/formwork.db-shm",
            "a/b/data/formwork.db.lock"
        ]),
        [
            "a/b/data/formwork.db 600",
            "a/b/data/formwork.db-wal 600",
            "a/b/data/formwork.db-shm 600",
            "a/b/data/formwork.db.lock 600"
        ]
    );
    store.close().await;
}

/// A database left readable by others (an older formwork, a copy) is made private when opened;
/// a data directory that existed before is the person's and keeps its mode.
#[tokio::test]
async fn an_existing_database_readable_by_others_is_made_private() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = Store::path_in(&data);
    let conn = rusqlite::Connection::open(&path).unwrap();
    let journal: String = conn
        .query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0))
        .unwrap();
    assert_eq!(journal, "wal");
    conn.execute_batch("CREATE TABLE t (x); INSERT INTO t VALUES (1);")
        .unwrap();
    let files = [
        "formwork.db",
        "formwork.db-wal",
        "formwork.db-shm",
        "formwork.db.lock",
    ]
    .map(|name| data.join(name));
    std::fs::write(&files[3], b"").unwrap();
    for file in &files {
        std::fs::set_permissions(file, std::fs::Permissions::from_mode(0o644)).unwrap();
    }
    let store = Store::open(&path).unwrap();
    let modes: Vec<String> = files
        .iter()
        .map(|file| format!("{:o}", mode(file)))
        .collect();
    assert_eq!(modes, ["600", "600", "600", "600"]);
    assert_eq!(format!("{:o}", mode(&data)), "755");
    store.close().await;
    drop(conn);
}

#[test]
fn a_corrupt_or_newer_database_is_refused_with_its_path() {
    let (_dir, path) = temp_db();
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(
        &path,
        b"this is not a database, just some text that is long enough",
    )
    .unwrap();
    let error = Store::open(&path).unwrap_err();
    assert!(matches!(error, StoreError::Corrupt { .. }), "{error}");
    let message = error.to_string();
    assert!(message.contains(&path.display().to_string()), "{message}");
    assert!(message.contains("corrupt"), "{message}");

    std::fs::remove_file(&path).unwrap();
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.pragma_update(None, "user_version", 99).unwrap();
    drop(conn);
    let error = Store::open(&path).unwrap_err();
    assert!(
        matches!(error, StoreError::SchemaTooNew { found: 99, .. }),
        "{error}"
    );
    assert!(error.to_string().contains(&path.display().to_string()));
}

#[test]
fn default_path_follows_formwork_data_dir() {
    let output = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "default_path_child",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, "default-path")
        .env("FORMWORK_DATA_DIR", "/srv/formwork-data")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains("path=/srv/formwork-data/formwork.db\n"),
        "{stdout}"
    );
    let path = Store::path_in(Path::new("/x"));
    assert_eq!(path, Path::new("/x/formwork.db"));
}

/// Child mode of [`default_path_follows_formwork_data_dir`].
#[test]
fn default_path_child() {
    if std::env::var(CHILD_ENV).as_deref() != Ok("default-path") {
        return;
    }
    let path = Store::default_path().unwrap();
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "path={}", path.display()).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_concurrent_writers_are_all_acknowledged() {
    const SESSIONS: usize = 1000;
    const MESSAGES: usize = 3;
    let (_dir, path) = temp_db();
    let store = Store::open(&path).unwrap();
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for idx in 0..SESSIONS {
        let store = store.clone();
        tasks.spawn(async move {
            let session = format!("s{idx}");
            let form = format!("f{idx}");
            let request = raw(REQUEST);
            store.create_session(&session, None).await.unwrap();
            store
                .insert_form(NewForm {
                    id: &form,
                    session: &session,
                    invocation: None,
                    plugin: "p",
                    request: &request,
                    render: None,
                })
                .await
                .unwrap();
            for turn in 0..MESSAGES {
                let message = raw(&format!(r#"{{"text":"message {turn}"}}"#));
                store
                    .append_entry(&session, PlainEntryKind::UserMessage, &message)
                    .await
                    .unwrap();
            }
        });
    }
    while let Some(done) = tasks.join_next().await {
        done.unwrap();
    }
    let elapsed = started.elapsed();
    let writes = SESSIONS * (2 + MESSAGES);
    let stats = store.stats();
    eprintln!(
        "{writes} acknowledged writes from {SESSIONS} concurrent tasks in {elapsed:?} \
         ({:.0} writes/s) in {} transactions",
        writes as f64 / elapsed.as_secs_f64(),
        stats.transactions
    );
    assert_eq!(stats.writes, writes as u64);
    // Group commit: far fewer transactions (and WAL syncs) than writes.
    assert!(
        stats.transactions * 5 < stats.writes,
        "{stats:?}: writes were not grouped"
    );

    let sessions = store.list_sessions().await.unwrap();
    assert_eq!(sessions.len(), SESSIONS);
    for idx in (0..SESSIONS).step_by(97) {
        let transcript = store.transcript(&format!("s{idx}")).await.unwrap();
        assert_eq!(transcript.len(), 1 + MESSAGES);
        assert!(matches!(&transcript[0].detail,
            Some(EntryDetail::Form(form)) if form.status == FormStatus::Pending));
    }
    store.close().await;
    assert_eq!(
        Store::open(&path).unwrap().recovery().forms_cancelled,
        SESSIONS as u64
    );
}

/// Several rounds of: start a child that writes as fast as it can and prints every id the store
/// acknowledged, SIGKILL it at a random moment, then check the file and every printed id.
#[test]
fn kill_nine_loses_no_acknowledged_write() {
    const ROUNDS: u32 = 6;
    let (_dir, path) = temp_db();
    let mut random = Random::seeded();
    let mut total = 0;
    for round in 0..ROUNDS {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "kill_nine_child",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD_ENV, format!("kill-nine:{round}"))
            .env(CHILD_DB_ENV, &path)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (lines, received) = mpsc::channel();
        let reader = std::thread::spawn(move || {
            let mut stdout = BufReader::new(stdout);
            let mut line = Vec::new();
            // Only whole lines count: the kill may cut the last one short.
            while stdout.read_until(b'\n', &mut line).unwrap_or(0) > 0 {
                if line.ends_with(b"\n") {
                    let text = String::from_utf8_lossy(&line).trim_end().to_owned();
                    if lines.send(text).is_err() {
                        break;
                    }
                }
                line.clear();
            }
        });
        // Kill only once writes are flowing, then at a random moment within them.
        let mut acknowledged = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(10);
        while !acknowledged
            .iter()
            .any(|line: &String| line.starts_with("ack "))
        {
            let line = received
                .recv_timeout(deadline.saturating_duration_since(Instant::now()))
                .expect("the child acknowledged no write in time");
            acknowledged.push(line);
        }
        std::thread::sleep(Duration::from_millis(random.below(400) + 20));
        child.kill().unwrap(); // SIGKILL on Unix.
        child.wait().unwrap();
        reader.join().unwrap();
        acknowledged.extend(received.try_iter());
        let acks: Vec<&str> = acknowledged
            .iter()
            .filter_map(|line| line.strip_prefix("ack "))
            .collect();
        total += acks.len();
        check_after_kill(&path, &acks);
    }
    eprintln!("{total} acknowledged writes checked over {ROUNDS} kills");
}

/// The file is intact and holds every acknowledged write.
fn check_after_kill(path: &Path, acks: &[&str]) {
    let conn = rusqlite::Connection::open(path).unwrap();
    let integrity: String = conn
        .query_row("PRAGMA integrity_check", [], |row| row.get(0))
        .unwrap();
    assert_eq!(integrity, "ok");
    let count = |sql: &str, params: &[&dyn rusqlite::ToSql]| -> i64 {
        conn.query_row(sql, params, |row| row.get(0)).unwrap()
    };
    for ack in acks {
        let fields: Vec<&str> = ack.split(' ').collect();
        match fields.as_slice() {
            ["session", id] => assert_eq!(
                count("SELECT COUNT(*) FROM sessions WHERE id = ?1", &[id]),
                1,
                "{ack}"
            ),
            ["form", id] => assert_eq!(
                count("SELECT COUNT(*) FROM forms WHERE id = ?1", &[id]),
                1,
                "{ack}"
            ),
            ["resolved", id] => assert_eq!(
                count(
                    "SELECT COUNT(*) FROM forms WHERE id = ?1 AND status = 'accepted'",
                    &[id]
                ),
                1,
                "{ack}"
            ),
            ["entry", session, seq] => {
                let seq: i64 = seq.parse().unwrap();
                assert_eq!(
                    count(
                        "SELECT COUNT(*) FROM transcript WHERE session_id = ?1 AND seq = ?2",
                        &[session, &seq]
                    ),
                    1,
                    "{ack}"
                );
            }
            _ => panic!("unexpected line from the child: {ack}"),
        }
    }
    drop(conn);
    // Opening as a host would: forms left pending by the killed child are cancelled.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let store = Store::open(path).unwrap();
        for ack in acks {
            if let Some(id) = ack.strip_prefix("form ") {
                let form = store.form(id).await.unwrap().unwrap();
                match form.status {
                    FormStatus::Accepted => {}
                    FormStatus::Cancelled => {
                        assert_eq!(form.reason.as_deref(), Some(HOST_STOPPED));
                    }
                    status => panic!("form {id} is {status}"),
                }
            }
        }
        store.close().await;
    });
}

/// Child mode of [`kill_nine_loses_no_acknowledged_write`]: writes until killed.
#[test]
fn kill_nine_child() {
    let Some(round) = std::env::var(CHILD_ENV)
        .ok()
        .and_then(|mode| mode.strip_prefix("kill-nine:").map(str::to_owned))
    else {
        return;
    };
    let path = std::env::var_os(CHILD_DB_ENV).unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async move {
        let store = Store::open(Path::new(&path)).unwrap();
        let mut tasks = tokio::task::JoinSet::new();
        for task in 0..32 {
            let store = store.clone();
            let session = format!("r{round}-t{task}");
            tasks.spawn(async move {
                store.create_session(&session, None).await.unwrap();
                acknowledge(&format!("session {session}"));
                let request = raw(REQUEST);
                let answer = raw(ANSWER);
                for n in 0.. {
                    let form = format!("{session}-f{n}");
                    let seq = store
                        .insert_form(NewForm {
                            id: &form,
                            session: &session,
                            invocation: None,
                            plugin: "p",
                            request: &request,
                            render: None,
                        })
                        .await
                        .unwrap();
                    acknowledge(&format!("form {form}"));
                    acknowledge(&format!("entry {session} {seq}"));
                    if n % 2 == 0 {
                        store
                            .resolve_form(
                                &form,
                                FormResolution::Accepted {
                                    content: Some(&answer),
                                },
                            )
                            .await
                            .unwrap();
                        acknowledge(&format!("resolved {form}"));
                    }
                }
            });
        }
        while tasks.join_next().await.is_some() {}
    });
}

/// Prints one acknowledged id as a whole line in one write.
fn acknowledge(what: &str) {
    let line = format!("ack {what}\n");
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(line.as_bytes()).unwrap();
    stdout.flush().unwrap();
}

/// A small xorshift generator; the seed is printed so a failing round can be replayed.
struct Random(u64);

impl Random {
    fn seeded() -> Self {
        let nanos = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap()
            .subsec_nanos();
        let seed = u64::from(nanos) | 1;
        eprintln!("kill timing seed {seed}");
        Random(seed)
    }

    fn below(&mut self, bound: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % bound
    }
}

/// A database of schema 1 (before `invocation_round` entries and MCP Apps) opens with its
/// transcript intact, and then takes rounds.
#[tokio::test]
async fn a_schema_1_database_keeps_its_transcript_and_takes_rounds() {
    let (_dir, path) = temp_db();
    let store = Store::open(&path).unwrap();
    store.create_session("s", None).await.unwrap();
    store
        .append_entry("s", PlainEntryKind::UserMessage, &raw(r#"{"text":"hi"}"#))
        .await
        .unwrap();
    store.close().await;
    // Back to schema 1: the transcript table as that version made it, with its rows.
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch(
        "CREATE TABLE transcript_v1 (
            session_id  TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
            seq         INTEGER NOT NULL CHECK (seq > 0),
            kind        TEXT NOT NULL CHECK (kind IN ('user_message', 'assistant_message',
                            'invocation', 'form', 'approval', 'diagnostic',
                            'invocation_end', 'form_end', 'approval_end')),
            ref_id      TEXT,
            payload     TEXT NOT NULL,
            at          INTEGER NOT NULL,
            PRIMARY KEY (session_id, seq)
        ) STRICT;
        INSERT INTO transcript_v1 SELECT * FROM transcript;
        DROP TABLE transcript;
        ALTER TABLE transcript_v1 RENAME TO transcript;
        DROP TABLE app_state;
        DROP TABLE model_items;
        ALTER TABLE sessions DROP COLUMN codex_thread;
        ALTER TABLE invocations DROP COLUMN asked_by;
        PRAGMA user_version = 1;",
    )
    .unwrap();
    drop(conn);

    let store = Store::open(&path).unwrap();
    store
        .begin_invocation(NewInvocation {
            id: "c",
            session: "s",
            server: "p",
            tool: "t",
            arguments: None,
            asked_by: None,
        })
        .await
        .unwrap();
    store
        .record_round("c", 1, &["ask-1".to_owned()], true)
        .await
        .unwrap();
    let kinds: Vec<(u64, EntryKind, String)> = store
        .transcript("s")
        .await
        .unwrap()
        .iter()
        .map(|entry| (entry.seq, entry.kind, entry.payload.get().to_owned()))
        .collect();
    assert_eq!(
        kinds,
        [
            (1, EntryKind::UserMessage, r#"{"text":"hi"}"#.to_owned()),
            (2, EntryKind::Invocation, r#"{"id":"c"}"#.to_owned()),
            (
                3,
                EntryKind::InvocationRound,
                r#"{"round":1,"asked":["ask-1"],"request_state":true}"#.to_owned()
            ),
        ]
    );
    let rounds = store.rounds("c").await.unwrap();
    assert_eq!(
        (
            rounds[0].round,
            rounds[0].asked.clone(),
            rounds[0].request_state
        ),
        (1, vec!["ask-1".to_owned()], true)
    );
}
