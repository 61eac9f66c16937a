//! Parsing one property schema by kind: strings (text or single-select), numbers and integers,
//! arrays (multi-select), and the keyword readers they share.

use serde_json::{Number, Value};

use crate::decline::{Decline, DeclineRule};
use crate::field::{
    Choice, FieldKind, MultiSelect, NumberRules, SingleSelect, StringFormat, TextList, TextRules,
};
use crate::limits::{MAX_PATTERN_BYTES, MAX_TEXT_BYTES};
use crate::options::{parse_const_options, parse_enum};
use crate::pattern::Pattern;
use crate::resource;
use crate::schema::Members;
use crate::schema::{Object, check_keywords};
use crate::size::{self, kind_of, show};
use crate::validate::check_text;

/// `openai`: read OpenAI's vocabulary (thumbnails, `x-openai-input`).
pub(crate) fn parse_string(key: &str, obj: &Object, openai: bool) -> Result<FieldKind, Decline> {
    let mut rules = parse_text_rules(key, obj, "")?;
    if let Some(input) = obj.member("x-openai-input").filter(|_| openai) {
        if obj.has("enum") || obj.has("oneOf") || obj.has("x-openai-suggestions") {
            return Err(Decline::property(
                key,
                DeclineRule::UnsupportedInput,
                "has `x-openai-input` beside `enum`/`oneOf`/`x-openai-suggestions`; a resource \
                 picker lists its resources in `x-openai-input.options`",
            ));
        }
        return resource::parse_single(key, obj, input);
    }
    let options = match (obj.member("enum"), obj.member("oneOf")) {
        (Some(_), Some(_)) => {
            return Err(Decline::property(
                key,
                DeclineRule::UnsupportedKeyword,
                "has both `enum` and `oneOf`; use one",
            ));
        }
        (Some(values), None) => Some(parse_enum(key, values, obj.member("enumNames"), "")?),
        (None, Some(list)) => Some(parse_const_options(key, list, "oneOf", openai)?),
        (None, None) => None,
    };
    if options.is_none() && obj.has("enumNames") {
        return Err(Decline::property(
            key,
            DeclineRule::EnumNamesLength,
            "has `enumNames` without `enum`",
        ));
    }
    match options {
        Some(options) => {
            check_options_against(key, &options, &rules)?;
            Ok(FieldKind::SingleSelect(SingleSelect { options }))
        }
        None => {
            if let Some(list) = obj.member("x-openai-suggestions") {
                rules.suggestions = parse_const_options(key, list, "x-openai-suggestions", openai)?;
            }
            Ok(FieldKind::Text(rules))
        }
    }
}

/// `openai`: read OpenAI's vocabulary (thumbnails, free-text lists, `x-openai-input`).
pub(crate) fn parse_array(key: &str, obj: &Object, openai: bool) -> Result<FieldKind, Decline> {
    reject_format(key, obj, "array")?;
    if obj.has("enum") || obj.has("oneOf") {
        return Err(Decline::property(
            key,
            DeclineRule::UnsupportedKeyword,
            "puts `enum`/`oneOf` on the array; options belong in `items`",
        ));
    }
    let items = match obj.member("items") {
        Some(Value::Object(items)) => items,
        Some(other) => {
            return Err(Decline::property(
                key,
                DeclineRule::UnsupportedType,
                format!("`items` must be a schema object, not {}", kind_of(other)),
            ));
        }
        None => {
            return Err(Decline::property(
                key,
                DeclineRule::UnsupportedType,
                "is an array without `items`; arrays must list their options",
            ));
        }
    };
    if items.has("properties") {
        return Err(Decline::property(
            key,
            DeclineRule::ArrayOfObjects,
            "is an array of objects; only arrays of string options are supported",
        ));
    }
    match items.member("type") {
        None => {}
        Some(Value::String(name)) if name == "string" => {}
        Some(Value::String(name)) if name == "object" || name == "array" => {
            return Err(Decline::property(
                key,
                DeclineRule::ArrayOfObjects,
                format!("is an array of {name}s; only arrays of string options are supported"),
            ));
        }
        Some(other) => {
            return Err(Decline::property(
                key,
                DeclineRule::NonStringEnum,
                format!("`items` `type` must be \"string\", not {}", show(other)),
            ));
        }
    }
    check_keywords(key, items, "`items` ")?;
    let mut item_rules = parse_text_rules(key, items, "`items` ")?;
    let min_items = count(key, obj, "minItems")?;
    let max_items = count(key, obj, "maxItems")?;
    if let (Some(min), Some(max)) = (min_items, max_items)
        && min > max
    {
        return Err(Decline::property(
            key,
            DeclineRule::InvalidConstraint,
            format!("`minItems` {min} is larger than `maxItems` {max}"),
        ));
    }
    if let Some(unique) = obj
        .member("uniqueItems")
        .filter(|value| !value.is_boolean())
    {
        return Err(Decline::property(
            key,
            DeclineRule::InvalidKeyword,
            format!("`uniqueItems` must be a boolean, not {}", kind_of(unique)),
        ));
    }
    let listed = items.has("enum") || items.has("anyOf") || items.has("oneOf");
    if openai && !listed {
        if let Some(input) = obj.member("x-openai-input") {
            if items.has("x-openai-suggestions") {
                return Err(Decline::property(
                    key,
                    DeclineRule::UnsupportedInput,
                    "has `x-openai-input` and `items.x-openai-suggestions`; a resource picker \
                     lists its resources in `x-openai-input.options`",
                ));
            }
            return resource::parse_multi(key, items, input, min_items, max_items);
        }
        if let Some(list) = items.member("x-openai-suggestions") {
            item_rules.suggestions =
                parse_const_options(key, list, "items.x-openai-suggestions", openai)?;
        }
        return Ok(FieldKind::TextList(TextList {
            items: item_rules,
            min_items,
            max_items,
            unique_items: obj.member("uniqueItems") == Some(&Value::Bool(true)),
        }));
    }
    let options = match (
        items.member("enum"),
        items.member("anyOf").or_else(|| items.member("oneOf")),
    ) {
        (Some(_), Some(_)) => {
            return Err(Decline::property(
                key,
                DeclineRule::UnsupportedKeyword,
                "`items` has both `enum` and `anyOf`; use one",
            ));
        }
        (Some(values), None) => parse_enum(key, values, items.member("enumNames"), "`items` ")?,
        (None, Some(list)) => {
            let keyword = if items.has("anyOf") {
                "items.anyOf"
            } else {
                "items.oneOf"
            };
            parse_const_options(key, list, keyword, openai)?
        }
        (None, None) => {
            return Err(Decline::property(
                key,
                DeclineRule::UnsupportedType,
                "is an array whose `items` have no `enum` or `anyOf`; free-form lists are not supported",
            ));
        }
    };
    if items.has("enumNames") && !items.has("enum") {
        return Err(Decline::property(
            key,
            DeclineRule::EnumNamesLength,
            "`items` has `enumNames` without `enum`",
        ));
    }
    check_options_against(key, &options, &item_rules)?;
    if let Some(min) = min_items.filter(|min| *min > options.len() as u64) {
        return Err(Decline::property(
            key,
            DeclineRule::InvalidConstraint,
            format!(
                "`minItems` {min} is more than the {} options",
                options.len()
            ),
        ));
    }
    Ok(FieldKind::MultiSelect(MultiSelect {
        options,
        min_items,
        max_items,
    }))
}

