//! `formwork doctor --runtime codex`: the plugin-forms symptom table against real Codex.
//!
//! The doctor runs Codex as the Codex runtime would (the same `config.toml`, thread policy,
//! client identity and extensions), in a home of its own, and calls the tool inside a real Codex
//! turn: its own scripted model (`codex_model.rs`) asks Codex for exactly that call, so Codex's
//! approvals and routing apply as in a conversation. A stdio plugin runs behind the doctor's tap
//! (`tap.rs`), so the doctor also sees what the plugin asked and what Codex answered it, which
//! Codex's client never sees when Codex answers by itself. It reads Codex's log for the refusals
//! only the log tells.
//!
//! Like the direct doctor it never sends content: a form that reaches it is answered as the
//! runtime would answer it when formwork's policy or engine refuses it, else `cancel`. It allows
//! a tool approval Codex asks for once, so the call can run, and declines Codex's own commands.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Serialize;
use serde_json::{Value, json};
use tokio::sync::{mpsc, watch};

use super::Symptom;
use super::codex_model::DoctorModel;
use super::tap::{self, Tapped};
use crate::config::{Config, ModelChoice, ModelProvider, Transport, WireApi};
use crate::jsonrpc::code;
use crate::policy;
use crate::runtime::codex::protocol::{self, ApprovalAskedAs, ServerRequest};
use crate::runtime::codex::{
    AppServer, CodexError, CodexOptions, ConfigFileError, Inbound, TomlEditError, log::LogNotice,
};

/// The provider id of the doctor's model in the Codex config it writes.
const DOCTOR_PROVIDER: &str = "formwork_doctor";
/// How long a turn may run in all.
const TURN_LIMIT: Duration = Duration::from_secs(120);

/// How to run the doctor under Codex.
#[derive(Debug, Clone)]
pub struct CodexDoctorOptions {
    /// The server's name: its `[mcp_servers.<name>]` table in the config is the plugin.
    pub server: String,
    /// The tool to call, with its arguments; without it the doctor only starts Codex and lists.
    pub tool: Option<(String, Option<Value>)>,
    /// How to run Codex; its `home` is the doctor's own, which it writes and may remove.
    pub codex: CodexOptions,
    /// The Codex runtime's own home, when there is one: its `config.toml` (and formwork's
    /// record of it) seed the doctor's, so the person's own keys there count here too.
    pub runtime_home: Option<PathBuf>,
    /// The formwork binary: it runs the built-in servers and the tap (`doctor-tap`).
    pub formwork_exe: PathBuf,
    /// How long the call may still take after the plugin got its last form answer before the
    /// doctor calls it stuck.
    pub wait_after_answer: Duration,
}

/// What the doctor found under Codex, in the order it is printed.
#[derive(Debug, Clone, Serialize)]
pub struct CodexReport {
    /// How Codex ran.
    pub codex: CodexSetup,
    /// The server as Codex listed it.
    pub server: ServerSeen,
    /// The `--tool` call, when one was asked for.
    pub call: Option<CodexCall>,
    /// Every request Codex sent formwork (its client), in order.
    pub requests: Vec<RequestSeen>,
    /// Every request the plugin sent Codex and what Codex answered it (stdio plugins, through
    /// the tap).
    pub plugin_requests: Vec<PluginRequest>,
    /// What Codex's log said about the plugin's forms.
    pub codex_log: Vec<String>,
    /// One entry per row of the symptom table, in the table's order.
    pub symptoms: Vec<Symptom>,
}

impl CodexReport {
    /// Whether Codex started and the thread ran.
    pub fn started(&self) -> bool {
        self.codex.error.is_none()
    }
}

/// How Codex was run.
#[derive(Debug, Clone, Serialize)]
pub struct CodexSetup {
    /// The program.
    pub command: String,
    /// The doctor's `CODEX_HOME`.
    pub home: String,
    /// The thread's approval policy, as sent.
    pub approval_policy: Value,
    /// Whether formwork declared the `openai/form` extension (`features.openai_elicitation`).
    pub openai_form_extension: bool,
    /// The `config.toml` written for Codex (the server as the runtime writes it; a stdio
    /// plugin behind the tap).
    pub config: String,
    /// Why Codex could not run the diagnosis.
    pub error: Option<String>,
}

/// The server as Codex listed it.
#[derive(Debug, Clone, Serialize)]
pub struct ServerSeen {
    /// Its name.
    pub name: String,
    /// Its tools: `{name, annotations}`.
    pub tools: Vec<Value>,
    /// Why Codex could not list them.
    pub tools_error: Option<String>,
    /// Whether the plugin ran behind the tap (stdio only).
    pub tapped: bool,
    /// The approval mode Codex's config gives the `--tool` (or, without one, the server's
    /// tools): `{mode, key}`, the key that says so.
    pub approval_mode: Option<Value>,
}

