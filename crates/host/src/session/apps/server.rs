//! What an app asks of its own server: tool calls (each approved as the transcript's) and resources.

use std::sync::Arc;

use formwork_forms::JsonText;
use serde_json::{Value, json};

use crate::apps;
use crate::jsonrpc::code::{INVALID_PARAMS, REFUSED};
use crate::session::wire::Event;

use super::{AppReply, CallRecord};
use crate::session::{Session, SessionState};

impl Session {
    pub(super) async fn app_tool_call(
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
            arguments: JsonText::new(arguments.as_ref().unwrap_or(&json!({}))),
            asked_by: Some(call_id.to_owned()),
        });
        let approved = crate::session::calls::ApprovedCall {
            server: &call.server,
            call_id: &app_call_id,
            tool: name,
            listed: &listed,
            arguments: arguments.as_ref(),
        };
        let app = crate::session::calls::AskingApp {
            invocation: call_id,
            title: format!("The app of {} · {}", call.server, call.tool),
        };
        if let Err(refusal) = Box::pin(self.approve_call(&host, &approved, Some(&app))).await {
            let refusal = refusal.to_string();
            self.finish_call(&app_call_id, None, Some(refusal.clone()));
            return AppReply::error(id, REFUSED, refusal);
        }
        let (request, _route) = connection.route(self, call_id);
        self.lock()
            .apps
            .made()
            .calls_in_flight
            .insert(request, call_id.to_owned());
        let outcome = connection
            .plugin
            .call_tool_rounds(request, name, arguments, &|_| {})
            .await;
        self.lock().apps.made().calls_in_flight.remove(&request);
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
            .made()
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

    pub(super) async fn app_resources(
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
}

impl SessionState {
    /// The invocation whose app makes the only app tool call in flight, when there is one.
    pub(in crate::session) fn only_app_call(&self) -> Option<&String> {
        let mut calls = self.apps.get()?.calls_in_flight.values();
        match (calls.next(), calls.next()) {
            (Some(call), None) => Some(call),
            _ => None,
        }
    }

    /// Whether an app's tool call is running (its forms may be shown outside a turn).
    pub(in crate::session) fn app_calls_running(&self) -> bool {
        self.apps
            .get()
            .is_some_and(|apps| !apps.calls_in_flight.is_empty())
    }
}
