//! One card and a session's queue of them: one card on screen at a time, the rest waiting in
//! order.
//!
//! A card is a plugin's form or an approval of a tool call; [`CardAsks`] says which, and the
//! answer goes back as the matching [`CardAnswer`]. The queue only keeps order; it decides
//! nothing about policy. Every card ends exactly once, through [`CardQueue::take`] or
//! [`CardQueue::drain`] and then `Session::answer_card` or `Session::cancel_card`, so no
//! plugin is left waiting.

use std::collections::VecDeque;
use std::future::Future;

use formwork_forms::ElicitationRequest;
use tokio::sync::oneshot;

use crate::policy::{ApprovalAnswer, ApprovalCard};
use crate::responder::FormReply;

/// One card, shown or waiting.
pub(crate) struct Card {
    pub id: String,
    /// The tool call it belongs to, when known.
    pub call_id: Option<String>,
    /// The server that asks (for an approval: whose tool would run).
    pub plugin: String,
    /// What a UI draws: the form without its parsed schema, or the approval's rendering.
    pub shown: ElicitationRequest,
    /// What it asks, to read answers with.
    pub asks: CardAsks,
    /// Where the answer goes (see `ReplyAfterCommit` for when).
    pub reply: oneshot::Sender<CardAnswer>,
}

/// What a card asks for.
#[derive(Debug, Clone)]
pub enum CardAsks {
    /// A form (with its parsed [`Form`](formwork_forms::Form), which checks answers) or a URL.
    Form(ElicitationRequest),
    /// Whether a tool call may run.
    Approval(ApprovalCard),
}

/// The answer to a card, of the card's own kind.
#[derive(Debug)]
pub(crate) enum CardAnswer {
    Form(FormReply),
    Approval(ApprovalAnswer),
}

impl Card {
    /// A form card for `request` (which keeps its parsed form), and the reply to come: `cancel`
    /// when the card goes away unanswered.
    pub fn form(
        id: String,
        call_id: Option<String>,
        plugin: String,
        request: ElicitationRequest,
    ) -> (Card, impl Future<Output = FormReply> + Send + use<>) {
        let mut shown = request.clone();
        shown.take_form();
        let (reply, answer) = oneshot::channel();
        let card = Card {
            id,
            call_id,
            plugin,
            shown,
            asks: CardAsks::Form(request),
            reply,
        };
        let answer = async move {
            match answer.await {
                Ok(CardAnswer::Form(reply)) => reply,
                _ => FormReply::cancel(),
            }
        };
        (card, answer)
    }

    /// An approval card shown as `shown`, and the answer to come: cancelled for `why_dropped`
    /// when the card goes away unanswered.
    pub fn approval(
        id: String,
        call_id: Option<String>,
        approval: ApprovalCard,
        shown: ElicitationRequest,
        why_dropped: &'static str,
    ) -> (Card, impl Future<Output = ApprovalAnswer> + Send + use<>) {
        let (reply, answer) = oneshot::channel();
        let fallback = approval.clone();
        let card = Card {
            id,
            call_id,
            plugin: approval.server.clone(),
            shown,
            asks: CardAsks::Approval(approval),
            reply,
        };
        let answer = async move {
            match answer.await {
                Ok(CardAnswer::Approval(answer)) => answer,
                _ => fallback.cancel(why_dropped),
            }
        };
        (card, answer)
    }

    /// A plugin's form (not an approval).
    pub fn is_form(&self) -> bool {
        matches!(self.asks, CardAsks::Form(_))
    }

    /// The answer when the host ends the card for `why`: `cancel`, or a cancelled approval.
    pub fn cancelled(&self, why: &str) -> CardAnswer {
        match &self.asks {
            CardAsks::Form(_) => CardAnswer::Form(FormReply::cancel()),
            CardAsks::Approval(approval) => CardAnswer::Approval(approval.cancel(why)),
        }
    }
}

/// The cards of one session.
#[derive(Default)]
pub(crate) struct CardQueue {
    shown: Option<Card>,
    waiting: VecDeque<Card>,
}

impl CardQueue {
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
        self.all()
            .filter(|card| card.call_id.as_deref() == Some(call_id) && card.is_form())
            .map(|card| card.id.clone())
            .collect()
    }

    /// How many plugin forms (not approvals) are open, shown or waiting.
    pub fn pending_forms(&self) -> usize {
        self.all().filter(|card| card.is_form()).count()
    }

    /// How many cards are open (shown or waiting).
    pub fn len(&self) -> usize {
        usize::from(self.shown.is_some()) + self.waiting.len()
    }

    fn all(&self) -> impl Iterator<Item = &Card> {
        self.shown.iter().chain(self.waiting.iter())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn card(id: &str) -> Card {
        let request = ElicitationRequest::Url(formwork_forms::UrlRequest {
            message: String::new(),
            url: "https://example.com".to_owned(),
            domain: "example.com".to_owned(),
            warnings: Vec::new(),
            elicitation_id: None,
            meta: None,
        });
        Card::form(id.to_owned(), None, "p".to_owned(), request).0
    }

    #[test]
    fn one_card_on_screen_and_the_rest_in_order() {
        let mut queue = CardQueue::default();
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
