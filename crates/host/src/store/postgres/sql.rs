//! The statements on PostgreSQL: one function per operation, each run inside the transaction
//! the caller opened (read committed for writes, a repeatable-read snapshot for reads). They
//! mirror `sqlite/sql.rs` so that both engines give the same records, ids and order.
//!
//! Concurrent writers of one session queue on its row: every write that appends to a transcript
//! or to the model's items first updates or locks the `sessions` row, so the next `seq` is
//! computed after the previous writer committed and two writers never take the same one.

use std::collections::HashMap;

use deadpool_postgres::Transaction;
use tokio_postgres::Row;
use tokio_postgres::error::SqlState;
use tokio_postgres::types::ToSql;

use crate::store::error::StoreError;
use crate::store::inputs::{
    ApprovalEnd, ApprovalInput, FormEnd, FormInput, InvocationEnd, InvocationInput, now,
    ref_payload,
};
use crate::store::records::{
    AbandonedCall, AppRecord, AppStatePart, AppStateRecord, ApprovalChoice, ApprovalRecord,
    ApprovalResolution, ApprovalStatus, EntryDetail, EntryKind, FormRecord, FormResolution,
    FormStatus, InvocationOutcome, InvocationRecord, InvocationStatus, RoundRecord, SessionRecord,
    TranscriptEntry, json, optional_json,
};

