//! One app document from a `resources/read` result: its HTML, its kind (MCP Apps or a legacy
//! skybridge widget) and the sandbox policy its metadata asks for.

use super::csp::{PluginPlace, SandboxPolicy, sandbox_policy};
use super::{APP_MIME, SKYBRIDGE_MIME, quoted};
use base64::Engine as _;
use serde_json::Value;

/// One app document ready to serve, read from a `resources/read` result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppDocument {
    /// The resource's URI, as asked for.
    pub uri: String,
    /// The content's `mimeType` exactly as the plugin sent it: [`APP_MIME`] or [`SKYBRIDGE_MIME`]
    /// up to the case of its letters and spaces around `;` (so safe in a header).
    pub mime_type: String,
    /// The document: the content's `text`, or its base64 `blob` decoded (UTF-8). Never empty.
    pub html: String,
    /// A legacy OpenAI Apps SDK widget (`text/html+skybridge`), which needs `window.openai`.
    pub skybridge: bool,
    /// The sandbox policy from the metadata (see [`read_document`]).
    pub policy: SandboxPolicy,
    /// `_meta.ui.prefersBorder`, else `_meta["openai/widgetPrefersBorder"]`, when a bool:
    /// whether the host should draw a border and background; `None` leaves it to the host.
    pub prefers_border: Option<bool>,
}

/// Why a `resources/read` result holds no app document; the text is for the app's card.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum DocumentError {
    /// No item of `contents` has the URI that was read.
    #[error("resources/read returned no content for {uri}")]
    NoContent {
        /// The URI read, quoted.
        uri: String,
    },
    /// The content is not an app document.
    #[error("{uri} is {found}, not an app ({APP_MIME} or {SKYBRIDGE_MIME})")]
    WrongMime {
        /// The URI read, quoted.
        uri: String,
        /// The `mimeType` sent, quoted, or "without a mimeType".
        found: String,
    },
    /// The content has neither a `text` nor a `blob` string.
    #[error("{uri} has neither text nor a blob")]
    NoBody {
        /// The URI read, quoted.
        uri: String,
    },
    /// The `blob` is not base64.
    #[error("the blob of {uri} is not base64: {reason}")]
    BadBase64 {
        /// The URI read, quoted.
        uri: String,
        /// What the decoder found (an offset counts symbols, whitespace aside).
        reason: String,
    },
    /// The decoded `blob` is not UTF-8 text.
    #[error("the blob of {uri} is not UTF-8 text")]
    NotUtf8 {
        /// The URI read, quoted.
        uri: String,
    },
    /// The document is empty or only whitespace.
    #[error("{uri} is an empty document")]
    Empty {
        /// The URI read, quoted.
        uri: String,
    },
}

