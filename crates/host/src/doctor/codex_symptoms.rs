//! The symptom table under the Codex runtime: the same rows as for a direct connection
//! (`symptoms.rs`), judged from what Codex did (`codex.rs`'s report). Pure.

use serde_json::Value;

use super::Symptom;
use super::codex::{CodexReport, PluginRequest};
use super::symptoms::{outcome_text, row};
use crate::config::{ApprovalMode, ApprovalPolicy, Config};

/// Diagnoses every row of [`super::SYMPTOMS`] from what Codex did.
pub fn symptoms(config: &Config, report: &CodexReport, approval_asked: bool) -> Vec<Symptom> {
    vec![
        openai_form(config, report),
        declined_before_ui(config, report),
        schema_unsupported(report),
        tool_approval(config, report, approval_asked),
        no_continue(report),
        push_on_2026(),
    ]
}

/// The forms the plugin sent Codex (`elicitation/create`).
fn plugin_forms(report: &CodexReport) -> impl Iterator<Item = &PluginRequest> {
    report
        .plugin_requests
        .iter()
        .filter(|request| request.method == "elicitation/create")
}

fn action_of(answer: &Value) -> Option<&str> {
    answer.get("action").and_then(Value::as_str)
}

/// The call's text (its result, else its error), for searching.
fn call_text(report: &CodexReport) -> Option<String> {
    let call = report.call.as_ref()?;
    Some(outcome_text(call.error.as_deref(), call.result.as_ref()))
}

fn openai_form(config: &Config, report: &CodexReport) -> Symptom {
    let declared = if report.codex.openai_form_extension {
        "formwork declares the openai/form extension to Codex (features.openai_elicitation = \
         true), so Codex offers it to its plugins"
    } else {
        "formwork does not declare the openai/form extension to Codex \
         (features.openai_elicitation is off), so Codex does not offer it to its plugins"
    };
    let action = format!(
        "switch the plugin to a standard `elicitation/create` with mode: \"form\", or fall back to \
         normal chat/tool parameters; or, if formwork and the plugin both support it, set \
         features.openai_elicitation = true in {} so formwork declares openai/form to Codex",
        config.describe_files()
    );
    // An `openai/form` request Codex answered with an error: it never became a form.
    let sent: Vec<&PluginRequest> = report
        .plugin_requests
        .iter()
        .filter(|request| request.method == "openai/form" && request.answer.get("error").is_some())
        .collect();
    if let Some(first) = sent.first() {
        let answer = first
            .answer
            .pointer("/error/error/message")
            .or_else(|| first.answer.pointer("/error/message"))
            .and_then(Value::as_str)
            .map_or_else(
                || first.answer.to_string(),
                |message| format!("\"{message}\""),
            );
        return row(
            0,
            Some(true),
            format!(
                "the plugin sent {} `openai/form` request(s) and Codex answered {answer}; {declared}",
                sent.len()
            ),
            action,
        );
    }
    let mention = call_text(report).filter(|text| text.to_lowercase().contains("openai/form"));
    match (mention, &report.call) {
        (Some(text), Some(call)) => row(
            0,
            Some(true),
            format!(
                "tool `{}` reported {} and sent no form: the plugin requires the openai/form \
                 extension, and {declared}",
                call.tool,
                text.trim()
            ),
            action,
        ),
        (None, Some(call)) => row(
            0,
            Some(false),
            format!(
                "tool `{}` sent no `openai/form` request and reported no missing openai/form support",
                call.tool
            ),
            String::new(),
        ),
        (_, None) => row(
            0,
            None,
            format!("{declared}; only a tool call shows whether this plugin needs it"),
            action,
        ),
    }
}

