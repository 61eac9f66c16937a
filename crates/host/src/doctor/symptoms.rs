//! The symptom table of plugin forms, one rule per row: does it apply to what the doctor saw,
//! why, and what to change. Pure: reads the config and the gathered [`Report`].

use crate::config::{ApprovalMode, ApprovalPolicy, Config};
use crate::jsonrpc::code;
use crate::plugin::Era;
use crate::policy;

use super::{FormRecord, Report, Symptom, ToolReport};

/// One row of the table.
#[derive(Debug, Clone, Copy)]
pub struct SymptomRow {
    /// A stable code.
    pub id: &'static str,
    /// The symptom, as the table words it.
    pub symptom: &'static str,
    /// What it means in general, when it applies.
    pub meaning: &'static str,
    /// What to do in general, when it applies.
    pub action: &'static str,
}

/// The table's rows, in its order.
pub const SYMPTOMS: [SymptomRow; 6] = [
    SymptomRow {
        id: "openai-form-unsupported",
        symptom: "The MCP client does not support openai/form requests.",
        meaning: "the client connected to the plugin does not support openai/form; the request did not reach the UI",
        action: "switch the plugin to a standard elicitation/create with mode: \"form\", or fall back to normal chat/tool parameters",
    },
    SymptomRow {
        id: "declined-before-ui",
        symptom: "Plugin receives action: \"decline\", but logs do not contain mcpServer/elicitation/request",
        meaning: "the runtime declined the form before it reached the UI",
        action: "check elicitations_auto_deny, approval_policy, granular mcp_elicitations, and active-turn routing",
    },
    SymptomRow {
        id: "schema-unsupported",
        symptom: "No form appears, but logs contain mcpServer/elicitation/request",
        meaning: "the request reached the runtime, but its mode or schema is unsupported",
        action: "check mode and requestedSchema.properties",
    },
    SymptomRow {
        id: "tool-approval",
        symptom: "Every MCP tool call shows an \"Allow this MCP tool call\" form",
        meaning: "the server's or tool's approval mode still requires approval",
        action: "set default_tools_approval_mode = \"approve\" for plugin servers that do not need approval; keep an explicit \"prompt\" for servers/tools that do",
    },
    SymptomRow {
        id: "no-continue-after-answer",
        symptom: "The form appears but the plugin does not continue after submit",
        meaning: "response routing or the plugin's result handling is broken",
        action: "verify the plugin handles accept, cancel and decline",
    },
    SymptomRow {
        id: "push-form-on-2026",
        symptom: "A tool that asks for a form fails on a 2026-07-28 connection (\"no back-channel\", \"server-initiated requests\")",
        meaning: "the plugin offers 2026-07-28 but pushes its forms as elicitation/create requests, which that version no longer has",
        action: "set protocol_version = \"2025-11-25\" for the server (or --protocol 2025-11-25), or have the plugin ask through input_required (formwork-sdk, the Python SDK's Resolve/Elicit, the TS SDK's inputRequired)",
    },
];

const NOTHING: &str = "nothing to change for this row";

/// Diagnoses every row of [`SYMPTOMS`] from what the doctor gathered.
pub fn symptoms(config: &Config, report: &Report) -> Vec<Symptom> {
    if !report.connected() {
        return Vec::new();
    }
    vec![
        openai_form(config, report),
        declined_before_ui(config, report),
        schema_unsupported(report),
        tool_approval(config, report),
        no_continue(report),
        push_on_2026(report),
    ]
}

/// The line of `text` that mentions `needle` (any case), cut to a readable length.
fn line_with(text: &str, needle: &str) -> String {
    let line = text
        .lines()
        .find(|line| line.to_lowercase().contains(needle))
        .unwrap_or_default();
    line.trim().chars().take(240).collect()
}

fn push_on_2026(report: &Report) -> Symptom {
    let era = report.connection.era;
    let (applies, cause) = match (era, call_text(report)) {
        (Some(Era::Modern), Some(text)) => match crate::plugin::push_refusal(Era::Modern, &text) {
            Some(needle) => (
                Some(true),
                format!(
                    "the connection speaks 2026-07-28 ({}), and the call failed: {}",
                    report.connection.era_reason.as_deref().unwrap_or_default(),
                    line_with(&text, needle)
                ),
            ),
            None => (
                Some(false),
                "the call on the 2026-07-28 connection did not fail for a pushed form".to_owned(),
            ),
        },
        (Some(Era::Modern), None) => (
            None,
            "the connection speaks 2026-07-28; only a call shows whether the plugin pushes forms"
                .to_owned(),
        ),
        _ => (
            Some(false),
            "the connection speaks the handshake era, where plugins may push forms".to_owned(),
        ),
    };
    row(5, applies, cause, SYMPTOMS[5].action.to_owned())
}

