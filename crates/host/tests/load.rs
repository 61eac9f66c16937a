//! Load: a thousand sessions, each with a form open at the same time, against one Streamable HTTP
//! plugin written with the official TypeScript SDK (`tests/peers/http_plugin.mjs`), once with an
//! MCP session per host session and once with `share_session`, where one connection serves every
//! host session and each form is routed by the call on whose stream it arrives. Every form is answered and
//! every answer reaches the call it belongs to: nothing lost, nothing crossed.
#![allow(clippy::unwrap_used)]

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command as Process, Stdio};
use std::time::Duration;

use formwork_host::config::Config;
use formwork_host::{Command, Event, FormAnswer, Host, HostOptions};
use formwork_testkit::peers_dir;
use serde_json::json;

const SESSIONS: usize = 1000;

/// The plugin process; killed when dropped.
struct HttpPlugin {
    child: Child,
    url: String,
}

impl HttpPlugin {
    fn start(flags: &[&str]) -> HttpPlugin {
        HttpPlugin::start_on("0", flags)
    }

    /// On `port` (`0`: any free one).
    fn start_on(port: &str, flags: &[&str]) -> HttpPlugin {
        let node = peers_dir().join("npm/node_modules/.bin/node");
        let node = if node.exists() {
            node
        } else {
            PathBuf::from("node")
        };
        let mut child = Process::new(node)
            .arg(peers_dir().join("npm/http_plugin.mjs"))
            .arg(port)
            .args(flags)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line.trim().strip_prefix("listening ").unwrap().to_owned();
        HttpPlugin {
            child,
            url: format!("http://127.0.0.1:{port}/mcp"),
        }
    }
}

impl HttpPlugin {
    /// A host with this plugin as server `http` (no approval cards); `extra_config`: more keys
    /// of its table.
    fn host(&self, extra_config: &str, options: HostOptions) -> Host {
        let config = Config::from_toml(
            &format!(
                "[mcp_servers.http]\nurl = {:?}\ndefault_tools_approval_mode = \"approve\"\n{extra_config}",
                self.url
            ),
            None,
        )
        .unwrap();
        Host::new(config, options)
    }

    /// The plugin's `GET /stats`.
    fn stats(&self) -> serde_json::Value {
        use std::io::{Read, Write};
        let address = self
            .url
            .trim_start_matches("http://")
            .trim_end_matches("/mcp")
            .to_owned();
        let mut socket = std::net::TcpStream::connect(address).unwrap();
        socket
            .write_all(b"GET /stats HTTP/1.0\r\nhost: localhost\r\n\r\n")
            .unwrap();
        let mut response = String::new();
        socket.read_to_string(&mut response).unwrap();
        let body = response.split("\r\n\r\n").nth(1).unwrap();
        serde_json::from_str(body).unwrap()
    }
}

