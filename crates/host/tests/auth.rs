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

#[tokio::test]
async fn a_well_behaved_server_signs_in_and_only_its_endpoint_sees_the_token() {
    let outcome = connect_to(Hostility::None).await;
    outcome.result.as_ref().unwrap();
    let with_token: Vec<&String> = outcome
        .seen
        .iter()
        .filter(|(_, auth)| auth.is_some())
        .map(|(line, _)| line)
        .collect();
    assert!(!with_token.is_empty());
    assert!(
        outcome
            .seen
            .iter()
            .filter(|(_, auth)| auth.is_some())
            .all(|(_, auth)| auth.as_deref() == Some("Bearer secret-token-1"))
    );
    token_stayed_home(&outcome);
}

#[tokio::test]
async fn a_token_endpoint_on_another_origin_is_refused() {
    let outcome = connect_to(Hostility::ForeignTokenEndpoint).await;
    let elsewhere = outcome
        .result
        .as_ref()
        .err()
        .and_then(|err| err.split("another origin (").nth(1))
        .map(str::to_owned);
    refused(
        &outcome,
        "names a token_endpoint on another origin (http://127.0.0.1:",
    );
    assert!(elsewhere.unwrap().starts_with("http://127.0.0.1:"));
    assert!(!requested(&outcome, "GET /authorize"));
}

#[tokio::test]
async fn a_server_without_pkce_is_refused() {
    let outcome = connect_to(Hostility::NoPkce).await;
    refused(
        &outcome,
        "does not offer PKCE with S256 (code_challenge_methods_supported); formwork does not sign in without it",
    );
    assert!(!requested(&outcome, "GET /authorize"));
    assert!(!requested(&outcome, "POST /register"));
}

#[tokio::test]
async fn a_forged_state_is_refused_and_its_code_never_exchanged() {
    let outcome = connect_to(Hostility::ForgedState).await;
    refused(
        &outcome,
        "signing in to guarded failed: the sign-in redirect carried another `state` than the one sent: refused (a stale or forged redirect)",
    );
    assert!(requested(&outcome, "GET /authorize"));
    assert!(!requested(&outcome, "POST /token"));
}

#[tokio::test]
async fn a_token_endpoint_that_answers_html_is_refused() {
    let outcome = connect_to(Hostility::HtmlTokenAnswer).await;
    refused(
        &outcome,
        "/token answered something that is not a token response",
    );
    assert!(requested(&outcome, "POST /token"));
}

#[tokio::test]
async fn ten_megabytes_of_metadata_are_refused() {
    let outcome = connect_to(Hostility::HugeMetadata).await;
    refused(
        &outcome,
        "/.well-known/oauth-protected-resource/mcp is larger than 256 KiB",
    );
}

#[tokio::test]
async fn an_endless_redirect_is_refused() {
    let outcome = connect_to(Hostility::EndlessRedirect).await;
    refused(
        &outcome,
        "/.well-known/oauth-protected-resource/mcp redirects more than 5 times",
    );
}