/// The app document `uri` in `result`, a `resources/read` result.
///
/// The content is the first item of `result.contents` whose `uri` is `uri` and whose
/// `mimeType` is [`APP_MIME`] or [`SKYBRIDGE_MIME`] (compared without regard to case and to
/// spaces around `;`), else the first whose `uri` is `uri` (then the error says what its type
/// is), else the only item when there is one (a server may write the URI otherwise, as the
/// reference host reads `contents[0]`). `text` wins over `blob`; a blob may hold line breaks
/// between its base64 symbols.
///
/// The metadata is looked up key by key (`ui`, `openai/widgetCSP`,
/// `openai/widgetPrefersBorder`) in the content's `_meta`, then its `meta` (how some Python
/// SDK versions write it), then `listed`'s `_meta` and `meta`: `listed` is the resource's entry
/// in `resources/list`, when the caller has it. The first place that has the key gives it,
/// whatever it holds (a malformed `ui` there gives the strict default, not the next place's).
/// `place` is where the plugin runs, for the policy's local-network rule.
pub fn read_document(
    uri: &str,
    result: &Value,
    listed: Option<&Value>,
    place: PluginPlace,
) -> Result<AppDocument, DocumentError> {
    let shown = || quoted(uri);
    let contents = result
        .get("contents")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let of_uri = |item: &&Value| item.get("uri").and_then(Value::as_str) == Some(uri);
    let an_app = |item: &&Value| {
        let mime = item
            .get("mimeType")
            .and_then(Value::as_str)
            .map(normal_mime);
        mime.is_some_and(|mime| mime == APP_MIME || mime == SKYBRIDGE_MIME)
    };
    let content = contents
        .iter()
        .find(|item| of_uri(item) && an_app(item))
        .or_else(|| contents.iter().find(of_uri))
        .or(match contents {
            [only] => Some(only),
            _ => None,
        })
        .ok_or_else(|| DocumentError::NoContent { uri: shown() })?;
    let sent = content.get("mimeType").and_then(Value::as_str);
    let (mime_type, skybridge) = match sent.map(|mime| (mime, normal_mime(mime))) {
        Some((mime, normal)) if normal == APP_MIME => (mime, false),
        Some((mime, normal)) if normal == SKYBRIDGE_MIME => (mime, true),
        _ => {
            return Err(DocumentError::WrongMime {
                uri: shown(),
                found: sent.map_or_else(|| "without a mimeType".to_owned(), quoted),
            });
        }
    };
    let html = body(content, shown())?;
    if html.trim().is_empty() {
        return Err(DocumentError::Empty { uri: shown() });
    }

    let sources: Vec<&Value> = [Some(content), listed]
        .into_iter()
        .flatten()
        .flat_map(|item| [item.get("_meta"), item.get("meta")])
        .flatten()
        .filter(|meta| meta.is_object())
        .collect();
    let lookup = |key: &str| sources.iter().find_map(|meta| meta.get(key));
    let ui = lookup("ui");
    let prefers_border = ui
        .and_then(|ui| ui.get("prefersBorder"))
        .and_then(Value::as_bool)
        .or_else(|| lookup("openai/widgetPrefersBorder").and_then(Value::as_bool));
    Ok(AppDocument {
        uri: uri.to_owned(),
        mime_type: mime_type.to_owned(),
        html,
        skybridge,
        policy: sandbox_policy(ui, lookup("openai/widgetCSP"), place),
        prefers_border,
    })
}

/// A MIME type with each `;`-separated part in lowercase and without the spaces around it. Only
/// spaces: a line break or another blank would make the type unsafe in a header.
fn normal_mime(mime: &str) -> String {
    mime.split(';')
        .map(|part| part.trim_matches(' ').to_ascii_lowercase())
        .collect::<Vec<_>>()
        .join(";")
}

/// The document text of a content item; `uri` is the quoted URI for the error.
fn body(content: &Value, uri: String) -> Result<String, DocumentError> {
    if let Some(text) = content.get("text").and_then(Value::as_str) {
        return Ok(text.to_owned());
    }
    let Some(blob) = content.get("blob").and_then(Value::as_str) else {
        return Err(DocumentError::NoBody { uri });
    };
    let symbols: Vec<u8> = blob
        .bytes()
        .filter(|byte| !byte.is_ascii_whitespace())
        .collect();
    let bytes = match base64::engine::general_purpose::STANDARD.decode(symbols) {
        Ok(bytes) => bytes,
        Err(error) => {
            let reason = error.to_string();
            return Err(DocumentError::BadBase64 { uri, reason });
        }
    };
    String::from_utf8(bytes).map_err(|_| DocumentError::NotUtf8 { uri })
}

#[cfg(test)]
mod tests {
    use super::super::csp::{DEFAULT_CSP, PluginPlace, sandbox_policy};
    use super::{AppDocument, DocumentError, read_document};
    use base64::Engine as _;
    use serde_json::{Value, json};

    const URI: &str = "ui://demo/app.html";
    const HTML: &str = "<!doctype html><html><body><script>1</script></body></html>";

    fn check(result: Value, listed: Option<Value>, expected: Result<AppDocument, DocumentError>) {
        assert_eq!(
            read_document(URI, &result, listed.as_ref(), PluginPlace::Local),
            expected
        );
    }

    fn read_result(content: Value) -> Value {
        json!({ "contents": [content] })
    }

    /// The document the tests expect, with the policy of `ui` (and no OpenAI CSP).
    fn document(mime: &str, skybridge: bool, ui: Option<Value>) -> AppDocument {
        AppDocument {
            uri: URI.to_owned(),
            mime_type: mime.to_owned(),
            html: HTML.to_owned(),
            skybridge,
            policy: sandbox_policy(ui.as_ref(), None, PluginPlace::Local),
            prefers_border: None,
        }
    }

    #[test]
    fn a_text_document_with_the_default_policy() {
        let content = json!({ "uri": URI, "mimeType": "text/html;profile=mcp-app", "text": HTML });
        let expected = document("text/html;profile=mcp-app", false, None);
        assert_eq!(expected.policy.csp, DEFAULT_CSP);
        check(read_result(content), None, Ok(expected));
    }

