//! Turning answers (render answers, typed JSON, or defaults) into validated `content`.
//!
//! Rules shared by every route:
//! - A field the person left untouched (key absent, or an empty answers list) takes its `default`;
//!   without one it is omitted, or an error if the field is required.
//! - A value is never dropped or coerced: an answer that does not fit its field is an error for
//!   that field, never a silent omission.
//! - Keys that are not fields of the form are errors.
//! - The result is validated against the schema before it is returned.

use std::collections::HashSet;

use serde_json::{Number, Value};

use crate::Content;
use crate::field::{Choice, Field, FieldKind, Form, ResourcePicker};
use crate::render::RenderAnswers;
use crate::size::clip;
use crate::validate::{
    FieldError, ValidationErrors, check_value, exact_integer, normalize, not_an_option,
    unknown_keys,
};

/// What one field's answer turned into.
enum Answer {
    /// The person did not touch the field: use the default.
    Untouched,
    /// The person explicitly left the field empty: omit it.
    Empty,
    /// A value for `content`.
    Value(Value),
}

impl Form {
    /// `content` for "accept with defaults": every field that has a default, nothing else.
    ///
    /// Fails when a required field has no default.
    pub fn default_content(&self) -> Result<Content, ValidationErrors> {
        self.build_content(|_| Ok(Answer::Untouched), Vec::new())
    }

    /// `content` from typed JSON values: strings, numbers, booleans and, for multi-select fields,
    /// arrays of option values. Option fields take the option `const` values, not labels.
    ///
    /// Omitted keys take their defaults. A whole number for an integer field (`3.0`) becomes a JSON
    /// integer; anything of the wrong type (the string `"36"` for an integer, `null`) is an error.
    pub fn content_from_typed(&self, typed: &Content) -> Result<Content, ValidationErrors> {
        let unknown = unknown_keys(self, typed.keys());
        self.build_content(
            |field| match typed.get(&field.key) {
                None => Ok(Answer::Untouched),
                Some(value) => Ok(Answer::Value(normalize(&field.kind, value))),
            },
            unknown,
        )
    }

    /// `content` from the answers a UI sent for [`Form::render`]'s block.
    ///
    /// Option answers are labels; an answer that matches no label but equals an option value is taken
    /// as that value. Text, number and integer answers are the raw text; booleans are `"true"` or
    /// `"false"`. A lone `""` means "explicitly empty": the field is omitted (an error if it is
    /// required), and a multi-select becomes `[]`.
    pub fn content_from_render_answers(
        &self,
        answers: &RenderAnswers,
    ) -> Result<Content, ValidationErrors> {
        let unknown: Vec<FieldError> = answers
            .answers
            .keys()
            .filter(|id| self.field(id).is_none())
            .map(|id| FieldError::new(id, "is not a question of this form"))
            .collect();
        self.build_content(
            |field| match answers.answers.get(&field.key) {
                None => Ok(Answer::Untouched),
                Some(answer) if answer.answers.is_empty() => Ok(Answer::Untouched),
                Some(answer) => from_texts(field, &answer.answers),
            },
            unknown,
        )
    }

    /// Runs `answer_for` on every field, applies defaults and `required`, and validates the result.
    /// `unknown` holds the errors for keys that are not fields; they are reported after the fields'.
    fn build_content(
        &self,
        mut answer_for: impl FnMut(&Field) -> Result<Answer, String>,
        unknown: Vec<FieldError>,
    ) -> Result<Content, ValidationErrors> {
        let mut content = Content::new();
        let mut errors = Vec::new();
        for field in &self.fields {
            let answer = match answer_for(field) {
                Ok(answer) => answer,
                Err(message) => {
                    errors.push(FieldError::new(&field.key, message));
                    continue;
                }
            };
            let value = match answer {
                Answer::Value(value) => Some(value),
                Answer::Untouched => field.default.clone(),
                Answer::Empty => None,
            };
            match value {
                Some(value) => {
                    let problems = check_value(&field.kind, &value);
                    if problems.is_empty() {
                        content.insert(field.key.clone(), value);
                    } else {
                        errors.extend(
                            problems
                                .into_iter()
                                .map(|message| FieldError::new(&field.key, message)),
                        );
                    }
                }
                None if field.required => errors.push(FieldError::new(&field.key, "is required")),
                None => {}
            }
        }
        errors.extend(unknown);
        if !errors.is_empty() {
            return Err(ValidationErrors { errors });
        }
        self.validate(&content)?;
        Ok(content)
    }
}