type Params<'a> = &'a [&'a (dyn ToSql + Sync)];

// ---- sessions ----

/// Deletes the session and, through the schema's cascades, everything of it.
pub(crate) async fn delete_session(tx: &Transaction<'_>, id: &str) -> Result<(), StoreError> {
    execute(tx, "DELETE FROM sessions WHERE id = $1", &[&id]).await?;
    Ok(())
}

pub(crate) async fn insert_session(
    tx: &Transaction<'_>,
    id: &str,
    title: Option<&str>,
) -> Result<SessionRecord, StoreError> {
    let now = now();
    execute(
        tx,
        "INSERT INTO sessions (id, title, created_at, updated_at) VALUES ($1, $2, $3, $3)",
        &[&id, &title, &now],
    )
    .await
    .map_err(|error| duplicate_or(error, "session", id))?;
    Ok(SessionRecord {
        id: id.to_owned(),
        title: title.map(str::to_owned),
        created_at: now,
        updated_at: now,
        codex_thread: None,
    })
}

pub(crate) async fn set_session_title(
    tx: &Transaction<'_>,
    id: &str,
    title: Option<&str>,
) -> Result<(), StoreError> {
    let changed = execute(
        tx,
        "UPDATE sessions SET title = $2, updated_at = $3 WHERE id = $1",
        &[&id, &title, &now()],
    )
    .await?;
    found(changed, "session", id)
}

const SESSION_COLUMNS: &str = "id, title, created_at, updated_at, codex_thread";

pub(crate) async fn set_codex_thread(
    tx: &Transaction<'_>,
    id: &str,
    thread: &str,
) -> Result<(), StoreError> {
    let changed = execute(
        tx,
        "UPDATE sessions SET codex_thread = $2, updated_at = $3 WHERE id = $1",
        &[&id, &thread, &now()],
    )
    .await?;
    found(changed, "session", id)
}

pub(crate) async fn list_sessions(tx: &Transaction<'_>) -> Result<Vec<SessionRecord>, StoreError> {
    // `sessions.id` is in the "C" collation, so ties sort bytewise as on SQLite.
    let sql = format!("SELECT {SESSION_COLUMNS} FROM sessions ORDER BY updated_at DESC, id");
    query(tx, &sql, &[])
        .await?
        .iter()
        .map(session_row)
        .collect()
}

pub(crate) async fn session(
    tx: &Transaction<'_>,
    id: &str,
) -> Result<Option<SessionRecord>, StoreError> {
    let sql = format!("SELECT {SESSION_COLUMNS} FROM sessions WHERE id = $1");
    query_opt(tx, &sql, &[&id])
        .await?
        .as_ref()
        .map(session_row)
        .transpose()
}

fn session_row(row: &Row) -> Result<SessionRecord, StoreError> {
    Ok(SessionRecord {
        id: row.try_get(0)?,
        title: row.try_get(1)?,
        created_at: row.try_get(2)?,
        updated_at: row.try_get(3)?,
        codex_thread: row.try_get(4)?,
    })
}

// ---- transcript ----

/// Appends an entry at the end of the session's transcript and returns its `seq`.
pub(crate) async fn append_entry(
    tx: &Transaction<'_>,
    session: &str,
    kind: EntryKind,
    ref_id: Option<&str>,
    payload: &str,
) -> Result<u64, StoreError> {
    let now = now();
    // The update also locks the session's row until commit: writers of one session queue here.
    let touched = execute(
        tx,
        "UPDATE sessions SET updated_at = $2 WHERE id = $1",
        &[&session, &now],
    )
    .await?;
    found(touched, "session", session)?;
    let seq: i64 = query_one(
        tx,
        "SELECT COALESCE(MAX(seq), 0) + 1 FROM transcript WHERE session_id = $1",
        &[&session],
    )
    .await?
    .try_get(0)?;
    execute(
        tx,
        "INSERT INTO transcript (session_id, seq, kind, ref_id, payload, at)
         VALUES ($1, $2, $3, $4, $5, $6)",
        &[&session, &seq, &kind.as_str(), &ref_id, &payload, &now],
    )
    .await?;
    Ok(seq.unsigned_abs())
}

/// Finishes an ending that changed `changed` rows of `table`: one changed row gets its `end`
/// entry in the transcript; none means the row is missing or had already ended.
async fn ended(
    tx: &Transaction<'_>,
    changed: u64,
    table: &str,
    end: EntryKind,
    kind: &'static str,
    id: &str,
    status_name: impl Fn(&str) -> Result<&'static str, StoreError>,
) -> Result<(), StoreError> {
    if changed == 1 {
        let sql = format!("SELECT session_id FROM {table} WHERE id = $1");
        let session: String = query_one(tx, &sql, &[&id]).await?.try_get(0)?;
        return append_entry(tx, &session, end, Some(id), &ref_payload(id))
            .await
            .map(drop);
    }
    let sql = format!("SELECT status FROM {table} WHERE id = $1");
    match query_opt(tx, &sql, &[&id]).await? {
        None => Err(not_found(kind, id)),
        Some(row) => Err(StoreError::AlreadyResolved {
            kind,
            id: id.to_owned(),
            status: status_name(&row.try_get::<_, String>(0)?)?,
        }),
    }
}

/// The session's transcript in order, each reference entry with its row; `None` if there is
/// no such session.
pub(crate) async fn transcript(
    tx: &Transaction<'_>,
    session: &str,
) -> Result<Option<Vec<TranscriptEntry>>, StoreError> {
    if self::session(tx, session).await?.is_none() {
        return Ok(None);
    }
    entries(tx, session, 0, None).await.map(Some)
}

/// What other hosts appended to the session after `after`, and the session's last `seq` (`0`
/// for a session with no entries or none at all): entries `origin` wrote are left out.
pub(crate) async fn entries_after(
    tx: &Transaction<'_>,
    session: &str,
    after: u64,
    origin: &str,
) -> Result<(Vec<TranscriptEntry>, u64), StoreError> {
    let after = i64::try_from(after).unwrap_or(i64::MAX);
    let entries = entries(tx, session, after, Some(origin)).await?;
    let last: i64 = query_one(
        tx,
        "SELECT COALESCE(MAX(seq), 0) FROM transcript WHERE session_id = $1",
        &[&session],
    )
    .await?
    .try_get(0)?;
    Ok((entries, last.unsigned_abs()))
}

/// Every session with the `seq` of its last entry (`0` when it has none).
pub(crate) async fn session_heads(tx: &Transaction<'_>) -> Result<Vec<(String, u64)>, StoreError> {
    query(
        tx,
        "SELECT id, COALESCE((SELECT MAX(seq) FROM transcript WHERE session_id = sessions.id), 0)
         FROM sessions",
        &[],
    )
    .await?
    .iter()
    .map(|row| Ok((row.try_get(0)?, row.try_get::<_, i64>(1)?.unsigned_abs())))
    .collect()
}

/// The session's entries after `after`, in order, each reference entry with its row; without
/// those `skip_origin` wrote.
async fn entries(
    tx: &Transaction<'_>,
    session: &str,
    after: i64,
    skip_origin: Option<&str>,
) -> Result<Vec<TranscriptEntry>, StoreError> {
    let rows = query(
        tx,
        "SELECT seq, kind, ref_id, payload, at FROM transcript
         WHERE session_id = $1 AND seq > $2 AND origin IS DISTINCT FROM $3 ORDER BY seq",
        &[&session, &after, &skip_origin],
    )
    .await?;
    let mut kinds = Vec::with_capacity(rows.len());
    let (mut invocation_ids, mut form_ids, mut approval_ids) = (Vec::new(), Vec::new(), Vec::new());
    for row in &rows {
        let kind = EntryKind::from_stored("transcript.kind", row.try_get(1)?)?;
        let ref_id: Option<String> = row.try_get(2)?;
        if let Some(id) = ref_id {
            match kind {
                EntryKind::Invocation
                | EntryKind::InvocationEnd
                | EntryKind::InvocationRound
                | EntryKind::InvocationApp => invocation_ids.push(id),
                EntryKind::Form | EntryKind::FormEnd => form_ids.push(id),
                EntryKind::Approval | EntryKind::ApprovalEnd => approval_ids.push(id),
                _ => {}
            }
        }
        kinds.push(kind);
    }
    let invocations = rows_by_id(
        tx,
        INVOCATION_COLUMNS,
        "invocations",
        &invocation_ids,
        |row| invocation_row(row).map(|record| (record.id.clone(), record)),
    )
    .await?;
    let forms = rows_by_id(tx, FORM_COLUMNS, "forms", &form_ids, |row| {
        form_row(row).map(|record| (record.id.clone(), record))
    })
    .await?;
    let approvals = rows_by_id(tx, APPROVAL_COLUMNS, "approvals", &approval_ids, |row| {
        approval_row(row).map(|record| (record.id.clone(), record))
    })
    .await?;
    let mut entries = Vec::with_capacity(rows.len());
    for (row, kind) in rows.iter().zip(kinds) {
        let seq: i64 = row.try_get(0)?;
        let ref_id: Option<String> = row.try_get(2)?;
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
            payload: json("transcript.payload", row.try_get(3)?)?,
            at: row.try_get(4)?,
            detail,
        });
    }
    Ok(entries)
}

