//! From a Rust type's JSON Schema (schemars) to the flat `requestedSchema` that elicitation allows.
//!
//! The schema schemars generates is lowered property by property into the shapes of the MCP
//! grammar, in a fixed key order, and anything the grammar cannot express is an error that names
//! the field: nothing is dropped silently. The finished schema is parsed by `formwork_forms`, the
//! same engine that later checks the answer, so a schema that builds is one a strict host accepts.

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde_json::{Map, Value, json};

use crate::openai::{ResourceInput, Selection, Suggestion, Thumbnail};

type Object = Map<String, Value>;

/// Why a type cannot be asked as a form.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SchemaError {
    /// The type is not a struct with named fields.
    #[error("a form is a struct with named fields; {0}")]
    NotAnObject(String),
    /// A field has a shape elicitation cannot express.
    #[error("field `{field}` {reason}")]
    Field {
        /// The field's key as it appears in the form.
        field: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The form engine refused the finished schema.
    #[error("the form engine refuses the schema: {0}")]
    Declined(String),
}

impl SchemaError {
    fn field(field: &str, reason: impl Into<String>) -> SchemaError {
        SchemaError::Field {
            field: field.to_owned(),
            reason: reason.into(),
        }
    }
}

/// A flat elicitation form: `{"type":"object","properties":…,"required":…}` with the fields in
/// declaration order.
#[derive(Debug, Clone, PartialEq)]
pub struct FormSchema {
    properties: Object,
    required: Vec<String>,
}

impl FormSchema {
    /// Lowers `T`'s JSON Schema (from `#[derive(JsonSchema)]`) into a form.
    ///
    /// Strings (with `email`/`url` or a `date`/`date-time` `format`, `length`, `regex`), integers
    /// and numbers (with `range`), booleans, unit-variant enums (single select) and `Vec`s or sets
    /// of them (multi select) are fields, and so is a `Vec<String>` that [`Elicit::customize`]
    /// makes a resource picker or gives suggestions; `Option<_>` and `#[serde(default)]` fields are
    /// optional, and defaults are kept. An enum option's title is its `#[schemars(title)]` or the
    /// first paragraph of its doc comment; the rest of the doc is its description. The struct's own
    /// title and description are not part of the form (the ask's message is).
    pub fn of<T: JsonSchema>() -> Result<FormSchema, SchemaError> {
        let mut settings = SchemaSettings::draft2020_12();
        settings.inline_subschemas = true;
        let root = settings.into_generator().into_root_schema_for::<T>();
        FormSchema::from_json_schema(root.as_value())
    }

    fn from_json_schema(root: &Value) -> Result<FormSchema, SchemaError> {
        let Some(root) = root.as_object() else {
            return Err(SchemaError::NotAnObject(
                "its schema is not an object".into(),
            ));
        };
        if root.get("type") != Some(&json!("object")) {
            return Err(SchemaError::NotAnObject(format!(
                "its schema has type {}",
                root.get("type").unwrap_or(&Value::Null)
            )));
        }
        for key in root.keys() {
            let allowed = [
                "$schema",
                "title",
                "description",
                "type",
                "properties",
                "required",
                "additionalProperties",
            ];
            if !allowed.contains(&key.as_str()) {
                return Err(SchemaError::NotAnObject(format!(
                    "its schema uses `{key}` at the top"
                )));
            }
        }
        let mut properties = Object::new();
        if let Some(props) = root.get("properties").and_then(Value::as_object) {
            for (key, schema) in props {
                properties.insert(key.clone(), lower_property(key, schema)?);
            }
        }
        let required = root
            .get("required")
            .and_then(Value::as_array)
            .map(|list| {
                list.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default();
        Ok(FormSchema {
            properties,
            required,
        })
    }

    /// The schema as sent: only `type`, `properties` and (when a field is required) `required`.
    pub fn to_value(&self) -> Value {
        let mut root = Object::new();
        root.insert("type".into(), json!("object"));
        root.insert("properties".into(), Value::Object(self.properties.clone()));
        if !self.required.is_empty() {
            root.insert("required".into(), json!(self.required));
        }
        Value::Object(root)
    }

    /// The schema without its lists of text (multi-resource pickers, suggestion lists), which the
    /// form engine does not read: [`FormSchema::check_content`] checks them item by item.
    fn engine_schema(&self) -> Value {
        let mut checked = self.clone();
        checked
            .properties
            .retain(|_, schema| !schema.as_object().is_some_and(is_free_list));
        checked
            .required
            .retain(|key| checked.properties.contains_key(key));
        checked.to_value()
    }

    /// Checks accepted `content` against the form: the form engine checks every field but the
    /// lists of text, whose items it checks one by one against the list's item schema (with the
    /// item counts checked here), and the answer to a resource picker without uploads must name
    /// offered resources. The text lists what is wrong, one `key: message` per line.
    pub(crate) fn check_content(&self, content: &Object) -> Result<(), String> {
        let engine =
            formwork_forms::parse_schema(&self.engine_schema()).map_err(|e| e.to_string())?;
        let mut plain = content.clone();
        let mut errors = Vec::new();
        for (key, schema) in &self.properties {
            let Some(schema) = schema.as_object().filter(|schema| is_free_list(schema)) else {
                continue;
            };
            match plain.remove(key) {
                None if self.required.contains(key) => errors.push(format!("{key}: is required")),
                None => {}
                Some(value) => errors.extend(check_text_list(key, schema, &value)),
            }
        }
        if let Err(found) = engine.validate(&plain) {
            errors.extend(found.errors.iter().map(ToString::to_string));
        }
        for (key, uris) in self.resource_choices() {
            let answered: Vec<&str> = match content.get(key) {
                Some(Value::String(uri)) => vec![uri.as_str()],
                Some(Value::Array(list)) => list.iter().filter_map(Value::as_str).collect(),
                _ => Vec::new(),
            };
            for uri in answered.into_iter().filter(|uri| !uris.contains(uri)) {
                errors.push(format!(
                    "{key}: {uri:?} is not one of the offered resources"
                ));
            }
        }
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors.join("\n"))
        }
    }

