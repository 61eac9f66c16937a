//! The bundled demo plugin, an MCP server on stdio written with rmcp and formwork-sdk.
//!
//! `formwork demo` starts this binary again as `formwork demo-plugin` and calls its tools, so
//! a newcomer sees the whole form path with nothing installed. Its own tools show each kind of
//! core field; the tools of `examples/form-examples` are served next to them. formwork-sdk asks
//! in both protocol eras: pushed `elicitation/create` on 2025-11-25, `input_required` rounds on
//! 2026-07-28.

use form_examples::Example;
use formwork_sdk::{Ask, Asker, Elicit, Forms, StateKey};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
    PaginatedRequestParams, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// Serves the demo plugin on stdin/stdout until the host closes the connection.
pub async fn serve() -> anyhow::Result<()> {
    // A stdio plugin only ever receives its own retries: a key of its own process is enough.
    let plugin = DemoPlugin {
        forms: Forms::new(StateKey::random()),
    };
    let service = plugin.serve(rmcp::transport::stdio()).await?;
    service.waiting().await?;
    Ok(())
}

struct DemoPlugin {
    forms: Forms,
}

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
        let tools = json!([
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
        ]);
        let mut tools: Vec<rmcp::model::Tool> = serde_json::from_value(tools)
            .map_err(|err| ErrorData::internal_error(err.to_string(), None))?;
        tools.extend(form_examples::tools(&Example::ALL)?);
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        match request.name.as_ref() {
            "deploy" => {
                let service = request
                    .arguments
                    .as_ref()
                    .and_then(|arguments| arguments.get("service"))
                    .and_then(Value::as_str)
                    .unwrap_or("web")
                    .to_owned();
                self.forms
                    .run(&request, &context, |ask| deploy(ask, service))
                    .await
            }
            "pick_color" => self.forms.run(&request, &context, pick_color).await,
            other => match form_examples::call(&self.forms, &request, &context).await {
                Some(response) => response,
                None => Err(ErrorData::invalid_params(
                    format!("unknown tool `{other}`"),
                    None,
                )),
            },
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Target {
    #[schemars(title = "Staging")]
    Staging,
    #[schemars(title = "Production")]
    Production,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Channel {
    #[schemars(title = "Email")]
    Email,
    #[schemars(title = "Team chat")]
    Chat,
    #[schemars(title = "Pager")]
    Pager,
}

fn email_only() -> Vec<Channel> {
    vec![Channel::Email]
}

/// The deploy form. `target` and `replicas` are required and still carry defaults (`extend`, not
/// `#[serde(default)]`, which would make them optional).
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
struct Plan {
    #[schemars(
        title = "Target",
        description = "Where the new version goes.",
        extend("default" = "staging")
    )]
    target: Target,
    #[schemars(
        title = "Replicas",
        description = "How many instances to run.",
        range(min = 1, max = 10),
        extend("default" = 2)
    )]
    replicas: u32,
    #[serde(default = "email_only")]
    #[schemars(title = "Notify", description = "Who hears about it.", length(max = 2))]
    channels: Vec<Channel>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(
        title = "Release note",
        description = "One line for the changelog (optional).",
        length(max = 200)
    )]
    note: Option<String>,
}

impl Elicit for Plan {}

#[derive(Debug, Deserialize, JsonSchema)]
struct Confirmation {
    #[schemars(
        title = "Confirm",
        description = "Production serves real users.",
        extend("default" = false)
    )]
    confirm: bool,
}

impl Elicit for Confirmation {}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Color {
    Red,
    Green,
    Blue,
}

#[derive(Debug, Deserialize, JsonSchema)]
struct ColorChoice {
    #[schemars(title = "Color")]
    color: Color,
}

impl Elicit for ColorChoice {}

fn text(text: String) -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(text)])
}

/// The accepted answer, or why there is none (for the tool's reply).
fn answered<T>(outcome: Ask<T>) -> Result<T, String> {
    match outcome {
        Ask::Accepted(answer) => Ok(answer),
        Ask::Declined => Err("the form was declined".to_owned()),
        Ask::Cancelled => Err("the form was cancelled".to_owned()),
        Ask::NotSupported => Err("this client shows no forms".to_owned()),
        Ask::Invalid(reason) => Err(format!("the answer did not fit: {reason}")),
    }
}

async fn deploy(ask: Asker, service: String) -> Result<CallToolResult, ErrorData> {
    let asked = ask
        .ask::<Plan>(&format!("How should `{service}` be deployed?"))
        .await?;
    let plan = match answered(asked) {
        Ok(plan) => plan,
        Err(why) => return Ok(text(format!("Deployment of {service} stopped: {why}."))),
    };
    if plan.target == Target::Production {
        let confirmation = ask
            .ask::<Confirmation>(&format!("Deploy `{service}` to production now?"))
            .await?;
        if !matches!(confirmation, Ask::Accepted(Confirmation { confirm: true })) {
            return Ok(text(format!(
                "Deployment of {service} to production was not confirmed."
            )));
        }
    }
    let target = serde_json::to_value(plan.target).unwrap_or(Value::Null);
    let channels: Vec<Value> = plan
        .channels
        .iter()
        .filter_map(|channel| serde_json::to_value(channel).ok())
        .collect();
    let channels: Vec<&str> = channels.iter().filter_map(Value::as_str).collect();
    let note = plan.note.as_deref().unwrap_or("");
    Ok(text(format!(
        "Deployed {service} to {} with {} replica(s); notified: {}; note: {}. Content received: {}",
        target.as_str().unwrap_or_default(),
        plan.replicas,
        if channels.is_empty() {
            "nobody".to_owned()
        } else {
            channels.join(", ")
        },
        if note.is_empty() { "none" } else { note },
        serde_json::to_value(&plan).unwrap_or(Value::Null),
    )))
}

async fn pick_color(ask: Asker) -> Result<CallToolResult, ErrorData> {
    Ok(text(
        match answered(ask.ask::<ColorChoice>("Pick a color").await?) {
            Ok(choice) => format!(
                "You picked {}.",
                serde_json::to_value(choice.color).unwrap_or(Value::Null)
            ),
            Err(why) => format!("No color: {why}."),
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The deploy form as the demo always sent it: the same fields, order, titles and defaults.
    #[test]
    fn the_deploy_form_keeps_its_fields_and_defaults() {
        assert_eq!(
            Plan::form().map(|form| form.to_value().to_string()),
            Ok(json!({
                "type": "object",
                "properties": {
                    "target": {"type": "string", "title": "Target", "description": "Where the new version goes.",
                               "oneOf": [{"const": "staging", "title": "Staging"}, {"const": "production", "title": "Production"}],
                               "default": "staging"},
                    "replicas": {"type": "integer", "title": "Replicas", "description": "How many instances to run.",
                                 "minimum": 1, "maximum": 10, "default": 2},
                    "channels": {"type": "array", "title": "Notify", "description": "Who hears about it.",
                                 "maxItems": 2,
                                 "items": {"anyOf": [{"const": "email", "title": "Email"}, {"const": "chat", "title": "Team chat"},
                                                     {"const": "pager", "title": "Pager"}]},
                                 "default": ["email"]},
                    "note": {"type": "string", "title": "Release note", "description": "One line for the changelog (optional).",
                             "maxLength": 200}
                },
                "required": ["target", "replicas"]
            })
            .to_string())
        );
    }
}
