//! Hostile authorization servers: each one is refused with a clear error, and no token or
//! credential goes where it should not. Also the redirects an MCP request may follow (307/308
//! within the server's origin) and those it may not. The servers here are scripted (no real peer misbehaves
//! on purpose); the well-behaved paths are the official conformance suite's
//! (crates/cli/tests/conformance.rs).

#![allow(clippy::unwrap_used)]

use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use formwork_host::auth::Authorizer;
use formwork_host::auth::agent::{HeadlessSignIn, PendingRedirect, SignInAgent, SignInError};
use formwork_host::auth::settings::{AuthSettings, Grant, IdentityProvider};
use formwork_host::auth::store::{CredentialsStoreMode, StoredTokens, TokenStore};
use formwork_host::{
    BoxFuture, ConnectOptions, FormPrompt, FormReply, FormResponder, Plugin, PluginTarget,
};
use serde_json::json;

mod answers;
mod redirects;
mod refresh;
mod refused;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Hostility {
    /// Behaves: the control case.
    None,
    /// Its metadata names a token endpoint on another origin.
    ForeignTokenEndpoint,
    /// Its metadata offers no PKCE.
    NoPkce,
    /// Its authorization endpoint redirects with another `state`.
    ForgedState,
    /// Its token endpoint answers a web page.
    HtmlTokenAnswer,
    /// Its resource metadata is 10 MB.
    HugeMetadata,
    /// Its resource metadata redirects to itself.
    EndlessRedirect,
    /// Its resource metadata redirects to another origin.
    ForeignRedirect,
    /// Issues refresh tokens, and its MCP endpoint takes only the tokens in `World::valid`.
    Refreshing,
    /// Its MCP endpoint refuses every token.
    RefusesEverything,
    /// Its MCP endpoint opens a connection without a token and asks for one on the first
    /// request after.
    ChallengesAfterOpening,
    /// Its token endpoint answers a token without `token_type`, its lifetime as a string.
    MalformedTokenAnswer,
    /// The token endpoint answers an access token that would write a header of its own, and
    /// an expiry that overflows any clock.
    InjectingTokenAnswer,
    /// A 2025-03-26 server (no resource metadata) whose authorization server metadata claims
    /// another origin as its issuer, with its endpoints there.
    LegacyForeignIssuer,
    /// Like `Refreshing`, with a confidential client that sends its secret in the body
    /// (`client_secret_post`, the only method the server offers).
    RefreshingWithSecretInBody,
    /// Like `Refreshing`, but refuses every refresh (`invalid_grant`).
    RefusesRefresh,
    /// Its resource metadata endpoint takes the request and never answers.
    SilentMetadata,
    /// Like `Refreshing`, and it answers `tools/list` on an event stream that it ends before the
    /// answer, revoking the token the request carried: the answer comes on the resumption
    /// (`Last-Event-ID: e1`).
    RevokesWhileResuming,
    /// Its tool `NAME` needs the scope `NAME` (403 `insufficient_scope` naming it); the scope
    /// `admin` it never grants.
    StepsUp,
    /// Its registration answers the client and its secret as `text/plain`.
    RegistrationAnswersText,
    /// Also an enterprise identity provider (`/idp/token`), whose token exchange answers an
    /// access token of its own rather than an ID-JAG.
    IdpAnswersAnAccessToken,
    /// Like `Refreshing`, but another process (a store handle of its own on the file in
    /// `World::other_process`) refreshes first: asked to refresh `refresh-1`, the server writes
    /// that process's rotated `token-other` and `refresh-other` into the store, then refuses
    /// `refresh-1` as spent (`invalid_grant`).
    RotatedElsewhere,
}

impl Hostility {
    /// Issues refresh tokens, and its MCP endpoint takes only the tokens in `World::valid`.
    fn refreshes(self) -> bool {
        matches!(
            self,
            Hostility::Refreshing
                | Hostility::RefreshingWithSecretInBody
                | Hostility::RefusesRefresh
                | Hostility::RevokesWhileResuming
                | Hostility::RotatedElsewhere
        )
    }
}

/// Every request either server got: "METHOD path" and its Authorization header, if any.
type Seen = Arc<Mutex<Vec<(String, Option<String>)>>>;

