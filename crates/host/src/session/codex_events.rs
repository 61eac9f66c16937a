//! What Codex tells formwork about a session's thread, as the session's own events: agent text
//! as `message_delta` and `message_added`; its MCP tool calls, commands and file changes as
//! `tool_call_started` / `tool_call_finished` (Codex's own work as calls of the server
//! `codex`); the end of its turns; another client's answer to a request (`serverRequest/resolved`),
//! which ends the request's card; and the notices worth a diagnostic. Anything else is logged
//! and skipped.

use std::sync::Arc;

use serde_json::{Value, json};

use super::wire::{Event, Role};
use crate::jsonrpc::RawId;

use super::codex::{CODEX_SERVER, MAX_EARLY_ENDS, TurnEnd};
use super::{EndReason, Session};

impl Session {
    /// A notification about the session's thread.
    pub(super) fn on_codex_notification(
        self: &Arc<Self>,
        generation: u64,
        method: &str,
        params: &Value,
    ) {
        let text = |pointer: &str| params.pointer(pointer).and_then(Value::as_str);
        match method {
            "item/agentMessage/delta" => {
                if let (Some(item), Some(delta)) = (text("/itemId"), text("/delta")) {
                    self.emit_transient(Event::MessageDelta {
                        message_id: item.to_owned(),
                        delta: delta.to_owned(),
                    });
                }
            }
            "item/started" => self.codex_item_started(params.get("item").unwrap_or(&Value::Null)),
            "item/completed" => {
                self.codex_item_completed(params.get("item").unwrap_or(&Value::Null));
            }
            "turn/completed" => {
                let Some(turn) = text("/turn/id") else {
                    return;
                };
                let end = TurnEnd {
                    status: text("/turn/status").unwrap_or("completed").to_owned(),
                    error: text("/turn/error/message").map(str::to_owned),
                };
                let mut state = self.lock();
                let codex = state.codex.made();
                match codex.waiting.remove(turn) {
                    Some(waiter) => {
                        let _ = waiter.send(end);
                    }
                    None => {
                        // The end came before its turn/start's answer (or the turn is another
                        // client's): kept for a moment, a few at most.
                        if codex.ended.len() == MAX_EARLY_ENDS {
                            codex.ended.pop_front();
                        }
                        codex.ended.push_back((turn.to_owned(), end));
                    }
                }
            }
            "serverRequest/resolved" => {
                let Some(id) = params.get("requestId").and_then(RawId::from_value) else {
                    return;
                };
                let open = self
                    .lock()
                    .codex
                    .made()
                    .open
                    .remove(&(generation, id.clone()));
                if let Some(open) = open {
                    tracing::info!(target: "formwork::codex", session = %self.id, %id, "another client answered codex's request; its card ends");
                    self.end_open_request(open, EndReason::AnsweredElsewhere);
                }
            }
            "error" => {
                let message = text("/error/message").unwrap_or("no message");
                if params.get("willRetry").and_then(Value::as_bool) == Some(true) {
                    self.diagnostic("model-retry", format!("Codex: {message}; it tries again"));
                } else {
                    tracing::info!(target: "formwork::codex", session = %self.id, %message, "codex reported an error");
                }
            }
            "mcpServer/startupStatus/updated" => {
                if text("/status") == Some("failed") {
                    let name = text("/name").unwrap_or("a server");
                    let error = text("/error").unwrap_or("no reason given");
                    self.plugin_diagnostic(
                        "codex-server",
                        format!("Codex could not start {name}: {error}"),
                    );
                }
            }
            _ => {
                tracing::debug!(target: "formwork::codex", session = %self.id, method, "codex notification skipped");
            }
        }
    }