#[tokio::test]
async fn a_metadata_redirect_to_another_origin_is_not_followed() {
    let outcome = connect_to(Hostility::ForeignRedirect).await;
    refused(&outcome, "redirects to another origin (http://127.0.0.1:");
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

/// The MCP endpoint of a `Refreshing` server takes `token` no more.
fn revoke(world: &World, token: &str) {
    world.valid.lock().unwrap().retain(|valid| valid != token);
}

fn token_requests(world: &World) -> Vec<String> {
    seen_lines(world)
        .into_iter()
        .filter(|line| line.starts_with("token "))
        .collect()
}

#[tokio::test]
async fn a_token_about_to_expire_is_refreshed_before_it_is_sent_and_a_refused_one_on_its_401() {
    let (world, _) = world(Hostility::Refreshing).await;
    let plugin = connect(&world).await.unwrap();
    // Signed in once; token-1 expires in 5 s, so the message after `initialize` (the
    // `initialized` notification) refreshed it first.
    assert_eq!(token_requests(&world), SIGNED_IN);
    plugin.list_tools().await.unwrap();
    assert_eq!(token_requests(&world), SIGNED_IN);
    // The server revokes token-2: its 401 is answered with one refresh, and the call goes on.
    revoke(&world, "token-2");
    plugin.list_tools().await.unwrap();
    assert_eq!(
        token_requests(&world)[2..],
        ["token grant_type=refresh_token refresh_token=refresh-2"]
    );
    // Once the token is held, a call costs its one request and nothing more.
    let before = world.seen.lock().unwrap().len();
    plugin.list_tools().await.unwrap();
    let after: Vec<(String, Option<String>)> = world.seen.lock().unwrap()[before..].to_vec();
    assert_eq!(
        after,
        [("POST /mcp".to_owned(), Some("Bearer token-3".to_owned()))],
        "a valid token is not refreshed again"
    );
    let authorizations = world
        .seen
        .lock()
        .unwrap()
        .iter()
        .filter(|(line, _)| line.starts_with("GET /authorize"))
        .count();
    assert_eq!(authorizations, 1);
    plugin.close().await;
}

/// The server revoked the token while the call's stream was down: the resumption's 401 is
/// answered with one refresh, and the call resumes where it was with the new token.
#[tokio::test]
async fn a_token_refused_on_a_calls_resumption_is_refreshed_and_the_call_resumes() {
    let (world, _) = world(Hostility::RevokesWhileResuming).await;
    let plugin = connect(&world).await.unwrap();
    let before = world.seen.lock().unwrap().len();
    let tools = plugin.list_tools().await.unwrap();
    let names: Vec<&str> = tools
        .iter()
        .map(|tool| tool["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["resumed"]);
    // The call, its resumptions and the token requests (not the other messages).
    let after: Vec<(String, Option<String>)> = world.seen.lock().unwrap()[before..]
        .iter()
        .filter(|(line, _)| !["GET /mcp", "POST /mcp", "POST /token"].contains(&line.as_str()))
        .cloned()
        .collect();
    let bearer = |token: &str| Some(format!("Bearer {token}"));
    assert_eq!(
        after,
        [
            ("tools/list".to_owned(), bearer("token-2")),
            ("GET /mcp last-event-id=e1".to_owned(), bearer("token-2")),
            (
                "token grant_type=refresh_token refresh_token=refresh-2".to_owned(),
                None
            ),
            ("GET /mcp last-event-id=e1".to_owned(), bearer("token-3")),
        ]
    );
    plugin.close().await;
}

/// Step-ups are bounded per set of scopes the server asks for, not per connection: one
/// connection steps up for `a`, `b` and `c` in turn, each with the scopes it held plus the new
/// one; a scope the server never grants is asked for once, then the call fails clearly.
#[tokio::test]
async fn each_set_of_scopes_steps_up_on_its_own_and_one_never_granted_ends_the_call() {
    let (world, _) = world(Hostility::StepsUp).await;
    let plugin = connect(&world).await.unwrap();
    for tool in ["a", "b", "c"] {
        let result = plugin.call_tool(tool, None).await.unwrap();
        assert_eq!(result["content"][0]["text"], format!("ran {tool}"));
    }
    let err = plugin
        .call_tool("admin", None)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains(
            "guarded refuses the request for want of scope (it asks for `admin`) even after signing in with the scopes it named"
        ),
        "{err}"
    );
    let asked: Vec<String> = seen_lines(&world)
        .iter()
        .filter(|line| line.starts_with("GET /authorize"))
        .map(|line| {
            let query = line.split_once('?').unwrap().1;
            url::form_urlencoded::parse(query.as_bytes())
                .find(|(key, _)| key == "scope")
                .map(|(_, value)| value.into_owned())
                .unwrap_or_default()
        })
        .collect();
    assert_eq!(asked, ["", "a", "a b", "a b c", "a b c admin"]);
    plugin.close().await;
}

/// Two connections share a token store (as two sessions' connections to one server do). Both
/// refused at once, they refresh once between them: the server may rotate refresh tokens,
/// taking each once; the one that waited reads the renewed token from the store.
#[tokio::test]
async fn connections_sharing_a_store_refresh_once_between_them() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(TokenStore::new(CredentialsStoreMode::File, dir.path()));
    let (world, _) = world(Hostility::Refreshing).await;
    let first = connect_keeping(&world, Some(Arc::clone(&store)))
        .await
        .unwrap();
    let second = connect_keeping(&world, Some(Arc::clone(&store)))
        .await
        .unwrap();
    // The first signed in, and refreshed its short-lived token-1; the second read token-2.
    assert_eq!(token_requests(&world), SIGNED_IN);
    revoke(&world, "token-2");
    let (one, other) = tokio::join!(first.list_tools(), second.list_tools());
    one.unwrap();
    other.unwrap();
    assert_eq!(
        token_requests(&world)[2..],
        ["token grant_type=refresh_token refresh_token=refresh-2"]
    );
    let before = world.seen.lock().unwrap().len();
    first.list_tools().await.unwrap();
    second.list_tools().await.unwrap();
    let after: Vec<(String, Option<String>)> = world.seen.lock().unwrap()[before..].to_vec();
    let token_3 = ("POST /mcp".to_owned(), Some("Bearer token-3".to_owned()));
    assert_eq!(after, [token_3.clone(), token_3]);
    first.close().await;
    second.close().await;
}

#[tokio::test]
async fn a_server_that_refuses_every_token_ends_after_one_sign_in() {
    let outcome = connect_to(Hostility::RefusesEverything).await;
    let err = outcome.result.as_ref().unwrap_err();
    assert!(
        err.contains("signing in to guarded failed")
            || err.contains("guarded refused the token it had just issued (HTTP 401)"),
        "{err}"
    );
    let authorizations = outcome
        .seen
        .iter()
        .filter(|(line, _)| line.starts_with("GET /authorize"))
        .count();
    assert_eq!(authorizations, 1, "{:?}", outcome.seen);
    token_stayed_home(&outcome);
}

#[tokio::test]
async fn a_configured_authorization_header_is_never_signed_in_over() {
    let (world, seen_elsewhere) = world(Hostility::RefusesEverything).await;
    let url = format!("{}/mcp", world.origin);
    let mut options = ConnectOptions::new("guarded", Arc::new(NoForms));
    options.protocol = Some(formwork_host::PROTOCOL_VERSION);
    options.http_headers = vec![("Authorization".to_owned(), "Bearer configured".to_owned())];
    options.auth = Some(Arc::new(Authorizer::new(
        "guarded",
        url.clone(),
        AuthSettings::default(),
        None,
        Some(Arc::new(HeadlessSignIn::new(
            "http://localhost:3000/callback",
        ))),
    )));
    let err = Plugin::connect(&PluginTarget::Url(url), options)
        .await
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("the plugin answered HTTP 401"), "{err}");
    assert!(
        err.contains("(it refused the configured Authorization header)"),
        "{err}"
    );
    let seen = world.seen.lock().unwrap().clone();
    assert!(
        seen.iter().all(|(line, _)| line.starts_with("POST /mcp")),
        "{seen:?}"
    );
    assert!(
        seen.iter()
            .all(|(_, auth)| auth.as_deref() == Some("Bearer configured"))
    );
    assert!(seen_elsewhere.lock().unwrap().is_empty());
}

