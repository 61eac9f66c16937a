//! Parsing `requestedSchema` into a [`Form`], declining anything outside the supported grammar.
//!
//! The grammar is MCP 2025-11-25's (identical in 2026-07-28): a flat object whose properties are
//! strings (optionally with `format`, `minLength`, `maxLength`), numbers, integers, booleans, or one
//! of the five enum shapes. On top of it forms accept `pattern`, `exclusiveMinimum`,
//! `exclusiveMaximum`, `multipleOf`, `x-openai-suggestions` and option `description`s, and keep every
//! other unknown keyword untouched in [`Field::schema`]. With OpenAI's extension
//! ([`crate::ParseOptions::openai_elicitation`]) they also read option thumbnails, string arrays
//! without options (free-text lists) and `x-openai-input` resource pickers (`crate::resource`). A keyword that would change what is valid
//! and that forms cannot honour declines the whole schema, so content we accept always passes the
//! server's own JSON Schema check.

use std::collections::HashSet;

use serde_json::{Map, Value};

use crate::decline::{Decline, DeclineRule};
use crate::field::{Field, FieldKind, Form, JsonText};
use crate::kinds::{
    parse_array, parse_number_rules, parse_string, reject_format, reject_options, text,
};
use crate::limits::{MAX_KEY_BYTES, MAX_PROPERTIES, MAX_TEXT_BYTES};
use crate::resource::picker_default;
use crate::size::{self, kind_of, show};
use crate::validate::{check_value, normalize};

pub(crate) type Object = Map<String, Value>;

/// Member lookups on schema objects. They hold a handful of keys, so a scan beats hashing the key.
pub(crate) trait Members {
    /// The member `key`.
    fn member(&self, key: &str) -> Option<&Value>;
    /// Whether there is a member `key`.
    fn has(&self, key: &str) -> bool {
        self.member(key).is_some()
    }
}

impl Members for Object {
    fn member(&self, key: &str) -> Option<&Value> {
        const SCAN: usize = 12;
        if self.len() <= SCAN {
            self.iter()
                .find_map(|(name, value)| (name == key).then_some(value))
        } else {
            self.get(key)
        }
    }
}

/// Keywords that change what is valid and that forms do not support, anywhere in a schema.
const UNSUPPORTED: &[&str] = &[
    "allOf",
    "anyOf",
    "not",
    "if",
    "then",
    "else",
    "const",
    "dependentSchemas",
    "dependentRequired",
    "contains",
    "minContains",
    "maxContains",
    "prefixItems",
    "additionalItems",
    "unevaluatedItems",
    "unevaluatedProperties",
    "patternProperties",
    "propertyNames",
    "additionalProperties",
    "minProperties",
    "maxProperties",
    "required",
];

/// Keywords that point at other schemas.
const REFERENCES: &[&str] = &["$ref", "$dynamicRef", "$recursiveRef"];

/// Parses a `requestedSchema` into a [`Form`], or declines it as a whole.
///
/// The schema may carry `$schema`, a top-level `title` and `description` (Python SDKs send the model
/// name as `title`) and `additionalProperties`; other top-level keywords that constrain the object
/// (`allOf`, `minProperties`, ...) are declined.
pub fn parse_schema(requested_schema: &Value) -> Result<Form, Decline> {
    size::check(requested_schema, "requestedSchema")?;
    parse_sized_schema(requested_schema, false)
}

