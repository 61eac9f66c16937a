//! The load bench's second plugin: the same `ask` tool as `tests/peers/http_plugin.mjs`, written
//! with the official Rust SDK (rmcp) and served over Streamable HTTP by its own tower service.
//!
//! It runs as a child process (`load-bench --serve-plugin`), so that its memory is not counted
//! as the host's. With no garbage collector in the plugin, the tail of the round trip under load
//! is the host's and the network's own. rmcp sends a request made inside a request handler on
//! that request's response stream, so forms reach the host on their calls' streams.

use std::borrow::Cow;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ElicitRequestParams,
    ElicitResult, ListToolsResult, PaginatedRequestParams, ProtocolVersion, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{Value, json};

/// The protocol versions with push elicitation, the round trip the bench measures. rmcp refuses
/// server-to-client requests on 2026-07-28, and a client that offers it (formwork) chooses it
/// when the server does.
pub const PUSH_ELICITATION_VERSIONS: &[ProtocolVersion] = &[
    ProtocolVersion::V_2025_11_25,
    ProtocolVersion::V_2025_06_18,
    ProtocolVersion::V_2025_03_26,
];

/// The `initialize` answer of the bench's Rust plugin named `name`: tools only, and
/// 2025-11-25 (one of [`PUSH_ELICITATION_VERSIONS`]).
pub fn plugin_info(name: &str) -> ServerConfig {
    let info = json!({
        "protocolVersion": "2025-11-25",
        "capabilities": {"tools": {}},
        "serverInfo": {"name": name, "version": env!("CARGO_PKG_VERSION")},
    });
    serde_json::from_value(info).unwrap_or_default()
}

/// A `tools/list` result, written as JSON, in rmcp's type.
pub fn tool_list(result: Value) -> Result<ListToolsResult, ErrorData> {
    serde_json::from_value(result).map_err(|err| ErrorData::internal_error(err.to_string(), None))
}

/// Serves the plugin on a free loopback port; prints `listening <port>` once it accepts.
pub async fn serve() -> anyhow::Result<()> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    // One MCP session per client session, as the TS plugin keeps.
    let config = StreamableHttpServerConfig::default().with_legacy_session_mode(true);
    let service = StreamableHttpService::new(
        || Ok(AskPlugin),
        LocalSessionManager::default().into(),
        config,
    );
    let router = axum::Router::new().nest_service("/mcp", service);
    println!("listening {}", listener.local_addr()?.port());
    axum::serve(listener, router).await?;
    Ok(())
}

struct AskPlugin;

impl ServerHandler for AskPlugin {
    fn get_info(&self) -> ServerConfig {
        plugin_info("load-bench-rust-plugin")
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(PUSH_ELICITATION_VERSIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        tool_list(json!({"tools": [{
            "name": "ask",
            "description": "Ask for a small form",
            "inputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}},
        }]}))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if request.name.as_ref() != "ask" {
            return Err(ErrorData::invalid_params(
                format!("unknown tool `{}`", request.name),
                None,
            ));
        }
        let n = request
            .arguments
            .as_ref()
            .and_then(|arguments| arguments.get("n"))
            .and_then(Value::as_i64)
            .map_or_else(String::new, |n| n.to_string());
        // The form of `http_plugin.mjs`, so that both plugins are asked the same.
        let params: ElicitRequestParams = serde_json::from_value(json!({
            "mode": "form",
            "message": "Choose a strategy",
            "requestedSchema": {
                "type": "object",
                "properties": {
                    "strategy": {
                        "type": "string", "title": "Strategy",
                        "oneOf": [{"const": "fast", "title": "Fast"}, {"const": "safe", "title": "Safe"}],
                        "default": "safe"
                    },
                    "retries": {"type": "integer", "title": "Retries", "minimum": 0, "maximum": 10, "default": 3}
                },
                "required": ["strategy"]
            },
        }))
        .map_err(|err| ErrorData::internal_error(err.to_string(), None))?;
        let result: ElicitResult = context
            .peer
            .create_elicitation(params)
            .await
            .map_err(|err| ErrorData::internal_error(format!("elicitation failed: {err}"), None))?;
        let result = serde_json::to_string(&result)
            .map_err(|err| ErrorData::internal_error(err.to_string(), None))?;
        let text = format!("result: {result} n={n}");
        Ok(CallToolResult::success(vec![ContentBlock::text(text)]).into())
    }
}
