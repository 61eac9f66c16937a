//! The lock on the workbench: an API request or socket upgrade without the token is refused
//! (401), and the token counts only as a bearer header or a socket subprotocol, never in the query
//! or a cookie; the page's own files load without it; with a foreign `Origin` or a rebinding
//! `Host` anything is refused (403), on plain HTTP and on the WebSocket upgrade alike; no response
//! sets a cookie or carries CORS headers.

mod common;

use common::Server;

/// What one request should get.
struct Case<'a> {
    name: &'a str,
    method: &'a str,
    target: String,
    headers: Vec<(&'a str, String)>,
    status: u16,
}

/// Sends every case to `server` and checks its status, and that no refusal or answer opens CORS
/// or sets a cookie.
async fn check(server: &Server, cases: Vec<Case<'_>>) {
    let mut failures = Vec::new();
    for case in cases {
        let response = server.raw(case.method, &case.target, &case.headers).await;
        if response.status != case.status {
            failures.push(format!(
                "{}: expected {}, got {} {:?}",
                case.name, case.status, response.status, response.body
            ));
        }
        if response
            .headers
            .iter()
            .any(|(name, _)| name.to_ascii_lowercase().starts_with("access-control-"))
        {
            failures.push(format!(
                "{}: CORS header in {:?}",
                case.name, response.headers
            ));
        }
        if let Some(cookie) = response.header("set-cookie") {
            failures.push(format!("{}: sets a cookie: {cookie}", case.name));
        }
        if response.header("content-security-policy").is_none() {
            failures.push(format!("{}: no Content-Security-Policy", case.name));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The headers of a browser's WebSocket handshake.
fn upgrade(mut headers: Vec<(&'static str, String)>) -> Vec<(&'static str, String)> {
    headers.extend([
        ("Upgrade", "websocket".to_owned()),
        ("Connection", "Upgrade".to_owned()),
        ("Sec-WebSocket-Version", "13".to_owned()),
        ("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==".to_owned()),
    ]);
    headers
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_and_socket_need_token_host_and_origin() {
    let server = Server::start("", None).await;
    let port = server.port();
    let token = &server.token;
    let host = || ("Host", server.host_header());
    let origin = || ("Origin", server.origin());
    let bearer = || ("Authorization", server.bearer());
    let protocols = || ("Sec-WebSocket-Protocol", server.socket_protocols());
    let socket = format!("/api/sessions/{}/socket", server.session);
    let rebinding = || ("Host", format!("attacker.example:{port}"));
    let foreign = || ("Origin", "https://attacker.example".to_owned());
    let case = |name, method, target: &str, headers, status| Case {
        name,
        method,
        target: target.to_owned(),
        headers,
        status,
    };
    let cases = vec![
        // The page's files hold no data: they load without the token.
        case("page without token", "GET", "/", vec![host()], 200),
        case(
            "asset without token",
            "GET",
            "/assets/app.js",
            vec![host()],
            200,
        ),
        // Anything with data needs it.
        case(
            "api without token",
            "GET",
            "/api/sessions",
            vec![host()],
            401,
        ),
        case(
            "post without token",
            "POST",
            "/api/sessions",
            vec![host(), origin(), ("Content-Length", "0".into())],
            401,
        ),
        case(
            "post to the page without token",
            "POST",
            "/",
            vec![host(), origin(), ("Content-Length", "0".into())],
            401,
        ),
        case(
            "wrong bearer",
            "GET",
            "/api/sessions",
            vec![host(), ("Authorization", "Bearer 00".into())],
            401,
        ),
        case(
            "token without Bearer",
            "GET",
            "/api/sessions",
            vec![host(), ("Authorization", token.clone())],
            401,
        ),
        case(
            "token in the query",
            "GET",
            &format!("/api/sessions?token={token}"),
            vec![host()],
            401,
        ),
        case(
            "token in a cookie",
            "GET",
            "/api/sessions",
            vec![host(), ("Cookie", format!("formwork_token_{port}={token}"))],
            401,
        ),
        case(
            "unknown path without token",
            "GET",
            "/etc/passwd",
            vec![host()],
            401,
        ),
        case(
            "socket without token",
            "GET",
            &socket,
            upgrade(vec![host(), origin()]),
            401,
        ),
        case(
            "socket with only the plain protocol",
            "GET",
            &socket,
            upgrade(vec![
                host(),
                origin(),
                ("Sec-WebSocket-Protocol", "formwork".into()),
            ]),
            401,
        ),
        case(
            "socket with a wrong token protocol",
            "GET",
            &socket,
            upgrade(vec![
                host(),
                origin(),
                (
                    "Sec-WebSocket-Protocol",
                    "formwork, formwork.token.00".into(),
                ),
            ]),
            401,
        ),
        case(
            "socket with the token in the query",
            "GET",
            &format!("{socket}?token={token}"),
            upgrade(vec![host(), origin()]),
            401,
        ),
        // The token as the page sends it: a bearer header, or a subprotocol on the socket.
        case(
            "api with bearer",
            "GET",
            "/api/sessions",
            vec![host(), bearer()],
            200,
        ),
        case(
            "localhost name",
            "GET",
            "/api/sessions",
            vec![("Host", format!("localhost:{port}")), bearer()],
            200,
        ),
        case(
            "same origin post",
            "POST",
            "/api/sessions",
            vec![host(), origin(), bearer(), ("Content-Length", "0".into())],
            201,
        ),
        case(
            "socket with the token protocol",
            "GET",
            &socket,
            upgrade(vec![host(), origin(), protocols()]),
            101,
        ),
        case(
            "socket with bearer",
            "GET",
            &socket,
            upgrade(vec![host(), origin(), bearer()]),
            101,
        ),
        // DNS rebinding: a foreign name in Host, even with the token, even for the page.
        case("rebinding page", "GET", "/", vec![rebinding()], 403),
        case(
            "rebinding api",
            "GET",
            "/api/sessions",
            vec![rebinding(), bearer()],
            403,
        ),
        case(
            "rebinding socket",
            "GET",
            &socket,
            upgrade(vec![
                rebinding(),
                ("Origin", format!("http://attacker.example:{port}")),
                protocols(),
            ]),
            403,
        ),
        case(
            "bare address",
            "GET",
            "/api/sessions",
            vec![("Host", "127.0.0.1".into()), bearer()],
            403,
        ),
        case(
            "other port",
            "GET",
            "/api/sessions",
            vec![
                ("Host", format!("127.0.0.1:{}", port.wrapping_add(1))),
                bearer(),
            ],
            403,
        ),
        case("no Host", "GET", "/api/sessions", vec![bearer()], 403),
        case("no Host for the page", "GET", "/", vec![], 403),
        // Cross-site use: a foreign Origin, even with the token.
        case(
            "foreign origin api",
            "GET",
            "/api/sessions",
            vec![host(), foreign(), bearer()],
            403,
        ),
        case(
            "foreign origin asset",
            "GET",
            "/assets/app.js",
            vec![host(), foreign()],
            403,
        ),
        case(
            "foreign origin post",
            "POST",
            "/api/sessions",
            vec![host(), foreign(), bearer(), ("Content-Length", "0".into())],
            403,
        ),
        case(
            "null origin",
            "POST",
            "/api/sessions",
            vec![
                host(),
                ("Origin", "null".into()),
                bearer(),
                ("Content-Length", "0".into()),
            ],
            403,
        ),
        case(
            "other port origin",
            "GET",
            "/api/sessions",
            vec![
                host(),
                (
                    "Origin",
                    format!("http://127.0.0.1:{}", port.wrapping_add(1)),
                ),
                bearer(),
            ],
            403,
        ),
        case(
            "preflight",
            "OPTIONS",
            "/api/sessions",
            vec![
                host(),
                foreign(),
                ("Access-Control-Request-Method", "POST".into()),
            ],
            403,
        ),
        case(
            "foreign origin socket",
            "GET",
            &socket,
            upgrade(vec![host(), foreign(), protocols()]),
            403,
        ),
        case(
            "socket without origin",
            "GET",
            &socket,
            upgrade(vec![host(), protocols()]),
            403,
        ),
        // Unknown things behind the lock.
        case(
            "unknown session socket",
            "GET",
            "/api/sessions/nope/socket",
            upgrade(vec![host(), origin(), protocols()]),
            404,
        ),
        case(
            "unknown path",
            "GET",
            "/etc/passwd",
            vec![host(), bearer()],
            404,
        ),
    ];
    check(&server, cases).await;
}

/// The socket selects `formwork` of the two offered subprotocols, so the token never comes back
/// in a response; the page's shell is the same with or without a token anywhere in the request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_token_is_never_echoed() {
    let server = Server::start("", None).await;
    let socket = format!("/api/sessions/{}/socket", server.session);
    let headers = upgrade(vec![
        ("Host", server.host_header()),
        ("Origin", server.origin()),
        ("Sec-WebSocket-Protocol", server.socket_protocols()),
    ]);
    let response = server.raw("GET", &socket, &headers).await;
    assert_eq!(response.status, 101, "{response:?}");
    assert_eq!(response.header("sec-websocket-protocol"), Some("formwork"));
    let bare = server
        .raw("GET", "/", &[("Host", server.host_header())])
        .await;
    let with_token = server.get(&format!("/?token={}", server.token)).await;
    assert_eq!((bare.status, with_token.status), (200, 200));
    assert_eq!(bare.body, with_token.body);
    for response in [&response, &bare, &with_token] {
        assert!(
            !format!("{response:?}").contains(&server.token),
            "{response:?}"
        );
    }
}

/// A chosen token that could not travel in the fragment and the subprotocol is refused at bind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_that_cannot_travel_is_refused() {
    let config =
        formwork_host::config::Config::from_toml("[mcp_servers.demo]\nenabled = false\n", None)
            .expect("config");
    let host = formwork_host::Host::new(config, formwork_host::HostOptions::default());
    for token in ["short", &format!("{}, x", "a".repeat(40))] {
        let bound = formwork_web::Workbench::bind(
            host.clone(),
            formwork_web::WebOptions {
                token: Some(token.to_owned()),
                ..formwork_web::WebOptions::default()
            },
        )
        .await;
        assert!(
            matches!(bound, Err(formwork_web::WebError::Token)),
            "{token}"
        );
    }
}