/// [`parse_schema`] for a schema already known to be within the size limits, e.g. as part of
/// params that are. `openai`: read OpenAI's vocabulary too (thumbnails, free-text lists,
/// resource pickers).
pub(crate) fn parse_sized_schema(requested_schema: &Value, openai: bool) -> Result<Form, Decline> {
    let Value::Object(root) = requested_schema else {
        return Err(not_an_object(requested_schema));
    };
    let (title, description) = check_root(root)?;
    let properties = match root.member("properties") {
        Some(Value::Object(properties)) => properties,
        other => return Err(no_properties(other)),
    };
    let parts = parse_properties(root, properties, openai)?;
    // Sized exactly: `collect` on this zip would leave room for four fields or more, which a
    // pending form would hold.
    let mut fields = Vec::with_capacity(parts.len());
    for (parts, (key, schema)) in parts.into_iter().zip(properties) {
        fields.push(parts.into_field(key.clone(), schema));
    }
    Ok(Form::new(
        fields,
        title,
        description,
        JsonText::of(&RootWithoutProperties(root)),
    ))
}

/// A schema's top level with `null` in place of `properties`, which the fields hold.
struct RootWithoutProperties<'a>(&'a Map<String, Value>);

impl serde::Serialize for RootWithoutProperties<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(self.0.iter().map(|(key, value)| {
            let value = if key == "properties" {
                &Value::Null
            } else {
                value
            };
            (key, value)
        }))
    }
}

fn not_an_object(requested_schema: &Value) -> Decline {
    Decline::whole(
        DeclineRule::NotAnObject,
        format!(
            "requestedSchema must be a JSON object, not {}",
            kind_of(requested_schema)
        ),
    )
}

fn no_properties(properties: Option<&Value>) -> Decline {
    match properties {
        Some(other) => Decline::whole(
            DeclineRule::NoProperties,
            format!(
                "requestedSchema `properties` must be an object, not {}",
                kind_of(other)
            ),
        ),
        None => Decline::whole(
            DeclineRule::NoProperties,
            "requestedSchema has no `properties`",
        ),
    }
}

/// Checks the top level apart from `properties` and returns its `title` and `description`.
fn check_root(root: &Object) -> Result<(Option<String>, Option<String>), Decline> {
    match root.member("type") {
        None => {}
        Some(Value::String(name)) if name == "object" => {}
        Some(other) => {
            return Err(Decline::whole(
                DeclineRule::NotAnObject,
                format!(
                    "requestedSchema `type` must be \"object\", not {}",
                    show(other)
                ),
            ));
        }
    }
    check_root_keywords(root)?;
    if let Some(schema_uri) = root.member("$schema").filter(|value| !value.is_string()) {
        return Err(Decline::whole(
            DeclineRule::InvalidKeyword,
            format!(
                "requestedSchema `$schema` must be a string, not {}",
                kind_of(schema_uri)
            ),
        ));
    }
    let title = root_text(root, "title")?;
    let description = root_text(root, "description")?;
    Ok((title, description))
}

/// Checks the number of properties and `required`, then parses every property in order.
fn parse_properties(
    root: &Object,
    properties: &Object,
    openai: bool,
) -> Result<Vec<FieldParts>, Decline> {
    if properties.len() > MAX_PROPERTIES {
        return Err(Decline::whole(
            DeclineRule::TooLarge,
            format!(
                "requestedSchema has {} properties; at most {MAX_PROPERTIES} are allowed",
                properties.len()
            ),
        ));
    }
    let required = parse_required(root, properties)?;
    properties
        .iter()
        .map(|(key, schema)| parse_property(key, schema, required.contains(key.as_str()), openai))
        .collect()
}

/// Whether `key` is a keyword that declines a schema's top level (see [`check_root_keywords`]).
fn constrains_root(key: &str) -> bool {
    REFERENCES.contains(&key)
        || matches!(key, "oneOf" | "enum")
        || (UNSUPPORTED.contains(&key) && !matches!(key, "additionalProperties" | "required"))
}

