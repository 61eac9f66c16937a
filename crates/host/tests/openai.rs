//! `features.openai_elicitation` against real plugins: what formwork declares (read back by the
//! Python SDK), and OpenAI's form shapes sent by the TypeScript SDK's raw `request` — the
//! `openai/elicitation/create` method, `mode: "openai/form"` and the empty core schema with the
//! real one in `_meta["openai/elicitation"]` — each answered with the exact `ElicitResult` on
//! the wire, and each handled exactly as before when the feature is off.
#![allow(clippy::unwrap_used)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use formwork_forms::render::RenderAnswers;
use formwork_host::{
    BoxFuture, ClientExtensions, ConnectOptions, DeclineNotice, FormPrompt, FormReply,
    FormResponder, Plugin, PluginTarget, client_capabilities,
};
use formwork_testkit::peers_dir;
use serde_json::{Value, json};

fn ts_plugin() -> PluginTarget {
    let node22 = peers_dir().join("npm/node_modules/.bin/node");
    let node = if node22.exists() {
        node22.display().to_string()
    } else {
        "node".to_owned()
    };
    PluginTarget::command(format!(
        "'{node}' '{}'",
        peers_dir().join("npm/ts_plugin.mjs").display()
    ))
}

fn py_plugin() -> PluginTarget {
    PluginTarget::command(format!(
        "'{}' '{}'",
        peers_dir().join("venv/bin/python").display(),
        peers_dir().join("npm/py_plugin.py").display()
    ))
}

/// How the test's person answers a form: with these render answers, or by declining or
/// cancelling.
#[derive(Clone)]
enum Answer {
    Render(Value),
    Decline,
    Cancel,
}

/// Answers every form as told and keeps what it saw: each form's render block, each decline's
/// reason.
#[derive(Default)]
struct Seen {
    shown: Vec<Value>,
    declined: Vec<String>,
}

struct Person {
    answer: Answer,
    seen: Arc<Mutex<Seen>>,
}

impl FormResponder for Person {
    fn respond(&self, prompt: FormPrompt) -> BoxFuture<FormReply> {
        self.seen
            .lock()
            .unwrap()
            .shown
            .push(serde_json::to_value(&prompt.request).unwrap());
        let reply = match &self.answer {
            Answer::Render(answers) => {
                let answers: RenderAnswers = serde_json::from_value(answers.clone()).unwrap();
                let form = prompt.request.form().unwrap();
                FormReply::accept(form.content_from_render_answers(&answers).unwrap())
            }
            Answer::Decline => FormReply::decline(),
            Answer::Cancel => FormReply::cancel(),
        };
        Box::pin(async move { reply })
    }

    fn declined(&self, notice: &DeclineNotice) {
        self.seen
            .lock()
            .unwrap()
            .declined
            .push(notice.reason.clone());
    }
}

async fn connect(target: PluginTarget, openai: bool, answer: Answer) -> (Plugin, Arc<Mutex<Seen>>) {
    let seen = Arc::new(Mutex::new(Seen::default()));
    let person = Person {
        answer,
        seen: Arc::clone(&seen),
    };
    let mut options = ConnectOptions::new("test", Arc::new(person));
    options.inherit_stderr = false;
    options.extensions = ClientExtensions {
        openai_elicitation: openai,
        mcp_apps: false,
    };
    let plugin = tokio::time::timeout(Duration::from_secs(60), Plugin::connect(&target, options))
        .await
        .expect("connecting took over a minute")
        .expect("connect");
    (plugin, seen)
}

/// Sends `method` with `params` from the TS plugin and returns the tool's text: `result: <the
/// result exactly as it arrived>` or `error: ...`, with what the person saw.
async fn raw(openai: bool, answer: Answer, method: &str, params: Value) -> (String, Seen) {
    let (plugin, seen) = connect(ts_plugin(), openai, answer).await;
    let result = plugin
        .call_tool(
            "raw_request",
            Some(json!({"method": method, "params": params})),
        )
        .await
        .unwrap();
    plugin.close().await;
    let text = result["content"][0]["text"].as_str().unwrap().to_owned();
    let seen = std::mem::take(&mut *seen.lock().unwrap());
    (text, seen)
}

