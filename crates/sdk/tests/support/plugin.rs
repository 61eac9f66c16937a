//! The test plugin: an rmcp stdio server whose tools ask through `formwork_sdk`. The peer tests
//! run this test binary again with `FORMWORK_SDK_PLUGIN=1` to get it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use formwork_sdk::openai::{ResourceInput, ResourceOption, Selection, Suggestion, Thumbnail};
use formwork_sdk::{Ask, Asker, Elicit, FormSchema, Forms, SchemaError, StateKey};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ErrorData,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{RoleServer, ServerHandler, ServiceExt};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

/// Where a build goes.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Target {
    /// Staging
    Staging,
    #[schemars(title = "Production")]
    Production,
}

// The fields are read through `Debug`, in the tool's reply.
#[allow(dead_code)]
#[derive(Debug, Deserialize, JsonSchema)]
pub struct Deploy {
    /// Where the build goes
    pub target: Target,
    #[schemars(title = "Replicas", range(min = 1, max = 5))]
    pub replicas: u8,
    #[serde(default)]
    pub notify: bool,
    #[schemars(email)]
    pub contact: Option<String>,
}

impl Elicit for Deploy {}

// The fields are read through `Debug`, in the tool's reply.
#[allow(dead_code)]
#[derive(Debug, Deserialize, JsonSchema)]
pub struct Confirm {
    /// Really?
    pub sure: bool,
}

impl Elicit for Confirm {}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Bolt {
    /// M6 hex bolt
    ///
    /// A fastener for the main joint
    HexBolt,
    /// M6 washer
    Washer,
}

// The fields are read through `Debug`, in the tool's reply.
#[allow(dead_code)]
#[derive(Debug, Deserialize, JsonSchema)]
pub struct Part {
    pub part: Bolt,
    #[schemars(regex(pattern = r"^[A-Z]{3}-[0-9]+$"))]
    pub code: String,
    pub file: String,
    #[schemars(length(max = 2))]
    pub extras: Vec<String>,
}

impl Elicit for Part {
    fn customize(form: &mut FormSchema) -> Result<(), SchemaError> {
        form.thumbnail(
            "part",
            "hex-bolt",
            Thumbnail::new("https://example.com/hex-bolt.png").mime_type("image/png"),
        )?
        .suggestions("code", vec![Suggestion::new("CAD-1", "The first part")])?
        .resource_input(
            "file",
            ResourceInput::new(vec![ResourceOption::new(
                "cad://parts/hex-bolt.stl",
                "hex-bolt.stl",
            )]),
        )?
        .resource_input(
            "extras",
            ResourceInput::new(vec![
                ResourceOption::new("cad://parts/washer.stl", "washer.stl"),
                ResourceOption::new("cad://parts/nut.stl", "nut.stl"),
            ])
            .selection(Selection::Explicit),
        )?;
        Ok(())
    }
}

struct Plugin {
    forms: Forms,
    /// Whether `deploy_both` asks about staging first on its next run: it flips every run.
    staging_first: AtomicBool,
}

fn tool(name: &'static str) -> Tool {
    Tool::new(
        name,
        "asks through formwork-sdk",
        std::sync::Arc::new(
            json!({"type": "object"})
                .as_object()
                .cloned()
                .unwrap_or_default(),
        ),
    )
}

fn text(text: String) -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(text)])
}

async fn deploy(ask: Asker) -> Result<CallToolResult, ErrorData> {
    let choice: Ask<Deploy> = ask.ask("Where to deploy?").await?;
    Ok(text(format!("{choice:?}")))
}

async fn deploy_twice(ask: Asker) -> Result<CallToolResult, ErrorData> {
    let first: Ask<Deploy> = ask.ask("Where to deploy?").await?;
    let second: Ask<Confirm> = ask.ask("Deploy now?").await?;
    Ok(text(format!("{first:?} then {second:?}")))
}