    /// Whether the form uses the `openai/elicitation` vocabulary (`pattern`, option descriptions,
    /// thumbnails, suggestions, resource pickers), so only clients with that extension can show it.
    pub fn uses_openai_vocabulary(&self) -> bool {
        self.properties.values().any(|schema| {
            let Some(schema) = schema.as_object() else {
                return false;
            };
            let options = schema
                .get("oneOf")
                .or_else(|| schema.get("items").and_then(|items| items.get("anyOf")));
            schema.contains_key("pattern")
                || schema.contains_key("x-openai-suggestions")
                || schema
                    .get("items")
                    .is_some_and(|items| items.get("x-openai-suggestions").is_some())
                || schema.contains_key("x-openai-input")
                || options.and_then(Value::as_array).is_some_and(|options| {
                    options.iter().any(|option| {
                        option.get("description").is_some()
                            || option.get("x-openai-thumbnail").is_some()
                    })
                })
        })
    }

    fn property_mut(&mut self, key: &str) -> Result<&mut Object, SchemaError> {
        self.properties
            .get_mut(key)
            .and_then(Value::as_object_mut)
            .ok_or_else(|| SchemaError::field(key, "is not a field of this form"))
    }

    /// Puts `thumbnail` on the option `value` of the choice field `key`.
    pub fn thumbnail(
        &mut self,
        key: &str,
        value: &str,
        thumbnail: Thumbnail,
    ) -> Result<&mut Self, SchemaError> {
        check_image_src(key, &thumbnail.src)?;
        let schema = self.property_mut(key)?;
        let options = match schema.get_mut("oneOf") {
            Some(options) => Some(options),
            None => schema
                .get_mut("items")
                .and_then(|items| items.get_mut("anyOf")),
        };
        let Some(Value::Array(options)) = options else {
            return Err(SchemaError::field(
                key,
                "has no titled options to put a thumbnail on",
            ));
        };
        let Some(option) = options
            .iter_mut()
            .find(|option| option.get("const").and_then(Value::as_str) == Some(value))
            .and_then(Value::as_object_mut)
        else {
            return Err(SchemaError::field(key, format!("has no option `{value}`")));
        };
        option.insert("x-openai-thumbnail".into(), to_json(&thumbnail));
        Ok(self)
    }

