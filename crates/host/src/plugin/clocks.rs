//! Request clocks that stop while a form is open: a request's timeout counts only the time no
//! form concerning it was waiting for the person. A sign-in the person is taking part in (the
//! authorization page of a remote server) stops every clock of the connection alike, the
//! handshake's included.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

use super::Shared;

/// The forms open on a connection, as request timeouts see them. A form that came on the stream
/// of one of the host's requests (Streamable HTTP: the call it belongs to) pauses that request's
/// timeout only, so that with `share_session` one session's form does not hold up the time limit
/// of another's call; if that request has already ended, it pauses nothing. A form that came any
/// other way (stdio, the listening stream) pauses every request on the connection.
#[derive(Debug, Default)]
pub(super) struct FormClocks {
    /// Forms open that belong to no request of ours.
    unattributed: usize,
    /// Sign-ins waiting for the person.
    signing_in: usize,
    /// The clock of each request that has a timeout, by id.
    requests: HashMap<u64, FormClock>,
}

impl FormClocks {
    /// A request starts: it is paused at once if a form of the whole connection (when forms
    /// pause it) or a sign-in is open. Returns what wakes it when its last form closes.
    fn start(&mut self, id: u64, forms_pause_it: bool) -> Arc<Notify> {
        let all_closed = Arc::new(Notify::new());
        let open = if forms_pause_it { self.unattributed } else { 0 };
        self.requests.insert(
            id,
            FormClock {
                forms_pause_it,
                open: open + self.signing_in,
                since: Instant::now(),
                ended: Duration::ZERO,
                all_closed: Arc::clone(&all_closed),
            },
        );
        all_closed
    }
}

/// Whose timeout an open form pauses.
#[derive(Debug, Clone, Copy)]
pub(crate) enum CountedAgainst {
    /// The request on whose stream it came.
    Request(u64),
    /// Every request of the connection: it came on no request's stream.
    Connection,
    /// None: the request on whose stream it came had already ended.
    Nothing,
}

/// How long at least one form concerning a request has been open since it was sent.
#[derive(Debug)]
struct FormClock {
    /// Whether forms pause it: the handshake's clock stops for sign-ins only.
    forms_pause_it: bool,
    /// How many such forms (and sign-ins) are open right now.
    open: usize,
    /// When the latest stretch with a form open began.
    since: Instant,
    /// The length of the stretches with a form open that have ended.
    ended: Duration,
    /// Notified when `open` drops to zero; a request past its deadline waits for it.
    all_closed: Arc<Notify>,
}

impl FormClock {
    /// How long at least one form has been open, up to `now`.
    fn paused_until(&self, now: Instant) -> Duration {
        if self.open > 0 {
            self.ended + now.saturating_duration_since(self.since)
        } else {
            self.ended
        }
    }

    fn open(&mut self, now: Instant) {
        if self.open == 0 {
            self.since = now;
        }
        self.open += 1;
    }

    fn close(&mut self, now: Instant) {
        if self.open == 0 {
            return;
        }
        self.open -= 1;
        if self.open == 0 {
            self.ended += now.saturating_duration_since(self.since);
            self.all_closed.notify_waiters();
        }
    }
}

impl Shared {
    /// A form opens on the stream of `request` (or of none): the timeouts it concerns stop
    /// counting. Returns what it was counted against, for [`Shared::form_closed`].
    pub(crate) fn form_opened(&self, request: Option<u64>) -> CountedAgainst {
        let Ok(mut clocks) = self.forms.lock() else {
            return CountedAgainst::Nothing;
        };
        let now = Instant::now();
        match request {
            Some(id) => match clocks.requests.get_mut(&id) {
                Some(clock) if clock.forms_pause_it => {
                    clock.open(now);
                    CountedAgainst::Request(id)
                }
                // Its request ended (or timed out) already, or is the handshake: nothing waits
                // on this form.
                _ => CountedAgainst::Nothing,
            },
            None => {
                clocks.unattributed += 1;
                for clock in clocks.requests.values_mut() {
                    if clock.forms_pause_it {
                        clock.open(now);
                    }
                }
                CountedAgainst::Connection
            }
        }
    }

    /// A sign-in starts or stops waiting for the person: while one waits, no request of the
    /// connection times out.
    pub(crate) fn signing_in(&self, waiting: bool) {
        let Ok(mut clocks) = self.forms.lock() else {
            return;
        };
        let now = Instant::now();
        if waiting {
            clocks.signing_in += 1;
        } else if clocks.signing_in == 0 {
            return;
        } else {
            clocks.signing_in -= 1;
        }
        for clock in clocks.requests.values_mut() {
            if waiting {
                clock.open(now);
            } else {
                clock.close(now);
            }
        }
    }

    /// A form closes: the timeouts whose last open form it was count again.
    pub(crate) fn form_closed(&self, counted_against: CountedAgainst) {
        let Ok(mut clocks) = self.forms.lock() else {
            return;
        };
        let now = Instant::now();
        match counted_against {
            // Gone if its request ended first.
            CountedAgainst::Request(id) => {
                if let Some(clock) = clocks.requests.get_mut(&id) {
                    clock.close(now);
                }
            }
            CountedAgainst::Connection => {
                clocks.unattributed = clocks.unattributed.saturating_sub(1);
                for clock in clocks.requests.values_mut() {
                    if clock.forms_pause_it {
                        clock.close(now);
                    }
                }
            }
            CountedAgainst::Nothing => {}
        }
    }
}

/// A request's form clock, kept while the request waits.
pub(super) struct RequestClock<'a> {
    shared: &'a Shared,
    id: u64,
    all_closed: Arc<Notify>,
}

impl<'a> RequestClock<'a> {
    pub(super) fn start(shared: &'a Shared, id: u64, forms_pause_it: bool) -> Self {
        let all_closed = match shared.forms.lock() {
            Ok(mut clocks) => clocks.start(id, forms_pause_it),
            Err(_) => Arc::new(Notify::new()),
        };
        RequestClock {
            shared,
            id,
            all_closed,
        }
    }

    /// How long forms concerning the request have been open since it was sent, up to `now`.
    pub(super) fn paused_until(&self, now: Instant) -> Duration {
        self.shared
            .forms
            .lock()
            .ok()
            .map_or(Duration::ZERO, |clocks| {
                clocks
                    .requests
                    .get(&self.id)
                    .map_or(Duration::ZERO, |clock| clock.paused_until(now))
            })
    }

    /// Returns once no form concerning the request is open.
    pub(super) async fn all_closed(&self) {
        loop {
            // Registered before looking, so a close in between is not missed.
            let mut notified = std::pin::pin!(self.all_closed.notified());
            notified.as_mut().enable();
            let open = self.shared.forms.lock().ok().map_or(0, |clocks| {
                clocks.requests.get(&self.id).map_or(0, |clock| clock.open)
            });
            if open == 0 {
                return;
            }
            notified.await;
        }
    }
}

impl Drop for RequestClock<'_> {
    fn drop(&mut self) {
        if let Ok(mut clocks) = self.shared.forms.lock() {
            clocks.requests.remove(&self.id);
        }
    }
}

/// `start + wait`, or about 30 years on when that is out of range (as `tokio::time::sleep` does).
pub(super) fn later(start: Instant, wait: Duration) -> Instant {
    start
        .checked_add(wait)
        .unwrap_or_else(|| start + Duration::from_secs(86_400 * 365 * 30))
}
