//! The OAuth settings of one server, resolved from its `[mcp_servers.<name>]` table (see
//! `Transport::auth_settings`): secrets are read from the environment and the key file at
//! that moment, so they never sit in the parsed config.

use std::fmt;

pub use crate::oauth_choices::Grant;

/// How formwork signs in to one server.
#[derive(Clone, Default)]
pub struct AuthSettings {
    /// Pre-registered client (config `oauth.client_id`).
    pub client_id: Option<String>,
    /// Its secret, read from the variable `oauth.client_secret_env_var` when the settings are resolved.
    pub client_secret: Option<String>,
    /// A client ID metadata document URL (config `oauth.client_metadata_url`, https with a path).
    pub client_metadata_url: Option<String>,
    /// `oauth.issuer`: when set, the only authorization server signed in at, and so the only
    /// one the client secret, the client assertion and stored tokens' refreshes go to.
    pub issuer: Option<String>,
    /// `oauth.grant`.
    pub grant: Grant,
    /// PKCS#8 PEM read from `oauth.private_key_file`, for `private_key_jwt` with client credentials.
    pub private_key_pem: Option<String>,
    /// `oauth.signing_algorithm`, default "ES256" when a key is given.
    pub signing_algorithm: Option<String>,
    /// Codex's `scopes`: when set, requested instead of the discovered ones.
    pub scopes: Vec<String>,
    /// Codex's `oauth_resource`: the RFC 8707 resource to send instead of the discovered one.
    pub resource: Option<String>,
    /// The identity provider of [`Grant::CrossAppAccess`].
    pub identity_provider: Option<IdentityProvider>,
}

/// The enterprise identity provider of [`Grant::CrossAppAccess`], with what was read for it.
#[derive(Clone)]
pub struct IdentityProvider {
    /// `oauth.idp_token_endpoint`.
    pub token_endpoint: String,
    /// `oauth.idp_client_id`.
    pub client_id: String,
    /// Read from `oauth.idp_client_secret_env_var`.
    pub client_secret: Option<String>,
    /// The person's ID token from the provider, read from `oauth.id_token_env_var`.
    pub id_token: String,
}

impl fmt::Debug for IdentityProvider {
    /// Everything but the secret and the ID token, which show only whether they are there.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IdentityProvider")
            .field("token_endpoint", &self.token_endpoint)
            .field("client_id", &self.client_id)
            .field("client_secret", &redacted(self.client_secret.as_ref()))
            .field("id_token", &redacted(Some(&self.id_token)))
            .finish()
    }
}

impl fmt::Debug for AuthSettings {
    /// Everything but the secret and the private key, which show only whether they are there.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AuthSettings")
            .field("client_id", &self.client_id)
            .field("client_secret", &redacted(self.client_secret.as_ref()))
            .field("client_metadata_url", &self.client_metadata_url)
            .field("issuer", &self.issuer)
            .field("grant", &self.grant)
            .field("private_key_pem", &redacted(self.private_key_pem.as_ref()))
            .field("signing_algorithm", &self.signing_algorithm)
            .field("scopes", &self.scopes)
            .field("resource", &self.resource)
            .field("identity_provider", &self.identity_provider)
            .finish()
    }
}

/// `Some(<redacted>)` or `None`, for a `Debug` that must not show a secret.
pub(crate) fn redacted(secret: Option<&String>) -> Option<Redacted> {
    secret.map(|_| Redacted)
}

/// Prints as `<redacted>`.
pub(crate) struct Redacted;

impl fmt::Debug for Redacted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_hides_the_secret_and_the_key() {
        let settings = AuthSettings {
            client_id: Some("app".to_owned()),
            client_secret: Some("s3cret".to_owned()),
            grant: Grant::ClientCredentials,
            private_key_pem: Some("-----BEGIN PRIVATE KEY-----".to_owned()),
            signing_algorithm: Some("ES256".to_owned()),
            scopes: vec!["read".to_owned()],
            identity_provider: Some(IdentityProvider {
                token_endpoint: "https://idp.example/token".to_owned(),
                client_id: "idp-app".to_owned(),
                client_secret: Some("idp-s3cret".to_owned()),
                id_token: "eyJ.id.token".to_owned(),
            }),
            ..AuthSettings::default()
        };
        assert_eq!(
            format!("{settings:?}"),
            "AuthSettings { client_id: Some(\"app\"), client_secret: Some(<redacted>), \
             client_metadata_url: None, issuer: None, grant: ClientCredentials, \
             private_key_pem: \
             Some(<redacted>), signing_algorithm: Some(\"ES256\"), scopes: [\"read\"], \
             resource: None, identity_provider: Some(IdentityProvider { token_endpoint: \
             \"https://idp.example/token\", client_id: \"idp-app\", client_secret: \
             Some(<redacted>), id_token: Some(<redacted>) }) }"
        );
        assert_eq!(
            format!("{:?}", AuthSettings::default()),
            "AuthSettings { client_id: None, client_secret: None, client_metadata_url: None, \
             issuer: None, grant: AuthorizationCode, private_key_pem: None, signing_algorithm: None, \
             scopes: [], resource: None, identity_provider: None }"
        );
    }
}
