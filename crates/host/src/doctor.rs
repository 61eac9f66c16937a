//! `formwork doctor`: connect to one plugin, say what was negotiated and what the config
//! decides, optionally call one tool while recording every request the plugin sends, and explain
//! for each row of the plugin-forms symptom table whether it applies, why, and what to change.
//!
//! The doctor never sends content: every form that reaches its responder is answered `cancel`.
//! It does not apply the approval policy either; it reports what the policy *would* decide
//! (the plugin-form gate per form, the approval verdict per tool), so one run shows all causes.
//!
//! The diagnosis itself ([`symptoms`]) is pure: it reads the [`Report`] gathered by
//! [`diagnose`], so each row's rule can be tested without a plugin.

pub mod codex;
mod codex_model;
mod codex_symptoms;
mod symptoms;
pub mod tap;

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use formwork_forms::{ElicitationRequest, ParseOptions};
use serde::Serialize;
use serde_json::{Value, json};
use tokio::sync::Notify;
use tokio::time::Instant;

use crate::config::Config;
use crate::future::BoxFuture;
use crate::jsonrpc::RpcError;
use crate::plugin::{
    ClientExtensions, ConnectOptions, Era, OPENAI_ELICITATION_METHOD, Plugin, PluginTarget,
};
use crate::policy::{self, ApprovalNeed};
use crate::responder::{DeclineNotice, FormPrompt, FormReply, FormResponder};
use crate::sign_on;
use crate::{HostError, ServerInfo};

/// How long a plugin whose call failed gets to answer a `ping` before it is taken to be alive
/// but slow (the call's outcome stays `error`).
const PING_WAIT: Duration = Duration::from_secs(5);
/// The pause before that `ping`.
const PING_SETTLE: Duration = Duration::from_millis(500);

pub use symptoms::{SYMPTOMS, SymptomRow, symptoms};

pub use crate::plugin::{RequestObserver, ServedRequest};

pub use crate::plugin::client_capabilities;

/// How to run the doctor.
#[derive(Debug, Clone)]
pub struct DoctorOptions {
    /// The server's name: its `[mcp_servers.<name>]` table, if any, decides the tool approvals.
    pub server: String,
    /// The tool to call, with its arguments; without it the doctor only connects and lists.
    pub tool: Option<(String, Option<Value>)>,
    /// How long a request may run (paused while a form is open, as in `formwork call`).
    pub request_timeout: Duration,
    /// How long the tool call may still take after the plugin got the last answer before the
    /// doctor calls it stuck.
    pub wait_after_answer: Duration,
    /// Pass the plugin's stderr through (stdio only).
    pub inherit_stderr: bool,
    /// The protocol version to speak; `None`: 2026-07-28 when the plugin offers it, else the
    /// handshake.
    pub protocol: Option<rmcp::model::ProtocolVersion>,
    /// Where `formwork login` keeps the tokens of remote servers; `None`: none are used.
    pub data_dir: Option<std::path::PathBuf>,
}

impl DoctorOptions {
    /// Defaults: no tool, a 60 s request timeout, 10 s after the last answer, stderr passed.
    pub fn new(server: impl Into<String>) -> Self {
        DoctorOptions {
            server: server.into(),
            tool: None,
            request_timeout: Duration::from_secs(60),
            wait_after_answer: Duration::from_secs(10),
            inherit_stderr: true,
            protocol: None,
            data_dir: None,
        }
    }
}

/// Everything the doctor found, in the order it is printed (`formwork doctor` adds the config's
/// effective policy after `connection`).
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// The handshake.
    pub connection: Connection,
    /// Every tool the plugin lists, with the approval verdict for calling it.
    pub tools: Vec<ToolReport>,
    /// The `--tool` call, when one was asked for.
    pub call: Option<CallReport>,
    /// Every `elicitation/create` the plugin sent, in the order formwork answered them.
    pub forms: Vec<FormRecord>,
    /// Every other request the plugin sent (except `ping`), with formwork's answer.
    pub other_requests: Vec<OtherRequest>,
    /// One entry per row of the symptom table, in the table's order.
    pub symptoms: Vec<Symptom>,
}

