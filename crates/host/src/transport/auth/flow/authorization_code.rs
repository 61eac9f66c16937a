//! The authorization code grant with PKCE (S256): the person signs in at the authorization
//! server in a browser, as a pre-registered client, a client ID metadata document, or one
//! registered on the spot (RFC 7591).

use oauth2::basic::BasicClient;
use oauth2::{
    AuthType, AuthUrl, AuthorizationCode, ClientId, ClientSecret, CsrfToken, PkceCodeChallenge,
    RedirectUrl, Scope, TokenUrl,
};
use serde_json::{Value, json};

use super::token::{Client, client_auth_type, token_error};
use super::{AuthError, Authorizer, WaitingForPerson};
use crate::transport::auth::discovery::{Discovered, Source};
use crate::transport::auth::fetch;
use crate::transport::auth::store::StoredTokens;

impl Authorizer {
    pub(super) async fn authorization_code(
        &self,
        discovered: &Discovered,
        scopes: &[String],
        resource: Option<String>,
    ) -> Result<StoredTokens, AuthError> {
        let server = &discovered.server;
        // PKCE is required; discovered metadata must say S256 is offered (the 2025-03-26
        // default endpoints have no metadata to say it).
        if discovered.source != Source::LegacyDefaults
            && !server
                .code_challenge_methods_supported
                .as_ref()
                .is_some_and(|methods| methods.iter().any(|m| m == "S256"))
        {
            return Err(self.failed(format!(
                "its authorization server {} does not offer PKCE with S256 (code_challenge_methods_supported); formwork does not sign in without it",
                server.issuer
            )));
        }
        let Some(agent) = &self.agent else {
            return Err(AuthError::SignInNeeded {
                server: self.server_name.clone(),
                url: self.server_url.clone(),
                configured: self.configured,
            });
        };
        let authorization_endpoint = server.authorization_endpoint.clone().ok_or_else(|| {
            self.failed(format!(
                "its authorization server {} has no authorization_endpoint",
                server.issuer
            ))
        })?;
        let pending = agent.start().await.map_err(|err| self.failed(err))?;
        let redirect_uri = pending.redirect_uri();
        let client = self.client_for(discovered, &redirect_uri).await?;

        let auth_url = AuthUrl::new(authorization_endpoint).map_err(|err| {
            self.failed(format!("the authorization endpoint is not a URL: {err}"))
        })?;
        let token_url = TokenUrl::new(server.token_endpoint.clone())
            .map_err(|err| self.failed(format!("the token endpoint is not a URL: {err}")))?;
        let redirect = RedirectUrl::new(redirect_uri.clone())
            .map_err(|err| self.failed(format!("the redirect URI is not a URL: {err}")))?;
        let mut oauth = BasicClient::new(ClientId::new(client.id.clone()))
            .set_auth_uri(auth_url)
            .set_token_uri(token_url)
            .set_redirect_uri(redirect)
            .set_auth_type(client.auth_type.clone());
        if let Some(secret) = &client.secret {
            oauth = oauth.set_client_secret(ClientSecret::new(secret.clone()));
        }
        let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
        let mut request = oauth
            .authorize_url(CsrfToken::new_random)
            .set_pkce_challenge(challenge)
            .add_scopes(scopes.iter().cloned().map(Scope::new));
        if let Some(resource) = &resource {
            request = request.add_extra_param("resource", resource.clone());
        }
        let (url, state) = request.url();
        let code = {
            let _waiting = WaitingForPerson::start(self);
            pending
                .complete(url.to_string(), state.secret().clone())
                .await
        }
        .map_err(|err| self.failed(err))?;
        let mut exchange = oauth
            .exchange_code(AuthorizationCode::new(code))
            .set_pkce_verifier(verifier);
        if let Some(resource) = &resource {
            exchange = exchange.add_extra_param("resource", resource.clone());
        }
        let answer = exchange
            .request_async(&fetch::oauth_client)
            .await
            .map_err(|err| self.failed(token_error(&server.token_endpoint, err)))?;
        self.stored(discovered, &client, &answer, scopes, resource)
    }

    /// The client to sign in as, in the spec's order: pre-registered, a client ID metadata
    /// document where the server accepts one, else dynamic registration.
    pub(super) async fn client_for(
        &self,
        discovered: &Discovered,
        redirect_uri: &str,
    ) -> Result<Client, AuthError> {
        let server = &discovered.server;
        let methods = server.token_endpoint_auth_methods_supported.as_deref();
        if let Some(id) = &self.settings.client_id {
            let secret = self.settings.client_secret.clone();
            return Ok(Client {
                id: id.clone(),
                auth_type: client_auth_type(methods, None, secret.is_some()),
                secret,
            });
        }
        if let Some(document) = &self.settings.client_metadata_url
            && server.client_id_metadata_document_supported
        {
            return Ok(Client {
                id: document.clone(),
                secret: None,
                auth_type: AuthType::RequestBody,
            });
        }
        let Some(endpoint) = &server.registration_endpoint else {
            return Err(self.failed(format!(
                "its authorization server {} offers no client registration: set `oauth.client_id` for {}",
                server.issuer, self.server_name
            )));
        };
        self.register(endpoint, methods, redirect_uri).await
    }

    /// RFC 7591 dynamic client registration.
    pub(super) async fn register(
        &self,
        endpoint: &str,
        methods: Option<&[String]>,
        redirect_uri: &str,
    ) -> Result<Client, AuthError> {
        let offers =
            |method: &str| methods.is_none_or(|methods| methods.iter().any(|m| m == method));
        let wanted = ["none", "client_secret_basic", "client_secret_post"]
            .into_iter()
            .find(|method| offers(method))
            .unwrap_or("none");
        let body = json!({
            "client_name": "formwork",
            "redirect_uris": [redirect_uri],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": wanted,
        })
        .to_string();
        let fetched = fetch::exchange(
            "POST",
            endpoint,
            &[
                ("content-type", "application/json"),
                ("accept", "application/json"),
            ],
            body.as_bytes(),
        )
        .await
        .map_err(|err| self.failed(format!("registering with {endpoint} failed: {err}")))?;
        if !(200..300).contains(&fetched.status) {
            return Err(self.failed(format!(
                "registering with {endpoint} failed: HTTP {} ({})",
                fetched.status,
                snippet(&fetched.body)
            )));
        }
        // A successful answer holds the client's secret, if it has one: never quoted.
        if !fetched.is_json() {
            return Err(self.failed(format!(
                "registering with {endpoint} failed: it answered HTTP {} with `{}`, not JSON",
                fetched.status, fetched.content_type
            )));
        }
        let answer: Value = serde_json::from_slice(&fetched.body).map_err(|err| {
            self.failed(format!(
                "the registration answer of {endpoint} is not JSON: {err}"
            ))
        })?;
        let id = answer
            .get("client_id")
            .and_then(Value::as_str)
            .filter(|id| !id.is_empty())
            .ok_or_else(|| {
                self.failed(format!(
                    "the registration answer of {endpoint} has no client_id"
                ))
            })?;
        let secret = answer
            .get("client_secret")
            .and_then(Value::as_str)
            .filter(|secret| !secret.is_empty())
            .map(str::to_owned);
        let returned = answer
            .get("token_endpoint_auth_method")
            .and_then(Value::as_str);
        Ok(Client {
            id: id.to_owned(),
            auth_type: client_auth_type(methods, returned, secret.is_some()),
            secret,
        })
    }
}

fn snippet(body: &[u8]) -> String {
    String::from_utf8_lossy(body).chars().take(200).collect()
}