    /// Offers `suggestions` on the free-text field `key`: a string, or a `Vec<String>` whose items
    /// each take a suggestion or free text.
    pub fn suggestions(
        &mut self,
        key: &str,
        suggestions: Vec<Suggestion>,
    ) -> Result<&mut Self, SchemaError> {
        for suggestion in &suggestions {
            if let Some(thumbnail) = &suggestion.thumbnail {
                check_image_src(key, &thumbnail.src)?;
            }
        }
        let schema = self.property_mut(key)?;
        let target = if is_free_text(schema) {
            schema
        } else if is_free_list(schema) {
            match schema.get_mut("items").and_then(Value::as_object_mut) {
                Some(items) => items,
                None => return Err(SchemaError::field(key, "has no item schema")),
            }
        } else {
            return Err(SchemaError::field(
                key,
                "takes suggestions only as a free-text string or a list of them",
            ));
        };
        target.insert("x-openai-suggestions".into(), to_json(&suggestions));
        Ok(self)
    }

    /// Makes the field `key` a resource picker: a string field picks one resource (the answer is
    /// its URI), a `Vec<String>` field picks several (the answer lists their URIs). With uploads
    /// allowed the client may also answer URIs of its own.
    pub fn resource_input(
        &mut self,
        key: &str,
        input: ResourceInput,
    ) -> Result<&mut Self, SchemaError> {
        let schema = self.property_mut(key)?;
        let target = if is_free_text(schema) {
            if input.selection.is_some() {
                return Err(SchemaError::field(
                    key,
                    "picks one resource; `selection` is for a list of them",
                ));
            }
            &mut *schema
        } else if is_free_list(schema) {
            if input.selection == Some(Selection::Implicit) && schema.contains_key("default") {
                return Err(SchemaError::field(
                    key,
                    "has a default; an implicit selection cannot have one",
                ));
            }
            match schema.get_mut("items").and_then(Value::as_object_mut) {
                Some(items) => items,
                None => return Err(SchemaError::field(key, "has no item schema")),
            }
        } else {
            return Err(SchemaError::field(
                key,
                "can be a resource picker only as a free-text string or a list of them",
            ));
        };
        match target.get("format") {
            None => insert_after(
                target,
                "format",
                json!("uri"),
                &["type", "title", "description"],
            ),
            Some(format) if format == "uri" => {}
            Some(format) => {
                return Err(SchemaError::field(
                    key,
                    format!("has format {format}; a resource picker's is \"uri\""),
                ));
            }
        }
        schema.insert("x-openai-input".into(), to_json(&input));
        Ok(self)
    }

    /// The URIs an answer to `key` must be one of: the options of a resource picker without
    /// uploads.
    fn resource_choices(&self) -> impl Iterator<Item = (&str, Vec<&str>)> {
        self.properties.iter().filter_map(|(key, schema)| {
            let input = schema.get("x-openai-input")?;
            if input.get("userOptions").is_some()
                || input.get("selection") == Some(&json!("implicit"))
            {
                return None;
            }
            let uris = input
                .get("options")?
                .as_array()?
                .iter()
                .filter_map(|option| option.get("uri").and_then(Value::as_str))
                .collect();
            Some((key.as_str(), uris))
        })
    }
}

/// The problems of `value` as the answer to the list of text `key` (a multi-resource picker or a
/// list with suggestions).
fn check_text_list(key: &str, schema: &Object, value: &Value) -> Vec<String> {
    let Some(list) = value.as_array() else {
        return vec![format!("{key}: must be a list of strings")];
    };
    let mut errors = Vec::new();
    let count = list.len() as u64;
    if let Some(min) = schema
        .get("minItems")
        .and_then(Value::as_u64)
        .filter(|min| count < *min)
    {
        errors.push(format!("{key}: must hold at least {min} items"));
    }
    if let Some(max) = schema
        .get("maxItems")
        .and_then(Value::as_u64)
        .filter(|max| count > *max)
    {
        errors.push(format!("{key}: must hold at most {max} items"));
    }
    // The item schema as a one-field form, so each item is checked by the form engine.
    let items = schema.get("items").cloned().unwrap_or(Value::Null);
    let item_form = json!({"type": "object", "properties": {"item": items}});
    let Ok(item_form) = formwork_forms::parse_schema(&item_form) else {
        return vec![format!("{key}: the form engine refuses its item schema")];
    };
    for item in list {
        if let Err(found) = item_form.validate_field("item", item) {
            errors.extend(
                found
                    .iter()
                    .map(|error| format!("{key}: {item}: {}", error.message)),
            );
        }
    }
    errors
}

fn to_json<T: serde::Serialize>(value: &T) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

