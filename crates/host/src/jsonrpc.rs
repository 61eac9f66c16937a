//! JSON-RPC 2.0 framing: classifying raw incoming messages and building outgoing ones.
//!
//! Incoming messages are read for their envelope only: `id` and `method`, with `params`, `result`
//! and `error` kept as the raw JSON text the peer sent. So a message whose `params` is hostile
//! (deeply nested, say) still yields its `id` and `method` and can be answered with an error, and
//! a request's params reach whoever serves it (and the store) exactly as written.

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
    /// The requested protocol version is not one the server speaks (2026-07-28).
    pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;
    /// A request the host refuses, with the reason as the message (the implementation-defined
    /// server error the MCP Apps spec uses for an app's refused request).
    pub const REFUSED: i64 = -32000;
}

/// A JSON-RPC id exactly as the peer wrote it (a string or a number), so that it is echoed
/// byte for byte: a number too large for `f64` or `u64` must still match its request.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RawId(String);

impl RawId {
    /// The id named by a JSON value (e.g. `requestId` of `notifications/cancelled`).
    pub fn from_value(value: &Value) -> Option<Self> {
        match value {
            Value::String(_) | Value::Number(_) => Some(RawId(value.to_string())),
            _ => None,
        }
    }

    /// A string id: the key of an `inputRequests` entry, which stands for a request id there.
    pub fn string(text: &str) -> Self {
        RawId(Value::from(text).to_string())
    }

    /// The numeric value, when the id is a plain unsigned integer.
    pub fn as_u64(&self) -> Option<u64> {
        self.0.parse().ok()
    }

    /// The id as a JSON value, for display (a huge number may lose precision here).
    pub fn to_value(&self) -> Value {
        serde_json::from_str(&self.0).unwrap_or(Value::Null)
    }

    /// The raw JSON text.
    pub fn as_json(&self) -> &str {
        &self.0
    }

    fn read(raw: &RawValue) -> Option<Self> {
        let text = raw.get().trim();
        match serde_json::from_str::<Value>(text) {
            Ok(Value::String(_)) => Some(RawId(text.to_owned())),
            Ok(Value::Number(_)) => Some(RawId(text.to_owned())),
            _ => None,
        }
    }
}

impl std::fmt::Display for RawId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The `params` of a request or notification as the peer wrote them, or `None` when absent.
/// [`read_params`] turns them into a JSON value.
pub type Params = Option<Box<RawValue>>;

/// The params as a JSON value: `None` when absent, an error when the text cannot be read as one
/// (nested too deeply, say).
pub fn read_params(params: Option<&RawValue>) -> Option<Result<Value, serde_json::Error>> {
    params.map(|raw| serde_json::from_str(raw.get()))
}