/// How the call went.
#[derive(Debug, Clone, Serialize)]
pub struct CodexCall {
    /// The tool.
    pub tool: String,
    /// The arguments sent.
    pub arguments: Value,
    /// `returned`, `failed` (Codex reported an error for it), `stuck` (no end within the wait
    /// after the plugin's last form answer) or `not-called` (the turn ended without it).
    pub outcome: &'static str,
    /// The `CallToolResult` as Codex reported it.
    pub result: Option<Value>,
    /// The error Codex reported.
    pub error: Option<String>,
}

/// A request Codex sent formwork.
#[derive(Debug, Clone, Serialize)]
pub struct RequestSeen {
    /// The method.
    pub method: String,
    /// `form`, `tool-approval`, `questions`, `command-approval`, `file-change-approval`,
    /// `permissions-approval` or `other`.
    pub kind: &'static str,
    /// The server it names, if any.
    pub server: Option<String>,
    /// Codex's turn, `null` when it came outside one.
    pub turn: Option<String>,
    /// Whether the tool call was running.
    pub during_call: bool,
    /// Whether a turn or the tool call was running: a form the runtime can show.
    pub during_turn: bool,
    /// A form's mode and message.
    pub mode: Option<Value>,
    /// The message.
    pub message: Option<String>,
    /// Why formwork could not show the form (its engine), if so.
    pub decline: Option<String>,
    /// What formwork's policy says of plugin forms.
    pub gate: Option<String>,
    /// What the doctor answered.
    pub answer: Value,
}

/// A request the plugin sent Codex, and Codex's answer.
#[derive(Debug, Clone, Serialize)]
pub struct PluginRequest {
    /// The method (`elicitation/create`, `openai/form`, ...).
    pub method: String,
    /// The form's mode, when it is one.
    pub mode: Option<Value>,
    /// The message.
    pub message: Option<String>,
    /// Codex's answer: the result, or `{"error": ...}`; `null` when none came.
    pub answer: Value,
}

/// What the inbound loop saw.
#[derive(Default)]
struct Observed {
    requests: Vec<RequestSeen>,
    log: Vec<String>,
    in_call: bool,
    call_item: Option<Value>,
    approval_asked: bool,
    last_answer: Option<tokio::time::Instant>,
    turn_ended: bool,
}