/// Two questions of one type, in an order that changes from run to run (as a tool that asks
/// in the order of a map without a fixed order would).
async fn deploy_both(ask: Asker, staging_first: bool) -> Result<CallToolResult, ErrorData> {
    let (staging, production) = if staging_first {
        let staging: Ask<Confirm> = ask.ask("Deploy to staging?").await?;
        (staging, ask.ask("Deploy to production?").await?)
    } else {
        let production: Ask<Confirm> = ask.ask("Deploy to production?").await?;
        (ask.ask("Deploy to staging?").await?, production)
    };
    Ok(text(format!(
        "staging {staging:?}, production {production:?}"
    )))
}

/// The same two questions, asked at once.
async fn deploy_both_at_once(ask: Asker) -> Result<CallToolResult, ErrorData> {
    let (staging, production) = tokio::join!(
        ask.ask::<Confirm>("Deploy to staging?"),
        ask.ask::<Confirm>("Deploy to production?"),
    );
    let (staging, production) = (staging?, production?);
    Ok(text(format!(
        "staging {staging:?}, production {production:?}"
    )))
}

async fn pick_part(ask: Asker) -> Result<CallToolResult, ErrorData> {
    let part: Ask<Part> = ask.ask("Choose a part").await?;
    Ok(text(format!("{part:?}")))
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
        Ok(ListToolsResult::with_all_items(vec![
            tool("deploy"),
            tool("deploy_twice"),
            tool("deploy_both"),
            tool("deploy_both_at_once"),
            tool("pick_part"),
        ]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        // The tests pass a principal in `_meta`, standing in for an authenticated user.
        let principal = context
            .meta
            .get("example/principal")
            .and_then(|value| value.as_str())
            .map(str::to_owned);
        let principal = principal.as_deref();
        match request.name.as_ref() {
            "deploy" => {
                self.forms
                    .run_for(principal, &request, &context, deploy)
                    .await
            }
            "deploy_twice" => {
                self.forms
                    .run_for(principal, &request, &context, deploy_twice)
                    .await
            }
            "deploy_both" => {
                let staging_first = self.staging_first.fetch_xor(true, Ordering::Relaxed);
                self.forms
                    .run_for(principal, &request, &context, |ask| {
                        deploy_both(ask, staging_first)
                    })
                    .await
            }
            "deploy_both_at_once" => {
                self.forms
                    .run_for(principal, &request, &context, deploy_both_at_once)
                    .await
            }
            "pick_part" => {
                self.forms
                    .run_for(principal, &request, &context, pick_part)
                    .await
            }
            _ => Err(ErrorData::invalid_params("no such tool", None)),
        }
    }
}

/// Serves the plugin on stdin/stdout until the client goes away. `FORMWORK_SDK_TTL_MS` sets how
/// long a round's state lives, `FORMWORK_SDK_CONSUMED_LIMIT` how many used states are remembered.
pub fn serve() {
    let ttl = std::env::var("FORMWORK_SDK_TTL_MS")
        .ok()
        .and_then(|ms| ms.parse().ok())
        .map_or(Forms::DEFAULT_TTL, Duration::from_millis);
    let consumed_limit = std::env::var("FORMWORK_SDK_CONSUMED_LIMIT")
        .ok()
        .and_then(|limit| limit.parse().ok())
        .unwrap_or(Forms::DEFAULT_CONSUMED_LIMIT);
    let plugin = Plugin {
        forms: Forms::new(StateKey::from_bytes([7; 32]))
            .ttl(ttl)
            .consumed_limit(consumed_limit),
        staging_first: AtomicBool::new(true),
    };
    let runtime = tokio::runtime::Runtime::new().expect("a tokio runtime");
    runtime.block_on(async {
        let service = plugin
            .serve(rmcp::transport::stdio())
            .await
            .expect("serving on stdio");
        let _ = service.waiting().await;
    });
}
