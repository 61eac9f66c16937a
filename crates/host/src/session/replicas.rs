//! Replicas: hosts sharing one PostgreSQL store. What another replica commits reaches the
//! sessions of this one as events, read from the store when its notice arrives
//! ([`StoreNotice`]): a session created there is listed here, its entries are shown here, a
//! session deleted there goes here.
//!
//! The host keeps, per session, the `seq` of the last entry it holds, and reads only what comes
//! after it: a notice seen twice, or one for entries already read, reads nothing new; after the
//! listening connection was lost, or a read failed, every session is compared with the store, so
//! nothing is lost.
//! Entries of one session are committed in `seq` order (writers queue on the session's row).
//!
//! A form answered anywhere: a replica shows the open forms of the others as cards of its own,
//! reads an answer against the form's request as stored, and commits it; the replica that holds
//! the call reads the ending from the store, as any other entry, and replies to its plugin. The
//! store keeps one ending per form: of two replicas ending one form, the second is refused.

use std::collections::HashMap;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use formwork_forms::{ParseOptions, RequestText};
use serde_json::Value;
use tokio::sync::mpsc;

use crate::config::Config;
use crate::plugin::Resume;
use crate::responder::{FormAction, FormReply};
use crate::store::{
    AbandonedCall, ApprovalChoice, ApprovalStatus, EntryDetail, EntryKind, FormRecord, FormStatus,
    HOST_STOPPED, InvocationRecord, InvocationStatus, RoundRecord, Store, StoreError, StoreNotice,
    TranscriptEntry,
};

use super::cards::{CardAnswer, CardAsks, mark_named_uploads_used, parsed_form, reply_for};
use super::{CommandError, Event, FormAnswer, HostInner, Session, SessionId, SessionState};

/// Follows the notices of the other replicas until the host or the store goes. `held` gives the
/// sessions loaded at start with the `seq` of their last entry.
pub(super) fn follow(
    host: Weak<HostInner>,
    store: Store,
    mut notices: mpsc::UnboundedReceiver<StoreNotice>,
    held: HashMap<SessionId, u64>,
) {
    // Expired leases are looked for four times per lease.
    let lease = store.lease().unwrap_or(Duration::from_secs(10));
    let every = lease / 4;
    let mut follower = Follower { host, store, held };
    let mut waiting = Waiting::default();
    tokio::spawn(async move {
        let mut ticks = tokio::time::interval(every);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        // Set when a read failed: the next tick compares every session with the store.
        let mut resync_due = false;
        loop {
            tokio::select! {
                notice = notices.recv() => {
                    let Some(notice) = notice else { return };
                    if let Err(err) = follower.take(notice).await {
                        tracing::warn!(target: "formwork::store", %err, "another replica's writes not read");
                        resync_due = true;
                    }
                }
                _ = ticks.tick() => {
                    if resync_due {
                        match follower.resync().await {
                            Ok(()) => resync_due = false,
                            Err(err) => tracing::warn!(target: "formwork::store", %err, "the sessions not compared with the store"),
                        }
                    }
                    let Some(host) = follower.host.upgrade() else { return };
                    let seen = Seen { waiting: &mut waiting, held: &follower.held, lease };
                    take_over_expired(&host, &follower.store, Some(seen)).await;
                }
            }
            if follower.host.strong_count() == 0 {
                return;
            }
        }
    });
}

/// The calls of stopped replicas found waiting for the person, each with the `seq` of its
/// session's last entry when its transcript was read, and when that was.
type Waiting = HashMap<String, (u64, Instant)>;

/// What the follower knows between two looks for expired calls: a call that waits for the
/// person is read again once its session has a newer entry from another replica, else once
/// per lease, not at every look. (This replica's own answer takes the call over at once:
/// `commit_ending`.)
struct Seen<'a> {
    waiting: &'a mut Waiting,
    /// The follower's `seq` of the last entry of each session.
    held: &'a HashMap<SessionId, u64>,
    lease: Duration,
}

impl Seen<'_> {
    /// Whether `call` waited at its last read, less than a lease ago, and its session has no
    /// entry since.
    fn unchanged(&self, call: &str, session: &str) -> bool {
        let (Some((read, at)), Some(held)) = (self.waiting.get(call), self.held.get(session))
        else {
            return false;
        };
        held <= read && at.elapsed() < self.lease
    }
}

