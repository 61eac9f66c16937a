//! The lock on the workbench: without the token a request is refused (401); with a foreign
//! `Origin` or a rebinding `Host` it is refused (403), on plain HTTP and on the WebSocket
//! upgrade alike; the token in the URL sets an HttpOnly, SameSite=Strict cookie; no response
//! carries CORS headers.

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

/// Sends every case to `server` and checks its status, and that no refusal or answer opens CORS.
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
    let host = || ("Host", server.host_header());
    let origin = || ("Origin", server.origin());
    let cookie = || ("Cookie", server.cookie());
    let token = &server.token;
    let socket = format!("/api/sessions/{}/socket", server.session);
    let socket_with_token = format!("{socket}?token={token}");
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
        // No token: refused everywhere.
        case("page without token", "GET", "/", vec![host()], 401),
        case(
            "api without token",
            "GET",
            "/api/sessions",
            vec![host()],
            401,
        ),
        case(
            "asset without token",
            "GET",
            "/assets/app.js",
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
            "wrong token",
            "GET",
            "/api/sessions?token=00",
            vec![host()],
            401,
        ),
        case(
            "wrong cookie",
            "GET",
            "/api/sessions",
            vec![host(), ("Cookie", format!("formwork_token_{port}=00"))],
            401,
        ),
        case(
            "another port's cookie",
            "GET",
            "/api/sessions",
            vec![
                host(),
                (
                    "Cookie",
                    format!("formwork_token_{}={token}", port.wrapping_add(1)),
                ),
            ],
            401,
        ),
        case(
            "socket without token",
            "GET",
            &socket,
            upgrade(vec![host(), origin()]),
            401,
        ),
        // The token, by query, cookie or bearer header.
        case(
            "api with token",
            "GET",
            &format!("/api/sessions?token={token}"),
            vec![host()],
            200,
        ),
        case(
            "api with cookie",
            "GET",
            "/api/sessions",
            vec![host(), cookie()],
            200,
        ),
        case(
            "api with bearer",
            "GET",
            "/api/sessions",
            vec![host(), ("Authorization", format!("Bearer {token}"))],
            200,
        ),
        case(
            "localhost name",
            "GET",
            "/api/sessions",
            vec![("Host", format!("localhost:{port}")), cookie()],
            200,
        ),
        case(
            "same origin post",
            "POST",
            "/api/sessions",
            vec![host(), origin(), cookie(), ("Content-Length", "0".into())],
            201,
        ),
        case(
            "socket with cookie",
            "GET",
            &socket,
            upgrade(vec![host(), origin(), cookie()]),
            101,
        ),
        case(
            "socket with token",
            "GET",
            &socket_with_token,
            upgrade(vec![host(), origin()]),
            101,
        ),
        // DNS rebinding: a foreign name in Host, even with the token.
        case(
            "rebinding page",
            "GET",
            &format!("/?token={token}"),
            vec![rebinding()],
            403,
        ),
        case(
            "rebinding api",
            "GET",
            "/api/sessions",
            vec![rebinding(), cookie()],
            403,
        ),
        case(
            "rebinding socket",
            "GET",
            &socket,
            upgrade(vec![
                rebinding(),
                ("Origin", format!("http://attacker.example:{port}")),
                cookie(),
            ]),
            403,
        ),
        case(
            "bare address",
            "GET",
            "/api/sessions",
            vec![("Host", "127.0.0.1".into()), cookie()],
            403,
        ),
        case(
            "other port",
            "GET",
            "/api/sessions",
            vec![
                ("Host", format!("127.0.0.1:{}", port.wrapping_add(1))),
                cookie(),
            ],
            403,
        ),
        case("no Host", "GET", "/api/sessions", vec![cookie()], 403),
        // Cross-site use: a foreign Origin, even with the token.
        case(
            "foreign origin api",
            "GET",
            "/api/sessions",
            vec![host(), foreign(), cookie()],
            403,
        ),
        case(
            "foreign origin post",
            "POST",
            "/api/sessions",
            vec![host(), foreign(), cookie(), ("Content-Length", "0".into())],
            403,
        ),
        case(
            "null origin",
            "POST",
            "/api/sessions",
            vec![
                host(),
                ("Origin", "null".into()),
                cookie(),
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
                cookie(),
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
            upgrade(vec![host(), foreign(), cookie()]),
            403,
        ),
        case(
            "socket without origin",
            "GET",
            &socket,
            upgrade(vec![host(), cookie()]),
            403,
        ),
        // Unknown things behind the lock.
        case(
            "unknown session socket",
            "GET",
            "/api/sessions/nope/socket",
            upgrade(vec![host(), origin(), cookie()]),
            404,
        ),
        case(
            "unknown path",
            "GET",
            "/etc/passwd",
            vec![host(), cookie()],
            404,
        ),
    ];
    check(&server, cases).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_in_the_url_sets_a_strict_httponly_cookie_and_leaves_the_address_bar() {
    let server = Server::start("", None).await;
    let response = server
        .raw(
            "GET",
            &format!("/?token={}", server.token),
            &[("Host", server.host_header())],
        )
        .await;
    assert_eq!(response.status, 303, "{response:?}");
    assert_eq!(response.header("location"), Some("/"));
    let cookie = response.header("set-cookie").expect("a cookie");
    let parts: Vec<&str> = cookie.split(';').map(str::trim).collect();
    assert_eq!(parts[0], server.cookie(), "{cookie}");
    for attribute in ["HttpOnly", "SameSite=Strict", "Path=/"] {
        assert!(
            parts.contains(&attribute),
            "{attribute} missing in {cookie}"
        );
    }
    // The cookie alone opens the page.
    let page = server.get("/").await;
    assert_eq!(page.status, 200);
    assert!(page.body.contains("formwork"), "{page:?}");
}
