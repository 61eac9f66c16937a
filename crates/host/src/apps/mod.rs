//! MCP Apps, the pure part: which UI resource an invocation declares (`declare.rs`), which
//! tools an app and the model may see (`declare.rs`), the app document a `resources/read`
//! result holds (`document.rs`), and the sandbox policy (Content-Security-Policy, the iframe's
//! `allow` attribute, what was granted) built from the resource's metadata (`csp.rs`).
//!
//! Everything here is a function of plugin JSON: no I/O, no async, no connection or session.
//! The session layer reads resources and routes app requests; the web crate serves documents
//! under the policy built here. The vocabulary is the MCP Apps extension's (stable spec
//! 2026-01-26) and, for legacy `text/html+skybridge` widgets, the OpenAI Apps SDK's `openai/*`
//! metadata keys, mapped onto the same decisions.
//!
//! **Invariant:** plugin metadata only ever narrows what an app document may do. A malformed
//! declaration grants nothing: an unreadable visibility hides a tool from apps, an unreadable
//! CSP entry is dropped (and reported), never written into a header.

mod csp;
mod declare;
mod document;

pub use csp::{
    DEFAULT_CSP, MAX_DOMAINS_PER_LIST, MAX_ENTRY_LEN, PluginPlace, SandboxPolicy, sandbox_policy,
};
pub use declare::{Visibility, declared_ui, visibility, widget_may_call};
pub use document::{AppDocument, DocumentError, read_document};

/// The MCP Apps extension's id, the key of `capabilities.extensions` in `initialize`.
pub const UI_EXTENSION: &str = "io.modelcontextprotocol/ui";
/// The MIME type of an MCP Apps document (`resources/read` content).
pub const APP_MIME: &str = "text/html;profile=mcp-app";
/// The MIME type of a legacy OpenAI Apps SDK widget, served with a `window.openai` adapter.
pub const SKYBRIDGE_MIME: &str = "text/html+skybridge";

/// How many characters of plugin text an error or a `dropped` line quotes.
const QUOTED_CHARS: usize = 80;

/// Plugin text for a message: quoted, escaped, cut at [`QUOTED_CHARS`] characters.
fn quoted(text: &str) -> String {
    let mut chars = text.chars();
    let head: String = chars.by_ref().take(QUOTED_CHARS).collect();
    if chars.next().is_some() {
        format!("{head:?}…")
    } else {
        format!("{head:?}")
    }
}