async fn connect_plainly(world: &World, path: &str) -> Result<Plugin, String> {
    let mut options = ConnectOptions::new("guarded", Arc::new(NoForms));
    options.protocol = Some(formwork_host::PROTOCOL_VERSION);
    options.http_headers = vec![("X-Secret".to_owned(), "s3cret".to_owned())];
    let url = format!("{}{path}", world.origin);
    Plugin::connect(&PluginTarget::Url(url), options)
        .await
        .map_err(|err| err.to_string())
}

#[tokio::test]
async fn mcp_requests_follow_redirects_within_the_origin_only() {
    let (world, seen_elsewhere) = world(Hostility::None).await;
    let plugin = connect_plainly(&world, "/moved").await.unwrap();
    plugin.list_tools().await.unwrap();
    plugin.close().await;
    let seen = seen_lines(&world);
    // Moved once; every later message goes to the new place at once.
    assert_eq!(
        seen.iter().filter(|line| *line == "POST /moved").count(),
        1,
        "{seen:?}"
    );
    assert!(
        seen.iter().filter(|line| *line == "POST /open").count() >= 3,
        "{seen:?}"
    );

    let err = connect_plainly(&world, "/away").await.err().unwrap();
    assert!(
        err.contains("the plugin redirected to another origin (http://127.0.0.1:"),
        "{err}"
    );
    assert!(
        err.contains("formwork follows redirects of MCP requests only within the server's origin"),
        "{err}"
    );
    assert!(
        seen_elsewhere.lock().unwrap().is_empty(),
        "the message and its headers stayed home"
    );

    let err = connect_plainly(&world, "/again").await.err().unwrap();
    assert!(err.contains("the plugin answered HTTP 307"), "{err}");

    let plugin = connect_plainly(&world, "/v1/hop").await.unwrap();
    plugin.list_tools().await.unwrap();
    plugin.close().await;
    let seen = seen_lines(&world);
    assert!(seen.contains(&"POST /v2/open".to_owned()), "{seen:?}");
    assert!(!seen.contains(&"POST /v1/open".to_owned()), "{seen:?}");
}