fn declined_before_ui(config: &Config, report: &CodexReport) -> Symptom {
    let files = config.describe_files();
    let mut causes = Vec::new();
    let mut actions = Vec::new();
    // What Codex itself declines.
    let by_codex = match config.approval_policy {
        ApprovalPolicy::Never => Some((
            "approval_policy = \"never\"",
            "Codex's thread runs with approvalPolicy \"never\", which declines every plugin form",
        )),
        ApprovalPolicy::Granular(granular) if !granular.mcp_elicitations => Some((
            "approval_policy's granular mcp_elicitations = false",
            "Codex's thread runs with the granular policy's mcp_elicitations = false, which declines every plugin form",
        )),
        _ => None,
    };
    // Forms the plugin got `decline` for that formwork never answered: Codex declined them.
    let declined_by_plugin = plugin_forms(report)
        .filter(|form| action_of(&form.answer) == Some("decline"))
        .count();
    let declined_by_formwork = report
        .requests
        .iter()
        .filter(|request| request.kind == "form" && action_of(&request.answer) == Some("decline"))
        .count();
    let by_codex_only = declined_by_plugin.saturating_sub(declined_by_formwork);
    let seen = if by_codex_only > 0 {
        format!(
            "; this run: the plugin got `decline` for {by_codex_only} form(s) for which no \
             mcpServer/elicitation/request reached formwork"
        )
    } else {
        String::new()
    };
    if let Some((key, what)) = by_codex {
        causes.push(format!("{key} in {files}: {what}{seen}"));
        actions.push(
            "use approval_policy = { granular = { sandbox_approval = false, rules = false, \
             skill_approval = false, request_permissions = false, mcp_elicitations = true } } (or \
             leave approval_policy out: formwork then sends Codex a granular policy with \
             mcp_elicitations = true)"
                .to_owned(),
        );
    }
    if config.elicitations_auto_deny {
        causes.push(format!(
            "elicitations_auto_deny = true in {files}: Codex forwards each plugin form \
             (mcpServer/elicitation/request, logged with marker=codex-elicitation-received) and \
             formwork answers it `decline` before any card"
        ));
        actions.push("set elicitations_auto_deny = false (or remove the key)".to_owned());
    }
    let outside = report
        .requests
        .iter()
        .filter(|request| request.kind == "form" && !request.during_turn)
        .count();
    if outside > 0 {
        causes.push(format!(
            "Codex forwarded {outside} form(s) with turnId null while no tool call of the plugin \
             was running: there is no active turn to show them in, and formwork declines them"
        ));
    }
    if by_codex_only > 0 && by_codex.is_none() {
        causes.push(format!(
            "the plugin got `decline` for {by_codex_only} form(s) that never reached formwork, and \
             the policy allows forms: Codex declines a form that comes while no turn or call of its \
             client is active (here: while Codex listed the plugin's tools as the thread started)"
        ));
    }
    if outside > 0 || (by_codex_only > 0 && by_codex.is_none()) {
        actions.push(
            "ask for forms only inside a tool's handler, while its tools/call is running"
                .to_owned(),
        );
    }
    if !causes.is_empty() {
        return row(1, Some(true), causes.join("; "), actions.join("; "));
    }
    match &report.call {
        Some(call) => row(
            1,
            Some(false),
            format!(
                "the thread's policy lets plugin forms through (approvalPolicy {}), no auto-deny \
                 applies, and every form of tool `{}` reached formwork during its call",
                report.codex.approval_policy, call.tool
            ),
            String::new(),
        ),
        None => row(
            1,
            None,
            format!(
                "the thread's policy lets plugin forms through (approvalPolicy {}) and no auto-deny \
                 applies; only a tool call shows whether the plugin asks outside its call",
                report.codex.approval_policy
            ),
            String::new(),
        ),
    }
}

fn schema_unsupported(report: &CodexReport) -> Symptom {
    let server = &report.server.name;
    let refused: Vec<&String> = report
        .codex_log
        .iter()
        .filter(|line| line.starts_with(&format!("{server}: ")))
        .collect();
    let declined: Vec<String> = report
        .requests
        .iter()
        .filter(|request| request.kind == "form")
        .filter_map(|request| request.decline.clone())
        .collect();
    // Codex's MCP client answers a request it cannot read into its types with -32602.
    let unreadable: Vec<String> = plugin_forms(report)
        .filter_map(|form| {
            let error = form.answer.get("error")?;
            Some(format!(
                "{} (code {})",
                error
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or_default(),
                error.get("code").map_or_else(String::new, Value::to_string)
            ))
        })
        .collect();
    let mut causes = Vec::new();
    if !unreadable.is_empty() {
        causes.push(format!(
            "Codex's MCP client could not read the plugin's elicitation/create and answered it with \
             an error, so no form reached formwork: {}",
            unreadable.join("; ")
        ));
    }
    if !refused.is_empty() {
        causes.push(format!(
            "Codex could not read the form's requestedSchema into its typed schema and answered \
             the plugin `cancel` without sending it to formwork; its log: {}",
            refused
                .iter()
                .map(|line| line.as_str())
                .collect::<Vec<_>>()
                .join("; ")
        ));
    }
    if !declined.is_empty() {
        causes.push(format!(
            "Codex forwarded the form (mcpServer/elicitation/request, logged with \
             marker=codex-elicitation-received) but formwork cannot show it and answered \
             `decline`: {}",
            declined.join("; ")
        ));
    }
    if !causes.is_empty() {
        return row(
            2,
            Some(true),
            causes.join("; "),
            "give requestedSchema only `$schema`, `type: \"object\"`, `properties` and `required` at \
             its top level (no `title` or `description` there: Codex 0.171 refuses them), and one \
             flat property per question (string, number, integer, boolean, enum/oneOf, or an array \
             of enum strings); `formwork schema check` on the params prints what formwork makes of it"
                .to_owned(),
        );
    }
    match &report.call {
        Some(call) => row(
            2,
            Some(false),
            format!(
                "every form of tool `{}` that reached Codex had a schema Codex and formwork can show",
                call.tool
            ),
            String::new(),
        ),
        None => row(
            2,
            None,
            "only a tool call shows whether the plugin's forms have a schema Codex accepts"
                .to_owned(),
            String::new(),
        ),
    }
}

