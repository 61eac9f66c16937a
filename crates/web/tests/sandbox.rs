//! The app sandbox over the wire: a call's app document is minted behind the token, served once,
//! only to a frame, only under its own `<id>.localhost` name on the sandbox listener, with its
//! policy as the `Content-Security-Policy` header; the bridge route answers only for minted
//! documents. The plugin is the probe app of tests/peers/app_probe_plugin.mjs (official TS SDK).
#![allow(clippy::unwrap_used)]

mod common;

use std::net::SocketAddr;
use std::time::Duration;

use common::{Server, peers_dir, raw_request, raw_request_with_body, ts_server};
use formwork_host::{Command, Event};
use serde_json::{Value, json};

fn probe_server() -> String {
    let peers = peers_dir();
    format!(
        "[mcp_servers.probe]\ncommand = {:?}\nargs = [{:?}]\ndefault_tools_approval_mode = \"approve\"\n",
        peers
            .join("npm/node_modules/.bin/node")
            .display()
            .to_string(),
        peers.join("npm/app_probe_plugin.mjs").display().to_string(),
    )
}

/// Calls `tool` of `server` in the server's first session and returns the call's id once done.
async fn call(server: &Server, plugin: &str, tool: &str) -> String {
    call_in(server, &server.session, plugin, tool).await
}

async fn call_in(server: &Server, session: &str, plugin: &str, tool: &str) -> String {
    let (_, mut events) = server.host.subscribe(session).unwrap();
    server
        .host
        .command(
            session,
            Command::CallTool {
                server: plugin.to_owned(),
                tool: tool.to_owned(),
                arguments: None,
            },
        )
        .unwrap();
    tokio::time::timeout(Duration::from_secs(60), async {
        loop {
            if let Event::ToolCallFinished { call_id, .. } = &*events.recv().await.unwrap() {
                return call_id.clone();
            }
        }
    })
    .await
    .unwrap()
}

fn apps_addr(server: &Server) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], server.apps_port))
}

/// A request for the document as a browser loading the frame sends it.
async fn load_frame(server: &Server, host: &str) -> common::Response {
    load_frame_at(server, host, "/").await
}

async fn load_frame_at(server: &Server, host: &str, path: &str) -> common::Response {
    raw_request(
        apps_addr(server),
        "GET",
        path,
        &[
            ("Host", host.to_owned()),
            ("Sec-Fetch-Dest", "iframe".to_owned()),
        ],
    )
    .await
}

async fn relay(server: &Server, doc: &str, message: Value, token: bool) -> common::Response {
    let body = json!({"message": message}).to_string();
    let mut headers = vec![
        ("Host", server.host_header()),
        ("Origin", server.origin()),
        ("Content-Type", "application/json".to_owned()),
        ("Content-Length", body.len().to_string()),
    ];
    if token {
        headers.push(("Authorization", server.bearer()));
    }
    raw_request_with_body(
        server.addr,
        "POST",
        &format!("/api/apps/{doc}/rpc"),
        &headers,
        body.as_bytes(),
    )
    .await
}

