//! The lock on the door: every request needs the access token, and its `Host` and `Origin` must
//! name the bound address.
//!
//! - **Token.** Minted at start (256 random bits), printed in the URL. It is accepted from the
//!   `token` query parameter, an `Authorization: Bearer` header, or the cookie this module sets
//!   when the token arrives in the query (HttpOnly, SameSite=Strict, named after the port so two
//!   workbenches on one machine keep apart). Missing or wrong: 401.
//! - **Host.** Must be `127.0.0.1:PORT` or `localhost:PORT`. A page on another name that
//!   resolves to 127.0.0.1 (DNS rebinding) sends its own name here: 403.
//! - **Origin.** When present it must be `http://127.0.0.1:PORT` or `http://localhost:PORT`, and a
//!   WebSocket upgrade must carry one (browsers always send it there): 403 otherwise. There is no
//!   CORS: no response ever carries `Access-Control-Allow-*`.
//!
//! Every response, refusals included, carries the Content-Security-Policy and the other
//! protective headers.

use axum::extract::{Request, State};
use axum::http::header::{self, HeaderMap, HeaderName, HeaderValue};
use axum::http::{Method, StatusCode, Uri};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::AppState;
use crate::error::WebError;

/// The token and the names this server answers to.
pub(crate) struct Access {
    token: String,
    cookie_name: String,
    hosts: [String; 2],
    origins: [String; 2],
    csp: HeaderValue,
}

/// Why a request is refused.
#[derive(Debug, PartialEq)]
enum Refusal {
    Host,
    Origin,
    Token,
}

/// How the request proved it knows the token.
#[derive(Debug, PartialEq)]
enum Proof {
    /// Cookie or header: nothing to set.
    Kept,
    /// The query: set the cookie (and, for the page, drop the token from the address bar).
    Query,
}

impl Access {
    pub(crate) fn new(token: String, port: u16) -> Access {
        let csp = format!(
            "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
             font-src 'self'; connect-src 'self' ws://127.0.0.1:{port} ws://localhost:{port}; \
             object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'; \
             require-trusted-types-for 'script'; trusted-types 'none'"
        );
        Access {
            token,
            cookie_name: format!("formwork_token_{port}"),
            hosts: [format!("127.0.0.1:{port}"), format!("localhost:{port}")],
            origins: [
                format!("http://127.0.0.1:{port}"),
                format!("http://localhost:{port}"),
            ],
            csp: HeaderValue::from_str(&csp)
                .unwrap_or_else(|_| HeaderValue::from_static("default-src 'none'")),
        }
    }

    pub(crate) fn token(&self) -> &str {
        &self.token
    }

    fn check(&self, headers: &HeaderMap, uri: &Uri) -> Result<Proof, Refusal> {
        let host = headers
            .get(header::HOST)
            .and_then(|host| host.to_str().ok())
            .map(str::to_ascii_lowercase);
        if !host.is_some_and(|host| self.hosts.contains(&host)) {
            return Err(Refusal::Host);
        }
        if let Some(authority) = uri.authority()
            && !self
                .hosts
                .contains(&authority.as_str().to_ascii_lowercase())
        {
            return Err(Refusal::Host);
        }
        match headers.get(header::ORIGIN) {
            Some(origin) => {
                let origin = origin.to_str().map(str::to_ascii_lowercase);
                if !origin.is_ok_and(|origin| self.origins.contains(&origin)) {
                    return Err(Refusal::Origin);
                }
            }
            None if is_websocket_upgrade(headers) => return Err(Refusal::Origin),
            None => {}
        }
        if self.cookie_token(headers).is_some_and(|t| self.matches(t))
            || bearer_token(headers).is_some_and(|t| self.matches(t))
        {
            return Ok(Proof::Kept);
        }
        if query_token(uri).is_some_and(|t| self.matches(t)) {
            return Ok(Proof::Query);
        }
        Err(Refusal::Token)
    }

    fn matches(&self, candidate: &str) -> bool {
        constant_time_eq(candidate.as_bytes(), self.token.as_bytes())
    }

    fn cookie_token<'h>(&self, headers: &'h HeaderMap) -> Option<&'h str> {
        headers
            .get_all(header::COOKIE)
            .iter()
            .filter_map(|value| value.to_str().ok())
            .flat_map(|value| value.split(';'))
            .filter_map(|pair| pair.trim().split_once('='))
            .find(|(name, _)| *name == self.cookie_name)
            .map(|(_, value)| value)
    }

    fn cookie(&self) -> HeaderValue {
        let cookie = format!(
            "{}={}; Path=/; HttpOnly; SameSite=Strict",
            self.cookie_name, self.token
        );
        HeaderValue::from_str(&cookie).unwrap_or_else(|_| HeaderValue::from_static(""))
    }

    fn protect(&self, headers: &mut HeaderMap) {
        headers.insert(header::CONTENT_SECURITY_POLICY, self.csp.clone());
        let fixed: [(HeaderName, &'static str); 6] = [
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            (header::REFERRER_POLICY, "no-referrer"),
            (header::X_FRAME_OPTIONS, "DENY"),
            (header::CACHE_CONTROL, "no-store"),
            (
                HeaderName::from_static("cross-origin-opener-policy"),
                "same-origin",
            ),
            (
                HeaderName::from_static("cross-origin-resource-policy"),
                "same-origin",
            ),
        ];
        for (name, value) in fixed {
            headers.insert(name, HeaderValue::from_static(value));
        }
    }
}

