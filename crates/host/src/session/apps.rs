//! MCP Apps of a session: the document of a call that declared a UI, and the requests its app
//! sends through the page's bridge.
//!
//! Authority comes from the invocation alone. A UI names a call of one of its sessions; the
//! app behind it reaches only the server that call went to, only the tools that server shows
//! to apps (`_meta.ui.visibility` with `"app"`), and nothing it sends (params, `_meta`, model
//! context) can name another server, session or tool list. `ui/message` and `ui/open-link`
//! ask the person first, with a card of the call.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::cards::Card;
use crate::apps::{self, AppDocument};
use crate::events::{Command, Event};
use crate::jsonrpc::code::{INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND, REFUSED};
use crate::responder::FormAction;
use crate::store::AppStatePart;

use super::app_cache::DocumentCache;
use super::{CommandError, Host, Session, SessionState};

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

/// Where a cached document was read: the connection (held weakly, so that it is never taken
/// for a later one at the same address) and its count of `resources/list_changed`.
struct ReadOn {
    plugin: std::sync::Weak<crate::Plugin>,
    changes: u64,
}

impl ReadOn {
    fn is_current(&self, plugin: &Arc<crate::Plugin>) -> bool {
        std::sync::Weak::ptr_eq(&self.plugin, &Arc::downgrade(plugin))
            && self.changes == plugin.resource_changes()
    }
}

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
    /// Each call of the session's log, kept as the log grows: apps name their call on
    /// every message.
    calls: HashMap<String, CallRecord>,
}

impl SessionApps {
    /// Keeps what `event`, the log's newest, says about a call.
    pub(super) fn note(&mut self, event: &Event) {
        match event {
            Event::ToolCallStarted {
                call_id,
                server,
                tool,
                ..
            } => {
                let record = CallRecord {
                    server: server.clone(),
                    tool: tool.clone(),
                    resource_uri: None,
                };
                self.calls.insert(call_id.clone(), record);
            }
            Event::ToolCallApp {
                call_id,
                resource_uri,
            } => {
                if let Some(record) = self.calls.get_mut(call_id) {
                    record.resource_uri = Some(resource_uri.clone());
                }
            }
            _ => {}
        }
    }
}

/// Holds one of an app's card places ([`MAX_APP_CARDS`]) while it lives.
pub(super) struct AppCardSlot<'a> {
    session: &'a Session,
    invocation: String,
}

impl Drop for AppCardSlot<'_> {
    fn drop(&mut self) {
        let mut state = self.session.lock();
        if let Some(count) = state.apps.cards_waiting.get_mut(&self.invocation) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                state.apps.cards_waiting.remove(&self.invocation);
            }
        }
    }
}

/// Counts one app request in flight while it lives.
struct InFlight<'a>(&'a Session);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        let mut state = self.0.lock();
        state.apps.requests_in_flight = state.apps.requests_in_flight.saturating_sub(1);
    }
}

/// Why an invocation's app cannot be shown.
#[derive(Debug, thiserror::Error, PartialEq)]
#[non_exhaustive]
pub enum AppError {
    /// No such session.
    #[error(transparent)]
    Command(#[from] CommandError),
    /// The call declared no UI: it is an ordinary tool call, and gets no app.
    #[error("the call `{0}` declared no app")]
    NoApp(String),
    /// The app's source (its server, or the resource) cannot be reached or read.
    #[error("{0}")]
    Unavailable(String),
}

/// An invocation's app, ready to show.
#[derive(Debug, Clone)]
pub struct OpenedApp {
    /// The server the call went to.
    pub server: String,
    /// The tool's definition as listed (`null` when the server no longer lists it).
    pub tool: Value,
    /// The document, its sandbox policy built.
    pub document: Arc<AppDocument>,
    /// The state a widget saved for this invocation, if any.
    pub widget_state: Option<Value>,
}

/// What the page does with an app's message, once the host decided.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AppReply {
    /// The JSON-RPC response to post back to the app (none for a notification).
    pub response: Option<Value>,
    /// A link the person agreed to open (`ui/open-link`); the page opens it.
    pub open_link: Option<String>,
}

impl AppReply {
    fn result(id: &Value, result: Value) -> AppReply {
        AppReply {
            response: Some(json!({"jsonrpc": "2.0", "id": id, "result": result})),
            open_link: None,
        }
    }

