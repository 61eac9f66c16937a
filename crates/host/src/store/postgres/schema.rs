//! The PostgreSQL schema and its migrations.
//!
//! The version lives in the one-row table `formwork_schema`. Migrating holds a transaction-level
//! advisory lock, so several hosts starting at once against one database migrate it once, one
//! after the other: the second finds the version the first committed. Each entry of
//! [`MIGRATIONS`] moves the database one version up, all that are missing in one transaction;
//! released ones are never edited.
//!
//! The versions count on their own (PostgreSQL's 1 is SQLite's 6): the first PostgreSQL schema
//! is the SQLite schema as it stood then, with the same tables, columns, checks and cascades.

use deadpool_postgres::Object;

use crate::store::error::StoreError;

/// The schema version this build writes on PostgreSQL.
pub(crate) const PG_SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// The advisory lock key of formwork's migrations: "formwork" in ASCII.
const MIGRATION_LOCK: i64 = 0x666f_726d_776f_726b;

/// `MIGRATIONS[n]` upgrades a database from version `n` to `n + 1`.
///
/// JSON columns are TEXT holding the caller's exact text (never re-serialised). Times are Unix
/// milliseconds. `sessions.id` sorts in the "C" collation, bytewise as SQLite does.
const MIGRATIONS: &[&str] = &[
    // 0 → 1: the schema of SQLite's version 6.
    r#"
    CREATE TABLE sessions (
        id            TEXT COLLATE "C" PRIMARY KEY,
        title         TEXT,
        created_at    BIGINT NOT NULL,
        updated_at    BIGINT NOT NULL,
        codex_thread  TEXT
    );

    CREATE TABLE invocations (
        id                  TEXT PRIMARY KEY,
        session_id          TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        server              TEXT NOT NULL,
        tool                TEXT NOT NULL,
        arguments           TEXT,
        status              TEXT NOT NULL
            CHECK (status IN ('running', 'completed', 'failed', 'cancelled')),
        content             TEXT,
        structured_content  TEXT,
        meta                TEXT,
        is_error            BOOLEAN NOT NULL DEFAULT FALSE,
        error               TEXT,
        started_at          BIGINT NOT NULL,
        finished_at         BIGINT,
        asked_by            TEXT
    );
    CREATE INDEX invocations_by_session ON invocations(session_id);
    CREATE INDEX invocations_running ON invocations(status) WHERE status = 'running';

    CREATE TABLE forms (
        id             TEXT PRIMARY KEY,
        session_id     TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        invocation_id  TEXT REFERENCES invocations(id) ON DELETE SET NULL,
        plugin         TEXT NOT NULL,
        request        TEXT NOT NULL,
        render         TEXT,
        status         TEXT NOT NULL
            CHECK (status IN ('pending', 'accepted', 'declined', 'cancelled')),
        content        TEXT,
        reason         TEXT,
        created_at     BIGINT NOT NULL,
        resolved_at    BIGINT
    );
    CREATE INDEX forms_by_session ON forms(session_id);
    CREATE INDEX forms_pending ON forms(status) WHERE status = 'pending';

    CREATE TABLE approvals (
        id             TEXT PRIMARY KEY,
        session_id     TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        invocation_id  TEXT REFERENCES invocations(id) ON DELETE SET NULL,
        server         TEXT NOT NULL,
        tool           TEXT NOT NULL,
        rendering      TEXT NOT NULL,
        status         TEXT NOT NULL CHECK (status IN ('pending', 'answered', 'cancelled')),
        choice         TEXT
            CHECK (choice IN ('allow', 'allow_for_session', 'always_allow', 'deny')),
        reason         TEXT,
        created_at     BIGINT NOT NULL,
        resolved_at    BIGINT
    );
    CREATE INDEX approvals_by_session ON approvals(session_id);
    CREATE INDEX approvals_pending ON approvals(status) WHERE status = 'pending';

    CREATE TABLE transcript (
        session_id  TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        seq         BIGINT NOT NULL CHECK (seq > 0),
        kind        TEXT NOT NULL CHECK (kind IN ('user_message', 'assistant_message',
                        'invocation', 'form', 'approval', 'diagnostic',
                        'invocation_end', 'form_end', 'approval_end', 'invocation_round',
                        'invocation_app')),
        ref_id      TEXT,
        payload     TEXT NOT NULL,
        at          BIGINT NOT NULL,
        PRIMARY KEY (session_id, seq)
    );
    CREATE INDEX transcript_by_ref ON transcript(ref_id) WHERE ref_id IS NOT NULL;

    CREATE TABLE app_state (
        invocation_id  TEXT PRIMARY KEY REFERENCES invocations(id) ON DELETE CASCADE,
        session_id     TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        model_context  TEXT,
        widget_state   TEXT,
        updated_at     BIGINT NOT NULL
    );
    CREATE INDEX app_state_by_session ON app_state(session_id);

    CREATE TABLE model_items (
        session_id  TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        seq         BIGINT NOT NULL CHECK (seq > 0),
        item        TEXT NOT NULL,
        PRIMARY KEY (session_id, seq)
    );
    "#,
    // 1 → 2: who wrote each entry, and a notification of every entry and of every session
    // created or deleted, sent on commit to the hosts listening (see `listen.rs`). The writer's
    // mark is a setting of its connections (`formwork.origin`).
    r#"
    -- Entries written before have no known writer.
    ALTER TABLE transcript ADD COLUMN origin TEXT;
    ALTER TABLE transcript
        ALTER COLUMN origin SET DEFAULT nullif(current_setting('formwork.origin', true), '');

    CREATE FUNCTION formwork_entry_written() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        PERFORM pg_notify('formwork_events',
            concat_ws(' ', coalesce(NEW.origin, '-'), NEW.seq, NEW.session_id));
        RETURN NULL;
    END $$;
    CREATE TRIGGER transcript_written AFTER INSERT ON transcript
        FOR EACH ROW EXECUTE FUNCTION formwork_entry_written();

    CREATE FUNCTION formwork_session_changed() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE
        origin TEXT := coalesce(nullif(current_setting('formwork.origin', true), ''), '-');
    BEGIN
        IF TG_OP = 'INSERT' THEN
            PERFORM pg_notify('formwork_events', concat_ws(' ', origin, 'created', NEW.id));
        ELSE
            PERFORM pg_notify('formwork_events', concat_ws(' ', origin, 'deleted', OLD.id));
        END IF;
        RETURN NULL;
    END $$;
    CREATE TRIGGER sessions_changed AFTER INSERT OR DELETE ON sessions
        FOR EACH ROW EXECUTE FUNCTION formwork_session_changed();
    "#,
    // 2 → 3: the id each form was asked under (SQLite's 7), and a lease on each running call:
    // the store that began it (`held_by`, its connections' `formwork.origin`) renews
    // `lease_until` while it lives; the database's clock (`formwork_now_ms`) sets and judges
    // every lease, so replicas' clocks do not matter.
    r#"
    ALTER TABLE forms ADD COLUMN asked_as TEXT;

    CREATE FUNCTION formwork_now_ms() RETURNS BIGINT LANGUAGE sql VOLATILE AS
        $$ SELECT (extract(epoch FROM clock_timestamp()) * 1000)::BIGINT $$;
    CREATE FUNCTION formwork_lease_end() RETURNS BIGINT LANGUAGE sql VOLATILE AS
        $$ SELECT formwork_now_ms()
               + coalesce(nullif(current_setting('formwork.lease_ms', true), ''), '10000')::BIGINT $$;

    -- Calls begun before leases have none that anyone renews: expired.
    ALTER TABLE invocations ADD COLUMN held_by TEXT, ADD COLUMN lease_until BIGINT;
    UPDATE invocations SET lease_until = 0 WHERE status = 'running';
    ALTER TABLE invocations
        ALTER COLUMN held_by SET DEFAULT nullif(current_setting('formwork.origin', true), ''),
        ALTER COLUMN lease_until SET DEFAULT formwork_lease_end();
    CREATE INDEX invocations_leased ON invocations(lease_until) WHERE status = 'running';
    "#,
];

