//! MCP authorization, client side (OAuth 2.1 per MCP 2025-11-25): a server's 401 or 403 in,
//! a bearer token or a typed error out. Knows nothing of MCP messages.

pub mod agent;
mod challenge;
mod discovery;
mod fetch;
mod flow;
pub mod settings;
pub mod store;

pub use discovery::AuthStep;
pub use flow::{AuthError, Authorizer};

/// Whether an answer asks for authorization: any 401, or a 403 for want of scope.
pub(crate) fn asks_for_authorization(status: u16, www_authenticate: Option<&str>) -> bool {
    status == 401
        || (status == 403 && challenge::Challenge::parse(www_authenticate).insufficient_scope())
}
