//! An MCP server written on the official Rust SDK (rmcp), serving over Streamable HTTP the fixtures
//! that the server scenarios of the official conformance suite expect: `sdk-conformance --port PORT`
//! serves `http://127.0.0.1:PORT/mcp` and prints `listening <port>` once it accepts (`--port 0`
//! picks a free port).
//!
//! `fixtures` holds the tools, resources and prompts; `elicitation` the three tools that ask the
//! user; `reconnect` the session layer that lets `test_reconnection` close its own SSE stream.

mod elicitation;
mod fixtures;
mod reconnect;

use std::time::Duration;

use clap::Parser;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};

/// How long a client waits before it reconnects to a stream the server ended (SSE `retry`).
const SSE_RETRY: Duration = Duration::from_millis(500);

#[derive(Parser)]
#[command(
    about = "An rmcp server with the conformance suite's fixtures, on http://127.0.0.1:PORT/mcp"
)]
struct Args {
    /// Loopback port to listen on; 0 picks a free one.
    #[arg(long)]
    port: u16,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", args.port)).await?;
    let sessions = reconnect::ReconnectingSessions::new(SSE_RETRY);
    let service = StreamableHttpService::new(
        || Ok(fixtures::ConformanceServer::default()),
        sessions.into(),
        http_config(),
    );
    let router = axum::Router::new().nest_service("/mcp", service);
    println!("listening {}", listener.local_addr()?.port());
    axum::serve(listener, router).await?;
    Ok(())
}

/// Sessions with resumable streams, and DNS-rebinding protection: a request whose `Host` is not a
/// loopback name is refused with 403, and so is one whose `Origin` (when it has one) is not a
/// loopback origin, whatever its port.
fn http_config() -> StreamableHttpServerConfig {
    StreamableHttpServerConfig::default()
        .with_legacy_session_mode(true)
        .with_sse_retry(Some(SSE_RETRY))
        .with_allowed_hosts(["localhost", "127.0.0.1", "::1"])
        .with_allowed_origins(["http://localhost:*", "http://127.0.0.1:*", "http://[::1]:*"])
}
