//! `cargo xtask test`: everything CI checks, in one command.
//!
//! Steps: format, room direction, the page's wire names (`wire_names.rs`), dependency direction, clippy, the test peers, the conformance client, `cargo test`. A failing
//! step does not stop the later ones (except that no test runs without peers), so one run reports every problem;
//! the command fails at the end naming each failed step. `cargo test` runs the conformance suite both ways: its
//! client scenarios against `examples/conformance-client` (crates/cli/tests/conformance.rs) and its server
//! scenarios against `examples/sdk-conformance` (that package's tests/server_scenarios.rs, which builds its own
//! binary, so it needs no build step here). The form examples' tests (examples/form-examples/tests) run its bins under
//! the `formwork` binary that the same `cargo test` builds for the CLI's tests, so they need none either.

use std::ffi::OsString;
use std::path::Path;

use anyhow::{Result, bail};

use crate::{cargo, checks, peers, run_command};

/// The example MCP client that the conformance suite drives (see crates/cli/tests/conformance.rs).
const CONFORMANCE_CLIENT: &str = "formwork-conformance-client";

pub fn run(root: &Path, cargo_test_args: &[String]) -> Result<()> {
    let mut failed = Vec::new();
    let mut step = |name: &'static str, result: Result<()>| -> bool {
        match result {
            Ok(()) => true,
            Err(err) => {
                eprintln!("xtask: step `{name}` failed: {err:#}");
                failed.push(name);
                false
            }
        }
    };

    step("cargo fmt --check", checks::format(root));
    step("room direction", checks::room_direction(root));
    step("page wire names", crate::wire_names::wire_names(root));
    step(
        "ARCHITECTURE citations",
        crate::doc_check::architecture_citations(root),
    );
    let metadata = checks::workspace_metadata(root);
    let has_conformance_client = match metadata {
        Ok(metadata) => {
            step(
                "dependency direction",
                checks::dependency_direction(&metadata),
            );
            checks::has_package(&metadata, CONFORMANCE_CLIENT)
        }
        Err(err) => {
            step("cargo metadata", Err(err));
            false
        }
    };
    step("cargo clippy", checks::clippy(root));

    match peers::install(root) {
        Err(err) => {
            step("install test peers", Err(err));
        }
        Ok(peers_dir) => {
            if has_conformance_client {
                // Built here, not from a test: a test cannot run cargo on the target dir its own cargo has locked.
                step(
                    "build the conformance client",
                    run_command(
                        cargo()
                            .args(["build", "--package", CONFORMANCE_CLIENT])
                            .current_dir(root),
                    ),
                );
            } else {
                eprintln!(
                    "xtask: no package {CONFORMANCE_CLIENT} in the workspace: the conformance tests will fail"
                );
            }
            let node_bin = peers_dir.join("npm/node_modules/.bin");
            let mut path = OsString::from(node_bin);
            if let Some(old) = std::env::var_os("PATH") {
                path.push(":");
                path.push(old);
            }
            step(
                "cargo test",
                run_command(
                    cargo()
                        .args(["test", "--workspace", "--all-targets", "--no-fail-fast"])
                        .args(cargo_test_args)
                        .env("FORMWORK_PEERS", &peers_dir)
                        .env("PATH", path)
                        .current_dir(root),
                ),
            );
        }
    }

    if failed.is_empty() {
        eprintln!("xtask: all steps passed");
        Ok(())
    } else {
        bail!("failed steps: {}", failed.join(", "))
    }
}
