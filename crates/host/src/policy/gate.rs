//! The plugin-form gate: whether a plugin's form may reach the person at all.

use std::fmt;

use crate::config::{ApprovalPolicy, Config};

/// Why a plugin's form may reach the person.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ElicitationAllowed {
    /// `approval_policy = "untrusted"`.
    Untrusted,
    /// `approval_policy = "on-request"`.
    OnRequest,
    /// Granular policy with `mcp_elicitations = true`.
    Granular,
}

/// Why a plugin's form is declined before the person sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ElicitationDeclined {
    /// `elicitations_auto_deny = true`.
    AutoDeny,
    /// `approval_policy = "never"`.
    PolicyNever,
    /// Granular policy with `mcp_elicitations = false`.
    GranularDisallowed,
}

/// Whether a plugin's form (an MCP elicitation) may reach the person. The checks run in
/// Codex's order: auto-deny first, then the policy.
pub fn elicitation_gate(config: &Config) -> Result<ElicitationAllowed, ElicitationDeclined> {
    if config.elicitations_auto_deny {
        return Err(ElicitationDeclined::AutoDeny);
    }
    match config.approval_policy {
        ApprovalPolicy::Never => Err(ElicitationDeclined::PolicyNever),
        ApprovalPolicy::Granular(granular) if !granular.mcp_elicitations => {
            Err(ElicitationDeclined::GranularDisallowed)
        }
        ApprovalPolicy::Granular(_) => Ok(ElicitationAllowed::Granular),
        ApprovalPolicy::Untrusted => Ok(ElicitationAllowed::Untrusted),
        ApprovalPolicy::OnRequest => Ok(ElicitationAllowed::OnRequest),
    }
}

impl fmt::Display for ElicitationAllowed {
    /// The reason, for the log and the transcript.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ElicitationAllowed::Untrusted => {
                r#"plugin forms are shown: approval_policy = "untrusted" allows them"#
            }
            ElicitationAllowed::OnRequest => {
                r#"plugin forms are shown: approval_policy = "on-request" allows them"#
            }
            ElicitationAllowed::Granular => {
                "plugin forms are shown: approval_policy granular.mcp_elicitations = true"
            }
        })
    }
}

impl fmt::Display for ElicitationDeclined {
    /// The reason, for the log, the transcript and the plugin.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ElicitationDeclined::AutoDeny => {
                "plugin form declined: elicitations_auto_deny = true declines every plugin form"
            }
            ElicitationDeclined::PolicyNever => {
                r#"plugin form declined: approval_policy = "never" declines plugin forms"#
            }
            ElicitationDeclined::GranularDisallowed => {
                "plugin form declined: approval_policy granular.mcp_elicitations = false"
            }
        })
    }
}