#[tokio::test]
async fn an_app_document_is_served_once_to_its_frame_on_its_own_origin() {
    let server = Server::start(
        &format!("{}{}", probe_server(), ts_server("ts", "approve")),
        None,
    )
    .await;
    let call_id = call(&server, "probe", "open-probe").await;

    let minted = server
        .post(&format!("/api/sessions/{}/apps/{call_id}", server.session))
        .await;
    assert_eq!(minted.status, 200, "{minted:?}");
    let minted = minted.json();
    let doc = minted["doc"].as_str().unwrap().to_owned();
    assert_eq!(doc.len(), 32);
    assert!(doc.bytes().all(|b| b.is_ascii_hexdigit()), "{doc}");
    let origin = format!("http://{doc}.localhost:{}", server.apps_port);
    assert_ne!(server.apps_port, server.port());
    assert_eq!(
        minted,
        json!({
            "doc": doc, "src": format!("{origin}/"), "origin": origin, "allow": "",
            "prefers_border": null, "skybridge": false, "server": "probe",
            "tool": minted["tool"], "resource_uri": "ui://probe/app.html", "spare": false,
        })
    );
    assert_eq!(minted["tool"]["name"], "open-probe");
    // Another document of the same call has another origin.
    let second = server
        .post(&format!("/api/sessions/{}/apps/{call_id}", server.session))
        .await
        .json();
    assert_ne!(second["origin"], minted["origin"]);

    let host = format!("{doc}.localhost:{}", server.apps_port);
    // Not a frame (a tab, a fetch): refused, and the document is still there for its frame.
    let navigated = raw_request(apps_addr(&server), "GET", "/", &[("Host", host.clone())]).await;
    assert_eq!(navigated.status, 403);
    let fetched = raw_request(
        apps_addr(&server),
        "GET",
        "/",
        &[
            ("Host", host.clone()),
            ("Sec-Fetch-Dest", "empty".to_owned()),
        ],
    )
    .await;
    assert_eq!(fetched.status, 403);
    // Under another name, or a name never minted: nothing.
    let wrong = load_frame(&server, &format!("127.0.0.1:{}", server.apps_port)).await;
    assert_eq!(wrong.status, 404);
    let unminted = load_frame(
        &server,
        &format!("{}.localhost:{}", "0".repeat(32), server.apps_port),
    )
    .await;
    assert_eq!(unminted.status, 404);
    // Another method, also HEAD (which would spend the one load): nothing, with the locked
    // headers.
    for method in ["HEAD", "POST", "PUT", "DELETE", "OPTIONS"] {
        let refused = raw_request(
            apps_addr(&server),
            method,
            "/",
            &[
                ("Host", host.clone()),
                ("Sec-Fetch-Dest", "iframe".to_owned()),
                ("Content-Length", "0".to_owned()),
            ],
        )
        .await;
        assert_eq!(refused.status, 404, "{method}");
        assert_eq!(
            refused.header("content-security-policy"),
            Some("default-src 'none'; frame-ancestors 'none'"),
            "{method}"
        );
        assert_eq!(refused.header("x-content-type-options"), Some("nosniff"));
    }

    let served = load_frame(&server, &host).await;
    assert_eq!(served.status, 200);
    assert_eq!(
        served.header("content-type"),
        Some("text/html; charset=utf-8")
    );
    assert_eq!(
        served.header("content-security-policy"),
        Some(format!(
            "default-src 'none'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; \
             img-src 'self' data: blob:; media-src 'self' data: blob:; font-src 'self'; \
             connect-src 'self' https://declared.example; frame-src 'none'; object-src 'none'; \
             base-uri 'self'; form-action 'none'; frame-ancestors http://127.0.0.1:{port} http://localhost:{port}",
            port = server.port()
        ))
        .as_deref()
    );
    assert_eq!(served.header("x-content-type-options"), Some("nosniff"));
    assert_eq!(served.header("referrer-policy"), Some("no-referrer"));
    assert!(served.header("set-cookie").is_none());
    assert!(
        served.body.contains("ui/initialize"),
        "the probe app's document"
    );
    // Once only: a second load (a reload, a copy of the URL) gets nothing.
    assert_eq!(load_frame(&server, &host).await.status, 410);
    // The listener serves nothing else.
    let other = raw_request(
        apps_addr(&server),
        "GET",
        "/api/sessions",
        &[
            ("Host", host.clone()),
            ("Sec-Fetch-Dest", "iframe".to_owned()),
        ],
    )
    .await;
    assert_eq!(other.status, 404);

    // The workbench's own page may frame these origins and no others.
    let page = server.get("/").await;
    assert!(
        page.header("content-security-policy")
            .unwrap()
            .contains(&format!(
                "frame-src http://*.localhost:{};",
                server.apps_port
            )),
        "{:?}",
        page.header("content-security-policy")
    );

    // The bridge: behind the token, for minted documents only.
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"});
    assert_eq!(relay(&server, &doc, ping.clone(), false).await.status, 401);
    let answered = relay(&server, &doc, ping.clone(), true).await;
    assert_eq!(answered.status, 200);
    assert_eq!(
        answered.json(),
        json!({"response": {"jsonrpc": "2.0", "id": 1, "result": {}}, "open_link": null})
    );
    let released = server
        .raw(
            "DELETE",
            &format!("/api/apps/{doc}"),
            &[
                ("Host", server.host_header()),
                ("Origin", server.origin()),
                ("Authorization", server.bearer()),
            ],
        )
        .await;
    assert_eq!(released.status, 204);
    assert_eq!(relay(&server, &doc, ping, true).await.status, 404);
}

