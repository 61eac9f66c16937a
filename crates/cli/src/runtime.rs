//! `--runtime formwork|codex` of `serve` and `chat`, and what the Codex runtime needs to run:
//! which `codex`, and the `CODEX_HOME` formwork gives it (`[codex]` in the config).

use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Args;
use formwork_host::config::{Config, Runtime};
use formwork_host::runtime::codex::CodexOptions;

/// The pinned Codex release formwork is tested with.
pub const CODEX_VERSION: &str = "0.171.0";

/// `--runtime`.
#[derive(Args, Debug, Clone, Default)]
pub struct RuntimeArgs {
    /// What answers messages: `formwork` (its own model loop) or `codex` (`codex app-server`
    /// runs the conversation; formwork shows its forms). Overrides `runtime` in the config.
    #[arg(long, value_name = "RUNTIME", value_parser = parse_runtime)]
    pub runtime: Option<Runtime>,
}

fn parse_runtime(name: &str) -> Result<Runtime, String> {
    Runtime::parse(name).ok_or_else(|| format!("expected `formwork` or `codex`, not `{name}`"))
}

impl RuntimeArgs {
    /// The runtime in force: the flag, else the config's.
    pub fn runtime(&self, config: &Config) -> Runtime {
        self.runtime.unwrap_or(config.runtime)
    }
}

/// How to run Codex for `config`: `[codex] command` (else `codex` on `PATH`) and `[codex]
/// home` (else `codex` under `data_dir`). Fails when the program cannot be found.
pub fn codex_options(config: &Config, data_dir: &Path) -> anyhow::Result<CodexOptions> {
    let command = config
        .codex
        .command
        .clone()
        .unwrap_or_else(|| "codex".to_owned());
    if find_program(&command).is_none() {
        anyhow::bail!(
            "`{command}` was not found: install Codex ({}; `npm install -g @openai/codex@{CODEX_VERSION}`) or set \
             `[codex] command` in formwork.toml to its path",
            if command.contains('/') {
                "no such file"
            } else {
                "not on PATH"
            },
        );
    }
    let home = config
        .codex
        .home
        .clone()
        .unwrap_or_else(|| data_dir.join("codex"));
    let cwd = std::env::current_dir().context("cannot read the working directory")?;
    Ok(CodexOptions {
        command,
        home,
        cwd,
        openai_form: config.features.openai_elicitation,
        log_filter: CodexOptions::DEFAULT_LOG_FILTER.to_owned(),
    })
}

/// The file `program` names: a path as it is, a bare name searched on `PATH`.
fn find_program(program: &str) -> Option<PathBuf> {
    if program.contains('/') {
        let path = PathBuf::from(program);
        return path.is_file().then_some(path);
    }
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join(program))
            .find(|candidate| candidate.is_file())
    })
}
