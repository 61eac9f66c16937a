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

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::{Duration, Instant};

use futures::FutureExt;

use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::rustls::pki_types::ServerName;

use super::buffered::Buffered;
use super::proxy::{Proxy, ProxyConfig};
use super::tls;

/// A response head larger than this is refused.
const MAX_HEAD_BYTES: usize = 64 * 1024;
/// The client named on every request (MCP and sign-in alike).
const USER_AGENT: &str = concat!("user-agent: formwork/", env!("CARGO_PKG_VERSION"));
/// Requests per endpoint that may wait for their response head at once (see `Endpoint::opening`).
pub(crate) const MAX_OPENING: usize = 128;
/// Idle keep-alive connections kept per endpoint (shared by all connections to it).
const MAX_IDLE: usize = 8;
/// An idle connection older than this is not reused: servers close idle ones (node after 5 s),
/// and a request written into a closing connection may or may not have been taken.
const MAX_IDLE_AGE: Duration = Duration::from_secs(4);
/// How long making a connection may take: to the plugin, or to a proxy and through its tunnel.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a TLS handshake may take once the connection is made.
const TLS_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(30);

trait Io: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Io for T {}

/// Buffered only while unread bytes wait: an event stream may idle for as long as a form is open.
type Connection = Buffered<Pin<Box<dyn Io>>>;

/// Why a request got no response.
#[derive(Debug)]
pub(crate) enum SendError {
    /// No connection could be made: nobody listens there (any more).
    Unreachable(String),
    /// The request may have gone out, but no response came back.
    Failed(String),
}

impl std::fmt::Display for SendError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SendError::Unreachable(reason) | SendError::Failed(reason) => f.write_str(reason),
        }
    }
}

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

/// A response whose head has been read; the body is read with [`Response::chunk`].
pub(crate) struct Response {
    pub status: u16,
    /// Lower-cased, parameters kept.
    pub content_type: String,
    pub session_id: Option<String>,
    /// `WWW-Authenticate`, for the authorization a 401 or 403 asks for.
    pub www_authenticate: Option<String>,
    /// `Location`, where a redirect points.
    pub location: Option<String>,
    /// `Retry-After`, how long a 429 or 503 asks the client to wait.
    pub retry_after: Option<String>,
    body: Body,
}

struct Body {
    connection: Option<Connection>,
    framing: Framing,
    /// Return the connection to the pool once the body is read.
    reusable: bool,
    endpoint: Arc<Endpoint>,
}

enum Framing {
    Length(u64),
    /// Bytes left in the current chunk; 0 means a size line comes next.
    Chunked {
        left: u64,
    },
    UntilClose,
    Done,
}

impl Endpoint {
    /// The endpoint of `url`, shared by every connection of the process to it while any is
    /// open, so that they draw on one pool of idle connections instead of each keeping its own.
    pub(crate) fn shared(url: &str) -> Result<Arc<Endpoint>, String> {
        static ENDPOINTS: OnceLock<Mutex<HashMap<String, Weak<Endpoint>>>> = OnceLock::new();
        let endpoints = ENDPOINTS.get_or_init(Mutex::default);
        let mut endpoints = endpoints
            .lock()
            .map_err(|_| "the endpoint table is poisoned")?;
        if let Some(endpoint) = endpoints.get(url).and_then(Weak::upgrade) {
            return Ok(endpoint);
        }
        let endpoint = Endpoint::new(url)?;
        endpoints.retain(|_, endpoint| endpoint.strong_count() > 0);
        endpoints.insert(url.to_owned(), Arc::downgrade(&endpoint));
        Ok(endpoint)
    }

    /// The endpoint of `url`, through the proxy that the process's environment names for it.
    pub(crate) fn new(url: &str) -> Result<Arc<Endpoint>, String> {
        Endpoint::with_proxies(url, &ProxyConfig::from_process())
    }