/// The page's spare: the document of a call's app minted again ahead, for no invocation, served
/// once under its own origin with the same policy; the session's next app of the same document
/// (same server, same bytes) is bound to it, once, and only in that session.
#[tokio::test]
async fn a_spare_is_the_next_apps_document_ahead_and_speaks_for_no_invocation() {
    let server = Server::start(&probe_server(), None).await;
    let first = call(&server, "probe", "open-probe").await;
    let spare_like = |session: &str, like: &str| {
        let body = json!({"like": like}).to_string();
        let target = format!("/api/sessions/{session}/app-spare");
        let server = &server;
        async move { server.post_json(&target, &body).await }
    };
    let reserved = spare_like(&server.session, &first).await;
    assert_eq!(reserved.status, 200, "{reserved:?}");
    let reserved = reserved.json();
    let doc = reserved["doc"].as_str().unwrap().to_owned();
    let origin = format!("http://{doc}.localhost:{}", server.apps_port);
    assert_eq!(
        reserved,
        json!({"doc": doc, "src": format!("{origin}/"), "origin": origin, "allow": ""})
    );
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"});
    assert_eq!(relay(&server, &doc, ping.clone(), true).await.status, 404);

    // The same page, under the same policy, as the call's own document.
    let own = server
        .post(&format!("/api/sessions/{}/apps/{first}", server.session))
        .await
        .json();
    let own_host = format!(
        "{}.localhost:{}",
        own["doc"].as_str().unwrap(),
        server.apps_port
    );
    let own = load_frame(&server, &own_host).await;
    let host = format!("{doc}.localhost:{}", server.apps_port);
    assert_eq!(load_frame_at(&server, &host, "/spare").await.status, 404);
    let spare = load_frame(&server, &host).await;
    assert_eq!(spare.status, 200);
    assert_eq!(spare.body, own.body);
    assert!(spare.body.contains("ui/initialize"), "the probe app's page");
    assert_eq!(
        spare.header("content-security-policy"),
        own.header("content-security-policy")
    );
    assert_eq!(load_frame(&server, &host).await.status, 410);
    assert_eq!(relay(&server, &doc, ping.clone(), true).await.status, 404);

    // A spare only of an app of the session.
    let ordinary = call(&server, "probe", "model-only").await;
    assert_eq!(spare_like(&server.session, &ordinary).await.status, 404);
    assert_eq!(spare_like(&server.session, "c-none").await.status, 404);
    assert_eq!(spare_like("s-none", &first).await.status, 404);

    // Another session's spare, of the same document, is not taken.
    let other = server.host.create_session();
    let theirs = call_in(&server, &other, "probe", "open-probe").await;
    let foreign = spare_like(&other, &theirs).await.json()["doc"].clone();
    let next = call(&server, "probe", "open-probe").await;
    let open = |call: &str, spare: &Value| {
        let spare = spare.as_str().unwrap();
        format!("/api/sessions/{}/apps/{call}?spare={spare}", server.session)
    };
    let minted = server.post(&open(&next, &foreign)).await.json();
    assert_ne!(minted["doc"], foreign);
    assert_eq!(minted["spare"], json!(false));

    // The next app of the same document is bound to the spare: its frame has the page already.
    let minted = server.post(&open(&next, &json!(doc))).await.json();
    assert_eq!(minted["doc"], json!(doc));
    assert_eq!(minted["spare"], json!(true));
    assert_eq!(minted["src"], json!(format!("{origin}/")));
    assert_eq!(load_frame(&server, &host).await.status, 410);
    assert_eq!(relay(&server, &doc, ping.clone(), true).await.status, 200);
    // Bound once: the next app given the same spare gets another origin.
    let again = call(&server, "probe", "open-probe").await;
    let minted = server.post(&open(&again, &json!(doc))).await.json();
    assert_ne!(minted["doc"], json!(doc));
    assert_eq!(minted["spare"], json!(false));

    // A spare of an older version of the document is not bound: the app gets its own origin.
    let older = spare_like(&server.session, &again).await.json()["doc"].clone();
    call(&server, "probe", "bump-app").await;
    let bumped = call(&server, "probe", "open-probe").await;
    let minted = server.post(&open(&bumped, &older)).await.json();
    assert_ne!(minted["doc"], older);
    assert_eq!(minted["spare"], json!(false));
    assert_eq!(
        relay(&server, older.as_str().unwrap(), ping, true)
            .await
            .status,
        404
    );
}

#[tokio::test]
async fn an_ordinary_call_has_no_app_and_a_missing_resource_says_why() {
    let server = Server::start(
        &format!("{}{}", probe_server(), ts_server("ts", "approve")),
        None,
    )
    .await;
    let ordinary = call(&server, "probe", "model-only").await;
    let none = server
        .post(&format!("/api/sessions/{}/apps/{ordinary}", server.session))
        .await;
    assert_eq!(none.status, 404);
    assert_eq!(
        none.json(),
        json!({"error": format!("the call `{ordinary}` declared no app")})
    );

    let missing = call(&server, "probe", "open-missing").await;
    let failed = server
        .post(&format!("/api/sessions/{}/apps/{missing}", server.session))
        .await;
    assert_eq!(failed.status, 502);
    assert!(
        failed.json()["error"]
            .as_str()
            .unwrap()
            .starts_with("the app's resource ui://probe/missing.html could not be read: "),
        "{failed:?}"
    );
}

#[tokio::test]
async fn a_skybridge_widget_gets_the_window_openai_adapter_first() {
    let server = Server::start(
        &format!("{}{}", probe_server(), ts_server("ts", "approve")),
        None,
    )
    .await;
    let call_id = call(&server, "probe", "widget").await;
    let minted = server
        .post(&format!("/api/sessions/{}/apps/{call_id}", server.session))
        .await
        .json();
    assert_eq!(minted["skybridge"], true);
    let host = format!(
        "{}.localhost:{}",
        minted["doc"].as_str().unwrap(),
        server.apps_port
    );
    let served = load_frame(&server, &host).await;
    assert_eq!(served.status, 200);
    let head = served.body.find("<head>").expect("a head") + "<head>".len();
    assert!(
        served.body[head..].starts_with("<script>// formwork's window.openai"),
        "{}",
        &served.body[..head + 60]
    );
    assert!(served.body.matches("</script>").count() >= 2);
}
