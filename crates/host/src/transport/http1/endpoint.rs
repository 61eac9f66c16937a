//! One plugin endpoint: where its requests go (direct or through a proxy, over TLS or not), its
//! pool of idle keep-alive connections, and sending one request on a connection.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::{Duration, Instant};

use futures::FutureExt;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::rustls::pki_types::ServerName;

use super::response::Response;
use super::tunnel::open_through;
use super::{ConnectError, Connection, EndpointError, Io, MAX_OPENING, ReadError, SendError};
use crate::transport::buffered::Buffered;
use crate::transport::proxy::{Proxy, ProxyConfig};
use crate::transport::tls;

/// The client named on every request (MCP and sign-in alike).
const USER_AGENT: &str = concat!("user-agent: formwork/", env!("CARGO_PKG_VERSION"));
/// Idle keep-alive connections kept per endpoint (shared by all connections to it).
const MAX_IDLE: usize = 8;
/// An idle connection older than this is not reused: servers close idle ones (node after 5 s),
/// and a request written into a closing connection may or may not have been taken.
const MAX_IDLE_AGE: Duration = Duration::from_secs(4);
/// How long making a connection may take: to the plugin, or to a proxy and through its tunnel.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a TLS handshake may take once the connection is made.
const TLS_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(30);

/// One plugin endpoint (`http://` or `https://`) and its idle connections.
pub(crate) struct Endpoint {
    host: String,
    port: u16,
    /// `Host` header value.
    authority: String,
    /// Request target of every request: path and query, or the whole URL through a proxy
    /// (`http://` only; an `https://` request goes through a tunnel as it would go direct).
    target: String,
    tls: Option<(TlsConnector, ServerName<'static>)>,
    /// The HTTP proxy that connections go through, read from the environment (see `proxy.rs`).
    proxy: Option<Proxy>,
    idle: Mutex<Vec<(Connection, Instant)>>,
    /// Requests not yet answered with a head, across every connection to the endpoint, each for
    /// a moment at most. A server accepts connections at its own pace and drops what overflows
    /// its listen queue (node's holds 511); thousands of calls started at once would overflow it.
    pub(crate) opening: tokio::sync::Semaphore,
}

impl Endpoint {
    /// The endpoint of `url`, shared by every connection of the process to it while any is
    /// open, so that they draw on one pool of idle connections instead of each keeping its own.
    pub(crate) fn shared(url: &str) -> Result<Arc<Endpoint>, EndpointError> {
        static ENDPOINTS: OnceLock<Mutex<HashMap<String, Weak<Endpoint>>>> = OnceLock::new();
        let endpoints = ENDPOINTS.get_or_init(Mutex::default);
        let mut endpoints = endpoints.lock().map_err(|_| EndpointError::Poisoned)?;
        if let Some(endpoint) = endpoints.get(url).and_then(Weak::upgrade) {
            return Ok(endpoint);
        }
        let endpoint = Endpoint::new(url)?;
        endpoints.retain(|_, endpoint| endpoint.strong_count() > 0);
        endpoints.insert(url.to_owned(), Arc::downgrade(&endpoint));
        Ok(endpoint)
    }

    /// The endpoint of `url`, through the proxy that the process's environment names for it.
    pub(crate) fn new(url: &str) -> Result<Arc<Endpoint>, EndpointError> {
        Endpoint::with_proxies(url, &ProxyConfig::from_process())
    }

    fn with_proxies(url: &str, proxies: &ProxyConfig) -> Result<Arc<Endpoint>, EndpointError> {
        let parsed = url::Url::parse(url)?;
        if !parsed.username().is_empty() || parsed.password().is_some() {
            return Err(EndpointError::CredentialsInUrl);
        }
        let secure = match parsed.scheme() {
            "http" => false,
            "https" => true,
            _ => return Err(EndpointError::NotHttp),
        };
        let host = match parsed.host() {
            Some(url::Host::Domain(domain)) => domain.to_owned(),
            Some(url::Host::Ipv4(ip)) => ip.to_string(),
            Some(url::Host::Ipv6(ip)) => ip.to_string(),
            None => return Err(EndpointError::NoHost),
        };
        let port = parsed
            .port_or_known_default()
            .ok_or(EndpointError::NoPort)?;
        let authority = match (parsed.host_str(), parsed.port()) {
            (Some(name), Some(port)) => format!("{name}:{port}"),
            (Some(name), None) => name.to_owned(),
            (None, _) => return Err(EndpointError::NoHost),
        };
        let proxy = proxies.proxy_for(secure, &host, port)?;
        let mut target = match &proxy {
            Some(_) if !secure => format!("http://{authority}{}", parsed.path()),
            _ => parsed.path().to_owned(),
        };
        if let Some(query) = parsed.query() {
            target.push('?');
            target.push_str(query);
        }
        let tls = if secure {
            let name = ServerName::try_from(host.clone())?;
            Some((tls::connector()?, name))
        } else {
            None
        };
        Ok(Arc::new(Endpoint {
            host,
            port,
            authority,
            target,
            tls,
            proxy,
            idle: Mutex::new(Vec::new()),
            opening: tokio::sync::Semaphore::new(MAX_OPENING),
        }))
    }