/// A person who takes `delay` on the authorization page, then signs in as [`HeadlessSignIn`] does.
struct SlowSignIn {
    delay: std::time::Duration,
    inner: HeadlessSignIn,
}

struct SlowRedirect {
    delay: std::time::Duration,
    inner: Box<dyn PendingRedirect>,
}

impl SignInAgent for SlowSignIn {
    fn start(&self) -> BoxFuture<Result<Box<dyn PendingRedirect>, SignInError>> {
        let (delay, started) = (self.delay, self.inner.start());
        Box::pin(async move {
            let inner = started.await?;
            Ok(Box::new(SlowRedirect { delay, inner }) as Box<dyn PendingRedirect>)
        })
    }
}

impl PendingRedirect for SlowRedirect {
    fn redirect_uri(&self) -> String {
        self.inner.redirect_uri()
    }

    fn complete(
        self: Box<Self>,
        authorization_url: String,
        state: String,
    ) -> BoxFuture<Result<String, SignInError>> {
        Box::pin(async move {
            tokio::time::sleep(self.delay).await;
            self.inner.complete(authorization_url, state).await
        })
    }
}

#[tokio::test]
async fn a_sign_in_longer_than_the_request_timeout_does_not_time_the_request_out() {
    let (world, _) = world(Hostility::ChallengesAfterOpening).await;
    let url = format!("{}/mcp", world.origin);
    let mut options = ConnectOptions::new("guarded", Arc::new(NoForms));
    options.protocol = Some(formwork_host::PROTOCOL_VERSION);
    options.request_timeout = std::time::Duration::from_millis(300);
    options.auth = Some(Arc::new(Authorizer::new(
        "guarded",
        url.clone(),
        AuthSettings::default(),
        None,
        Some(Arc::new(SlowSignIn {
            delay: std::time::Duration::from_millis(1200),
            inner: HeadlessSignIn::new("http://localhost:3000/callback"),
        })),
    )));
    let plugin = Plugin::connect(&PluginTarget::Url(url), options)
        .await
        .unwrap();
    let started = std::time::Instant::now();
    // `tools/list` meets the 401; the person takes four times the request timeout to sign in.
    assert_eq!(
        plugin.list_tools().await.unwrap(),
        Vec::<serde_json::Value>::new()
    );
    assert!(started.elapsed() >= std::time::Duration::from_millis(1200));
    plugin.close().await;
}

