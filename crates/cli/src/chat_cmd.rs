//! `formwork chat`: one message to the model, in the terminal. The same loop as the workbench
//! (`formwork_host`'s model turn): the model's text streams to stdout; its tool calls, their
//! forms and approval cards are asked on the terminal, or answered from `--answers` or
//! `--accept-defaults`, exactly as `formwork call` answers them; notes go to stderr.
//!
//! With `--store` (or `[store] url`) the conversation is kept there like a workbench session;
//! without, nothing is kept.
//!
//! Exit codes are those of `formwork call`: 0 when the turn completed; 1 when it completed but
//! a tool reported an error; 2 when the model failed, the turn was stopped, or a scripted answer
//! could not be given.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use formwork_host::{
    CardAsks, Command, Event, FormAction, FormAnswer, FormPrompt, FormResponder, Host, HostOptions,
    Role, TurnEndReason,
};
use serde_json::Value;
use tokio::sync::broadcast::error::RecvError;
use tokio_util::sync::CancellationToken;

use crate::Outcome;
use crate::answers::CliResponder;
use crate::config_cmd::ConfigArgs;
use crate::runtime::RuntimeArgs;
use crate::store_args::StoreArgs;
use crate::terminal::{inert, inert_message, inert_text};

/// Send one message to the model and let it use the plugins' tools.
#[derive(Args, Debug)]
pub struct ChatArgs {
    #[command(flatten)]
    pub config: ConfigArgs,
    /// Offer the model only this server's tools (repeat for more); default: every enabled
    /// server.
    #[arg(long = "server", value_name = "NAME")]
    pub servers: Vec<String>,
    /// The model provider: `openai`, `oss` or the ID of a [model_providers.ID] table
    /// (overrides `model_provider`).
    #[arg(long, value_name = "ID")]
    pub model_provider: Option<String>,
    /// The model's name at its provider (overrides `model`).
    #[arg(long, value_name = "NAME")]
    pub model: Option<String>,
    /// A JSON array of answers, consumed one element per form or approval card.
    #[arg(long, value_name = "FILE", conflicts_with = "accept_defaults")]
    pub answers: Option<PathBuf>,
    /// Accept every form with its defaults.
    #[arg(long)]
    pub accept_defaults: bool,
    #[command(flatten)]
    pub runtime: RuntimeArgs,
    /// Keep the conversation in this store (default: `[store] url`, else nothing is kept).
    #[command(flatten)]
    pub store: StoreArgs,
    /// The message.
    pub message: String,
}

pub async fn run(args: &ChatArgs) -> anyhow::Result<Outcome> {
    let mut config = args.config.load()?;
    let codex = args.runtime.runtime(&config) == formwork_host::config::Runtime::Codex;
    let choice = config.model_choice(args.model_provider.as_deref(), args.model.as_deref())?;
    if choice.is_none() && !codex {
        anyhow::bail!(
            "no model is configured: set `model_provider` and `model` in formwork.toml, or pass \
             --model-provider ID --model NAME (docs/cli.md, \"Model providers\")"
        );
    }
    let codex = if codex {
        let data_dir = formwork_host::store::Store::default_data_dir()?;
        Some(crate::runtime::codex_options(&config, &data_dir)?)
    } else {
        None
    };
    for name in &args.servers {
        if !config.server(name).is_some_and(|server| server.enabled) {
            anyhow::bail!("no enabled server `{name}` is configured");
        }
    }
    if !args.servers.is_empty() {
        for (name, server) in config.mcp_servers.iter_mut() {
            server.enabled &= args.servers.contains(name);
        }
    }
    let source =
        crate::commands::answer_source(args.answers.as_deref(), args.accept_defaults, false)?;
    // The session applies the approval policy and the form limits; the responder only answers.
    let responder = CliResponder::new(source, None, config.forms);
    let options = HostOptions {
        builtin_exe: Some(std::env::current_exe().context("cannot find formwork's own path")?),
        model: choice,
        codex,
        // The terminal shows no apps, so plugins are not told it does.
        shows_apps: false,
        ..HostOptions::default()
    };
    let host = match args.store.named(&config)? {
        Some(url) => {
            let data_dir = formwork_host::store::Store::default_data_dir()?;
            let store = crate::store_args::connect(&url, &data_dir, &config).await?;
            Host::with_store(config, options, store).await?
        }
        None => Host::new(config, options),
    };
    let outcome = converse(&host, &responder, &args.message).await;
    host.shutdown().await;
    let outcome = outcome?;
    Ok(if responder.failed() {
        Outcome::Failure
    } else {
        outcome
    })
}