    /// Sends one request and reads the response head. An idle connection is reused only while
    /// it is young and quiet; if the server closed it anyway before a byte of an answer came (a
    /// close racing our write), the request is sent once more on a fresh connection. An answer
    /// that broke off is never retried: the server had the request.
    pub(crate) async fn send(
        self: &Arc<Endpoint>,
        method: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Result<Response, SendError> {
        let request = self.encode(method, headers, body);
        if let Some(connection) = self.take_idle()
            && let Some(response) = self
                .exchange(connection, &request)
                .await
                .map_err(|err| SendError::Failed(err.to_string()))?
        {
            return self.past_the_proxy(response);
        }
        // Boxed: a connect (maybe a TLS handshake) needs a large state, briefly.
        let connection = Box::pin(self.connect())
            .await
            .map_err(|err| SendError::Unreachable(err.to_string()))?;
        let response = self
            .exchange(connection, &request)
            .await
            .map_err(|err| SendError::Failed(err.to_string()))?
            .ok_or_else(|| {
                SendError::Failed("the server closed the connection without answering".to_owned())
            })?;
        self.past_the_proxy(response)
    }

    /// A forwarding proxy's own refusal (407: it wants other credentials) means the plugin was
    /// never asked; any other status may be the plugin's, and goes up as its answer.
    fn past_the_proxy(&self, response: Response) -> Result<Response, SendError> {
        match &self.proxy {
            Some(proxy) if self.tls.is_none() && response.status == 407 => {
                Err(SendError::Unreachable(format!(
                    "the proxy {} refused the request: 407 Proxy Authentication Required",
                    proxy.shown
                )))
            }
            _ => Ok(response),
        }
    }

    /// Whether a connection to the endpoint can be made now (it is dropped at once).
    pub(crate) async fn reachable(&self) -> Result<(), ConnectError> {
        Box::pin(self.connect()).await.map(drop)
    }

    fn encode(&self, method: &str, headers: &[(&str, &str)], body: &[u8]) -> Vec<u8> {
        let mut request = Vec::with_capacity(256 + body.len());
        let mut line = |text: &str| {
            request.extend_from_slice(text.as_bytes());
            request.extend_from_slice(b"\r\n");
        };
        line(&format!("{method} {} HTTP/1.1", self.target));
        line(&format!("host: {}", self.authority));
        // Some servers (and the filters before them) refuse requests that name no client;
        // one configured in `http_headers` stands instead.
        if !headers
            .iter()
            .any(|(name, _)| name.eq_ignore_ascii_case("user-agent"))
        {
            line(USER_AGENT);
        }
        for (name, value) in headers {
            line(&format!("{name}: {value}"));
        }
        if let Some(authorization) = self.forwarding_authorization() {
            line(&format!("proxy-authorization: {authorization}"));
        }
        if !body.is_empty() || method == "POST" {
            line(&format!("content-length: {}", body.len()));
        }
        line("");
        request.extend_from_slice(body);
        request
    }

    /// The newest idle connection that is young and has nothing to read (a closed one reads
    /// its end at once, a broken one stray bytes); older or noisy ones are dropped.
    fn take_idle(&self) -> Option<Connection> {
        let mut idle = self.idle.lock().ok()?;
        while let Some((mut connection, since)) = idle.pop() {
            let quiet = connection.fill_buf().now_or_never().is_none();
            if quiet && since.elapsed() < MAX_IDLE_AGE {
                return Some(connection);
            }
        }
        None
    }

    pub(super) fn put_idle(&self, connection: Connection) {
        if let Ok(mut idle) = self.idle.lock()
            && idle.len() < MAX_IDLE
        {
            idle.push((connection, Instant::now()));
        }
    }

    /// `Proxy-Authorization` of a request sent to a forwarding proxy (a tunnel's is sent once,
    /// with its `CONNECT`, and never reaches the plugin).
    fn forwarding_authorization(&self) -> Option<&str> {
        match (&self.proxy, &self.tls) {
            (Some(proxy), None) => proxy.authorization.as_deref(),
            _ => None,
        }
    }

    async fn connect(&self) -> Result<Connection, ConnectError> {
        let tcp = match &self.proxy {
            None => {
                let address = (self.host.as_str(), self.port);
                tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(address))
                    .await
                    .map_err(|_| ConnectError::TimedOut {
                        host: self.host.clone(),
                        port: self.port,
                    })?
                    .map_err(|source| ConnectError::Failed {
                        host: self.host.clone(),
                        port: self.port,
                        source,
                    })?
            }
            Some(proxy) => {
                let through = self.tls.is_some().then(|| self.tunnel_authority());
                tokio::time::timeout(CONNECT_TIMEOUT, open_through(proxy, through.as_deref()))
                    .await
                    .map_err(|_| ConnectError::ProxyTimedOut(proxy.shown.clone()))??
            }
        };
        let _ = tcp.set_nodelay(true);
        let io: Pin<Box<dyn Io>> = match &self.tls {
            None => Box::pin(tcp),
            Some((connector, name)) => Box::pin(
                tokio::time::timeout(TLS_HANDSHAKE_TIMEOUT, connector.connect(name.clone(), tcp))
                    .await
                    .map_err(|_| ConnectError::HandshakeTimedOut(self.host.clone()))?
                    .map_err(|err| {
                        ConnectError::Handshake(tls::handshake_failure(&self.host, &err))
                    })?,
            ),
        };
        Ok(Buffered::new(io))
    }

