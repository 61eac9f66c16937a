//! formwork's HTTP client on the networks people have: a server whose certificate authority only `SSL_CERT_FILE`
//! names, an HTTP proxy named by the environment (a `CONNECT` tunnel for `https://`, absolute-form requests for
//! `http://`), and `NO_PROXY`. The real `@modelcontextprotocol/server-everything` serves behind a TLS-terminating
//! forwarder and a proxy written here, which record what reached them; the certificates come from a CA made with
//! rcgen for each test.

mod common;

use std::process::Command;
use std::sync::{Arc, Mutex};

use common::{EverythingHttp, Output, TempFile, TestCa};
use serde_json::{Value, json};
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::runtime::Runtime;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls::{self, pki_types::PrivatePkcs8KeyDer};

/// Every variable formwork's network setup reads: a test's `formwork` gets only those the test names.
const NETWORK_VARIABLES: &[&str] = &[
    "https_proxy",
    "HTTPS_PROXY",
    "http_proxy",
    "HTTP_PROXY",
    "all_proxy",
    "ALL_PROXY",
    "no_proxy",
    "NO_PROXY",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "REQUEST_METHOD",
];

/// `formwork args…` with exactly the network variables `vars`.
fn formwork(args: &[&str], vars: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_formwork"));
    cmd.args(args);
    for name in NETWORK_VARIABLES {
        cmd.env_remove(name);
    }
    cmd.envs(vars.iter().copied());
    common::run(&mut cmd, None, common::TIMEOUT)
}

fn runtime() -> Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime")
}

/// A certificate authority "formwork test CA" (its certificate in a PEM file) and a server configuration with a
/// certificate it issued for `localhost`.
fn test_ca() -> (TempFile, Arc<rustls::ServerConfig>) {
    let ca = TestCa::new("formwork test CA");
    let (leaf, key) = ca.issue("localhost");
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("TLS versions")
        .with_no_client_auth()
        .with_single_cert(
            vec![leaf.der().clone()],
            PrivatePkcs8KeyDer::from(key.serialize_der()).into(),
        )
        .expect("a server configuration");
    (TempFile::new(&ca.pem), Arc::new(config))
}

/// A TLS-terminating forwarder on 127.0.0.1: each connection, once its handshake is done, is relayed to
/// `127.0.0.1:backend`. Returns its port.
fn tls_forwarder(runtime: &Runtime, config: Arc<rustls::ServerConfig>, backend: u16) -> u16 {
    let listener = runtime
        .block_on(TcpListener::bind("127.0.0.1:0"))
        .expect("a port");
    let port = listener.local_addr().expect("its address").port();
    let acceptor = TlsAcceptor::from(config);
    runtime.spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(socket).await else {
                    return;
                };
                let Ok(mut plain) = TcpStream::connect(("127.0.0.1", backend)).await else {
                    return;
                };
                let _ = tokio::io::copy_bidirectional(&mut tls, &mut plain).await;
            });
        }
    });
    port
}

/// An HTTP proxy on 127.0.0.1: `CONNECT` opens a tunnel, an absolute-form request is sent on to its host in
/// origin form. With `required`, a request whose `Proxy-Authorization` is not that gets 407.
struct TestProxy {
    port: u16,
    /// The request line of every request it got, in order.
    seen: Arc<Mutex<Vec<String>>>,
}

impl TestProxy {
    fn start(runtime: &Runtime, required: Option<&str>) -> TestProxy {
        let listener = runtime
            .block_on(TcpListener::bind("127.0.0.1:0"))
            .expect("a port");
        let port = listener.local_addr().expect("its address").port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let recorded = Arc::clone(&seen);
        let required = required.map(str::to_owned);
        runtime.spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                tokio::spawn(proxy_connection(
                    socket,
                    Arc::clone(&recorded),
                    required.clone(),
                ));
            }
        });
        TestProxy { port, seen }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn seen(&self) -> Vec<String> {
        self.seen.lock().expect("the proxy's record").clone()
    }
}

