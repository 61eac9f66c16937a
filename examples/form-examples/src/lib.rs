//! Five MCP plugins on formwork-sdk, one question each. Every module is one example: its tool's
//! definition, the form it asks (a Rust type), and the tool's code, which handles each outcome —
//! accepted, declined, cancelled, and a client that cannot show the form (then the tool reads its
//! arguments instead). A bin in `src/bin/` serves one example on stdio; `formwork demo-plugin`
//! serves them all next to its own tools.

pub mod cache;
pub mod cad_part;
pub mod release_note;
pub mod strategy;
pub mod target;

use formwork_sdk::{Asker, Forms, StateKey};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ErrorData, JsonObject,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{RoleServer, ServerHandler, ServiceExt};
use serde_json::Value;

/// One of the examples.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Example {
    /// `choose_target`: a single choice.
    Target,
    /// `clear_cache`: a boolean confirmation before files are deleted.
    Cache,
    /// `release_note`: a text with a `pattern`.
    ReleaseNote,
    /// `pick_strategy`: a choice with a custom option, checked by the plugin.
    Strategy,
    /// `inspect_part`: an OpenAI form with thumbnails, suggestions and a resource picker.
    CadPart,
}

impl Example {
    /// Every example, in the order their tools are listed.
    pub const ALL: [Example; 5] = [
        Example::Target,
        Example::Cache,
        Example::ReleaseNote,
        Example::Strategy,
        Example::CadPart,
    ];

    /// The example's tool, as `tools/list` lists it.
    pub fn tool(self) -> Value {
        match self {
            Example::Target => target::tool(),
            Example::Cache => cache::tool(),
            Example::ReleaseNote => release_note::tool(),
            Example::Strategy => strategy::tool(),
            Example::CadPart => cad_part::tool(),
        }
    }

    /// The example whose tool is called `name`.
    pub fn named(name: &str) -> Option<Example> {
        Example::ALL
            .into_iter()
            .find(|example| example.tool()["name"] == name)
    }

    /// Runs the example's tool with `arguments`, asking through `ask`.
    pub async fn call(
        self,
        ask: Asker,
        arguments: JsonObject,
    ) -> Result<CallToolResult, ErrorData> {
        match self {
            Example::Target => target::call(ask, &arguments).await,
            Example::Cache => cache::call(ask, &arguments).await,
            Example::ReleaseNote => release_note::call(ask, &arguments).await,
            Example::Strategy => strategy::call(ask, &arguments).await,
            Example::CadPart => cad_part::call(ask, &arguments).await,
        }
    }
}

/// The tools of `examples`, ready for a `ListToolsResult`.
pub fn tools(examples: &[Example]) -> Result<Vec<Tool>, ErrorData> {
    examples
        .iter()
        .map(|example| {
            serde_json::from_value(example.tool())
                .map_err(|error| ErrorData::internal_error(error.to_string(), None))
        })
        .collect()
}

/// Runs the example tool `request` names through `forms`; `None` when no example has that name.
pub async fn call(
    forms: &Forms,
    request: &CallToolRequestParams,
    context: &RequestContext<RoleServer>,
) -> Option<Result<CallToolResponse, ErrorData>> {
    let example = Example::named(&request.name)?;
    let arguments = request.arguments.clone().unwrap_or_default();
    Some(
        forms
            .run(request, context, |ask| example.call(ask, arguments))
            .await,
    )
}

/// A plugin that serves one example.
struct Plugin {
    example: Example,
    forms: Forms,
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
        Ok(ListToolsResult::with_all_items(tools(&[self.example])?))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if Example::named(&request.name) != Some(self.example) {
            return Err(ErrorData::invalid_params(
                format!("unknown tool `{}`", request.name),
                None,
            ));
        }
        call(&self.forms, &request, &context)
            .await
            .unwrap_or_else(|| Err(ErrorData::internal_error("no such example", None)))
    }
}

/// Serves `example` on stdin/stdout until the client goes away. The `requestState` key is new in
/// every process: a stdio plugin only ever receives its own retries.
pub fn serve(example: Example) -> std::process::ExitCode {
    let plugin = Plugin {
        example,
        forms: Forms::new(StateKey::random()),
    };
    let served = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|error| error.to_string())
        .and_then(|runtime| {
            runtime.block_on(async {
                let service = plugin
                    .serve(rmcp::transport::stdio())
                    .await
                    .map_err(|error| error.to_string())?;
                service
                    .waiting()
                    .await
                    .map(|_| ())
                    .map_err(|error| error.to_string())
            })
        });
    match served {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("{error}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// A successful tool result holding `text`.
fn done(text: impl Into<String>) -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(text.into())])
}

/// A tool result with `isError` set, holding `text`.
fn failed(text: impl Into<String>) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(text.into())])
}

/// The string argument `key`, if given as a string.
fn text_argument<'a>(arguments: &'a JsonObject, key: &str) -> Option<&'a str> {
    arguments.get(key).and_then(Value::as_str)
}
