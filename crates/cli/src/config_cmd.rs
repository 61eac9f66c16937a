//! `formwork config check | import | sync`, `formwork trust [--revoke]`, and the `--config FILE`
//! option every command that applies the approval policy shares.
//!
//! Every command reads the layered configuration (`formwork_host::config`): the user config,
//! then the `--config` file or, without one, a trusted project's `formwork.toml`. An untrusted
//! project's file is not read, and one line on stderr says so and how to trust it (or, without
//! a user config, why it cannot be trusted). Writing commands edit the `--config` file, else
//! the user config, never a project file. Every report goes to stdout as JSON; messages go to
//! stderr.

use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::{Args, Subcommand};
use formwork_host::config::{
    self, Config, ConfigError, ConfigLocations, ModelChoice, ModelChoiceError,
};
use serde_json::{Value, json};

use crate::Outcome;
use crate::policy_report;

/// `--config FILE`: flatten this into every command that applies the approval policy.
#[derive(Args, Debug, Clone, Default)]
pub struct ConfigArgs {
    /// A configuration file applied on top of the user config in place of a project's
    /// formwork.toml; writing commands edit it (created when missing).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
}

impl ConfigArgs {
    /// The configuration reading commands apply. A project file skipped as untrusted is
    /// reported on stderr, once.
    pub fn load(&self) -> Result<Config, ConfigError> {
        let config = Config::load_layered(&ConfigLocations::from_env(self.config.clone()))?;
        for notice in config
            .sources
            .iter()
            .filter_map(config::ConfigSource::skipped_notice)
        {
            eprintln!("formwork: {notice}");
        }
        Ok(config)
    }

    /// The file writing commands edit: the `--config` file, else the user config (created
    /// when missing).
    pub fn writable_path(&self) -> anyhow::Result<PathBuf> {
        match &self.config {
            Some(path) => Ok(path.clone()),
            None => config::user_config_path().context(
                "there is no user config: neither XDG_CONFIG_HOME nor HOME names a directory \
                 (name a file with --config)",
            ),
        }
    }
}

/// The user config that records the trust of `project`, or why there is none; `action` is
/// what the command was doing (`trust`, `revoke trust in`).
fn trust_record(action: &str, project: &Path) -> anyhow::Result<PathBuf> {
    config::user_config_path().with_context(|| {
        format!(
            "cannot {action} {}: trust is recorded in the user config, and there is none \
             (neither XDG_CONFIG_HOME nor HOME names a directory)",
            project.display()
        )
    })
}

/// Check, import and sync formwork.toml.
#[derive(Subcommand, Debug)]
pub enum ConfigCommand {
    /// Print the effective approval policy as JSON (exit 1 with the error on a bad config).
    Check {
        #[command(flatten)]
        config: ConfigArgs,
    },
    /// Merge another host's MCP servers (`mcpServers` or `servers` JSON, or Codex's
    /// config.toml) into formwork.toml.
    Import {
        /// The JSON file, e.g. claude_desktop_config.json, .cursor/mcp.json, .vscode/mcp.json,
        /// or a Codex config.toml (a name ending in .toml).
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
            let report = config::import(&file, &config.writable_path()?)?;
            for skipped in &report.skipped {
                eprintln!("formwork: skipped {}: {}", skipped.name, skipped.reason);
            }
            print_json(&serde_json::to_value(&report)?)?;
            Ok(Outcome::Success)
        }
        ConfigCommand::Sync { config } => {
            let exe = std::env::current_exe().context("cannot find formwork's own path")?;
            let report = config::sync(&config.writable_path()?, &exe)?;
            print_json(&serde_json::to_value(&report)?)?;
            Ok(Outcome::Success)
        }
    }
}

/// `formwork trust [DIR]`: records in the user config that the project in `dir` (see
/// [`project_dir`]) is trusted.
pub fn trust(dir: Option<&Path>) -> anyhow::Result<Outcome> {
    let dir = project_dir(dir)?;
    let project =
        std::fs::canonicalize(&dir).with_context(|| format!("cannot trust {}", dir.display()))?;
    anyhow::ensure!(
        project.is_dir(),
        "cannot trust {}: not a directory",
        project.display()
    );
    let report = config::trust_project(&trust_record("trust", &project)?, &project)?;
    eprintln!(
        "formwork: {} project {}: its formwork.toml applies on top of {}",
        if report.written {
            "trusted"
        } else {
            "already trusted"
        },
        report.project.display(),
        report.config.display()
    );
    print_json(&serde_json::to_value(&report)?)?;
    Ok(Outcome::Success)
}