impl Report {
    /// Whether the handshake succeeded.
    pub fn connected(&self) -> bool {
        self.connection.connected
    }

    /// Whether some row of the symptom table applies.
    pub fn any_applies(&self) -> bool {
        self.symptoms
            .iter()
            .any(|symptom| symptom.applies == Some(true))
    }
}

/// The handshake, as both sides stated it.
#[derive(Debug, Clone, Serialize)]
pub struct Connection {
    /// `{"plugin": "<command>"}` or `{"url": "<endpoint>"}`.
    pub target: Value,
    /// The server name the config is consulted under.
    pub server: String,
    /// Whether the config has a `[mcp_servers.<server>]` table.
    pub configured: bool,
    /// Whether `initialize` succeeded.
    pub connected: bool,
    /// Why it did not.
    pub error: Option<String>,
    /// The version formwork asked for: `auto` (2026-07-28 when the plugin offers it in
    /// `server/discover`, else the handshake's latest) or the configured one.
    pub requested_protocol_version: String,
    /// The version the connection speaks.
    pub protocol_version: Option<String>,
    /// `handshake` (`initialize`, forms as `elicitation/create` requests) or `modern`
    /// (2026-07-28: forms inside `input_required` results).
    pub era: Option<Era>,
    /// Why the connection speaks that era.
    pub era_reason: Option<String>,
    /// `serverInfo` from the plugin's `initialize` result (in the modern era, from the
    /// `server/discover` result's `_meta`).
    pub server_info: Value,
    /// `capabilities` from the plugin's `initialize` (or `server/discover`) result.
    pub server_capabilities: Value,
    /// What formwork declared in `initialize` (in the modern era, in every request's `_meta`).
    pub client_capabilities: Value,
    /// Whether formwork declared the `openai/form` extension (it never does).
    pub openai_form_extension: bool,
    /// Why `tools/list` failed, if it did.
    pub tools_error: Option<String>,
    /// The steps of the OAuth sign-in the server asked for, in order (discovery, then the
    /// sign-in itself), when it asked; each with what came of it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sign_in: Vec<crate::auth::AuthStep>,
}

/// One listed tool and the policy's verdict on calling it.
#[derive(Debug, Clone, Serialize)]
pub struct ToolReport {
    /// The tool's name.
    pub name: String,
    /// Its `annotations` as listed, or `null`.
    pub annotations: Value,
    /// The verdict.
    pub approval: ApprovalReport,
}

/// [`policy::tool_approval`] in JSON terms.
#[derive(Debug, Clone, Serialize)]
pub struct ApprovalReport {
    /// `auto`, `prompt`, `writes` or `approve`.
    pub mode: String,
    /// Where the mode comes from (a dotted key, or which default).
    pub source: String,
    /// `run` (no card), `card` (the person is asked) or `fail` (the call is refused).
    pub need: &'static str,
    /// Why, in words.
    pub reason: String,
    /// Whether a call of this tool asks the person, or fails because it would have to under
    /// policy `never` (and not because the tool is disabled).
    #[serde(skip)]
    pub needs_approval: bool,
}

/// How the `--tool` call went.
#[derive(Debug, Clone, Serialize)]
pub struct CallReport {
    /// The tool.
    pub tool: String,
    /// The arguments sent.
    pub arguments: Value,
    /// `returned` (a `CallToolResult`), `error` (the request failed and the plugin still
    /// answers a `ping`), `gone` (the plugin went away before answering: its process or
    /// connection ended, or it no longer answers), `stuck` (no answer within the wait after the
    /// plugin got its last form answer) or `timed-out`.
    pub outcome: &'static str,
    /// The `CallToolResult`, exactly as sent.
    pub result: Option<Value>,
    /// Why the call failed, or what it was still waiting for.
    pub error: Option<String>,
    /// The wait after the last answer, in seconds.
    pub wait_after_answer_secs: f64,
    /// Seconds from the plugin's last form answer to the call's end (or to giving up).
    pub secs_after_last_answer: Option<f64>,
}

