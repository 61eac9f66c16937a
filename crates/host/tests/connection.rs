//! The host runtime against real plugins: timeouts that pause while a form is open, plugins that
//! die mid-form, URL completion, results sent exactly per spec, and event streams a Streamable
//! HTTP plugin ends mid-call, resumed.
//!
//! Peers come from `cargo xtask peers` (`$FORMWORK_PEERS`): the official TypeScript SDK plugins
//! (`ts_plugin.mjs`; `resumable_plugin.mjs` over Streamable HTTP),
//! `@modelcontextprotocol/server-everything`, and the hand-written hostile plugin for wire-level
//! checks no real peer can make.
#![allow(clippy::unwrap_used)]

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use formwork_host::{
    BoxFuture, ConnectOptions, ElicitationRequest, FormPrompt, FormReply, FormResponder, HostError,
    Plugin, PluginTarget,
};
use formwork_testkit::peers_dir;
use serde_json::{Value, json};

fn node() -> String {
    let node22 = peers_dir().join("npm/node_modules/.bin/node");
    if node22.exists() {
        node22.display().to_string()
    } else {
        "node".to_owned()
    }
}

fn ts_plugin() -> PluginTarget {
    PluginTarget::command(format!(
        "'{}' '{}'",
        node(),
        peers_dir().join("npm/ts_plugin.mjs").display()
    ))
}

fn hostile(flag: &str) -> PluginTarget {
    PluginTarget::command(format!(
        "'{}' '{}' {flag}",
        peers_dir().join("venv/bin/python").display(),
        peers_dir().join("npm/hostile_plugin.py").display()
    ))
}

fn everything() -> PluginTarget {
    PluginTarget::command(format!(
        "'{}' stdio",
        peers_dir()
            .join("npm/node_modules/.bin/mcp-server-everything")
            .display()
    ))
}

/// A responder driven by a closure; records every prompt it saw.
struct Scripted<F> {
    answer: F,
    seen: Arc<Mutex<Vec<String>>>,
}

impl<F> FormResponder for Scripted<F>
where
    F: Fn(FormPrompt) -> BoxFuture<FormReply> + Send + Sync + 'static,
{
    fn respond(&self, prompt: FormPrompt) -> BoxFuture<FormReply> {
        let kind = match &prompt.request {
            ElicitationRequest::Form(_) => "form",
            ElicitationRequest::Url(_) => "url",
        };
        self.seen.lock().unwrap().push(kind.to_owned());
        (self.answer)(prompt)
    }
}

async fn connect<F>(target: PluginTarget, timeout: Duration, answer: F) -> Plugin
where
    F: Fn(FormPrompt) -> BoxFuture<FormReply> + Send + Sync + 'static,
{
    let responder = Scripted {
        answer,
        seen: Arc::default(),
    };
    let mut options = ConnectOptions::new("test", Arc::new(responder));
    options.request_timeout = timeout;
    options.inherit_stderr = false;
    tokio::time::timeout(Duration::from_secs(60), Plugin::connect(&target, options))
        .await
        .expect("connecting took over a minute")
        .expect("connect")
}

