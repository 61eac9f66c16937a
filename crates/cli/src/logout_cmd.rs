//! `formwork logout NAME`: forgets the OAuth tokens kept for a configured Streamable HTTP
//! server, in the store `mcp_oauth_credentials_store` names (the keyring, or
//! `mcp-credentials.json` in the data directory).

use std::path::PathBuf;

use clap::Args;
use formwork_host::TokenStore;
use formwork_host::config::Transport;
use formwork_host::store::Store;
use serde_json::json;

use crate::Outcome;
use crate::commands::configured_server;
use crate::config_cmd::ConfigArgs;

/// Forget the OAuth sign-in of a configured server.
#[derive(Args, Debug)]
pub struct LogoutArgs {
    /// The server (`[mcp_servers.<NAME>]`, with a `url`).
    pub name: String,
    #[command(flatten)]
    pub config: ConfigArgs,
    /// The data directory whose credentials file is used (default: $FORMWORK_DATA_DIR, else
    /// the user's data directory).
    #[arg(long, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
}

/// Removes the tokens kept for the server's name and its configured URL. Having none is no
/// failure: the outcome is the same, and stderr says which it was.
pub fn run(args: &LogoutArgs) -> anyhow::Result<Outcome> {
    let config = args.config.load()?;
    let name = &args.name;
    let server = configured_server(&config, name)?;
    let Transport::StreamableHttp { url, .. } = &server.transport else {
        anyhow::bail!(
            "server `{name}` is not a Streamable HTTP server (`url`): only those sign in"
        );
    };
    let data_dir = match &args.data_dir {
        Some(dir) => dir.clone(),
        None => Store::default_data_dir()?,
    };
    let store = TokenStore::new(config.mcp_oauth_credentials_store, &data_dir);
    let removed = store
        .delete(name, url)
        .map_err(|reason| anyhow::anyhow!("server `{name}`: {reason}"))?;
    match &removed {
        Some(place) => eprintln!("formwork: Signed out of {name} (tokens removed from {place})"),
        None => eprintln!("formwork: {name} had no stored sign-in"),
    }
    println!(
        "{}",
        serde_json::to_string_pretty(&json!({
            "server": name,
            "url": url,
            "removed": removed.is_some(),
            "store": removed.as_ref().unwrap_or(store.place()).to_string(),
        }))?
    );
    Ok(Outcome::Success)
}
