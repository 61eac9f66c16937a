//! A turn of the model. The person's message starts it; the model's answer streams into the
//! transcript (`message_delta`, then `message_added`); each function call it makes runs as a
//! tool call of the session, under the approval policy, with its forms, approvals and rounds as
//! any call has them; the outputs go back to the model, which may call again, until it answers
//! in text. Stop, or a new message, cancels the model's request and the turn's calls.

use std::sync::Arc;

use serde_json::Value;
use tokio::sync::{oneshot, watch};
use tokio_util::sync::CancellationToken;

use super::wire::{Event, Role, TurnEndReason};
use crate::agent::{self, FunctionNames, Item, Progress, Provider, RequestParts};
use crate::config::ModelChoice;
use crate::future::BoxFuture;

use super::Session;
use super::calls::Caller;

/// At most this many model requests in one turn: a model that keeps calling tools ends.
const MAX_STEPS: usize = 32;
/// At most this many calls in one model answer: more is refused whole, since every call may
/// raise a card and each runs at once.
const MAX_CALLS_PER_ANSWER: usize = 16;
/// The model's place among a turn's members (beside its calls): the turn lasts while it runs.
pub(super) const MODEL_MEMBER: &str = "model";

/// The session's side of its model.
#[derive(Default)]
pub(super) struct ModelState {
    /// The conversation as the model knows it.
    pub(super) history: Vec<Item>,
    /// Cancels the model turn in progress, or the one waiting to begin.
    pub(super) current: Option<CancellationToken>,
    /// Turns true when the last turn started is over; the next one waits for it.
    pub(super) ended: Option<watch::Receiver<bool>>,
}

/// How a call the model made ended.
pub(super) struct CallEnd {
    pub result: Option<Value>,
    pub error: Option<String>,
}

#[derive(Clone, Copy, PartialEq)]
pub(super) enum Outcome {
    Completed,
    Stopped,
    Failed,
}

impl Session {
    /// Starts the model's turn for the person's message `text`. A turn still running was
    /// stopped by the caller; this one begins once it is over.
    pub(super) fn start_model_turn(self: &Arc<Self>, choice: ModelChoice, text: String) {
        let session = Arc::clone(self);
        let prologue = async move { session.record(vec![Item::User { text }]).await };
        self.start_turn(prologue, move |session, token| {
            Box::pin(async move { session.model_loop(&choice, &token).await })
        });
    }

    /// Starts a turn of whoever answers messages (the model, or Codex): once the turn before it
    /// is over (the caller stopped it), `prologue` runs, then, unless this turn was stopped in
    /// the meantime, `work` as the turn's model member. A stopping host stops the turn too.
    pub(super) fn start_turn(
        self: &Arc<Self>,
        prologue: impl Future<Output = ()> + Send + 'static,
        work: impl FnOnce(Arc<Session>, CancellationToken) -> BoxFuture<Outcome> + Send + 'static,
    ) {
        let token = match self.host.upgrade() {
            Some(host) => host.stopping.child_token(),
            None => return,
        };
        let (ended_tx, ended_rx) = watch::channel(false);
        let previous = {
            let mut state = self.lock();
            let model = state.model.made();
            model.current = Some(token.clone());
            model.ended.replace(ended_rx)
        };
        let session = Arc::clone(self);
        tokio::spawn(async move {
            if let Some(mut previous) = previous {
                let _ = previous.wait_for(|ended| *ended).await;
            }
            // A stopped turn of the palette ends as soon as its calls have (they end at once):
            // this turn is not part of it.
            let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(5);
            while session
                .lock()
                .turn
                .as_ref()
                .is_some_and(|turn| turn.stopped)
                && tokio::time::Instant::now() < deadline
            {
                tokio::time::sleep(std::time::Duration::from_millis(2)).await;
            }
            // The session's row is written before anything of it.
            session.saved().await;
            prologue.await;
            if !token.is_cancelled() {
                session.begin_model_member(&token);
                let outcome = work(Arc::clone(&session), token.clone()).await;
                session.end_model_member(outcome);
            }
            let _ = ended_tx.send(true);
        });
    }

