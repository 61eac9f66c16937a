//! The person's answer to a card, held until its record is committed.
//!
//! This keeps the durability invariant for answers: a plugin (or a waiting tool call) never
//! acts on an answer the transcript lacks. If the store refuses the record, the card ends again
//! as cancelled (`not-stored`), and that is what whoever waits is told.

use tokio::sync::oneshot;

use super::cards::{Card, CardAnswer, resolution};
use super::{EndReason, Session};
use crate::store::StoreError;

/// An answer waiting for its record's commit (see `Session::emit_then`).
pub(super) struct ReplyAfterCommit {
    card_id: String,
    to: oneshot::Sender<CardAnswer>,
    answer: CardAnswer,
    /// Sent instead when the record could not be stored.
    if_not_stored: CardAnswer,
}

impl ReplyAfterCommit {
    pub fn new(card: Card, answer: CardAnswer) -> Self {
        ReplyAfterCommit {
            if_not_stored: card.cancelled(EndReason::NotStored),
            card_id: card.id,
            to: card.reply,
            answer,
        }
    }

    /// Sends the answer now that the write of its record is over (`stored`).
    pub fn committed(self, session: &Session, stored: Result<(), StoreError>) {
        let answer = match stored {
            Ok(()) => self.answer,
            Err(err) => {
                let id = &self.card_id;
                let message = match &self.if_not_stored {
                    CardAnswer::Form(_) => format!(
                        "the answer to form {id} could not be stored, so the plugin was told `cancel`: {err}"
                    ),
                    CardAnswer::Approval(_) => format!(
                        "the answer to approval {id} could not be stored, so the tool call does not run: {err}"
                    ),
                };
                session.emit(resolution(
                    id,
                    &self.if_not_stored,
                    Some(EndReason::NotStored.as_str()),
                ));
                session.diagnostic("answer-not-stored", message);
                self.if_not_stored
            }
        };
        let _ = self.to.send(answer);
    }
}