/// A `Vec<String>` field: items that are plain strings, no options.
fn is_free_list(schema: &Object) -> bool {
    schema.get("type") == Some(&json!("array"))
        && schema
            .get("items")
            .and_then(Value::as_object)
            .is_some_and(|items| !items.contains_key("anyOf") && !items.contains_key("enum"))
}

fn is_free_text(schema: &Object) -> bool {
    schema.get("type") == Some(&json!("string"))
        && !schema.contains_key("oneOf")
        && !schema.contains_key("enum")
}

fn check_image_src(key: &str, src: &str) -> Result<(), SchemaError> {
    if src.starts_with("https://") || src.starts_with("data:image/") {
        Ok(())
    } else {
        Err(SchemaError::field(
            key,
            format!("has a thumbnail at {src:?}; it must be https:// or a data:image/ URI"),
        ))
    }
}

/// Inserts `key` after the last of `before` that the object holds (objects keep insertion order).
fn insert_after(object: &mut Object, key: &str, value: Value, before: &[&str]) {
    let mut rebuilt = Object::new();
    let position = object
        .keys()
        .rposition(|existing| before.contains(&existing.as_str()))
        .map_or(0, |index| index + 1);
    for (index, (existing, existing_value)) in std::mem::take(object).into_iter().enumerate() {
        if index == position {
            rebuilt.insert(key.to_owned(), value.clone());
        }
        rebuilt.insert(existing, existing_value);
    }
    if !rebuilt.contains_key(key) {
        rebuilt.insert(key.to_owned(), value);
    }
    *object = rebuilt;
}

const NOT_A_LIST_OF_OPTIONS: &str =
    "is an array of something other than enum options; a multi-select lists its options";

/// The keywords schemars writes that a property may carry, whatever its kind.
const COMMON: &[&str] = &["type", "title", "description", "default"];

fn lower_property(key: &str, schema: &Value) -> Result<Value, SchemaError> {
    let Some(schema) = schema.as_object() else {
        return Err(SchemaError::field(key, "has a boolean schema"));
    };
    let schema = unwrap_option(key, schema)?;
    if schema.contains_key("$ref") {
        return Err(SchemaError::field(key, "refers to another schema"));
    }
    if schema.contains_key("properties") || schema.get("type") == Some(&json!("object")) {
        return Err(SchemaError::field(
            key,
            "is a nested object; forms hold only flat fields",
        ));
    }
    let mut out = Object::new();
    if schema.contains_key("oneOf") || schema.contains_key("enum") {
        out.insert("type".into(), json!("string"));
        copy_text(key, &schema, &mut out)?;
        single_select(key, &schema, &mut out)?;
        only(key, &schema, &["oneOf", "enum"])?;
        copy_default(&schema, &mut out);
        return Ok(Value::Object(out));
    }
    let kind = schema
        .get("type")
        .and_then(Value::as_str)
        .ok_or_else(|| SchemaError::field(key, "has no single type"))?;
    out.insert("type".into(), json!(kind));
    copy_text(key, &schema, &mut out)?;
    match kind {
        "string" => {
            if let Some(format) = schema.get("format") {
                let known = ["email", "uri", "date", "date-time"];
                if !format.as_str().is_some_and(|name| known.contains(&name)) {
                    return Err(SchemaError::field(
                        key,
                        format!("has format {format}; forms know email, uri, date and date-time"),
                    ));
                }
                out.insert("format".into(), format.clone());
            }
            copy(&schema, &mut out, &["minLength", "maxLength", "pattern"]);
            only(
                key,
                &schema,
                &["format", "minLength", "maxLength", "pattern"],
            )?;
        }
        "integer" | "number" => {
            // schemars names the Rust width (`uint8`, `double`); a form has no such formats.
            copy(&schema, &mut out, &["minimum", "maximum"]);
            only(key, &schema, &["format", "minimum", "maximum"])?;
        }
        "boolean" => only(key, &schema, &[])?,
        "array" => {
            copy(&schema, &mut out, &["minItems", "maxItems"]);
            let items = schema
                .get("items")
                .and_then(Value::as_object)
                .ok_or_else(|| SchemaError::field(key, "is an array without one item schema"))?;
            if !items.contains_key("oneOf") && !items.contains_key("enum") {
                // A list of URIs can become a resource picker in `Elicit::customize`;
                // `Elicit::form` refuses it if it does not.
                let uri = items.get("format") == Some(&json!("uri"));
                let text_only = items.iter().all(|(name, value)| match name.as_str() {
                    "type" => value == "string",
                    "format" => uri,
                    _ => false,
                });
                if !text_only || items.get("type") != Some(&json!("string")) {
                    return Err(SchemaError::field(key, NOT_A_LIST_OF_OPTIONS));
                }
                out.insert("items".into(), json!({"type": "string"}));
                only(
                    key,
                    &schema,
                    &["minItems", "maxItems", "items", "uniqueItems"],
                )?;
                copy_default(&schema, &mut out);
                return Ok(Value::Object(out));
            }
            let mut item_out = Object::new();
            let mut select = Object::new();
            single_select(key, items, &mut select)?;
            match (select.remove("oneOf"), select.remove("enum")) {
                (Some(options), _) => {
                    item_out.insert("anyOf".into(), options);
                }
                (None, Some(values)) => {
                    item_out.insert("type".into(), json!("string"));
                    item_out.insert("enum".into(), values);
                }
                (None, None) => {}
            }
            for item_key in items.keys() {
                if !["type", "oneOf", "enum", "title", "description"].contains(&item_key.as_str()) {
                    return Err(SchemaError::field(
                        key,
                        format!("has `{item_key}` on its items, which a multi-select cannot carry"),
                    ));
                }
            }
            out.insert("items".into(), Value::Object(item_out));
            only(
                key,
                &schema,
                &["minItems", "maxItems", "items", "uniqueItems"],
            )?;
        }
        other => {
            return Err(SchemaError::field(
                key,
                format!("has type {other:?}, which a form cannot ask"),
            ));
        }
    }
    copy_default(&schema, &mut out);
    Ok(Value::Object(out))
}

