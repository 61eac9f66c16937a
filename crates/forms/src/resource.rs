//! OpenAI's form vocabulary beyond plain options: option thumbnails (`x-openai-thumbnail`) and
//! resource pickers (`x-openai-input`), read only with
//! [`crate::ParseOptions::openai_elicitation`].
//!
//! A picker's answer is a resource URI (one, or an array of distinct ones). It must be one of the
//! plugin's options, or, when the picker takes uploads, a `file://` URI: the host stores the
//! person's file with the session and answers the URI of that copy.

use std::collections::HashSet;

use serde_json::Value;

use crate::decline::{Decline, DeclineRule};
use crate::field::{
    FieldKind, ResourceOption, ResourcePicker, Selection, StringFormat, Thumbnail, Uploads,
};
use crate::formats;
use crate::limits::{MAX_OPTIONS, MAX_TEXT_BYTES, MAX_THUMBNAIL_BYTES, MAX_URL_BYTES};
use crate::schema::{Members, Object};
use crate::size::{clip, kind_of, show};
use crate::validate::plural;

/// The `x-openai-thumbnail` of an option entry, or its deprecated alias `x-openai-preview`.
/// `what` names the entry in messages ("`oneOf[0]`").
pub(crate) fn option_thumbnail(
    key: &str,
    entry: &Object,
    what: &str,
) -> Result<Option<Thumbnail>, Decline> {
    let (keyword, icon) = match (
        entry.member("x-openai-thumbnail"),
        entry.member("x-openai-preview"),
    ) {
        (Some(icon), _) => ("x-openai-thumbnail", icon),
        (None, Some(icon)) => ("x-openai-preview", icon),
        (None, None) => return Ok(None),
    };
    parse_icon(key, icon, &format!("{what}.{keyword}")).map(Some)
}

/// An MCP `Icon` used as an image: `{src, mimeType?, ...}` with a safe `src`.
fn parse_icon(key: &str, icon: &Value, what: &str) -> Result<Thumbnail, Decline> {
    let invalid = |detail: String| Decline::property(key, DeclineRule::InvalidThumbnail, detail);
    let Value::Object(icon) = icon else {
        return Err(invalid(format!(
            "`{what}` must be an icon object with `src`, not {}",
            kind_of(icon)
        )));
    };
    let src = match icon.member("src") {
        Some(Value::String(src)) => src,
        Some(other) => {
            return Err(invalid(format!(
                "`{what}.src` must be a string, not {}",
                kind_of(other)
            )));
        }
        None => return Err(invalid(format!("`{what}` has no `src`"))),
    };
    if let Err(problem) = check_image_src(src) {
        return Err(invalid(format!("`{what}.src` {problem}")));
    }
    let mime_type = match icon.member("mimeType") {
        None => None,
        Some(Value::String(mime)) if mime.len() <= MAX_TEXT_BYTES => Some(mime.clone()),
        Some(other) => {
            return Err(invalid(format!(
                "`{what}.mimeType` must be a short string, not {}",
                show(other)
            )));
        }
    };
    Ok(Thumbnail {
        src: src.clone(),
        mime_type,
    })
}

