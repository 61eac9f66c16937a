//! Where the CLI's answers come from: a script, the defaults, a terminal, or nowhere.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use formwork_forms::{Content, Form};
use formwork_host::{BoxFuture, DeclineNotice, FormPrompt, FormReply, FormResponder, PromptKind};
use serde_json::Value;

use crate::terminal;

/// The source of answers for the forms of one command.
pub enum AnswerSource {
    /// `--answers FILE`: one element per form, in order.
    Script(VecDeque<Value>),
    /// `--accept-defaults`.
    Defaults,
    /// Ask on the terminal.
    Terminal,
    /// No terminal and no script: every form is cancelled.
    Unavailable,
}

/// Answers forms for the CLI and remembers whether any scripted answer failed.
#[derive(Clone)]
pub struct CliResponder {
    inner: Arc<Inner>,
}

struct Inner {
    source: Mutex<AnswerSource>,
    failed: AtomicBool,
    forms_seen: AtomicUsize,
    /// One terminal prompt at a time, even when a plugin asks twice at once.
    terminal: tokio::sync::Mutex<()>,
}

impl CliResponder {
    pub fn new(source: AnswerSource) -> Self {
        CliResponder {
            inner: Arc::new(Inner {
                source: Mutex::new(source),
                failed: AtomicBool::new(false),
                forms_seen: AtomicUsize::new(0),
                terminal: tokio::sync::Mutex::new(()),
            }),
        }
    }

    /// Whether an answer could not be given as scripted (the command then exits 2).
    pub fn failed(&self) -> bool {
        self.inner.failed.load(Ordering::SeqCst)
    }
}

impl FormResponder for CliResponder {
    fn respond(&self, prompt: FormPrompt) -> BoxFuture<FormReply> {
        let inner = Arc::clone(&self.inner);
        Box::pin(async move { inner.answer(prompt).await })
    }

    fn declined(&self, notice: &DeclineNotice) {
        eprintln!(
            "formwork: declined form from {}: {}",
            notice.plugin,
            terminal::inert(&notice.reason)
        );
    }
}

/// What one step of the script says.
enum Scripted {
    Accept {
        content: Content,
        meta: Option<Content>,
    },
    Decline {
        meta: Option<Content>,
    },
    Cancel {
        meta: Option<Content>,
    },
}

impl Inner {
    async fn answer(&self, prompt: FormPrompt) -> FormReply {
        let number = self.forms_seen.fetch_add(1, Ordering::SeqCst) + 1;
        enum Next {
            Script(Option<Value>),
            Defaults,
            Terminal,
            Unavailable,
        }
        let next = match self.source.lock() {
            Ok(mut source) => match &mut *source {
                AnswerSource::Script(items) => Next::Script(items.pop_front()),
                AnswerSource::Defaults => Next::Defaults,
                AnswerSource::Terminal => Next::Terminal,
                AnswerSource::Unavailable => Next::Unavailable,
            },
            Err(_) => Next::Unavailable,
        };
        match next {
            Next::Script(Some(item)) => match parse_scripted(&item) {
                Ok(step) => self.apply(number, &prompt, step),
                Err(reason) => self.fail(number, &reason),
            },
            Next::Script(None) => self.fail(
                number,
                "the --answers file has no element left for this form",
            ),
            Next::Defaults => self.apply(
                number,
                &prompt,
                Scripted::Accept {
                    content: Content::new(),
                    meta: None,
                },
            ),
            Next::Terminal => {
                let _turn = self.terminal.lock().await;
                terminal::ask(prompt).await
            }
            Next::Unavailable => self.fail(
                number,
                "there is no terminal to ask on; pass --answers FILE or --accept-defaults",
            ),
        }
    }

    fn apply(&self, number: usize, prompt: &FormPrompt, step: Scripted) -> FormReply {
        let (reply, meta) = match step {
            Scripted::Decline { meta } => (FormReply::decline(), meta),
            Scripted::Cancel { meta } => (FormReply::cancel(), meta),
            Scripted::Accept { content, meta } => match &prompt.kind {
                PromptKind::Url { url, domain, .. } => {
                    eprintln!(
                        "formwork: form {number}: accepted the URL {} (domain {}); open it yourself",
                        terminal::inert(url),
                        terminal::inert(domain)
                    );
                    (FormReply::accept_url(), meta)
                }
                PromptKind::Form { form, .. } => match complete(form, &content) {
                    Ok(content) => (FormReply::accept(content), meta),
                    Err(errors) => {
                        return self.fail(
                            number,
                            &format!("the answer does not validate, so it was not sent:\n{errors}"),
                        );
                    }
                },
            },
        };
        match meta {
            Some(meta) => reply.with_meta(meta),
            None => reply,
        }
    }

    fn fail(&self, number: usize, reason: &str) -> FormReply {
        self.failed.store(true, Ordering::SeqCst);
        eprintln!("formwork: form {number}: {reason}; answering cancel");
        FormReply::cancel()
    }
}

fn complete(form: &Form, content: &Content) -> Result<Content, String> {
    form.content_from_typed(content).map_err(|errors| {
        errors
            .errors
            .iter()
            .map(|error| format!("  {}: {}", error.field, error.message))
            .collect::<Vec<_>>()
            .join("\n")
    })
}

/// Reads one element of an `--answers` array.
fn parse_scripted(item: &Value) -> Result<Scripted, String> {
    let Value::Object(object) = item else {
        return Err(format!(
            "an --answers element must be an object, not {item}"
        ));
    };
    let is_envelope = matches!(
        object.get("action").and_then(Value::as_str),
        Some("accept" | "decline" | "cancel")
    ) && object
        .keys()
        .all(|key| matches!(key.as_str(), "action" | "content" | "_meta"));
    if !is_envelope {
        return Ok(Scripted::Accept {
            content: object.clone(),
            meta: None,
        });
    }
    let meta = match object.get("_meta") {
        None => None,
        Some(Value::Object(meta)) => Some(meta.clone()),
        Some(_) => return Err("`_meta` in an --answers element must be an object".to_owned()),
    };
    match object.get("action").and_then(Value::as_str) {
        Some("decline") => Ok(Scripted::Decline { meta }),
        Some("cancel") => Ok(Scripted::Cancel { meta }),
        _ => match object.get("content") {
            None => Ok(Scripted::Accept {
                content: Content::new(),
                meta,
            }),
            Some(Value::Object(content)) => Ok(Scripted::Accept {
                content: content.clone(),
                meta,
            }),
            Some(_) => Err("`content` in an --answers element must be an object".to_owned()),
        },
    }
}
