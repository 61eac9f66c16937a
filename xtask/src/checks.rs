//! Repository checks that turn chores into tests: which workspace crate may depend on which,
//! which room of `formwork-host` may use which, format, clippy.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde_json::Value;

use crate::cargo;

/// What a workspace crate must not depend on (any dependency kind: normal, build or dev).
enum Forbidden {
    AnyWorkspaceCrate,
    These(&'static [&'static str]),
}

/// The arrows that must keep pointing one way. A rule about a crate that does not exist (yet) checks nothing.
const RULES: &[(&str, Forbidden)] = &[
    // forms is the pure core: no I/O, so no other formwork crate.
    ("formwork-forms", Forbidden::AnyWorkspaceCrate),
    // host is below the front ends: the web UI and the CLI use it, never the reverse.
    (
        "formwork-host",
        Forbidden::These(&["formwork-web", "formwork"]),
    ),
    // An SDK for plugin authors must not drag the host, the workbench or the CLI in.
    (
        "formwork-sdk",
        Forbidden::These(&["formwork-host", "formwork-web", "formwork"]),
    ),
    // The examples are plugins on the SDK: the CLI bundles them, never the reverse.
    (
        "form-examples",
        Forbidden::These(&["formwork-host", "formwork-web", "formwork"]),
    ),
    // The test kit is every crate's dev-dependency: depending on one of them would make a cycle, or bring the CLI
    // into the host's tests.
    ("formwork-testkit", Forbidden::AnyWorkspaceCrate),
];

