//! Each policy row, and the approval card in both renderings.

use super::*;

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
    let question = serde_json::to_value(&render.block().unwrap().questions[0]).unwrap();
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
    assert!(render.block().unwrap().questions.is_empty());
    assert_eq!(
        meta.unwrap().to_value()["codex_approval_kind"],
        "mcp_tool_call"
    );
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
