//! A connection through an HTTP proxy: plain for a forwarded `http://` request, or a `CONNECT`
//! tunnel for `https://`.

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::{MAX_HEAD_BYTES, ProxyConnectError};
use crate::transport::proxy::Proxy;

/// A connection to `proxy`; with `tunnel` (`host:port`), a tunnel through it to there.
pub(super) async fn open_through(
    proxy: &Proxy,
    tunnel: Option<&str>,
) -> Result<TcpStream, ProxyConnectError> {
    let mut tcp = TcpStream::connect((proxy.host.as_str(), proxy.port))
        .await
        .map_err(|source| ProxyConnectError::Connect {
            proxy: proxy.shown.clone(),
            source,
        })?;
    let Some(authority) = tunnel else {
        return Ok(tcp);
    };
    let mut request = format!("CONNECT {authority} HTTP/1.1\r\nhost: {authority}\r\n");
    if let Some(authorization) = &proxy.authorization {
        request.push_str(&format!("proxy-authorization: {authorization}\r\n"));
    }
    request.push_str("\r\n");
    let failed = |source| ProxyConnectError::Io {
        proxy: proxy.shown.clone(),
        source,
    };
    tcp.write_all(request.as_bytes()).await.map_err(failed)?;
    // Read a byte at a time: what follows the head is the tunnel's, for TLS to read.
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") && !head.ends_with(b"\n\n") {
        if head.len() >= MAX_HEAD_BYTES {
            return Err(ProxyConnectError::TooLarge(proxy.shown.clone()));
        }
        let mut byte = [0];
        if tcp.read(&mut byte).await.map_err(failed)? == 0 {
            return Err(ProxyConnectError::Closed {
                proxy: proxy.shown.clone(),
                authority: authority.to_owned(),
            });
        }
        head.push(byte[0]);
    }
    let mut fields = [httparse::EMPTY_HEADER; 64];
    let mut parsed = httparse::Response::new(&mut fields);
    if !matches!(parsed.parse(&head), Ok(httparse::Status::Complete(_))) {
        return Err(ProxyConnectError::Malformed(proxy.shown.clone()));
    }
    let status = parsed.code.unwrap_or(0);
    if !(200..300).contains(&status) {
        let reason: String = parsed
            .reason
            .unwrap_or_default()
            .chars()
            .take(100)
            .collect();
        return Err(ProxyConnectError::Refused {
            proxy: proxy.shown.clone(),
            authority: authority.to_owned(),
            status: format!("{status} {reason}").trim_end().to_owned(),
        });
    }
    Ok(tcp)
}
