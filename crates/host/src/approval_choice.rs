//! The person's answer to an approval card, by its wire name: the policy decides with it, the
//! store keeps it and the events carry it, so it sits below all three.

use serde::{Deserialize, Serialize};

/// One of an approval card's choices.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalChoice {
    /// Run this call.
    Allow,
    /// Run this call and later calls of the tool in this session.
    AllowForSession,
    /// Run this call and write `approval_mode = "approve"` for the tool to the config.
    AlwaysAllow,
    /// Do not run the call.
    Deny,
}

impl std::fmt::Display for ApprovalChoice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl ApprovalChoice {
    /// Every choice, in the order a card offers them.
    pub const ALL: [ApprovalChoice; 4] = [
        ApprovalChoice::Allow,
        ApprovalChoice::AllowForSession,
        ApprovalChoice::AlwaysAllow,
        ApprovalChoice::Deny,
    ];

    /// The wire name (as in events, commands and the store).
    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalChoice::Allow => "allow",
            ApprovalChoice::AllowForSession => "allow_for_session",
            ApprovalChoice::AlwaysAllow => "always_allow",
            ApprovalChoice::Deny => "deny",
        }
    }

    /// The choice with this wire name.
    pub fn from_name(name: &str) -> Option<ApprovalChoice> {
        ApprovalChoice::ALL
            .into_iter()
            .find(|choice| choice.as_str() == name)
    }

    /// The option's label.
    pub fn label(self) -> &'static str {
        match self {
            ApprovalChoice::Allow => "Allow",
            ApprovalChoice::AllowForSession => "Allow for this session",
            ApprovalChoice::AlwaysAllow => "Always allow",
            ApprovalChoice::Deny => "Deny",
        }
    }

    /// The option's description.
    pub fn description(self) -> &'static str {
        match self {
            ApprovalChoice::Allow => "Run the tool and continue.",
            ApprovalChoice::AllowForSession => {
                "Run the tool and remember this choice for this session."
            }
            ApprovalChoice::AlwaysAllow => {
                "Run the tool and remember this choice in the config for future tool calls."
            }
            ApprovalChoice::Deny => "Do not run the tool.",
        }
    }
}
