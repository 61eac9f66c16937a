//! The session socket, `GET /api/sessions/{id}/socket`: the host's events out, commands in.
//!
//! Server to page, one JSON text message each, every one a type of the host's wire module:
//! - every [`Event`] of the session so far, exactly as the host serialises it, then
//!   `{"type": "snapshot_done"}`; after that, live events as they happen;
//! - `{"type": "reset"}` when the page fell too far behind the live stream: a fresh snapshot and
//!   `snapshot_done` follow, and the page redraws from them;
//! - `{"type": "command_error", "error", "message", "errors", "command"}` when a command was
//!   refused (`error` is a [`CommandErrorKind`](formwork_host::CommandErrorKind): `invalid`, `not_open`, `not_shown`, `mismatch`,
//!   `no_server`, `no_session` or `bad_command`; for `invalid`, `errors` holds
//!   `{"field", "message"}` per problem, the field being the question id, else it is empty;
//!   `command` echoes what the page sent).
//!
//! The page opens it with the subprotocols `formwork` and `formwork.token.<token>`; the server
//! selects `formwork` (the lock in `access.rs` reads the token from the second).
//!
//! Page to server: a [`Command`] as JSON, or an app's message (`app_rpc`, a
//! [`formwork_host::AppRpc`], answered by `app_reply`; see `sandbox::relay_on_socket`). While the socket is open the session counts a UI
//! attached, so its forms stay open; the host's grace period starts when the last one closes.

use std::sync::Arc;

use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use formwork_host::{Command, CommandError, Event, SocketMessage};
use futures::SinkExt;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::broadcast::error::{RecvError, TryRecvError};

use crate::AppState;

/// What a socket starts from: the events so far, and the live stream after them.
struct Feed {
    snapshot: Vec<Arc<Event>>,
    live: tokio::sync::broadcast::Receiver<Arc<Event>>,
}

impl Feed {
    fn open(state: &AppState, session: &str) -> Result<Feed, CommandError> {
        let (snapshot, live) = state.host.subscribe(session)?;
        Ok(Feed { snapshot, live })
    }
}

/// The largest command the page may send.
const MAX_MESSAGE_BYTES: usize = 1 << 20;

/// The close code for "going away".
const GOING_AWAY: u16 = 1001;

/// `GET /api/sessions/{id}/socket`.
pub(crate) async fn upgrade(
    State(state): State<AppState>,
    Path(session): Path<String>,
    ws: WebSocketUpgrade,
) -> Response {
    if !state.host.has_session(&session) {
        return (StatusCode::NOT_FOUND, "formwork: no such session\n").into_response();
    }
    // The page offers `formwork` and `formwork.token.<token>` (checked by the lock): select the
    // first, so the token is never echoed back.
    ws.protocols([crate::access::SOCKET_PROTOCOL])
        .max_message_size(MAX_MESSAGE_BYTES)
        .max_frame_size(MAX_MESSAGE_BYTES)
        .on_upgrade(move |socket| bridge(state, session, socket))
}

/// Why the bridge stops.
struct Closed;

async fn bridge(state: AppState, session: String, mut socket: WebSocket) {
    let Ok(_attached) = state.host.attach_ui(&session) else {
        return;
    };
    let Ok(mut feed) = Feed::open(&state, &session) else {
        return;
    };
    if send_snapshot(&mut socket, &mut feed).await.is_err() {
        return;
    }
    // Answers to the apps' messages, sent as the host has them.
    let (replies, mut answers) = tokio::sync::mpsc::unbounded_channel();
    loop {
        let step = tokio::select! {
            biased;
            () = state.shutdown.cancelled() => {
                let frame = CloseFrame { code: GOING_AWAY, reason: "formwork is stopping".into() };
                let _ = socket.send(Message::Close(Some(frame))).await;
                return;
            }
            Some(answer) = answers.recv() => send_json(&mut socket, &answer).await,
            event = feed.live.recv() => match event {
                Ok(event) => send_live(&state, &session, &mut socket, &mut feed, &event).await,
                Err(RecvError::Lagged(_)) => resync(&state, &session, &mut socket, &mut feed).await,
                Err(RecvError::Closed) => Err(Closed),
            },
            incoming = socket.recv() => match incoming {
                Some(Ok(Message::Text(text))) => match handle(&state, &session, text.as_str(), &replies) {
                    Some(reply) => send_json(&mut socket, &reply).await,
                    None => Ok(()),
                },
                Some(Ok(Message::Binary(_))) => {
                    let reply = SocketMessage::bad_command("commands are JSON text".to_owned(), Value::Null);
                    send_json(&mut socket, &reply).await
                }
                Some(Ok(Message::Ping(_) | Message::Pong(_))) => Ok(()),
                Some(Ok(Message::Close(_)) | Err(_)) | None => Err(Closed),
            },
        };
        if step.is_err() {
            return;
        }
    }
}

