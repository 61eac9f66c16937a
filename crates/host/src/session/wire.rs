//! Everything that crosses between the host and a UI, typed in one place: the events a UI
//! receives, the commands it sends, why a command was refused, why a card ended without the
//! person, and the workbench socket's own messages (its snapshot marks, command errors, and an
//! app's messages and their answers).
//!
//! These are a contract (the workbench speaks them over its socket), so they derive serde on
//! purpose and are documented in `docs/host-api.md` and `docs/workbench.md`. Every event is also
//! the unit the store persists, so a reloaded page sees exactly what a live one saw. Two wire
//! types belong to lower rooms and travel in these messages: [`ApprovalChoice`] (policy) and
//! [`FormAction`] (the responder). The page lists the wire names of [`EndReason`] and
//! [`ApprovalChoice`] in `crates/web/assets/wire.js`; `cargo xtask test` checks the two agree.

use formwork_forms::render::RenderAnswers;
use formwork_forms::{Content, ElicitationRequest, FieldError, JsonText};

use crate::policy::ApprovalChoice;
use crate::responder::FormAction;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::apps::AppReply;

/// Identifies a session.
pub type SessionId = String;

/// One thing that happened in a session, in order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    /// A message was added to the transcript.
    MessageAdded {
        /// `user` or `assistant`.
        role: Role,
        /// The text.
        text: String,
    },
    /// More text of the model's answer, as it streams. The whole answer follows as one
    /// `message_added` (role `assistant`), which replaces the text streamed under this
    /// `message_id`; a delta of another id starts the answer anew (a stream that broke off and
    /// was asked again). Sent to the UIs following the session only: neither kept in its
    /// events nor stored.
    MessageDelta {
        /// Which answer the text belongs to.
        message_id: String,
        /// The text to append.
        delta: String,
    },
    /// A turn began (a user message, or a tool call from the palette).
    TurnStarted {
        /// The turn's id.
        turn_id: String,
    },
    /// A turn ended: all its tool calls are over.
    TurnEnded {
        /// The turn's id.
        turn_id: String,
        /// Why it ended.
        reason: TurnEndReason,
    },
    /// A tool call started.
    ToolCallStarted {
        /// The invocation's id.
        call_id: String,
        /// The server's name in the config.
        server: String,
        /// The tool's name.
        tool: String,
        /// The arguments as sent, kept as JSON text (shared with the call that sends them): a
        /// call holds them for as long as its forms wait, and a small object as a `Value`
        /// costs ten times its text.
        arguments: JsonText,
        /// The call whose app made this one (an app's `tools/call`); absent when the person or
        /// the model did.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        asked_by: Option<String>,
    },
    /// A call failed because its plugin pushed a form on a 2026-07-28 connection, which that
    /// version does not carry: the UI may offer to speak `version` to the server and run the
    /// call again (`Command::UseOlderProtocol`).
    OlderProtocolOffered {
        /// The call that failed.
        call_id: String,
        /// Its server.
        server: String,
        /// The version to speak instead (`2025-11-25`).
        version: String,
    },
    /// A tool call finished with a result or failed.
    ToolCallFinished {
        /// The invocation's id.
        call_id: String,
        /// The `CallToolResult` exactly as the plugin sent it, when there is one.
        #[serde(skip_serializing_if = "Option::is_none")]
        result: Option<Value>,
        /// What went wrong, when the call failed without a result.
        #[serde(skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
    /// The plugin answered the call with `input_required` (2026-07-28): the forms of this round
    /// follow, then the call is sent again with the answers.
    ToolCallRound {
        /// The invocation's id.
        call_id: String,
        /// 1 for the first round, and so on.
        round: u32,
        /// The keys of the plugin's `inputRequests`, in its order (empty when it sent only
        /// `requestState`).
        asked: Vec<String>,
        /// Whether the plugin sent `requestState`.
        request_state: bool,
    },
    /// The call declared an MCP App: its tool definition (before the call is sent) or its
    /// result's `_meta` (just before `tool_call_finished`) names a UI resource. Only such
    /// calls get an app card; the UI opens the document through the host
    /// ([`Host::open_app`](crate::Host::open_app)).
    ToolCallApp {
        /// The invocation's id.
        call_id: String,
        /// The UI resource's URI.
        resource_uri: String,
    },
    /// A plugin asks a question; show it (or queue it behind the form on screen).
    FormRequested {
        /// The form's id, used to answer it.
        form_id: String,
        /// The tool call it belongs to, when known.
        #[serde(skip_serializing_if = "Option::is_none")]
        call_id: Option<String>,
        /// The plugin (server) that asks.
        plugin: String,
        /// `true` when another card is on screen: this one waits, and `form_shown` follows.
        waiting: bool,
        /// What to show: the render block of a form, or the URL.
        body: ElicitationRequest,
    },
    /// A `sign_in` command's connection is up: the server's tools can be listed now (the
    /// tokens are stored). Not kept in the transcript.
    SignedIn {
        /// The server's name.
        server: String,
    },
    /// A form or approval card became the one on screen (it had been waiting behind another).
    FormShown {
        /// The form's id.
        form_id: String,
    },
    /// The plugin reported the out-of-band step of a URL-mode form finished
    /// (`notifications/elicitation/complete`). Not stored: it matters to a live page only.
    FormCompleted {
        /// The form's id.
        form_id: String,
    },
    /// A form ended.
    FormResolved {
        /// The form's id.
        form_id: String,
        /// `accept`, `decline` or `cancel`.
        action: FormAction,
        /// The content sent to the plugin, on accept.
        #[serde(skip_serializing_if = "Option::is_none")]
        content: Option<Content>,
        /// Why it ended that way, when not by the person: an [`EndReason`]'s wire name, or a
        /// decline reason.
        #[serde(skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// A tool call waits for the person's approval.
    ApprovalRequested {
        /// The approval's id, used to answer it.
        approval_id: String,
        /// The tool call it gates.
        call_id: String,
        /// The server.
        server: String,
        /// The tool.
        tool: String,
        /// `true` when another card is on screen: this one waits, and `form_shown` follows.
        waiting: bool,
        /// The card, in the rendering the config chose (always a form).
        body: ElicitationRequest,
    },
    /// An approval ended.
    ApprovalResolved {
        /// The approval's id.
        approval_id: String,
        /// `allow`, `allow_for_session`, `always_allow` or `deny`.
        choice: ApprovalChoice,
        /// `true` when the card was cancelled (by the host, or left without a choice) rather
        /// than answered; `choice` is then `deny`. Absent when `false`.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        cancelled: bool,
        /// Why: a sentence for the log, which names the [`EndReason`] when the host ended the
        /// card.
        #[serde(skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// Something a plugin author needs to know (e.g. why a form was declined).
    Diagnostic {
        /// A stable code, e.g. `elicitation-outside-turn`.
        code: String,
        /// The explanation.
        message: String,
    },
}

/// Why a turn ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TurnEndReason {
    /// All its tool calls (and the model's answer) are over.
    Completed,
    /// The person stopped it (or sent a new message under a model).
    Stopped,
    /// The model's turn ended on an error, which a `diagnostic` before it tells.
    Failed,
}

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// The person.
    User,
    /// The model (or scripted model).
    Assistant,
}