    fn codex_item_started(self: &Arc<Self>, item: &Value) {
        let Some(item_id) = item.get("id").and_then(Value::as_str) else {
            return;
        };
        let (server, tool, arguments) = match item.get("type").and_then(Value::as_str) {
            Some("mcpToolCall") => (
                item.get("server")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
                item.get("tool")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
                item.get("arguments").cloned().unwrap_or_else(|| json!({})),
            ),
            Some("commandExecution") => (
                CODEX_SERVER.to_owned(),
                "command".to_owned(),
                json!({ "command": item.get("command"), "cwd": item.get("cwd") }),
            ),
            Some("fileChange") => (
                CODEX_SERVER.to_owned(),
                "file_change".to_owned(),
                json!({ "changes": item.get("changes") }),
            ),
            _ => return,
        };
        let call_id = self.new_id("c");
        let mut state = self.lock();
        if state.codex.made().items.contains_key(item_id) {
            return;
        }
        state
            .codex
            .made()
            .items
            .insert(item_id.to_owned(), (call_id.clone(), server.clone()));
        self.emit_locked(
            &mut state,
            Event::ToolCallStarted {
                call_id,
                server,
                tool,
                arguments: formwork_forms::JsonText::new(&arguments),
                asked_by: None,
            },
        );
    }

    fn codex_item_completed(self: &Arc<Self>, item: &Value) {
        let kind = item.get("type").and_then(Value::as_str);
        if kind == Some("agentMessage") {
            let text = item.get("text").and_then(Value::as_str).unwrap_or_default();
            if !text.is_empty() {
                self.emit(Event::MessageAdded {
                    role: Role::Assistant,
                    text: text.to_owned(),
                });
            }
            return;
        }
        if !matches!(
            kind,
            Some("mcpToolCall" | "commandExecution" | "fileChange")
        ) {
            return;
        }
        // An item Codex completes without having started it (its start came before this
        // session loaded the thread) is shown whole.
        self.codex_item_started(item);
        let Some(item_id) = item.get("id").and_then(Value::as_str) else {
            return;
        };
        let Some((call_id, _)) = self.lock().codex.made().items.remove(item_id) else {
            return;
        };
        let (result, error) = item_outcome(item);
        self.finish_call(&call_id, result, error);
    }

    /// Ends the calls of items Codex left open (a stopped or failed turn).
    pub(super) fn close_codex_items(&self, why: &str) {
        let items: Vec<(String, String)> = self
            .lock()
            .codex
            .made()
            .items
            .drain()
            .map(|(_, call)| call)
            .collect();
        for (call_id, _) in items {
            self.finish_call(&call_id, None, Some(why.to_owned()));
        }
    }
}

/// What a completed item gave: a call's result as MCP's `CallToolResult`, or its error.
fn item_outcome(item: &Value) -> (Option<Value>, Option<String>) {
    let status = item.get("status").and_then(Value::as_str);
    if status == Some("declined") {
        return (None, Some("declined: it did not run".to_owned()));
    }
    let failed = status == Some("failed");
    match item.get("type").and_then(Value::as_str) {
        Some("mcpToolCall") => {
            if let Some(message) = item.pointer("/error/message").and_then(Value::as_str) {
                return (None, Some(message.to_owned()));
            }
            let Some(result) = item.get("result").filter(|result| result.is_object()) else {
                return (None, Some("Codex gave no result".to_owned()));
            };
            let mut call_result = serde_json::Map::new();
            for key in ["content", "structuredContent", "_meta"] {
                if let Some(value) = result.get(key).filter(|value| !value.is_null()) {
                    call_result.insert(key.to_owned(), value.clone());
                }
            }
            if failed {
                call_result.insert("isError".to_owned(), json!(true));
            }
            (Some(Value::Object(call_result)), None)
        }
        Some("commandExecution") => {
            let output = item
                .get("aggregatedOutput")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let exit = item.get("exitCode").and_then(Value::as_i64);
            let mut result = json!({ "content": [{ "type": "text", "text": output }] });
            if failed || exit.is_some_and(|code| code != 0) {
                result["isError"] = json!(true);
            }
            (Some(result), None)
        }
        _ => {
            let text = status.unwrap_or("completed");
            let result = json!({ "content": [{ "type": "text", "text": text }] });
            (Some(result), None)
        }
    }
}
