//! The session runtime against the official TypeScript SDK plugin: the form queue, every cancel
//! trigger, routing outside a turn, each policy row, and the approval card in both renderings.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::time::Duration;

use formwork_host::config::{ApprovalMode, Config, ConfigLocations};
use formwork_host::{
    Command, ElicitationRequest, EndReason, Event, FormAnswer, FormRequest, Host, HostOptions,
    TurnEndReason,
};
use formwork_testkit::peers_dir;
use serde_json::{Value, json};
use tokio::sync::broadcast;

/// The `[mcp_servers.<name>]` table of the TS SDK plugin.
fn ts_table(name: &str) -> String {
    let node = peers_dir().join("npm/node_modules/.bin/node");
    let node = if node.exists() {
        node.display().to_string()
    } else {
        "node".to_owned()
    };
    let plugin = peers_dir().join("npm/ts_plugin.mjs").display().to_string();
    format!("[mcp_servers.{name}]\ncommand = {node:?}\nargs = [{plugin:?}]\n")
}

/// A config with the TS SDK plugin as server `ts`, plus `extra` TOML.
fn config(top: &str, server_extra: &str) -> Config {
    let text = format!("{top}\n{}{server_extra}\n", ts_table("ts"));
    Config::from_toml(&text, None).unwrap()
}

fn approve() -> &'static str {
    "default_tools_approval_mode = \"approve\""
}

fn host(config: Config) -> Host {
    host_with(config, HostOptions::default())
}

fn host_with(config: Config, options: HostOptions) -> Host {
    Host::new(config, options)
}

struct Watch {
    host: Host,
    session: String,
    events: broadcast::Receiver<Arc<Event>>,
}

impl Watch {
    fn open(host: &Host) -> Watch {
        let session = host.create_session();
        let (_, events) = host.subscribe(&session).unwrap();
        Watch {
            host: host.clone(),
            session,
            events,
        }
    }

    fn send(&self, command: Command) {
        self.host.command(&self.session, command).unwrap();
    }

    fn call(&self, tool: &str) {
        self.call_on("ts", tool);
    }

    fn call_on(&self, server: &str, tool: &str) {
        self.send(Command::CallTool {
            server: server.to_owned(),
            tool: tool.to_owned(),
            arguments: None,
        });
    }

    /// The next approval card: its id and the labels of its choices.
    async fn approval(&mut self) -> (String, Vec<String>) {
        let (id, body) = self
            .next(|event| match event {
                Event::ApprovalRequested {
                    approval_id, body, ..
                } => Some((approval_id.clone(), body.clone())),
                _ => None,
            })
            .await;
        let ElicitationRequest::Form(FormRequest { render, .. }) = body else {
            panic!("not a form body")
        };
        let question = serde_json::to_value(&render.questions[0]).unwrap();
        let labels = question["options"]
            .as_array()
            .unwrap()
            .iter()
            .map(|option| option["label"].as_str().unwrap().to_owned())
            .collect();
        (id, labels)
    }

    /// The next event that `pick` accepts, within 30 s.
    async fn next<T>(&mut self, mut pick: impl FnMut(&Event) -> Option<T>) -> T {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        loop {
            let event = tokio::time::timeout_at(deadline, self.events.recv())
                .await
                .expect("no such event within 30 s")
                .unwrap();
            if let Some(found) = pick(&event) {
                return found;
            }
        }
    }

    async fn form(&mut self) -> (String, bool) {
        self.next(|event| match event {
            Event::FormRequested {
                form_id, waiting, ..
            } => Some((form_id.clone(), *waiting)),
            _ => None,
        })
        .await
    }

    async fn resolved(&mut self) -> (String, String, Option<String>) {
        self.next(|event| match event {
            Event::FormResolved {
                form_id,
                action,
                reason,
                ..
            } => Some((form_id.clone(), action.to_string(), reason.clone())),
            _ => None,
        })
        .await
    }

    /// The text of the next finished call's result, or its error.
    async fn finished(&mut self) -> Result<String, String> {
        self.next(|event| match event {
            Event::ToolCallFinished {
                result: Some(result),
                ..
            } => Some(Ok(result["content"][0]["text"]
                .as_str()
                .unwrap_or_default()
                .to_owned())),
            Event::ToolCallFinished {
                error: Some(error), ..
            } => Some(Err(error.clone())),
            _ => None,
        })
        .await
    }

    fn answer(&self, form_id: &str, content: Value) {
        self.send(Command::AnswerForm {
            form_id: form_id.to_owned(),
            answer: FormAnswer::Accept {
                content: content.as_object().unwrap().clone(),
            },
        });
    }
}

/// Reads the session's whole log until `pick` finds what it looks for (at most 30 s): for
/// bursts of more events than a subscriber's buffer holds.
async fn until_logged<T>(
    host: &Host,
    session: &str,
    what: &str,
    pick: impl Fn(&[Arc<Event>]) -> Option<T>,
) -> T {
    tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            if let Some(found) = pick(&host.events(session).unwrap()) {
                return found;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("{what} within 30 s"))
}

#[tokio::test]
async fn a_second_form_waits_until_the_first_ends() {
    let host = host(config("", approve()));
    let mut s = Watch::open(&host);
    s.call("ask_enum");
    let (first, waiting) = s.form().await;
    assert!(!waiting);
    s.call("ask_boolean");
    let (second, waiting) = s.form().await;
    assert!(waiting, "the second form must wait");
    let refused = host.command(
        &s.session,
        Command::AnswerForm {
            form_id: second.clone(),
            answer: FormAnswer::Decline,
        },
    );
    assert!(refused.is_err(), "a waiting form cannot be answered");
    s.answer(&first, json!({"color": "red"}));
    let shown = s
        .next(|event| match event {
            Event::FormShown { form_id } => Some(form_id.clone()),
            _ => None,
        })
        .await;
    assert_eq!(shown, second);
    s.answer(&second, json!({"agree": true}));
    let mut texts = vec![s.finished().await.unwrap(), s.finished().await.unwrap()];
    texts.sort();
    assert_eq!(
        texts,
        [
            r#"result: {"action":"accept","content":{"agree":true}}"#,
            r#"result: {"action":"accept","content":{"color":"red"}}"#,
        ]
    );
    host.shutdown().await;
}