    /// `host:port` of a `CONNECT` (an IPv6 address in brackets).
    fn tunnel_authority(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }

    /// Writes the request and reads the head. `Ok(None)`: the connection closed before a byte
    /// of the response arrived.
    async fn exchange(
        self: &Arc<Endpoint>,
        mut connection: Connection,
        request: &[u8],
    ) -> Result<Option<Response>, ReadError> {
        let io = connection.get_mut();
        if io.write_all(request).await.is_err() || io.flush().await.is_err() {
            return Ok(None);
        }
        Response::read(connection, Arc::clone(self)).await
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::transport::http1::test_server::{ACCEPTED, accepted, serve};
    use tokio::net::TcpListener;

    /// A server that takes the connection and never says a word: the handshake gives up.
    #[tokio::test(start_paused = true)]
    async fn a_tls_handshake_that_never_ends_times_out() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        tokio::spawn(async move {
            let mut held = Vec::new();
            while let Ok((socket, _)) = listener.accept().await {
                held.push(socket);
            }
        });
        let endpoint = Endpoint::new(&format!("https://{address}/mcp")).unwrap();
        let started = tokio::time::Instant::now();
        let error = match endpoint.send("POST", &[], b"{}").await {
            Err(SendError::Unreachable(reason)) => reason,
            Err(SendError::Failed(reason)) => panic!("failed, not unreachable: {reason}"),
            Ok(_) => panic!("a silent server answered"),
        };
        assert_eq!(error, "the TLS handshake with 127.0.0.1 timed out");
        assert_eq!(started.elapsed(), TLS_HANDSHAKE_TIMEOUT);
    }