/// `formwork trust --revoke [DIR]`: removes the project in `dir` (see [`project_dir`]) from the
/// user config's trusted projects. A project that is not trusted is reported as such, and the
/// command still succeeds: what was asked for holds.
pub fn revoke_trust(dir: Option<&Path>) -> anyhow::Result<Outcome> {
    let dir = project_dir(dir)?;
    // A directory that is gone is named as given (made absolute), so its entry can go too.
    let project = match std::fs::canonicalize(&dir) {
        Ok(project) => project,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => std::path::absolute(&dir)
            .with_context(|| format!("cannot revoke trust in {}", dir.display()))?,
        Err(err) => {
            return Err(err).with_context(|| format!("cannot revoke trust in {}", dir.display()));
        }
    };
    let report = config::revoke_trust(&trust_record("revoke trust in", &project)?, &project)?;
    let project_shown = report.project.display();
    let config_shown = report.config.display();
    match (report.written, report.trust_level) {
        (true, _) => eprintln!(
            "formwork: revoked trust in project {project_shown}: its formwork.toml no longer \
             applies (removed from {config_shown})"
        ),
        (false, Some(config::TrustLevel::Untrusted)) => eprintln!(
            "formwork: project {project_shown} is not trusted (it is marked untrusted in \
             {config_shown}); nothing to revoke"
        ),
        (false, _) => eprintln!(
            "formwork: project {project_shown} is not trusted in {config_shown}; nothing to revoke"
        ),
    }
    print_json(&serde_json::to_value(&report)?)?;
    Ok(Outcome::Success)
}

/// The project directory `formwork trust` works on: `dir`, else the directory of the
/// formwork.toml found from the working directory, else the working directory.
fn project_dir(dir: Option<&Path>) -> anyhow::Result<PathBuf> {
    if let Some(dir) = dir {
        return Ok(dir.to_path_buf());
    }
    let cwd = std::env::current_dir().context("cannot find the working directory")?;
    Ok(config::find_project_file(&cwd)
        .and_then(|file| file.parent().map(Path::to_path_buf))
        .unwrap_or(cwd))
}

/// `config check`: the effective policy with the files that applied and why (`sources`), the
/// model (`model`), and the runtime (`runtime`, `codex`: `[codex] command` and `home` as set), or the error both on stderr and as `{"error": {file, line, column,
/// key, message}}` on stdout (`{"error": {message}}` when no model can be chosen).
fn check(args: &ConfigArgs) -> Outcome {
    let report = args.load().map_err(CheckError::Config).and_then(|config| {
        let model = config.model_choice(None, None).map_err(CheckError::Model)?;
        let mut report = policy_report::effective_policy(&config);
        if let Some(fields) = report.as_object_mut() {
            fields.insert("sources".to_owned(), json!(config.sources));
            fields.insert("model".to_owned(), model_json(model.as_ref()));
            fields.insert("runtime".to_owned(), json!(config.runtime));
            fields.insert(
                "codex".to_owned(),
                json!({
                    "command": config.codex.command,
                    "home": config.codex.home.as_ref().map(|home| home.display().to_string()),
                }),
            );
        }
        Ok(report)
    });
    match report {
        Ok(report) if crate::human::for_people() => {
            print!("{}", crate::human::config_summary(&report));
            Outcome::Success
        }
        Ok(report) => match print_json(&report) {
            Ok(()) => Outcome::Success,
            Err(err) => {
                eprintln!("formwork: {err:#}");
                Outcome::Failure
            }
        },
        Err(err) => {
            let error = match &err {
                CheckError::Config(err) => {
                    eprintln!("formwork: {err}");
                    error_json(err)
                }
                CheckError::Model(err) => {
                    eprintln!("formwork: {err}");
                    json!({ "message": err.to_string() })
                }
            };
            // Printing can only fail when stdout is gone; the message is on stderr already.
            let _ = print_json(&json!({ "error": error }));
            Outcome::Negative
        }
    }
}

/// Why `config check` fails: the config does not load, or names no usable model.
enum CheckError {
    Config(ConfigError),
    Model(ModelChoiceError),
}

/// The model `serve` would talk to, `null` for none: its provider's settings (the names of
/// headers and query parameters, not their values, which may be secrets) and whether the
/// provider's `env_key` variable is set (its value is never read).
fn model_json(choice: Option<&ModelChoice>) -> Value {
    let Some(choice) = choice else {
        return Value::Null;
    };
    let provider = &choice.provider;
    let api_key_set = provider
        .env_key
        .as_ref()
        .is_some_and(|key| std::env::var_os(key).is_some_and(|value| !value.is_empty()));
    // The config caps the timeout at a day, so it always fits.
    let idle_timeout_ms =
        u64::try_from(provider.stream_idle_timeout.as_millis()).unwrap_or(u64::MAX);
    json!({
        "provider_id": choice.provider_id,
        "provider": {
            "name": provider.name,
            "base_url": provider.base_url,
            "wire_api": provider.wire_api,
            "env_key": provider.env_key,
            "http_headers": provider.http_headers.keys().collect::<Vec<_>>(),
            "env_http_headers": provider.env_http_headers,
            "query_params": provider.query_params.keys().collect::<Vec<_>>(),
            "request_max_retries": provider.request_max_retries,
            "stream_max_retries": provider.stream_max_retries,
            "stream_idle_timeout_ms": idle_timeout_ms,
        },
        "model": choice.model,
        "tool_output_max_bytes": choice.tool_output_max_bytes,
        "api_key_set": api_key_set,
    })
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