#[derive(Clone)]
struct World {
    hostility: Hostility,
    origin: String,
    elsewhere: String,
    seen: Seen,
    /// Tokens the MCP endpoint takes (with `Refreshing`), and how many have been issued.
    valid: Arc<Mutex<Vec<String>>>,
    issued: Arc<Mutex<u32>>,
    /// The id of the request whose answer waits for the resumption (`RevokesWhileResuming`).
    resumable: Arc<Mutex<Option<serde_json::Value>>>,
    /// The scopes each token was issued with (`StepsUp`).
    granted: Arc<Mutex<std::collections::HashMap<String, Vec<String>>>>,
    /// The data directory whose credentials file the other process of `RotatedElsewhere` writes.
    other_process: Arc<Mutex<Option<std::path::PathBuf>>>,
}

async fn serve(router: Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await });
    format!("http://{address}")
}

fn record(seen: &Seen, request: &Request) {
    let mut line = format!("{} {}", request.method(), request.uri());
    if let Some(last) = request.headers().get("last-event-id") {
        line = format!("{line} last-event-id={}", last.to_str().unwrap());
    }
    let auth = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned);
    seen.lock().unwrap().push((line, auth));
}

fn json_answer(value: serde_json::Value) -> Response {
    (
        [(header::CONTENT_TYPE, "application/json")],
        value.to_string(),
    )
        .into_response()
}

