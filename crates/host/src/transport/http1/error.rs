//! Why the HTTP/1.1 client could not do what it was asked, each in the words a person reads.

use tokio_rustls::rustls::pki_types::InvalidDnsNameError;

use crate::transport::proxy::ProxyError;
use crate::transport::tls::TlsUnavailable;

/// Why a request got no response.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SendError {
    /// No connection could be made: nobody listens there (any more).
    #[error("{0}")]
    Unreachable(String),
    /// The request may have gone out, but no response came back.
    #[error("{0}")]
    Failed(String),
}

/// Why a URL names no endpoint the client can reach.
#[derive(Debug, thiserror::Error)]
pub(crate) enum EndpointError {
    #[error("the endpoint table is poisoned")]
    Poisoned,
    #[error("not a valid URL: {0}")]
    NotAUrl(#[from] url::ParseError),
    #[error("credentials in the URL are not sent; use `bearer_token_env_var` or `http_headers`")]
    CredentialsInUrl,
    #[error("the URL must use http or https")]
    NotHttp,
    #[error("the URL has no host")]
    NoHost,
    #[error("the URL has no port")]
    NoPort,
    #[error(transparent)]
    Proxy(#[from] ProxyError),
    #[error("not a valid TLS server name: {0}")]
    ServerName(#[from] InvalidDnsNameError),
    #[error(transparent)]
    Tls(#[from] TlsUnavailable),
}

/// Why no connection to an endpoint could be made.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ConnectError {
    #[error("connecting to {host}:{port} timed out")]
    TimedOut { host: String, port: u16 },
    #[error("connecting to {host}:{port} failed: {source}")]
    Failed {
        host: String,
        port: u16,
        source: std::io::Error,
    },
    #[error("connecting through the proxy {0} timed out")]
    ProxyTimedOut(String),
    #[error(transparent)]
    Proxy(#[from] ProxyConnectError),
    #[error("the TLS handshake with {0} timed out")]
    HandshakeTimedOut(String),
    /// A failed handshake, as [`crate::transport::tls::handshake_failure`] words it.
    #[error("{0}")]
    Handshake(String),
}

/// Why a connection through a proxy (a tunnel, for `https://`) could not be made; `proxy` is
/// how the proxy is shown.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ProxyConnectError {
    #[error("connecting to the proxy {proxy} failed: {source}")]
    Connect {
        proxy: String,
        source: std::io::Error,
    },
    #[error("the proxy {proxy} failed: {source}")]
    Io {
        proxy: String,
        source: std::io::Error,
    },
    #[error("the proxy {0} sent too large an answer")]
    TooLarge(String),
    #[error("the proxy {proxy} closed the connection instead of opening a tunnel to {authority}")]
    Closed { proxy: String, authority: String },
    #[error("the proxy {0} sent a malformed answer")]
    Malformed(String),
    /// `status` is the status code and reason, as the proxy gave them.
    #[error("the proxy {proxy} refused the tunnel to {authority}: {status}")]
    Refused {
        proxy: String,
        authority: String,
        status: String,
    },
}

/// Why a response could not be read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ReadError {
    #[error("reading the server's answer failed: {0}")]
    Io(#[from] std::io::Error),
    #[error("the server sent a malformed HTTP response")]
    MalformedHead,
    #[error("the server sent a bad Content-Length")]
    BadLength,
    #[error("the server's response head is too large")]
    HeadTooLarge,
    #[error("the server closed the connection mid-answer")]
    ClosedMidAnswer,
    #[error("the server closed the connection mid-body")]
    ClosedMidBody,
    #[error("the server closed the connection mid-chunk")]
    ClosedMidChunk,
    #[error("the server sent a malformed chunk")]
    MalformedChunk,
    #[error("the server sent a malformed chunk size")]
    MalformedChunkSize,
    #[error("the server's answer exceeds {0} bytes")]
    TooLarge(usize),
}