    #[test]
    fn the_content_with_the_uri_is_read() {
        let result = json!({ "contents": [
            { "uri": "ui://demo/other.html", "mimeType": "text/plain", "text": "no" },
            { "uri": URI, "mimeType": "text/html;profile=mcp-app", "text": HTML },
        ]});
        check(
            result,
            None,
            Ok(document("text/html;profile=mcp-app", false, None)),
        );
    }

    #[test]
    fn the_mime_type_is_compared_without_case_and_spaces_around_the_semicolon() {
        for mime in ["Text/HTML ; Profile=MCP-App", "text/html; profile=mcp-app"] {
            let content = json!({ "uri": URI, "mimeType": mime, "text": HTML });
            check(read_result(content), None, Ok(document(mime, false, None)));
        }
        let content = json!({ "uri": URI, "mimeType": "TEXT/HTML+SKYBRIDGE", "text": HTML });
        check(
            read_result(content),
            None,
            Ok(document("TEXT/HTML+SKYBRIDGE", true, None)),
        );
    }

    #[test]
    fn a_blob_is_decoded_from_base64() {
        let blob = base64::engine::general_purpose::STANDARD.encode(HTML);
        let wrapped = format!("{}\n{}\r\n", &blob[..40], &blob[40..]);
        for blob in [blob, wrapped] {
            let content =
                json!({ "uri": URI, "mimeType": "text/html;profile=mcp-app", "blob": blob });
            check(
                read_result(content),
                None,
                Ok(document("text/html;profile=mcp-app", false, None)),
            );
        }
        // Text wins over a blob.
        let both = json!({ "uri": URI, "mimeType": "text/html;profile=mcp-app", "text": HTML,
                           "blob": "!!" });
        check(
            read_result(both),
            None,
            Ok(document("text/html;profile=mcp-app", false, None)),
        );
    }

    #[test]
    fn a_skybridge_widget_reads_its_openai_metadata() {
        let content = json!({ "uri": URI, "mimeType": "text/html+skybridge", "text": HTML,
        "_meta": {
            "openai/widgetCSP": { "connect_domains": ["https://api.example"] },
            "openai/widgetPrefersBorder": true,
        }});
        let openai = json!({ "connect_domains": ["https://api.example"] });
        let mut expected = document("text/html+skybridge", true, None);
        expected.policy = sandbox_policy(None, Some(&openai), PluginPlace::Local);
        expected.prefers_border = Some(true);
        assert!(
            expected
                .policy
                .csp
                .contains("connect-src 'self' https://api.example;")
        );
        check(read_result(content), None, Ok(expected));
    }

    #[test]
    fn metadata_comes_from_the_content_then_python_meta_then_the_listing() {
        let ui = json!({ "csp": { "connectDomains": ["https://content.example"] },
                         "prefersBorder": false });
        let listed = json!({ "uri": URI, "name": "app",
            "_meta": { "ui": { "csp": { "connectDomains": ["https://listed.example"] },
                               "prefersBorder": true } } });
        let content = |meta_key: &str| {
            let mut content = json!({ "uri": URI, "mimeType": "text/html;profile=mcp-app",
                                      "text": HTML });
            content[meta_key] = json!({ "ui": ui });
            content
        };
        let mut from_content = document("text/html;profile=mcp-app", false, Some(ui.clone()));
        from_content.prefers_border = Some(false);
        check(
            read_result(content("_meta")),
            Some(listed.clone()),
            Ok(from_content.clone()),
        );
        check(
            read_result(content("meta")),
            Some(listed.clone()),
            Ok(from_content),
        );

        let bare = json!({ "uri": URI, "mimeType": "text/html;profile=mcp-app", "text": HTML,
                           "_meta": { "other": 1 } });
        let mut from_listing = document(
            "text/html;profile=mcp-app",
            false,
            Some(listed["_meta"]["ui"].clone()),
        );
        from_listing.prefers_border = Some(true);
        assert!(from_listing.policy.csp.contains("https://listed.example"));
        check(read_result(bare), Some(listed), Ok(from_listing));
    }