    /// The plugin's answer passed on: its result, or its JSON-RPC error as it sent it.
    fn answered(id: &Value, outcome: Result<Value, crate::HostError>) -> AppReply {
        match outcome {
            Ok(result) => AppReply::result(id, result),
            Err(crate::HostError::Rpc { error, .. }) => {
                AppReply::error(id, error.code, error.message)
            }
            Err(err) => AppReply::error(id, REFUSED, err.to_string()),
        }
    }

    fn error(id: &Value, code: i64, message: impl Into<String>) -> AppReply {
        AppReply {
            response: Some(json!({
                "jsonrpc": "2.0",
                "id": id,
                "error": {"code": code, "message": message.into()},
            })),
            open_link: None,
        }
    }
}

/// What the session knows of one call, from its events.
#[derive(Clone)]
struct CallRecord {
    server: String,
    tool: String,
    resource_uri: Option<String>,
}

impl Host {
    /// The app of the call `call_id`: its server is connected (if need be) and its document
    /// read (once per session, until the server says its resources changed). A call that
    /// declared no UI has no app ([`AppError::NoApp`]); one whose source is gone says why.
    pub async fn open_app(&self, session: &str, call_id: &str) -> Result<OpenedApp, AppError> {
        let session = self.inner.session(session)?;
        session.open_app(call_id).await
    }

    /// The arguments the call `call_id` was sent with and, once it finished with one, its
    /// result as the plugin sent it: what a widget's `window.openai` holds before the widget's
    /// own scripts run. `None` for a call the session does not have.
    pub fn call_exchange(&self, session: &str, call_id: &str) -> Option<(Value, Option<Value>)> {
        let session = self.inner.session(session).ok()?;
        let state = session.lock();
        let mut arguments = None;
        let mut result = None;
        for event in &state.log {
            match event.as_ref() {
                Event::ToolCallStarted {
                    call_id: id,
                    arguments: sent,
                    ..
                } if id == call_id => {
                    arguments = Some(sent.clone());
                    result = None;
                }
                Event::ToolCallFinished {
                    call_id: id,
                    result: got,
                    ..
                } if id == call_id => result.clone_from(got),
                _ => {}
            }
        }
        arguments.map(|arguments| (arguments, result))
    }

    /// Serves one message an app sent over the page's bridge: `message` is its JSON-RPC
    /// request or notification, `context` the host context the page knows (theme, display
    /// mode, container size, locale, time zone) for `ui/initialize`.
    pub async fn app_request(
        &self,
        session: &str,
        call_id: &str,
        message: Value,
        context: Value,
    ) -> Result<AppReply, AppError> {
        let session = self.inner.session(session)?;
        Ok(session.app_request(call_id, message, context).await)
    }

    /// The model context the apps of a session set, oldest invocation first: for each, the
    /// invocation and the params of its last `ui/update-model-context`. A model must treat it
    /// as untrusted data from the app, never as instructions.
    pub fn app_model_context(&self, session: &str) -> Result<Vec<(String, Value)>, CommandError> {
        let session = self.inner.session(session)?;
        let state = session.lock();
        Ok(model_contexts(&state)
            .map(|(call_id, _, _, context)| (call_id.to_owned(), context.clone()))
            .collect())
    }
}

/// Each invocation whose app set model context, oldest first: its id, server, tool and the
/// params of the app's last `ui/update-model-context`.
fn model_contexts(state: &SessionState) -> impl Iterator<Item = (&str, &str, &str, &Value)> {
    state.log.iter().filter_map(|event| match event.as_ref() {
        Event::ToolCallStarted {
            call_id,
            server,
            tool,
            ..
        } => state
            .apps
            .model_context
            .get(call_id)
            .map(|context| (call_id.as_str(), server.as_str(), tool.as_str(), context)),
        _ => None,
    })
}

impl Session {
    /// The servers whose apps set model context: what the model takes in from them.
    pub(super) fn app_context_servers(&self, state: &SessionState) -> Vec<String> {
        model_contexts(state)
            .map(|(_, server, _, _)| server.to_owned())
            .collect()
    }

    /// The model context the session's apps set, one text per invocation in transcript
    /// order, each naming its call; for the model, which reads it as untrusted app data.
    pub(super) fn app_context(&self, state: &SessionState) -> Vec<String> {
        model_contexts(state)
            .map(|(call_id, server, tool, context)| {
                format!("The app of call {call_id} ({server}.{tool}) set: {context}")
            })
            .collect()
    }

