//! Parsing the whole `elicitation/create` params: form mode or URL mode.
//!
//! [`ElicitationRequest`] is the one shape of a plugin's question from the wire to the UI: the
//! host hands it to its responders, and a UI receives it as JSON (`{"mode": "form", "render",
//! "meta"}` or `{"mode": "url", "message", "url", "domain", ...}`).

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::Content;
use crate::decline::{Decline, DeclineRule};
use crate::field::{Form, JsonText};
use crate::limits::{MAX_TEXT_BYTES, MAX_URL_BYTES};
use crate::render::RenderText;
use crate::schema::Members;
use crate::schema::parse_sized_schema;
use crate::size::{self, kind_of, show};
use crate::url_warning::{self, UrlWarning};

/// The params of an `elicitation/create` request, parsed. An absent `mode` means form.
///
/// As JSON it is what a UI shows: the form's render block, or the URL. The parsed [`Form`] that
/// converts and validates answers is not part of that JSON (see [`FormRequest::form`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "mode", rename_all = "snake_case")]
pub enum ElicitationRequest {
    /// `mode: "form"` (or no mode): ask for structured input.
    Form(FormRequest),
    /// `mode: "url"`: ask the person to open a URL. Boxed: a request is kept in every card and
    /// in the event that shows it, and most are forms, which are much smaller.
    Url(Box<UrlRequest>),
}

/// A form-mode request.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FormRequest {
    /// What the person is shown: the `message` and one question per property, as the JSON a UI
    /// receives.
    pub render: RenderText,
    /// The params' `_meta` (an object), as text with its key order kept (shared: a card and
    /// its events show the same one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonText>,
    /// The parsed `requestedSchema`, which turns answers into checked content. Always present in
    /// what [`parse_request`] returns; absent in a request read back from JSON (a record, shown
    /// but never answered) and wherever its holder has taken it ([`ElicitationRequest::take_form`]).
    #[serde(skip)]
    pub form: Option<Arc<Form>>,
}

/// Two form requests are equal when they show the same thing: the form is what the render
/// block was made from.
impl PartialEq for FormRequest {
    fn eq(&self, other: &Self) -> bool {
        self.render == other.render && self.meta == other.meta
    }
}

/// A URL-mode request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UrlRequest {
    /// The text shown with the link.
    pub message: String,
    /// The URL to open, exactly as sent: absolute, `http` or `https`, with a host and no user name
    /// or password.
    pub url: String,
    /// The URL's host, to show the person where the link leads (international names in punycode,
    /// so look-alike letters cannot hide the real domain).
    pub domain: String,
    /// What the person should know before opening it (plain http, a loopback or private
    /// address), in a stable order: the scheme first, then the host.
    #[serde(default)]
    pub warnings: Vec<UrlWarning>,
    /// The server's id for this elicitation (2025-11-25), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elicitation_id: Option<String>,
    /// The params' `_meta`, as in [`FormRequest::meta`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonText>,
}

/// What a host accepts beyond core MCP elicitation. The default is core MCP only.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ParseOptions {
    /// OpenAI's form extension (`openai/elicitation`):
    /// - `mode: "openai/form"` is read as a form;
    /// - a core `requestedSchema` that is the empty `{"type": "object", "properties": {}}`
    ///   beside a `_meta["openai/elicitation"]` object stands for that object's
    ///   `requestedSchema`, which is parsed in its place (declined when absent or
    ///   unsupported; the empty core form is never shown for it);
    /// - schemas may use the extension's vocabulary: option thumbnails, free-text string
    ///   lists and `x-openai-input` resource pickers.
    pub openai_elicitation: bool,
}

/// The extension's `_meta` key, which holds the real schema of an OpenAI form.
const OPENAI_META: &str = "openai/elicitation";

/// Parses `elicitation/create` params with core MCP only: [`parse_request_with`] with the
/// default [`ParseOptions`].
pub fn parse_request(params: &Value) -> Result<ElicitationRequest, Decline> {
    parse_request_with(params, ParseOptions::default())
}

/// Parses `elicitation/create` params, or declines the request as a whole.
///
/// `mode` absent or `"form"` needs a `requestedSchema` (see [`crate::parse_schema`]); `"url"` needs an
/// absolute `http`/`https` `url`; any other mode is declined. `message` must be a string. `_meta`
/// (an object, or null) is kept as [`FormRequest::meta`] / [`UrlRequest::meta`]. Other params keys,
/// such as `task`, are left to the caller. `options` adds what [`ParseOptions`] lists.
pub fn parse_request_with(
    params: &Value,
    options: ParseOptions,
) -> Result<ElicitationRequest, Decline> {
    let openai = options.openai_elicitation;
    let (message, meta, mode) = read_header(params, openai)?;
    let message = message.clone();
    match mode {
        Mode::Form => {
            let core = params.get("requestedSchema").ok_or_else(no_schema)?;
            let schema = match meta.and_then(|meta| meta.member(OPENAI_META)) {
                Some(extension) if openai && is_empty_core(core) => openai_schema(extension)?,
                _ => core,
            };
            // Within the size limits as part of the params.
            let form = parse_sized_schema(schema, openai)?;
            Ok(ElicitationRequest::Form(FormRequest {
                render: RenderText::new(&form.render(&message)),
                meta: meta.map(JsonText::of),
                form: Some(Arc::new(form)),
            }))
        }
        Mode::Url => parse_url(
            params.get("url"),
            params.get("elicitationId"),
            message,
            meta.map(JsonText::of),
        ),
    }
}

