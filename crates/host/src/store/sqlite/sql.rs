//! The statements: one function per operation, run on whichever connection the caller holds
//! (the writer's transaction for writes, the reader's snapshot for reads).

use std::collections::HashMap;

use rusqlite::{Connection, OptionalExtension, Row, params};

use crate::store::error::{StoreError, is_duplicate};
use crate::store::inputs::{
    ApprovalEnd, ApprovalInput, FormEnd, FormInput, InvocationEnd, InvocationInput, now,
    ref_payload,
};
use crate::store::records::{
    AppRecord, AppStatePart, AppStateRecord, ApprovalChoice, ApprovalRecord, ApprovalStatus,
    EntryDetail, EntryKind, FormRecord, FormStatus, InvocationRecord, InvocationStatus,
    RoundRecord, SessionRecord, TranscriptEntry, json, optional_json,
};

// ---- sessions ----

/// Deletes the session and, through the schema's cascades, everything of it.
pub(crate) fn delete_session(conn: &Connection, id: &str) -> Result<(), StoreError> {
    conn.prepare_cached("DELETE FROM sessions WHERE id = ?1")?
        .execute(params![id])?;
    Ok(())
}

pub(crate) fn insert_session(
    conn: &Connection,
    id: &str,
    title: Option<&str>,
) -> Result<SessionRecord, StoreError> {
    let now = now();
    conn.prepare_cached(
        "INSERT INTO sessions (id, title, created_at, updated_at) VALUES (?1, ?2, ?3, ?3)",
    )?
    .execute(params![id, title, now])
    .map_err(|error| duplicate_or(error, "session", id))?;
    Ok(SessionRecord {
        id: id.to_owned(),
        title: title.map(str::to_owned),
        created_at: now,
        updated_at: now,
        codex_thread: None,
    })
}

pub(crate) fn set_session_title(
    conn: &Connection,
    id: &str,
    title: Option<&str>,
) -> Result<(), StoreError> {
    let changed = conn
        .prepare_cached("UPDATE sessions SET title = ?2, updated_at = ?3 WHERE id = ?1")?
        .execute(params![id, title, now()])?;
    found(changed, "session", id)
}

const SESSION_COLUMNS: &str = "id, title, created_at, updated_at, codex_thread";

pub(crate) fn set_codex_thread(
    conn: &Connection,
    id: &str,
    thread: &str,
) -> Result<(), StoreError> {
    let changed = conn
        .prepare_cached("UPDATE sessions SET codex_thread = ?2, updated_at = ?3 WHERE id = ?1")?
        .execute(params![id, thread, now()])?;
    found(changed, "session", id)
}

pub(crate) fn list_sessions(conn: &Connection) -> Result<Vec<SessionRecord>, StoreError> {
    let mut statement = conn.prepare_cached(&format!(
        "SELECT {SESSION_COLUMNS} FROM sessions ORDER BY updated_at DESC, id"
    ))?;
    let rows = statement.query_map([], session_row)?;
    Ok(rows.collect::<Result<_, _>>()?)
}

pub(crate) fn session(conn: &Connection, id: &str) -> Result<Option<SessionRecord>, StoreError> {
    let mut statement = conn.prepare_cached(&format!(
        "SELECT {SESSION_COLUMNS} FROM sessions WHERE id = ?1"
    ))?;
    Ok(statement.query_row([id], session_row).optional()?)
}

fn session_row(row: &Row<'_>) -> rusqlite::Result<SessionRecord> {
    Ok(SessionRecord {
        id: row.get(0)?,
        title: row.get(1)?,
        created_at: row.get(2)?,
        updated_at: row.get(3)?,
        codex_thread: row.get(4)?,
    })
}

// ---- transcript ----

