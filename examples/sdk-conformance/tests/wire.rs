//! `sdk-conformance` on the wire, where the conformance suite does not look: which `Host` and
//! `Origin` it serves, and the exact answers of its fixtures to calls the suite never makes
//! (unknown names, missing arguments, a client without sampling or elicitation, completion).

mod common;

use std::cell::Cell;

use common::{Server, post};
use serde_json::{Value, json};

/// DNS rebinding: a page on another site reaches the loopback server under a name of its own. The
/// server answers only when `Host` is a loopback name and `Origin`, when there is one, a loopback
/// origin; each header is checked on its own. (The suite's scenario sends both foreign at once.)
#[test]
fn only_loopback_hosts_and_origins_are_served() {
    let server = Server::start();
    let own_host = format!("127.0.0.1:{}", server.port);
    let own_origin = format!("http://localhost:{}", server.port);
    let cases = [
        ("evil.example.com", None, 403),
        ("evil.example.com", Some(own_origin.as_str()), 403),
        (own_host.as_str(), Some("http://evil.example.com"), 403),
        (
            own_host.as_str(),
            Some("http://localhost.evil.example.com"),
            403,
        ),
        (own_host.as_str(), None, 200),
        (own_host.as_str(), Some(own_origin.as_str()), 200),
        ("[::1]", Some("http://[::1]:9"), 200),
    ];
    for (host, origin, expected) in cases {
        let mut headers = vec![("Host", host)];
        headers.extend(origin.map(|origin| ("Origin", origin)));
        let response = post(server.port, &headers, &initialize(1));
        assert_eq!(
            response.status, expected,
            "Host: {host}, Origin: {origin:?}"
        );
    }
}

/// The handshake declares what the fixtures serve, on the revision the suite tests.
#[test]
fn initialize_declares_the_fixtures_capabilities() {
    let server = Server::start();
    let host = format!("127.0.0.1:{}", server.port);
    let response = post(server.port, &[("Host", &host)], &initialize(0));
    assert_eq!(
        sse_messages(&response.body),
        [json!({"jsonrpc": "2.0", "id": 0, "result": {
            "protocolVersion": "2025-11-25",
            "capabilities": {
                "completions": {},
                "logging": {},
                "prompts": {},
                "resources": {"subscribe": true},
                "tools": {},
            },
            "serverInfo": {"name": "sdk-conformance", "version": env!("CARGO_PKG_VERSION")},
        }})]
    );
}