async fn converse(host: &Host, responder: &CliResponder, message: &str) -> anyhow::Result<Outcome> {
    let session = host.create_session();
    let _ui = host.attach_ui(&session)?;
    let (_, mut events) = host.subscribe(&session)?;
    host.command(
        &session,
        Command::SendMessage {
            text: message.to_owned(),
        },
    )?;
    let mut stdout = std::io::stdout();
    let mut mid_line = false;
    let mut tool_error = false;
    loop {
        let event = match events.recv().await {
            Ok(event) => event,
            // Only deltas can be missed this way; the whole message follows them.
            Err(RecvError::Lagged(_)) => continue,
            Err(RecvError::Closed) => anyhow::bail!("the session ended before its turn did"),
        };
        let end_line = |mid_line: &mut bool| {
            if std::mem::take(mid_line) {
                println!();
            }
        };
        match event.as_ref() {
            Event::MessageDelta { delta, .. } => {
                print!("{}", inert_text(delta));
                stdout.flush()?;
                mid_line = true;
            }
            Event::MessageAdded {
                role: Role::Assistant,
                text,
            } => {
                if mid_line {
                    end_line(&mut mid_line);
                } else {
                    println!("{}", inert_text(text));
                }
            }
            Event::ToolCallStarted { server, tool, .. } => {
                end_line(&mut mid_line);
                eprintln!(
                    "formwork: the model calls {}.{}",
                    inert(server),
                    inert(tool)
                );
            }
            Event::ToolCallFinished { result, error, .. } => match (result, error) {
                (Some(result), _) if result.get("isError") == Some(&Value::Bool(true)) => {
                    tool_error = true;
                    eprintln!("formwork: the tool reported an error");
                }
                (_, Some(error)) => {
                    eprintln!("formwork: the call failed: {}", inert_message(error))
                }
                _ => {}
            },
            Event::FormRequested { waiting: false, .. }
            | Event::ApprovalRequested { waiting: false, .. }
            | Event::FormShown { .. } => {
                end_line(&mut mid_line);
                answer_shown(host, &session, responder).await;
            }
            Event::Diagnostic { code, message } => {
                end_line(&mut mid_line);
                eprintln!("formwork: {}: {}", inert(code), inert_message(message));
            }
            Event::TurnEnded { reason, .. } => {
                end_line(&mut mid_line);
                return Ok(match reason {
                    TurnEndReason::Completed if tool_error => Outcome::Negative,
                    TurnEndReason::Completed => Outcome::Success,
                    TurnEndReason::Stopped | TurnEndReason::Failed => Outcome::Failure,
                });
            }
            _ => {}
        }
    }
}

/// Answers the card on screen with the responder `formwork call` uses.
pub(crate) async fn answer_shown(host: &Host, session: &str, responder: &CliResponder) {
    let Ok(Some(card)) = host.shown_card(session) else {
        return;
    };
    let command = match card.asks {
        CardAsks::Form(params) => {
            // Read as when the card was made, so this does not fail.
            let Ok(request) = params.parse() else {
                return;
            };
            let prompt = FormPrompt {
                plugin: card.plugin,
                request_id: Value::Null,
                call_request: None,
                params,
                request,
                url_completed: None,
                cancelled: CancellationToken::new(),
            };
            let reply = responder.respond(prompt).await;
            let answer = match (reply.action, reply.content) {
                (FormAction::Accept, Some(content)) => FormAnswer::Accept { content },
                (FormAction::Accept, None) => FormAnswer::AcceptUrl,
                (FormAction::Decline, _) => FormAnswer::Decline,
                (FormAction::Cancel, _) => FormAnswer::Cancel,
            };
            Command::AnswerForm {
                form_id: card.id,
                answer,
            }
        }
        CardAsks::Approval(approval) => Command::AnswerApproval {
            approval_id: card.id,
            choice: responder.approve(&approval).await.choice,
        },
    };
    if let Err(err) = host.command(session, command) {
        eprintln!("formwork: the answer was not taken: {err}");
    }
}
