//! Replicas: hosts sharing one PostgreSQL store. What another replica commits reaches the
//! sessions of this one as events, read from the store when its notice arrives
//! ([`StoreNotice`]): a session created there is listed here, its entries are shown here, a
//! session deleted there goes here.
//!
//! The host keeps, per session, the `seq` of the last entry it holds, and reads only what comes
//! after it: a notice seen twice, or one for entries already read, reads nothing new; after the
//! listening connection was lost, every session is compared with the store, so nothing is lost.
//! Entries of one session are committed in `seq` order (writers queue on the session's row).

use std::collections::HashMap;
use std::sync::Weak;

use tokio::sync::mpsc;

use crate::store::{Store, StoreError, StoreNotice};

use super::{HostInner, SessionId};

/// Follows the notices of the other replicas until the host or the store goes. `held` gives the
/// sessions loaded at start with the `seq` of their last entry.
pub(super) fn follow(
    host: Weak<HostInner>,
    store: Store,
    mut notices: mpsc::UnboundedReceiver<StoreNotice>,
    held: HashMap<SessionId, u64>,
) {
    let mut follower = Follower { host, store, held };
    tokio::spawn(async move {
        while let Some(notice) = notices.recv().await {
            if let Err(err) = follower.take(notice).await {
                // A later notice of the same session reads from where this one stopped.
                tracing::warn!(target: "formwork::store", %err, "another replica's writes not read");
            }
            if follower.host.strong_count() == 0 {
                return;
            }
        }
    });
}

struct Follower {
    host: Weak<HostInner>,
    store: Store,
    /// The `seq` of the last entry each session holds, as far as the store was read.
    held: HashMap<SessionId, u64>,
}

impl Follower {
    async fn take(&mut self, notice: StoreNotice) -> Result<(), StoreError> {
        match notice {
            StoreNotice::Appended { session, seq } => {
                if self.held.get(&session).is_some_and(|held| *held >= seq) {
                    return Ok(());
                }
                self.catch_up(&session).await
            }
            StoreNotice::Created { session } => self.catch_up(&session).await,
            StoreNotice::Deleted { session } => {
                self.forget(&session);
                Ok(())
            }
            StoreNotice::Resync => self.resync().await,
        }
    }

    /// Reads what the session has after the last entry this host holds, or loads it whole if
    /// the host does not have it.
    async fn catch_up(&mut self, session: &str) -> Result<(), StoreError> {
        let Some(host) = self.host.upgrade() else {
            return Ok(());
        };
        let Ok(local) = host.session(session) else {
            let Some(record) = self.store.session(session).await? else {
                return Ok(());
            };
            if let Some(last) = host.load_session(&self.store, record).await? {
                self.held.insert(session.to_owned(), last);
            }
            return Ok(());
        };
        let held = self.held.get(session).copied().unwrap_or(0);
        let (entries, last) = self.store.entries_after(session, held).await?;
        local.take_in_committed(crate::persist::replay(entries));
        self.held.insert(session.to_owned(), last.max(held));
        Ok(())
    }

    /// After notices may have been lost: reads every session that has entries this host does
    /// not hold, and forgets those deleted meanwhile.
    async fn resync(&mut self) -> Result<(), StoreError> {
        let heads = self.store.session_heads().await?;
        let stored: HashMap<&str, u64> = heads
            .iter()
            .map(|(session, last)| (session.as_str(), *last))
            .collect();
        let gone: Vec<SessionId> = self
            .held
            .keys()
            .filter(|session| !stored.contains_key(session.as_str()))
            .cloned()
            .collect();
        for session in gone {
            self.forget(&session);
        }
        for (session, last) in &heads {
            let behind = self.held.get(session).is_none_or(|held| held < last);
            let local = self
                .host
                .upgrade()
                .is_some_and(|host| host.session(session).is_ok());
            if behind || !local {
                self.catch_up(session).await?;
            }
        }
        Ok(())
    }

    fn forget(&mut self, session: &str) {
        self.held.remove(session);
        if let Some(host) = self.host.upgrade() {
            // Already gone here if this host deleted it.
            let _ = host.forget_session(session);
        }
    }
}
