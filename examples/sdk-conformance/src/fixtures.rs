//! The tools, resources and prompts the conformance suite's server scenarios call by name, each
//! answering what its scenario's description asks for. Results are written as JSON, the way they go
//! on the wire, and read into rmcp's types.

use formwork_sdk::{Forms, StateKey};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CompleteRequestParams, CompleteResult,
    ContentBlock, GetPromptRequestParams, GetPromptResponse, GetPromptResult, JsonObject,
    ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, ListToolsResult,
    PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult,
    ServerConfig, SubscribeRequestParams, UnsubscribeRequestParams,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::elicitation;
use crate::reconnect::RequestStream;

/// A 1×1 red PNG.
const RED_PIXEL_PNG: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC";

/// One millisecond of silence: a WAV file of 8 unsigned 8-bit samples at 8 kHz.
const SILENT_WAV: &str = "UklGRiwAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQgAAACAgICAgICAgA==";

/// The severity rank of `info`, the level of the logging tool's messages (`debug` is 0,
/// `emergency` 7).
const INFO: usize = 1;

/// The pause between the messages that the logging and progress tools send.
const STEP: Duration = Duration::from_millis(50);

/// How long `test_reconnection` waits for the client to come back after it ended the stream.
const RESUME_PATIENCE: Duration = Duration::from_secs(10);

/// One MCP session's server: the log level the client set, and how its forms are asked.
pub struct ConformanceServer {
    /// Severity rank of the least severe level still sent (0, `debug`, until the client sets one).
    log_threshold: AtomicUsize,
    /// formwork-sdk's forms (a random key: a round's state opens only in this process).
    forms: Forms,
}

impl Default for ConformanceServer {
    fn default() -> Self {
        ConformanceServer {
            log_threshold: AtomicUsize::new(0),
            forms: Forms::new(StateKey::random()),
        }
    }
}