/// One `elicitation/create` the plugin sent.
#[derive(Debug, Clone, Serialize)]
pub struct FormRecord {
    /// The request's JSON-RPC id.
    pub request_id: Value,
    /// Whether the `--tool` call was running when it arrived. A session declines a form that
    /// arrives outside a tool call (no active turn).
    pub during_call: bool,
    /// Whether it came on the `tools/call` response stream (HTTP only). With `share_session`,
    /// a form that does not is declined: it cannot be tied to a call.
    pub on_call_stream: bool,
    /// `params.mode` as sent (`"form"` when absent).
    pub mode: Value,
    /// `params.message`, when it is a string.
    pub message: Option<String>,
    /// Whether formwork can show it; when not, `decline` says why.
    pub supported: bool,
    /// Why formwork declines it before showing it (`formwork_forms::parse_request`).
    pub decline: Option<DeclineReport>,
    /// What the config's plugin-form gate decides for it ([`policy::elicitation_gate`]).
    pub policy: GateReport,
    /// Whether it reached the doctor's responder (which answers `cancel`).
    pub shown: bool,
    /// The `ElicitResult` sent, `{"error": {...}}` for a JSON-RPC error, `null` when none.
    pub answer: Value,
}

/// A declined schema or mode.
#[derive(Debug, Clone, Serialize)]
pub struct DeclineReport {
    /// The property at fault, if one.
    pub property: Option<String>,
    /// The rule's stable code (`nested-object`, `unsupported-mode`, ...).
    pub rule: Option<String>,
    /// The reason, as logged and told to the responder.
    pub reason: String,
}

/// The plugin-form gate's verdict.
#[derive(Debug, Clone, Serialize)]
pub struct GateReport {
    /// Whether forms may reach the person.
    pub allowed: bool,
    /// Why.
    pub reason: String,
}

/// A request other than `elicitation/create` and `ping`.
#[derive(Debug, Clone, Serialize)]
pub struct OtherRequest {
    /// The request's JSON-RPC id.
    pub request_id: Value,
    /// The method.
    pub method: String,
    /// Whether the `--tool` call was running.
    pub during_call: bool,
    /// `{"result": ...}` or `{"error": {...}}`, `null` when none was sent.
    pub answer: Value,
}

/// One row of the symptom table, diagnosed.
#[derive(Debug, Clone, Serialize)]
pub struct Symptom {
    /// A stable code for the row.
    pub id: &'static str,
    /// The row's symptom, as the table words it.
    pub symptom: &'static str,
    /// `true`: it applies; `false`: it does not; `null`: only a `--tool` call can tell.
    pub applies: Option<bool>,
    /// Why, with what was observed.
    pub cause: String,
    /// What to change.
    pub action: String,
}

/// What the doctor's responder and observer saw.
#[derive(Default)]
struct Recorder {
    /// `features.openai_elicitation`: `openai/elicitation/create` is a form request too.
    openai_elicitation: bool,
    in_call: AtomicBool,
    answered: Notify,
    seen: Mutex<Seen>,
}

#[derive(Default)]
struct Seen {
    served: Vec<(ServedRequest, bool)>,
    shown: HashSet<String>,
    declined: Vec<DeclineNotice>,
    last_answer: Option<Instant>,
}

impl Recorder {
    fn lock(&self) -> std::sync::MutexGuard<'_, Seen> {
        self.seen
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
    }

    fn observe(&self, request: &ServedRequest) {
        let during_call = self.in_call.load(Ordering::SeqCst);
        let mut seen = self.lock();
        if self.is_form(&request.method) && request.answer.is_some() {
            seen.last_answer = Some(Instant::now());
        }
        seen.served.push((request.clone(), during_call));
        drop(seen);
        self.answered.notify_one();
    }

    /// Whether `method` asks for a form: `elicitation/create`, and the extension's method when
    /// formwork serves it.
    fn is_form(&self, method: &str) -> bool {
        method == "elicitation/create"
            || (self.openai_elicitation && method == OPENAI_ELICITATION_METHOD)
    }

    fn last_answer(&self) -> Option<Instant> {
        self.lock().last_answer
    }
}

