//! The store's vocabulary: what callers hand in (`New*`, `*Resolution`) and what reads give back
//! (`*Record`, [`TranscriptEntry`]).
//!
//! JSON crosses this boundary as [`RawValue`] text and is stored as that exact text, so key order,
//! number spelling and whitespace survive a round trip byte for byte. Times are Unix milliseconds
//! taken by the store when the write is carried out.

use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use super::error::StoreError;

/// Milliseconds since the Unix epoch.
pub type UnixMillis = i64;

/// Declares a fieldless enum stored as a fixed lowercase string.
macro_rules! stored_enum {
    ($(#[$meta:meta])* $name:ident { $($(#[$vmeta:meta])* $variant:ident => $text:literal,)+ }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name {
            $($(#[$vmeta])* $variant,)+
        }

        impl $name {
            /// The string stored in the database.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(Self::$variant => $text,)+
                }
            }

            pub(super) fn from_stored(column: &'static str, text: &str) -> Result<Self, StoreError> {
                match text {
                    $($text => Ok(Self::$variant),)+
                    _ => Err(StoreError::UnknownValue { column, value: text.to_owned() }),
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

stored_enum! {
    /// What a transcript entry is.
    EntryKind {
        /// A message the user typed.
        UserMessage => "user_message",
        /// A message from the assistant.
        AssistantMessage => "assistant_message",
        /// A tool call; the entry refers to an [`InvocationRecord`].
        Invocation => "invocation",
        /// A form a plugin asked for; the entry refers to a [`FormRecord`].
        Form => "form",
        /// An approval card; the entry refers to an [`ApprovalRecord`].
        Approval => "approval",
        /// A tool call ended; the entry refers to its [`InvocationRecord`].
        InvocationEnd => "invocation_end",
        /// A form ended; the entry refers to its [`FormRecord`].
        FormEnd => "form_end",
        /// An approval card ended; the entry refers to its [`ApprovalRecord`].
        ApprovalEnd => "approval_end",
        /// Something the host wants the user to see (a decline, a cancellation, an error).
        Diagnostic => "diagnostic",
        /// A 2026-07-28 round of a running tool call (its payload: `round`, `asked`,
        /// `request_state`); the entry refers to the call's [`InvocationRecord`].
        InvocationRound => "invocation_round",
        /// The UI resource (MCP App) a tool call declared (its payload: `resource_uri`); the
        /// entry refers to the call's [`InvocationRecord`].
        InvocationApp => "invocation_app",
    }
}

/// The transcript entries that carry only their payload; entries referring to an invocation,
/// form or approval are written by [`Store::begin_invocation`](super::Store::begin_invocation),
/// [`Store::insert_form`](super::Store::insert_form) and
/// [`Store::insert_approval`](super::Store::insert_approval), in the same transaction as the
/// row they refer to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PlainEntryKind {
    /// A message the user typed.
    UserMessage,
    /// A message from the assistant.
    AssistantMessage,
    /// Something the host wants the user to see.
    Diagnostic,
}

impl From<PlainEntryKind> for EntryKind {
    fn from(kind: PlainEntryKind) -> Self {
        match kind {
            PlainEntryKind::UserMessage => EntryKind::UserMessage,
            PlainEntryKind::AssistantMessage => EntryKind::AssistantMessage,
            PlainEntryKind::Diagnostic => EntryKind::Diagnostic,
        }
    }
}

stored_enum! {
    /// Where a tool call stands.
    InvocationStatus {
        /// Sent, no result yet.
        Running => "running",
        /// The plugin returned a result (which may itself say `isError`).
        Completed => "completed",
        /// No result: a JSON-RPC error, a timeout, a broken connection.
        Failed => "failed",
        /// Stopped before a result, or still running when the host stopped.
        Cancelled => "cancelled",
    }
}

stored_enum! {
    /// Where a form stands.
    FormStatus {
        /// Shown or waiting to be shown.
        Pending => "pending",
        /// The user submitted it.
        Accepted => "accepted",
        /// The user or the host's policy declined it.
        Declined => "declined",
        /// Withdrawn: a new message, stop, time limit, plugin gone, host stopped.
        Cancelled => "cancelled",
    }
}

stored_enum! {
    /// Where an approval card stands.
    ApprovalStatus {
        /// Waiting for the user.
        Pending => "pending",
        /// The user chose; see [`ApprovalChoice`].
        Answered => "answered",
        /// Withdrawn before an answer.
        Cancelled => "cancelled",
    }
}

/// The user's answer to an approval card, stored by its wire name.
pub use crate::approval_choice::ApprovalChoice;

/// The reason given to forms, approvals and invocations found unfinished when the store opens.
pub const HOST_STOPPED: &str = "host-stopped";

/// A conversation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionRecord {
    /// Chosen by the caller.
    pub id: String,
    /// Shown in session lists.
    pub title: Option<String>,
    /// When the session was created.
    pub created_at: UnixMillis,
    /// When anything was last written to it.
    pub updated_at: UnixMillis,
    /// The Codex thread it runs in, under the Codex runtime.
    pub codex_thread: Option<String>,
}

/// A tool call about to be sent.
#[derive(Debug, Clone, Copy)]
pub struct NewInvocation<'a> {
    /// Chosen by the caller, unique across sessions.
    pub id: &'a str,
    /// The session the call belongs to.
    pub session: &'a str,
    /// The plugin's name.
    pub server: &'a str,
    /// The tool's name.
    pub tool: &'a str,
    /// The `arguments` object, verbatim.
    pub arguments: Option<&'a RawValue>,
    /// The invocation whose app made this call, when an app did.
    pub asked_by: Option<&'a str>,
}

/// How a tool call ended.
#[derive(Debug, Clone, Copy)]
pub enum InvocationOutcome<'a> {
    /// The plugin returned a result.
    Completed(ToolResult<'a>),
    /// No result; the text says why.
    Failed {
        /// What went wrong.
        error: &'a str,
    },
    /// Stopped before a result.
    Cancelled {
        /// Why.
        reason: &'a str,
    },
}

/// The parts of a `CallToolResult` the store keeps, each as its own verbatim JSON text.
#[derive(Debug, Clone, Copy, Default)]
pub struct ToolResult<'a> {
    /// `content`, the array of content blocks.
    pub content: Option<&'a RawValue>,
    /// `structuredContent`.
    pub structured_content: Option<&'a RawValue>,
    /// `_meta`.
    pub meta: Option<&'a RawValue>,
    /// `isError`.
    pub is_error: bool,
}

impl<'a> ToolResult<'a> {
    /// Splits a `CallToolResult` object into its parts without re-serialising any of them, so
    /// each part keeps its exact text. Other members of the result are not kept.
    pub fn from_json(result: &'a str) -> Result<Self, StoreError> {
        #[derive(Deserialize)]
        struct Wire<'a> {
            #[serde(borrow, default)]
            content: Option<&'a RawValue>,
            #[serde(borrow, default, rename = "structuredContent")]
            structured_content: Option<&'a RawValue>,
            #[serde(borrow, default, rename = "_meta")]
            meta: Option<&'a RawValue>,
            #[serde(default, rename = "isError")]
            is_error: Option<bool>,
        }
        // serde would also read a struct from an array; a result is always an object.
        if !result.trim_start().starts_with('{') {
            return Err(StoreError::ToolResult(serde::de::Error::custom(
                "a tool result must be a JSON object",
            )));
        }
        let wire: Wire<'a> = serde_json::from_str(result).map_err(StoreError::ToolResult)?;
        Ok(Self {
            content: wire.content,
            structured_content: wire.structured_content,
            meta: wire.meta,
            is_error: wire.is_error.unwrap_or(false),
        })
    }
}

