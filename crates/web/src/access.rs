//! The lock on the door: every request must name this server in its `Host` and `Origin`, and every
//! request that can read or change anything must carry the access token.
//!
//! - **Token.** Minted at start (256 random bits) and printed in the *fragment* of the URL,
//!   `http://127.0.0.1:PORT/#token=…`. A browser never sends a fragment, neither in the request
//!   line nor in `Referer`. The page reads it, keeps it in `sessionStorage` (readable only by pages
//!   of this very origin, port included), removes it from the address bar, and sends it itself:
//!   as `Authorization: Bearer <token>` on every API request, and on the WebSocket upgrade, where
//!   a browser can set no header, as the second of the subprotocols
//!   `formwork, formwork.token.<token>` (the server selects `formwork`). Missing or wrong: 401.
//!   The token is not accepted in the query string, where it would stay in history and logs.
//! - **Why no cookie.** Browsers do not keep cookies apart by port: a cookie set by
//!   `127.0.0.1:PORT` goes with every request to any other server on 127.0.0.1 — a plugin's own
//!   page, an OAuth callback listener, a link the person opens from a card — and with it every
//!   transcript and the power to answer forms and approvals. A header the page adds itself goes
//!   only where the page sends it, and the Content-Security-Policy lets it send only here.
//! - **The page's files** (`GET /` and `GET /assets/…`: HTML, scripts, styles and the icon, none
//!   holding any data) need no token, so that the page can load and read its token. The `Host`
//!   and `Origin` checks and the protective headers apply to them as to everything else.
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

/// The WebSocket subprotocol the session socket speaks; the server selects it.
pub(crate) const SOCKET_PROTOCOL: &str = "formwork";

/// The prefix of the subprotocol that carries the token on a WebSocket upgrade.
const TOKEN_PROTOCOL: &str = "formwork.token.";

