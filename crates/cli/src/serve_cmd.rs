//! `formwork serve`: the web workbench on 127.0.0.1.
//!
//! With no config at all it starts on the embedded default (the built-in demo plugin), keeps
//! sessions in the data directory's SQLite file, and opens a first session, so a newcomer sees a
//! form from the browser within a minute. The first line on stdout is the page's URL with its
//! access token in its fragment: `formwork serve: http://127.0.0.1:PORT/#token=...` (the page keeps
//! the token and sends it only to this server; see `formwork-web`'s `access.rs`).

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use formwork_host::store::Store;
use formwork_host::{Host, HostOptions};
use formwork_web::{ScriptedModel, WebOptions, Workbench};

use crate::Outcome;
use crate::config_cmd::ConfigArgs;

/// Serve the web workbench on 127.0.0.1.
#[derive(Args, Debug)]
pub struct ServeArgs {
    #[command(flatten)]
    pub config: ConfigArgs,
    /// The port on 127.0.0.1 (0 picks a free one; the URL is printed either way).
    #[arg(long, value_name = "PORT", default_value_t = 0)]
    pub port: u16,
    /// Where sessions are kept (default: $FORMWORK_DATA_DIR, else the user's data directory).
    #[arg(long, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
    /// A scripted model: a JSON list of {"match", "reply", "call"} rules that answer messages.
    #[arg(long, value_name = "FILE")]
    pub model: Option<PathBuf>,
}

/// Runs the workbench until Ctrl-C or SIGTERM; open forms then end as cancelled
/// (`host-stopped`) and the store is flushed.
pub async fn run(args: &ServeArgs) -> anyhow::Result<Outcome> {
    raise_open_files_limit();
    let config = args.config.load()?;
    let model = args.model.as_deref().map(ScriptedModel::load).transpose()?;
    let data_dir = match &args.data_dir {
        Some(dir) => dir.clone(),
        None => Store::default_data_dir()?,
    };
    let database = Store::path_in(&data_dir);
    let store = {
        let database = database.clone();
        tokio::task::spawn_blocking(move || Store::open(database)).await??
    };
    let exe = std::env::current_exe().context("cannot find formwork's own path")?;
    let options = HostOptions {
        builtin_exe: Some(exe),
        data_dir: Some(data_dir),
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
            model,
            token: None,
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
        database.display()
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