    fn call_record(&self, call_id: &str) -> Option<CallRecord> {
        self.lock().apps.calls.get(call_id).cloned()
    }

    /// Loads what the store kept of this session's apps.
    pub(super) fn restore_app_state(&self, states: Vec<crate::store::AppStateRecord>) {
        let mut state = self.lock();
        for record in states {
            let parse = |raw: Option<Box<serde_json::value::RawValue>>| {
                raw.and_then(|raw| serde_json::from_str::<Value>(raw.get()).ok())
            };
            if let Some(context) = parse(record.model_context) {
                state
                    .apps
                    .model_context
                    .insert(record.invocation.clone(), context);
            }
            if let Some(widget) = parse(record.widget_state) {
                state.apps.widget_state.insert(record.invocation, widget);
            }
        }
    }

    async fn open_app(self: &Arc<Self>, call_id: &str) -> Result<OpenedApp, AppError> {
        let call = self
            .call_record(call_id)
            .ok_or_else(|| AppError::NoApp(call_id.to_owned()))?;
        let uri = call
            .resource_uri
            .clone()
            .ok_or_else(|| AppError::NoApp(call_id.to_owned()))?;
        let connection = self.app_connection(&call).await?;
        let plugin = &connection.plugin;
        let tool = plugin.listed_tool(&call.tool).await.unwrap_or(Value::Null);
        let read_on = ReadOn {
            plugin: Arc::downgrade(plugin),
            changes: plugin.resource_changes(),
        };
        let key = (call.server.clone(), uri.clone());
        let cached = self
            .lock()
            .apps
            .documents
            .get(&key, |read| read.is_current(plugin));
        let document = match cached {
            Some(document) => document,
            None => {
                let document = Arc::new(read_app_document(plugin, &uri).await?);
                if let Some(host) = self.host.upgrade() {
                    let kept = self.lock().apps.documents.insert(
                        key,
                        read_on,
                        Arc::clone(&document),
                        &host.app_documents,
                    );
                    if !kept {
                        tracing::info!(target: "formwork::apps", session = %self.id, uri = %crate::budget::clipped(&uri), "an app document was not cached: the host's cache is full");
                    }
                }
                document
            }
        };
        if !document.policy.dropped.is_empty() {
            tracing::warn!(target: "formwork::apps", session = %self.id, server = %call.server, uri = %crate::budget::clipped(&uri), dropped = ?document.policy.dropped, "entries of the app's CSP were dropped");
        }
        let widget_state = self.lock().apps.widget_state.get(call_id).cloned();
        Ok(OpenedApp {
            server: call.server,
            tool,
            document,
            widget_state,
        })
    }

    async fn app_connection(
        self: &Arc<Self>,
        call: &CallRecord,
    ) -> Result<super::connections::Connection, AppError> {
        let host = self
            .host
            .upgrade()
            .ok_or_else(|| AppError::Unavailable("the host is shutting down".to_owned()))?;
        let target = host.target(&call.server).map_err(|_| {
            AppError::Unavailable(format!(
                "the app's server `{}` is not configured or not enabled any more",
                call.server
            ))
        })?;
        Box::pin(self.connection(&call.server, &target))
            .await
            .map_err(|err| AppError::Unavailable(format!("the app's server is unavailable: {err}")))
    }