/// Whether `src` may be shown as an image: an `https://` URL with a host, or a base64
/// `data:image/<type>` URI. Anything else (`http:`, `javascript:`, a relative path, a
/// `data:text/html` URI) would load from where the plugin chooses or run as something else.
pub(crate) fn check_image_src(src: &str) -> Result<(), String> {
    if let Some(rest) = src.strip_prefix("data:") {
        if src.len() > MAX_THUMBNAIL_BYTES {
            return Err(format!(
                "is a data URI of {} bytes; at most {MAX_THUMBNAIL_BYTES} are allowed",
                src.len()
            ));
        }
        let (header, payload) = rest.split_once(',').unwrap_or((rest, ""));
        let subtype = header
            .strip_prefix("image/")
            .and_then(|media| media.strip_suffix(";base64"));
        let subtype_ok = subtype.is_some_and(|subtype| {
            !subtype.is_empty()
                && subtype
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"+-.".contains(&b))
        });
        let payload_ok = !payload.is_empty()
            && payload
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"+/=".contains(&b));
        return match subtype_ok && payload_ok {
            true => Ok(()),
            false => Err("must be a base64 `data:image/<type>;base64,...` URI".to_owned()),
        };
    }
    if src.len() > MAX_URL_BYTES {
        return Err(format!(
            "is {} bytes long; at most {MAX_URL_BYTES} are allowed",
            src.len()
        ));
    }
    if src.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err("contains whitespace or control characters".to_owned());
    }
    match url::Url::parse(src) {
        Ok(url) if url.scheme() == "https" && url.host_str().is_some_and(|h| !h.is_empty()) => {
            Ok(())
        }
        _ => Err(format!(
            "\"{}\" must be an https:// URL or a data:image URI",
            clip(src)
        )),
    }
}

/// A resource picker on a `type: "string"` property: one URI.
pub(crate) fn parse_single(key: &str, obj: &Object, input: &Value) -> Result<FieldKind, Decline> {
    if obj.member("format").and_then(Value::as_str) != Some(StringFormat::Uri.as_str()) {
        return Err(Decline::property(
            key,
            DeclineRule::UnsupportedInput,
            "has `x-openai-input` but is not a `format: \"uri\"` string",
        ));
    }
    let input = input_object(key, input)?;
    if input.has("selection") {
        return Err(Decline::property(
            key,
            DeclineRule::UnsupportedInput,
            "`x-openai-input.selection` applies only to an array of URIs, not to one",
        ));
    }
    let options = parse_options(key, input)?;
    let uploads = parse_uploads(key, input, false)?;
    picker(
        key,
        false,
        Selection::Explicit,
        options,
        uploads,
        None,
        None,
    )
}

/// A resource picker on a `type: "array"` property whose `items` are `format: "uri"` strings.
pub(crate) fn parse_multi(
    key: &str,
    items: &Object,
    input: &Value,
    min_items: Option<u64>,
    max_items: Option<u64>,
) -> Result<FieldKind, Decline> {
    if items.member("format").and_then(Value::as_str) != Some(StringFormat::Uri.as_str()) {
        return Err(Decline::property(
            key,
            DeclineRule::UnsupportedInput,
            "has `x-openai-input` but its `items` are not `format: \"uri\"` strings",
        ));
    }
    let input = input_object(key, input)?;
    let selection = match input.member("selection") {
        None => Selection::Explicit,
        Some(Value::String(name)) if name == "explicit" => Selection::Explicit,
        Some(Value::String(name)) if name == "implicit" => Selection::Implicit,
        Some(other) => {
            return Err(Decline::property(
                key,
                DeclineRule::UnsupportedInput,
                format!(
                    "`x-openai-input.selection` must be \"explicit\" or \"implicit\", not {}",
                    show(other)
                ),
            ));
        }
    };
    let options = parse_options(key, input)?;
    let uploads = parse_uploads(key, input, selection == Selection::Implicit)?;
    picker(key, true, selection, options, uploads, min_items, max_items)
}

fn picker(
    key: &str,
    multiple: bool,
    selection: Selection,
    options: Vec<ResourceOption>,
    uploads: Option<Uploads>,
    min_items: Option<u64>,
    max_items: Option<u64>,
) -> Result<FieldKind, Decline> {
    if options.is_empty() && uploads.is_none() {
        return Err(Decline::property(
            key,
            DeclineRule::EmptyEnum,
            "`x-openai-input` offers no resources and takes no files (`userOptions`)",
        ));
    }
    if uploads.is_none()
        && let Some(min) = min_items.filter(|min| *min > options.len() as u64)
    {
        return Err(Decline::property(
            key,
            DeclineRule::InvalidConstraint,
            format!(
                "`minItems` {min} is more than the {} resources and no files may be added",
                options.len()
            ),
        ));
    }
    let implied = options.len() as u64;
    if selection == Selection::Implicit
        && let Some(max) = max_items.filter(|max| implied > *max)
    {
        return Err(Decline::property(
            key,
            DeclineRule::InvalidConstraint,
            format!(
                "implicit selection starts with all {implied} resources, more than `maxItems` {max}"
            ),
        ));
    }
    Ok(FieldKind::Resource(ResourcePicker {
        multiple,
        selection,
        options,
        uploads,
        min_items,
        max_items,
    }))
}

