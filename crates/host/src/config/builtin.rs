//! formwork's built-in MCP servers: the ones formwork manages itself.
//!
//! A built-in server is known by its name, which is reserved. Its tools default to
//! `approve` (no approval card), as Wework's managed servers do; an explicit
//! `default_tools_approval_mode` or `tools.<tool>.approval_mode` in the file always wins. It is
//! launched from the running formwork binary, so the embedded default (no file at all) and a
//! table that names no `command` both work; `config sync` writes the launch keys out in full
//! so the file reads like any other Codex-style server table.

/// One built-in server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BuiltinServer {
    /// The reserved `[mcp_servers.<name>]` name.
    pub name: &'static str,
    /// The arguments the formwork binary is started with to serve it.
    pub args: &'static [&'static str],
}

/// Every built-in server, in the order `config sync` writes them.
pub const BUILTIN_SERVERS: &[BuiltinServer] = &[BuiltinServer {
    name: "demo",
    args: &["demo-plugin"],
}];

/// The built-in server with this name, if there is one.
pub fn builtin_server(name: &str) -> Option<&'static BuiltinServer> {
    BUILTIN_SERVERS.iter().find(|server| server.name == name)
}
