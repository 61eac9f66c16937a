//! The Codex runtime against real Codex 0.171.0 (`codex app-server`, the native binary of the
//! pinned `@openai/codex`): a message is a Codex turn, Codex is the MCP client of the plugins
//! (the official TypeScript SDK's `tests/peers/ts_plugin.mjs`, the Python SDK's
//! `tests/peers/py_plugin.py`), and their forms come back to formwork as
//! `mcpServer/elicitation/request`, shown as the session's cards. The model is the one
//! hand-written fake, `tests/peers/sim_provider.py`, speaking the Responses stream.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::PathBuf;
use std::time::Duration;

use common::{Watch, accept, assistant_texts};
use formwork_host::config::Config;
use formwork_host::runtime::codex::CodexOptions;
use formwork_host::store::Store;
use formwork_host::{Command, Event, FormAction, FormAnswer, Host, HostOptions, Role};
use formwork_testkit::{SimProvider, peers_dir, repo_root};
use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};

/// The native binary of the pinned `@openai/codex` (its linux-x64 package).
fn codex_binary() -> PathBuf {
    let binary = peers_dir().join(
        "npm/node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex",
    );
    assert!(
        binary.is_file(),
        "Codex is not installed at {}",
        binary.display()
    );
    binary
}

/// One test's Codex: a model script, a config, a `CODEX_HOME`, a data directory.
struct Rig {
    sim: SimProvider,
    dir: tempfile::TempDir,
    config: String,
}

impl Rig {
    /// `servers` is TOML appended to the config (the plugins and their settings).
    fn new(script: Value, servers: &str) -> Rig {
        let dir = tempfile::tempdir().unwrap();
        let sim = SimProvider::start(&script);
        let config = format!(
            "model_provider = \"sim\"\nmodel = \"sim-model\"\n\n\
             [model_providers.sim]\nname = \"Sim\"\nbase_url = {:?}\nwire_api = \"responses\"\n\
             request_max_retries = 0\nstream_max_retries = 0\n\n\
             [mcp_servers.demo]\nenabled = false\n\n{servers}",
            sim.url
        );
        Rig { sim, dir, config }
    }

    fn home(&self) -> PathBuf {
        self.dir.path().join("codex-home")
    }

    /// The person's own `config.toml` in Codex's home, before formwork writes its keys in.
    fn persons_codex_config(&self, text: &str) {
        std::fs::create_dir_all(self.home()).unwrap();
        std::fs::write(self.home().join("config.toml"), text).unwrap();
    }

    fn options(&self) -> HostOptions {
        let config = self.config();
        HostOptions {
            model: config.model_choice(None, None).unwrap(),
            codex: Some(CodexOptions {
                command: codex_binary().display().to_string(),
                home: self.home(),
                cwd: self.dir.path().to_path_buf(),
                openai_form: false,
                log_filter: CodexOptions::DEFAULT_LOG_FILTER.to_owned(),
            }),
            ..HostOptions::default()
        }
    }

    fn config(&self) -> Config {
        Config::from_toml(&self.config, None).unwrap()
    }

    fn host(&self) -> Host {
        Host::new(self.config(), self.options())
    }

    async fn stored_host(&self) -> Host {
        let store = Store::open(Store::path_in(&self.dir.path().join("data"))).unwrap();
        Host::with_store(self.config(), self.options(), store)
            .await
            .unwrap()
    }
}

fn ts_server(approval: &str) -> String {
    let node = peers_dir().join("npm/node_modules/.bin/node");
    let plugin = peers_dir().join("npm/ts_plugin.mjs");
    format!(
        "[mcp_servers.ts]\ncommand = {:?}\nargs = [{:?}]\ndefault_tools_approval_mode = {approval:?}\n\
         enabled_tools = [\"ask_enum\", \"ask_boolean\", \"last_outcome\", \"ask_and_return\"]\n",
        node.display().to_string(),
        plugin.display().to_string()
    )
}

fn finished(events: &[Event]) -> Vec<(Option<Value>, Option<String>)> {
    events
        .iter()
        .filter_map(|event| match event {
            Event::ToolCallFinished { result, error, .. } => Some((result.clone(), error.clone())),
            _ => None,
        })
        .collect()
}