pub(super) fn row(index: usize, applies: Option<bool>, cause: String, action: String) -> Symptom {
    let row = &SYMPTOMS[index];
    let action = match applies {
        Some(true) => action,
        Some(false) => NOTHING.to_owned(),
        None => format!(
            "run the doctor again with --tool <a tool that asks for a form>; if the row applies: {}",
            row.action
        ),
    };
    Symptom {
        id: row.id,
        symptom: row.symptom,
        applies,
        cause,
        action,
    }
}

/// The config files' names for messages.
fn file(config: &Config) -> String {
    config.describe_files()
}

/// The text a tool call produced (its `CallToolResult` or its error), for searching.
fn call_text(report: &Report) -> Option<String> {
    let call = report.call.as_ref()?;
    Some(outcome_text(call.error.as_deref(), call.result.as_ref()))
}

/// A call's error, then its result as JSON: one text to search.
pub(super) fn outcome_text(error: Option<&str>, result: Option<&serde_json::Value>) -> String {
    let mut text = error.unwrap_or_default().to_owned();
    if let Some(result) = result {
        text.push('\n');
        text.push_str(&result.to_string());
    }
    text
}

/// The sentence around the first mention of `needle` in `text`, cut to a readable length.
fn quote_around(text: &str, needle: &str) -> String {
    let lower = text.to_lowercase();
    let Some(at) = lower.find(needle) else {
        return String::new();
    };
    let start = lower[..at]
        .rfind(['"', '\n', '\'', '`'])
        .map_or(0, |idx| idx + 1);
    let end = lower[at..]
        .find(['"', '\n', '\'', '`'])
        .map_or(text.len(), |idx| at + idx);
    let quote: String = text
        .get(start..end)
        .unwrap_or_default()
        .chars()
        .take(240)
        .collect();
    quote.replace("\\n", " ").trim().to_owned()
}

fn openai_form(config: &Config, report: &Report) -> Symptom {
    let declared = if config.features.openai_elicitation {
        "formwork declares `elicitation: {form: {}, url: {}}` and \
         `extensions[\"openai/elicitation\"] = {form: {}}` in initialize \
         (features.openai_elicitation = true) and serves `openai/elicitation/create`, but never \
         the older `openai/form` extension"
    } else {
        "formwork declares only `elicitation: {form: {}, url: {}}` in initialize, never the \
         `openai/form` extension (features.openai_elicitation is off)"
    };
    let action = "switch the plugin to a standard `elicitation/create` with mode: \"form\" (look for \
                  `capabilities.elicitation.form` instead of the openai/form extension), or fall back \
                  to normal chat/tool parameters; formwork will not advertise openai/form"
        .to_owned();
    let sent: Vec<_> = report
        .other_requests
        .iter()
        .filter(|request| request.method.to_lowercase().contains("openai/form"))
        .collect();
    if let Some(first) = sent.first() {
        let answer = first
            .answer
            .pointer("/error/message")
            .and_then(|message| message.as_str())
            .map_or_else(
                || "no answer".to_owned(),
                |message| format!("{} \"{message}\"", code::METHOD_NOT_FOUND),
            );
        let cause = format!(
            "the plugin sent {} `{}` request(s); {declared}, and it answers methods it does not \
             handle with {answer}: the request never became a form",
            sent.len(),
            first.method
        );
        return row(0, Some(true), cause, action);
    }
    let mention = call_text(report)
        .filter(|text| text.to_lowercase().contains("openai/form"))
        .map(|text| quote_around(&text, "openai/form"));
    match (mention, &report.call) {
        (Some(quote), Some(call)) => {
            let cause = format!(
                "tool `{}` failed with \"{quote}\" and sent no form request: the plugin requires \
                 the openai/form extension in the client capabilities, and {declared}",
                call.tool
            );
            row(0, Some(true), cause, action)
        }
        (_, Some(call)) => row(
            0,
            Some(false),
            format!(
                "tool `{}` sent no `openai/form` request and reported no missing openai/form \
                 support",
                call.tool
            ),
            action,
        ),
        (_, None) => row(
            0,
            None,
            format!(
                "{declared}, so a plugin that requires openai/form fails this way; only a tool \
                 call shows whether this plugin does"
            ),
            action,
        ),
    }
}

