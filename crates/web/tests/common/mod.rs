//! Shared helpers of the workbench tests: a real workbench on 127.0.0.1 over a real host whose
//! configured servers run the TypeScript SDK plugin (`tests/peers/ts_plugin.mjs`, installed by
//! `cargo xtask peers` under `$FORMWORK_PEERS`), a raw HTTP/1.1 client that sends exactly the
//! headers a test names, and a WebSocket client for the session socket.
//!
//! Every wait is bounded by [`TIMEOUT`], so a hang fails the test instead of blocking CI.
#![allow(dead_code)] // each test binary uses its own subset

use std::net::SocketAddr;
use std::time::Duration;

use formwork_host::config::Config;
use formwork_host::store::Store;
use formwork_host::{Host, HostOptions};
pub use formwork_testkit::peers_dir;
use formwork_web::{ScriptedModel, WebOptions, Workbench};
use futures::{SinkExt, StreamExt};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::oneshot;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;

/// Long enough for a cold node start on a busy 2-core machine; short enough to fail a hang.
pub const TIMEOUT: Duration = Duration::from_secs(60);

/// A `[mcp_servers.NAME]` table that runs the TS SDK plugin with node 22 from the peers.
pub fn ts_server(name: &str, approval_mode: &str) -> String {
    let peers = peers_dir();
    let node = peers.join("npm/node_modules/.bin/node");
    let script = peers.join("npm/ts_plugin.mjs");
    format!(
        "[mcp_servers.{name}]\ncommand = {node:?}\nargs = [{script:?}]\ndefault_tools_approval_mode = {approval_mode:?}\n",
        node = node.display().to_string(),
        script = script.display().to_string(),
    )
}

/// A running workbench and its host, stopped when dropped.
pub struct Server {
    pub addr: SocketAddr,
    /// The app sandbox's listener (`http://<document>.localhost:<port>/`).
    pub apps_port: u16,
    pub token: String,
    pub host: Host,
    /// The session the server was started with.
    pub session: String,
    stop: Option<oneshot::Sender<()>>,
}

impl Server {
    /// A workbench over `config_toml` (no store), with an optional scripted model (JSON). The
    /// built-in demo server is switched off: it runs as the formwork binary, which a test is not.
    pub async fn start(config_toml: &str, model: Option<&str>) -> Server {
        let (config, options) = Server::config(config_toml);
        Server::serve(Host::new(config, options), model).await
    }

    /// A workbench over `config_toml` whose host keeps its sessions (and uploads) in `store`.
    pub async fn start_with_store(config_toml: &str, store: Store) -> Server {
        let (config, options) = Server::config(config_toml);
        let host = Host::with_store(config, options, store)
            .await
            .expect("host");
        Server::serve(host, None).await
    }

    fn config(config_toml: &str) -> (Config, HostOptions) {
        let text = format!("{config_toml}\n[mcp_servers.demo]\nenabled = false\n");
        let config = Config::from_toml(&text, None).expect("config");
        let options = HostOptions {
            request_timeout: TIMEOUT,
            ..HostOptions::default()
        };
        (config, options)
    }

    async fn serve(host: Host, model: Option<&str>) -> Server {
        let session = host.create_session();
        let model = model.map(|text| ScriptedModel::from_json(text, "model.json").expect("model"));
        let workbench = Workbench::bind(
            host.clone(),
            WebOptions {
                model,
                ..WebOptions::default()
            },
        )
        .await
        .expect("bind");
        let (addr, token) = (workbench.addr(), workbench.token().to_owned());
        let apps_port = workbench.apps_port();
        assert_eq!(workbench.url(), format!("http://{addr}/#token={token}"));
        let (stop, stopped) = oneshot::channel::<()>();
        tokio::spawn(workbench.serve(async {
            let _ = stopped.await;
        }));
        Server {
            addr,
            apps_port,
            token,
            host,
            session,
            stop: Some(stop),
        }
    }