/// The outcome of the one call the events finished.
fn only_call(events: &[Event]) -> (Option<Value>, Option<String>) {
    let mut calls = finished(events);
    assert_eq!(calls.len(), 1, "{events:#?}");
    calls.remove(0)
}

/// The text a call result carries.
fn text_of(result: &Value) -> String {
    result["content"][0]["text"].as_str().unwrap().to_owned()
}

/// The tool's output as Codex handed it to the model: the last request's `function_call_output`.
fn tool_output(sim: &SimProvider) -> String {
    let requests = sim.requests();
    let last = &requests.last().unwrap()["body"];
    let output = last["input"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|item| item["type"] == "function_call_output")
        .unwrap_or_else(|| panic!("no tool output in {last:#}"));
    // Codex sends the output as content items: its own "Wall time" line, then the tool's text.
    match &output["output"] {
        Value::String(text) => text.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|part| part["text"].as_str())
            .collect(),
        other => panic!("an output that is neither text nor parts: {other}"),
    }
}

/// The model calls Codex's own tool `tool` with `arguments`, then says what it got back.
fn codex_tool_script(tool: &str, arguments: Value) -> Value {
    json!({"rules": [{"match": ".", "steps": [
        {"calls": [{"name": tool, "arguments": arguments}]},
        {"echo": true}
    ]}]})
}

