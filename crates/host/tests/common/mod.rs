//! Helpers shared by the host's conversation tests (`model.rs`, `codex.rs`): where the test peers
//! are, the simulated model provider (`tests/peers/sim_provider.py`, the one hand-written fake),
//! and a session watched through its events as a UI watches it.
#![allow(dead_code, clippy::unwrap_used)] // each test binary uses its own subset

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use formwork_host::{Command, Event, FormAnswer, Host, Role};
use serde_json::Value;
use tokio::sync::broadcast;

/// The directory `cargo xtask peers` installed the peers into.
pub fn peers() -> PathBuf {
    PathBuf::from(
        std::env::var_os("FORMWORK_PEERS")
            .expect("FORMWORK_PEERS is not set: run `cargo xtask test` to install the test peers"),
    )
}

pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The simulated provider, running a script; its request log is read back.
pub struct Sim {
    child: std::process::Child,
    /// Its base URL, `http://127.0.0.1:PORT/v1`.
    pub url: String,
    log: PathBuf,
    _dir: tempfile::TempDir,
}

impl Sim {
    pub fn start(script: Value) -> Sim {
        let dir = tempfile::tempdir().unwrap();
        let script_file = dir.path().join("script.json");
        std::fs::write(&script_file, script.to_string()).unwrap();
        let log = dir.path().join("requests.jsonl");
        let mut child = std::process::Command::new("python3")
            .arg(repo_root().join("tests/peers/sim_provider.py"))
            .arg(&script_file)
            .arg(&log)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("starting tests/peers/sim_provider.py");
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        Sim {
            child,
            url: line.trim().to_owned(),
            log,
            _dir: dir,
        }
    }

    /// The requests the provider received (`{"path", "headers", "body", ...}`), in order.
    pub fn requests(&self) -> Vec<Value> {
        self.entries()
            .into_iter()
            .filter(|entry| entry.get("body").is_some())
            .collect()
    }

    /// Every line of its log.
    pub fn entries(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect()
    }
}

impl Drop for Sim {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

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