async fn hostile(State(world): State<World>, request: Request) -> Response {
    record(&world.seen, &request);
    let origin = &world.origin;
    let path = request.uri().path().to_owned();
    let query = request.uri().query().unwrap_or_default().to_owned();
    let authorized = request.headers().get(header::AUTHORIZATION).is_some();
    match path.as_str() {
        "/open" | "/v2/open" => mcp(request).await,
        // Two hops: the second `Location` is relative to the first one's target.
        "/v1/hop" => (
            StatusCode::TEMPORARY_REDIRECT,
            [(header::LOCATION, "/v2/hop")],
        )
            .into_response(),
        "/v2/hop" => (StatusCode::TEMPORARY_REDIRECT, [(header::LOCATION, "open")]).into_response(),
        "/moved" => (
            StatusCode::PERMANENT_REDIRECT,
            [(header::LOCATION, "/open")],
        )
            .into_response(),
        "/again" => (
            StatusCode::TEMPORARY_REDIRECT,
            [(header::LOCATION, "/again")],
        )
            .into_response(),
        "/away" => (
            StatusCode::TEMPORARY_REDIRECT,
            [(header::LOCATION, format!("{}/open", world.elsewhere))],
        )
            .into_response(),
        "/mcp" if !authorized && world.hostility == Hostility::ChallengesAfterOpening => {
            if request.method() != axum::http::Method::POST {
                return challenge(origin);
            }
            let message = body_json(request).await;
            if message["method"] == "initialize" || message.get("id").is_none() {
                mcp_answer(&message)
            } else {
                challenge(origin)
            }
        }
        "/mcp" if !authorized && world.hostility == Hostility::LegacyForeignIssuer => (
            StatusCode::UNAUTHORIZED,
            [(header::WWW_AUTHENTICATE, "Bearer")],
            "",
        )
            .into_response(),
        "/mcp" if !authorized => challenge(origin),
        "/mcp" if world.hostility == Hostility::RefusesEverything => (
            StatusCode::UNAUTHORIZED,
            [(header::WWW_AUTHENTICATE, "Bearer error=\"invalid_token\"")],
            "",
        )
            .into_response(),
        "/mcp" if world.hostility.refreshes() => {
            let token = request.headers()[header::AUTHORIZATION]
                .to_str()
                .unwrap()
                .trim_start_matches("Bearer ")
                .to_owned();
            if !world.valid.lock().unwrap().contains(&token) {
                (
                    StatusCode::UNAUTHORIZED,
                    [(header::WWW_AUTHENTICATE, "Bearer error=\"invalid_token\"")],
                    "",
                )
                    .into_response()
            } else if world.hostility == Hostility::RevokesWhileResuming {
                resuming(&world, &token, request).await
            } else {
                mcp(request).await
            }
        }
        "/mcp" if world.hostility == Hostility::StepsUp => scoped(&world, request).await,
        "/mcp" => mcp(request).await,
        "/.well-known/oauth-protected-resource/mcp" | "/.well-known/oauth-protected-resource"
            if world.hostility == Hostility::LegacyForeignIssuer =>
        {
            StatusCode::NOT_FOUND.into_response()
        }
        "/.well-known/oauth-protected-resource/mcp" => match world.hostility {
            Hostility::SilentMetadata => std::future::pending().await,
            Hostility::HugeMetadata => {
                let padding = " ".repeat(10 * 1024 * 1024);
                (
                    [(header::CONTENT_TYPE, "application/json")],
                    format!("{{{padding}}}"),
                )
                    .into_response()
            }
            Hostility::EndlessRedirect => (
                StatusCode::FOUND,
                [(
                    header::LOCATION,
                    "/.well-known/oauth-protected-resource/mcp",
                )],
            )
                .into_response(),
            Hostility::ForeignRedirect => (
                StatusCode::FOUND,
                [(
                    header::LOCATION,
                    format!(
                        "{}/.well-known/oauth-protected-resource/mcp",
                        world.elsewhere
                    ),
                )],
            )
                .into_response(),
            _ => json_answer(
                json!({"resource": format!("{origin}/mcp"), "authorization_servers": [origin]}),
            ),
        },
        "/.well-known/oauth-authorization-server" => {
            let mut metadata = json!({
                "issuer": origin,
                "authorization_endpoint": format!("{origin}/authorize"),
                "token_endpoint": format!("{origin}/token"),
                "registration_endpoint": format!("{origin}/register"),
                "response_types_supported": ["code"],
                "code_challenge_methods_supported": ["S256"],
                "token_endpoint_auth_methods_supported": ["none"],
            });
            match world.hostility {
                Hostility::ForeignTokenEndpoint => {
                    metadata["token_endpoint"] = json!(format!("{}/token", world.elsewhere));
                }
                Hostility::NoPkce => {
                    metadata
                        .as_object_mut()
                        .unwrap()
                        .remove("code_challenge_methods_supported");
                }
                Hostility::LegacyForeignIssuer => {
                    let elsewhere = &world.elsewhere;
                    metadata["issuer"] = json!(elsewhere);
                    metadata["authorization_endpoint"] = json!(format!("{elsewhere}/authorize"));
                    metadata["token_endpoint"] = json!(format!("{elsewhere}/token"));
                    metadata["registration_endpoint"] = json!(format!("{elsewhere}/register"));
                }
                Hostility::RefreshingWithSecretInBody => {
                    metadata["token_endpoint_auth_methods_supported"] =
                        json!(["client_secret_post"]);
                }
                _ => {}
            }
            json_answer(metadata)
        }
        "/register" if world.hostility == Hostility::RefreshingWithSecretInBody => (
            StatusCode::CREATED,
            [(header::CONTENT_TYPE, "application/json")],
            json!({"client_id": "client-1", "client_secret": "client-s3cret",
                   "token_endpoint_auth_method": "client_secret_post",
                   "redirect_uris": ["http://localhost:3000/callback"]})
            .to_string(),
        )
            .into_response(),
        "/register" if world.hostility == Hostility::RegistrationAnswersText => (
            StatusCode::CREATED,
            [(header::CONTENT_TYPE, "text/plain")],
            json!({"client_id": "client-1", "client_secret": "client-SECRET"}).to_string(),
        )
            .into_response(),
        "/register" => (
            StatusCode::CREATED,
            [(header::CONTENT_TYPE, "application/json")],
            json!({"client_id": "client-1", "redirect_uris": ["http://localhost:3000/callback"]})
                .to_string(),
        )
            .into_response(),
        "/authorize" => {
            let state = url::form_urlencoded::parse(query.as_bytes())
                .find(|(key, _)| key == "state")
                .map(|(_, value)| value.into_owned())
                .unwrap_or_default();
            let state = if world.hostility == Hostility::ForgedState {
                "forged".to_owned()
            } else {
                state
            };
            // The code carries the scopes asked for, for `StepsUp`'s token endpoint.
            let scope = url::form_urlencoded::parse(query.as_bytes())
                .find(|(key, _)| key == "scope")
                .map(|(_, value)| value.into_owned())
                .unwrap_or_default();
            let code: String = url::form_urlencoded::byte_serialize(scope.as_bytes()).collect();
            let location = format!("http://localhost:3000/callback?code=code-{code}&state={state}");
            (StatusCode::FOUND, [(header::LOCATION, location)]).into_response()
        }
        "/token" if world.hostility == Hostility::HtmlTokenAnswer => (
            [(header::CONTENT_TYPE, "text/html")],
            "<html><body>Please log in</body></html>",
        )
            .into_response(),
        "/token" if world.hostility == Hostility::MalformedTokenAnswer => json_answer(
            json!({"access_token": "tok-SECRET", "expires_in": "3600", "refresh_token": "ref-SECRET"}),
        ),
        "/token" if world.hostility == Hostility::InjectingTokenAnswer => json_answer(json!({
            "access_token": "tok\r\nX-Injected: SECRET",
            "token_type": "Bearer",
            "expires_in": u64::MAX,
        })),
        "/token" if world.hostility == Hostility::StepsUp => {
            let body = axum::body::to_bytes(request.into_body(), 1 << 16)
                .await
                .unwrap();
            let code = url::form_urlencoded::parse(&body)
                .find(|(key, _)| key == "code")
                .map(|(_, value)| value.into_owned())
                .unwrap_or_default();
            let scopes: Vec<String> = code
                .trim_start_matches("code-")
                .split_whitespace()
                .filter(|scope| *scope != "admin")
                .map(str::to_owned)
                .collect();
            let mut issued = world.issued.lock().unwrap();
            *issued += 1;
            let token = format!("token-{issued}");
            world.granted.lock().unwrap().insert(token.clone(), scopes);
            json_answer(json!({"access_token": token, "token_type": "Bearer", "expires_in": 3600}))
        }
        "/token" if world.hostility.refreshes() => {
            let basic = request.headers().get(header::AUTHORIZATION).is_some();
            let body = axum::body::to_bytes(request.into_body(), 1 << 16)
                .await
                .unwrap();
            let form: Vec<(String, String)> =
                url::form_urlencoded::parse(&body).into_owned().collect();
            let field = |key: &str| {
                form.iter()
                    .find(|(k, _)| k == key)
                    .map(|(_, v)| v.clone())
                    .unwrap_or_default()
            };
            let grant = field("grant_type");
            world.seen.lock().unwrap().push((
                format!(
                    "token grant_type={grant} refresh_token={}",
                    field("refresh_token")
                ),
                None,
            ));
            if world.hostility == Hostility::RefreshingWithSecretInBody {
                world.seen.lock().unwrap().push((
                    format!(
                        "token auth basic={basic} client_secret={}",
                        field("client_secret")
                    ),
                    None,
                ));
            }
            if world.hostility == Hostility::RotatedElsewhere && grant == "refresh_token" {
                let data = world.other_process.lock().unwrap().clone().unwrap();
                let url = format!("{}/mcp", world.origin);
                tokio::task::spawn_blocking(move || {
                    let other = TokenStore::new(CredentialsStoreMode::File, &data);
                    let mut rotated = other.load("guarded", &url).unwrap().unwrap();
                    rotated.access_token = "token-other".to_owned();
                    rotated.refresh_token = Some("refresh-other".to_owned());
                    rotated.expires_at = Some(u64::MAX);
                    other.save(&rotated).unwrap();
                })
                .await
                .unwrap();
                world.valid.lock().unwrap().push("token-other".to_owned());
            }
            let spent = matches!(
                world.hostility,
                Hostility::RefusesRefresh | Hostility::RotatedElsewhere
            );
            if spent && grant == "refresh_token" {
                return (
                    StatusCode::BAD_REQUEST,
                    [(header::CONTENT_TYPE, "application/json")],
                    json!({"error": "invalid_grant"}).to_string(),
                )
                    .into_response();
            }
            let mut issued = world.issued.lock().unwrap();
            *issued += 1;
            let token = format!("token-{issued}");
            world.valid.lock().unwrap().push(token.clone());
            // The first token is about to expire, so that it is refreshed before it is used again.
            let lifetime = if *issued == 1 { 5 } else { 3600 };
            json_answer(
                json!({"access_token": token, "token_type": "Bearer", "expires_in": lifetime, "refresh_token": format!("refresh-{issued}")}),
            )
        }
        "/token" => json_answer(
            json!({"access_token": "secret-token-1", "token_type": "Bearer", "expires_in": 3600}),
        ),
        "/idp/token" if world.hostility == Hostility::IdpAnswersAnAccessToken => {
            json_answer(json!({
                "access_token": "idp-SECRET-access",
                "issued_token_type": "urn:ietf:params:oauth:token-type:access_token",
                "token_type": "Bearer",
            }))
        }
        _ => StatusCode::NOT_FOUND.into_response(),
    }
}