fn call_script(namespace: &str, tool: &str) -> Value {
    json!({"rules": [{"match": ".", "steps": [
        {"text": "Asking.", "calls": [{"name": tool, "namespace": namespace, "arguments": {}}]},
        {"echo": true}
    ]}]})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_is_a_codex_turn_and_its_form_a_card() {
    let rig = Rig::new(call_script("mcp__ts", "ask_enum"), &ts_server("approve"));
    let host = rig.host();
    let mut s = Watch::open(&host);
    s.say("pick a color");
    let (form, requested) = s.form_event().await;
    let Event::FormRequested {
        call_id: Some(call_id),
        plugin,
        waiting: false,
        body,
        ..
    } = &requested
    else {
        panic!("{requested:#?}");
    };
    assert_eq!(plugin, "ts");
    let body = serde_json::to_value(body).unwrap();
    assert_eq!(body["mode"], "form");
    assert_eq!(body["render"]["message"], "Please give color");
    assert_eq!(body["render"]["questions"][0]["id"], "color");
    s.answer(&form, accept(json!({"color": "red"})));
    let (events, reason) = s.turn().await;
    assert_eq!(reason, "completed", "{events:#?}");
    let picked = r#"result: {"action":"accept","content":{"color":"red"}}"#;
    let (Some(result), None) = only_call(&events) else {
        panic!("{events:#?}");
    };
    assert_eq!(text_of(&result), picked);
    assert!(
        events.iter().any(|event| matches!(event,
            Event::FormResolved { form_id, action: FormAction::Accept, content: Some(content), reason: None }
                if form_id == &form && content.get("color") == Some(&json!("red")))),
        "{events:#?}"
    );
    assert!(
        tool_output(&rig.sim).ends_with(picked),
        "{}",
        tool_output(&rig.sim)
    );
    let texts = assistant_texts(&events);
    assert_eq!(texts.len(), 1, "{events:#?}");
    assert!(
        texts[0].starts_with("seen: ") && texts[0].ends_with(picked),
        "{texts:?}"
    );
    // The whole transcript, in order: the call started before its card.
    let all = host.events(&s.session).unwrap();
    let kinds: Vec<&str> = all
        .iter()
        .filter_map(|event| match event.as_ref() {
            Event::MessageAdded {
                role: Role::User, ..
            } => Some("user"),
            Event::TurnStarted { .. } => Some("turn"),
            Event::ToolCallStarted {
                call_id: id,
                server,
                tool,
                ..
            } => {
                assert_eq!(
                    (id, server.as_str(), tool.as_str()),
                    (call_id, "ts", "ask_enum")
                );
                Some("call")
            }
            Event::FormRequested { .. } => Some("form"),
            Event::FormResolved { .. } => Some("resolved"),
            Event::ToolCallFinished { .. } => Some("finished"),
            Event::MessageAdded {
                role: Role::Assistant,
                ..
            } => Some("assistant"),
            Event::TurnEnded { .. } => Some("ended"),
            _ => None,
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "user",
            "turn",
            "assistant",
            "call",
            "form",
            "resolved",
            "finished",
            "assistant",
            "ended"
        ]
    );
    // The model's first request offered the plugin's tools as Codex offers them.
    let first = &rig.sim.requests()[0]["body"];
    let namespace = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|tool| tool["name"] == "mcp__ts")
        .unwrap_or_else(|| panic!("no mcp__ts namespace in {:#}", first["tools"]));
    assert_eq!(namespace["type"], "namespace");
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn decline_and_cancel_reach_the_plugin_through_codex() {
    let rig = Rig::new(call_script("mcp__ts", "ask_enum"), &ts_server("approve"));
    let host = rig.host();
    let mut s = Watch::open(&host);
    for (answer, action) in [
        (FormAnswer::Decline, "decline"),
        (FormAnswer::Cancel, "cancel"),
    ] {
        s.say("pick a color");
        let form = s.form().await;
        s.answer(&form, answer);
        let (events, reason) = s.turn().await;
        assert_eq!(reason, "completed");
        let (Some(result), None) = only_call(&events) else {
            panic!("{events:#?}");
        };
        assert_eq!(
            text_of(&result),
            format!(r#"result: {{"action":"{action}"}}"#)
        );
    }
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_cancels_the_card_and_interrupts_the_turn_and_a_new_message_cancels_it_too() {
    let rig = Rig::new(call_script("mcp__ts", "ask_enum"), &ts_server("approve"));
    let host = rig.host();
    let mut s = Watch::open(&host);
    s.say("pick a color");
    let form = s.form().await;
    s.send(Command::StopTurn);
    let (events, reason) = s.turn().await;
    assert_eq!(reason, "stopped", "{events:#?}");
    assert!(
        events.iter().any(|event| matches!(event,
            Event::FormResolved { form_id, action: FormAction::Cancel, reason: Some(reason), .. }
                if form_id == &form && reason == "stopped")),
        "{events:#?}"
    );
    assert_eq!(
        finished(&events).len(),
        1,
        "the call ends with its turn: {events:#?}"
    );

    s.say("pick a color");
    let form = s.form().await;
    s.say("never mind");
    let (events, _) = s.turn().await;
    assert!(
        events.iter().any(|event| matches!(event,
            Event::FormResolved { form_id, action: FormAction::Cancel, reason: Some(reason), .. }
                if form_id == &form && reason == "new-message")),
        "{events:#?}"
    );
    // The new message runs a turn of its own, which asks again.
    let form = s.form().await;
    s.answer(&form, accept(json!({"color": "blue"})));
    let (events, reason) = s.turn().await;
    assert_eq!(reason, "completed", "{events:#?}");
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_palette_call_goes_through_codex_and_its_form_is_a_card() {
    let rig = Rig::new(json!({"rules": []}), &ts_server("approve"));
    let host = rig.host();
    let mut s = Watch::open(&host);
    s.send(Command::CallTool {
        server: "ts".to_owned(),
        tool: "ask_boolean".to_owned(),
        arguments: None,
    });
    let (form, requested) = s.form_event().await;
    let Event::FormRequested {
        call_id: Some(_), ..
    } = requested
    else {
        panic!("{requested:#?}");
    };
    s.answer(&form, accept(json!({"agree": true})));
    let (events, reason) = s.turn().await;
    assert_eq!(reason, "completed");
    let (Some(result), None) = only_call(&events) else {
        panic!("{events:#?}");
    };
    assert_eq!(
        text_of(&result),
        r#"result: {"action":"accept","content":{"agree":true}}"#
    );
    // No model was asked: the palette called the tool itself.
    assert!(rig.sim.requests().is_empty());
    host.shutdown().await;
}

/// Codex asks for the tool approval in both its renderings (a `request_user_input` question, the
/// default; an elicitation form with `features.tool_call_mcp_elicitation`): each is an approval
/// card. The question has no refusal of its own, so a Deny there is Codex's Cancel.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_asks_for_a_tool_approval_with_an_approval_card() {
    for (feature, denied) in [
        (false, "user cancelled MCP tool call"),
        (true, "user rejected MCP tool call"),
    ] {
        let servers = format!(
            "[features]\ntool_call_mcp_elicitation = {feature}\n\n{}",
            ts_server("prompt")
        );
        let rig = Rig::new(call_script("mcp__ts", "ask_enum"), &servers);
        let host = rig.host();
        let mut s = Watch::open(&host);
        for (choice, allowed) in [
            (formwork_host::policy::ApprovalChoice::Deny, false),
            (formwork_host::policy::ApprovalChoice::Allow, true),
        ] {
            s.say("pick a color");
            let (approval, server, tool, _) = s.approval().await;
            assert_eq!((server.as_str(), tool.as_str()), ("ts", "ask_enum"));
            s.send(Command::AnswerApproval {
                approval_id: approval,
                choice,
            });
            if allowed {
                let form = s.form().await;
                s.answer(&form, accept(json!({"color": "green"})));
            }
            let (events, reason) = s.turn().await;
            assert_eq!(reason, "completed", "{events:#?}");
            let (result, error) = only_call(&events);
            if allowed {
                assert_eq!(
                    text_of(result.as_ref().unwrap()),
                    r#"result: {"action":"accept","content":{"color":"green"}}"#
                );
            } else {
                assert_eq!(error.as_deref(), Some(denied), "{events:#?}");
            }
        }
        // The config formwork wrote for Codex keeps the server's explicit prompt.
        let written = std::fs::read_to_string(rig.home().join("config.toml")).unwrap();
        assert!(
            written.contains("[mcp_servers.ts]\n")
                && written.contains("default_tools_approval_mode = \"prompt\"\n")
                && written.contains(&format!("tool_call_mcp_elicitation = {feature}\n")),
            "{written}"
        );
        host.shutdown().await;
    }
}

/// A second app-server client joins formwork's thread on Codex's socket and answers the form
/// first; formwork's card closes, and formwork sends nothing for it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_card_another_client_answered_closes() {
    let rig = Rig::new(call_script("mcp__ts", "ask_enum"), &ts_server("approve"));
    let host = rig.host();
    let mut s = Watch::open(&host);
    s.say("pick a color");
    let form = s.form().await;
    let socket = rig.home().join(formwork_host::runtime::codex::SOCKET_FILE);
    let stream = tokio::net::UnixStream::connect(&socket).await.unwrap();
    let (mut other, _) = tokio_tungstenite::client_async("ws://localhost/", stream)
        .await
        .unwrap();
    let send = |message: Value| tokio_tungstenite::tungstenite::Message::text(message.to_string());
    other
        .send(send(json!({"id": 1, "method": "initialize", "params": {
            "clientInfo": {"name": "other", "version": "1"}, "capabilities": {"experimentalApi": true}}})))
        .await
        .unwrap();
    other
        .send(send(json!({"method": "initialized"})))
        .await
        .unwrap();
    let thread = host.codex_thread(&s.session).unwrap().unwrap();
    other
        .send(send(json!({"id": 2, "method": "thread/resume",
            "params": {"threadId": thread, "excludeTurns": true}})))
        .await
        .unwrap();
    let request = loop {
        let message = tokio::time::timeout(Duration::from_secs(30), other.next())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        let message: Value = serde_json::from_str(message.to_text().unwrap()).unwrap();
        if message["method"] == "mcpServer/elicitation/request" {
            break message;
        }
    };
    other
        .send(send(json!({"id": request["id"], "result": {
            "action": "accept", "content": {"color": "blue"}, "_meta": null}})))
        .await
        .unwrap();
    let (events, reason) = s.turn().await;
    assert_eq!(reason, "completed", "{events:#?}");
    assert!(
        events.iter().any(|event| matches!(event,
            Event::FormResolved { form_id, action: FormAction::Cancel, reason: Some(reason), .. }
                if form_id == &form && reason == "answered-elsewhere")),
        "{events:#?}"
    );
    let (Some(result), None) = only_call(&events) else {
        panic!("{events:#?}");
    };
    assert_eq!(
        text_of(&result),
        r#"result: {"action":"accept","content":{"color":"blue"}}"#
    );
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_host_resumes_the_sessions_thread() {
    let script = json!({"rules": [{"match": ".", "steps": [{"recall": true}]}]});
    let rig = Rig::new(script, "");
    let host = rig.stored_host().await;
    let mut s = Watch::open(&host);
    let session = s.session.clone();
    s.say("first words");
    let (events, reason) = s.turn().await;
    assert_eq!(reason, "completed");
    assert_eq!(assistant_texts(&events), ["you said: first words"]);
    host.shutdown().await;

    let host = rig.stored_host().await;
    let mut s = Watch::on(&host, session);
    s.say("second words");
    let (events, reason) = s.turn().await;
    assert_eq!(reason, "completed", "{events:#?}");
    // The model sees the earlier turn: the thread went on, not a new one.
    assert_eq!(
        assistant_texts(&events),
        ["you said: first words / second words"]
    );
    host.shutdown().await;
}

/// The Python SDK's `ctx.elicit` writes a top-level `title`, which Codex refuses before any
/// client sees the form: the plugin gets `cancel`, and formwork, reading Codex's log, says why in
/// the transcript. The same plugin's plain schema comes through as a card.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_python_sdk_plugins_forms_through_codex() {
    let python = peers_dir().join("venv/bin/python");
    let servers = format!(
        "[mcp_servers.py]\ncommand = {:?}\nargs = [{:?}]\n",
        python.display().to_string(),
        repo_root()
            .join("tests/peers/py_plugin.py")
            .display()
            .to_string(),
    );
    let script = json!({"rules": [
        {"match": "plain", "steps": [
            {"calls": [{"name": "ask_plain", "namespace": "mcp__py", "arguments": {}}]}, {"echo": true}]},
        {"match": "typed", "steps": [
            {"calls": [{"name": "ask", "namespace": "mcp__py", "arguments": {}}]}, {"echo": true}]}
    ]});
    let rig = Rig::new(script, &servers);
    let host = rig.host();
    let mut s = Watch::open(&host);
    s.say("plain form");
    let form = s.form().await;
    s.answer(&form, accept(json!({"name": "Grace", "color": "blue"})));
    let (events, reason) = s.turn().await;
    assert_eq!(reason, "completed", "{events:#?}");
    let (Some(result), None) = only_call(&events) else {
        panic!("{events:#?}");
    };
    assert_eq!(
        text_of(&result),
        r#"action=accept content={"color":"blue","name":"Grace"}"#
    );

    s.say("typed form");
    let (events, reason) = s.turn().await;
    assert_eq!(reason, "completed", "{events:#?}");
    assert!(
        !events
            .iter()
            .any(|event| matches!(event, Event::FormRequested { .. })),
        "{events:#?}"
    );
    let (Some(result), None) = only_call(&events) else {
        panic!("{events:#?}");
    };
    assert_eq!(text_of(&result), "action=cancel");
    let said = events.iter().find_map(|event| match event {
        Event::Diagnostic { code, message } if code == "form-declined" => Some(message.clone()),
        _ => None,
    });
    assert_eq!(
        said.as_deref(),
        Some(
            "py: Codex could not read the form's requestedSchema (unknown field `title`, expected one of `$schema`, `type`, `properties`, `required`) and answered cancel without showing it; Codex takes only `$schema`, `type`, `properties` and `required` at the schema's top level"
        ),
        "{events:#?}"
    );
    host.shutdown().await;
}

/// URL mode through Codex: the card is the URL request, and `accept_url` reaches the plugin as
/// `accept`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_url_form_comes_through_codex() {
    let servers =
        ts_server("approve").replace("\"ask_and_return\"]", "\"ask_and_return\", \"ask_url\"]");
    let rig = Rig::new(call_script("mcp__ts", "ask_url"), &servers);
    let host = rig.host();
    let mut s = Watch::open(&host);
    s.say("log in");
    let (form, requested) = s.form_event().await;
    let Event::FormRequested { body, .. } = &requested else {
        panic!("{requested:#?}");
    };
    let body = serde_json::to_value(body).unwrap();
    assert_eq!(
        (
            body["mode"].as_str(),
            body["url"].as_str(),
            body["message"].as_str()
        ),
        (
            Some("url"),
            Some("https://example.com/login"),
            Some("Log in please")
        )
    );
    assert_eq!(body["elicitation_id"], "e-42");
    s.answer(&form, FormAnswer::AcceptUrl);
    let (events, reason) = s.turn().await;
    assert_eq!(reason, "completed", "{events:#?}");
    let (Some(result), None) = only_call(&events) else {
        panic!("{events:#?}");
    };
    // formwork answered `{"action": "accept", "content": null, "_meta": null}`; Codex hands the
    // plugin an empty content object of its own.
    assert_eq!(
        text_of(&result),
        r#"result: {"action":"accept","content":{}}"#
    );
    host.shutdown().await;
}

/// With `features.openai_elicitation`, formwork declares `openai/form` to Codex, which offers it to
/// the plugin and forwards its `openai/form` request; it is a card like any form.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_openai_form_comes_through_codex_once_declared() {
    let node = peers_dir().join("npm/node_modules/.bin/node");
    let servers = format!(
        "[features]\nopenai_elicitation = true\n\n[mcp_servers.doc]\ncommand = {:?}\nargs = [{:?}]\n",
        node.display().to_string(),
        peers_dir()
            .join("npm/doctor_plugin.mjs")
            .display()
            .to_string()
    );
    let rig = Rig::new(call_script("mcp__doc", "ask_openai_form"), &servers);
    let mut options = rig.options();
    if let Some(codex) = options.codex.as_mut() {
        codex.openai_form = true;
    }
    let host = Host::new(rig.config(), options);
    let mut s = Watch::open(&host);
    s.say("choose");
    let form = s.form().await;
    s.answer(&form, accept(json!({"strategy": "safe"})));
    let (events, reason) = s.turn().await;
    assert_eq!(reason, "completed", "{events:#?}");
    let (Some(result), None) = only_call(&events) else {
        panic!("{events:#?}");
    };
    assert_eq!(
        text_of(&result),
        r#"result: {"action":"accept","content":{"strategy":"safe"}}"#
    );
    host.shutdown().await;
}