/// `cargo metadata --format-version 1 --no-deps` of the workspace.
pub fn workspace_metadata(root: &Path) -> Result<Value> {
    let output = cargo()
        .args(["metadata", "--format-version", "1", "--no-deps"])
        .current_dir(root)
        .output()
        .context("running cargo metadata")?;
    if !output.status.success() {
        bail!(
            "cargo metadata failed:\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    serde_json::from_slice(&output.stdout).context("parsing cargo metadata")
}

/// Whether the workspace has a package of that name.
pub fn has_package(metadata: &Value, name: &str) -> bool {
    packages(metadata).any(|package| package["name"] == name)
}

/// Fails with one line per forbidden edge.
pub fn dependency_direction(metadata: &Value) -> Result<()> {
    let bad = forbidden_edges(metadata);
    if bad.is_empty() {
        eprintln!("xtask: dependency direction ok");
        return Ok(());
    }
    bail!("dependency direction violated:\n{}", bad.join("\n"))
}

fn forbidden_edges(metadata: &Value) -> Vec<String> {
    let workspace: Vec<&str> = packages(metadata)
        .filter_map(|package| package["name"].as_str())
        .collect();
    let mut bad = Vec::new();
    for package in packages(metadata) {
        let name = package["name"].as_str().unwrap_or_default();
        let Some((_, forbidden)) = RULES.iter().find(|(crate_name, _)| *crate_name == name) else {
            continue;
        };
        let dependencies = package["dependencies"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default();
        for dependency in dependencies {
            let target = dependency["name"].as_str().unwrap_or_default();
            let is_forbidden = match forbidden {
                Forbidden::AnyWorkspaceCrate => workspace.contains(&target),
                Forbidden::These(names) => names.contains(&target),
            };
            if is_forbidden {
                let kind = dependency["kind"].as_str().unwrap_or("normal");
                let manifest = package["manifest_path"].as_str().unwrap_or_default();
                bad.push(format!(
                    "  {name} must not depend on {target} ({kind} dependency in {manifest})"
                ));
            }
        }
    }
    bad
}

fn packages(metadata: &Value) -> impl Iterator<Item = &Value> {
    metadata["packages"].as_array().into_iter().flatten()
}

/// The rooms of `crates/host/src` that must not use the rooms above them (each a module file or
/// folder). A lower room exposes hooks instead: the connection offers an observer, it never
/// imports the doctor.
const HOST_ROOMS: &[(&str, &[&str])] = &[
    // Moves frames and signs in; beyond the bottom modules (`jsonrpc`, `budget`, `error`,
    // `oauth_choices`) it knows no room of the host.
    (
        "transport",
        &[
            "plugin",
            "session",
            "doctor",
            "policy",
            "store",
            "config",
            "persist",
            "agent",
            "apps",
            "runtime",
            "sign_on",
            "approval_choice",
            "fuzzing",
            "responder",
        ],
    ),
    (
        "plugin",
        &[
            "session", "doctor", "policy", "store", "config", "persist", "agent", "runtime",
            "sign_on",
        ],
    ),
    (
        "policy",
        &[
            "session",
            "plugin",
            "doctor",
            "store",
            "transport",
            "persist",
            "agent",
            "runtime",
            "sign_on",
        ],
    ),
    // Persistence of what the session decided: the session's own vocabulary comes down to it
    // through the bottom modules (`approval_choice`), never from the policy.
    (
        "store",
        &[
            "session",
            "plugin",
            "doctor",
            "transport",
            "config",
            "policy",
            "persist",
            "responder",
            "agent",
            "apps",
            "runtime",
            "sign_on",
        ],
    ),
    (
        "config",
        &[
            "session",
            "plugin",
            "doctor",
            "store",
            "transport",
            "policy",
            "persist",
            "agent",
            "apps",
            "runtime",
            "sign_on",
        ],
    ),
    // A server's OAuth keys made into the transport's authorizer: above config and transport,
    // below everything that connects.
    (
        "sign_on",
        &[
            "session", "plugin", "doctor", "policy", "store", "persist", "agent", "apps", "runtime",
        ],
    ),
    // The model's side: providers, wires, names, history. The session runs the turn.
    (
        "agent",
        &[
            "session",
            "plugin",
            "doctor",
            "store",
            "persist",
            "policy",
            "apps",
            "runtime",
            "sign_on",
            "responder",
        ],
    ),
    // Runtimes beside the model loop (Codex's app-server): their process and protocol; the
    // session bridges their events and requests.
    (
        "runtime",
        &[
            "session", "plugin", "doctor", "store", "persist", "policy", "apps", "agent", "sign_on",
        ],
    ),
    // MCP Apps' pure decisions: plugin JSON in, policy out; the session layer acts on them.
    (
        "apps",
        &[
            "session",
            "plugin",
            "transport",
            "store",
            "doctor",
            "persist",
            "agent",
            "runtime",
            "sign_on",
        ],
    ),
    // The doctor judges a connection from plugin/ and config/, as a terminal command: the
    // session and what only the session uses are not its business.
    ("doctor", &["session", "persist", "store"]),
];

/// Rooms no other room may use: the doctor watches through the hooks the lower rooms offer.
const UNUSED_ROOMS: &[&str] = &["doctor"];

/// Fails with one line per use of a higher room from a lower one in `crates/host/src`: a path
/// `crate::<room>`, a `crate::{<room>::…}` group, or a name the crate root re-exports from it
/// (`crate::Host` is the session room's).
pub fn room_direction(root: &Path) -> Result<()> {
    let src = root.join("crates/host/src");
    let lib = std::fs::read_to_string(src.join("lib.rs")).context("reading the host's lib.rs")?;
    let mut files = Vec::new();
    for file in rust_files(&src)? {
        let text = std::fs::read_to_string(&file)
            .with_context(|| format!("reading {}", file.display()))?;
        let relative = file.strip_prefix(&src).unwrap_or(&file);
        files.push((relative.display().to_string(), text));
    }
    let bad = room_violations(&files, &lib);
    if bad.is_empty() {
        eprintln!("xtask: room direction ok");
        return Ok(());
    }
    bail!("a lower room uses a higher one:\n{}", bad.join("\n"))
}

/// One line per forbidden use in `files` (each a path under `crates/host/src` and its text);
/// `lib` is the text of `lib.rs`, whose re-exports count as uses of the room they come from.
fn room_violations(files: &[(String, String)], lib: &str) -> Vec<String> {
    let exports = root_exports(lib);
    let mut bad = Vec::new();
    for (path, text) in files {
        let Some(room) = room_of(path) else {
            continue;
        };
        let shown = format!("crates/host/src/{path}");
        bad.extend(forbidden_uses(
            &shown,
            text,
            &forbidden_rooms(room),
            &exports,
        ));
    }
    bad
}

/// The room of a file under `crates/host/src`: `doctor` for `doctor.rs` and `doctor/…`; none
/// for `lib.rs`, which declares and re-exports them all.
fn room_of(path: &str) -> Option<&str> {
    let first = path.split('/').next()?;
    let room = first.strip_suffix(".rs").unwrap_or(first);
    (room != "lib").then_some(room)
}

/// What `room` must not use: its row of [`HOST_ROOMS`], and every room of [`UNUSED_ROOMS`] but
/// itself.
fn forbidden_rooms(room: &str) -> Vec<&'static str> {
    let mut forbidden = HOST_ROOMS
        .iter()
        .find(|(name, _)| *name == room)
        .map(|(_, rooms)| rooms.to_vec())
        .unwrap_or_default();
    for unused in UNUSED_ROOMS {
        if *unused != room && !forbidden.contains(unused) {
            forbidden.push(unused);
        }
    }
    forbidden
}

/// Every `.rs` file under `dir`, sorted.
fn rust_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    let mut dirs = vec![dir.to_owned()];
    while let Some(dir) = dirs.pop() {
        for entry in
            std::fs::read_dir(&dir).with_context(|| format!("reading {}", dir.display()))?
        {
            let path = entry?.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|ext| ext == "rs") {
                files.push(path);
            }
        }
    }
    files.sort();
    Ok(files)
}

