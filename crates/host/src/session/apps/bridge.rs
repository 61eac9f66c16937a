//! The page's bridge: one message of an app served, by its method, within the session's bound.

use std::sync::Arc;

use serde_json::{Map, Value, json};

use crate::jsonrpc::code::{INVALID_REQUEST, METHOD_NOT_FOUND, REFUSED};

use super::{APPS_PROTOCOL_VERSION, CallRecord, MAX_APP_REQUESTS_IN_FLIGHT};
use crate::session::{AppError, Host, Session};

/// What the page does with an app's message, once the host decided.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AppReply {
    /// The JSON-RPC response to post back to the app (none for a notification).
    pub response: Option<Value>,
    /// A link the person agreed to open (`ui/open-link`); the page opens it.
    pub open_link: Option<String>,
}

impl AppReply {
    pub(super) fn result(id: &Value, result: Value) -> AppReply {
        AppReply {
            response: Some(json!({"jsonrpc": "2.0", "id": id, "result": result})),
            open_link: None,
        }
    }

    /// The plugin's answer passed on: its result, or its JSON-RPC error as it sent it.
    pub(super) fn answered(id: &Value, outcome: Result<Value, crate::HostError>) -> AppReply {
        match outcome {
            Ok(result) => AppReply::result(id, result),
            Err(crate::HostError::Rpc { error, .. }) => {
                AppReply::error(id, error.code, error.message)
            }
            Err(err) => AppReply::error(id, REFUSED, err.to_string()),
        }
    }

    pub(super) fn error(id: &Value, code: i64, message: impl Into<String>) -> AppReply {
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

/// Counts one app request in flight while it lives.
struct InFlight<'a>(&'a Session);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        let mut state = self.0.lock();
        let apps = state.apps.made();
        apps.requests_in_flight = apps.requests_in_flight.saturating_sub(1);
    }
}

impl Host {
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
}

impl Session {
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
            if state.apps.made().requests_in_flight >= MAX_APP_REQUESTS_IN_FLIGHT {
                drop(state);
                return AppReply::error(
                    &id,
                    REFUSED,
                    format!(
                        "the apps of this session already have {MAX_APP_REQUESTS_IN_FLIGHT} requests in flight"
                    ),
                );
            }
            state.apps.made().requests_in_flight += 1;
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
}