/// A command from a UI.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Command {
    /// The person sent a message. Pending forms of the session are cancelled.
    SendMessage {
        /// The text.
        text: String,
    },
    /// Call a tool directly (the tool palette).
    CallTool {
        /// The server's name.
        server: String,
        /// The tool's name.
        tool: String,
        /// Its arguments.
        #[serde(default)]
        arguments: Option<Value>,
    },
    /// Answer the form on screen.
    AnswerForm {
        /// The form's id.
        form_id: String,
        /// The answer.
        answer: FormAnswer,
    },
    /// Answer an approval card.
    AnswerApproval {
        /// The approval's id.
        approval_id: String,
        /// `allow`, `allow_for_session`, `always_allow` or `deny`.
        choice: ApprovalChoice,
    },
    /// Stop the running turn: its forms are cancelled and its tool calls abandoned.
    StopTurn,
    /// Answer to `older_protocol_offered`: write the offered `protocol_version` for the call's
    /// server (into the user config or the `--config` file, never a project's), connect to it
    /// again, and run the call again with its arguments.
    UseOlderProtocol {
        /// The call that failed.
        call_id: String,
    },
    /// Sign in to a server that asks for it (the palette's Sign in button): the session
    /// connects to it, and the server's 401 shows the "Sign in to NAME" card. `signed_in`
    /// follows once the connection is up.
    SignIn {
        /// The server's name.
        server: String,
    },
}