/// The MCP endpoint of `RevokesWhileResuming`, for a request with a valid `token`.
async fn resuming(world: &World, token: &str, request: Request) -> Response {
    let events =
        |body: String| ([(header::CONTENT_TYPE, "text/event-stream")], body).into_response();
    if request.method() == axum::http::Method::GET {
        let last = request.headers().get("last-event-id").cloned();
        let waiting = world.resumable.lock().unwrap().take();
        return match (last, waiting) {
            (Some(last), Some(id)) if last == "e1" => {
                let answer = json!({"jsonrpc": "2.0", "id": id, "result": {"tools": [
                    {"name": "resumed", "inputSchema": {"type": "object"}},
                ]}});
                events(format!("id: e2\ndata: {answer}\n\n"))
            }
            _ => StatusCode::METHOD_NOT_ALLOWED.into_response(),
        };
    }
    if request.method() != axum::http::Method::POST {
        return StatusCode::METHOD_NOT_ALLOWED.into_response();
    }
    let message = body_json(request).await;
    if message["method"] != "tools/list" {
        return mcp_answer(&message);
    }
    let bearer = Some(format!("Bearer {token}"));
    world
        .seen
        .lock()
        .unwrap()
        .push(("tools/list".to_owned(), bearer));
    *world.resumable.lock().unwrap() = Some(message["id"].clone());
    world.valid.lock().unwrap().retain(|valid| valid != token);
    events("id: e1\nretry: 10\ndata:\n\n".to_owned())
}