/// `Option<T>`: schemars writes `type: [T, "null"]` or `anyOf: [T, {type: null}]`. The field is
/// optional either way (schemars leaves it out of `required`), so the null is dropped.
fn unwrap_option(key: &str, schema: &Object) -> Result<Object, SchemaError> {
    if let Some(Value::Array(types)) = schema.get("type") {
        let kinds: Vec<&Value> = types.iter().filter(|kind| *kind != "null").collect();
        let [kind] = kinds.as_slice() else {
            return Err(SchemaError::field(key, "has more than one type"));
        };
        let mut unwrapped = schema.clone();
        unwrapped.insert("type".into(), (*kind).clone());
        return Ok(unwrapped);
    }
    if let Some(Value::Array(branches)) = schema.get("anyOf") {
        let null = json!({"type": "null"});
        let rest: Vec<&Value> = branches.iter().filter(|branch| **branch != null).collect();
        let ([inner], true) = (rest.as_slice(), rest.len() < branches.len()) else {
            return Err(SchemaError::field(
                key,
                "is a union (`anyOf`); a field has one shape",
            ));
        };
        let Some(inner) = inner.as_object() else {
            return Err(SchemaError::field(key, "has a boolean schema"));
        };
        let mut unwrapped = inner.clone();
        for (name, value) in schema {
            if name != "anyOf" {
                unwrapped.insert(name.clone(), value.clone());
            }
        }
        return Ok(unwrapped);
    }
    Ok(schema.clone())
}

fn copy_text(key: &str, schema: &Object, out: &mut Object) -> Result<(), SchemaError> {
    for name in ["title", "description"] {
        match schema.get(name) {
            None => {}
            Some(Value::String(text)) => {
                out.insert(name.into(), json!(text));
            }
            Some(_) => return Err(SchemaError::field(key, format!("has a non-string {name}"))),
        }
    }
    Ok(())
}

fn copy(schema: &Object, out: &mut Object, names: &[&str]) {
    for name in names {
        if let Some(value) = schema.get(*name) {
            out.insert((*name).into(), value.clone());
        }
    }
}

fn copy_default(schema: &Object, out: &mut Object) {
    match schema.get("default") {
        None | Some(Value::Null) => {}
        Some(value) => {
            out.insert("default".into(), value.clone());
        }
    }
}