/// Appends an entry at the end of the session's transcript and returns its `seq`.
pub(crate) fn append_entry(
    conn: &Connection,
    session: &str,
    kind: EntryKind,
    ref_id: Option<&str>,
    payload: &str,
) -> Result<u64, StoreError> {
    let now = now();
    let touched = conn
        .prepare_cached("UPDATE sessions SET updated_at = ?2 WHERE id = ?1")?
        .execute(params![session, now])?;
    found(touched, "session", session)?;
    let seq: i64 = conn
        .prepare_cached("SELECT COALESCE(MAX(seq), 0) + 1 FROM transcript WHERE session_id = ?1")?
        .query_row([session], |row| row.get(0))?;
    conn.prepare_cached(
        "INSERT INTO transcript (session_id, seq, kind, ref_id, payload, at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?
    .execute(params![session, seq, kind.as_str(), ref_id, payload, now])?;
    Ok(seq.unsigned_abs())
}

/// Finishes an ending that changed `changed` rows of `table`: one changed row gets its `end`
/// entry in the transcript; none means the row is missing or had already ended.
fn ended(
    conn: &Connection,
    changed: usize,
    table: &str,
    end: EntryKind,
    kind: &'static str,
    id: &str,
    status_name: impl Fn(&str) -> Result<&'static str, StoreError>,
) -> Result<(), StoreError> {
    if changed == 1 {
        return append_end(conn, table, end, id);
    }
    let status: Option<String> = conn
        .prepare_cached(&format!("SELECT status FROM {table} WHERE id = ?1"))?
        .query_row([id], |row| row.get(0))
        .optional()?;
    match status {
        None => Err(not_found(kind, id)),
        Some(status) => Err(StoreError::AlreadyResolved {
            kind,
            id: id.to_owned(),
            status: status_name(&status)?,
        }),
    }
}

/// Appends the entry that records the end of the row `id` of `table`.
fn append_end(conn: &Connection, table: &str, kind: EntryKind, id: &str) -> Result<(), StoreError> {
    let session: String = conn
        .prepare_cached(&format!("SELECT session_id FROM {table} WHERE id = ?1"))?
        .query_row([id], |row| row.get(0))?;
    append_entry(conn, &session, kind, Some(id), &ref_payload(id)).map(drop)
}

/// The session's transcript in order, each reference entry with its row; `None` if there is
/// no such session.
pub(crate) fn transcript(
    conn: &Connection,
    session: &str,
) -> Result<Option<Vec<TranscriptEntry>>, StoreError> {
    if self::session(conn, session)?.is_none() {
        return Ok(None);
    }
    let invocations: HashMap<String, InvocationRecord> =
        query_all(conn, INVOCATIONS_OF_SESSION, session, invocation_row)?
            .into_iter()
            .map(|record| (record.id.clone(), record))
            .collect();
    let forms: HashMap<String, FormRecord> = query_all(conn, FORMS_OF_SESSION, session, form_row)?
        .into_iter()
        .map(|record| (record.id.clone(), record))
        .collect();
    let approvals: HashMap<String, ApprovalRecord> =
        query_all(conn, APPROVALS_OF_SESSION, session, approval_row)?
            .into_iter()
            .map(|record| (record.id.clone(), record))
            .collect();

    let mut statement = conn.prepare_cached(
        "SELECT seq, kind, ref_id, payload, at FROM transcript
         WHERE session_id = ?1 ORDER BY seq",
    )?;
    let mut rows = statement.query([session])?;
    let mut entries = Vec::new();
    while let Some(row) = rows.next()? {
        let seq: i64 = row.get(0)?;
        let kind = EntryKind::from_stored("transcript.kind", &row.get::<_, String>(1)?)?;
        let ref_id: Option<String> = row.get(2)?;
        let detail = ref_id.and_then(|id| match kind {
            EntryKind::Invocation
            | EntryKind::InvocationEnd
            | EntryKind::InvocationRound
            | EntryKind::InvocationApp => {
                invocations.get(&id).cloned().map(EntryDetail::Invocation)
            }
            EntryKind::Form | EntryKind::FormEnd => forms.get(&id).cloned().map(EntryDetail::Form),
            EntryKind::Approval | EntryKind::ApprovalEnd => {
                approvals.get(&id).cloned().map(EntryDetail::Approval)
            }
            _ => None,
        });
        entries.push(TranscriptEntry {
            seq: seq.unsigned_abs(),
            kind,
            payload: json("transcript.payload", row.get(3)?)?,
            at: row.get(4)?,
            detail,
        });
    }
    Ok(Some(entries))
}

// ---- invocations ----

pub(crate) fn begin_invocation(
    conn: &Connection,
    input: &InvocationInput,
) -> Result<u64, StoreError> {
    session_exists(conn, &input.session)?;
    conn.prepare_cached(
        "INSERT INTO invocations (id, session_id, server, tool, arguments, status, started_at, asked_by)
         VALUES (?1, ?2, ?3, ?4, ?5, 'running', ?6, ?7)",
    )?
    .execute(params![
        input.id,
        input.session,
        input.server,
        input.tool,
        input.arguments,
        now(),
        input.asked_by
    ])
    .map_err(|error| duplicate_or(error, "invocation", &input.id))?;
    append_entry(
        conn,
        &input.session,
        EntryKind::Invocation,
        Some(&input.id),
        &ref_payload(&input.id),
    )
}

pub(crate) fn finish_invocation(
    conn: &Connection,
    id: &str,
    end: &InvocationEnd,
) -> Result<(), StoreError> {
    let changed = conn
        .prepare_cached(
            "UPDATE invocations SET status = ?2, content = ?3, structured_content = ?4,
                 meta = ?5, is_error = ?6, error = ?7, finished_at = ?8
             WHERE id = ?1 AND status = 'running'",
        )?
        .execute(params![
            id,
            end.status.as_str(),
            end.content,
            end.structured_content,
            end.meta,
            end.is_error,
            end.error,
            now()
        ])?;
    ended(
        conn,
        changed,
        "invocations",
        EntryKind::InvocationEnd,
        "invocation",
        id,
        |status| Ok(InvocationStatus::from_stored("invocations.status", status)?.as_str()),
    )
}

const INVOCATION_COLUMNS: &str = "id, session_id, server, tool, arguments, status, content, \
     structured_content, meta, is_error, error, started_at, finished_at, asked_by";
const INVOCATIONS_OF_SESSION: &str = "SELECT id, session_id, server, tool, arguments, status, \
     content, structured_content, meta, is_error, error, started_at, finished_at, asked_by \
     FROM invocations WHERE session_id = ?1";

pub(crate) fn invocation(
    conn: &Connection,
    id: &str,
) -> Result<Option<InvocationRecord>, StoreError> {
    let sql = format!("SELECT {INVOCATION_COLUMNS} FROM invocations WHERE id = ?1");
    query_one(conn, &sql, id, invocation_row)
}

fn invocation_row(row: &Row<'_>) -> Result<InvocationRecord, StoreError> {
    Ok(InvocationRecord {
        id: row.get(0)?,
        session: row.get(1)?,
        server: row.get(2)?,
        tool: row.get(3)?,
        arguments: optional_json("invocations.arguments", row.get(4)?)?,
        status: InvocationStatus::from_stored("invocations.status", &row.get::<_, String>(5)?)?,
        content: optional_json("invocations.content", row.get(6)?)?,
        structured_content: optional_json("invocations.structured_content", row.get(7)?)?,
        meta: optional_json("invocations.meta", row.get(8)?)?,
        is_error: row.get(9)?,
        error: row.get(10)?,
        started_at: row.get(11)?,
        finished_at: row.get(12)?,
        asked_by: row.get(13)?,
    })
}

pub(crate) fn record_round(
    conn: &Connection,
    invocation: &str,
    round: u32,
    asked: &[String],
    state: Option<&str>,
) -> Result<(), StoreError> {
    let found: Option<(String, String)> = conn
        .prepare_cached("SELECT session_id, status FROM invocations WHERE id = ?1")?
        .query_row(params![invocation], |row| Ok((row.get(0)?, row.get(1)?)))
        .optional()?;
    let session = match found {
        None => {
            return Err(StoreError::NotFound {
                kind: "invocation",
                id: invocation.to_owned(),
            });
        }
        Some((session, status)) if status == "running" => session,
        Some(_) => {
            return Err(StoreError::AlreadyResolved {
                kind: "invocation",
                id: invocation.to_owned(),
                status: "finished",
            });
        }
    };
    let payload = RoundRecord::payload(round, asked, state);
    append_entry(
        conn,
        &session,
        EntryKind::InvocationRound,
        Some(invocation),
        &payload,
    )
    .map(drop)
}

pub(crate) fn rounds(conn: &Connection, invocation: &str) -> Result<Vec<RoundRecord>, StoreError> {
    let mut statement = conn.prepare_cached(
        "SELECT payload, at FROM transcript
         WHERE kind = 'invocation_round' AND ref_id = ?1 ORDER BY seq",
    )?;
    let rows = statement.query_map(params![invocation], |row| {
        Ok((row.get::<_, String>(0)?, row.get(1)?))
    })?;
    let mut rounds = Vec::new();
    for row in rows {
        let (payload, at) = row?;
        rounds.push(RoundRecord::from_payload(&payload, at)?);
    }
    Ok(rounds)
}

/// Records the UI resource a tool call declared: an `invocation_app` entry referring to it.
pub(crate) fn record_app(
    conn: &Connection,
    invocation: &str,
    app: &AppRecord,
) -> Result<(), StoreError> {
    let session: Option<String> = conn
        .prepare_cached("SELECT session_id FROM invocations WHERE id = ?1")?
        .query_row(params![invocation], |row| row.get(0))
        .optional()?;
    let Some(session) = session else {
        return Err(StoreError::NotFound {
            kind: "invocation",
            id: invocation.to_owned(),
        });
    };
    append_entry(
        conn,
        &session,
        EntryKind::InvocationApp,
        Some(invocation),
        &app.payload(),
    )
    .map(drop)
}

/// Replaces one part of the state an invocation's app left behind.
pub(crate) fn save_app_state(
    conn: &Connection,
    invocation: &str,
    part: AppStatePart,
    value: &str,
) -> Result<(), StoreError> {
    let column = match part {
        AppStatePart::ModelContext => "model_context",
        AppStatePart::WidgetState => "widget_state",
    };
    let changed = conn
        .prepare_cached(&format!(
            "INSERT INTO app_state (invocation_id, session_id, {column}, updated_at)
             SELECT id, session_id, ?2, ?3 FROM invocations WHERE id = ?1
             ON CONFLICT (invocation_id) DO UPDATE SET {column} = ?2, updated_at = ?3"
        ))?
        .execute(params![invocation, value, now()])?;
    if changed == 0 {
        return Err(StoreError::NotFound {
            kind: "invocation",
            id: invocation.to_owned(),
        });
    }
    Ok(())
}

/// The app states of a session's invocations, in no particular order.
pub(crate) fn app_states(
    conn: &Connection,
    session: &str,
) -> Result<Vec<AppStateRecord>, StoreError> {
    let mut statement = conn.prepare_cached(
        "SELECT invocation_id, model_context, widget_state, updated_at FROM app_state
         WHERE session_id = ?1",
    )?;
    let mut rows = statement.query(params![session])?;
    let mut states = Vec::new();
    while let Some(row) = rows.next()? {
        states.push(AppStateRecord {
            invocation: row.get(0)?,
            model_context: optional_json("app_state.model_context", row.get(1)?)?,
            widget_state: optional_json("app_state.widget_state", row.get(2)?)?,
            updated_at: row.get(3)?,
        });
    }
    Ok(states)
}

// ---- the model's conversation ----

pub(crate) fn append_model_items(
    conn: &Connection,
    session: &str,
    items: &[String],
) -> Result<(), StoreError> {
    let mut statement = conn.prepare_cached(
        "INSERT INTO model_items (session_id, seq, item)
         SELECT ?1, COALESCE(MAX(seq), 0) + 1, ?2 FROM model_items WHERE session_id = ?1",
    )?;
    for item in items {
        statement.execute(params![session, item])?;
    }
    Ok(())
}

pub(crate) fn model_items(conn: &Connection, session: &str) -> Result<Vec<String>, StoreError> {
    let mut statement =
        conn.prepare_cached("SELECT item FROM model_items WHERE session_id = ?1 ORDER BY seq")?;
    let items = statement
        .query_map(params![session], |row| row.get(0))?
        .collect::<Result<Vec<String>, _>>()?;
    Ok(items)
}

// ---- forms ----

pub(crate) fn insert_form(conn: &Connection, input: &FormInput) -> Result<u64, StoreError> {
    session_exists(conn, &input.session)?;
    if let Some(invocation) = &input.invocation {
        invocation_exists(conn, invocation)?;
    }
    conn.prepare_cached(
        "INSERT INTO forms (id, session_id, invocation_id, plugin, request, render, status,
             created_at, asked_as)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'pending', ?7, ?8)",
    )?
    .execute(params![
        input.id,
        input.session,
        input.invocation,
        input.plugin,
        input.request,
        input.render,
        now(),
        input.asked_as
    ])
    .map_err(|error| duplicate_or(error, "form", &input.id))?;
    append_entry(
        conn,
        &input.session,
        EntryKind::Form,
        Some(&input.id),
        &ref_payload(&input.id),
    )
}