/// Lines of code (comments aside) that reach a forbidden room through `crate::`.
fn forbidden_uses(
    file: &str,
    text: &str,
    forbidden: &[&str],
    exports: &[(String, String)],
) -> Vec<String> {
    let code: String = text
        .lines()
        .map(|line| line.split("//").next().unwrap_or_default())
        .collect::<Vec<_>>()
        .join("\n");
    let mut bad = Vec::new();
    for (at, first) in crate_paths(&code) {
        let room = exports
            .iter()
            .find(|(name, _)| *name == first)
            .map_or(first.as_str(), |(_, room)| room.as_str());
        if forbidden.contains(&room) {
            let line = code[..at].matches('\n').count() + 1;
            let entry = format!("  {file}:{line}: uses crate::{room}");
            if !bad.contains(&entry) {
                bad.push(entry);
            }
        }
    }
    bad
}

/// Every path that starts with `crate::`, as (byte offset, first segment); a `crate::{…}` group
/// gives one entry per item.
fn crate_paths(code: &str) -> Vec<(usize, String)> {
    let mut paths = Vec::new();
    for (at, _) in code.match_indices("crate::") {
        let before = code[..at].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let rest = &code[at + "crate::".len()..];
        match rest.strip_prefix('{') {
            Some(group) => {
                let mut depth = 0;
                let mut item_start = 0;
                for (index, c) in group.char_indices() {
                    match c {
                        '{' => depth += 1,
                        '}' if depth == 0 => {
                            paths.extend(first_segment(&group[item_start..index]).map(|s| (at, s)));
                            break;
                        }
                        '}' => depth -= 1,
                        ',' if depth == 0 => {
                            paths.extend(first_segment(&group[item_start..index]).map(|s| (at, s)));
                            item_start = index + 1;
                        }
                        _ => {}
                    }
                }
            }
            None => paths.extend(first_segment(rest).map(|s| (at, s))),
        }
    }
    paths
}

/// The identifier a path starts with.
fn first_segment(path: &str) -> Option<String> {
    let ident: String = path
        .trim_start()
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect();
    (!ident.is_empty()).then_some(ident)
}

/// The names `lib.rs` re-exports from its rooms (`pub use session::{Host, ...}`), with the room.
fn root_exports(lib: &str) -> Vec<(String, String)> {
    let mut exports = Vec::new();
    for (at, _) in lib.match_indices("pub use ") {
        let rest = &lib[at + "pub use ".len()..];
        let Some(end) = rest.find(';') else {
            continue;
        };
        let statement = &rest[..end];
        let Some((room, names)) = statement.split_once("::") else {
            continue;
        };
        let names = names.trim().trim_start_matches('{').trim_end_matches('}');
        for name in names.split(',') {
            let name = name.trim().rsplit("::").next().unwrap_or_default();
            if !name.is_empty() {
                exports.push((name.to_owned(), room.trim().to_owned()));
            }
        }
    }
    exports
}

