//! The Responses API: `POST {base_url}/responses` with the whole conversation each time
//! (`store: false`, so no response is kept at the provider), read as its event stream.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::history::Item;
use super::provider::{APP_CONTEXT_CALL, ModelError, Reply, RequestParts, app_context_text};

pub(crate) fn body(parts: &RequestParts<'_>) -> Value {
    let mut input: Vec<Value> = Vec::with_capacity(parts.items.len() + 1);
    let context_at = parts.context_position();
    for (index, item) in parts.items.iter().enumerate() {
        if index == context_at {
            input.extend(app_messages(parts));
        }
        input.push(match item {
            Item::User { text } => json!({
                "type": "message", "role": "user",
                "content": [{"type": "input_text", "text": text}],
            }),
            Item::Assistant { text } => json!({
                "type": "message", "role": "assistant",
                "content": [{"type": "output_text", "text": text}],
            }),
            Item::Call {
                call_id,
                name,
                arguments,
            } => json!({
                "type": "function_call", "call_id": call_id, "name": name, "arguments": arguments,
            }),
            Item::Output { call_id, output } => json!({
                "type": "function_call_output", "call_id": call_id, "output": output,
            }),
        });
    }
    if context_at >= parts.items.len() {
        input.extend(app_messages(parts));
    }
    let mut body = json!({
        "model": parts.model,
        "instructions": parts.instructions,
        "input": input,
    });
    if !parts.tools.is_empty() {
        let tools: Vec<Value> = parts
            .tools
            .iter()
            .map(|tool| {
                let mut function = json!({
                    "type": "function",
                    "name": tool.name,
                    "parameters": tool.parameters,
                    // MCP schemas rarely meet strict mode's demands.
                    "strict": false,
                });
                if let Some(description) = &tool.description {
                    function["description"] = json!(description);
                }
                function
            })
            .collect();
        body["tools"] = json!(tools);
        body["tool_choice"] = json!("auto");
        body["parallel_tool_calls"] = json!(true);
    }
    body["store"] = json!(false);
    body["stream"] = json!(true);
    body
}

/// App context as what it is, data a plugin's app gave: the output of a call of formwork's own
/// (`APP_CONTEXT_CALL`), never a message in the person's role.
fn app_messages<'a>(parts: &'a RequestParts<'_>) -> impl Iterator<Item = Value> + 'a {
    parts
        .app_context
        .iter()
        .enumerate()
        .flat_map(|(index, context)| {
            let call_id = format!("{APP_CONTEXT_CALL}_{}", index + 1);
            [
                json!({"type": "function_call", "call_id": call_id, "name": APP_CONTEXT_CALL, "arguments": "{}"}),
                json!({"type": "function_call_output", "call_id": call_id, "output": app_context_text(context)}),
            ]
        })
}

/// An output item being streamed.
enum Partial {
    Message(String),
    Call {
        call_id: Option<String>,
        name: Option<String>,
        arguments: String,
    },
    /// Reasoning and other items: not replayed (with `store: false` a provider keeps none).
    Other,
}

/// Reads the events of one response.
#[derive(Default)]
pub(crate) struct Decoder {
    items: BTreeMap<u64, Partial>,
    finished: bool,
    usage: Option<Value>,
    incomplete: Option<String>,
}

impl Decoder {
    /// One event's `data`; returns the text it adds to the answer, if any.
    pub(crate) fn event(&mut self, data: &str) -> Result<Option<String>, ModelError> {
        let event: Value = serde_json::from_str(data)
            .map_err(|err| ModelError::Malformed(format!("an event is not JSON ({err})")))?;
        let index = event
            .get("output_index")
            .and_then(Value::as_u64)
            .unwrap_or(0);
        let text = |key: &str| event.get(key).and_then(Value::as_str).map(str::to_owned);
        match event
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or_default()
        {
            "response.output_item.added" => {
                if let Some(item) = event.get("item") {
                    self.items.insert(index, partial(item, None));
                }
            }
            "response.output_text.delta" => {
                let delta = text("delta").unwrap_or_default();
                match self
                    .items
                    .entry(index)
                    .or_insert_with(|| Partial::Message(String::new()))
                {
                    Partial::Message(text) => text.push_str(&delta),
                    _ => return Ok(None),
                }
                return Ok(Some(delta).filter(|delta| !delta.is_empty()));
            }
            "response.function_call_arguments.delta" => {
                if let Some(Partial::Call { arguments, .. }) = self.items.get_mut(&index) {
                    arguments.push_str(&text("delta").unwrap_or_default());
                }
            }
            "response.function_call_arguments.done" => {
                if let Some(Partial::Call { arguments, .. }) = self.items.get_mut(&index)
                    && let Some(whole) = text("arguments")
                {
                    *arguments = whole;
                }
            }
            "response.output_item.done" => {
                if let Some(item) = event.get("item") {
                    let before = self.items.remove(&index);
                    self.items.insert(index, partial(item, before));
                }
            }
            "response.completed" | "response.incomplete" => {
                let response = event.get("response");
                self.usage = response.and_then(|r| r.get("usage")).cloned();
                self.incomplete = response
                    .and_then(|r| r.pointer("/incomplete_details/reason"))
                    .and_then(Value::as_str)
                    .map(str::to_owned)
                    .or_else(|| {
                        (event["type"] == "response.incomplete").then(|| "incomplete".to_owned())
                    });
                // Items the stream did not finish one by one are in the response itself.
                if let Some(output) = response
                    .and_then(|r| r.get("output"))
                    .and_then(Value::as_array)
                {
                    for (at, item) in output.iter().enumerate() {
                        let at = at as u64;
                        self.items.entry(at).or_insert_with(|| partial(item, None));
                    }
                }
                self.finished = true;
            }
            "response.failed" => {
                let error = event.pointer("/response/error");
                return Err(failure(error));
            }
            "error" => return Err(failure(Some(&event))),
            _ => {}
        }
        Ok(None)
    }

