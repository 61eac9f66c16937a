//! The parsed form model: a [`Form`] is an ordered list of [`Field`]s, each of one [`FieldKind`].

use std::sync::{Arc, OnceLock};

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;
use serde_json::{Number, Value};

use crate::pattern::Pattern;

/// A parsed, supported `requestedSchema`. Built by [`crate::parse_schema`] or [`crate::parse_request`].
///
/// Every field's `default` already satisfies the field's own constraints, so
/// [`Form::default_content`] only fails for a required field without a default.
#[derive(Debug, Clone)]
pub struct Form {
    pub(crate) fields: Vec<Field>,
    pub(crate) title: Option<String>,
    pub(crate) description: Option<String>,
    /// The `requestedSchema`'s top-level members in order, with `null` in place of `properties`:
    /// each property schema is held once, by its field.
    pub(crate) root: JsonText,
    /// The whole `requestedSchema`, put back together from `root` and the fields on first use.
    pub(crate) schema: OnceLock<Value>,
}

impl Form {
    /// A form from its parts; `root` holds `null` (or anything) in place of `properties`.
    pub(crate) fn new(
        fields: Vec<Field>,
        title: Option<String>,
        description: Option<String>,
        root: JsonText,
    ) -> Self {
        Form {
            fields,
            title,
            description,
            root,
            schema: OnceLock::new(),
        }
    }

    /// The fields in property order.
    pub fn fields(&self) -> &[Field] {
        &self.fields
    }

    /// The field with property key `key`.
    pub fn field(&self, key: &str) -> Option<&Field> {
        self.fields.iter().find(|field| field.key == key)
    }

    /// The keys of the fields that ask for a secret ([`Field::sensitive`]), in property order.
    pub fn sensitive_fields(&self) -> impl Iterator<Item = &str> {
        self.fields
            .iter()
            .filter(|field| field.sensitive)
            .map(|field| field.key.as_str())
    }

    /// The schema's top-level `title` (Python SDKs send the model name here).
    pub fn title(&self) -> Option<&str> {
        self.title.as_deref()
    }

    /// The schema's top-level `description`.
    pub fn description(&self) -> Option<&str> {
        self.description.as_deref()
    }

    /// The `requestedSchema` exactly as the server sent it, unknown keywords included.
    pub fn schema(&self) -> &Value {
        self.schema.get_or_init(|| {
            let mut root = self.root.to_value();
            if let Some(properties) = root.get_mut("properties") {
                *properties = Value::Object(
                    self.fields
                        .iter()
                        .map(|field| (field.key.clone(), field.schema.to_value()))
                        .collect(),
                );
            }
            root
        })
    }
}

/// One property of the form.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Field {
    /// The property key: the question id and the key in `content`.
    pub key: String,
    /// The property's `title`.
    pub title: Option<String>,
    /// The property's `description`.
    pub description: Option<String>,
    /// Whether the schema's `required` names this property.
    pub required: bool,
    /// What kind of value the field takes, with its constraints.
    pub kind: FieldKind,
    /// The property's `default`, checked against the field's constraints. Integer defaults such as
    /// `3.0` are stored as the JSON integer `3`.
    pub default: Option<Value>,
    /// The property schema as sent, unknown keywords (`pattern`, `x-openai-*`, ...) included;
    /// shared with the render block's question.
    pub schema: JsonText,
    /// Whether the key or the title names a secret (a password, a token, a card number...),
    /// which a server must not ask for in a form.
    pub sensitive: bool,
}

/// A JSON value as compact text: every member as the server sent it, in its order. A field's
/// schema and a request's `_meta` are kept this way (and, in a host, a call's arguments).
///
/// Text rather than a [`Value`]: a pending form holds them for as long as the person takes,
/// and a parsed tree (a map with its index per object) costs several times the text. Clones
/// share the text.
#[derive(Clone)]
pub struct JsonText(Arc<RawValue>);

impl JsonText {
    /// The text of `value`.
    pub fn new(value: &Value) -> JsonText {
        JsonText::of(value)
    }