/// Reads `minLength`, `maxLength`, `format` and `pattern` of a string schema (or of `items`).
pub(crate) fn parse_text_rules(key: &str, obj: &Object, place: &str) -> Result<TextRules, Decline> {
    let min_length = count(key, obj, "minLength")?;
    let max_length = count(key, obj, "maxLength")?;
    if let (Some(min), Some(max)) = (min_length, max_length)
        && min > max
    {
        return Err(Decline::property(
            key,
            DeclineRule::InvalidConstraint,
            format!("{place}`minLength` {min} is larger than `maxLength` {max}"),
        ));
    }
    let format = match obj.member("format") {
        None => None,
        Some(Value::String(name)) => match StringFormat::from_name(name) {
            Some(format) => Some(format),
            None => {
                return Err(Decline::property(
                    key,
                    DeclineRule::UnsupportedFormat,
                    format!(
                        "{place}`format` \"{}\" is not supported; use email, uri, date or date-time",
                        size::clip(name)
                    ),
                ));
            }
        },
        Some(other) => {
            return Err(Decline::property(
                key,
                DeclineRule::UnsupportedFormat,
                format!("{place}`format` must be a string, not {}", kind_of(other)),
            ));
        }
    };
    let pattern = match obj.member("pattern") {
        None => None,
        Some(Value::String(source)) => match Pattern::new(source) {
            Ok(pattern) => Some(pattern),
            Err(problem) => {
                let rule = if source.len() > MAX_PATTERN_BYTES {
                    DeclineRule::TooLarge
                } else {
                    DeclineRule::InvalidPattern
                };
                return Err(Decline::property(
                    key,
                    rule,
                    format!("{place}`pattern` {problem}"),
                ));
            }
        },
        Some(other) => {
            return Err(Decline::property(
                key,
                DeclineRule::InvalidPattern,
                format!("{place}`pattern` must be a string, not {}", kind_of(other)),
            ));
        }
    };
    Ok(TextRules {
        min_length,
        max_length,
        format,
        pattern,
        suggestions: Vec::new(),
    })
}

/// Declines a select field whose own string constraints rule out one of its options, so that any
/// option the person picks is valid.
pub(crate) fn check_options_against(
    key: &str,
    options: &[Choice],
    rules: &TextRules,
) -> Result<(), Decline> {
    for option in options {
        if let Some(problem) = check_text(rules, &option.value).into_iter().next() {
            return Err(Decline::property(
                key,
                DeclineRule::InvalidConstraint,
                format!(
                    "option \"{}\" breaks the field's own string constraints: it {problem}",
                    size::clip(&option.value)
                ),
            ));
        }
    }
    Ok(())
}