/// The MCP endpoint of `StepsUp`, for a request with a token: a tool runs only with the scope
/// of its name.
async fn scoped(world: &World, request: Request) -> Response {
    let token = request.headers()[header::AUTHORIZATION]
        .to_str()
        .unwrap()
        .trim_start_matches("Bearer ")
        .to_owned();
    if request.method() != axum::http::Method::POST {
        return StatusCode::METHOD_NOT_ALLOWED.into_response();
    }
    let message = body_json(request).await;
    if message["method"] != "tools/call" {
        return mcp_answer(&message);
    }
    let tool = message["params"]["name"].as_str().unwrap().to_owned();
    let granted = world.granted.lock().unwrap().get(&token).cloned();
    if !granted.unwrap_or_default().contains(&tool) {
        let origin = &world.origin;
        let challenge = format!(
            r#"Bearer error="insufficient_scope", scope="{tool}", resource_metadata="{origin}/.well-known/oauth-protected-resource/mcp""#
        );
        return (
            StatusCode::FORBIDDEN,
            [(header::WWW_AUTHENTICATE, challenge)],
            "",
        )
            .into_response();
    }
    let result = json!({"content": [{"type": "text", "text": format!("ran {tool}")}]});
    json_answer(json!({"jsonrpc": "2.0", "id": message["id"], "result": result}))
}

/// The 401 of the MCP endpoint, naming its resource metadata.
fn challenge(origin: &str) -> Response {
    let challenge = format!(
        r#"Bearer error="invalid_token", resource_metadata="{origin}/.well-known/oauth-protected-resource/mcp""#
    );
    let mut headers = HeaderMap::new();
    headers.insert(header::WWW_AUTHENTICATE, challenge.parse().unwrap());
    (StatusCode::UNAUTHORIZED, headers, "").into_response()
}

async fn body_json(request: Request) -> serde_json::Value {
    let body = axum::body::to_bytes(request.into_body(), 1 << 20)
        .await
        .unwrap();
    serde_json::from_slice(&body).unwrap()
}

/// Just enough MCP for a connection: initialize, then empty answers.
async fn mcp(request: Request) -> Response {
    if request.method() != axum::http::Method::POST {
        return StatusCode::METHOD_NOT_ALLOWED.into_response();
    }
    mcp_answer(&body_json(request).await)
}

fn mcp_answer(message: &serde_json::Value) -> Response {
    let Some(id) = message.get("id").cloned() else {
        return StatusCode::ACCEPTED.into_response();
    };
    let result = match message["method"].as_str() {
        Some("initialize") => json!({
            "protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
            "serverInfo": {"name": "guarded", "version": "1"},
        }),
        Some("tools/list") => json!({"tools": []}),
        _ => {
            return json_answer(
                json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "no"}}),
            );
        }
    };
    json_answer(json!({"jsonrpc": "2.0", "id": id, "result": result}))
}

async fn elsewhere(State(seen): State<Seen>, request: Request) -> Response {
    record(&seen, &request);
    json_answer(json!({"access_token": "stolen", "token_type": "Bearer"}))
}

struct NoForms;

impl FormResponder for NoForms {
    fn respond(&self, _prompt: FormPrompt) -> BoxFuture<FormReply> {
        Box::pin(async { FormReply::cancel() })
    }
}

