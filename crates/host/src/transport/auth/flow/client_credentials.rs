//! The client credentials grant: the client signs in as itself, with a secret or a signed
//! assertion (`private_key_jwt`, RFC 7523).

use std::time::Duration;

use oauth2::basic::BasicClient;
use oauth2::{AuthType, ClientId, ClientSecret, CsrfToken, Scope, TokenUrl};
use serde_json::json;

use super::token::{Client, client_auth_type, token_error, unix_now};
use super::{AuthError, Authorizer};
use crate::transport::auth::discovery::Discovered;
use crate::transport::auth::fetch;
use crate::transport::auth::store::StoredTokens;

/// How long a client assertion (`private_key_jwt`) is valid.
const ASSERTION_LIFETIME: Duration = Duration::from_secs(300);
const ASSERTION_TYPE: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";

impl Authorizer {
    pub(super) async fn client_credentials(
        &self,
        discovered: &Discovered,
        scopes: &[String],
        resource: Option<String>,
    ) -> Result<StoredTokens, AuthError> {
        let server = &discovered.server;
        let Some(client_id) = self.settings.client_id.clone() else {
            return Err(self.failed("the client-credentials grant needs `oauth.client_id`"));
        };
        let token_url = TokenUrl::new(server.token_endpoint.clone())
            .map_err(|err| self.failed(format!("the token endpoint is not a URL: {err}")))?;
        let mut oauth = BasicClient::new(ClientId::new(client_id.clone())).set_token_uri(token_url);
        let mut assertion = None;
        let client = if let Some(pem) = &self.settings.private_key_pem {
            assertion = Some(self.client_assertion(&client_id, pem, &server.issuer)?);
            Client {
                id: client_id,
                secret: None,
                auth_type: AuthType::RequestBody,
            }
        } else {
            let secret = self.settings.client_secret.clone();
            let auth_type = client_auth_type(
                server.token_endpoint_auth_methods_supported.as_deref(),
                None,
                secret.is_some(),
            );
            if let Some(secret) = &secret {
                oauth = oauth.set_client_secret(ClientSecret::new(secret.clone()));
            }
            Client {
                id: client_id,
                secret,
                auth_type,
            }
        };
        oauth = oauth.set_auth_type(client.auth_type.clone());
        let mut request = oauth
            .exchange_client_credentials()
            .add_scopes(scopes.iter().cloned().map(Scope::new));
        if let Some(assertion) = assertion {
            request = request
                .add_extra_param("client_assertion_type", ASSERTION_TYPE)
                .add_extra_param("client_assertion", assertion);
        }
        if let Some(resource) = &resource {
            request = request.add_extra_param("resource", resource.clone());
        }
        let answer = request
            .request_async(&fetch::oauth_client)
            .await
            .map_err(|err| self.failed(token_error(&server.token_endpoint, err)))?;
        self.stored(discovered, &client, &answer, scopes, resource)
    }

    /// An RFC 7523 client assertion: signed by the configured key, for the issuer.
    pub(super) fn client_assertion(
        &self,
        client_id: &str,
        pem: &str,
        issuer: &str,
    ) -> Result<String, AuthError> {
        use jsonwebtoken::{Algorithm, EncodingKey, Header};
        let name = self
            .settings
            .signing_algorithm
            .as_deref()
            .unwrap_or("ES256");
        let algorithm: Algorithm = name
            .parse()
            .map_err(|_| self.failed(format!("`{name}` is not a JWT signing algorithm")))?;
        let key = match algorithm {
            Algorithm::ES256 | Algorithm::ES384 => EncodingKey::from_ec_pem(pem.as_bytes()),
            Algorithm::EdDSA => EncodingKey::from_ed_pem(pem.as_bytes()),
            Algorithm::RS256
            | Algorithm::RS384
            | Algorithm::RS512
            | Algorithm::PS256
            | Algorithm::PS384
            | Algorithm::PS512 => EncodingKey::from_rsa_pem(pem.as_bytes()),
            _ => {
                return Err(
                    self.failed(format!("`{name}` needs a shared secret, not a private key"))
                );
            }
        }
        .map_err(|err| self.failed(format!("the private key does not suit {name}: {err}")))?;
        let now = unix_now();
        let claims = json!({
            "iss": client_id,
            "sub": client_id,
            "aud": issuer,
            "iat": now,
            "exp": now + ASSERTION_LIFETIME.as_secs(),
            "jti": CsrfToken::new_random().secret(),
        });
        jsonwebtoken::encode(&Header::new(algorithm), &claims, &key)
            .map_err(|err| self.failed(format!("signing the client assertion failed: {err}")))
    }
}