pub(crate) fn parse_number_rules(
    key: &str,
    obj: &Object,
    type_name: &str,
    integer: bool,
) -> Result<NumberRules, Decline> {
    reject_options(key, obj, type_name)?;
    reject_format(key, obj, type_name)?;
    let rules = NumberRules {
        minimum: number(key, obj, "minimum")?,
        maximum: number(key, obj, "maximum")?,
        exclusive_minimum: number(key, obj, "exclusiveMinimum")?,
        exclusive_maximum: number(key, obj, "exclusiveMaximum")?,
        multiple_of: number(key, obj, "multipleOf")?,
    };
    if let Some(step) = rules
        .multiple_of
        .as_ref()
        .and_then(Number::as_f64)
        .filter(|step| *step <= 0.0)
    {
        return Err(Decline::property(
            key,
            DeclineRule::InvalidKeyword,
            format!("`multipleOf` must be positive, not {step}"),
        ));
    }
    let lower = [(&rules.minimum, false), (&rules.exclusive_minimum, true)];
    let upper = [(&rules.maximum, false), (&rules.exclusive_maximum, true)];
    for (low, low_exclusive) in lower
        .iter()
        .filter_map(|(n, ex)| Some(((*n).as_ref()?.as_f64()?, *ex)))
    {
        for (high, high_exclusive) in upper
            .iter()
            .filter_map(|(n, ex)| Some(((*n).as_ref()?.as_f64()?, *ex)))
        {
            let empty = low > high || (low == high && (low_exclusive || high_exclusive));
            let no_integer = integer && !empty && low.ceil() > high.floor();
            if empty || no_integer {
                return Err(Decline::property(
                    key,
                    DeclineRule::InvalidConstraint,
                    format!(
                        "no {type_name} lies between the lower bound {low} and the upper bound {high}"
                    ),
                ));
            }
        }
    }
    Ok(rules)
}

pub(crate) fn reject_options(key: &str, obj: &Object, type_name: &str) -> Result<(), Decline> {
    if let Some(keyword) = ["enum", "oneOf"]
        .into_iter()
        .find(|keyword| obj.has(keyword))
    {
        return Err(Decline::property(
            key,
            DeclineRule::NonStringEnum,
            format!(
                "has `{keyword}` on {}; only string options are supported",
                article(type_name)
            ),
        ));
    }
    Ok(())
}

pub(crate) fn reject_format(key: &str, obj: &Object, type_name: &str) -> Result<(), Decline> {
    match obj.member("format") {
        Some(format) => Err(Decline::property(
            key,
            DeclineRule::UnsupportedFormat,
            format!(
                "has `format` {} on {}; formats apply only to strings",
                show(format),
                article(type_name)
            ),
        )),
        None => Ok(()),
    }
}

/// An optional text annotation (`title`, `description`) of a property.
pub(crate) fn text(key: &str, obj: &Object, keyword: &str) -> Result<Option<String>, Decline> {
    match obj.member(keyword) {
        None => Ok(None),
        Some(Value::String(text)) if text.len() <= MAX_TEXT_BYTES => Ok(Some(text.clone())),
        Some(Value::String(text)) => Err(Decline::property(
            key,
            DeclineRule::TooLarge,
            format!(
                "`{keyword}` is {} bytes long; at most {MAX_TEXT_BYTES} are allowed",
                text.len()
            ),
        )),
        Some(other) => Err(Decline::property(
            key,
            DeclineRule::InvalidKeyword,
            format!("`{keyword}` must be a string, not {}", kind_of(other)),
        )),
    }
}

/// An optional non-negative integer keyword (`minLength`, `maxItems`, ...); `2.0` counts as 2.
pub(crate) fn count(key: &str, obj: &Object, keyword: &str) -> Result<Option<u64>, Decline> {
    let Some(value) = obj.member(keyword) else {
        return Ok(None);
    };
    let as_count = match value {
        Value::Number(n) => n.as_u64().or_else(|| {
            let f = n.as_f64()?;
            (f >= 0.0 && f.fract() == 0.0 && f <= u64::MAX as f64).then_some(f as u64)
        }),
        _ => None,
    };
    match as_count {
        Some(n) => Ok(Some(n)),
        None => Err(Decline::property(
            key,
            DeclineRule::InvalidKeyword,
            format!(
                "`{keyword}` must be a non-negative integer, not {}",
                show(value)
            ),
        )),
    }
}

/// An optional numeric keyword (`minimum`, `multipleOf`, ...).
pub(crate) fn number(key: &str, obj: &Object, keyword: &str) -> Result<Option<Number>, Decline> {
    match obj.member(keyword) {
        None => Ok(None),
        Some(Value::Number(n)) => Ok(Some(n.clone())),
        Some(other) => Err(Decline::property(
            key,
            DeclineRule::InvalidKeyword,
            format!("`{keyword}` must be a number, not {}", show(other)),
        )),
    }
}

/// "a number", "an integer", "an array", "a boolean".
pub(crate) fn article(type_name: &str) -> String {
    match type_name.as_bytes().first() {
        Some(b'a' | b'e' | b'i' | b'o' | b'u') => format!("an {type_name}"),
        _ => format!("a {type_name}"),
    }
}
