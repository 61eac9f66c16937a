//! MCP Apps of a session: the document of a call that declared a UI, and the requests its app
//! sends through the page's bridge.
//!
//! Authority comes from the invocation alone. A UI names a call of one of its sessions; the
//! app behind it reaches only the server that call went to, only the tools that server shows
//! to apps (`_meta.ui.visibility` with `"app"`), and nothing it sends (params, `_meta`, model
//! context) can name another server, session or tool list. `ui/message` and `ui/open-link`
//! ask the person first, with a card of the call.

mod bridge;
mod document;
mod person;
mod server;
mod state;

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::Value;

use crate::session::wire::Event;

use super::app_cache::DocumentCache;
use super::{OnFirstUse, Session};
use document::ReadOn;

pub use bridge::AppReply;
pub use document::{AppError, OpenedApp};
pub(super) use person::TooManyAppCards;

/// The MCP Apps protocol version formwork speaks with apps.
pub const APPS_PROTOCOL_VERSION: &str = "2026-01-26";

/// The longest text an app may hand to `ui/message` or set as model context, in bytes.
pub const MAX_APP_TEXT_BYTES: usize = 64 * 1024;

/// The most requests the apps of one session may have served at once; more are refused.
pub const MAX_APP_REQUESTS_IN_FLIGHT: usize = 64;

/// The most cards one app may have waiting for the person at once (its questions and the
/// approvals of its tool calls), fewer when `[forms] max_pending` is lower; more are refused
/// without a card.
pub const MAX_APP_CARDS: usize = 4;

/// The apps of a session: documents read, and what each invocation's app left behind.
#[derive(Default)]
pub(super) struct SessionApps {
    /// Documents by server and URI, with the connection they were read on and its resource
    /// change count then: a new connection (the plugin restarted) may serve another document.
    documents: DocumentCache<ReadOn>,
    /// The last `ui/update-model-context` params of each invocation's app.
    model_context: HashMap<String, Value>,
    /// A widget's saved state, by invocation.
    widget_state: HashMap<String, Value>,
    /// Tool calls apps are making now, by request id: the invocation whose app makes each.
    calls_in_flight: HashMap<u64, String>,
    /// Requests of the session's apps being served now.
    requests_in_flight: usize,
    /// Cards each app (by invocation) has waiting for the person now.
    cards_waiting: HashMap<String, usize>,
    /// Each call of the session's log that declared an app, kept as the log grows: apps name
    /// their call on every message. Other calls are found in the log when asked about.
    calls: HashMap<String, CallRecord>,
}

impl OnFirstUse<SessionApps> {
    /// Keeps what `event`, the log's newest, says about a call's app; `log` is what came before.
    pub(super) fn note(&mut self, event: &Event, log: &[Arc<Event>]) {
        if let Event::ToolCallApp {
            call_id,
            resource_uri,
        } = event
            && let Some(mut record) = started(log, call_id)
        {
            record.resource_uri = Some(resource_uri.clone());
            self.made().calls.insert(call_id.clone(), record);
        }
    }
}

/// The call `call_id` as it started in `log` (newest first: a call's app follows its start).
fn started(log: &[Arc<Event>], call_id: &str) -> Option<CallRecord> {
    log.iter().rev().find_map(|event| match event.as_ref() {
        Event::ToolCallStarted {
            call_id: id,
            server,
            tool,
            ..
        } if id == call_id => Some(CallRecord {
            server: server.clone(),
            tool: tool.clone(),
            resource_uri: None,
        }),
        _ => None,
    })
}

/// What the session knows of one call, from its events.
#[derive(Clone)]
struct CallRecord {
    server: String,
    tool: String,
    resource_uri: Option<String>,
}

impl Session {
    fn call_record(&self, call_id: &str) -> Option<CallRecord> {
        let state = self.lock();
        match state.apps.get().and_then(|apps| apps.calls.get(call_id)) {
            Some(record) => Some(record.clone()),
            None => started(&state.log, call_id),
        }
    }
}