    async fn app_request(
        self: &Arc<Self>,
        call_id: &str,
        message: Value,
        context: Value,
    ) -> AppReply {
        let Some(method) = message.get("method").and_then(Value::as_str) else {
            return AppReply::error(
                message.get("id").unwrap_or(&Value::Null),
                INVALID_REQUEST,
                "not a JSON-RPC request or notification",
            );
        };
        let params = message.get("params").cloned().unwrap_or(Value::Null);
        let Some(id) = message.get("id").cloned() else {
            self.app_notification(call_id, method, &params);
            return AppReply::default();
        };
        if !(id.is_string() || id.is_number()) || message.get("jsonrpc") != Some(&json!("2.0")) {
            return AppReply::error(&id, INVALID_REQUEST, "not a JSON-RPC 2.0 request");
        }
        let Some(call) = self.call_record(call_id) else {
            return AppReply::error(&id, REFUSED, format!("no call `{call_id}` in this session"));
        };
        if call.resource_uri.is_none() {
            return AppReply::error(&id, REFUSED, "this call declared no app");
        }
        let _in_flight = {
            let mut state = self.lock();
            if state.apps.requests_in_flight >= MAX_APP_REQUESTS_IN_FLIGHT {
                drop(state);
                return AppReply::error(
                    &id,
                    REFUSED,
                    format!(
                        "the apps of this session already have {MAX_APP_REQUESTS_IN_FLIGHT} requests in flight"
                    ),
                );
            }
            state.apps.requests_in_flight += 1;
            InFlight(self)
        };
        match method {
            "ui/initialize" => AppReply::result(
                &id,
                self.initialize_result(call_id, &call, &params, context)
                    .await,
            ),
            "ping" => AppReply::result(&id, json!({})),
            "tools/call" => self.app_tool_call(&id, call_id, &call, &params).await,
            "resources/read" | "resources/list" | "resources/templates/list" => {
                self.app_resources(&id, &call, method, &params).await
            }
            "ui/update-model-context" => self.update_model_context(&id, call_id, params).await,
            "ui/message" => self.app_message(&id, call_id, &call, &params).await,
            "ui/open-link" => self.open_link(&id, call_id, &call, &params).await,
            "openai/setWidgetState" => self.set_widget_state(&id, call_id, params).await,
            other => AppReply::error(
                &id,
                METHOD_NOT_FOUND,
                format!(
                    "formwork does not serve `{}` to apps",
                    crate::budget::clipped(other)
                ),
            ),
        }
    }

    fn app_notification(&self, call_id: &str, method: &str, params: &Value) {
        if method == "notifications/message" {
            let level = params
                .get("level")
                .and_then(Value::as_str)
                .unwrap_or("info");
            let data = params.get("data").unwrap_or(&Value::Null).to_string();
            // Apps log within the session's diagnostics budget.
            let budget = self.lock().diagnostics.take(tokio::time::Instant::now());
            if let Some(suppressed) = budget {
                tracing::info!(target: "formwork::app_log", session = %self.id, call = %call_id, level = %crate::budget::clipped(level), data = %crate::budget::clipped(&data), suppressed, "app log");
            }
        } else {
            tracing::debug!(target: "formwork::apps", session = %self.id, call = %call_id, method = %crate::budget::clipped(method), "app notification ignored");
        }
    }

    async fn initialize_result(
        self: &Arc<Self>,
        call_id: &str,
        call: &CallRecord,
        params: &Value,
        context: Value,
    ) -> Value {
        // One version is spoken; an app that asked for another reads it here and decides.
        let _ = params;
        let opened = self.open_app(call_id).await.ok();
        let sandbox = opened
            .as_ref()
            .map_or_else(|| json!({}), |app| app.document.policy.granted.clone());
        let mut host_context = match context {
            Value::Object(map) => map,
            _ => Map::new(),
        };
        let tool = opened.as_ref().map_or(Value::Null, |app| app.tool.clone());
        let tool = if tool.is_null() {
            json!({"name": call.tool, "inputSchema": {"type": "object"}})
        } else {
            tool
        };
        host_context.insert("toolInfo".to_owned(), json!({"id": call_id, "tool": tool}));
        if let Some(app) = &opened
            && app.document.skybridge
        {
            host_context.insert(
                "openai/widgetState".to_owned(),
                app.widget_state.clone().unwrap_or(Value::Null),
            );
        }
        json!({
            "protocolVersion": APPS_PROTOCOL_VERSION,
            "hostInfo": {"name": "formwork", "version": env!("CARGO_PKG_VERSION")},
            "hostCapabilities": {
                "openLinks": {},
                "serverTools": {},
                "serverResources": {},
                "logging": {},
                "updateModelContext": {"text": {}, "structuredContent": {}},
                "message": {"text": {}},
                "sandbox": sandbox,
            },
            "hostContext": Value::Object(host_context),
        })
    }