/// Takes over the calls of stopped replicas (their lease expired): a 2026-07-28 call whose last
/// round is answered is carried on here from its retry; one that waits for the person stays
/// open (any replica may answer it); any other ends as a restart ends what it finds running,
/// `cancelled` (`host-stopped`) with its open cards. The store's claim lets exactly one
/// replica take each call. Without `seen`, every expired call is read.
async fn take_over_expired(host: &Arc<HostInner>, store: &Store, mut seen: Option<Seen<'_>>) {
    let expired = match store.expired_calls().await {
        Ok(expired) => expired,
        Err(err) => {
            tracing::warn!(target: "formwork::store", %err, "expired calls not read");
            return;
        }
    };
    if let Some(seen) = &mut seen {
        seen.waiting
            .retain(|call, _| expired.iter().any(|(expired, _)| expired == call));
    }
    for (call, session) in expired {
        if seen
            .as_ref()
            .is_some_and(|seen| seen.unchanged(&call, &session))
        {
            continue;
        }
        match take_over(host, store, &call, &session).await {
            Ok(waits_at) => {
                if let Some(seen) = &mut seen {
                    match waits_at {
                        Some(seq) => seen.waiting.insert(call, (seq, Instant::now())),
                        None => seen.waiting.remove(&call),
                    };
                }
            }
            Err(err) => {
                tracing::warn!(target: "formwork::store", call, %err, "a stopped replica's call not taken over");
            }
        }
    }
}

/// `Some(seq)` when the call waits for the person, `seq` being the last entry read.
async fn take_over(
    host: &Arc<HostInner>,
    store: &Store,
    call: &str,
    session: &str,
) -> Result<Option<u64>, StoreError> {
    let Ok(local) = host.session(session) else {
        return Ok(None);
    };
    let entries = store.transcript(session).await?;
    match plan(&entries, call) {
        Plan::Gone => {}
        Plan::Wait => return Ok(Some(entries.last().map_or(0, |entry| entry.seq))),
        Plan::End => {
            if let Some(AbandonedCall { forms, approvals }) = store.end_abandoned_call(call).await?
            {
                tracing::info!(target: "formwork::store", session, call, "a stopped replica's call ended");
                let reason = || Some(HOST_STOPPED.to_owned());
                let mut endings: Vec<Event> = forms
                    .into_iter()
                    .map(|form_id| Event::FormResolved {
                        form_id,
                        action: FormAction::Cancel,
                        content: None,
                        reason: reason(),
                    })
                    .collect();
                endings.extend(
                    approvals
                        .into_iter()
                        .map(|approval_id| Event::ApprovalResolved {
                            approval_id,
                            choice: ApprovalChoice::Deny,
                            cancelled: true,
                            reason: reason(),
                        }),
                );
                endings.push(Event::ToolCallFinished {
                    call_id: call.to_owned(),
                    result: None,
                    error: reason(),
                });
                local.take_in_committed(endings, Vec::new());
            }
        }
        Plan::Resume { invocation, resume } => {
            if store.claim_call(call).await? {
                tracing::info!(target: "formwork::store", session, call, round = resume.round, "a stopped replica's call carried on here");
                local.resume_call(*invocation, resume);
            }
        }
    }
    Ok(None)
}

/// What to do with a call whose replica stopped.
enum Plan {
    /// It ended meanwhile, or is unknown.
    Gone,
    /// Its last round has forms the person has not answered.
    Wait,
    /// It cannot be carried on: end it, with what is open of it.
    End,
    /// Send the retry of its last round.
    Resume {
        invocation: Box<InvocationRecord>,
        resume: Resume,
    },
}

