//! Shared helpers: fixtures in, snapshots out.
//!
//! Snapshots live in `tests/snapshots/*.json`. Run with `UPDATE_SNAPSHOTS=1` to rewrite them after
//! an intended change, then review the diff.

#![allow(clippy::unwrap_used, dead_code)]

use std::path::PathBuf;

use formwork_forms::{ElicitationRequest, Form, parse_request};
use serde_json::Value;

fn dir(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join(name)
}

/// The JSON in `tests/fixtures/<path>`.
pub fn fixture(path: &str) -> Value {
    let file = dir("fixtures").join(path);
    let text =
        std::fs::read_to_string(&file).unwrap_or_else(|err| panic!("{}: {err}", file.display()));
    serde_json::from_str(&text).unwrap_or_else(|err| panic!("{}: {err}", file.display()))
}

/// The form of the request fixture `tests/fixtures/requests/<name>.json`.
pub fn form(name: &str) -> Form {
    match parse_request(&fixture(&format!("requests/{name}.json"))) {
        Ok(ElicitationRequest::Form(request)) => {
            std::sync::Arc::unwrap_or_clone(request.form.expect("a parsed request has its form"))
        }
        Ok(other) => panic!("{name}: expected a form request, got {other:?}"),
        Err(decline) => panic!("{name}: declined: {decline}"),
    }
}

/// Compares `actual` with `tests/snapshots/<name>.json` (rewrites it under `UPDATE_SNAPSHOTS=1`).
pub fn check_snapshot(name: &str, actual: &Value) {
    let file = dir("snapshots").join(format!("{name}.json"));
    let actual_text = format!("{}\n", serde_json::to_string_pretty(actual).unwrap());
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
        std::fs::write(&file, &actual_text).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&file).unwrap_or_else(|err| {
        panic!(
            "{}: {err} (run with UPDATE_SNAPSHOTS=1 to create it)",
            file.display()
        )
    });
    assert!(
        expected == actual_text,
        "snapshot {name} differs (run with UPDATE_SNAPSHOTS=1 and review the diff)\n--- expected\n{expected}\n--- actual\n{actual_text}"
    );
}
