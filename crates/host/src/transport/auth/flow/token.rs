//! What every grant shares: the client and how it authenticates, and the token answer read,
//! checked and turned into the tokens kept.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use oauth2::{AuthType, RequestTokenError, TokenResponse};
use serde_json::Value;

use super::{AuthError, Authorizer};
use crate::transport::auth::discovery::Discovered;
use crate::transport::auth::store::StoredTokens;

impl Authorizer {
    pub(super) fn stored(
        &self,
        discovered: &Discovered,
        client: &Client,
        answer: &oauth2::basic::BasicTokenResponse,
        scopes: &[String],
        resource: Option<String>,
    ) -> Result<StoredTokens, AuthError> {
        let access_token = answer.access_token().secret();
        check_access_token(access_token).map_err(|reason| self.failed(reason))?;
        let granted = answer
            .scopes()
            .map(|granted| granted.iter().map(|scope| scope.to_string()).collect())
            .unwrap_or_else(|| scopes.to_vec());
        Ok(StoredTokens {
            server_name: self.server_name.clone(),
            url: self.server_url.clone(),
            issuer: discovered.server.issuer.clone(),
            token_endpoint: discovered.server.token_endpoint.clone(),
            client_id: client.id.clone(),
            client_secret: client.secret.clone(),
            token_endpoint_auth: client.secret.as_ref().map(|_| {
                match client.auth_type {
                    AuthType::RequestBody => "client_secret_post",
                    _ => "client_secret_basic",
                }
                .to_owned()
            }),
            access_token: access_token.clone(),
            refresh_token: answer.refresh_token().map(|token| token.secret().clone()),
            expires_at: answer.expires_in().map(expiry),
            scopes: granted,
            resource,
        })
    }
}

/// A registered client and how it authenticates at the token endpoint.
pub(super) struct Client {
    pub(super) id: String,
    pub(super) secret: Option<String>,
    pub(super) auth_type: AuthType,
}

/// The token endpoint authentication: the method registration returned if the server offers
/// it; with no list, Basic when there is a secret (RFC 8414's default); else Basic, then the
/// body, by what the server lists. Without a secret the client ID goes in the body (`none`).
pub(super) fn client_auth_type(
    methods: Option<&[String]>,
    returned: Option<&str>,
    has_secret: bool,
) -> AuthType {
    let by_name = |method: &str| match method {
        "client_secret_post" | "none" => Some(AuthType::RequestBody),
        "client_secret_basic" => Some(AuthType::BasicAuth),
        _ => None,
    };
    if !has_secret {
        return AuthType::RequestBody;
    }
    if let Some(returned) = returned
        && methods.is_none_or(|methods| methods.iter().any(|m| m == returned))
        && let Some(auth_type) = by_name(returned)
    {
        return auth_type;
    }
    match methods {
        None => AuthType::BasicAuth,
        Some(methods) if methods.iter().any(|m| m == "client_secret_basic") => AuthType::BasicAuth,
        Some(methods) if methods.iter().any(|m| m == "client_secret_post") => AuthType::RequestBody,
        Some(_) => AuthType::BasicAuth,
    }
}

pub(super) fn token_error<E: std::error::Error + 'static>(
    endpoint: &str,
    err: RequestTokenError<E, oauth2::basic::BasicErrorResponse>,
) -> String {
    match err {
        RequestTokenError::ServerResponse(answer) => {
            let mut text = format!("the token endpoint {endpoint} refused: {}", answer.error());
            if let Some(description) = answer.error_description() {
                text.push_str(&format!(" ({description})"));
            }
            text
        }
        RequestTokenError::Request(err) => format!("the token request to {endpoint} failed: {err}"),
        RequestTokenError::Parse(_, body) => format!(
            "the token endpoint {endpoint} answered something that is not a token response: {}",
            token_answer_fault(&body)
        ),
        RequestTokenError::Other(reason) => {
            format!(
                "the token endpoint {endpoint} answered something that is not a token response: {reason}"
            )
        }
    }
}

/// What is wrong with a token endpoint's answer, naming fields but never quoting the body: a
/// malformed answer may still carry a token.
pub(super) fn token_answer_fault(body: &[u8]) -> String {
    match serde_json::from_slice::<Value>(body) {
        Ok(answer) => token_value_fault(&answer),
        Err(_) => format!("{} bytes that are not JSON", body.len()),
    }
}

