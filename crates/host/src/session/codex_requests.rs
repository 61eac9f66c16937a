//! Codex's requests to formwork, as cards: a plugin's form (`mcpServer/elicitation/request`)
//! takes the road of a direct plugin's form (form engine, gate, queue, card); the model's own
//! questions are a form card too (never one asking a secret); Codex's tool approvals and its
//! command, file-change and permissions approvals are approval cards. Each card is made when
//! the request arrives, so cards keep Codex's order, and answered in Codex's shape once the
//! person answers. A request another client answered first (`serverRequest/resolved`) ends its
//! card and is not answered again.

use std::sync::Arc;

use formwork_forms::{ParseOptions, RequestText};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::config::ApprovalMode;
use crate::jsonrpc::{RawId, code};
use crate::policy::{
    self, APPROVAL_ID_PREFIX, ApprovalAnswer, ApprovalCard, ApprovalChoice, RememberOffers,
};
use crate::responder::{FormAction, FormPrompt, FormReply};
use crate::runtime::codex::AppServer;
use crate::runtime::codex::protocol::{self, ApprovalAskedAs, ServerRequest, ToolApprovalAsk};

use super::cards::Asker;
use super::codex::{CODEX_SERVER, CodexLink, OpenRequest};
use super::{EndReason, Session};

/// The id prefix of the cards of Codex's own work (commands, file changes, permissions), beside
/// [`APPROVAL_ID_PREFIX`] of tool calls.
const WORK_APPROVAL_ID_PREFIX: &str = "codex_approval_";

/// Answers a request formwork does not serve, so Codex never waits on it.
pub(super) fn refuse(server: &AppServer, id: &RawId, method: &str, why: &str) {
    if method == protocol::ELICITATION_REQUEST {
        server.respond(id, &protocol::elicitation_answer("decline", None, None));
    } else {
        server.respond_error(
            id,
            code::METHOD_NOT_FOUND,
            &format!("formwork does not serve {method}: {why}"),
        );
    }
}