    /// The default: one server `ts` whose tools run without approval cards.
    pub async fn ts() -> Server {
        Server::start(&ts_server("ts", "approve"), None).await
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// `Host` as a browser on the page would send it.
    pub fn host_header(&self) -> String {
        format!("127.0.0.1:{}", self.port())
    }

    /// `Origin` as the page would send it.
    pub fn origin(&self) -> String {
        format!("http://127.0.0.1:{}", self.port())
    }

    /// `Authorization` as the page sends it on every API request.
    pub fn bearer(&self) -> String {
        format!("Bearer {}", self.token)
    }

    /// `Sec-WebSocket-Protocol` as the page offers it on the socket.
    pub fn socket_protocols(&self) -> String {
        format!("formwork, formwork.token.{}", self.token)
    }

    /// Sends one raw HTTP/1.1 request with exactly these headers (plus `Connection: close`).
    pub async fn raw(&self, method: &str, target: &str, headers: &[(&str, String)]) -> Response {
        raw_request(self.addr, method, target, headers).await
    }

    /// A GET as the page makes it: right Host, the token as a bearer.
    pub async fn get(&self, target: &str) -> Response {
        let headers = [
            ("Host", self.host_header()),
            ("Authorization", self.bearer()),
        ];
        self.raw("GET", target, &headers).await
    }

    /// A POST as the page makes it: right Host and Origin, the token as a bearer.
    pub async fn post(&self, target: &str) -> Response {
        let headers = [
            ("Host", self.host_header()),
            ("Origin", self.origin()),
            ("Authorization", self.bearer()),
            ("Content-Length", "0".to_owned()),
        ];
        self.raw("POST", target, &headers).await
    }

    /// A POST of JSON `body` as the page makes it.
    pub async fn post_json(&self, target: &str, body: &str) -> Response {
        self.post_typed(target, "application/json", body.as_bytes())
            .await
    }

    /// A POST of `body` as the page makes it: right Host and Origin, the token as a bearer.
    pub async fn post_body(&self, target: &str, body: &[u8]) -> Response {
        self.post_typed(target, "application/octet-stream", body)
            .await
    }

    async fn post_typed(&self, target: &str, content_type: &str, body: &[u8]) -> Response {
        let headers = [
            ("Host", self.host_header()),
            ("Origin", self.origin()),
            ("Authorization", self.bearer()),
            ("Content-Type", content_type.to_owned()),
            ("Content-Length", body.len().to_string()),
        ];
        raw_request_with_body(self.addr, "POST", target, &headers, body).await
    }

    /// Opens the socket of `session` as the page does.
    pub async fn socket(&self, session: &str) -> Socket {
        let url = format!("ws://{}/api/sessions/{session}/socket", self.addr);
        let mut request = url.into_client_request().expect("request");
        let headers = request.headers_mut();
        headers.insert(
            "Origin",
            HeaderValue::from_str(&self.origin()).expect("origin"),
        );
        headers.insert(
            "Sec-WebSocket-Protocol",
            HeaderValue::from_str(&self.socket_protocols()).expect("protocols"),
        );
        let (ws, response) =
            tokio::time::timeout(TIMEOUT, tokio_tungstenite::connect_async(request))
                .await
                .expect("connect in time")
                .expect("connect");
        assert_eq!(response.status(), 101);
        // The server selects the plain protocol: the token is never echoed.
        assert_eq!(
            response
                .headers()
                .get("Sec-WebSocket-Protocol")
                .and_then(|value| value.to_str().ok()),
            Some("formwork")
        );
        Socket {
            ws,
            seen: Vec::new(),
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// A response read off the wire.
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Response {
    /// The first header of this name (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }

    /// The body as JSON.
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|err| panic!("not JSON ({err}): {self:?}"))
    }
}

/// One request on a fresh connection; the response is read to the end (chunked bodies decoded).
pub async fn raw_request(
    addr: SocketAddr,
    method: &str,
    target: &str,
    headers: &[(&str, String)],
) -> Response {
    raw_request_with_body(addr, method, target, headers, b"").await
}

/// [`raw_request`] with `body` after the headers.
pub async fn raw_request_with_body(
    addr: SocketAddr,
    method: &str,
    target: &str,
    headers: &[(&str, String)],
    body: &[u8],
) -> Response {
    let work = async {
        let mut stream = TcpStream::connect(addr).await.expect("connect");
        let mut request = format!("{method} {target} HTTP/1.1\r\n");
        for (name, value) in headers {
            request.push_str(&format!("{name}: {value}\r\n"));
        }
        request.push_str("Connection: close\r\n\r\n");
        stream.write_all(request.as_bytes()).await.expect("write");
        stream.write_all(body).await.expect("write");
        let mut bytes = Vec::new();
        // An upgrade leaves the connection open: read what arrives until the headers are in.
        loop {
            let mut chunk = [0u8; 8192];
            let read = stream.read(&mut chunk).await.expect("read");
            if read == 0 {
                break;
            }
            bytes.extend_from_slice(&chunk[..read]);
            let text = String::from_utf8_lossy(&bytes);
            if text.starts_with("HTTP/1.1 101") && text.contains("\r\n\r\n") {
                break;
            }
        }
        parse_response(&bytes)
    };
    tokio::time::timeout(TIMEOUT, work)
        .await
        .expect("response in time")
}

fn parse_response(bytes: &[u8]) -> Response {
    let text = String::from_utf8_lossy(bytes).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let mut lines = head.lines();
    let status_line = lines.next().unwrap_or_default();
    let status = status_line
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("no status line: {text:?}"));
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_owned(), value.trim().to_owned()))
        .collect();
    let chunked = headers.iter().any(|(name, value)| {
        name.eq_ignore_ascii_case("transfer-encoding") && value.contains("chunked")
    });
    let body = if chunked {
        dechunk(body)
    } else {
        body.to_owned()
    };
    Response {
        status,
        headers,
        body,
    }
}

fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let Ok(size) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if size == 0 || rest.len() < size {
            break;
        }
        out.push_str(&rest[..size]);
        body = rest[size..].trim_start_matches("\r\n");
    }
    out
}

/// The page's side of a session socket.
pub struct Socket {
    ws: tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<TcpStream>>,
    /// Every message received so far, in order.
    pub seen: Vec<Value>,
}

impl Socket {
    /// Sends a command (any JSON).
    pub async fn send(&mut self, command: Value) {
        self.ws
            .send(Message::Text(command.to_string().into()))
            .await
            .expect("send");
    }

    /// The next JSON message.
    pub async fn next(&mut self) -> Value {
        loop {
            let message = tokio::time::timeout(TIMEOUT, self.ws.next())
                .await
                .unwrap_or_else(|_| panic!("no message in time; seen so far: {:#?}", self.seen))
                .expect("socket open")
                .expect("message");
            if let Message::Text(text) = message {
                let value: Value = serde_json::from_str(text.as_str()).expect("JSON");
                self.seen.push(value.clone());
                return value;
            }
        }
    }

    /// Reads until a message of this `type` arrives; returns it.
    pub async fn until(&mut self, kind: &str) -> Value {
        loop {
            let message = self.next().await;
            if message["type"] == kind {
                return message;
            }
        }
    }

    /// Everything up to and including `snapshot_done`.
    pub async fn snapshot(&mut self) -> Vec<Value> {
        let mut events = Vec::new();
        loop {
            let message = self.next().await;
            if message["type"] == "snapshot_done" {
                return events;
            }
            events.push(message);
        }
    }

    /// Whether the server ends the socket (a close frame, an error or its end) before `TIMEOUT`
    /// without sending another message.
    pub async fn ends(&mut self) -> bool {
        loop {
            match tokio::time::timeout(TIMEOUT, self.ws.next()).await {
                Err(_) => return false,
                Ok(None | Some(Err(_)) | Some(Ok(Message::Close(_)))) => return true,
                Ok(Some(Ok(Message::Text(text)))) => {
                    panic!("a message instead of the end: {text}")
                }
                Ok(Some(Ok(_))) => {}
            }
        }
    }

    /// Closes the socket.
    pub async fn close(mut self) {
        let _ = self.ws.close(None).await;
    }
}

/// The JSON a TS plugin tool reports after its `result: ` prefix (what the plugin's SDK received).
pub fn plugin_result(finished: &Value) -> Value {
    let text = finished["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text result: {finished}"));
    let json = text
        .strip_prefix("result: ")
        .unwrap_or_else(|| panic!("no `result: ` prefix: {finished}"));
    serde_json::from_str(json).expect("result JSON")
}
