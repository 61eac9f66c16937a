//! `formwork config check | import | sync`, and the `--config FILE` option every command that
//! applies the approval policy shares.
//!
//! Without `--config`, `./formwork.toml` is used when it exists; otherwise reading commands use
//! the embedded default (policy `on-request`, the built-in `demo` server) and writing commands
//! create `./formwork.toml`. Every report goes to stdout as JSON; messages go to stderr.

use std::path::PathBuf;

use anyhow::Context;
use clap::{Args, Subcommand};
use formwork_host::config::{self, Config, ConfigError};
use formwork_host::policy;
use serde_json::{Value, json};

use crate::Outcome;

/// `--config FILE`: flatten this into every command that applies the approval policy.
#[derive(Args, Debug, Clone, Default)]
pub struct ConfigArgs {
    /// The configuration file (default: ./formwork.toml; when it does not exist, reading
    /// commands use the built-in default and writing commands create it).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
}

impl ConfigArgs {
    /// The file reading commands use, if any.
    pub fn path(&self) -> Option<PathBuf> {
        config::resolve_path(self.config.as_deref())
    }

    /// The configuration reading commands apply.
    pub fn load(&self) -> Result<Config, ConfigError> {
        Config::load_optional(self.path().as_deref())
    }

    /// The file writing commands edit (created when missing).
    pub fn writable_path(&self) -> PathBuf {
        config::writable_path(self.config.as_deref())
    }
}

/// Check, import and sync formwork.toml.
#[derive(Subcommand, Debug)]
pub enum ConfigCommand {
    /// Print the effective approval policy as JSON (exit 1 with the error on a bad config).
    Check {
        #[command(flatten)]
        config: ConfigArgs,
    },
    /// Merge another host's MCP servers (`mcpServers` or `servers` JSON) into formwork.toml.
    Import {
        /// The JSON file, e.g. claude_desktop_config.json, .cursor/mcp.json, .vscode/mcp.json.
        file: PathBuf,
        #[command(flatten)]
        config: ConfigArgs,
    },
    /// Write or refresh the built-in servers' entries: approve by default, an explicit mode
    /// (such as "prompt") kept.
    Sync {
        #[command(flatten)]
        config: ConfigArgs,
    },
}

/// Runs one `formwork config` subcommand.
pub fn run(args: ConfigCommand) -> anyhow::Result<Outcome> {
    match args {
        ConfigCommand::Check { config } => Ok(check(&config)),
        ConfigCommand::Import { file, config } => {
            let report = config::import(&file, &config.writable_path())?;
            for skipped in &report.skipped {
                eprintln!("formwork: skipped {}: {}", skipped.name, skipped.reason);
            }
            print_json(&serde_json::to_value(&report)?)?;
            Ok(Outcome::Success)
        }
        ConfigCommand::Sync { config } => {
            let exe = std::env::current_exe().context("cannot find formwork's own path")?;
            let report = config::sync(&config.writable_path(), &exe)?;
            print_json(&serde_json::to_value(&report)?)?;
            Ok(Outcome::Success)
        }
    }
}

/// `config check`: the effective policy, or the error both on stderr and as
/// `{"error": {file, line, column, key, message}}` on stdout.
fn check(args: &ConfigArgs) -> Outcome {
    match args.load() {
        Ok(config) => match print_json(&policy::effective_policy(&config)) {
            Ok(()) => Outcome::Success,
            Err(err) => {
                eprintln!("formwork: {err:#}");
                Outcome::Failure
            }
        },
        Err(err) => {
            eprintln!("formwork: {err}");
            // Printing can only fail when stdout is gone; the message is on stderr already.
            let _ = print_json(&json!({ "error": error_json(&err) }));
            Outcome::Negative
        }
    }
}

fn error_json(err: &ConfigError) -> Value {
    match err {
        ConfigError::Invalid(invalid) => json!({
            "file": invalid.path.as_ref().map(|path| path.display().to_string()),
            "line": invalid.line,
            "column": invalid.column,
            "key": invalid.key,
            "message": invalid.message,
        }),
        ConfigError::Read { path, source } => json!({
            "file": path.display().to_string(),
            "message": format!("cannot read: {source}"),
        }),
        other => json!({ "message": other.to_string() }),
    }
}

fn print_json(value: &Value) -> anyhow::Result<()> {
    println!("{}", serde_json::to_string_pretty(value)?);
    Ok(())
}
