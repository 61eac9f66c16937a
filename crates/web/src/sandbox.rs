//! The app sandbox: MCP App documents, each on an origin of its own, and the page's bridge
//! routes that carry an app's messages to the host.
//!
//! The page asks for an invocation's app (`POST /api/sessions/{id}/apps/{call}`); the host reads
//! the document and its policy; this module mints a document id (128 random bits) and answers
//! with `http://<id>.localhost:<apps port>/`, an origin no other document shares and that is
//! never the workbench's (another host name and another port): the app gets no access to the
//! page's DOM, its `sessionStorage` (where the token lives) or its requests. The second listener
//! serves each document once, to a frame (`Sec-Fetch-Dest: iframe`), under the host name it was
//! minted for, with the Content-Security-Policy built from the resource's `_meta.ui.csp` as a
//! response header and `frame-ancestors` limited to the workbench, so only the workbench's page
//! can frame it. Anything else there is a 404.
//!
//! A document on a new site needs a browser process of its own and then starts its script, the
//! slowest part of showing an app. So once an app of a session is up, the page keeps a spare for
//! the session's next app of the same document: `POST /api/sessions/{id}/app-spare` with
//! `{"like": CALL}` mints that call's document again under a new id, for no invocation, and the
//! page loads it in a hidden frame, holding back its `ui/initialize`. When the next call's
//! document is the same (same server, same bytes, same policy), opening it with `?spare=` binds
//! the spare to that call instead of minting anew: the app is already running. Until it is bound,
//! a spare speaks for no invocation: the bridge refuses it like a document never minted.
//!
//! The page relays what the app posts (after checking the message came from that frame's
//! window and origin) over the session's socket (`app_rpc`, answered by `app_reply`: see
//! [`relay_on_socket`]), or, while the socket is not open, to `POST /api/apps/{doc}/rpc`; the
//! host decides what the app may do from the invocation the document was minted for, never
//! from what the message says.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::Json;
use axum::body::Body;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use formwork_host::apps::AppDocument;
use formwork_host::{AppAnswer, AppError, AppMessage, AppReply, AppRpc, OpenedApp, SocketMessage};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::AppState;

/// How many documents the workbench keeps minted at once; the oldest go first.
pub(crate) const MAX_DOCUMENTS: usize = 256;

/// The `window.openai` adapter put first in a `text/html+skybridge` widget's document.
const OPENAI_ADAPTER: &str = include_str!("../sandbox/openai-adapter.js");

/// The minted documents.
pub(crate) struct Sandbox {
    apps_port: u16,
    workbench_port: u16,
    documents: Mutex<Documents>,
}

#[derive(Default)]
struct Documents {
    by_id: HashMap<String, Document>,
    /// Ids, oldest first.
    order: Vec<String>,
}

struct Document {
    session: String,
    content: Content,
}

enum Content {
    /// Minted ahead for the session's next app of `server`'s `document`: its page at `/`, once,
    /// before any invocation is known. It speaks for no invocation until one binds it.
    Spare {
        server: String,
        document: Arc<AppDocument>,
        html: Option<String>,
    },
    /// The app of `call_id`: its page at `/`, until it was served.
    App {
        call_id: String,
        html: Option<String>,
        csp: String,
        /// For a widget, the state it had saved when minted: its page (`html` is its document
        /// then) gets `window.openai` when served, with what the call holds by then.
        widget: Option<Value>,
    },
}

/// A document the app listener serves.
struct Served {
    html: String,
    csp: String,
    /// A widget's session, call and saved state: its adapter is put in now.
    widget: Option<(String, String, Value)>,
}

impl Sandbox {
    pub(crate) fn new(workbench_port: u16, apps_port: u16) -> Sandbox {
        Sandbox {
            apps_port,
            workbench_port,
            documents: Mutex::new(Documents::default()),
        }
    }

    /// The origin of a document.
    fn origin(&self, id: &str) -> String {
        format!("http://{id}.localhost:{}", self.apps_port)
    }