/// The legacy-era form of the extension's spec: one CAD part, picked from two resources.
fn part_picker() -> Value {
    json!({"type": "object", "properties": {"part": {
        "type": "string", "format": "uri", "title": "Part",
        "x-openai-input": {"type": "resource", "options": [
            {"uri": "cad://parts/hex-bolt", "name": "hex-bolt", "title": "M6 hex bolt",
             "description": "A fastener for the main joint"},
            {"uri": "cad://parts/washer", "name": "washer"}
        ]}
    }}, "required": ["part"]})
}

fn pick_bolt() -> Answer {
    Answer::Render(json!({"answers": {"part": {"answers": ["M6 hex bolt"]}}}))
}

/// The question a picker of `part_picker` renders to.
fn part_question() -> Value {
    json!({
        "id": "part", "header": "Part", "question": "Part", "isOther": false, "isSecret": false,
        "options": [
            {"label": "M6 hex bolt", "description": "A fastener for the main joint",
             "value": "cad://parts/hex-bolt"},
            {"label": "washer", "description": "", "value": "cad://parts/washer"}
        ],
        "input": "resource", "multiSelect": false, "required": true, "format": "uri",
        "resource": {},
        "schema": part_picker()["properties"]["part"]
    })
}

#[test]
fn capabilities_gain_the_extension_only_with_the_feature() {
    assert_eq!(
        client_capabilities(&ClientExtensions::default()),
        json!({"elicitation": {"form": {}, "url": {}}})
    );
    let on = ClientExtensions {
        openai_elicitation: true,
        mcp_apps: false,
    };
    assert_eq!(
        client_capabilities(&on),
        json!({"elicitation": {"form": {}, "url": {}},
               "extensions": {"openai/elicitation": {"form": {}}}})
    );
}

/// What the Python SDK read from `initialize`: the extension is there only with the feature.
#[tokio::test]
async fn the_python_sdk_sees_the_extension_only_with_the_feature() {
    for (openai, expected) in [
        (false, json!({"elicitation": {"form": {}, "url": {}}})),
        (
            true,
            json!({"elicitation": {"form": {}, "url": {}},
                   "extensions": {"openai/elicitation": {"form": {}}}}),
        ),
    ] {
        let (plugin, _) = connect(py_plugin(), openai, Answer::Cancel).await;
        let result = plugin.call_tool("client_capabilities", None).await.unwrap();
        plugin.close().await;
        let text = result["content"][0]["text"].as_str().unwrap();
        let declared: Value = serde_json::from_str(text).unwrap();
        assert_eq!(declared, expected, "openai_elicitation = {openai}");
    }
}

#[tokio::test]
async fn the_legacy_method_is_not_served_without_the_feature() {
    let params =
        json!({"mode": "form", "message": "Choose a CAD part", "requestedSchema": part_picker()});
    let (text, seen) = raw(false, pick_bolt(), "openai/elicitation/create", params).await;
    assert_eq!(
        text,
        "error: McpError code=-32601 msg=MCP error -32601: formwork does not handle \
         `openai/elicitation/create`"
    );
    assert!(seen.shown.is_empty());
}