    /// The text of a JSON value built from parts of a schema (a `Value`, or a map of them).
    pub(crate) fn of(value: &impl Serialize) -> JsonText {
        // Serializing values cannot fail: their keys are strings and their numbers finite.
        let raw =
            serde_json::value::to_raw_value(value).unwrap_or_else(|_| RawValue::NULL.to_owned());
        JsonText(Arc::from(raw))
    }

    /// The JSON text.
    pub fn as_str(&self) -> &str {
        self.0.get()
    }

    /// The value parsed again.
    pub fn to_value(&self) -> Value {
        // The text was written from a `Value`, so it reads back.
        serde_json::from_str(self.0.get()).unwrap_or(Value::Null)
    }
}

impl PartialEq for JsonText {
    fn eq(&self, other: &JsonText) -> bool {
        self.as_str() == other.as_str()
    }
}

impl std::fmt::Debug for JsonText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for JsonText {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for JsonText {
    /// Through a [`Value`], so that any deserializer will do (`serde_json::from_value` too).
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<JsonText, D::Error> {
        Value::deserialize(deserializer).map(|value| JsonText::new(&value))
    }
}

/// What a field accepts.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum FieldKind {
    /// A string typed by the person (`type: "string"` without options).
    Text(TextRules),
    /// A JSON number (`type: "number"`).
    Number(NumberRules),
    /// A JSON integer (`type: "integer"`).
    Integer(NumberRules),
    /// `true` or `false` (`type: "boolean"`).
    Boolean,
    /// One string out of a fixed list (`enum`, `oneOf`, or legacy `enum` + `enumNames`).
    SingleSelect(SingleSelect),
    /// Several distinct strings out of a fixed list (`type: "array"` with `items.enum` or
    /// `items.anyOf`).
    MultiSelect(MultiSelect),
    /// Any number of typed strings (`type: "array"` whose string `items` list no options),
    /// with optional suggestions. Only with [`crate::ParseOptions::openai_elicitation`].
    TextList(TextList),
    /// One resource URI (a `format: "uri"` string) or several (an array of them) picked from
    /// the plugin's options or added by the person (`x-openai-input`). Only with
    /// [`crate::ParseOptions::openai_elicitation`].
    Resource(ResourcePicker),
}

/// A free-text list: every item follows `items`' string rules.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct TextList {
    /// The rules of each item, and the suggestions (`items.x-openai-suggestions`).
    pub items: TextRules,
    /// `minItems`.
    pub min_items: Option<u64>,
    /// `maxItems`.
    pub max_items: Option<u64>,
    /// `uniqueItems: true`: no item twice.
    pub unique_items: bool,
}

/// An `x-openai-input` resource picker.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ResourcePicker {
    /// Whether several resources are picked (an array field) or one (a string field).
    pub multiple: bool,
    /// How a multi-select picker selects (always [`Selection::Explicit`] for one resource).
    pub selection: Selection,
    /// The resources the plugin offers (MCP `Resource`s), in schema order; URIs are unique.
    pub options: Vec<ResourceOption>,
    /// Whether the person may add local files, and which (`userOptions`). Answers may then be
    /// `file://` URIs besides the options'.
    pub uploads: Option<Uploads>,
    /// `minItems` (multi-select).
    pub min_items: Option<u64>,
    /// `maxItems` (multi-select).
    pub max_items: Option<u64>,
}

/// `x-openai-input.selection`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Selection {
    /// `"explicit"` (the default): the person selects and deselects options.
    Explicit,
    /// `"implicit"`: every option starts in the answer; what remains at submit is the answer.
    /// Always allows uploads.
    Implicit,
}

impl Selection {
    /// The keyword value as written in a schema.
    pub fn as_str(self) -> &'static str {
        match self {
            Selection::Explicit => "explicit",
            Selection::Implicit => "implicit",
        }
    }
}

