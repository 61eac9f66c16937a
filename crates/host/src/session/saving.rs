//! Writing sessions' events to the store: a few writer tasks for the whole host, however many
//! sessions wait.
//!
//! A session queues its events in order (`SessionState::saving`) and, when no writer has it,
//! puts itself on the host's queue. A writer takes a session and runs its `save_pending`
//! (`mod.rs`): the events are written one by one until none is left, and after each commit what
//! waited for it runs ([`ReplyAfterCommit`]).
//! A thousand sessions that emit at once cost a thousand places in a queue, not a thousand
//! tasks each holding a write and its serialized event.

use std::collections::VecDeque;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::FutureExt;
use tokio::sync::mpsc;

use super::reply_after_commit::ReplyAfterCommit;
use super::{Event, Session};
use crate::persist::Sent;

/// How many sessions are written at once: as many as the store takes.
const WRITERS: usize = crate::store::WRITES_AT_ONCE;

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
    /// Nothing is left to write, and no writer has the session.
    pub(super) fn all_written(&self) -> bool {
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
                    // A writer outlives a panic in what waited for a commit: the other sessions
                    // still need it. That session's queue stays as it was.
                    let saved = AssertUnwindSafe(session.save_pending())
                        .catch_unwind()
                        .await;
                    if saved.is_err() {
                        tracing::error!(target: "formwork::store", session = %session.id, "writing the session's events panicked; its later events are not stored");
                    }
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