#[tokio::test]
async fn login_to_a_server_that_opens_without_a_token_reads_its_resource_metadata_once() {
    let (world, seen_elsewhere) = world(Hostility::ChallengesAfterOpening).await;
    let url = format!("{}/mcp", world.origin);
    let authorizer = Authorizer::new(
        "guarded",
        url,
        AuthSettings::default(),
        None,
        Some(Arc::new(HeadlessSignIn::new(
            "http://localhost:3000/callback",
        ))),
    );
    authorizer
        .sign_in(&formwork_host::sign_in_probe(), &[])
        .await
        .unwrap();
    let seen = seen_lines(&world);
    let metadata_reads = seen
        .iter()
        .filter(|line| line.contains("/.well-known/oauth-protected-resource"))
        .count();
    assert_eq!(metadata_reads, 1, "{seen:?}");
    assert!(
        seen.iter().any(|line| line.starts_with("GET /authorize?")),
        "{seen:?}"
    );
    assert_eq!(seen.last().map(String::as_str), Some("POST /token"));
    assert!(seen_elsewhere.lock().unwrap().is_empty());
}

#[tokio::test]
async fn a_malformed_token_answer_is_refused_by_its_faults_without_quoting_a_token() {
    let outcome = connect_to(Hostility::MalformedTokenAnswer).await;
    refused(
        &outcome,
        "/token answered something that is not a token response: `token_type` is missing; `expires_in` is not a whole number of seconds",
    );
    let err = outcome.result.as_ref().unwrap_err();
    assert!(!err.contains("SECRET"), "{err}");
}

#[tokio::test]
async fn an_access_token_that_would_write_a_header_is_refused_unquoted() {
    let outcome = connect_to(Hostility::InjectingTokenAnswer).await;
    refused(
        &outcome,
        "the token answer's `access_token` is not a bearer token: RFC 6750 allows only letters, digits, `-._~+/` and a trailing `=`",
    );
    let err = outcome.result.as_ref().unwrap_err();
    assert!(!err.contains("SECRET"), "{err}");
}

#[tokio::test]
async fn without_resource_metadata_an_issuer_on_another_origin_is_refused() {
    let outcome = connect_to(Hostility::LegacyForeignIssuer).await;
    refused(&outcome, "names the issuer `http://127.0.0.1:");
    let err = outcome.result.as_ref().unwrap_err();
    assert!(err.contains("which is not on the server's origin"), "{err}");
    assert!(!requested(&outcome, "POST /register"));
}

#[tokio::test]
async fn a_client_that_sends_its_secret_in_the_body_refreshes_the_same_way() {
    let (world, _) = world(Hostility::RefreshingWithSecretInBody).await;
    let plugin = connect(&world).await.unwrap();
    // Signed in, then refreshed at once (the first token expires in 5 s): both with the secret
    // in the body, the one method the server offers, and no Basic header.
    let in_body = "token auth basic=false client_secret=client-s3cret";
    assert_eq!(
        token_requests(&world),
        [
            "token grant_type=authorization_code refresh_token=",
            in_body,
            "token grant_type=refresh_token refresh_token=refresh-1",
            in_body,
        ]
    );
    plugin.list_tools().await.unwrap();
    plugin.close().await;
}

#[tokio::test]
async fn a_refresh_token_the_server_refused_is_not_sent_again() {
    let (world, _) = world(Hostility::RefusesRefresh).await;
    let plugin = connect(&world).await.unwrap();
    // The first token expires in 5 s: each request wants it refreshed first, but after the
    // server refused the refresh token once, it is forgotten and the token used while it lasts.
    for _ in 0..3 {
        plugin.list_tools().await.unwrap();
    }
    assert_eq!(
        token_requests(&world),
        [
            "token grant_type=authorization_code refresh_token=",
            "token grant_type=refresh_token refresh_token=refresh-1",
        ]
    );
    plugin.close().await;
}