pub(crate) fn resolve_form(conn: &Connection, id: &str, end: &FormEnd) -> Result<(), StoreError> {
    let changed = conn
        .prepare_cached(
            "UPDATE forms SET status = ?2, content = ?3, reason = ?4, resolved_at = ?5
             WHERE id = ?1 AND status = 'pending'",
        )?
        .execute(params![
            id,
            end.status.as_str(),
            end.content,
            end.reason,
            now()
        ])?;
    ended(
        conn,
        changed,
        "forms",
        EntryKind::FormEnd,
        "form",
        id,
        |status| Ok(FormStatus::from_stored("forms.status", status)?.as_str()),
    )
}

const FORM_COLUMNS: &str = "id, session_id, invocation_id, plugin, request, render, status, \
     content, reason, created_at, resolved_at, asked_as";
const FORMS_OF_SESSION: &str = "SELECT id, session_id, invocation_id, plugin, request, render, \
     status, content, reason, created_at, resolved_at, asked_as FROM forms WHERE session_id = ?1";

pub(crate) fn form(conn: &Connection, id: &str) -> Result<Option<FormRecord>, StoreError> {
    let sql = format!("SELECT {FORM_COLUMNS} FROM forms WHERE id = ?1");
    query_one(conn, &sql, id, form_row)
}