#[tokio::test]
async fn forms_of_different_sessions_never_wait_on_each_other() {
    let host = host(config("", approve()));
    let mut a = Watch::open(&host);
    let mut b = Watch::open(&host);
    a.call("ask_enum");
    b.call("ask_enum");
    let (form_a, waiting_a) = a.form().await;
    let (form_b, waiting_b) = b.form().await;
    assert!(!waiting_a && !waiting_b);
    b.answer(&form_b, json!({"color": "blue"}));
    assert_eq!(
        b.finished().await.unwrap(),
        r#"result: {"action":"accept","content":{"color":"blue"}}"#
    );
    a.answer(&form_a, json!({"color": "green"}));
    assert_eq!(
        a.finished().await.unwrap(),
        r#"result: {"action":"accept","content":{"color":"green"}}"#
    );
    host.shutdown().await;
}

/// Opens a form, then a second one behind it, then applies `trigger`; both end as cancel
/// with `why`, and the plugin receives `cancel`.
async fn both_forms_cancelled_by(trigger: impl FnOnce(&Watch), why: &str) {
    let host = host(config("", approve()));
    let mut s = Watch::open(&host);
    s.call("ask_enum");
    s.form().await;
    s.call("ask_boolean");
    s.form().await;
    trigger(&s);
    for _ in 0..2 {
        let (_, action, reason) = s.resolved().await;
        assert_eq!((action.as_str(), reason.as_deref()), ("cancel", Some(why)));
    }
    if why != EndReason::Stopped.as_str() {
        for _ in 0..2 {
            assert_eq!(
                s.finished().await.unwrap(),
                r#"result: {"action":"cancel"}"#
            );
        }
    }
    host.shutdown().await;
}

#[tokio::test]
async fn a_new_message_cancels_the_pending_and_the_waiting_form() {
    both_forms_cancelled_by(
        |s| {
            s.send(Command::SendMessage {
                text: "never mind".to_owned(),
            })
        },
        EndReason::NewMessage.as_str(),
    )
    .await;
}

#[tokio::test]
async fn stopping_the_turn_cancels_its_forms_and_calls() {
    let host = host(config("", approve()));
    let mut s = Watch::open(&host);
    s.call("ask_enum");
    s.form().await;
    s.send(Command::StopTurn);
    let (_, action, why) = s.resolved().await;
    assert_eq!(
        (action.as_str(), why.as_deref()),
        ("cancel", Some(EndReason::Stopped.as_str()))
    );
    assert_eq!(s.finished().await.unwrap_err(), "the turn was stopped");
    let ended = s
        .next(|event| match event {
            Event::TurnEnded { reason, .. } => Some(*reason),
            _ => None,
        })
        .await;
    assert_eq!(ended, TurnEndReason::Stopped);
    host.shutdown().await;
}

/// A stopped call is cancelled at the plugin too (`notifications/cancelled`), so a tool that
/// would run on does not.
#[tokio::test]
async fn stopping_a_turn_cancels_its_calls_at_the_plugin() {
    let host = host(config("", approve()));
    let mut s = Watch::open(&host);
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("running");
    s.send(Command::CallTool {
        server: "ts".to_owned(),
        tool: "hold".to_owned(),
        arguments: Some(json!({ "marker": marker })),
    });
    // Stopped only once the tool runs in the plugin.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while !marker.exists() {
        assert!(tokio::time::Instant::now() < deadline, "`hold` never ran");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    s.send(Command::StopTurn);
    assert_eq!(s.finished().await.unwrap_err(), "the turn was stopped");
    s.call("last_abort");
    assert_eq!(
        s.finished().await.unwrap(),
        r#"aborted: "the host no longer waits for it""#
    );
    host.shutdown().await;
}

#[tokio::test]
async fn a_plugin_that_exits_cancels_its_form() {
    let host = host(config("", approve()));
    let mut s = Watch::open(&host);
    s.call("crash_mid_form");
    s.form().await;
    // The form's end and the call's end race; both must come, in either order.
    let (mut resolved, mut error) = (None, None);
    while resolved.is_none() || error.is_none() {
        s.next(|event| match event {
            Event::FormResolved { action, reason, .. } => {
                resolved = Some((action.to_string(), reason.clone()));
                Some(())
            }
            Event::ToolCallFinished {
                error: Some(text), ..
            } => {
                error = Some(text.clone());
                Some(())
            }
            _ => None,
        })
        .await;
    }
    assert_eq!(
        resolved,
        Some((
            "cancel".to_owned(),
            Some(EndReason::PluginGone.as_str().to_owned())
        ))
    );
    let error = error.unwrap();
    assert!(error.contains("went away"), "{error}");
    // The session's next call starts the plugin again.
    s.call("last_abort");
    assert_eq!(s.finished().await.unwrap(), "aborted: null");
    host.shutdown().await;
}

