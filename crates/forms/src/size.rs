//! Bounding the size and depth of incoming JSON before anything else reads it.
//!
//! The walk spends a byte budget and stops as soon as it runs out or the nesting gets too deep, so
//! even a huge or deeply nested value costs bounded time.

use serde_json::Value;

use crate::decline::{Decline, DeclineRule};
use crate::limits::{MAX_DEPTH, MAX_REQUEST_BYTES};

/// What one non-string JSON value costs from the budget.
const SCALAR_COST: usize = 8;

/// Declines `value` (named `what` in the message) if it exceeds [`MAX_REQUEST_BYTES`] or
/// [`MAX_DEPTH`].
pub(crate) fn check(value: &Value, what: &str) -> Result<(), Decline> {
    let mut budget = MAX_REQUEST_BYTES;
    walk(value, 0, &mut budget)
        .map_err(|problem| Decline::whole(DeclineRule::TooLarge, format!("{what} {problem}")))
}

fn walk(value: &Value, depth: usize, budget: &mut usize) -> Result<(), String> {
    if depth > MAX_DEPTH {
        return Err(format!("nests JSON more than {MAX_DEPTH} levels deep"));
    }
    match value {
        Value::String(text) => spend(budget, text.len()),
        Value::Array(items) => {
            spend(budget, SCALAR_COST)?;
            items
                .iter()
                .try_for_each(|item| walk(item, depth + 1, budget))
        }
        Value::Object(map) => {
            spend(budget, SCALAR_COST)?;
            map.iter().try_for_each(|(key, item)| {
                spend(budget, key.len())?;
                walk(item, depth + 1, budget)
            })
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => spend(budget, SCALAR_COST),
    }
}

fn spend(budget: &mut usize, cost: usize) -> Result<(), String> {
    match budget.checked_sub(cost) {
        Some(rest) => {
            *budget = rest;
            Ok(())
        }
        None => Err(format!("is larger than {MAX_REQUEST_BYTES} bytes")),
    }
}

/// A short description of a JSON value's kind for messages: "a number", "null", ...
pub(crate) fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A value shown inside a message, cut to a readable length.
pub(crate) fn show(value: &Value) -> String {
    match value {
        Value::String(text) => format!("\"{}\"", clip(text)),
        other => clip(&other.to_string()),
    }
}

/// `text` cut to at most 64 characters, with an ellipsis when cut.
pub(crate) fn clip(text: &str) -> String {
    const KEEP: usize = 64;
    match text.char_indices().nth(KEEP) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_owned(),
    }
}
