//! The database schema, its migrations, connection settings and the recovery run at open.
//!
//! The schema version lives in SQLite's `user_version`. Each entry of [`MIGRATIONS`] moves the
//! database one version up, in its own transaction; released migrations are never edited, new
//! ones are appended.

use std::path::Path;

use rusqlite::{Connection, params};

use crate::store::error::StoreError;
use crate::store::records::{HOST_STOPPED, Recovery, UnixMillis};

/// The schema version this build writes.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// `MIGRATIONS[n]` upgrades a database from version `n` to `n + 1`.
///
/// JSON columns are TEXT holding the caller's exact text (never re-serialised), so key order
/// is kept. Times are Unix milliseconds.
const MIGRATIONS: &[&str] = &[
    // 0 → 1: the first schema.
    r#"
    CREATE TABLE sessions (
        id          TEXT PRIMARY KEY NOT NULL,
        title       TEXT,
        created_at  INTEGER NOT NULL,
        updated_at  INTEGER NOT NULL
    ) STRICT;

    CREATE TABLE invocations (
        id                  TEXT PRIMARY KEY NOT NULL,
        session_id          TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        server              TEXT NOT NULL,
        tool                TEXT NOT NULL,
        arguments           TEXT,
        status              TEXT NOT NULL
            CHECK (status IN ('running', 'completed', 'failed', 'cancelled')),
        content             TEXT,
        structured_content  TEXT,
        meta                TEXT,
        is_error            INTEGER NOT NULL DEFAULT 0 CHECK (is_error IN (0, 1)),
        error               TEXT,
        started_at          INTEGER NOT NULL,
        finished_at         INTEGER
    ) STRICT;
    CREATE INDEX invocations_by_session ON invocations(session_id);
    CREATE INDEX invocations_running ON invocations(status) WHERE status = 'running';

    CREATE TABLE forms (
        id             TEXT PRIMARY KEY NOT NULL,
        session_id     TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        invocation_id  TEXT REFERENCES invocations(id) ON DELETE SET NULL,
        plugin         TEXT NOT NULL,
        request        TEXT NOT NULL,
        render         TEXT,
        status         TEXT NOT NULL
            CHECK (status IN ('pending', 'accepted', 'declined', 'cancelled')),
        content        TEXT,
        reason         TEXT,
        created_at     INTEGER NOT NULL,
        resolved_at    INTEGER
    ) STRICT;
    CREATE INDEX forms_by_session ON forms(session_id);
    CREATE INDEX forms_pending ON forms(status) WHERE status = 'pending';

    CREATE TABLE approvals (
        id             TEXT PRIMARY KEY NOT NULL,
        session_id     TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        invocation_id  TEXT REFERENCES invocations(id) ON DELETE SET NULL,
        server         TEXT NOT NULL,
        tool           TEXT NOT NULL,
        rendering      TEXT NOT NULL,
        status         TEXT NOT NULL CHECK (status IN ('pending', 'answered', 'cancelled')),
        choice         TEXT
            CHECK (choice IN ('allow', 'allow_for_session', 'always_allow', 'deny')),
        reason         TEXT,
        created_at     INTEGER NOT NULL,
        resolved_at    INTEGER
    ) STRICT;
    CREATE INDEX approvals_by_session ON approvals(session_id);
    CREATE INDEX approvals_pending ON approvals(status) WHERE status = 'pending';

    -- kind: user_message | assistant_message | invocation | form | approval | diagnostic, and
    -- invocation_end | form_end | approval_end where a referenced row ended.
    -- ref_id names the invocations/forms/approvals row of reference kinds.
    CREATE TABLE transcript (
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
    "#,
    // 1 → 2: a transcript entry kind for the `input_required` rounds of a call (2026-07-28),
    // `invocation_round`, whose ref_id names the invocation. SQLite cannot alter a CHECK, so the
    // table is built anew and its rows copied.
    r#"
    CREATE TABLE transcript_v2 (
        session_id  TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        seq         INTEGER NOT NULL CHECK (seq > 0),
        kind        TEXT NOT NULL CHECK (kind IN ('user_message', 'assistant_message',
                        'invocation', 'form', 'approval', 'diagnostic',
                        'invocation_end', 'form_end', 'approval_end', 'invocation_round')),
        ref_id      TEXT,
        payload     TEXT NOT NULL,
        at          INTEGER NOT NULL,
        PRIMARY KEY (session_id, seq)
    ) STRICT;
    INSERT INTO transcript_v2 (session_id, seq, kind, ref_id, payload, at)
        SELECT session_id, seq, kind, ref_id, payload, at FROM transcript;
    DROP TABLE transcript;
    ALTER TABLE transcript_v2 RENAME TO transcript;
    "#,
    // 2 → 3: MCP Apps. The entry kind `invocation_app` says which UI resource a call declared
    // (its ref_id names the invocation), rebuilt in like 1 → 2; `app_state` keeps what an app
    // left behind per invocation: the model context it set and a widget's saved state, each the
    // JSON text as the app sent it.
    r#"
    CREATE TABLE transcript_v3 (
        session_id  TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        seq         INTEGER NOT NULL CHECK (seq > 0),
        kind        TEXT NOT NULL CHECK (kind IN ('user_message', 'assistant_message',
                        'invocation', 'form', 'approval', 'diagnostic',
                        'invocation_end', 'form_end', 'approval_end', 'invocation_round',
                        'invocation_app')),
        ref_id      TEXT,
        payload     TEXT NOT NULL,
        at          INTEGER NOT NULL,
        PRIMARY KEY (session_id, seq)
    ) STRICT;
    INSERT INTO transcript_v3 (session_id, seq, kind, ref_id, payload, at)
        SELECT session_id, seq, kind, ref_id, payload, at FROM transcript;
    DROP TABLE transcript;
    ALTER TABLE transcript_v3 RENAME TO transcript;

    CREATE TABLE app_state (
        invocation_id  TEXT PRIMARY KEY NOT NULL REFERENCES invocations(id) ON DELETE CASCADE,
        session_id     TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        model_context  TEXT,
        widget_state   TEXT,
        updated_at     INTEGER NOT NULL
    ) STRICT;
    CREATE INDEX app_state_by_session ON app_state(session_id);
    "#,
    // 3 → 4: the model's side of each conversation (agent/history.rs), one JSON item per
    // row in order, so that a conversation goes on after a restart.
    r#"
    CREATE TABLE model_items (
        session_id  TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        seq         INTEGER NOT NULL CHECK (seq > 0),
        item        TEXT NOT NULL,
        PRIMARY KEY (session_id, seq)
    ) STRICT;
    "#,
    // 4 → 5: the Codex thread a session runs in under the Codex runtime, so that a restarted
    // host resumes it.
    r#"
    ALTER TABLE sessions ADD COLUMN codex_thread TEXT;
    "#,
    // 5 → 6: the invocation whose app made a call (an app's `tools/call`), so that the
    // transcript says who asked after a restart too.
    r#"
    ALTER TABLE invocations ADD COLUMN asked_by TEXT;
    "#,
    // 6 → 7: the id a form was asked under (a pushed form's JSON-RPC id; a round's form, its
    // `inputRequests` key), so that a round's answers can be sent again by key.
    r#"
    ALTER TABLE forms ADD COLUMN asked_as TEXT;
    "#,
];

/// Settings of the writing connection. `synchronous = FULL` makes every commit sync the WAL,
/// so an acknowledged write survives a power loss too, not only a killed process; group commit
/// keeps that to one sync per batch. After a checkpoint the WAL file shrinks back to 64 MiB at
/// most, so one burst does not leave a large file behind.
pub(crate) fn configure_writer(conn: &Connection, path: Option<&Path>) -> Result<(), StoreError> {
    let fail = |source| match path {
        Some(path) => StoreError::opening(path.to_path_buf(), source),
        None => StoreError::Sqlite(source),
    };
    conn.busy_timeout(std::time::Duration::from_secs(5))
        .map_err(fail)?;
    let mode: String = conn
        .query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0))
        .map_err(fail)?;
    if let Some(path) = path
        && !mode.eq_ignore_ascii_case("wal")
    {
        return Err(StoreError::NoWal {
            path: path.to_path_buf(),
            mode,
        });
    }
    conn.execute_batch(
        "PRAGMA synchronous = FULL;
         PRAGMA foreign_keys = ON;
         PRAGMA journal_size_limit = 67108864;",
    )
    .map_err(fail)
}

