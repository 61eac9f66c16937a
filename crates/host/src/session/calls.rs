//! Tool calls of a session: turns, approval before the call, the plugin connection.

use std::path::PathBuf;
use std::sync::Arc;

use formwork_forms::JsonText;
use serde_json::Value;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use crate::config::Transport;
use crate::persist::Sent;
use crate::plugin::{InputRound, PluginEnv, PluginTarget, Resume};
use crate::policy::{
    self, ApprovalAnswer, ApprovalCard, ApprovalNeed, ApprovalRequest, CardRendering,
};
use crate::store::InvocationRecord;

use super::apps::TooManyAppCards;
use super::cards::{Card, approval_body};
use super::connections::Connection;
use super::model_turn::CallEnd;
use super::wire::Event;
use super::{CommandError, EndReason, HostInner, Session, SessionState, Turn, TurnEndReason};

/// Why a session's tool call ended without a result; its text is the call's error, as the
/// transcript and the model read it.
#[derive(Debug, thiserror::Error)]
pub(super) enum CallError {
    /// The host stopped while the call ran.
    #[error("{}", EndReason::HostStopped)]
    HostStopped,
    /// The person stopped the turn.
    #[error("the turn was {}", EndReason::Stopped)]
    TurnStopped,
    /// The host is shutting down.
    #[error("the host is shutting down")]
    ShuttingDown,
    /// The plugin could not be reached, or the call failed there.
    #[error(transparent)]
    Plugin(#[from] crate::HostError),
    /// The plugin refused a form pushed on its protocol: its error, and the fix offered.
    #[error("{error}; {fix}")]
    PushRefused {
        error: crate::HostError,
        fix: String,
    },
    /// The model may not call a tool only the plugin's app sees.
    #[error(
        "`{0}` is a tool for the plugin's app only (its `_meta.ui.visibility` lacks \"model\")"
    )]
    AppOnly(String),
    /// The approval policy fails the call: its message.
    #[error("{0}")]
    Policy(String),
    /// The app asking has as many cards waiting as it may.
    #[error(transparent)]
    TooManyAppCards(#[from] TooManyAppCards),
    /// The person denied the call, or its card was cancelled: the message saying which.
    #[error("{0}")]
    NotApproved(&'static str),
    /// The call through Codex failed: Codex's message.
    #[error("{0}")]
    Codex(String),
}

/// Who starts a call.
pub(super) enum Caller {
    /// The person, from the palette.
    Person,
    /// The model, told how the call ended.
    Model(oneshot::Sender<CallEnd>),
}

/// A call the approval policy decides on.
#[derive(Clone, Copy)]
pub(super) struct ApprovedCall<'a> {
    pub(super) server: &'a str,
    pub(super) call_id: &'a str,
    pub(super) tool: &'a str,
    /// The tool's listing, `null` when the plugin does not list it.
    pub(super) listed: &'a Value,
    pub(super) arguments: Option<&'a Value>,
}

/// The app behind a call: the invocation that opened it, and how a card names it.
pub(super) struct AskingApp<'a> {
    pub(super) invocation: &'a str,
    /// `The app of <server> · <tool>`.
    pub(super) title: String,
}

impl Session {
    /// Starts a tool call in the background and returns its id.
    pub(super) fn call_tool(
        self: &Arc<Self>,
        server: &str,
        tool: &str,
        arguments: Option<Value>,
    ) -> Result<String, CommandError> {
        self.start_call(server, tool, arguments, Caller::Person)
    }

