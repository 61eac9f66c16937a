//! Cross-app access (SEP-990): an ID token traded for an ID-JAG at the identity provider, and
//! that taken as a JWT bearer grant at the authorization server. The `oauth2` crate has neither
//! grant: both requests are form POSTs of our own.

use oauth2::AuthType;
use serde::Deserialize;
use serde_json::Value;

use super::token::{
    Client, basic_credentials, client_auth_type, token_answer_fault, token_value_fault,
};
use super::{AuthError, Authorizer};
use crate::transport::auth::discovery::{self, Discovered};
use crate::transport::auth::fetch;
use crate::transport::auth::store::StoredTokens;

/// The two grants of cross-app access, and the token types of its exchange.
const TOKEN_EXCHANGE_GRANT: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
const JWT_BEARER_GRANT: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";
const ID_TOKEN_TYPE: &str = "urn:ietf:params:oauth:token-type:id_token";
const ID_JAG_TOKEN_TYPE: &str = "urn:ietf:params:oauth:token-type:id-jag";

impl Authorizer {
    /// Enterprise-managed authorization (SEP-990): the identity provider trades the person's
    /// ID token for an ID-JAG naming this authorization server and resource (RFC 8693 token
    /// exchange), and the authorization server takes that as a JWT bearer grant (RFC 7523).
    /// The `oauth2` crate has neither grant, so both requests are written here.
    pub(super) async fn cross_app_access(
        &self,
        discovered: &Discovered,
        scopes: &[String],
        resource: Option<String>,
    ) -> Result<StoredTokens, AuthError> {
        let server = &discovered.server;
        let (Some(idp), Some(client_id)) =
            (&self.settings.identity_provider, &self.settings.client_id)
        else {
            return Err(self.failed(
                "the cross-app access grant needs `oauth.client_id` and the identity provider's keys",
            ));
        };
        // The ID-JAG names the resource it is for; without the server's resource metadata
        // there is none to name.
        let Some(resource) = resource else {
            return Err(self.failed(
                "the cross-app access grant needs the server's protected resource metadata, and it publishes none",
            ));
        };
        let idp_endpoint = url::Url::parse(&idp.token_endpoint).map_err(|err| {
            self.failed(format!(
                "the identity provider's token endpoint `{}` is not a URL: {err}",
                idp.token_endpoint
            ))
        })?;
        discovery::check_secure(&idp_endpoint).map_err(|reason| self.failed(reason))?;
        let scope = scopes.join(" ");

        let exchange = {
            let mut form = url::form_urlencoded::Serializer::new(String::new());
            form.append_pair("grant_type", TOKEN_EXCHANGE_GRANT)
                .append_pair("requested_token_type", ID_JAG_TOKEN_TYPE)
                .append_pair("audience", &server.issuer)
                .append_pair("resource", &resource)
                .append_pair("subject_token", &idp.id_token)
                .append_pair("subject_token_type", ID_TOKEN_TYPE)
                .append_pair("client_id", &idp.client_id);
            if let Some(secret) = &idp.client_secret {
                form.append_pair("client_secret", secret);
            }
            if !scope.is_empty() {
                form.append_pair("scope", &scope);
            }
            form.finish()
        };
        let answer = self.token_post(&idp.token_endpoint, None, exchange).await?;
        let issued_type = answer.get("issued_token_type").and_then(Value::as_str);
        let grant = answer
            .get("access_token")
            .and_then(Value::as_str)
            .filter(|grant| !grant.is_empty() && issued_type == Some(ID_JAG_TOKEN_TYPE))
            .ok_or_else(|| {
                self.failed(format!(
                    "the identity provider's token endpoint {} answered no ID-JAG (issued_token_type {})",
                    idp.token_endpoint,
                    issued_type.unwrap_or("missing")
                ))
            })?;

        let secret = self.settings.client_secret.clone();
        let client = Client {
            id: client_id.clone(),
            auth_type: client_auth_type(
                server.token_endpoint_auth_methods_supported.as_deref(),
                None,
                secret.is_some(),
            ),
            secret,
        };
        let (bearer, basic) = {
            let mut form = url::form_urlencoded::Serializer::new(String::new());
            form.append_pair("grant_type", JWT_BEARER_GRANT)
                .append_pair("assertion", grant)
                .append_pair("resource", &resource);
            if !scope.is_empty() {
                form.append_pair("scope", &scope);
            }
            let basic = match (&client.auth_type, &client.secret) {
                (AuthType::BasicAuth, Some(secret)) => Some(basic_credentials(&client.id, secret)),
                (_, secret) => {
                    form.append_pair("client_id", &client.id);
                    if let Some(secret) = secret {
                        form.append_pair("client_secret", secret);
                    }
                    None
                }
            };
            (form.finish(), basic)
        };
        let answer = self
            .token_post(&server.token_endpoint, basic.as_deref(), bearer)
            .await?;
        let tokens = oauth2::basic::BasicTokenResponse::deserialize(&answer).map_err(|_| {
            self.failed(format!(
                "the token endpoint {} answered something that is not a token response: {}",
                server.token_endpoint,
                token_value_fault(&answer)
            ))
        })?;
        self.stored(discovered, &client, &tokens, scopes, Some(resource))
    }

    /// A token request of a grant the `oauth2` crate lacks: the form `body` POSTed to
    /// `endpoint` (with `Authorization: <basic>` when given), its JSON answer, or why not.
    /// The answer is never quoted: it may carry a token.
    pub(super) async fn token_post(
        &self,
        endpoint: &str,
        basic: Option<&str>,
        body: String,
    ) -> Result<Value, AuthError> {
        let mut headers = vec![
            ("content-type", "application/x-www-form-urlencoded"),
            ("accept", "application/json"),
        ];
        if let Some(basic) = basic {
            headers.push(("authorization", basic));
        }
        let fetched = fetch::exchange("POST", endpoint, &headers, body.as_bytes())
            .await
            .map_err(|err| self.failed(format!("the token request to {endpoint} failed: {err}")))?;
        let answer = serde_json::from_slice::<Value>(&fetched.body)
            .ok()
            .filter(|_| fetched.is_json());
        if (200..300).contains(&fetched.status) {
            return answer.filter(Value::is_object).ok_or_else(|| {
                self.failed(format!(
                    "the token endpoint {endpoint} answered something that is not a token response: {}",
                    if fetched.is_json() {
                        token_answer_fault(&fetched.body)
                    } else {
                        format!("HTTP {} with `{}`", fetched.status, fetched.content_type)
                    }
                ))
            });
        }
        let error = answer.as_ref().and_then(|answer| {
            let code = answer.get("error")?.as_str()?;
            Some(
                match answer.get("error_description").and_then(Value::as_str) {
                    Some(description) => format!("{code} ({description})"),
                    None => code.to_owned(),
                },
            )
        });
        Err(self.failed(match error {
            Some(error) => format!("the token endpoint {endpoint} refused: {error}"),
            None => format!(
                "the token endpoint {endpoint} refused: HTTP {}",
                fetched.status
            ),
        }))
    }
}
