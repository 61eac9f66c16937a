//! The `requestState`s a retry already presented, so that each is accepted once.
//!
//! A record lives as long as its state could still open; after that the expiry refuses the state
//! anyway. The number of records is bounded: past the limit the record that expires first is
//! dropped, and from then on every state expiring no later than it is refused too, so forgetting a
//! record never lets a replay through.

use std::collections::BTreeSet;

use crate::state::StateId;

/// Why a state presented again is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// A retry already presented this state.
    Consumed,
    /// The state may have been presented before, but its record was dropped to stay in bounds.
    Forgotten,
}

/// The states already presented, by expiry then id.
pub(crate) struct ConsumedStates {
    records: BTreeSet<(u64, StateId)>,
    limit: usize,
    /// States expiring at or before this instant are refused: a record of one was dropped.
    floor: u64,
}

impl std::fmt::Debug for ConsumedStates {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConsumedStates")
            .field("records", &self.records.len())
            .field("limit", &self.limit)
            .finish()
    }
}

impl ConsumedStates {
    /// A ledger that keeps at most `limit` records.
    pub(crate) fn new(limit: usize) -> ConsumedStates {
        ConsumedStates {
            records: BTreeSet::new(),
            limit,
            floor: 0,
        }
    }

    /// Records the state `id`, which expires at `expires`, as presented at `now` (milliseconds
    /// since the Unix epoch), unless it was presented before.
    pub(crate) fn consume(&mut self, id: StateId, expires: u64, now: u64) -> Result<(), Refusal> {
        while self
            .records
            .first()
            .is_some_and(|&(record_expires, _)| record_expires <= now)
        {
            self.records.pop_first();
        }
        if expires <= self.floor {
            return Err(Refusal::Forgotten);
        }
        if !self.records.insert((expires, id)) {
            return Err(Refusal::Consumed);
        }
        if self.records.len() > self.limit
            && let Some((dropped, _)) = self.records.pop_first()
        {
            self.floor = self.floor.max(dropped);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(limit: usize, steps: &[(u8, u64, u64)], expected: &[Result<(), Refusal>]) {
        let mut ledger = ConsumedStates::new(limit);
        let outcomes: Vec<_> = steps
            .iter()
            .map(|&(id, expires, now)| ledger.consume([id; 24], expires, now))
            .collect();
        assert_eq!(outcomes, expected);
        assert!(ledger.records.len() <= limit);
    }

    #[test]
    fn a_state_is_accepted_once_while_it_lives() {
        check(
            10,
            &[(1, 100, 10), (2, 100, 20), (1, 100, 99)],
            &[Ok(()), Ok(()), Err(Refusal::Consumed)],
        );
    }

    #[test]
    fn records_go_when_their_state_expires() {
        let mut ledger = ConsumedStates::new(10);
        for id in 0..5 {
            assert_eq!(ledger.consume([id; 24], 100 + u64::from(id), 10), Ok(()));
        }
        assert_eq!(ledger.consume([9; 24], 500, 102), Ok(()));
        assert_eq!(
            ledger
                .records
                .iter()
                .map(|&(expires, _)| expires)
                .collect::<Vec<_>>(),
            [103, 104, 500]
        );
    }

    #[test]
    fn past_the_limit_a_dropped_record_refuses_every_state_expiring_before_it() {
        check(
            2,
            &[
                (1, 100, 10),
                (2, 200, 10),
                // The third record drops the first (expiring at 100).
                (3, 300, 10),
                (1, 100, 20),
                (4, 90, 20),
                // Over the limit again, the new record is the one that expires first: it goes.
                (5, 101, 20),
                (5, 101, 30),
                (2, 200, 30),
            ],
            &[
                Ok(()),
                Ok(()),
                Ok(()),
                Err(Refusal::Forgotten),
                Err(Refusal::Forgotten),
                Ok(()),
                Err(Refusal::Forgotten),
                Err(Refusal::Consumed),
            ],
        );
    }
}
