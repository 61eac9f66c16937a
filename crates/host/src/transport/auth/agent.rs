//! The two ways an authorization URL is visited and its redirect caught: a person's browser
//! with a one-shot listener on 127.0.0.1 (`formwork login`), and a headless visit that reads
//! the redirect from the answer (test harnesses such as the conformance client).

use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use super::fetch;
use crate::future::BoxFuture;

/// Why a sign-in brought no authorization code.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SignInError {
    #[error(
        "the sign-in redirect carried another `state` than the one sent: refused (a stale or forged redirect)"
    )]
    ForeignState,
    /// The redirect carried an `error`, and maybe its `error_description`.
    #[error("the authorization server refused: {error}{}", described(description))]
    Refused {
        error: String,
        description: Option<String>,
    },
    #[error("the sign-in redirect carried no code")]
    NoCode,
    #[error("cannot listen on 127.0.0.1:{port} for the sign-in redirect: {source}")]
    Listen { port: u16, source: std::io::Error },
    /// The loopback listener failed while it waited.
    #[error("{0}")]
    Loopback(std::io::Error),
    #[error("no sign-in came back within {0} s")]
    TimedOut(u64),
    /// The headless visit of the authorization URL got no answer.
    #[error("{0}")]
    Visit(String),
    #[error("the authorization endpoint answered HTTP {0} without a redirect")]
    NoRedirect(u16),
    #[error("{0}")]
    AuthorizationUrl(url::ParseError),
    #[error("the redirect `{location}` is not a URL: {source}")]
    RedirectNotAUrl {
        location: String,
        source: url::ParseError,
    },
    /// Another agent's reason (the person declined, say), in its words.
    #[error("{0}")]
    Other(String),
}

impl From<String> for SignInError {
    fn from(reason: String) -> Self {
        SignInError::Other(reason)
    }
}

impl From<&str> for SignInError {
    fn from(reason: &str) -> Self {
        SignInError::Other(reason.to_owned())
    }
}

/// ` (description)`, or nothing.
fn described(description: &Option<String>) -> String {
    description
        .as_ref()
        .map(|description| format!(" ({description})"))
        .unwrap_or_default()
}

/// Starts sign-ins for one authorization.
pub trait SignInAgent: Send + Sync {
    /// Prepares to catch one redirect (a loopback listener, say) and says where it goes.
    fn start(&self) -> BoxFuture<Result<Box<dyn PendingRedirect>, SignInError>>;
}

/// One prepared sign-in.
pub trait PendingRedirect: Send {
    /// The `redirect_uri` to register and send.
    fn redirect_uri(&self) -> String;
    /// Shows the person the authorization URL and waits for the redirect; the code, once the
    /// redirect's `state` is checked against `state`.
    fn complete(
        self: Box<Self>,
        authorization_url: String,
        state: String,
    ) -> BoxFuture<Result<String, SignInError>>;
}

/// The value of `name` in a redirect's query (the last one, if it names several).
fn query_value<'a>(pairs: &'a [(String, String)], name: &str) -> Option<&'a str> {
    pairs
        .iter()
        .rev()
        .find(|(key, _)| key == name)
        .map(|(_, value)| value.as_str())
}

/// Reads the code out of a redirect's query, refusing an error answer and a foreign `state`.
pub(crate) fn code_from_redirect(
    pairs: &[(String, String)],
    state: &str,
) -> Result<String, SignInError> {
    if query_value(pairs, "state") != Some(state) {
        return Err(SignInError::ForeignState);
    }
    if let Some(error) = query_value(pairs, "error") {
        return Err(SignInError::Refused {
            error: error.to_owned(),
            description: query_value(pairs, "error_description").map(str::to_owned),
        });
    }
    query_value(pairs, "code")
        .filter(|code| !code.is_empty())
        .map(str::to_owned)
        .ok_or(SignInError::NoCode)
}

/// Visits the authorization URL itself, without following its redirect, and reads the code from
/// the `Location` it answers with: for authorization servers that redirect at once (test servers).
pub struct HeadlessSignIn {
    redirect_uri: String,
}

impl HeadlessSignIn {
    pub fn new(redirect_uri: impl Into<String>) -> Self {
        HeadlessSignIn {
            redirect_uri: redirect_uri.into(),
        }
    }
}

impl SignInAgent for HeadlessSignIn {
    fn start(&self) -> BoxFuture<Result<Box<dyn PendingRedirect>, SignInError>> {
        let pending: Box<dyn PendingRedirect> =
            Box::new(HeadlessRedirect(self.redirect_uri.clone()));
        Box::pin(async move { Ok(pending) })
    }
}