/// Reads from the session's transcript what a stopped replica left of `call`. The answers of
/// the last round go by the keys their forms were asked under; a key with no form (the replica
/// stopped before showing it) is answered `cancel`.
fn plan(entries: &[TranscriptEntry], call: &str) -> Plan {
    let mut invocation = None;
    let mut round: Option<RoundRecord> = None;
    let mut round_forms: Vec<&FormRecord> = Vec::new();
    for entry in entries {
        match (entry.kind, &entry.detail) {
            (EntryKind::Invocation, Some(EntryDetail::Invocation(record))) if record.id == call => {
                invocation = Some(record.clone());
            }
            (EntryKind::InvocationRound, Some(EntryDetail::Invocation(record)))
                if record.id == call =>
            {
                round = RoundRecord::from_payload(entry.payload.get(), entry.at).ok();
                round_forms.clear();
            }
            (EntryKind::Form, Some(EntryDetail::Form(form)))
                if form.invocation.as_deref() == Some(call) =>
            {
                round_forms.push(form);
            }
            _ => {}
        }
    }
    let Some(invocation) = invocation.filter(|record| record.status == InvocationStatus::Running)
    else {
        return Plan::Gone;
    };
    let Some(round) = round else {
        return Plan::End;
    };
    if round_forms
        .iter()
        .any(|form| form.status == FormStatus::Pending)
    {
        return Plan::Wait;
    }
    let responses = (!round.asked.is_empty()).then(|| {
        round
            .asked
            .iter()
            .map(|key| {
                let asked_as = Value::from(key.as_str()).to_string();
                let answer = round_forms
                    .iter()
                    .rev()
                    .find(|form| form.asked_as.as_deref() == Some(asked_as.as_str()))
                    .map_or_else(FormReply::cancel, |form| stored_reply(form));
                (key.clone(), answer.to_result())
            })
            .collect()
    });
    Plan::Resume {
        invocation: Box::new(invocation),
        resume: Resume {
            round: round.round,
            responses,
            state: round.state,
        },
    }
}