/// Fails when `schema` holds a keyword outside `COMMON` and `allowed`.
fn only(key: &str, schema: &Object, allowed: &[&str]) -> Result<(), SchemaError> {
    match schema
        .keys()
        .find(|name| !COMMON.contains(&name.as_str()) && !allowed.contains(&name.as_str()))
    {
        Some(name) => Err(SchemaError::field(
            key,
            format!("uses `{name}`, which elicitation cannot express"),
        )),
        None => Ok(()),
    }
}

/// A unit-variant enum: `enum: [..]` (no docs or titles) stays untitled; `oneOf: [{const, ...}]`
/// becomes titled options.
fn single_select(key: &str, schema: &Object, out: &mut Object) -> Result<(), SchemaError> {
    if let Some(values) = schema.get("enum") {
        let strings = values
            .as_array()
            .is_some_and(|values| values.iter().all(Value::is_string));
        if !strings {
            return Err(SchemaError::field(
                key,
                "has enum values that are not strings",
            ));
        }
        out.insert("enum".into(), values.clone());
        return Ok(());
    }
    let Some(Value::Array(variants)) = schema.get("oneOf") else {
        return Err(SchemaError::field(key, "has no option list"));
    };
    let mut options = Vec::with_capacity(variants.len());
    for variant in variants {
        options.push(lower_option(key, variant)?);
    }
    out.insert("oneOf".into(), Value::Array(options));
    Ok(())
}

fn lower_option(key: &str, variant: &Value) -> Result<Value, SchemaError> {
    let Some(variant) = variant.as_object() else {
        return Err(SchemaError::field(
            key,
            "has an option that is not a schema",
        ));
    };
    let value = match (variant.get("const"), variant.get("enum")) {
        (Some(Value::String(value)), _) => value.clone(),
        (None, Some(Value::Array(values))) if values.len() == 1 => match &values[0] {
            Value::String(value) => value.clone(),
            _ => {
                return Err(SchemaError::field(
                    key,
                    "has an option that is not a string",
                ));
            }
        },
        _ => {
            return Err(SchemaError::field(
                key,
                "has an enum variant that carries data; options are unit variants",
            ));
        }
    };
    for name in variant.keys() {
        if !["type", "const", "enum", "title", "description"].contains(&name.as_str()) {
            return Err(SchemaError::field(
                key,
                format!("has option `{value}` with `{name}`, which an option cannot carry"),
            ));
        }
    }
    let doc = variant.get("description").and_then(Value::as_str);
    let (title, description) = match (variant.get("title").and_then(Value::as_str), doc) {
        (Some(title), doc) => (title.to_owned(), doc.map(str::to_owned)),
        (None, Some(doc)) => match doc.split_once("\n\n") {
            Some((first, rest)) => (first.trim().to_owned(), Some(rest.trim().to_owned())),
            None => (doc.trim().to_owned(), None),
        },
        (None, None) => (value.clone(), None),
    };
    let mut option = Object::new();
    option.insert("const".into(), json!(value));
    option.insert("title".into(), json!(title));
    if let Some(description) = description.filter(|text| !text.is_empty()) {
        option.insert("description".into(), json!(description));
    }
    Ok(Value::Object(option))
}

/// A Rust type the person can be asked for: its fields are the form's fields.
///
/// Derive `serde::Deserialize` and `schemars::JsonSchema`, then implement this trait, usually
/// with an empty body. Override [`Elicit::customize`] to add the `openai/elicitation` vocabulary.
pub trait Elicit: JsonSchema + serde::de::DeserializeOwned {
    /// Adds to the form what attributes cannot say: thumbnails, suggestions, resource pickers.
    fn customize(form: &mut FormSchema) -> Result<(), SchemaError> {
        let _ = form;
        Ok(())
    }

    /// The finished form, checked by the form engine. [`Ask`](crate::Ask) calls this for every
    /// question; call it in a unit test to see the schema a type produces.
    fn form() -> Result<FormSchema, SchemaError> {
        let mut form = FormSchema::of::<Self>()?;
        Self::customize(&mut form)?;
        if let Some(key) = form.properties.iter().find_map(|(key, schema)| {
            let schema = schema.as_object()?;
            let suggested = schema
                .get("items")
                .is_some_and(|items| items.get("x-openai-suggestions").is_some());
            (is_free_list(schema) && !schema.contains_key("x-openai-input") && !suggested)
                .then_some(key)
        }) {
            return Err(SchemaError::field(key, NOT_A_LIST_OF_OPTIONS));
        }
        formwork_forms::parse_schema(&form.engine_schema())
            .map_err(|decline| SchemaError::Declined(decline.to_string()))?;
        Ok(form)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::openai::{ResourceOption, UserOptions};

    #[derive(serde::Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Files {
        #[schemars(regex(pattern = "^[a-z]+$"))]
        name: String,
        one: String,
        #[schemars(length(min = 1, max = 2))]
        many: Vec<String>,
        uploads: Option<Vec<String>>,
    }