struct HeadlessRedirect(String);

impl PendingRedirect for HeadlessRedirect {
    fn redirect_uri(&self) -> String {
        self.0.clone()
    }

    fn complete(
        self: Box<Self>,
        authorization_url: String,
        state: String,
    ) -> BoxFuture<Result<String, SignInError>> {
        Box::pin(async move {
            let fetched = fetch::exchange("GET", &authorization_url, &[], b"")
                .await
                .map_err(|err| SignInError::Visit(err.to_string()))?;
            let location = fetched
                .location
                .filter(|_| (300..400).contains(&fetched.status))
                .ok_or(SignInError::NoRedirect(fetched.status))?;
            let base =
                url::Url::parse(&authorization_url).map_err(SignInError::AuthorizationUrl)?;
            let redirect = base
                .join(&location)
                .map_err(|source| SignInError::RedirectNotAUrl {
                    location: location.clone(),
                    source,
                })?;
            let pairs: Vec<(String, String)> = redirect.query_pairs().into_owned().collect();
            code_from_redirect(&pairs, &state)
        })
    }
}

/// How long `formwork login` waits for the browser to come back.
pub const SIGN_IN_TIMEOUT: Duration = Duration::from_secs(300);
/// The largest request the loopback listener reads.
const MAX_CALLBACK_BYTES: usize = 16 * 1024;
const CALLBACK_PATH: &str = "/callback";
/// How long the loopback listener reads one request.
const REQUEST_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// Connections the loopback listener reads at once; more wait to be accepted.
const MAX_READING: usize = 16;

/// The person's browser: the authorization URL is opened (or printed) by `show`, and the
/// redirect caught on a listener on 127.0.0.1 that ends after the sign-in's callback or the
/// timeout.
pub struct BrowserSignIn {
    /// `mcp_oauth_callback_port`; a free port when absent.
    pub port: Option<u16>,
    pub timeout: Duration,
    /// Shows the person the URL (opens a browser, prints it).
    pub show: Arc<dyn Fn(&str) + Send + Sync>,
}

impl SignInAgent for BrowserSignIn {
    fn start(&self) -> BoxFuture<Result<Box<dyn PendingRedirect>, SignInError>> {
        let port = self.port;
        let timeout = self.timeout;
        let show = Arc::clone(&self.show);
        Box::pin(async move {
            let loopback = Loopback::bind(port).await?;
            let pending: Box<dyn PendingRedirect> = Box::new(BrowserRedirect {
                loopback,
                timeout,
                show,
            });
            Ok(pending)
        })
    }
}

struct BrowserRedirect {
    loopback: Loopback,
    timeout: Duration,
    show: Arc<dyn Fn(&str) + Send + Sync>,
}

impl PendingRedirect for BrowserRedirect {
    fn redirect_uri(&self) -> String {
        self.loopback.redirect_uri()
    }

    fn complete(
        self: Box<Self>,
        authorization_url: String,
        state: String,
    ) -> BoxFuture<Result<String, SignInError>> {
        Box::pin(async move {
            (self.show)(&authorization_url);
            self.loopback.wait(&state, self.timeout).await
        })
    }
}

/// A one-shot listener on 127.0.0.1 for the redirect of one sign-in: it answers every request
/// until the callback with the sign-in's `state` comes (another path gets a 404, a callback with
/// another `state` a 400), then is gone.
pub struct Loopback {
    listener: TcpListener,
    port: u16,
}

impl Loopback {
    /// Listens on `port` (`mcp_oauth_callback_port`), or on a free one.
    pub async fn bind(port: Option<u16>) -> Result<Loopback, SignInError> {
        let port = port.unwrap_or(0);
        let listener = TcpListener::bind(("127.0.0.1", port))
            .await
            .map_err(|source| SignInError::Listen { port, source })?;
        let port = listener.local_addr().map_err(SignInError::Loopback)?.port();
        Ok(Loopback { listener, port })
    }

    pub fn redirect_uri(&self) -> String {
        format!("http://127.0.0.1:{}{CALLBACK_PATH}", self.port)
    }

