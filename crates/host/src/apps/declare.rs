//! What a tool declares for MCP Apps: the UI resource an invocation shows ([`declared_ui`]) and
//! who may see and call the tool ([`visibility`]).

use serde_json::Value;

/// The nested MCP Apps key: `_meta.ui.resourceUri`.
const NESTED_URI: &str = "resourceUri";
/// The flat, deprecated MCP Apps key: `_meta["ui/resourceUri"]`.
const FLAT_URI: &str = "ui/resourceUri";
/// The OpenAI Apps SDK key: `_meta["openai/outputTemplate"]`.
const OUTPUT_TEMPLATE: &str = "openai/outputTemplate";
/// The scheme MCP Apps reserves for UI resources.
const UI_SCHEME: &str = "ui://";

/// The UI resource URI an invocation declares: the tool definition's `_meta.ui.resourceUri`, else
/// its flat `_meta["ui/resourceUri"]`, else `_meta["openai/outputTemplate"]`; else the same three
/// keys in the result's `_meta`. Only non-empty strings count; the two MCP Apps keys must start
/// with `ui://` and name something after it (a value that does not is ignored, and the next key
/// is read). The OpenAI key may use any scheme, as ChatGPT widgets do; `resources/read` and the
/// MIME check of [`read_document`](super::read_document) decide whether it is an app.
///
/// `None` means an ordinary invocation: it gets no app card, whatever else its metadata holds.
pub fn declared_ui(tool: Option<&Value>, result: Option<&Value>) -> Option<String> {
    [tool, result]
        .into_iter()
        .flatten()
        .find_map(|value| declared_in(value.get("_meta")?))
}

/// The three keys of one `_meta` object, in their order of precedence.
fn declared_in(meta: &Value) -> Option<String> {
    let nested = meta.get("ui").and_then(|ui| ui.get(NESTED_URI));
    ui_uri(nested)
        .or_else(|| ui_uri(meta.get(FLAT_URI)))
        .or_else(|| non_empty(meta.get(OUTPUT_TEMPLATE)))
        .map(str::to_owned)
}

/// A `ui://` URI that names something after the scheme.
fn ui_uri(value: Option<&Value>) -> Option<&str> {
    non_empty(value).filter(|uri| uri.len() > UI_SCHEME.len() && uri.starts_with(UI_SCHEME))
}

fn non_empty(value: Option<&Value>) -> Option<&str> {
    value
        .and_then(Value::as_str)
        .filter(|text| !text.is_empty())
}

/// Who may use a tool: the model (the agent's tool list and its calls) and apps of the same
/// plugin (their `tools/call`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Visibility {
    /// Listed to the model and callable by it.
    pub model: bool,
    /// Callable by an app of the tool's own plugin.
    pub app: bool,
}

/// Who may use a tool, from its definition.
///
/// - `_meta.ui.visibility`, an array of strings: `"model"` and `"app"` count, other strings are
///   ignored (so `[]` hides the tool from both). When it is absent, both may.
/// - Present but not an array of strings: model yes, app no. Showing a tool to the model is
///   what any MCP host does without MCP Apps; calling it from an app is authority that only a
///   readable declaration grants. The OpenAI keys are not read then.
/// - Without `_meta.ui.visibility`, the OpenAI Apps SDK keys: `_meta["openai/visibility"]` equal
///   to `"private"` hides the tool from the model (any other value leaves it listed);
///   `_meta["openai/widgetAccessible"]` sets whether apps may call it when it is a bool, and
///   denies apps when it is present with another type. Absent, apps may (the MCP Apps default).
pub fn visibility(tool: &Value) -> Visibility {
    let meta = tool.get("_meta");
    if let Some(declared) = meta.and_then(|meta| meta.get("ui")?.get("visibility")) {
        return match declared.as_array().and_then(|items| strings(items)) {
            Some(names) => Visibility {
                model: names.contains(&"model"),
                app: names.contains(&"app"),
            },
            None => Visibility {
                model: true,
                app: false,
            },
        };
    }
    let openai = |key: &str| meta.and_then(|meta| meta.get(key));
    Visibility {
        model: openai("openai/visibility").and_then(Value::as_str) != Some("private"),
        app: openai("openai/widgetAccessible").is_none_or(|value| value.as_bool() == Some(true)),
    }
}