/// The rows of `table` whose ids are in `ids`, by id.
async fn rows_by_id<T>(
    tx: &Transaction<'_>,
    columns: &str,
    table: &str,
    ids: &[String],
    record: impl Fn(&Row) -> Result<(String, T), StoreError>,
) -> Result<HashMap<String, T>, StoreError> {
    if ids.is_empty() {
        return Ok(HashMap::new());
    }
    let sql = format!("SELECT {columns} FROM {table} WHERE id = ANY($1)");
    query(tx, &sql, &[&ids]).await?.iter().map(record).collect()
}

// ---- leases ----
// Every running call is leased by the store that holds it (`held_by`, a connection's
// `formwork.origin`); the database's clock sets and judges the leases (`formwork_now_ms`).

/// Renews the lease of every running call this store holds; returns how many.
pub(crate) async fn renew_leases(tx: &Transaction<'_>) -> Result<u64, StoreError> {
    execute(
        tx,
        "UPDATE invocations SET lease_until = formwork_lease_end()
         WHERE held_by = current_setting('formwork.origin', true) AND status = 'running'",
        &[],
    )
    .await
}

/// The running calls of other stores whose lease expired, oldest first, with their session.
pub(crate) async fn expired_calls(
    tx: &Transaction<'_>,
) -> Result<Vec<(String, String)>, StoreError> {
    query(
        tx,
        "SELECT id, session_id FROM invocations
         WHERE status = 'running' AND lease_until < formwork_now_ms()
           AND held_by IS DISTINCT FROM current_setting('formwork.origin', true)
         ORDER BY started_at, id",
        &[],
    )
    .await?
    .iter()
    .map(|row| Ok((row.try_get(0)?, row.try_get(1)?)))
    .collect()
}

/// Takes the call over if it still runs and its lease expired: `true` when this store now
/// holds it. Of two stores claiming at once, the second finds the lease renewed.
pub(crate) async fn claim_call(tx: &Transaction<'_>, id: &str) -> Result<bool, StoreError> {
    let claimed = execute(
        tx,
        "UPDATE invocations
         SET held_by = current_setting('formwork.origin', true), lease_until = formwork_lease_end()
         WHERE id = $1 AND status = 'running' AND lease_until < formwork_now_ms()",
        &[&id],
    )
    .await?;
    Ok(claimed == 1)
}

