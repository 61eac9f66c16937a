//! The UI-facing wire types of a session: the events a UI receives and the commands it sends.
//!
//! These are a contract (the workbench speaks them over its socket), so they derive serde on
//! purpose and are documented in `docs/host-api.md`. Every event is also the unit the store
//! persists, so a reloaded page sees exactly what a live one saw.

use formwork_forms::render::RenderAnswers;
use formwork_forms::{Content, ElicitationRequest};

use crate::policy::ApprovalChoice;
use crate::responder::FormAction;
use serde::{Deserialize, Serialize};
use serde_json::Value;

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
        /// Why it ended: `completed`, `stopped`, or `failed` (the model's turn ended on an
        /// error, which a `diagnostic` before it tells).
        reason: String,
    },
    /// A tool call started.
    ToolCallStarted {
        /// The invocation's id.
        call_id: String,
        /// The server's name in the config.
        server: String,
        /// The tool's name.
        tool: String,
        /// The arguments as sent.
        arguments: Value,
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
        /// Why it ended that way, when not by the person: `new-message`, `stopped`,
        /// `plugin-gone`, `ui-gone`, `timed-out`, `host-stopped`, or a decline reason.
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
        /// Why, when not by the person.
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