fn check_root_keywords(root: &Object) -> Result<(), Decline> {
    // One pass over the few keys a schema has; the lookups below pick the keyword to report.
    if !root.keys().any(|key| constrains_root(key)) {
        return Ok(());
    }
    if let Some(keyword) = REFERENCES.iter().find(|keyword| root.has(keyword)) {
        return Err(Decline::whole(
            DeclineRule::Ref,
            format!("requestedSchema uses `{keyword}`; forms must be self-contained"),
        ));
    }
    let constraining = UNSUPPORTED
        .iter()
        .chain(&["oneOf", "enum"])
        .filter(|keyword| !matches!(**keyword, "additionalProperties" | "required"))
        .find(|keyword| root.has(keyword));
    match constraining {
        Some(keyword) => Err(Decline::whole(
            DeclineRule::UnsupportedKeyword,
            format!("requestedSchema uses `{keyword}`, which forms do not support"),
        )),
        None => Ok(()),
    }
}

fn root_text(root: &Object, keyword: &str) -> Result<Option<String>, Decline> {
    match root.member(keyword) {
        None => Ok(None),
        Some(Value::String(text)) if text.len() <= MAX_TEXT_BYTES => Ok(Some(text.clone())),
        Some(Value::String(text)) => Err(Decline::whole(
            DeclineRule::TooLarge,
            format!(
                "requestedSchema `{keyword}` is {} bytes long; at most {MAX_TEXT_BYTES} are allowed",
                text.len()
            ),
        )),
        Some(other) => Err(Decline::whole(
            DeclineRule::InvalidKeyword,
            format!(
                "requestedSchema `{keyword}` must be a string, not {}",
                kind_of(other)
            ),
        )),
    }
}

fn parse_required<'a>(root: &'a Object, properties: &Object) -> Result<HashSet<&'a str>, Decline> {
    let list = match root.member("required") {
        None => return Ok(HashSet::new()),
        Some(Value::Array(list)) => list,
        Some(other) => {
            return Err(Decline::whole(
                DeclineRule::InvalidRequired,
                format!(
                    "requestedSchema `required` must be an array of property names, not {}",
                    kind_of(other)
                ),
            ));
        }
    };
    let mut names = HashSet::new();
    for entry in list {
        let Value::String(name) = entry else {
            return Err(Decline::whole(
                DeclineRule::InvalidRequired,
                format!(
                    "requestedSchema `required` lists {}, which is not a property name",
                    show(entry)
                ),
            ));
        };
        if !properties.contains_key(name) {
            return Err(Decline::property(
                name,
                DeclineRule::UnknownRequired,
                "is listed in `required` but is not in `properties`",
            ));
        }
        names.insert(name.as_str());
    }
    Ok(names)
}

/// A parsed property, all but its key and schema, which [`FieldParts::into_field`] adds.
struct FieldParts {
    title: Option<String>,
    description: Option<String>,
    required: bool,
    kind: FieldKind,
    default: Option<Value>,
}

impl FieldParts {
    fn into_field(self, key: String, schema: &Value) -> Field {
        let sensitive = crate::sensitive::names_a_secret(&key)
            || self
                .title
                .as_deref()
                .is_some_and(crate::sensitive::names_a_secret);
        Field {
            sensitive,
            key,
            title: self.title,
            description: self.description,
            required: self.required,
            kind: self.kind,
            default: self.default,
            schema: JsonText::new(schema),
        }
    }
}

