//! The HTTP part's second instrument: the `bench` tool of `tests/peers/bench_plugin.mjs`, written
//! with the official Rust SDK (rmcp) and served over Streamable HTTP, plain or TLS, by
//! `load-bench --serve-bench-plugin [--cert FILE --key FILE]`.
//!
//! `bench {n, warmup}` asks `warmup` and then `n` sequential elicitations for the form of
//! `tests/peers/bench_form.json` and times each one around rmcp's `create_elicitation`: from
//! handing the request to the SDK until the SDK hands back the parsed result. Every client is
//! timed at those same points. With no JIT compiler or garbage collector in the plugin, the tail
//! of these samples is the client's, the kernel's and the machine's, not the instrument's.
//! Every answer must be `accept` with exactly the form's defaults; anything else ends the tool
//! with `isError`. On success the text is `{"ns":[...]}`, the measured durations in nanoseconds.

use std::borrow::Cow;
use std::io;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use axum::serve::ListenerExt;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ElicitRequestParams,
    ElicitResult, ElicitationAction, ListToolsResult, PaginatedRequestParams, ProtocolVersion,
    ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{Value, json};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};

use crate::rust_plugin::{PUSH_ELICITATION_VERSIONS, plugin_info, tool_list};

/// The form every part of the bench asks, and the answer that accepts its defaults.
const FORM: &str = include_str!("../../../tests/peers/bench_form.json");

/// The certificate chain and key of a TLS server, as PEM files.
pub struct Identity<'a> {
    pub cert: &'a Path,
    pub key: &'a Path,
}

/// Serves the instrument on a free loopback port; prints `listening <port>` once it accepts.
pub async fn serve(identity: Option<Identity<'_>>) -> anyhow::Result<()> {
    let plugin = BenchPlugin::new()?;
    // An MCP session per client, as the TS instrument keeps.
    let config = StreamableHttpServerConfig::default().with_legacy_session_mode(true);
    let service = StreamableHttpService::new(
        move || Ok(plugin.clone()),
        LocalSessionManager::default().into(),
        config,
    );
    let router = axum::Router::new().nest_service("/mcp", service);
    let tcp = TcpListener::bind("127.0.0.1:0").await?;
    println!("listening {}", tcp.local_addr()?.port());
    // Small writes go out at once, as node's server sends them.
    let no_delay = |stream: &mut TcpStream| {
        let _ = stream.set_nodelay(true);
    };
    match identity {
        None => axum::serve(tcp.tap_io(no_delay), router).await?,
        Some(identity) => {
            let acceptor = TlsAcceptor::from(Arc::new(server_config(&identity)?));
            axum::serve(TlsListener { tcp, acceptor }, router).await?;
        }
    }
    Ok(())
}

fn server_config(identity: &Identity) -> anyhow::Result<rustls::ServerConfig> {
    let certs = CertificateDer::pem_file_iter(identity.cert)
        .with_context(|| format!("reading {}", identity.cert.display()))?
        .collect::<Result<Vec<_>, _>>()
        .with_context(|| format!("parsing {}", identity.cert.display()))?;
    let key = PrivateKeyDer::from_pem_file(identity.key)
        .with_context(|| format!("reading {}", identity.key.display()))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    Ok(rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(certs, key)?)
}

/// Loopback TCP with a TLS handshake per connection, for `axum::serve`.
struct TlsListener {
    tcp: TcpListener,
    acceptor: TlsAcceptor,
}

impl axum::serve::Listener for TlsListener {
    type Io = tokio_rustls::server::TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            let (stream, addr) = match self.tcp.accept().await {
                Ok(accepted) => accepted,
                Err(err) => {
                    eprintln!("bench plugin: accepting a connection failed: {err}");
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                }
            };
            let _ = stream.set_nodelay(true);
            match self.acceptor.accept(stream).await {
                Ok(tls) => return (tls, addr),
                Err(err) => eprintln!("bench plugin: the TLS handshake with {addr} failed: {err}"),
            }
        }
    }

    fn local_addr(&self) -> io::Result<Self::Addr> {
        self.tcp.local_addr()
    }
}

#[derive(Clone)]
struct BenchPlugin {
    form: Arc<ElicitRequestParams>,
    expected: Arc<Value>,
}

impl BenchPlugin {
    fn new() -> anyhow::Result<BenchPlugin> {
        let mut file: Value = serde_json::from_str(FORM).context("parsing bench_form.json")?;
        let form = serde_json::from_value(file["params"].take())
            .context("bench_form.json's params are not an elicitation request")?;
        Ok(BenchPlugin {
            form: Arc::new(form),
            expected: Arc::new(file["expected"].take()),
        })
    }

    /// Why `result` is not the answer that accepts the form's defaults, if it is not.
    fn unexpected(&self, result: &ElicitResult) -> Option<String> {
        if result.action != ElicitationAction::Accept {
            return Some(format!("action {:?}, expected accept", result.action));
        }
        (result.content.as_ref() != Some(&*self.expected))
            .then(|| format!("content differs from {}", self.expected))
    }
}

impl ServerHandler for BenchPlugin {
    fn get_info(&self) -> ServerConfig {
        plugin_info("bench-plugin-rust")
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(PUSH_ELICITATION_VERSIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        tool_list(json!({"tools": [{
            "name": "bench",
            "description": "Times `warmup` + `n` sequential elicitation round trips; returns the n durations in ns.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "n": {"type": "integer", "minimum": 1},
                    "warmup": {"type": "integer", "minimum": 0},
                },
                "required": ["n"],
            },
        }]}))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if request.name.as_ref() != "bench" {
            return Ok(failure(format!("unknown tool {}", request.name)));
        }
        let count = |name: &str| {
            request
                .arguments
                .as_ref()
                .and_then(|arguments| arguments.get(name))
                .and_then(Value::as_u64)
                .unwrap_or(0)
        };
        let (n, warmup) = (count("n"), count("warmup"));
        let mut ns = Vec::new();
        for i in 0..warmup + n {
            let form = ElicitRequestParams::clone(&self.form);
            let sent = Instant::now();
            let result = context.peer.create_elicitation(form).await;
            let took = sent.elapsed();
            let problem = match &result {
                Ok(result) => self.unexpected(result),
                Err(err) => Some(err.to_string()),
            };
            if let Some(problem) = problem {
                return Ok(failure(format!("round trip {i}: {problem}")));
            }
            if i >= warmup {
                ns.push(u64::try_from(took.as_nanos()).unwrap_or(u64::MAX));
            }
        }
        let text = json!({ "ns": ns }).to_string();
        Ok(CallToolResult::success(vec![ContentBlock::text(text)]).into())
    }
}

fn failure(text: String) -> CallToolResponse {
    CallToolResult::error(vec![ContentBlock::text(text)]).into()
}