/// Claims the call (see [`claim_call`]) and ends it with what is open of it, as a restart
/// does: its pending forms and approvals and the call itself `cancelled` for `reason`. Returns
/// the forms and approvals it ended; `None` when another store holds the call.
pub(crate) async fn end_abandoned_call(
    tx: &Transaction<'_>,
    id: &str,
    reason: &str,
) -> Result<Option<AbandonedCall>, StoreError> {
    if !claim_call(tx, id).await? {
        return Ok(None);
    }
    let mut ended = AbandonedCall::default();
    let forms = query(
        tx,
        "SELECT id FROM forms WHERE invocation_id = $1 AND status = 'pending' ORDER BY created_at, id",
        &[&id],
    )
    .await?;
    for row in forms {
        let form: String = row.try_get(0)?;
        let end = FormEnd::from(FormResolution::Cancelled { reason });
        resolve_form(tx, &form, &end).await?;
        ended.forms.push(form);
    }
    let approvals = query(
        tx,
        "SELECT id FROM approvals WHERE invocation_id = $1 AND status = 'pending' ORDER BY created_at, id",
        &[&id],
    )
    .await?;
    for row in approvals {
        let approval: String = row.try_get(0)?;
        let end = ApprovalEnd::from(ApprovalResolution::Cancelled { reason });
        resolve_approval(tx, &approval, &end).await?;
        ended.approvals.push(approval);
    }
    let end = InvocationEnd::from(InvocationOutcome::Cancelled { reason });
    finish_invocation(tx, id, &end).await?;
    Ok(Some(ended))
}

// ---- invocations ----

pub(crate) async fn begin_invocation(
    tx: &Transaction<'_>,
    input: &InvocationInput,
) -> Result<u64, StoreError> {
    session_exists(tx, &input.session).await?;
    execute(
        tx,
        "INSERT INTO invocations (id, session_id, server, tool, arguments, status, started_at,
             asked_by)
         VALUES ($1, $2, $3, $4, $5, 'running', $6, $7)",
        &[
            &input.id,
            &input.session,
            &input.server,
            &input.tool,
            &input.arguments,
            &now(),
            &input.asked_by,
        ],
    )
    .await
    .map_err(|error| duplicate_or(error, "invocation", &input.id))?;
    append_entry(
        tx,
        &input.session,
        EntryKind::Invocation,
        Some(&input.id),
        &ref_payload(&input.id),
    )
    .await
}

pub(crate) async fn finish_invocation(
    tx: &Transaction<'_>,
    id: &str,
    end: &InvocationEnd,
) -> Result<(), StoreError> {
    let changed = execute(
        tx,
        "UPDATE invocations SET status = $2, content = $3, structured_content = $4,
             meta = $5, is_error = $6, error = $7, finished_at = $8
         WHERE id = $1 AND status = 'running'",
        &[
            &id,
            &end.status.as_str(),
            &end.content,
            &end.structured_content,
            &end.meta,
            &end.is_error,
            &end.error,
            &now(),
        ],
    )
    .await?;
    ended(
        tx,
        changed,
        "invocations",
        EntryKind::InvocationEnd,
        "invocation",
        id,
        |status| Ok(InvocationStatus::from_stored("invocations.status", status)?.as_str()),
    )
    .await
}

const INVOCATION_COLUMNS: &str = "id, session_id, server, tool, arguments, status, content, \
     structured_content, meta, is_error, error, started_at, finished_at, asked_by";

pub(crate) async fn invocation(
    tx: &Transaction<'_>,
    id: &str,
) -> Result<Option<InvocationRecord>, StoreError> {
    let sql = format!("SELECT {INVOCATION_COLUMNS} FROM invocations WHERE id = $1");
    let row = query_opt(tx, &sql, &[&id]).await?;
    row.as_ref().map(invocation_row).transpose()
}

fn invocation_row(row: &Row) -> Result<InvocationRecord, StoreError> {
    Ok(InvocationRecord {
        id: row.try_get(0)?,
        session: row.try_get(1)?,
        server: row.try_get(2)?,
        tool: row.try_get(3)?,
        arguments: optional_json("invocations.arguments", row.try_get(4)?)?,
        status: InvocationStatus::from_stored("invocations.status", row.try_get(5)?)?,
        content: optional_json("invocations.content", row.try_get(6)?)?,
        structured_content: optional_json("invocations.structured_content", row.try_get(7)?)?,
        meta: optional_json("invocations.meta", row.try_get(8)?)?,
        is_error: row.try_get(9)?,
        error: row.try_get(10)?,
        started_at: row.try_get(11)?,
        finished_at: row.try_get(12)?,
        asked_by: row.try_get(13)?,
    })
}

