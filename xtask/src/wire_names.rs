//! The page matches on the host's wire names, which it lists in `crates/web/assets/wire.js`; this
//! check fails when that list and the Rust enums differ, so a renamed or added reason or choice
//! cannot leave the page showing a raw name or missing a button.
//!
//! The Rust side is read from the source: each enum's `as_str` (and `ApprovalChoice::label`)
//! match arms, `Type::Variant => "name"`. A unit test in `formwork-host` holds those to the
//! serde names.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result, bail};

/// The page's copy of the wire names.
const PAGE: &str = "crates/web/assets/wire.js";
/// Where `EndReason` is.
const WIRE: &str = "crates/host/src/session/wire.rs";
/// Where `ApprovalChoice` is.
const APPROVAL: &str = "crates/host/src/approval_choice.rs";

/// Compares `wire.js` with the host's enums in the checkout at `root`.
pub fn wire_names(root: &Path) -> Result<()> {
    let read = |path: &str| {
        std::fs::read_to_string(root.join(path)).with_context(|| format!("reading {path}"))
    };
    let page = read(PAGE)?;
    let rust = RustNames {
        end_reasons: match_arms(&read(WIRE)?, "EndReason", "as_str")?,
        approval_choices: match_arms(&read(APPROVAL)?, "ApprovalChoice", "as_str")?,
        approval_labels: match_arms(&read(APPROVAL)?, "ApprovalChoice", "label")?,
    };
    let differences = differences(&page, &rust)?;
    if differences.is_empty() {
        eprintln!("xtask: {PAGE} and the host's wire names agree");
        return Ok(());
    }
    bail!(
        "{PAGE} and the host's wire names differ:\n{}",
        differences.join("\n")
    )
}

/// The Rust enums' names, each as (variant, string) in source order.
struct RustNames {
    end_reasons: Vec<(String, String)>,
    approval_choices: Vec<(String, String)>,
    approval_labels: Vec<(String, String)>,
}

/// One line per difference between the page's constants and the Rust names.
fn differences(page: &str, rust: &RustNames) -> Result<Vec<String>> {
    let end_reasons = js_object(page, "END_REASONS")?;
    let approval_choices = js_object(page, "APPROVAL_CHOICES")?;
    let mut found = Vec::new();
    compare_keys(
        "END_REASONS",
        "EndReason",
        &end_reasons,
        &rust.end_reasons,
        &mut found,
    );
    compare_keys(
        "APPROVAL_CHOICES",
        "ApprovalChoice",
        &approval_choices,
        &rust.approval_choices,
        &mut found,
    );
    for (variant, name) in &rust.approval_choices {
        let Some(entry) = approval_choices.get(name) else {
            continue;
        };
        let label = rust
            .approval_labels
            .iter()
            .find(|(labelled, _)| labelled == variant)
            .map(|(_, label)| label.as_str());
        let page_label = quoted_after(entry, "label:");
        if label != page_label.as_deref() {
            found.push(format!(
                "  APPROVAL_CHOICES.{name}.label is {page_label:?}, ApprovalChoice::{variant}'s label {label:?}"
            ));
        }
    }
    Ok(found)
}

fn compare_keys(
    constant: &str,
    enum_name: &str,
    page: &BTreeMap<String, String>,
    rust: &[(String, String)],
    found: &mut Vec<String>,
) {
    for (variant, name) in rust {
        if !page.contains_key(name) {
            found.push(format!(
                "  {constant} lacks \"{name}\" ({enum_name}::{variant})"
            ));
        }
    }
    for name in page.keys() {
        if !rust.iter().any(|(_, rust_name)| rust_name == name) {
            found.push(format!(
                "  {constant} has \"{name}\", which no {enum_name} is"
            ));
        }
    }
}

/// The top-level entries of `export const NAME = { ... };`, one per line: key (quotes taken
/// off) to the text after the colon.
fn js_object(page: &str, name: &str) -> Result<BTreeMap<String, String>> {
    let start = format!("export const {name} = {{");
    let at = page
        .find(&start)
        .with_context(|| format!("{PAGE} has no `{start}`"))?;
    let body = &page[at + start.len()..];
    let end = body
        .find("\n};")
        .with_context(|| format!("{PAGE}: `{name}` does not end with `}};`"))?;
    let mut entries = BTreeMap::new();
    for line in body[..end].lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with("//") {
            continue;
        }
        let Some((key, value)) = line.split_once(':') else {
            bail!("{PAGE}: `{name}` has a line that is no entry: {line}");
        };
        entries.insert(key.trim().trim_matches('"').to_owned(), value.to_owned());
    }
    Ok(entries)
}