/// A request's params kept as the plugin sent them, with the options they were read with:
/// what a host holds while a form waits for its answer, in place of the parsed [`Form`] (a few
/// hundred bytes of text against a few kilobytes of structure). Parsing is pure, so
/// [`RequestText::parse`] gives the request parsed first, form and all.
#[derive(Debug, Clone)]
pub struct RequestText {
    params: Arc<RawValue>,
    options: ParseOptions,
}

impl RequestText {
    /// `params` as sent, to be read with `options`.
    pub fn new(params: Arc<RawValue>, options: ParseOptions) -> Self {
        RequestText { params, options }
    }

    /// Parses `params` with `options` ([`parse_request_with`]), and keeps them as text beside
    /// the request.
    pub fn read(
        params: &Value,
        options: ParseOptions,
    ) -> Result<(ElicitationRequest, RequestText), Decline> {
        let request = parse_request_with(params, options)?;
        let params = serde_json::value::to_raw_value(params).map_err(|err| {
            Decline::whole(
                DeclineRule::InvalidParams,
                format!("params cannot be kept as text: {err}"),
            )
        })?;
        let text = RequestText {
            params: Arc::from(params),
            options,
        };
        Ok((request, text))
    }

    /// The params as the plugin sent them.
    pub fn params(&self) -> &Arc<RawValue> {
        &self.params
    }

    /// The request, parsed again with [`parse_request_with`].
    pub fn parse(&self) -> Result<ElicitationRequest, Decline> {
        let params: Value = serde_json::from_str(self.params.get()).map_err(|err| {
            Decline::whole(
                DeclineRule::InvalidParams,
                format!("params are not JSON: {err}"),
            )
        })?;
        parse_request_with(&params, self.options)
    }
}

/// The two modes forms support.
enum Mode {
    Form,
    Url,
}

/// Checks what every request shares, in order (an object within the size limits, `message`,
/// `_meta`, `mode`) and returns the `message`, the `_meta` and the mode.
fn read_header(params: &Value, openai: bool) -> Result<(&String, Option<&Content>, Mode), Decline> {
    let Value::Object(obj) = params else {
        return Err(Decline::whole(
            DeclineRule::NotAnObject,
            format!("params must be a JSON object, not {}", kind_of(params)),
        ));
    };
    size::check(params, "params")?;
    let message = match obj.member("message") {
        Some(Value::String(message)) if message.len() <= MAX_TEXT_BYTES => message,
        Some(Value::String(message)) => {
            return Err(Decline::whole(
                DeclineRule::TooLarge,
                format!(
                    "`message` is {} bytes long; at most {MAX_TEXT_BYTES} are allowed",
                    message.len()
                ),
            ));
        }
        Some(other) => {
            return Err(Decline::whole(
                DeclineRule::InvalidParams,
                format!("`message` must be a string, not {}", kind_of(other)),
            ));
        }
        None => {
            return Err(Decline::whole(
                DeclineRule::InvalidParams,
                "params have no `message`",
            ));
        }
    };
    let meta = match obj.member("_meta") {
        None | Some(Value::Null) => None,
        Some(Value::Object(meta)) => Some(meta),
        Some(other) => {
            return Err(Decline::whole(
                DeclineRule::InvalidParams,
                format!("`_meta` must be an object, not {}", kind_of(other)),
            ));
        }
    };
    let mode = match obj.member("mode") {
        None => Mode::Form,
        Some(Value::String(mode)) if mode == "form" => Mode::Form,
        Some(Value::String(mode)) if mode == "url" => Mode::Url,
        // The extension's older name for a form, accepted for compatibility.
        Some(Value::String(mode)) if openai && mode == "openai/form" => Mode::Form,
        Some(other) => {
            let supported = match openai {
                true => "\"form\", \"url\" and \"openai/form\" are",
                false => "\"form\" and \"url\" are",
            };
            return Err(Decline::whole(
                DeclineRule::UnsupportedMode,
                format!("mode {} is not supported; only {supported}", show(other)),
            ));
        }
    };
    Ok((message, meta, mode))
}