/// How a UI answers a form.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum FormAnswer {
    /// Render answers: `{"answers": {"id": {"answers": ["label"]}}}`.
    Render {
        /// The answers.
        answers: RenderAnswers,
    },
    /// Typed content: `{"id": value}`.
    Accept {
        /// The content (defaults fill what it omits).
        content: Content,
    },
    /// Accept a URL-mode request.
    AcceptUrl,
    /// Decline.
    Decline,
    /// Cancel.
    Cancel,
}

/// Why a card ended without the person, as recorded in the transcript (a `form_resolved`'s
/// `reason`) and the store. The wire names are kebab-case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EndReason {
    /// The person sent a new message.
    NewMessage,
    /// The person stopped the turn.
    Stopped,
    /// The plugin exited, or cancelled its request.
    PluginGone,
    /// No UI was attached for longer than the grace period.
    UiGone,
    /// The per-form time limit ran out.
    TimedOut,
    /// The tool call the form belongs to ended before it was answered: nothing waits for it.
    CallEnded,
    /// The host stopped (gracefully, or it was killed and the store found the form open: the
    /// store writes the same name, [`crate::store::HOST_STOPPED`]).
    HostStopped,
    /// The person answered, but the answer could not be stored, so the plugin got `cancel`.
    NotStored,
    /// Another client of the runtime (Codex's app-server) answered it first.
    AnsweredElsewhere,
}

impl EndReason {
    /// Every reason, in the order of the enum.
    pub const ALL: [EndReason; 9] = [
        EndReason::NewMessage,
        EndReason::Stopped,
        EndReason::PluginGone,
        EndReason::UiGone,
        EndReason::TimedOut,
        EndReason::CallEnded,
        EndReason::HostStopped,
        EndReason::NotStored,
        EndReason::AnsweredElsewhere,
    ];

    /// The wire name (as in events and the store).
    pub fn as_str(self) -> &'static str {
        match self {
            EndReason::NewMessage => "new-message",
            EndReason::Stopped => "stopped",
            EndReason::PluginGone => "plugin-gone",
            EndReason::UiGone => "ui-gone",
            EndReason::TimedOut => "timed-out",
            EndReason::CallEnded => "call-ended",
            EndReason::HostStopped => "host-stopped",
            EndReason::NotStored => "not-stored",
            EndReason::AnsweredElsewhere => "answered-elsewhere",
        }
    }
}

impl std::fmt::Display for EndReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a command was refused.
#[derive(Debug, thiserror::Error, PartialEq)]
#[non_exhaustive]
pub enum CommandError {
    /// There is no session with this id.
    #[error("no session `{0}`")]
    NoSession(String),
    /// There is no such server in the config.
    #[error("no server `{0}` is configured")]
    NoServer(String),
    /// The form or approval is not open (already answered, cancelled, or unknown).
    #[error("`{0}` is not open")]
    NotOpen(String),
    /// The form is open but waiting behind another; only the card on screen can be answered.
    #[error("`{0}` is waiting behind another form")]
    NotShown(String),
    /// The answer does not fit the form; the card stays open.
    #[error("the answer does not validate:\n{0}")]
    Invalid(formwork_forms::ValidationErrors),
    /// The answer's shape does not fit the card (e.g. a URL answer for a form).
    #[error("{0}")]
    Mismatch(String),
}