/// A stored tool call.
#[derive(Debug, Clone)]
pub struct InvocationRecord {
    /// Its id.
    pub id: String,
    /// Its session.
    pub session: String,
    /// The plugin's name.
    pub server: String,
    /// The tool's name.
    pub tool: String,
    /// The `arguments` object, verbatim.
    pub arguments: Option<Box<RawValue>>,
    /// Where it stands.
    pub status: InvocationStatus,
    /// The result's `content`, verbatim.
    pub content: Option<Box<RawValue>>,
    /// The result's `structuredContent`, verbatim.
    pub structured_content: Option<Box<RawValue>>,
    /// The result's `_meta`, verbatim.
    pub meta: Option<Box<RawValue>>,
    /// The result's `isError`.
    pub is_error: bool,
    /// Why it failed or was cancelled.
    pub error: Option<String>,
    /// When it was sent.
    pub started_at: UnixMillis,
    /// When it ended.
    pub finished_at: Option<UnixMillis>,
    /// The invocation whose app made this call, when an app did.
    pub asked_by: Option<String>,
}

/// One `input_required` answer to a running tool call (2026-07-28): the plugin asked for input,
/// and the call goes on after the host answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoundRecord {
    /// 1 for the call's first `input_required` answer, and so on.
    pub round: u32,
    /// The keys of its `inputRequests`, in the plugin's order.
    pub asked: Vec<String>,
    /// Whether it carried `requestState`.
    pub request_state: bool,
    /// The `requestState` as the plugin sent it, to send again when another replica carries
    /// the call on.
    pub state: Option<String>,
    /// When it arrived.
    pub at: UnixMillis,
}

