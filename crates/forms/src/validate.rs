//! Validation of `content` against a form, and the error types for invalid answers.
//!
//! The checks mirror what the server's JSON Schema validator (Ajv in the TS SDK) does with the
//! requested schema, and are never looser: lengths count Unicode code points, integers must be whole,
//! formats follow ajv-formats' full mode or stricter, patterns are ECMAScript regexes matched
//! unanchored, options must be listed and multi-select items distinct.

use std::collections::HashSet;
use std::fmt;

use serde::Serialize;
use serde_json::{Number, Value};

use crate::Content;
use crate::field::{Choice, FieldKind, Form, NumberRules, TextList, TextRules};
use crate::formats;
use crate::resource;
use crate::size::{clip, kind_of};

/// The largest integer magnitude every JSON peer (JavaScript included) holds exactly: 2^53 - 1.
pub(crate) const MAX_SAFE_INTEGER: i64 = (1 << 53) - 1;

/// Why answers or content were rejected: one entry per problem, in field order. As JSON, the
/// list of problems: `[{"field", "message"}, ...]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct ValidationErrors {
    /// The problems found.
    pub errors: Vec<FieldError>,
}

/// One problem with one field's answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FieldError {
    /// The property key (question id) the problem is about.
    pub field: String,
    /// What is wrong, as a sentence fragment that follows the key: "must be at most 150".
    pub message: String,
}

impl FieldError {
    pub(crate) fn new(field: &str, message: impl Into<String>) -> Self {
        FieldError {
            field: clip(field),
            message: message.into(),
        }
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.message)
    }
}

impl fmt::Display for ValidationErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (idx, error) in self.errors.iter().enumerate() {
            if idx > 0 {
                f.write_str("\n")?;
            }
            write!(f, "{error}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ValidationErrors {}

impl Form {
    /// Checks `content` against the schema: required keys, types, lengths, ranges, formats,
    /// patterns, options and item counts. Keys that are not fields are errors too.
    pub fn validate(&self, content: &Content) -> Result<(), ValidationErrors> {
        let mut errors = Vec::new();
        for field in &self.fields {
            match content.get(&field.key) {
                Some(value) => {
                    errors.extend(
                        check_value(&field.kind, value)
                            .into_iter()
                            .map(|message| FieldError::new(&field.key, message)),
                    );
                }
                None if field.required => errors.push(FieldError::new(&field.key, "is required")),
                None => {}
            }
        }
        errors.extend(unknown_keys(self, content.keys()));
        if errors.is_empty() {
            Ok(())
        } else {
            Err(ValidationErrors { errors })
        }
    }

    /// Checks one field's value against that field's constraints (`required` is not checked here).
    pub fn validate_field(&self, key: &str, value: &Value) -> Result<(), Vec<FieldError>> {
        let Some(field) = self.field(key) else {
            return Err(vec![FieldError::new(key, "is not a field of this form")]);
        };
        let errors: Vec<FieldError> = check_value(&field.kind, value)
            .into_iter()
            .map(|message| FieldError::new(key, message))
            .collect();
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors)
        }
    }
}

/// Errors for keys in `keys` that are not fields of `form`.
pub(crate) fn unknown_keys<'a>(
    form: &Form,
    keys: impl Iterator<Item = &'a String>,
) -> Vec<FieldError> {
    keys.filter(|key| form.field(key).is_none())
        .map(|key| FieldError::new(key, "is not a field of this form"))
        .collect()
}

/// Brings a typed value into the shape `content` uses without changing what it means: a whole
/// number for an integer field becomes a JSON integer (`3.0` becomes `3`). Everything else is kept.
pub(crate) fn normalize(kind: &FieldKind, value: &Value) -> Value {
    match (kind, value) {
        (FieldKind::Integer(_), Value::Number(n)) => match exact_integer(n) {
            Some(int) => Value::from(int),
            None => value.clone(),
        },
        _ => value.clone(),
    }
}

