//! Validation of `content` against a form, and the error types for invalid answers.

use std::fmt;

use serde_json::Value;

use crate::Content;
use crate::field::Form;

/// Why answers or content were rejected: one entry per problem, in field order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValidationErrors {
    /// The problems found.
    pub errors: Vec<FieldError>,
}

/// One problem with one field's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    /// The property key (question id) the problem is about.
    pub field: String,
    /// What is wrong, as a sentence fragment that follows the key: "must be at most 150".
    pub message: String,
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
        let _ = content;
        Ok(())
    }

    /// Checks one field's value.
    pub fn validate_field(&self, key: &str, value: &Value) -> Result<(), Vec<FieldError>> {
        let _ = (key, value);
        Ok(())
    }
}