    /// The `frame-src` source the workbench's page needs for app documents.
    pub(crate) fn frame_source(apps_port: u16) -> String {
        format!("http://*.localhost:{apps_port}")
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Documents> {
        self.documents
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// A spare for `session`'s next app of the same document as `like`: a new id, no invocation.
    fn reserve(&self, session: &str, like: &OpenedApp) -> Option<String> {
        let id = mint_id()?;
        self.insert(
            id.clone(),
            Document {
                session: session.to_owned(),
                content: Content::Spare {
                    server: like.server.clone(),
                    document: Arc::clone(&like.document),
                    html: Some(page_of(&like.document)),
                },
            },
        );
        Some(id)
    }

    /// The document of `call_id`'s app, and whether it is the `spare` the page offered: that
    /// spare, bound to the call, when it is one of `session`'s, not bound yet, and minted from
    /// the same server's same document (then the page's frame already runs it); else a new id.
    fn mint(
        &self,
        session: &str,
        call_id: &str,
        opened: &OpenedApp,
        spare: Option<&str>,
    ) -> Option<(String, bool)> {
        if let Some(spare) = spare {
            let mut documents = self.lock();
            if let Some(document) = documents.by_id.get_mut(spare)
                && document.session == session
                && let Content::Spare {
                    server,
                    document: made_from,
                    html,
                } = &mut document.content
                && *server == opened.server
                && !opened.document.skybridge
                && (Arc::ptr_eq(made_from, &opened.document) || **made_from == *opened.document)
            {
                document.content = Content::App {
                    call_id: call_id.to_owned(),
                    html: html.take(),
                    csp: made_from.policy.csp.clone(),
                    widget: None,
                };
                return Some((spare.to_owned(), true));
            }
        }
        let id = mint_id()?;
        let (html, widget) = if opened.document.skybridge {
            let saved = opened.widget_state.clone().unwrap_or(Value::Null);
            (opened.document.html.clone(), Some(saved))
        } else {
            (opened.document.html.clone(), None)
        };
        self.insert(
            id.clone(),
            Document {
                session: session.to_owned(),
                content: Content::App {
                    call_id: call_id.to_owned(),
                    html: Some(html),
                    csp: opened.document.policy.csp.clone(),
                    widget,
                },
            },
        );
        Some((id, false))
    }

    fn insert(&self, id: String, document: Document) {
        let mut documents = self.lock();
        while documents.order.len() >= MAX_DOCUMENTS {
            let oldest = documents.order.remove(0);
            documents.by_id.remove(&oldest);
        }
        documents.order.push(id.clone());
        documents.by_id.insert(id, document);
    }

    /// The session and call a document was minted for; a spare has none.
    fn owner(&self, id: &str) -> Option<(String, String)> {
        self.lock()
            .by_id
            .get(id)
            .and_then(|doc| match &doc.content {
                Content::App { call_id, .. } => Some((doc.session.clone(), call_id.clone())),
                Content::Spare { .. } => None,
            })
    }

    fn release(&self, id: &str) -> bool {
        let mut documents = self.lock();
        documents.order.retain(|kept| kept != id);
        documents.by_id.remove(id).is_some()
    }

    /// The document for a request to the app listener's `/`: its host must be
    /// `<id>.localhost:<port>` of a minted (or spare), not yet served document, and the request
    /// must load a frame.
    fn serve(&self, headers: &HeaderMap) -> Result<Served, StatusCode> {
        let host = headers
            .get(header::HOST)
            .and_then(|host| host.to_str().ok())
            .map(str::to_ascii_lowercase)
            .ok_or(StatusCode::NOT_FOUND)?;
        let id = host
            .strip_suffix(&format!(".localhost:{}", self.apps_port))
            .ok_or(StatusCode::NOT_FOUND)?;
        let destination = headers
            .get("sec-fetch-dest")
            .and_then(|dest| dest.to_str().ok());
        if destination != Some("iframe") {
            return Err(StatusCode::FORBIDDEN);
        }
        let mut documents = self.lock();
        let document = documents.by_id.get_mut(id).ok_or(StatusCode::NOT_FOUND)?;
        let session = &document.session;
        let (html, csp, widget) = match &mut document.content {
            Content::App {
                html,
                csp,
                widget,
                call_id,
            } => (
                html,
                csp.as_str(),
                widget
                    .clone()
                    .map(|saved| (session.clone(), call_id.clone(), saved)),
            ),
            Content::Spare { html, document, .. } => (html, document.policy.csp.as_str(), None),
        };
        let html = html.take().ok_or(StatusCode::GONE)?;
        let csp = format!(
            "{csp}; frame-ancestors http://127.0.0.1:{port} http://localhost:{port}",
            port = self.workbench_port
        );
        Ok(Served { html, csp, widget })
    }
}

/// 128 random bits as 32 hex digits: a DNS label, unguessable.
fn mint_id() -> Option<String> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).ok()?;
    Some(bytes.iter().map(|byte| format!("{byte:02x}")).collect())
}

