//! The page and its files: served with the strict Content-Security-Policy, each file with its
//! type, and written so that plugin text can only ever be text (no HTML sinks, no inline
//! script or style, no eval, no timers), a plugin's `pattern` is never run in the browser's
//! backtracking `RegExp`, and the token is never put in a cookie.

mod common;

use std::path::Path;

use common::Server;

/// The page's files as they are in the source tree (what the binary embeds).
fn asset_sources() -> Vec<(String, String)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("assets");
    let mut files: Vec<(String, String)> = std::fs::read_dir(&dir)
        .expect("assets dir")
        .map(|entry| entry.expect("entry").path())
        .map(|path| {
            let name = path
                .file_name()
                .expect("name")
                .to_string_lossy()
                .into_owned();
            (name, std::fs::read_to_string(&path).expect("text"))
        })
        .collect();
    files.sort();
    files
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_file_is_served_with_its_type_and_the_policy() {
    let server = Server::start("", None).await;
    let port = server.port();
    let page = server.get("/").await;
    assert_eq!(page.status, 200);
    assert_eq!(
        page.header("content-type"),
        Some("text/html; charset=utf-8")
    );
    let csp = page.header("content-security-policy").expect("CSP");
    for directive in [
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        // Option thumbnails: https URLs and data URIs only (the host declines other sources).
        "img-src 'self' data: https:;",
        "object-src 'none'",
        "frame-ancestors 'none'",
        "base-uri 'none'",
        "require-trusted-types-for 'script'",
        &format!("connect-src 'self' ws://127.0.0.1:{port} ws://localhost:{port}"),
    ] {
        assert!(csp.contains(directive), "`{directive}` missing from {csp}");
    }
    assert!(!csp.contains("unsafe"), "{csp}");
    for (name, value) in [
        ("x-content-type-options", "nosniff"),
        ("x-frame-options", "DENY"),
        ("referrer-policy", "no-referrer"),
    ] {
        assert_eq!(page.header(name), Some(value), "{name}");
    }

    for (name, source) in asset_sources() {
        if name == "index.html" {
            assert_eq!(page.body, source, "the page is the embedded index.html");
            continue;
        }
        let response = server.get(&format!("/assets/{name}")).await;
        assert_eq!(
            response.status, 200,
            "{name} is not served: add it to src/assets.rs"
        );
        assert_eq!(response.body, source, "{name}");
        let mime = response.header("content-type").unwrap_or_default();
        let expected = match name.rsplit('.').next() {
            Some("js") => "text/javascript; charset=utf-8",
            Some("css") => "text/css; charset=utf-8",
            Some("svg") => "image/svg+xml",
            other => panic!("unexpected asset type {other:?}"),
        };
        assert_eq!(mime, expected, "{name}");
        assert!(
            response.header("content-security-policy").is_some(),
            "{name}"
        );
    }
    assert_eq!(server.get("/assets/nothing.js").await.status, 404);
    assert_eq!(server.get("/assets/..%2Fsrc%2Flib.rs").await.status, 404);
}

#[test]
fn the_page_never_turns_data_into_markup_or_code() {
    let forbidden = [
        "innerHTML",
        "outerHTML",
        "insertAdjacentHTML",
        "document.write",
        "eval(",
        "new Function",
        "setTimeout",
        "setInterval",
        "javascript:",
        // A plugin's pattern in a backtracking engine can freeze the tab; the host checks it.
        "RegExp(",
        // The token must not become a cookie, which every server on 127.0.0.1 would receive.
        "document.cookie",
    ];
    let mut found = Vec::new();
    for (name, source) in asset_sources() {
        for (number, line) in source.lines().enumerate() {
            let code = line.trim_start();
            if code.starts_with("//") || code.starts_with("/*") || code.starts_with('*') {
                continue;
            }
            for needle in forbidden {
                if line.contains(needle) {
                    found.push(format!("{name}:{}: {needle}", number + 1));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "forbidden in the page's files:\n{}",
        found.join("\n")
    );

    let index = asset_sources()
        .into_iter()
        .find(|(name, _)| name == "index.html")
        .map(|(_, text)| text)
        .expect("index.html");
    let lower = index.to_ascii_lowercase();
    assert_eq!(
        lower.matches("<script").count(),
        lower.matches("<script type=\"module\" src=").count(),
        "inline script in index.html"
    );
    assert!(!lower.contains(" style="), "inline style in index.html");
    assert!(
        !lower.contains(" onclick=") && !lower.contains(" onload="),
        "inline handler in index.html"
    );
}

#[test]
fn every_control_the_tests_drive_has_a_stable_test_id() {
    let sources: String = asset_sources().into_iter().map(|(_, text)| text).collect();
    for testid in [
        "session-list",
        "session-item",
        "new-session",
        "delete-session",
        "transcript",
        "message",
        "tool-call",
        "app-tool-call",
        "tool-asked-by",
        "use-older-protocol",
        "tool-arguments",
        "tool-result",
        "tool-error",
        "form-card",
        "card-header",
        "question",
        "question-input",
        "option",
        "option-input",
        "suggestion",
        "field-error",
        "card-error",
        "submit",
        "decline",
        "cancel",
        "open-url",
        "card-url",
        "card-domain",
        "url-warning",
        "locked",
        "outcome",
        "approval-choice",
        "message-input",
        "send-message",
        "stop-turn",
        "tool-palette",
        "palette-tool",
        "palette-form",
        "palette-json",
        "palette-call",
        "connection-status",
        "reconnect",
        "theme-toggle",
        "diagnostic",
    ] {
        let attribute = format!("data-testid=\"{testid}\"");
        let property = format!("testid: \"{testid}\"");
        assert!(
            sources.contains(&attribute) || sources.contains(&property),
            "no element has data-testid `{testid}`"
        );
    }
}
