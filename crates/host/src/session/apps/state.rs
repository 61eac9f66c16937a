//! What an app leaves behind: its model context (for the model) and its widget state, kept and stored.

use std::sync::Arc;

use serde_json::{Value, json};

use crate::jsonrpc::code::INVALID_PARAMS;
use crate::session::wire::Event;
use crate::store::AppStatePart;

use super::{AppReply, MAX_APP_TEXT_BYTES};
use crate::session::{CommandError, Host, Session, SessionState};

impl Host {
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
            .get()?
            .model_context
            .get(call_id)
            .map(|context| (call_id.as_str(), server.as_str(), tool.as_str(), context)),
        _ => None,
    })
}

impl Session {
    /// The servers whose apps set model context: what the model takes in from them.
    pub(in crate::session) fn app_context_servers(&self, state: &SessionState) -> Vec<String> {
        model_contexts(state)
            .map(|(_, server, _, _)| server.to_owned())
            .collect()
    }

    /// The model context the session's apps set, one text per invocation in transcript
    /// order, each naming its call; for the model, which reads it as untrusted app data.
    pub(in crate::session) fn app_context(&self, state: &SessionState) -> Vec<String> {
        model_contexts(state)
            .map(|(call_id, server, tool, context)| {
                format!("The app of call {call_id} ({server}.{tool}) set: {context}")
            })
            .collect()
    }

    /// Loads what the store kept of this session's apps.
    pub(in crate::session) fn restore_app_state(&self, states: Vec<crate::store::AppStateRecord>) {
        let mut state = self.lock();
        for record in states {
            let parse = |raw: Option<Box<serde_json::value::RawValue>>| {
                raw.and_then(|raw| serde_json::from_str::<Value>(raw.get()).ok())
            };
            if let Some(context) = parse(record.model_context) {
                state
                    .apps
                    .made()
                    .model_context
                    .insert(record.invocation.clone(), context);
            }
            if let Some(widget) = parse(record.widget_state) {
                state
                    .apps
                    .made()
                    .widget_state
                    .insert(record.invocation, widget);
            }
        }
    }

    pub(super) async fn update_model_context(
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

    pub(super) async fn set_widget_state(
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
                AppStatePart::ModelContext => &mut state.apps.made().model_context,
                AppStatePart::WidgetState => &mut state.apps.made().widget_state,
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
