//! The OAuth choices a config file makes and the OAuth client carries out: which grant signs
//! in, and where tokens are kept. They sit below both `config` and `transport`, which do not
//! know each other, so that each is one type with one set of names.

use serde::{Deserialize, Serialize};

/// `oauth.grant`: how tokens are obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Grant {
    /// `"authorization_code"` (the default): the person signs in in a browser.
    #[default]
    AuthorizationCode,
    /// `"client_credentials"`: the client signs in as itself, with a secret or a private key.
    ClientCredentials,
    /// `"cross_app_access"`: enterprise-managed authorization (SEP-990). The identity provider
    /// trades the person's ID token for an ID-JAG (RFC 8693), which the authorization server
    /// takes as a JWT bearer grant (RFC 7523); it stands for a browser sign-in.
    CrossAppAccess,
}

impl Grant {
    /// The name used in the file.
    pub fn as_str(self) -> &'static str {
        match self {
            Grant::AuthorizationCode => "authorization_code",
            Grant::ClientCredentials => "client_credentials",
            Grant::CrossAppAccess => "cross_app_access",
        }
    }

    /// Parses the name used in the file.
    pub fn parse(name: &str) -> Option<Grant> {
        match name {
            "authorization_code" => Some(Grant::AuthorizationCode),
            "client_credentials" => Some(Grant::ClientCredentials),
            "cross_app_access" => Some(Grant::CrossAppAccess),
            _ => None,
        }
    }
}

/// `mcp_oauth_credentials_store`, with Codex's names: where OAuth tokens are kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CredentialsStoreMode {
    /// `"auto"` (the default): the system keyring when one is usable, else the file.
    #[default]
    Auto,
    /// `"keyring"`: the system keyring only; an unusable keyring is an error.
    Keyring,
    /// `"file"`: `mcp-credentials.json` in the data directory.
    File,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_grant_parses_from_its_name() {
        for grant in [
            Grant::AuthorizationCode,
            Grant::ClientCredentials,
            Grant::CrossAppAccess,
        ] {
            assert_eq!(Grant::parse(grant.as_str()), Some(grant));
        }
        assert_eq!(Grant::parse("implicit"), None);
    }
}
