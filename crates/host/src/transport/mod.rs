//! Transports move raw JSON-RPC frames between the host and one plugin.
//!
//! A transport takes serialized messages out ([`Outgoing`]) and brings frames in ([`Frames`]).
//! Framing (lines on stdio, POST bodies and SSE events on HTTP) stays inside the transport; the
//! connection above it sees only whole messages and the moment the plugin goes away.

mod buffered;
pub(crate) mod http;
mod http1;
mod lines;
pub(crate) mod stdio;

use std::pin::Pin;

use futures::Stream;
use futures::channel::mpsc;
use tokio::task::JoinHandle;

/// The largest single message accepted from a plugin (a stdio line, an SSE event, an HTTP
/// body). A larger one is skipped and reported, and the connection goes on.
pub const MAX_FRAME_BYTES: usize = 16 * 1024 * 1024;

/// Logs a message as it leaves for the plugin: target `formwork::wire`, trace level, the text
/// whole (answers included, so it is for debugging only). Logged as the transport takes it to
/// send (stdio: just before the write; HTTP: just before its POST takes a pooled connection or
/// opens one), so that the time to it is the host's own.
pub(crate) fn trace_out(message: &str) {
    tracing::trace!(target: "formwork::wire", direction = "out", body = %message, "to the plugin");
}

/// Logs a message as soon as it is read from the plugin, like [`trace_out`].
pub(crate) fn trace_in(message: &str) {
    tracing::trace!(target: "formwork::wire", direction = "in", body = %message, "from the plugin");
}

/// What a transport delivers to the connection.
#[derive(Debug)]
pub(crate) enum Frame {
    /// One JSON-RPC message as text, and the id of the host's request whose response
    /// stream carried it (HTTP only: a plugin's request that belongs to that call).
    Message(String, Option<u64>),
    /// A message exceeded [`MAX_FRAME_BYTES`] and was discarded.
    Oversized,
    /// The plugin is gone; no frame follows.
    Closed(String),
}

/// The frames a transport delivers, in order; after `Frame::Closed` it ends.
pub(crate) type Frames = Pin<Box<dyn Stream<Item = Frame> + Send>>;

/// What an outgoing message is, as far as a transport cares; the connection knows it when it
/// writes the message, so no transport reads it back. (HTTP: a request's answer is read from
/// its own POST, a cancel ends that read, `initialized` opens the listening stream.)
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sent {
    /// A request of the host's, under this id.
    Request(u64),
    /// `notifications/cancelled` for the host's request with this id.
    Cancel(u64),
    /// `notifications/initialized`.
    Initialized,
    /// Any other notification, or a response to the plugin.
    Other,
}

/// Where the connection's messages go, each whole and in order.
pub(crate) enum Outgoing {
    /// To a task that sends them (HTTP: a POST each).
    Channel(mpsc::UnboundedSender<(String, Sent)>),
    /// Into a child's stdin, at once when the pipe takes them.
    Pipe(stdio::Writer),
}

impl Outgoing {
    /// Sends or queues `message`; once the transport is gone, it is dropped.
    pub(crate) fn send(&self, message: String, kind: Sent) {
        match self {
            Outgoing::Channel(channel) => {
                let _ = channel.unbounded_send((message, kind));
            }
            Outgoing::Pipe(pipe) => pipe.send(message),
        }
    }
}

/// The two ends of a running transport.
pub(crate) struct Transport {
    pub outgoing: Outgoing,
    /// Polled by the connection's own task: on stdio, reading a line takes no other task.
    pub incoming: Frames,
    pub tasks: Vec<JoinHandle<()>>,
}