    async fn app_tool_call(
        self: &Arc<Self>,
        id: &Value,
        call_id: &str,
        call: &CallRecord,
        params: &Value,
    ) -> AppReply {
        let Some(name) = params.get("name").and_then(Value::as_str) else {
            return AppReply::error(id, INVALID_PARAMS, "`tools/call` needs a tool `name`");
        };
        let arguments = params.get("arguments").cloned();
        if arguments
            .as_ref()
            .is_some_and(|arguments| !arguments.is_object())
        {
            return AppReply::error(id, INVALID_PARAMS, "`arguments` must be an object");
        }
        let host = match self.host.upgrade() {
            Some(host) => host,
            None => return AppReply::error(id, REFUSED, "the host is shutting down"),
        };
        let config = host.config();
        if !config
            .server(&call.server)
            .is_some_and(|server| server.enabled && server.exposes_tool(name))
        {
            return AppReply::error(
                id,
                REFUSED,
                format!(
                    "`{}` is not a tool of `{}` that formwork runs",
                    crate::budget::clipped(name),
                    call.server
                ),
            );
        }
        let connection = match self.app_connection(call).await {
            Ok(connection) => connection,
            Err(err) => return AppReply::error(id, REFUSED, err.to_string()),
        };
        let listed = match connection.plugin.listed_tool(name).await {
            Ok(listed) => listed,
            Err(err) => return AppReply::error(id, REFUSED, err.to_string()),
        };
        if listed.is_null() {
            return AppReply::error(
                id,
                REFUSED,
                format!(
                    "`{}` lists no tool `{}`",
                    call.server,
                    crate::budget::clipped(name)
                ),
            );
        }
        if self.calls_as_widget(call_id, call).await {
            if !apps::widget_may_call(&listed) {
                return AppReply::error(
                    id,
                    REFUSED,
                    format!(
                        "`{}` is not open to widgets (it sets neither `openai/widgetAccessible: true` nor a `_meta.ui.visibility` with \"app\")",
                        crate::budget::clipped(name)
                    ),
                );
            }
        } else if !apps::visibility(&listed).app {
            return AppReply::error(
                id,
                REFUSED,
                format!(
                    "`{}` is not visible to apps (its `_meta.ui.visibility` lacks \"app\")",
                    crate::budget::clipped(name)
                ),
            );
        }
        tracing::info!(target: "formwork::apps", marker = "app-tool-call", session = %self.id, call = %call_id, server = %call.server, tool = %crate::budget::clipped(name), "app calls a tool");
        // The call is the transcript's as any other, saying which app asked.
        let app_call_id = self.new_id("c");
        self.emit(Event::ToolCallStarted {
            call_id: app_call_id.clone(),
            server: call.server.clone(),
            tool: name.to_owned(),
            arguments: arguments.clone().unwrap_or_else(|| json!({})),
            asked_by: Some(call_id.to_owned()),
        });
        let approved = super::calls::ApprovedCall {
            server: &call.server,
            call_id: &app_call_id,
            tool: name,
            listed: &listed,
            arguments: arguments.as_ref(),
        };
        let app = super::calls::AskingApp {
            invocation: call_id,
            title: format!("The app of {} · {}", call.server, call.tool),
        };
        if let Err(refusal) = Box::pin(self.approve_call(&host, &approved, Some(&app))).await {
            self.finish_call(&app_call_id, None, Some(refusal.clone()));
            return AppReply::error(id, REFUSED, refusal);
        }
        let (request, _route) = connection.route(self, call_id);
        self.lock()
            .apps
            .calls_in_flight
            .insert(request, call_id.to_owned());
        let outcome = connection
            .plugin
            .call_tool_rounds(request, name, arguments, &|_| {})
            .await;
        self.lock().apps.calls_in_flight.remove(&request);
        match &outcome {
            Ok(result) => self.finish_call(&app_call_id, Some(result.clone()), None),
            Err(err) => self.finish_call(&app_call_id, None, Some(err.to_string())),
        }
        AppReply::answered(id, outcome)
    }

    /// Whether the app of `call_id` is a ChatGPT-style widget (`text/html+skybridge`), which
    /// calls tools by the OpenAI Apps SDK's rule. Its document is read if need be; one that
    /// cannot be read counts as a widget's: the stricter rule.
    async fn calls_as_widget(self: &Arc<Self>, call_id: &str, call: &CallRecord) -> bool {
        let Some(uri) = &call.resource_uri else {
            return true;
        };
        let cached = self
            .lock()
            .apps
            .documents
            .get(&(call.server.clone(), uri.clone()), |_| true)
            .map(|document| document.skybridge);
        match cached {
            Some(skybridge) => skybridge,
            None => self
                .open_app(call_id)
                .await
                .map_or(true, |app| app.document.skybridge),
        }
    }

