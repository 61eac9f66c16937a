//! The few HTTP exchanges of an authorization: metadata GETs, registration and token POSTs, and
//! the headless authorization GET. They go through the same client as MCP traffic (its trust
//! store and proxy), each on a connection of its own, with bounded bodies and no token of ours.

use std::future::Future;
use std::pin::Pin;

use crate::transport::http1::{Endpoint, EndpointError, Response, SendError};

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
) -> Result<Fetched, FetchError> {
    tokio::time::timeout(EXCHANGE_TIMEOUT, exchange_whole(method, url, headers, body))
        .await
        .unwrap_or_else(|_| {
            Err(FetchError::TimedOut {
                method: method.to_owned(),
                url: url.to_owned(),
            })
        })
}

async fn exchange_whole(
    method: &str,
    url: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Result<Fetched, FetchError> {
    let endpoint = Endpoint::new(url)?;
    let response: Response = Box::pin(endpoint.send(method, headers, body))
        .await
        .map_err(|source| FetchError::Send {
            method: method.to_owned(),
            url: url.to_owned(),
            source,
        })?;
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
            .map_err(|_| FetchError::TooLarge {
                url: url.to_owned(),
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
pub(crate) async fn get(url: &str, headers: &[(&str, &str)]) -> Result<Fetched, FetchError> {
    let mut current = url::Url::parse(url).map_err(|source| FetchError::NotAUrl {
        url: url.to_owned(),
        source,
    })?;
    for _ in 0..=MAX_REDIRECTS {
        let fetched = exchange("GET", current.as_str(), headers, b"").await?;
        let redirect = matches!(fetched.status, 301 | 302 | 303 | 307 | 308);
        let Some(location) = fetched.location.as_deref().filter(|_| redirect) else {
            return Ok(fetched);
        };
        let next = current
            .join(location)
            .map_err(|source| FetchError::RedirectNotAUrl {
                from: current.to_string(),
                location: location.to_owned(),
                source,
            })?;
        if next.origin() != current.origin() {
            return Err(FetchError::OtherOrigin {
                from: current.to_string(),
                origin: next.origin().ascii_serialization(),
            });
        }
        current = next;
    }
    Err(FetchError::TooManyRedirects(url.to_owned()))
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
        let fetched = exchange(&method, &url, &borrowed, request.body()).await?;
        let mut response = oauth2::http::Response::builder().status(fetched.status);
        if !fetched.content_type.is_empty() {
            response = response.header("content-type", fetched.content_type.as_str());
        }
        response.body(fetched.body).map_err(FetchError::Response)
    })
}

/// Why an exchange of the authorization (ours or the `oauth2` crate's) got no whole answer.
#[derive(Debug, thiserror::Error)]
pub(crate) enum FetchError {
    #[error("{method} {url} got no whole answer within {secs} s", secs = EXCHANGE_TIMEOUT.as_secs())]
    TimedOut { method: String, url: String },
    #[error(transparent)]
    Endpoint(#[from] EndpointError),
    #[error("{method} {url} failed: {source}")]
    Send {
        method: String,
        url: String,
        source: SendError,
    },
    #[error("the answer of {url} is larger than {kib} KiB", kib = MAX_DOCUMENT_BYTES / 1024)]
    TooLarge { url: String },
    #[error("`{url}` is not a URL: {source}")]
    NotAUrl {
        url: String,
        source: url::ParseError,
    },
    #[error("{from} redirects to `{location}`, which is not a URL: {source}")]
    RedirectNotAUrl {
        from: String,
        location: String,
        source: url::ParseError,
    },
    #[error(
        "{from} redirects to another origin ({origin}); formwork follows redirects of metadata only within one origin"
    )]
    OtherOrigin { from: String, origin: String },
    #[error("{0} redirects more than {MAX_REDIRECTS} times")]
    TooManyRedirects(String),
    /// The answer could not be handed to the `oauth2` crate.
    #[error("{0}")]
    Response(oauth2::http::Error),
}