impl Session {
    /// A request of Codex's: a card now, the answer once the person gives it.
    pub(super) fn on_codex_request(
        self: &Arc<Self>,
        link: &Arc<CodexLink>,
        id: RawId,
        method: &str,
        params: &Value,
    ) {
        match protocol::read_request(method, params) {
            ServerRequest::Form {
                server,
                turn,
                params,
            } => {
                tracing::info!(target: "formwork::codex", marker = "codex-elicitation-received", session = %self.id, plugin = %server, id = %id, turn = turn.as_deref().unwrap_or("none"), "mcpServer/elicitation/request received");
                if turn.is_none() && !self.codex_runs(&server) {
                    self.plugin_diagnostic(
                        "elicitation-outside-turn",
                        format!("{server} asked for a form while no tool call of this session was running; declined"),
                    );
                    link.server
                        .respond(&id, &protocol::elicitation_answer("decline", None, None));
                    return;
                }
                let openai = self
                    .host
                    .upgrade()
                    .is_some_and(|host| host.config().features.openai_elicitation);
                let call_id = self.codex_call_of(&server);
                self.form_card(
                    link,
                    id,
                    &server,
                    params,
                    ParseOptions {
                        openai_elicitation: openai,
                    },
                    call_id,
                    Asker::Plugin,
                    |reply| {
                        let content = reply
                            .content
                            .filter(|_| reply.action == FormAction::Accept)
                            .map(Value::Object);
                        protocol::elicitation_answer(
                            reply.action.as_str(),
                            content,
                            reply.meta.map(Value::Object),
                        )
                    },
                );
            }
            ServerRequest::Questions { questions } => {
                let secrets = protocol::secret_questions(&questions);
                if !secrets.is_empty() {
                    self.plugin_diagnostic(
                        "form-declined",
                        format!(
                            "Codex asked for a secret ({}); secrets are never asked in a card, so nothing was answered",
                            secrets.join(", ")
                        ),
                    );
                    link.server.respond(&id, &protocol::questions_answer(None));
                    return;
                }
                let params = json!({
                    "mode": "form",
                    "message": "Codex asks",
                    "requestedSchema": protocol::questions_schema(&questions),
                });
                // formwork's own rendering of Codex's questions, so its vocabulary is read.
                let parse = ParseOptions {
                    openai_elicitation: true,
                };
                self.form_card(
                    link,
                    id,
                    CODEX_SERVER,
                    params,
                    parse,
                    None,
                    Asker::Model,
                    |reply| protocol::questions_answer(reply.content.as_ref()),
                );
            }
            ServerRequest::ToolApproval(ask) => self.tool_approval(link, id, ask, params),
            ServerRequest::Command {
                command,
                cwd,
                reason: why,
            } => {
                let mut message = match (&command, &cwd) {
                    (Some(command), Some(cwd)) => {
                        format!("Allow Codex to run `{command}` in {cwd}?")
                    }
                    (Some(command), None) => format!("Allow Codex to run `{command}`?"),
                    _ => "Allow Codex to run a command?".to_owned(),
                };
                if let Some(why) = why {
                    message.push_str(&format!(" ({why})"));
                }
                let arguments = json!({ "command": command, "cwd": cwd });
                self.work_approval(
                    link,
                    id,
                    params,
                    "command",
                    message,
                    arguments,
                    |answer| json!({ "decision": work_decision(answer) }),
                );
            }
            ServerRequest::FileChange {
                reason: why,
                grant_root,
            } => {
                let mut message = match &grant_root {
                    Some(root) => format!("Allow Codex to write under {root} for this session?"),
                    None => "Allow Codex to change files?".to_owned(),
                };
                if let Some(why) = why {
                    message.push_str(&format!(" ({why})"));
                }
                let arguments = json!({ "grantRoot": grant_root });
                self.work_approval(
                    link,
                    id,
                    params,
                    "file_change",
                    message,
                    arguments,
                    |answer| json!({ "decision": work_decision(answer) }),
                );
            }
            ServerRequest::Permissions {
                reason: why,
                permissions,
            } => {
                let mut message = format!(
                    "Allow Codex {}?",
                    protocol::permissions_summary(&permissions)
                );
                if let Some(why) = why {
                    message.push_str(&format!(" ({why})"));
                }
                let arguments = permissions.clone();
                self.work_approval(
                    link,
                    id,
                    params,
                    "permissions",
                    message,
                    arguments,
                    move |answer| {
                        let granted = !answer.cancelled && answer.choice != ApprovalChoice::Deny;
                        let for_session = matches!(
                            answer.choice,
                            ApprovalChoice::AllowForSession | ApprovalChoice::AlwaysAllow
                        );
                        protocol::permissions_answer(&permissions, granted, for_session)
                    },
                );
            }
            ServerRequest::Unsupported => {
                tracing::info!(target: "formwork::codex", session = %self.id, method, "a request formwork does not serve; refused");
                refuse(&link.server, &id, method, "formwork has no such card");
            }
        }
    }

    /// A form card for `params` (MCP `elicitation/create` params) from `server`, answered with
    /// what `respond` makes of the person's reply (checked against the form once more).
    #[allow(clippy::too_many_arguments)]
    fn form_card(
        self: &Arc<Self>,
        link: &Arc<CodexLink>,
        id: RawId,
        server: &str,
        params: Value,
        parse: ParseOptions,
        call_id: Option<String>,
        asker: Asker,
        respond: impl FnOnce(FormReply) -> Value + Send + 'static,
    ) {
        let (request, text) = match RequestText::read(&params, parse) {
            Ok(read) => read,
            Err(decline) => {
                tracing::info!(target: "formwork::codex", marker = "codex-elicitation-declined", session = %self.id, plugin = %server, id = %id, reason = %decline, "codex's request declined: it cannot be shown");
                self.plugin_diagnostic(
                    "form-declined",
                    format!("{server}: the form could not be shown: {decline}"),
                );
                link.server.respond(&id, &respond(FormReply::decline()));
                return;
            }
        };
        let form = request.form().cloned();
        let resolved = CancellationToken::new();
        let prompt = FormPrompt {
            plugin: server.to_owned(),
            request_id: id.to_value(),
            call_request: None,
            params: text,
            request,
            url_completed: None,
            cancelled: resolved.clone(),
        };
        let (card, reply) = self.ask_card(server, prompt, call_id, asker);
        if let Some(card) = &card {
            tracing::info!(target: "formwork::codex", marker = "codex-elicitation-forwarded", session = %self.id, plugin = %server, id = %id, form = %card, "codex's request forwarded to a card");
        }
        let key = (link.generation, id.clone());
        self.track(&key, card, resolved);
        let session = Arc::clone(self);
        let server = server.to_owned();
        let app_server = Arc::clone(&link.server);
        tokio::spawn(async move {
            let reply = reply.await;
            if !session.untrack(&key) {
                return;
            }
            let reply = checked(reply, form.as_deref());
            let action = reply.action;
            app_server.respond(&id, &respond(reply));
            tracing::info!(target: "formwork::codex", marker = "codex-elicitation-answered", session = %session.id, plugin = %server, id = %id, action = action.as_str(), "codex's request answered");
        });
    }