    #[tokio::test]
    async fn reads_chunked_and_length_bodies_on_one_kept_alive_connection() {
        let (url, connections) = serve(vec![
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nmcp-session-id: s1\r\ntransfer-encoding: chunked\r\n\r\n5;x=y\r\nhello\r\n7\r\n, world\r\n0\r\n\r\n",
            "HTTP/1.1 200 OK\r\nContent-Type: Application/JSON\r\nContent-Length: 4\r\n\r\n{\"a\"",
            ACCEPTED,
        ])
        .await;
        let endpoint = Endpoint::new(&url).unwrap();
        let response = endpoint.send("POST", &[], b"{}").await.unwrap();
        assert_eq!(response.status, 200);
        assert_eq!(response.content_type, "text/event-stream");
        assert_eq!(response.session_id.as_deref(), Some("s1"));
        assert_eq!(response.read_to_end(100).await.unwrap(), b"hello, world");

        let response = endpoint.send("POST", &[], b"{}").await.unwrap();
        assert_eq!(response.content_type, "application/json");
        assert_eq!(response.read_to_end(100).await.unwrap(), b"{\"a\"");

        let response = endpoint.send("POST", &[], b"{}").await.unwrap();
        assert_eq!(response.status, 202);
        assert_eq!(response.read_to_end(100).await.unwrap(), b"");
        assert_eq!(
            accepted(&connections),
            1,
            "one kept-alive connection served all three"
        );
        assert_eq!(endpoint.idle.lock().unwrap().len(), 1);
    }

    #[tokio::test]
    async fn a_connection_the_server_closes_is_not_reused() {
        let (url, connections) = serve(vec![
            // Closed by the server after answering, without saying so.
            "HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\nCLOSE",
            "HTTP/1.1 202 Accepted\r\nconnection: keep-alive, close\r\ncontent-length: 0\r\n\r\nCLOSE",
            ACCEPTED,
        ])
        .await;
        let endpoint = Endpoint::new(&url).unwrap();
        let response = endpoint.send("POST", &[], b"{}").await.unwrap();
        assert_eq!(response.read_to_end(100).await.unwrap(), b"");
        assert_eq!(endpoint.idle.lock().unwrap().len(), 1);
        // Once the close has arrived, the pooled connection reads its end and is dropped
        // instead of taking the next request.
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(endpoint.take_idle().is_none());
        let response = endpoint.send("POST", &[], b"{}").await.unwrap();
        assert_eq!(response.read_to_end(100).await.unwrap(), b"");
        assert!(
            endpoint.idle.lock().unwrap().is_empty(),
            "`close` among the tokens"
        );
        let response = endpoint.send("POST", &[], b"{}").await.unwrap();
        assert_eq!(response.status, 202);
        assert_eq!(accepted(&connections), 3);
    }

    /// A reset may come after the server took the request: it is an error, never a reason to
    /// send the request again.
    #[tokio::test]
    async fn a_reset_is_not_sent_again() {
        let (url, connections) = serve(vec![ACCEPTED, "RESET", ACCEPTED]).await;
        let endpoint = Endpoint::new(&url).unwrap();
        let response = endpoint.send("POST", &[], b"{}").await.unwrap();
        assert_eq!(response.read_to_end(100).await.unwrap(), b"");
        let failed = endpoint.send("POST", &[], b"{}").await.err().unwrap();
        assert!(matches!(failed, SendError::Failed(_)), "{failed:?}");
        assert_eq!(accepted(&connections), 1, "no second try");
    }

    #[tokio::test]
    async fn an_answer_that_breaks_off_is_not_sent_again() {
        let (url, connections) =
            serve(vec![ACCEPTED, "HTTP/1.1 200 OK\r\ncontent-CLOSE", ACCEPTED]).await;
        let endpoint = Endpoint::new(&url).unwrap();
        let response = endpoint.send("POST", &[], b"{}").await.unwrap();
        assert_eq!(response.read_to_end(100).await.unwrap(), b"");
        assert_eq!(
            endpoint
                .send("POST", &[], b"{}")
                .await
                .err()
                .unwrap()
                .to_string(),
            "the server closed the connection mid-answer"
        );
        assert_eq!(
            accepted(&connections),
            1,
            "no second try of a request the server had"
        );
    }

    /// An endpoint whose environment names `proxy` for both schemes.
    fn proxied(url: &str, proxy: &str) -> Arc<Endpoint> {
        let proxies = ProxyConfig::from_env(|name| {
            matches!(name, "https_proxy" | "http_proxy").then(|| proxy.to_owned())
        });
        Endpoint::with_proxies(url, &proxies).unwrap()
    }

    /// A `User-Agent` from `http_headers` (any case) stands instead of formwork's own.
    #[test]
    fn a_configured_user_agent_stands_instead_of_formworks() {
        let endpoint =
            Endpoint::with_proxies("http://a.test/mcp", &ProxyConfig::from_env(|_| None)).unwrap();
        let request = endpoint.encode("GET", &[("User-Agent", "their-client/2")], b"");
        assert_eq!(
            String::from_utf8(request).unwrap(),
            "GET /mcp HTTP/1.1\r\nhost: a.test\r\nUser-Agent: their-client/2\r\n\r\n"
        );
    }

