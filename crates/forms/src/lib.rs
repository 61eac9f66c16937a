//! Elicitation forms for an MCP host: parse, render, answer, validate.
//!
//! An MCP server asks the person for structured input with `elicitation/create`. This crate turns the
//! request's `params` into a [`Form`] (or a URL request), maps the form onto the `request_user_input`
//! render protocol that a UI draws (see `docs/render-protocol.md`), and turns the person's answers back
//! into `content` for an `accept` result, validated against the schema the server sent.
//!
//! The flow:
//!
//! 1. [`parse_request`] reads the whole params ([`parse_request_with`] also OpenAI's form
//!    extension, when the host speaks it); [`parse_schema`] reads only a `requestedSchema`.
//!    The form keeps each property schema as JSON text ([`JsonText`]).
//!    Anything outside the supported grammar is declined as a whole with a [`Decline`] that names the
//!    property and the rule: a form is never partly rendered.
//! 2. [`Form::render`] builds a [`render::RenderBlock`], one question per property, in property order.
//! 3. [`Form::content_from_render_answers`] (answers as the UI sends them), [`Form::content_from_typed`]
//!    (typed JSON values) or [`Form::default_content`] (accept with defaults) produce `content`, which
//!    always passes [`Form::validate`].
//!
//! The crate is pure: no I/O, no async, and it knows nothing about JSON-RPC or transports. Input from a
//! server or a person never panics it; every size it reads is bounded by the constants in [`limits`].

#![warn(missing_docs)]

mod answers;
mod decline;
mod field;
mod formats;
#[cfg(any(test, feature = "fuzzing"))]
#[doc(hidden)]
pub mod fuzzing;
mod kinds;
pub mod limits;
mod options;
mod pattern;
pub mod render;
mod request;
mod resource;
mod schema;
mod sensitive;
mod size;
mod url_warning;
mod validate;

pub use decline::{Decline, DeclineRule};
pub use field::{
    Choice, Field, FieldKind, Form, JsonText, MultiSelect, NumberRules, ResourceOption,
    ResourcePicker, Selection, SingleSelect, StringFormat, TextList, TextRules, Thumbnail, Uploads,
};
pub use pattern::Pattern;
pub use request::{
    ElicitationRequest, FormRequest, ParseOptions, RequestText, UrlRequest, parse_request,
    parse_request_with,
};
pub use schema::parse_schema;
pub use url_warning::UrlWarning;
pub use validate::{FieldError, ValidationErrors};

/// The `content` of an accepted elicitation result: property key to value, in property order.
pub type Content = serde_json::Map<String, serde_json::Value>;