impl CommandError {
    /// Its wire name, the `error` of a `command_error`.
    pub fn kind(&self) -> CommandErrorKind {
        match self {
            CommandError::NoSession(_) => CommandErrorKind::NoSession,
            CommandError::NoServer(_) => CommandErrorKind::NoServer,
            CommandError::NotOpen(_) => CommandErrorKind::NotOpen,
            CommandError::NotShown(_) => CommandErrorKind::NotShown,
            CommandError::Invalid(_) => CommandErrorKind::Invalid,
            CommandError::Mismatch(_) => CommandErrorKind::Mismatch,
        }
    }
}

/// What kind of refusal a `command_error` reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CommandErrorKind {
    /// [`CommandError::Invalid`]: `errors` says what is wrong, per question.
    Invalid,
    /// [`CommandError::NotOpen`].
    NotOpen,
    /// [`CommandError::NotShown`].
    NotShown,
    /// [`CommandError::Mismatch`].
    Mismatch,
    /// [`CommandError::NoServer`].
    NoServer,
    /// [`CommandError::NoSession`].
    NoSession,
    /// The message is not a command: not JSON text, or not of a command's shape.
    BadCommand,
}

/// A message of the workbench's session socket other than an [`Event`] (which the socket sends
/// exactly as the host serialises it).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum SocketMessage {
    /// The snapshot (every event so far) is over; live events follow.
    SnapshotDone,
    /// The page fell too far behind the live stream: a fresh snapshot and `snapshot_done`
    /// follow, and the page redraws from them.
    Reset,
    /// A command (or an app's message) was refused.
    CommandError {
        /// What kind of refusal.
        error: CommandErrorKind,
        /// The refusal, in words.
        message: String,
        /// For `invalid`, one `{"field", "message"}` per problem, the field being the question
        /// id; else empty.
        errors: Vec<FieldError>,
        /// What the page sent, echoed (`null` when it was not JSON).
        command: Value,
    },
    /// The host's answer to an app's message (`app_rpc`).
    AppReply {
        /// The page's number for the message.
        relay: u64,
        /// The answer.
        #[serde(flatten)]
        answer: AppAnswer,
    },
}

impl SocketMessage {
    /// The `command_error` for `error`, refusing `command`.
    pub fn refused(error: &CommandError, command: Value) -> SocketMessage {
        let errors = match error {
            CommandError::Invalid(invalid) => invalid.errors.clone(),
            _ => Vec::new(),
        };
        SocketMessage::CommandError {
            error: error.kind(),
            message: error.to_string(),
            errors,
            command,
        }
    }

    /// The `command_error` for a message that is no command.
    pub fn bad_command(message: String, command: Value) -> SocketMessage {
        SocketMessage::CommandError {
            error: CommandErrorKind::BadCommand,
            message,
            errors: Vec::new(),
            command,
        }
    }
}

/// The host's answer to one message of an app: what the page does with it, or why there is
/// none. Also the body of `POST /api/apps/{doc}/rpc`'s answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum AppAnswer {
    /// The host decided.
    Decided {
        /// The JSON-RPC response to post back to the app (`null` for a notification).
        response: Option<Value>,
        /// A link the person agreed to open (`ui/open-link`), else `null`.
        open_link: Option<String>,
    },
    /// The message has no app to go to: its document is not minted, or not for this session.
    Refused {
        /// Why.
        error: String,
    },
}

/// One message of an app, as the page relays it: the body of `POST /api/apps/{doc}/rpc`, and
/// the content of an `app_rpc`. The host answers with an [`AppAnswer`].
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct AppMessage {
    /// The app's JSON-RPC request or notification.
    pub message: Value,
    /// The host context the page knows (theme, display mode, container size, locale, time
    /// zone), for `ui/initialize`.
    #[serde(default)]
    pub context: Value,
}

/// `{"type": "app_rpc", "doc", "relay", "message", "context"}`, page to host on the session
/// socket: one message of document `doc`'s app, answered by an `app_reply` with the same
/// `relay`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct AppRpc {
    /// The app document the message comes from.
    pub doc: String,
    /// The page's number for this message, given back with the answer.
    pub relay: u64,
    /// The message.
    #[serde(flatten)]
    pub app: AppMessage,
}

