//! `formwork doctor`: connect to a plugin, report the handshake, the policy and each tool's
//! approval verdict, optionally call one tool while recording every form, and say for each row
//! of the plugin-forms symptom table whether it applies, why, and what to change.
//!
//! stdout: the report as JSON (`formwork_host::doctor::Report`, with the effective policy of
//! `policy_report.rs` after `connection`). stderr: one line per symptom that applies. Exit 0
//! when none applies, 1 when one does, 2 when the plugin cannot be reached (or the arguments or
//! the config are unusable).

use std::time::Duration;

use anyhow::Context;
use clap::Args;
use formwork_host::PluginTarget;
use formwork_host::config::Config;
use formwork_host::doctor::{self, DoctorOptions, Report};
use serde_json::Value;

use crate::commands::{configured_server, tool_arguments};
use crate::config_cmd::ConfigArgs;
use crate::policy_report;
use crate::{Choice, Outcome, PluginArgs};

/// `formwork doctor`'s arguments.
#[derive(Args)]
pub struct DoctorArgs {
    #[command(flatten)]
    plugin: PluginArgs,
    #[command(flatten)]
    config: ConfigArgs,
    /// Also call this tool; every form it asks for is recorded and answered `cancel`.
    #[arg(long, value_name = "NAME")]
    tool: Option<String>,
    /// The tool's arguments as a JSON object.
    #[arg(long, value_name = "JSON", requires = "tool")]
    args: Option<String>,
    /// Seconds the tool call may still take after the plugin got its last form answer before
    /// the plugin counts as not continuing.
    #[arg(long, value_name = "SECONDS", default_value_t = 10)]
    wait: u64,
    /// Seconds a request may run, not counting time a form is open.
    #[arg(long, value_name = "SECONDS", default_value_t = 60)]
    timeout: u64,
    /// `codex`: diagnose the plugin under the Codex runtime: through real `codex app-server`,
    /// with the config formwork writes for it, the tool called inside a Codex turn.
    #[command(flatten)]
    runtime: crate::runtime::RuntimeArgs,
}

/// Runs `formwork doctor`.
pub async fn run(args: &DoctorArgs) -> anyhow::Result<Outcome> {
    let config = args.config.load()?;
    let arguments = tool_arguments(args.args.as_deref())?;
    let (target, server) = resolve(args.plugin.choice(), &config)?;
    if args.runtime.runtime(&config) == formwork_host::config::Runtime::Codex {
        return run_codex(args, config, target, server, arguments).await;
    }
    let protocol = args.plugin.protocol()?;
    let mut options = DoctorOptions::new(server);
    options.protocol = protocol.unwrap_or_else(|| {
        config
            .server(&options.server)
            .and_then(|server| server.protocol_version.clone())
    });
    options.tool = args.tool.clone().map(|tool| (tool, arguments));
    options.request_timeout = Duration::from_secs(args.timeout);
    options.wait_after_answer = Duration::from_secs(args.wait);
    options.data_dir = formwork_host::store::Store::default_data_dir().ok();
    let report = doctor::diagnose(&target, &config, options).await;
    show(&printed(&report, &config)?, crate::human::doctor_checklist)?;
    if !report.connected() {
        let error = report
            .connection
            .error
            .as_deref()
            .unwrap_or("unknown error");
        eprintln!(
            "formwork: doctor: {}",
            crate::terminal::inert_message(error)
        );
        if !report.connection.sign_in.is_empty() {
            eprintln!("formwork: doctor: the sign-in's steps, in order:");
            for step in &report.connection.sign_in {
                eprintln!(
                    "  {} at {}: {}",
                    step.step,
                    crate::terminal::inert_message(&step.url),
                    crate::terminal::inert_message(&step.outcome)
                );
            }
        }
        return Ok(Outcome::Failure);
    }
    Ok(verdict(&report.symptoms))
}