    impl Elicit for Files {
        fn customize(form: &mut FormSchema) -> Result<(), SchemaError> {
            let offered = || {
                vec![
                    ResourceOption::new("cad://a", "a"),
                    ResourceOption::new("cad://b", "b"),
                ]
            };
            form.resource_input("one", ResourceInput::new(offered()))?
                .resource_input(
                    "many",
                    ResourceInput::new(offered()).selection(Selection::Explicit),
                )?
                .resource_input(
                    "uploads",
                    ResourceInput::new(offered())
                        .user_options(UserOptions::files().accept([".stl"])),
                )?;
            Ok(())
        }
    }

    fn check(content: Value) -> Result<(), String> {
        let form = Files::form().expect("a form");
        form.check_content(content.as_object().expect("an object"))
    }

    #[test]
    fn pickers_take_offered_uris_unless_uploads_are_allowed() {
        assert_eq!(
            check(
                json!({"name": "x", "one": "cad://a", "many": ["cad://b"], "uploads": ["file:///mine.stl"]})
            ),
            Ok(())
        );
        assert_eq!(
            check(json!({"name": "X", "one": "cad://z", "many": ["cad://a", "cad://b", "nope"]})),
            Err([
                "many: must hold at most 2 items",
                "many: \"nope\": must be an absolute URI like https://example.com/page",
                "name: must match the pattern `^[a-z]+$`",
                "one: \"cad://z\" is not one of the offered resources",
                "many: \"nope\" is not one of the offered resources",
            ]
            .join("\n"))
        );
        assert_eq!(
            check(json!({"name": "x", "one": "cad://a"})),
            Err("many: is required".into())
        );
        assert_eq!(
            check(json!({"name": "x", "one": "cad://a", "many": "cad://a"})),
            Err("many: must be a list of strings".into())
        );
    }

    #[test]
    fn a_list_of_text_must_become_a_picker() {
        #[derive(serde::Deserialize, JsonSchema)]
        #[allow(dead_code)]
        struct Tags {
            tags: Vec<String>,
        }
        impl Elicit for Tags {}
        assert_eq!(
            Tags::form().map(|form| form.to_value()),
            Err(SchemaError::field("tags", NOT_A_LIST_OF_OPTIONS))
        );
    }

    #[test]
    fn selection_belongs_to_list_pickers() {
        let mut form = FormSchema::of::<Files>().expect("a form");
        assert_eq!(
            form.resource_input(
                "one",
                ResourceInput::new(vec![]).selection(Selection::Implicit)
            )
            .map(|_| ()),
            Err(SchemaError::field(
                "one",
                "picks one resource; `selection` is for a list of them"
            ))
        );
    }

    #[test]
    fn a_list_with_suggestions_takes_free_text() {
        #[derive(serde::Deserialize, JsonSchema)]
        #[allow(dead_code)]
        struct Extras {
            #[schemars(length(max = 2))]
            extras: Vec<String>,
        }
        impl Elicit for Extras {
            fn customize(form: &mut FormSchema) -> Result<(), SchemaError> {
                form.suggestions("extras", vec![Suggestion::new("washer", "Washer")])?;
                Ok(())
            }
        }
        let form = Extras::form().expect("a form");
        assert_eq!(
            form.to_value(),
            json!({"type": "object", "properties": {"extras": {"type": "array", "maxItems": 2, "items": {
                "type": "string", "x-openai-suggestions": [{"const": "washer", "title": "Washer"}],
            }}}, "required": ["extras"]})
        );
        assert!(form.uses_openai_vocabulary());
        let check = |content: Value| form.check_content(content.as_object().expect("an object"));
        assert_eq!(
            check(json!({"extras": ["washer", "custom-gasket"]})),
            Ok(())
        );
        assert_eq!(
            check(json!({"extras": ["a", "b", 3]})),
            Err(
                "extras: must hold at most 2 items\nextras: 3: must be a string, not a number"
                    .into()
            )
        );
    }
}
