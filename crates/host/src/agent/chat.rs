//! Chat Completions: `POST {base_url}/chat/completions`, as local OpenAI-compatible servers
//! (Ollama, LM Studio, vLLM, llama-server) speak it. The decoder tolerates their habits: a call
//! sent whole in one chunk, no `index`, no `id`, `finish_reason: "stop"` with calls.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::history::Item;
use super::provider::{APP_CONTEXT_CALL, ModelError, Reply, RequestParts, app_context_text};

pub(crate) fn body(parts: &RequestParts<'_>) -> Value {
    let mut messages: Vec<Value> = vec![json!({"role": "system", "content": parts.instructions})];
    let context_at = parts.context_position();
    let mut items = parts.items.iter().enumerate().peekable();
    while let Some((index, item)) = items.next() {
        if index == context_at {
            messages.extend(app_messages(parts));
        }
        match item {
            Item::User { text } => messages.push(json!({"role": "user", "content": text})),
            Item::Assistant { text } => {
                messages.push(json!({"role": "assistant", "content": text}));
            }
            Item::Call { .. } => {
                // Calls of one response go in one assistant message.
                let mut calls = vec![tool_call(item)];
                while let Some((_, next @ Item::Call { .. })) = items.peek() {
                    calls.push(tool_call(next));
                    items.next();
                }
                messages.push(json!({"role": "assistant", "content": null, "tool_calls": calls}));
            }
            Item::Output { call_id, output } => messages.push(json!({
                "role": "tool", "tool_call_id": call_id, "content": output,
            })),
        }
    }
    if context_at >= parts.items.len() {
        messages.extend(app_messages(parts));
    }
    let mut body = json!({"model": parts.model, "messages": messages});
    if !parts.tools.is_empty() {
        let tools: Vec<Value> = parts
            .tools
            .iter()
            .map(|tool| {
                let mut function = json!({"name": tool.name, "parameters": tool.parameters});
                if let Some(description) = &tool.description {
                    function["description"] = json!(description);
                }
                json!({"type": "function", "function": function})
            })
            .collect();
        body["tools"] = json!(tools);
        body["tool_choice"] = json!("auto");
    }
    body["stream"] = json!(true);
    body["stream_options"] = json!({"include_usage": true});
    body
}

fn tool_call(item: &Item) -> Value {
    match item {
        Item::Call {
            call_id,
            name,
            arguments,
        } => json!({
            "id": call_id, "type": "function",
            "function": {"name": name, "arguments": arguments},
        }),
        _ => Value::Null,
    }
}

/// App context as what it is, data a plugin's app gave: the result of a call of formwork's own
/// (`APP_CONTEXT_CALL`), never a message in the person's role.
fn app_messages<'a>(parts: &'a RequestParts<'_>) -> impl Iterator<Item = Value> + 'a {
    parts
        .app_context
        .iter()
        .enumerate()
        .flat_map(|(index, context)| {
            let call_id = format!("{APP_CONTEXT_CALL}_{}", index + 1);
            [
                json!({"role": "assistant", "content": null, "tool_calls": [{
                    "id": call_id, "type": "function",
                    "function": {"name": APP_CONTEXT_CALL, "arguments": "{}"},
                }]}),
                json!({"role": "tool", "tool_call_id": call_id, "content": app_context_text(context)}),
            ]
        })
}

#[derive(Default)]
struct PartialCall {
    id: Option<String>,
    name: String,
    arguments: String,
}

/// Reads the chunks of one completion.
#[derive(Default)]
pub(crate) struct Decoder {
    text: String,
    calls: BTreeMap<u64, PartialCall>,
    finish_reason: Option<String>,
    done: bool,
    usage: Option<Value>,
}

