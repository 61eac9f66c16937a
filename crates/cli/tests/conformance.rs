//! The official MCP conformance suite (`@modelcontextprotocol/conformance` 0.1.16, client mode) against
//! `examples/conformance-client`, the small Streamable-HTTP client built on formwork-host. The suite starts its own
//! test server on a free port and runs `conformance-client <serverUrl>`; it needs node 22 first on `PATH`.

mod common;

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use common::{node_bin_dir, run};

/// `target/debug/conformance-client`, beside the `formwork` binary under test.
fn conformance_client() -> PathBuf {
    let client = PathBuf::from(env!("CARGO_BIN_EXE_formwork")).with_file_name("conformance-client");
    assert!(
        client.is_file(),
        "{} is missing: `cargo xtask test` builds it (cargo build -p formwork-conformance-client)",
        client.display()
    );
    client
}

/// Runs one client scenario and requires the suite's verdict `OVERALL: PASSED` with exit 0.
fn check_scenario(scenario: &str) {
    let mut path = OsString::from(node_bin_dir());
    path.push(":");
    path.push(std::env::var_os("PATH").unwrap_or_default());
    let output = run(
        Command::new(node_bin_dir().join("conformance"))
            .args(["client", "--command"])
            .arg(common::quote(&conformance_client()))
            .args(["--scenario", scenario])
            .env("PATH", path),
        None,
        Duration::from_secs(120),
    );
    let all = format!("{}{}", output.stdout, output.stderr);
    assert!(
        all.contains("OVERALL: PASSED"),
        "scenario {scenario} did not pass: {output}"
    );
    output.assert_code(0);
}

#[test]
fn initialize() {
    check_scenario("initialize");
}

#[test]
fn tools_call() {
    check_scenario("tools_call");
}

#[test]
fn elicitation_client_defaults() {
    check_scenario("elicitation-sep1034-client-defaults");
}

// MCP authorization (OAuth 2.1): every auth scenario of the suite. The example signs in as
// `formwork login` does, visiting the authorization URL headlessly (the suite's authorization
// server redirects at once).

#[test]
fn auth_metadata_discovery() {
    for scenario in [
        "auth/metadata-default",
        "auth/metadata-var1",
        "auth/metadata-var2",
        "auth/metadata-var3",
        "auth/2025-03-26-oauth-metadata-backcompat",
        "auth/2025-03-26-oauth-endpoint-fallback",
        "auth/resource-mismatch",
    ] {
        check_scenario(scenario);
    }
}

#[test]
fn auth_client_registration_and_authentication() {
    for scenario in [
        "auth/basic-cimd",
        "auth/pre-registration",
        "auth/token-endpoint-auth-basic",
        "auth/token-endpoint-auth-post",
        "auth/token-endpoint-auth-none",
    ] {
        check_scenario(scenario);
    }
}

#[test]
fn auth_scopes() {
    for scenario in [
        "auth/scope-from-www-authenticate",
        "auth/scope-from-scopes-supported",
        "auth/scope-omitted-when-undefined",
        "auth/scope-step-up",
        "auth/scope-retry-limit",
        "auth/offline-access-scope",
        "auth/offline-access-not-supported",
    ] {
        check_scenario(scenario);
    }
}

#[test]
fn auth_client_credentials() {
    for scenario in [
        "auth/client-credentials-jwt",
        "auth/client-credentials-basic",
    ] {
        check_scenario(scenario);
    }
}

/// Enterprise-managed authorization (SEP-990): the suite's identity provider trades the ID
/// token of its context for an ID-JAG, which its authorization server takes as a JWT bearer
/// grant with `client_secret_basic`.
#[test]
fn auth_cross_app_access() {
    check_scenario("auth/cross-app-access-complete-flow");
}

/// The server ends the call's event stream before answering, with `retry: 500`: the client
/// resumes it by GET with `Last-Event-ID` 450 to 700 ms after, and reads the answer there.
#[test]
fn sse_retry() {
    check_scenario("sse-retry");
}