#[tokio::test]
async fn a_ui_gone_past_the_grace_period_cancels_forms_and_a_quick_return_keeps_them() {
    let options = HostOptions {
        ui_grace: Duration::from_millis(400),
        ..HostOptions::default()
    };
    let host = host_with(config("", approve()), options);
    let mut s = Watch::open(&host);
    let ui = host.attach_ui(&s.session).unwrap();
    s.call("ask_enum");
    let (form, _) = s.form().await;
    drop(ui);
    tokio::time::sleep(Duration::from_millis(100)).await;
    let ui = host.attach_ui(&s.session).unwrap();
    tokio::time::sleep(Duration::from_millis(600)).await;
    // Back within the grace period: the form is still open and can be answered.
    s.answer(&form, json!({"color": "red"}));
    assert_eq!(
        s.finished().await.unwrap(),
        r#"result: {"action":"accept","content":{"color":"red"}}"#
    );
    s.call("ask_enum");
    s.form().await;
    drop(ui);
    let (_, action, why) = s.resolved().await;
    assert_eq!(
        (action.as_str(), why.as_deref()),
        ("cancel", Some(EndReason::UiGone.as_str()))
    );
    assert_eq!(
        s.finished().await.unwrap(),
        r#"result: {"action":"cancel"}"#
    );
    host.shutdown().await;
}

#[tokio::test]
async fn the_per_form_time_limit_cancels() {
    let options = HostOptions {
        form_time_limit: Some(Duration::from_millis(300)),
        ..HostOptions::default()
    };
    let host = host_with(config("", approve()), options);
    let mut s = Watch::open(&host);
    s.call("ask_enum");
    s.form().await;
    let (_, action, why) = s.resolved().await;
    assert_eq!(
        (action.as_str(), why.as_deref()),
        ("cancel", Some(EndReason::TimedOut.as_str()))
    );
    assert_eq!(
        s.finished().await.unwrap(),
        r#"result: {"action":"cancel"}"#
    );
    host.shutdown().await;
}

#[tokio::test]
async fn a_form_outside_any_tool_call_is_declined_with_a_diagnostic() {
    let host = host(config("", approve()));
    let mut s = Watch::open(&host);
    s.call("ask_later");
    assert_eq!(s.finished().await.unwrap(), "scheduled");
    let code = s
        .next(|event| match event {
            Event::Diagnostic { code, .. } => Some(code.clone()),
            _ => None,
        })
        .await;
    assert_eq!(code, "elicitation-outside-turn");
    s.call("last_outcome");
    assert_eq!(
        s.finished().await.unwrap(),
        r#"result: {"action":"decline"}"#
    );
    host.shutdown().await;
}

/// Calls `ask_enum` under `top` config and returns the plugin's result text.
async fn ask_under_policy(top: &str) -> (String, Option<String>) {
    let host = host(config(top, approve()));
    let mut s = Watch::open(&host);
    s.call("ask_enum");
    let outcome = s
        .next(|event| match event {
            Event::FormRequested { form_id, .. } => Some(Ok(form_id.clone())),
            Event::Diagnostic { code, .. } => Some(Err(code.clone())),
            _ => None,
        })
        .await;
    let diagnostic = match outcome {
        Ok(form) => {
            s.answer(&form, json!({"color": "red"}));
            None
        }
        Err(code) => Some(code),
    };
    let text = s.finished().await.unwrap();
    host.shutdown().await;
    (text, diagnostic)
}

#[tokio::test]
async fn policy_rows_decide_whether_plugin_forms_reach_the_person() {
    let shown = r#"result: {"action":"accept","content":{"color":"red"}}"#.to_owned();
    let declined = (
        r#"result: {"action":"decline"}"#.to_owned(),
        Some("elicitation-declined-by-policy".to_owned()),
    );
    let rows = [
        ("approval_policy = \"on-request\"", (shown.clone(), None)),
        ("approval_policy = \"untrusted\"", (shown.clone(), None)),
        ("approval_policy = \"never\"", declined.clone()),
        ("elicitations_auto_deny = true", declined.clone()),
        (
            "approval_policy = { granular = { sandbox_approval = false, rules = false, mcp_elicitations = true } }",
            (shown.clone(), None),
        ),
        (
            "approval_policy = { granular = { sandbox_approval = false, rules = false, mcp_elicitations = false } }",
            declined.clone(),
        ),
    ];
    for (top, expected) in rows {
        assert_eq!(ask_under_policy(top).await, expected, "{top}");
    }
}

/// Calls `fail` (no form) on a server in `prompt` mode and answers the card with `choice`.
async fn approval_card(
    features: &str,
    choice: &str,
) -> (ElicitationRequest, Result<String, String>) {
    let host = host(config(features, "default_tools_approval_mode = \"prompt\""));
    let mut s = Watch::open(&host);
    s.call("ask_enum");
    let (approval, body) = s
        .next(|event| match event {
            Event::ApprovalRequested {
                approval_id, body, ..
            } => Some((approval_id.clone(), body.clone())),
            _ => None,
        })
        .await;
    s.send(Command::AnswerApproval {
        approval_id: approval,
        choice: formwork_host::policy::ApprovalChoice::from_name(choice).unwrap(),
    });
    if choice != "deny" {
        let (form, _) = s.form().await;
        s.answer(&form, json!({"color": "red"}));
    }
    let outcome = s.finished().await;
    host.shutdown().await;
    (body, outcome)
}