    async fn app_resources(
        self: &Arc<Self>,
        id: &Value,
        call: &CallRecord,
        method: &str,
        params: &Value,
    ) -> AppReply {
        let params = match method {
            "resources/read" => match params.get("uri").and_then(Value::as_str) {
                Some(uri) => Some(json!({"uri": uri})),
                None => {
                    return AppReply::error(id, INVALID_PARAMS, "`resources/read` needs a `uri`");
                }
            },
            _ => params
                .get("cursor")
                .and_then(Value::as_str)
                .map(|cursor| json!({"cursor": cursor})),
        };
        let connection = match self.app_connection(call).await {
            Ok(connection) => connection,
            Err(err) => return AppReply::error(id, REFUSED, err.to_string()),
        };
        AppReply::answered(id, connection.plugin.request(method, params).await)
    }

    async fn update_model_context(
        self: &Arc<Self>,
        id: &Value,
        call_id: &str,
        params: Value,
    ) -> AppReply {
        if !params.is_object() {
            return AppReply::error(id, INVALID_PARAMS, "the model context must be an object");
        }
        // What `hostCapabilities.updateModelContext` offers: text blocks and structured content.
        if params
            .get("content")
            .is_some_and(|content| !text_blocks_only(content))
        {
            return AppReply::error(
                id,
                INVALID_PARAMS,
                "formwork takes model context as text blocks and `structuredContent` only",
            );
        }
        self.keep_app_part(id, call_id, AppStatePart::ModelContext, params)
            .await
    }

    async fn set_widget_state(
        self: &Arc<Self>,
        id: &Value,
        call_id: &str,
        params: Value,
    ) -> AppReply {
        let state = params.get("state").cloned().unwrap_or(Value::Null);
        self.keep_app_part(id, call_id, AppStatePart::WidgetState, state)
            .await
    }

    /// Keeps (and stores) one part of what the invocation's app leaves behind, in place of the
    /// last one.
    async fn keep_app_part(
        self: &Arc<Self>,
        id: &Value,
        call_id: &str,
        part: AppStatePart,
        value: Value,
    ) -> AppReply {
        let text = value.to_string();
        let what = match part {
            AppStatePart::ModelContext => "the model context",
            AppStatePart::WidgetState => "the widget state",
        };
        if text.len() > MAX_APP_TEXT_BYTES {
            return AppReply::error(
                id,
                INVALID_PARAMS,
                format!("{what} is longer than {MAX_APP_TEXT_BYTES} bytes"),
            );
        }
        {
            let mut state = self.lock();
            let kept = match part {
                AppStatePart::ModelContext => &mut state.apps.model_context,
                AppStatePart::WidgetState => &mut state.apps.widget_state,
            };
            kept.insert(call_id.to_owned(), value);
        }
        self.save_app_part(call_id, part, text).await;
        AppReply::result(id, json!({}))
    }

    async fn save_app_part(&self, call_id: &str, part: AppStatePart, text: String) {
        let Some(store) = self.host.upgrade().and_then(|host| host.store.clone()) else {
            return;
        };
        if let Err(err) = store.save_app_state(call_id, part, text).await {
            tracing::error!(target: "formwork::store", session = %self.id, call = %call_id, %err, "app state not stored");
        }
    }

    async fn app_message(
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
            return AppReply::error(id, REFUSED, why);
        }
        let Some(host) = self.host.upgrade() else {
            return AppReply::error(id, REFUSED, "the host is shutting down");
        };
        match (Host { inner: host }).command(&self.id, Command::SendMessage { text }) {
            Ok(()) => AppReply::result(id, json!({})),
            Err(err) => AppReply::error(id, REFUSED, err.to_string()),
        }
    }

    async fn open_link(
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
            return AppReply::error(id, REFUSED, why);
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
    ) -> Result<(), String> {
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
        let Ok(body) = formwork_forms::parse_request(&params) else {
            return Err(refusal.to_owned());
        };
        let raw = serde_json::value::to_raw_value(&params).ok();
        let (card, answer) = Card::form(
            self.new_id("f"),
            Some(call_id.to_owned()),
            server.to_owned(),
            body,
        );
        self.push_card(card, raw);
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
            Err(refusal.to_owned())
        }
    }
}

