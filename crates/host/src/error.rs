//! Errors of the host runtime.

use std::time::Duration;

use crate::jsonrpc::RpcError;

/// Everything that can go wrong between the host and a plugin.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HostError {
    /// The plugin's command could not be started.
    #[error("could not start plugin {command:?}: {reason}")]
    Spawn {
        /// The shell command.
        command: String,
        /// Why.
        reason: String,
    },
    /// The plugin could not be reached or did not complete the handshake.
    #[error("could not connect to plugin {target}: {reason}")]
    Connect {
        /// The command or URL.
        target: String,
        /// Why.
        reason: String,
    },
    /// The plugin answered `initialize` with a protocol version formwork does not speak.
    #[error("the plugin answered with protocol version {0:?}, which formwork does not support")]
    UnsupportedVersion(String),
    /// The plugin exited or the connection broke; open forms were cancelled.
    #[error("plugin {plugin} went away: {reason}")]
    PluginGone {
        /// The plugin's name.
        plugin: String,
        /// What was observed.
        reason: String,
    },
    /// The plugin answered a request with a JSON-RPC error.
    #[error("{method} failed: {error}")]
    Rpc {
        /// The request's method.
        method: String,
        /// The error object.
        error: Box<RpcError>,
    },
    /// A request took longer than its limit (time with a form open does not count).
    #[error("{method} timed out after {after:?}")]
    Timeout {
        /// The request's method.
        method: String,
        /// The limit.
        after: Duration,
    },
    /// The plugin's answer has the wrong shape.
    #[error("{method} returned an invalid result: {reason}")]
    InvalidResponse {
        /// The request's method.
        method: String,
        /// What is wrong.
        reason: String,
    },
}