/// `n` as an integer when it is whole and within ±(2^53 - 1).
pub(crate) fn exact_integer(n: &Number) -> Option<i64> {
    let int = match (n.as_i64(), n.as_f64()) {
        (Some(int), _) => int,
        (None, Some(float)) if float.fract() == 0.0 && float.abs() <= MAX_SAFE_INTEGER as f64 => {
            float as i64
        }
        _ => return None,
    };
    (int.abs() <= MAX_SAFE_INTEGER).then_some(int)
}

/// Every way `value` breaks the field's constraints, as message fragments ("must be at most 5").
pub(crate) fn check_value(kind: &FieldKind, value: &Value) -> Vec<String> {
    match (kind, value) {
        (FieldKind::Text(rules), Value::String(text)) => check_text(rules, text),
        (FieldKind::Number(rules), Value::Number(n)) => check_number(rules, n),
        (FieldKind::Integer(rules), Value::Number(n)) => match exact_integer(n) {
            Some(_) => check_number(rules, n),
            None if n.as_f64().is_some_and(|f| f.fract() == 0.0) => {
                vec![format!(
                    "must be an integer between -{MAX_SAFE_INTEGER} and {MAX_SAFE_INTEGER}"
                )]
            }
            None => vec!["must be an integer".to_owned()],
        },
        (FieldKind::Boolean, Value::Bool(_)) => Vec::new(),
        (FieldKind::SingleSelect(select), Value::String(text)) => {
            match select.options.iter().any(|o| &o.value == text) {
                true => Vec::new(),
                false => vec![not_an_option(text, &select.options)],
            }
        }
        (FieldKind::MultiSelect(select), Value::Array(items)) => {
            check_items(&select.options, select.min_items, select.max_items, items)
        }
        (FieldKind::TextList(list), Value::Array(items)) => check_text_list(list, items),
        (FieldKind::Resource(picker), value) => resource::check_picked(picker, value),
        (kind, other) => vec![format!(
            "must be {}, not {}",
            expected(kind),
            kind_of(other)
        )],
    }
}

fn expected(kind: &FieldKind) -> &'static str {
    match kind {
        FieldKind::Text(_) | FieldKind::SingleSelect(_) => "a string",
        FieldKind::Number(_) => "a number",
        FieldKind::Integer(_) => "an integer",
        FieldKind::Boolean => "true or false",
        FieldKind::MultiSelect(_) => "an array of option values",
        FieldKind::TextList(_) => "an array of strings",
        FieldKind::Resource(_) => "a resource URI",
    }
}

pub(crate) fn check_text(rules: &TextRules, text: &str) -> Vec<String> {
    let mut problems = Vec::new();
    let length = text.chars().count() as u64;
    if let Some(min) = rules.min_length.filter(|min| length < *min) {
        problems.push(format!("must be at least {min} characters long"));
    }
    if let Some(max) = rules.max_length.filter(|max| length > *max) {
        problems.push(format!("must be at most {max} characters long"));
    }
    if let Some(format) = rules
        .format
        .filter(|format| !formats::is_valid(*format, text))
    {
        problems.push(formats::describe(format).to_owned());
    }
    if let Some(pattern) = rules
        .pattern
        .as_ref()
        .filter(|pattern| !pattern.is_match(text))
    {
        problems.push(format!(
            "must match the pattern `{}`",
            clip(pattern.source())
        ));
    }
    problems
}

/// A bound as an f64 to compare with, and as written, for the message.
fn bound(bound: &Option<Number>) -> Option<(f64, &Number)> {
    let bound = bound.as_ref()?;
    Some((bound.as_f64()?, bound))
}