#[derive(Deserialize)]
pub(crate) struct SpareRequest {
    /// A call of the session whose app is shown: the spare is minted from its document.
    like: String,
}

/// `POST /api/sessions/{id}/app-spare` with `{"like": CALL}`: a spare for the session's next app
/// of the same document as `CALL`'s, for the page to load ahead in a hidden frame. `200 {"doc",
/// "src", "origin", "allow"}`; `404` when the session is unknown or the call declared no app;
/// `502 {"error"}` when its document cannot be read.
pub(crate) async fn spare(
    State(state): State<AppState>,
    Path(session): Path<String>,
    Json(request): Json<SpareRequest>,
) -> Response {
    let like = match state.host.open_app(&session, &request.like).await {
        Ok(opened) => opened,
        Err(err) => return not_opened(&err),
    };
    let Some(id) = state.sandbox.reserve(&session, &like) else {
        return no_randomness();
    };
    let origin = state.sandbox.origin(&id);
    Json(json!({
        "doc": id,
        "src": format!("{origin}/"),
        "origin": origin,
        "allow": like.document.policy.allow,
    }))
    .into_response()
}

/// Why an app could not be opened: `404` for a call that declared no app or an unknown session,
/// `502` when its source is unavailable or its document fails to load.
fn not_opened(err: &AppError) -> Response {
    let status = match err {
        AppError::NoApp(_) | AppError::Command(_) => StatusCode::NOT_FOUND,
        _ => StatusCode::BAD_GATEWAY,
    };
    (status, Json(json!({"error": err.to_string()}))).into_response()
}

/// What the app listener serves for a spare: a widget gets the `window.openai` adapter, with
/// nothing known yet.
fn page_of(document: &AppDocument) -> String {
    if document.skybridge {
        with_adapter(&document.html, &json!({}))
    } else {
        document.html.clone()
    }
}

fn no_randomness() -> Response {
    (
        StatusCode::INTERNAL_SERVER_ERROR,
        Json(json!({"error": "the system gave no randomness for a document id"})),
    )
        .into_response()
}

#[derive(Deserialize)]
pub(crate) struct OpenQuery {
    /// The page's spare for this session, to become the app's when it runs the same document.
    spare: Option<String>,
}

/// `POST /api/sessions/{id}/apps/{call}[?spare=DOC]`: the call's app, minted, or bound to the spare
/// `DOC` (see [`Sandbox::mint`]). `200 {"doc", "src", "origin", "allow", "prefers_border",
/// "skybridge", "server", "tool", "resource_uri", "spare"}`, where `spare` says whether `doc` is
/// the spare (its frame already has the document); `404` when the call declared no app (an
/// ordinary tool call) or the session is unknown; `502 {"error"}` when the app's source is
/// unavailable or its document fails to load.
pub(crate) async fn open(
    State(state): State<AppState>,
    Path((session, call_id)): Path<(String, String)>,
    Query(query): Query<OpenQuery>,
) -> Response {
    let opened = match state.host.open_app(&session, &call_id).await {
        Ok(opened) => opened,
        Err(err) => return not_opened(&err),
    };
    let Some((id, in_spare)) =
        state
            .sandbox
            .mint(&session, &call_id, &opened, query.spare.as_deref())
    else {
        return no_randomness();
    };
    let origin = state.sandbox.origin(&id);
    let document = &opened.document;
    Json(json!({
        "doc": id,
        "src": format!("{origin}/"),
        "origin": origin,
        "allow": document.policy.allow,
        "prefers_border": document.prefers_border,
        "skybridge": document.skybridge,
        "server": opened.server,
        "tool": opened.tool,
        "resource_uri": document.uri,
        "spare": in_spare,
    }))
    .into_response()
}

/// The host's answer to one message of document `doc`'s app, decided for the invocation the
/// document was minted for; `session`, when given, must be the one it was minted in.
async fn answer(
    state: &AppState,
    doc: &str,
    session: Option<&str>,
    relayed: AppMessage,
) -> Result<AppReply, String> {
    let (owner, call_id) = state
        .sandbox
        .owner(doc)
        .filter(|(owner, _)| session.is_none_or(|session| session == owner))
        .ok_or_else(|| "no such app document".to_owned())?;
    state
        .host
        .app_request(&owner, &call_id, relayed.message, relayed.context)
        .await
        .map_err(|err| err.to_string())
}