#[tokio::test]
async fn the_approval_card_as_a_request_user_input_question() {
    let (body, outcome) = approval_card("", "allow").await;
    let ElicitationRequest::Form(FormRequest { render, meta, .. }) = body else {
        panic!("not a form body")
    };
    assert_eq!(meta, None);
    let question = serde_json::to_value(&render.questions[0]).unwrap();
    assert_eq!(question["header"], "Approve app tool call?");
    let labels: Vec<&str> = question["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["label"].as_str().unwrap())
        .collect();
    assert_eq!(labels, ["Allow", "Deny"]);
    assert_eq!(
        outcome.unwrap(),
        r#"result: {"action":"accept","content":{"color":"red"}}"#
    );
}

#[tokio::test]
async fn the_approval_card_as_a_form_with_codex_approval_kind() {
    let (body, outcome) =
        approval_card("[features]\ntool_call_mcp_elicitation = true", "allow").await;
    let ElicitationRequest::Form(FormRequest { render, meta, .. }) = body else {
        panic!("not a form body")
    };
    assert!(render.questions.is_empty());
    assert_eq!(meta.unwrap()["codex_approval_kind"], "mcp_tool_call");
    assert!(outcome.is_ok());
}

#[tokio::test]
async fn a_denied_card_fails_the_call_without_running_the_tool() {
    let (_, outcome) = approval_card("", "deny").await;
    assert_eq!(outcome.unwrap_err(), "user rejected MCP tool call");
}

/// Always allow with a trusted project's file in force: written into the user config (which
/// then applies at once, the project layer still in place), never into the project's file; for a
/// server whose table is the project's, Always allow is not offered and writes nothing.
#[tokio::test]
async fn always_allow_with_a_trusted_project_writes_the_user_config_only() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let user = root.join("config/formwork/formwork.toml");
    let project = root.join("proj");
    std::fs::create_dir_all(user.parent().unwrap()).unwrap();
    std::fs::create_dir_all(&project).unwrap();
    // Unannotated tools under the `auto` default: every call asks.
    std::fs::write(
        &user,
        format!(
            "{}\n[projects.\"{}\"]\ntrust_level = \"trusted\"\n",
            ts_table("ts"),
            project.display()
        ),
    )
    .unwrap();
    let project_file = project.join("formwork.toml");
    let project_text = format!(
        "# the project's own plugin\napproval_policy = \"on-request\"\n\n{}",
        ts_table("tsp")
    );
    std::fs::write(&project_file, &project_text).unwrap();
    let config = Config::load_layered(&ConfigLocations {
        user: Some(user.clone()),
        explicit: None,
        start: Some(project.clone()),
    })
    .unwrap();
    let host = host(config);
    let mut s = Watch::open(&host);

    s.call_on("ts", "ask_enum");
    let (approval, labels) = s.approval().await;
    assert_eq!(
        labels,
        ["Allow", "Allow for this session", "Always allow", "Deny"]
    );
    s.send(Command::AnswerApproval {
        approval_id: approval,
        choice: formwork_host::policy::ApprovalChoice::AlwaysAllow,
    });
    let (form, _) = s.form().await;
    s.answer(&form, json!({"color": "red"}));
    assert!(s.finished().await.is_ok());
    let user_text = std::fs::read_to_string(&user).unwrap();
    assert!(
        user_text.contains("\n[mcp_servers.ts.tools.ask_enum]\napproval_mode = \"approve\"\n"),
        "{user_text}"
    );
    assert_eq!(
        std::fs::read_to_string(&project_file).unwrap(),
        project_text
    );
    let config = host.config();
    assert_eq!(
        config.server("ts").unwrap().tool_approval_mode("ask_enum"),
        Some(ApprovalMode::Approve)
    );
    assert!(config.server("tsp").is_some(), "the project layer is kept");

    s.call_on("tsp", "ask_enum");
    let (approval, labels) = s.approval().await;
    assert_eq!(labels, ["Allow", "Allow for this session", "Deny"]);
    s.send(Command::AnswerApproval {
        approval_id: approval,
        choice: formwork_host::policy::ApprovalChoice::AlwaysAllow,
    });
    let (form, _) = s.form().await;
    s.answer(&form, json!({"color": "blue"}));
    assert!(s.finished().await.is_ok());
    assert_eq!(std::fs::read_to_string(&user).unwrap(), user_text);
    assert_eq!(
        std::fs::read_to_string(&project_file).unwrap(),
        project_text
    );
    host.shutdown().await;
}

#[tokio::test]
async fn policy_never_with_a_tool_that_needs_approval_fails_clearly() {
    let host = host(config(
        "approval_policy = \"never\"",
        "default_tools_approval_mode = \"prompt\"",
    ));
    let mut s = Watch::open(&host);
    s.call("ask_enum");
    assert_eq!(
        s.finished().await.unwrap_err(),
        "MCP tool call requires approval, but approval policy is never"
    );
    host.shutdown().await;
}