impl Session {
    /// A card place for the app of `invocation`, or why it has none: it already has
    /// [`MAX_APP_CARDS`] cards (or `[forms] max_pending`, when lower) waiting.
    pub(super) fn app_card_slot(&self, invocation: &str) -> Result<AppCardSlot<'_>, String> {
        let max_pending = self
            .host
            .upgrade()
            .map_or(0, |host| host.config().forms.max_pending);
        let limit = MAX_APP_CARDS.min(max_pending);
        let mut state = self.lock();
        let waiting = state
            .apps
            .cards_waiting
            .entry(invocation.to_owned())
            .or_default();
        if *waiting >= limit {
            tracing::info!(target: "formwork::apps", session = %self.id, call = %invocation, limit, "an app's request for the person refused: it has too many cards waiting");
            return Err(if max_pending < MAX_APP_CARDS {
                format!(
                    "{limit} questions of this app already wait for the person ([forms] max_pending)"
                )
            } else {
                format!(
                    "{limit} questions of this app already wait for the person, the most an app may have"
                )
            });
        }
        *waiting += 1;
        Ok(AppCardSlot {
            session: self,
            invocation: invocation.to_owned(),
        })
    }
}

impl super::SessionState {
    /// The invocation whose app makes the only app tool call in flight, when there is one.
    pub(super) fn only_app_call(&self) -> Option<&String> {
        let mut calls = self.apps.calls_in_flight.values();
        match (calls.next(), calls.next()) {
            (Some(call), None) => Some(call),
            _ => None,
        }
    }

    /// Whether an app's tool call is running (its forms may be shown outside a turn).
    pub(super) fn app_calls_running(&self) -> bool {
        !self.apps.calls_in_flight.is_empty()
    }
}

/// Whether `content` is a list of text blocks.
fn text_blocks_only(content: &Value) -> bool {
    content.as_array().is_some_and(|blocks| {
        blocks.iter().all(|block| {
            block.get("type").and_then(Value::as_str) == Some("text")
                && block.get("text").is_some_and(Value::is_string)
        })
    })
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

/// Reads `uri` from the plugin and makes it a document; a content item without metadata takes
/// the resource's entry in `resources/list`.
async fn read_app_document(plugin: &crate::Plugin, uri: &str) -> Result<AppDocument, AppError> {
    let unavailable = |err: String| {
        AppError::Unavailable(format!("the app's resource {uri} could not be read: {err}"))
    };
    let result = plugin
        .request("resources/read", Some(json!({"uri": uri})))
        .await
        .map_err(|err| unavailable(err.to_string()))?;
    // The listing is read only when the content lacks the policy: its metadata may have other
    // keys (`"_meta": {}`, a description), and `read_document` falls back key by key.
    let has_policy = result
        .get("contents")
        .and_then(Value::as_array)
        .is_some_and(|contents| {
            contents.iter().any(|content| {
                content.get("uri").and_then(Value::as_str) == Some(uri)
                    && ["_meta", "meta"].iter().any(|meta| {
                        content.get(*meta).is_some_and(|meta| {
                            meta.get("ui").is_some() || meta.get("openai/widgetCSP").is_some()
                        })
                    })
            })
        });
    let listed = if has_policy {
        None
    } else {
        listed_entry(plugin, uri).await
    };
    let place = if plugin.is_local() {
        apps::PluginPlace::Local
    } else {
        apps::PluginPlace::Remote
    };
    apps::read_document(uri, &result, listed.as_ref(), place)
        .map_err(|err| unavailable(err.to_string()))
}

/// The most pages of `resources/list` read for a resource's entry.
const MAX_LISTING_PAGES: usize = 16;

/// The entry of `uri` in the plugin's `resources/list`, page after page; `None` when it is not
/// listed (or the list cannot be read) within [`MAX_LISTING_PAGES`] pages.
async fn listed_entry(plugin: &crate::Plugin, uri: &str) -> Option<Value> {
    let mut params = None;
    for _ in 0..MAX_LISTING_PAGES {
        let list = plugin.request("resources/list", params.take()).await.ok()?;
        let entry = list
            .get("resources")
            .and_then(Value::as_array)
            .and_then(|entries| {
                entries
                    .iter()
                    .find(|entry| entry.get("uri").and_then(Value::as_str) == Some(uri))
            });
        if let Some(entry) = entry {
            return Some(entry.clone());
        }
        let cursor = list.get("nextCursor").filter(|cursor| cursor.is_string())?;
        params = Some(json!({ "cursor": cursor }));
    }
    None
}