/// The model's own `request_user_input` questions (a Codex feature the person turns on in Codex's
/// config, which formwork keeps) are a form card; the model reads the labels chosen.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_models_own_questions_are_a_card() {
    let questions = json!({"questions": [{"id": "color", "header": "Color", "question": "Which color?",
        "options": [{"label": "Red (Recommended)", "description": "warm"}, {"label": "Blue", "description": "cool"}]}]});
    let script = codex_tool_script("request_user_input", questions);
    let mut rig = Rig::new(script, "");
    // Declining plugins' forms does not decline the model's own questions.
    rig.config = format!("elicitations_auto_deny = true\n{}", rig.config);
    rig.persons_codex_config("[features]\ndefault_mode_request_user_input = true\n");
    let host = rig.host();
    let mut s = Watch::open(&host);
    s.say("ask me");
    let (form, requested) = s.form_event().await;
    let Event::FormRequested { plugin, body, .. } = &requested else {
        panic!("{requested:#?}");
    };
    assert_eq!(plugin, "codex");
    let body = serde_json::to_value(body).unwrap();
    assert_eq!(body["render"]["questions"][0]["question"], "Which color?");
    s.answer(&form, accept(json!({"color": "Blue"})));
    let (events, reason) = s.turn().await;
    assert_eq!(reason, "completed", "{events:#?}");
    assert_eq!(
        assistant_texts(&events),
        [r#"seen: {"answers":{"color":{"answers":["Blue"]}}}"#]
    );
    // The person's own key stayed in Codex's config beside formwork's.
    let written = std::fs::read_to_string(rig.home().join("config.toml")).unwrap();
    assert!(
        written.contains(
            "[features]\ndefault_mode_request_user_input = true\ntool_call_mcp_elicitation = false\n"
        ),
        "{written}"
    );
    host.shutdown().await;
}