fn input_object<'a>(key: &str, input: &'a Value) -> Result<&'a Object, Decline> {
    let Value::Object(input) = input else {
        return Err(Decline::property(
            key,
            DeclineRule::UnsupportedInput,
            format!("`x-openai-input` must be an object, not {}", kind_of(input)),
        ));
    };
    match input.member("type") {
        // `file` is the deprecated name of `resource`.
        Some(Value::String(name)) if name == "resource" || name == "file" => Ok(input),
        Some(other) => Err(Decline::property(
            key,
            DeclineRule::UnsupportedInput,
            format!(
                "`x-openai-input.type` {} is not supported; only \"resource\" is",
                show(other)
            ),
        )),
        None => Err(Decline::property(
            key,
            DeclineRule::UnsupportedInput,
            "`x-openai-input` has no `type`",
        )),
    }
}

/// `options`: MCP `Resource`s `{uri, name, title?, description?, mimeType?, _meta?}`.
fn parse_options(key: &str, input: &Object) -> Result<Vec<ResourceOption>, Decline> {
    let entries = match input.member("options") {
        None => return Ok(Vec::new()),
        Some(Value::Array(entries)) => entries,
        Some(other) => {
            return Err(Decline::property(
                key,
                DeclineRule::InvalidOption,
                format!(
                    "`x-openai-input.options` must be an array, not {}",
                    kind_of(other)
                ),
            ));
        }
    };
    if entries.len() > MAX_OPTIONS {
        return Err(Decline::property(
            key,
            DeclineRule::TooLarge,
            format!(
                "`x-openai-input.options` has {} resources; at most {MAX_OPTIONS} are allowed",
                entries.len()
            ),
        ));
    }
    let mut options: Vec<ResourceOption> = Vec::with_capacity(entries.len());
    let (mut uris, mut labels) = (HashSet::new(), HashSet::new());
    for (idx, entry) in entries.iter().enumerate() {
        let what = format!("x-openai-input.options[{idx}]");
        let option = parse_resource(key, entry, &what)?;
        if !uris.insert(option.uri.clone()) {
            return Err(Decline::property(
                key,
                DeclineRule::DuplicateOption,
                format!("offers the resource \"{}\" twice", clip(&option.uri)),
            ));
        }
        if !labels.insert(option.label().to_owned()) {
            return Err(Decline::property(
                key,
                DeclineRule::DuplicateOption,
                format!("has the resource label \"{}\" twice", clip(option.label())),
            ));
        }
        options.push(option);
    }
    Ok(options)
}

