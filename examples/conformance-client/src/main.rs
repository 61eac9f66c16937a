//! A minimal MCP client over Streamable HTTP, built on `formwork-host`, for the official
//! conformance suite's client scenarios: `conformance client --command conformance-client`.
//!
//! The suite starts a test server and runs this binary with the server URL as the last
//! argument. The client connects, lists the tools, calls each one, and accepts every form with
//! its defaults (the `elicitation-sep1034-client-defaults` scenario checks exactly that).

use std::sync::Arc;

use formwork_host::{
    BoxFuture, ConnectOptions, ElicitationRequest, FormPrompt, FormReply, FormResponder, Plugin,
    PluginTarget,
};
use serde_json::{Value, json};

/// Accepts every form with its defaults, and every URL request.
struct AcceptDefaults;

impl FormResponder for AcceptDefaults {
    fn respond(&self, prompt: FormPrompt) -> BoxFuture<FormReply> {
        let reply = match (&prompt.request, prompt.request.form()) {
            (ElicitationRequest::Url(_), _) => FormReply::accept_url(),
            (ElicitationRequest::Form(_), None) => FormReply::cancel(),
            (ElicitationRequest::Form(_), Some(form)) => match form.default_content() {
                Ok(content) => FormReply::accept(content),
                Err(errors) => {
                    eprintln!("conformance-client: cannot accept with defaults: {errors}");
                    FormReply::cancel()
                }
            },
        };
        Box::pin(async move { reply })
    }
}

/// Arguments for the tools the suite's scenarios expose.
fn arguments_for(tool: &str) -> Value {
    match tool {
        "add_numbers" => json!({"a": 2, "b": 3}),
        _ => json!({}),
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .init();
    let url = std::env::args()
        .next_back()
        .filter(|arg| arg.starts_with("http"))
        .ok_or_else(|| anyhow::anyhow!("usage: conformance-client <server url>"))?;
    let mut options = ConnectOptions::new("conformance", Arc::new(AcceptDefaults));
    options.client_info = (
        "formwork-conformance-client".to_owned(),
        env!("CARGO_PKG_VERSION").to_owned(),
    );
    let plugin = Plugin::connect(&PluginTarget::Url(url), options).await?;
    let tools = plugin.list_tools().await?;
    for tool in &tools {
        let Some(name) = tool.get("name").and_then(Value::as_str) else {
            continue;
        };
        let result = plugin.call_tool(name, Some(arguments_for(name))).await?;
        println!("{name}: {result}");
    }
    plugin.close().await;
    Ok(())
}