#[tokio::test]
async fn after_a_restart_the_transcript_is_intact_and_open_forms_show_as_cancelled() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("formwork.db");
    let store = formwork_host::store::Store::open(&path).unwrap();
    let host = Host::with_store(config("", approve()), HostOptions::default(), store)
        .await
        .unwrap();
    let mut s = Watch::open(&host);
    s.send(Command::SendMessage {
        text: "deploy please".to_owned(),
    });
    s.call("ask_enum");
    let (answered, _) = s.form().await;
    s.answer(&answered, json!({"color": "red"}));
    s.finished().await.unwrap();
    s.call("ask_enum");
    let (pending, _) = s.form().await;
    let session = s.session.clone();
    let (live, _) = host.subscribe(&session).unwrap();
    host.shutdown().await;

    let store = formwork_host::store::Store::open(&path).unwrap();
    let host = Host::with_store(config("", approve()), HostOptions::default(), store)
        .await
        .unwrap();
    assert_eq!(host.sessions(), std::slice::from_ref(&session));
    let (replayed, _) = host.subscribe(&session).unwrap();
    let kept = |event: &Arc<Event>| {
        !matches!(
            **event,
            Event::TurnStarted { .. } | Event::TurnEnded { .. } | Event::FormShown { .. }
        )
    };
    let live: Vec<Arc<Event>> = live.into_iter().filter(kept).collect();
    // Everything the live session showed comes back, in order; the form left open ends as
    // cancelled because the host stopped, and its call as failed.
    assert_eq!(replayed[..live.len()], live[..]);
    let rest: Vec<String> = replayed[live.len()..]
        .iter()
        .map(|event| match event.as_ref() {
            Event::FormResolved {
                form_id,
                action,
                reason,
                ..
            } => {
                format!(
                    "{} {action} {}",
                    *form_id == pending,
                    reason.clone().unwrap_or_default()
                )
            }
            Event::ToolCallFinished { error, .. } => {
                format!("call {}", error.clone().unwrap_or_default())
            }
            other => format!("{other:?}"),
        })
        .collect();
    assert_eq!(rest[0], "true cancel host-stopped");
    assert!(rest[1].starts_with("call "), "{rest:?}");
    host.shutdown().await;

    // The store keeps what the plugin asked (its params, in its key order; the TS SDK adds
    // `mode` last) apart from what the person was shown.
    let store = formwork_host::store::Store::open(&path).unwrap();
    let form = store.form(&answered).await.unwrap().unwrap();
    assert_eq!(
        form.request.get(),
        r#"{"message":"Please give color","requestedSchema":{"type":"object","properties":{"color":{"type":"string","title":"Color","enum":["red","green","blue"]}},"required":["color"]},"mode":"form"}"#
    );
    let shown: Value = serde_json::from_str(form.render.unwrap().get()).unwrap();
    assert_eq!(shown["mode"], "form", "{shown}");
    assert_eq!(shown["render"]["type"], "request_user_input", "{shown}");
}

/// A form still open when its call ends is cancelled (`call-ended`), before the call's end is
/// announced, and the plugin is told.
#[tokio::test]
async fn a_form_whose_call_ended_is_cancelled() {
    let host = host(config("", approve()));
    let mut s = Watch::open(&host);
    s.call("ask_and_return");
    let (form, _) = s.form().await;
    let (ended, action, reason) = s.resolved().await;
    assert_eq!(
        (ended, action.as_str(), reason.as_deref()),
        (form, "cancel", Some("call-ended"))
    );
    assert_eq!(s.finished().await.unwrap(), "returned");
    s.call("last_outcome");
    assert_eq!(
        s.finished().await.unwrap(),
        r#"result: {"action":"cancel"}"#
    );
    host.shutdown().await;
}

#[tokio::test]
async fn a_url_form_reports_the_plugins_completion() {
    let host = host(config("", approve()));
    let mut s = Watch::open(&host);
    s.call("ask_url");
    let (form, _) = s.form().await;
    s.send(Command::AnswerForm {
        form_id: form.clone(),
        answer: FormAnswer::AcceptUrl,
    });
    let completed = s
        .next(|event| match event {
            Event::FormCompleted { form_id } => Some(form_id.clone()),
            _ => None,
        })
        .await;
    assert_eq!(completed, form);
    assert_eq!(
        s.finished().await.unwrap(),
        r#"result: {"action":"accept"}"#
    );
    host.shutdown().await;
}

/// A plugin that opens more forms at once than `[forms] max_pending` allows: the one past the
/// limit is declined at once, with a diagnostic naming the limit; the others are shown.
#[tokio::test]
async fn a_form_past_the_pending_limit_is_declined_at_once() {
    for (top, limit) in [("", 16), ("[forms]\nmax_pending = 3", 3)] {
        let host = host(config(top, approve()));
        let s = Watch::open(&host);
        s.send(Command::CallTool {
            server: "ts".to_owned(),
            tool: "ask_many".to_owned(),
            arguments: Some(json!({ "count": limit + 1 })),
        });
        let (forms, diagnostic) = until_logged(
            &host,
            &s.session,
            "the forms and the diagnostic",
            |events| {
                let forms: Vec<String> = events
                    .iter()
                    .filter_map(|event| match &**event {
                        Event::FormRequested { form_id, .. } => Some(form_id.clone()),
                        _ => None,
                    })
                    .collect();
                let diagnostic = events.iter().find_map(|event| match &**event {
                    Event::Diagnostic { code, message } => Some((code.clone(), message.clone())),
                    _ => None,
                })?;
                (forms.len() >= limit).then_some((forms, diagnostic))
            },
        )
        .await;
        assert_eq!(forms.len(), limit);
        assert_eq!(
            diagnostic,
            (
                "form-limit".to_owned(),
                format!(
                    "ts: declined: {limit} forms of this tool call already wait for an answer, \
                     the most [forms] max_pending = {limit} allows"
                )
            )
        );
        for form in &forms {
            s.answer(form, json!({"agree": true}));
        }
        let result = until_logged(&host, &s.session, "the call's end", |events| {
            events.iter().find_map(|event| match &**event {
                Event::ToolCallFinished { result, .. } => result.clone(),
                _ => None,
            })
        })
        .await;
        let text = result["content"][0]["text"].as_str().unwrap();
        let results: Value = serde_json::from_str(text.strip_prefix("result: ").unwrap()).unwrap();
        let declined = results
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| **r == json!({"action": "decline"}))
            .count();
        let accepted = results
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| **r == json!({"action": "accept", "content": {"agree": true}}))
            .count();
        assert_eq!((accepted, declined), (limit, 1), "{results}");
        host.shutdown().await;
    }
}

