//! The UI side of a form: what the host hands over when a plugin asks the person something,
//! and what it expects back.

use formwork_forms::{Content, ElicitationRequest, RequestText};
use serde_json::Value;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::future::BoxFuture;

/// Answers the forms plugins ask for: a terminal prompt, a web UI, a script.
pub trait FormResponder: Send + Sync + 'static {
    /// Shows `prompt` to the person and resolves with their answer. When `prompt.cancelled`
    /// fires the host has already ended the form as `cancel` and drops this future.
    fn respond(&self, prompt: FormPrompt) -> BoxFuture<FormReply>;

    /// Told when a form is declined without being shown (unsupported mode or schema).
    fn declined(&self, _notice: &DeclineNotice) {}
}

/// One form a plugin asks for.
#[derive(Debug)]
pub struct FormPrompt {
    /// The name of the plugin that asks.
    pub plugin: String,
    /// The JSON-RPC id of the plugin's `elicitation/create` request.
    pub request_id: Value,
    /// The id of the host's request (a `tools/call`) on whose response stream the plugin sent
    /// this one, which tells whose call it belongs to. `None` on stdio and on HTTP's listening
    /// stream.
    pub call_request: Option<u64>,
    /// The request's params exactly as the plugin sent them and the options they were read
    /// with: for a record of what was asked, and to parse the form again when its answer comes
    /// (a waiting form keeps this text, not its parsed form).
    pub params: RequestText,
    /// What to show: the form (with its parsed [`Form`](formwork_forms::Form), which converts
    /// and validates answers), or the URL. A form's `render` is what a UI draws.
    pub request: ElicitationRequest,
    /// URL mode with an `elicitationId`: becomes `true` when the plugin reports the flow
    /// complete (`notifications/elicitation/complete`).
    pub url_completed: Option<watch::Receiver<bool>>,
    /// Fires when the form ends without the person: the plugin went away or cancelled.
    pub cancelled: CancellationToken,
}

/// A form the host declined without showing it.
#[derive(Debug, Clone)]
pub struct DeclineNotice {
    /// The plugin that asked.
    pub plugin: String,
    /// The JSON-RPC id of the request.
    pub request_id: Value,
    /// As [`FormPrompt::call_request`].
    pub call_request: Option<u64>,
    /// Why it could not be shown.
    pub reason: String,
}

/// The person's answer to a form.
#[derive(Debug, Clone, PartialEq)]
pub struct FormReply {
    /// What the person did.
    pub action: FormAction,
    /// The content of an accepted form (absent for URL mode and for decline/cancel).
    pub content: Option<Content>,
    /// Result `_meta` to pass to the plugin.
    pub meta: Option<Content>,
}

/// The three elicitation actions; as JSON their wire names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FormAction {
    /// Submitted (form) or agreed to open the URL (URL mode).
    Accept,
    /// Explicitly refused.
    Decline,
    /// Dismissed without a choice.
    Cancel,
}

impl FormAction {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            FormAction::Accept => "accept",
            FormAction::Decline => "decline",
            FormAction::Cancel => "cancel",
        }
    }
}

impl std::fmt::Display for FormAction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FormReply {
    /// An accepted form with its content.
    pub fn accept(content: Content) -> Self {
        FormReply {
            action: FormAction::Accept,
            content: Some(content),
            meta: None,
        }
    }

    /// An accepted URL-mode request (no content).
    pub fn accept_url() -> Self {
        FormReply {
            action: FormAction::Accept,
            content: None,
            meta: None,
        }
    }

    /// A declined form.
    pub fn decline() -> Self {
        FormReply {
            action: FormAction::Decline,
            content: None,
            meta: None,
        }
    }

    /// A cancelled form.
    pub fn cancel() -> Self {
        FormReply {
            action: FormAction::Cancel,
            content: None,
            meta: None,
        }
    }

    /// Attaches result `_meta`.
    pub fn with_meta(mut self, meta: Content) -> Self {
        self.meta = Some(meta);
        self
    }

    /// The `ElicitResult` JSON: `content` only on accept, `_meta` only when set.
    pub fn to_result(&self) -> Value {
        let mut result = serde_json::Map::new();
        result.insert("action".into(), self.action.as_str().into());
        if self.action == FormAction::Accept
            && let Some(content) = &self.content
        {
            result.insert("content".into(), Value::Object(content.clone()));
        }
        if let Some(meta) = &self.meta {
            result.insert("_meta".into(), Value::Object(meta.clone()));
        }
        Value::Object(result)
    }
}