/// Converts the texts a UI sent for one question (never an empty list).
fn from_texts(field: &Field, texts: &[String]) -> Result<Answer, String> {
    match &field.kind {
        FieldKind::MultiSelect(select) => return multi_from_texts(&select.options, texts),
        FieldKind::TextList(list) => return Ok(list_from_texts(&list.items.suggestions, texts)),
        FieldKind::Resource(picker) if picker.multiple => {
            return Ok(Answer::Value(Value::Array(
                picked_texts(picker, texts).map(Value::String).collect(),
            )));
        }
        _ => {}
    }
    let [text] = texts else {
        return Err(format!("takes one answer, not {}", texts.len()));
    };
    match &field.kind {
        FieldKind::Text(_) if text.is_empty() => Ok(Answer::Empty),
        FieldKind::Text(rules) => {
            // A suggestion's label stands for its value; anything else is free text.
            let value = rules
                .suggestions
                .iter()
                .find(|s| &s.label == text)
                .map_or(text, |s| &s.value);
            Ok(Answer::Value(Value::String(value.clone())))
        }
        FieldKind::Number(_) | FieldKind::Integer(_) => {
            let trimmed = text.trim();
            if trimmed.is_empty() {
                return Ok(Answer::Empty);
            }
            let number = parse_number(trimmed)
                .ok_or_else(|| format!("\"{}\" is not a number", clip(text)))?;
            // Integer fields get a JSON integer when the text is a whole number (`40.0` is 40);
            // anything else stays a number and fails validation with the usual message.
            match exact_integer(&number) {
                Some(int) if matches!(field.kind, FieldKind::Integer(_)) => {
                    Ok(Answer::Value(Value::from(int)))
                }
                _ => Ok(Answer::Value(Value::Number(number))),
            }
        }
        FieldKind::Boolean => match text.as_str() {
            "true" => Ok(Answer::Value(Value::Bool(true))),
            "false" => Ok(Answer::Value(Value::Bool(false))),
            "" => Ok(Answer::Empty),
            other => Err(format!(
                "must be \"true\" or \"false\", not \"{}\"",
                clip(other)
            )),
        },
        FieldKind::SingleSelect(select) => match find_option(&select.options, text) {
            Some(option) => Ok(Answer::Value(Value::String(option.value.clone()))),
            None if text.is_empty() => Ok(Answer::Empty),
            None => Err(not_an_option(text, &select.options)),
        },
        FieldKind::Resource(_) if text.is_empty() => Ok(Answer::Empty),
        FieldKind::Resource(picker) => Ok(Answer::Value(Value::String(
            picked_texts(picker, texts).next().unwrap_or_default(),
        ))),
        FieldKind::MultiSelect(_) | FieldKind::TextList(_) => {
            Err("takes a list of answers".to_owned())
        }
    }
}

/// A free-text list's items: a suggestion's label stands for its value, anything else is an
/// item as typed. A lone `""` is the empty list.
fn list_from_texts(suggestions: &[Choice], texts: &[String]) -> Answer {
    if let [only] = texts
        && only.is_empty()
    {
        return Answer::Value(Value::Array(Vec::new()));
    }
    let items = texts.iter().map(|text| {
        let value = suggestions
            .iter()
            .find(|s| &s.label == text)
            .map_or(text, |s| &s.value);
        Value::String(value.clone())
    });
    Answer::Value(Value::Array(items.collect()))
}

/// The URIs a picker's answers stand for: an option's label or URI is that option's URI;
/// anything else (a `file://` URI of an added file) is kept as sent, for validation to judge.
/// A lone `""` is no resource at all.
fn picked_texts<'a>(
    picker: &'a ResourcePicker,
    texts: &'a [String],
) -> impl Iterator<Item = String> + 'a {
    let empty = matches!(texts, [only] if only.is_empty());
    texts.iter().filter(move |_| !empty).map(|text| {
        let option = picker
            .options
            .iter()
            .find(|o| o.label() == text)
            .or_else(|| picker.options.iter().find(|o| &o.uri == text));
        option.map_or_else(|| text.clone(), |o| o.uri.clone())
    })
}

fn multi_from_texts(options: &[Choice], texts: &[String]) -> Result<Answer, String> {
    if texts.len() == 1 && texts[0].is_empty() && find_option(options, "").is_none() {
        return Ok(Answer::Value(Value::Array(Vec::new())));
    }
    if texts.len() > options.len() {
        return Err(format!(
            "has {} answers but only {} options",
            texts.len(),
            options.len()
        ));
    }
    let mut seen = HashSet::new();
    let mut values = Vec::with_capacity(texts.len());
    for text in texts {
        let option = find_option(options, text).ok_or_else(|| not_an_option(text, options))?;
        if !seen.insert(option.value.as_str()) {
            return Err(format!("chooses \"{}\" twice", clip(&option.label)));
        }
        values.push(Value::String(option.value.clone()));
    }
    Ok(Answer::Value(Value::Array(values)))
}

/// The option whose label is `text`, else the option whose value is `text`.
fn find_option<'a>(options: &'a [Choice], text: &str) -> Option<&'a Choice> {
    options
        .iter()
        .find(|o| o.label == text)
        .or_else(|| options.iter().find(|o| o.value == text))
}

/// Parses a JSON number written by a person: JSON number syntax only (no `+`, no `NaN`, no hex).
fn parse_number(text: &str) -> Option<Number> {
    let first = text.as_bytes().first()?;
    if !(first.is_ascii_digit() || *first == b'-') {
        return None;
    }
    serde_json::from_str::<Number>(text).ok()
}