/// The middleware in front of every route.
pub(crate) async fn guard(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let access = &state.access;
    let verdict = access.check(request.headers(), request.uri());
    let mut response = match verdict {
        Err(refusal) => refuse(&refusal),
        Ok(Proof::Kept) => next.run(request).await,
        Ok(Proof::Query) => {
            let page = request.method() == Method::GET && request.uri().path() == "/";
            let mut response = if page {
                // Keep the token out of the address bar (and out of history from now on).
                let location = without_token(request.uri());
                let mut response = StatusCode::SEE_OTHER.into_response();
                if let Ok(location) = HeaderValue::from_str(&location) {
                    response.headers_mut().insert(header::LOCATION, location);
                }
                response
            } else {
                next.run(request).await
            };
            response
                .headers_mut()
                .append(header::SET_COOKIE, access.cookie());
            response
        }
    };
    access.protect(response.headers_mut());
    response
}

fn refuse(refusal: &Refusal) -> Response {
    let (status, message) = match refusal {
        Refusal::Host => (
            StatusCode::FORBIDDEN,
            "formwork: the Host header does not name this server (127.0.0.1 or localhost with its port)\n",
        ),
        Refusal::Origin => (
            StatusCode::FORBIDDEN,
            "formwork: requests from another origin are refused\n",
        ),
        Refusal::Token => (
            StatusCode::UNAUTHORIZED,
            "formwork: open the URL that `formwork serve` printed; it carries the access token\n",
        ),
    };
    (status, message).into_response()
}

/// A fresh token: 256 bits from the OS, as 64 hex digits.
pub(crate) fn mint_token() -> Result<String, WebError> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|err| WebError::Random(err.to_string()))?;
    Ok(bytes.iter().map(|byte| format!("{byte:02x}")).collect())
}

fn is_websocket_upgrade(headers: &HeaderMap) -> bool {
    headers
        .get(header::UPGRADE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.eq_ignore_ascii_case("websocket"))
}

fn bearer_token(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(header::AUTHORIZATION)?
        .to_str()
        .ok()?
        .strip_prefix("Bearer ")
}

fn query_token(uri: &Uri) -> Option<&str> {
    uri.query()?
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .find(|(name, _)| *name == "token")
        .map(|(_, value)| value)
}

/// The request's path and query with every `token` parameter removed.
fn without_token(uri: &Uri) -> String {
    let rest: Vec<&str> = uri
        .query()
        .unwrap_or_default()
        .split('&')
        .filter(|pair| !pair.is_empty() && pair.split('=').next() != Some("token"))
        .collect();
    if rest.is_empty() {
        uri.path().to_owned()
    } else {
        format!("{}?{}", uri.path(), rest.join("&"))
    }
}

/// Compares without stopping at the first difference, so timing tells nothing about the token.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn access() -> Access {
        Access::new("abc".to_owned(), 4000)
    }

    fn check(headers: &[(&str, &str)], uri: &str) -> Result<Proof, Refusal> {
        let mut map = HeaderMap::new();
        for (name, value) in headers {
            map.append(
                HeaderName::from_bytes(name.as_bytes()).expect("name"),
                HeaderValue::from_str(value).expect("value"),
            );
        }
        access().check(&map, &uri.parse().expect("uri"))
    }

    #[test]
    fn rules() {
        let host = ("host", "127.0.0.1:4000");
        assert_eq!(check(&[host], "/?token=abc"), Ok(Proof::Query));
        assert_eq!(check(&[host], "/?token=abd"), Err(Refusal::Token));
        assert_eq!(check(&[host], "/"), Err(Refusal::Token));
        assert_eq!(
            check(&[host, ("cookie", "a=b; formwork_token_4000=abc")], "/"),
            Ok(Proof::Kept)
        );
        assert_eq!(
            check(&[host, ("cookie", "formwork_token_4001=abc")], "/"),
            Err(Refusal::Token)
        );
        assert_eq!(
            check(&[host, ("authorization", "Bearer abc")], "/"),
            Ok(Proof::Kept)
        );
        assert_eq!(
            check(&[("host", "LOCALHOST:4000")], "/?token=abc"),
            Ok(Proof::Query)
        );
        assert_eq!(
            check(&[("host", "evil.example:4000")], "/?token=abc"),
            Err(Refusal::Host)
        );
        assert_eq!(
            check(&[("host", "127.0.0.1")], "/?token=abc"),
            Err(Refusal::Host)
        );
        assert_eq!(check(&[], "/?token=abc"), Err(Refusal::Host));
        assert_eq!(
            check(&[host, ("origin", "http://evil.example")], "/?token=abc"),
            Err(Refusal::Origin)
        );
        assert_eq!(
            check(&[host, ("origin", "null")], "/?token=abc"),
            Err(Refusal::Origin)
        );
        assert_eq!(
            check(&[host, ("origin", "http://localhost:4000")], "/?token=abc"),
            Ok(Proof::Query)
        );
        assert_eq!(
            check(&[host, ("upgrade", "websocket")], "/?token=abc"),
            Err(Refusal::Origin)
        );
    }

    #[test]
    fn token_leaves_the_address() {
        let uri: Uri = "/?a=1&token=abc&b=2".parse().expect("uri");
        assert_eq!(without_token(&uri), "/?a=1&b=2");
        let uri: Uri = "/?token=abc".parse().expect("uri");
        assert_eq!(without_token(&uri), "/");
    }

    #[test]
    fn tokens_are_fresh() {
        let (a, b) = (mint_token().expect("a"), mint_token().expect("b"));
        assert_eq!(a.len(), 64);
        assert_ne!(a, b);
    }
}