/// Under `auto`, Codex offers "for this session" on the approval of a tool without annotations;
/// the person's Allow for this session is passed on (`persist`), and the next call runs without a
/// card.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allow_for_this_session_is_passed_on_to_codex() {
    let servers = format!(
        "[features]\ntool_call_mcp_elicitation = true\n\n{}",
        ts_server("auto")
    );
    let rig = Rig::new(call_script("mcp__ts", "ask_boolean"), &servers);
    let host = rig.host();
    let mut s = Watch::open(&host);
    s.say("agree?");
    let (approval, _, _, body) = s.approval().await;
    assert_eq!(
        body["meta"]["codex_approval_kind"], "mcp_tool_call",
        "{body:#}"
    );
    s.send(Command::AnswerApproval {
        approval_id: approval,
        choice: formwork_host::policy::ApprovalChoice::AllowForSession,
    });
    let form = s.form().await;
    s.answer(&form, accept(json!({"agree": true})));
    let (events, reason) = s.turn().await;
    assert_eq!(reason, "completed", "{events:#?}");
    // The second call of the tool in this session asks no approval.
    s.say("agree again?");
    let form = s.form().await;
    s.answer(&form, accept(json!({"agree": false})));
    let (events, _) = s.turn().await;
    assert!(
        !events
            .iter()
            .any(|event| matches!(event, Event::ApprovalRequested { .. })),
        "{events:#?}"
    );
    host.shutdown().await;
}