impl From<AppReply> for AppAnswer {
    fn from(reply: AppReply) -> AppAnswer {
        AppAnswer::Decided {
            response: reply.response,
            open_link: reply.open_link,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The wire names the page (checked by `cargo xtask test` against `as_str`) and the store
    /// know are the serde names, and the host's stop is named as the store names it.
    #[test]
    fn end_reasons_serialize_as_their_wire_names() {
        for reason in EndReason::ALL {
            assert_eq!(
                serde_json::to_value(reason).expect("serializes"),
                Value::String(reason.as_str().to_owned())
            );
        }
        assert_eq!(EndReason::HostStopped.as_str(), crate::store::HOST_STOPPED);
    }

    /// `cargo xtask test` reads the page's names against `as_str`: it must be the serde name.
    #[test]
    fn approval_choices_serialize_as_their_wire_names() {
        for choice in ApprovalChoice::ALL {
            assert_eq!(
                serde_json::to_value(choice).expect("serializes"),
                Value::String(choice.as_str().to_owned())
            );
        }
    }

    #[test]
    fn turn_end_reasons_serialize_as_before() {
        let names = [
            TurnEndReason::Completed,
            TurnEndReason::Stopped,
            TurnEndReason::Failed,
        ]
        .map(|reason| serde_json::to_value(reason).expect("serializes"));
        assert_eq!(names, ["completed", "stopped", "failed"]);
    }

    /// A call's arguments, kept as text, are on the wire as the JSON they were given (key order
    /// and numbers as sent), and read back the same.
    #[test]
    fn a_calls_arguments_are_sent_as_given() {
        let arguments = serde_json::json!({"z": 1, "a": [2.5, -3], "m": {"y": null, "b": "x"}});
        let started = Event::ToolCallStarted {
            call_id: "c1".to_owned(),
            server: "s".to_owned(),
            tool: "t".to_owned(),
            arguments: JsonText::new(&arguments),
            asked_by: None,
        };
        let text = serde_json::to_string(&started).expect("serializes");
        assert_eq!(
            text,
            r#"{"type":"tool_call_started","call_id":"c1","server":"s","tool":"t","arguments":{"z":1,"a":[2.5,-3],"m":{"y":null,"b":"x"}}}"#
        );
        let read: Event = serde_json::from_str(&text).expect("reads back");
        assert_eq!(read, started);
        let Event::ToolCallStarted {
            arguments: read, ..
        } = read
        else {
            unreachable!("read back as it was written")
        };
        assert_eq!(read.to_value(), arguments);
    }

    #[test]
    fn socket_messages_keep_their_shapes() {
        let check = |message: SocketMessage, expected: &str| {
            assert_eq!(
                serde_json::to_string(&message).expect("serializes"),
                expected
            );
        };
        check(SocketMessage::SnapshotDone, r#"{"type":"snapshot_done"}"#);
        check(SocketMessage::Reset, r#"{"type":"reset"}"#);
        check(
            SocketMessage::bad_command("not JSON".to_owned(), Value::Null),
            r#"{"type":"command_error","error":"bad_command","message":"not JSON","errors":[],"command":null}"#,
        );
        check(
            SocketMessage::refused(
                &CommandError::NotOpen("f1".to_owned()),
                serde_json::json!({"type": "stop_turn"}),
            ),
            r#"{"type":"command_error","error":"not_open","message":"`f1` is not open","errors":[],"command":{"type":"stop_turn"}}"#,
        );
        check(
            SocketMessage::AppReply {
                relay: 7,
                answer: AppAnswer::Decided {
                    response: None,
                    open_link: Some("https://example.com/".to_owned()),
                },
            },
            r#"{"type":"app_reply","relay":7,"response":null,"open_link":"https://example.com/"}"#,
        );
        check(
            SocketMessage::AppReply {
                relay: 8,
                answer: AppAnswer::Refused {
                    error: "no such app document".to_owned(),
                },
            },
            r#"{"type":"app_reply","relay":8,"error":"no such app document"}"#,
        );
    }
}