/// The doctor's responder: notes each form and answers `cancel`, so no content is ever sent.
struct CancelEverything(Arc<Recorder>);

impl FormResponder for CancelEverything {
    fn respond(&self, prompt: FormPrompt) -> BoxFuture<FormReply> {
        self.0.lock().shown.insert(prompt.request_id.to_string());
        Box::pin(async { FormReply::cancel() })
    }

    fn declined(&self, notice: &DeclineNotice) {
        self.0.lock().declined.push(notice.clone());
    }
}

/// Connects, lists, optionally calls `options.tool`, and diagnoses. Never fails: a plugin
/// that cannot be reached gives a report with `connection.connected == false`.
pub async fn diagnose(target: &PluginTarget, config: &Config, options: DoctorOptions) -> Report {
    let recorder = Arc::new(Recorder {
        openai_elicitation: config.features.openai_elicitation,
        ..Recorder::default()
    });
    let responder = Arc::new(CancelEverything(Arc::clone(&recorder)));
    let mut connect = ConnectOptions::new(options.server.clone(), responder);
    connect.request_timeout = options.request_timeout;
    connect.inherit_stderr = options.inherit_stderr;
    connect.protocol = options.protocol.clone();
    let extensions = ClientExtensions {
        openai_elicitation: config.features.openai_elicitation,
        mcp_apps: false,
    };
    connect.extensions = extensions;
    let headers = config
        .server(&options.server)
        .map(|server| server.transport.http_headers())
        .transpose();
    let observer = Arc::clone(&recorder);
    connect.on_request = Some(Arc::new(move |request: &ServedRequest| {
        observer.observe(request)
    }));

    let mut connection = Connection {
        target: match target {
            PluginTarget::Command { line, .. } => json!({ "plugin": line }),
            PluginTarget::Url(url) => json!({ "url": url }),
        },
        server: options.server.clone(),
        configured: config.server(&options.server).is_some(),
        connected: false,
        error: None,
        requested_protocol_version: options
            .protocol
            .as_ref()
            .map_or("auto", |version| version.as_str())
            .to_owned(),
        protocol_version: None,
        era: None,
        era_reason: None,
        server_info: Value::Null,
        server_capabilities: Value::Null,
        client_capabilities: client_capabilities(&extensions),
        openai_form_extension: config.features.openai_elicitation,
        tools_error: None,
        sign_in: Vec::new(),
    };
    let mut report = Report {
        connection: connection.clone(),
        tools: Vec::new(),
        call: None,
        forms: Vec::new(),
        other_requests: Vec::new(),
        symptoms: Vec::new(),
    };
    match headers {
        Ok(headers) => connect.http_headers = headers.unwrap_or_default(),
        Err(reason) => {
            connection.error = Some(format!("could not connect to plugin {target}: {reason}"));
            report.connection = connection;
            return report;
        }
    }
    let auth = match target {
        PluginTarget::Url(url) => {
            let store = options
                .data_dir
                .as_deref()
                .map(|dir| sign_on::token_store(config, dir));
            match sign_on::authorizer_for(config, &options.server, url, store, None) {
                Ok(auth) => Some(auth),
                Err(reason) => {
                    connection.error =
                        Some(format!("could not connect to plugin {target}: {reason}"));
                    report.connection = connection;
                    return report;
                }
            }
        }
        PluginTarget::Command { .. } => None,
    };
    connect.auth = auth.clone();
    let connected = Plugin::connect(target, connect).await;
    if let Some(auth) = &auth {
        connection.sign_in = auth.steps().await;
    }
    let plugin = match connected {
        Ok(plugin) => plugin,
        Err(err) => {
            connection.error = Some(err.to_string());
            report.connection = connection;
            return report;
        }
    };
    describe_server(&mut connection, plugin.server_info());
    connection.connected = true;

    match plugin.list_tools().await {
        Ok(tools) => {
            report.tools = tools
                .iter()
                .map(|tool| tool_report(config, &options.server, tool))
                .collect();
        }
        Err(err) => connection.tools_error = Some(err.to_string()),
    }

    if let Some((tool, arguments)) = &options.tool {
        report.call = Some(call(&plugin, &recorder, tool, arguments.clone(), &options).await);
    }
    plugin.close().await;

    let gate = gate_report(config);
    let parse = ParseOptions {
        openai_elicitation: config.features.openai_elicitation,
    };
    let (served, declined, shown) = {
        let mut seen = recorder.lock();
        (
            std::mem::take(&mut seen.served),
            std::mem::take(&mut seen.declined),
            std::mem::take(&mut seen.shown),
        )
    };
    for (request, during_call) in served {
        match request.method.as_str() {
            "ping" => {}
            method if recorder.is_form(method) => report.forms.push(form_record(
                &request,
                during_call,
                &gate,
                &shown,
                &declined,
                parse,
            )),
            _ => report.other_requests.push(OtherRequest {
                request_id: request.id.clone(),
                method: request.method.clone(),
                during_call,
                answer: answer_json(request.answer.as_ref(), false),
            }),
        }
    }
    report.connection = connection;
    report.symptoms = symptoms(config, &report);
    report
}