    /// [`Session::call_tool`] for `caller`; a model is told how the call ended once it has.
    pub(super) fn start_call(
        self: &Arc<Self>,
        server: &str,
        tool: &str,
        arguments: Option<Value>,
        caller: Caller,
    ) -> Result<String, CommandError> {
        let host = self
            .host
            .upgrade()
            .ok_or_else(|| CommandError::NoSession(self.id.clone()))?;
        let target = host.target(server)?;
        let call_id = self.new_id("c");
        // Cancelled when the turn stops, and with the host: one wait in the call's task.
        let token = host.stopping.child_token();
        // Shared by the transcript's event and the call, which waits as long as the person takes.
        let arguments = arguments.map(|arguments| JsonText::new(&arguments));
        {
            let mut state = self.lock();
            let turn = self.turn_locked(&mut state);
            turn.calls.insert(call_id.clone(), token.clone());
            if matches!(caller, Caller::Model(_)) {
                turn.model_calls.push(call_id.clone());
            }
            self.emit_locked(
                &mut state,
                Event::ToolCallStarted {
                    call_id: call_id.clone(),
                    server: server.to_owned(),
                    tool: tool.to_owned(),
                    arguments: arguments
                        .clone()
                        .unwrap_or_else(|| JsonText::new(&Value::Object(Default::default()))),
                    asked_by: None,
                },
            );
        }
        let session = Arc::clone(self);
        let tool = tool.to_owned();
        let server = server.to_owned();
        let id = call_id.clone();
        let done = match caller {
            Caller::Model(done) => Some(done),
            Caller::Person => None,
        };
        tokio::spawn(async move {
            let outcome = tokio::select! {
                biased;
                () = token.cancelled() => Err(match session.host_is_stopping() {
                    true => CallError::HostStopped,
                    false => CallError::TurnStopped,
                }),
                outcome = session.run_call(&server, &target, &id, &tool, arguments) => outcome,
            };
            let (result, error) = match outcome {
                Ok(result) => (Some(result), None),
                Err(error) => (None, Some(error.to_string())),
            };
            let end = done.as_ref().map(|_| CallEnd {
                result: result.clone(),
                error: error.clone(),
            });
            session.finish_call(&id, result, error);
            if let (Some(done), Some(end)) = (done, end) {
                let _ = done.send(end);
            }
        });
        Ok(call_id)
    }

    /// Whether the host is stopping (or gone): what ended a call whose token fired.
    fn host_is_stopping(&self) -> bool {
        self.host
            .upgrade()
            .is_none_or(|host| host.stopping.is_cancelled())
    }