async fn proxy_connection(
    socket: TcpStream,
    seen: Arc<Mutex<Vec<String>>>,
    required: Option<String>,
) {
    let (from_client, mut to_client) = socket.into_split();
    let mut from_client = BufReader::new(from_client);
    // Records the request line; whether the request may pass.
    let admit = |head: &[String]| {
        seen.lock()
            .expect("the proxy's record")
            .push(head[0].clone());
        let authorization = head.iter().find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("proxy-authorization")
                .then(|| value.trim().to_owned())
        });
        required.is_none() || authorization == required
    };
    let Some(mut head) = read_head(&mut from_client).await else {
        return;
    };
    if !admit(&head) {
        let refusal = "HTTP/1.1 407 Proxy Authentication Required\r\nproxy-authenticate: Basic realm=\"test\"\r\ncontent-length: 0\r\n\r\n";
        let _ = to_client.write_all(refusal.as_bytes()).await;
        return;
    }
    let mut words = head[0].split(' ');
    let (Some(method), Some(target)) = (words.next(), words.next()) else {
        return;
    };
    if method == "CONNECT" {
        let Ok(mut target) = TcpStream::connect(target).await else {
            let _ = to_client
                .write_all(b"HTTP/1.1 502 Bad Gateway\r\ncontent-length: 0\r\n\r\n")
                .await;
            return;
        };
        let _ = to_client
            .write_all(b"HTTP/1.1 200 Connection Established\r\n\r\n")
            .await;
        assert!(from_client.buffer().is_empty(), "TLS began before the 200");
        let Ok(mut client) = from_client.into_inner().reunite(to_client) else {
            return;
        };
        let _ = tokio::io::copy_bidirectional(&mut client, &mut target).await;
        return;
    }
    // Absolute form (`POST http://host:port/path HTTP/1.1`): every request of the connection goes to that host,
    // over one connection to it whose answers are relayed as they come.
    let Some(authority) = target
        .strip_prefix("http://")
        .and_then(|rest| rest.split('/').next())
    else {
        return;
    };
    let Ok(server) = TcpStream::connect(authority).await else {
        return;
    };
    let (mut from_server, mut to_server) = server.into_split();
    tokio::spawn(async move {
        let _ = tokio::io::copy(&mut from_server, &mut to_client).await;
    });
    loop {
        if !forward(&head, &mut from_client, &mut to_server).await {
            return;
        }
        head = match read_head(&mut from_client).await {
            Some(head) if admit(&head) => head,
            _ => return,
        };
    }
}

/// Sends one absolute-form request on in origin form, without its `Proxy-Authorization`; whether it went.
async fn forward(
    head: &[String],
    from_client: &mut (impl AsyncBufRead + Unpin),
    to_server: &mut tokio::net::tcp::OwnedWriteHalf,
) -> bool {
    let mut words = head[0].splitn(3, ' ');
    let (Some(method), Some(target), Some(version)) = (words.next(), words.next(), words.next())
    else {
        return false;
    };
    let Some(path) = target
        .strip_prefix("http://")
        .and_then(|rest| rest.find('/').map(|at| &rest[at..]))
    else {
        return false;
    };
    let mut request = format!("{method} {path} {version}\r\n");
    let mut length = 0;
    for line in &head[1..] {
        let name = line.split_once(':').map_or("", |(name, _)| name);
        if name.eq_ignore_ascii_case("content-length") {
            length = line[name.len() + 1..].trim().parse().unwrap_or(0);
        }
        if !name.eq_ignore_ascii_case("proxy-authorization") {
            request.push_str(line);
            request.push_str("\r\n");
        }
    }
    request.push_str("\r\n");
    let mut body = vec![0; length];
    from_client.read_exact(&mut body).await.is_ok()
        && to_server.write_all(request.as_bytes()).await.is_ok()
        && to_server.write_all(&body).await.is_ok()
}

/// The lines of one request head, without line ends; `None` at the end of the connection.
async fn read_head(reader: &mut (impl AsyncBufRead + Unpin)) -> Option<Vec<String>> {
    let mut lines = Vec::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).await.ok()? == 0 {
            return None;
        }
        let line = line.trim_end_matches(['\r', '\n']);
        if line.is_empty() {
            return Some(lines);
        }
        lines.push(line.to_owned());
    }
}

/// The ElicitResult server-everything received, from its `Raw result:` text block.
fn raw_result(output: &Output) -> Value {
    let text = output.text();
    let Some((_, raw)) = text.split_once("Raw result: ") else {
        panic!("no `Raw result:` in the tool result: {output}");
    };
    serde_json::from_str(raw).unwrap_or_else(|err| panic!("bad Raw result JSON ({err}): {output}"))
}

/// `Basic` credentials of `user:secret`.
const USER_SECRET: &str = "Basic dXNlcjpzZWNyZXQ=";