impl Drop for HttpPlugin {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_sessions_each_with_its_own_mcp_session() {
    let plugin = HttpPlugin::start(&[]);
    let host = a_thousand_forms_all_answered(&plugin, "").await;
    assert_eq!(
        clients(&host).await,
        format!("initialized: {}", SESSIONS + 1)
    );
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_sessions_sharing_one_mcp_session() {
    let plugin = HttpPlugin::start(&["--related"]);
    let host = a_thousand_forms_all_answered(&plugin, "share_session = true\n").await;
    assert_eq!(clients(&host).await, "initialized: 1");
    assert_eq!(plugin.stats()["open"], 1);
    // Shutting down ends the shared MCP session at the plugin (DELETE).
    host.shutdown().await;
    assert_eq!(plugin.stats()["open"], 0);
}

/// A plugin that sends its forms outside its calls' streams, on a shared MCP session: no call
/// can be told to own such a form, so it is declined, even with one call running, rather than
/// shown to a session it may not belong to.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forms_outside_any_call_stream_on_a_shared_session_are_declined() {
    let plugin = HttpPlugin::start(&[]);
    let host = plugin.host("share_session = true\n", HostOptions::default());
    let session = host.create_session();
    let (_, mut events) = host.subscribe(&session).unwrap();
    host.command(
        &session,
        Command::CallTool {
            server: "http".to_owned(),
            tool: "ask".to_owned(),
            arguments: Some(json!({ "n": 1 })),
        },
    )
    .unwrap();
    let result = loop {
        match &*events.recv().await.unwrap() {
            Event::FormRequested { .. } => panic!("a form with no call to own it was shown"),
            Event::ToolCallFinished { result, .. } => break result.clone().unwrap(),
            _ => {}
        }
    };
    assert_eq!(
        result["content"][0]["text"],
        r#"result: {"action":"decline"} n=1"#
    );
    host.shutdown().await;
}

/// On a shared MCP session a form pauses only the timeout of the call whose stream carried it:
/// one session's open form does not keep another session's stuck call waiting.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_shared_session_a_form_pauses_only_its_own_calls_timeout() {
    let plugin = HttpPlugin::start(&["--related"]);
    let host = plugin.host("share_session = true\n", timing_out_after(2000));
    let call = |session: &str, tool: &str, arguments: serde_json::Value| {
        call(&host, session, tool, arguments)
    };
    let asking = host.create_session();
    let (_, mut asking_events) = host.subscribe(&asking).unwrap();
    call(&asking, "ask", json!({ "n": 7 }));
    let form = loop {
        if let Event::FormRequested { form_id, .. } = &*asking_events.recv().await.unwrap() {
            break form_id.clone();
        }
    };

    let waiting = host.create_session();
    let (_, mut waiting_events) = host.subscribe(&waiting).unwrap();
    let started = std::time::Instant::now();
    call(&waiting, "wait", json!({ "ms": 20_000 }));
    let error = loop {
        if let Event::ToolCallFinished { error, .. } = &*waiting_events.recv().await.unwrap() {
            break error.clone();
        }
    };
    let waited = started.elapsed();
    assert_timed_out(error.as_deref());
    assert!(
        waited < Duration::from_secs(6),
        "timed out only after {waited:?}"
    );

    // The form's own call kept waiting for the person all that time, and ends with the answer.
    tokio::time::sleep(Duration::from_millis(500)).await;
    host.command(
        &asking,
        Command::AnswerForm {
            form_id: form,
            answer: FormAnswer::Accept {
                content: serde_json::Map::new(),
            },
        },
    )
    .unwrap();
    let result = loop {
        if let Event::ToolCallFinished { result, error, .. } = &*asking_events.recv().await.unwrap()
        {
            assert_eq!(error, &None);
            break result.clone().unwrap();
        }
    };
    assert_eq!(
        result["content"][0]["text"],
        r#"result: {"action":"accept","content":{"strategy":"safe","retries":3}} n=7"#
    );
    host.shutdown().await;
}

/// On a shared MCP session, a call past its deadline while its own form is open times out once
/// that form closes, after the rest of its time: 2 s in all, the 2.5 s of the form not counted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_shared_session_a_call_times_out_once_its_own_form_closes() {
    let plugin = HttpPlugin::start(&["--related"]);
    let host = plugin.host("share_session = true\n", timing_out_after(2000));
    let session = host.create_session();
    let (_, mut events) = host.subscribe(&session).unwrap();
    let started = std::time::Instant::now();
    call(&host, &session, "ask_then_hang", json!({}));
    let form = loop {
        if let Event::FormRequested { form_id, .. } = &*events.recv().await.unwrap() {
            break form_id.clone();
        }
    };
    tokio::time::sleep(Duration::from_millis(2500)).await;
    host.command(
        &session,
        Command::AnswerForm {
            form_id: form,
            answer: FormAnswer::Decline,
        },
    )
    .unwrap();
    let error = tokio::time::timeout(Duration::from_secs(15), async {
        loop {
            if let Event::ToolCallFinished { error, .. } = &*events.recv().await.unwrap() {
                break error.clone();
            }
        }
    })
    .await
    .expect("the call never timed out after its form closed");
    let elapsed = started.elapsed();
    assert_timed_out(error.as_deref());
    assert!(
        elapsed >= Duration::from_millis(4200) && elapsed < Duration::from_secs(8),
        "timed out after {elapsed:?}"
    );
    host.shutdown().await;
}

