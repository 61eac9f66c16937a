//! The official TS SDK's OAuth example: an MCP server behind its demo authorization server.

use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};

use crate::{free_port, kill_group, node, peers_dir, wait_listening};

/// The official TS SDK's example server with `--oauth` (`simpleStreamableHttp.js`,
/// @modelcontextprotocol/sdk 1.32.2) and its demo authorization server on a port of its own,
/// which approves every sign-in at once. Stopped when dropped.
pub struct OAuthExample {
    child: Child,
    /// Its MCP endpoint, `http://localhost:PORT/mcp`.
    pub url: String,
}

impl OAuthExample {
    pub fn start() -> OAuthExample {
        let (mcp, auth) = (free_port(), free_port());
        let script = peers_dir().join(
            "npm/node_modules/@modelcontextprotocol/sdk/dist/esm/examples/server/simpleStreamableHttp.js",
        );
        let child = Command::new(node())
            .arg(script)
            .arg("--oauth")
            .env("MCP_PORT", mcp.to_string())
            .env("MCP_AUTH_PORT", auth.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .expect("starting the TS SDK's OAuth example");
        // Dropped on a failed wait below: nothing of it outlives the test.
        let server = OAuthExample {
            child,
            url: format!("http://localhost:{mcp}/mcp"),
        };
        for port in [mcp, auth] {
            wait_listening("the OAuth example", "localhost", port);
        }
        server
    }
}

impl Drop for OAuthExample {
    fn drop(&mut self) {
        kill_group(self.child.id());
        let _ = self.child.wait();
    }
}
