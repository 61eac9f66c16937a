//! `formwork doctor` against a plugin on the official TypeScript SDK (tests/peers/doctor_plugin.mjs) that provokes
//! each row of the plugin-forms symptom table: the doctor must say the row applies and name its cause, and leave
//! the other rows alone. A clean plugin and config give exit 0; an unreachable plugin gives exit 2.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use common::{EverythingHttp, HttpPlugin, Output, formwork, node_plugin};
use serde_json::{Value, json};

/// The rows of the symptom table, in order, by id.
const ROWS: [&str; 6] = [
    "openai-form-unsupported",
    "declined-before-ui",
    "schema-unsupported",
    "tool-approval",
    "no-continue-after-answer",
    "push-form-on-2026",
];

/// A TOML file in the temp dir, removed on drop.
struct Toml(std::path::PathBuf);

impl Toml {
    fn new(text: &str) -> Self {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let path = std::env::temp_dir().join(format!(
            "formwork-doctor-{}-{}.toml",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::write(&path, text).expect("writing a temp config");
        Toml(path)
    }

    fn arg(&self) -> String {
        self.0.display().to_string()
    }
}

impl Drop for Toml {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn plugin(flags: &str) -> String {
    format!("{} {flags}", node_plugin("doctor_plugin.mjs"))
        .trim_end()
        .to_owned()
}

/// `formwork doctor --plugin <doctor_plugin.mjs flags> [extra...]`.
fn doctor(flags: &str, extra: &[&str]) -> Output {
    let mut args = vec!["doctor".to_owned(), "--plugin".to_owned(), plugin(flags)];
    args.extend(extra.iter().map(|arg| (*arg).to_owned()));
    formwork(&args, None)
}

/// The diagnosis of the row `id`.
fn row<'a>(report: &'a Value, id: &str) -> &'a Value {
    report["symptoms"]
        .as_array()
        .and_then(|rows| rows.iter().find(|row| row["id"] == id))
        .unwrap_or_else(|| panic!("no row {id} in {report:#}"))
}

/// Exit 1, only row `id` applies, and its cause mentions every one of `needles`.
fn assert_only(output: &Output, id: &str, needles: &[&str]) -> Value {
    output.assert_code(1);
    let report = output.json();
    let applying: Vec<&str> = ROWS
        .iter()
        .copied()
        .filter(|row_id| row(&report, row_id)["applies"] == true)
        .collect();
    assert_eq!(applying, [id], "{output}");
    let diagnosis = row(&report, id);
    let cause = diagnosis["cause"].as_str().unwrap_or_default();
    for needle in needles {
        assert!(
            cause.contains(needle),
            "the cause of {id} does not mention `{needle}`: {output}"
        );
    }
    assert!(
        diagnosis["action"]
            .as_str()
            .is_some_and(|action| !action.is_empty()),
        "{output}"
    );
    output.assert_stderr_mentions(diagnosis["symptom"].as_str().unwrap_or_default());
    report
}

/// What the plugin's SDK handed back to the tool (`result: <json>`), from the doctor's call record.
fn plugin_result(report: &Value) -> Value {
    let text = report["call"]["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    let Some(json) = text.strip_prefix("result: ") else {
        panic!("the plugin reported no `result: `: {report:#}");
    };
    serde_json::from_str(json).unwrap_or_else(|err| panic!("bad result JSON ({err}): {report:#}"))
}

// ---- clean runs ----

#[test]
fn clean_plugin_without_a_tool_reports_the_handshake_and_exits_0() {
    let output = doctor("", &[]);
    output.assert_code(0);
    let report = output.json();
    let keys: Vec<&str> = report
        .as_object()
        .expect("a JSON object")
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        [
            "connection",
            "policy",
            "tools",
            "call",
            "forms",
            "other_requests",
            "symptoms"
        ],
        "{output}"
    );
    let connection = &report["connection"];
    assert_eq!(connection["connected"], true, "{output}");
    assert!(
        connection["protocol_version"]
            .as_str()
            .is_some_and(|v| !v.is_empty()),
        "{output}"
    );
    assert_eq!(
        connection["server_info"]["name"], "doctor-plugin",
        "{output}"
    );
    assert!(
        connection["server_capabilities"]["tools"].is_object(),
        "{output}"
    );
    assert_eq!(
        connection["client_capabilities"],
        json!({"elicitation": {"form": {}, "url": {}}}),
        "{output}"
    );
    assert_eq!(connection["openai_form_extension"], false, "{output}");
    assert_eq!(
        report["policy"]["plugin_forms"]["allowed"], true,
        "{output}"
    );
    let tools = report["tools"].as_array().expect("tools");
    assert!(tools.len() >= 5, "{output}");
    assert!(
        tools.iter().all(|tool| tool["approval"]["need"] == "run"),
        "{output}"
    );
    assert_eq!(report["call"], Value::Null, "{output}");
    // One entry per row; what only a tool call can show is `null`.
    let ids: Vec<&str> = report["symptoms"]
        .as_array()
        .expect("symptoms")
        .iter()
        .filter_map(|row| row["id"].as_str())
        .collect();
    assert_eq!(ids, ROWS, "{output}");
    for id in [
        "openai-form-unsupported",
        "declined-before-ui",
        "schema-unsupported",
        "no-continue-after-answer",
    ] {
        assert_eq!(row(&report, id)["applies"], Value::Null, "{id}: {output}");
    }
    assert_eq!(row(&report, "tool-approval")["applies"], false, "{output}");
}