/// Runs the diagnosis. Never fails: a Codex that does not start gives a report with
/// `codex.error`.
pub async fn diagnose(config: &Config, options: CodexDoctorOptions) -> CodexReport {
    let _ = std::fs::remove_dir_all(&options.codex.home);
    let _ = std::fs::create_dir_all(&options.codex.home);
    if let Some(runtime_home) = &options.runtime_home {
        for file in [
            crate::runtime::codex::CONFIG_FILE,
            crate::runtime::codex::MANAGED_FILE,
        ] {
            let _ = std::fs::copy(runtime_home.join(file), options.codex.home.join(file));
        }
    }
    let record = options.codex.home.join("tap.jsonl");
    let mut config = config.clone();
    let tapped = tap_server(&mut config, &options, &record);
    let started = match &options.tool {
        Some((tool, arguments)) => DoctorModel::start(
            format!("mcp__{}", options.server),
            tool.clone(),
            arguments.clone().unwrap_or_else(|| json!({})),
        )
        .await
        .map(Some)
        .map_err(|err| format!("the doctor's model could not start: {err}")),
        None => Ok(None),
    };
    let (model, model_error) = match started {
        Ok(model) => (model, None),
        Err(err) => (None, Some(err)),
    };
    let choice = model.as_ref().map(|model| {
        let provider = ModelProvider {
            name: "formwork doctor".to_owned(),
            base_url: model.url.clone(),
            env_key: None,
            wire_api: WireApi::Responses,
            http_headers: Default::default(),
            env_http_headers: Default::default(),
            query_params: Default::default(),
            request_max_retries: 0,
            stream_max_retries: 0,
            stream_idle_timeout: Duration::from_secs(60),
        };
        config
            .model_providers
            .insert(DOCTOR_PROVIDER.to_owned(), provider.clone());
        ModelChoice {
            provider_id: DOCTOR_PROVIDER.to_owned(),
            provider,
            model: "formwork-doctor".to_owned(),
            tool_output_max_bytes: 10_000,
        }
    });
    let policy = crate::runtime::codex::approval_policy(&config);
    let mut report = CodexReport {
        codex: CodexSetup {
            command: options.codex.command.clone(),
            home: options.codex.home.display().to_string(),
            approval_policy: policy.clone(),
            openai_form_extension: options.codex.openai_form,
            config: String::new(),
            error: None,
        },
        server: ServerSeen {
            name: options.server.clone(),
            tools: Vec::new(),
            tools_error: None,
            tapped,
            approval_mode: None,
        },
        call: None,
        requests: Vec::new(),
        plugin_requests: Vec::new(),
        codex_log: Vec::new(),
        symptoms: Vec::new(),
    };
    if let Some(err) = model_error {
        report.codex.error = Some(err);
        return report;
    }
    match write_doctor_config(&config, &options, choice.as_ref()) {
        Ok(text) => {
            report.server.approval_mode = crate::runtime::codex::tool_approval_mode(
                &text,
                &options.server,
                options.tool.as_ref().map_or("", |(tool, _)| tool.as_str()),
            )
            .map(|(mode, key)| json!({"mode": mode, "key": key}));
            report.codex.config = crate::runtime::codex::redacted(&text);
        }
        Err(err) => {
            report.codex.error = Some(format!("Codex's config could not be written: {err}"));
            return report;
        }
    }
    let observed = Arc::new(Mutex::new(Observed::default()));
    if let Err(err) = run(&config, &options, &policy, &observed, &mut report).await {
        report.codex.error = Some(err.to_string());
    }
    drop(model);
    let observed = std::mem::take(
        &mut *observed
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()),
    );
    report.requests = observed.requests;
    report.codex_log = observed.log;
    if let Some(call) = report.call.as_mut()
        && call.outcome != "stuck"
    {
        match &observed.call_item {
            Some(item) => {
                if let Some(error) = item.pointer("/error/message").and_then(Value::as_str) {
                    call.outcome = "failed";
                    call.error = Some(error.to_owned());
                } else {
                    call.outcome = "returned";
                    call.result = item.get("result").cloned();
                }
            }
            None => call.outcome = "not-called",
        }
    }
    if tapped {
        report.plugin_requests = plugin_requests(&tap::read(&record));
    }
    if report.started() {
        report.symptoms =
            super::codex_symptoms::symptoms(&config, &report, observed.approval_asked);
    }
    report
}

/// Writes the doctor's Codex config as the runtime would, with every other server switched
/// off; gives its text.
fn write_doctor_config(
    config: &Config,
    options: &CodexDoctorOptions,
    choice: Option<&ModelChoice>,
) -> Result<String, DoctorConfigError> {
    let written = crate::runtime::codex::write_config(
        &options.codex.home,
        config,
        choice,
        &options.formwork_exe,
    )?;
    let text = std::fs::read_to_string(&written.path)?;
    let text = crate::runtime::codex::only_server(&text, &options.server)?;
    std::fs::write(&written.path, &text)?;
    Ok(text)
}