    /// Restores the model's conversation stored by an earlier host.
    pub(super) fn restore_model_history(&self, stored: Vec<String>) {
        let items: Vec<Item> = stored
            .iter()
            .filter_map(|text| match serde_json::from_str::<Item>(text) {
                Ok(item) => Some(item),
                Err(err) => {
                    tracing::error!(target: "formwork::store", session = %self.id, %err, "a stored model item is unreadable; it is left out");
                    None
                }
            })
            .collect();
        if !items.is_empty() {
            self.lock().model.made().history = items;
        }
    }

    pub(super) fn begin_model_member(&self, token: &CancellationToken) {
        let mut state = self.lock();
        self.turn_locked(&mut state)
            .calls
            .insert(MODEL_MEMBER.to_owned(), token.clone());
    }

    pub(super) fn end_model_member(&self, outcome: Outcome) {
        let mut state = self.lock();
        let over = match state.turn.as_mut() {
            Some(turn) => {
                turn.calls.remove(MODEL_MEMBER);
                turn.calls.is_empty()
            }
            None => false,
        };
        if over && let Some(turn) = state.turn.take() {
            let reason = match outcome {
                _ if turn.stopped => TurnEndReason::Stopped,
                Outcome::Stopped => TurnEndReason::Stopped,
                Outcome::Failed => TurnEndReason::Failed,
                Outcome::Completed => TurnEndReason::Completed,
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

    async fn model_loop(
        self: &Arc<Self>,
        choice: &ModelChoice,
        token: &CancellationToken,
    ) -> Outcome {
        let provider = match Provider::new(choice, |var| std::env::var(var).ok()) {
            Ok(provider) => provider,
            Err(err) => {
                self.diagnostic(
                    "model-error",
                    format!("{} cannot be asked: {err}", choice.provider.name),
                );
                return Outcome::Failed;
            }
        };
        // A server whose tools cannot be listed is reported once a turn.
        let mut reported = std::collections::HashSet::new();
        for _ in 0..MAX_STEPS {
            let Some(names) = self.model_tools(token, &mut reported).await else {
                return Outcome::Stopped;
            };
            let (items, app_context) = {
                let mut state = self.lock();
                let app_servers = self.app_context_servers(&state);
                if let Some(turn) = state.turn.as_mut() {
                    turn.read_from.extend(app_servers);
                }
                (
                    agent::repaired(state.model.get().map_or(&[], |model| &model.history)),
                    self.app_context(&state),
                )
            };
            let body = provider.body(&RequestParts {
                model: &choice.model,
                instructions: agent::INSTRUCTIONS,
                items: &items,
                app_context: &app_context,
                tools: &names.tools,
            });
            tracing::info!(target: "formwork::model", session = %self.id, provider = %choice.provider_id, model = %choice.model, items = items.len(), tools = names.tools.len(), "model request");
            let mut message_id = self.new_id("m");
            let mut streamed = String::new();
            let answer = {
                let mut progress = |progress: Progress| match progress {
                    Progress::Text(delta) => {
                        streamed.push_str(&delta);
                        self.emit_transient(Event::MessageDelta {
                            message_id: message_id.clone(),
                            delta,
                        });
                    }
                    Progress::Retrying {
                        attempt,
                        of,
                        reason,
                        after,
                        restart,
                    } => {
                        if restart {
                            streamed.clear();
                            message_id = self.new_id("m");
                        }
                        self.diagnostic(
                            "model-retry",
                            format!(
                                "{reason}; asking again in {} s ({attempt} of {of})",
                                after.as_secs_f64()
                            ),
                        );
                    }
                };
                tokio::select! {
                    biased;
                    () = token.cancelled() => None,
                    answer = provider.respond(&body, &mut progress) => Some(answer),
                }
            };
            let reply = match answer {
                None => {
                    self.keep_streamed(streamed).await;
                    return Outcome::Stopped;
                }
                Some(Err(err)) => {
                    self.keep_streamed(streamed).await;
                    self.diagnostic("model-error", provider.explain(&err));
                    return Outcome::Failed;
                }
                Some(Ok(reply)) => reply,
            };
            tracing::info!(target: "formwork::model", session = %self.id, text_bytes = reply.text.len(), calls = reply.calls.len(), usage = %reply.usage.as_ref().map(ToString::to_string).unwrap_or_default(), "model answer");
            if !reply.text.is_empty() {
                self.emit(Event::MessageAdded {
                    role: Role::Assistant,
                    text: reply.text.clone(),
                });
                self.record(vec![Item::Assistant { text: reply.text }])
                    .await;
            }
            if let Some(reason) = reply.incomplete {
                self.diagnostic(
                    "model-incomplete",
                    format!("the model's answer stopped short: {reason}"),
                );
            }
            if reply.calls.is_empty() {
                return Outcome::Completed;
            }
            if !self.run_model_calls(choice, &names, reply.calls).await {
                return Outcome::Failed;
            }
            if token.is_cancelled() {
                return Outcome::Stopped;
            }
        }
        self.diagnostic(
            "model-error",
            format!(
                "the model asked for tools {MAX_STEPS} times in one turn; formwork ended the turn"
            ),
        );
        Outcome::Failed
    }

    /// Runs the calls of one answer at once and gives the model their outputs. `false` when
    /// the answer named a tool that is not offered, gave arguments that are not a JSON object,
    /// or asked for more than [`MAX_CALLS_PER_ANSWER`] calls: then no call runs, and the turn
    /// ends.
    async fn run_model_calls(
        self: &Arc<Self>,
        choice: &ModelChoice,
        names: &FunctionNames,
        calls: Vec<Item>,
    ) -> bool {
        let mut planned = Vec::new();
        let mut refused = Vec::new();
        let asked = calls
            .iter()
            .filter(|call| matches!(call, Item::Call { .. }))
            .count();
        if asked > MAX_CALLS_PER_ANSWER {
            refused.push(format!(
                "the model asked for {asked} calls in one answer, more than the {MAX_CALLS_PER_ANSWER} formwork runs at once"
            ));
        }
        for call in &calls {
            let Item::Call {
                call_id,
                name,
                arguments,
            } = call
            else {
                continue;
            };
            let Some((server, tool)) = names.target(name) else {
                refused.push(format!(
                    "the model called `{name}`, which is not a tool offered to it"
                ));
                continue;
            };
            let text = if arguments.trim().is_empty() {
                "{}"
            } else {
                arguments
            };
            match serde_json::from_str::<Value>(text) {
                Ok(arguments @ Value::Object(_)) => planned.push((
                    call_id.clone(),
                    server.to_owned(),
                    tool.to_owned(),
                    arguments,
                )),
                _ => refused.push(format!(
                    "the model's arguments for `{name}` are not a JSON object: {}",
                    agent::shortened(arguments, 200)
                )),
            }
        }
        self.record(calls.clone()).await;
        if !refused.is_empty() {
            let why = refused.join("; ");
            let outputs = calls
                .iter()
                .filter_map(|call| match call {
                    Item::Call { call_id, .. } => Some(Item::Output {
                        call_id: call_id.clone(),
                        output: format!("formwork ran none of these calls: {why}"),
                    }),
                    _ => None,
                })
                .collect();
            self.record(outputs).await;
            self.diagnostic("model-error", format!("{why}; the turn ends"));
            return false;
        }
        let runs = planned
            .into_iter()
            .map(|(model_call, server, tool, arguments)| {
                let session = Arc::clone(self);
                async move {
                    let (done, ended) = oneshot::channel();
                    let started =
                        session.start_call(&server, &tool, Some(arguments), Caller::Model(done));
                    let end = match started {
                        Ok(_) => ended.await.unwrap_or(CallEnd {
                            result: None,
                            error: Some("the call was dropped".to_owned()),
                        }),
                        Err(err) => CallEnd {
                            result: None,
                            error: Some(err.to_string()),
                        },
                    };
                    (model_call, server, tool, end)
                }
            });
        let ended = futures::future::join_all(runs).await;
        // What a plugin sent is what the model takes in next: later calls to other servers ask.
        if let Some(turn) = self.lock().turn.as_mut() {
            for (_, server, _, end) in &ended {
                if end.result.is_some() {
                    turn.read_from.insert(server.clone());
                }
            }
        }
        let mut outputs = Vec::with_capacity(ended.len());
        for (call_id, server, tool, end) in ended {
            let output = agent::model_output(
                end.result.as_ref(),
                end.error.as_deref(),
                choice.tool_output_max_bytes,
            );
            if let Some((kept, total)) = output.cut {
                self.diagnostic(
                    "tool-output-cut",
                    format!(
                        "the output of {server}.{tool} was cut to {kept} of {total} bytes before it reached the model (tool_output_token_limit)"
                    ),
                );
            }
            outputs.push(Item::Output {
                call_id,
                output: output.text,
            });
        }
        self.record(outputs).await;
        true
    }

    /// The tools the model is offered now: every enabled server's tools that its config
    /// exposes and that are visible to the model. `None` once the turn is stopped.
    async fn model_tools(
        self: &Arc<Self>,
        token: &CancellationToken,
        reported: &mut std::collections::HashSet<String>,
    ) -> Option<FunctionNames> {
        let host = self.host.upgrade()?;
        let config = host.config();
        let servers = config
            .mcp_servers
            .iter()
            .filter(|(_, server)| server.enabled)
            .map(|(name, server)| {
                let host = &host;
                async move {
                    let limit = server
                        .startup_timeout
                        .unwrap_or(std::time::Duration::from_secs(30));
                    let listed = tokio::time::timeout(limit, async {
                        let target = host.target(name).map_err(|err| err.to_string())?;
                        let connection = Box::pin(self.connection(name, &target))
                            .await
                            .map_err(|err| err.to_string())?;
                        connection
                            .plugin
                            .tools()
                            .await
                            .map_err(|err| err.to_string())
                    })
                    .await
                    .unwrap_or_else(|_| {
                        Err(format!(
                            "listing its tools took longer than {} s",
                            limit.as_secs_f64()
                        ))
                    });
                    (name.clone(), server, listed)
                }
            });
        let listed = tokio::select! {
            biased;
            () = token.cancelled() => return None,
            listed = futures::future::join_all(servers) => listed,
        };
        let mut offered = Vec::new();
        for (name, server, tools) in listed {
            match tools {
                Ok(tools) => offered.extend(
                    tools
                        .iter()
                        .filter(|tool| {
                            tool.get("name")
                                .and_then(Value::as_str)
                                .is_some_and(|tool| server.exposes_tool(tool))
                        })
                        .filter(|tool| crate::apps::visibility(tool).model)
                        .map(|tool| (name.clone(), tool.clone())),
                ),
                Err(err) => {
                    if reported.insert(name.clone()) {
                        self.diagnostic(
                            "model-tools",
                            format!("the tools of {name} are not offered to the model: {err}"),
                        );
                    }
                }
            }
        }
        Some(FunctionNames::new(&offered))
    }

    /// Text the model saw stream before its answer broke off or was stopped stays, as what
    /// the person saw.
    async fn keep_streamed(&self, streamed: String) {
        if streamed.is_empty() {
            return;
        }
        self.emit(Event::MessageAdded {
            role: Role::Assistant,
            text: streamed.clone(),
        });
        self.record(vec![Item::Assistant { text: streamed }]).await;
    }

    /// Adds `items` to the model's conversation, and to the store.
    async fn record(&self, items: Vec<Item>) {
        if items.is_empty() {
            return;
        }
        let texts: Vec<String> = items
            .iter()
            .filter_map(|item| serde_json::to_string(item).ok())
            .collect();
        self.lock().model.made().history.extend(items);
        let Some(store) = self.host.upgrade().and_then(|host| host.store.clone()) else {
            return;
        };
        if let Err(err) = store.append_model_items(&self.id, texts).await {
            tracing::error!(target: "formwork::store", session = %self.id, %err, "the model's conversation was not stored");
        }
    }
}
