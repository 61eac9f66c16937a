//! The approval policy as pure decisions: whether a plugin's form may reach the person
//! (`gate.rs`), whether a tool call needs the person's approval (`approval.rs`), what the
//! approval card looks like in its two renderings and what an answer to it means (`card.rs`).
//! No I/O; the session layer acts on the results and writes each `reason` to the log and the
//! transcript.
//!
//! The names and the semantics are Codex's (measured on Codex 0.171.0 and read in its source):
//!
//! - Plugin forms: `elicitations_auto_deny` declines all; `approval_policy = "never"` declines;
//!   granular with `mcp_elicitations = false` declines; `untrusted`, `on-request` and granular
//!   with `mcp_elicitations = true` let the form through.
//! - Tool calls: the mode is `tools.<tool>.approval_mode`, else the server's
//!   `default_tools_approval_mode`, else `approve` for formwork's built-in servers and `auto`
//!   for all others. `approve` never asks; `prompt` always asks; `writes` asks unless the tool
//!   says `readOnlyHint: true`; `auto` asks when the tool says `destructiveHint: true`, never
//!   when it says `readOnlyHint: true`, and otherwise unless it says both
//!   `destructiveHint: false` and `openWorldHint: false` (a missing hint counts as its MCP
//!   default, `true`). A call that needs approval under policy `never` fails.
//! - Answers: Allow, Allow for this session, Always allow (written to the config), Deny. The
//!   remember-options are offered, and honoured, only under `auto`; under `prompt` and `writes`
//!   they count as a plain Allow.
//!
//! Approvals only ever narrow what a plugin may do: nothing here changes a plugin's own forms,
//! and no setting turns a declined form or a disabled tool into an allowed one.

mod approval;
mod card;
mod gate;

pub use crate::approval_choice::ApprovalChoice;
pub use approval::{
    ApprovalNeed, ModeSource, RememberOffers, SessionApprovals, ToolApproval, app_tool_approval,
    approval_mode, requires_approval, server_default_mode, tool_approval,
};
pub use card::{
    ApprovalAnswer, ApprovalCard, ApprovalRequest, CardRendering, card_rendering, normalize_choice,
};
pub use gate::{ElicitationAllowed, ElicitationDeclined, FormRefused, elicitation_gate, form_gate};

/// The error of a tool call that needs approval while the policy is `never` (Codex's text).
pub const NEVER_POLICY_MESSAGE: &str =
    "MCP tool call requires approval, but approval policy is never";
/// The error of a tool call the person denied (Codex's text).
pub const DENIED_MESSAGE: &str = "user rejected MCP tool call";
/// The error of a tool call whose approval was cancelled (Codex's text).
pub const CANCELLED_MESSAGE: &str = "user cancelled MCP tool call";
/// The header of the approval question (Codex's text).
pub const APPROVAL_HEADER: &str = "Approve app tool call?";
/// The prefix of the approval question's id and of the approval form's request id.
pub const APPROVAL_ID_PREFIX: &str = "mcp_tool_call_approval_";
/// `_meta.codex_approval_kind` of the approval form.
pub const APPROVAL_KIND: &str = "mcp_tool_call";
/// `tool "deploy" of server demo`, for reasons.
fn tool_name(server: &str, tool: &str) -> String {
    format!("tool {tool:?} of server {server}")
}