/// Why the doctor's Codex config could not be written.
#[derive(Debug, thiserror::Error)]
enum DoctorConfigError {
    #[error(transparent)]
    Write(#[from] ConfigFileError),
    #[error(transparent)]
    Io(#[from] std::io::Error),
    #[error(transparent)]
    Edit(#[from] TomlEditError),
}

/// Starts Codex, lists the server's tools on a new thread, and runs the call in a turn.
async fn run(
    config: &Config,
    options: &CodexDoctorOptions,
    policy: &Value,
    observed: &Arc<Mutex<Observed>>,
    report: &mut CodexReport,
) -> Result<(), CodexError> {
    let (inbound, incoming) = mpsc::unbounded_channel();
    let server = AppServer::start(&options.codex, inbound).await?;
    let (ended_tx, ended) = watch::channel(false);
    let answering = tokio::spawn(answer_all(
        Arc::clone(&server),
        incoming,
        Arc::clone(observed),
        config.clone(),
        options.server.clone(),
        ended_tx,
    ));
    let outcome = drive(&server, options, policy, observed, report, ended).await;
    // Codex's last log lines arrive before it exits.
    tokio::time::sleep(Duration::from_millis(100)).await;
    answering.abort();
    outcome
}

/// The thread and the turn of [`run`].
async fn drive(
    server: &Arc<AppServer>,
    options: &CodexDoctorOptions,
    policy: &Value,
    observed: &Arc<Mutex<Observed>>,
    report: &mut CodexReport,
    mut ended: watch::Receiver<bool>,
) -> Result<(), CodexError> {
    let cwd = options.codex.cwd.display().to_string();
    let thread = server.start_thread(&cwd, policy, TURN_LIMIT).await?;
    let status = server
        .request_within(
            "mcpServerStatus/list",
            protocol::all_server_tools(&thread),
            TURN_LIMIT,
        )
        .await?;
    let entry = status["data"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|entry| entry["name"] == options.server.as_str());
    if let Some(entry) = entry {
        report.server.tools_error = entry["toolsError"].as_str().map(str::to_owned);
        report.server.tools = entry["tools"]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(name, tool)| json!({"name": name, "annotations": tool.get("annotations").cloned().unwrap_or(Value::Null)}))
            .collect();
    } else {
        report.server.tools_error = Some("Codex does not list this server".to_owned());
    }
    if let Some((tool, arguments)) = &options.tool {
        let mut call = CodexCall {
            tool: tool.clone(),
            arguments: arguments.clone().unwrap_or_else(|| json!({})),
            outcome: "not-called",
            result: None,
            error: None,
        };
        let turn = server
            .start_turn(
                &thread,
                &format!("formwork doctor: call {tool}"),
                policy,
                TURN_LIMIT,
            )
            .await?;
        let deadline = tokio::time::Instant::now() + TURN_LIMIT;
        loop {
            let stuck_at = {
                let seen = observed
                    .lock()
                    .unwrap_or_else(|poisoned| poisoned.into_inner());
                seen.last_answer
                    .filter(|_| seen.in_call)
                    .map(|answered| answered + options.wait_after_answer)
            };
            let stuck = async {
                match stuck_at {
                    Some(at) => tokio::time::sleep_until(at).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                _ = ended.wait_for(|ended| *ended) => break,
                () = stuck => {
                    call.outcome = "stuck";
                    call.error = Some(format!(
                        "the call had not ended {} s after the plugin got its last form answer",
                        options.wait_after_answer.as_secs_f64()
                    ));
                    break;
                }
                () = tokio::time::sleep_until(deadline) => {
                    call.error = Some(format!("the turn had not ended after {} s", TURN_LIMIT.as_secs()));
                    call.outcome = "stuck";
                    break;
                }
                // Each answer moves the stuck clock: look again.
                () = tokio::time::sleep(Duration::from_millis(50)) => {}
            }
        }
        if call.outcome == "stuck" {
            let _ = server
                .request_within(
                    "turn/interrupt",
                    protocol::turn_interrupt(&thread, &turn),
                    Duration::from_secs(5),
                )
                .await;
        }
        report.call = Some(call);
    }
    Ok(())
}

/// Answers everything Codex asks, as the doctor does, and records it.
async fn answer_all(
    server: Arc<AppServer>,
    mut incoming: mpsc::UnboundedReceiver<Inbound>,
    observed: Arc<Mutex<Observed>>,
    config: Config,
    target: String,
    ended: watch::Sender<bool>,
) {
    let gate = policy::elicitation_gate(&config);
    let parse = formwork_forms::ParseOptions {
        openai_elicitation: config.features.openai_elicitation,
    };
    while let Some(message) = incoming.recv().await {
        let lock = || {
            observed
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
        };
        match message {
            Inbound::Log(line) => {
                if let Some(LogNotice::SchemaRefused { server, reason }) =
                    crate::runtime::codex::log::read_line(&line)
                {
                    lock().log.push(format!(
                        "{server}: {} ({reason})",
                        crate::runtime::codex::log::SCHEMA_REFUSED
                    ));
                }
            }
            Inbound::Notification { method, params } => {
                let item = params.get("item");
                let ours = item.is_some_and(|item| {
                    item["type"] == "mcpToolCall" && item["server"] == target.as_str()
                });
                match method.as_str() {
                    "item/started" if ours => lock().in_call = true,
                    "item/completed" if ours => {
                        let mut seen = lock();
                        seen.in_call = false;
                        seen.call_item = item.cloned();
                    }
                    "turn/completed" => {
                        lock().turn_ended = true;
                        let _ = ended.send(true);
                    }
                    _ => {}
                }
            }
            Inbound::Request { id, method, params } => {
                let during_call = lock().in_call;
                let turn = params["turnId"].as_str().map(str::to_owned);
                let during_turn = during_call || turn.is_some();
                let mut seen = RequestSeen {
                    method: method.clone(),
                    kind: "other",
                    server: params["serverName"].as_str().map(str::to_owned),
                    turn,
                    during_call,
                    during_turn,
                    mode: None,
                    message: None,
                    decline: None,
                    gate: None,
                    answer: Value::Null,
                };
                let answer = match protocol::read_request(&method, &params) {
                    ServerRequest::Form { params: form, .. } => {
                        seen.kind = "form";
                        seen.mode = Some(form.get("mode").cloned().unwrap_or(json!("form")));
                        seen.message = form["message"].as_str().map(str::to_owned);
                        seen.gate = Some(match &gate {
                            Ok(allowed) => allowed.to_string(),
                            Err(declined) => declined.to_string(),
                        });
                        let parsed = formwork_forms::parse_request_with(&form, parse);
                        if let Err(decline) = &parsed {
                            seen.decline = Some(decline.to_string());
                        }
                        // As the runtime answers: `decline` for what its policy or engine
                        // refuses and for a form outside any turn; else the doctor's `cancel`.
                        let action = if gate.is_err() || parsed.is_err() || !during_turn {
                            "decline"
                        } else {
                            "cancel"
                        };
                        lock().last_answer = Some(tokio::time::Instant::now());
                        Some(protocol::elicitation_answer(action, None, None))
                    }
                    ServerRequest::ToolApproval(ask) => {
                        seen.kind = "tool-approval";
                        seen.message = Some(ask.message.clone());
                        lock().approval_asked = true;
                        Some(match &ask.asked_as {
                            ApprovalAskedAs::Form => {
                                protocol::elicitation_answer("accept", Some(json!({})), None)
                            }
                            ApprovalAskedAs::Question(question) => {
                                json!({"answers": {question: {"answers": ["Allow"]}}})
                            }
                        })
                    }
                    ServerRequest::Questions { .. } => {
                        seen.kind = "questions";
                        Some(protocol::questions_answer(None))
                    }
                    ServerRequest::Command { .. } => {
                        seen.kind = "command-approval";
                        Some(json!({"decision": "decline"}))
                    }
                    ServerRequest::FileChange { .. } => {
                        seen.kind = "file-change-approval";
                        Some(json!({"decision": "decline"}))
                    }
                    ServerRequest::Permissions { permissions, .. } => {
                        seen.kind = "permissions-approval";
                        Some(protocol::permissions_answer(&permissions, false, false))
                    }
                    ServerRequest::Unsupported => None,
                };
                match &answer {
                    Some(answer) => server.respond(&id, answer),
                    None => server.respond_error(
                        &id,
                        code::METHOD_NOT_FOUND,
                        &format!("formwork does not serve {method}"),
                    ),
                }
                seen.answer = answer.unwrap_or(Value::Null);
                lock().requests.push(seen);
            }
            Inbound::Closed(_) => {
                let _ = ended.send(true);
                return;
            }
        }
    }
}

/// Puts a stdio (or built-in) server behind the tap; `false` when it is reached over HTTP.
fn tap_server(config: &mut Config, options: &CodexDoctorOptions, record: &Path) -> bool {
    let Some(server) = config.mcp_servers.get_mut(&options.server) else {
        return false;
    };
    let (program, args, env, env_vars, cwd) = match &server.transport {
        Transport::Stdio {
            command,
            args,
            env,
            env_vars,
            cwd,
        } => (
            command.clone(),
            args.clone(),
            env.clone(),
            env_vars.clone(),
            cwd.clone(),
        ),
        Transport::Builtin { args } => (
            options.formwork_exe.display().to_string(),
            args.clone(),
            Default::default(),
            Vec::new(),
            None,
        ),
        Transport::StreamableHttp { .. } => return false,
    };
    let mut tap_args = vec![
        "doctor-tap".to_owned(),
        "--record".to_owned(),
        record.display().to_string(),
        "--".to_owned(),
        program,
    ];
    tap_args.extend(args);
    server.transport = Transport::Stdio {
        command: options.formwork_exe.display().to_string(),
        args: tap_args,
        env,
        env_vars,
        cwd,
    };
    true
}

/// The plugin's requests and Codex's answers, paired by id.
fn plugin_requests(tapped: &[Tapped]) -> Vec<PluginRequest> {
    tapped
        .iter()
        .filter(|entry| entry.from == "plugin")
        .filter_map(|entry| {
            let method = entry.message.get("method")?.as_str()?;
            let id = entry.message.get("id")?;
            if method == "ping" {
                return None;
            }
            let answer = tapped
                .iter()
                .filter(|reply| reply.from == "codex")
                .find(|reply| {
                    reply.message.get("id") == Some(id) && reply.message.get("method").is_none()
                })
                .map(|reply| match reply.message.get("result") {
                    Some(result) => result.clone(),
                    None => json!({"error": reply.message.get("error")}),
                })
                .unwrap_or(Value::Null);
            let params = &entry.message["params"];
            Some(PluginRequest {
                method: method.to_owned(),
                mode: params.get("mode").cloned(),
                message: params["message"].as_str().map(str::to_owned),
                answer,
            })
        })
        .collect()
}