#[test]
fn clean_form_tool_exits_0_and_the_plugin_gets_cancel() {
    let output = doctor("", &["--tool", "choose_strategy"]);
    output.assert_code(0);
    let report = output.json();
    for id in ROWS {
        assert_eq!(row(&report, id)["applies"], false, "{id}: {output}");
    }
    let forms = report["forms"].as_array().expect("forms");
    assert_eq!(forms.len(), 1, "{output}");
    assert_eq!(forms[0]["mode"], "form", "{output}");
    assert_eq!(forms[0]["supported"], true, "{output}");
    assert_eq!(forms[0]["shown"], true, "{output}");
    assert_eq!(forms[0]["during_call"], true, "{output}");
    assert_eq!(forms[0]["policy"]["allowed"], true, "{output}");
    assert_eq!(forms[0]["answer"], json!({"action": "cancel"}), "{output}");
    assert_eq!(report["call"]["outcome"], "returned", "{output}");
    // The doctor never sends content: the plugin's SDK received a bare cancel.
    assert_eq!(
        plugin_result(&report),
        json!({"action": "cancel"}),
        "{output}"
    );
}

#[test]
fn the_declared_capabilities_are_what_the_plugin_received() {
    let output = doctor("", &["--tool", "client_capabilities"]);
    output.assert_code(0);
    let report = output.json();
    assert_eq!(
        plugin_result(&report),
        report["connection"]["client_capabilities"],
        "{output}"
    );
}

// ---- row 1: "The MCP client does not support openai/form requests." ----

#[test]
fn openai_form_required_by_the_plugin() {
    let output = doctor("", &["--tool", "ask_openai_form"]);
    let report = assert_only(
        &output,
        "openai-form-unsupported",
        &[
            "does not support openai/form",
            "never the `openai/form` extension",
        ],
    );
    assert!(
        report["forms"].as_array().is_some_and(Vec::is_empty),
        "{output}"
    );
    assert!(
        row(&report, "openai-form-unsupported")["action"]
            .as_str()
            .is_some_and(|action| action.contains("mode: \"form\"")),
        "{output}"
    );
}

#[test]
fn openai_form_request_sent_anyway() {
    let output = doctor("", &["--tool", "send_openai_form"]);
    let report = assert_only(
        &output,
        "openai-form-unsupported",
        &["`openai/form` request", "-32601"],
    );
    let other = &report["other_requests"][0];
    assert_eq!(other["method"], "openai/form", "{output}");
    assert_eq!(other["answer"]["error"]["code"], -32601, "{output}");
}

/// With `features.openai_elicitation`, the extension is declared and reported, and the older
/// `openai/form` method is still not served.
#[test]
fn openai_elicitation_declared_and_openai_form_still_refused() {
    let config = Toml::new("[features]\nopenai_elicitation = true\n");
    let output = doctor(
        "",
        &["--config", &config.arg(), "--tool", "send_openai_form"],
    );
    let report = assert_only(
        &output,
        "openai-form-unsupported",
        &[
            "`openai/form` request",
            "-32601",
            "(features.openai_elicitation = true) and serves `openai/elicitation/create`",
        ],
    );
    let connection = &report["connection"];
    assert_eq!(
        connection["client_capabilities"],
        json!({"elicitation": {"form": {}, "url": {}},
               "extensions": {"openai/elicitation": {"form": {}}}}),
        "{output}"
    );
    assert_eq!(connection["openai_form_extension"], true, "{output}");
    assert_eq!(
        report["policy"]["features"]["openai_elicitation"], true,
        "{output}"
    );
}