/// End to end: server-everything behind the TLS forwarder, reached through the proxy (with credentials), trusting
/// the test CA only because `SSL_CERT_FILE` names it; `trigger-elicitation-request` answered from `--answers`.
#[test]
fn a_form_over_https_through_a_connect_proxy() {
    let runtime = runtime();
    let server = EverythingHttp::start();
    let (ca, config) = test_ca();
    let forwarder = tls_forwarder(&runtime, config, server.port);
    let proxy = TestProxy::start(&runtime, Some(USER_SECRET));
    let content = json!({
        "name": "Grace Hopper",
        "check": true,
        "firstLine": "Call me Ishmael.",
        "email": "grace@example.com",
        "homepage": "https://example.org/grace",
        "birthdate": "1906-12-09",
        "integer": 7,
        "number": 2.5,
        "untitledSingleSelectEnum": "Joey",
        "untitledMultipleSelectEnum": ["Piano", "Drums"],
        "titledSingleSelectEnum": "hero-3",
        "titledMultipleSelectEnum": ["fish-2", "fish-3"],
        "legacyTitledEnum": "pet-4"
    });
    let answers = TempFile::new(&json!([{ "action": "accept", "content": content }]).to_string());
    let url = format!("https://localhost:{forwarder}/mcp");
    let proxy_url = format!("http://user:secret@127.0.0.1:{}", proxy.port);
    let ca_file = ca.path.display().to_string();
    let output = formwork(
        &[
            "call",
            "trigger-elicitation-request",
            "--url",
            &url,
            "--answers",
            &answers.path.display().to_string(),
        ],
        &[
            ("HTTPS_PROXY", proxy_url.as_str()),
            ("SSL_CERT_FILE", ca_file.as_str()),
        ],
    );
    output.assert_code(0);
    assert_eq!(
        raw_result(&output),
        json!({ "action": "accept", "content": content }),
        "{output}"
    );
    let seen = proxy.seen();
    let connect = format!("CONNECT localhost:{forwarder} HTTP/1.1");
    assert!(
        !seen.is_empty() && seen.iter().all(|line| *line == connect),
        "every connection a tunnel to the forwarder: {seen:?}"
    );
}

/// The same server and proxy, with `localhost` in `NO_PROXY`: the proxy sees nothing.
#[test]
fn no_proxy_hosts_are_reached_direct() {
    let runtime = runtime();
    let server = EverythingHttp::start();
    let (ca, config) = test_ca();
    let forwarder = tls_forwarder(&runtime, config, server.port);
    let proxy = TestProxy::start(&runtime, None);
    let url = format!("https://localhost:{forwarder}/mcp");
    let ca_file = ca.path.display().to_string();
    let output = formwork(
        &["tools", "--url", &url],
        &[
            ("https_proxy", proxy.url().as_str()),
            ("NO_PROXY", "example.com,.localhost"),
            ("SSL_CERT_FILE", ca_file.as_str()),
        ],
    );
    output.assert_code(0);
    assert!(
        output.stdout.contains("\"trigger-elicitation-request\""),
        "{output}"
    );
    assert_eq!(proxy.seen(), Vec::<String>::new());
}

/// An `http://` URL goes to `HTTP_PROXY` (or `http_proxy`; but not `HTTP_PROXY` under CGI) in absolute form, with
/// the credentials on every request.
#[test]
fn http_urls_go_through_http_proxy_in_absolute_form() {
    let runtime = runtime();
    let server = EverythingHttp::start();
    let proxy = TestProxy::start(&runtime, Some(USER_SECRET));
    let url = format!("http://127.0.0.1:{}/mcp", server.port);
    let proxy_url = format!("http://user:secret@127.0.0.1:{}", proxy.port);
    // Under CGI the upper case is not read for http:// (httpoxy: the server sets it from a request header).
    let output = formwork(
        &["tools", "--url", &url],
        &[
            ("HTTP_PROXY", proxy_url.as_str()),
            ("REQUEST_METHOD", "GET"),
        ],
    );
    output.assert_code(0);
    assert_eq!(proxy.seen(), Vec::<String>::new());
    let output = formwork(
        &["tools", "--url", &url],
        &[("HTTP_PROXY", proxy_url.as_str())],
    );
    output.assert_code(0);
    assert!(
        output.stdout.contains("\"trigger-elicitation-request\""),
        "{output}"
    );
    // The listening stream's GET and the closing DELETE go the same way (whether the GET left before the end is a
    // matter of timing).
    let seen = proxy.seen();
    let forms = ["POST", "GET", "DELETE"].map(|method| format!("{method} {url} HTTP/1.1"));
    assert!(
        seen.contains(&forms[0]) && seen.iter().all(|line| forms.contains(line)),
        "{seen:?}"
    );
}