    /// Codex asks whether an MCP tool call may run: an approval card of the call, answered in
    /// the rendering Codex asked in, with `persist` for the remember-options it offered.
    fn tool_approval(
        self: &Arc<Self>,
        link: &Arc<CodexLink>,
        id: RawId,
        ask: ToolApprovalAsk,
        params: &Value,
    ) {
        tracing::info!(target: "formwork::codex", marker = "codex-approval-received", session = %self.id, plugin = %ask.server, id = %id, "codex asks for a tool approval");
        let call_id = self
            .call_of_item(params)
            .or_else(|| self.codex_call_of(&ask.server));
        let card = ApprovalCard {
            id: format!(
                "{APPROVAL_ID_PREFIX}{}",
                call_id.clone().unwrap_or_else(|| id_text(&id))
            ),
            server: ask.server.clone(),
            tool: ask.tool.clone().unwrap_or_default(),
            mode: if ask.session || ask.always {
                ApprovalMode::Auto
            } else {
                ApprovalMode::Prompt
            },
            offers: RememberOffers {
                session: ask.session,
                // Always allow names the tool in formwork's config: not offered without one.
                always: ask.always && ask.tool.is_some(),
            },
            message: ask.message.clone(),
            tool_title: None,
            tool_description: ask.tool_description.clone(),
            arguments: ask.arguments.clone().unwrap_or_else(|| json!({})),
        };
        self.approval_card(link, id, call_id, card, true, move |answer| {
            match &ask.asked_as {
                ApprovalAskedAs::Form => {
                    let (action, persist) = match (answer.choice, answer.cancelled) {
                        (_, true) => ("cancel", None),
                        (ApprovalChoice::Deny, false) => ("decline", None),
                        (ApprovalChoice::Allow, _) => ("accept", None),
                        (ApprovalChoice::AllowForSession, _) => ("accept", Some("session")),
                        (ApprovalChoice::AlwaysAllow, _) => ("accept", Some("always")),
                    };
                    let meta = persist.map(|persist| json!({ "persist": persist }));
                    let content = (action == "accept").then(|| json!({}));
                    protocol::elicitation_answer(action, content, meta)
                }
                ApprovalAskedAs::Question(question) => {
                    // Codex's question offers no refusal of its own: a Deny is its Cancel.
                    let label = match (answer.choice, answer.cancelled) {
                        (_, true) | (ApprovalChoice::Deny, false) => "Cancel",
                        (ApprovalChoice::Allow, _) => "Allow",
                        (ApprovalChoice::AllowForSession, _) => "Allow for this session",
                        (ApprovalChoice::AlwaysAllow, _) => "Allow and don't ask me again",
                    };
                    json!({ "answers": { question: { "answers": [label] } } })
                }
            }
        });
    }