fn declined_before_ui(config: &Config, report: &Report) -> Symptom {
    let mut causes = Vec::new();
    let mut actions = Vec::new();
    if config.elicitations_auto_deny {
        causes.push("elicitations_auto_deny = true declines every plugin form".to_owned());
        actions.push("set elicitations_auto_deny = false (or remove the key)".to_owned());
    }
    match config.approval_policy {
        ApprovalPolicy::Never => {
            causes.push("approval_policy = \"never\" declines plugin forms".to_owned());
            actions.push(
                "replace approval_policy = \"never\" with approval_policy = { granular = { \
                 sandbox_approval = false, rules = false, skill_approval = false, \
                 request_permissions = false, mcp_elicitations = true } } (only MCP elicitations \
                 allowed, every other approval kept off), and give plugin servers \
                 default_tools_approval_mode = \"approve\" so their tool calls stay card-free as \
                 under \"never\""
                    .to_owned(),
            );
        }
        ApprovalPolicy::Granular(granular) if !granular.mcp_elicitations => {
            causes.push("approval_policy is granular with mcp_elicitations = false".to_owned());
            actions.push(
                "set mcp_elicitations = true in approval_policy's granular table; leave its other \
                 switches as they are"
                    .to_owned(),
            );
        }
        _ => {}
    }
    let gated = !causes.is_empty();
    if gated {
        let asked = report.forms.len();
        let seen = match (asked, &report.call) {
            (0, Some(call)) => format!(" (tool `{}` asked for no form in this run)", call.tool),
            (0, None) => String::new(),
            (n, _) => format!("; this run: {n} form(s) would have been declined"),
        };
        causes[0] = format!(
            "{} in {}: formwork answers each plugin form `decline` before any UI shows it \
             (logged with marker=policy-decision and this reason){seen}",
            causes[0],
            file(config)
        );
    }
    let outside: Vec<&FormRecord> = report.forms.iter().filter(|f| !f.during_call).collect();
    if !outside.is_empty() {
        causes.push(format!(
            "the plugin asked for {} form(s) while no tool call was running (during initialize \
             or tools/list); a formwork session has no active turn to route them to and \
             declines them",
            outside.len()
        ));
        actions.push(
            "ask for forms only inside a tool's handler, while its tools/call is running"
                .to_owned(),
        );
    }
    let unrouted = report
        .forms
        .iter()
        .filter(|f| f.during_call && !f.on_call_stream)
        .count();
    if unrouted > 0 && config.shares_session(&report.connection.server) {
        causes.push(format!(
            "`share_session = true` for `{}` in {}: one connection serves every session, and a \
             form is routed by the tools/call on whose response stream it arrives; the plugin sent \
             {unrouted} form(s) on another stream, which no call can own, so formwork declines them",
            report.connection.server,
            file(config)
        ));
        actions.push(
            "send each form on its call's stream (TS SDK: `elicitInput(params, { relatedRequestId: \
             extra.requestId })` or `extra.sendRequest`; rmcp and the Python SDK do it inside a \
             handler), or remove `share_session`"
                .to_owned(),
        );
    }
    if !causes.is_empty() {
        return row(1, Some(true), causes.join("; "), actions.join("; "));
    }
    let allowed = policy::elicitation_gate(config)
        .map(|allowed| allowed.to_string())
        .unwrap_or_default();
    let arrived = if report.forms.is_empty() {
        "the tool asked for no form"
    } else {
        "every form arrived while the tool call was running"
    };
    match &report.call {
        Some(_) => row(
            1,
            Some(false),
            format!(
                "the config lets plugin forms through ({allowed}; elicitations_auto_deny = false) \
                 and {arrived}"
            ),
            String::new(),
        ),
        None => row(
            1,
            None,
            format!(
                "the config lets plugin forms through ({allowed}; elicitations_auto_deny = \
                 false); only a tool call shows whether the plugin asks outside a running call"
            ),
            String::new(),
        ),
    }
}