#[test]
fn answers_outside_the_scenarios() {
    let server = Server::start();
    let session = Session::open(server.port);
    let check = |method: &str, params: Value, expected: Value| {
        assert_eq!(
            session.request(method, &params),
            expected,
            "{method} {params}"
        );
    };
    check(
        "tools/call",
        json!({"name": "no_such_tool"}),
        json!({"error": {"code": -32602, "message": "unknown tool `no_such_tool`"}}),
    );
    check(
        "tools/call",
        json!({"name": "json_schema_2020_12_tool", "arguments": {"name": "Ada"}}),
        json!({"result": {"content": [{"type": "text", "text": "The arguments were accepted."}], "isError": false}}),
    );
    // The session's client declared neither sampling nor elicitation.
    check(
        "tools/call",
        json!({"name": "test_sampling", "arguments": {"prompt": "Hi"}}),
        tool_error("The client does not support sampling."),
    );
    check(
        "tools/call",
        json!({"name": "test_elicitation", "arguments": {"message": "Hi"}}),
        tool_error("The client does not support form elicitation."),
    );
    check(
        "tools/call",
        json!({"name": "test_elicitation", "arguments": {}}),
        json!({"error": {"code": -32602, "message": "missing string argument `message`"}}),
    );
    check(
        "resources/read",
        json!({"uri": "test://template/7/data"}),
        json!({"result": {"contents": [{
            "uri": "test://template/7/data",
            "mimeType": "application/json",
            "text": r#"{"id":"7","templateTest":true,"data":"Data for ID: 7"}"#,
        }]}}),
    );
    for uri in [
        "test://nothing",
        "test://template//data",
        "test://template/1/2/data",
    ] {
        let not_found = json!({"error": {
            "code": -32002,
            "message": format!("no resource {uri}"),
            "data": {"uri": uri},
        }});
        check("resources/read", json!({ "uri": uri }), not_found.clone());
        check("resources/subscribe", json!({ "uri": uri }), not_found);
    }
    check(
        "prompts/get",
        json!({"name": "test_prompt_with_arguments", "arguments": {"arg1": "a"}}),
        json!({"error": {"code": -32602, "message": "missing string argument `arg2`"}}),
    );
    check(
        "prompts/get",
        json!({"name": "no_such_prompt"}),
        json!({"error": {"code": -32602, "message": "unknown prompt `no_such_prompt`"}}),
    );
    for (prefix, values) in [
        ("", json!(["paris", "park", "party"])),
        ("par", json!(["paris", "park", "party"])),
        ("park", json!(["park"])),
        ("test", json!([])),
    ] {
        let total = values.as_array().map_or(0, Vec::len);
        check(
            "completion/complete",
            json!({
                "ref": {"type": "ref/prompt", "name": "test_prompt_with_arguments"},
                "argument": {"name": "arg1", "value": prefix},
            }),
            json!({"result": {"completion": {"values": values, "total": total, "hasMore": false}}}),
        );
    }
    check(
        "completion/complete",
        json!({
            "ref": {"type": "ref/prompt", "name": "test_prompt_with_arguments"},
            "argument": {"name": "arg2", "value": "p"},
        }),
        json!({"result": {"completion": {"values": [], "total": 0, "hasMore": false}}}),
    );
}

/// An initialized MCP session over bare HTTP, its client declaring no capabilities.
struct Session {
    port: u16,
    id: String,
    next_request: Cell<u64>,
}

impl Session {
    fn open(port: u16) -> Self {
        let host = format!("127.0.0.1:{port}");
        let response = post(port, &[("Host", &host)], &initialize(0));
        assert_eq!(response.status, 200, "initialize: {}", response.body);
        let id = response
            .header("mcp-session-id")
            .expect("a session id")
            .to_owned();
        let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
        let headers = [("Host", host.as_str()), ("Mcp-Session-Id", &id)];
        let response = post(port, &headers, initialized);
        assert_eq!(response.status, 202, "initialized: {}", response.body);
        Self {
            port,
            id,
            next_request: Cell::new(1),
        }
    }

    /// The answer to one request, without `jsonrpc` and `id`: `{"result": …}` or `{"error": …}`.
    fn request(&self, method: &str, params: &Value) -> Value {
        let id = self.next_request.replace(self.next_request.get() + 1);
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let host = format!("127.0.0.1:{}", self.port);
        let headers = [
            ("Host", host.as_str()),
            ("Mcp-Session-Id", &self.id),
            ("Mcp-Protocol-Version", "2025-11-25"),
        ];
        let response = post(self.port, &headers, &body.to_string());
        assert_eq!(response.status, 200, "{method}: {}", response.body);
        let mut answer = sse_messages(&response.body)
            .into_iter()
            .find(|message| message.get("id") == Some(&json!(id)))
            .unwrap_or_else(|| panic!("no answer to {method} in {:?}", response.body));
        if let Some(answer) = answer.as_object_mut() {
            answer.remove("jsonrpc");
            answer.remove("id");
        }
        answer
    }
}

/// The JSON messages in the `data` lines of an SSE body (priming events have empty data).
fn sse_messages(body: &str) -> Vec<Value> {
    body.lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str(data.trim()).ok())
        .collect()
}

fn initialize(id: u64) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "wire-test", "version": "1"},
    }})
    .to_string()
}

fn tool_error(text: &str) -> Value {
    json!({"result": {"content": [{"type": "text", "text": text}], "isError": true}})
}