fn form_row(row: &Row<'_>) -> Result<FormRecord, StoreError> {
    Ok(FormRecord {
        id: row.get(0)?,
        session: row.get(1)?,
        invocation: row.get(2)?,
        plugin: row.get(3)?,
        request: json("forms.request", row.get(4)?)?,
        render: optional_json("forms.render", row.get(5)?)?,
        status: FormStatus::from_stored("forms.status", &row.get::<_, String>(6)?)?,
        content: optional_json("forms.content", row.get(7)?)?,
        reason: row.get(8)?,
        created_at: row.get(9)?,
        resolved_at: row.get(10)?,
        asked_as: row.get(11)?,
    })
}

// ---- approvals ----

pub(crate) fn insert_approval(conn: &Connection, input: &ApprovalInput) -> Result<u64, StoreError> {
    session_exists(conn, &input.session)?;
    if let Some(invocation) = &input.invocation {
        invocation_exists(conn, invocation)?;
    }
    conn.prepare_cached(
        "INSERT INTO approvals (id, session_id, invocation_id, server, tool, rendering, status,
             created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'pending', ?7)",
    )?
    .execute(params![
        input.id,
        input.session,
        input.invocation,
        input.server,
        input.tool,
        input.rendering,
        now()
    ])
    .map_err(|error| duplicate_or(error, "approval", &input.id))?;
    append_entry(
        conn,
        &input.session,
        EntryKind::Approval,
        Some(&input.id),
        &ref_payload(&input.id),
    )
}