fn schema_unsupported(report: &Report) -> Symptom {
    let declined: Vec<&FormRecord> = report.forms.iter().filter(|f| !f.supported).collect();
    if !declined.is_empty() {
        let reasons: Vec<String> = declined
            .iter()
            .map(|form| {
                let decline = form.decline.as_ref();
                format!(
                    "form {} (mode {}): {} (rule {})",
                    form.request_id,
                    form.mode,
                    decline.map_or("", |d| d.reason.as_str()),
                    decline.and_then(|d| d.rule.as_deref()).unwrap_or("unknown")
                )
            })
            .collect();
        let mut actions: Vec<&str> = Vec::new();
        for form in &declined {
            let rule = form
                .decline
                .as_ref()
                .and_then(|d| d.rule.as_deref())
                .unwrap_or_default();
            let action = match rule {
                "unsupported-mode" => {
                    "use mode: \"form\" (or \"url\" for an out-of-band page); formwork supports no \
                     other mode, openai/form included"
                }
                "nested-object" | "array-of-objects" | "ref" => {
                    "flatten requestedSchema.properties: one top-level property per question, each \
                     a string, number, integer, boolean, enum/oneOf, or array of enum strings; \
                     split a nested object into separate top-level properties"
                }
                "no-properties" | "not-an-object" => {
                    "give requestedSchema type: \"object\" and a non-empty `properties` object"
                }
                "invalid-params" => {
                    "send elicitation/create params as an object with a string `message` and a \
                     `requestedSchema` (form) or `url` (url mode)"
                }
                _ => {
                    "check mode and requestedSchema.properties against the supported keywords and \
                     types"
                }
            };
            if !actions.contains(&action) {
                actions.push(action);
            }
        }
        actions.push(
            "`formwork schema check` on the request's params prints the render block or the \
             same reason",
        );
        let cause = format!(
            "formwork received the plugin's elicitation/create (logged with \
             marker=request-received) but declined it without showing it, and the plugin got \
             `decline`: {}",
            reasons.join("; ")
        );
        return row(2, Some(true), cause, actions.join("; "));
    }
    match (report.forms.len(), &report.call) {
        (0, Some(call)) => row(
            2,
            Some(false),
            format!("tool `{}` asked for no form", call.tool),
            String::new(),
        ),
        (0, None) => row(
            2,
            None,
            "the plugin asked for no form while connecting and listing tools".to_owned(),
            String::new(),
        ),
        (n, _) => row(
            2,
            Some(false),
            format!("every form the plugin asked for ({n}) has a supported mode and schema"),
            String::new(),
        ),
    }
}

fn tool_approval(config: &Config, report: &Report) -> Symptom {
    let server = &report.connection.server;
    let table = crate::config::dotted(["mcp_servers", server.as_str()]);
    let tools = &report.tools;
    if tools.is_empty() {
        return match &report.connection.tools_error {
            Some(error) => row(
                3,
                None,
                format!("tools/list failed ({error}), so no tool could be judged"),
                String::new(),
            ),
            None => row(
                3,
                Some(false),
                "the plugin lists no tools".to_owned(),
                String::new(),
            ),
        };
    }
    let needing: Vec<&ToolReport> = tools
        .iter()
        .filter(|tool| tool.approval.needs_approval)
        .collect();
    let unconfigured = if report.connection.configured {
        String::new()
    } else {
        format!(
            "; `{server}` has no [{table}] table in {}: these are the verdicts once it is \
             configured without default_tools_approval_mode (the \"auto\" default of servers \
             formwork does not manage, where a tool without annotations asks; a plugin named \
             with --plugin/--url in `formwork call` shows no card)",
            file(config)
        )
    };
    if needing.len() == tools.len() {
        let mut reasons: Vec<&str> = Vec::new();
        for tool in &needing {
            let reason = tool.approval.reason.as_str();
            if !reasons.contains(&reason) {
                reasons.push(reason);
            }
        }
        let never = if config.approval_policy == ApprovalPolicy::Never {
            format!(
                "; under approval_policy = \"never\" these calls fail with \"{}\" instead of \
                 showing the card",
                policy::NEVER_POLICY_MESSAGE
            )
        } else {
            String::new()
        };
        let cause = format!(
            "every tool of `{server}` ({}) needs the person's approval before each call: {}{never}{unconfigured}",
            tools.len(),
            reasons.join("; ")
        );
        let explicit_prompt = config
            .server(server)
            .and_then(|server| server.default_tools_approval_mode)
            == Some(ApprovalMode::Prompt);
        let keep = if explicit_prompt {
            format!(
                "; {table}.default_tools_approval_mode = \"prompt\" is explicit: keep it only if \
                 every call of this server really needs approval"
            )
        } else {
            String::new()
        };
        let action = format!(
            "if `{server}`'s tools do not need per-call approval, set \
             default_tools_approval_mode = \"approve\" in [{table}] (`formwork config sync` does \
             this for built-in servers); keep an explicit \"prompt\" (server-wide or as \
             tools.<tool>.approval_mode) for servers and tools that do{keep}"
        );
        return row(3, Some(true), cause, action);
    }
    if needing.is_empty() {
        return row(
            3,
            Some(false),
            format!(
                "no tool of `{server}` needs approval (e.g. `{}`: {})",
                tools[0].name, tools[0].approval.reason
            ),
            String::new(),
        );
    }
    let names: Vec<String> = needing
        .iter()
        .map(|tool| format!("`{}`", tool.name))
        .collect();
    row(
        3,
        Some(false),
        format!(
            "{} of {} tools of `{server}` ask for approval ({}), by their own mode or \
             annotations; the others run without a card{unconfigured}",
            needing.len(),
            tools.len(),
            names.join(", ")
        ),
        String::new(),
    )
}

