//! What an app asks of the person: a message sent as them or a link opened, each behind a card
//! of the call, within the app's share of cards.

use std::sync::Arc;

use formwork_forms::{ParseOptions, RequestText};
use serde_json::{Value, json};

use crate::jsonrpc::code::{INVALID_PARAMS, REFUSED};
use crate::responder::FormAction;
use crate::session::cards::Card;
use crate::session::wire::Command;

use super::{AppReply, CallRecord, MAX_APP_CARDS, MAX_APP_TEXT_BYTES};
use crate::session::{Host, Session};

/// Holds one of an app's card places ([`MAX_APP_CARDS`]) while it lives.
pub(in crate::session) struct AppCardSlot<'a> {
    session: &'a Session,
    invocation: String,
}

/// Why an app gets no new card: it already has as many waiting as it may.
#[derive(Debug, thiserror::Error)]
pub(in crate::session) enum TooManyAppCards {
    /// `[forms] max_pending` is the lower limit.
    #[error("{limit} questions of this app already wait for the person ([forms] max_pending)")]
    MaxPending { limit: usize },
    /// [`MAX_APP_CARDS`] is the lower limit.
    #[error("{limit} questions of this app already wait for the person, the most an app may have")]
    MaxAppCards { limit: usize },
}

/// Why an app's request for the person was not confirmed.
#[derive(Debug, thiserror::Error)]
enum Unconfirmed {
    /// No card: the app has too many waiting.
    #[error(transparent)]
    TooManyCards(#[from] TooManyAppCards),
    /// The person did not choose yes (or the card could not be made): the refusal's text.
    #[error("{0}")]
    Refused(String),
}

impl Drop for AppCardSlot<'_> {
    fn drop(&mut self) {
        let mut state = self.session.lock();
        if let Some(apps) = state.apps.get_mut()
            && let Some(count) = apps.cards_waiting.get_mut(&self.invocation)
        {
            *count = count.saturating_sub(1);
            if *count == 0 {
                apps.cards_waiting.remove(&self.invocation);
            }
        }
    }
}

impl Session {
    pub(super) async fn app_message(
        self: &Arc<Self>,
        id: &Value,
        call_id: &str,
        call: &CallRecord,
        params: &Value,
    ) -> AppReply {
        if params.get("role").is_some_and(|role| role != "user") {
            return AppReply::error(
                id,
                INVALID_PARAMS,
                "an app's message is sent as the person: its `role` must be \"user\"",
            );
        }
        let blocks = match params.get("content") {
            Some(Value::Array(blocks)) => blocks.as_slice(),
            Some(block) => std::slice::from_ref(block),
            None => &[],
        };
        if blocks
            .iter()
            .any(|block| block.get("type").and_then(Value::as_str) != Some("text"))
        {
            return AppReply::error(
                id,
                INVALID_PARAMS,
                "formwork sends an app's message as text blocks only",
            );
        }
        let text = message_text(params.get("content"));
        let Some(text) = text.filter(|text| !text.trim().is_empty()) else {
            return AppReply::error(id, INVALID_PARAMS, "`ui/message` needs text content");
        };
        if text.len() > MAX_APP_TEXT_BYTES {
            return AppReply::error(
                id,
                INVALID_PARAMS,
                format!("the message is longer than {MAX_APP_TEXT_BYTES} bytes"),
            );
        }
        let question = format!(
            "The app of {} · {} wants to send this message as you:\n\n{text}",
            call.server, call.tool
        );
        let choices = (
            "Send",
            "Don't send",
            "the person did not send the app's message",
        );
        if let Err(why) = self.confirm(call_id, &call.server, question, choices).await {
            return AppReply::error(id, REFUSED, why.to_string());
        }
        let Some(host) = self.host.upgrade() else {
            return AppReply::error(id, REFUSED, "the host is shutting down");
        };
        match (Host { inner: host }).command(&self.id, Command::SendMessage { text }) {
            Ok(()) => AppReply::result(id, json!({})),
            Err(err) => AppReply::error(id, REFUSED, err.to_string()),
        }
    }

