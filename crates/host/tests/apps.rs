//! MCP Apps through the host's API, against real plugins: the published system-monitor app
//! server (`@modelcontextprotocol/server-system-monitor`) and a probe plugin on the official TS
//! SDK (tests/peers/app_probe_plugin.mjs), with a bystander plugin that must never be reached.
//! What the app may do is decided here, in `Host::app_request`; the page only relays.
#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use formwork_host::config::{ApprovalMode, Config, ToolConfig};
use formwork_host::policy::ApprovalChoice;
use formwork_host::{AppError, Command, Event, FormAnswer, Host, HostOptions};
use formwork_testkit::peers_dir;
use serde_json::{Value, json};
use tokio::sync::broadcast;

fn node() -> String {
    let node = peers_dir().join("npm/node_modules/.bin/node");
    if node.exists() {
        node.display().to_string()
    } else {
        "node".to_owned()
    }
}

/// The probe plugin as `probe` (logging what reaches it to `log`), the bystander as
/// `bystander`, system-monitor as `monitor`; every tool approved.
fn config(log: &Path, with_probe: bool) -> Config {
    let npm = peers_dir().join("npm");
    let mut text = String::new();
    if with_probe {
        text.push_str(&format!(
            "[mcp_servers.probe]\ncommand = {:?}\nargs = [{:?}]\ndefault_tools_approval_mode = \"approve\"\n[mcp_servers.probe.env]\nPROBE_LOG = {:?}\n",
            node(),
            npm.join("app_probe_plugin.mjs").display().to_string(),
            log.join("probe.log").display().to_string(),
        ));
    }
    text.push_str(&format!(
        "[mcp_servers.bystander]\ncommand = {:?}\nargs = [{:?}]\ndefault_tools_approval_mode = \"approve\"\n[mcp_servers.bystander.env]\nBYSTANDER_LOG = {:?}\n",
        node(),
        npm.join("bystander_plugin.mjs").display().to_string(),
        log.join("bystander.log").display().to_string(),
    ));
    text.push_str(&format!(
        "[mcp_servers.monitor]\ncommand = {:?}\nargs = [{:?}, \"--stdio\"]\ndefault_tools_approval_mode = \"approve\"\n",
        node(),
        npm.join("node_modules/@modelcontextprotocol/server-system-monitor/dist/index.js")
            .display()
            .to_string(),
    ));
    Config::from_toml(&text, None).unwrap()
}

