//! Parsing `requestedSchema` into a [`Form`], declining anything outside the supported grammar.

use serde_json::Value;

use crate::decline::{Decline, DeclineRule};
use crate::field::Form;

/// Parses a `requestedSchema` into a [`Form`], or declines it as a whole.
pub fn parse_schema(requested_schema: &Value) -> Result<Form, Decline> {
    let _ = requested_schema;
    Err(Decline::whole(DeclineRule::NoProperties, "not implemented yet"))
}