/// The payload of an `invocation_round` transcript entry.
#[derive(Serialize, Deserialize)]
struct RoundPayload {
    round: u32,
    asked: Vec<String>,
    request_state: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    state: Option<String>,
}

impl RoundRecord {
    /// The payload of its transcript entry, as JSON text.
    pub(crate) fn payload(round: u32, asked: &[String], state: Option<&str>) -> String {
        let payload = RoundPayload {
            round,
            asked: asked.to_vec(),
            request_state: state.is_some(),
            state: state.map(str::to_owned),
        };
        serde_json::to_string(&payload).unwrap_or_default()
    }

    /// The round an `invocation_round` entry written at `at` holds.
    pub fn from_payload(payload: &str, at: UnixMillis) -> Result<RoundRecord, StoreError> {
        let payload: RoundPayload =
            serde_json::from_str(payload).map_err(|source| StoreError::StoredJson {
                column: "transcript.payload",
                source,
            })?;
        Ok(RoundRecord {
            round: payload.round,
            asked: payload.asked,
            request_state: payload.request_state,
            state: payload.state,
            at,
        })
    }
}

/// The payload of an `invocation_app` transcript entry: the UI resource a call declared.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AppRecord {
    /// The `ui://` (or `openai/outputTemplate`) URI of the app's document.
    pub resource_uri: String,
}

impl AppRecord {
    /// The payload of its transcript entry, as JSON text.
    pub(crate) fn payload(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// The record an `invocation_app` entry holds.
    pub fn from_payload(payload: &str) -> Result<AppRecord, StoreError> {
        serde_json::from_str(payload).map_err(|source| StoreError::StoredJson {
            column: "transcript.payload",
            source,
        })
    }
}

/// What an app left behind for its invocation, each part the JSON text the app sent.
#[derive(Debug, Clone)]
pub struct AppStateRecord {
    /// The invocation whose app it is.
    pub invocation: String,
    /// The last `ui/update-model-context` params.
    pub model_context: Option<Box<RawValue>>,
    /// The last state a widget saved (`window.openai.setWidgetState`).
    pub widget_state: Option<Box<RawValue>>,
    /// When it last changed.
    pub updated_at: UnixMillis,
}

/// Which part of an app's state to replace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AppStatePart {
    /// `ui/update-model-context`: the context the model sees with later messages.
    ModelContext,
    /// A widget's saved state.
    WidgetState,
}

/// A form a plugin asked for.
#[derive(Debug, Clone, Copy)]
pub struct NewForm<'a> {
    /// Chosen by the caller, unique across sessions.
    pub id: &'a str,
    /// The session it belongs to.
    pub session: &'a str,
    /// The tool call it arrived during, if any.
    pub invocation: Option<&'a str>,
    /// The plugin that asked.
    pub plugin: &'a str,
    /// The `elicitation/create` params as read (key order kept; numbers and escapes as
    /// serde_json writes them).
    pub request: &'a RawValue,
    /// What the person was shown: the `ElicitationRequest` as JSON (the render block, or the URL).
    pub render: Option<&'a RawValue>,
    /// The id it was asked under, as JSON text (see [`FormRecord::asked_as`]).
    pub asked_as: Option<&'a str>,
}

/// How a form ended.
#[derive(Debug, Clone, Copy)]
pub enum FormResolution<'a> {
    /// Submitted.
    Accepted {
        /// The answer sent to the plugin, verbatim.
        content: Option<&'a RawValue>,
    },
    /// Declined by the user or by policy.
    Declined {
        /// Why, when the host knows.
        reason: Option<&'a str>,
    },
    /// Withdrawn.
    Cancelled {
        /// Why: `new-message`, `stop`, `timeout`, `plugin-gone`, ...
        reason: &'a str,
    },
}

/// A stored form.
#[derive(Debug, Clone)]
pub struct FormRecord {
    /// Its id.
    pub id: String,
    /// Its session.
    pub session: String,
    /// The tool call it arrived during.
    pub invocation: Option<String>,
    /// The plugin that asked.
    pub plugin: String,
    /// The `elicitation/create` params as read (key order kept).
    pub request: Box<RawValue>,
    /// What the person was shown, verbatim.
    pub render: Option<Box<RawValue>>,
    /// Where it stands.
    pub status: FormStatus,
    /// The accepted answer, verbatim.
    pub content: Option<Box<RawValue>>,
    /// Why it was declined or cancelled.
    pub reason: Option<String>,
    /// When it arrived.
    pub created_at: UnixMillis,
    /// When it ended.
    pub resolved_at: Option<UnixMillis>,
    /// The id it was asked under, as JSON text: a pushed form's JSON-RPC id, a round's form its
    /// `inputRequests` key.
    pub asked_as: Option<String>,
}