    fn with_proxies(url: &str, proxies: &ProxyConfig) -> Result<Arc<Endpoint>, String> {
        let parsed = url::Url::parse(url).map_err(|err| format!("not a valid URL: {err}"))?;
        if !parsed.username().is_empty() || parsed.password().is_some() {
            return Err(
                "credentials in the URL are not sent; use `bearer_token_env_var` or `http_headers`"
                    .to_owned(),
            );
        }
        let secure = match parsed.scheme() {
            "http" => false,
            "https" => true,
            _ => return Err("the URL must use http or https".to_owned()),
        };
        let host = match parsed.host() {
            Some(url::Host::Domain(domain)) => domain.to_owned(),
            Some(url::Host::Ipv4(ip)) => ip.to_string(),
            Some(url::Host::Ipv6(ip)) => ip.to_string(),
            None => return Err("the URL has no host".to_owned()),
        };
        let port = parsed
            .port_or_known_default()
            .ok_or("the URL has no port")?;
        let authority = match (parsed.host_str(), parsed.port()) {
            (Some(name), Some(port)) => format!("{name}:{port}"),
            (Some(name), None) => name.to_owned(),
            (None, _) => return Err("the URL has no host".to_owned()),
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
            let name = ServerName::try_from(host.clone())
                .map_err(|err| format!("not a valid TLS server name: {err}"))?;
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
                .map_err(SendError::Failed)?
        {
            return self.past_the_proxy(response);
        }
        // Boxed: a connect (maybe a TLS handshake) needs a large state, briefly.
        let connection = Box::pin(self.connect())
            .await
            .map_err(SendError::Unreachable)?;
        let response = self
            .exchange(connection, &request)
            .await
            .map_err(SendError::Failed)?
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
    pub(crate) async fn reachable(&self) -> Result<(), String> {
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

    fn put_idle(&self, connection: Connection) {
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

    async fn connect(&self) -> Result<Connection, String> {
        let tcp = match &self.proxy {
            None => {
                let address = (self.host.as_str(), self.port);
                tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(address))
                    .await
                    .map_err(|_| format!("connecting to {}:{} timed out", self.host, self.port))?
                    .map_err(|err| {
                        format!("connecting to {}:{} failed: {err}", self.host, self.port)
                    })?
            }
            Some(proxy) => {
                let through = self.tls.is_some().then(|| self.tunnel_authority());
                tokio::time::timeout(CONNECT_TIMEOUT, open_through(proxy, through.as_deref()))
                    .await
                    .map_err(|_| {
                        format!("connecting through the proxy {} timed out", proxy.shown)
                    })??
            }
        };
        let _ = tcp.set_nodelay(true);
        let io: Pin<Box<dyn Io>> = match &self.tls {
            None => Box::pin(tcp),
            Some((connector, name)) => Box::pin(
                tokio::time::timeout(TLS_HANDSHAKE_TIMEOUT, connector.connect(name.clone(), tcp))
                    .await
                    .map_err(|_| format!("the TLS handshake with {} timed out", self.host))?
                    .map_err(|err| tls::handshake_failure(&self.host, &err))?,
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
    ) -> Result<Option<Response>, String> {
        let io = connection.get_mut();
        if io.write_all(request).await.is_err() || io.flush().await.is_err() {
            return Ok(None);
        }
        let mut answered = false;
        // Interim answers (100 Continue, 103 Early Hints) come before the final one.
        let head = loop {
            let Some(bytes) = read_head(&mut connection, answered).await? else {
                return Ok(None);
            };
            answered = true;
            let head = Head::parse(&bytes)?;
            if !(100..200).contains(&head.status) || head.status == 101 {
                break head;
            }
        };
        let Head {
            status,
            content_type,
            session_id,
            www_authenticate,
            location,
            retry_after,
            length,
            chunked,
            encoded,
            mut close,
        } = head;
        let no_body = matches!(status, 204 | 304) || (100..200).contains(&status);
        let framing = if no_body {
            Framing::Done
        } else if chunked {
            Framing::Chunked { left: 0 }
        } else if encoded {
            // Some other final coding: the body runs until the server closes.
            close = true;
            Framing::UntilClose
        } else if let Some(length) = length {
            if length == 0 {
                Framing::Done
            } else {
                Framing::Length(length)
            }
        } else {
            close = true;
            Framing::UntilClose
        };
        let mut body = Body {
            connection: Some(connection),
            framing,
            reusable: !close,
            endpoint: Arc::clone(self),
        };
        body.finish_if_done();
        Ok(Some(Response {
            status,
            content_type,
            session_id,
            www_authenticate,
            location,
            retry_after,
            body,
        }))
    }
}

/// What a response head says that the client acts on.
struct Head {
    status: u16,
    /// Lower-cased, parameters kept.
    content_type: String,
    session_id: Option<String>,
    www_authenticate: Option<String>,
    location: Option<String>,
    retry_after: Option<String>,
    length: Option<u64>,
    /// The final transfer coding is `chunked`.
    chunked: bool,
    /// Some transfer coding is named at all.
    encoded: bool,
    /// HTTP/1.0, or `close` among the `Connection` tokens.
    close: bool,
}

impl Head {
    fn parse(bytes: &[u8]) -> Result<Head, String> {
        let mut fields = [httparse::EMPTY_HEADER; 64];
        let mut parsed = httparse::Response::new(&mut fields);
        if !matches!(parsed.parse(bytes), Ok(httparse::Status::Complete(_))) {
            return Err("the server sent a malformed HTTP response".to_owned());
        }
        let mut head = Head {
            status: parsed.code.unwrap_or(0),
            content_type: String::new(),
            session_id: None,
            www_authenticate: None,
            location: None,
            retry_after: None,
            length: None,
            chunked: false,
            encoded: false,
            close: parsed.version == Some(0),
        };
        for field in parsed.headers.iter() {
            let value = String::from_utf8_lossy(field.value).trim().to_owned();
            let name = field.name;
            if name.eq_ignore_ascii_case("content-type") {
                head.content_type = value.to_ascii_lowercase();
            } else if name.eq_ignore_ascii_case("mcp-session-id") {
                head.session_id = Some(value);
            } else if name.eq_ignore_ascii_case("www-authenticate") {
                // Several challenges may come in separate fields: the Bearer one is wanted.
                if head.www_authenticate.is_none()
                    || value.to_ascii_lowercase().starts_with("bearer")
                {
                    head.www_authenticate = Some(value);
                }
            } else if name.eq_ignore_ascii_case("location") {
                head.location = Some(value);
            } else if name.eq_ignore_ascii_case("retry-after") {
                head.retry_after = Some(value);
            } else if name.eq_ignore_ascii_case("content-length") {
                let length = value
                    .parse::<u64>()
                    .map_err(|_| "the server sent a bad Content-Length".to_owned())?;
                head.length = Some(length);
            } else if name.eq_ignore_ascii_case("transfer-encoding") {
                head.encoded = true;
                head.chunked = value
                    .rsplit(',')
                    .next()
                    .is_some_and(|last| last.trim().eq_ignore_ascii_case("chunked"));
            } else if name.eq_ignore_ascii_case("connection") {
                head.close |= value
                    .split(',')
                    .any(|token| token.trim().eq_ignore_ascii_case("close"));
            }
        }
        Ok(head)
    }
}

impl Response {
    /// The next piece of the body; `None` at its end.
    pub(crate) async fn chunk(&mut self) -> Result<Option<Vec<u8>>, String> {
        self.body.next().await
    }

    /// The whole body, refused past `limit` bytes.
    pub(crate) async fn read_to_end(mut self, limit: usize) -> Result<Vec<u8>, String> {
        let mut all = Vec::new();
        while let Some(piece) = self.chunk().await? {
            if all.len() + piece.len() > limit {
                return Err(format!("the server's answer exceeds {limit} bytes"));
            }
            all.extend_from_slice(&piece);
        }
        Ok(all)
    }
}

impl Body {
    async fn next(&mut self) -> Result<Option<Vec<u8>>, String> {
        loop {
            let Some(connection) = self.connection.as_mut() else {
                return Ok(None);
            };
            let piece = match &mut self.framing {
                Framing::Done => return Ok(None),
                Framing::Length(left) => {
                    let piece = read_some(connection, *left).await?;
                    if piece.is_empty() {
                        return Err("the server closed the connection mid-body".to_owned());
                    }
                    *left -= piece.len() as u64;
                    if *left == 0 {
                        self.framing = Framing::Done;
                    }
                    piece
                }
                Framing::UntilClose => {
                    let piece = read_some(connection, u64::MAX).await?;
                    if piece.is_empty() {
                        self.framing = Framing::Done;
                    }
                    piece
                }
                Framing::Chunked { left: 0 } => {
                    let size = read_chunk_size(connection).await?;
                    if size == 0 {
                        if !skip_trailers(connection).await? {
                            self.reusable = false;
                        }
                        self.framing = Framing::Done;
                    } else {
                        self.framing = Framing::Chunked { left: size };
                    }
                    Vec::new()
                }
                Framing::Chunked { left } => {
                    let piece = read_some(connection, *left).await?;
                    if piece.is_empty() {
                        return Err("the server closed the connection mid-chunk".to_owned());
                    }
                    *left -= piece.len() as u64;
                    if *left == 0 {
                        let mut crlf = [0; 2];
                        connection
                            .read_exact(&mut crlf)
                            .await
                            .map_err(|err| format!("reading the server's answer failed: {err}"))?;
                        if crlf != *b"\r\n" {
                            return Err("the server sent a malformed chunk".to_owned());
                        }
                        self.framing = Framing::Chunked { left: 0 };
                    }
                    piece
                }
            };
            self.finish_if_done();
            if !piece.is_empty() {
                return Ok(Some(piece));
            }
        }
    }

    /// Once the body is whole, the connection goes back to the pool (or is closed).
    fn finish_if_done(&mut self) {
        if matches!(self.framing, Framing::Done)
            && let Some(connection) = self.connection.take()
            && self.reusable
            && connection.buffer().is_empty()
        {
            self.endpoint.put_idle(connection);
        }
    }
}

/// Up to `limit` bytes, whatever has arrived (waits for at least one); empty at end of stream.
async fn read_some(connection: &mut Connection, limit: u64) -> Result<Vec<u8>, String> {
    connection
        .fill_buf()
        .await
        .map_err(|err| format!("reading the server's answer failed: {err}"))?;
    Ok(connection.take_buffered(usize::try_from(limit).unwrap_or(usize::MAX)))
}

async fn read_chunk_size(connection: &mut Connection) -> Result<u64, String> {
    let mut line = Vec::new();
    let mut limited = (&mut *connection).take(1024);
    limited
        .read_until(b'\n', &mut line)
        .await
        .map_err(|err| format!("reading the server's answer failed: {err}"))?;
    if line.is_empty() {
        return Err("the server closed the connection mid-body".to_owned());
    }
    if line.last() != Some(&b'\n') {
        return Err("the server sent a malformed chunk".to_owned());
    }
    let text = String::from_utf8_lossy(&line);
    let size = text.trim().split(';').next().unwrap_or("").trim();
    u64::from_str_radix(size, 16).map_err(|_| "the server sent a malformed chunk size".to_owned())
}

/// Reads the trailer section; whether it ended properly (else the connection is not reused).
async fn skip_trailers(connection: &mut Connection) -> Result<bool, String> {
    let mut total = 0;
    loop {
        let mut line = Vec::new();
        let mut limited = (&mut *connection).take(MAX_HEAD_BYTES as u64);
        let read = limited
            .read_until(b'\n', &mut line)
            .await
            .map_err(|err| format!("reading the server's answer failed: {err}"))?;
        total += read;
        if read == 0 || line.last() != Some(&b'\n') || total > MAX_HEAD_BYTES {
            return Ok(false);
        }
        if line == b"\r\n" || line == b"\n" {
            return Ok(true);
        }
    }
}

/// One response head, up to its empty line, at most [`MAX_HEAD_BYTES`]. `None`: the connection
/// ended before a byte of it (only allowed before the first head of an exchange).
async fn read_head(connection: &mut Connection, answered: bool) -> Result<Option<Vec<u8>>, String> {
    let mut head = Vec::new();
    loop {
        let before = head.len();
        let room = (MAX_HEAD_BYTES + 1).saturating_sub(head.len()) as u64;
        let read = (&mut *connection)
            .take(room)
            .read_until(b'\n', &mut head)
            .await
            .map_err(|err| format!("reading the server's answer failed: {err}"))?;
        if head.len() > MAX_HEAD_BYTES {
            return Err("the server's response head is too large".to_owned());
        }
        if read == 0 {
            return if head.is_empty() && !answered {
                Ok(None)
            } else {
                Err("the server closed the connection mid-answer".to_owned())
            };
        }
        let line = &head[before..];
        if line == b"\r\n" || line == b"\n" {
            return Ok(Some(head));
        }
    }
}

/// A connection to `proxy`; with `tunnel` (`host:port`), a tunnel through it to there.
async fn open_through(proxy: &Proxy, tunnel: Option<&str>) -> Result<TcpStream, String> {
    let mut tcp = TcpStream::connect((proxy.host.as_str(), proxy.port))
        .await
        .map_err(|err| format!("connecting to the proxy {} failed: {err}", proxy.shown))?;
    let Some(authority) = tunnel else {
        return Ok(tcp);
    };
    let mut request = format!("CONNECT {authority} HTTP/1.1\r\nhost: {authority}\r\n");
    if let Some(authorization) = &proxy.authorization {
        request.push_str(&format!("proxy-authorization: {authorization}\r\n"));
    }
    request.push_str("\r\n");
    let failed = |err: std::io::Error| format!("the proxy {} failed: {err}", proxy.shown);
    tcp.write_all(request.as_bytes()).await.map_err(failed)?;
    // Read a byte at a time: what follows the head is the tunnel's, for TLS to read.
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") && !head.ends_with(b"\n\n") {
        if head.len() >= MAX_HEAD_BYTES {
            return Err(format!(
                "the proxy {} sent too large an answer",
                proxy.shown
            ));
        }
        let mut byte = [0];
        if tcp.read(&mut byte).await.map_err(failed)? == 0 {
            return Err(format!(
                "the proxy {} closed the connection instead of opening a tunnel to {authority}",
                proxy.shown
            ));
        }
        head.push(byte[0]);
    }
    let mut fields = [httparse::EMPTY_HEADER; 64];
    let mut parsed = httparse::Response::new(&mut fields);
    if !matches!(parsed.parse(&head), Ok(httparse::Status::Complete(_))) {
        return Err(format!("the proxy {} sent a malformed answer", proxy.shown));
    }
    let status = parsed.code.unwrap_or(0);
    if !(200..300).contains(&status) {
        let reason: String = parsed
            .reason
            .unwrap_or_default()
            .chars()
            .take(100)
            .collect();
        return Err(format!(
            "the proxy {} refused the tunnel to {authority}: {}",
            proxy.shown,
            format!("{status} {reason}").trim_end()
        ));
    }
    Ok(tcp)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use tokio::io::{AsyncWriteExt, BufReader};
    use tokio::net::TcpListener;

    /// A server that answers requests with the given raw responses, in order, on whatever
    /// connection they come; after a response ending in `CLOSE` (not sent) it closes that
    /// connection. Returns the URL and a count of the connections accepted.
    async fn serve(responses: Vec<&'static str>) -> (String, Arc<std::sync::atomic::AtomicUsize>) {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let accepted = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&accepted);
        let pending = Arc::new(Mutex::new(responses.into_iter()));
        tokio::spawn(async move {
            loop {
                let (mut socket, _) = listener.accept().await.unwrap();
                counter.fetch_add(1, Ordering::SeqCst);
                let pending = Arc::clone(&pending);
                tokio::spawn(async move {
                    let mut reader = BufReader::new(&mut socket);
                    loop {
                        let mut request = Vec::new();
                        loop {
                            let before = request.len();
                            if reader.read_until(b'\n', &mut request).await.unwrap_or(0) == 0 {
                                return;
                            }
                            if &request[before..] == b"\r\n" {
                                break;
                            }
                        }
                        let text = String::from_utf8_lossy(&request).to_lowercase();
                        let length: usize = text
                            .lines()
                            .find_map(|line| line.strip_prefix("content-length: "))
                            .map_or(0, |n| n.trim().parse().unwrap());
                        let mut body = vec![0; length];
                        reader.read_exact(&mut body).await.unwrap();
                        let Some(response) = pending.lock().unwrap().next() else {
                            return;
                        };
                        if response == "RESET" {
                            // Closed at once without linger: the peer sees a reset, not an end.
                            let _ = reader.get_ref().set_zero_linger();
                            return;
                        }
                        let (response, close) = match response.strip_suffix("CLOSE") {
                            Some(response) => (response, true),
                            None => (response, false),
                        };
                        reader
                            .get_mut()
                            .write_all(response.as_bytes())
                            .await
                            .unwrap();
                        if close {
                            return;
                        }
                    }
                });
            }
        });
        (format!("http://{address}/mcp"), accepted)
    }

    /// An empty acknowledgement on a kept-alive connection.
    const ACCEPTED: &str = "HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n";

    fn accepted(count: &std::sync::atomic::AtomicUsize) -> usize {
        count.load(std::sync::atomic::Ordering::SeqCst)
    }

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
    async fn refuses_bodies_over_the_limit_and_malformed_heads() {
        let (url, _) = serve(vec![
            "HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\n0123456789",
        ])
        .await;
        let endpoint = Endpoint::new(&url).unwrap();
        let response = endpoint.send("POST", &[], b"{}").await.unwrap();
        assert_eq!(
            response.read_to_end(4).await.unwrap_err(),
            "the server's answer exceeds 4 bytes"
        );
        let (url, _) = serve(vec!["NOT HTTP\r\n\r\n"]).await;
        assert_eq!(
            Endpoint::new(&url)
                .unwrap()
                .send("POST", &[], b"{}")
                .await
                .err()
                .unwrap()
                .to_string(),
            "the server sent a malformed HTTP response"
        );
        // A head line that never ends is cut off at the limit, not buffered without end.
        let endless: &'static str = Box::leak(
            format!(
                "HTTP/1.1 200 OK\r\nx-filler: {}",
                "a".repeat(MAX_HEAD_BYTES)
            )
            .into_boxed_str(),
        );
        let (url, _) = serve(vec![endless]).await;
        assert_eq!(
            Endpoint::new(&url)
                .unwrap()
                .send("POST", &[], b"{}")
                .await
                .err()
                .unwrap()
                .to_string(),
            "the server's response head is too large"
        );
        let (url, _) = serve(vec![
            "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n2\r\nabXY",
        ])
        .await;
        let response = Endpoint::new(&url)
            .unwrap()
            .send("POST", &[], b"{}")
            .await
            .unwrap();
        assert_eq!(
            response.read_to_end(100).await.unwrap_err(),
            "the server sent a malformed chunk"
        );
    }

    #[tokio::test]
    async fn skips_interim_answers_and_reads_trailers() {
        let (url, connections) = serve(vec![
            "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nlink: </a>\r\n\r\nHTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n2\r\nok\r\n0\r\nx-checksum: 1\r\n\r\n",
            ACCEPTED,
        ])
        .await;
        let endpoint = Endpoint::new(&url).unwrap();
        let response = endpoint.send("POST", &[], b"{}").await.unwrap();
        assert_eq!(response.status, 200);
        assert_eq!(response.read_to_end(100).await.unwrap(), b"ok");
        let response = endpoint.send("POST", &[], b"{}").await.unwrap();
        assert_eq!(response.status, 202);
        assert_eq!(accepted(&connections), 1);
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
            Endpoint::new("ftp://x").err().unwrap(),
            "the URL must use http or https"
        );
        assert_eq!(
            Endpoint::new("http://me:secret@x/mcp").err().unwrap(),
            "credentials in the URL are not sent; use `bearer_token_env_var` or `http_headers`"
        );
    }
}