pub(crate) async fn record_round(
    tx: &Transaction<'_>,
    invocation: &str,
    round: u32,
    asked: &[String],
    state: Option<&str>,
) -> Result<(), StoreError> {
    let found = query_opt(
        tx,
        "SELECT session_id, status FROM invocations WHERE id = $1",
        &[&invocation],
    )
    .await?;
    let Some(row) = found else {
        return Err(not_found("invocation", invocation));
    };
    let (session, status): (String, String) = (row.try_get(0)?, row.try_get(1)?);
    if status != "running" {
        return Err(StoreError::AlreadyResolved {
            kind: "invocation",
            id: invocation.to_owned(),
            status: "finished",
        });
    }
    let payload = RoundRecord::payload(round, asked, state);
    append_entry(
        tx,
        &session,
        EntryKind::InvocationRound,
        Some(invocation),
        &payload,
    )
    .await
    .map(drop)
}

pub(crate) async fn rounds(
    tx: &Transaction<'_>,
    invocation: &str,
) -> Result<Vec<RoundRecord>, StoreError> {
    let rows = query(
        tx,
        "SELECT payload, at FROM transcript
         WHERE kind = 'invocation_round' AND ref_id = $1 ORDER BY seq",
        &[&invocation],
    )
    .await?;
    rows.iter()
        .map(|row| RoundRecord::from_payload(row.try_get(0)?, row.try_get(1)?))
        .collect()
}

/// Records the UI resource a tool call declared: an `invocation_app` entry referring to it.
pub(crate) async fn record_app(
    tx: &Transaction<'_>,
    invocation: &str,
    app: &AppRecord,
) -> Result<(), StoreError> {
    let row = query_opt(
        tx,
        "SELECT session_id FROM invocations WHERE id = $1",
        &[&invocation],
    )
    .await?;
    let Some(row) = row else {
        return Err(not_found("invocation", invocation));
    };
    let session: String = row.try_get(0)?;
    append_entry(
        tx,
        &session,
        EntryKind::InvocationApp,
        Some(invocation),
        &app.payload(),
    )
    .await
    .map(drop)
}

/// Replaces one part of the state an invocation's app left behind.
pub(crate) async fn save_app_state(
    tx: &Transaction<'_>,
    invocation: &str,
    part: AppStatePart,
    value: &str,
) -> Result<(), StoreError> {
    let column = match part {
        AppStatePart::ModelContext => "model_context",
        AppStatePart::WidgetState => "widget_state",
    };
    let sql = format!(
        "INSERT INTO app_state (invocation_id, session_id, {column}, updated_at)
         SELECT id, session_id, $2::text, $3::bigint FROM invocations WHERE id = $1
         ON CONFLICT (invocation_id) DO UPDATE SET {column} = $2::text, updated_at = $3::bigint"
    );
    let changed = execute(tx, &sql, &[&invocation, &value, &now()]).await?;
    found(changed, "invocation", invocation)
}

/// The app states of a session's invocations, in no particular order.
pub(crate) async fn app_states(
    tx: &Transaction<'_>,
    session: &str,
) -> Result<Vec<AppStateRecord>, StoreError> {
    let rows = query(
        tx,
        "SELECT invocation_id, model_context, widget_state, updated_at FROM app_state
         WHERE session_id = $1",
        &[&session],
    )
    .await?;
    rows.iter()
        .map(|row| {
            Ok(AppStateRecord {
                invocation: row.try_get(0)?,
                model_context: optional_json("app_state.model_context", row.try_get(1)?)?,
                widget_state: optional_json("app_state.widget_state", row.try_get(2)?)?,
                updated_at: row.try_get(3)?,
            })
        })
        .collect()
}

// ---- the model's conversation ----

pub(crate) async fn append_model_items(
    tx: &Transaction<'_>,
    session: &str,
    items: &[String],
) -> Result<(), StoreError> {
    // Appenders of one session queue on its row, as transcript writers do.
    let locked = execute(
        tx,
        "SELECT 1 FROM sessions WHERE id = $1 FOR UPDATE",
        &[&session],
    )
    .await?;
    found(locked, "session", session)?;
    for item in items {
        execute(
            tx,
            "INSERT INTO model_items (session_id, seq, item)
             SELECT $1::text, COALESCE(MAX(seq), 0) + 1, $2::text FROM model_items
             WHERE session_id = $1::text",
            &[&session, item],
        )
        .await?;
    }
    Ok(())
}