pub(crate) fn resolve_approval(
    conn: &Connection,
    id: &str,
    end: &ApprovalEnd,
) -> Result<(), StoreError> {
    let changed = conn
        .prepare_cached(
            "UPDATE approvals SET status = ?2, choice = ?3, reason = ?4, resolved_at = ?5
             WHERE id = ?1 AND status = 'pending'",
        )?
        .execute(params![
            id,
            end.status.as_str(),
            end.choice.map(ApprovalChoice::as_str),
            end.reason,
            now()
        ])?;
    ended(
        conn,
        changed,
        "approvals",
        EntryKind::ApprovalEnd,
        "approval",
        id,
        |status| Ok(ApprovalStatus::from_stored("approvals.status", status)?.as_str()),
    )
}

const APPROVAL_COLUMNS: &str = "id, session_id, invocation_id, server, tool, rendering, status, \
     choice, reason, created_at, resolved_at";
const APPROVALS_OF_SESSION: &str = "SELECT id, session_id, invocation_id, server, tool, \
     rendering, status, choice, reason, created_at, resolved_at \
     FROM approvals WHERE session_id = ?1";

pub(crate) fn approval(conn: &Connection, id: &str) -> Result<Option<ApprovalRecord>, StoreError> {
    let sql = format!("SELECT {APPROVAL_COLUMNS} FROM approvals WHERE id = ?1");
    query_one(conn, &sql, id, approval_row)
}