    /// Waits for the callback that carries `state`, at most `timeout`; its code.
    pub async fn wait(self, state: &str, timeout: Duration) -> Result<String, SignInError> {
        let waiting = async {
            // Each connection is read on its own, for a bounded time: one that is slow to send
            // its request (or sends none) holds up no other, the browser's included.
            let mut reading = tokio::task::JoinSet::new();
            loop {
                tokio::select! {
                    accepted = self.listener.accept(), if reading.len() < MAX_READING => {
                        let (mut socket, _) = accepted.map_err(SignInError::Loopback)?;
                        reading.spawn(async move {
                            let target = tokio::time::timeout(REQUEST_READ_TIMEOUT, read_target(&mut socket))
                                .await
                                .ok()
                                .flatten();
                            (socket, target)
                        });
                    }
                    Some(read) = reading.join_next() => {
                        let Ok((mut socket, Some(target))) = read else {
                            continue;
                        };
                        if let Some(outcome) = answer(&mut socket, &target, state).await {
                            return outcome;
                        }
                    }
                }
            }
        };
        tokio::time::timeout(timeout, waiting)
            .await
            .map_err(|_| SignInError::TimedOut(timeout.as_secs()))?
    }
}

/// Answers one request of the listener: the callback's outcome once it carries the sign-in's
/// `state`, or `None` (and a 404, or a 400 for a callback with another `state`) to go on
/// waiting. Whoever can reach 127.0.0.1 can send a callback: only the browser coming back from
/// the authorization server knows the `state`, so no other request may end the sign-in.
async fn answer(
    socket: &mut tokio::net::TcpStream,
    target: &str,
    state: &str,
) -> Option<Result<String, SignInError>> {
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    if path != CALLBACK_PATH {
        // A browser may ask for a favicon first: that is not the redirect.
        reply(socket, "404 Not Found", "text/plain", NOT_FOUND_PAGE).await;
        return None;
    }
    let pairs: Vec<(String, String)> = url::form_urlencoded::parse(query.as_bytes())
        .into_owned()
        .collect();
    if query_value(&pairs, "state") != Some(state) {
        reply(socket, "400 Bad Request", "text/plain", FOREIGN_STATE_PAGE).await;
        return None;
    }
    let outcome = code_from_redirect(&pairs, state);
    // A fixed page: nothing of the redirect is reflected into it.
    let page: &[u8] = match outcome {
        Ok(_) => b"<!doctype html><title>formwork</title><p>Signed in. You can close this tab and go back to formwork.",
        Err(_) => b"<!doctype html><title>formwork</title><p>Sign-in failed. formwork says why.",
    };
    reply(socket, "200 OK", "text/html", page).await;
    Some(outcome)
}

const NOT_FOUND_PAGE: &[u8] = b"Not found.\n";
const FOREIGN_STATE_PAGE: &[u8] =
    b"This sign-in link does not match the sign-in formwork is waiting for.\n";

/// Writes a whole answer and closes the connection; a client gone meanwhile is no matter.
async fn reply(socket: &mut tokio::net::TcpStream, status: &str, content_type: &str, page: &[u8]) {
    let head = format!(
        "HTTP/1.1 {status}\r\ncontent-type: {content_type}; charset=utf-8\r\ncontent-length: {}\r\ncache-control: no-store\r\nconnection: close\r\n\r\n",
        page.len()
    );
    let _ = socket.write_all(head.as_bytes()).await;
    let _ = socket.write_all(page).await;
    let _ = socket.shutdown().await;
}