/// Codex asks before it runs a command outside its sandbox: an approval card of the server
/// `codex`; the person's Deny is Codex's `decline`, so the command never runs, and the model hears
/// so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codexs_own_command_approvals_are_cards() {
    let marker = "formwork-codex-approval-test";
    let command = json!({"cmd": format!("touch {marker}"), "sandbox_permissions": "require_escalated",
        "justification": "make a file"});
    let script = codex_tool_script("exec_command", command);
    let rig = Rig::new(script, "");
    let host = rig.host();
    let mut s = Watch::open(&host);
    s.say("make the file");
    let (approval, server, tool, body) = s.approval().await;
    assert_eq!((server.as_str(), tool.as_str()), ("codex", "command"));
    let question = body["render"]["message"].as_str().unwrap_or_default();
    assert!(question.contains(&format!("touch {marker}")), "{body:#}");
    s.send(Command::AnswerApproval {
        approval_id: approval,
        choice: formwork_host::policy::ApprovalChoice::Deny,
    });
    let (events, reason) = s.turn().await;
    assert_eq!(reason, "completed", "{events:#?}");
    assert!(!rig.dir.path().join(marker).exists());
    assert_eq!(
        only_call(&events),
        (None, Some("declined: it did not run".to_owned()))
    );
    let texts = assistant_texts(&events);
    // Codex tells the model the person refused.
    assert_eq!(texts.len(), 1, "{events:#?}");
    assert!(texts[0].contains("rejected by user"), "{texts:?}");
    host.shutdown().await;
}

