//! A plugin that offers 2026-07-28 but pushes its forms: the official Python `mcp` 2.3 SDK's
//! `ctx.elicit` (tests/peers/py_plugin.py) fails the call there, and fastmcp 4.1.6's
//! (tests/peers/fastmcp_plugin.py) returns an error result. The failure names the fix, and one
//! command takes it: `protocol_version = "2025-11-25"` is written into the config file and the
//! call runs again, its form now a card.
#![allow(clippy::unwrap_used)]

mod common;

use common::{Watch, accept};
use formwork_host::config::Config;
use formwork_host::{Command, Event, Host, HostOptions};
use formwork_testkit::peers_dir;
use serde_json::json;

/// A config file holding `server` as the Python plugin `script`, loaded as a `--config` file.
fn config_file(dir: &std::path::Path, server: &str, script: &str) -> (std::path::PathBuf, Config) {
    let path = dir.join("formwork.toml");
    let text = format!(
        "# the person's own comment\n[mcp_servers.{server}]\ncommand = {python:?}\nargs = [{script:?}]\n\
         default_tools_approval_mode = \"approve\"\n\n[mcp_servers.demo]\nenabled = false\n",
        python = peers_dir().join("venv/bin/python").display().to_string(),
        script = peers_dir().join("npm").join(script).display().to_string(),
    );
    std::fs::write(&path, text).unwrap();
    let config = Config::load(&path).unwrap();
    (path, config)
}

#[tokio::test]
async fn a_pushed_form_refused_on_2026_names_the_fix_and_one_command_takes_it() {
    let dir = tempfile::tempdir().unwrap();
    let (path, config) = config_file(dir.path(), "py", "py_plugin.py");
    let host = Host::new(config, HostOptions::default());
    let mut s = Watch::open(&host);
    s.send(Command::CallTool {
        server: "py".to_owned(),
        tool: "ask".to_owned(),
        arguments: None,
    });
    let (call_id, offered) = s
        .next(|event| match event {
            Event::OlderProtocolOffered {
                call_id,
                server,
                version,
            } => Some((call_id.clone(), (server.clone(), version.clone()))),
            _ => None,
        })
        .await;
    assert_eq!(offered, ("py".to_owned(), "2025-11-25".to_owned()));
    let error = s
        .next(|event| match event {
            Event::ToolCallFinished {
                call_id: id, error, ..
            } if *id == call_id => Some(error.clone()),
            _ => None,
        })
        .await;
    assert_eq!(
        error.as_deref(),
        Some(
            "tools/call failed: Cannot send 'elicitation/create': this transport context has no back-channel for server-initiated requests. (code -32600); \
             `py` pushes its forms (elicitation/create), which 2026-07-28 does not carry: speak 2025-11-25 to it \
             (protocol_version = \"2025-11-25\" in [mcp_servers.py], or --protocol 2025-11-25)"
        )
    );

    // The person's click: written into their file, and the call runs again, its form a card.
    s.send(Command::UseOlderProtocol {
        call_id: call_id.clone(),
    });
    let form_id = s.form().await;
    let written = std::fs::read_to_string(&path).unwrap();
    assert!(
        written.starts_with("# the person's own comment\n"),
        "{written}"
    );
    assert!(
        written.contains(
            "default_tools_approval_mode = \"approve\"\nprotocol_version = \"2025-11-25\"\n"
        ),
        "{written}"
    );
    s.answer(
        &form_id,
        accept(json!({"name": "Grace", "age": 85, "subscribe": true, "color": "red"})),
    );
    let result = s
        .next(|event| match event {
            Event::ToolCallFinished { result, .. } => Some(result.clone()),
            _ => None,
        })
        .await
        .unwrap();
    assert_eq!(
        result["content"][0]["text"],
        r#"action=accept data={"name":"Grace","age":85,"subscribe":true,"color":"red"}"#
    );
    // A call that was offered nothing cannot be rerun this way.
    let refused = host.command(
        &s.session,
        Command::UseOlderProtocol {
            call_id: "c-none".to_owned(),
        },
    );
    assert_eq!(refused.unwrap_err().to_string(), "`c-none` is not open");
    host.shutdown().await;
}

/// fastmcp answers the refused push with an error result rather than a JSON-RPC error: the
/// offer and the fix come all the same.
#[tokio::test]
async fn fastmcps_error_result_gets_the_offer_too() {
    let dir = tempfile::tempdir().unwrap();
    let (_, config) = config_file(dir.path(), "fast", "fastmcp_plugin.py");
    let host = Host::new(config, HostOptions::default());
    let mut s = Watch::open(&host);
    s.send(Command::CallTool {
        server: "fast".to_owned(),
        tool: "pick_color".to_owned(),
        arguments: None,
    });
    s.next(|event| matches!(event, Event::OlderProtocolOffered { .. }).then_some(()))
        .await;
    let diagnostic = s
        .next(|event| match event {
            Event::Diagnostic { code, message } => Some((code.clone(), message.clone())),
            _ => None,
        })
        .await;
    assert_eq!(
        diagnostic,
        (
            "push-form-on-2026".to_owned(),
            "`fast` pushes its forms (elicitation/create), which 2026-07-28 does not carry: speak 2025-11-25 to it \
             (protocol_version = \"2025-11-25\" in [mcp_servers.fast], or --protocol 2025-11-25)"
                .to_owned()
        )
    );
    host.shutdown().await;
}