    /// Whether the response is over (`response.completed` or `.incomplete`).
    pub(crate) fn complete(&self) -> bool {
        self.finished
    }

    /// The answer, once the stream ended; a stream that ended before `response.completed`
    /// broke off.
    pub(crate) fn finish(self) -> Result<Reply, ModelError> {
        if !self.finished {
            return Err(ModelError::Cut);
        }
        let mut reply = Reply {
            usage: self.usage,
            incomplete: self.incomplete,
            ..Reply::default()
        };
        for (index, item) in self.items {
            match item {
                Partial::Message(text) => reply.text.push_str(&text),
                Partial::Call {
                    call_id,
                    name,
                    arguments,
                } => {
                    let name = name.ok_or_else(|| {
                        ModelError::Malformed("a function call has no name".to_owned())
                    })?;
                    reply.calls.push(Item::Call {
                        call_id: call_id.unwrap_or_else(|| format!("call_{index}")),
                        name,
                        arguments,
                    });
                }
                Partial::Other => {}
            }
        }
        Ok(reply)
    }
}

/// An output item as its event shows it; `before` is what the stream built of it so far.
fn partial(item: &Value, before: Option<Partial>) -> Partial {
    let text = |key: &str| item.get(key).and_then(Value::as_str).map(str::to_owned);
    match item.get("type").and_then(Value::as_str) {
        Some("message") => {
            let parts = item.get("content").and_then(Value::as_array);
            let whole: Option<String> = parts.map(|parts| {
                parts
                    .iter()
                    .filter(|part| part.get("type").and_then(Value::as_str) == Some("output_text"))
                    .filter_map(|part| part.get("text").and_then(Value::as_str))
                    .collect()
            });
            match (whole, before) {
                (Some(whole), _) if !whole.is_empty() => Partial::Message(whole),
                (_, Some(Partial::Message(streamed))) => Partial::Message(streamed),
                _ => Partial::Message(String::new()),
            }
        }
        Some("function_call") => {
            let (call_id, name, arguments) = match before {
                Some(Partial::Call {
                    call_id,
                    name,
                    arguments,
                }) => (call_id, name, arguments),
                _ => (None, None, String::new()),
            };
            Partial::Call {
                call_id: text("call_id").or(call_id),
                // `arguments.done` has no name: it came with `added`.
                name: text("name").filter(|name| !name.is_empty()).or(name),
                arguments: text("arguments")
                    .filter(|whole| !whole.is_empty())
                    .unwrap_or(arguments),
            }
        }
        _ => Partial::Other,
    }
}

fn failure(error: Option<&Value>) -> ModelError {
    let field = |key: &str| {
        error
            .and_then(|error| error.get(key))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    ModelError::Failed {
        code: field("code"),
        message: field("message"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(events: &[Value]) -> Result<(Vec<String>, Reply), ModelError> {
        let mut decoder = Decoder::default();
        let mut deltas = Vec::new();
        for event in events {
            if let Some(delta) = decoder.event(&event.to_string())? {
                deltas.push(delta);
            }
        }
        decoder.finish().map(|reply| (deltas, reply))
    }

    #[test]
    fn text_and_a_streamed_call_whose_done_has_no_name() {
        let (deltas, reply) = decode(&[
            json!({"type": "response.created", "response": {}}),
            json!({"type": "response.output_item.added", "output_index": 0, "item": {"type": "reasoning", "id": "rs_1"}}),
            json!({"type": "response.output_item.added", "output_index": 1, "item": {"type": "message", "content": []}}),
            json!({"type": "response.output_text.delta", "output_index": 1, "delta": "Let me "}),
            json!({"type": "response.output_text.delta", "output_index": 1, "delta": "look."}),
            json!({"type": "response.unknown_thing", "x": 1}),
            json!({"type": "response.output_item.added", "output_index": 2, "item": {"type": "function_call", "call_id": "call_9", "name": "demo__ask", "arguments": ""}}),
            json!({"type": "response.function_call_arguments.delta", "output_index": 2, "delta": "{\"q\":"}),
            json!({"type": "response.function_call_arguments.delta", "output_index": 2, "delta": "1}"}),
            json!({"type": "response.function_call_arguments.done", "output_index": 2, "arguments": "{\"q\":1}"}),
            json!({"type": "response.completed", "response": {"usage": {"total_tokens": 7}}}),
        ])
        .expect("decoded");
        assert_eq!(deltas, ["Let me ", "look."]);
        assert_eq!(reply.text, "Let me look.");
        assert_eq!(
            reply.calls,
            vec![Item::Call {
                call_id: "call_9".into(),
                name: "demo__ask".into(),
                arguments: "{\"q\":1}".into()
            }]
        );
        assert_eq!(reply.usage, Some(json!({"total_tokens": 7})));
    }

    #[test]
    fn failures_cuts_and_garbage() {
        let failed = decode(&[
            json!({"type": "response.failed", "response": {"error": {"code": "context_length_exceeded", "message": "too long"}}}),
        ]);
        assert_eq!(
            failed.err().map(|err| err.to_string()),
            Some("context_length_exceeded: too long".to_owned())
        );
        let cut = decode(&[json!({"type": "response.output_text.delta", "delta": "Hi"})]);
        assert!(matches!(cut, Err(ModelError::Cut)));
        let mut decoder = Decoder::default();
        assert!(matches!(
            decoder.event("{not json"),
            Err(ModelError::Malformed(_))
        ));
    }
}