impl ServerHandler for ConformanceServer {
    fn get_info(&self) -> ServerConfig {
        from_json(json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {
                "tools": {},
                "resources": {"subscribe": true},
                "prompts": {},
                "logging": {},
                "completions": {},
            },
            "serverInfo": {"name": "sdk-conformance", "version": env!("CARGO_PKG_VERSION")},
        }))
        .unwrap_or_default()
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let mut tools = vec![
            tool("test_simple_text", "Returns one text block"),
            tool("test_image_content", "Returns a PNG image"),
            tool("test_audio_content", "Returns a WAV clip"),
            tool(
                "test_embedded_resource",
                "Returns an embedded text resource",
            ),
            tool(
                "test_multiple_content_types",
                "Returns text, an image and a resource",
            ),
            tool(
                "test_tool_with_logging",
                "Logs three info messages while it runs",
            ),
            tool(
                "test_tool_with_progress",
                "Reports progress 0, 50 and 100 of 100",
            ),
            tool("test_error_handling", "Always fails with a tool error"),
            tool(
                "test_reconnection",
                "Ends its SSE stream and answers on the resumed one",
            ),
            json!({
                "name": "test_sampling",
                "description": "Asks the client's LLM to answer a prompt",
                "inputSchema": {
                    "type": "object",
                    "properties": {"prompt": {"type": "string", "description": "The prompt for the LLM"}},
                    "required": ["prompt"],
                },
            }),
            json!({
                "name": "json_schema_2020_12_tool",
                "description": "Tool with JSON Schema 2020-12 features",
                "inputSchema": {
                    "$schema": "https://json-schema.org/draft/2020-12/schema",
                    "type": "object",
                    "$defs": {
                        "address": {
                            "type": "object",
                            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
                        },
                    },
                    "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
                    "additionalProperties": false,
                },
            }),
        ];
        tools.extend(elicitation::tools());
        from_json(json!({ "tools": tools }))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if let Some(result) = elicitation::call(&request, &context, &self.forms).await {
            return result;
        }
        let arguments = request.arguments.unwrap_or_default();
        let name = request.name.as_ref();
        let result = match name {
            "test_simple_text" => text_result("This is a simple text response for testing."),
            "test_image_content" => from_json(json!({"content": [
                {"type": "image", "data": RED_PIXEL_PNG, "mimeType": "image/png"},
            ]}))?,
            "test_audio_content" => from_json(json!({"content": [
                {"type": "audio", "data": SILENT_WAV, "mimeType": "audio/wav"},
            ]}))?,
            "test_embedded_resource" => from_json(json!({"content": [{
                "type": "resource",
                "resource": {
                    "uri": "test://embedded-resource",
                    "mimeType": "text/plain",
                    "text": "This is an embedded resource content.",
                },
            }]}))?,
            "test_multiple_content_types" => from_json(json!({"content": [
                {"type": "text", "text": "Multiple content types test:"},
                {"type": "image", "data": RED_PIXEL_PNG, "mimeType": "image/png"},
                {
                    "type": "resource",
                    "resource": {
                        "uri": "test://mixed-content-resource",
                        "mimeType": "application/json",
                        "text": json!({"test": "data", "value": 123}).to_string(),
                    },
                },
            ]}))?,
            "test_tool_with_logging" => self.call_with_logging(&context).await?,
            "test_tool_with_progress" => call_with_progress(&context).await?,
            "test_error_handling" => {
                let text = "This tool intentionally returns an error for testing";
                error_result(text)
            }
            "test_sampling" => call_sampling(&arguments, &context).await?,
            "test_reconnection" => call_reconnection(&context).await,
            "json_schema_2020_12_tool" => text_result("The arguments were accepted."),
            other => {
                return Err(ErrorData::invalid_params(
                    format!("unknown tool `{other}`"),
                    None,
                ));
            }
        };
        Ok(result.into())
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        from_json(json!({"resources": [
            {
                "uri": "test://static-text",
                "name": "static-text",
                "description": "A fixed text resource",
                "mimeType": "text/plain",
            },
            {
                "uri": "test://static-binary",
                "name": "static-binary",
                "description": "A fixed PNG image",
                "mimeType": "image/png",
            },
            {
                "uri": "test://watched-resource",
                "name": "watched-resource",
                "description": "A resource clients may subscribe to",
                "mimeType": "text/plain",
            },
        ]}))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        from_json(json!({"resourceTemplates": [{
            "uriTemplate": "test://template/{id}/data",
            "name": "template-data",
            "description": "JSON data for the id in the URI",
            "mimeType": "application/json",
        }]}))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let uri = request.uri.as_str();
        let content = match uri {
            "test://static-text" => json!({
                "uri": uri,
                "mimeType": "text/plain",
                "text": "This is the content of the static text resource.",
            }),
            "test://static-binary" => {
                json!({"uri": uri, "mimeType": "image/png", "blob": RED_PIXEL_PNG})
            }
            "test://watched-resource" => json!({
                "uri": uri,
                "mimeType": "text/plain",
                "text": "This is the content of the watched resource.",
            }),
            _ => match template_id(uri) {
                Some(id) => json!({
                    "uri": uri,
                    "mimeType": "application/json",
                    "text": json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")})
                        .to_string(),
                }),
                None => return Err(unknown_resource(uri)),
            },
        };
        from_json::<ReadResourceResult>(json!({ "contents": [content] })).map(Into::into)
    }

    /// The resources never change, so a subscription needs no bookkeeping: it is accepted for
    /// any resource the server has.
    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        known_resource(&request.uri)
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        known_resource(&request.uri)
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        from_json(json!({"prompts": [
            {"name": "test_simple_prompt", "description": "A prompt without arguments"},
            {
                "name": "test_prompt_with_arguments",
                "description": "A prompt that quotes its two arguments",
                "arguments": [
                    {"name": "arg1", "description": "First test argument", "required": true},
                    {"name": "arg2", "description": "Second test argument", "required": true},
                ],
            },
            {
                "name": "test_prompt_with_embedded_resource",
                "description": "A prompt that embeds the resource it is given",
                "arguments": [
                    {"name": "resourceUri", "description": "URI of the resource to embed", "required": true},
                ],
            },
            {"name": "test_prompt_with_image", "description": "A prompt with an image"},
        ]}))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let arguments = request.arguments.unwrap_or_default();
        let messages = match request.name.as_str() {
            "test_simple_prompt" => json!([
                {"role": "user", "content": {"type": "text", "text": "This is a simple prompt for testing."}},
            ]),
            "test_prompt_with_arguments" => {
                let arg1 = string_argument(&arguments, "arg1")?;
                let arg2 = string_argument(&arguments, "arg2")?;
                let text = format!("Prompt with arguments: arg1='{arg1}', arg2='{arg2}'");
                json!([{"role": "user", "content": {"type": "text", "text": text}}])
            }
            "test_prompt_with_embedded_resource" => {
                let uri = string_argument(&arguments, "resourceUri")?;
                json!([
                    {"role": "user", "content": {"type": "resource", "resource": {
                        "uri": uri,
                        "mimeType": "text/plain",
                        "text": "Embedded resource content for testing.",
                    }}},
                    {"role": "user", "content": {"type": "text", "text": "Please process the embedded resource above."}},
                ])
            }
            "test_prompt_with_image" => json!([
                {"role": "user", "content": {"type": "image", "data": RED_PIXEL_PNG, "mimeType": "image/png"}},
                {"role": "user", "content": {"type": "text", "text": "Please analyze the image above."}},
            ]),
            other => {
                return Err(ErrorData::invalid_params(
                    format!("unknown prompt `{other}`"),
                    None,
                ));
            }
        };
        from_json::<GetPromptResult>(json!({ "messages": messages })).map(Into::into)
    }

    /// Completes `arg1` of `test_prompt_with_arguments` from a short fixed list, by prefix.
    async fn complete(
        &self,
        request: CompleteRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        let reference = serde_json::to_value(&request.r#ref)
            .map_err(|err| ErrorData::internal_error(err.to_string(), None))?;
        let is_arg1 = reference
            == json!({"type": "ref/prompt", "name": "test_prompt_with_arguments"})
            && request.argument.name == "arg1";
        let values: Vec<&str> = if is_arg1 {
            ["paris", "park", "party"]
                .into_iter()
                .filter(|value| value.starts_with(request.argument.value.as_str()))
                .collect()
        } else {
            Vec::new()
        };
        from_json(
            json!({"completion": {"values": values, "total": values.len(), "hasMore": false}}),
        )
    }

    #[expect(deprecated, reason = "logging is what the logging scenarios check")]
    async fn set_level(
        &self,
        request: rmcp::model::SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        use rmcp::model::LoggingLevel;
        let threshold = match request.level {
            LoggingLevel::Debug => 0,
            LoggingLevel::Info => INFO,
            LoggingLevel::Notice => 2,
            LoggingLevel::Warning => 3,
            LoggingLevel::Error => 4,
            LoggingLevel::Critical => 5,
            LoggingLevel::Alert => 6,
            LoggingLevel::Emergency => 7,
        };
        self.log_threshold.store(threshold, Ordering::Relaxed);
        Ok(())
    }
}

