//! The few HTTP exchanges of an authorization: metadata GETs, registration and token POSTs, and
//! the headless authorization GET. They go through the same client as MCP traffic (its trust
//! store and proxy), each on a connection of its own, with bounded bodies and no token of ours.

use std::future::Future;
use std::pin::Pin;

use super::super::http1::{Endpoint, Response};

/// Metadata, registration and token answers larger than this are refused: they are small JSON
/// documents, and a hostile server could send anything.
pub(crate) const MAX_DOCUMENT_BYTES: usize = 256 * 1024;
/// How long one exchange may take, its answer read whole: a server that takes the request and
/// never answers would otherwise hold the sign-in (and every request waiting on it) forever.
pub(crate) const EXCHANGE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(20);
/// Redirects followed while fetching one metadata document, each to the same origin.
const MAX_REDIRECTS: usize = 5;

/// An answer, read whole.
pub(crate) struct Fetched {
    pub status: u16,
    pub content_type: String,
    pub www_authenticate: Option<String>,
    pub location: Option<String>,
    pub body: Vec<u8>,
}

impl Fetched {
    pub fn is_json(&self) -> bool {
        let essence = self
            .content_type
            .split(';')
            .next()
            .unwrap_or_default()
            .trim();
        essence == "application/json" || essence.ends_with("+json")
    }
}

/// One request, its answer read whole (up to [`MAX_DOCUMENT_BYTES`]) within [`EXCHANGE_TIMEOUT`];
/// no redirect followed.
pub(crate) async fn exchange(
    method: &str,
    url: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Result<Fetched, String> {
    tokio::time::timeout(EXCHANGE_TIMEOUT, exchange_whole(method, url, headers, body))
        .await
        .unwrap_or_else(|_| {
            Err(format!(
                "{method} {url} got no whole answer within {} s",
                EXCHANGE_TIMEOUT.as_secs()
            ))
        })
}

async fn exchange_whole(
    method: &str,
    url: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Result<Fetched, String> {
    let endpoint = Endpoint::new(url)?;
    let response: Response = Box::pin(endpoint.send(method, headers, body))
        .await
        .map_err(|err| format!("{method} {url} failed: {err}"))?;
    let status = response.status;
    let content_type = response.content_type.clone();
    let www_authenticate = response.www_authenticate.clone();
    let location = response.location.clone();
    let body = if method == "HEAD" {
        Vec::new()
    } else {
        response
            .read_to_end(MAX_DOCUMENT_BYTES)
            .await
            .map_err(|_| {
                format!(
                    "the answer of {url} is larger than {} KiB",
                    MAX_DOCUMENT_BYTES / 1024
                )
            })?
    };
    Ok(Fetched {
        status,
        content_type,
        www_authenticate,
        location,
        body,
    })
}

/// A GET of a metadata document, following same-origin redirects a few times.
pub(crate) async fn get(url: &str, headers: &[(&str, &str)]) -> Result<Fetched, String> {
    let mut current = url::Url::parse(url).map_err(|err| format!("`{url}` is not a URL: {err}"))?;
    for _ in 0..=MAX_REDIRECTS {
        let fetched = exchange("GET", current.as_str(), headers, b"").await?;
        let redirect = matches!(fetched.status, 301 | 302 | 303 | 307 | 308);
        let Some(location) = fetched.location.as_deref().filter(|_| redirect) else {
            return Ok(fetched);
        };
        let next = current.join(location).map_err(|err| {
            format!("{current} redirects to `{location}`, which is not a URL: {err}")
        })?;
        if next.origin() != current.origin() {
            return Err(format!(
                "{current} redirects to another origin ({}); formwork follows redirects of metadata only within one origin",
                next.origin().ascii_serialization()
            ));
        }
        current = next;
    }
    Err(format!("{url} redirects more than {MAX_REDIRECTS} times"))
}

/// The HTTP client the `oauth2` crate sends its token requests with.
pub(crate) fn oauth_client(
    request: oauth2::HttpRequest,
) -> Pin<Box<dyn Future<Output = Result<oauth2::HttpResponse, FetchError>> + Send>> {
    Box::pin(async move {
        let url = request.uri().to_string();
        let method = request.method().as_str().to_owned();
        let headers: Vec<(String, String)> = request
            .headers()
            .iter()
            .filter_map(|(name, value)| {
                Some((name.as_str().to_owned(), value.to_str().ok()?.to_owned()))
            })
            .collect();
        let borrowed: Vec<(&str, &str)> = headers
            .iter()
            .map(|(n, v)| (n.as_str(), v.as_str()))
            .collect();
        let fetched = exchange(&method, &url, &borrowed, request.body())
            .await
            .map_err(FetchError)?;
        let mut response = oauth2::http::Response::builder().status(fetched.status);
        if !fetched.content_type.is_empty() {
            response = response.header("content-type", fetched.content_type.as_str());
        }
        response
            .body(fetched.body)
            .map_err(|err| FetchError(err.to_string()))
    })
}

/// Why a request of the `oauth2` crate got no answer.
#[derive(Debug)]
pub(crate) struct FetchError(pub String);

impl std::fmt::Display for FetchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for FetchError {}