#[tokio::test]
async fn the_legacy_method_is_a_form_with_the_feature() {
    let params =
        json!({"mode": "form", "message": "Choose a CAD part", "requestedSchema": part_picker()});
    let method = "openai/elicitation/create";
    let (text, seen) = raw(true, pick_bolt(), method, params.clone()).await;
    assert_eq!(
        text,
        r#"result: {"action":"accept","content":{"part":"cad://parts/hex-bolt"}}"#
    );
    assert_eq!(
        seen.shown,
        vec![json!({"mode": "form", "render": {
            "type": "request_user_input", "message": "Choose a CAD part",
            "questions": [part_question()]
        }})]
    );
    let (text, _) = raw(true, Answer::Decline, method, params.clone()).await;
    assert_eq!(text, r#"result: {"action":"decline"}"#);
    let (text, _) = raw(true, Answer::Cancel, method, params).await;
    assert_eq!(text, r#"result: {"action":"cancel"}"#);
}

/// The 2026-07-28 shape, sent here as a push request: the core schema is empty and the form
/// is in `_meta`.
fn meta_form(schema: Option<Value>) -> Value {
    let mut extension = json!({});
    if let Some(schema) = schema {
        extension["requestedSchema"] = schema;
    }
    json!({"mode": "form", "message": "Choose a CAD part",
           "requestedSchema": {"type": "object", "properties": {}},
           "_meta": {"openai/elicitation": extension}})
}

#[tokio::test]
async fn the_meta_schema_is_shown_in_place_of_the_empty_core_schema() {
    let params = meta_form(Some(part_picker()));
    let (text, seen) = raw(true, pick_bolt(), "elicitation/create", params.clone()).await;
    assert_eq!(
        text,
        r#"result: {"action":"accept","content":{"part":"cad://parts/hex-bolt"}}"#
    );
    assert_eq!(seen.shown.len(), 1);
    assert_eq!(
        seen.shown[0]["render"]["questions"],
        json!([part_question()])
    );
    assert_eq!(seen.shown[0]["meta"], params["_meta"]);
}

/// Without the feature, the same request is what it says: an empty form, a confirmation.
#[tokio::test]
async fn without_the_feature_the_empty_core_schema_is_a_confirmation() {
    let empty = Answer::Render(json!({"answers": {}}));
    let (text, seen) = raw(
        false,
        empty,
        "elicitation/create",
        meta_form(Some(part_picker())),
    )
    .await;
    assert_eq!(text, r#"result: {"action":"accept","content":{}}"#);
    assert_eq!(seen.shown[0]["render"]["questions"], json!([]));
}

#[tokio::test]
async fn an_empty_core_schema_without_a_meta_schema_is_declined() {
    let (text, seen) = raw(true, pick_bolt(), "elicitation/create", meta_form(None)).await;
    assert_eq!(text, r#"result: {"action":"decline"}"#);
    assert!(seen.shown.is_empty());
    assert_eq!(
        seen.declined,
        vec![
            "the core `requestedSchema` is empty and `_meta[\"openai/elicitation\"]` has no \
             `requestedSchema` to show in its place"
                .to_owned()
        ]
    );
    // A meta schema the host cannot show is declined whole, naming the property.
    let directory = json!({"type": "object", "properties": {"folder": {
        "type": "string", "format": "uri",
        "x-openai-input": {"type": "resource", "options": [], "userOptions": {"kind": "directory"}}
    }}});
    let (text, seen) = raw(
        true,
        pick_bolt(),
        "elicitation/create",
        meta_form(Some(directory)),
    )
    .await;
    assert_eq!(text, r#"result: {"action":"decline"}"#);
    assert_eq!(
        seen.declined,
        vec![
            "property `folder`: asks for a directory (`userOptions.kind: \"directory\"`); \
             formwork can add files only"
                .to_owned()
        ]
    );
}

#[tokio::test]
async fn the_openai_form_mode_is_a_form_only_with_the_feature() {
    let params = json!({"mode": "openai/form", "message": "Choose a CAD part", "requestedSchema": part_picker()});
    let (text, seen) = raw(true, pick_bolt(), "elicitation/create", params.clone()).await;
    assert_eq!(
        text,
        r#"result: {"action":"accept","content":{"part":"cad://parts/hex-bolt"}}"#
    );
    assert_eq!(
        seen.shown[0]["render"]["questions"],
        json!([part_question()])
    );
    let (text, seen) = raw(false, pick_bolt(), "elicitation/create", params).await;
    assert_eq!(text, r#"result: {"action":"decline"}"#);
    assert_eq!(
        seen.declined,
        vec!["mode \"openai/form\" is not supported; only \"form\" and \"url\" are".to_owned()]
    );
}
