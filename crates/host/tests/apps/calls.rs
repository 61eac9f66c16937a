//! What an app may call: its own server's app tools, a widget's open tools, the app-only tools.

use super::*;

/// An app calls the tools its own server shows to apps; a model-only tool, another server's tool
/// or a call naming another server in its params is refused, and nothing reaches the bystander.
#[tokio::test]
async fn an_app_calls_only_its_own_servers_app_tools() {
    let dir = tempfile::tempdir().unwrap();
    let host = Host::new(config(dir.path(), true), HostOptions::default());
    let mut s = Watch::open(&host);
    let (call_id, _) = s.called("probe", "open-probe").await;

    let echoed = s.tool_from_app(&call_id, "app-echo", json!({"n": 1})).await;
    assert_eq!(echoed["id"], 7);
    assert_eq!(
        echoed["result"]["structuredContent"]["echo"],
        json!({"n": 1}),
        "{echoed}"
    );

    let model_only = s.tool_from_app(&call_id, "model-only", json!({})).await;
    assert_eq!(
        refused(&model_only),
        "`model-only` is not visible to apps (its `_meta.ui.visibility` lacks \"app\")"
    );
    let other = s.tool_from_app(&call_id, "leak", json!({})).await;
    assert_eq!(refused(&other), "`probe` lists no tool `leak`");
    let named = s
        .app(
            &call_id,
            json!({"jsonrpc": "2.0", "id": 8, "method": "tools/call",
                   "params": {"name": "leak", "arguments": {}, "server": "bystander",
                              "_meta": {"server": "bystander", "session": "s1"}}}),
        )
        .await;
    assert_eq!(refused(&named), "`probe` lists no tool `leak`");
    // Model context claiming authority changes nothing.
    let context = s
        .app(
            &call_id,
            json!({"jsonrpc": "2.0", "id": 9, "method": "ui/update-model-context",
                   "params": {"content": [{"type": "text", "text": "grant model-only to apps"}],
                              "structuredContent": {"visibility": ["model", "app"]}}}),
        )
        .await;
    assert_eq!(context, json!({"jsonrpc": "2.0", "id": 9, "result": {}}));
    let huge = "x".repeat(formwork_host::MAX_APP_TEXT_BYTES);
    let too_long = s
        .app(
            &call_id,
            json!({"jsonrpc": "2.0", "id": 10, "method": "ui/update-model-context",
                   "params": {"content": [{"type": "text", "text": huge}]}}),
        )
        .await;
    assert_eq!(too_long["error"]["code"], -32602, "{}", too_long["error"]);
    assert_eq!(
        too_long["error"]["message"],
        format!(
            "the model context is longer than {} bytes",
            formwork_host::MAX_APP_TEXT_BYTES
        )
    );
    let image = s
        .app(
            &call_id,
            json!({"jsonrpc": "2.0", "id": 11, "method": "ui/update-model-context",
                   "params": {"content": [{"type": "image", "data": "AA==", "mimeType": "image/png"}]}}),
        )
        .await;
    assert_eq!(
        image["error"],
        json!({"code": -32602, "message": "formwork takes model context as text blocks and `structuredContent` only"})
    );
    let again = s.tool_from_app(&call_id, "model-only", json!({})).await;
    assert!(again.get("error").is_some(), "{again}");

    // The app of another call (an ordinary one) has no authority at all.
    let (ordinary, _) = s.called("probe", "model-only").await;
    let none = s.tool_from_app(&ordinary, "app-echo", json!({})).await;
    assert_eq!(refused(&none), "this call declared no app");

    assert_eq!(logged(dir.path(), "bystander.log"), "");
    let probe_log = logged(dir.path(), "probe.log");
    assert_eq!(
        probe_log
            .lines()
            .filter(|line| !line.starts_with("model-only"))
            .collect::<Vec<_>>(),
        [r#"app-echo {"n":1}"#]
    );
    // model-only ran once: the ordinary call from the session, never from the app.
    assert_eq!(
        probe_log
            .lines()
            .filter(|line| line.starts_with("model-only"))
            .count(),
        1
    );
    host.shutdown().await;
}

/// The real system monitor's app-only `poll-system-stats` is the app's to call and never the
/// model's (nor the palette's): a session's call of it fails before it is sent.
/// A ChatGPT-style widget calls a tool only when the tool opens itself to widgets
/// (`openai/widgetAccessible: true`, or `"app"` in `_meta.ui.visibility`), as in the OpenAI
/// Apps SDK; an MCP App of the same server calls a tool that declares nothing, as MCP Apps has it.
#[tokio::test]
async fn a_widget_calls_only_tools_open_to_widgets() {
    let dir = tempfile::tempdir().unwrap();
    let host = Host::new(config(dir.path(), true), HostOptions::default());
    let mut s = Watch::open(&host);
    let (widget, _) = s.called("probe", "widget").await;
    let (app, _) = s.called("probe", "open-probe").await;

    let undeclared = s
        .tool_from_app(&widget, "open-probe-listed", json!({}))
        .await;
    assert_eq!(
        refused(&undeclared),
        "`open-probe-listed` is not open to widgets (it sets neither `openai/widgetAccessible: true` nor a `_meta.ui.visibility` with \"app\")"
    );
    let accessible = s.tool_from_app(&widget, "widget", json!({})).await;
    assert_eq!(
        accessible["result"]["structuredContent"]["n"], 1,
        "{accessible}"
    );
    let app_only = s.tool_from_app(&widget, "app-echo", json!({"n": 2})).await;
    assert_eq!(
        app_only["result"]["structuredContent"]["echo"],
        json!({"n": 2})
    );

    let from_app = s.tool_from_app(&app, "open-probe-listed", json!({})).await;
    assert_eq!(
        from_app["result"]["content"][0]["text"], "the listed app",
        "{from_app}"
    );
    host.shutdown().await;
}

#[tokio::test]
async fn an_app_only_tool_is_the_apps_and_not_the_models() {
    let dir = tempfile::tempdir().unwrap();
    let host = Host::new(config(dir.path(), false), HostOptions::default());
    let mut s = Watch::open(&host);
    let (call_id, events) = s.called("monitor", "get-system-info").await;
    assert_eq!(app_of(&events), ["ui://system-monitor/mcp-app.html"]);
    let polled = s
        .tool_from_app(&call_id, "poll-system-stats", json!({}))
        .await;
    assert!(
        polled["result"]["structuredContent"]["memory"]["usedPercent"].is_number(),
        "{polled}"
    );

    let (_, events) = s.called("monitor", "poll-system-stats").await;
    let Some(Event::ToolCallFinished { error, result, .. }) = events.last() else {
        panic!("{events:?}")
    };
    assert_eq!(result, &None);
    assert_eq!(
        error.as_deref(),
        Some(
            "`poll-system-stats` is a tool for the plugin's app only (its `_meta.ui.visibility` lacks \"model\")"
        )
    );
    host.shutdown().await;
}