/// A field that names a secret is marked in the render block; with
/// `[forms] sensitive_fields = "decline"` the form is declined before the person sees it.
#[tokio::test]
async fn a_form_that_asks_for_a_secret_is_marked_or_declined() {
    let host = host(config("", approve()));
    let mut s = Watch::open(&host);
    s.call("ask_password");
    let body = s
        .next(|event| match event {
            Event::FormRequested { body, .. } => Some(body.clone()),
            _ => None,
        })
        .await;
    let ElicitationRequest::Form(FormRequest { render, .. }) = body else {
        panic!("not a form body")
    };
    let marks: Vec<(String, bool)> = render
        .questions
        .iter()
        .map(|q| (q.id.clone(), q.sensitive))
        .collect();
    assert_eq!(
        marks,
        [("user".to_owned(), false), ("password".to_owned(), true)]
    );
    host.shutdown().await;

    let host = host_with(
        config("[forms]\nsensitive_fields = \"decline\"", approve()),
        HostOptions::default(),
    );
    let mut s = Watch::open(&host);
    s.call("ask_password");
    let (code, message) = s
        .next(|event| match event {
            Event::Diagnostic { code, message } => Some((code.clone(), message.clone())),
            Event::FormRequested { .. } => panic!("a form asking for a secret was shown"),
            _ => None,
        })
        .await;
    assert_eq!(code, "form-asks-for-a-secret");
    assert_eq!(
        message,
        "ts: declined: the form asks for a secret (password), which plugins must not ask for in \
         a form, and [forms] sensitive_fields = \"decline\""
    );
    assert_eq!(
        s.finished().await.unwrap(),
        r#"result: {"action":"decline"}"#
    );
    host.shutdown().await;
}

/// A host over a store at `path`, and a second connection to the same database through which
/// a test makes the store misbehave the way a disk can (refusing writes, holding the lock).
async fn stored_host(path: &std::path::Path, server_extra: &str) -> (Host, rusqlite::Connection) {
    let store = formwork_host::store::Store::open(path).unwrap();
    let host = Host::with_store(config("", server_extra), HostOptions::default(), store)
        .await
        .unwrap();
    let meddler = rusqlite::Connection::open(path).unwrap();
    meddler.busy_timeout(Duration::from_secs(10)).unwrap();
    (host, meddler)
}

/// The events of the session as JSON, from the first that `from` accepts.
fn events_from(host: &Host, session: &str, from: impl Fn(&Value) -> bool) -> Vec<Value> {
    let events: Vec<Value> = host
        .events(session)
        .unwrap()
        .iter()
        .map(|event| serde_json::to_value(event.as_ref()).unwrap())
        .collect();
    let start = events.iter().position(from).unwrap();
    events[start..].to_vec()
}

/// While the store cannot commit, the answer does not reach the plugin; it gets there once the
/// answer is stored.
#[tokio::test]
async fn an_answer_reaches_the_plugin_only_once_it_is_stored() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("formwork.db");
    let (host, meddler) = stored_host(&path, approve()).await;
    let mut s = Watch::open(&host);
    s.call("ask_enum");
    let (form, _) = s.form().await;
    let stored = |meddler: &rusqlite::Connection| -> String {
        meddler
            .query_row("SELECT status FROM forms WHERE id = ?1", [&form], |row| {
                row.get(0)
            })
            .unwrap_or_default()
    };
    // The form's row is in; from now on the writer waits for the lock this connection holds.
    while stored(&meddler) != "pending" {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    meddler.execute_batch("BEGIN IMMEDIATE").unwrap();
    s.answer(&form, json!({"color": "green"}));
    let early = tokio::time::timeout(Duration::from_secs(1), s.finished()).await;
    assert!(
        early.is_err(),
        "the plugin had the answer before it was stored: {early:?}"
    );
    meddler.execute_batch("COMMIT").unwrap();
    assert_eq!(
        s.finished().await.unwrap(),
        r#"result: {"action":"accept","content":{"color":"green"}}"#
    );
    assert_eq!(stored(&meddler), "accepted");
    host.shutdown().await;
}

/// An answer the store refuses never reaches the plugin: it gets `cancel`, the card ends again
/// as cancelled (`not-stored`), and a diagnostic names the store's error.
#[tokio::test]
async fn an_answer_that_cannot_be_stored_ends_the_form_as_cancel() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("formwork.db");
    let (host, meddler) = stored_host(&path, approve()).await;
    meddler
        .execute_batch(
            "CREATE TRIGGER refuse_answers BEFORE UPDATE OF status ON forms
             WHEN NEW.status = 'accepted'
             BEGIN SELECT RAISE(ABORT, 'the disk refused the answer'); END;",
        )
        .unwrap();
    let mut s = Watch::open(&host);
    s.call("ask_enum");
    let (form, _) = s.form().await;
    s.answer(&form, json!({"color": "red"}));
    assert_eq!(
        s.finished().await.unwrap(),
        r#"result: {"action":"cancel"}"#
    );
    let session = s.session.clone();
    let ended = events_from(&host, &session, |event| event["type"] == "form_resolved");
    assert_eq!(
        ended[..3],
        [
            json!({"type": "form_resolved", "form_id": form, "action": "accept", "content": {"color": "red"}}),
            json!({"type": "form_resolved", "form_id": form, "action": "cancel", "reason": "not-stored"}),
            json!({"type": "diagnostic", "code": "answer-not-stored", "message": format!(
                "the answer to form {form} could not be stored, so the plugin was told `cancel`: \
                 database error: the disk refused the answer"
            )}),
        ]
    );
    assert_eq!(ended[3]["type"], "tool_call_finished");
    host.shutdown().await;
    // What the store kept is what the plugin got.
    let status: (String, Option<String>, Option<String>) = meddler
        .query_row(
            "SELECT status, reason, content FROM forms WHERE id = ?1",
            [&form],
            |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)),
        )
        .unwrap();
    assert_eq!(
        status,
        ("cancelled".to_owned(), Some("not-stored".to_owned()), None)
    );
}