/// A `ToolCallStarted`'s call id, server, tool, arguments and `asked_by`.
type StartedCall = (String, String, String, Value, Option<String>);

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

    fn call(&self, server: &str, tool: &str) {
        self.host
            .command(
                &self.session,
                Command::CallTool {
                    server: server.to_owned(),
                    tool: tool.to_owned(),
                    arguments: None,
                },
            )
            .unwrap();
    }

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

    /// Calls `tool` and returns the call's id and the events from its start to its end.
    async fn called(&mut self, server: &str, tool: &str) -> (String, Vec<Event>) {
        self.call(server, tool);
        let mut seen = Vec::new();
        let mut call_id = None;
        // Calls an app made earlier may end meanwhile: this call is the one nobody's app asked for.
        self.next(|event| {
            if let Event::ToolCallStarted {
                call_id: id,
                asked_by: None,
                ..
            } = event
                && call_id.is_none()
            {
                call_id = Some(id.clone());
            }
            seen.push(event.clone());
            matches!(event, Event::ToolCallFinished { call_id: id, .. } if Some(id) == call_id.as_ref())
                .then_some(())
        })
        .await;
        (call_id.unwrap(), seen)
    }

    async fn app(&self, call_id: &str, message: Value) -> Value {
        let reply = self
            .host
            .app_request(&self.session, call_id, message, json!({"theme": "dark"}))
            .await
            .unwrap();
        reply.response.unwrap_or(Value::Null)
    }

    async fn tool_from_app(&self, call_id: &str, name: &str, arguments: Value) -> Value {
        self.app(
            call_id,
            json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                   "params": {"name": name, "arguments": arguments}}),
        )
        .await
    }

    /// The next card: its id and its message.
    async fn card(&mut self) -> (String, Option<String>, String) {
        self.next(|event| match event {
            Event::FormRequested {
                form_id,
                call_id,
                body,
                ..
            } => {
                let body = serde_json::to_value(body).unwrap();
                Some((
                    form_id.clone(),
                    call_id.clone(),
                    body["render"]["message"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned(),
                ))
            }
            _ => None,
        })
        .await
    }

    /// The next approval card and the call that started before it (as its `ToolCallStarted`
    /// fields): the card's id, the call it gates, its message.
    async fn approval(&mut self) -> (Option<StartedCall>, String, String, String) {
        let mut started = None;
        self.next(move |event| match event {
            Event::ToolCallStarted {
                call_id,
                server,
                tool,
                arguments,
                asked_by,
            } => {
                started = Some((
                    call_id.clone(),
                    server.clone(),
                    tool.clone(),
                    arguments.clone(),
                    asked_by.clone(),
                ));
                None
            }
            Event::ApprovalRequested {
                approval_id,
                call_id,
                body,
                ..
            } => {
                let body = serde_json::to_value(body).unwrap();
                Some((
                    started.clone(),
                    approval_id.clone(),
                    call_id.clone(),
                    body["render"]["message"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned(),
                ))
            }
            _ => None,
        })
        .await
    }

    fn choose(&self, form_id: &str, choice: &str) {
        self.host
            .command(
                &self.session,
                Command::AnswerForm {
                    form_id: form_id.to_owned(),
                    answer: FormAnswer::Accept {
                        content: json!({"choice": choice}).as_object().unwrap().clone(),
                    },
                },
            )
            .unwrap();
    }
}

/// Sends `message` as the app of `call_id` in the background (its answer may wait for the
/// person).
fn spawn_app(
    host: &Host,
    session: &str,
    call_id: &str,
    message: Value,
) -> tokio::task::JoinHandle<formwork_host::AppReply> {
    let host = host.clone();
    let (session, call_id) = (session.to_owned(), call_id.to_owned());
    tokio::spawn(async move {
        host.app_request(&session, &call_id, message, Value::Null)
            .await
            .unwrap()
    })
}

fn app_of(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .filter_map(|event| match event {
            Event::ToolCallApp { resource_uri, .. } => Some(resource_uri.clone()),
            _ => None,
        })
        .collect()
}

fn refused(reply: &Value) -> String {
    assert_eq!(reply["error"]["code"], -32000, "{reply}");
    reply["error"]["message"].as_str().unwrap().to_owned()
}

fn logged(dir: &Path, name: &str) -> String {
    std::fs::read_to_string(dir.join(name)).unwrap_or_default()
}

/// Only a call whose tool, or else result, declares a UI gets an app: by the nested key, the flat
/// key, or the result's `_meta`; an ordinary tool never does.
#[tokio::test]
async fn only_calls_that_declare_a_ui_get_an_app() {
    let dir = tempfile::tempdir().unwrap();
    let host = Host::new(config(dir.path(), true), HostOptions::default());
    let mut s = Watch::open(&host);
    for (tool, uri) in [
        ("open-probe", Some("ui://probe/app.html")),
        ("open-probe-flat", Some("ui://probe/app.html")),
        ("open-probe-late", Some("ui://probe/app.html")),
        ("model-only", None),
    ] {
        let (call_id, events) = s.called("probe", tool).await;
        assert_eq!(
            app_of(&events),
            uri.map(str::to_owned).into_iter().collect::<Vec<_>>(),
            "{tool}"
        );
        let opened = host.open_app(&s.session, &call_id).await;
        match uri {
            Some(_) => assert!(opened.is_ok(), "{tool}: {opened:?}"),
            None => assert_eq!(opened.unwrap_err(), AppError::NoApp(call_id.clone())),
        }
    }
    // A UI named by the tool is announced before the call's result; one named by the result
    // just before its end.
    let (_, events) = s.called("probe", "open-probe").await;
    let started = events
        .iter()
        .position(|event| matches!(event, Event::ToolCallStarted { .. }))
        .unwrap();
    assert!(
        matches!(events[started + 1], Event::ToolCallApp { .. }),
        "{events:?}"
    );
    let (_, events) = s.called("probe", "open-probe-late").await;
    assert!(
        matches!(events[events.len() - 2], Event::ToolCallApp { .. }),
        "{events:?}"
    );
    host.shutdown().await;
}

/// The document comes with its policy: the declared origin kept, the injecting entry dropped.
/// A declared UI that the server does not have is an error, not an ordinary call.
#[tokio::test]
async fn the_document_carries_its_policy_and_a_missing_one_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let host = Host::new(config(dir.path(), true), HostOptions::default());
    let mut s = Watch::open(&host);
    let (call_id, _) = s.called("probe", "open-probe").await;
    let app = host.open_app(&s.session, &call_id).await.unwrap();
    assert_eq!(app.server, "probe");
    assert_eq!(app.tool["name"], "open-probe");
    assert_eq!(app.document.mime_type, "text/html;profile=mcp-app");
    assert_eq!(
        app.document.policy.csp,
        "default-src 'none'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; \
         img-src 'self' data: blob:; media-src 'self' data: blob:; font-src 'self'; \
         connect-src 'self' https://declared.example; frame-src 'none'; object-src 'none'; \
         base-uri 'self'; form-action 'none'"
    );
    // The probe is local (stdio): a loopback entry would need one explicit port.
    assert_eq!(
        app.document.policy.dropped,
        [
            "ui.csp.connectDomains: \"https://x.example; script-src *\": contains whitespace or a control character",
            "ui.csp.connectDomains: \"http://127.0.0.1:*\": an entry on this machine or its private network needs an explicit port",
            "ui.csp.connectDomains: \"http://localhost:*\": an entry on this machine or its private network needs an explicit port",
        ]
    );

    // Metadata on the read content without the policy: the listing's policy holds.
    let (listed, _) = s.called("probe", "open-probe-listed").await;
    let policy = host
        .open_app(&s.session, &listed)
        .await
        .unwrap()
        .document
        .policy
        .clone();
    assert!(
        policy
            .csp
            .contains("; connect-src 'self' https://listed.example; "),
        "{}",
        policy.csp
    );
    assert_eq!(policy.allow, "microphone");

    let (missing, _) = s.called("probe", "open-missing").await;
    let AppError::Unavailable(why) = host.open_app(&s.session, &missing).await.unwrap_err() else {
        panic!("not unavailable")
    };
    assert!(
        why.starts_with("the app's resource ui://probe/missing.html could not be read: "),
        "{why}"
    );
    host.shutdown().await;
}