/// One message read from a plugin, classified; a response's payload is still raw.
#[derive(Debug)]
pub enum Incoming {
    /// A request from the plugin to the host; it must be answered.
    Request {
        id: RawId,
        method: String,
        params: Params,
    },
    /// A notification (no `id`).
    Notification { method: String, params: Params },
    /// A response to one of the host's requests.
    Response {
        id: RawId,
        outcome: Result<Box<RawValue>, RpcError>,
    },
    /// Something that is not a usable JSON-RPC message; it gets one error answer, with
    /// `code` [`code::PARSE_ERROR`] when it is not JSON at all, else [`code::INVALID_REQUEST`].
    /// `id` is the request's id, when it could be read.
    Invalid {
        id: Option<RawId>,
        code: i64,
        reason: String,
    },
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

/// A message's members, the payloads raw.
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

/// Reads one frame (a line on stdio, an SSE event or an HTTP body) as one message. MCP has no
/// JSON-RPC batches: a JSON array is one invalid message, answered by one error at most.
pub fn parse_frame(frame: &str) -> Incoming {
    let trimmed = frame.trim_start();
    if trimmed.starts_with('[') {
        return Incoming::Invalid {
            id: None,
            code: code::INVALID_REQUEST,
            reason: "a JSON array is not a message: MCP has no JSON-RPC batches".to_owned(),
        };
    }
    classify(trimmed)
}

fn classify(text: &str) -> Incoming {
    let envelope = match serde_json::from_str::<Envelope>(text) {
        Ok(envelope) => envelope,
        Err(err) => {
            let json = serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok();
            return Incoming::Invalid {
                id: None,
                code: if json {
                    code::INVALID_REQUEST
                } else {
                    code::PARSE_ERROR
                },
                reason: format!("not a JSON-RPC object: {err}"),
            };
        }
    };
    // `None`: absent; `Some(None)`: `null`; `Some(Some(id))`: a usable id.
    let id = match envelope.id {
        None => None,
        Some(raw) if raw.get().trim() == "null" => Some(None),
        Some(raw) => match RawId::read(raw) {
            Some(id) => Some(Some(id)),
            None => {
                return Incoming::Invalid {
                    id: None,
                    code: code::INVALID_REQUEST,
                    reason: "id must be a string or a number".to_owned(),
                };
            }
        },
    };
    match (envelope.method, id) {
        (Some(Value::String(method)), Some(None)) => Incoming::Invalid {
            id: None,
            code: code::INVALID_REQUEST,
            reason: format!("request `{method}` has a null id"),
        },
        (Some(Value::String(method)), Some(Some(id))) => Incoming::Request {
            id,
            method,
            params: envelope.params,
        },
        (Some(Value::String(method)), None) => Incoming::Notification {
            method,
            params: envelope.params,
        },
        (Some(_), id) => Incoming::Invalid {
            id: id.flatten(),
            code: code::INVALID_REQUEST,
            reason: "method must be a string".to_owned(),
        },
        (None, Some(None)) => Incoming::Invalid {
            id: None,
            code: code::INVALID_REQUEST,
            reason: "a response with a null id answers nothing".to_owned(),
        },
        (None, Some(Some(id))) => match (envelope.result, envelope.error) {
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
                code: code::INVALID_REQUEST,
                reason: "response needs exactly one of result and error".to_owned(),
            },
        },
        (None, None) => Incoming::Invalid {
            id: None,
            code: code::INVALID_REQUEST,
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
pub fn response(id: &RawId, result: &Value) -> String {
    const HEAD: &str = r#"{"jsonrpc":"2.0","id":"#;
    const RESULT: &str = r#","result":"#;
    // Serializing a `Value` cannot fail: its keys are strings and its numbers finite.
    let result = serde_json::to_string(result).unwrap_or_else(|_| "null".to_owned());
    let mut message =
        String::with_capacity(HEAD.len() + id.0.len() + RESULT.len() + result.len() + 1);
    message.push_str(HEAD);
    message.push_str(&id.0);
    message.push_str(RESULT);
    message.push_str(&result);
    message.push('}');
    message
}

/// Serializes an error response. `id` is `null` when the request's id could not be read.
pub fn error_response(id: Option<&RawId>, code: i64, message: &str) -> String {
    let id = id.map_or("null", RawId::as_json);
    let error = json!({"code": code, "message": message});
    format!(r#"{{"jsonrpc":"2.0","id":{id},"error":{error}}}"#)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn kind(frame: &str) -> String {
        [parse_frame(frame)]
            .iter()
            .map(|message| match message {
                Incoming::Request { id, method, .. } => format!("request {id} {method}"),
                Incoming::Notification { method, .. } => format!("notification {method}"),
                Incoming::Response { id, outcome } => match outcome {
                    Ok(result) => format!("response {id} {}", result.get()),
                    Err(error) => format!("error {id} {}", error.code),
                },
                Incoming::Invalid { id, code, .. } => format!("invalid {id:?} {code}"),
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
            "invalid None -32600"
        );
        // Only what is not JSON at all is a parse error.
        assert_eq!(kind("not json"), "invalid None -32700");
        assert_eq!(kind(r#"{"jsonrpc":"2.0"}"#), "invalid None -32600");
        assert_eq!(kind("42"), "invalid None -32600");
        assert_eq!(
            kind(r#"{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"m"}"#),
            "request 123456789012345678901234567890 m"
        );
        assert_eq!(
            kind(r#"[{"jsonrpc":"2.0","method":"a"},{"jsonrpc":"2.0","id":1,"method":"b"}]"#),
            "invalid None -32600"
        );
    }

    #[test]
    fn responses_echo_the_id_verbatim() {
        let id = RawId(r#"123456789012345678901234567890"#.to_owned());
        assert_eq!(
            response(&id, &json!({"action": "decline"})),
            r#"{"jsonrpc":"2.0","id":123456789012345678901234567890,"result":{"action":"decline"}}"#
        );
        assert_eq!(
            error_response(None, code::PARSE_ERROR, "bad"),
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"bad"}}"#
        );
    }

    #[test]
    fn an_array_of_a_million_requests_is_one_invalid_message() {
        let item = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
        let frame = format!("[{}]", vec![item; 1_000_000].join(","));
        assert_eq!(kind(&frame), "invalid None -32600");
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