/// An approval card about to be shown.
#[derive(Debug, Clone, Copy)]
pub struct NewApproval<'a> {
    /// Chosen by the caller, unique across sessions.
    pub id: &'a str,
    /// The session it belongs to.
    pub session: &'a str,
    /// The tool call waiting for it, if already recorded.
    pub invocation: Option<&'a str>,
    /// The plugin's name.
    pub server: &'a str,
    /// The tool's name.
    pub tool: &'a str,
    /// What the card shows, verbatim.
    pub rendering: &'a RawValue,
}

/// How an approval card ended.
#[derive(Debug, Clone, Copy)]
pub enum ApprovalResolution<'a> {
    /// The user chose.
    Answered {
        /// What they chose.
        choice: ApprovalChoice,
        /// A note, e.g. a normalised choice.
        reason: Option<&'a str>,
    },
    /// Withdrawn before an answer.
    Cancelled {
        /// Why.
        reason: &'a str,
    },
}

/// A stored approval card.
#[derive(Debug, Clone)]
pub struct ApprovalRecord {
    /// Its id.
    pub id: String,
    /// Its session.
    pub session: String,
    /// The tool call it gates.
    pub invocation: Option<String>,
    /// The plugin's name.
    pub server: String,
    /// The tool's name.
    pub tool: String,
    /// What the card showed, verbatim.
    pub rendering: Box<RawValue>,
    /// Where it stands.
    pub status: ApprovalStatus,
    /// The user's answer.
    pub choice: Option<ApprovalChoice>,
    /// Why it was cancelled, or a note on the answer.
    pub reason: Option<String>,
    /// When it was shown.
    pub created_at: UnixMillis,
    /// When it ended.
    pub resolved_at: Option<UnixMillis>,
}

/// One line of a session's transcript, with the row it refers to.
#[derive(Debug)]
pub struct TranscriptEntry {
    /// Position in the session, from 1, without gaps.
    pub seq: u64,
    /// What it is.
    pub kind: EntryKind,
    /// The payload, verbatim (for reference kinds, `{"id":…}`).
    pub payload: Box<RawValue>,
    /// When it was written.
    pub at: UnixMillis,
    /// The invocation, form or approval a reference entry points to.
    pub detail: Option<EntryDetail>,
}

/// The row a reference entry points to, as it stands now.
#[derive(Debug)]
pub enum EntryDetail {
    /// A tool call.
    Invocation(InvocationRecord),
    /// A form.
    Form(FormRecord),
    /// An approval card.
    Approval(ApprovalRecord),
}

/// What [`Store::end_abandoned_call`](crate::store::Store::end_abandoned_call) ended besides the
/// call: its forms and approvals that were still open, in the order they were asked.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AbandonedCall {
    /// The forms' ids.
    pub forms: Vec<String>,
    /// The approvals' ids.
    pub approvals: Vec<String>,
}

/// What opening the store found unfinished and closed, because the host that owned it stopped.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Recovery {
    /// Pending forms now `cancelled` with reason [`HOST_STOPPED`].
    pub forms_cancelled: u64,
    /// Pending approvals now `cancelled` with reason [`HOST_STOPPED`].
    pub approvals_cancelled: u64,
    /// Running invocations now `cancelled` with error [`HOST_STOPPED`].
    pub invocations_cancelled: u64,
}

/// Counters of the writer thread, for tests and diagnostics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StoreStats {
    /// Writes carried out (committed or failed).
    pub writes: u64,
    /// Transactions committed: on SQLite one per batch, each one WAL sync under
    /// `synchronous = FULL`; on PostgreSQL one per write.
    pub transactions: u64,
}

/// The counters behind [`StoreStats`], shared by an engine and its store's handles.
#[derive(Debug, Default)]
pub(crate) struct Stats {
    writes: AtomicU64,
    transactions: AtomicU64,
}

impl Stats {
    /// Counts `writes` carried out in one transaction, which committed or not.
    pub(crate) fn record(&self, writes: u64, committed: bool) {
        self.writes.fetch_add(writes, Ordering::Relaxed);
        if committed {
            self.transactions.fetch_add(1, Ordering::Relaxed);
        }
    }

    pub(crate) fn snapshot(&self) -> StoreStats {
        StoreStats {
            writes: self.writes.load(Ordering::Relaxed),
            transactions: self.transactions.load(Ordering::Relaxed),
        }
    }
}

/// Wraps stored JSON text without touching it (it is validated, not re-serialised).
pub(crate) fn json(column: &'static str, text: String) -> Result<Box<RawValue>, StoreError> {
    RawValue::from_string(text).map_err(|source| StoreError::StoredJson { column, source })
}

pub(crate) fn optional_json(
    column: &'static str,
    text: Option<String>,
) -> Result<Option<Box<RawValue>>, StoreError> {
    text.map(|text| json(column, text)).transpose()
}