impl ConformanceServer {
    /// Sends three info messages, 50 ms apart, unless the client asked for more severe ones only.
    async fn call_with_logging(
        &self,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let messages = [
            "Tool execution started",
            "Tool processing data",
            "Tool execution completed",
        ];
        for (idx, message) in messages.into_iter().enumerate() {
            if idx > 0 {
                tokio::time::sleep(STEP).await;
            }
            if self.log_threshold.load(Ordering::Relaxed) <= INFO {
                let params = from_json(
                    json!({"level": "info", "logger": "sdk-conformance", "data": message}),
                )?;
                #[expect(deprecated, reason = "logging is what the scenario checks")]
                let sent = context.peer.notify_logging_message(params).await;
                sent.map_err(|err| ErrorData::internal_error(err.to_string(), None))?;
            }
        }
        Ok(text_result("Tool with logging completed."))
    }
}

/// Reports progress 0, 50 and 100 of 100, 50 ms apart, when the call carries a progress token.
async fn call_with_progress(
    context: &RequestContext<RoleServer>,
) -> Result<CallToolResult, ErrorData> {
    let token = context.meta.get_progress_token();
    for (idx, progress) in [0, 50, 100].into_iter().enumerate() {
        if idx > 0 {
            tokio::time::sleep(STEP).await;
        }
        if let Some(token) = &token {
            let params =
                from_json(json!({"progressToken": token, "progress": progress, "total": 100}))?;
            context
                .peer
                .notify_progress(params)
                .await
                .map_err(|err| ErrorData::internal_error(err.to_string(), None))?;
        }
    }
    Ok(text_result("Tool with progress completed."))
}

