//! `formwork.toml` at its boundary: text in, the loaded `Config` or the exact error text out;
//! and the file edits (`sync`, `import`, Always allow) as fixture files in, fixture files out.
//! The effective-policy report of a loaded config is the CLI's (`crates/cli/src/policy_report.rs`).
//!
//! Expected files live in `tests/fixtures/config/`. After an intended change of output, run
//! with `FORMWORK_BLESS=1` to rewrite them, then review the diff.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use formwork_host::config::{
    self, ApprovalMode, ApprovalPolicy, Config, ConfigError, ConfigLocations, Features,
    GranularApproval, Layer, RememberOutcome, SourceStatus, SyncAction, Transport,
};
use formwork_host::policy::{self, ModeSource};
use formwork_host::store::StoreUrl;
use serde_json::{Value, json};

mod bad;
mod edits;
mod good;
mod layers;
mod oauth;
mod writes;

/// Loads `input` as if it were `formwork.toml`.
fn load(input: &str) -> Config {
    match Config::from_toml(input, Some(Path::new("formwork.toml"))) {
        Ok(config) => config,
        Err(err) => panic!("input:\n{input}\ndoes not load: {err}"),
    }
}

/// Loads `input` as if it were `formwork.toml` and compares the error's full text.
fn check_error(input: &str, expected: &str) {
    match Config::from_toml(input, Some(Path::new("formwork.toml"))) {
        Ok(config) => {
            panic!("input:\n{input}\nloads, expected the error {expected:?}: {config:#?}")
        }
        Err(err) => assert_eq!(err.to_string(), expected, "input:\n{input}"),
    }
}

/// A stdio transport without `env` or `cwd`.
fn stdio(command: &str, args: &[&str]) -> Transport {
    Transport::Stdio {
        command: command.to_owned(),
        args: args.iter().map(|arg| (*arg).to_owned()).collect(),
        env: Default::default(),
        env_vars: Vec::new(),
        cwd: None,
    }
}

const EXE: &str = "/opt/formwork/bin/formwork";

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/config")
        .join(name)
}

/// Compares `actual` with the expected fixture file, or rewrites it under `FORMWORK_BLESS`.
fn assert_fixture(name: &str, actual: &str) {
    let path = fixture(name);
    if std::env::var_os("FORMWORK_BLESS").is_some() {
        std::fs::write(&path, actual).expect("write fixture");
        return;
    }
    let expected = std::fs::read_to_string(&path).expect("read fixture");
    assert_eq!(actual, expected, "{} differs", path.display());
}

/// A scratch copy of a fixture (or no file, for `None`).
fn scratch(dir: &tempfile::TempDir, from: Option<&str>) -> PathBuf {
    let path = dir.path().join("formwork.toml");
    if let Some(from) = from {
        std::fs::copy(fixture(from), &path).expect("copy fixture");
    }
    path
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).expect("read")
}

/// A temporary directory by its canonical path.
fn canonical_tempdir() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = std::fs::canonicalize(dir.path()).expect("canonical");
    (dir, root)
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path)
        .expect("metadata")
        .permissions()
        .mode()
        & 0o7777
}
