//! The workbench's errors.

use crate::model::ModelError;

/// Why the workbench could not start or stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WebError {
    /// The port could not be bound.
    #[error("cannot listen on 127.0.0.1:{port}: {source}")]
    Bind {
        /// The port asked for (`0`: any).
        port: u16,
        /// What the OS said.
        source: std::io::Error,
    },
    /// The server failed while serving.
    #[error("the workbench server failed: {0}")]
    Serve(std::io::Error),
    /// A token given in [`crate::WebOptions::token`] cannot travel in a URL fragment and a
    /// WebSocket subprotocol.
    #[error(
        "the access token must be 32 to 128 letters, digits, `-`, `.`, `_` or `~`, so that it fits a URL fragment and a WebSocket subprotocol"
    )]
    Token,
    /// The OS gave no randomness for the access token.
    #[error("cannot mint an access token: {0}")]
    Random(String),
    /// The scripted model file is unusable.
    #[error(transparent)]
    Model(#[from] ModelError),
}
