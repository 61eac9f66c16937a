//! Release note: a line of text that must match a `pattern`.
//!
//! `pattern` is part of the `openai/elicitation` vocabulary, so formwork-sdk sends the patterned
//! form only to clients that declare that extension. Any other client gets the same field without
//! the pattern, and the plugin checks the answer itself: a note that does not match is refused
//! with an error result (it is not asked again). Without forms at all, the `note` argument is
//! checked the same way.

use formwork_sdk::{Ask, Asker, Elicit};
use rmcp::model::{CallToolResult, ErrorData, JsonObject};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::{done, failed, text_argument};

/// A changelog line: its kind, a colon, a space, then what changed.
pub const NOTE_PATTERN: &str = r"^(Added|Changed|Fixed|Removed): \S";

/// The form for clients that check `pattern` themselves.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct PatternedNote {
    #[schemars(
        title = "Release note",
        description = "Added, Changed, Fixed or Removed, a colon, then what changed.",
        regex(pattern = NOTE_PATTERN),
        length(max = 120)
    )]
    pub note: String,
}

impl Elicit for PatternedNote {}

/// The same field for every other client; the plugin checks the pattern.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct PlainNote {
    #[schemars(
        title = "Release note",
        description = "Added, Changed, Fixed or Removed, a colon, then what changed.",
        length(max = 120)
    )]
    pub note: String,
}

impl Elicit for PlainNote {}

pub(crate) fn tool() -> Value {
    json!({
        "name": "release_note",
        "description": "Record one line for the changelog; asks for it (text with a pattern).",
        "inputSchema": {"type": "object", "properties": {
            "note": {"type": "string", "description": "Used only when the client cannot show forms."}
        }},
    })
}

/// The note, recorded when it matches the pattern.
fn record(note: &str, how: &str) -> CallToolResult {
    let matches = regex::Regex::new(NOTE_PATTERN).is_ok_and(|pattern| pattern.is_match(note));
    if matches {
        done(format!("Recorded release note{how}: {note}"))
    } else {
        failed(format!(
            "Not recorded: {note:?} does not match {NOTE_PATTERN} (e.g. \"Fixed: the login loop\")."
        ))
    }
}

pub(crate) async fn call(ask: Asker, arguments: &JsonObject) -> Result<CallToolResult, ErrorData> {
    const MESSAGE: &str = "What goes in the changelog?";
    let plain = match ask.ask::<PatternedNote>(MESSAGE).await? {
        Ask::NotSupported => ask.ask::<PlainNote>(MESSAGE).await?,
        Ask::Accepted(form) => Ask::Accepted(PlainNote { note: form.note }),
        Ask::Declined => Ask::Declined,
        Ask::Cancelled => Ask::Cancelled,
        Ask::Invalid(reason) => Ask::Invalid(reason),
    };
    Ok(match plain {
        Ask::Accepted(form) => record(&form.note, ""),
        Ask::Declined => done("No release note: the form was declined."),
        Ask::Cancelled => done("No release note: the form was cancelled."),
        Ask::Invalid(reason) => {
            failed(format!("No release note: the answer did not fit: {reason}"))
        }
        Ask::NotSupported => match text_argument(arguments, "note") {
            Some(note) => record(note, " (the `note` argument: this client shows no forms)"),
            None => {
                failed("No release note: this client shows no forms; pass `note` as an argument.")
            }
        },
    })
}