/// [`token_answer_fault`] of an answer already read as JSON.
pub(super) fn token_value_fault(answer: &Value) -> String {
    let Some(fields) = answer.as_object() else {
        return "JSON that is not an object".to_owned();
    };
    let mut faults = Vec::new();
    for required in ["access_token", "token_type"] {
        match fields.get(required) {
            None => faults.push(format!("`{required}` is missing")),
            Some(Value::String(_)) => {}
            Some(_) => faults.push(format!("`{required}` is not a string")),
        }
    }
    if let Some(lifetime) = fields.get("expires_in")
        && !lifetime.is_u64()
    {
        faults.push("`expires_in` is not a whole number of seconds".to_owned());
    }
    if faults.is_empty() {
        let names: Vec<&str> = fields.keys().map(String::as_str).collect();
        faults.push(format!("its fields ({}) do not make one", names.join(", ")));
    }
    faults.join("; ")
}

/// `Basic <credentials>` of RFC 6749 §2.3.1: the client ID and secret form-encoded, then
/// joined and base64-encoded.
pub(super) fn basic_credentials(client_id: &str, secret: &str) -> String {
    use base64::Engine;
    let encode =
        |text: &str| url::form_urlencoded::byte_serialize(text.as_bytes()).collect::<String>();
    let pair = format!("{}:{}", encode(client_id), encode(secret));
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(pair)
    )
}

pub(super) fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_secs())
}

pub(super) fn expiry(lifetime: Duration) -> u64 {
    unix_now().saturating_add(lifetime.as_secs())
}

/// An access token rides in an `Authorization` header: it must be RFC 6750's `b64token`
/// (`A-Z a-z 0-9 - . _ ~ + /`, then `=` only), or the authorization server could write headers,
/// or a whole request, into every request to the MCP server. Never quoted: it is a secret.
pub(super) fn check_access_token(token: &str) -> Result<(), NotABearerToken> {
    let body = token.trim_end_matches('=');
    let b64token = !body.is_empty()
        && body
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || b"-._~+/".contains(&byte));
    if b64token {
        Ok(())
    } else {
        Err(NotABearerToken)
    }
}

/// A token answer's `access_token` that [`check_access_token`] refuses.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "the token answer's `access_token` is not a bearer token: RFC 6750 allows only letters, digits, `-._~+/` and a trailing `=`"
)]
pub(super) struct NotABearerToken;

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn an_expiry_past_any_clock_is_the_end_of_time_not_a_panic() {
        assert_eq!(expiry(Duration::from_secs(u64::MAX)), u64::MAX);
    }

    #[test]
    fn only_rfc_6750_tokens_are_access_tokens() {
        for token in ["abc", "a-b.c_d~e+f/g==", "eyJhbGciOi.eyJzdWIi.sig"] {
            assert_eq!(check_access_token(token), Ok(()), "{token}");
        }
        for token in ["", "==", "a b", "a\r\nX: y", "a=b", "tok\u{e9}"] {
            assert!(check_access_token(token).is_err(), "{token:?}");
        }
    }

    #[test]
    fn client_authentication_follows_registration_then_the_servers_list() {
        let list = |methods: &[&str]| methods.iter().map(|m| m.to_string()).collect::<Vec<_>>();
        let basic = list(&["client_secret_basic"]);
        let post = list(&["client_secret_post"]);
        let both = list(&["client_secret_post", "client_secret_basic"]);
        assert!(matches!(
            client_auth_type(Some(&basic), Some("client_secret_basic"), true),
            AuthType::BasicAuth
        ));
        assert!(matches!(
            client_auth_type(Some(&post), Some("client_secret_post"), true),
            AuthType::RequestBody
        ));
        assert!(matches!(
            client_auth_type(Some(&both), Some("client_secret_post"), true),
            AuthType::RequestBody
        ));
        assert!(matches!(
            client_auth_type(Some(&both), None, true),
            AuthType::BasicAuth
        ));
        assert!(matches!(
            client_auth_type(None, None, true),
            AuthType::BasicAuth
        ));
        assert!(matches!(
            client_auth_type(Some(&basic), None, false),
            AuthType::RequestBody
        ));
    }
}