fn text_of(result: &Value) -> String {
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// Answers a form `agree: true` after `delay`; cancels a URL.
fn agree_after(delay: Duration) -> impl Fn(FormPrompt) -> BoxFuture<FormReply> {
    move |prompt| {
        Box::pin(async move {
            tokio::time::sleep(delay).await;
            match prompt.request.form() {
                Some(form) => {
                    let mut content = formwork_forms::Content::new();
                    content.insert("agree".into(), json!(true));
                    FormReply::accept(form.content_from_typed(&content).unwrap())
                }
                None => FormReply::cancel(),
            }
        })
    }
}

#[tokio::test]
async fn request_timeout_does_not_count_while_a_form_is_open() {
    let plugin = connect(
        ts_plugin(),
        Duration::from_millis(800),
        agree_after(Duration::from_millis(2000)),
    )
    .await;
    let result = plugin.call_tool("ask_boolean", None).await.unwrap();
    assert_eq!(
        text_of(&result),
        r#"result: {"action":"accept","content":{"agree":true}}"#
    );
    plugin.close().await;
}

/// A call past its deadline while its form is open times out once the form closes, after the
/// rest of its time: 1.5 s in all, the 2.5 s of the form not counted.
#[tokio::test]
async fn request_timeout_resumes_when_the_form_closes() {
    let plugin = connect(
        ts_plugin(),
        Duration::from_millis(1500),
        agree_after(Duration::from_millis(2500)),
    )
    .await;
    let started = Instant::now();
    let outcome = tokio::time::timeout(
        Duration::from_secs(10),
        plugin.call_tool("ask_then_hold", None),
    )
    .await
    .expect("the call never timed out");
    let elapsed = started.elapsed();
    assert!(
        matches!(outcome, Err(HostError::Timeout { .. })),
        "{outcome:?}"
    );
    assert!(
        elapsed >= Duration::from_millis(3700) && elapsed < Duration::from_millis(6500),
        "timed out after {elapsed:?}"
    );
    let abort = plugin.call_tool("last_abort", None).await.unwrap();
    assert_eq!(text_of(&abort), r#"aborted: "timed out""#);
    plugin.close().await;
}

#[tokio::test]
async fn request_timeout_counts_without_a_form() {
    let plugin = connect(everything(), Duration::from_millis(500), |_| {
        Box::pin(async { FormReply::cancel() })
    })
    .await;
    let started = Instant::now();
    let outcome = plugin
        .call_tool(
            "trigger-long-running-operation",
            Some(json!({"duration": 3, "steps": 1})),
        )
        .await;
    assert!(
        matches!(outcome, Err(HostError::Timeout { .. })),
        "{outcome:?}"
    );
    assert!(started.elapsed() < Duration::from_millis(1500));
    plugin.close().await;
}

#[tokio::test]
async fn a_plugin_that_dies_mid_form_cancels_the_form_and_fails_the_call() {
    let cancelled = Arc::new(Mutex::new(false));
    let seen_cancel = Arc::clone(&cancelled);
    let plugin = connect(ts_plugin(), Duration::from_secs(30), move |prompt| {
        let seen_cancel = Arc::clone(&seen_cancel);
        // The host drops this future when the form is cancelled; a UI that must clean up
        // watches the token on its own.
        let token = prompt.cancelled.clone();
        tokio::spawn(async move {
            token.cancelled().await;
            *seen_cancel.lock().unwrap() = true;
        });
        Box::pin(std::future::pending())
    })
    .await;
    let started = Instant::now();
    let outcome = plugin.call_tool("crash_mid_form", None).await;
    assert!(
        matches!(outcome, Err(HostError::PluginGone { .. })),
        "{outcome:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(5));
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(
        *cancelled.lock().unwrap(),
        "the open form was not cancelled"
    );
    plugin.close().await;
}

#[tokio::test]
async fn url_mode_is_accepted_without_content_and_completion_is_reported() {
    let (done_tx, done_rx) = tokio::sync::oneshot::channel::<bool>();
    let done_tx = Arc::new(Mutex::new(Some(done_tx)));
    let plugin = connect(ts_plugin(), Duration::from_secs(30), move |prompt| {
        let done_tx = Arc::clone(&done_tx);
        Box::pin(async move {
            if let ElicitationRequest::Url(request) = &prompt.request {
                let mut completed = prompt.url_completed.expect("a completion to wait for");
                assert_eq!(request.url, "https://example.com/login");
                assert_eq!(request.domain, "example.com");
                assert_eq!(request.elicitation_id.as_deref(), Some("e-42"));
                tokio::spawn(async move {
                    let finished = completed.wait_for(|done| *done).await.is_ok();
                    if let Some(tx) = done_tx.lock().unwrap().take() {
                        let _ = tx.send(finished);
                    }
                });
            }
            FormReply::accept_url()
        })
    })
    .await;
    let result = plugin.call_tool("ask_url", None).await.unwrap();
    assert_eq!(text_of(&result), r#"result: {"action":"accept"}"#);
    let completed = tokio::time::timeout(Duration::from_secs(5), done_rx)
        .await
        .expect("no completion notification")
        .unwrap();
    assert!(completed);
    plugin.close().await;
}

/// A plugin that stops reading its stdin: once more than `MAX_QUEUED_BYTES` would wait for it,
/// its connection ends and every request fails, saying why.
#[tokio::test]
async fn a_plugin_that_stops_reading_loses_its_connection() {
    let plugin = connect(hostile("--stop-reading"), Duration::from_secs(30), |_| {
        Box::pin(async { FormReply::cancel() })
    })
    .await;
    let pad = "x".repeat(1 << 20);
    let calls = (0..40).map(|_| plugin.request("ping", Some(json!({ "pad": pad }))));
    let outcomes = tokio::time::timeout(Duration::from_secs(20), futures::future::join_all(calls))
        .await
        .expect("the requests were not ended");
    for outcome in outcomes {
        let error = outcome.unwrap_err().to_string();
        assert!(
            error.contains("does not read what formwork sends"),
            "{error}"
        );
    }
    assert!(plugin.is_closed());
}

/// A plugin's params reach the responder as the text it wrote, spaces, escapes and number
/// spellings included, not re-serialized.
#[tokio::test]
async fn params_reach_the_responder_as_written() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = Arc::clone(&seen);
    let plugin = connect(hostile(""), Duration::from_secs(30), move |prompt| {
        record
            .lock()
            .unwrap()
            .push(prompt.params.params().get().to_owned());
        Box::pin(async { FormReply::cancel() })
    })
    .await;
    let result = plugin
        .call_tool("hostile", Some(json!({ "case": 38 })))
        .await
        .unwrap();
    assert_eq!(text_of(&result), r#"result:{"action":"cancel"}"#);
    assert_eq!(
        *seen.lock().unwrap(),
        [
            r#"{ "message" : "Spaced \u0041" , "requestedSchema" : { "type" : "object" , "properties" : { "n" : { "type" : "number" , "default" : 1.50 } } } }"#
        ]
    );
}

/// A plugin that never answers `initialize` is given up after `INITIALIZE_TIMEOUT` (120 s,
/// counted on tokio's paused clock here), no sooner and no later.
#[tokio::test(start_paused = true)]
async fn a_plugin_that_never_answers_initialize_is_given_up() {
    let responder = Scripted {
        answer: |_| -> BoxFuture<FormReply> { Box::pin(async { FormReply::cancel() }) },
        seen: Arc::default(),
    };
    let mut options = ConnectOptions::new("silent", Arc::new(responder));
    options.inherit_stderr = false;
    let started = tokio::time::Instant::now();
    let error =
        match Plugin::connect(&PluginTarget::command("exec sleep 600".to_owned()), options).await {
            Ok(_) => panic!("a silent plugin connected"),
            Err(error) => error,
        };
    assert!(
        matches!(&error, HostError::Timeout { method, .. } if method == "initialize"),
        "{error}"
    );
    assert_eq!(started.elapsed(), Duration::from_secs(120));
}

/// `prompts/get` and `resources/read` on a 2026-07-28 connection have their rounds served like
/// `tools/call`: the form goes to the responder, and the retry carries the answer.
#[tokio::test]
async fn prompts_and_resources_get_their_rounds_served() {
    let target = PluginTarget::command(format!(
        "'{}' '{}'",
        peers_dir().join("venv/bin/python").display(),
        peers_dir().join("npm/py_mrtr_plugin.py").display()
    ));
    let answer_seven = |prompt: FormPrompt| -> BoxFuture<FormReply> {
        Box::pin(async move {
            let form = prompt.request.form().expect("a form");
            let mut content = formwork_forms::Content::new();
            content.insert("n".into(), json!(7));
            FormReply::accept(form.content_from_typed(&content).unwrap())
        })
    };
    let plugin = connect(target, Duration::from_secs(30), answer_seven).await;
    assert_eq!(plugin.server_info().protocol_version, "2026-07-28");
    let prompt = plugin
        .request("prompts/get", Some(json!({"name": "greeting"})))
        .await
        .unwrap();
    assert_eq!(
        prompt["messages"][0]["content"]["text"],
        "greeting: accept {'n': 7}"
    );
    let note = plugin
        .request("resources/read", Some(json!({"uri": "note://apples"})))
        .await
        .unwrap();
    assert_eq!(note["contents"][0]["text"], "note apples: accept {'n': 7}");
    plugin.close().await;
}

/// `resumable_plugin.mjs` (TS SDK, Streamable HTTP, an event store, `retry: 200`), killed on drop.
struct ResumablePlugin {
    child: std::process::Child,
    url: String,
}

impl ResumablePlugin {
    fn start() -> Self {
        use std::io::BufRead;
        let mut child = std::process::Command::new(node())
            .arg(peers_dir().join("npm/resumable_plugin.mjs"))
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("starting resumable_plugin.mjs");
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line
            .trim()
            .strip_prefix("listening ")
            .expect("`listening <port>`");
        let url = format!("http://127.0.0.1:{port}/mcp");
        ResumablePlugin { child, url }
    }
}

impl Drop for ResumablePlugin {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A plugin that ends a call's event stream before the call is over: the host resumes the
/// stream (GET with `Last-Event-ID`), and the result comes there, whether the plugin sent it
/// while the host was away (replayed) or after; a form it asks for after ending the stream
/// comes on the resumed stream too.
#[tokio::test]
async fn a_call_whose_stream_the_plugin_ends_gets_its_result_on_the_resumed_stream() {
    let server = ResumablePlugin::start();
    let plugin = connect(
        PluginTarget::Url(server.url.clone()),
        Duration::from_secs(30),
        agree_after(Duration::ZERO),
    )
    .await;
    let result = plugin.call_tool("close_then_return", None).await.unwrap();
    assert_eq!(text_of(&result), "returned after the stream closed");
    let result = plugin.call_tool("close_then_ask", None).await.unwrap();
    assert_eq!(
        text_of(&result),
        r#"answer: {"action":"accept","content":{"agree":true}}"#
    );
    plugin.close().await;
}

/// A form that arrived before the plugin ended the call's stream stays open; the person's
/// answer, given after the stream was resumed, reaches the plugin, and the call's result comes
/// on the resumed stream.
#[tokio::test]
async fn a_form_open_when_the_stream_ends_is_answered_and_the_result_comes_after() {
    let server = ResumablePlugin::start();
    let plugin = connect(
        PluginTarget::Url(server.url.clone()),
        Duration::from_secs(30),
        agree_after(Duration::from_millis(1000)),
    )
    .await;
    let result = plugin.call_tool("ask_then_close", None).await.unwrap();
    assert_eq!(
        text_of(&result),
        r#"answer: {"action":"accept","content":{"agree":true}}"#
    );
    plugin.close().await;
}