/// A Streamable HTTP plugin that dies while its form is open: the form ends as `cancel` and
/// the call fails, in every mode.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_that_dies_mid_form_ends_the_form_and_the_call() {
    for (flags, extra) in [
        (&[][..], ""),
        (&["--related"][..], "share_session = true\n"),
    ] {
        let mut plugin = HttpPlugin::start(flags);
        let host = plugin.host(extra, HostOptions::default());
        let session = host.create_session();
        let (_, mut events) = host.subscribe(&session).unwrap();
        call(&host, &session, "ask", json!({ "n": 3 }));
        let form = loop {
            if let Event::FormRequested { form_id, .. } = &*events.recv().await.unwrap() {
                break form_id.clone();
            }
        };
        plugin.child.kill().unwrap();
        plugin.child.wait().unwrap();
        let ended = tokio::time::timeout(Duration::from_secs(10), async {
            let mut ended = Vec::new();
            while ended.len() < 2 {
                match &*events.recv().await.unwrap() {
                    Event::FormResolved {
                        form_id, action, ..
                    } => {
                        assert_eq!(*form_id, form);
                        ended.push(format!("form {action}"));
                    }
                    Event::ToolCallFinished { error, .. } => {
                        ended.push(format!("call failed: {}", error.is_some()));
                    }
                    _ => {}
                }
            }
            ended
        })
        .await
        .unwrap_or_else(|_| panic!("the form or the call never ended ({extra:?})"));
        assert!(ended.contains(&"form cancel".to_owned()), "{ended:?}");
        assert!(ended.contains(&"call failed: true".to_owned()), "{ended:?}");
        host.shutdown().await;
    }
}

fn assert_timed_out(error: Option<&str>) {
    assert!(
        error.is_some_and(|error| error.contains("timed out")),
        "{error:?}"
    );
}

/// Host options with a request timeout of `ms` milliseconds.
fn timing_out_after(ms: u64) -> HostOptions {
    HostOptions {
        request_timeout: Duration::from_millis(ms),
        ..HostOptions::default()
    }
}

/// A plugin restarted on the same port no longer knows the MCP session (HTTP 404): the session
/// gets a new one, instead of failing every call from then on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_restarted_on_its_port_gets_a_new_mcp_session() {
    let mut plugin = HttpPlugin::start(&[]);
    let host = plugin.host("", HostOptions::default());
    let session = host.create_session();
    let (_, mut events) = host.subscribe(&session).unwrap();
    let mut clients = async || {
        call(&host, &session, "clients", json!({}));
        loop {
            if let Event::ToolCallFinished { result, error, .. } = &*events.recv().await.unwrap() {
                break match (result, error) {
                    (Some(result), _) => {
                        Ok(result["content"][0]["text"].as_str().unwrap().to_owned())
                    }
                    (None, error) => Err(error.clone().unwrap_or_default()),
                };
            }
        }
    };
    assert_eq!(clients().await, Ok("initialized: 1".to_owned()));
    let port = plugin
        .url
        .rsplit(':')
        .next()
        .unwrap()
        .trim_end_matches("/mcp")
        .to_owned();
    plugin.child.kill().unwrap();
    plugin.child.wait().unwrap();
    let _restarted = HttpPlugin::start_on(&port, &[]);
    // The first call may still go to the old session and fail with the 404 that tells it gone.
    let first = clients().await;
    if let Err(error) = &first {
        assert!(error.contains("404"), "{error}");
    }
    let answered = match first {
        Ok(text) => text,
        Err(_) => clients().await.expect("a call after the 404"),
    };
    assert_eq!(answered, "initialized: 1");
    host.shutdown().await;
}

