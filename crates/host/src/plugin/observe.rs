//! The hook through which an observer (the doctor) watches every request a plugin sends and
//! what the connection answered. The connection knows only this shape, never its observer.

use std::sync::Arc;

use serde_json::Value;

use crate::jsonrpc::RpcError;

/// A request the plugin sent, and what formwork answered; given to
/// [`ConnectOptions::on_request`](super::ConnectOptions::on_request) once the answer is decided.
#[derive(Debug, Clone)]
pub struct ServedRequest {
    /// The request's JSON-RPC id.
    pub id: Value,
    /// The method, as sent (e.g. `elicitation/create`, `ping`, `openai/form`).
    pub method: String,
    /// The params, when present and readable as JSON.
    pub params: Option<Value>,
    /// The result or the JSON-RPC error formwork sent; `None` when nothing was sent because
    /// the plugin cancelled the request or went away.
    pub answer: Option<Result<Value, RpcError>>,
    /// Whether it came on the response stream of one of formwork's requests (HTTP), and so
    /// belongs to that call.
    pub on_call_stream: bool,
}

/// Watches every request a plugin sends (see [`ConnectOptions::on_request`](super::ConnectOptions::on_request)). Called on the
/// connection's task: it must return quickly and never block.
pub type RequestObserver = Arc<dyn Fn(&ServedRequest) + Send + Sync>;
