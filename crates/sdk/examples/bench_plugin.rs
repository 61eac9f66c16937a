//! The formwork-sdk side of `cargo xtask bench`'s 2026-07-28 part: a stdio plugin whose tool
//! `bench_round` asks the bench's form once through `Asker::ask` and reports the answer. The same
//! round served by the Python SDK is `tests/peers/bench_py_server.py`; one client drives both.

use formwork_sdk::{Ask, Asker, Elicit, Forms, StateKey};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ErrorData,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{RoleServer, ServerHandler, ServiceExt};
use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Strategy {
    #[schemars(title = "Fast")]
    Fast,
    #[schemars(title = "Safe")]
    Safe,
    #[schemars(title = "Ask me before each step")]
    Manual,
}

fn safe() -> Strategy {
    Strategy::Safe
}

fn yes() -> bool {
    true
}

fn three() -> u8 {
    3
}

fn staging() -> String {
    "staging".to_owned()
}

/// The bench's form: the seed's strategy choice and the fields such a form tends to carry.
#[derive(Debug, Deserialize, JsonSchema)]
struct Continue {
    /// How should the plugin continue?
    #[schemars(title = "Strategy")]
    #[serde(default = "safe")]
    strategy: Strategy,
    /// Only show what would change
    #[schemars(title = "Dry run")]
    #[serde(default = "yes")]
    dry_run: bool,
    #[schemars(title = "Retries", range(min = 0, max = 10))]
    #[serde(default = "three")]
    retries: u8,
    #[schemars(title = "Target environment", length(min = 1, max = 40))]
    #[serde(default = "staging")]
    target: String,
}

impl Elicit for Continue {}

struct Plugin {
    forms: Forms,
}

async fn bench_round(ask: Asker) -> Result<CallToolResult, ErrorData> {
    let text = match ask.ask::<Continue>("Choose how to continue").await? {
        Ask::Accepted(answer) => format!(
            "accept {:?} {} {} {}",
            answer.strategy, answer.dry_run, answer.retries, answer.target
        ),
        other => format!("{other:?}"),
    };
    Ok(CallToolResult::success(vec![ContentBlock::text(text)]))
}

impl ServerHandler for Plugin {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let schema = serde_json::json!({"type": "object", "properties": {}});
        let schema = serde_json::from_value(schema).unwrap_or_default();
        Ok(ListToolsResult::with_all_items(vec![Tool::new(
            "bench_round",
            "One timed form round",
            std::sync::Arc::new(schema),
        )]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.forms.run(&request, &context, bench_round).await
    }
}

fn main() {
    let plugin = Plugin {
        forms: Forms::new(StateKey::random()),
    };
    let Ok(runtime) = tokio::runtime::Runtime::new() else {
        eprintln!("bench_plugin: no tokio runtime");
        std::process::exit(1);
    };
    runtime.block_on(async {
        match plugin.serve(rmcp::transport::stdio()).await {
            Ok(service) => {
                let _ = service.waiting().await;
            }
            Err(err) => eprintln!("bench_plugin: {err}"),
        }
    });
}