fn check_number(rules: &NumberRules, n: &Number) -> Vec<String> {
    let mut problems = Vec::new();
    let Some(value) = n.as_f64() else {
        return vec!["must be a number".to_owned()];
    };
    if let Some((_, text)) = bound(&rules.minimum).filter(|(min, _)| value < *min) {
        problems.push(format!("must be at least {text}"));
    }
    if let Some((_, text)) = bound(&rules.maximum).filter(|(max, _)| value > *max) {
        problems.push(format!("must be at most {text}"));
    }
    if let Some((_, text)) = bound(&rules.exclusive_minimum).filter(|(min, _)| value <= *min) {
        problems.push(format!("must be greater than {text}"));
    }
    if let Some((_, text)) = bound(&rules.exclusive_maximum).filter(|(max, _)| value >= *max) {
        problems.push(format!("must be less than {text}"));
    }
    // Ajv tests `value % multipleOf !== 0` in binary floating point; `%` on f64 is the same
    // operation, so the two agree exactly.
    if let Some((_, text)) = bound(&rules.multiple_of).filter(|(step, _)| value % *step != 0.0) {
        problems.push(format!("must be a multiple of {text}"));
    }
    problems
}

fn check_items(
    options: &[Choice],
    min_items: Option<u64>,
    max_items: Option<u64>,
    items: &[Value],
) -> Vec<String> {
    let mut problems = Vec::new();
    let mut seen = HashSet::new();
    for item in items {
        match item {
            Value::String(text) if !options.iter().any(|o| &o.value == text) => {
                problems.push(format!(
                    "must list only options ({}), not \"{}\"",
                    option_list(options),
                    clip(text)
                ));
            }
            Value::String(text) if !seen.insert(text.as_str()) => {
                problems.push(format!("must not list \"{}\" twice", clip(text)));
            }
            Value::String(_) => {}
            other => problems.push(format!(
                "must list only option values, not {}",
                kind_of(other)
            )),
        }
        if problems.len() >= 10 {
            break;
        }
    }
    let count = items.len() as u64;
    if let Some(min) = min_items.filter(|min| count < *min) {
        problems.push(format!("must have at least {min} item{}", plural(min)));
    }
    if let Some(max) = max_items.filter(|max| count > *max) {
        problems.push(format!("must have at most {max} item{}", plural(max)));
    }
    problems
}

fn check_text_list(list: &TextList, items: &[Value]) -> Vec<String> {
    let mut problems = Vec::new();
    let mut seen = HashSet::new();
    for (idx, item) in items.iter().enumerate() {
        match item {
            Value::String(text) => {
                problems.extend(
                    check_text(&list.items, text)
                        .into_iter()
                        .map(|problem| format!("item {idx} {problem}")),
                );
                if list.unique_items && !seen.insert(text.as_str()) {
                    problems.push(format!("must not list \"{}\" twice", clip(text)));
                }
            }
            other => problems.push(format!("must list only strings, not {}", kind_of(other))),
        }
        if problems.len() >= 10 {
            break;
        }
    }
    let count = items.len() as u64;
    if let Some(min) = list.min_items.filter(|min| count < *min) {
        problems.push(format!("must have at least {min} item{}", plural(min)));
    }
    if let Some(max) = list.max_items.filter(|max| count > *max) {
        problems.push(format!("must have at most {max} item{}", plural(max)));
    }
    problems
}

pub(crate) fn plural(n: u64) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// "must be one of the options (\"a\", \"b\"), not \"x\"".
pub(crate) fn not_an_option(text: &str, options: &[Choice]) -> String {
    format!(
        "must be one of the options ({}), not \"{}\"",
        option_list(options),
        clip(text)
    )
}

/// The option values, quoted and cut after ten.
fn option_list(options: &[Choice]) -> String {
    const SHOWN: usize = 10;
    let mut listed: Vec<String> = options
        .iter()
        .take(SHOWN)
        .map(|o| format!("\"{}\"", clip(&o.value)))
        .collect();
    if options.len() > SHOWN {
        listed.push("…".to_owned());
    }
    listed.join(", ")
}