/// Starts the page over: `reset`, a fresh snapshot, `snapshot_done`.
async fn resync(
    state: &AppState,
    session: &str,
    socket: &mut WebSocket,
    feed: &mut Feed,
) -> Result<(), Closed> {
    *feed = Feed::open(state, session).map_err(|_| Closed)?;
    send_json(socket, &SocketMessage::Reset).await?;
    send_snapshot(socket, feed).await
}

/// The snapshot in as few writes as the socket's buffer allows: a long transcript is not one
/// write per event.
async fn send_snapshot(socket: &mut WebSocket, feed: &mut Feed) -> Result<(), Closed> {
    for event in std::mem::take(&mut feed.snapshot) {
        feed_json(socket, &*event).await?;
    }
    send_json(socket, &SocketMessage::SnapshotDone).await
}

/// Sends `first` and the live events already queued behind it in one write: the events a step
/// emits together (a call's start and its turn's, a call's end and its turn's) reach the page
/// together.
async fn send_live(
    state: &AppState,
    session: &str,
    socket: &mut WebSocket,
    feed: &mut Feed,
    first: &Event,
) -> Result<(), Closed> {
    feed_json(socket, first).await?;
    loop {
        match feed.live.try_recv() {
            Ok(event) => feed_json(socket, &*event).await?,
            Err(TryRecvError::Lagged(_)) => {
                flush(socket).await?;
                return resync(state, session, socket, feed).await;
            }
            Err(TryRecvError::Empty | TryRecvError::Closed) => return flush(socket).await,
        }
    }
}

async fn send_json(socket: &mut WebSocket, message: &impl Serialize) -> Result<(), Closed> {
    feed_json(socket, message).await?;
    flush(socket).await
}

/// Queues `message` in the socket's buffer, which is written out when full or flushed.
async fn feed_json(socket: &mut WebSocket, message: &impl Serialize) -> Result<(), Closed> {
    let text = serde_json::to_string(message).map_err(|_| Closed)?;
    socket
        .feed(Message::Text(text.into()))
        .await
        .map_err(|_| Closed)
}

async fn flush(socket: &mut WebSocket) -> Result<(), Closed> {
    socket.flush().await.map_err(|_| Closed)
}

/// Carries out one command, or starts serving an app's message (its answer goes to
/// `replies`); the reply to send, if it was refused.
fn handle(
    state: &AppState,
    session: &str,
    text: &str,
    replies: &tokio::sync::mpsc::UnboundedSender<SocketMessage>,
) -> Option<SocketMessage> {
    let raw: Value = match serde_json::from_str(text) {
        Ok(raw) => raw,
        Err(err) => {
            return Some(SocketMessage::bad_command(
                format!("not JSON: {err}"),
                Value::Null,
            ));
        }
    };
    if raw.get("type").and_then(Value::as_str) == Some("app_rpc") {
        return crate::sandbox::relay_on_socket(state, session, raw.clone(), replies.clone())
            .err()
            .map(|message| SocketMessage::bad_command(message, raw));
    }
    let command = match Command::deserialize(&raw) {
        Ok(command) => command,
        Err(err) => {
            return Some(SocketMessage::bad_command(
                format!("not a command: {err}"),
                raw,
            ));
        }
    };
    let message = match &command {
        Command::SendMessage { text } => Some(text.clone()),
        _ => None,
    };
    match state.host.command(session, command) {
        Ok(()) => {
            if let Some(text) = message {
                crate::assistant::on_message(state, session, &text);
            }
            None
        }
        Err(err) => Some(SocketMessage::refused(&err, raw)),
    }
}