/// The model asks for more permissions (`request_permissions`): an approval card of the server
/// `codex`; Allow grants what was asked for this turn, and the model hears what was granted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codexs_permission_requests_are_cards() {
    let asked = json!({"reason": "fetch the page", "permissions": {"network": {"enabled": true}}});
    let script = codex_tool_script("request_permissions", asked);
    let rig = Rig::new(script, "");
    rig.persons_codex_config("[features]\nrequest_permissions_tool = true\n");
    let host = rig.host();
    let mut s = Watch::open(&host);
    s.say("fetch it");
    let (approval, server, tool, body) = s.approval().await;
    assert_eq!((server.as_str(), tool.as_str()), ("codex", "permissions"));
    assert_eq!(
        body["render"]["message"], "Allow Codex network access? (fetch the page)",
        "{body:#}"
    );
    s.send(Command::AnswerApproval {
        approval_id: approval,
        choice: formwork_host::policy::ApprovalChoice::Allow,
    });
    let (events, reason) = s.turn().await;
    assert_eq!(reason, "completed", "{events:#?}");
    assert_eq!(
        tool_output(&rig.sim),
        r#"{"permissions":{"network":{"enabled":true},"file_system":null},"scope":"turn"}"#
    );
    host.shutdown().await;
}

/// A question asking for a secret never becomes a card: Codex gets no answer to it, and the
/// transcript says why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_models_secret_question_is_not_a_card() {
    let questions = json!({"questions": [{"id": "token", "header": "Token", "question": "Your API token?",
        "isSecret": true, "options": [{"label": "abc", "description": "a"}, {"label": "def", "description": "b"}]}]});
    let script = codex_tool_script("request_user_input", questions);
    let rig = Rig::new(script, "");
    rig.persons_codex_config("[features]\ndefault_mode_request_user_input = true\n");
    let host = rig.host();
    let mut s = Watch::open(&host);
    s.say("ask me");
    let (events, reason) = s.turn().await;
    assert_eq!(reason, "completed", "{events:#?}");
    assert!(
        !events
            .iter()
            .any(|event| matches!(event, Event::FormRequested { .. })),
        "{events:#?}"
    );
    assert!(events.iter().any(|event| matches!(event,
        Event::Diagnostic { code, message } if code == "form-declined"
            && message == "Codex asked for a secret (token); secrets are never asked in a card, so nothing was answered")),
        "{events:#?}");
    assert_eq!(assistant_texts(&events), [r#"seen: {"answers":{}}"#]);
    host.shutdown().await;
}

/// Stop while Codex still starts the session's thread (its plugin is slow to start): the turn
/// ends at once, the thread's start goes on and is kept, and the next message runs on that
/// thread.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_while_the_thread_starts_keeps_the_thread() {
    let node = peers_dir().join("npm/node_modules/.bin/node");
    let plugin = peers_dir().join("npm/ts_plugin.mjs");
    let slow = format!(
        "[mcp_servers.ts]\ncommand = \"sh\"\nargs = [\"-c\", {:?}]\ndefault_tools_approval_mode = \"approve\"\n\
         enabled_tools = [\"ask_enum\"]\n",
        format!("sleep 2; exec '{}' '{}'", node.display(), plugin.display())
    );
    let rig = Rig::new(call_script("mcp__ts", "ask_enum"), &slow);
    let host = rig.host();
    // Another session's turn first, so that Codex itself is up when this one's thread starts.
    let mut warm = Watch::open(&host);
    warm.say("pick a color");
    let form = warm.form().await;
    warm.answer(&form, accept(json!({"color": "red"})));
    warm.turn().await;
    let mut s = Watch::open(&host);
    s.say("pick a color");
    s.next(|event| matches!(event, Event::TurnStarted { .. }).then_some(()))
        .await;
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    s.send(Command::StopTurn);
    let (events, reason) = s.turn().await;
    assert_eq!(reason, "stopped", "{events:#?}");
    // The thread's start goes on after the Stop, and the thread is kept.
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(30);
    let started = loop {
        if let Some(thread) = host.codex_thread(&s.session).unwrap() {
            break thread;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no thread 30 s after the Stop"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    };
    // The next message waits for that thread's servers, and runs on it.
    s.say("pick a color");
    let form = s.form().await;
    s.answer(&form, accept(json!({"color": "blue"})));
    let (events, reason) = s.turn().await;
    assert_eq!(reason, "completed", "{events:#?}");
    assert_eq!(host.codex_thread(&s.session).unwrap(), Some(started));
    host.shutdown().await;
}

/// A second host on the same Codex home does not take the first one's socket: its turn fails
/// and says why, and the first host's Codex goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_host_cannot_share_the_codex_home() {
    let rig = Rig::new(call_script("mcp__ts", "ask_enum"), &ts_server("approve"));
    let first = rig.host();
    let mut s = Watch::open(&first);
    s.say("pick a color");
    let form = s.form().await;
    let second = rig.host();
    let mut other = Watch::open(&second);
    other.say("pick a color");
    let (events, reason) = other.turn().await;
    assert_eq!(reason, "failed", "{events:#?}");
    let expected = format!(
        "Codex could not start the turn: another formwork process runs Codex in {} (its lock {} is held): give this one a `[codex] home` of its own",
        rig.home().display(),
        rig.home().join("formwork.lock").display()
    );
    assert!(
        events.iter().any(|event| matches!(event,
            Event::Diagnostic { code, message } if code == "model-error" && *message == expected)),
        "{events:#?}"
    );
    s.answer(&form, accept(json!({"color": "blue"})));
    let (events, reason) = s.turn().await;
    assert_eq!(reason, "completed", "{events:#?}");
    second.shutdown().await;
    first.shutdown().await;
}
