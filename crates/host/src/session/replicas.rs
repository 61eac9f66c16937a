//! Replicas: hosts sharing one PostgreSQL store. What another replica commits reaches the
//! sessions of this one as events, read from the store when its notice arrives
//! ([`StoreNotice`]): a session created there is listed here, its entries are shown here, a
//! session deleted there goes here.
//!
//! The host keeps, per session, the `seq` of the last entry it holds, and reads only what comes
//! after it: a notice seen twice, or one for entries already read, reads nothing new; after the
//! listening connection was lost, every session is compared with the store, so nothing is lost.
//! Entries of one session are committed in `seq` order (writers queue on the session's row).
//!
//! A form answered anywhere: a replica shows the open forms of the others as cards of its own,
//! reads an answer against the form's request as stored, and commits it; the replica that holds
//! the call reads the ending from the store, as any other entry, and replies to its plugin. The
//! store keeps one ending per form: of two replicas ending one form, the second is refused.

use std::collections::HashMap;
use std::sync::{Arc, Weak};

use formwork_forms::{ElicitationRequest, ParseOptions};
use serde_json::Value;
use tokio::sync::mpsc;

use crate::config::Config;
use crate::responder::FormReply;
use crate::store::{EntryDetail, FormStatus, Store, StoreError, StoreNotice, TranscriptEntry};

use super::cards::{CardAnswer, CardAsks, mark_named_uploads_used, reply_for};
use super::{CommandError, Event, FormAnswer, HostInner, Session, SessionId};

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
        let open = open_forms(&entries, &host.config());
        local.take_in_committed(crate::persist::replay(entries), open);
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

/// The forms still open among `entries`, each with its request as the plugin sent it, parsed
/// as the replica that shows it parsed it (replicas run one configuration).
pub(super) fn open_forms(
    entries: &[TranscriptEntry],
    config: &Config,
) -> Vec<(String, ElicitationRequest)> {
    let options = ParseOptions {
        openai_elicitation: config.features.openai_elicitation,
    };
    entries
        .iter()
        .filter_map(|entry| match &entry.detail {
            Some(EntryDetail::Form(form)) if form.status == FormStatus::Pending => Some(form),
            _ => None,
        })
        .filter_map(|form| {
            let params: Value = serde_json::from_str(form.request.get()).ok()?;
            let request = formwork_forms::parse_request_with(&params, options).ok()?;
            Some((form.id.clone(), request))
        })
        .collect()
}

impl Session {
    /// Takes in events another replica committed: kept and sent to the UIs like the session's
    /// own, but not written again. `open` are the forms among them still open. A card of this
    /// host that another replica ended gets that ending as its answer (it is committed).
    pub(super) fn take_in_committed(
        &self,
        events: Vec<Event>,
        open: Vec<(String, ElicitationRequest)>,
    ) {
        let mut endings = Vec::new();
        {
            let mut state = self.lock();
            state.held_elsewhere.extend(open);
            for event in events {
                let event = Arc::new(event);
                if let Event::FormResolved { form_id, .. } = event.as_ref() {
                    state.held_elsewhere.remove(form_id);
                    endings.push(Arc::clone(&event));
                }
                if let Some(subscribers) = &state.subscribers {
                    let _ = subscribers.send(Arc::clone(&event));
                }
                state.apps.note(&event);
                state.log.push(event);
            }
        }
        for ending in endings {
            let Event::FormResolved {
                form_id,
                action,
                content,
                ..
            } = ending.as_ref()
            else {
                continue;
            };
            let Some(card) = self.take_card(form_id) else {
                continue;
            };
            let answer = match card.asks {
                CardAsks::Form(_) => CardAnswer::Form(FormReply {
                    action: *action,
                    content: content.clone(),
                    meta: None,
                }),
                // Not reached: form and approval ids differ.
                CardAsks::Approval(_) => card.cancelled(super::EndReason::NotStored),
            };
            tracing::info!(target: "formwork::form", marker = "answer", session = %self.id, form = %form_id, action = action.as_str(), reason = "answered on another replica", "form ended");
            let _ = card.reply.send(answer);
        }
    }

    /// Answers a form another replica holds: read against its request here, committed here,
    /// then shown; that replica replies to its plugin once it reads the ending.
    pub(super) fn answer_held_elsewhere(
        &self,
        form_id: &str,
        answer: FormAnswer,
    ) -> Result<(), CommandError> {
        let reply = {
            let mut state = self.lock();
            let Some(request) = state.held_elsewhere.get(form_id) else {
                return Err(CommandError::NotOpen(form_id.to_owned()));
            };
            let reply = reply_for(request.form().map(Arc::as_ref), answer, &state.uploads)?;
            mark_named_uploads_used(reply.content.as_ref(), &state.uploads);
            state.held_elsewhere.remove(form_id);
            reply
        };
        let (Some(me), Some(store)) = (
            self.me.upgrade(),
            self.host.upgrade().and_then(|host| host.store.clone()),
        ) else {
            return Err(CommandError::NotOpen(form_id.to_owned()));
        };
        let ending = Event::FormResolved {
            form_id: form_id.to_owned(),
            action: reply.action,
            content: reply.content,
            reason: None,
        };
        tokio::spawn(async move {
            match crate::persist::write(&store, &me.id, &ending, None).await {
                Ok(()) => me.take_in_committed(vec![ending], Vec::new()),
                Err(err) => {
                    let Event::FormResolved { form_id, .. } = &ending else {
                        return;
                    };
                    me.diagnostic(
                        "answer-not-stored",
                        format!("the answer to form {form_id} could not be stored, so it was not sent: {err}"),
                    );
                }
            }
        });
        Ok(())
    }
}
