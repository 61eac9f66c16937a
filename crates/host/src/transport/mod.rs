//! Transports move raw JSON-RPC frames between the host and one plugin.
//!
//! A transport is a pair of channels: serialized messages go out, frames come in. Framing
//! (lines on stdio, POST bodies and SSE events on HTTP) stays inside the transport; the
//! connection above it sees only whole messages and the moment the plugin goes away.

pub(crate) mod http;
pub(crate) mod stdio;

use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// The largest single message accepted from a plugin. Larger ones are discarded and reported.
pub const MAX_FRAME_BYTES: usize = 16 * 1024 * 1024;

/// What a transport delivers to the connection.
#[derive(Debug)]
pub(crate) enum Frame {
    /// One JSON-RPC message (or batch) as text.
    Message(String),
    /// A message exceeded [`MAX_FRAME_BYTES`] and was discarded.
    Oversized,
    /// The plugin is gone; no frame follows.
    Closed(String),
}

/// The two ends of a running transport.
pub(crate) struct Transport {
    pub outgoing: mpsc::UnboundedSender<String>,
    pub incoming: mpsc::UnboundedReceiver<Frame>,
    pub tasks: Vec<JoinHandle<()>>,
}