fn call(host: &Host, session: &str, tool: &str, arguments: serde_json::Value) {
    host.command(
        session,
        Command::CallTool {
            server: "http".to_owned(),
            tool: tool.to_owned(),
            arguments: Some(arguments),
        },
    )
    .unwrap();
}

/// The `clients` tool's text, called from a new session.
async fn clients(host: &Host) -> String {
    let session = host.create_session();
    let (_, mut live) = host.subscribe(&session).unwrap();
    host.command(
        &session,
        Command::CallTool {
            server: "http".to_owned(),
            tool: "clients".to_owned(),
            arguments: None,
        },
    )
    .unwrap();
    loop {
        if let Event::ToolCallFinished { result, error, .. } = &*live.recv().await.unwrap() {
            assert_eq!(error, &None);
            return result.as_ref().unwrap()["content"][0]["text"]
                .as_str()
                .unwrap()
                .to_owned();
        }
    }
}

/// `extra_config`: more keys of the server's table.
async fn a_thousand_forms_all_answered(plugin: &HttpPlugin, extra_config: &str) -> Host {
    let host = plugin.host(extra_config, HostOptions::default());
    let (events_tx, mut events) = tokio::sync::mpsc::unbounded_channel();
    let mut sessions = Vec::new();
    for n in 0..SESSIONS {
        let session = host.create_session();
        let (_, mut live) = host.subscribe(&session).unwrap();
        let tx = events_tx.clone();
        let id = session.clone();
        tokio::spawn(async move {
            while let Ok(event) = live.recv().await {
                if tx.send((id.clone(), event)).is_err() {
                    return;
                }
            }
        });
        host.command(
            &session,
            Command::CallTool {
                server: "http".to_owned(),
                tool: "ask".to_owned(),
                arguments: Some(json!({ "n": n })),
            },
        )
        .unwrap();
        sessions.push(session);
    }

    // Wait until every session shows its form, then answer all of them.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(240);
    let mut forms: HashMap<String, String> = HashMap::new();
    while forms.len() < SESSIONS {
        let (session, event) = tokio::time::timeout_at(deadline, events.recv())
            .await
            .unwrap_or_else(|_| {
                panic!("only {} of {SESSIONS} forms were open in time", forms.len())
            })
            .unwrap();
        match &*event {
            Event::FormRequested { form_id, .. } => {
                assert!(
                    forms.insert(session, form_id.clone()).is_none(),
                    "two forms in one session"
                );
            }
            Event::ToolCallFinished {
                error: Some(error), ..
            } => panic!("a call failed: {error}"),
            _ => {}
        }
    }
    for (n, session) in sessions.iter().enumerate() {
        let strategy = if n % 2 == 0 { "fast" } else { "safe" };
        host.command(
            session,
            Command::AnswerForm {
                form_id: forms[session].clone(),
                answer: FormAnswer::Accept {
                    content: json!({ "strategy": strategy, "retries": n % 11 })
                        .as_object()
                        .unwrap()
                        .clone(),
                },
            },
        )
        .unwrap();
    }

    let mut finished: HashMap<String, String> = HashMap::new();
    while finished.len() < SESSIONS {
        let (session, event) = tokio::time::timeout_at(deadline, events.recv())
            .await
            .unwrap_or_else(|_| {
                panic!(
                    "only {} of {SESSIONS} calls finished in time",
                    finished.len()
                )
            })
            .unwrap();
        if let Event::ToolCallFinished { result, error, .. } = &*event {
            let text = match (result, error) {
                (Some(result), _) => result["content"][0]["text"].as_str().unwrap().to_owned(),
                (None, Some(error)) => panic!("a call failed: {error}"),
                (None, None) => panic!("a call ended without result or error"),
            };
            finished.insert(session, text);
        }
    }
    for (n, session) in sessions.iter().enumerate() {
        let strategy = if n % 2 == 0 { "fast" } else { "safe" };
        let expected = format!(
            r#"result: {{"action":"accept","content":{{"strategy":"{strategy}","retries":{}}}}} n={n}"#,
            n % 11
        );
        assert_eq!(finished[session], expected, "session {n}");
    }
    host
}
