//! docs/ARCHITECTURE.md names files and tests; this check fails when one of them is gone, so the
//! map cannot quietly point at a renamed or deleted place.
//!
//! A cited file is a backquoted token ending in a source or doc extension (`session/apps.rs`,
//! `tests/browser/apps.mjs`): some tracked file's path must end with it. A cited test or function
//! is a backquoted snake_case name of four words or more (`a_deleted_session_leaves_nothing_behind`):
//! it must occur in a tracked source file. A cited folder (`session/`) must hold a tracked file.

use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result, bail};

/// The document checked.
const DOC: &str = "docs/ARCHITECTURE.md";
/// The endings that make a backquoted token a file name.
const FILE_ENDINGS: [&str; 7] = [".rs", ".mjs", ".js", ".py", ".md", ".toml", ".sh"];
/// File names the document gives that are the person's, not the checkout's.
const THE_PERSONS_FILES: [&str; 1] = ["formwork.toml"];
/// The files whose text may hold a cited name.
const SOURCE_ENDINGS: [&str; 5] = [".rs", ".mjs", ".js", ".py", ".toml"];

/// Checks `docs/ARCHITECTURE.md` against the tracked files of the checkout at `root`.
pub fn architecture_citations(root: &Path) -> Result<()> {
    let doc = std::fs::read_to_string(root.join(DOC)).with_context(|| format!("reading {DOC}"))?;
    let output = Command::new("git")
        .arg("-C")
        .arg(root)
        .args(["ls-files", "-z"])
        .output()
        .context("running git ls-files")?;
    if !output.status.success() {
        bail!(
            "git ls-files failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let files: Vec<String> = output
        .stdout
        .split(|byte| *byte == 0)
        .filter(|path| !path.is_empty())
        .map(|path| String::from_utf8_lossy(path).into_owned())
        .collect();
    let mut sources = String::new();
    for file in files
        .iter()
        .filter(|file| SOURCE_ENDINGS.iter().any(|ending| file.ends_with(ending)))
    {
        // A file that cannot be read as text holds no name.
        if let Ok(text) = std::fs::read_to_string(root.join(file)) {
            sources.push_str(&text);
            sources.push('\n');
        }
    }
    let missing = missing_citations(&doc, &files, &sources);
    if missing.is_empty() {
        eprintln!("xtask: {DOC} cites only what exists");
        return Ok(());
    }
    bail!(
        "{DOC} cites what the checkout does not have:\n{}",
        missing.join("\n")
    )
}

/// Each citation of `doc` that no path of `files` ends with, or no text of `sources` holds.
fn missing_citations(doc: &str, files: &[String], sources: &str) -> Vec<String> {
    let mut missing = Vec::new();
    for token in backquoted(doc) {
        if THE_PERSONS_FILES.contains(&token) {
            continue;
        }
        if FILE_ENDINGS.iter().any(|ending| token.ends_with(ending)) && is_path(token) {
            let found = files
                .iter()
                .any(|file| file == token || file.ends_with(&format!("/{token}")));
            if !found {
                missing.push(format!("  file `{token}`"));
            }
        } else if token.len() > 1 && token.ends_with('/') && is_path(token) {
            let found = files
                .iter()
                .any(|file| file.starts_with(token) || file.contains(&format!("/{token}")));
            if !found {
                missing.push(format!("  folder `{token}`"));
            }
        } else if is_long_snake_name(token) && !sources.contains(token) {
            missing.push(format!("  name `{token}`"));
        }
    }
    missing.sort();
    missing.dedup();
    missing
}

/// The backquoted tokens of `text`, in order (a run of two or more backquotes counts as one).
fn backquoted(text: &str) -> impl Iterator<Item = &str> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .map(str::trim)
        .filter(|token| !token.is_empty())
}

/// A relative path: path characters only, no spaces, no `*` (a pattern), no `<` (a placeholder).
fn is_path(token: &str) -> bool {
    token
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '/' | '_' | '-' | '.'))
        && !token.starts_with('/')
}

/// `snake_case` of four words or more: a test's or a function's name, not a config key's
/// usual two or three.
fn is_long_snake_name(token: &str) -> bool {
    let words: Vec<&str> = token.split('_').collect();
    words.len() >= 4
        && words.iter().all(|word| {
            !word.is_empty()
                && word
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        })
        && token.starts_with(|c: char| c.is_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use super::missing_citations;

    #[test]
    fn the_architecture_cites_only_what_exists() {
        super::architecture_citations(&crate::repo_root()).expect("ARCHITECTURE citations");
    }

    #[test]
    fn a_gone_file_or_test_is_named_and_present_ones_pass() {
        let files = vec![
            "crates/host/src/session/apps.rs".to_owned(),
            "tests/browser/apps.mjs".to_owned(),
        ];
        let sources = "fn a_deleted_session_leaves_nothing_behind() {}";
        let doc = "See `session/apps.rs`, `session/`, `tests/browser/apps.mjs` and \
                   `a_deleted_session_leaves_nothing_behind`; not `session/gone.rs` \
                   nor `a_test_that_was_renamed` nor `transport/gone/`; `default_tools_approval_mode` is a key \
                   (three underscores but found in no source here: it counts), `<dir>/x.rs` \
                   and `uploads/<id>/` are placeholders, `*.rs` a pattern.";
        assert_eq!(
            missing_citations(doc, &files, sources),
            [
                "  file `session/gone.rs`",
                "  folder `transport/gone/`",
                "  name `a_test_that_was_renamed`",
                "  name `default_tools_approval_mode`",
            ]
        );
    }
}
