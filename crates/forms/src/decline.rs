//! Why a request or schema is declined as a whole.

use std::fmt;

/// Why an `elicitation/create` request (or its `requestedSchema`) is declined as a whole.
///
/// The host answers such a request with `action: "decline"` and logs this value. `Display` gives
/// `` property `age`: <detail> `` when one property is at fault and `<detail>` otherwise.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decline {
    /// The property key at fault, if the problem is inside one property.
    pub property: Option<String>,
    /// Which rule was broken; [`DeclineRule::as_str`] gives a stable code for logs and tests.
    pub rule: DeclineRule,
    /// A sentence for people: what was found and what is allowed.
    pub detail: String,
}

impl Decline {
    /// A decline that concerns the request or schema as a whole.
    pub(crate) fn whole(rule: DeclineRule, detail: impl Into<String>) -> Self {
        Decline {
            property: None,
            rule,
            detail: detail.into(),
        }
    }

    /// A decline caused by the property `key` (cut to a readable length for the message).
    pub(crate) fn property(key: &str, rule: DeclineRule, detail: impl Into<String>) -> Self {
        Decline {
            property: Some(crate::size::clip(key)),
            rule,
            detail: detail.into(),
        }
    }
}

impl fmt::Display for Decline {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.property {
            Some(key) => write!(f, "property `{key}`: {}", self.detail),
            None => f.write_str(&self.detail),
        }
    }
}

impl std::error::Error for Decline {}

/// The rule a declined request broke.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DeclineRule {
    /// The params, the schema or a property schema is not a JSON object.
    NotAnObject,
    /// A params field has the wrong JSON type or is missing (`message`, `requestedSchema`,
    /// `elicitationId`, `_meta`, `mode`).
    InvalidParams,
    /// `mode` is neither absent, `"form"` nor `"url"` (nor, with
    /// [`crate::ParseOptions::openai_elicitation`], `"openai/form"`).
    UnsupportedMode,
    /// A URL-mode request has no `url`, or it is not an absolute `http`/`https` URL with a host.
    InvalidUrl,
    /// The schema has no `properties` object.
    NoProperties,
    /// A property is an object (or has `properties`).
    NestedObject,
    /// A property is an array whose items are objects or arrays.
    ArrayOfObjects,
    /// A `$ref` (or `$dynamicRef`) anywhere in the schema.
    Ref,
    /// A `type` that is missing, unknown, not a string (type arrays), or an array without options.
    UnsupportedType,
    /// A JSON Schema keyword that changes what is valid and that forms do not support
    /// (`allOf`, `not`, `if`, `const`, ...).
    UnsupportedKeyword,
    /// A known keyword with a value of the wrong kind (`title: 5`, `minLength: -1`, ...).
    InvalidKeyword,
    /// Constraints no value can meet, such as `minimum` above `maximum`.
    InvalidConstraint,
    /// A `format` other than `email`, `uri`, `date` and `date-time`.
    UnsupportedFormat,
    /// A `pattern` that is not a valid ECMAScript regex with the `u` flag, or uses a feature that cannot
    /// be matched in linear time (lookaround, backreferences).
    InvalidPattern,
    /// An `enum`, `oneOf` or `anyOf` without options.
    EmptyEnum,
    /// An `enum` value or `const` that is not a string.
    NonStringEnum,
    /// `enumNames` whose length differs from `enum`'s, or `enumNames` without `enum`.
    EnumNamesLength,
    /// An option entry that is not `{const, title?, description?}`.
    InvalidOption,
    /// Two options of one field share a value or a label.
    DuplicateOption,
    /// A `default` of the wrong type or outside the field's own constraints.
    DefaultOutsideConstraints,
    /// `required` is not an array of distinct strings.
    InvalidRequired,
    /// `required` names a property the schema does not have.
    UnknownRequired,
    /// A text, a list or the whole request exceeds a limit in [`crate::limits`].
    TooLarge,
    /// An option's `x-openai-thumbnail` is not an icon whose `src` is an `https://` URL or a
    /// base64 `data:image/...` URI.
    InvalidThumbnail,
    /// An `x-openai-input` the host cannot show: another input `type`, a directory picker, a
    /// `selection` on a single resource, or a picker on a field that does not hold URIs.
    UnsupportedInput,
    /// An OpenAI form (empty core schema) whose `_meta["openai/elicitation"]` has no usable
    /// `requestedSchema`.
    NoOpenAiSchema,
}

impl DeclineRule {
    /// A stable kebab-case code for the rule, for logs and tests.
    pub fn as_str(self) -> &'static str {
        match self {
            DeclineRule::NotAnObject => "not-an-object",
            DeclineRule::InvalidParams => "invalid-params",
            DeclineRule::UnsupportedMode => "unsupported-mode",
            DeclineRule::InvalidUrl => "invalid-url",
            DeclineRule::NoProperties => "no-properties",
            DeclineRule::NestedObject => "nested-object",
            DeclineRule::ArrayOfObjects => "array-of-objects",
            DeclineRule::Ref => "ref",
            DeclineRule::UnsupportedType => "unsupported-type",
            DeclineRule::UnsupportedKeyword => "unsupported-keyword",
            DeclineRule::InvalidKeyword => "invalid-keyword",
            DeclineRule::InvalidConstraint => "invalid-constraint",
            DeclineRule::UnsupportedFormat => "unsupported-format",
            DeclineRule::InvalidPattern => "invalid-pattern",
            DeclineRule::EmptyEnum => "empty-enum",
            DeclineRule::NonStringEnum => "non-string-enum",
            DeclineRule::EnumNamesLength => "enum-names-length",
            DeclineRule::InvalidOption => "invalid-option",
            DeclineRule::DuplicateOption => "duplicate-option",
            DeclineRule::DefaultOutsideConstraints => "default-outside-constraints",
            DeclineRule::InvalidRequired => "invalid-required",
            DeclineRule::UnknownRequired => "unknown-required",
            DeclineRule::TooLarge => "too-large",
            DeclineRule::InvalidThumbnail => "invalid-thumbnail",
            DeclineRule::UnsupportedInput => "unsupported-input",
            DeclineRule::NoOpenAiSchema => "no-openai-schema",
        }
    }
}

impl fmt::Display for DeclineRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
