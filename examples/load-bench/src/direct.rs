//! The direct baseline of the MCP Apps part of `cargo xtask bench` (`tests/browser/bench.mjs`):
//! the host's own `tools/call` round trip to a stdio plugin, through the code an app's bridge call
//! ends in ([`Plugin::call_tool`] on a connection that declares MCP Apps), with no page, socket
//! or relay in between.
//!
//! usage: load-bench --direct-calls <shell command> <tool> <arguments JSON> <count>
//!
//! It prints `{"ms":[...]}`: each call's duration in milliseconds, from handing the request to
//! the connection to having its result, one call after the other.

use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, bail};
use formwork_host::{
    BoxFuture, ClientExtensions, ConnectOptions, FormPrompt, FormReply, FormResponder, Plugin,
    PluginTarget,
};
use serde_json::{Value, json};

/// The bench's tools ask for no forms; one that came would be cancelled.
struct NoForms;

impl FormResponder for NoForms {
    fn respond(&self, _prompt: FormPrompt) -> BoxFuture<FormReply> {
        Box::pin(async { FormReply::cancel() })
    }
}

pub async fn calls(command: &str, tool: &str, arguments: &str, count: usize) -> anyhow::Result<()> {
    let arguments: Value =
        serde_json::from_str(arguments).with_context(|| format!("arguments {arguments}"))?;
    let mut options = ConnectOptions::new("direct", Arc::new(NoForms));
    options.extensions = ClientExtensions {
        mcp_apps: true,
        ..ClientExtensions::default()
    };
    let plugin = Plugin::connect(&PluginTarget::command(command.to_owned()), options).await?;
    let mut ms = Vec::with_capacity(count);
    for i in 0..count {
        let started = Instant::now();
        let result = plugin.call_tool(tool, Some(arguments.clone())).await?;
        ms.push(started.elapsed().as_secs_f64() * 1e3);
        if result.get("isError") == Some(&Value::Bool(true)) {
            bail!("call {}: {result}", i + 1);
        }
    }
    println!("{}", json!({ "ms": ms }));
    Ok(())
}
