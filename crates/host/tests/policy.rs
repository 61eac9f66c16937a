//! The approval policy, row by row: every configuration goes in as `formwork.toml` text and
//! every decision comes out as data with its reason, so each row of the tables below is one
//! rule of the policy.

use std::path::Path;

use formwork_forms::render::RenderAnswers;
use formwork_host::config::{self, ApprovalMode, Config};
use formwork_host::policy::{
    self, ApprovalAnswer, ApprovalCard, ApprovalChoice, ApprovalNeed, ApprovalRequest,
    CardRendering, ElicitationAllowed, ElicitationDeclined, ModeSource, NEVER_POLICY_MESSAGE,
    RememberOffers, SessionApprovals, ToolApproval,
};
use serde_json::{Value, json};

fn load(toml: &str) -> Config {
    match Config::from_toml(toml, Some(Path::new("formwork.toml"))) {
        Ok(config) => config,
        Err(err) => panic!("{err}"),
    }
}

// ---------------------------------------------------------------------------------------------
// Plugin forms: approval_policy × elicitations_auto_deny

/// What the gate says for one configuration.
type Gate = Result<ElicitationAllowed, ElicitationDeclined>;

#[test]
fn elicitation_gate_table() {
    const GRANULAR_ON: &str = "{ granular = { sandbox_approval = false, rules = false, skill_approval = false, request_permissions = false, mcp_elicitations = true } }";
    const GRANULAR_OFF: &str = "{ granular = { sandbox_approval = true, rules = true, skill_approval = true, request_permissions = true, mcp_elicitations = false } }";
    let on_request = r#""on-request""#;
    let rows: &[(Option<&str>, Gate, &str)] = &[
        (
            None,
            Ok(ElicitationAllowed::OnRequest),
            r#"plugin forms are shown: approval_policy = "on-request" allows them"#,
        ),
        (
            Some(on_request),
            Ok(ElicitationAllowed::OnRequest),
            r#"plugin forms are shown: approval_policy = "on-request" allows them"#,
        ),
        (
            Some(r#""untrusted""#),
            Ok(ElicitationAllowed::Untrusted),
            r#"plugin forms are shown: approval_policy = "untrusted" allows them"#,
        ),
        (
            Some(r#""never""#),
            Err(ElicitationDeclined::PolicyNever),
            r#"plugin form declined: approval_policy = "never" declines plugin forms"#,
        ),
        (
            Some(GRANULAR_ON),
            Ok(ElicitationAllowed::Granular),
            "plugin forms are shown: approval_policy granular.mcp_elicitations = true",
        ),
        (
            Some(GRANULAR_OFF),
            Err(ElicitationDeclined::GranularDisallowed),
            "plugin form declined: approval_policy granular.mcp_elicitations = false",
        ),
    ];
    let auto_deny =
        "plugin form declined: elicitations_auto_deny = true declines every plugin form";
    for (policy, expected, reason) in rows {
        for deny in [false, true] {
            let mut toml = String::new();
            if let Some(policy) = policy {
                toml.push_str(&format!("approval_policy = {policy}\n"));
            }
            toml.push_str(&format!("elicitations_auto_deny = {deny}\n"));
            let actual = policy::elicitation_gate(&load(&toml));
            let text = match &actual {
                Ok(allowed) => allowed.to_string(),
                Err(declined) => declined.to_string(),
            };
            if deny {
                // Auto-deny wins over every policy, as in Codex.
                assert_eq!(actual, Err(ElicitationDeclined::AutoDeny), "{toml}");
                assert_eq!(text, auto_deny);
            } else {
                assert_eq!(&actual, expected, "{toml}");
                assert_eq!(text, *reason);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Tool calls: approval mode × annotations

/// One column per annotations case.
const ANNOTATIONS: &[(&str, Option<&str>)] = &[
    ("none", None),
    ("{}", Some("{}")),
    ("ro", Some(r#"{"readOnlyHint": true}"#)),
    ("ro-false", Some(r#"{"readOnlyHint": false}"#)),
    ("destr", Some(r#"{"destructiveHint": true}"#)),
    (
        "ro+destr",
        Some(r#"{"readOnlyHint": true, "destructiveHint": true}"#),
    ),
    (
        "safe",
        Some(r#"{"destructiveHint": false, "openWorldHint": false}"#),
    ),
    ("closed", Some(r#"{"openWorldHint": false}"#)),
    ("nondestr", Some(r#"{"destructiveHint": false}"#)),
    (
        "rw-open",
        Some(r#"{"readOnlyHint": false, "destructiveHint": false, "openWorldHint": true}"#),
    ),
    (
        "strings",
        Some(r#"{"readOnlyHint": "true", "destructiveHint": "false", "openWorldHint": "false"}"#),
    ),
];

#[test]
fn approval_mode_by_annotations_table() {
    // C = card, . = runs without a card; columns in ANNOTATIONS order.
    let rows: &[(ApprovalMode, &str)] = &[
        //                      none {}  ro  ro-f destr ro+d safe closed nondestr rw-open strings
        (ApprovalMode::Auto, "C C . C C C . C C C C"),
        (ApprovalMode::Prompt, "C C C C C C C C C C C"),
        (ApprovalMode::Writes, "C C . C C . C C C C C"),
        (ApprovalMode::Approve, ". . . . . . . . . . ."),
    ];
    for (mode, expected) in rows {
        let expected: Vec<&str> = expected.split(' ').collect();
        let config = load(&format!(
            "[mcp_servers.s]\ncommand = \"x\"\ndefault_tools_approval_mode = \"{mode}\"\n"
        ));
        for ((name, annotations), expected) in ANNOTATIONS.iter().zip(expected) {
            let annotations: Option<Value> =
                annotations.map(|text| serde_json::from_str(text).expect("annotations JSON"));
            let approval = policy::tool_approval(&config, "s", "t", annotations.as_ref());
            let actual = match approval.need {
                ApprovalNeed::Card(_) => "C",
                ApprovalNeed::Run => ".",
                ApprovalNeed::Fail(_) => "F",
            };
            assert_eq!(
                actual, expected,
                "mode {mode}, annotations {name}: {}",
                approval.reason
            );
        }
    }
}

#[test]
fn reasons_name_the_rule_and_the_key() {
    let config = load(
        "[mcp_servers.s]\ncommand = \"x\"\n[mcp_servers.s.tools.t]\napproval_mode = \"writes\"\n",
    );
    let read_only = json!({"readOnlyHint": true});
    let cases = [
        (
            policy::tool_approval(&config, "s", "t", Some(&read_only)),
            "no approval needed: approval mode \"writes\" and the tool says readOnlyHint: true (mcp_servers.s.tools.t.approval_mode)",
        ),
        (
            policy::tool_approval(&config, "s", "other", None),
            "approval needed: approval mode \"auto\" and the tool does not say destructiveHint: false (the default for servers formwork does not manage)",
        ),
        (
            policy::tool_approval(&config, "demo", "deploy", None),
            "no approval needed: approval mode \"approve\" never asks (the default for formwork's built-in servers)",
        ),
    ];
    for (approval, reason) in cases {
        assert_eq!(approval.reason, reason);
    }
}

#[test]
fn mode_precedence_table() {
    let config = load(
        r#"
[mcp_servers.plain]
command = "x"

[mcp_servers.strict]
command = "x"
default_tools_approval_mode = "prompt"

[mcp_servers.strict.tools.lookup]
approval_mode = "approve"

[mcp_servers.demo]
default_tools_approval_mode = "prompt"

[mcp_servers.demo.tools.status]
approval_mode = "writes"
"#,
    );
    let rows = [
        ("plain", "any", ApprovalMode::Auto, ModeSource::Default),
        ("strict", "any", ApprovalMode::Prompt, ModeSource::Server),
        ("strict", "lookup", ApprovalMode::Approve, ModeSource::Tool),
        // A built-in server with an explicit prompt keeps it.
        ("demo", "deploy", ApprovalMode::Prompt, ModeSource::Server),
        ("demo", "status", ApprovalMode::Writes, ModeSource::Tool),
        // A server that is not configured (given on the command line) gets auto.
        ("adhoc", "any", ApprovalMode::Auto, ModeSource::Default),
    ];
    for (server, tool, mode, source) in rows {
        assert_eq!(
            policy::approval_mode(&config, server, tool),
            (mode, source),
            "{server}/{tool}"
        );
    }
    // The managed default: the built-in server without a mode approves.
    assert_eq!(
        policy::approval_mode(&Config::embedded(), "demo", "deploy"),
        (ApprovalMode::Approve, ModeSource::BuiltinDefault)
    );
}

#[test]
fn policy_never_with_a_card_fails_the_call() {
    let config = load(
        "approval_policy = \"never\"\n[mcp_servers.s]\ncommand = \"x\"\ndefault_tools_approval_mode = \"prompt\"\n",
    );
    let approval = policy::tool_approval(&config, "s", "t", None);
    assert_eq!(
        approval.need,
        ApprovalNeed::Fail(
            "MCP tool call requires approval, but approval policy is never".to_owned()
        )
    );
    assert_eq!(
        approval.reason,
        format!(
            "{NEVER_POLICY_MESSAGE}: approval mode \"prompt\" always asks (mcp_servers.s.default_tools_approval_mode)"
        )
    );
    // Without a card there is nothing to refuse.
    let approve = load(
        "approval_policy = \"never\"\n[mcp_servers.s]\ncommand = \"x\"\ndefault_tools_approval_mode = \"approve\"\n",
    );
    assert_eq!(
        policy::tool_approval(&approve, "s", "t", None).need,
        ApprovalNeed::Run
    );
}

#[test]
fn granular_without_mcp_elicitations_still_shows_tool_cards() {
    // Measured on Codex: the tool-approval card is not a plugin form, so
    // mcp_elicitations = false does not suppress it.
    let config = load(
        "approval_policy = { granular = { sandbox_approval = false, rules = false, mcp_elicitations = false } }\n[mcp_servers.s]\ncommand = \"x\"\ndefault_tools_approval_mode = \"prompt\"\n",
    );
    assert!(policy::elicitation_gate(&config).is_err());
    assert!(matches!(
        policy::tool_approval(&config, "s", "t", None).need,
        ApprovalNeed::Card(_)
    ));
}

#[test]
fn disabled_servers_and_tools_fail_whatever_the_mode() {
    let config = load(
        r#"
[mcp_servers.off]
command = "x"
enabled = false
default_tools_approval_mode = "approve"

[mcp_servers.some]
command = "x"
default_tools_approval_mode = "approve"
disabled_tools = ["drop_tables"]
"#,
    );
    assert_eq!(
        policy::tool_approval(&config, "off", "t", None).need,
        ApprovalNeed::Fail("mcp_servers.off is disabled in the config".into())
    );
    assert_eq!(
        policy::tool_approval(&config, "some", "drop_tables", None).need,
        ApprovalNeed::Fail(
            "tool \"drop_tables\" is left out by mcp_servers.some's enabled_tools/disabled_tools"
                .into()
        )
    );
    assert_eq!(
        policy::tool_approval(&config, "some", "select", None).need,
        ApprovalNeed::Run
    );
}

#[test]
fn remember_options_are_offered_only_under_auto() {
    let rows = [
        (
            ApprovalMode::Auto,
            RememberOffers {
                session: true,
                always: true,
            },
        ),
        (ApprovalMode::Prompt, RememberOffers::default()),
        (ApprovalMode::Writes, RememberOffers::default()),
    ];
    for (mode, offers) in rows {
        let config = load(&format!(
            "[mcp_servers.s]\ncommand = \"x\"\ndefault_tools_approval_mode = \"{mode}\"\n"
        ));
        assert_eq!(
            policy::tool_approval(&config, "s", "t", None).need,
            ApprovalNeed::Card(offers),
            "{mode}"
        );
    }
}

#[test]
fn sync_keeps_explicit_prompt_so_the_card_stays() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("formwork.toml");
    std::fs::write(
        &path,
        "[mcp_servers.demo]\ndefault_tools_approval_mode = \"prompt\"\n",
    )
    .expect("write");
    config::sync(&path, Path::new("/usr/bin/formwork")).expect("sync");
    let config = Config::load(&path).expect("load");
    assert!(matches!(
        policy::tool_approval(&config, "demo", "deploy", None).need,
        ApprovalNeed::Card(_)
    ));

    // Without an explicit mode, sync writes approve and the card goes away.
    std::fs::write(&path, "").expect("write");
    config::sync(&path, Path::new("/usr/bin/formwork")).expect("sync");
    let config = Config::load(&path).expect("load");
    let approval = policy::tool_approval(&config, "demo", "deploy", None);
    assert_eq!(approval.need, ApprovalNeed::Run);
    assert_eq!(approval.mode_source, ModeSource::Server);
}

// ---------------------------------------------------------------------------------------------
// The card and its two renderings

fn card(mode: ApprovalMode, arguments: Option<&Value>) -> ApprovalCard {
    let config = load(&format!(
        "[mcp_servers.shop]\ncommand = \"x\"\ndefault_tools_approval_mode = \"{mode}\"\n"
    ));
    let approval: ToolApproval = policy::tool_approval(&config, "shop", "refund", None);
    approval
        .card(&ApprovalRequest {
            call_id: "call_7",
            tool_title: Some("Refund an order"),
            tool_description: Some("Refunds an order in full."),
            arguments,
        })
        .expect("a card")
}

#[test]
fn no_card_when_none_is_needed() {
    let approval = policy::tool_approval(&Config::embedded(), "demo", "deploy", None);
    let request = ApprovalRequest {
        call_id: "c",
        tool_title: None,
        tool_description: None,
        arguments: None,
    };
    assert_eq!(approval.card(&request), None);
}

#[test]
fn render_block_under_auto_offers_all_four_choices() {
    let block = serde_json::to_value(card(ApprovalMode::Auto, None).render_block()).expect("json");
    assert_eq!(
        block,
        json!({
            "type": "request_user_input",
            "message": "Allow the shop MCP server to run tool \"refund\"?",
            "questions": [{
                "id": "mcp_tool_call_approval_call_7",
                "header": "Approve app tool call?",
                "question": "Allow the shop MCP server to run tool \"refund\"?",
                "isOther": false,
                "isSecret": false,
                "options": [
                    {"label": "Allow", "description": "Run the tool and continue.", "value": "Allow"},
                    {"label": "Allow for this session", "description": "Run the tool and remember this choice for this session.", "value": "Allow for this session"},
                    {"label": "Always allow", "description": "Run the tool and remember this choice in the config for future tool calls.", "value": "Always allow"},
                    {"label": "Deny", "description": "Do not run the tool.", "value": "Deny"}
                ],
                "input": "single_select",
                "multiSelect": false,
                "required": true,
                "schema": {"type": "string", "enum": ["Allow", "Allow for this session", "Always allow", "Deny"]}
            }]
        })
    );
}

#[test]
fn render_block_under_prompt_offers_allow_and_deny() {
    let block = card(ApprovalMode::Prompt, None).render_block();
    let labels: Vec<&str> = block.questions[0]
        .options
        .iter()
        .flatten()
        .map(|option| option.label.as_str())
        .collect();
    assert_eq!(labels, ["Allow", "Deny"]);
}

#[test]
fn elicitation_params_carry_codex_approval_meta() {
    let arguments = json!({"order": "A-17", "amount": 12.5, "notify": true});
    assert_eq!(
        card(ApprovalMode::Auto, Some(&arguments)).elicitation_params(),
        json!({
            "mode": "form",
            "message": "Allow the shop MCP server to run tool \"refund\"?",
            "requestedSchema": {"type": "object", "properties": {}},
            "_meta": {
                "codex_approval_kind": "mcp_tool_call",
                "persist": ["session", "always"],
                "tool_name": "refund",
                "tool_title": "Refund an order",
                "tool_description": "Refunds an order in full.",
                "tool_params": {"order": "A-17", "amount": 12.5, "notify": true},
                "tool_params_display": [
                    {"name": "amount", "value": 12.5, "display_name": "amount"},
                    {"name": "notify", "value": true, "display_name": "notify"},
                    {"name": "order", "value": "A-17", "display_name": "order"}
                ]
            }
        })
    );
    // Under prompt nothing can be remembered, so `persist` is absent; no arguments is `{}`.
    let params = card(ApprovalMode::Prompt, None).elicitation_params();
    assert_eq!(params["_meta"].get("persist"), None);
    assert_eq!(params["_meta"]["tool_params"], json!({}));
    assert_eq!(params["_meta"]["tool_params_display"], json!([]));
}

#[test]
fn card_rendering_follows_the_feature_flag() {
    assert_eq!(
        policy::card_rendering(&Config::embedded()),
        CardRendering::RequestUserInput
    );
    assert_eq!(
        policy::card_rendering(&load("[features]\ntool_call_mcp_elicitation = true\n")),
        CardRendering::McpElicitation
    );
}

// ---------------------------------------------------------------------------------------------
// Answers, both renderings, normalised per mode

/// (choice, cancelled) for compact tables.
type Outcome = (ApprovalChoice, bool);

fn outcome(answer: &ApprovalAnswer) -> Outcome {
    (answer.choice, answer.cancelled)
}

use ApprovalChoice::{Allow, AllowForSession, AlwaysAllow, Deny};

#[test]
fn render_answers_table() {
    // (labels, under auto, under prompt)
    let rows: &[(&[&str], Outcome, Outcome)] = &[
        (&["Allow"], (Allow, false), (Allow, false)),
        (
            &["Allow for this session"],
            (AllowForSession, false),
            (Allow, false),
        ),
        (&["Always allow"], (AlwaysAllow, false), (Allow, false)),
        (
            &["Allow and don't ask me again"],
            (AlwaysAllow, false),
            (Allow, false),
        ),
        (&["Deny"], (Deny, false), (Deny, false)),
        (&["__codex_mcp_decline__"], (Deny, false), (Deny, false)),
        (&["Cancel"], (Deny, true), (Deny, true)),
        (&[], (Deny, true), (Deny, true)),
        (&["Maybe"], (Deny, true), (Deny, true)),
        // The most cautious label wins.
        (&["Allow", "Deny"], (Deny, false), (Deny, false)),
    ];
    for (labels, auto, prompt) in rows {
        for (mode, expected) in [(ApprovalMode::Auto, auto), (ApprovalMode::Prompt, prompt)] {
            let card = card(mode, None);
            let answers = RenderAnswers::from_pairs([(card.id.clone(), labels.iter().copied())]);
            assert_eq!(
                outcome(&card.answer_from_render(&answers)),
                *expected,
                "{labels:?} under {mode}"
            );
        }
    }
    // An answer to another question does not count.
    let auto_card = card(ApprovalMode::Auto, None);
    let other = RenderAnswers::from_pairs([("something_else", ["Allow"])]);
    assert_eq!(outcome(&auto_card.answer_from_render(&other)), (Deny, true));
}

#[test]
fn elicitation_results_table() {
    let rows: &[(Value, Outcome, Outcome)] = &[
        (json!({"action": "accept"}), (Allow, false), (Allow, false)),
        (
            json!({"action": "accept", "content": {}, "_meta": null}),
            (Allow, false),
            (Allow, false),
        ),
        (
            json!({"action": "accept", "_meta": {"persist": "session"}}),
            (AllowForSession, false),
            (Allow, false),
        ),
        (
            json!({"action": "accept", "_meta": {"persist": "always"}}),
            (AlwaysAllow, false),
            (Allow, false),
        ),
        (
            json!({"action": "accept", "_meta": {"persist": "forever"}}),
            (Allow, false),
            (Allow, false),
        ),
        (
            json!({"action": "accept", "content": {"mcp_tool_call_approval_call_7": "Allow for this session"}}),
            (AllowForSession, false),
            (Allow, false),
        ),
        (
            json!({"action": "accept", "content": {"mcp_tool_call_approval_call_7": ["Deny"]}}),
            (Deny, false),
            (Deny, false),
        ),
        (
            json!({"action": "accept", "content": {"mcp_tool_call_approval_call_7": "Cancel"}}),
            (Allow, false),
            (Allow, false),
        ),
        (json!({"action": "decline"}), (Deny, false), (Deny, false)),
        (json!({"action": "cancel"}), (Deny, true), (Deny, true)),
        (json!({"action": "maybe"}), (Deny, true), (Deny, true)),
        (json!({}), (Deny, true), (Deny, true)),
        (json!("accept"), (Deny, true), (Deny, true)),
    ];
    for (result, auto, prompt) in rows {
        for (mode, expected) in [(ApprovalMode::Auto, auto), (ApprovalMode::Prompt, prompt)] {
            assert_eq!(
                outcome(&card(mode, None).answer_from_elicitation(result)),
                *expected,
                "{result} under {mode}"
            );
        }
    }
}

#[test]
fn normalisation_and_failure_messages() {
    for mode in [ApprovalMode::Prompt, ApprovalMode::Writes] {
        assert_eq!(policy::normalize_choice(mode, AllowForSession), Allow);
        assert_eq!(policy::normalize_choice(mode, AlwaysAllow), Allow);
        assert_eq!(policy::normalize_choice(mode, Deny), Deny);
    }
    assert_eq!(
        policy::normalize_choice(ApprovalMode::Auto, AlwaysAllow),
        AlwaysAllow
    );

    let prompt = card(ApprovalMode::Prompt, None);
    let answer = prompt.answer(AlwaysAllow);
    assert_eq!(
        answer.reason,
        "the person allowed this call of tool \"refund\" of server shop (\"Always allow\" counts as \"Allow\" under approval mode \"prompt\")"
    );
    assert!(answer.runs_tool() && !answer.writes_config());

    let auto = card(ApprovalMode::Auto, None);
    let always = auto.answer(AlwaysAllow);
    assert!(always.writes_config() && always.remembers_for_session());
    assert_eq!(
        always.reason,
        "the person always allowed tool \"refund\" of server shop; mcp_servers.shop.tools.refund.approval_mode = \"approve\" goes into the config"
    );

    // Text that did not come from a file has nowhere to remember an approval: no Always allow.
    let unsaved = Config::from_toml("[mcp_servers.shop]\ncommand = \"x\"\n", None).expect("loads");
    let approval = policy::tool_approval(&unsaved, "shop", "refund", None);
    assert_eq!(
        approval.need,
        ApprovalNeed::Card(RememberOffers {
            session: true,
            always: false
        })
    );
    let request = ApprovalRequest {
        call_id: "c",
        tool_title: None,
        tool_description: None,
        arguments: None,
    };
    let answer = approval.card(&request).expect("a card").answer(AlwaysAllow);
    assert!(answer.runs_tool() && !answer.writes_config());
    assert_eq!(
        answer.reason,
        "the person allowed this call of tool \"refund\" of server shop (\"Always allow\" counts as \"Allow\": this card does not offer it)"
    );

    let denied = auto.answer(Deny);
    assert_eq!(
        denied.failure_message(),
        Some("user rejected MCP tool call")
    );
    let cancelled = auto.cancel("the turn was stopped");
    assert_eq!(
        cancelled.failure_message(),
        Some("user cancelled MCP tool call")
    );
    assert_eq!(
        cancelled.reason,
        "approval of tool \"refund\" of server shop cancelled: the turn was stopped"
    );
    assert_eq!(always.failure_message(), None);
}

#[test]
fn choices_serialize_for_the_ui_api() {
    assert_eq!(
        serde_json::to_value([Allow, AllowForSession, AlwaysAllow, Deny]).expect("json"),
        json!(["allow", "allow_for_session", "always_allow", "deny"])
    );
}

#[test]
fn allow_for_session_skips_later_cards_under_auto_only() {
    let mut session = SessionApprovals::new();
    let config = load("[mcp_servers.shop]\ncommand = \"x\"\n");
    let first = policy::tool_approval(&config, "shop", "refund", None);
    let auto_card = card(ApprovalMode::Auto, None);
    session.record(&auto_card, &auto_card.answer(AllowForSession));
    let later = session.apply(policy::tool_approval(&config, "shop", "refund", None));
    assert!(matches!(first.need, ApprovalNeed::Card(_)));
    assert_eq!(later.need, ApprovalNeed::Run);
    assert_eq!(
        later.reason,
        "no approval needed: the person allowed tool \"refund\" of server shop for this session"
    );
    // Another tool still asks.
    assert!(matches!(
        session
            .apply(policy::tool_approval(&config, "shop", "other", None))
            .need,
        ApprovalNeed::Card(_)
    ));

    // Under prompt, a session answer is a plain Allow and is not remembered.
    let mut session = SessionApprovals::new();
    let prompt_config =
        load("[mcp_servers.shop]\ncommand = \"x\"\ndefault_tools_approval_mode = \"prompt\"\n");
    let prompt_card = card(ApprovalMode::Prompt, None);
    session.record(&prompt_card, &prompt_card.answer(AllowForSession));
    assert!(matches!(
        session
            .apply(policy::tool_approval(
                &prompt_config,
                "shop",
                "refund",
                None
            ))
            .need,
        ApprovalNeed::Card(_)
    ));
}