fn parse_property(
    key: &str,
    schema: &Value,
    required: bool,
    openai: bool,
) -> Result<FieldParts, Decline> {
    if key.len() > MAX_KEY_BYTES {
        return Err(Decline::property(
            key,
            DeclineRule::TooLarge,
            format!(
                "the key is {} bytes long; at most {MAX_KEY_BYTES} are allowed",
                key.len()
            ),
        ));
    }
    let Value::Object(obj) = schema else {
        return Err(Decline::property(
            key,
            DeclineRule::NotAnObject,
            format!("the schema must be a JSON object, not {}", kind_of(schema)),
        ));
    };
    check_keywords(key, obj, "")?;
    let type_name = match obj.member("type") {
        Some(Value::String(name)) => name.as_str(),
        Some(Value::Array(_)) => {
            return Err(Decline::property(
                key,
                DeclineRule::UnsupportedType,
                "`type` lists several types; a form field needs exactly one",
            ));
        }
        Some(other) => {
            return Err(Decline::property(
                key,
                DeclineRule::UnsupportedType,
                format!("`type` must be a string, not {}", kind_of(other)),
            ));
        }
        None => {
            return Err(Decline::property(
                key,
                DeclineRule::UnsupportedType,
                "has no `type`",
            ));
        }
    };
    let title = text(key, obj, "title")?;
    let description = text(key, obj, "description")?;
    let kind = match type_name {
        "string" => parse_string(key, obj, openai)?,
        "number" => FieldKind::Number(parse_number_rules(key, obj, type_name, false)?),
        "integer" => FieldKind::Integer(parse_number_rules(key, obj, type_name, true)?),
        "boolean" => {
            reject_options(key, obj, type_name)?;
            reject_format(key, obj, type_name)?;
            FieldKind::Boolean
        }
        "array" => parse_array(key, obj, openai)?,
        "object" => {
            return Err(Decline::property(
                key,
                DeclineRule::NestedObject,
                "is an object; forms hold only flat fields",
            ));
        }
        other => {
            return Err(Decline::property(
                key,
                DeclineRule::UnsupportedType,
                format!(
                    "`type` \"{}\" is not supported; use string, number, integer, boolean or array",
                    size::clip(other)
                ),
            ));
        }
    };
    let is_array = match &kind {
        FieldKind::MultiSelect(_) | FieldKind::TextList(_) => true,
        FieldKind::Resource(picker) => picker.multiple,
        _ => false,
    };
    if !is_array && obj.has("items") {
        return Err(Decline::property(
            key,
            DeclineRule::UnsupportedKeyword,
            "has `items` but is not an array",
        ));
    }
    let default = match (&kind, obj.member("default")) {
        (FieldKind::Resource(picker), default) => picker_default(key, picker, default)?,
        (_, None) => None,
        (_, Some(value)) => Some(normalize(&kind, value)),
    };
    let default = match default {
        None => None,
        Some(value) => {
            if let Some(problem) = check_value(&kind, &value).into_iter().next() {
                return Err(Decline::property(
                    key,
                    DeclineRule::DefaultOutsideConstraints,
                    format!("`default` {} is not allowed: it {problem}", show(&value)),
                ));
            }
            Some(value)
        }
    };
    Ok(FieldParts {
        title,
        description,
        required,
        kind,
        default,
    })
}

/// Declines references, unsupported keywords and nested `properties` in a property schema (or, with
/// `place` = "`items` ", in its `items`).
pub(crate) fn check_keywords(key: &str, obj: &Object, place: &str) -> Result<(), Decline> {
    // One pass over the few keys a property has; the lookups below pick the keyword to report.
    let flagged = |key: &String| {
        key == "properties"
            || REFERENCES.contains(&key.as_str())
            || UNSUPPORTED.contains(&key.as_str())
    };
    if !obj.keys().any(flagged) {
        return Ok(());
    }
    if let Some(keyword) = REFERENCES.iter().find(|keyword| obj.has(keyword)) {
        return Err(Decline::property(
            key,
            DeclineRule::Ref,
            format!("{place}uses `{keyword}`; forms must be self-contained"),
        ));
    }
    if obj.has("properties") {
        return Err(Decline::property(
            key,
            DeclineRule::NestedObject,
            format!("{place}has `properties`; forms hold only flat fields"),
        ));
    }
    let in_items = !place.is_empty();
    let unsupported = UNSUPPORTED
        .iter()
        .filter(|keyword| !(in_items && **keyword == "anyOf"))
        .find(|keyword| obj.has(keyword));
    match unsupported {
        Some(keyword) => Err(Decline::property(
            key,
            DeclineRule::UnsupportedKeyword,
            format!("{place}uses `{keyword}`, which forms do not support"),
        )),
        None => Ok(()),
    }
}
