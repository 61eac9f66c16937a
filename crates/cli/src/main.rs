//! `formwork`: call plugin tools from a terminal or a script and answer their forms.
//!
//! The binary is thin: it parses arguments, picks a form responder, and maps every outcome
//! to an exit code in one place (`Outcome`). The contract is written down in `docs/cli.md`.

mod answers;
mod chat_cmd;
mod commands;
mod config_cmd;
mod demo_plugin;
mod doctor_cmd;
mod human;
mod login_cmd;
mod logout_cmd;
mod policy_report;
mod runtime;
mod serve_cmd;
mod store_args;
mod stored_call;
mod terminal;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use formwork_host::PluginTarget;

#[derive(Parser)]
#[command(
    name = "formwork",
    version,
    about = "An MCP host for interactive plugin forms"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Print JSON even to a terminal (`tools`, `call`, `doctor` and `config check` print a summary
    /// for people there, and JSON when piped).
    #[arg(long, global = true)]
    json: bool,
}

#[derive(Subcommand)]
enum Command {
    /// Print a plugin's tools as JSON.
    Tools {
        #[command(flatten)]
        plugin: PluginArgs,
        #[command(flatten)]
        config: config_cmd::ConfigArgs,
    },
    /// Call a tool, answer its forms, print the CallToolResult JSON.
    Call {
        #[command(flatten)]
        plugin: PluginArgs,
        /// The tool's name.
        tool: String,
        #[command(flatten)]
        call: CallArgs,
        #[command(flatten)]
        config: config_cmd::ConfigArgs,
    },
    /// Check, import and sync formwork.toml.
    Config {
        #[command(subcommand)]
        command: config_cmd::ConfigCommand,
    },
    /// Trust a project: its formwork.toml then applies on top of the user config (or, with
    /// --revoke, no longer does).
    Trust {
        /// The project directory (default: the one whose formwork.toml is found from here,
        /// else this directory).
        dir: Option<PathBuf>,
        /// Take the trust back: remove the project from the user config's trusted projects.
        #[arg(long)]
        revoke: bool,
    },
    /// Sign in to a configured Streamable HTTP server that asks for OAuth authorization (opens
    /// a browser; the tokens are kept for later runs).
    Login(login_cmd::LoginArgs),
    /// Forget the OAuth sign-in (the stored tokens) of a configured Streamable HTTP server.
    Logout(logout_cmd::LogoutArgs),
    /// Connect to a plugin and explain which plugin-form symptoms apply, and what to change.
    Doctor(doctor_cmd::DoctorArgs),
    /// Serve the web workbench on 127.0.0.1 (prints its URL with the access token).
    Serve(serve_cmd::ServeArgs),
    /// Send one message to the model; its text streams to stdout, and the forms of the tools
    /// it calls are asked here (or answered from --answers).
    Chat(chat_cmd::ChatArgs),
    /// Work with elicitation schemas.
    Schema {
        #[command(subcommand)]
        command: SchemaCommand,
    },
    /// Call the bundled demo plugin's `deploy` tool and answer its forms.
    Demo {
        /// The demo tool to call.
        #[arg(default_value = "deploy")]
        tool: String,
        #[command(flatten)]
        call: CallArgs,
        #[command(flatten)]
        config: config_cmd::ConfigArgs,
    },
    /// Print a shell completion script (bash, zsh, fish, elvish or powershell) on stdout.
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Serve the bundled demo plugin over stdio (what `demo` connects to).
    #[command(hide = true)]
    DemoPlugin,
    /// Relay a stdio plugin and record every line both ways (what `doctor --runtime codex`
    /// puts between Codex and the plugin).
    #[command(hide = true)]
    DoctorTap {
        /// The file each line is appended to, as JSON.
        #[arg(long, value_name = "FILE")]
        record: PathBuf,
        /// The plugin's program and arguments.
        #[arg(last = true, required = true)]
        command: Vec<String>,
    },
}

#[derive(Subcommand)]
enum SchemaCommand {
    /// Print the render block for a requestedSchema (or whole elicitation/create params).
    Check {
        /// The JSON file to read; `-` or nothing reads stdin.
        file: Option<PathBuf>,
        /// Read it as `features.openai_elicitation = true` would: OpenAI's form shapes and
        /// vocabulary (thumbnails, free-text lists, resource pickers).
        #[arg(long)]
        openai_elicitation: bool,
    },
}

#[derive(Args)]
struct PluginArgs {
    #[command(flatten)]
    target: PluginTargetArgs,
    /// The MCP protocol version to speak: `auto` (2026-07-28 when the plugin offers it, else
    /// the `initialize` handshake) or a version such as `2025-11-25`. Overrides the server's
    /// `protocol_version`.
    #[arg(long, value_name = "VERSION")]
    protocol: Option<String>,
}

#[derive(Args)]
#[group(required = true, multiple = false)]
struct PluginTargetArgs {
    /// The plugin as a shell command, spoken to over stdio.
    #[arg(long, value_name = "COMMAND")]
    plugin: Option<String>,
    /// The plugin as a Streamable HTTP endpoint.
    #[arg(long, value_name = "URL")]
    url: Option<String>,
    /// A server configured in formwork.toml (`[mcp_servers.<NAME>]`); its approval settings apply.
    #[arg(long, value_name = "NAME")]
    server: Option<String>,
}

/// Which plugin a command talks to.
pub enum Choice {
    /// Named on the command line: it is called because the person asked, so no approval card.
    Adhoc(PluginTarget),
    /// A configured server, under the config's approval settings.
    Configured(String),
}