fn describe_server(connection: &mut Connection, server: &ServerInfo) {
    connection.protocol_version = Some(server.protocol_version.clone());
    connection.era = Some(server.era);
    connection.era_reason = Some(server.era_reason.clone());
    let result = server.initialize_result_value();
    connection.server_info = result
        .get("serverInfo")
        .or_else(|| result.pointer("/_meta/io.modelcontextprotocol~1serverInfo"))
        .cloned()
        .unwrap_or(Value::Null);
    connection.server_capabilities = result.get("capabilities").cloned().unwrap_or(Value::Null);
}

fn tool_report(config: &Config, server: &str, tool: &Value) -> ToolReport {
    let name = tool
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let annotations = tool.get("annotations").cloned().unwrap_or(Value::Null);
    let verdict = policy::tool_approval(config, server, &name, tool.get("annotations"));
    let (need, needs_approval) = match &verdict.need {
        ApprovalNeed::Run => ("run", false),
        ApprovalNeed::Card(_) => ("card", true),
        ApprovalNeed::Fail(message) => ("fail", message == policy::NEVER_POLICY_MESSAGE),
    };
    ToolReport {
        approval: ApprovalReport {
            mode: verdict.mode.as_str().to_owned(),
            source: verdict.mode_source.describe(server, &name),
            need,
            reason: verdict.reason,
            needs_approval,
        },
        name,
        annotations,
    }
}

fn gate_report(config: &Config) -> GateReport {
    match policy::elicitation_gate(config) {
        Ok(allowed) => GateReport {
            allowed: true,
            reason: allowed.to_string(),
        },
        Err(declined) => GateReport {
            allowed: false,
            reason: declined.to_string(),
        },
    }
}