/// `formwork doctor --runtime codex`: the same table, judged from what real Codex does with the
/// plugin (`formwork_host::doctor::codex`).
async fn run_codex(
    args: &DoctorArgs,
    mut config: Config,
    target: PluginTarget,
    server: String,
    arguments: Option<Value>,
) -> anyhow::Result<Outcome> {
    use formwork_host::config::{ServerConfig, Transport};
    use formwork_host::doctor::codex::{CodexDoctorOptions, diagnose};
    if config.server(&server).is_none() {
        // A plugin named on the command line is one more server of the Codex config.
        let transport = match &target {
            PluginTarget::Command { line, env } => Transport::Stdio {
                command: "sh".to_owned(),
                args: vec!["-c".to_owned(), line.clone()],
                env: env.set.iter().cloned().collect(),
                env_vars: env.pass.clone(),
                cwd: None,
            },
            PluginTarget::Url(url) => Transport::StreamableHttp {
                url: url.clone(),
                http_headers: Default::default(),
                env_http_headers: Default::default(),
                bearer_token_env_var: None,
                scopes: Vec::new(),
                oauth_resource: None,
                oauth: Box::default(),
                share_session: false,
            },
        };
        config
            .mcp_servers
            .insert(server.clone(), ServerConfig::adhoc(transport));
    }
    let data_dir = formwork_host::store::Store::default_data_dir()?;
    let mut codex = crate::runtime::codex_options(&config, &data_dir)?;
    let runtime_home = std::mem::replace(&mut codex.home, data_dir.join("codex-doctor"));
    let options = CodexDoctorOptions {
        server,
        tool: args.tool.clone().map(|tool| (tool, arguments)),
        codex,
        runtime_home: Some(runtime_home),
        formwork_exe: std::env::current_exe().context("cannot find formwork's own path")?,
        wait_after_answer: Duration::from_secs(args.wait),
    };
    let report = diagnose(&config, options).await;
    show(
        &serde_json::to_value(&report)?,
        crate::human::codex_doctor_checklist,
    )?;
    if let Some(error) = &report.codex.error {
        eprintln!(
            "formwork: doctor: {}",
            crate::terminal::inert_message(error)
        );
        return Ok(Outcome::Failure);
    }
    Ok(verdict(&report.symptoms))
}

/// Prints the report: for people as `checklist` makes it, else as JSON.
fn show(printed: &Value, checklist: fn(&Value) -> String) -> anyhow::Result<()> {
    if crate::human::for_people() {
        print!("{}", checklist(printed));
    } else {
        println!("{}", serde_json::to_string_pretty(printed)?);
    }
    Ok(())
}

/// Each row that applies on stderr, and the exit: 1 when one applies, else 0.
fn verdict(symptoms: &[formwork_host::doctor::Symptom]) -> Outcome {
    for symptom in symptoms {
        if symptom.applies == Some(true) {
            eprintln!(
                "formwork: doctor: {}: {}",
                symptom.symptom,
                crate::terminal::inert(&symptom.cause)
            );
        }
    }
    if symptoms.iter().any(|symptom| symptom.applies == Some(true)) {
        Outcome::Negative
    } else {
        Outcome::Success
    }
}

/// The report as printed: the doctor's findings, with the config's effective policy as
/// `policy` right after `connection`.
fn printed(report: &Report, config: &Config) -> anyhow::Result<Value> {
    let mut printed = serde_json::to_value(report)?;
    let fields = printed
        .as_object_mut()
        .context("the doctor's report is not a JSON object")?;
    let after_connection = fields
        .keys()
        .position(|key| key == "connection")
        .map_or(0, |index| index + 1);
    fields.shift_insert(
        after_connection,
        "policy".to_owned(),
        policy_report::effective_policy(config),
    );
    Ok(printed)
}

/// The plugin to reach and the server name its config settings are looked up under. A plugin
/// named with `--plugin`/`--url` takes the settings of the configured server it matches (same
/// URL, or the same command line), if any.
fn resolve(choice: Choice, config: &Config) -> anyhow::Result<(PluginTarget, String)> {
    let exe = std::env::current_exe().context("cannot find formwork's own path")?;
    match choice {
        Choice::Configured(name) => {
            let server = configured_server(config, &name)?;
            let target = formwork_host::server_target(&server.transport, Some(&exe));
            Ok((target, name))
        }
        Choice::Adhoc(target) => {
            let matched = config.mcp_servers.iter().find(|(_, server)| {
                formwork_host::server_target(&server.transport, Some(&exe)) == target
                    || same_command(&server.transport, &target)
            });
            if let Some((name, _)) = matched {
                return Ok((target, name.clone()));
            }
            let mut name = plugin_name(&target);
            if config.server(&name).is_some() {
                // Not that server: keep its settings out of the verdicts.
                name.push_str(" (command line)");
            }
            Ok((target, name))
        }
    }
}