/// An approval the store refuses does not let the call run: it fails as cancelled.
#[tokio::test]
async fn an_approval_that_cannot_be_stored_cancels_the_call() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("formwork.db");
    let (host, meddler) = stored_host(&path, "default_tools_approval_mode = \"prompt\"").await;
    meddler
        .execute_batch(
            "CREATE TRIGGER refuse_allow BEFORE UPDATE OF status ON approvals
             WHEN NEW.choice = 'allow'
             BEGIN SELECT RAISE(ABORT, 'the disk refused the answer'); END;",
        )
        .unwrap();
    let mut s = Watch::open(&host);
    s.call("ask_enum");
    let approval = s
        .next(|event| match event {
            Event::ApprovalRequested { approval_id, .. } => Some(approval_id.clone()),
            _ => None,
        })
        .await;
    s.send(Command::AnswerApproval {
        approval_id: approval.clone(),
        choice: formwork_host::policy::ApprovalChoice::Allow,
    });
    assert_eq!(
        s.finished().await.unwrap_err(),
        "user cancelled MCP tool call"
    );
    let session = s.session.clone();
    let ended = events_from(&host, &session, |event| {
        event["type"] == "approval_resolved"
    });
    assert_eq!(
        ended[..4],
        [
            json!({"type": "approval_resolved", "approval_id": approval, "choice": "allow",
                   "reason": "the person allowed this call of tool \"ask_enum\" of server ts"}),
            json!({"type": "approval_resolved", "approval_id": approval, "choice": "deny", "cancelled": true,
                   "reason": "approval of tool \"ask_enum\" of server ts cancelled: not-stored"}),
            json!({"type": "diagnostic", "code": "answer-not-stored", "message": format!(
                "the answer to approval {approval} could not be stored, so the tool call does \
                 not run: database error: the disk refused the answer"
            )}),
            json!({"type": "tool_call_finished", "call_id": ended[3]["call_id"],
                   "error": "user cancelled MCP tool call"}),
        ]
    );
    host.shutdown().await;
}

/// A plugin that makes the session decline form after form writes a bounded number of
/// diagnostics into the transcript: a burst of 20, then one a second.
#[tokio::test]
async fn declined_forms_bring_a_bounded_number_of_diagnostics() {
    let host = host(config("[forms]\nmax_pending = 1", approve()));
    let s = Watch::open(&host);
    s.send(Command::CallTool {
        server: "ts".to_owned(),
        tool: "ask_many".to_owned(),
        arguments: Some(json!({ "count": 60 })),
    });
    let form = until_logged(&host, &s.session, "the one form", |events| {
        events.iter().find_map(|event| match &**event {
            Event::FormRequested { form_id, .. } => Some(form_id.clone()),
            _ => None,
        })
    })
    .await;
    // The other 59 are declined as they come; the call ends once the one shown is answered.
    tokio::time::sleep(Duration::from_millis(500)).await;
    s.answer(&form, json!({"agree": true}));
    let diagnostics = until_logged(&host, &s.session, "the call's end", |events| {
        let finished = events
            .iter()
            .any(|event| matches!(&**event, Event::ToolCallFinished { .. }));
        finished.then(|| {
            events
                .iter()
                .filter(|event| matches!(&***event, Event::Diagnostic { .. }))
                .count()
        })
    })
    .await;
    assert!(
        (20..=23).contains(&diagnostics),
        "{diagnostics} diagnostics"
    );
    host.shutdown().await;
}

/// A cancelled approval says so in a field of its own, not only in its reason, live and after
/// a restart; an answered one does not.
#[tokio::test]
async fn a_cancelled_approval_is_marked_cancelled() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("formwork.db");
    let (host, _meddler) = stored_host(&path, "default_tools_approval_mode = \"prompt\"").await;
    let mut s = Watch::open(&host);
    s.call("ask_enum");
    s.next(|event| matches!(event, Event::ApprovalRequested { .. }).then_some(()))
        .await;
    s.send(Command::StopTurn);
    let resolved = s
        .next(|event| match event {
            Event::ApprovalResolved { .. } => Some(serde_json::to_value(event).unwrap()),
            _ => None,
        })
        .await;
    assert_eq!(resolved["choice"], "deny");
    assert_eq!(resolved["cancelled"], true, "{resolved}");
    assert_eq!(
        resolved["reason"],
        "approval of tool \"ask_enum\" of server ts cancelled: stopped"
    );
    let session = s.session.clone();
    host.shutdown().await;
    let (host, _meddler) = stored_host(&path, "default_tools_approval_mode = \"prompt\"").await;
    let replayed: Vec<Value> = host
        .events(&session)
        .unwrap()
        .iter()
        .filter(|event| matches!(&***event, Event::ApprovalResolved { .. }))
        .map(|event| serde_json::to_value(&**event).unwrap())
        .collect();
    assert_eq!(replayed, [resolved]);
    host.shutdown().await;
}

/// The `[mcp_servers.py]` table of the Python SDK plugin that asks through 2026-07-28 rounds,
/// with its `endless` tool's log at `log`.
fn mrtr_config(log: &std::path::Path) -> Config {
    mrtr_config_with("", log)
}

/// [`mrtr_config`] under the top-level keys `top`.
fn mrtr_config_with(top: &str, log: &std::path::Path) -> Config {
    let python = peers_dir().join("venv/bin/python").display().to_string();
    let plugin = peers_dir()
        .join("npm/py_mrtr_plugin.py")
        .display()
        .to_string();
    let log = log.display().to_string();
    let text = format!(
        "{top}\n[mcp_servers.py]\ncommand = {python:?}\nargs = [{plugin:?}]\nenv = {{ PY_MRTR_LOG = {log:?} }}\n{}\n",
        approve()
    );
    Config::from_toml(&text, None).unwrap()
}

