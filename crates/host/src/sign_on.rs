//! What a server's OAuth keys mean to the transport: the config names variables and files,
//! [`AuthSettings`] holds what they contain, read when a connection is made. This room sits
//! above `config` and `transport`, which do not know each other, and below the session and
//! the doctor, which both connect to servers.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::config::{Config, Transport, VariableUnset, read_variable};
use crate::transport::auth::Authorizer;
use crate::transport::auth::agent::SignInAgent;
use crate::transport::auth::settings::{AuthSettings, IdentityProvider};
use crate::transport::auth::store::TokenStore;

/// Why a server's OAuth settings cannot be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SignOnError {
    /// A variable the config names is unset or empty.
    #[error(transparent)]
    VariableUnset(#[from] VariableUnset),
    /// `oauth.private_key_file` cannot be read.
    #[error("cannot read {} (oauth.private_key_file): {source}", path.display())]
    KeyUnreadable {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// `oauth.private_key_file` holds something else than a PKCS#8 PEM private key.
    #[error(
        "{} (oauth.private_key_file) is not a PKCS#8 PEM private key \
         (-----BEGIN PRIVATE KEY-----)",
        path.display()
    )]
    NotAPrivateKey {
        /// The file.
        path: PathBuf,
    },
}

impl Transport {
    /// The OAuth settings of a Streamable HTTP server, with the client secret read from
    /// `oauth.client_secret_env_var`, the key from `oauth.private_key_file`, and the identity
    /// provider's secret and ID token from their variables now. The defaults for other
    /// transports.
    pub fn auth_settings(&self) -> Result<AuthSettings, SignOnError> {
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
            .map(|idp| -> Result<IdentityProvider, SignOnError> {
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
            grant: oauth.grant,
            private_key_pem,
            signing_algorithm,
            scopes: scopes.clone(),
            resource: oauth_resource.clone(),
            identity_provider,
        })
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
) -> Result<Arc<Authorizer>, SignOnError> {
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
        config.mcp_oauth_credentials_store,
        data_dir,
    ))
}

/// `oauth.signing_algorithm` when a key is given without one.
pub const DEFAULT_SIGNING_ALGORITHM: &str = "ES256";

/// The text of `oauth.private_key_file`, which must be a PKCS#8 PEM private key.
fn read_private_key(path: &Path) -> Result<String, SignOnError> {
    let text = std::fs::read_to_string(path).map_err(|source| SignOnError::KeyUnreadable {
        path: path.to_owned(),
        source,
    })?;
    if !text.contains("-----BEGIN PRIVATE KEY-----") {
        return Err(SignOnError::NotAPrivateKey {
            path: path.to_owned(),
        });
    }
    Ok(text)
}