/// `cargo fmt --all --check`, and the same in each fuzz workspace (outside the root one).
pub fn format(root: &Path) -> Result<()> {
    crate::run_command(cargo().args(["fmt", "--all", "--check"]).current_dir(root))?;
    let mut dirs: Vec<&str> = crate::fuzz::TARGETS
        .iter()
        .map(|target| target.dir)
        .collect();
    dirs.dedup();
    for dir in dirs {
        crate::run_command(
            cargo()
                .args(["fmt", "--check", "--manifest-path"])
                .arg(root.join(dir).join("Cargo.toml"))
                .current_dir(root),
        )?;
    }
    Ok(())
}

/// `cargo clippy --workspace --all-targets -- -D warnings`.
pub fn clippy(root: &Path) -> Result<()> {
    crate::run_command(
        cargo()
            .args([
                "clippy",
                "--workspace",
                "--all-targets",
                "--",
                "-D",
                "warnings",
            ])
            .current_dir(root),
    )
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::forbidden_edges;

    fn package(name: &str, deps: &[&str]) -> serde_json::Value {
        let dependencies: Vec<_> = deps
            .iter()
            .map(|dep| json!({"name": dep, "kind": null}))
            .collect();
        json!({"name": name, "manifest_path": format!("/{name}/Cargo.toml"), "dependencies": dependencies})
    }

    fn check(packages: Vec<serde_json::Value>, expected: &[&str]) {
        let found = forbidden_edges(&json!({ "packages": packages }));
        assert_eq!(found, expected);
    }

    #[test]
    fn allowed_arrows_pass() {
        check(
            vec![
                package("formwork-forms", &["serde", "serde_json"]),
                package("formwork-host", &["formwork-forms", "tokio"]),
                package("formwork", &["formwork-host", "formwork-forms"]),
            ],
            &[],
        );
    }

    #[test]
    fn forms_may_not_use_any_workspace_crate() {
        check(
            vec![
                package("formwork-forms", &["formwork-host"]),
                package("formwork-host", &[]),
            ],
            &[
                "  formwork-forms must not depend on formwork-host (normal dependency in /formwork-forms/Cargo.toml)",
            ],
        );
    }

    #[test]
    fn the_host_rooms_keep_their_direction() {
        super::room_direction(&crate::repo_root()).expect("room direction");
    }

    /// The forbidden uses of one synthetic file, with lib.rs re-exporting `Host` from the
    /// session.
    fn room_check(path: &str, text: &str) -> Vec<String> {
        let lib = "pub use session::{Host, authorizer_for};\npub use sign_on::token_store;\n";
        super::room_violations(&[(path.to_owned(), text.to_owned())], lib)
    }

    #[test]
    fn the_doctor_may_not_use_the_session_and_no_room_may_use_the_doctor() {
        assert_eq!(
            room_check(
                "doctor.rs",
                "use crate::plugin::Plugin;\nuse crate::session::Host;\n"
            ),
            ["  crates/host/src/doctor.rs:2: uses crate::session"]
        );
        assert_eq!(
            room_check(
                "doctor/codex.rs",
                "let auth = crate::authorizer_for(config);\n"
            ),
            ["  crates/host/src/doctor/codex.rs:1: uses crate::session"]
        );
        assert_eq!(
            room_check("session/mod.rs", "use crate::doctor::Report;\n"),
            ["  crates/host/src/session/mod.rs:1: uses crate::doctor"]
        );
        assert!(
            room_check(
                "doctor.rs",
                "let store = crate::token_store(config, dir);\n"
            )
            .is_empty()
        );
    }

    #[test]
    fn the_transport_uses_only_the_bottom_modules() {
        assert_eq!(
            room_check(
                "transport/auth/store.rs",
                "use crate::jsonrpc;\nuse crate::oauth_choices::CredentialsStoreMode;\nuse crate::config::Config;\nuse crate::sign_on;\n"
            ),
            [
                "  crates/host/src/transport/auth/store.rs:3: uses crate::config",
                "  crates/host/src/transport/auth/store.rs:4: uses crate::sign_on"
            ]
        );
    }

    #[test]
    fn the_store_may_not_use_the_policy() {
        assert_eq!(
            room_check(
                "store/records.rs",
                "pub use crate::approval_choice::ApprovalChoice;\npub use crate::policy::ApprovalChoice;\n"
            ),
            ["  crates/host/src/store/records.rs:2: uses crate::policy"]
        );
    }

    #[test]
    fn the_agent_may_not_use_the_runtime_or_the_sign_on() {
        assert_eq!(
            room_check(
                "agent/provider.rs",
                "use crate::transport::http1;\nuse crate::{config, runtime::codex};\nuse crate::token_store;\n"
            ),
            [
                "  crates/host/src/agent/provider.rs:2: uses crate::runtime",
                "  crates/host/src/agent/provider.rs:3: uses crate::sign_on"
            ]
        );
    }

    #[test]
    fn a_lower_room_may_not_name_a_higher_one_in_code() {
        let text = "//! See crate::doctor.\nuse crate::jsonrpc;\nuse crate::doctor::X; // crate::session\nlet x = crate::doctors;\n";
        assert_eq!(
            super::forbidden_uses("plugin.rs", text, &["doctor", "session"], &[]),
            ["  plugin.rs:3: uses crate::doctor"]
        );
    }

    #[test]
    fn groups_and_root_re_exports_count_too() {
        let exports = super::root_exports(
            "pub use session::{CommandError, Host};\npub use plugin::{\n    Plugin,\n};\n",
        );
        let text = "use crate::{\n    jsonrpc,\n    session::Thing,\n};\nfn f(_: crate::Host) {}\nuse crate::Plugin;\n";
        assert_eq!(
            super::forbidden_uses("transport.rs", text, &["session", "plugin"], &exports),
            [
                "  transport.rs:1: uses crate::session",
                "  transport.rs:5: uses crate::session",
                "  transport.rs:6: uses crate::plugin"
            ]
        );
    }

    #[test]
    fn host_may_not_use_the_front_ends() {
        check(
            vec![
                package("formwork-host", &["formwork-web", "formwork"]),
                package("formwork-web", &[]),
            ],
            &[
                "  formwork-host must not depend on formwork-web (normal dependency in /formwork-host/Cargo.toml)",
                "  formwork-host must not depend on formwork (normal dependency in /formwork-host/Cargo.toml)",
            ],
        );
    }

    #[test]
    fn the_examples_may_use_the_sdk_but_not_the_host_or_the_cli() {
        check(
            vec![
                package(
                    "form-examples",
                    &["formwork-sdk", "formwork-host", "formwork"],
                ),
                package("formwork", &["form-examples", "formwork-host"]),
            ],
            &[
                "  form-examples must not depend on formwork-host (normal dependency in /form-examples/Cargo.toml)",
                "  form-examples must not depend on formwork (normal dependency in /form-examples/Cargo.toml)",
            ],
        );
    }

    #[test]
    fn the_test_kit_may_use_no_workspace_crate() {
        check(
            vec![
                package("formwork-testkit", &["formwork-host", "serde_json"]),
                package("formwork-host", &["formwork-testkit"]),
            ],
            &[
                "  formwork-testkit must not depend on formwork-host (normal dependency in /formwork-testkit/Cargo.toml)",
            ],
        );
    }

    #[test]
    fn the_sdk_may_not_use_the_host_or_the_front_ends() {
        check(
            vec![
                package(
                    "formwork-sdk",
                    &[
                        "formwork-forms",
                        "formwork-host",
                        "formwork-web",
                        "formwork",
                    ],
                ),
                package("formwork-forms", &[]),
            ],
            &[
                "  formwork-sdk must not depend on formwork-host (normal dependency in /formwork-sdk/Cargo.toml)",
                "  formwork-sdk must not depend on formwork-web (normal dependency in /formwork-sdk/Cargo.toml)",
                "  formwork-sdk must not depend on formwork (normal dependency in /formwork-sdk/Cargo.toml)",
            ],
        );
    }
}