pub(crate) async fn model_items(
    tx: &Transaction<'_>,
    session: &str,
) -> Result<Vec<String>, StoreError> {
    let rows = query(
        tx,
        "SELECT item FROM model_items WHERE session_id = $1 ORDER BY seq",
        &[&session],
    )
    .await?;
    Ok(rows
        .iter()
        .map(|row| row.try_get(0))
        .collect::<Result<_, _>>()?)
}

// ---- forms ----

pub(crate) async fn insert_form(
    tx: &Transaction<'_>,
    input: &FormInput,
) -> Result<u64, StoreError> {
    session_exists(tx, &input.session).await?;
    if let Some(invocation) = &input.invocation {
        invocation_exists(tx, invocation).await?;
    }
    execute(
        tx,
        "INSERT INTO forms (id, session_id, invocation_id, plugin, request, render, status,
             created_at, asked_as)
         VALUES ($1, $2, $3, $4, $5, $6, 'pending', $7, $8)",
        &[
            &input.id,
            &input.session,
            &input.invocation,
            &input.plugin,
            &input.request,
            &input.render,
            &now(),
            &input.asked_as,
        ],
    )
    .await
    .map_err(|error| duplicate_or(error, "form", &input.id))?;
    append_entry(
        tx,
        &input.session,
        EntryKind::Form,
        Some(&input.id),
        &ref_payload(&input.id),
    )
    .await
}

pub(crate) async fn resolve_form(
    tx: &Transaction<'_>,
    id: &str,
    end: &FormEnd,
) -> Result<(), StoreError> {
    let changed = execute(
        tx,
        "UPDATE forms SET status = $2, content = $3, reason = $4, resolved_at = $5
         WHERE id = $1 AND status = 'pending'",
        &[&id, &end.status.as_str(), &end.content, &end.reason, &now()],
    )
    .await?;
    ended(
        tx,
        changed,
        "forms",
        EntryKind::FormEnd,
        "form",
        id,
        |status| Ok(FormStatus::from_stored("forms.status", status)?.as_str()),
    )
    .await
}

const FORM_COLUMNS: &str = "id, session_id, invocation_id, plugin, request, render, status, \
     content, reason, created_at, resolved_at, asked_as";

pub(crate) async fn form(tx: &Transaction<'_>, id: &str) -> Result<Option<FormRecord>, StoreError> {
    let sql = format!("SELECT {FORM_COLUMNS} FROM forms WHERE id = $1");
    let row = query_opt(tx, &sql, &[&id]).await?;
    row.as_ref().map(form_row).transpose()
}

fn form_row(row: &Row) -> Result<FormRecord, StoreError> {
    Ok(FormRecord {
        id: row.try_get(0)?,
        session: row.try_get(1)?,
        invocation: row.try_get(2)?,
        plugin: row.try_get(3)?,
        request: json("forms.request", row.try_get(4)?)?,
        render: optional_json("forms.render", row.try_get(5)?)?,
        status: FormStatus::from_stored("forms.status", row.try_get(6)?)?,
        content: optional_json("forms.content", row.try_get(7)?)?,
        reason: row.try_get(8)?,
        created_at: row.try_get(9)?,
        resolved_at: row.try_get(10)?,
        asked_as: row.try_get(11)?,
    })
}

// ---- approvals ----

pub(crate) async fn insert_approval(
    tx: &Transaction<'_>,
    input: &ApprovalInput,
) -> Result<u64, StoreError> {
    session_exists(tx, &input.session).await?;
    if let Some(invocation) = &input.invocation {
        invocation_exists(tx, invocation).await?;
    }
    execute(
        tx,
        "INSERT INTO approvals (id, session_id, invocation_id, server, tool, rendering, status,
             created_at)
         VALUES ($1, $2, $3, $4, $5, $6, 'pending', $7)",
        &[
            &input.id,
            &input.session,
            &input.invocation,
            &input.server,
            &input.tool,
            &input.rendering,
            &now(),
        ],
    )
    .await
    .map_err(|error| duplicate_or(error, "approval", &input.id))?;
    append_entry(
        tx,
        &input.session,
        EntryKind::Approval,
        Some(&input.id),
        &ref_payload(&input.id),
    )
    .await
}

