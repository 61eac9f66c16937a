//! The bundled demo plugin, an MCP server on stdio written with rmcp.
//!
//! `formwork demo` starts this binary again as `formwork demo-plugin` and calls its tools, so
//! a newcomer sees the whole form path with nothing installed. Its tools show each kind of field.

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ElicitRequestParams, ElicitResult,
    ElicitationAction, ListToolsResult, PaginatedRequestParams, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Value, json};

/// Serves the demo plugin on stdin/stdout until the host closes the connection.
pub async fn serve() -> anyhow::Result<()> {
    let service = DemoPlugin.serve(rmcp::transport::stdio()).await?;
    service.waiting().await?;
    Ok(())
}

struct DemoPlugin;

impl ServerHandler for DemoPlugin {
    fn get_info(&self) -> ServerConfig {
        let info = json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "formwork-demo", "version": env!("CARGO_PKG_VERSION")},
            "instructions": "A demo plugin whose tools ask the person through forms.",
        });
        serde_json::from_value(info).unwrap_or_default()
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let tools = json!({"tools": [
            {
                "name": "deploy",
                "description": "Deploy a service; asks where and how, and confirms production.",
                "inputSchema": {"type": "object", "properties": {
                    "service": {"type": "string", "description": "The service to deploy", "default": "web"}
                }},
            },
            {
                "name": "pick_color",
                "description": "Asks for one color: a single question that submits on click.",
                "inputSchema": {"type": "object", "properties": {}},
            },
        ]});
        serde_json::from_value(tools)
            .map_err(|err| ErrorData::internal_error(err.to_string(), None))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let text = match request.name.as_ref() {
            "deploy" => {
                let service = request
                    .arguments
                    .as_ref()
                    .and_then(|arguments| arguments.get("service"))
                    .and_then(Value::as_str)
                    .unwrap_or("web")
                    .to_owned();
                deploy(&context, &service).await?
            }
            "pick_color" => pick_color(&context).await?,
            other => {
                return Err(ErrorData::invalid_params(
                    format!("unknown tool `{other}`"),
                    None,
                ));
            }
        };
        Ok(CallToolResult::success(vec![rmcp::model::ContentBlock::text(text)]).into())
    }
}

async fn deploy(context: &RequestContext<RoleServer>, service: &str) -> Result<String, ErrorData> {
    let plan = ask(
        context,
        &format!("How should `{service}` be deployed?"),
        json!({
            "type": "object",
            "properties": {
                "target": {
                    "type": "string", "title": "Target",
                    "description": "Where the new version goes.",
                    "oneOf": [
                        {"const": "staging", "title": "Staging"},
                        {"const": "production", "title": "Production"}
                    ],
                    "default": "staging"
                },
                "replicas": {
                    "type": "integer", "title": "Replicas",
                    "description": "How many instances to run.",
                    "minimum": 1, "maximum": 10, "default": 2
                },
                "channels": {
                    "type": "array", "title": "Notify",
                    "description": "Who hears about it.",
                    "items": {"anyOf": [
                        {"const": "email", "title": "Email"},
                        {"const": "chat", "title": "Team chat"},
                        {"const": "pager", "title": "Pager"}
                    ]},
                    "maxItems": 2, "default": ["email"]
                },
                "note": {
                    "type": "string", "title": "Release note",
                    "description": "One line for the changelog (optional).",
                    "maxLength": 200
                }
            },
            "required": ["target", "replicas"]
        }),
    )
    .await?;
    let content = match plan {
        Answer::Accepted(content) => content,
        Answer::Refused(action) => {
            return Ok(format!(
                "Deployment of {service} stopped: the form was {action}."
            ));
        }
    };
    let target = content
        .get("target")
        .and_then(Value::as_str)
        .unwrap_or("staging")
        .to_owned();
    let replicas = content.get("replicas").and_then(Value::as_i64).unwrap_or(1);
    if target == "production" {
        let confirmation = ask(
            context,
            &format!("Deploy `{service}` to production now?"),
            json!({"type": "object", "properties": {
                "confirm": {"type": "boolean", "title": "Confirm",
                            "description": "Production serves real users.", "default": false}
            }, "required": ["confirm"]}),
        )
        .await?;
        let confirmed = matches!(&confirmation, Answer::Accepted(c) if c.get("confirm") == Some(&Value::Bool(true)));
        if !confirmed {
            return Ok(format!(
                "Deployment of {service} to production was not confirmed."
            ));
        }
    }
    let channels = content
        .get("channels")
        .and_then(Value::as_array)
        .map(|channels| {
            channels
                .iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(", ")
        })
        .unwrap_or_default();
    let note = content.get("note").and_then(Value::as_str).unwrap_or("");
    Ok(format!(
        "Deployed {service} to {target} with {replicas} replica(s); notified: {}; note: {}. Content received: {}",
        if channels.is_empty() {
            "nobody"
        } else {
            &channels
        },
        if note.is_empty() { "none" } else { note },
        Value::Object(content.clone()),
    ))
}

async fn pick_color(context: &RequestContext<RoleServer>) -> Result<String, ErrorData> {
    let answer = ask(
        context,
        "Pick a color",
        json!({"type": "object", "properties": {
            "color": {"type": "string", "title": "Color", "enum": ["red", "green", "blue"]}
        }, "required": ["color"]}),
    )
    .await?;
    Ok(match answer {
        Answer::Accepted(content) => format!(
            "You picked {}.",
            content.get("color").cloned().unwrap_or(Value::Null)
        ),
        Answer::Refused(action) => format!("No color: the form was {action}."),
    })
}

enum Answer {
    Accepted(serde_json::Map<String, Value>),
    Refused(&'static str),
}

async fn ask(
    context: &RequestContext<RoleServer>,
    message: &str,
    schema: Value,
) -> Result<Answer, ErrorData> {
    let params: ElicitRequestParams = serde_json::from_value(json!({
        "mode": "form",
        "message": message,
        "requestedSchema": schema,
    }))
    .map_err(|err| ErrorData::internal_error(format!("demo schema: {err}"), None))?;
    let result: ElicitResult = context
        .peer
        .create_elicitation(params)
        .await
        .map_err(|err| ErrorData::internal_error(format!("elicitation failed: {err}"), None))?;
    Ok(match result.action {
        ElicitationAction::Accept => Answer::Accepted(match result.content {
            Some(Value::Object(content)) => content,
            _ => serde_json::Map::new(),
        }),
        ElicitationAction::Decline => Answer::Refused("declined"),
        _ => Answer::Refused("cancelled"),
    })
}
