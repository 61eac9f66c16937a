//! `formwork call --store` and `formwork demo --store`: the call made in a session of the host,
//! as the workbench's tool palette makes it, so the store keeps it like any session: the
//! invocation, its forms and its approval card, each answer committed before it reaches the
//! plugin. The forms are answered as `formwork call` answers them (`CliResponder`).

use anyhow::Context;
use formwork_host::config::Config;
use formwork_host::store::{Store, StoreUrl};
use formwork_host::{Command, Event, Host, HostOptions};
use serde_json::Value;
use tokio::sync::broadcast::error::RecvError;

use crate::Outcome;
use crate::answers::CliResponder;
use crate::terminal::{inert, inert_message};

/// Calls `server`'s `tool` in a new session kept in the store at `url`, and prints its result
/// as `formwork call` does.
pub async fn call(
    config: Config,
    url: &StoreUrl,
    server: &str,
    tool: &str,
    arguments: Option<Value>,
    responder: &CliResponder,
) -> anyhow::Result<Outcome> {
    let data_dir = Store::default_data_dir()?;
    let store = crate::store_args::connect(url, &data_dir, &config).await?;
    let options = HostOptions {
        builtin_exe: Some(std::env::current_exe().context("cannot find formwork's own path")?),
        // The terminal shows no apps, so plugins are not told it does.
        shows_apps: false,
        ..HostOptions::default()
    };
    let host = Host::with_store(config, options, store).await?;
    let outcome = call_in_session(&host, responder, server, tool, arguments).await;
    // Stores what is still queued before the process ends.
    host.shutdown().await;
    outcome
}

async fn call_in_session(
    host: &Host,
    responder: &CliResponder,
    server: &str,
    tool: &str,
    arguments: Option<Value>,
) -> anyhow::Result<Outcome> {
    let session = host.create_session();
    let _ui = host.attach_ui(&session)?;
    let (_, mut events) = host.subscribe(&session)?;
    host.command(
        &session,
        Command::CallTool {
            server: server.to_owned(),
            tool: tool.to_owned(),
            arguments,
        },
    )?;
    loop {
        let event = match events.recv().await {
            Ok(event) => event,
            Err(RecvError::Lagged(_)) => continue,
            Err(RecvError::Closed) => anyhow::bail!("the session ended before the call did"),
        };
        match event.as_ref() {
            Event::FormRequested { waiting: false, .. }
            | Event::ApprovalRequested { waiting: false, .. }
            | Event::FormShown { .. } => {
                crate::chat_cmd::answer_shown(host, &session, responder).await;
            }
            Event::Diagnostic { code, message } => {
                eprintln!("formwork: {}: {}", inert(code), inert_message(message));
            }
            Event::ToolCallFinished { result, error, .. } => {
                return match (result, error) {
                    (Some(result), _) => {
                        crate::commands::print_call_result(result)?;
                        Ok(if result.get("isError") == Some(&Value::Bool(true)) {
                            Outcome::Negative
                        } else {
                            Outcome::Success
                        })
                    }
                    (None, Some(error)) => anyhow::bail!("{}", inert_message(error)),
                    (None, None) => anyhow::bail!("the call ended without a result"),
                };
            }
            _ => {}
        }
    }
}