    pub(super) async fn open_link(
        self: &Arc<Self>,
        id: &Value,
        call_id: &str,
        call: &CallRecord,
        params: &Value,
    ) -> AppReply {
        let Some(url) = params.get("url").and_then(Value::as_str) else {
            return AppReply::error(id, INVALID_PARAMS, "`ui/open-link` needs a `url`");
        };
        let Some(url) = web_link(url) else {
            return AppReply::error(id, REFUSED, "only http and https links can be opened");
        };
        let question = format!(
            "The app of {} · {} wants to open a link:\n\n{url}",
            call.server, call.tool
        );
        let choices = ("Open", "Don't open", "the person did not open the link");
        if let Err(why) = self.confirm(call_id, &call.server, question, choices).await {
            return AppReply::error(id, REFUSED, why.to_string());
        }
        AppReply {
            open_link: Some(url),
            ..AppReply::result(id, json!({}))
        }
    }

    /// Asks the person with a card of the call whose choices are `(yes, no, refusal)`: `Ok`
    /// only when they chose `yes`, else `refusal`. An app whose call already has `[forms]
    /// max_pending` cards waiting is refused without a new one.
    async fn confirm(
        &self,
        call_id: &str,
        server: &str,
        question: String,
        (yes, no, refusal): (&str, &str, &str),
    ) -> Result<(), Unconfirmed> {
        let _waiting = self.app_card_slot(call_id)?;
        let params = json!({
            "mode": "form",
            "message": question,
            "requestedSchema": {
                "type": "object",
                "properties": {
                    "choice": {
                        "type": "string",
                        "title": "Your choice",
                        "oneOf": [{"const": "yes", "title": yes}, {"const": "no", "title": no}],
                    },
                },
                "required": ["choice"],
            },
        });
        let Ok((body, text)) = RequestText::read(&params, ParseOptions::default()) else {
            return Err(Unconfirmed::Refused(refusal.to_owned()));
        };
        let sent = crate::persist::Sent::Form {
            params: Arc::clone(text.params()),
            asked_as: None,
        };
        let (card, answer) = Card::form(
            self.new_id("f"),
            Some(call_id.to_owned()),
            server.to_owned(),
            body,
            text,
        );
        self.push_card(card, Some(sent));
        let reply = answer.await;
        let chosen = reply.action == FormAction::Accept
            && reply
                .content
                .as_ref()
                .and_then(|content| content.get("choice"))
                .and_then(Value::as_str)
                == Some("yes");
        if chosen {
            Ok(())
        } else {
            Err(Unconfirmed::Refused(refusal.to_owned()))
        }
    }
}

impl Session {
    /// A card place for the app of `invocation`, or why it has none: it already has
    /// [`MAX_APP_CARDS`] cards (or `[forms] max_pending`, when lower) waiting.
    pub(in crate::session) fn app_card_slot(
        &self,
        invocation: &str,
    ) -> Result<AppCardSlot<'_>, TooManyAppCards> {
        let max_pending = self
            .host
            .upgrade()
            .map_or(0, |host| host.config().forms.max_pending);
        let limit = MAX_APP_CARDS.min(max_pending);
        let mut state = self.lock();
        let waiting = state
            .apps
            .made()
            .cards_waiting
            .entry(invocation.to_owned())
            .or_default();
        if *waiting >= limit {
            tracing::info!(target: "formwork::apps", session = %self.id, call = %invocation, limit, "an app's request for the person refused: it has too many cards waiting");
            return Err(if max_pending < MAX_APP_CARDS {
                TooManyAppCards::MaxPending { limit }
            } else {
                TooManyAppCards::MaxAppCards { limit }
            });
        }
        *waiting += 1;
        Ok(AppCardSlot {
            session: self,
            invocation: invocation.to_owned(),
        })
    }
}

/// The text of `ui/message` content: a text block, or a list of blocks (their texts joined).
fn message_text(content: Option<&Value>) -> Option<String> {
    let text_of = |block: &Value| {
        (block.get("type").and_then(Value::as_str) == Some("text"))
            .then(|| block.get("text").and_then(Value::as_str))
            .flatten()
            .map(str::to_owned)
    };
    match content? {
        Value::Array(blocks) => {
            let texts: Vec<String> = blocks.iter().filter_map(text_of).collect();
            (!texts.is_empty()).then(|| texts.join("\n"))
        }
        block => text_of(block),
    }
}

/// `url` when it is an absolute http(s) URL without credentials, normalised.
fn web_link(url: &str) -> Option<String> {
    let parsed = url::Url::parse(url).ok()?;
    let web = matches!(parsed.scheme(), "http" | "https")
        && parsed.host_str().is_some()
        && parsed.username().is_empty()
        && parsed.password().is_none();
    web.then(|| parsed.to_string())
}
