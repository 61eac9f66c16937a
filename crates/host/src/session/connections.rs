//! Plugin connections of sessions, and how a plugin's forms find their session.
//!
//! By default each session has its own connection (its own MCP session) to a server, so a form
//! is routed by the connection it arrives on, and a plugin that keeps state per client keeps it
//! per formwork session. A Streamable HTTP server configured with `share_session = true` gets one
//! connection for every session of the host instead: each form is routed by the `tools/call` on
//! whose response stream it arrives (the spec's SHOULD for requests that belong to a call). A
//! waiting form then costs one socket instead of two (its call's stream and its own session's
//! listening stream), and the plugin one client instead of thousands.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

use tokio::sync::OnceCell;

use crate::future::BoxFuture;
use crate::plugin::{ClientExtensions, ConnectOptions, Plugin, PluginTarget};
use crate::responder::{DeclineNotice, FormPrompt, FormReply, FormResponder};

use super::sign_in::SessionSignIn;
use super::{HostInner, Session};

/// A connection and the router that serves its forms.
#[derive(Clone)]
pub(super) struct Connection {
    pub plugin: Arc<Plugin>,
    router: Arc<CallRouter>,
}

/// Sends each form of one connection to the session whose call it belongs to.
struct CallRouter {
    server: String,
    /// The session that owns the connection; `None` for a shared one.
    owner: Option<Weak<Session>>,
    /// Calls in flight on the connection: the id of their `tools/call`, their session and call.
    calls: Mutex<HashMap<u64, (Weak<Session>, String)>>,
    /// How much more the router may log about forms that belong to nobody.
    log_budget: Mutex<crate::budget::LogBudget>,
}

/// Keeps a call routable while it runs.
pub(super) struct Route {
    router: Arc<CallRouter>,
    request: u64,
}

impl Drop for Route {
    fn drop(&mut self) {
        if let Ok(mut calls) = self.router.calls.lock() {
            calls.remove(&self.request);
        }
    }
}

impl Connection {
    /// Registers the call `call_id` of `session` under a fresh request id, to send with
    /// [`Plugin::call_tool_with_id`] while the returned route is held.
    pub fn route(&self, session: &Arc<Session>, call_id: &str) -> (u64, Route) {
        let request = self.plugin.reserve_request_id();
        if let Ok(mut calls) = self.router.calls.lock() {
            calls.insert(request, (Arc::downgrade(session), call_id.to_owned()));
        }
        let route = Route {
            router: Arc::clone(&self.router),
            request,
        };
        (request, route)
    }
}

/// Why a form has no session to go to.
enum Unrouted {
    /// The session that owned the connection is gone.
    OwnerGone,
    /// On a shared connection, the form came on no running call's stream.
    NoCall,
}

impl CallRouter {
    /// The session and call a form belongs to: the call on whose stream it came; else the
    /// connection's owner. On a shared connection a form that came on no running call's stream
    /// is nobody's: guessing could show one session's form to another.
    fn find(&self, call_request: Option<u64>) -> Result<(Arc<Session>, Option<String>), Unrouted> {
        let call = call_request.and_then(|request| {
            let calls = self.calls.lock().ok()?;
            calls.get(&request).cloned()
        });
        match (call, &self.owner) {
            (Some((session, call_id)), _) => session
                .upgrade()
                .map(|session| (session, Some(call_id)))
                .ok_or(Unrouted::OwnerGone),
            (None, Some(owner)) => owner
                .upgrade()
                .map(|session| (session, None))
                .ok_or(Unrouted::OwnerGone),
            (None, None) => Err(Unrouted::NoCall),
        }
    }
}

impl FormResponder for CallRouter {
    fn respond(&self, prompt: FormPrompt) -> BoxFuture<FormReply> {
        match self.find(prompt.call_request) {
            Ok((session, call_id)) => session.ask(&self.server, prompt, call_id),
            Err(Unrouted::OwnerGone) => Box::pin(async { FormReply::cancel() }),
            Err(Unrouted::NoCall) => {
                let now = tokio::time::Instant::now();
                if let Some(suppressed) = self
                    .log_budget
                    .lock()
                    .ok()
                    .and_then(|mut budget| budget.take(now))
                {
                    tracing::warn!(target: "formwork::form", marker = "declined", plugin = %self.server, request = %crate::budget::clipped(&prompt.request_id.to_string()), suppressed, "a form on a connection shared by sessions came on no running call's stream: it is nobody's to show; declined (a plugin must send it on the call's stream, e.g. with relatedRequestId)");
                }
                Box::pin(async { FormReply::decline() })
            }
        }
    }