impl PluginArgs {
    fn choice(&self) -> Choice {
        let target = &self.target;
        match (&target.plugin, &target.url, &target.server) {
            (_, _, Some(server)) => Choice::Configured(server.clone()),
            (_, Some(url), None) => Choice::Adhoc(PluginTarget::Url(url.clone())),
            (Some(command), None, None) => Choice::Adhoc(PluginTarget::command(command.clone())),
            // clap's required group guarantees one of the three.
            (None, None, None) => Choice::Adhoc(PluginTarget::command(String::new())),
        }
    }

    /// `--protocol`, read: `None` when not given; `Some(None)` for `auto`.
    fn protocol(&self) -> anyhow::Result<Protocol> {
        self.protocol
            .as_deref()
            .map(formwork_host::config::parse_protocol_version)
            .transpose()
            .map_err(|reason| anyhow::anyhow!("--protocol: {reason}"))
    }
}

/// A `--protocol` given on the command line (`Some(None)`: `auto`), which wins over the
/// server's `protocol_version`.
pub type Protocol = Option<Option<rmcp::model::ProtocolVersion>>;

#[derive(Args)]
struct CallArgs {
    /// The tool's arguments as a JSON object.
    #[arg(long, value_name = "JSON")]
    args: Option<String>,
    /// A JSON array of answers, consumed one element per form.
    #[arg(long, value_name = "FILE", conflicts_with = "accept_defaults")]
    answers: Option<PathBuf>,
    /// Accept every form with its defaults.
    #[arg(long)]
    accept_defaults: bool,
    /// Seconds a tool call may run, not counting time a form is open (with --store, the
    /// server's tool_timeout_sec applies instead).
    #[arg(long, value_name = "SECONDS", default_value_t = 60)]
    timeout: u64,
    /// Keep the call as a session in this store (default: `[store] url`, else nothing is
    /// kept); needs a configured server (--server).
    #[command(flatten)]
    store: store_args::StoreArgs,
}

/// How a command ended; the only place exit codes are chosen.
pub enum Outcome {
    /// Exit 0.
    Success,
    /// Exit 1: the tool reported an error, or a schema was declined.
    Negative,
    /// Exit 2: a host, connection, protocol or scripted-answer failure, already reported.
    Failure,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    human::set_json(cli.json);
    init_logging();
    let outcome = match cli.command {
        Command::Schema {
            command:
                SchemaCommand::Check {
                    file,
                    openai_elicitation,
                },
        } => commands::schema_check(file.as_deref(), openai_elicitation),
        Command::Config { command } => config_cmd::run(command),
        Command::Trust { dir, revoke: false } => config_cmd::trust(dir.as_deref()),
        Command::Trust { dir, revoke: true } => config_cmd::revoke_trust(dir.as_deref()),
        Command::Login(args) => block_on(login_cmd::run(&args)),
        Command::Completions { shell } => {
            use clap::CommandFactory as _;
            clap_complete::generate(
                shell,
                &mut Cli::command(),
                "formwork",
                &mut std::io::stdout(),
            );
            Ok(Outcome::Success)
        }
        Command::Logout(args) => logout_cmd::run(&args),
        Command::Doctor(args) => block_on(doctor_cmd::run(&args)),
        Command::Chat(args) => block_on(chat_cmd::run(&args)),
        Command::Serve(args) => {
            serve_runtime().and_then(|runtime| runtime.block_on(serve_cmd::run(&args)))
        }
        Command::Tools { plugin, config } => plugin
            .protocol()
            .and_then(|protocol| block_on(commands::tools(plugin.choice(), protocol, &config))),
        Command::Call {
            plugin,
            tool,
            call,
            config,
        } => plugin.protocol().and_then(|protocol| {
            block_on(commands::call(
                plugin.choice(),
                protocol,
                &tool,
                &call,
                &config,
                false,
            ))
        }),
        Command::Demo { tool, call, config } => block_on(commands::call(
            Choice::Configured("demo".to_owned()),
            None,
            &tool,
            &call,
            &config,
            true,
        )),
        Command::DemoPlugin => block_on(demo_plugin::serve()).map(|()| Outcome::Success),
        Command::DoctorTap { record, command } => match command.split_first() {
            Some((program, args)) => {
                match formwork_host::doctor::tap::run(&record, program, args) {
                    Ok(code) => std::process::exit(code),
                    Err(err) => Err(anyhow::anyhow!("doctor-tap: {program}: {err}")),
                }
            }
            None => Err(anyhow::anyhow!("doctor-tap: no plugin to run")),
        },
    };
    let code = match outcome {
        Ok(Outcome::Success) => 0,
        Ok(Outcome::Negative) => 1,
        Ok(Outcome::Failure) => 2,
        Err(err) => {
            eprintln!("formwork: {}", terminal::inert_message(&format!("{err:#}")));
            2
        }
    };
    // Exit at once: a terminal prompt may still block a thread after its plugin went away.
    std::process::exit(code)
}

/// One thread is enough for one plugin, and it saves a thread hop on every message; terminal
/// prompts run on the blocking pool.
fn block_on<T>(future: impl std::future::Future<Output = anyhow::Result<T>>) -> anyhow::Result<T> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?
        .block_on(future)
}

/// The workbench serves many sessions at once: it gets every core.
fn serve_runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Runtime::new()?)
}

fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("FORMWORK_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    // Colours only for a person: a log file or a test reading stderr gets plain text.
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr)
        .init();
}