/// `{"type": "app_rpc", "doc", "relay", "message", "context"}` on the socket of a session: one
/// message of the document's app, decided by the host as on `POST /api/apps/{doc}/rpc`, but with
/// no request per message. The answer comes on the same socket, when the host has it (other
/// events may come first): `{"type": "app_reply", "relay", "response", "open_link"}`, or
/// `{"type": "app_reply", "relay", "error"}` for a document that is not minted, or not for this
/// session. An `app_rpc` that is not of that shape is refused with the reason.
pub(crate) fn relay_on_socket(
    state: &AppState,
    session: &str,
    raw: Value,
    replies: tokio::sync::mpsc::UnboundedSender<SocketMessage>,
) -> Result<(), String> {
    let AppRpc {
        doc,
        relay,
        app: relayed,
    } = serde_json::from_value(raw).map_err(|err| format!("not an app message: {err}"))?;
    let state = state.clone();
    let session = session.to_owned();
    tokio::spawn(async move {
        let answer = match answer(&state, &doc, Some(&session), relayed).await {
            Ok(reply) => AppAnswer::from(reply),
            Err(error) => AppAnswer::Refused { error },
        };
        let reply = SocketMessage::AppReply { relay, answer };
        // The socket may have closed meanwhile; then nobody waits for the answer.
        let _ = replies.send(reply);
    });
    Ok(())
}

/// `POST /api/apps/{doc}/rpc` with `{"message", "context"}`: one message of the document's app,
/// decided by the host for the invocation the document was minted for. `200 {"response",
/// "open_link"}`; `404` for a document that is not minted (released, or evicted).
pub(crate) async fn relay(
    State(state): State<AppState>,
    Path(doc): Path<String>,
    Json(relayed): Json<AppMessage>,
) -> Response {
    match answer(&state, &doc, None, relayed).await {
        Ok(reply) => Json(AppAnswer::from(reply)).into_response(),
        Err(error) => (StatusCode::NOT_FOUND, Json(json!({"error": error}))).into_response(),
    }
}

/// `DELETE /api/apps/{doc}`: the page closed the app; its document is forgotten. `204`, or
/// `404` when it was not minted.
pub(crate) async fn release(State(state): State<AppState>, Path(doc): Path<String>) -> StatusCode {
    if state.sandbox.release(&doc) {
        StatusCode::NO_CONTENT
    } else {
        StatusCode::NOT_FOUND
    }
}

/// What the page knows of where a widget is shown, as the query of its document's URL: for its
/// `window.openai` from the first line of its own scripts on. Values that are not of their
/// kind are left out (the adapter's defaults hold until `ui/initialize` answers).
#[derive(Deserialize, Default)]
pub(crate) struct WidgetContext {
    theme: Option<String>,
    #[serde(rename = "displayMode")]
    display_mode: Option<String>,
    #[serde(rename = "maxHeight")]
    max_height: Option<u32>,
    locale: Option<String>,
}

impl WidgetContext {
    fn globals(&self) -> serde_json::Map<String, Value> {
        let mut globals = serde_json::Map::new();
        if let Some(theme) = self
            .theme
            .as_deref()
            .filter(|t| ["light", "dark"].contains(t))
        {
            globals.insert("theme".to_owned(), json!(theme));
        }
        let modes = ["inline", "fullscreen", "pip"];
        if let Some(mode) = self.display_mode.as_deref().filter(|m| modes.contains(m)) {
            globals.insert("displayMode".to_owned(), json!(mode));
        }
        if let Some(height) = self.max_height {
            globals.insert("maxHeight".to_owned(), json!(height));
        }
        let tag = |locale: &&str| {
            (1..=35).contains(&locale.len())
                && locale
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-')
        };
        if let Some(locale) = self.locale.as_deref().filter(tag) {
            globals.insert("locale".to_owned(), json!(locale));
        }
        globals
    }
}

/// A widget's `window.openai` as its page starts: the page's context, the call's arguments,
/// and its result when it has one (`structuredContent` and `_meta`), with the saved state.
fn widget_globals(
    state: &AppState,
    context: &WidgetContext,
    session: &str,
    call_id: &str,
    saved: Value,
) -> Value {
    let mut globals = context.globals();
    let (arguments, result) = state
        .host
        .call_exchange(session, call_id)
        .unwrap_or((Value::Null, None));
    if arguments.is_object() {
        globals.insert("toolInput".to_owned(), arguments);
    }
    if let Some(result) = result {
        let part = |key: &str| result.get(key).cloned().unwrap_or(Value::Null);
        globals.insert("toolOutput".to_owned(), part("structuredContent"));
        globals.insert("toolResponseMetadata".to_owned(), part("_meta"));
    }
    globals.insert("widgetState".to_owned(), saved);
    Value::Object(globals)
}