    #[test]
    fn through_a_proxy_http_requests_name_the_whole_url_and_tunnels_hide_the_credentials() {
        let request = |url: &str| {
            let endpoint = proxied(url, "http://me:secret@proxy.test:3128");
            String::from_utf8(endpoint.encode("POST", &[("accept", "*/*")], b"{}")).unwrap()
        };
        assert_eq!(
            request("http://a.test:8080/mcp?x=1"),
            "POST http://a.test:8080/mcp?x=1 HTTP/1.1\r\nhost: a.test:8080\r\nuser-agent: formwork/0.1.0\r\naccept: */*\r\nproxy-authorization: Basic bWU6c2VjcmV0\r\ncontent-length: 2\r\n\r\n{}"
        );
        // Through a tunnel the request is the one sent direct: the credentials go to the
        // proxy with the `CONNECT` only.
        assert_eq!(
            request("https://[::1]/mcp"),
            "POST /mcp HTTP/1.1\r\nhost: [::1]\r\nuser-agent: formwork/0.1.0\r\naccept: */*\r\ncontent-length: 2\r\n\r\n{}"
        );
        assert_eq!(
            proxied("https://[::1]/mcp", "p").tunnel_authority(),
            "[::1]:443"
        );
    }

    /// The reason a request through `proxy` to `url` got no response.
    async fn refusal(url: &str, proxy: &str) -> String {
        match proxied(url, proxy).send("POST", &[], b"{}").await {
            Err(SendError::Unreachable(reason)) => reason,
            Err(SendError::Failed(reason)) => panic!("failed, not unreachable: {reason}"),
            Ok(response) => panic!("answered {}", response.status),
        }
    }

    #[tokio::test]
    async fn a_proxy_that_refuses_or_is_not_there_is_named() {
        const REFUSED: &str =
            "HTTP/1.1 407 Proxy Authentication Required\r\ncontent-length: 0\r\n\r\n";
        let (url, _) = serve(vec![REFUSED]).await;
        let proxy = url.trim_end_matches("/mcp");
        assert_eq!(
            refusal("https://a.test/mcp", proxy).await,
            format!(
                "the proxy {proxy} refused the tunnel to a.test:443: 407 Proxy Authentication Required"
            )
        );
        let (url, _) = serve(vec![
            "HTTP/1.1 502 Bad Gateway\r\ncontent-length: 0\r\n\r\n",
        ])
        .await;
        let proxy = url.trim_end_matches("/mcp");
        assert_eq!(
            refusal("https://[::1]:8443/mcp", proxy).await,
            format!("the proxy {proxy} refused the tunnel to [::1]:8443: 502 Bad Gateway")
        );
        let (url, _) = serve(vec![REFUSED]).await;
        let proxy = url.trim_end_matches("/mcp");
        assert_eq!(
            refusal("http://a.test/mcp", proxy).await,
            format!("the proxy {proxy} refused the request: 407 Proxy Authentication Required")
        );
        // A port nobody listens on (bound, then let go).
        let free = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap();
        let refused = refusal("https://a.test/mcp", &format!("http://{free}")).await;
        assert!(
            refused.starts_with(&format!("connecting to the proxy http://{free} failed: ")),
            "{refused}"
        );
    }

    #[test]
    fn parses_endpoints() {
        let endpoint = Endpoint::new("http://[::1]:8080/a/mcp?x=1").unwrap();
        assert_eq!(
            (
                endpoint.host.as_str(),
                endpoint.port,
                endpoint.authority.as_str(),
                endpoint.target.as_str()
            ),
            ("::1", 8080, "[::1]:8080", "/a/mcp?x=1")
        );
        assert!(Endpoint::new("https://example.com").unwrap().tls.is_some());
        assert_eq!(
            Endpoint::new("ftp://x").err().unwrap().to_string(),
            "the URL must use http or https"
        );
        assert_eq!(
            Endpoint::new("http://me:secret@x/mcp")
                .err()
                .unwrap()
                .to_string(),
            "credentials in the URL are not sent; use `bearer_token_env_var` or `http_headers`"
        );
    }
}
