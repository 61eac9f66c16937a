//! The per-session form queue: one card on screen at a time, the rest waiting in order.
//!
//! The broker only keeps order and delivers answers; it decides nothing about policy. Every
//! entry ends exactly once, through [`FormQueue::resolve`] or [`FormQueue::drain`], so no
//! plugin is left waiting.

use std::collections::VecDeque;
use std::sync::Arc;

use formwork_forms::{ElicitationRequest, Form};
use tokio::sync::oneshot;

use crate::policy::{ApprovalAnswer, ApprovalCard};
use crate::responder::FormReply;

/// What answering a card delivers, and to whom.
pub(crate) enum Waiter {
    /// A plugin's elicitation: the reply goes back to the plugin.
    Elicitation {
        /// The parsed form, to convert and validate answers (absent for URL mode).
        form: Option<Arc<Form>>,
        /// Where the reply goes.
        reply: oneshot::Sender<FormReply>,
    },
    /// A tool-call approval card: the answer goes back to the waiting call.
    Approval {
        /// The card, to read answers with.
        card: Box<ApprovalCard>,
        /// Where the answer goes.
        reply: oneshot::Sender<ApprovalAnswer>,
    },
}

/// One card, shown or waiting.
pub(crate) struct Card {
    pub id: String,
    pub call_id: Option<String>,
    pub plugin: String,
    /// What is shown, without its parsed form (that is in the waiter).
    pub body: ElicitationRequest,
    pub waiter: Waiter,
}

/// The cards of one session.
#[derive(Default)]
pub(crate) struct FormQueue {
    shown: Option<Card>,
    waiting: VecDeque<Card>,
}

impl FormQueue {
    /// Adds a card. Returns `true` when it went straight on screen.
    pub fn push(&mut self, card: Card) -> bool {
        if self.shown.is_none() {
            self.shown = Some(card);
            true
        } else {
            self.waiting.push_back(card);
            false
        }
    }

    /// The card on screen.
    pub fn shown(&self) -> Option<&Card> {
        self.shown.as_ref()
    }

    /// Takes the card `id` out of the queue, wherever it is. When it was on screen the next
    /// waiting card moves up; that card is returned second so the caller can announce it.
    pub fn take(&mut self, id: &str) -> Option<(Card, Option<&Card>)> {
        if self.shown.as_ref().is_some_and(|card| card.id == id) {
            let card = self.shown.take()?;
            self.shown = self.waiting.pop_front();
            return Some((card, self.shown.as_ref()));
        }
        let index = self.waiting.iter().position(|card| card.id == id)?;
        let card = self.waiting.remove(index)?;
        Some((card, None))
    }

    /// Takes every card out, the one on screen first, then the waiting ones in order.
    pub fn drain(&mut self) -> Vec<Card> {
        self.shown
            .take()
            .into_iter()
            .chain(self.waiting.drain(..))
            .collect()
    }

    /// The plugin forms (not approvals) that belong to the call `call_id`, on screen or waiting.
    pub fn forms_of_call(&self, call_id: &str) -> Vec<String> {
        self.shown
            .iter()
            .chain(self.waiting.iter())
            .filter(|card| {
                card.call_id.as_deref() == Some(call_id)
                    && matches!(card.waiter, Waiter::Elicitation { .. })
            })
            .map(|card| card.id.clone())
            .collect()
    }

    /// How many plugin forms (not approvals) are open, shown or waiting.
    pub fn pending_forms(&self) -> usize {
        self.shown
            .iter()
            .chain(self.waiting.iter())
            .filter(|card| matches!(card.waiter, Waiter::Elicitation { .. }))
            .count()
    }

    /// How many cards are open (shown or waiting).
    pub fn len(&self) -> usize {
        usize::from(self.shown.is_some()) + self.waiting.len()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn card(id: &str) -> Card {
        let (reply, _) = oneshot::channel();
        Card {
            id: id.to_owned(),
            call_id: None,
            plugin: "p".to_owned(),
            body: ElicitationRequest::Url(formwork_forms::UrlRequest {
                message: String::new(),
                url: "https://example.com".to_owned(),
                domain: "example.com".to_owned(),
                warnings: Vec::new(),
                elicitation_id: None,
                meta: None,
            }),
            waiter: Waiter::Elicitation { form: None, reply },
        }
    }

    #[test]
    fn one_card_on_screen_and_the_rest_in_order() {
        let mut queue = FormQueue::default();
        assert!(queue.push(card("a")));
        assert!(!queue.push(card("b")));
        assert!(!queue.push(card("c")));
        assert_eq!(queue.len(), 3);
        let (taken, next) = queue.take("a").unwrap();
        assert_eq!(taken.id, "a");
        assert_eq!(next.unwrap().id, "b");
        let (taken, next) = queue.take("c").unwrap();
        assert_eq!(taken.id, "c");
        assert!(next.is_none());
        assert_eq!(queue.shown().unwrap().id, "b");
        let drained: Vec<String> = queue.drain().into_iter().map(|card| card.id).collect();
        assert_eq!(drained, ["b"]);
        assert_eq!(queue.len(), 0);
    }
}