/// Calls the tool and waits for it: until it returns, fails, times out, or has not returned
/// `wait_after_answer` after the plugin got its last form answer.
async fn call(
    plugin: &Plugin,
    recorder: &Recorder,
    tool: &str,
    arguments: Option<Value>,
    options: &DoctorOptions,
) -> CallReport {
    let mut report = CallReport {
        tool: tool.to_owned(),
        arguments: arguments.clone().unwrap_or(Value::Null),
        outcome: "returned",
        result: None,
        error: None,
        wait_after_answer_secs: options.wait_after_answer.as_secs_f64(),
        secs_after_last_answer: None,
    };
    recorder.lock().last_answer = None;
    recorder.in_call.store(true, Ordering::SeqCst);
    let call = plugin.call_tool(tool, arguments);
    tokio::pin!(call);
    let finished = loop {
        let deadline = recorder
            .last_answer()
            .map(|answered| answered + options.wait_after_answer);
        let stuck = async {
            match deadline {
                Some(deadline) => tokio::time::sleep_until(deadline).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            outcome = &mut call => break Some(outcome),
            () = recorder.answered.notified() => {}
            () = stuck => break None,
        }
    };
    recorder.in_call.store(false, Ordering::SeqCst);
    report.secs_after_last_answer = recorder
        .last_answer()
        .map(|answered| answered.elapsed().as_secs_f64());
    match finished {
        Some(Ok(result)) => report.result = Some(result),
        Some(Err(err @ HostError::Timeout { .. })) => {
            report.outcome = "timed-out";
            report.error = Some(err.to_string());
        }
        Some(Err(err @ HostError::PluginGone { .. })) => {
            report.outcome = "gone";
            report.error = Some(err.to_string());
        }
        Some(Err(err)) => {
            // Over HTTP a plugin that died shows first as a broken event stream, like a call
            // that failed; whether it still answers a ping tells the two apart. The ping waits
            // a moment: a process that is exiting may still accept a connection, and the
            // transport tells the connection gone once it no longer does.
            tokio::time::sleep(PING_SETTLE).await;
            let alive = tokio::time::timeout(PING_WAIT, plugin.request("ping", None)).await;
            report.outcome = match alive {
                Ok(Err(HostError::PluginGone { .. } | HostError::Connect { .. })) => "gone",
                _ => "error",
            };
            report.error = Some(err.to_string());
        }
        None => {
            report.outcome = "stuck";
            report.error = Some(format!(
                "tools/call had not returned {:?} after the plugin got its last form answer",
                options.wait_after_answer
            ));
        }
    }
    report
}

fn form_record(
    request: &ServedRequest,
    during_call: bool,
    gate: &GateReport,
    shown: &HashSet<String>,
    declined: &[DeclineNotice],
    parse: ParseOptions,
) -> FormRecord {
    let params = request.params.as_ref();
    let mode = params
        .and_then(|params| params.get("mode"))
        .cloned()
        .unwrap_or_else(|| Value::String("form".to_owned()));
    let message = params
        .and_then(|params| params.get("message"))
        .and_then(Value::as_str)
        .map(str::to_owned);
    let notice = declined
        .iter()
        .find(|notice| notice.request_id == request.id);
    let decline = match (params, &request.answer) {
        // The params could not be read as an object: formwork answered with an error.
        (_, Some(Err(error))) => Some(DeclineReport {
            property: None,
            rule: Some("invalid-params".to_owned()),
            reason: error.message.clone(),
        }),
        (Some(params), _) => match formwork_forms::parse_request_with(params, parse) {
            Ok(ElicitationRequest::Form(_) | ElicitationRequest::Url(_)) => None,
            Err(decline) => Some(DeclineReport {
                property: decline.property.clone(),
                rule: Some(decline.rule.as_str().to_owned()),
                reason: notice.map_or_else(|| decline.to_string(), |n| n.reason.clone()),
            }),
        },
        (None, _) => Some(DeclineReport {
            property: None,
            rule: Some("invalid-params".to_owned()),
            reason: format!("{} needs params", request.method),
        }),
    };
    FormRecord {
        request_id: request.id.clone(),
        during_call,
        on_call_stream: request.on_call_stream,
        mode,
        message,
        supported: decline.is_none(),
        decline,
        policy: gate.clone(),
        shown: shown.contains(&request.id.to_string()),
        answer: answer_json(request.answer.as_ref(), true),
    }
}

/// The answer as JSON: the result itself (`bare`) or `{"result": ...}`, `{"error": ...}`.
fn answer_json(answer: Option<&Result<Value, RpcError>>, bare: bool) -> Value {
    match answer {
        None => Value::Null,
        Some(Ok(result)) if bare => result.clone(),
        Some(Ok(result)) => json!({ "result": result }),
        Some(Err(error)) => json!({ "error": error }),
    }
}