/// Brings the database up to [`PG_SCHEMA_VERSION`]; `shown` names it (without a password) in
/// errors.
pub(crate) async fn migrate(client: &mut Object, shown: &str) -> Result<(), StoreError> {
    let tx = client.transaction().await?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
        .await?;
    tx.batch_execute(
        "CREATE TABLE IF NOT EXISTS formwork_schema (
             one      BOOLEAN PRIMARY KEY DEFAULT TRUE CHECK (one),
             version  BIGINT NOT NULL
         );
         INSERT INTO formwork_schema (version) VALUES (0) ON CONFLICT (one) DO NOTHING;",
    )
    .await?;
    let found: i64 = tx
        .query_one("SELECT version FROM formwork_schema", &[])
        .await?
        .try_get(0)?;
    if found > PG_SCHEMA_VERSION {
        return Err(StoreError::PostgresSchemaTooNew {
            database: shown.to_owned(),
            found,
            supported: PG_SCHEMA_VERSION,
        });
    }
    for (from, sql) in (0_i64..)
        .zip(MIGRATIONS)
        .skip_while(|(from, _)| *from < found)
    {
        tx.batch_execute(sql).await?;
        tx.execute("UPDATE formwork_schema SET version = $1", &[&(from + 1)])
            .await?;
    }
    tx.commit().await?;
    Ok(())
}
