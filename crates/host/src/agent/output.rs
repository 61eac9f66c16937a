//! A tool's result as the model reads it: its structured content when it has some (as JSON),
//! else its content blocks as text; bounded, so one large result cannot fill the context.

use serde_json::Value;

/// What the model is told a call gave.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ModelOutput {
    pub text: String,
    /// `(bytes kept, bytes in all)` when the output was cut.
    pub cut: Option<(usize, usize)>,
}

/// The output of a call that ended with `result` (the plugin's `CallToolResult`) or `error`
/// (why there is none), at most `max_bytes` of it.
pub(crate) fn model_output(
    result: Option<&Value>,
    error: Option<&str>,
    max_bytes: usize,
) -> ModelOutput {
    let text = match result {
        Some(result) => result_text(result),
        None => format!(
            "The call failed: {}",
            error.unwrap_or("it ended without a result")
        ),
    };
    bounded(text, max_bytes)
}

fn result_text(result: &Value) -> String {
    let body = match result
        .get("structuredContent")
        .filter(|value| !value.is_null())
    {
        Some(structured) => structured.to_string(),
        None => result
            .get("content")
            .and_then(Value::as_array)
            .map(|blocks| blocks.iter().map(block_text).collect::<Vec<_>>().join("\n"))
            .unwrap_or_default(),
    };
    if result.get("isError").and_then(Value::as_bool) == Some(true) {
        format!("The tool reported an error:\n{body}")
    } else {
        body
    }
}

fn block_text(block: &Value) -> String {
    let field = |key: &str| block.get(key).and_then(Value::as_str).unwrap_or_default();
    match field("type") {
        "text" => field("text").to_owned(),
        "image" => format!("[an image, {}]", field("mimeType")),
        "audio" => format!("[audio, {}]", field("mimeType")),
        "resource_link" => format!("[a resource: {}]", field("uri")),
        "resource" => {
            let resource = block.get("resource");
            let text = resource.and_then(|r| r.get("text")).and_then(Value::as_str);
            let uri = resource
                .and_then(|r| r.get("uri"))
                .and_then(Value::as_str)
                .unwrap_or_default();
            text.map_or_else(|| format!("[a resource: {uri}]"), str::to_owned)
        }
        other => format!("[a content block of type {other:?}]"),
    }
}

fn bounded(mut text: String, max_bytes: usize) -> ModelOutput {
    let total = text.len();
    if total <= max_bytes {
        return ModelOutput { text, cut: None };
    }
    let mut keep = max_bytes;
    while !text.is_char_boundary(keep) {
        keep -= 1;
    }
    text.truncate(keep);
    text.push_str(&format!(
        "\n[formwork cut this output: {keep} of {total} bytes shown]"
    ));
    ModelOutput {
        text,
        cut: Some((keep, total)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn text_structured_errors_and_failures() {
        let text = json!({"content": [{"type": "text", "text": "one"}, {"type": "image", "data": "x", "mimeType": "image/png"}]});
        assert_eq!(
            model_output(Some(&text), None, 100).text,
            "one\n[an image, image/png]"
        );
        // The result's `_meta` never reaches the model.
        let structured = json!({"content": [{"type": "text", "text": "{}"}], "structuredContent": {"b": 1, "a": 2}, "_meta": {"secret": "x"}});
        assert_eq!(
            model_output(Some(&structured), None, 100).text,
            r#"{"b":1,"a":2}"#
        );
        let error = json!({"content": [{"type": "text", "text": "no"}], "isError": true});
        assert_eq!(
            model_output(Some(&error), None, 100).text,
            "The tool reported an error:\nno"
        );
        assert_eq!(
            model_output(None, Some("the person declined the call"), 100).text,
            "The call failed: the person declined the call"
        );
    }

    #[test]
    fn long_output_is_cut_on_a_character_boundary() {
        let result = json!({"content": [{"type": "text", "text": "ééééé"}]});
        let output = model_output(Some(&result), None, 5);
        assert_eq!(output.cut, Some((4, 10)));
        assert_eq!(
            output.text,
            "éé\n[formwork cut this output: 4 of 10 bytes shown]"
        );
    }
}