/// Without `SSL_CERT_FILE` naming it the test CA is no root: the refusal names the certificate, its issuer and why.
#[test]
fn a_certificate_of_an_unknown_authority_is_refused_by_name() {
    let runtime = runtime();
    let (_ca, config) = test_ca();
    // No backend: the handshake fails first.
    let forwarder = tls_forwarder(&runtime, config, 9);
    let url = format!("https://localhost:{forwarder}/mcp");
    let output = formwork(&["tools", "--url", &url], &[]);
    output.assert_code(2);
    assert_eq!(
        output.stderr.trim_end(),
        format!(
            "formwork: could not connect to plugin {url}: the HTTP request to {url} failed: the certificate of \
             localhost (issued by \"formwork test CA\") is not trusted: unknown issuer"
        ),
        "{output}"
    );
    // A file without certificates adds none, and takes nothing away: the system's roots stay (they are
    // added to, never replaced), and the debug log says what each source gave.
    let empty = TempFile::new("");
    let output = formwork(
        &["tools", "--url", &url],
        &[
            ("SSL_CERT_FILE", &empty.path.display().to_string()),
            ("FORMWORK_LOG", "formwork::tls=debug"),
        ],
    );
    output.assert_code(2);
    let lines: Vec<&str> = output.stderr.lines().collect();
    assert!(
        lines.iter().any(|line| line.ends_with(
            " formwork::tls: trusted certificates added=0 ignored=0 source=\"environment\""
        )),
        "{output}"
    );
    let system = lines
        .iter()
        .find_map(|line| {
            let counts = line.strip_suffix(" source=\"system\"")?;
            let added = counts.split_once("added=")?.1.split(' ').next()?;
            added.parse::<usize>().ok()
        })
        .unwrap_or_else(|| panic!("no count of the system's roots: {output}"));
    if std::path::Path::new("/etc/ssl/certs/ca-certificates.crt").exists() {
        assert!(system > 0, "{output}");
    }
    assert!(
        lines.last().is_some_and(|line| line.ends_with(
            "failed: the certificate of localhost (issued by \"formwork test CA\") is not trusted: unknown issuer"
        )),
        "{output}"
    );
    // Set to nothing, the variables name nothing: the system's roots are the same as without them.
    let without = formwork(
        &["tools", "--url", &url],
        &[("FORMWORK_LOG", "formwork::tls=debug")],
    );
    let unset = formwork(
        &["tools", "--url", &url],
        &[
            ("SSL_CERT_FILE", ""),
            ("SSL_CERT_DIR", ""),
            ("FORMWORK_LOG", "formwork::tls=debug"),
        ],
    );
    unset.assert_code(2);
    let system_line = |output: &Output| {
        output
            .stderr
            .lines()
            .find(|line| line.ends_with(" source=\"system\""))
            .map(|line| {
                line.split_once("trusted certificates")
                    .map_or(line, |(_, counts)| counts)
                    .to_owned()
            })
    };
    assert_eq!(system_line(&unset), system_line(&without), "{unset}");
    assert!(!unset.stderr.contains("bundled Mozilla roots"), "{unset}");
}

/// A proxy that refuses the tunnel is named with its status; a proxy formwork cannot speak to is an error, never
/// a reason to go direct.
#[test]
fn a_refusing_or_unusable_proxy_is_named() {
    let runtime = runtime();
    let proxy = TestProxy::start(&runtime, Some(USER_SECRET));
    let url = "https://localhost:9/mcp";
    let output = formwork(&["tools", "--url", url], &[("https_proxy", &proxy.url())]);
    output.assert_code(2);
    assert_eq!(
        output.stderr.trim_end(),
        format!(
            "formwork: could not connect to plugin {url}: the HTTP request to {url} failed: the proxy {} refused the \
             tunnel to localhost:9: 407 Proxy Authentication Required",
            proxy.url()
        ),
        "{output}"
    );
    assert_eq!(proxy.seen(), ["CONNECT localhost:9 HTTP/1.1"]);

    let output = formwork(
        &["tools", "--url", url],
        &[("ALL_PROXY", "socks5h://127.0.0.1:9")],
    );
    output.assert_code(2);
    assert_eq!(
        output.stderr.trim_end(),
        format!(
            "formwork: could not connect to plugin {url}: ALL_PROXY names a socks5h:// proxy; formwork speaks to \
             proxies over http:// only"
        ),
        "{output}"
    );
}