    /// Codex asks whether its own work (a command, a file change, more permissions) may go
    /// ahead: allowed once or for the session, never remembered by formwork.
    #[allow(clippy::too_many_arguments)]
    fn work_approval(
        self: &Arc<Self>,
        link: &Arc<CodexLink>,
        id: RawId,
        params: &Value,
        what: &str,
        message: String,
        arguments: Value,
        respond: impl FnOnce(&ApprovalAnswer) -> Value + Send + 'static,
    ) {
        let call_id = self.call_of_item(params);
        let card = ApprovalCard {
            id: format!(
                "{WORK_APPROVAL_ID_PREFIX}{}",
                call_id.clone().unwrap_or_else(|| id_text(&id))
            ),
            server: CODEX_SERVER.to_owned(),
            tool: what.to_owned(),
            mode: ApprovalMode::Auto,
            offers: RememberOffers {
                session: true,
                always: false,
            },
            message,
            tool_title: None,
            tool_description: None,
            arguments,
        };
        self.approval_card(link, id, call_id, card, false, respond);
    }

    /// An approval card, answered with what `respond` makes of the person's answer; `settle`:
    /// the answer is remembered as formwork's own approvals are (for this session, or written
    /// to formwork's config for Always allow; Codex keeps its own `persist` itself).
    fn approval_card(
        self: &Arc<Self>,
        link: &Arc<CodexLink>,
        id: RawId,
        call_id: Option<String>,
        card: ApprovalCard,
        settle: bool,
        respond: impl FnOnce(&ApprovalAnswer) -> Value + Send + 'static,
    ) {
        let Some(host) = self.host.upgrade() else {
            return;
        };
        let rendering = policy::card_rendering(&host.config());
        let (approval, answer) = self.push_approval(call_id.as_deref(), card.clone(), rendering);
        let resolved = CancellationToken::new();
        let key = (link.generation, id.clone());
        self.track(&key, Some(approval), resolved.clone());
        let session = Arc::clone(self);
        let app_server = Arc::clone(&link.server);
        tokio::spawn(async move {
            let answer = tokio::select! {
                answer = answer => answer,
                () = resolved.cancelled() => card.cancel(EndReason::AnsweredElsewhere.as_str()),
            };
            if !session.untrack(&key) {
                return;
            }
            app_server.respond(&id, &respond(&answer));
            tracing::info!(target: "formwork::codex", marker = "codex-approval-answered", session = %session.id, id = %id, choice = answer.choice.as_str(), cancelled = answer.cancelled, "codex's approval answered");
            if settle && let Some(host) = session.host.upgrade() {
                session.settle_approval(&host, &card, &answer);
            }
        });
    }

    /// The formwork call of the item a request names (`itemId`), if it is shown as one.
    fn call_of_item(&self, params: &Value) -> Option<String> {
        let item = params.get("itemId").and_then(Value::as_str)?;
        self.lock()
            .codex
            .made()
            .items
            .get(item)
            .map(|(call, _)| call.clone())
    }

    fn track(&self, key: &(u64, RawId), card: Option<String>, resolved: CancellationToken) {
        self.lock()
            .codex
            .made()
            .open
            .insert(key.clone(), OpenRequest { card, resolved });
    }

    /// Stops tracking a request about to be answered; `false` when another client answered it
    /// first (then nothing is sent).
    fn untrack(&self, key: &(u64, RawId)) -> bool {
        self.lock().codex.made().open.remove(key).is_some()
    }
}

/// A request id as text, to name a card of no call by.
fn id_text(id: &RawId) -> String {
    match id.to_value() {
        Value::String(text) => text,
        other => other.to_string(),
    }
}

/// The `decision` of a command or file-change approval.
fn work_decision(answer: &ApprovalAnswer) -> &'static str {
    match (answer.choice, answer.cancelled) {
        (_, true) => "cancel",
        (ApprovalChoice::Deny, false) => "decline",
        (ApprovalChoice::AllowForSession | ApprovalChoice::AlwaysAllow, _) => "acceptForSession",
        (ApprovalChoice::Allow, _) => "accept",
    }
}

/// The last guard before content reaches Codex: accepted content must validate.
fn checked(reply: FormReply, form: Option<&formwork_forms::Form>) -> FormReply {
    match (reply.action, form, &reply.content) {
        (FormAction::Accept, Some(form), Some(content)) if form.validate(content).is_err() => {
            tracing::error!(target: "formwork::codex", "an accepted answer does not validate; sending cancel");
            FormReply::cancel()
        }
        _ => reply,
    }
}