    #[test]
    fn the_app_content_is_chosen_among_several_and_a_sole_one_of_another_uri_is_taken() {
        let app = "text/html;profile=mcp-app";
        let notes = json!({ "uri": URI, "mimeType": "text/plain", "text": "notes" });
        let html = json!({ "uri": URI, "mimeType": app, "text": HTML });
        check(
            json!({ "contents": [notes, html] }),
            None,
            Ok(document(app, false, None)),
        );
        let renamed = json!({ "uri": format!("{URI}/"), "mimeType": app, "text": HTML });
        check(read_result(renamed), None, Ok(document(app, false, None)));
    }

    #[test]
    fn what_is_not_an_app_document_says_why() {
        let quoted = format!("{URI:?}");
        check(
            json!({ "contents": [] }),
            None,
            Err(DocumentError::NoContent {
                uri: quoted.clone(),
            }),
        );
        check(
            json!({}),
            None,
            Err(DocumentError::NoContent {
                uri: quoted.clone(),
            }),
        );
        let other = |name: &str| {
            json!({ "uri": format!("ui://demo/{name}.html"), "mimeType": "text/html;profile=mcp-app",
                    "text": HTML })
        };
        check(
            json!({ "contents": [other("one"), other("two")] }),
            None,
            Err(DocumentError::NoContent {
                uri: quoted.clone(),
            }),
        );

        for (mime, found) in [
            (json!("text/html"), "\"text/html\""),
            (
                json!("text/html;profile=mcp-app;charset=utf-8"),
                "\"text/html;profile=mcp-app;charset=utf-8\"",
            ),
            (
                json!("text/html;\nprofile=mcp-app"),
                "\"text/html;\\nprofile=mcp-app\"",
            ),
            (
                json!("text/html;\tprofile=mcp-app"),
                "\"text/html;\\tprofile=mcp-app\"",
            ),
            (
                json!("text/html+skybridge\u{a0}"),
                "\"text/html+skybridge\\u{a0}\"",
            ),
            (json!(null), "without a mimeType"),
        ] {
            let content = json!({ "uri": URI, "mimeType": mime, "text": HTML });
            check(
                read_result(content),
                None,
                Err(DocumentError::WrongMime {
                    uri: quoted.clone(),
                    found: found.to_owned(),
                }),
            );
        }

        let app = |body: Value| {
            let mut content = json!({ "uri": URI, "mimeType": "text/html;profile=mcp-app" });
            if let (Some(content), Some(body)) = (content.as_object_mut(), body.as_object()) {
                content.extend(body.clone());
            }
            read_result(content)
        };
        check(
            app(json!({})),
            None,
            Err(DocumentError::NoBody {
                uri: quoted.clone(),
            }),
        );
        check(
            app(json!({ "text": 5 })),
            None,
            Err(DocumentError::NoBody {
                uri: quoted.clone(),
            }),
        );
        check(
            app(json!({ "blob": "not base64!" })),
            None,
            Err(DocumentError::BadBase64 {
                uri: quoted.clone(),
                reason: "Invalid symbol 33, offset 9.".to_owned(),
            }),
        );
        let latin1 = base64::engine::general_purpose::STANDARD.encode([0x3c, 0xe9, 0x3e]);
        check(
            app(json!({ "blob": latin1 })),
            None,
            Err(DocumentError::NotUtf8 {
                uri: quoted.clone(),
            }),
        );
        check(
            app(json!({ "text": " \n\t" })),
            None,
            Err(DocumentError::Empty {
                uri: quoted.clone(),
            }),
        );
        check(
            app(json!({ "blob": "" })),
            None,
            Err(DocumentError::Empty { uri: quoted }),
        );
    }

    #[test]
    fn error_messages_name_the_document() {
        let error = read_document(
            URI,
            &json!({ "contents": [
                { "uri": URI, "mimeType": "application/json", "text": "{}" },
            ]}),
            None,
            PluginPlace::Local,
        );
        assert_eq!(
            error.map_err(|error| error.to_string()),
            Err(
                "\"ui://demo/app.html\" is \"application/json\", not an app \
                 (text/html;profile=mcp-app or text/html+skybridge)"
                    .to_owned()
            )
        );
        let long = format!("ui://demo/{}", "x".repeat(200));
        let error = read_document(&long, &json!({ "contents": [] }), None, PluginPlace::Local);
        assert_eq!(
            error.map_err(|error| error.to_string()),
            Err(format!(
                "resources/read returned no content for \"ui://demo/{}\"…",
                "x".repeat(70)
            ))
        );
    }
}
