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

mod bounds;
mod calls;
mod dialogue;
mod documents;
mod lifetime;

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
                    arguments.to_value(),
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