    fn declined(&self, notice: &DeclineNotice) {
        if let Ok((session, _)) = self.find(notice.call_request) {
            session.plugin_diagnostic(
                "form-declined",
                format!(
                    "{}: the form could not be shown: {}",
                    notice.plugin, notice.reason
                ),
            );
        }
    }
}

impl Session {
    /// The connection this session uses for the server `name`, connected on first use.
    pub(super) async fn connection(
        self: &Arc<Self>,
        name: &str,
        target: &PluginTarget,
    ) -> Result<Connection, crate::HostError> {
        let host = self
            .host
            .upgrade()
            .ok_or_else(|| crate::HostError::Connect {
                target: target.to_string(),
                reason: "the host is shutting down".to_owned(),
            })?;
        // A shared server has one cell for all sessions, else each session has its own: calls
        // starting together wait for one connect, and other servers do not wait on it.
        let (cell, owner) = match target {
            PluginTarget::Url(url) if host.config().shares_session(name) => {
                let mut shared = host
                    .shared_connections
                    .lock()
                    .unwrap_or_else(|poisoned| poisoned.into_inner());
                (live_cell(&mut shared, format!("{name} {url}")), None)
            }
            _ => (
                live_cell(&mut self.lock().plugins, name.to_owned()),
                Some(Arc::downgrade(self)),
            ),
        };
        cell.get_or_try_init(|| connect(&host, name, target, owner))
            .await
            .cloned()
    }
}

/// Connections by key, each connected once by whoever asks first.
pub(super) type ConnectionCells = HashMap<String, Arc<OnceCell<Connection>>>;

/// The cell for `key`; a fresh one in place of a connection that has closed.
fn live_cell(cells: &mut ConnectionCells, key: String) -> Arc<OnceCell<Connection>> {
    let cell = cells.entry(key).or_default();
    if cell.get().is_some_and(|c| c.plugin.is_closed()) {
        *cell = Arc::default();
    }
    Arc::clone(cell)
}

/// Connects to `target`; forms go to `owner`, or (shared) by call.
async fn connect(
    host: &HostInner,
    name: &str,
    target: &PluginTarget,
    owner: Option<Weak<Session>>,
) -> Result<Connection, crate::HostError> {
    let signs_in = owner.clone();
    let router = Arc::new(CallRouter {
        server: name.to_owned(),
        owner,
        calls: Mutex::new(HashMap::new()),
        log_budget: Mutex::default(),
    });
    // The connection's forms go to `CallRouter::respond` (above), which hands each to its
    // session's `Session::ask` (cards.rs).
    let mut options = ConnectOptions::new(name.to_owned(), Arc::clone(&router) as _);
    options.request_timeout = host.options.request_timeout;
    options.inherit_stderr = host.options.inherit_stderr;
    options.extensions = ClientExtensions {
        openai_elicitation: host.config().features.openai_elicitation,
        mcp_apps: host.options.shows_apps,
    };
    if let PluginTarget::Url(url) = target {
        let config = host.config();
        let store = host.token_store();
        // A person can sign in from this session's card; a connection shared by sessions has
        // no one to ask (`formwork login` it first).
        let agent = signs_in.map(|session| {
            Arc::new(SessionSignIn {
                session,
                server: name.to_owned(),
                port: config.mcp_oauth_callback_port,
            }) as Arc<dyn crate::auth::agent::SignInAgent>
        });
        options.auth = Some(
            crate::sign_on::authorizer_for(&config, name, url, store, agent).map_err(|reason| {
                crate::HostError::Connect {
                    target: target.to_string(),
                    reason: reason.to_string(),
                }
            })?,
        );
    }
    if let Some(server) = host.config().server(name) {
        options.protocol = server.protocol_version.clone();
        options.http_headers =
            server
                .transport
                .http_headers()
                .map_err(|reason| crate::HostError::Connect {
                    target: target.to_string(),
                    reason: reason.to_string(),
                })?;
    }
    let plugin = Arc::new(Plugin::connect(target, options).await?);
    Ok(Connection { plugin, router })
}
