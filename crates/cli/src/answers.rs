//! Where the CLI's answers come from: a script, the defaults, a terminal, or nowhere.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use formwork_forms::{Content, Form};
use formwork_host::config::FormsConfig;
use formwork_host::policy::{self, ApprovalAnswer, ApprovalCard, ApprovalChoice};
use formwork_host::{
    BoxFuture, DeclineNotice, ElicitationRequest, FormPrompt, FormReply, FormResponder,
};
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
    /// Why the policy keeps plugin forms from the person, when it does.
    gate: Option<String>,
    /// `[forms]`: how many forms may wait at once, and what a form asking for a secret gets.
    forms: FormsConfig,
    /// The forms being answered or waiting for the terminal now.
    open: AtomicUsize,
    failed: AtomicBool,
    forms_seen: AtomicUsize,
    /// One terminal prompt at a time, even when a plugin asks twice at once.
    terminal: tokio::sync::Mutex<()>,
}

impl CliResponder {
    /// `gate`: declines every plugin form for this reason (the approval policy's verdict).
    pub fn new(source: AnswerSource, gate: Option<String>, forms: FormsConfig) -> Self {
        CliResponder {
            inner: Arc::new(Inner {
                source: Mutex::new(source),
                gate,
                forms,
                open: AtomicUsize::new(0),
                failed: AtomicBool::new(false),
                forms_seen: AtomicUsize::new(0),
                terminal: tokio::sync::Mutex::new(()),
            }),
        }
    }

    /// Asks for the approval of a tool call: from the script, on the terminal, or nowhere
    /// (then the card is cancelled and the command exits 2).
    pub async fn approve(&self, card: &ApprovalCard) -> ApprovalAnswer {
        let number = self.inner.forms_seen.fetch_add(1, Ordering::SeqCst) + 1;
        enum Next {
            Script(Option<Value>),
            Terminal,
            Nowhere(&'static str),
        }
        let next = match self.inner.source.lock() {
            Ok(mut source) => match &mut *source {
                AnswerSource::Script(items) => Next::Script(items.pop_front()),
                AnswerSource::Terminal => Next::Terminal,
                AnswerSource::Defaults => {
                    Next::Nowhere("--accept-defaults does not approve tool calls")
                }
                AnswerSource::Unavailable => Next::Nowhere("there is no terminal to ask on"),
            },
            Err(_) => Next::Nowhere("the answer source is unusable"),
        };
        let reason = match next {
            Next::Terminal => return crate::terminal::ask_approval(card.clone()).await,
            Next::Script(Some(item)) => match item.get("approval").and_then(Value::as_str) {
                Some(choice) => {
                    match serde_json::from_value::<ApprovalChoice>(Value::String(choice.to_owned()))
                    {
                        Ok(choice) => return card.answer(choice),
                        Err(_) => format!(
                            "`{choice}` is not an approval choice (allow, allow_for_session, always_allow, deny)"
                        ),
                    }
                }
                None => format!(
                    "expected an approval answer like {{\"approval\": \"allow\"}} for the card, not {item}"
                ),
            },
            Next::Script(None) => {
                "the --answers file has no element left for this approval card".to_owned()
            }
            Next::Nowhere(why) => why.to_owned(),
        };
        self.inner.failed.store(true, Ordering::SeqCst);
        eprintln!(
            "formwork: approval {number} ({}): {}; the card is cancelled",
            terminal::inert(&card.message),
            terminal::inert_message(&reason)
        );
        card.cancel(&reason)
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

/// Counts a form as open while it lives.
struct Open<'a>(&'a AtomicUsize);

impl Drop for Open<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
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
        if let Some(reason) = &self.gate {
            eprintln!(
                "formwork: form {number} from {} declined by policy: {reason}",
                terminal::inert(&prompt.plugin)
            );
            tracing::info!(target: "formwork::policy", marker = "policy-decision", plugin = %prompt.plugin, %reason, "form declined by policy");
            return FormReply::decline();
        }
        // One command is one tool call: its forms are the session's too.
        let open = self.open.fetch_add(1, Ordering::SeqCst);
        let _open = Open(&self.open);
        if let Err(refused) = policy::form_gate(&self.forms, &prompt.request, open, open) {
            eprintln!(
                "formwork: form {number} from {}: {}",
                terminal::inert(&prompt.plugin),
                terminal::inert_message(&refused.to_string())
            );
            tracing::info!(target: "formwork::policy", marker = "policy-decision", plugin = %prompt.plugin, reason = %refused, "form declined");
            return FormReply::decline();
        }
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
            Scripted::Accept { content, meta } => match (&prompt.request, prompt.request.form()) {
                (ElicitationRequest::Url(request), _) => {
                    eprintln!(
                        "formwork: form {number}: accepted the URL {} (domain {}); open it yourself",
                        terminal::inert(&request.url),
                        terminal::inert(&request.domain)
                    );
                    for warning in &request.warnings {
                        eprintln!("formwork: form {number}: warning: {}", warning.message());
                    }
                    (FormReply::accept_url(), meta)
                }
                (ElicitationRequest::Form(_), None) => {
                    return self.fail(number, "the form came without its schema");
                }
                (ElicitationRequest::Form(_), Some(form)) => match complete(form, &content) {
                    Ok(content) if let Some(warning) = terminal::secret_warning(form) => {
                        eprintln!("formwork: form {number}: {warning}");
                        (FormReply::accept(content), meta)
                    }
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
            .map(|error| {
                format!(
                    "  {}: {}",
                    terminal::inert(&error.field),
                    terminal::inert(&error.message)
                )
            })
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
