//! Events the web layer adds to a session's transcript: the scripted model's replies.
//!
//! The host has no command that adds an assistant message yet, so the workbench keeps these
//! events itself, each placed after the host event it followed, and merges them into what a
//! socket sees. They live in memory only: a restarted workbench has the host's transcript
//! without them. When the host gains such a command, this module goes away.

use std::collections::HashMap;
use std::sync::Mutex;

use formwork_host::{CommandError, Event, Host, SessionId};
use tokio::sync::broadcast;

/// The added events of every session.
pub(crate) struct Overlay {
    /// Per session: (number of host events before it, event).
    added: Mutex<HashMap<SessionId, Vec<(usize, Event)>>>,
    live: broadcast::Sender<Added>,
}

/// An added event on the live stream: its session, its place (how many host events precede
/// it) and the event.
#[derive(Clone, Debug)]
pub(crate) struct Added {
    pub(crate) session: SessionId,
    pub(crate) after: usize,
    pub(crate) event: Event,
}

/// What a socket starts from: the merged snapshot and both live streams.
pub(crate) struct Feed {
    pub(crate) snapshot: Vec<Event>,
    /// How many host events the snapshot holds (live added events are placed against it).
    pub(crate) host_events: usize,
    pub(crate) host: broadcast::Receiver<Event>,
    pub(crate) added: broadcast::Receiver<Added>,
}

impl Default for Overlay {
    fn default() -> Self {
        Overlay {
            added: Mutex::new(HashMap::new()),
            live: broadcast::channel(256).0,
        }
    }
}

impl Overlay {
    /// Adds `event` to the session after everything the host has recorded so far.
    pub(crate) fn add(&self, host: &Host, session: &str, event: Event) {
        let mut added = self.added.lock().unwrap_or_else(|p| p.into_inner());
        let Ok((log, _)) = host.subscribe(session) else {
            return;
        };
        added
            .entry(session.to_owned())
            .or_default()
            .push((log.len(), event.clone()));
        // No socket listening is fine: the event is in the snapshot of the next one.
        let _ = self.live.send(Added {
            session: session.to_owned(),
            after: log.len(),
            event,
        });
    }

    /// The session's events so far (host and added, in order) and the live streams. Taken
    /// under one lock, so an added event is in the snapshot or in the stream, never both.
    pub(crate) fn subscribe(&self, host: &Host, session: &str) -> Result<Feed, CommandError> {
        let added = self.added.lock().unwrap_or_else(|p| p.into_inner());
        let (log, live) = host.subscribe(session)?;
        let host_events = log.len();
        let extra = added.get(session).map(Vec::as_slice).unwrap_or_default();
        let mut snapshot = Vec::with_capacity(log.len() + extra.len());
        let mut extra = extra.iter().peekable();
        for (index, event) in log.into_iter().enumerate() {
            while let Some((_, added)) = extra.next_if(|(at, _)| *at <= index) {
                snapshot.push(added.clone());
            }
            snapshot.push(event);
        }
        snapshot.extend(extra.map(|(_, event)| event.clone()));
        Ok(Feed {
            snapshot,
            host_events,
            host: live,
            added: self.live.subscribe(),
        })
    }
}
