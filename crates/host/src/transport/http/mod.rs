//! The Streamable HTTP transport (MCP 2025-03-26 and later), client side.
//!
//! Every outgoing message is a POST. The answer to a request is either a JSON body or an SSE
//! stream that may carry requests from the plugin (an elicitation, say) before the response
//! itself. Messages the plugin sends outside a request arrive on an optional GET stream.
//!
//! A server may end either stream early and let the client resume it (SEP-1699): when its events
//! carried an `id`, the stream is resumed with a GET bearing `Last-Event-ID`, after the server's
//! `retry` delay, and the rest of it (a call's response, say) comes there.
//!
//! - `connection.rs`: one connection's shared state, the task that sends its messages in order,
//!   signing a request (OAuth), following a redirect, and ending the MCP session.
//! - `exchange.rs`: one POST and its answer (a JSON body or an event stream).
//! - `resume.rs`: resuming a call's event stream the server ended (`Last-Event-ID`).
//! - `listening.rs`: the GET stream for messages outside any request, opened again when it ends.
//! - `headers.rs`: the headers the transport sets (session, version, routing) and checks.
//! - `sse.rs`: the incremental `text/event-stream` parser.

mod connection;
mod exchange;
mod headers;
mod listening;
mod resume;
mod sse;
#[cfg(test)]
mod test_server;

pub(crate) use connection::connect;
pub(crate) use sse::{SseEvent, SseParser};
