//! Parsing the whole `elicitation/create` params: form mode or URL mode.

use serde_json::Value;

use crate::Content;
use crate::decline::{Decline, DeclineRule};
use crate::field::Form;

/// The params of an `elicitation/create` request, parsed. An absent `mode` means form.
#[derive(Debug, Clone)]
pub enum ElicitationRequest {
    /// `mode: "form"` (or no mode): ask for structured input.
    Form(FormRequest),
    /// `mode: "url"`: ask the person to open a URL.
    Url(UrlRequest),
}

/// A form-mode request.
#[derive(Debug, Clone)]
pub struct FormRequest {
    /// The text shown above the form.
    pub message: String,
    /// The parsed `requestedSchema`.
    pub form: Form,
    /// The params' `_meta`, key order kept.
    pub meta: Option<Content>,
}

/// A URL-mode request.
#[derive(Debug, Clone)]
pub struct UrlRequest {
    /// The text shown with the link.
    pub message: String,
    /// The URL to open: absolute, `http` or `https`.
    pub url: String,
    /// The URL's host, to show the person where the link leads (IDNs in punycode).
    pub domain: String,
    /// The server's id for this elicitation (2025-11-25), if any.
    pub elicitation_id: Option<String>,
    /// The params' `_meta`, key order kept.
    pub meta: Option<Content>,
}

/// Parses `elicitation/create` params, or declines the request as a whole.
pub fn parse_request(params: &Value) -> Result<ElicitationRequest, Decline> {
    let _ = params;
    Err(Decline::whole(DeclineRule::NotAnObject, "not implemented yet"))
}
