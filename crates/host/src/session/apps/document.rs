//! An invocation's app opened: its server connected, its document read and cached.

use std::sync::Arc;

use serde_json::{Value, json};

use crate::apps::{self, AppDocument};
use crate::session::wire::Event;

use super::CallRecord;
use crate::session::{CommandError, Host, Session};

/// Where a cached document was read: the connection (held weakly, so that it is never taken
/// for a later one at the same address) and its count of `resources/list_changed`.
pub(super) struct ReadOn {
    plugin: std::sync::Weak<crate::Plugin>,
    changes: u64,
}

impl ReadOn {
    fn is_current(&self, plugin: &Arc<crate::Plugin>) -> bool {
        std::sync::Weak::ptr_eq(&self.plugin, &Arc::downgrade(plugin))
            && self.changes == plugin.resource_changes()
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
                    arguments = Some(sent.to_value());
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
}

impl Session {
    pub(super) async fn open_app(self: &Arc<Self>, call_id: &str) -> Result<OpenedApp, AppError> {
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
            .made()
            .documents
            .get(&key, |read| read.is_current(plugin));
        let document = match cached {
            Some(document) => document,
            None => {
                let document = Arc::new(read_app_document(plugin, &uri).await?);
                if let Some(host) = self.host.upgrade() {
                    let kept = self.lock().apps.made().documents.insert(
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
        let widget_state = self
            .lock()
            .apps
            .get()
            .and_then(|apps| apps.widget_state.get(call_id).cloned());
        Ok(OpenedApp {
            server: call.server,
            tool,
            document,
            widget_state,
        })
    }

    pub(super) async fn app_connection(
        self: &Arc<Self>,
        call: &CallRecord,
    ) -> Result<crate::session::connections::Connection, AppError> {
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
