//! Transports move raw JSON-RPC frames between the host and one plugin.
//!
//! A transport takes serialized messages out ([`Outgoing`]) and brings frames in ([`Frames`]).
//! Framing (lines on stdio, POST bodies and SSE events on HTTP) stays inside the transport; the
//! connection above it sees only whole messages and the moment the plugin goes away.

pub mod auth;
mod buffered;
pub(crate) mod http;
pub(crate) mod http1;
pub(crate) mod lines;
mod proxy;
pub(crate) mod stdio;
mod tls;

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

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

/// The most bytes that may wait to be sent to one plugin. A plugin that stops reading its input
/// would otherwise make the host hold everything it sends; past this, the connection ends.
pub const MAX_QUEUED_BYTES: usize = 32 * 1024 * 1024;

/// Where the connection's messages go, each whole and in order.
pub(crate) enum Outgoing {
    /// To a task that sends them (HTTP: a POST each); `queued` counts the bytes it has not taken.
    Channel {
        sender: mpsc::UnboundedSender<(String, Sent)>,
        queued: Arc<Queued>,
    },
    /// Into a child's stdin, at once when the pipe takes them.
    Pipe(stdio::Writer),
}

/// The bytes in a channel to a sending task, counted against [`MAX_QUEUED_BYTES`]; once over,
/// full for good.
#[derive(Debug, Default)]
pub(crate) struct Queued {
    bytes: AtomicUsize,
    full: AtomicBool,
}

impl Queued {
    fn add(&self, len: usize) -> Result<(), QueueFull> {
        if self.bytes.fetch_add(len, Ordering::AcqRel) + len > MAX_QUEUED_BYTES {
            self.full.store(true, Ordering::Release);
            return Err(QueueFull);
        }
        Ok(())
    }

    /// The sending task took a message of `len` bytes out of the channel.
    pub(crate) fn taken(&self, len: usize) {
        self.bytes.fetch_sub(len, Ordering::AcqRel);
    }

    /// Whether it overflowed: what still waits is not sent.
    pub(crate) fn is_full(&self) -> bool {
        self.full.load(Ordering::Acquire)
    }
}

/// More than [`MAX_QUEUED_BYTES`] would wait for the plugin: it does not read what it is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct QueueFull;

impl std::fmt::Display for QueueFull {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "it does not read what formwork sends: more than {MAX_QUEUED_BYTES} bytes wait for it"
        )
    }
}

impl Outgoing {
    /// Sends or queues `message`; once the transport is gone, it is dropped. `QueueFull` when
    /// it would make more than [`MAX_QUEUED_BYTES`] wait: it is not sent, and no later
    /// message will be.
    pub(crate) fn send(&self, message: String, kind: Sent) -> Result<(), QueueFull> {
        match self {
            Outgoing::Channel { sender, queued } => {
                if queued.add(message.len()).is_err() {
                    sender.close_channel();
                    return Err(QueueFull);
                }
                let _ = sender.unbounded_send((message, kind));
                Ok(())
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