/// One resource a picker offers.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ResourceOption {
    /// The resource URI: what the answer holds.
    pub uri: String,
    /// The resource `name`.
    pub name: String,
    /// The resource `title`, shown in place of the name when present.
    pub title: Option<String>,
    /// The resource `description`.
    pub description: Option<String>,
    /// The resource `mimeType`.
    pub mime_type: Option<String>,
    /// `_meta["openai/thumbnail"]`, checked like an option thumbnail.
    pub thumbnail: Option<Thumbnail>,
}

impl ResourceOption {
    /// The text shown for the option: the title, else the name.
    pub fn label(&self) -> &str {
        self.title.as_deref().unwrap_or(&self.name)
    }
}

/// `x-openai-input.userOptions`: the person may add files of their own.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Uploads {
    /// HTML `accept` tokens (`.stl`, `image/*`); empty means any file.
    pub accept: Vec<String>,
}

/// An option's image (`x-openai-thumbnail`, an MCP `Icon`): `src` is an `https://` URL or a
/// base64 `data:image/...` URI, nothing else.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Thumbnail {
    /// The image URL.
    pub src: String,
    /// The icon's `mimeType`, if given.
    pub mime_type: Option<String>,
}

/// Constraints of a text field.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct TextRules {
    /// `minLength`, in Unicode code points.
    pub min_length: Option<u64>,
    /// `maxLength`, in Unicode code points.
    pub max_length: Option<u64>,
    /// `format`.
    pub format: Option<StringFormat>,
    /// `pattern`, an ECMAScript regex matched unanchored.
    pub pattern: Option<Pattern>,
    /// `x-openai-suggestions`: proposed values; free text stays allowed.
    pub suggestions: Vec<Choice>,
}

/// Constraints of a number or integer field, as the schema wrote them.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct NumberRules {
    /// `minimum` (inclusive).
    pub minimum: Option<Number>,
    /// `maximum` (inclusive).
    pub maximum: Option<Number>,
    /// `exclusiveMinimum` (JSON Schema 2020-12 numeric form).
    pub exclusive_minimum: Option<Number>,
    /// `exclusiveMaximum` (JSON Schema 2020-12 numeric form).
    pub exclusive_maximum: Option<Number>,
    /// `multipleOf`, a positive number.
    pub multiple_of: Option<Number>,
}

/// A single-select field's options.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct SingleSelect {
    /// The options in schema order. Values and labels are unique within the field.
    pub options: Vec<Choice>,
}

/// A multi-select field's options and item counts.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct MultiSelect {
    /// The options in schema order. Values and labels are unique within the field.
    pub options: Vec<Choice>,
    /// `minItems`.
    pub min_items: Option<u64>,
    /// `maxItems`.
    pub max_items: Option<u64>,
}

/// One option of a select field (or one suggestion of a text field).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Choice {
    /// The machine value sent back in `content` (`const` or `enum[i]`).
    pub value: String,
    /// The text shown to the person (`title`, `enumNames[i]`, or the value itself).
    pub label: String,
    /// The option's `description`, if any.
    pub description: Option<String>,
    /// The option's `x-openai-thumbnail` (or its deprecated alias `x-openai-preview`), read
    /// only with [`crate::ParseOptions::openai_elicitation`].
    pub thumbnail: Option<Thumbnail>,
}

/// The string formats forms support.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum StringFormat {
    /// `email`: an address like `ada@example.com`.
    Email,
    /// `uri`: an absolute URI with a scheme.
    Uri,
    /// `date`: an RFC 3339 full-date, `2026-01-31`.
    Date,
    /// `date-time`: an RFC 3339 date-time with a time zone, `2026-01-31T09:30:00Z`.
    DateTime,
}

impl StringFormat {
    /// The keyword value as written in a schema.
    pub fn as_str(self) -> &'static str {
        match self {
            StringFormat::Email => "email",
            StringFormat::Uri => "uri",
            StringFormat::Date => "date",
            StringFormat::DateTime => "date-time",
        }
    }

    /// The format named `name`, if forms support it.
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "email" => Some(StringFormat::Email),
            "uri" => Some(StringFormat::Uri),
            "date" => Some(StringFormat::Date),
            "date-time" => Some(StringFormat::DateTime),
            _ => None,
        }
    }
}