/// A form of a round that the policy declines is answered `decline` in the retry, like any
/// other answer, and the session says why.
#[tokio::test]
async fn a_round_form_the_policy_declines_is_answered_decline() {
    let dir = tempfile::tempdir().unwrap();
    let host = host(mrtr_config_with(
        "approval_policy = \"never\"",
        &dir.path().join("log"),
    ));
    let mut s = Watch::open(&host);
    s.call_on("py", "deploy");
    let code = s
        .next(|event| match event {
            Event::Diagnostic { code, .. } => Some(code.clone()),
            _ => None,
        })
        .await;
    assert_eq!(code, "elicitation-declined-by-policy");
    assert_eq!(
        s.finished().await.unwrap(),
        "target: decline; confirm: not asked"
    );
    host.shutdown().await;
}

/// The rounds a call's plugin reported, as `round asked request_state`.
async fn next_round(s: &mut Watch) -> String {
    s.next(|event| match event {
        Event::ToolCallRound {
            round,
            asked,
            request_state,
            ..
        } => Some(format!("{round} {asked:?} {request_state}")),
        _ => None,
    })
    .await
}

/// Each `input_required` round shows its forms as cards of the call, like pushed forms, and is
/// recorded in the store before them; the call finishes after the last round.
#[tokio::test]
async fn each_round_of_a_2026_call_is_recorded_and_its_forms_are_cards_of_the_call() {
    let dir = tempfile::tempdir().unwrap();
    let store = formwork_host::store::Store::open(dir.path().join("formwork.db")).unwrap();
    let host = Host::with_store(
        mrtr_config(&dir.path().join("log")),
        HostOptions::default(),
        store,
    )
    .await
    .unwrap();
    let mut s = Watch::open(&host);
    s.call_on("py", "deploy");
    let call_id = s
        .next(|event| match event {
            Event::ToolCallStarted { call_id, .. } => Some(call_id.clone()),
            _ => None,
        })
        .await;
    let round = next_round(&mut s).await;
    assert!(
        round.starts_with("1 [") && round.ends_with("] true"),
        "{round}"
    );
    let (form, card_call) = s
        .next(|event| match event {
            Event::FormRequested {
                form_id, call_id, ..
            } => Some((form_id.clone(), call_id.clone())),
            _ => None,
        })
        .await;
    assert_eq!(card_call.as_deref(), Some(call_id.as_str()));
    s.answer(&form, json!({"target": "production"}));
    assert!(next_round(&mut s).await.starts_with("2 ["));
    let (form, _) = s.form().await;
    s.answer(&form, json!({"confirm": true}));
    assert_eq!(
        s.finished().await.unwrap(),
        r#"target: accept {"target":"production"}; confirm: {"confirm":true}"#
    );
    host.shutdown().await;

    let store = formwork_host::store::Store::open(dir.path().join("formwork.db")).unwrap();
    let rounds: Vec<(u32, usize, bool)> = store
        .rounds(&call_id)
        .await
        .unwrap()
        .into_iter()
        .map(|round| (round.round, round.asked.len(), round.request_state))
        .collect();
    assert_eq!(rounds, [(1, 1, true), (2, 1, true)]);
}

/// Stopping the turn while a round's form is open ends the call: nothing more is sent.
#[tokio::test]
async fn stopping_the_turn_between_rounds_stops_the_retries() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log");
    let host = host(mrtr_config(&log));
    let mut s = Watch::open(&host);
    s.call_on("py", "endless");
    let (form, _) = s.form().await;
    s.answer(&form, json!({"n": 1}));
    let (_, _) = s.form().await;
    s.send(Command::StopTurn);
    assert_eq!(s.finished().await.unwrap_err(), "the turn was stopped");
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "1\n2\n");
    host.shutdown().await;
}

/// A host that stops between rounds leaves the call interrupted: after the restart it shows as
/// stopped with the host, its rounds are on record, and it is never sent again.
#[tokio::test]
async fn a_restart_between_rounds_shows_the_call_interrupted_and_never_resends_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("formwork.db");
    let log = dir.path().join("log");
    let store = formwork_host::store::Store::open(&path).unwrap();
    let host = Host::with_store(mrtr_config(&log), HostOptions::default(), store)
        .await
        .unwrap();
    let mut s = Watch::open(&host);
    s.call_on("py", "endless");
    let call_id = s
        .next(|event| match event {
            Event::ToolCallStarted { call_id, .. } => Some(call_id.clone()),
            _ => None,
        })
        .await;
    s.form().await;
    host.shutdown().await;

    let store = formwork_host::store::Store::open(&path).unwrap();
    let host = Host::with_store(mrtr_config(&log), HostOptions::default(), store)
        .await
        .unwrap();
    let (replayed, _) = host.subscribe(&s.session).unwrap();
    let ended: Vec<String> = replayed
        .iter()
        .filter_map(|event| match event.as_ref() {
            Event::ToolCallFinished {
                call_id: id, error, ..
            } if *id == call_id => Some(error.clone().unwrap_or_default()),
            _ => None,
        })
        .collect();
    assert_eq!(ended, ["host-stopped"]);
    // The round is in the transcript, between the call's start and its form.
    let order: Vec<&str> = replayed
        .iter()
        .filter_map(|event| match event.as_ref() {
            Event::ToolCallStarted { .. } => Some("started"),
            Event::ToolCallRound { round: 1, .. } => Some("round 1"),
            Event::FormRequested { .. } => Some("form"),
            Event::ToolCallFinished { .. } => Some("finished"),
            _ => None,
        })
        .collect();
    assert_eq!(order, ["started", "round 1", "form", "finished"]);
    tokio::time::sleep(Duration::from_millis(500)).await;
    host.shutdown().await;
    let store = formwork_host::store::Store::open(&path).unwrap();
    assert_eq!(store.rounds(&call_id).await.unwrap().len(), 1);
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "1\n");
}
