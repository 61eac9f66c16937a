//! `formwork login NAME`: signs in to a configured Streamable HTTP server with OAuth. The
//! authorization page opens in the browser (or its URL is printed), the redirect comes back
//! to a one-shot listener on 127.0.0.1, and the tokens go to the store
//! `mcp_oauth_credentials_store` names, where every later connection finds them.

use std::path::PathBuf;
use std::sync::Arc;

use clap::Args;
use formwork_host::TokenStore;
use formwork_host::auth::Authorizer;
use formwork_host::auth::agent::{BrowserSignIn, SIGN_IN_TIMEOUT};
use formwork_host::config::Transport;
use formwork_host::store::Store;
use serde_json::json;

use crate::Outcome;
use crate::commands::configured_server;
use crate::config_cmd::ConfigArgs;
use crate::terminal::inert_message;

/// Sign in to a configured server that asks for OAuth authorization.
#[derive(Args, Debug)]
pub struct LoginArgs {
    /// The server (`[mcp_servers.<NAME>]`, with a `url`).
    pub name: String,
    #[command(flatten)]
    pub config: ConfigArgs,
    /// The data directory whose credentials file is used (default: $FORMWORK_DATA_DIR, else
    /// the user's data directory).
    #[arg(long, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
}

pub async fn run(args: &LoginArgs) -> anyhow::Result<Outcome> {
    let config = args.config.load()?;
    let name = &args.name;
    let server = configured_server(&config, name)?;
    let Transport::StreamableHttp { url, .. } = &server.transport else {
        anyhow::bail!(
            "server `{name}` is not a Streamable HTTP server (`url`): only those sign in"
        );
    };
    let settings = server
        .transport
        .auth_settings()
        .map_err(|reason| anyhow::anyhow!("server `{name}`: {reason}"))?;
    let headers = server
        .transport
        .http_headers()
        .map_err(|reason| anyhow::anyhow!("server `{name}`: {reason}"))?;
    let data_dir = match &args.data_dir {
        Some(dir) => dir.clone(),
        None => Store::default_data_dir()?,
    };
    let store = Arc::new(TokenStore::new(
        config.mcp_oauth_credentials_store,
        &data_dir,
    ));
    let server_name = name.clone();
    let agent = BrowserSignIn {
        port: config.mcp_oauth_callback_port,
        timeout: SIGN_IN_TIMEOUT,
        show: Arc::new(move |url: &str| show(&server_name, url)),
    };
    let authorizer = Authorizer::new(
        name.clone(),
        url.clone(),
        settings,
        Some(Arc::clone(&store)),
        Some(Arc::new(agent)),
    );
    let signed_in = authorizer
        .sign_in(&formwork_host::sign_in_probe(), &headers)
        .await;
    let steps = authorizer.steps().await;
    let kept_in = match signed_in {
        // The login's authorizer always has the store, so it says where the tokens went.
        Ok(kept_in) => kept_in.unwrap_or_else(|| store.place().clone()),
        Err(err) => {
            eprintln!("formwork: {}", inert_message(&err.to_string()));
            if !steps.is_empty() {
                eprintln!("formwork: the sign-in's steps, in order:");
                for step in &steps {
                    eprintln!(
                        "  {} at {}: {}",
                        step.step,
                        inert_message(&step.url),
                        inert_message(&step.outcome)
                    );
                }
            }
            return Ok(Outcome::Failure);
        }
    };
    eprintln!("formwork: Signed in to {name} (tokens kept in {kept_in})");
    println!(
        "{}",
        serde_json::to_string_pretty(&json!({
            "server": name,
            "url": url,
            "store": kept_in.to_string(),
        }))?
    );
    Ok(Outcome::Success)
}

/// Prints the authorization URL and opens it: with `$BROWSER`, else the system's opener. The
/// sign-in waits either way.
fn show(server: &str, url: &str) {
    eprintln!(
        "formwork: to sign in to {server}, open this page (waiting for it to come back):\n  {}",
        inert_message(url)
    );
    let opened = match std::env::var("BROWSER")
        .ok()
        .filter(|b| !b.trim().is_empty())
    {
        Some(browser) => open_with(&browser, url),
        None => system_opener(url),
    };
    if !opened {
        eprintln!("formwork: could not open a browser; open the page above yourself");
    }
}

/// Opens `url` with `$BROWSER` as its convention has it: commands separated by `:`, the first
/// that starts wins; each is split into words like a shell would, and in a word `%s` stands
/// for the URL and `%%` for `%` (with no `%s` anywhere, the URL is added at the end). No shell
/// runs it: the URL, which the authorization server chose, is one argument whatever it holds.
fn open_with(browser: &str, url: &str) -> bool {
    browser.split(':').any(|command| {
        let Some(words) = shlex::split(command).filter(|words| !words.is_empty()) else {
            return false;
        };
        let mut named = false;
        let mut words: Vec<String> = words
            .iter()
            .map(|word| {
                let (word, has_url) = substitute(word, url);
                named |= has_url;
                word
            })
            .collect();
        if !named {
            words.push(url.to_owned());
        }
        let program = words.remove(0);
        spawn(std::process::Command::new(program).args(words))
    })
}

/// `word` with `%s` replaced by `url` and `%%` by `%`, and whether it had a `%s`.
fn substitute(word: &str, url: &str) -> (String, bool) {
    let mut out = String::with_capacity(word.len());
    let mut has_url = false;
    let mut chars = word.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('s') => {
                out.push_str(url);
                has_url = true;
            }
            Some('%') => out.push('%'),
            Some(other) => {
                out.push('%');
                out.push(other);
            }
            None => out.push('%'),
        }
    }
    (out, has_url)
}

#[cfg(target_os = "macos")]
fn system_opener(url: &str) -> bool {
    spawn(std::process::Command::new("open").arg(url))
}

#[cfg(target_os = "windows")]
fn system_opener(url: &str) -> bool {
    spawn(std::process::Command::new("explorer").arg(url))
}

#[cfg(not(any(target_os = "macos", target_os = "windows")))]
fn system_opener(url: &str) -> bool {
    spawn(std::process::Command::new("xdg-open").arg(url))
}

/// Starts the opener in the background, its output discarded (browsers chatter on stderr).
fn spawn(command: &mut std::process::Command) -> bool {
    command
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .is_ok()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    /// A hostile authorization URL reaches `$BROWSER`'s command as one argument, never as
    /// shell text; a command that cannot start gives way to the next one.
    #[test]
    fn browser_commands_get_the_url_as_one_argument() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("opened");
        let pwned = dir.path().join("pwned");
        let url = format!(
            "https://auth.test/authorize?q=$(touch {})'\"`x`",
            pwned.display()
        );
        let browser = format!(
            "formwork-no-such-browser %s:sh -c 'printf %%s \"$1\" > {}' sh %s",
            out.display()
        );
        assert!(super::open_with(&browser, &url));
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while std::fs::read_to_string(&out).unwrap_or_default() != url {
            assert!(
                std::time::Instant::now() < deadline,
                "the command never got the URL"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        assert!(!pwned.exists());
        assert!(!super::open_with("formwork-no-such-browser", &url));
    }
}