fn tool_approval(config: &Config, report: &CodexReport, approval_asked: bool) -> Symptom {
    let server = &report.server.name;
    let table = crate::config::dotted(["mcp_servers", server.as_str()]);
    let action = format!(
        "if `{server}`'s tools do not need per-call approval, set default_tools_approval_mode = \
         \"approve\" in [{table}] of {} (formwork writes \"approve\" into Codex's config for every \
         server that sets no mode); keep an explicit \"prompt\" for servers and tools that need it",
        config.describe_files()
    );
    // What Codex's config says, as written for this run (the person's own keys there included).
    let (mode, said) = match &report.server.approval_mode {
        Some(found) => {
            let mode = found["mode"].as_str().unwrap_or_default().to_owned();
            let said = format!("{} = \"{mode}\"", found["key"].as_str().unwrap_or_default());
            (mode, said)
        }
        None => (
            String::new(),
            format!("{table} sets no approval mode (Codex's own default)"),
        ),
    };
    match &report.call {
        Some(call) if approval_asked => row(
            3,
            Some(true),
            format!(
                "Codex asked the person to approve the call of `{}` before it ran; Codex's config \
                 says {said}",
                call.tool
            ),
            action,
        ),
        Some(call) => row(
            3,
            Some(false),
            format!(
                "Codex ran `{}` without asking for approval ({said})",
                call.tool
            ),
            String::new(),
        ),
        None if mode == ApprovalMode::Prompt.as_str() => row(
            3,
            Some(true),
            format!("{said}: Codex asks before every call of this server's tools"),
            action,
        ),
        None => row(
            3,
            None,
            format!("{said}; only a tool call shows whether Codex asks"),
            String::new(),
        ),
    }
}

fn no_continue(report: &CodexReport) -> Symptom {
    let action = "make every answer path of the tool finish its tools/call: handle accept, cancel \
                  and decline explicitly and always return a result or an error"
        .to_owned();
    let Some(call) = &report.call else {
        return row(
            4,
            None,
            "only a tool call that asks for a form shows whether the plugin continues after the answer"
                .to_owned(),
            action,
        );
    };
    let answered = report
        .requests
        .iter()
        .filter(|request| request.kind == "form" && request.during_call)
        .count();
    match (call.outcome, answered) {
        ("stuck", n) if n > 0 => row(
            4,
            Some(true),
            format!(
                "formwork answered the plugin's form through Codex (logged with \
                 marker=codex-elicitation-answered) and the call had not ended: {}",
                call.error.as_deref().unwrap_or_default()
            ),
            action,
        ),
        ("stuck", _) => row(
            4,
            None,
            format!(
                "the call did not end, but no form of it was answered: {}",
                call.error.as_deref().unwrap_or_default()
            ),
            action,
        ),
        (_, 0) => row(
            4,
            Some(false),
            format!("tool `{}` got no form answer to continue from", call.tool),
            String::new(),
        ),
        (outcome, _) => row(
            4,
            Some(false),
            format!(
                "the plugin continued after its form's answer and the call {outcome}; the doctor \
                 answers `cancel`, so this run checks the cancel path"
            ),
            String::new(),
        ),
    }
}

fn push_on_2026() -> Symptom {
    row(
        5,
        Some(false),
        "Codex 0.171 speaks MCP 2025-06-18 to its servers, where a plugin may push its forms"
            .to_owned(),
        String::new(),
    )
}