/// The app listener's only route: a minted document, once.
pub(crate) async fn document(
    State(state): State<AppState>,
    Query(context): Query<WidgetContext>,
    headers: HeaderMap,
) -> Response {
    let served = match state.sandbox.serve(&headers) {
        Ok(served) => served,
        Err(status) => {
            return (
                status,
                locked_headers(None),
                "formwork: no such app document\n",
            )
                .into_response();
        }
    };
    let html = match served.widget {
        Some((session, call_id, saved)) => with_adapter(
            &served.html,
            &widget_globals(&state, &context, &session, &call_id, saved),
        ),
        None => served.html,
    };
    let mut headers = locked_headers(HeaderValue::from_str(&served.csp).ok());
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    (StatusCode::OK, headers, Body::from(html)).into_response()
}

/// Everything else on the app listener.
pub(crate) async fn nothing() -> Response {
    (
        StatusCode::NOT_FOUND,
        locked_headers(None),
        "formwork: no such app document\n",
    )
        .into_response()
}

fn locked_headers(csp: Option<HeaderValue>) -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        csp.unwrap_or_else(|| {
            HeaderValue::from_static("default-src 'none'; frame-ancestors 'none'")
        }),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers
}

/// The widget's document with the `window.openai` adapter as its first script, started with
/// `initial` (an object of its globals).
fn with_adapter(html: &str, initial: &Value) -> String {
    // `</script` cannot occur in the adapter (a test checks), so it cannot end its own element;
    // nor in `initial`, whose `<` are escaped (JSON has them only inside strings).
    let initial = initial
        .to_string()
        .replace('<', "\\u003c")
        .replace('\u{2028}', "\\u2028")
        .replace('\u{2029}', "\\u2029");
    let script = format!("<script>{}({initial});</script>", OPENAI_ADAPTER.trim_end());
    let lower = html.to_ascii_lowercase();
    let at = start_tag_end(&lower, "head").or_else(|| start_tag_end(&lower, "html"));
    match at {
        Some(at) => format!("{}{script}{}", &html[..at], &html[at..]),
        None => format!("<!doctype html><html><head>{script}</head><body>{html}</body></html>"),
    }
}

