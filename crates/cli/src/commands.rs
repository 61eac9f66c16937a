//! The subcommands: `tools`, `call` (and `demo`), `schema check`.

use std::io::{IsTerminal, Read};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use formwork_host::{ConnectOptions, Plugin, PluginTarget};
use serde_json::{Value, json};

use crate::answers::{AnswerSource, CliResponder};
use crate::{CallArgs, Outcome};

/// `formwork tools`: every tool of the plugin as one JSON array.
pub async fn tools(target: &PluginTarget) -> anyhow::Result<Outcome> {
    let responder = Arc::new(CliResponder::new(AnswerSource::Unavailable));
    let plugin =
        Plugin::connect(target, ConnectOptions::new(plugin_name(target), responder)).await?;
    let tools = plugin.list_tools().await;
    plugin.close().await;
    print_json(&Value::Array(tools?))?;
    Ok(Outcome::Success)
}

/// `formwork call` and `formwork demo`.
pub async fn call(
    target: &PluginTarget,
    tool: &str,
    args: &CallArgs,
    is_demo: bool,
) -> anyhow::Result<Outcome> {
    let arguments = match &args.args {
        Some(text) => {
            let value: Value = serde_json::from_str(text).context("--args is not valid JSON")?;
            anyhow::ensure!(value.is_object(), "--args must be a JSON object");
            Some(value)
        }
        None => None,
    };
    let source = answer_source(args, is_demo)?;
    let responder = Arc::new(CliResponder::new(source));
    let name = if is_demo {
        "demo".to_owned()
    } else {
        plugin_name(target)
    };
    let mut options = ConnectOptions::new(name, responder.clone());
    options.request_timeout = Duration::from_secs(args.timeout);
    let plugin = Plugin::connect(target, options).await?;
    let result = plugin.call_tool(tool, arguments).await;
    plugin.close().await;
    let result = result?;
    print_json(&result)?;
    Ok(if responder.failed() {
        Outcome::Failure
    } else if result.get("isError") == Some(&Value::Bool(true)) {
        Outcome::Negative
    } else {
        Outcome::Success
    })
}

fn answer_source(args: &CallArgs, is_demo: bool) -> anyhow::Result<AnswerSource> {
    if let Some(path) = &args.answers {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read --answers file {}", path.display()))?;
        let value: Value = serde_json::from_str(&text)
            .with_context(|| format!("--answers file {} is not valid JSON", path.display()))?;
        let Value::Array(items) = value else {
            anyhow::bail!("--answers file {} must hold a JSON array", path.display());
        };
        return Ok(AnswerSource::Script(items.into()));
    }
    if args.accept_defaults {
        return Ok(AnswerSource::Defaults);
    }
    if std::io::stdin().is_terminal() && std::io::stderr().is_terminal() {
        return Ok(AnswerSource::Terminal);
    }
    if is_demo {
        eprintln!("formwork: no terminal to ask on; the demo accepts every form with its defaults");
        return Ok(AnswerSource::Defaults);
    }
    Ok(AnswerSource::Unavailable)
}

/// `formwork schema check`: the render block, or the reason the schema is declined.
pub fn schema_check(file: Option<&Path>) -> anyhow::Result<Outcome> {
    let text = match file {
        Some(path) if path != Path::new("-") => std::fs::read_to_string(path)
            .with_context(|| format!("cannot read {}", path.display()))?,
        _ => {
            let mut text = String::new();
            std::io::stdin()
                .read_to_string(&mut text)
                .context("cannot read stdin")?;
            text
        }
    };
    let input: Value = serde_json::from_str(&text).context("the input is not valid JSON")?;
    // Whole elicitation/create params carry `requestedSchema`; anything else is a bare schema.
    let parsed = if input.get("requestedSchema").is_some() || input.get("mode").is_some() {
        formwork_forms::parse_request(&input).map(|request| match request {
            formwork_forms::ElicitationRequest::Form(request) => {
                serde_json::to_value(request.form.render(&request.message))
            }
            formwork_forms::ElicitationRequest::Url(request) => Ok(json!({
                "type": "url",
                "message": request.message,
                "url": request.url,
                "domain": request.domain,
                "elicitationId": request.elicitation_id,
            })),
        })
    } else {
        formwork_forms::parse_schema(&input).map(|form| serde_json::to_value(form.render("")))
    };
    match parsed {
        Ok(render) => {
            print_json(&render?)?;
            Ok(Outcome::Success)
        }
        Err(decline) => {
            print_json(&json!({"declined": {
                "property": decline.property,
                "rule": decline.rule.as_str(),
                "reason": decline.to_string(),
            }}))?;
            Ok(Outcome::Negative)
        }
    }
}

fn print_json(value: &Value) -> anyhow::Result<()> {
    println!("{}", serde_json::to_string_pretty(value)?);
    Ok(())
}

/// A short name for logs and prompts: the command's program name or the URL's host.
fn plugin_name(target: &PluginTarget) -> String {
    match target {
        PluginTarget::Command(command) => command
            .split_whitespace()
            .find(|word| {
                !word.contains('=')
                    && !matches!(
                        *word,
                        "npx" | "-y" | "node" | "python" | "python3" | "uv" | "run"
                    )
            })
            .map(|word| {
                word.trim_matches('\'')
                    .rsplit('/')
                    .next()
                    .unwrap_or(word)
                    .to_owned()
            })
            .unwrap_or_else(|| "plugin".to_owned()),
        PluginTarget::Url(url) => url_host(url).unwrap_or_else(|| "plugin".to_owned()),
    }
}

fn url_host(url: &str) -> Option<String> {
    let rest = url.split_once("://")?.1;
    let host = rest.split(['/', '?', '#']).next()?;
    Some(host.to_owned())
}