/// Whether a ChatGPT-style widget (`text/html+skybridge`) may call `tool` through
/// `window.openai.callTool`: as in the OpenAI Apps SDK, only a tool that says so, with
/// `_meta["openai/widgetAccessible"]: true` (default false), or whose `_meta.ui.visibility`
/// lists `"app"`. An MCP App calls by [`visibility`] instead, whose default is yes.
pub fn widget_may_call(tool: &Value) -> bool {
    let meta = tool.get("_meta");
    if meta
        .and_then(|meta| meta.get("ui")?.get("visibility"))
        .is_some()
    {
        return visibility(tool).app;
    }
    meta.and_then(|meta| meta.get("openai/widgetAccessible"))
        .and_then(Value::as_bool)
        .unwrap_or(false)
}

/// The items as strings, when all of them are.
fn strings(items: &[Value]) -> Option<Vec<&str>> {
    items.iter().map(Value::as_str).collect()
}

#[cfg(test)]
mod tests {
    use super::{Visibility, declared_ui, visibility, widget_may_call};
    use serde_json::{Value, json};

    fn check_declared(tool: Option<Value>, result: Option<Value>, expected: Option<&str>) {
        assert_eq!(
            declared_ui(tool.as_ref(), result.as_ref()).as_deref(),
            expected,
            "tool {tool:?}, result {result:?}"
        );
    }

    #[test]
    fn the_nested_key_wins_over_the_flat_one_and_the_flat_over_openai() {
        let all = json!({ "_meta": {
            "openai/outputTemplate": "ui://w/openai.html",
            "ui/resourceUri": "ui://w/flat.html",
            "ui": { "resourceUri": "ui://w/nested.html" },
        }});
        check_declared(Some(all), None, Some("ui://w/nested.html"));
        let flat_and_openai = json!({ "_meta": {
            "openai/outputTemplate": "ui://w/openai.html",
            "ui/resourceUri": "ui://w/flat.html",
        }});
        check_declared(Some(flat_and_openai), None, Some("ui://w/flat.html"));
        let openai = json!({ "_meta": { "openai/outputTemplate": "ui://w/openai.html" } });
        check_declared(Some(openai), None, Some("ui://w/openai.html"));
    }

    #[test]
    fn the_tool_wins_over_the_result_and_the_result_declares_alone() {
        let tool = json!({ "_meta": { "ui/resourceUri": "ui://w/tool.html" } });
        let result = json!({ "_meta": { "ui": { "resourceUri": "ui://w/result.html" } } });
        check_declared(Some(tool), Some(result.clone()), Some("ui://w/tool.html"));
        let plain_tool = json!({ "name": "t", "inputSchema": { "type": "object" } });
        check_declared(
            Some(plain_tool),
            Some(result.clone()),
            Some("ui://w/result.html"),
        );
        check_declared(None, Some(result), Some("ui://w/result.html"));
        let result_openai = json!({ "_meta": { "openai/outputTemplate": "ui://w/o.html" } });
        check_declared(None, Some(result_openai), Some("ui://w/o.html"));
    }

    #[test]
    fn mcp_keys_that_are_not_ui_uris_are_ignored() {
        let https = json!({ "_meta": {
            "ui": { "resourceUri": "https://evil.example/app.html" },
            "ui/resourceUri": "file:///etc/passwd",
        }});
        check_declared(Some(https.clone()), None, None);
        // The next key, and then the result, are still read.
        let with_openai = json!({ "_meta": {
            "ui": { "resourceUri": "https://evil.example/app.html" },
            "ui/resourceUri": "ui://w/flat.html",
        }});
        check_declared(Some(with_openai), None, Some("ui://w/flat.html"));
        let result = json!({ "_meta": { "ui/resourceUri": "ui://w/result.html" } });
        check_declared(Some(https), Some(result), Some("ui://w/result.html"));
        // The OpenAI key is taken with any scheme: the read decides.
        let openai = json!({ "_meta": { "openai/outputTemplate": "https://w.example/t.html" } });
        check_declared(Some(openai), None, Some("https://w.example/t.html"));
    }