/// The answer a form ended with, as its record keeps it.
fn stored_reply(form: &FormRecord) -> FormReply {
    match form.status {
        FormStatus::Accepted => FormReply {
            action: FormAction::Accept,
            content: form
                .content
                .as_deref()
                .and_then(|content| serde_json::from_str(content.get()).ok()),
            meta: None,
        },
        FormStatus::Declined => FormReply::decline(),
        FormStatus::Cancelled | FormStatus::Pending => FormReply::cancel(),
    }
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
        let open = open_cards(&entries, &host.config());
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

/// A card another replica holds, as this one reads answers to it.
pub(super) enum HeldElsewhere {
    /// A form, with its request as the plugin sent it, read as the replica that shows it read
    /// it (replicas run one configuration).
    Form(RequestText),
    /// An approval: the holder reads the choice against its card.
    Approval,
}

impl SessionState {
    /// The card `id` if another replica holds it.
    pub(super) fn held_by_other(&self, id: &str) -> Option<&HeldElsewhere> {
        self.held_elsewhere.get()?.get(id)
    }
}

/// The cards still open among `entries`.
pub(super) fn open_cards(
    entries: &[TranscriptEntry],
    config: &Config,
) -> Vec<(String, HeldElsewhere)> {
    let options = ParseOptions {
        openai_elicitation: config.features.openai_elicitation,
    };
    entries
        .iter()
        .filter_map(|entry| match &entry.detail {
            Some(EntryDetail::Form(form)) if form.status == FormStatus::Pending => {
                let text = RequestText::new(Arc::from(form.request.clone()), options);
                // A form that cannot be read cannot be answered here either.
                text.parse().ok()?;
                Some((form.id.clone(), HeldElsewhere::Form(text)))
            }
            Some(EntryDetail::Approval(approval)) if approval.status == ApprovalStatus::Pending => {
                Some((approval.id.clone(), HeldElsewhere::Approval))
            }
            _ => None,
        })
        .collect()
}

impl Session {
    /// Takes in events another replica committed: kept and sent to the UIs like the session's
    /// own, but not written again. `open` are the cards among them still open. A card of this
    /// host that another replica ended gets that ending as its answer (it is committed): a form
    /// the action and content, an approval the choice, read against the card here.
    pub(super) fn take_in_committed(&self, events: Vec<Event>, open: Vec<(String, HeldElsewhere)>) {
        let mut endings = Vec::new();
        {
            let mut guard = self.lock();
            let state = &mut *guard;
            if !open.is_empty() {
                state.held_elsewhere.made().extend(open);
            }
            for event in events {
                let event = Arc::new(event);
                if let Event::FormResolved { form_id: id, .. }
                | Event::ApprovalResolved {
                    approval_id: id, ..
                } = event.as_ref()
                {
                    if let Some(held) = state.held_elsewhere.get_mut() {
                        held.remove(id);
                    }
                    endings.push((id.clone(), Arc::clone(&event)));
                }
                if let Some(subscribers) = &state.subscribers {
                    let _ = subscribers.send(Arc::clone(&event));
                }
                state.apps.note(&event, &state.log);
                state.log.push(event);
            }
        }
        for (id, ending) in endings {
            let Some(card) = self.take_card(&id) else {
                continue;
            };
            let answer = match (ending.as_ref(), &card.asks) {
                (
                    Event::FormResolved {
                        action, content, ..
                    },
                    CardAsks::Form(_),
                ) => CardAnswer::Form(Box::new(FormReply {
                    action: *action,
                    content: content.clone(),
                    meta: None,
                })),
                (
                    Event::ApprovalResolved {
                        choice,
                        cancelled,
                        reason,
                        ..
                    },
                    CardAsks::Approval(approval),
                ) => CardAnswer::Approval(if *cancelled {
                    approval.cancel(reason.as_deref().unwrap_or("cancelled"))
                } else {
                    approval.answer(*choice)
                }),
                // Not reached: form and approval ids differ.
                _ => card.cancelled(super::EndReason::NotStored),
            };
            tracing::info!(target: "formwork::form", marker = "answer", session = %self.id, card = %id, reason = "answered on another replica", "card ended");
            let _ = card.reply.send(answer);
        }
    }

    /// Answers a form another replica holds: read against its request here, committed here,
    /// then shown; that replica replies to its plugin once it reads the ending.
    pub(super) fn answer_form_held_elsewhere(
        &self,
        form_id: &str,
        answer: FormAnswer,
    ) -> Result<(), CommandError> {
        let reply = {
            let mut state = self.lock();
            let Some(HeldElsewhere::Form(text)) = state.held_by_other(form_id) else {
                return Err(CommandError::Mismatch(format!(
                    "`{form_id}` is an approval held by another replica; answer it with answer_approval"
                )));
            };
            let form = parsed_form(text)?;
            let reply = reply_for(form.as_deref(), answer, state.uploads.get())?;
            mark_named_uploads_used(reply.content.as_ref(), state.uploads.get());
            state.held_elsewhere.made().remove(form_id);
            reply
        };
        self.commit_ending(Event::FormResolved {
            form_id: form_id.to_owned(),
            action: reply.action,
            content: reply.content,
            reason: None,
        });
        Ok(())
    }

    /// Answers an approval another replica holds with `choice`, committed here; that replica
    /// reads the choice against its card (what its policy offers) and lets the call run or not.
    pub(super) fn answer_approval_held_elsewhere(&self, approval_id: &str, choice: ApprovalChoice) {
        if let Some(held) = self.lock().held_elsewhere.get_mut() {
            held.remove(approval_id);
        }
        self.commit_ending(Event::ApprovalResolved {
            approval_id: approval_id.to_owned(),
            choice,
            cancelled: false,
            reason: None,
        });
    }

    /// Commits the ending of a card another replica holds, then shows it; once committed, a call
    /// whose replica stopped is carried on here if it can be.
    fn commit_ending(&self, ending: Event) {
        let (Some(me), Some(store)) = (
            self.me.upgrade(),
            self.host.upgrade().and_then(|host| host.store.clone()),
        ) else {
            return;
        };
        tokio::spawn(async move {
            match crate::persist::write(&store, &me.id, &ending, None).await {
                Ok(()) => {
                    me.take_in_committed(vec![ending], Vec::new());
                    // The replica holding the call may have stopped: carry it on now.
                    if let Some(host) = me.host.upgrade() {
                        take_over_expired(&host, &store, None).await;
                    }
                }
                Err(err) => me.diagnostic(
                    "answer-not-stored",
                    format!("an answer could not be stored, so it was not sent: {err}"),
                ),
            }
        });
    }
}
