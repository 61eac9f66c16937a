//! A database of an older schema keeps its transcript.

use super::*;

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
        ALTER TABLE forms DROP COLUMN asked_as;
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
        .record_round("c", 1, &["ask-1".to_owned()], Some("state"))
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
                r#"{"round":1,"asked":["ask-1"],"request_state":true,"state":"state"}"#.to_owned()
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