fn parse_resource(key: &str, entry: &Value, what: &str) -> Result<ResourceOption, Decline> {
    let invalid = |detail: String| Decline::property(key, DeclineRule::InvalidOption, detail);
    let Value::Object(entry) = entry else {
        return Err(invalid(format!(
            "`{what}` must be a resource object with `uri` and `name`, not {}",
            kind_of(entry)
        )));
    };
    let text = |member: &str, required: bool| -> Result<Option<String>, Decline> {
        match entry.member(member) {
            None if required => Err(invalid(format!("`{what}` has no `{member}`"))),
            None => Ok(None),
            Some(Value::String(text)) if text.len() <= MAX_TEXT_BYTES => Ok(Some(text.clone())),
            Some(Value::String(text)) => Err(Decline::property(
                key,
                DeclineRule::TooLarge,
                format!(
                    "`{what}.{member}` is {} bytes long; at most {MAX_TEXT_BYTES} are allowed",
                    text.len()
                ),
            )),
            Some(other) => Err(invalid(format!(
                "`{what}.{member}` must be a string, not {}",
                kind_of(other)
            ))),
        }
    };
    let uri = text("uri", true)?.unwrap_or_default();
    if !formats::is_valid(StringFormat::Uri, &uri) {
        return Err(invalid(format!(
            "`{what}.uri` \"{}\" is not an absolute URI",
            clip(&uri)
        )));
    }
    let name = text("name", true)?.unwrap_or_default();
    let thumbnail = match entry.member("_meta") {
        None => None,
        Some(Value::Object(meta)) => match meta.member("openai/thumbnail") {
            None => None,
            Some(icon) => Some(parse_icon(
                key,
                icon,
                &format!("{what}._meta[\"openai/thumbnail\"]"),
            )?),
        },
        Some(other) => {
            return Err(invalid(format!(
                "`{what}._meta` must be an object, not {}",
                kind_of(other)
            )));
        }
    };
    Ok(ResourceOption {
        uri,
        name,
        title: text("title", false)?,
        description: text("description", false)?,
        mime_type: text("mimeType", false)?,
        thumbnail,
    })
}

/// `userOptions`: `{kind?: "file" | "directory", accept?: [...]}`. Implicit selection always
/// takes files. formwork copies files, not directories, so a directory picker is declined.
fn parse_uploads(key: &str, input: &Object, implicit: bool) -> Result<Option<Uploads>, Decline> {
    let user_options = match input.member("userOptions") {
        None if implicit => return Ok(Some(Uploads::default())),
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Object(user_options)) => user_options,
        Some(other) => {
            return Err(Decline::property(
                key,
                DeclineRule::UnsupportedInput,
                format!(
                    "`x-openai-input.userOptions` must be an object, not {}",
                    kind_of(other)
                ),
            ));
        }
    };
    match user_options.member("kind") {
        None => {}
        Some(Value::String(kind)) if kind == "file" => {}
        Some(Value::String(kind)) if kind == "directory" => {
            return Err(Decline::property(
                key,
                DeclineRule::UnsupportedInput,
                "asks for a directory (`userOptions.kind: \"directory\"`); formwork can add \
                 files only",
            ));
        }
        Some(other) => {
            return Err(Decline::property(
                key,
                DeclineRule::UnsupportedInput,
                format!(
                    "`x-openai-input.userOptions.kind` must be \"file\" or \"directory\", not {}",
                    show(other)
                ),
            ));
        }
    }
    let accept = match user_options.member("accept") {
        None => Vec::new(),
        Some(Value::Array(tokens)) if tokens.len() <= MAX_OPTIONS => {
            let mut accept = Vec::with_capacity(tokens.len());
            for token in tokens {
                match token {
                    Value::String(token) if token.len() <= MAX_TEXT_BYTES => {
                        accept.push(token.clone())
                    }
                    other => {
                        return Err(Decline::property(
                            key,
                            DeclineRule::UnsupportedInput,
                            format!(
                                "`x-openai-input.userOptions.accept` holds {}; it lists short \
                                 strings such as \".stl\" or \"image/*\"",
                                show(other)
                            ),
                        ));
                    }
                }
            }
            accept
        }
        Some(other) => {
            return Err(Decline::property(
                key,
                DeclineRule::UnsupportedInput,
                format!(
                    "`x-openai-input.userOptions.accept` must be an array of at most \
                     {MAX_OPTIONS} strings, not {}",
                    show(other)
                ),
            ));
        }
    };
    Ok(Some(Uploads { accept }))
}

