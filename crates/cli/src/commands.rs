//! The subcommands: `tools`, `call` (and `demo`), `schema check`.

use std::io::{IsTerminal, Read};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use formwork_host::auth::Authorizer;
use formwork_host::config::{ApprovalMode, Config, ServerConfig};
use formwork_host::policy::{self, ApprovalNeed, ApprovalRequest};
use formwork_host::store::{Store, StoreUrl};
use formwork_host::{ClientExtensions, ConnectOptions, Plugin, PluginTarget};
use rmcp::model::ProtocolVersion;
use serde_json::{Value, json};

use crate::answers::{AnswerSource, CliResponder};
use crate::config_cmd::ConfigArgs;
use crate::{CallArgs, Choice, Outcome, Protocol};

/// The plugin a command talks to, resolved against the config.
struct Resolved {
    target: PluginTarget,
    name: String,
    /// A configured HTTP server's headers (`http_headers`, bearer token).
    http_headers: Vec<(String, String)>,
    /// A configured HTTP server's sign-in: the tokens `formwork login` stored.
    auth: Option<Arc<Authorizer>>,
    /// Whether the config's approval settings apply (a `--server`), or the person named the
    /// plugin on the command line and so asked for the call themselves.
    configured: bool,
    /// The protocol version to speak (`--protocol`, else `protocol_version`); `None`: auto.
    protocol: Option<ProtocolVersion>,
}

fn resolve(choice: Choice, protocol: Protocol, config: &Config) -> anyhow::Result<Resolved> {
    match choice {
        Choice::Adhoc(target) => Ok(Resolved {
            name: plugin_name(&target),
            target,
            http_headers: Vec::new(),
            auth: None,
            configured: false,
            protocol: protocol.flatten(),
        }),
        Choice::Configured(name) => {
            let server = configured_server(config, &name)?;
            let exe = std::env::current_exe().context("cannot find formwork's own path")?;
            let http_headers = server
                .transport
                .http_headers()
                .map_err(|reason| anyhow::anyhow!("server `{name}`: {reason}"))?;
            let target = formwork_host::server_target(&server.transport, Some(&exe));
            let auth = match &target {
                PluginTarget::Url(url) => {
                    let store = Store::default_data_dir()
                        .ok()
                        .map(|dir| formwork_host::token_store(config, &dir));
                    let auth = formwork_host::authorizer_for(config, &name, url, store, None)
                        .map_err(|reason| anyhow::anyhow!("server `{name}`: {reason}"))?;
                    Some(auth)
                }
                PluginTarget::Command { .. } => None,
            };
            Ok(Resolved {
                target,
                http_headers,
                auth,
                name,
                configured: true,
                protocol: protocol.unwrap_or_else(|| server.protocol_version.clone()),
            })
        }
    }
}

/// The configured server `name`, or an error that says where to add it.
pub(crate) fn configured_server<'a>(
    config: &'a Config,
    name: &str,
) -> anyhow::Result<&'a ServerConfig> {
    config.server(name).with_context(|| {
        format!(
            "no server `{name}` in {} (add [mcp_servers.{name}])",
            config.describe_files()
        )
    })
}

/// The tool arguments given with `--args`: a JSON object.
pub(crate) fn tool_arguments(text: Option<&str>) -> anyhow::Result<Option<Value>> {
    let Some(text) = text else {
        return Ok(None);
    };
    let value: Value = serde_json::from_str(text).context("--args is not valid JSON")?;
    anyhow::ensure!(value.is_object(), "--args must be a JSON object");
    Ok(Some(value))
}

/// `formwork tools`: every tool of the plugin as one JSON array.
pub async fn tools(
    choice: Choice,
    protocol: Protocol,
    config: &ConfigArgs,
) -> anyhow::Result<Outcome> {
    let config = config.load()?;
    let resolved = resolve(choice, protocol, &config)?;
    let responder = Arc::new(CliResponder::new(
        AnswerSource::Unavailable,
        None,
        config.forms,
    ));
    let mut options = ConnectOptions::new(resolved.name, responder);
    options.http_headers = resolved.http_headers;
    options.auth = resolved.auth;
    options.protocol = resolved.protocol;
    options.extensions = ClientExtensions {
        openai_elicitation: config.features.openai_elicitation,
        mcp_apps: false,
    };
    let plugin = Plugin::connect(&resolved.target, options).await?;
    let tools = plugin.list_tools().await;
    plugin.close().await;
    let tools = tools?;
    if crate::human::for_people() {
        print!("{}", crate::human::tools_table(&tools));
    } else {
        print_json(&Value::Array(tools))?;
    }
    Ok(Outcome::Success)
}