/// The token and the names this server answers to.
pub(crate) struct Access {
    token: String,
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

impl Access {
    pub(crate) fn new(token: String, port: u16, apps_port: u16) -> Access {
        let frames = crate::sandbox::Sandbox::frame_source(apps_port);
        let csp = format!(
            "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: https:; \
             font-src 'self'; connect-src 'self' ws://127.0.0.1:{port} ws://localhost:{port}; \
             frame-src {frames}; \
             object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'; \
             require-trusted-types-for 'script'; trusted-types 'none'"
        );
        Access {
            token,
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

    fn check(&self, method: &Method, headers: &HeaderMap, uri: &Uri) -> Result<(), Refusal> {
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
        let upgrade = is_websocket_upgrade(headers);
        match headers.get(header::ORIGIN) {
            Some(origin) => {
                let origin = origin.to_str().map(str::to_ascii_lowercase);
                if !origin.is_ok_and(|origin| self.origins.contains(&origin)) {
                    return Err(Refusal::Origin);
                }
            }
            None if upgrade => return Err(Refusal::Origin),
            None => {}
        }
        if is_page_file(method, uri.path()) {
            return Ok(());
        }
        let socket_tokens = upgrade
            .then(|| subprotocol_tokens(headers))
            .into_iter()
            .flatten();
        if bearer_token(headers)
            .into_iter()
            .chain(socket_tokens)
            .any(|candidate| self.matches(candidate))
        {
            return Ok(());
        }
        Err(Refusal::Token)
    }

    fn matches(&self, candidate: &str) -> bool {
        constant_time_eq(candidate.as_bytes(), self.token.as_bytes())
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
    let verdict = access.check(request.method(), request.headers(), request.uri());
    let mut response = match verdict {
        Err(refusal) => refuse(&refusal),
        Ok(()) => next.run(request).await,
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

/// Whether a chosen token can travel in the URL's fragment and as a WebSocket subprotocol (the
/// page accepts exactly these).
pub fn usable_token(token: &str) -> bool {
    (32..=128).contains(&token.len())
        && token
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~'))
}

/// The page itself and its files: served without the token (they hold no data).
fn is_page_file(method: &Method, path: &str) -> bool {
    (method == Method::GET || method == Method::HEAD)
        && (path == "/" || path.starts_with("/assets/"))
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

/// The tokens offered as `formwork.token.<token>` subprotocols.
fn subprotocol_tokens(headers: &HeaderMap) -> impl Iterator<Item = &str> {
    headers
        .get_all(header::SEC_WEBSOCKET_PROTOCOL)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .filter_map(|protocol| protocol.trim().strip_prefix(TOKEN_PROTOCOL))
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
        Access::new("abc".to_owned(), 4000, 4001)
    }

    fn check_as(method: Method, headers: &[(&str, &str)], uri: &str) -> Result<(), Refusal> {
        let mut map = HeaderMap::new();
        for (name, value) in headers {
            map.append(
                HeaderName::from_bytes(name.as_bytes()).expect("name"),
                HeaderValue::from_str(value).expect("value"),
            );
        }
        access().check(&method, &map, &uri.parse().expect("uri"))
    }

    fn check(headers: &[(&str, &str)], uri: &str) -> Result<(), Refusal> {
        check_as(Method::GET, headers, uri)
    }

    const HOST: (&str, &str) = ("host", "127.0.0.1:4000");
    const BEARER: (&str, &str) = ("authorization", "Bearer abc");
    const ORIGIN: (&str, &str) = ("origin", "http://127.0.0.1:4000");
    const UPGRADE: (&str, &str) = ("upgrade", "websocket");

    #[test]
    fn the_page_and_its_files_need_no_token() {
        assert_eq!(check(&[HOST], "/"), Ok(()));
        assert_eq!(check(&[HOST], "/assets/app.js"), Ok(()));
        assert_eq!(check_as(Method::HEAD, &[HOST], "/"), Ok(()));
        assert_eq!(check_as(Method::POST, &[HOST], "/"), Err(Refusal::Token));
        assert_eq!(check(&[HOST], "/api/info"), Err(Refusal::Token));
        assert_eq!(check(&[HOST], "/favicon.ico"), Err(Refusal::Token));
        assert_eq!(check(&[HOST], "/assetsx"), Err(Refusal::Token));
        // Host and Origin still count.
        assert_eq!(
            check(&[("host", "evil.example:4000")], "/"),
            Err(Refusal::Host)
        );
        assert_eq!(
            check(&[HOST, ("origin", "http://evil.example")], "/assets/app.js"),
            Err(Refusal::Origin)
        );
    }

    #[test]
    fn the_token_comes_in_a_header_or_a_subprotocol_only() {
        assert_eq!(check(&[HOST, BEARER], "/api/info"), Ok(()));
        assert_eq!(
            check(&[HOST, ("authorization", "Bearer abd")], "/api/info"),
            Err(Refusal::Token)
        );
        assert_eq!(
            check(&[HOST, ("authorization", "abc")], "/api/info"),
            Err(Refusal::Token)
        );
        // Neither the query nor a cookie is a way in.
        assert_eq!(check(&[HOST], "/api/info?token=abc"), Err(Refusal::Token));
        assert_eq!(
            check(&[HOST, ("cookie", "formwork_token_4000=abc")], "/api/info"),
            Err(Refusal::Token)
        );
        // The subprotocol, on a WebSocket upgrade only.
        let protocols = ("sec-websocket-protocol", "formwork, formwork.token.abc");
        assert_eq!(check(&[HOST, ORIGIN, UPGRADE, protocols], "/s"), Ok(()));
        assert_eq!(check(&[HOST, ORIGIN, protocols], "/s"), Err(Refusal::Token));
        assert_eq!(
            check(
                &[
                    HOST,
                    ORIGIN,
                    UPGRADE,
                    ("sec-websocket-protocol", "formwork")
                ],
                "/s"
            ),
            Err(Refusal::Token)
        );
        assert_eq!(
            check(
                &[
                    HOST,
                    ORIGIN,
                    UPGRADE,
                    ("sec-websocket-protocol", "formwork.token.abd, formwork")
                ],
                "/s"
            ),
            Err(Refusal::Token)
        );
        assert_eq!(check(&[HOST, ORIGIN, UPGRADE, BEARER], "/s"), Ok(()));
    }

    #[test]
    fn host_and_origin() {
        assert_eq!(check(&[("host", "LOCALHOST:4000"), BEARER], "/api"), Ok(()));
        assert_eq!(
            check(&[("host", "evil.example:4000"), BEARER], "/api"),
            Err(Refusal::Host)
        );
        assert_eq!(
            check(&[("host", "127.0.0.1"), BEARER], "/api"),
            Err(Refusal::Host)
        );
        assert_eq!(check(&[BEARER], "/api"), Err(Refusal::Host));
        assert_eq!(
            check(&[HOST, BEARER], "http://evil.example:4000/api"),
            Err(Refusal::Host)
        );
        assert_eq!(
            check(&[HOST, BEARER, ("origin", "http://evil.example")], "/api"),
            Err(Refusal::Origin)
        );
        assert_eq!(
            check(&[HOST, BEARER, ("origin", "null")], "/api"),
            Err(Refusal::Origin)
        );
        assert_eq!(
            check(&[HOST, BEARER, ("origin", "http://localhost:4000")], "/api"),
            Ok(())
        );
        assert_eq!(check(&[HOST, BEARER, UPGRADE], "/s"), Err(Refusal::Origin));
    }

    #[test]
    fn tokens_are_fresh() {
        let (a, b) = (mint_token().expect("a"), mint_token().expect("b"));
        assert_eq!(a.len(), 64);
        assert_ne!(a, b);
        assert!(usable_token(&a));
    }

    #[test]
    fn a_chosen_token_must_fit_a_fragment_and_a_subprotocol() {
        assert!(usable_token(&"a".repeat(32)));
        assert!(usable_token(&format!("{}-._~Z9", "x".repeat(26))));
        assert!(usable_token(&"f".repeat(128)));
        assert!(!usable_token(&"a".repeat(31)));
        assert!(!usable_token(&"a".repeat(129)));
        for bad in [' ', ',', '#', '&', '=', '"', 'é'] {
            assert!(
                !usable_token(&format!("{}{bad}", "a".repeat(32))),
                "{bad:?}"
            );
        }
    }
}
