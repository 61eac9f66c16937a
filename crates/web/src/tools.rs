//! The tool palette's catalogue: every configured server's tools, each with the render block of
//! its `inputSchema` when the form engine can draw it; a server that needs a person to sign in
//! says so (`sign_in`), and the palette offers the session's `sign_in` command.
//!
//! Listing uses a connection of its own per server (opened, listed, closed), apart from the
//! sessions' connections; its forms are declined, since listing asks nothing. The result is
//! kept until the page asks for a refresh.

use std::sync::Arc;
use std::time::Duration;

use formwork_host::config::ServerConfig;
use formwork_host::{
    BoxFuture, ClientExtensions, ConnectOptions, FormPrompt, FormReply, FormResponder, Host,
    Plugin, PluginTarget,
};
use serde_json::{Value, json};
use tokio::sync::Mutex;

/// How long connecting to a server and listing its tools may take, unless the config says.
const LIST_TIMEOUT: Duration = Duration::from_secs(30);

/// The cached catalogue.
#[derive(Default)]
pub(crate) struct Catalogue {
    cached: Mutex<Option<Arc<Value>>>,
}

impl Catalogue {
    /// `{"servers": [{"name", "tools": [...], "error"}]}`, listed anew when `refresh` or on
    /// first use. Concurrent callers wait for one listing.
    pub(crate) async fn list(&self, host: &Host, refresh: bool) -> Arc<Value> {
        let mut cached = self.cached.lock().await;
        if let Some(value) = cached.as_ref().filter(|_| !refresh) {
            return Arc::clone(value);
        }
        let config = host.config();
        let servers = config
            .mcp_servers
            .iter()
            .filter(|(_, server)| server.enabled)
            .map(|(name, server)| list_server(host, name, server));
        let servers: Vec<Value> = futures::future::join_all(servers).await;
        let value = Arc::new(json!({ "servers": servers }));
        *cached = Some(Arc::clone(&value));
        value
    }
}

async fn list_server(host: &Host, name: &str, server: &ServerConfig) -> Value {
    let limit = server.startup_timeout.unwrap_or(LIST_TIMEOUT);
    let listed = tokio::time::timeout(limit, fetch(host, name, server)).await;
    let (tools, error, sign_in) = match listed {
        Ok(Ok(tools)) => (tools, None, false),
        Ok(Err((err, sign_in))) => (Vec::new(), Some(err), sign_in),
        Err(_) => (
            Vec::new(),
            Some(format!(
                "listing the tools took longer than {}s",
                limit.as_secs_f64()
            )),
            false,
        ),
    };
    let tools: Vec<Value> = tools
        .into_iter()
        .filter(|tool| {
            tool.get("name")
                .and_then(Value::as_str)
                .is_some_and(|tool| server.exposes_tool(tool))
        })
        // A tool only an app may call is not the person's (nor the model's) to call.
        .filter(|tool| formwork_host::apps::visibility(tool).model)
        .map(describe)
        .collect();
    json!({ "name": name, "tools": tools, "error": error, "sign_in": sign_in })
}

/// The server's tools; on failure the reason, and whether a person's sign-in would help.
async fn fetch(
    host: &Host,
    name: &str,
    server: &ServerConfig,
) -> Result<Vec<Value>, (String, bool)> {
    let target = host
        .server_target(name)
        .map_err(|err| (err.to_string(), false))?;
    let mut options = ConnectOptions::new(name.to_owned(), Arc::new(DeclineAll));
    options.http_headers = server
        .transport
        .http_headers()
        .map_err(|err| (err.to_string(), false))?;
    let auth = match &target {
        PluginTarget::Url(url) => Some(
            host.authorizer(name, url)
                .map_err(|err| (err.to_string(), false))?,
        ),
        PluginTarget::Command { .. } => None,
    };
    options.auth = auth.clone();
    options.extensions = ClientExtensions {
        openai_elicitation: host.config().features.openai_elicitation,
        mcp_apps: true,
    };
    let plugin = match Plugin::connect(&target, options).await {
        Ok(plugin) => plugin,
        Err(err) => {
            let sign_in = match &auth {
                Some(auth) => auth.needs_sign_in().await,
                None => false,
            };
            return Err((err.to_string(), sign_in));
        }
    };
    let tools = plugin
        .list_tools()
        .await
        .map_err(|err| (err.to_string(), false));
    plugin.close().await;
    tools
}

/// One tool as the palette needs it: the listing's fields, plus `render` (the block for its
/// arguments, or `null`) and `unsupported` (why there is no block).
fn describe(tool: Value) -> Value {
    let text = |key: &str| tool.get(key).and_then(Value::as_str).map(str::to_owned);
    let schema = tool
        .get("inputSchema")
        .cloned()
        .unwrap_or_else(|| json!({"type": "object", "properties": {}}));
    let message = text("description").unwrap_or_default();
    let (render, unsupported) = match formwork_forms::parse_schema(&schema) {
        Ok(form) => (serde_json::to_value(form.render(&message)).ok(), None),
        Err(decline) => (None, Some(decline.to_string())),
    };
    json!({
        "name": text("name"),
        "title": text("title").or_else(|| {
            tool.pointer("/annotations/title").and_then(Value::as_str).map(str::to_owned)
        }),
        "description": text("description"),
        "inputSchema": schema,
        "annotations": tool.get("annotations").cloned(),
        "render": render,
        "unsupported": unsupported,
    })
}

/// Listing connections ask nothing of the person.
struct DeclineAll;

impl FormResponder for DeclineAll {
    fn respond(&self, _prompt: FormPrompt) -> BoxFuture<FormReply> {
        Box::pin(async { FormReply::decline() })
    }
}