/// `formwork call` and `formwork demo`.
pub async fn call(
    choice: Choice,
    protocol: Protocol,
    tool: &str,
    args: &CallArgs,
    config: &ConfigArgs,
    is_demo: bool,
) -> anyhow::Result<Outcome> {
    let config = config.load()?;
    let store = args.store.named(&config)?;
    if let Some(url) = store {
        return stored(config, &url, choice, protocol, tool, args, is_demo).await;
    }
    let resolved = resolve(choice, protocol, &config)?;
    let arguments = tool_arguments(args.args.as_deref())?;
    let source = answer_source(args.answers.as_deref(), args.accept_defaults, is_demo)?;
    let gate = policy::elicitation_gate(&config)
        .err()
        .map(|declined| declined.to_string());
    let responder = Arc::new(CliResponder::new(source, gate, config.forms));
    let mut options = ConnectOptions::new(resolved.name.clone(), responder.clone());
    options.request_timeout = Duration::from_secs(args.timeout);
    options.http_headers = resolved.http_headers.clone();
    options.auth = resolved.auth.clone();
    options.protocol = resolved.protocol.clone();
    options.extensions = ClientExtensions {
        openai_elicitation: config.features.openai_elicitation,
        mcp_apps: false,
    };
    let plugin = Plugin::connect(&resolved.target, options).await?;
    let era = plugin.server_info().era;
    let result = match approve(
        &plugin,
        &resolved,
        &config,
        tool,
        arguments.as_ref(),
        &responder,
    )
    .await
    {
        Ok(()) => plugin.call_tool(tool, arguments).await.map_err(|err| {
            let failure = err.to_string();
            match formwork_host::push_refusal(era, &failure) {
                Some(_) => {
                    anyhow::anyhow!(
                        "{failure}; {}",
                        formwork_host::push_fix(&resolved.name, resolved.configured)
                    )
                }
                None => err.into(),
            }
        }),
        Err(err) => Err(err),
    };
    plugin.close().await;
    let result = result?;
    if formwork_host::push_refusal_in_result(era, &result).is_some() {
        eprintln!(
            "formwork: {}",
            formwork_host::push_fix(&resolved.name, resolved.configured)
        );
    }
    print_call_result(&result)?;
    Ok(if responder.failed() {
        Outcome::Failure
    } else if result.get("isError") == Some(&Value::Bool(true)) {
        Outcome::Negative
    } else {
        Outcome::Success
    })
}

/// `formwork call --store`: the call in a session of the host, kept in the store. The session
/// applies the config's policy; the session layer (not this command) stores every step.
async fn stored(
    config: Config,
    url: &StoreUrl,
    choice: Choice,
    protocol: Protocol,
    tool: &str,
    args: &CallArgs,
    is_demo: bool,
) -> anyhow::Result<Outcome> {
    let Choice::Configured(server) = choice else {
        anyhow::bail!(
            "--store keeps a call as a session, which needs a configured server: use --server NAME"
        );
    };
    if protocol.is_some() {
        anyhow::bail!("--protocol does not go with --store: set the server's protocol_version");
    }
    let arguments = tool_arguments(args.args.as_deref())?;
    let source = answer_source(args.answers.as_deref(), args.accept_defaults, is_demo)?;
    // The session applies the elicitation gate and the form limits; the responder only answers.
    let responder = CliResponder::new(source, None, config.forms);
    let outcome =
        crate::stored_call::call(config, url, &server, tool, arguments, &responder).await?;
    Ok(if responder.failed() {
        Outcome::Failure
    } else {
        outcome
    })
}

/// Prints a `CallToolResult`: for people as text, else as JSON.
pub(crate) fn print_call_result(result: &Value) -> anyhow::Result<()> {
    if crate::human::for_people() {
        print!("{}", crate::human::call_result(result));
        Ok(())
    } else {
        print_json(result)
    }
}

