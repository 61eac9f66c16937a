//! The request a sign-in from scratch (`formwork login`) starts from: the transport's
//! authorizer sends it without a token and reads how the server asks for one, but writing an
//! MCP message is this room's part.

use serde_json::json;

/// An `initialize` for [`crate::auth::Authorizer::sign_in`] to send without a token: a server
/// that wants a sign-in refuses it (401) with the challenge to start from.
pub fn sign_in_probe() -> Vec<u8> {
    json!({
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "formwork", "version": env!("CARGO_PKG_VERSION")}},
    })
    .to_string()
    .into_bytes()
}