/// Another process refreshed the same sign-in a moment before this one (the server rotates
/// refresh tokens, so ours is refused as spent): the entry that process wrote stays in the
/// file, refresh token and all, and this connection goes on with its tokens.
#[tokio::test]
async fn a_refresh_token_rotated_by_another_process_is_not_overwritten() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(TokenStore::new(CredentialsStoreMode::File, dir.path()));
    let (world, _) = world(Hostility::RotatedElsewhere).await;
    *world.other_process.lock().unwrap() = Some(dir.path().to_owned());
    let plugin = connect_keeping(&world, Some(Arc::clone(&store)))
        .await
        .unwrap();
    assert_eq!(token_requests(&world), SIGNED_IN);
    let kept = store
        .load("guarded", &format!("{}/mcp", world.origin))
        .unwrap()
        .unwrap();
    assert_eq!(
        (kept.access_token.as_str(), kept.refresh_token.as_deref()),
        ("token-other", Some("refresh-other"))
    );
    let before = world.seen.lock().unwrap().len();
    plugin.list_tools().await.unwrap();
    let after = world.seen.lock().unwrap()[before..].to_vec();
    assert!(
        after.iter().any(|(line, _)| line == "POST /mcp")
            && after
                .iter()
                .all(|(_, auth)| auth.as_deref() == Some("Bearer token-other")),
        "{after:?}"
    );
    assert_eq!(token_requests(&world), SIGNED_IN, "no other refresh");
    plugin.close().await;
}

/// `oauth.issuer` pins the authorization server: one with another issuer ends the sign-in
/// right after discovery, naming both, before the client's secret (or a registration, or the
/// person's browser) goes anywhere. The same issuer, written with a trailing slash, signs in.
#[tokio::test]
async fn an_authorization_server_other_than_the_pinned_issuer_gets_no_credentials() {
    for grant in [Grant::ClientCredentials, Grant::AuthorizationCode] {
        let (world, seen_elsewhere) = world(Hostility::None).await;
        let pinned = |issuer: String| AuthSettings {
            client_id: Some("formwork".to_owned()),
            client_secret: Some("client-SECRET".to_owned()),
            issuer: Some(issuer),
            grant,
            ..AuthSettings::default()
        };
        let err = connect_with(&world, None, pinned("https://auth.example.com".to_owned()))
            .await
            .err()
            .unwrap();
        assert!(
            err.contains(&format!(
                "signing in to guarded failed: its authorization server is `{}`, but `oauth.issuer` is `https://auth.example.com`; formwork signs in, and sends the client's credentials, only at the configured issuer",
                world.origin
            )),
            "{err}"
        );
        assert!(!err.contains("SECRET"), "{err}");
        let seen = seen_lines(&world);
        assert_eq!(
            seen.last().map(String::as_str),
            Some("GET /.well-known/oauth-authorization-server"),
            "{seen:?}"
        );
        assert!(seen_elsewhere.lock().unwrap().is_empty());

        let plugin = connect_with(&world, None, pinned(format!("{}/", world.origin)))
            .await
            .unwrap();
        plugin.close().await;
        assert!(
            seen_lines(&world).iter().any(|line| line == "POST /token"),
            "{:?}",
            seen_lines(&world)
        );
    }
}

