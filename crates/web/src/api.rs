//! The REST routes: sessions, the tool catalogue, and what the page needs to know at start.

use std::sync::Arc;

use std::collections::HashSet;

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use formwork_host::{Event, Role, UploadError};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::AppState;

/// How many characters of the first message name a session in the list.
const TITLE_CHARS: usize = 60;

/// `GET /api/info`: the version, whether a model answers messages (and which, for a real one),
/// and the config in force.
pub(crate) async fn info(State(state): State<AppState>) -> Json<Value> {
    let config = state.host.config();
    Json(json!({
        "version": env!("CARGO_PKG_VERSION"),
        "model": state.model.is_some() || state.host.model().is_some() || state.host.runs_codex(),
        "model_name": state.host.model().map(|choice| format!("{} via {}", choice.model, choice.provider.name)),
        "runtime": if state.host.runs_codex() { "codex" } else { "formwork" },
        "config": config.top_file().map(|path| path.display().to_string()),
        "servers": config.mcp_servers.iter()
            .filter(|(_, server)| server.enabled)
            .map(|(name, _)| name.clone())
            .collect::<Vec<_>>(),
    }))
}

/// `GET /api/sessions`: `{"sessions": [{"id", "title", "open"}]}`, oldest first; `title` is
/// the start of the first message (or `null`), `open` the number of cards awaiting an answer.
pub(crate) async fn list_sessions(State(state): State<AppState>) -> Json<Value> {
    let sessions: Vec<Value> = state
        .host
        .sessions()
        .into_iter()
        .filter_map(|id| Some(summary(&id, &state.host.events(&id).ok()?)))
        .collect();
    Json(json!({ "sessions": sessions }))
}

/// `POST /api/sessions`: opens a new session; `201 {"id"}`.
pub(crate) async fn create_session(State(state): State<AppState>) -> Response {
    let id = state.host.create_session();
    (StatusCode::CREATED, Json(json!({ "id": id }))).into_response()
}

/// `DELETE /api/sessions/{id}`: deletes the session, its transcript and its uploads;
/// `200 {"deleted": id}`, or `404` for an unknown session.
pub(crate) async fn delete_session(
    State(state): State<AppState>,
    Path(session): Path<String>,
) -> Response {
    match state.host.delete_session(&session).await {
        Ok(()) => Json(json!({ "deleted": session })).into_response(),
        Err(err) => (
            StatusCode::NOT_FOUND,
            Json(json!({ "error": err.to_string() })),
        )
            .into_response(),
    }
}

#[derive(Deserialize)]
pub(crate) struct UploadQuery {
    name: String,
}

/// `POST /api/sessions/{id}/uploads?name=NAME` with the file's bytes as the body: copies a
/// file the person adds to a resource picker into the session's uploads; `201 {"uri", "name"}`,
/// the `file://` URI the picker then answers. `404` for an unknown session, `409` when the host
/// keeps no files, `413` for a file over the limit.
pub(crate) async fn upload(
    State(state): State<AppState>,
    Path(session): Path<String>,
    Query(query): Query<UploadQuery>,
    body: Bytes,
) -> Response {
    let host = state.host.clone();
    let saved =
        tokio::task::spawn_blocking(move || host.save_upload(&session, &query.name, &body)).await;
    match saved {
        Ok(Ok(upload)) => (
            StatusCode::CREATED,
            Json(json!({ "uri": upload.uri, "name": upload.name })),
        )
            .into_response(),
        Ok(Err(err)) => {
            let status = match err {
                UploadError::NoSession(_) => StatusCode::NOT_FOUND,
                UploadError::NoStore => StatusCode::CONFLICT,
                UploadError::Store(_) => StatusCode::INTERNAL_SERVER_ERROR,
            };
            (status, format!("formwork: {err}\n")).into_response()
        }
        Err(_) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            "formwork: storing the file failed\n",
        )
            .into_response(),
    }
}

#[derive(Deserialize)]
pub(crate) struct ToolsQuery {
    #[serde(default)]
    refresh: bool,
}

/// `GET /api/tools[?refresh=true]`: every configured server's tools.
pub(crate) async fn tools(
    State(state): State<AppState>,
    Query(query): Query<ToolsQuery>,
) -> Response {
    let catalogue = state.tools.list(&state.host, query.refresh).await;
    Json(catalogue.as_ref().clone()).into_response()
}

/// Anything else.
pub(crate) async fn not_found() -> Response {
    (StatusCode::NOT_FOUND, "formwork: not found\n").into_response()
}

fn summary(id: &str, events: &[Arc<Event>]) -> Value {
    let title = events.iter().find_map(|event| match event.as_ref() {
        Event::MessageAdded {
            role: Role::User,
            text,
        } => Some(text.chars().take(TITLE_CHARS).collect::<String>()),
        _ => None,
    });
    let mut open = HashSet::new();
    for event in events {
        match event.as_ref() {
            Event::FormRequested { form_id, .. } => {
                open.insert(form_id.as_str());
            }
            Event::ApprovalRequested { approval_id, .. } => {
                open.insert(approval_id.as_str());
            }
            Event::FormResolved { form_id, .. } => {
                open.remove(form_id.as_str());
            }
            Event::ApprovalResolved { approval_id, .. } => {
                open.remove(approval_id.as_str());
            }
            _ => {}
        }
    }
    json!({ "id": id, "title": title, "open": open.len() })
}
