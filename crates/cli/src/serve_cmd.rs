//! `formwork serve`: the web workbench on 127.0.0.1.
//!
//! With no config at all it starts on the embedded default (the built-in demo plugin), keeps
//! sessions in the data directory's SQLite file, and opens a first session, so a newcomer sees a
//! form from the browser within a minute. The first line on stdout is the page's URL with its
//! access token in its fragment: `formwork serve: http://127.0.0.1:PORT/#token=...` (the page keeps
//! the token and sends it only to this server; see `formwork-web`'s `access.rs`).
//!
//! The model that answers the person's messages is the config's (`model_provider`, `model`),
//! which `--model-provider` and `--model` override; `--scripted-model FILE` puts a scripted
//! one in its place, for demos and tests.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use formwork_host::config::Runtime;
use formwork_host::store::Store;
use formwork_host::{ACCESS_TOKEN_ENV, Host, HostOptions};
use formwork_web::{ScriptedModel, WebOptions, Workbench};

use crate::Outcome;
use crate::config_cmd::ConfigArgs;
use crate::runtime::RuntimeArgs;
use crate::store_args::StoreArgs;
use crate::terminal::inert;

/// The access token the person chose in [`ACCESS_TOKEN_ENV`], so that several `formwork serve`
/// processes (replicas of one deployment) accept the same one; `None` (mint one) when it is
/// unset or empty. One the page could not carry is refused before anything starts, naming the
/// variable, never its value.
fn shared_token() -> anyhow::Result<Option<String>> {
    let token = match std::env::var(ACCESS_TOKEN_ENV) {
        Ok(token) => token,
        Err(std::env::VarError::NotPresent) => return Ok(None),
        Err(std::env::VarError::NotUnicode(_)) => {
            anyhow::bail!("{ACCESS_TOKEN_ENV} is not UTF-8 text")
        }
    };
    if token.is_empty() {
        return Ok(None);
    }
    if !formwork_web::usable_token(&token) {
        anyhow::bail!(
            "{ACCESS_TOKEN_ENV} must be 32 to 128 letters, digits, `-`, `.`, `_` or `~` (it has {} characters)",
            token.chars().count()
        );
    }
    Ok(Some(token))
}

/// Serve the web workbench on 127.0.0.1.
#[derive(Args, Debug)]
pub struct ServeArgs {
    #[command(flatten)]
    pub config: ConfigArgs,
    /// The port on 127.0.0.1 (0 picks a free one; the URL is printed either way).
    #[arg(long, value_name = "PORT", default_value_t = 0)]
    pub port: u16,
    /// Where sessions (unless --store names another place) and uploads are kept (default:
    /// $FORMWORK_DATA_DIR, else the user's data directory).
    #[arg(long, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
    /// The model provider: `openai`, `oss` or the ID of a [model_providers.ID] table
    /// (overrides `model_provider`).
    #[arg(long, value_name = "ID")]
    pub model_provider: Option<String>,
    /// The model's name as its provider knows it (overrides `model`).
    #[arg(long, value_name = "NAME", value_parser = clap::builder::NonEmptyStringValueParser::new())]
    pub model: Option<String>,
    /// A scripted model for demos and tests: a JSON list of {"match", "reply", "call"} rules
    /// that answer messages. With it no real model is used, whatever --model,
    /// --model-provider or the config say.
    #[arg(long, value_name = "FILE")]
    pub scripted_model: Option<PathBuf>,
    #[command(flatten)]
    pub runtime: RuntimeArgs,
    #[command(flatten)]
    pub store: StoreArgs,
}

/// Runs the workbench until Ctrl-C or SIGTERM; open forms then end as cancelled
/// (`host-stopped`) and the store is flushed.
pub async fn run(args: &ServeArgs) -> anyhow::Result<Outcome> {
    raise_open_files_limit();
    let token = shared_token()?;
    let config = args.config.load()?;
    let codex = args.runtime.runtime(&config) == Runtime::Codex;
    if codex && args.scripted_model.is_some() {
        anyhow::bail!(
            "--scripted-model stands in for formwork's own model loop; it cannot run under --runtime codex"
        );
    }
    let scripted_model = args
        .scripted_model
        .as_deref()
        .map(ScriptedModel::load)
        .transpose()?;
    // The scripted model stands in for a real one: with it, none is chosen at all.
    let model = match scripted_model {
        Some(_) => None,
        None => config.model_choice(args.model_provider.as_deref(), args.model.as_deref())?,
    };
    let data_dir = match &args.data_dir {
        Some(dir) => dir.clone(),
        None => Store::default_data_dir()?,
    };
    let codex = codex
        .then(|| crate::runtime::codex_options(&config, &data_dir))
        .transpose()?;
    match (&codex, &model) {
        (Some(codex), choice) => eprintln!(
            "formwork: Codex runs the conversation ({}, CODEX_HOME {}){}",
            inert(&codex.command),
            codex.home.display(),
            choice.as_ref().map_or_else(String::new, |choice| format!(
                " with {} via {}",
                inert(&choice.model),
                inert(&choice.provider.name)
            )),
        ),
        (None, Some(choice)) => eprintln!(
            "formwork: the model is {} via {}",
            inert(&choice.model),
            inert(&choice.provider.name)
        ),
        (None, None) => {}
    }
    let database = args.store.url(&config, &data_dir)?;
    let store = crate::store_args::connect(&database, &data_dir, &config).await?;
    let exe = std::env::current_exe().context("cannot find formwork's own path")?;
    let options = HostOptions {
        builtin_exe: Some(exe),
        data_dir: Some(data_dir),
        model,
        codex,
        ..HostOptions::default()
    };
    let host = Host::with_store(config, options, store).await?;
    if host.sessions().is_empty() {
        host.create_session();
    }
    let workbench = Workbench::bind(
        host.clone(),
        WebOptions {
            port: args.port,
            model: scripted_model,
            token,
        },
    )
    .await?;
    {
        let mut stdout = std::io::stdout().lock();
        writeln!(stdout, "formwork serve: {}", workbench.url())?;
        stdout.flush()?;
    }
    eprintln!(
        "formwork: sessions are kept in {}; press Ctrl-C to stop",
        inert(&database.to_string())
    );
    workbench.serve(stop_signal()).await?;
    host.shutdown().await;
    Ok(Outcome::Success)
}

/// Resolves on Ctrl-C or (on Unix) SIGTERM.
async fn stop_signal() {
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        () = terminate => {}
    }
}

/// Every form waiting in a session holds a plugin connection open, so a busy workbench needs
/// more descriptors than the usual soft limit of 1,024: take what the hard limit allows.
fn raise_open_files_limit() {
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    if let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE)
        && soft < hard
        && let Err(err) = setrlimit(Resource::RLIMIT_NOFILE, hard, hard)
    {
        tracing::warn!(target: "formwork::serve", %err, soft, hard, "could not raise the open files limit");
    }
}