/// With the feature, the extension's own method is a form: recorded under `forms`, shown, and
/// answered `cancel` like any other. Without it, it is another request, answered -32601.
#[test]
fn openai_elicitation_create_is_a_form_only_with_the_feature() {
    let args = json!({"method": "openai/elicitation/create", "params": {"mode": "form", "message": "Choose",
        "requestedSchema": {"type": "object", "properties": {"part": {"type": "string", "format": "uri",
            "x-openai-input": {"type": "resource", "options": [{"uri": "cad://a", "name": "a"}]}}}}}})
    .to_string();
    let config = Toml::new("[features]\nopenai_elicitation = true\n");
    let plugin = node_plugin("ts_plugin.mjs");
    let on = formwork(
        &[
            "doctor",
            "--plugin",
            &plugin,
            "--config",
            &config.arg(),
            "--tool",
            "raw_request",
            "--args",
            &args,
        ],
        None,
    );
    let report = on.json();
    assert_eq!(report["forms"].as_array().map(Vec::len), Some(1), "{on}");
    let form = &report["forms"][0];
    assert_eq!(form["supported"], true, "{on}");
    assert_eq!(form["shown"], true, "{on}");
    assert_eq!(form["answer"], json!({"action": "cancel"}), "{on}");
    assert_eq!(report["other_requests"], json!([]), "{on}");
    let off = formwork(
        &[
            "doctor",
            "--plugin",
            &plugin,
            "--tool",
            "raw_request",
            "--args",
            &args,
        ],
        None,
    );
    let report = off.json();
    assert_eq!(report["forms"], json!([]), "{off}");
    assert_eq!(
        report["other_requests"][0]["method"], "openai/elicitation/create",
        "{off}"
    );
    assert_eq!(
        report["other_requests"][0]["answer"]["error"]["code"], -32601,
        "{off}"
    );
}

// ---- row 2: decline before any UI ----

#[test]
fn elicitations_auto_deny() {
    let config = Toml::new("elicitations_auto_deny = true\n");
    let output = doctor(
        "",
        &["--config", &config.arg(), "--tool", "choose_strategy"],
    );
    let report = assert_only(
        &output,
        "declined-before-ui",
        &["elicitations_auto_deny = true", "1 form(s)"],
    );
    assert_eq!(report["forms"][0]["policy"]["allowed"], false, "{output}");
    assert!(
        row(&report, "declined-before-ui")["action"]
            .as_str()
            .is_some_and(|action| action.contains("elicitations_auto_deny = false")),
        "{output}"
    );
}