struct Outcome {
    result: Result<(), String>,
    seen: Vec<(String, Option<String>)>,
    seen_elsewhere: Vec<(String, Option<String>)>,
}

/// The hostile server and its bystander on another origin.
async fn world(hostility: Hostility) -> (World, Seen) {
    let seen_elsewhere: Seen = Seen::default();
    let elsewhere_origin = serve(
        Router::new()
            .fallback(elsewhere)
            .with_state(Arc::clone(&seen_elsewhere)),
    )
    .await;
    // The origin is known only once bound: bind first, then serve with it.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let origin = format!("http://{}", listener.local_addr().unwrap());
    let world = World {
        hostility,
        origin,
        elsewhere: elsewhere_origin,
        seen: Seen::default(),
        valid: Arc::default(),
        issued: Arc::default(),
        resumable: Arc::default(),
        granted: Arc::default(),
        other_process: Arc::default(),
    };
    let router = Router::new().fallback(hostile).with_state(world.clone());
    tokio::spawn(async move { axum::serve(listener, router).await });
    (world, seen_elsewhere)
}

async fn connect(world: &World) -> Result<Plugin, String> {
    connect_keeping(world, None).await
}

/// [`connect`], keeping the tokens in `store` when given.
async fn connect_keeping(world: &World, store: Option<Arc<TokenStore>>) -> Result<Plugin, String> {
    connect_with(world, store, AuthSettings::default()).await
}

/// [`connect`] with these OAuth `settings`.
async fn connect_with(
    world: &World,
    store: Option<Arc<TokenStore>>,
    settings: AuthSettings,
) -> Result<Plugin, String> {
    let url = format!("{}/mcp", world.origin);
    let mut options = ConnectOptions::new("guarded", Arc::new(NoForms));
    options.protocol = Some(formwork_host::PROTOCOL_VERSION);
    options.auth = Some(Arc::new(Authorizer::new(
        "guarded",
        url.clone(),
        settings,
        store,
        Some(Arc::new(HeadlessSignIn::new(
            "http://localhost:3000/callback",
        ))),
    )));
    Plugin::connect(&PluginTarget::Url(url), options)
        .await
        .map_err(|err| err.to_string())
}

async fn connect_to(hostility: Hostility) -> Outcome {
    let (world, seen_elsewhere) = world(hostility).await;
    let result = match connect(&world).await {
        Ok(plugin) => {
            plugin.close().await;
            Ok(())
        }
        Err(err) => Err(err),
    };
    let seen = world.seen.lock().unwrap().clone();
    let seen_elsewhere = seen_elsewhere.lock().unwrap().clone();
    Outcome {
        result,
        seen,
        seen_elsewhere,
    }
}

fn requested(outcome: &Outcome, line: &str) -> bool {
    outcome.seen.iter().any(|(seen, _)| seen.starts_with(line))
}

/// The token reached only the MCP endpoint, and the credentials nobody else.
fn token_stayed_home(outcome: &Outcome) {
    for (line, auth) in &outcome.seen {
        if let Some(auth) = auth {
            assert!(
                line.starts_with("POST /mcp")
                    || line.starts_with("GET /mcp")
                    || line.starts_with("DELETE /mcp"),
                "{line} carried {auth}"
            );
        }
    }
    assert!(
        outcome.seen_elsewhere.is_empty(),
        "another origin was asked: {:?}",
        outcome.seen_elsewhere
    );
}

fn refused(outcome: &Outcome, reason: &str) {
    let err = outcome
        .result
        .as_ref()
        .expect_err("the connection should fail");
    assert!(err.contains(reason), "{err}");
    assert!(
        outcome.seen.iter().all(|(_, auth)| auth.is_none()),
        "a token was sent: {:?}",
        outcome.seen
    );
    token_stayed_home(outcome);
}

/// The "METHOD path" of every request the server got, in order.
fn seen_lines(world: &World) -> Vec<String> {
    world
        .seen
        .lock()
        .unwrap()
        .iter()
        .map(|(line, _)| line.clone())
        .collect()
}

/// The token requests of a sign-in to a `Refreshing` server: the code's exchange, then the
/// refresh of its short-lived first token (before the message after `initialize`).
const SIGNED_IN: [&str; 2] = [
    "token grant_type=authorization_code refresh_token=",
    "token grant_type=refresh_token refresh_token=refresh-1",
];

fn token_requests(world: &World) -> Vec<String> {
    seen_lines(world)
        .into_iter()
        .filter(|line| line.starts_with("token "))
        .collect()
}