fn no_continue(report: &Report) -> Symptom {
    let action = "make every answer path of the tool finish its tools/call: handle accept, cancel \
                  and decline explicitly (stop or roll back on cancel and decline) and always \
                  return a result or an error; check that the plugin matches the ElicitResult to \
                  its pending request"
        .to_owned();
    let Some(call) = &report.call else {
        return row(
            4,
            None,
            "only a tool call that asks for a form shows whether the plugin continues after the \
             answer"
                .to_owned(),
            action,
        );
    };
    let answered: Vec<&FormRecord> = report
        .forms
        .iter()
        .filter(|form| form.during_call && !form.answer.is_null())
        .collect();
    let Some(last) = answered.last() else {
        return row(
            4,
            Some(false),
            format!(
                "tool `{}` got no form answer to continue from (it asked for no form)",
                call.tool
            ),
            String::new(),
        );
    };
    let answer = last
        .answer
        .get("action")
        .and_then(|action| action.as_str())
        .map_or_else(|| "a JSON-RPC error".to_owned(), |a| format!("`{a}`"));
    let after = call
        .secs_after_last_answer
        .map_or_else(String::new, |secs| format!(" {secs:.1} s later"));
    let path = "the doctor answers every form `cancel` and never submits content, so this run \
                checks the cancel path; the accept and decline paths need the same care";
    match call.outcome {
        "returned" => row(
            4,
            Some(false),
            format!(
                "the plugin continued after its last answer ({answer}) and returned its \
                 result{after}; {path}"
            ),
            String::new(),
        ),
        "error" => row(
            4,
            Some(false),
            format!(
                "the plugin continued after its last answer ({answer}) and failed the call{after}: {}",
                call.error.as_deref().unwrap_or_default()
            ),
            String::new(),
        ),
        "gone" => row(
            4,
            Some(true),
            format!(
                "the plugin got {answer} for its form and then went away without finishing the \
                 call: {}",
                call.error.as_deref().unwrap_or_default()
            ),
            action,
        ),
        _ => row(
            4,
            Some(true),
            format!(
                "formwork answered the plugin's form {answer} (logged with marker=result-sent) \
                 and tools/call had not returned {:.1} s later; {path}",
                call.secs_after_last_answer
                    .unwrap_or(call.wait_after_answer_secs)
            ),
            action,
        ),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::doctor::{
        ApprovalReport, CallReport, Connection, DeclineReport, GateReport, OtherRequest,
    };

    fn config(text: &str) -> Config {
        Config::from_toml(text, None).expect("a valid config")
    }

    fn report() -> Report {
        Report {
            connection: Connection {
                target: json!({"plugin": "p"}),
                server: "p".to_owned(),
                configured: false,
                connected: true,
                error: None,
                requested_protocol_version: "v".to_owned(),
                protocol_version: Some("v".to_owned()),
                era: None,
                era_reason: None,
                server_info: Value::Null,
                server_capabilities: Value::Null,
                client_capabilities: crate::doctor::client_capabilities(&Default::default()),
                openai_form_extension: false,
                tools_error: None,
                sign_in: Vec::new(),
            },
            tools: Vec::new(),
            call: None,
            forms: Vec::new(),
            other_requests: Vec::new(),
            symptoms: Vec::new(),
        }
    }

    fn call(outcome: &'static str, error: Option<&str>) -> CallReport {
        CallReport {
            tool: "t".to_owned(),
            arguments: Value::Null,
            outcome,
            result: None,
            error: error.map(str::to_owned),
            wait_after_answer_secs: 10.0,
            secs_after_last_answer: Some(0.1),
        }
    }

    fn form(answer: Value, decline: Option<&str>) -> FormRecord {
        FormRecord {
            request_id: json!(0),
            during_call: true,
            on_call_stream: false,
            mode: json!("form"),
            message: Some("m".to_owned()),
            supported: decline.is_none(),
            decline: decline.map(|rule| DeclineReport {
                property: None,
                rule: Some(rule.to_owned()),
                reason: "r".to_owned(),
            }),
            policy: GateReport {
                allowed: true,
                reason: String::new(),
            },
            shown: decline.is_none(),
            answer,
        }
    }

    fn tool(name: &str, need: &'static str, reason: &str) -> ToolReport {
        ToolReport {
            name: name.to_owned(),
            annotations: Value::Null,
            approval: ApprovalReport {
                mode: "auto".to_owned(),
                source: String::new(),
                need,
                reason: reason.to_owned(),
                needs_approval: need == "card",
            },
        }
    }

    fn applies(symptoms: &[Symptom]) -> Vec<&'static str> {
        symptoms
            .iter()
            .filter(|symptom| symptom.applies == Some(true))
            .map(|symptom| symptom.id)
            .collect()
    }

    #[test]
    fn one_entry_per_row_and_none_when_not_connected() {
        let mut report = report();
        let rows = symptoms(&Config::embedded(), &report);
        let ids: Vec<_> = rows.iter().map(|row| row.id).collect();
        let table: Vec<_> = SYMPTOMS.iter().map(|row| row.id).collect();
        assert_eq!(ids, table);
        report.connection.connected = false;
        assert!(symptoms(&Config::embedded(), &report).is_empty());
    }

    #[test]
    fn every_policy_cause_is_named_at_once() {
        let config = config("elicitations_auto_deny = true\napproval_policy = \"never\"\n");
        let rows = symptoms(&config, &report());
        assert_eq!(applies(&rows), ["declined-before-ui"]);
        assert!(rows[1].cause.contains("elicitations_auto_deny = true"));
        assert!(rows[1].cause.contains("approval_policy = \"never\""));
        assert!(rows[1].action.contains("elicitations_auto_deny = false"));
        assert!(rows[1].action.contains("mcp_elicitations = true"));
    }

    #[test]
    fn a_form_off_the_call_stream_of_a_shared_session_is_named() {
        let config =
            config("[mcp_servers.p]\nurl = \"http://127.0.0.1:1/mcp\"\nshare_session = true\n");
        let mut report = report();
        report.forms = vec![form(json!({"action": "decline"}), None)];
        report.call = Some(call("returned", None));
        let rows = symptoms(&config, &report);
        assert_eq!(applies(&rows), ["declined-before-ui"]);
        assert!(
            rows[1].cause.contains("`share_session = true` for `p`"),
            "{}",
            rows[1].cause
        );
        assert!(rows[1].action.contains("relatedRequestId"));
        // On the call's stream, the same form is routed: not the symptom.
        report.forms[0].on_call_stream = true;
        assert_eq!(applies(&symptoms(&config, &report)), Vec::<&str>::new());
    }

    #[test]
    fn some_tools_asking_is_not_the_symptom() {
        let mut report = report();
        report.tools = vec![
            tool("read", "run", "no approval needed"),
            tool("delete", "card", "approval needed: destructive"),
        ];
        let rows = symptoms(&Config::embedded(), &report);
        assert_eq!(rows[3].applies, Some(false));
        assert!(rows[3].cause.contains("`delete`"));
        report.tools.remove(0);
        assert_eq!(
            symptoms(&Config::embedded(), &report)[3].applies,
            Some(true)
        );
    }

    #[test]
    fn a_never_policy_failure_counts_as_needing_approval() {
        let mut report = report();
        let config = config(
            "approval_policy = \"never\"\n[mcp_servers.p]\ncommand = \"p\"\ndefault_tools_approval_mode = \"prompt\"\n",
        );
        report.tools = vec![crate::doctor::tool_report(
            &config,
            "p",
            &json!({"name": "t"}),
        )];
        assert_eq!(report.tools[0].approval.need, "fail");
        let rows = symptoms(&config, &report);
        assert_eq!(rows[3].applies, Some(true));
        assert!(rows[3].cause.contains("instead of showing the card"));
    }

    #[test]
    fn a_disabled_tool_does_not_count_as_needing_approval() {
        let mut report = report();
        let config = config(
            "approval_policy = \"never\"\n[mcp_servers.p]\ncommand = \"p\"\ndisabled_tools = [\"t\"]\n",
        );
        report.tools = vec![crate::doctor::tool_report(
            &config,
            "p",
            &json!({"name": "t"}),
        )];
        assert_eq!(report.tools[0].approval.need, "fail");
        assert_eq!(symptoms(&config, &report)[3].applies, Some(false));
    }

    #[test]
    fn continuing_after_the_answer() {
        let mut report = report();
        report.forms = vec![form(json!({"action": "cancel"}), None)];
        report.call = Some(call("returned", None));
        assert_eq!(
            symptoms(&Config::embedded(), &report)[4].applies,
            Some(false)
        );
        report.call = Some(call("error", Some("tools/call failed: boom (code -1)")));
        assert_eq!(
            symptoms(&Config::embedded(), &report)[4].applies,
            Some(false)
        );
        report.call = Some(call(
            "gone",
            Some("plugin p went away: it closed its stdout"),
        ));
        assert_eq!(
            symptoms(&Config::embedded(), &report)[4].applies,
            Some(true)
        );
        report.call = Some(call("stuck", Some("had not returned")));
        let rows = symptoms(&Config::embedded(), &report);
        assert_eq!(applies(&rows), ["no-continue-after-answer"]);
        // No form, nothing to continue from.
        report.forms.clear();
        assert_eq!(
            symptoms(&Config::embedded(), &report)[4].applies,
            Some(false)
        );
    }

    #[test]
    fn a_declined_schema_names_its_rule_and_the_fix() {
        let mut report = report();
        report.call = Some(call("returned", None));
        report.forms = vec![form(json!({"action": "decline"}), Some("unsupported-mode"))];
        let rows = symptoms(&Config::embedded(), &report);
        assert_eq!(applies(&rows), ["schema-unsupported"]);
        assert!(rows[2].cause.contains("unsupported-mode"));
        assert!(rows[2].action.contains("mode: \"form\""));
    }

    #[test]
    fn openai_form_sent_or_reported() {
        let mut report = report();
        assert_eq!(symptoms(&Config::embedded(), &report)[0].applies, None);
        report.call = Some(call("returned", None));
        assert_eq!(
            symptoms(&Config::embedded(), &report)[0].applies,
            Some(false)
        );
        report.other_requests = vec![OtherRequest {
            request_id: json!(1),
            method: "openai/form".to_owned(),
            during_call: true,
            answer: json!({"error": {"code": code::METHOD_NOT_FOUND, "message": "formwork does not handle `openai/form`"}}),
        }];
        let rows = symptoms(&Config::embedded(), &report);
        assert_eq!(rows[0].applies, Some(true));
        assert!(rows[0].cause.contains("-32601"));
        report.other_requests.clear();
        let mut failed = call("returned", None);
        failed.result = Some(
            json!({"content": [{"type": "text", "text": "The MCP client does not support openai/form requests."}], "isError": true}),
        );
        report.call = Some(failed);
        let rows = symptoms(&Config::embedded(), &report);
        assert_eq!(rows[0].applies, Some(true));
        assert!(
            rows[0]
                .cause
                .contains("\"The MCP client does not support openai/form requests.\""),
            "{}",
            rows[0].cause
        );
    }
}
