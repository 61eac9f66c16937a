//! Parsing option lists: `enum` (+ legacy `enumNames`) and `{const, title, description}` lists
//! (`oneOf`, `items.anyOf`, `x-openai-suggestions`).

use std::collections::HashSet;

use serde_json::Value;

use crate::decline::{Decline, DeclineRule};
use crate::field::Choice;
use crate::limits::{MAX_OPTIONS, MAX_TEXT_BYTES};
use crate::resource::option_thumbnail;
use crate::schema::Members;
use crate::size::{clip, kind_of, show};

/// Options from `enum` values, labelled by `enumNames` when present (else by the values).
/// `place` prefixes messages, e.g. "`items` ".
pub(crate) fn parse_enum(
    key: &str,
    values: &Value,
    names: Option<&Value>,
    place: &str,
) -> Result<Vec<Choice>, Decline> {
    let values = list(key, values, || format!("{place}`enum`"))?;
    let mut options = Vec::with_capacity(values.len());
    for value in values {
        let Value::String(value) = value else {
            return Err(Decline::property(
                key,
                DeclineRule::NonStringEnum,
                format!(
                    "{place}`enum` holds {}; only string values are supported",
                    show(value)
                ),
            ));
        };
        bounded(key, value, || format!("{place}`enum` value"))?;
        options.push(Choice {
            value: value.clone(),
            label: value.clone(),
            description: None,
            thumbnail: None,
        });
    }
    if let Some(names) = names {
        let Value::Array(names) = names else {
            return Err(Decline::property(
                key,
                DeclineRule::EnumNamesLength,
                format!(
                    "{place}`enumNames` must be an array, not {}",
                    kind_of(names)
                ),
            ));
        };
        if names.len() != options.len() {
            return Err(Decline::property(
                key,
                DeclineRule::EnumNamesLength,
                format!(
                    "{place}`enumNames` has {} entries but `enum` has {}",
                    names.len(),
                    options.len()
                ),
            ));
        }
        for (option, name) in options.iter_mut().zip(names) {
            let Value::String(name) = name else {
                return Err(Decline::property(
                    key,
                    DeclineRule::InvalidOption,
                    format!(
                        "{place}`enumNames` holds {}; labels must be strings",
                        show(name)
                    ),
                ));
            };
            bounded(key, name, || format!("{place}`enumNames` label"))?;
            option.label = name.clone();
        }
    }
    check_unique(key, &options)?;
    Ok(options)
}

/// Options from a list of `{const, title?, description?}` objects; `keyword` names the list in
/// messages. A missing `title` falls back to the `const` value. With `openai`, an entry's
/// `x-openai-thumbnail` is read (and checked) too.
pub(crate) fn parse_const_options(
    key: &str,
    entries: &Value,
    keyword: &str,
    openai: bool,
) -> Result<Vec<Choice>, Decline> {
    let entries = list(key, entries, || format!("`{keyword}`"))?;
    let mut options = Vec::with_capacity(entries.len());
    for (idx, entry) in entries.iter().enumerate() {
        let Value::Object(entry) = entry else {
            return Err(Decline::property(
                key,
                DeclineRule::InvalidOption,
                format!(
                    "`{keyword}[{idx}]` must be an object with `const` and `title`, not {}",
                    kind_of(entry)
                ),
            ));
        };
        let value = match entry.member("const") {
            Some(Value::String(value)) => value,
            Some(other) => {
                return Err(Decline::property(
                    key,
                    DeclineRule::NonStringEnum,
                    format!(
                        "`{keyword}[{idx}].const` is {}; only string values are supported",
                        show(other)
                    ),
                ));
            }
            None => {
                return Err(Decline::property(
                    key,
                    DeclineRule::InvalidOption,
                    format!("`{keyword}[{idx}]` has no `const`"),
                ));
            }
        };
        bounded(key, value, || format!("`{keyword}[{idx}].const`"))?;
        let label = optional_text(key, entry.member("title"), || {
            format!("`{keyword}[{idx}].title`")
        })?;
        let description = optional_text(key, entry.member("description"), || {
            format!("`{keyword}[{idx}].description`")
        })?;
        let thumbnail = match openai {
            true => option_thumbnail(key, entry, &format!("{keyword}[{idx}]"))?,
            false => None,
        };
        options.push(Choice {
            value: value.clone(),
            label: label.unwrap_or_else(|| value.clone()),
            description,
            thumbnail,
        });
    }
    check_unique(key, &options)?;
    Ok(options)
}

// `what` names the value in messages; it is only built for a message.

fn list<'a>(
    key: &str,
    value: &'a Value,
    what: impl FnOnce() -> String,
) -> Result<&'a [Value], Decline> {
    let Value::Array(items) = value else {
        return Err(Decline::property(
            key,
            DeclineRule::InvalidKeyword,
            format!("{} must be an array, not {}", what(), kind_of(value)),
        ));
    };
    if items.is_empty() {
        return Err(Decline::property(
            key,
            DeclineRule::EmptyEnum,
            format!("{} has no options", what()),
        ));
    }
    if items.len() > MAX_OPTIONS {
        return Err(Decline::property(
            key,
            DeclineRule::TooLarge,
            format!(
                "{} has {} options; at most {MAX_OPTIONS} are allowed",
                what(),
                items.len()
            ),
        ));
    }
    Ok(items)
}

fn optional_text(
    key: &str,
    value: Option<&Value>,
    what: impl FnOnce() -> String,
) -> Result<Option<String>, Decline> {
    match value {
        None => Ok(None),
        Some(Value::String(text)) => {
            bounded(key, text, what)?;
            Ok(Some(text.clone()))
        }
        Some(other) => Err(Decline::property(
            key,
            DeclineRule::InvalidOption,
            format!("{} must be a string, not {}", what(), kind_of(other)),
        )),
    }
}

fn bounded(key: &str, text: &str, what: impl FnOnce() -> String) -> Result<(), Decline> {
    if text.len() > MAX_TEXT_BYTES {
        return Err(Decline::property(
            key,
            DeclineRule::TooLarge,
            format!(
                "{} is {} bytes long; at most {MAX_TEXT_BYTES} are allowed",
                what(),
                text.len()
            ),
        ));
    }
    Ok(())
}

/// Declines two options with the same value, or with the same label (the UI answers with labels, so
/// a shared label would make the answer ambiguous).
fn check_unique(key: &str, options: &[Choice]) -> Result<(), Decline> {
    // A few options are compared pairwise; hashing pays off only for longer lists.
    const PAIRWISE: usize = 16;
    if options.len() <= PAIRWISE {
        for (idx, option) in options.iter().enumerate() {
            let before = &options[..idx];
            if before.iter().any(|other| other.value == option.value) {
                return Err(duplicate_value(key, option));
            }
            if before.iter().any(|other| other.label == option.label) {
                return Err(duplicate_label(key, option));
            }
        }
        return Ok(());
    }
    let mut values = HashSet::new();
    let mut labels = HashSet::new();
    for option in options {
        if !values.insert(option.value.as_str()) {
            return Err(duplicate_value(key, option));
        }
        if !labels.insert(option.label.as_str()) {
            return Err(duplicate_label(key, option));
        }
    }
    Ok(())
}

fn duplicate_value(key: &str, option: &Choice) -> Decline {
    Decline::property(
        key,
        DeclineRule::DuplicateOption,
        format!("has the option value \"{}\" twice", clip(&option.value)),
    )
}

fn duplicate_label(key: &str, option: &Choice) -> Decline {
    Decline::property(
        key,
        DeclineRule::DuplicateOption,
        format!("has the option label \"{}\" twice", clip(&option.label)),
    )
}
