//! Helpers shared by the host's conversation tests (`model.rs`, `codex.rs`, `older_protocol.rs`):
//! a session watched through its events as a UI watches it.
#![allow(dead_code, clippy::unwrap_used)] // each test binary uses its own subset

use std::sync::Arc;
use std::time::Duration;

use formwork_host::{Command, Event, FormAnswer, Host, Role};
use serde_json::Value;
use tokio::sync::broadcast;

/// A session and the live stream of its events, as a UI has them.
pub struct Watch {
    pub host: Host,
    pub session: String,
    events: broadcast::Receiver<Arc<Event>>,
}

impl Watch {
    pub fn open(host: &Host) -> Watch {
        let session = host.create_session();
        Watch::on(host, session)
    }

    pub fn on(host: &Host, session: String) -> Watch {
        let (_, events) = host.subscribe(&session).unwrap();
        Watch {
            host: host.clone(),
            session,
            events,
        }
    }

    pub fn say(&self, text: &str) {
        self.send(Command::SendMessage {
            text: text.to_owned(),
        });
    }

    pub fn send(&self, command: Command) {
        self.host.command(&self.session, command).unwrap();
    }

    /// The first event from now on that `pick` takes; the session's whole transcript on a
    /// miss.
    pub async fn next<T>(&mut self, mut pick: impl FnMut(&Event) -> Option<T>) -> T {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        loop {
            let Ok(event) = tokio::time::timeout_at(deadline, self.events.recv()).await else {
                panic!(
                    "no such event within 60 s; the session has {:#?}",
                    self.host.events(&self.session).unwrap()
                );
            };
            if let Some(found) = pick(&event.unwrap()) {
                return found;
            }
        }
    }

    /// Every event until the turn ends, and its reason's wire name.
    pub async fn turn(&mut self) -> (Vec<Event>, String) {
        let mut seen = Vec::new();
        let reason = self
            .next(|event| {
                seen.push(event.clone());
                match event {
                    Event::TurnEnded { reason, .. } => Some(
                        serde_json::to_value(reason)
                            .unwrap()
                            .as_str()
                            .unwrap()
                            .to_owned(),
                    ),
                    _ => None,
                }
            })
            .await;
        (seen, reason)
    }

    /// The next form card's id.
    pub async fn form(&mut self) -> String {
        self.form_event().await.0
    }

    /// The next form card: its id and event.
    pub async fn form_event(&mut self) -> (String, Event) {
        self.next(|event| match event {
            Event::FormRequested { form_id, .. } => Some((form_id.clone(), event.clone())),
            _ => None,
        })
        .await
    }

    /// The next approval card: `(approval_id, server, tool, body as JSON)`.
    pub async fn approval(&mut self) -> (String, String, String, Value) {
        self.next(|event| match event {
            Event::ApprovalRequested {
                approval_id,
                server,
                tool,
                body,
                ..
            } => Some((
                approval_id.clone(),
                server.clone(),
                tool.clone(),
                serde_json::to_value(body).unwrap(),
            )),
            _ => None,
        })
        .await
    }

    pub fn answer(&self, form_id: &str, answer: FormAnswer) {
        self.send(Command::AnswerForm {
            form_id: form_id.to_owned(),
            answer,
        });
    }
}

/// An accept with typed content.
pub fn accept(content: Value) -> FormAnswer {
    FormAnswer::Accept {
        content: content.as_object().unwrap().clone(),
    }
}

/// The model's whole messages among `events`.
pub fn assistant_texts(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .filter_map(|event| match event {
            Event::MessageAdded {
                role: Role::Assistant,
                text,
            } => Some(text.clone()),
            _ => None,
        })
        .collect()
}