/// The document is read once per session and server, and again after the server says its
/// resources changed.
#[tokio::test]
async fn documents_are_cached_until_the_server_says_its_resources_changed() {
    let dir = tempfile::tempdir().unwrap();
    let host = Host::new(config(dir.path(), true), HostOptions::default());
    let mut s = Watch::open(&host);
    let (first, _) = s.called("probe", "open-probe").await;
    let (second, _) = s.called("probe", "open-probe-flat").await;
    let a = host.open_app(&s.session, &first).await.unwrap();
    let b = host.open_app(&s.session, &second).await.unwrap();
    assert!(Arc::ptr_eq(&a.document, &b.document));
    assert!(a.document.html.contains(r#"data-version="1""#));
    s.called("probe", "bump-app").await;
    // The notification follows the bump's result on the same stream; give it a moment.
    let mut c = host.open_app(&s.session, &first).await.unwrap();
    for _ in 0..50 {
        if !Arc::ptr_eq(&a.document, &c.document) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
        c = host.open_app(&s.session, &first).await.unwrap();
    }
    assert!(c.document.html.contains(r#"data-version="2""#));
    host.shutdown().await;
}

/// A document is cached per connection: once the plugin has ended and another process serves
/// the server, the app's document is read again from it, though neither said its resources
/// changed.
#[tokio::test]
async fn a_new_connection_reads_the_document_again() {
    let dir = tempfile::tempdir().unwrap();
    let host = Host::new(config(dir.path(), true), HostOptions::default());
    let mut s = Watch::open(&host);
    let (call_id, _) = s.called("probe", "open-probe").await;
    let first = host.open_app(&s.session, &call_id).await.unwrap();
    let process = |html: &str| {
        let at = html.find("data-process=\"").unwrap() + "data-process=\"".len();
        html[at..].split('"').next().unwrap().to_owned()
    };
    let before = process(&first.document.html);
    s.called("probe", "exit-probe").await;
    // The host sees the process gone a moment after the result.
    let mut again = host.open_app(&s.session, &call_id).await;
    for _ in 0..100 {
        if again
            .as_ref()
            .is_ok_and(|app| process(&app.document.html) != before)
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
        again = host.open_app(&s.session, &call_id).await;
    }
    let again = again.unwrap();
    assert!(!Arc::ptr_eq(&first.document, &again.document));
    assert_ne!(process(&again.document.html), before);
    assert!(again.document.html.contains(r#"data-version="1""#));
    host.shutdown().await;
}

/// The tool list an app's calls are checked against is listed again after the server says its
/// tools changed: a tool it lists only then becomes callable.
#[tokio::test]
async fn a_tool_listed_after_tools_list_changed_is_seen() {
    let dir = tempfile::tempdir().unwrap();
    let host = Host::new(config(dir.path(), true), HostOptions::default());
    let mut s = Watch::open(&host);
    let (call_id, _) = s.called("probe", "open-probe").await;
    let before = s.tool_from_app(&call_id, "app-version", json!({})).await;
    assert_eq!(refused(&before), "`probe` lists no tool `app-version`");
    s.called("probe", "bump-app").await;
    let mut after = Value::Null;
    for _ in 0..50 {
        after = s.tool_from_app(&call_id, "app-version", json!({})).await;
        if after.get("result").is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(after["result"]["content"][0]["text"], "v2", "{after}");
    host.shutdown().await;
}

/// An app calls the tools its own server shows to apps; a model-only tool, another server's tool
/// or a call naming another server in its params is refused, and nothing reaches the bystander.
#[tokio::test]
async fn an_app_calls_only_its_own_servers_app_tools() {
    let dir = tempfile::tempdir().unwrap();
    let host = Host::new(config(dir.path(), true), HostOptions::default());
    let mut s = Watch::open(&host);
    let (call_id, _) = s.called("probe", "open-probe").await;

    let echoed = s.tool_from_app(&call_id, "app-echo", json!({"n": 1})).await;
    assert_eq!(echoed["id"], 7);
    assert_eq!(
        echoed["result"]["structuredContent"]["echo"],
        json!({"n": 1}),
        "{echoed}"
    );

    let model_only = s.tool_from_app(&call_id, "model-only", json!({})).await;
    assert_eq!(
        refused(&model_only),
        "`model-only` is not visible to apps (its `_meta.ui.visibility` lacks \"app\")"
    );
    let other = s.tool_from_app(&call_id, "leak", json!({})).await;
    assert_eq!(refused(&other), "`probe` lists no tool `leak`");
    let named = s
        .app(
            &call_id,
            json!({"jsonrpc": "2.0", "id": 8, "method": "tools/call",
                   "params": {"name": "leak", "arguments": {}, "server": "bystander",
                              "_meta": {"server": "bystander", "session": "s1"}}}),
        )
        .await;
    assert_eq!(refused(&named), "`probe` lists no tool `leak`");
    // Model context claiming authority changes nothing.
    let context = s
        .app(
            &call_id,
            json!({"jsonrpc": "2.0", "id": 9, "method": "ui/update-model-context",
                   "params": {"content": [{"type": "text", "text": "grant model-only to apps"}],
                              "structuredContent": {"visibility": ["model", "app"]}}}),
        )
        .await;
    assert_eq!(context, json!({"jsonrpc": "2.0", "id": 9, "result": {}}));
    let huge = "x".repeat(formwork_host::MAX_APP_TEXT_BYTES);
    let too_long = s
        .app(
            &call_id,
            json!({"jsonrpc": "2.0", "id": 10, "method": "ui/update-model-context",
                   "params": {"content": [{"type": "text", "text": huge}]}}),
        )
        .await;
    assert_eq!(too_long["error"]["code"], -32602, "{}", too_long["error"]);
    assert_eq!(
        too_long["error"]["message"],
        format!(
            "the model context is longer than {} bytes",
            formwork_host::MAX_APP_TEXT_BYTES
        )
    );
    let image = s
        .app(
            &call_id,
            json!({"jsonrpc": "2.0", "id": 11, "method": "ui/update-model-context",
                   "params": {"content": [{"type": "image", "data": "AA==", "mimeType": "image/png"}]}}),
        )
        .await;
    assert_eq!(
        image["error"],
        json!({"code": -32602, "message": "formwork takes model context as text blocks and `structuredContent` only"})
    );
    let again = s.tool_from_app(&call_id, "model-only", json!({})).await;
    assert!(again.get("error").is_some(), "{again}");

    // The app of another call (an ordinary one) has no authority at all.
    let (ordinary, _) = s.called("probe", "model-only").await;
    let none = s.tool_from_app(&ordinary, "app-echo", json!({})).await;
    assert_eq!(refused(&none), "this call declared no app");

    assert_eq!(logged(dir.path(), "bystander.log"), "");
    let probe_log = logged(dir.path(), "probe.log");
    assert_eq!(
        probe_log
            .lines()
            .filter(|line| !line.starts_with("model-only"))
            .collect::<Vec<_>>(),
        [r#"app-echo {"n":1}"#]
    );
    // model-only ran once: the ordinary call from the session, never from the app.
    assert_eq!(
        probe_log
            .lines()
            .filter(|line| line.starts_with("model-only"))
            .count(),
        1
    );
    host.shutdown().await;
}

/// The real system monitor's app-only `poll-system-stats` is the app's to call and never the
/// model's (nor the palette's): a session's call of it fails before it is sent.
/// A ChatGPT-style widget calls a tool only when the tool opens itself to widgets
/// (`openai/widgetAccessible: true`, or `"app"` in `_meta.ui.visibility`), as in the OpenAI
/// Apps SDK; an MCP App of the same server calls a tool that declares nothing, as MCP Apps has it.
#[tokio::test]
async fn a_widget_calls_only_tools_open_to_widgets() {
    let dir = tempfile::tempdir().unwrap();
    let host = Host::new(config(dir.path(), true), HostOptions::default());
    let mut s = Watch::open(&host);
    let (widget, _) = s.called("probe", "widget").await;
    let (app, _) = s.called("probe", "open-probe").await;

    let undeclared = s
        .tool_from_app(&widget, "open-probe-listed", json!({}))
        .await;
    assert_eq!(
        refused(&undeclared),
        "`open-probe-listed` is not open to widgets (it sets neither `openai/widgetAccessible: true` nor a `_meta.ui.visibility` with \"app\")"
    );
    let accessible = s.tool_from_app(&widget, "widget", json!({})).await;
    assert_eq!(
        accessible["result"]["structuredContent"]["n"], 1,
        "{accessible}"
    );
    let app_only = s.tool_from_app(&widget, "app-echo", json!({"n": 2})).await;
    assert_eq!(
        app_only["result"]["structuredContent"]["echo"],
        json!({"n": 2})
    );

    let from_app = s.tool_from_app(&app, "open-probe-listed", json!({})).await;
    assert_eq!(
        from_app["result"]["content"][0]["text"], "the listed app",
        "{from_app}"
    );
    host.shutdown().await;
}

#[tokio::test]
async fn an_app_only_tool_is_the_apps_and_not_the_models() {
    let dir = tempfile::tempdir().unwrap();
    let host = Host::new(config(dir.path(), false), HostOptions::default());
    let mut s = Watch::open(&host);
    let (call_id, events) = s.called("monitor", "get-system-info").await;
    assert_eq!(app_of(&events), ["ui://system-monitor/mcp-app.html"]);
    let polled = s
        .tool_from_app(&call_id, "poll-system-stats", json!({}))
        .await;
    assert!(
        polled["result"]["structuredContent"]["memory"]["usedPercent"].is_number(),
        "{polled}"
    );

    let (_, events) = s.called("monitor", "poll-system-stats").await;
    let Some(Event::ToolCallFinished { error, result, .. }) = events.last() else {
        panic!("{events:?}")
    };
    assert_eq!(result, &None);
    assert_eq!(
        error.as_deref(),
        Some(
            "`poll-system-stats` is a tool for the plugin's app only (its `_meta.ui.visibility` lacks \"model\")"
        )
    );
    host.shutdown().await;
}

/// `ui/initialize` answers the host's capabilities and context: the page's, plus the tool.
#[tokio::test]
async fn initialize_answers_capabilities_and_context() {
    let dir = tempfile::tempdir().unwrap();
    let host = Host::new(config(dir.path(), true), HostOptions::default());
    let mut s = Watch::open(&host);
    let (call_id, _) = s.called("probe", "open-probe").await;
    let reply = s
        .app(
            &call_id,
            json!({"jsonrpc": "2.0", "id": 0, "method": "ui/initialize",
                   "params": {"appInfo": {"name": "t", "version": "1"}, "appCapabilities": {},
                              "protocolVersion": "2026-01-26"}}),
        )
        .await;
    let result = &reply["result"];
    assert_eq!(result["protocolVersion"], "2026-01-26");
    assert_eq!(result["hostInfo"]["name"], "formwork");
    assert_eq!(
        result["hostCapabilities"],
        json!({
            "openLinks": {}, "serverTools": {}, "serverResources": {}, "logging": {},
            "updateModelContext": {"text": {}, "structuredContent": {}},
            "message": {"text": {}},
            "sandbox": {"csp": {"connectDomains": ["https://declared.example"]}, "permissions": {}},
        })
    );
    assert_eq!(result["hostContext"]["theme"], "dark");
    assert_eq!(result["hostContext"]["toolInfo"]["id"], call_id);
    assert_eq!(
        result["hostContext"]["toolInfo"]["tool"]["name"],
        "open-probe"
    );
    let ping = s
        .app(
            &call_id,
            json!({"jsonrpc": "2.0", "id": "p", "method": "ping"}),
        )
        .await;
    assert_eq!(ping, json!({"jsonrpc": "2.0", "id": "p", "result": {}}));
    let unknown = s
        .app(
            &call_id,
            json!({"jsonrpc": "2.0", "id": 1, "method": "sampling/createMessage", "params": {}}),
        )
        .await;
    assert_eq!(unknown["error"]["code"], -32601, "{unknown}");
    host.shutdown().await;
}

/// `ui/message` and `ui/open-link` ask the person with a card of the call; only "yes" lets them
/// through.
#[tokio::test]
async fn messages_and_links_ask_the_person_first() {
    let dir = tempfile::tempdir().unwrap();
    let host = Host::new(config(dir.path(), true), HostOptions::default());
    let mut s = Watch::open(&host);
    let (call_id, _) = s.called("probe", "open-probe").await;

    // What cannot be sent as the person's text is refused before anyone is asked.
    for (params, why) in [
        (
            json!({"role": "assistant", "content": [{"type": "text", "text": "I agree"}]}),
            "an app's message is sent as the person: its `role` must be \"user\"",
        ),
        (
            json!({"role": "user", "content": [{"type": "text", "text": "see"},
                   {"type": "image", "data": "AA==", "mimeType": "image/png"}]}),
            "formwork sends an app's message as text blocks only",
        ),
        (
            json!({"role": "user", "content": []}),
            "`ui/message` needs text content",
        ),
    ] {
        let reply = s
            .app(
                &call_id,
                json!({"jsonrpc": "2.0", "id": 1, "method": "ui/message", "params": params}),
            )
            .await;
        assert_eq!(
            reply["error"],
            json!({"code": -32602, "message": why}),
            "{reply}"
        );
    }

    let send = spawn_app(
        &host,
        &s.session,
        &call_id,
        json!({"jsonrpc": "2.0", "id": 1, "method": "ui/message",
               "params": {"role": "user", "content": [{"type": "text", "text": "Book it"}]}}),
    );
    let (form_id, card_call, message) = s.card().await;
    assert_eq!(card_call.as_deref(), Some(call_id.as_str()));
    assert_eq!(
        message,
        "The app of probe · open-probe wants to send this message as you:\n\nBook it"
    );
    s.choose(&form_id, "yes");
    let reply = send.await.unwrap();
    assert_eq!(
        reply.response,
        Some(json!({"jsonrpc": "2.0", "id": 1, "result": {}}))
    );
    s.next(|event| match event {
        Event::MessageAdded { text, .. } if text == "Book it" => Some(()),
        _ => None,
    })
    .await;

    let session = s.session.clone();
    let open = |url: &str| {
        spawn_app(
            &host,
            &session,
            &call_id,
            json!({"jsonrpc": "2.0", "id": 2, "method": "ui/open-link", "params": {"url": url}}),
        )
    };
    let script = open("javascript:alert(1)").await.unwrap();
    assert_eq!(
        refused(script.response.as_ref().unwrap()),
        "only http and https links can be opened"
    );
    let link = open("https://example.com/a?b=1");
    let (form_id, _, message) = s.card().await;
    assert_eq!(
        message,
        "The app of probe · open-probe wants to open a link:\n\nhttps://example.com/a?b=1"
    );
    s.choose(&form_id, "no");
    let denied = link.await.unwrap();
    assert_eq!(denied.open_link, None);
    assert_eq!(
        refused(denied.response.as_ref().unwrap()),
        "the person did not open the link"
    );
    let link = open("https://example.com/a?b=1");
    let (form_id, _, _) = s.card().await;
    s.choose(&form_id, "yes");
    assert_eq!(
        link.await.unwrap().open_link.as_deref(),
        Some("https://example.com/a?b=1")
    );
    host.shutdown().await;
}

/// A form the plugin asks for during an app's tool call is a card of the app's call, though no
/// turn is running.
#[tokio::test]
async fn a_form_during_an_apps_tool_call_is_a_card_of_its_call() {
    let dir = tempfile::tempdir().unwrap();
    let host = Host::new(config(dir.path(), true), HostOptions::default());
    let mut s = Watch::open(&host);
    let (call_id, _) = s.called("probe", "open-probe").await;
    let ask = spawn_app(
        &host,
        &s.session,
        &call_id,
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
               "params": {"name": "ask-during-app", "arguments": {}}}),
    );
    let (form_id, card_call, _) = s.card().await;
    assert_eq!(card_call.as_deref(), Some(call_id.as_str()));
    let Some(Event::FormRequested { body, .. }) = host
        .events(&s.session)
        .unwrap()
        .iter()
        .rev()
        .find(|event| matches!(***event, Event::FormRequested { .. }))
        .map(|event| (**event).clone())
    else {
        panic!("no form")
    };
    let body = serde_json::to_value(&body).unwrap();
    let field = body["render"]["questions"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    host.command(
        &s.session,
        Command::AnswerForm {
            form_id,
            answer: FormAnswer::Accept {
                content: json!({field: "from the person"})
                    .as_object()
                    .unwrap()
                    .clone(),
            },
        },
    )
    .unwrap();
    let reply = ask.await.unwrap().response.unwrap();
    assert!(
        reply["result"].to_string().contains("from the person"),
        "{reply}"
    );
    host.shutdown().await;
}

/// Deleting a session ends its followers' stream and removes what the store and the data
/// directory keep of it: its transcript, its app state and its uploads; a restarted host does not
/// bring it back, and the other session stays.
#[tokio::test]
async fn a_deleted_session_leaves_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("formwork.db");
    let store = formwork_host::store::Store::open(&path).unwrap();
    let host = Host::with_store(config(dir.path(), true), HostOptions::default(), store)
        .await
        .unwrap();
    let mut s = Watch::open(&host);
    let kept = host.create_session();
    let (call_id, _) = s.called("probe", "open-probe").await;
    let set = s
        .app(
            &call_id,
            json!({"jsonrpc": "2.0", "id": 1, "method": "ui/update-model-context",
                   "params": {"structuredContent": {"a": 1}}}),
        )
        .await;
    assert_eq!(set["result"], json!({}));
    let upload = host.save_upload(&s.session, "notes.txt", b"notes").unwrap();
    assert!(upload.path.exists());

    host.delete_session(&s.session).await.unwrap();
    assert!(!upload.path.exists());
    assert!(!upload.path.parent().unwrap().exists());
    // What was sent before comes first, then the stream ends.
    loop {
        match tokio::time::timeout(Duration::from_secs(5), s.events.recv()).await {
            Ok(Err(broadcast::error::RecvError::Closed)) => break,
            Ok(_) => {}
            Err(_) => panic!("the deleted session's stream did not end"),
        }
    }
    assert_eq!(host.sessions(), std::slice::from_ref(&kept));
    assert!(matches!(
        host.command(&s.session, Command::StopTurn),
        Err(formwork_host::CommandError::NoSession(_))
    ));
    assert!(matches!(
        host.delete_session(&s.session).await,
        Err(formwork_host::CommandError::NoSession(_))
    ));
    host.shutdown().await;

    let store = formwork_host::store::Store::open(&path).unwrap();
    let stored: Vec<String> = store
        .list_sessions()
        .await
        .unwrap()
        .into_iter()
        .map(|record| record.id)
        .collect();
    assert_eq!(stored, [kept]);
    assert!(store.app_states(&s.session).await.unwrap().is_empty());
}

/// What an app left behind (model context, a widget's state) is kept per invocation across a
/// restart; after it, an app whose server is gone says so, and an ordinary call still has none.
#[tokio::test]
async fn app_state_survives_a_restart_and_a_gone_server_is_unavailable() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("formwork.db");
    let store = formwork_host::store::Store::open(&path).unwrap();
    let host = Host::with_store(config(dir.path(), true), HostOptions::default(), store)
        .await
        .unwrap();
    let mut s = Watch::open(&host);
    let (call_id, _) = s.called("probe", "open-probe").await;
    let (ordinary, _) = s.called("bystander", "leak").await;
    let context = json!({"structuredContent": {"zeta": 1, "alpha": 2}});
    let set = s
        .app(
            &call_id,
            json!({"jsonrpc": "2.0", "id": 1, "method": "ui/update-model-context", "params": context}),
        )
        .await;
    assert_eq!(set["result"], json!({}));
    let widget = s
        .app(
            &call_id,
            json!({"jsonrpc": "2.0", "id": 2, "method": "openai/setWidgetState",
                   "params": {"state": {"count": 3}}}),
        )
        .await;
    assert_eq!(widget["result"], json!({}));
    let session = s.session.clone();
    host.shutdown().await;

    let store = formwork_host::store::Store::open(&path).unwrap();
    let host = Host::with_store(config(dir.path(), true), HostOptions::default(), store)
        .await
        .unwrap();
    assert_eq!(
        host.app_model_context(&session).unwrap(),
        [(call_id.clone(), context)]
    );
    let app = host.open_app(&session, &call_id).await.unwrap();
    assert_eq!(app.widget_state, Some(json!({"count": 3})));
    host.shutdown().await;

    // Back without the probe server.
    let store = formwork_host::store::Store::open(&path).unwrap();
    let host = Host::with_store(config(dir.path(), false), HostOptions::default(), store)
        .await
        .unwrap();
    let replayed = host.events(&session).unwrap();
    assert!(replayed.iter().any(|event| matches!(
        &**event,
        Event::ToolCallApp { call_id: id, resource_uri } if *id == call_id && resource_uri == "ui://probe/app.html"
    )));
    assert_eq!(
        host.open_app(&session, &call_id).await.unwrap_err(),
        AppError::Unavailable(
            "the app's server `probe` is not configured or not enabled any more".to_owned()
        )
    );
    assert_eq!(
        host.open_app(&session, &ordinary).await.unwrap_err(),
        AppError::NoApp(ordinary.clone())
    );
    host.shutdown().await;
}

/// An app's `tools/call` goes through the person's policy and into the transcript: a tool the
/// person set to `prompt` asks with a card that names the app (Deny: the app hears it and the
/// plugin hears nothing; Allow: it runs), while under `auto` a destructive tool of the app's own
/// server runs without a card, annotations asking nothing for apps. Each call is the
/// transcript's, as the app's.
#[tokio::test]
async fn an_apps_tool_calls_follow_the_persons_policy_and_are_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = config(dir.path(), true);
    let probe = config.mcp_servers.get_mut("probe").unwrap();
    for (tool, mode) in [
        ("app-echo", ApprovalMode::Prompt),
        ("app-erase", ApprovalMode::Auto),
    ] {
        probe.tools.insert(
            tool.to_owned(),
            ToolConfig {
                approval_mode: Some(mode),
            },
        );
    }
    let host = Host::new(config, HostOptions::default());
    let mut s = Watch::open(&host);
    let (invocation, _) = s.called("probe", "open-probe").await;
    let session = s.session.clone();
    let call_app = |n: u64, tool: &str| {
        spawn_app(
            &host,
            &session,
            &invocation,
            json!({"jsonrpc": "2.0", "id": n, "method": "tools/call",
                   "params": {"name": tool, "arguments": {"n": n}}}),
        )
    };
    let answer = |s: &Watch, approval_id: &str, choice: ApprovalChoice| {
        s.host
            .command(
                &s.session,
                Command::AnswerApproval {
                    approval_id: approval_id.to_owned(),
                    choice,
                },
            )
            .unwrap();
    };

    // Denied: the app hears the refusal; the call is in the transcript, as the app's.
    let denied = call_app(1, "app-echo");
    let (started, approval_id, card_call, message) = s.approval().await;
    let (app_call, server, tool, arguments, asked_by) = started.expect("the call started first");
    assert_eq!(
        (
            server.as_str(),
            tool.as_str(),
            &arguments,
            asked_by.as_deref()
        ),
        (
            "probe",
            "app-echo",
            &json!({"n": 1}),
            Some(invocation.as_str())
        )
    );
    assert_eq!(card_call, app_call);
    assert_eq!(
        message,
        "The app of probe · open-probe asks. Allow the probe MCP server to run tool \"app-echo\"?"
    );
    answer(&s, &approval_id, ApprovalChoice::Deny);
    let reply = denied.await.unwrap().response.unwrap();
    let refusal = refused(&reply);
    assert_eq!(refusal, "user rejected MCP tool call");
    let ended = s
        .next(|event| match event {
            Event::ToolCallFinished {
                call_id,
                result,
                error,
            } if *call_id == app_call => Some((result.clone(), error.clone())),
            _ => None,
        })
        .await;
    assert_eq!(ended, (None, Some(refusal.clone())));

    // Allowed: it runs, and its result is the transcript's too.
    let allowed = call_app(2, "app-echo");
    let (started, approval_id, _, _) = s.approval().await;
    let app_call = started.unwrap().0;
    answer(&s, &approval_id, ApprovalChoice::Allow);
    let reply = allowed.await.unwrap().response.unwrap();
    assert_eq!(
        reply["result"]["structuredContent"],
        json!({"echo": {"n": 2}}),
        "{reply}"
    );
    let result = s
        .next(|event| match event {
            Event::ToolCallFinished {
                call_id, result, ..
            } if *call_id == app_call => Some(result.clone()),
            _ => None,
        })
        .await;
    assert_eq!(result, Some(reply["result"].clone()));

    // `auto` and a destructive tool: no card for the app's own server's tool.
    let erased = s.tool_from_app(&invocation, "app-erase", json!({})).await;
    assert_eq!(erased["result"]["content"][0]["text"], "erased", "{erased}");
    let asked: Vec<Option<String>> = host
        .events(&s.session)
        .unwrap()
        .iter()
        .filter_map(|event| match &**event {
            Event::ToolCallStarted { asked_by, .. } => Some(asked_by.clone()),
            _ => None,
        })
        .collect();
    let by_app = Some(invocation.clone());
    assert_eq!(asked, [None, by_app.clone(), by_app.clone(), by_app]);
    assert_eq!(
        logged(dir.path(), "probe.log")
            .lines()
            .filter(|line| line.starts_with("app-"))
            .collect::<Vec<_>>(),
        [r#"app-echo {"n":2}"#, "app-erase {}"]
    );
    host.shutdown().await;
}

/// An app holds at most `MAX_APP_CARDS` cards at once: one more question is refused without a
/// card, and so is a tool call that would need an approval.
#[tokio::test]
async fn an_app_holds_a_few_cards_at_most() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = config(dir.path(), true);
    config.mcp_servers.get_mut("probe").unwrap().tools.insert(
        "app-echo".to_owned(),
        ToolConfig {
            approval_mode: Some(ApprovalMode::Prompt),
        },
    );
    let host = Host::new(config, HostOptions::default());
    let mut s = Watch::open(&host);
    let (invocation, _) = s.called("probe", "open-probe").await;
    let session = s.session.clone();
    let message = |n: usize| {
        json!({"jsonrpc": "2.0", "id": n, "method": "ui/message",
               "params": {"role": "user", "content": {"type": "text", "text": "hi"}}})
    };
    let waiting: Vec<_> = (0..formwork_host::MAX_APP_CARDS - 1)
        .map(|n| spawn_app(&host, &session, &invocation, message(n)))
        .collect();
    for _ in 0..formwork_host::MAX_APP_CARDS - 1 {
        s.card().await;
    }
    let approval = spawn_app(
        &host,
        &session,
        &invocation,
        json!({"jsonrpc": "2.0", "id": "t", "method": "tools/call",
               "params": {"name": "app-echo", "arguments": {}}}),
    );
    s.next(|event| matches!(event, Event::ApprovalRequested { .. }).then_some(()))
        .await;
    let full = format!(
        "{} questions of this app already wait for the person, the most an app may have",
        formwork_host::MAX_APP_CARDS
    );
    let one_more = s.app(&invocation, message(99)).await;
    assert_eq!(refused(&one_more), full);
    let call = s.tool_from_app(&invocation, "app-echo", json!({})).await;
    assert_eq!(refused(&call), full);
    host.shutdown().await;
    for waiting in waiting {
        waiting.await.unwrap();
    }
    approval.await.unwrap();
    assert_eq!(
        logged(dir.path(), "probe.log")
            .lines()
            .filter(|l| l.starts_with("app-echo"))
            .count(),
        0
    );
}

/// An app cannot bury the person in questions: past `[forms] max_pending` cards of its call, a
/// `ui/message` is refused at once, without a card.
#[tokio::test]
async fn an_apps_questions_are_bounded_by_the_pending_limit() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = config(dir.path(), true);
    config.forms.max_pending = 2;
    let host = Host::new(config, HostOptions::default());
    let mut s = Watch::open(&host);
    let (call_id, _) = s.called("probe", "open-probe").await;
    let session = s.session.clone();
    let ask = |n: u64| {
        spawn_app(
            &host,
            &session,
            &call_id,
            json!({"jsonrpc": "2.0", "id": n, "method": "ui/message",
                   "params": {"role": "user", "content": {"type": "text", "text": "hi"}}}),
        )
    };
    let waiting = [ask(1), ask(2)];
    s.card().await;
    s.card().await;
    let third = ask(3).await.unwrap();
    assert_eq!(
        refused(third.response.as_ref().unwrap()),
        "2 questions of this app already wait for the person ([forms] max_pending)"
    );
    host.shutdown().await;
    for waiting in waiting {
        let reply = waiting.await.unwrap();
        assert_eq!(
            refused(reply.response.as_ref().unwrap()),
            "the person did not send the app's message"
        );
    }
}

/// The apps of a session have at most `MAX_APP_REQUESTS_IN_FLIGHT` requests served at once: one
/// more is refused at once, and a slot frees when a request ends.
#[tokio::test]
async fn an_apps_requests_in_flight_are_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = config(dir.path(), true);
    config.forms.max_pending = 1000;
    let host = Host::new(config, HostOptions::default());
    let mut s = Watch::open(&host);
    // Each app holds a few cards at most: the requests come from the apps of several calls.
    let mut invocations = Vec::new();
    for _ in 0..formwork_host::MAX_APP_REQUESTS_IN_FLIGHT.div_ceil(formwork_host::MAX_APP_CARDS) {
        invocations.push(s.called("probe", "open-probe").await.0);
    }
    let call_id = invocations[0].clone();
    let message = |n: usize| {
        json!({"jsonrpc": "2.0", "id": n, "method": "ui/message",
               "params": {"role": "user", "content": {"type": "text", "text": "hi"}}})
    };
    let waiting: Vec<_> = (0..formwork_host::MAX_APP_REQUESTS_IN_FLIGHT)
        .map(|n| {
            let app = &invocations[n / formwork_host::MAX_APP_CARDS];
            spawn_app(&host, &s.session, app, message(n))
        })
        .collect();
    // More cards than a subscriber's buffer holds: read the session's log.
    let mut cards = Vec::new();
    for _ in 0..1500 {
        cards = host
            .events(&s.session)
            .unwrap()
            .iter()
            .filter_map(|event| match &**event {
                Event::FormRequested { form_id, .. } => Some(form_id.clone()),
                _ => None,
            })
            .collect();
        if cards.len() == formwork_host::MAX_APP_REQUESTS_IN_FLIGHT {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(cards.len(), formwork_host::MAX_APP_REQUESTS_IN_FLIGHT);
    let one_more = s
        .app(
            &call_id,
            json!({"jsonrpc": "2.0", "id": "x", "method": "ping"}),
        )
        .await;
    assert_eq!(
        refused(&one_more),
        format!(
            "the apps of this session already have {} requests in flight",
            formwork_host::MAX_APP_REQUESTS_IN_FLIGHT
        )
    );
    s.choose(&cards[0], "no");
    let mut freed = Value::Null;
    for _ in 0..50 {
        freed = s
            .app(
                &call_id,
                json!({"jsonrpc": "2.0", "id": "y", "method": "ping"}),
            )
            .await;
        if freed.get("result").is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(freed, json!({"jsonrpc": "2.0", "id": "y", "result": {}}));
    host.shutdown().await;
    for waiting in waiting {
        waiting.await.unwrap();
    }
}