/// The string literal after `marker` in `text`.
fn quoted_after(text: &str, marker: &str) -> Option<String> {
    let rest = &text[text.find(marker)? + marker.len()..];
    let rest = rest.trim_start().strip_prefix('"')?;
    Some(rest[..rest.find('"')?].to_owned())
}

/// The arms `Type::Variant => "name"` of `fn function` in `impl Type`, in order.
fn match_arms(source: &str, type_name: &str, function: &str) -> Result<Vec<(String, String)>> {
    let impl_start = format!("impl {type_name} {{");
    let at = source
        .find(&impl_start)
        .with_context(|| format!("no `{impl_start}`"))?;
    let fn_start = format!("fn {function}(self)");
    let body_at = source[at..]
        .find(&fn_start)
        .with_context(|| format!("no `{fn_start}` in `{impl_start}`"))?;
    let body = &source[at + body_at..];
    let body = &body[..body.find("\n    }\n").unwrap_or(body.len())];
    let prefix = format!("{type_name}::");
    let arms: Vec<(String, String)> = body
        .lines()
        .filter_map(|line| {
            let (variant, value) = line.trim().strip_prefix(&prefix)?.split_once("=>")?;
            Some((variant.trim().to_owned(), quoted_after(value, "")?))
        })
        .collect();
    if arms.is_empty() {
        bail!("`{type_name}::{function}` has no arm `{type_name}::Variant => \"name\"`");
    }
    Ok(arms)
}

#[cfg(test)]
mod tests {
    use super::{RustNames, differences, match_arms};

    const PAGE: &str = r#"
// Why.
export const END_REASONS = {
  "new-message": "a new message was sent",
  stopped: "the turn was stopped",
};

export const APPROVAL_CHOICES = {
  allow: { label: "Allow", done: "Allowed" },
  deny: { label: "Deny", done: "Denied" },
};
"#;

    const RUST: &str = r#"
impl EndReason {
    pub fn as_str(self) -> &'static str {
        match self {
            EndReason::NewMessage => "new-message",
            EndReason::Stopped => "stopped",
        }
    }
}
"#;

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(variant, name)| ((*variant).to_owned(), (*name).to_owned()))
            .collect()
    }

    fn rust(end_reasons: &[(&str, &str)], labels: &[(&str, &str)]) -> RustNames {
        RustNames {
            end_reasons: pairs(end_reasons),
            approval_choices: pairs(&[("Allow", "allow"), ("Deny", "deny")]),
            approval_labels: pairs(labels),
        }
    }

    #[test]
    fn the_checkout_agrees() {
        super::wire_names(&crate::repo_root()).expect("wire names");
    }

    #[test]
    fn match_arms_are_read_in_order() {
        assert_eq!(
            match_arms(RUST, "EndReason", "as_str").expect("arms"),
            pairs(&[("NewMessage", "new-message"), ("Stopped", "stopped")])
        );
    }

    #[test]
    fn the_same_names_pass() {
        let names = rust(
            &[("NewMessage", "new-message"), ("Stopped", "stopped")],
            &[("Allow", "Allow"), ("Deny", "Deny")],
        );
        assert_eq!(
            differences(PAGE, &names).expect("parsed"),
            Vec::<String>::new()
        );
    }

    #[test]
    fn a_difference_either_way_or_in_a_label_fails() {
        let names = rust(
            &[("NewMessage", "new-message"), ("TimedOut", "timed-out")],
            &[("Allow", "Allow"), ("Deny", "Refuse")],
        );
        assert_eq!(
            differences(PAGE, &names).expect("parsed"),
            [
                "  END_REASONS lacks \"timed-out\" (EndReason::TimedOut)",
                "  END_REASONS has \"stopped\", which no EndReason is",
                "  APPROVAL_CHOICES.deny.label is Some(\"Deny\"), ApprovalChoice::Deny's label Some(\"Refuse\")",
            ]
        );
    }
}
