//! JSON-RPC 2.0 framing: classifying raw incoming messages and building outgoing ones.
//!
//! Incoming messages are kept as raw JSON for as long as possible. The envelope is read with
//! `RawValue` members, so a message whose `params` is hostile (deeply nested, huge) still yields
//! its `id` and `method` and can be answered with an error instead of being dropped.

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

/// Standard JSON-RPC error codes used by the host.
pub mod code {
    /// Invalid JSON was received.
    pub const PARSE_ERROR: i64 = -32700;
    /// The JSON sent is not a valid request object.
    pub const INVALID_REQUEST: i64 = -32600;
    /// The method does not exist or is not available.
    pub const METHOD_NOT_FOUND: i64 = -32601;
    /// Invalid method parameters.
    pub const INVALID_PARAMS: i64 = -32602;
    /// Internal error.
    pub const INTERNAL_ERROR: i64 = -32603;
}

/// One message read from a plugin, classified but with its payload still raw.
#[derive(Debug)]
pub enum Incoming {
    /// A request from the plugin to the host; it must be answered.
    Request {
        id: Value,
        method: String,
        params: Option<Box<RawValue>>,
    },
    /// A notification (no `id`).
    Notification {
        method: String,
        params: Option<Box<RawValue>>,
    },
    /// A response to one of the host's requests.
    Response {
        id: Value,
        outcome: Result<Box<RawValue>, RpcError>,
    },
    /// Something that is JSON but not a usable JSON-RPC message. When `id` could be read the
    /// message was a request and gets an error answer.
    Invalid { id: Option<Value>, reason: String },
}

/// A JSON-RPC error object.
#[derive(Debug, Clone, PartialEq, Deserialize, serde::Serialize)]
pub struct RpcError {
    /// The error code.
    pub code: i64,
    /// A short description.
    pub message: String,
    /// Optional structured data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl std::fmt::Display for RpcError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (code {})", self.message, self.code)
    }
}

#[derive(Deserialize)]
struct Envelope<'a> {
    /// `Some("null")` for `"id": null`, which plain `Option` would read as absent.
    #[serde(borrow, default, deserialize_with = "present")]
    id: Option<&'a RawValue>,
    #[serde(default)]
    method: Option<Value>,
    #[serde(default)]
    params: Option<Box<RawValue>>,
    #[serde(default)]
    result: Option<Box<RawValue>>,
    #[serde(default)]
    error: Option<Box<RawValue>>,
}

fn present<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue>::deserialize(deserializer).map(Some)
}

/// Splits one frame (a line on stdio, an SSE event or an HTTP body) into messages. A batch
/// yields several; a frame that is not JSON yields one `Invalid`.
pub fn parse_frame(frame: &str) -> Vec<Incoming> {
    let trimmed = frame.trim_start();
    if trimmed.starts_with('[') {
        match serde_json::from_str::<Vec<Box<RawValue>>>(trimmed) {
            Ok(items) => items.iter().map(|item| classify(item.get())).collect(),
            Err(err) => vec![Incoming::Invalid {
                id: None,
                reason: format!("unreadable batch: {err}"),
            }],
        }
    } else {
        vec![classify(trimmed)]
    }
}

fn classify(text: &str) -> Incoming {
    let envelope: Envelope = match serde_json::from_str(text) {
        Ok(envelope) => envelope,
        Err(err) => {
            return Incoming::Invalid {
                id: None,
                reason: format!("not a JSON-RPC object: {err}"),
            };
        }
    };
    let id = match envelope
        .id
        .map(|raw| serde_json::from_str::<Value>(raw.get()))
    {
        None => None,
        Some(Ok(Value::Null)) => Some(Value::Null),
        Some(Ok(id @ (Value::Number(_) | Value::String(_)))) => Some(id),
        Some(Ok(_)) | Some(Err(_)) => {
            return Incoming::Invalid {
                id: None,
                reason: "id must be a string or a number".to_owned(),
            };
        }
    };
    match (envelope.method, id) {
        (Some(Value::String(method)), Some(Value::Null)) => Incoming::Invalid {
            id: None,
            reason: format!("request `{method}` has a null id"),
        },
        (Some(Value::String(method)), Some(id)) => Incoming::Request {
            id,
            method,
            params: envelope.params,
        },
        (Some(Value::String(method)), None) => Incoming::Notification {
            method,
            params: envelope.params,
        },
        (Some(_), id) => Incoming::Invalid {
            id: id.filter(|id| !id.is_null()),
            reason: "method must be a string".to_owned(),
        },
        (None, Some(id)) => match (envelope.result, envelope.error) {
            (Some(result), None) => Incoming::Response {
                id,
                outcome: Ok(result),
            },
            (None, Some(error)) => {
                let error =
                    serde_json::from_str::<RpcError>(error.get()).unwrap_or_else(|err| RpcError {
                        code: code::INTERNAL_ERROR,
                        message: format!("unreadable error object: {err}"),
                        data: None,
                    });
                Incoming::Response {
                    id,
                    outcome: Err(error),
                }
            }
            _ => Incoming::Invalid {
                id: None,
                reason: "response needs exactly one of result and error".to_owned(),
            },
        },
        (None, None) => Incoming::Invalid {
            id: None,
            reason: "neither a request, a notification nor a response".to_owned(),
        },
    }
}