/// Applies the config's approval settings to a call of a configured server: runs it, asks
/// the person with an approval card, or refuses it.
async fn approve(
    plugin: &Plugin,
    resolved: &Resolved,
    config: &Config,
    tool: &str,
    arguments: Option<&Value>,
    responder: &CliResponder,
) -> anyhow::Result<()> {
    if !resolved.configured {
        return Ok(());
    }
    // The tool's annotations matter unless the mode approves every call anyway.
    let (mode, _) = policy::approval_mode(config, &resolved.name, tool);
    let listed = if mode == ApprovalMode::Approve {
        Value::Null
    } else {
        plugin.listed_tool(tool).await?
    };
    let verdict = policy::tool_approval(config, &resolved.name, tool, listed.get("annotations"));
    tracing::info!(target: "formwork::policy", marker = "policy-decision", server = %resolved.name, tool, reason = %verdict.reason, "tool approval");
    let request = ApprovalRequest {
        call_id: "cli",
        tool_title: listed.get("title").and_then(Value::as_str),
        tool_description: listed.get("description").and_then(Value::as_str),
        arguments,
    };
    match (&verdict.need, verdict.card(&request)) {
        (ApprovalNeed::Fail(message), _) => anyhow::bail!("{message}"),
        (ApprovalNeed::Card(_), Some(card)) => {
            let answer = responder.approve(&card).await;
            tracing::info!(target: "formwork::policy", marker = "approval-answer", reason = %answer.reason, "approval answered");
            if let Some(message) = answer.failure_message() {
                anyhow::bail!("{message}");
            }
            // The card offers Always allow only when there is a file to write it into.
            if answer.writes_config()
                && let Some(path) = config.remember_file(&resolved.name)
            {
                formwork_host::config::remember_always_allow(&path, &resolved.name, tool)?;
                eprintln!(
                    "formwork: always allowed: wrote the tool's approval_mode to {}",
                    path.display()
                );
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// Where the answers of a command's forms come from: `--answers FILE`, `--accept-defaults`,
/// the terminal, else nowhere (the demo then accepts its defaults).
pub(crate) fn answer_source(
    answers: Option<&Path>,
    accept_defaults: bool,
    is_demo: bool,
) -> anyhow::Result<AnswerSource> {
    if let Some(path) = answers {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read --answers file {}", path.display()))?;
        let value: Value = serde_json::from_str(&text)
            .with_context(|| format!("--answers file {} is not valid JSON", path.display()))?;
        let Value::Array(items) = value else {
            anyhow::bail!("--answers file {} must hold a JSON array", path.display());
        };
        return Ok(AnswerSource::Script(items.into()));
    }
    if accept_defaults {
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
/// `openai_elicitation`: read it as `features.openai_elicitation` would.
pub fn schema_check(file: Option<&Path>, openai_elicitation: bool) -> anyhow::Result<Outcome> {
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
    // Whole elicitation/create params carry `requestedSchema`; anything else is a bare schema,
    // read as the params of a form with no message.
    let options = formwork_forms::ParseOptions { openai_elicitation };
    let whole = input.get("requestedSchema").is_some() || input.get("mode").is_some();
    let params = match whole {
        true => input,
        false => json!({"message": "", "requestedSchema": input}),
    };
    let parsed = {
        formwork_forms::parse_request_with(&params, options).map(|request| match request {
            formwork_forms::ElicitationRequest::Form(request) => {
                serde_json::to_value(&request.render)
            }
            formwork_forms::ElicitationRequest::Url(request) => Ok(json!({
                "type": "url",
                "message": request.message,
                "url": request.url,
                "domain": request.domain,
                "elicitationId": request.elicitation_id,
            })),
        })
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
    const LAUNCHERS: [&str; 7] = ["npx", "-y", "node", "python", "python3", "uv", "run"];
    match target {
        PluginTarget::Command { line, .. } => line
            .split_whitespace()
            .map(|word| word.trim_matches(|c| c == '\'' || c == '"'))
            .map(|word| word.rsplit('/').next().unwrap_or(word))
            .find(|word| !word.contains('=') && !LAUNCHERS.contains(word))
            .map(str::to_owned)
            .unwrap_or_else(|| "plugin".to_owned()),
        PluginTarget::Url(url) => url_host(url).unwrap_or_else(|| "plugin".to_owned()),
    }
}

fn url_host(url: &str) -> Option<String> {
    let rest = url.split_once("://")?.1;
    let host = rest.split(['/', '?', '#']).next()?;
    Some(host.to_owned())
}
