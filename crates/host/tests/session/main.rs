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

mod approvals;
mod lifecycle;
mod queue;
mod replicas;
mod rounds;
mod storing;

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
        let question = serde_json::to_value(&render.block().unwrap().questions[0]).unwrap();
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
