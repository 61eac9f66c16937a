//! A small HTTP/1.1 client for the Streamable HTTP transport.
//!
//! A pending form holds a plugin's event stream open for as long as the person takes: one
//! connection for the call's stream and one for the session's listening stream. A general client
//! keeps tens of kilobytes per connection (fixed read and write buffers, a dispatch channel, a
//! connection task); here an open stream costs its socket, a 1 KiB read buffer and the reading
//! task. It speaks only what MCP needs: one request per connection at a time, `Content-Length`,
//! chunked or until-close bodies, keep-alive reuse of idle connections, TLS through rustls
//! (trusting the roots of `tls.rs`), and an HTTP proxy where the environment names one
//! (`proxy.rs`): a `CONNECT` tunnel for `https://`, requests in absolute form for `http://`.
//!
//! - `endpoint.rs`: one endpoint, its pool of idle connections, and sending a request on one.
//! - `tunnel.rs`: a connection through an HTTP proxy (`CONNECT` for `https://`).
//! - `response.rs`: reading a response: its head, then its body however it is framed.
//! - `error.rs`: why each of those failed.

mod endpoint;
mod error;
mod response;
#[cfg(test)]
mod test_server;
mod tunnel;

use std::pin::Pin;

use tokio::io::{AsyncRead, AsyncWrite};

use super::buffered::Buffered;

pub(crate) use endpoint::Endpoint;
pub(crate) use error::{ConnectError, EndpointError, ProxyConnectError, ReadError, SendError};
pub(crate) use response::{Body, Response};

/// A response head larger than this is refused.
const MAX_HEAD_BYTES: usize = 64 * 1024;
/// Requests per endpoint that may wait for their response head at once (see `Endpoint::opening`).
pub(crate) const MAX_OPENING: usize = 128;

trait Io: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Io for T {}

/// Buffered only while unread bytes wait: an event stream may idle for as long as a form is open.
type Connection = Buffered<Pin<Box<dyn Io>>>;