    /// The running turn, started (and announced) if there is none.
    pub(super) fn turn_locked<'a>(&self, state: &'a mut SessionState) -> &'a mut Turn {
        if state.turn.is_none() {
            let turn_id = self.new_id("t");
            self.emit_locked(
                state,
                Event::TurnStarted {
                    turn_id: turn_id.clone(),
                },
            );
            state.turn = Some(Turn {
                id: turn_id,
                ..Turn::default()
            });
        }
        state.turn.get_or_insert_with(Turn::default)
    }

    /// Carries on `call`, which a stopped replica began, from the retry of its last round
    /// (`resume`), as a call of this host: it joins the turn, and ends as any call does.
    pub(super) fn resume_call(self: &Arc<Self>, call: InvocationRecord, resume: Resume) {
        let Some(host) = self.host.upgrade() else {
            return;
        };
        let token = CancellationToken::new();
        {
            let mut state = self.lock();
            let turn = self.turn_locked(&mut state);
            turn.calls.insert(call.id.clone(), token.clone());
        }
        let session = Arc::clone(self);
        let stopping = host.stopping.clone();
        tokio::spawn(async move {
            let outcome = tokio::select! {
                biased;
                () = stopping.cancelled() => Err(CallError::HostStopped),
                () = token.cancelled() => Err(CallError::TurnStopped),
                outcome = session.run_resumed(&call, resume) => outcome,
            };
            let (result, error) = match outcome {
                Ok(result) => (Some(result), None),
                Err(error) => (None, Some(error.to_string())),
            };
            session.finish_call(&call.id, result, error);
        });
    }

    async fn run_resumed(
        self: &Arc<Self>,
        call: &InvocationRecord,
        resume: Resume,
    ) -> Result<Value, CallError> {
        let host = self.host.upgrade().ok_or(CallError::ShuttingDown)?;
        let target = host
            .target(&call.server)
            .map_err(|err| crate::HostError::Connect {
                target: call.server.clone(),
                reason: err.to_string(),
            })?;
        let connection = Box::pin(self.connection(&call.server, &target)).await?;
        let (request, _route) = connection.route(self, &call.id);
        let arguments = call
            .arguments
            .as_deref()
            .and_then(|arguments| serde_json::from_str(arguments.get()).ok());
        let on_round = |round: &InputRound| self.record_round(&call.id, round);
        Ok(connection
            .plugin
            .resume_tool_rounds(request, &call.tool, arguments, resume, &on_round)
            .await?)
    }

    /// Records a round of the call: the event, and the round's `requestState` for the store.
    pub(super) fn record_round(&self, call_id: &str, round: &InputRound) {
        let event = Event::ToolCallRound {
            call_id: call_id.to_owned(),
            round: round.round,
            asked: round.keys.clone(),
            request_state: round.state.is_some(),
        };
        match &round.state {
            Some(state) => self.emit_sent(event, Sent::RoundState(state.clone())),
            None => self.emit(event),
        }
    }

    /// Connects, applies the approval policy (maybe asking the person), then calls the tool.
    ///
    /// An `async` block, not an `async fn`, which would keep a second copy of its arguments for
    /// as long as the call waits.
    #[expect(
        clippy::manual_async_fn,
        reason = "an `async fn` keeps a second copy of its arguments while it waits"
    )]
    pub(super) fn run_call(
        self: &Arc<Self>,
        server: &str,
        target: &PluginTarget,
        call_id: &str,
        tool: &str,
        arguments: Option<JsonText>,
    ) -> impl Future<Output = Result<Value, CallError>> + Send {
        async move {
            if self
                .host
                .upgrade()
                .is_some_and(|host| host.options.codex.is_some())
            {
                // Boxed: held inline, the Codex path would make every call's task its size.
                let arguments = arguments.as_ref().map(JsonText::to_value);
                return Box::pin(self.run_codex_call(server, call_id, tool, arguments))
                    .await
                    .map_err(CallError::Codex);
            }
            // Everything before the call is boxed and gone once it is done: the call's own wait,
            // which may last as long as a person takes, holds only what it needs. An app card
            // only for a call whose tool, or else result, declares a UI.
            let (connection, mut declared) =
                Box::pin(self.prepare_call(server, target, call_id, tool, arguments.as_ref()))
                    .await?;
            if let Some(resource_uri) = &declared {
                self.emit(Event::ToolCallApp {
                    call_id: call_id.to_owned(),
                    resource_uri: resource_uri.clone(),
                });
            }
            let (request, _route) = connection.route(self, call_id);
            let era = connection.plugin.server_info().era;
            let on_round = |round: &InputRound| self.record_round(call_id, round);
            let result = match connection
                .plugin
                .call_tool_rounds(
                    request,
                    tool,
                    arguments.as_ref().map(JsonText::to_value),
                    &on_round,
                )
                .await
            {
                Ok(result) => result,
                Err(err) => {
                    return Err(match crate::plugin::push_refusal(era, &err.to_string()) {
                        Some(_) => CallError::PushRefused {
                            fix: self.offer_older_protocol(call_id, server),
                            error: err,
                        },
                        None => CallError::Plugin(err),
                    });
                }
            };
            if crate::plugin::push_refusal_in_result(era, &result).is_some() {
                let fix = self.offer_older_protocol(call_id, server);
                self.diagnostic("push-form-on-2026", fix);
            }
            if declared.is_none() {
                declared = crate::apps::declared_ui(None, Some(&result));
                if let Some(resource_uri) = declared {
                    self.emit(Event::ToolCallApp {
                        call_id: call_id.to_owned(),
                        resource_uri,
                    });
                }
            }
            Ok(result)
        }
    }

    /// The connection for a call the policy allows, once any approval card was answered, and
    /// the app its listing declares (the listing itself is not kept: the call may wait as long
    /// as a person takes).
    async fn prepare_call(
        self: &Arc<Self>,
        server: &str,
        target: &PluginTarget,
        call_id: &str,
        tool: &str,
        arguments: Option<&JsonText>,
    ) -> Result<(Connection, Option<String>), CallError> {
        let arguments = arguments.map(JsonText::to_value);
        let connection = Box::pin(self.connection(server, target)).await?;
        let plugin = &connection.plugin;
        let host = self.host.upgrade().ok_or(CallError::ShuttingDown)?;
        // Listed once per connection (until the plugin says its tools changed): its
        // annotations, its visibility and its app.
        let listed = Box::pin(plugin.listed_tool(tool))
            .await
            .unwrap_or(Value::Null);
        let call = ApprovedCall {
            server,
            call_id,
            tool,
            listed: &listed,
            arguments: arguments.as_ref(),
        };
        Box::pin(self.approve_call(&host, &call, None)).await?;
        Ok((connection, crate::apps::declared_ui(Some(&listed), None)))
    }

    /// Applies the approval policy to `call`: runs at once, fails, or asks the person with an
    /// approval card first. `app` is the app that asks, for an app's call of a tool of its own
    /// server: as the invocation that opened it and how the card names it.
    pub(super) async fn approve_call(
        &self,
        host: &HostInner,
        call: &ApprovedCall<'_>,
        app: Option<&AskingApp<'_>>,
    ) -> Result<(), CallError> {
        let ApprovedCall {
            server,
            call_id,
            tool,
            listed,
            arguments,
        } = *call;
        let config = host.config();
        let annotations = listed.get("annotations");
        let verdict = match app {
            Some(_) => policy::app_tool_approval(&config, server, tool, annotations),
            None if !listed.is_null() && !crate::apps::visibility(listed).model => {
                return Err(CallError::AppOnly(tool.to_owned()));
            }
            None => policy::tool_approval(&config, server, tool, annotations),
        };
        let verdict = {
            let state = self.lock();
            let read_from: Vec<String> = state
                .turn
                .as_ref()
                .filter(|turn| turn.model_calls.iter().any(|call| call == call_id))
                .map(|turn| {
                    turn.read_from
                        .iter()
                        .filter(|other| *other != server)
                        .cloned()
                        .collect()
                })
                .unwrap_or_default();
            let verdict = verdict.after_reading(&read_from, &config);
            match state.approvals.get() {
                Some(approvals) => approvals.apply(verdict),
                None => verdict,
            }
        };
        tracing::info!(target: "formwork::policy", marker = "policy-decision", session = %self.id, server, tool, reason = %verdict.reason, "tool approval");
        match &verdict.need {
            ApprovalNeed::Run => Ok(()),
            ApprovalNeed::Fail(message) => Err(CallError::Policy(message.clone())),
            ApprovalNeed::Card(_) => {
                let request = ApprovalRequest {
                    call_id,
                    tool_title: listed.get("title").and_then(Value::as_str),
                    tool_description: listed.get("description").and_then(Value::as_str),
                    arguments,
                };
                let Some(mut card) = verdict.card(&request) else {
                    return Ok(());
                };
                let _waiting = match app {
                    Some(app) => {
                        card.message = format!("{} asks. {}", app.title, card.message);
                        Some(self.app_card_slot(app.invocation)?)
                    }
                    None => None,
                };
                let answer = self
                    .ask_approval(call_id, card.clone(), policy::card_rendering(&config))
                    .await;
                self.settle_approval(host, &card, &answer);
                match answer.failure_message() {
                    Some(message) => Err(CallError::NotApproved(message)),
                    None => Ok(()),
                }
            }
        }
    }

    /// Shows the approval card and waits for the person.
    pub(super) async fn ask_approval(
        &self,
        call_id: &str,
        card: ApprovalCard,
        rendering: CardRendering,
    ) -> ApprovalAnswer {
        self.push_approval(Some(call_id), card, rendering).1.await
    }

    /// Shows the approval card now; gives its id and the person's answer to come.
    pub(super) fn push_approval(
        &self,
        call_id: Option<&str>,
        card: ApprovalCard,
        rendering: CardRendering,
    ) -> (String, impl Future<Output = ApprovalAnswer> + use<>) {
        let approval_id = self.new_id("a");
        let body = approval_body(&card, rendering);
        let (card, answer) = Card::approval(
            approval_id.clone(),
            call_id.map(str::to_owned),
            card,
            body,
            EndReason::Stopped,
        );
        self.push_card(card, None);
        (approval_id, answer)
    }

    /// Remembers what the answer allows beyond this call.
    pub(super) fn settle_approval(
        &self,
        host: &HostInner,
        card: &ApprovalCard,
        answer: &ApprovalAnswer,
    ) {
        tracing::info!(target: "formwork::policy", marker = "answer", session = %self.id, reason = %answer.reason, "approval answered");
        self.lock().approvals.made().record(card, answer);
        if !answer.writes_config() {
            return;
        }
        let config = host.config();
        // The card offers Always allow only when there is such a file.
        let Some(path) = config.remember_file(&card.server) else {
            self.diagnostic(
                "always-allow-not-saved",
                format!(
                    "Always allow could not be written: no file formwork writes holds {}",
                    crate::config::dotted(["mcp_servers", &card.server])
                ),
            );
            return;
        };
        let written = crate::config::remember_always_allow(&path, &card.server, &card.tool)
            .and_then(|_| config.reload());
        match written {
            Ok(config) => {
                if let Ok(mut slot) = host.config.write() {
                    *slot = Arc::new(config);
                }
            }
            Err(err) => self.diagnostic(
                "always-allow-not-saved",
                format!("Always allow could not be written: {err}"),
            ),
        }
    }

    pub(super) fn finish_call(&self, call_id: &str, result: Option<Value>, error: Option<String>) {
        // A form of a call that has ended can change nothing: it ends too, before the call.
        let orphans = self.lock().cards.forms_of_call(call_id);
        for form_id in orphans {
            self.end_card(&form_id, EndReason::CallEnded);
        }
        let mut state = self.lock();
        self.emit_locked(
            &mut state,
            Event::ToolCallFinished {
                call_id: call_id.to_owned(),
                result,
                error,
            },
        );
        let turn_over = match state.turn.as_mut() {
            Some(turn) => {
                turn.calls.remove(call_id);
                turn.calls.is_empty()
            }
            None => false,
        };
        if turn_over && let Some(turn) = state.turn.take() {
            let reason = if turn.stopped {
                TurnEndReason::Stopped
            } else {
                TurnEndReason::Completed
            };
            self.emit_locked(
                &mut state,
                Event::TurnEnded {
                    turn_id: turn.id,
                    reason,
                },
            );
        }
    }

    /// Cancels the turn's forms and abandons its calls; the turn ends when they have.
    pub(super) fn stop_turn(&self) {
        self.cancel_cards(EndReason::Stopped);
        let mut state = self.lock();
        if let Some(model) = state.model.get().and_then(|model| model.current.as_ref()) {
            model.cancel();
        }
        if let Some(turn) = state.turn.as_mut() {
            turn.stopped = true;
            for token in turn.calls.values() {
                token.cancel();
            }
        }
    }
}