/// Where the first `<name …>` start tag of `lower` (a lowercased document) ends: a `<header>`
/// is not a `<head>`.
fn start_tag_end(lower: &str, name: &str) -> Option<usize> {
    let open = format!("<{name}");
    let mut from = 0;
    while let Some(found) = lower[from..].find(&open) {
        let after = from + found + open.len();
        let next = lower[after..].chars().next();
        if next.is_some_and(|c| c == '>' || c == '/' || c.is_ascii_whitespace()) {
            return lower[after..].find('>').map(|end| after + end + 1);
        }
        from = after;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opened(server: &str, html: &str) -> OpenedApp {
        OpenedApp {
            server: server.to_owned(),
            tool: Value::Null,
            document: Arc::new(AppDocument {
                uri: "ui://t/app.html".to_owned(),
                mime_type: formwork_host::apps::APP_MIME.to_owned(),
                html: html.to_owned(),
                skybridge: false,
                policy: formwork_host::apps::SandboxPolicy {
                    csp: "default-src 'none'".to_owned(),
                    allow: String::new(),
                    granted: json!({"csp": {}, "permissions": {}}),
                    dropped: Vec::new(),
                },
                prefers_border: None,
            }),
            widget_state: None,
        }
    }

    #[test]
    fn past_the_limit_the_oldest_documents_are_forgotten() {
        let sandbox = Sandbox::new(1, 2);
        let app = opened("p", "<p>app</p>");
        let ids: Vec<String> = (0..=MAX_DOCUMENTS)
            .map(|n| {
                sandbox
                    .mint("s", &format!("c{n}"), &app, None)
                    .map(|(id, _)| id)
                    .unwrap_or_default()
            })
            .collect();
        assert_eq!(sandbox.owner(&ids[0]), None);
        assert_eq!(
            sandbox.owner(&ids[1]),
            Some(("s".to_owned(), "c1".to_owned()))
        );
        assert_eq!(sandbox.lock().by_id.len(), MAX_DOCUMENTS);
    }

    #[test]
    fn a_spare_is_bound_only_by_the_same_servers_same_document_in_its_session() {
        let sandbox = Sandbox::new(1, 2);
        let app = opened("p", "<p>app</p>");
        let spare = |sandbox: &Sandbox| sandbox.reserve("s", &app).expect("randomness");
        let bound = |sandbox: &Sandbox, session: &str, call: &str, like: &OpenedApp, doc: &str| {
            let (id, in_spare) = sandbox
                .mint(session, call, like, Some(doc))
                .expect("randomness");
            assert_eq!(in_spare, id == doc);
            in_spare
        };
        let doc = spare(&sandbox);
        assert_eq!(
            sandbox.owner(&doc),
            None,
            "a spare speaks for no invocation"
        );
        assert!(!bound(
            &sandbox,
            "s",
            "c1",
            &opened("p", "<p>other</p>"),
            &doc
        ));
        assert!(!bound(
            &sandbox,
            "s",
            "c1",
            &opened("q", "<p>app</p>"),
            &doc
        ));
        assert!(!bound(&sandbox, "t", "c1", &app, &doc));
        // A widget's page is made when served: it never takes a spare, even of its own document.
        let widget = |server: &str| {
            let mut widget = opened(server, "<p>app</p>");
            Arc::make_mut(&mut widget.document).skybridge = true;
            widget
        };
        let widget_spare = sandbox.reserve("s", &widget("p")).expect("randomness");
        assert!(!bound(&sandbox, "s", "c1", &widget("p"), &widget_spare));
        // The same bytes read again (a new `Arc`) are the same document.
        assert!(bound(&sandbox, "s", "c1", &opened("p", "<p>app</p>"), &doc));
        assert_eq!(sandbox.owner(&doc), Some(("s".to_owned(), "c1".to_owned())));
        assert!(!bound(&sandbox, "s", "c2", &app, &doc), "bound once");
        assert!(!bound(&sandbox, "s", "c3", &app, "0123"), "not a spare");
    }

    #[test]
    fn the_adapter_cannot_end_its_own_script_element() {
        assert!(!OPENAI_ADAPTER.to_ascii_lowercase().contains("</script"));
    }

    #[test]
    fn the_adapter_goes_first_in_the_head_or_wraps_a_fragment() {
        let initial = json!({"toolOutput": {"note": "</script><script>alert(1)</script>\u{2028}"}});
        let script = format!(
            "<script>{}({{\"toolOutput\":{{\"note\":\"\\u003c/script>\\u003cscript>alert(1)\\u003c/script>\\u2028\"}}}});</script>",
            OPENAI_ADAPTER.trim_end()
        );
        assert_eq!(
            with_adapter(
                "<!doctype html><HTML><Head lang=x><title>t</title></head></html>",
                &initial
            ),
            format!("<!doctype html><HTML><Head lang=x>{script}<title>t</title></head></html>")
        );
        assert_eq!(
            with_adapter("<html><body>b</body></html>", &initial),
            format!("<html>{script}<body>b</body></html>")
        );
        // A `<header>` is not the head.
        assert_eq!(
            with_adapter(
                "<html lang=en><body><header>h</header></body></html>",
                &initial
            ),
            format!("<html lang=en>{script}<body><header>h</header></body></html>")
        );
        assert_eq!(
            with_adapter("<p>fragment</p>", &initial),
            format!(
                "<!doctype html><html><head>{script}</head><body><p>fragment</p></body></html>"
            )
        );
    }

    #[test]
    fn a_widgets_context_keeps_only_values_of_their_kind() {
        let context = WidgetContext {
            theme: Some("dark".to_owned()),
            display_mode: Some("pip".to_owned()),
            max_height: Some(480),
            locale: Some("de-CH".to_owned()),
        };
        assert_eq!(
            Value::Object(context.globals()),
            json!({"theme": "dark", "displayMode": "pip", "maxHeight": 480, "locale": "de-CH"})
        );
        let hostile = WidgetContext {
            theme: Some("dark\"}".to_owned()),
            display_mode: Some("tab".to_owned()),
            max_height: None,
            locale: Some("en<script>".to_owned()),
        };
        assert_eq!(Value::Object(hostile.globals()), json!({}));
    }
}