    #[test]
    fn only_non_empty_strings_count() {
        for value in [json!(""), json!(7), json!(null), json!(["ui://w/a"])] {
            let tool = json!({ "_meta": {
                "ui": { "resourceUri": value.clone() },
                "ui/resourceUri": value.clone(),
                "openai/outputTemplate": value,
            }});
            check_declared(Some(tool), None, None);
        }
        // A bare scheme names nothing.
        let bare =
            json!({ "_meta": { "ui": { "resourceUri": "ui://" }, "ui/resourceUri": "ui://" } });
        check_declared(Some(bare), None, None);
        check_declared(Some(json!({ "_meta": "ui://w/a" })), None, None);
        check_declared(Some(json!({ "_meta": { "ui": "ui://w/a" } })), None, None);
        check_declared(None, None, None);
    }

    fn check_visibility(meta: Value, model: bool, app: bool) {
        let tool = json!({ "name": "t", "_meta": meta });
        assert_eq!(visibility(&tool), Visibility { model, app }, "{meta}");
    }

    #[test]
    fn visibility_defaults_to_both_and_reads_the_declared_list() {
        assert_eq!(
            visibility(&json!({ "name": "t" })),
            Visibility {
                model: true,
                app: true
            }
        );
        check_visibility(json!({ "ui": { "resourceUri": "ui://w/a" } }), true, true);
        check_visibility(
            json!({ "ui": { "visibility": ["model", "app"] } }),
            true,
            true,
        );
        check_visibility(json!({ "ui": { "visibility": ["app"] } }), false, true);
        check_visibility(json!({ "ui": { "visibility": ["model"] } }), true, false);
        check_visibility(json!({ "ui": { "visibility": [] } }), false, false);
        check_visibility(
            json!({ "ui": { "visibility": ["app", "other"] } }),
            false,
            true,
        );
    }

    #[test]
    fn a_malformed_visibility_shows_the_tool_to_the_model_only() {
        for malformed in [
            json!("app"),
            json!(["app", 1]),
            json!({ "app": true }),
            json!(null),
        ] {
            check_visibility(json!({ "ui": { "visibility": malformed } }), true, false);
        }
        // Present, it is not overridden by the OpenAI keys.
        check_visibility(
            json!({ "ui": { "visibility": "app" }, "openai/widgetAccessible": true }),
            true,
            false,
        );
        check_visibility(
            json!({ "ui": { "visibility": ["model"] }, "openai/widgetAccessible": true }),
            true,
            false,
        );
    }

    #[test]
    fn a_widget_calls_only_tools_that_allow_it() {
        let may = |meta: Value| widget_may_call(&json!({ "name": "t", "_meta": meta }));
        assert!(!widget_may_call(&json!({ "name": "t" })));
        assert!(!may(json!({ "openai/outputTemplate": "ui://w/a" })));
        assert!(!may(json!({ "openai/widgetAccessible": "true" })));
        assert!(!may(json!({ "openai/widgetAccessible": false })));
        assert!(may(json!({ "openai/widgetAccessible": true })));
        assert!(may(json!({ "ui": { "visibility": ["app"] } })));
        assert!(!may(
            json!({ "ui": { "visibility": ["model"] }, "openai/widgetAccessible": true })
        ));
        assert!(!may(json!({ "ui": { "visibility": "app" } })));
    }

    #[test]
    fn without_ui_visibility_the_openai_keys_decide() {
        check_visibility(json!({ "openai/visibility": "private" }), false, true);
        check_visibility(json!({ "openai/visibility": "public" }), true, true);
        check_visibility(json!({ "openai/widgetAccessible": false }), true, false);
        check_visibility(json!({ "openai/widgetAccessible": true }), true, true);
        check_visibility(json!({ "openai/widgetAccessible": "true" }), true, false);
        check_visibility(
            json!({ "openai/visibility": "private", "openai/widgetAccessible": false }),
            false,
            false,
        );
    }
}