/// Tokens kept from an issuer other than the pinned one are neither sent nor refreshed (that
/// would send the client's secret there): the server is signed in to again, at the pinned
/// issuer.
#[tokio::test]
async fn a_stored_sign_in_from_another_issuer_is_not_used_under_a_pin() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(TokenStore::new(CredentialsStoreMode::File, dir.path()));
    let (world, _) = world(Hostility::None).await;
    let url = format!("{}/mcp", world.origin);
    store
        .save(&StoredTokens {
            server_name: "guarded".to_owned(),
            url: url.clone(),
            issuer: "https://old-auth.example.com".to_owned(),
            token_endpoint: "https://old-auth.example.com/token".to_owned(),
            client_id: "formwork".to_owned(),
            client_secret: Some("client-SECRET".to_owned()),
            token_endpoint_auth: None,
            access_token: "old-token".to_owned(),
            refresh_token: Some("old-refresh".to_owned()),
            expires_at: Some(u64::MAX),
            scopes: Vec::new(),
            resource: Some(url.clone()),
        })
        .unwrap();
    let settings = AuthSettings {
        client_id: Some("formwork".to_owned()),
        client_secret: Some("client-SECRET".to_owned()),
        issuer: Some(world.origin.clone()),
        grant: Grant::ClientCredentials,
        ..AuthSettings::default()
    };
    let plugin = connect_with(&world, Some(Arc::clone(&store)), settings)
        .await
        .unwrap();
    plugin.close().await;
    let seen = world.seen.lock().unwrap().clone();
    assert!(
        seen.iter()
            .all(|(_, auth)| auth.as_deref() != Some("Bearer old-token")),
        "{seen:?}"
    );
    assert!(
        seen.iter().any(|(line, _)| line == "POST /token"),
        "{seen:?}"
    );
    let kept = store.load("guarded", &url).unwrap().unwrap();
    assert_eq!(kept.issuer, world.origin);
    assert_eq!(kept.access_token, "secret-token-1");
}

#[tokio::test]
async fn metadata_that_never_comes_ends_the_sign_in_after_a_while() {
    let started = std::time::Instant::now();
    let outcome = connect_to(Hostility::SilentMetadata).await;
    refused(
        &outcome,
        "/.well-known/oauth-protected-resource/mcp got no whole answer within 20 s",
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(40));
}

/// Cross-app access takes only an ID-JAG from the identity provider: an access token of the
/// provider's own is refused, it never reaches the authorization server, and the error quotes
/// no token.
#[tokio::test]
async fn an_identity_provider_answering_no_id_jag_is_refused() {
    let (world, seen_elsewhere) = world(Hostility::IdpAnswersAnAccessToken).await;
    let settings = AuthSettings {
        client_id: Some("formwork".to_owned()),
        client_secret: Some("client-SECRET".to_owned()),
        grant: Grant::CrossAppAccess,
        identity_provider: Some(IdentityProvider {
            token_endpoint: format!("{}/idp/token", world.origin),
            client_id: "formwork-idp".to_owned(),
            client_secret: None,
            id_token: "id-SECRET-token".to_owned(),
        }),
        ..AuthSettings::default()
    };
    let err = connect_with(&world, None, settings).await.err().unwrap();
    assert!(
        err.contains(&format!(
            "signing in to guarded failed: the identity provider's token endpoint {}/idp/token answered no ID-JAG (issued_token_type urn:ietf:params:oauth:token-type:access_token)",
            world.origin
        )),
        "{err}"
    );
    assert!(!err.contains("SECRET"), "{err}");
    let seen = world.seen.lock().unwrap().clone();
    assert!(
        seen.iter()
            .any(|(line, _)| line.starts_with("POST /idp/token")),
        "{seen:?}"
    );
    assert!(
        !seen.iter().any(|(line, _)| line.starts_with("POST /token")),
        "{seen:?}"
    );
    assert!(seen_elsewhere.lock().unwrap().is_empty());
}

/// A registration answer that is not JSON is refused by its status and content type, never
/// quoted: it may carry the client's secret.
#[tokio::test]
async fn a_registration_answer_that_is_not_json_is_refused_unquoted() {
    let outcome = connect_to(Hostility::RegistrationAnswersText).await;
    let err = outcome.result.clone().unwrap_err();
    assert!(
        err.contains("/register failed: it answered HTTP 201 with `text/plain`, not JSON ("),
        "{err}"
    );
    assert!(!err.contains("SECRET"), "{err}");
    assert!(!requested(&outcome, "GET /authorize"));
}