/// Serializes a request.
pub fn request(id: u64, method: &str, params: Option<Value>) -> String {
    let mut message = Map::new();
    message.insert("jsonrpc".into(), "2.0".into());
    message.insert("id".into(), id.into());
    message.insert("method".into(), method.into());
    if let Some(params) = params {
        message.insert("params".into(), params);
    }
    Value::Object(message).to_string()
}

/// Serializes a notification.
pub fn notification(method: &str, params: Option<Value>) -> String {
    let mut message = Map::new();
    message.insert("jsonrpc".into(), "2.0".into());
    message.insert("method".into(), method.into());
    if let Some(params) = params {
        message.insert("params".into(), params);
    }
    Value::Object(message).to_string()
}

/// Serializes a successful response.
pub fn response(id: &Value, result: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string()
}

/// Serializes an error response. `id` is `null` when the request's id could not be read.
pub fn error_response(id: Option<&Value>, code: i64, message: &str) -> String {
    json!({
        "jsonrpc": "2.0",
        "id": id.cloned().unwrap_or(Value::Null),
        "error": {"code": code, "message": message},
    })
    .to_string()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn kind(frame: &str) -> String {
        parse_frame(frame)
            .iter()
            .map(|message| match message {
                Incoming::Request { id, method, .. } => format!("request {id} {method}"),
                Incoming::Notification { method, .. } => format!("notification {method}"),
                Incoming::Response { id, outcome } => match outcome {
                    Ok(result) => format!("response {id} {}", result.get()),
                    Err(error) => format!("error {id} {}", error.code),
                },
                Incoming::Invalid { id, .. } => format!("invalid {id:?}"),
            })
            .collect::<Vec<_>>()
            .join("; ")
    }

    #[test]
    fn classifies_messages() {
        assert_eq!(
            kind(r#"{"jsonrpc":"2.0","id":0,"method":"elicitation/create","params":{}}"#),
            "request 0 elicitation/create"
        );
        assert_eq!(
            kind(r#"{"jsonrpc":"2.0","method":"notifications/x"}"#),
            "notification notifications/x"
        );
        assert_eq!(
            kind(r#"{"jsonrpc":"2.0","id":"a","result":{"z":1,"a":2}}"#),
            r#"response "a" {"z":1,"a":2}"#
        );
        assert_eq!(
            kind(r#"{"jsonrpc":"2.0","id":3,"error":{"code":-32042,"message":"m"}}"#),
            "error 3 -32042"
        );
        assert_eq!(
            kind(r#"{"jsonrpc":"2.0","id":null,"method":"m"}"#),
            "invalid None"
        );
        assert_eq!(kind("not json"), "invalid None");
        assert_eq!(
            kind(r#"[{"jsonrpc":"2.0","method":"a"},{"jsonrpc":"2.0","id":1,"method":"b"}]"#),
            "notification a; request 1 b"
        );
    }

    #[test]
    fn deeply_nested_params_keep_the_id() {
        let depth = 10_000;
        let frame = format!(
            r#"{{"jsonrpc":"2.0","id":7,"method":"elicitation/create","params":{}{}}}"#,
            "[".repeat(depth),
            "]".repeat(depth)
        );
        assert_eq!(kind(&frame), "request 7 elicitation/create");
    }
}
