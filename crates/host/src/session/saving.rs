//! Writing sessions' events to the store: a few writer tasks for the whole host, however many
//! sessions wait.
//!
//! A session queues its events in order (`SessionState::unsaved`) and, when no writer has it,
//! puts itself on the host's queue. A writer takes a session and writes its events one by one
//! until none is left, running after each commit what waited for it ([`ReplyAfterCommit`]).
//! A thousand sessions that emit at once cost a thousand places in a queue, not a thousand
//! tasks each holding a write and its serialized event.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;

use super::reply_after_commit::ReplyAfterCommit;
use super::{Event, Session};
use crate::persist::Sent;

/// How many sessions are written at once: the PostgreSQL store's pool has as many
/// connections; SQLite's writer thread commits what they queue together.
const WRITERS: usize = 16;

/// An event waiting for the store.
pub(super) struct Unsaved {
    pub(super) event: Arc<Event>,
    /// What the plugin sent that the event leaves out.
    pub(super) sent: Option<Sent>,
    /// The answer that waits until the event is stored (boxed: most events have none).
    pub(super) then: Option<Box<ReplyAfterCommit>>,
}

/// What a session has not yet written.
#[derive(Default)]
pub(super) struct SaveQueue {
    /// The session's own row, written before any of its events.
    pub(super) row: bool,
    pub(super) events: VecDeque<Unsaved>,
    /// A writer has the session, or the session waits for one.
    pub(super) queued: bool,
}

impl SaveQueue {
    pub(super) fn is_empty(&self) -> bool {
        !self.queued && !self.row && self.events.is_empty()
    }
}

/// The host's queue of sessions with something to write, and its writers.
pub(super) struct Writers {
    waiting: mpsc::UnboundedSender<Arc<Session>>,
}

impl Writers {
    /// Starts the writers (inside a tokio runtime); they stop once the host is gone.
    pub(super) fn start() -> Self {
        let (waiting, sessions) = mpsc::unbounded_channel::<Arc<Session>>();
        let sessions = Arc::new(tokio::sync::Mutex::new(sessions));
        for _ in 0..WRITERS {
            let sessions = Arc::clone(&sessions);
            tokio::spawn(async move {
                loop {
                    let next = sessions.lock().await.recv().await;
                    let Some(session) = next else {
                        return;
                    };
                    session.save_pending().await;
                }
            });
        }
        Writers { waiting }
    }

    /// Hands `session` to a writer, unless one has it already.
    pub(super) fn wake(&self, queue: &mut SaveQueue, session: Arc<Session>) {
        if !queue.queued {
            queue.queued = true;
            let _ = self.waiting.send(session);
        }
    }
}

impl Session {
    /// Writes the session's row, then its queued events in order, until none is left.
    async fn save_pending(&self) {
        let Some(store) = self.host.upgrade().and_then(|host| host.store.clone()) else {
            return;
        };
        let row = std::mem::take(&mut self.lock().saving.row);
        if row && let Err(err) = store.create_session(&self.id, None).await {
            tracing::error!(target: "formwork::store", session = %self.id, %err, "session not stored");
        }
        loop {
            let next = {
                let mut state = self.lock();
                let next = state.saving.events.pop_front();
                if next.is_none() {
                    state.saving.queued = false;
                    // A session may wait a long time before its next event: its queue holds
                    // no room meanwhile.
                    state.saving.events = VecDeque::new();
                }
                next
            };
            let Some(Unsaved { event, sent, then }) = next else {
                return;
            };
            let stored = crate::persist::write(&store, &self.id, &event, sent.as_ref()).await;
            if let Err(err) = &stored {
                tracing::error!(target: "formwork::store", session = %self.id, %err, "event not stored");
            }
            if let Some(then) = then {
                then.committed(self, stored);
            }
        }
    }

    /// Waits until every event emitted so far is in the store (at most a few seconds).
    pub(super) async fn saved(&self) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        while tokio::time::Instant::now() < deadline {
            if self.lock().saving.is_empty() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
}