/// Whether a core `requestedSchema` is the empty object an OpenAI form sends in place of its
/// own schema: `type: "object"`, empty `properties`, and at most an empty `required` and a
/// `$schema` beside them.
fn is_empty_core(schema: &Value) -> bool {
    let Value::Object(root) = schema else {
        return false;
    };
    root.iter().all(|(key, value)| match key.as_str() {
        "type" => value == "object",
        "properties" => value.as_object().is_some_and(|p| p.is_empty()),
        "required" => value.as_array().is_some_and(|r| r.is_empty()),
        "$schema" => true,
        _ => false,
    }) && root.contains_key("properties")
}

/// The schema in `_meta["openai/elicitation"]`, or the reason there is none to show.
fn openai_schema(extension: &Value) -> Result<&Value, Decline> {
    let Value::Object(extension) = extension else {
        return Err(Decline::whole(
            DeclineRule::NoOpenAiSchema,
            format!(
                "`_meta[\"{OPENAI_META}\"]` must be an object, not {}",
                kind_of(extension)
            ),
        ));
    };
    extension.member("requestedSchema").ok_or_else(|| {
        Decline::whole(
            DeclineRule::NoOpenAiSchema,
            format!(
                "the core `requestedSchema` is empty and `_meta[\"{OPENAI_META}\"]` has no \
                 `requestedSchema` to show in its place"
            ),
        )
    })
}

fn no_schema() -> Decline {
    Decline::whole(
        DeclineRule::InvalidParams,
        "a form-mode request needs a `requestedSchema`",
    )
}

fn parse_url(
    url: Option<&Value>,
    elicitation_id: Option<&Value>,
    message: String,
    meta: Option<JsonText>,
) -> Result<ElicitationRequest, Decline> {
    let url = match url {
        Some(Value::String(url)) => url,
        Some(other) => {
            return Err(Decline::whole(
                DeclineRule::InvalidUrl,
                format!("`url` must be a string, not {}", kind_of(other)),
            ));
        }
        None => {
            return Err(Decline::whole(
                DeclineRule::InvalidUrl,
                "a url-mode request needs a `url`",
            ));
        }
    };
    let (domain, warnings) = check_url(url)
        .map_err(|problem| Decline::whole(DeclineRule::InvalidUrl, format!("`url` {problem}")))?;
    let elicitation_id = match elicitation_id {
        None | Some(Value::Null) => None,
        Some(Value::String(id)) if id.len() <= MAX_TEXT_BYTES => Some(id.clone()),
        Some(Value::String(id)) => {
            return Err(Decline::whole(
                DeclineRule::TooLarge,
                format!(
                    "`elicitationId` is {} bytes long; at most {MAX_TEXT_BYTES} are allowed",
                    id.len()
                ),
            ));
        }
        Some(other) => {
            return Err(Decline::whole(
                DeclineRule::InvalidParams,
                format!("`elicitationId` must be a string, not {}", kind_of(other)),
            ));
        }
    };
    Ok(ElicitationRequest::Url(Box::new(UrlRequest {
        message,
        url: url.clone(),
        domain,
        warnings,
        elicitation_id,
        meta,
    })))
}

/// Checks a URL-mode `url` and returns its host and the warnings about where it leads.
///
/// The URL is kept exactly as sent, so it must not need the cleaning a URL parser does silently:
/// whitespace and control characters are refused. User names and passwords are refused too, because
/// `https://trusted.example@evil.example/` shows one host and opens another.
fn check_url(url: &str) -> Result<(String, Vec<UrlWarning>), String> {
    if url.len() > MAX_URL_BYTES {
        return Err(format!(
            "is {} bytes long; at most {MAX_URL_BYTES} are allowed",
            url.len()
        ));
    }
    if url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err("contains whitespace or control characters".to_owned());
    }
    let parsed = url::Url::parse(url)
        .map_err(|err| format!("\"{}\" is not an absolute URL: {err}", size::clip(url)))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(format!(
            "must use http or https, not \"{}\"",
            size::clip(parsed.scheme())
        ));
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err("must not carry a user name or password".to_owned());
    }
    match parsed.host_str() {
        Some(host) if !host.is_empty() => Ok((host.to_owned(), url_warning::warnings(&parsed))),
        _ => Err("has no host".to_owned()),
    }
}

impl ElicitationRequest {
    /// The parsed form of a form-mode request, if it is still here.
    pub fn form(&self) -> Option<&Arc<Form>> {
        match self {
            ElicitationRequest::Form(request) => request.form.as_ref(),
            ElicitationRequest::Url(_) => None,
        }
    }

    /// Takes the parsed form out, leaving what is shown: the request as a UI and a record see it.
    pub fn take_form(&mut self) -> Option<Arc<Form>> {
        match self {
            ElicitationRequest::Form(request) => request.form.take(),
            ElicitationRequest::Url(_) => None,
        }
    }

    /// The request's `_meta`, if any.
    pub fn meta(&self) -> Option<&JsonText> {
        match self {
            ElicitationRequest::Form(request) => request.meta.as_ref(),
            ElicitationRequest::Url(request) => request.meta.as_ref(),
        }
    }
}
