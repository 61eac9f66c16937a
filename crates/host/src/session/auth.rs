//! What a server's OAuth keys mean to the transport: the config names variables and files,
//! [`AuthSettings`] holds what they contain, read when a connection is made. This sits in the
//! session layer because the config and the transport do not know each other.

use std::path::Path;
use std::sync::Arc;

use crate::auth::Authorizer;
use crate::auth::agent::SignInAgent;
use crate::auth::settings::IdentityProvider;
use crate::config::{Config, CredentialsStore, OAuthGrant, Transport};
use crate::{AuthSettings, CredentialsStoreMode, Grant, TokenStore};

impl Transport {
    /// The OAuth settings of a Streamable HTTP server, with the client secret read from
    /// `oauth.client_secret_env_var`, the key from `oauth.private_key_file`, and the identity
    /// provider's secret and ID token from their variables now. The defaults for other
    /// transports.
    pub fn auth_settings(&self) -> Result<AuthSettings, String> {
        let Transport::StreamableHttp {
            scopes,
            oauth_resource,
            oauth,
            ..
        } = self
        else {
            return Ok(AuthSettings::default());
        };
        let client_secret = oauth
            .client_secret_env_var
            .as_deref()
            .map(|variable| read_variable(variable, "oauth.client_secret_env_var"))
            .transpose()?;
        let identity_provider = oauth
            .identity_provider
            .as_ref()
            .map(|idp| -> Result<IdentityProvider, String> {
                Ok(IdentityProvider {
                    token_endpoint: idp.token_endpoint.clone(),
                    client_id: idp.client_id.clone(),
                    client_secret: idp
                        .client_secret_env_var
                        .as_deref()
                        .map(|variable| read_variable(variable, "oauth.idp_client_secret_env_var"))
                        .transpose()?,
                    id_token: read_variable(&idp.id_token_env_var, "oauth.id_token_env_var")?,
                })
            })
            .transpose()?;
        let private_key_pem = oauth
            .private_key_file
            .as_deref()
            .map(read_private_key)
            .transpose()?;
        let signing_algorithm = match (&oauth.signing_algorithm, &private_key_pem) {
            (Some(algorithm), _) => Some(algorithm.clone()),
            (None, Some(_)) => Some(DEFAULT_SIGNING_ALGORITHM.to_owned()),
            (None, None) => None,
        };
        Ok(AuthSettings {
            client_id: oauth.client_id.clone(),
            client_secret,
            client_metadata_url: oauth.client_metadata_url.clone(),
            issuer: oauth.issuer.clone(),
            grant: match oauth.grant {
                OAuthGrant::AuthorizationCode => Grant::AuthorizationCode,
                OAuthGrant::ClientCredentials => Grant::ClientCredentials,
                OAuthGrant::CrossAppAccess => Grant::CrossAppAccess,
            },
            private_key_pem,
            signing_algorithm,
            scopes: scopes.clone(),
            resource: oauth_resource.clone(),
            identity_provider,
        })
    }
}

/// The value of the environment variable the config key `key` names; set and not empty.
fn read_variable(variable: &str, key: &str) -> Result<String, String> {
    std::env::var(variable)
        .ok()
        .filter(|value| !value.is_empty())
        .ok_or_else(|| format!("the environment variable `{variable}` ({key}) is not set"))
}

/// `oauth.signing_algorithm` when a key is given without one.
pub const DEFAULT_SIGNING_ALGORITHM: &str = "ES256";

/// The text of `oauth.private_key_file`, which must be a PKCS#8 PEM private key.
fn read_private_key(path: &Path) -> Result<String, String> {
    let text = std::fs::read_to_string(path).map_err(|err| {
        format!(
            "cannot read {} (oauth.private_key_file): {err}",
            path.display()
        )
    })?;
    if !text.contains("-----BEGIN PRIVATE KEY-----") {
        return Err(format!(
            "{} (oauth.private_key_file) is not a PKCS#8 PEM private key \
             (-----BEGIN PRIVATE KEY-----)",
            path.display()
        ));
    }
    Ok(text)
}

impl From<CredentialsStore> for CredentialsStoreMode {
    fn from(store: CredentialsStore) -> CredentialsStoreMode {
        match store {
            CredentialsStore::Auto => CredentialsStoreMode::Auto,
            CredentialsStore::Keyring => CredentialsStoreMode::Keyring,
            CredentialsStore::File => CredentialsStoreMode::File,
        }
    }
}

/// The authorizer of a connection to the server `name` at `url`: its configured OAuth settings
/// (none for a server the config does not name), the token store, and who signs in when the
/// server asks (`None`: a 401 says to run `formwork login NAME`).
pub fn authorizer_for(
    config: &Config,
    name: &str,
    url: &str,
    store: Option<Arc<TokenStore>>,
    agent: Option<Arc<dyn SignInAgent>>,
) -> Result<Arc<Authorizer>, String> {
    Ok(Arc::new(match config.server(name) {
        Some(server) => {
            let settings = server.transport.auth_settings()?;
            Authorizer::new(name, url, settings, store, agent)
        }
        None => Authorizer::new(name, url, AuthSettings::default(), store, agent).unconfigured(),
    }))
}

/// The token store `mcp_oauth_credentials_store` names, with its file in `data_dir`.
pub fn token_store(config: &Config, data_dir: &Path) -> Arc<TokenStore> {
    Arc::new(TokenStore::new(
        config.mcp_oauth_credentials_store.into(),
        data_dir,
    ))
}

impl crate::Host {
    /// The authorizer of a connection of the host's own (not a session's) to the server
    /// `name`: the host's token store, and nobody to sign in (a sign-in comes from a session's
    /// card, or `formwork login`).
    pub fn authorizer(&self, name: &str, url: &str) -> Result<Arc<Authorizer>, String> {
        authorizer_for(&self.config(), name, url, self.inner.token_store(), None)
    }
}

impl super::HostInner {
    /// The token store of [`HostOptions::data_dir`](crate::HostOptions::data_dir), opened on
    /// first use and then shared: its first load or save (on a blocking thread) asks an `auto`
    /// store's keyring whether it answers, once.
    pub(super) fn token_store(&self) -> Option<Arc<TokenStore>> {
        self.token_store
            .get_or_init(|| {
                let dir = self.options.data_dir.as_deref()?;
                Some(token_store(&self.config(), dir))
            })
            .clone()
    }
}