fn approval_row(row: &Row<'_>) -> Result<ApprovalRecord, StoreError> {
    let choice: Option<String> = row.get(7)?;
    Ok(ApprovalRecord {
        id: row.get(0)?,
        session: row.get(1)?,
        invocation: row.get(2)?,
        server: row.get(3)?,
        tool: row.get(4)?,
        rendering: json("approvals.rendering", row.get(5)?)?,
        status: ApprovalStatus::from_stored("approvals.status", &row.get::<_, String>(6)?)?,
        choice: choice
            .map(|choice| {
                ApprovalChoice::from_name(&choice).ok_or(StoreError::UnknownValue {
                    column: "approvals.choice",
                    value: choice,
                })
            })
            .transpose()?,
        reason: row.get(8)?,
        created_at: row.get(9)?,
        resolved_at: row.get(10)?,
    })
}

// ---- helpers ----

fn query_one<T>(
    conn: &Connection,
    sql: &str,
    id: &str,
    map: fn(&Row<'_>) -> Result<T, StoreError>,
) -> Result<Option<T>, StoreError> {
    let mut statement = conn.prepare_cached(sql)?;
    let mut rows = statement.query([id])?;
    rows.next()?.map(map).transpose()
}

fn query_all<T>(
    conn: &Connection,
    sql: &str,
    key: &str,
    map: fn(&Row<'_>) -> Result<T, StoreError>,
) -> Result<Vec<T>, StoreError> {
    let mut statement = conn.prepare_cached(sql)?;
    let mut rows = statement.query([key])?;
    let mut all = Vec::new();
    while let Some(row) = rows.next()? {
        all.push(map(row)?);
    }
    Ok(all)
}

fn session_exists(conn: &Connection, id: &str) -> Result<(), StoreError> {
    let exists = conn
        .prepare_cached("SELECT 1 FROM sessions WHERE id = ?1")?
        .exists([id])?;
    if exists {
        Ok(())
    } else {
        Err(not_found("session", id))
    }
}

fn invocation_exists(conn: &Connection, id: &str) -> Result<(), StoreError> {
    let exists = conn
        .prepare_cached("SELECT 1 FROM invocations WHERE id = ?1")?
        .exists([id])?;
    if exists {
        Ok(())
    } else {
        Err(not_found("invocation", id))
    }
}

fn found(changed: usize, kind: &'static str, id: &str) -> Result<(), StoreError> {
    if changed == 0 {
        Err(not_found(kind, id))
    } else {
        Ok(())
    }
}

fn not_found(kind: &'static str, id: &str) -> StoreError {
    StoreError::NotFound {
        kind,
        id: id.to_owned(),
    }
}

fn duplicate_or(error: rusqlite::Error, kind: &'static str, id: &str) -> StoreError {
    if is_duplicate(&error) {
        StoreError::AlreadyExists {
            kind,
            id: id.to_owned(),
        }
    } else {
        StoreError::Sqlite(error)
    }
}