/// Whether a configured transport is the command line or URL given.
fn same_command(transport: &formwork_host::config::Transport, target: &PluginTarget) -> bool {
    use formwork_host::config::Transport;
    match (transport, target) {
        (Transport::StreamableHttp { url, .. }, PluginTarget::Url(given)) => url == given,
        (
            Transport::Stdio {
                command,
                args,
                env,
                env_vars,
                cwd: None,
            },
            PluginTarget::Command { line: given, .. },
        ) if env.is_empty() && env_vars.is_empty() => {
            let words: Vec<&str> = std::iter::once(command.as_str())
                .chain(args.iter().map(String::as_str))
                .collect();
            shell_words(given).is_some_and(|given| given == words)
        }
        _ => false,
    }
}

/// Splits a simple `sh -c` command line into words: blanks separate, single and double quotes
/// and backslashes quote. `None` when it uses anything else of the shell (variables,
/// redirections, pipes, ...), which no configured command line can equal.
fn shell_words(line: &str) -> Option<Vec<String>> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' | '\n' => {
                if let Some(done) = word.take() {
                    words.push(done);
                }
            }
            '\'' => {
                let current = word.get_or_insert_with(String::new);
                loop {
                    match chars.next()? {
                        '\'' => break,
                        other => current.push(other),
                    }
                }
            }
            '"' => {
                let current = word.get_or_insert_with(String::new);
                loop {
                    match chars.next()? {
                        '"' => break,
                        '\\' => match chars.next()? {
                            escaped @ ('"' | '\\' | '$' | '`') => current.push(escaped),
                            other => {
                                current.push('\\');
                                current.push(other);
                            }
                        },
                        '$' | '`' => return None,
                        other => current.push(other),
                    }
                }
            }
            '\\' => word.get_or_insert_with(String::new).push(chars.next()?),
            '$' | '`' | '|' | '&' | ';' | '<' | '>' | '(' | ')' | '*' | '?' | '[' | '~' | '#' => {
                return None;
            }
            other => word.get_or_insert_with(String::new).push(other),
        }
    }
    words.extend(word);
    Some(words)
}

/// A short name for a plugin given on the command line: the program (or script) name, or the
/// URL's host.
fn plugin_name(target: &PluginTarget) -> String {
    match target {
        PluginTarget::Command { line, .. } => line
            .split_whitespace()
            .map(|word| word.trim_matches(|c| c == '\'' || c == '"'))
            .filter(|word| !word.contains('='))
            .map(|word| word.rsplit('/').next().unwrap_or(word))
            .find(|word| {
                !matches!(
                    *word,
                    "npx" | "-y" | "node" | "python" | "python3" | "uv" | "run" | "env" | "exec"
                )
            })
            .map(|word| {
                // A script's name without its extension: a usable [mcp_servers.<name>] key.
                [".mjs", ".cjs", ".js", ".ts", ".py"]
                    .iter()
                    .find_map(|ext| word.strip_suffix(ext))
                    .filter(|stem| !stem.is_empty())
                    .unwrap_or(word)
            })
            .unwrap_or("plugin")
            .to_owned(),
        PluginTarget::Url(url) => url
            .split_once("://")
            .and_then(|(_, rest)| rest.split(['/', '?', '#']).next())
            .filter(|host| !host.is_empty())
            .unwrap_or("plugin")
            .to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_words_unquote_simple_command_lines() {
        assert_eq!(
            shell_words(r#"'/a b/node' "/x/\"y\".mjs" c\ d  e"#),
            Some(vec![
                "/a b/node".to_owned(),
                "/x/\"y\".mjs".to_owned(),
                "c d".to_owned(),
                "e".to_owned()
            ])
        );
        assert_eq!(
            shell_words("node ''"),
            Some(vec!["node".to_owned(), String::new()])
        );
        assert_eq!(shell_words("node $HOME/x"), None);
        assert_eq!(shell_words("node 'open"), None);
    }

    #[test]
    fn plugin_names_are_config_keys() {
        let name = |line: &str| plugin_name(&PluginTarget::command(line));
        assert_eq!(
            name("'/p/.bin/node' '/p/doctor_plugin.mjs' --flag"),
            "doctor_plugin"
        );
        assert_eq!(
            name("npx -y @scope/server-everything stdio"),
            "server-everything"
        );
        assert_eq!(name("FOO=1 python3 shop.py"), "shop");
        let url = PluginTarget::Url("http://127.0.0.1:3001/mcp".to_owned());
        assert_eq!(plugin_name(&url), "127.0.0.1:3001");
    }
}