/// How to reach a configured server. Built-in servers run as `builtin_exe` (the formwork
/// binary; the current executable when `None`) with their arguments.
pub fn server_target(transport: &Transport, builtin_exe: Option<&std::path::Path>) -> PluginTarget {
    match transport {
        Transport::Stdio {
            command,
            args,
            env,
            env_vars,
            cwd,
        } => {
            let mut line = String::new();
            if let Some(cwd) = cwd {
                line.push_str(&format!(
                    "cd {} && ",
                    shell_quote(&cwd.display().to_string())
                ));
            }
            line.push_str(&format!("exec {}", shell_quote(command)));
            for arg in args {
                line.push_str(&format!(" {}", shell_quote(arg)));
            }
            PluginTarget::Command {
                line,
                env: PluginEnv {
                    set: env.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
                    pass: env_vars.clone(),
                },
            }
        }
        Transport::StreamableHttp { url, .. } => PluginTarget::Url(url.clone()),
        Transport::Builtin { args } => {
            let exe = builtin_exe
                .map(std::path::Path::to_path_buf)
                .or_else(|| std::env::current_exe().ok())
                .unwrap_or_else(|| PathBuf::from("formwork"));
            let mut line = format!("exec {}", shell_quote(&exe.display().to_string()));
            for arg in args {
                line.push_str(&format!(" {}", shell_quote(arg)));
            }
            PluginTarget::command(line)
        }
    }
}

/// Quotes a word for `sh -c`.
fn shell_quote(word: &str) -> String {
    format!("'{}'", word.replace('\'', r"'\''"))
}
