//! The plugin-form gate: whether a plugin's form may reach the person at all, and whether one
//! form is declined when it arrives (too many wait already, or it asks for a secret).

use std::fmt;

use formwork_forms::ElicitationRequest;

use crate::config::{ApprovalPolicy, Config, FormsConfig, SensitiveFields};

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

/// Why one form that the gate lets through is still declined when it arrives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FormRefused {
    /// As many forms as `[forms] max_pending` already wait for the person in this scope.
    TooManyPending {
        /// The limit.
        limit: usize,
        /// `"tool call"` or `"session"`.
        scope: &'static str,
    },
    /// `[forms] sensitive_fields = "decline"`, and these fields ask for a secret.
    Sensitive {
        /// The keys of the fields, in property order.
        fields: Vec<String>,
    },
}

impl FormRefused {
    /// The stable code of the diagnostic that reports it.
    pub fn code(&self) -> &'static str {
        match self {
            FormRefused::TooManyPending { .. } => "form-limit",
            FormRefused::Sensitive { .. } => "form-asks-for-a-secret",
        }
    }
}

impl fmt::Display for FormRefused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FormRefused::TooManyPending { limit, scope } => write!(
                f,
                "declined: {limit} forms of this {scope} already wait for an answer, \
                 the most [forms] max_pending = {limit} allows"
            ),
            FormRefused::Sensitive { fields } => write!(
                f,
                "declined: the form asks for a secret ({}), which plugins must not ask for in \
                 a form, and [forms] sensitive_fields = \"decline\"",
                fields.join(", ")
            ),
        }
    }
}

/// Whether one more form may join those waiting: `of_call` forms of its tool call and
/// `of_session` forms of its session wait already (the CLI has one call: both the same), and
/// its fields are checked against `[forms] sensitive_fields`.
pub fn form_gate(
    forms: &FormsConfig,
    request: &ElicitationRequest,
    of_call: usize,
    of_session: usize,
) -> Result<(), FormRefused> {
    let limit = forms.max_pending;
    if of_call >= limit {
        return Err(FormRefused::TooManyPending {
            limit,
            scope: "tool call",
        });
    }
    if of_session >= limit {
        return Err(FormRefused::TooManyPending {
            limit,
            scope: "session",
        });
    }
    if forms.sensitive_fields == SensitiveFields::Decline
        && let Some(form) = request.form()
    {
        let fields: Vec<String> = form.sensitive_fields().map(str::to_owned).collect();
        if !fields.is_empty() {
            return Err(FormRefused::Sensitive { fields });
        }
    }
    Ok(())
}