pub(crate) async fn resolve_approval(
    tx: &Transaction<'_>,
    id: &str,
    end: &ApprovalEnd,
) -> Result<(), StoreError> {
    let changed = execute(
        tx,
        "UPDATE approvals SET status = $2, choice = $3, reason = $4, resolved_at = $5
         WHERE id = $1 AND status = 'pending'",
        &[
            &id,
            &end.status.as_str(),
            &end.choice.map(ApprovalChoice::as_str),
            &end.reason,
            &now(),
        ],
    )
    .await?;
    ended(
        tx,
        changed,
        "approvals",
        EntryKind::ApprovalEnd,
        "approval",
        id,
        |status| Ok(ApprovalStatus::from_stored("approvals.status", status)?.as_str()),
    )
    .await
}

const APPROVAL_COLUMNS: &str = "id, session_id, invocation_id, server, tool, rendering, status, \
     choice, reason, created_at, resolved_at";

pub(crate) async fn approval(
    tx: &Transaction<'_>,
    id: &str,
) -> Result<Option<ApprovalRecord>, StoreError> {
    let sql = format!("SELECT {APPROVAL_COLUMNS} FROM approvals WHERE id = $1");
    let row = query_opt(tx, &sql, &[&id]).await?;
    row.as_ref().map(approval_row).transpose()
}

fn approval_row(row: &Row) -> Result<ApprovalRecord, StoreError> {
    let choice: Option<String> = row.try_get(7)?;
    Ok(ApprovalRecord {
        id: row.try_get(0)?,
        session: row.try_get(1)?,
        invocation: row.try_get(2)?,
        server: row.try_get(3)?,
        tool: row.try_get(4)?,
        rendering: json("approvals.rendering", row.try_get(5)?)?,
        status: ApprovalStatus::from_stored("approvals.status", row.try_get(6)?)?,
        choice: choice
            .map(|choice| {
                ApprovalChoice::from_name(&choice).ok_or(StoreError::UnknownValue {
                    column: "approvals.choice",
                    value: choice,
                })
            })
            .transpose()?,
        reason: row.try_get(8)?,
        created_at: row.try_get(9)?,
        resolved_at: row.try_get(10)?,
    })
}

// ---- helpers ----

async fn execute(tx: &Transaction<'_>, sql: &str, params: Params<'_>) -> Result<u64, StoreError> {
    let statement = tx.prepare_cached(sql).await?;
    Ok(tx.execute(&statement, params).await?)
}

async fn query(
    tx: &Transaction<'_>,
    sql: &str,
    params: Params<'_>,
) -> Result<Vec<Row>, StoreError> {
    let statement = tx.prepare_cached(sql).await?;
    Ok(tx.query(&statement, params).await?)
}

async fn query_opt(
    tx: &Transaction<'_>,
    sql: &str,
    params: Params<'_>,
) -> Result<Option<Row>, StoreError> {
    let statement = tx.prepare_cached(sql).await?;
    Ok(tx.query_opt(&statement, params).await?)
}

async fn query_one(tx: &Transaction<'_>, sql: &str, params: Params<'_>) -> Result<Row, StoreError> {
    let statement = tx.prepare_cached(sql).await?;
    Ok(tx.query_one(&statement, params).await?)
}

async fn session_exists(tx: &Transaction<'_>, id: &str) -> Result<(), StoreError> {
    let rows = execute(tx, "SELECT 1 FROM sessions WHERE id = $1", &[&id]).await?;
    found(rows, "session", id)
}

async fn invocation_exists(tx: &Transaction<'_>, id: &str) -> Result<(), StoreError> {
    let rows = execute(tx, "SELECT 1 FROM invocations WHERE id = $1", &[&id]).await?;
    found(rows, "invocation", id)
}

fn found(changed: u64, kind: &'static str, id: &str) -> Result<(), StoreError> {
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

fn duplicate_or(error: StoreError, kind: &'static str, id: &str) -> StoreError {
    match &error {
        StoreError::Postgres(inner) if inner.code() == Some(&SqlState::UNIQUE_VIOLATION) => {
            StoreError::AlreadyExists {
                kind,
                id: id.to_owned(),
            }
        }
        _ => error,
    }
}