/// Settings of the reading connection.
pub(crate) fn configure_reader(conn: &Connection) -> rusqlite::Result<()> {
    conn.busy_timeout(std::time::Duration::from_secs(5))?;
    conn.execute_batch("PRAGMA query_only = ON;")
}

/// Brings the database up to [`SCHEMA_VERSION`].
pub(crate) fn migrate(conn: &mut Connection, path: &Path) -> Result<(), StoreError> {
    let opening = |source| StoreError::opening(path.to_path_buf(), source);
    let found: i64 = conn
        .query_row("PRAGMA user_version", [], |row| row.get(0))
        .map_err(opening)?;
    if found > SCHEMA_VERSION {
        return Err(StoreError::SchemaTooNew {
            path: path.to_path_buf(),
            found,
            supported: SCHEMA_VERSION,
        });
    }
    for (from, sql) in (0_i64..)
        .zip(MIGRATIONS)
        .skip_while(|(from, _)| *from < found)
    {
        let tx = conn.transaction().map_err(opening)?;
        tx.execute_batch(sql).map_err(opening)?;
        tx.pragma_update(None, "user_version", from + 1)
            .map_err(opening)?;
        tx.commit().map_err(opening)?;
    }
    Ok(())
}

/// Ends everything the previous host left unfinished: pending forms and approvals and running
/// invocations become `cancelled` with reason [`HOST_STOPPED`].
pub(crate) fn recover(conn: &mut Connection, now: UnixMillis) -> rusqlite::Result<Recovery> {
    let tx = conn.transaction()?;
    // Each ending also goes into its session's transcript, after everything already there.
    for (table, kind) in [
        ("forms", "form_end"),
        ("approvals", "approval_end"),
        ("invocations", "invocation_end"),
    ] {
        let open = if table == "invocations" {
            "running"
        } else {
            "pending"
        };
        tx.execute(
            &format!(
                "INSERT INTO transcript (session_id, seq, kind, ref_id, payload, at)
                 SELECT t.session_id,
                        (SELECT COALESCE(MAX(seq), 0) FROM transcript WHERE session_id = t.session_id)
                            + ROW_NUMBER() OVER (PARTITION BY t.session_id ORDER BY t.rowid),
                        '{kind}', t.id, json_object('id', t.id), ?1
                 FROM {table} t WHERE t.status = '{open}'"
            ),
            params![now],
        )?;
    }
    let forms_cancelled = tx.execute(
        "UPDATE forms SET status = 'cancelled', reason = ?1, resolved_at = ?2
         WHERE status = 'pending'",
        params![HOST_STOPPED, now],
    )?;
    let approvals_cancelled = tx.execute(
        "UPDATE approvals SET status = 'cancelled', reason = ?1, resolved_at = ?2
         WHERE status = 'pending'",
        params![HOST_STOPPED, now],
    )?;
    let invocations_cancelled = tx.execute(
        "UPDATE invocations SET status = 'cancelled', error = ?1, finished_at = ?2
         WHERE status = 'running'",
        params![HOST_STOPPED, now],
    )?;
    tx.commit()?;
    Ok(Recovery {
        forms_cancelled: forms_cancelled as u64,
        approvals_cancelled: approvals_cancelled as u64,
        invocations_cancelled: invocations_cancelled as u64,
    })
}