/// Asks the client's LLM to answer the `prompt` argument, and quotes its answer.
async fn call_sampling(
    arguments: &JsonObject,
    context: &RequestContext<RoleServer>,
) -> Result<CallToolResult, ErrorData> {
    let prompt = string_argument(arguments, "prompt")?;
    let can_sample = context
        .peer
        .peer_info()
        .is_some_and(|client| client.capabilities.sampling.is_some());
    if !can_sample {
        return Ok(error_result("The client does not support sampling."));
    }
    let params = from_json(json!({
        "messages": [{"role": "user", "content": {"type": "text", "text": prompt}}],
        "maxTokens": 100,
    }))?;
    #[expect(deprecated, reason = "sampling is what the scenario checks")]
    let answer = context.peer.create_message(params).await;
    let answer = match answer {
        Ok(answer) => answer,
        Err(err) => return Ok(error_result(&format!("Sampling failed: {err}"))),
    };
    let answer = serde_json::to_value(&answer)
        .map_err(|err| ErrorData::internal_error(err.to_string(), None))?;
    let text = match answer.pointer("/content/text").and_then(Value::as_str) {
        Some(text) => text.to_owned(),
        None => answer.get("content").unwrap_or(&Value::Null).to_string(),
    };
    Ok(text_result(&format!("LLM response: {text}")))
}

/// Ends the call's SSE stream before answering (SEP-1699), and answers once the client has
/// resumed it, so that the answer arrives on the resumed stream.
async fn call_reconnection(context: &RequestContext<RoleServer>) -> CallToolResult {
    let Some(stream) = context.extensions.get::<RequestStream>() else {
        return error_result("This call has no SSE stream of its own to end.");
    };
    match stream
        .close_and_await_resume(crate::SSE_RETRY, RESUME_PATIENCE)
        .await
    {
        Ok(true) => text_result("Reconnection test completed: the client resumed the stream."),
        Ok(false) => error_result("The client did not resume the stream in time."),
        Err(err) => error_result(&format!("Could not end the stream: {err}")),
    }
}

/// A tool without arguments.
fn tool(name: &str, description: &str) -> Value {
    json!({"name": name, "description": description, "inputSchema": {"type": "object", "properties": {}}})
}

fn text_result(text: &str) -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(text)])
}

fn error_result(text: &str) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(text)])
}

/// The id in `test://template/{id}/data`.
fn template_id(uri: &str) -> Option<&str> {
    let id = uri
        .strip_prefix("test://template/")?
        .strip_suffix("/data")?;
    (!id.is_empty() && !id.contains('/')).then_some(id)
}

fn known_resource(uri: &str) -> Result<(), ErrorData> {
    match uri {
        "test://static-text" | "test://static-binary" | "test://watched-resource" => Ok(()),
        _ if template_id(uri).is_some() => Ok(()),
        _ => Err(unknown_resource(uri)),
    }
}

fn unknown_resource(uri: &str) -> ErrorData {
    ErrorData::resource_not_found(format!("no resource {uri}"), Some(json!({ "uri": uri })))
}

fn string_argument<'a>(arguments: &'a JsonObject, name: &str) -> Result<&'a str, ErrorData> {
    arguments
        .get(name)
        .and_then(Value::as_str)
        .ok_or_else(|| ErrorData::invalid_params(format!("missing string argument `{name}`"), None))
}

/// Reads a value written as wire JSON into rmcp's type for it.
pub fn from_json<T: DeserializeOwned>(value: Value) -> Result<T, ErrorData> {
    serde_json::from_value(value).map_err(|err| ErrorData::internal_error(err.to_string(), None))
}