/// Checks a picker's `default` (it may name only offered resources, and implicit selection
/// takes none) and returns the default in force: for implicit selection, every option.
pub(crate) fn picker_default(
    key: &str,
    picker: &ResourcePicker,
    default: Option<&Value>,
) -> Result<Option<Value>, Decline> {
    let Some(default) = default else {
        return Ok((picker.selection == Selection::Implicit).then(|| {
            Value::Array(
                picker
                    .options
                    .iter()
                    .map(|option| Value::String(option.uri.clone()))
                    .collect(),
            )
        }));
    };
    if picker.selection == Selection::Implicit {
        return Err(Decline::property(
            key,
            DeclineRule::DefaultOutsideConstraints,
            "has a `default` with implicit selection, which starts with every resource",
        ));
    }
    let offered = |value: &Value| {
        value
            .as_str()
            .is_some_and(|uri| picker.options.iter().any(|option| option.uri == uri))
    };
    let named = match default {
        Value::Array(items) if picker.multiple => items.iter().find(|item| !offered(item)),
        value if !picker.multiple => (!offered(value)).then_some(value),
        other => Some(other),
    };
    match named {
        Some(value) => Err(Decline::property(
            key,
            DeclineRule::DefaultOutsideConstraints,
            format!(
                "`default` {} is not allowed: it must name resources from `options`",
                show(value)
            ),
        )),
        None => Ok(Some(default.clone())),
    }
}

/// Whether a file named `name` (or a URI ending in it) fits `accept`, a picker's HTML `accept`
/// tokens: a file ending (`.stl`) must match, case aside; a media type (`image/*`) cannot be
/// told from a name, so it lets any file through; no tokens take any file.
pub(crate) fn accepts(accept: &[String], name: &str) -> bool {
    let lower = name.to_lowercase();
    accept.is_empty()
        || accept
            .iter()
            .any(|token| !token.starts_with('.') || lower.ends_with(&token.to_lowercase()))
}

/// Every way `value` breaks the picker's rules, as message fragments.
pub(crate) fn check_picked(picker: &ResourcePicker, value: &Value) -> Vec<String> {
    match (picker.multiple, value) {
        (false, Value::String(uri)) => check_uri(picker, uri).into_iter().collect(),
        (true, Value::Array(items)) => {
            let mut problems = Vec::new();
            let mut seen = HashSet::new();
            for item in items {
                match item {
                    Value::String(uri) => {
                        problems.extend(check_uri(picker, uri));
                        if !seen.insert(uri.as_str()) {
                            problems.push(format!("must not list \"{}\" twice", clip(uri)));
                        }
                    }
                    other => problems.push(format!(
                        "must list only resource URIs, not {}",
                        kind_of(other)
                    )),
                }
                if problems.len() >= 10 {
                    break;
                }
            }
            let count = items.len() as u64;
            if let Some(min) = picker.min_items.filter(|min| count < *min) {
                problems.push(format!("must have at least {min} item{}", plural(min)));
            }
            if let Some(max) = picker.max_items.filter(|max| count > *max) {
                problems.push(format!("must have at most {max} item{}", plural(max)));
            }
            problems
        }
        (false, other) => vec![format!("must be a resource URI, not {}", kind_of(other))],
        (true, other) => vec![format!(
            "must be an array of resource URIs, not {}",
            kind_of(other)
        )],
    }
}

fn check_uri(picker: &ResourcePicker, uri: &str) -> Option<String> {
    if picker.options.iter().any(|option| option.uri == uri) {
        return None;
    }
    if let Some(uploads) = &picker.uploads {
        let local = uri.starts_with("file:///") && formats::is_valid(StringFormat::Uri, uri);
        if !local {
            return Some(format!(
                "must be an offered resource or a file:/// URI of an added file, not \"{}\"",
                clip(uri)
            ));
        }
        return (!accepts(&uploads.accept, uri)).then(|| {
            format!(
                "names a file this picker does not take (it takes {}): \"{}\"",
                uploads.accept.join(", "),
                clip(uri)
            )
        });
    }
    Some(format!(
        "must be one of the offered resources, not \"{}\"",
        clip(uri)
    ))
}