#[test]
fn approval_policy_never() {
    let config = Toml::new("approval_policy = \"never\"\n");
    let output = doctor(
        "",
        &["--config", &config.arg(), "--tool", "choose_strategy"],
    );
    let report = assert_only(
        &output,
        "declined-before-ui",
        &["approval_policy = \"never\""],
    );
    let action = row(&report, "declined-before-ui")["action"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(action.contains("mcp_elicitations = true"), "{output}");
    assert!(
        action.contains("default_tools_approval_mode = \"approve\""),
        "{output}"
    );
}

#[test]
fn granular_policy_without_mcp_elicitations() {
    let config = Toml::new(
        "approval_policy = { granular = { sandbox_approval = false, rules = false, mcp_elicitations = false } }\n",
    );
    let output = doctor(
        "",
        &["--config", &config.arg(), "--tool", "choose_strategy"],
    );
    let report = assert_only(&output, "declined-before-ui", &["mcp_elicitations = false"]);
    assert!(
        row(&report, "declined-before-ui")["action"]
            .as_str()
            .is_some_and(|action| action.contains("mcp_elicitations = true")),
        "{output}"
    );
}

#[test]
fn the_policy_is_known_without_a_tool_call() {
    let config = Toml::new("elicitations_auto_deny = true\n");
    let output = doctor("", &["--config", &config.arg()]);
    assert_only(
        &output,
        "declined-before-ui",
        &["elicitations_auto_deny = true"],
    );
}

#[test]
fn a_form_outside_any_tool_call() {
    let output = doctor("--ask-while-listing", &[]);
    let report = assert_only(&output, "declined-before-ui", &["no tool call was running"]);
    assert_eq!(report["forms"][0]["during_call"], false, "{output}");
}

// ---- row 3: the request reached formwork, but no form can show it ----

#[test]
fn nested_object_schema() {
    let output = doctor("", &["--tool", "ask_nested"]);
    let report = assert_only(
        &output,
        "schema-unsupported",
        &["marker=request-received", "address", "nested-object"],
    );
    let form = &report["forms"][0];
    assert_eq!(form["supported"], false, "{output}");
    assert_eq!(form["shown"], false, "{output}");
    assert_eq!(form["decline"]["rule"], "nested-object", "{output}");
    assert_eq!(form["decline"]["property"], "address", "{output}");
    assert_eq!(
        plugin_result(&report),
        json!({"action": "decline"}),
        "{output}"
    );
}

// ---- row 4: every tool call asks for approval ----

#[test]
fn server_default_prompt() {
    let node = common::node_bin_dir().join("node");
    let script = common::peers_dir().join("npm/doctor_plugin.mjs");
    let config = Toml::new(&format!(
        "[mcp_servers.doctor]\ncommand = {:?}\nargs = [{:?}]\ndefault_tools_approval_mode = \"prompt\"\n",
        node.display().to_string(),
        script.display().to_string()
    ));
    let output = formwork(
        &["doctor", "--server", "doctor", "--config", &config.arg()],
        None,
    );
    let report = assert_only(
        &output,
        "tool-approval",
        &[
            "every tool of `doctor`",
            "\"prompt\"",
            "mcp_servers.doctor.default_tools_approval_mode",
        ],
    );
    assert!(
        report["tools"]
            .as_array()
            .is_some_and(|tools| tools.iter().all(|t| t["approval"]["need"] == "card")),
        "{output}"
    );
    assert!(
        row(&report, "tool-approval")["action"]
            .as_str()
            .is_some_and(|action| action.contains("default_tools_approval_mode = \"approve\"")),
        "{output}"
    );
    // The same command line given with --plugin takes that server's settings.
    let output = doctor("", &["--config", &config.arg()]);
    assert_only(&output, "tool-approval", &["every tool of `doctor`"]);
}

#[test]
fn unannotated_tools_under_auto() {
    let output = doctor("--unannotated", &[]);
    assert_only(&output, "tool-approval", &["\"auto\"", "does not say"]);
}

// ---- row 5: the plugin does not continue after the answer ----

#[test]
fn plugin_stuck_after_cancel() {
    let output = doctor("", &["--tool", "ask_then_hang", "--wait", "2"]);
    let report = assert_only(
        &output,
        "no-continue-after-answer",
        &["`cancel`", "had not returned"],
    );
    assert_eq!(report["call"]["outcome"], "stuck", "{output}");
    assert!(output.elapsed < Duration::from_secs(30), "{output}");
}

#[test]
fn plugin_gone_after_cancel() {
    let output = doctor("", &["--tool", "ask_then_exit"]);
    let report = assert_only(
        &output,
        "no-continue-after-answer",
        &["`cancel`", "went away without finishing the call"],
    );
    assert_eq!(report["call"]["outcome"], "gone", "{output}");
}

// ---- over Streamable HTTP ----

#[test]
fn streamable_http_plugin() {
    let server = EverythingHttp::start();
    let url = format!("http://127.0.0.1:{}/mcp", server.port);
    let output = formwork(
        &[
            "doctor",
            "--url",
            &url,
            "--tool",
            "trigger-elicitation-request",
        ],
        None,
    );
    output.assert_code(0);
    let report = output.json();
    assert_eq!(
        report["connection"]["target"],
        json!({ "url": url }),
        "{output}"
    );
    assert_eq!(
        report["connection"]["server_info"]["name"], "mcp-servers/everything",
        "{output}"
    );
    assert_eq!(
        report["forms"][0]["answer"],
        json!({"action": "cancel"}),
        "{output}"
    );
    assert_eq!(
        row(&report, "no-continue-after-answer")["applies"],
        false,
        "{output}"
    );
}

impl HttpPlugin {
    /// `formwork doctor --url` on this plugin calling `tool`, configured as server `http` (no
    /// approval cards) with `extra_config` keys.
    fn doctor(&self, extra_config: &str, tool: &str) -> Output {
        let config = Toml::new(&format!(
            "[mcp_servers.http]\nurl = {:?}\ndefault_tools_approval_mode = \"approve\"\n{extra_config}",
            self.url
        ));
        formwork(
            &[
                "doctor",
                "--url",
                &self.url,
                "--config",
                &config.arg(),
                "--tool",
                tool,
            ],
            None,
        )
    }
}

#[test]
fn forms_off_the_call_stream_of_a_shared_session() {
    for (flags, on_call_stream) in [(&[][..], false), (&["--related"][..], true)] {
        let plugin = HttpPlugin::start(flags);
        let output = plugin.doctor("share_session = true\n", "ask");
        let report = if on_call_stream {
            output.assert_code(0);
            output.json()
        } else {
            assert_only(
                &output,
                "declined-before-ui",
                &[
                    "`share_session = true` for `http`",
                    "1 form(s) on another stream",
                ],
            )
        };
        assert_eq!(
            report["forms"][0]["on_call_stream"], on_call_stream,
            "{output}"
        );
    }
}

/// Over HTTP a plugin that dies shows first as a broken event stream; the doctor still tells it
/// went away (it no longer answers a ping) from a call that failed.
#[test]
fn plugin_gone_after_cancel_over_http() {
    let plugin = HttpPlugin::start(&[]);
    let output = plugin.doctor("", "ask_then_exit");
    let report = assert_only(
        &output,
        "no-continue-after-answer",
        &["`cancel`", "went away without finishing the call"],
    );
    assert_eq!(report["call"]["outcome"], "gone", "{output}");
}

// ---- failure to connect ----

#[test]
fn unreachable_plugin_exits_2() {
    let output = formwork(&["doctor", "--plugin", "exit 3"], None);
    output.assert_code(2);
    let report = output.json();
    assert_eq!(report["connection"]["connected"], false, "{output}");
    assert!(report["connection"]["error"].is_string(), "{output}");
    assert_eq!(
        report["policy"]["plugin_forms"]["allowed"], true,
        "{output}"
    );
    assert_eq!(report["symptoms"], json!([]), "{output}");
}

/// The doctor says which era the connection speaks, and why.
#[test]
fn the_report_names_the_era_and_why() {
    let era = |plugin: String, extra: &[&str]| {
        let mut args = vec!["doctor".to_owned(), "--plugin".to_owned(), plugin];
        args.extend(extra.iter().map(|arg| (*arg).to_owned()));
        let output = formwork(&args, None);
        let connection = output.json()["connection"].clone();
        [
            "requested_protocol_version",
            "protocol_version",
            "era",
            "era_reason",
        ]
        .map(|key| connection[key].as_str().unwrap_or_default().to_owned())
    };
    let modern = common::python_plugin("py_mrtr_plugin.py");
    assert_eq!(
        era(modern.clone(), &[]),
        [
            "auto",
            "2026-07-28",
            "modern",
            r#"`server/discover` offered ["2026-07-28"]"#
        ]
    );
    assert_eq!(
        era(modern, &["--protocol", "2025-11-25"]),
        [
            "2025-11-25",
            "2025-11-25",
            "handshake",
            "2025-11-25 was asked for (`protocol_version` or `--protocol`)"
        ]
    );
    assert_eq!(
        era(plugin(""), &[]),
        [
            "auto",
            "2025-11-25",
            "handshake",
            "`server/discover` answered -32601 Method not found"
        ]
    );
}

/// A plugin that offers 2026-07-28 but pushes its form (the Python SDK's `ctx.elicit`): the
/// doctor names the row and both ways out.
#[test]
fn a_pushed_form_on_2026_is_diagnosed() {
    let plugin = common::python_plugin("py_plugin.py");
    let output = formwork(&["doctor", "--plugin", &plugin, "--tool", "ask"], None);
    output.assert_code(1);
    let report = output.json();
    let diagnosis = row(&report, "push-form-on-2026");
    assert_eq!(diagnosis["applies"], true, "{output}");
    assert_eq!(
        diagnosis["cause"],
        r#"the connection speaks 2026-07-28 (`server/discover` offered ["2026-07-28"]), and the call failed: tools/call failed: Cannot send 'elicitation/create': this transport context has no back-channel for server-initiated requests. (code -32600)"#
    );
    assert!(
        diagnosis["action"]
            .as_str()
            .is_some_and(|action| action.contains("protocol_version = \"2025-11-25\"")),
        "{output}"
    );
    let pinned = formwork(
        &[
            "doctor",
            "--plugin",
            &plugin,
            "--tool",
            "ask",
            "--protocol",
            "2025-11-25",
        ],
        None,
    );
    assert_eq!(
        row(&pinned.json(), "push-form-on-2026")["applies"],
        false,
        "{pinned}"
    );
}