impl Decoder {
    /// One event's `data`; returns the text it adds to the answer, if any.
    pub(crate) fn event(&mut self, data: &str) -> Result<Option<String>, ModelError> {
        if data.trim() == "[DONE]" {
            self.done = true;
            return Ok(None);
        }
        let chunk: Value = serde_json::from_str(data)
            .map_err(|err| ModelError::Malformed(format!("a chunk is not JSON ({err})")))?;
        if let Some(error) = chunk.get("error") {
            let field = |key: &str| match error.get(key) {
                Some(Value::String(text)) => text.clone(),
                Some(Value::Number(number)) => number.to_string(),
                _ => String::new(),
            };
            return Err(ModelError::Failed {
                code: field("code"),
                message: field("message"),
            });
        }
        if let Some(usage) = chunk.get("usage").filter(|usage| !usage.is_null()) {
            self.usage = Some(usage.clone());
        }
        let Some(choice) = chunk
            .get("choices")
            .and_then(Value::as_array)
            .and_then(|choices| choices.first())
        else {
            return Ok(None);
        };
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
            self.finish_reason = Some(reason.to_owned());
        }
        let delta = choice.get("delta");
        if let Some(calls) = delta
            .and_then(|delta| delta.get("tool_calls"))
            .and_then(Value::as_array)
        {
            for call in calls {
                let id = call.get("id").and_then(Value::as_str);
                let index = match call.get("index").and_then(Value::as_u64) {
                    Some(index) => index,
                    // No index: the call of that id, else a new one (servers that send each
                    // call whole).
                    None => match id {
                        Some(id) => self
                            .calls
                            .iter()
                            .find(|(_, known)| known.id.as_deref() == Some(id))
                            .map_or_else(|| self.next_index(), |(index, _)| *index),
                        // Neither: a name starts a call; a bare fragment continues the last.
                        None if named(call) || self.calls.is_empty() => self.next_index(),
                        None => self.calls.keys().last().copied().unwrap_or(0),
                    },
                };
                let entry = self.calls.entry(index).or_default();
                if let Some(id) = id.filter(|id| !id.is_empty()) {
                    entry.id = Some(id.to_owned());
                }
                let function = call.get("function");
                if let Some(name) = function.and_then(|f| f.get("name")).and_then(Value::as_str) {
                    entry.name.push_str(name);
                }
                if let Some(fragment) = function
                    .and_then(|f| f.get("arguments"))
                    .and_then(Value::as_str)
                {
                    entry.arguments.push_str(fragment);
                }
            }
        }
        let content = delta
            .and_then(|delta| delta.get("content"))
            .and_then(Value::as_str)
            .unwrap_or_default();
        if content.is_empty() {
            return Ok(None);
        }
        self.text.push_str(content);
        Ok(Some(content.to_owned()))
    }

    /// Whether the stream said `[DONE]`.
    pub(crate) fn complete(&self) -> bool {
        self.done
    }

    fn next_index(&self) -> u64 {
        self.calls.keys().last().map_or(0, |last| last + 1)
    }

    /// The answer, once the stream ended; one that ended without `[DONE]` or a finish reason
    /// broke off.
    pub(crate) fn finish(self) -> Result<Reply, ModelError> {
        if !self.done && self.finish_reason.is_none() {
            return Err(ModelError::Cut);
        }
        let mut calls = Vec::new();
        // Decided by the calls themselves: some servers say `stop` with calls.
        for (index, call) in self.calls {
            if call.name.is_empty() {
                return Err(ModelError::Malformed(
                    "a tool call has no function name".to_owned(),
                ));
            }
            calls.push(Item::Call {
                call_id: call.id.unwrap_or_else(|| format!("call_{index}")),
                name: call.name,
                arguments: if call.arguments.trim().is_empty() {
                    "{}".to_owned()
                } else {
                    call.arguments
                },
            });
        }
        Ok(Reply {
            text: self.text,
            calls,
            usage: self.usage,
            incomplete: self
                .finish_reason
                .filter(|reason| reason == "length" || reason == "content_filter"),
        })
    }
}

fn named(call: &Value) -> bool {
    call.pointer("/function/name")
        .and_then(Value::as_str)
        .is_some_and(|name| !name.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(chunks: &[&str]) -> Result<(Vec<String>, Reply), ModelError> {
        let mut decoder = Decoder::default();
        let mut deltas = Vec::new();
        for chunk in chunks {
            if let Some(delta) = decoder.event(chunk)? {
                deltas.push(delta);
            }
        }
        decoder.finish().map(|reply| (deltas, reply))
    }

    fn call(id: &str, name: &str, arguments: &str) -> Item {
        Item::Call {
            call_id: id.into(),
            name: name.into(),
            arguments: arguments.into(),
        }
    }

    #[test]
    fn streamed_interleaved_calls_and_text() {
        let (deltas, reply) = decode(&[
            r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"content":"On it"}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"demo__a","arguments":""}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"demo__b","arguments":"{\"x\""}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"q\":1}"}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":":2}"}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#,
            r#"{"choices":[],"usage":{"total_tokens":9}}"#,
            "[DONE]",
        ])
        .expect("decoded");
        assert_eq!(deltas, ["On it"]);
        assert_eq!(
            reply.calls,
            vec![
                call("call_a", "demo__a", "{\"q\":1}"),
                call("call_b", "demo__b", "{\"x\":2}")
            ]
        );
        assert_eq!(reply.usage, Some(json!({"total_tokens": 9})));
    }

    #[test]
    fn whole_calls_without_index_or_id_and_stop_with_calls() {
        let (_, reply) = decode(&[
            r#"{"choices":[{"delta":{"tool_calls":[{"id":"x1","function":{"name":"demo__a","arguments":"{}"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"function":{"name":"demo__b","arguments":""}}]}}]}"#,
            r#"{"choices":[{"delta":{},"finish_reason":"stop"}]}"#,
        ])
        .expect("decoded");
        assert_eq!(
            reply.calls,
            vec![call("x1", "demo__a", "{}"), call("call_1", "demo__b", "{}")]
        );
    }

    #[test]
    fn cut_and_error_chunks() {
        assert!(matches!(
            decode(&[r#"{"choices":[{"delta":{"content":"Hi"}}]}"#]),
            Err(ModelError::Cut)
        ));
        let failed = decode(&[r#"{"error":{"message":"model not found","code":404}}"#]);
        assert_eq!(
            failed.err().map(|err| err.to_string()),
            Some("404: model not found".to_owned())
        );
    }
}