/// The request target of a GET, or `None` for anything else.
async fn read_target(socket: &mut tokio::net::TcpStream) -> Option<String> {
    let mut buffer = Vec::new();
    let mut piece = [0u8; 2048];
    loop {
        let read = socket.read(&mut piece).await.ok()?;
        if read == 0 {
            return None;
        }
        buffer.extend_from_slice(&piece[..read]);
        let mut fields = [httparse::EMPTY_HEADER; 64];
        let mut request = httparse::Request::new(&mut fields);
        match request.parse(&buffer) {
            Ok(httparse::Status::Complete(_)) => {
                return (request.method == Some("GET")).then(|| request.path.map(str::to_owned))?;
            }
            Ok(httparse::Status::Partial) if buffer.len() < MAX_CALLBACK_BYTES => continue,
            _ => return None,
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn pairs(query: &str) -> Vec<(String, String)> {
        url::form_urlencoded::parse(query.as_bytes())
            .into_owned()
            .collect()
    }

    #[test]
    fn the_redirect_must_carry_our_state() {
        assert_eq!(
            code_from_redirect(&pairs("code=abc&state=s1"), "s1").unwrap(),
            "abc"
        );
        assert_eq!(
            code_from_redirect(&pairs("code=abc&state=s2"), "s1")
                .unwrap_err()
                .to_string(),
            "the sign-in redirect carried another `state` than the one sent: refused (a stale or forged redirect)"
        );
        assert!(code_from_redirect(&pairs("code=abc"), "s1").is_err());
        assert_eq!(
            code_from_redirect(
                &pairs("error=access_denied&error_description=no&state=s1"),
                "s1"
            )
            .unwrap_err()
            .to_string(),
            "the authorization server refused: access_denied (no)"
        );
    }

    /// The request `target` sent to the listener at `address`, and the whole answer.
    async fn get(address: &str, target: &str) -> String {
        let mut socket = tokio::net::TcpStream::connect(address).await.unwrap();
        socket
            .write_all(format!("GET {target} HTTP/1.1\r\nhost: x\r\n\r\n").as_bytes())
            .await
            .unwrap();
        let mut answer = String::new();
        socket.read_to_string(&mut answer).await.unwrap();
        answer
    }

    const FOREIGN_STATE_ANSWER_END: &str =
        "\r\n\r\nThis sign-in link does not match the sign-in formwork is waiting for.\n";

    /// Anyone on this machine can reach the listener: a callback with another `state` (forged,
    /// or a stale tab's) is answered 400 and the sign-in goes on waiting for its own, whose
    /// code it takes; another path gets a 404 the same way.
    #[tokio::test]
    async fn a_forged_callback_is_refused_and_the_real_one_still_signs_in() {
        let agent = BrowserSignIn {
            port: None,
            timeout: Duration::from_secs(10),
            show: Arc::new(|_: &str| {}),
        };
        let pending = agent.start().await.unwrap();
        let uri = pending.redirect_uri();
        assert!(uri.starts_with("http://127.0.0.1:") && uri.ends_with("/callback"));
        let done =
            tokio::spawn(pending.complete("https://as.example/authorize".into(), "s1".into()));
        let address = uri
            .trim_start_matches("http://")
            .trim_end_matches("/callback")
            .to_owned();
        let not_found = get(&address, "/favicon.ico").await;
        assert!(
            not_found.starts_with("HTTP/1.1 404 Not Found\r\n")
                && not_found.ends_with("\r\n\r\nNot found.\n"),
            "{not_found}"
        );
        for forged in [
            "/callback?code=forged&state=forged",
            "/callback?code=forged",
            "/callback?error=access_denied&state=s2",
        ] {
            let answer = get(&address, forged).await;
            assert!(
                answer.starts_with(
                    "HTTP/1.1 400 Bad Request\r\ncontent-type: text/plain; charset=utf-8\r\n"
                ) && answer.ends_with(FOREIGN_STATE_ANSWER_END),
                "{forged}: {answer}"
            );
        }
        assert!(!done.is_finished(), "a forged callback ended the sign-in");
        let answer = get(&address, "/callback?code=c1&state=s1").await;
        assert!(
            answer.starts_with("HTTP/1.1 200 OK\r\n") && answer.contains("Signed in."),
            "{answer}"
        );
        assert_eq!(done.await.unwrap().unwrap(), "c1");
        // The listener is gone with the sign-in's callback.
        assert!(tokio::net::TcpStream::connect(address).await.is_err());
    }

    /// Only forged callbacks: the listener waits them out to its timeout.
    #[tokio::test]
    async fn forged_callbacks_alone_end_in_the_timeout() {
        let loopback = Loopback::bind(None).await.unwrap();
        let address = format!("127.0.0.1:{}", loopback.port);
        let done = tokio::spawn(loopback.wait("s1", Duration::from_secs(1)));
        let answer = get(&address, "/callback?code=forged&state=forged").await;
        assert!(answer.ends_with(FOREIGN_STATE_ANSWER_END), "{answer}");
        assert_eq!(
            done.await.unwrap().map_err(|err| err.to_string()),
            Err("no sign-in came back within 1 s".to_owned())
        );
    }

    /// A connection that never finishes its request (a stray local client, a browser's
    /// speculative one) does not hold up the callback behind it.
    #[tokio::test]
    async fn a_silent_connection_does_not_hold_up_the_callback() {
        let loopback = Loopback::bind(None).await.unwrap();
        let address = format!("127.0.0.1:{}", loopback.port);
        let done = tokio::spawn(loopback.wait("s1", Duration::from_secs(30)));
        let mut silent = tokio::net::TcpStream::connect(&address).await.unwrap();
        silent.write_all(b"GET /call").await.unwrap();
        let mut socket = tokio::net::TcpStream::connect(&address).await.unwrap();
        socket
            .write_all(b"GET /callback?code=c1&state=s1 HTTP/1.1\r\nhost: x\r\n\r\n")
            .await
            .unwrap();
        let code = tokio::time::timeout(Duration::from_secs(3), done)
            .await
            .expect("the callback waited behind the silent connection")
            .unwrap();
        assert_eq!(code.unwrap(), "c1");
        drop(silent);
    }
}
