//! `cargo xtask peers`: installs the pinned third-party MCP peers that the integration tests talk to.
//!
//! Layout under `target/peers/`:
//! - `npm/`: `tests/peers/package.json` + `package-lock.json`, installed with `npm ci` (server-everything, the TS SDK,
//!   the conformance suite, node 22 in `node_modules/.bin`, and Codex 0.171.0 with its native binary), plus a copy
//!   of the peer-side fixture scripts so that their ESM imports resolve against that `node_modules`.
//! - `venv/`: a Python virtual environment with `tests/peers/requirements.txt` (`mcp`, `fastmcp`).
//!
//! Outside `target/`, from Debian's packages ([`DEBIAN_PACKAGES`]): `chromium` at `/usr/bin/chromium` for the
//! browser tests (`crates/cli/tests/browser.rs`, driven by `playwright-core`, which never downloads a browser of its
//! own), `dbus-daemon`, `dbus-bin` and `gnome-keyring` for the keyring test of `formwork login`
//! (`crates/cli/tests/oauth_sign_in.rs`, a Secret Service on a session bus of its own), and `postgresql` for the
//! store's PostgreSQL engine (testkit's `postgres::Cluster` runs a throwaway cluster of it under `target/`). Each is
//! installed with apt only when missing, and only as root; when that cannot be done the other peers still install
//! and the tests that need it fail saying why.
//!
//! Each install is skipped when its stamp file holds the fingerprint of the manifests it was made from. The stamps
//! live inside the directories they describe, so deleting `node_modules` or the venv forces a reinstall.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, Result};

use crate::{run_command, target_dir};

const STAMP: &str = ".formwork-stamp";

/// Installs what is missing or stale and returns the absolute `target/peers` directory.
pub fn install(root: &Path) -> Result<PathBuf> {
    let source = root.join("tests/peers");
    let peers = target_dir(root).join("peers");
    install_npm(&source, &peers.join("npm"))?;
    install_venv(&source, &peers.join("venv"))?;
    copy_fixtures(&source, &peers.join("npm"))?;
    if let Err(err) = install_debian_packages() {
        eprintln!("xtask: {err:#}; the tests that need them will fail");
    }
    Ok(peers)
}

/// The browser the browser tests drive, from Debian's packages.
pub(crate) const CHROMIUM: &str = "/usr/bin/chromium";

/// The programs the tests run from Debian's packages, and the package of each. A `*` stands for one directory
/// level, any name (PostgreSQL's binaries sit under its major version).
const DEBIAN_PACKAGES: [(&str, &str); 5] = [
    (CHROMIUM, "chromium"),
    ("/usr/bin/dbus-daemon", "dbus-daemon"),
    ("/usr/bin/dbus-send", "dbus-bin"),
    ("/usr/bin/gnome-keyring-daemon", "gnome-keyring"),
    ("/usr/lib/postgresql/*/bin/initdb", "postgresql"),
];

/// Whether `program` exists, a `*` in it matching any one directory.
fn installed(program: &str) -> bool {
    let Some((parent, rest)) = program.split_once("/*/") else {
        return Path::new(program).exists();
    };
    std::fs::read_dir(parent).is_ok_and(|entries| {
        entries
            .filter_map(Result::ok)
            .any(|entry| entry.path().join(rest).exists())
    })
}

/// `apt-get install` of the [`DEBIAN_PACKAGES`] whose program is missing: as root, without
/// questions.
fn install_debian_packages() -> Result<()> {
    let missing: Vec<&str> = DEBIAN_PACKAGES
        .iter()
        .filter(|(program, _)| !installed(program))
        .map(|(_, package)| *package)
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    let list = missing.join(" ");
    let uid = Command::new("id")
        .arg("-u")
        .output()
        .context("running id -u")?;
    if String::from_utf8_lossy(&uid.stdout).trim() != "0" {
        anyhow::bail!(
            "{list} missing and xtask is not root: install with `sudo apt-get install -y {list}`"
        );
    }
    let started = Instant::now();
    let install = [&["install", "-y", "--no-install-recommends"][..], &missing].concat();
    for args in [&["update"][..], &install] {
        run_command(
            Command::new("apt-get")
                .args(args)
                .env("DEBIAN_FRONTEND", "noninteractive"),
        )
        .with_context(|| format!("installing {list}"))?;
    }
    eprintln!(
        "xtask: {list} installed in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

fn install_npm(source: &Path, npm_dir: &Path) -> Result<()> {
    const MANIFESTS: [&str; 2] = ["package.json", "package-lock.json"];
    let mut contents = Vec::new();
    for name in MANIFESTS {
        let path = source.join(name);
        contents.push(std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?);
    }
    let stamp = npm_dir.join("node_modules").join(STAMP);
    let wanted = fingerprint(&contents);
    if stamp_matches(&stamp, &wanted) {
        return Ok(());
    }
    std::fs::create_dir_all(npm_dir).with_context(|| format!("creating {}", npm_dir.display()))?;
    for (name, content) in MANIFESTS.iter().zip(&contents) {
        std::fs::write(npm_dir.join(name), content).with_context(|| format!("writing {name}"))?;
    }
    let started = Instant::now();
    run_command(
        Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund"])
            .current_dir(npm_dir),
    )
    .context("installing the npm peers")?;
    std::fs::write(&stamp, &wanted).with_context(|| format!("writing {}", stamp.display()))?;
    eprintln!(
        "xtask: npm peers installed in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

fn install_venv(source: &Path, venv: &Path) -> Result<()> {
    let requirements = source.join("requirements.txt");
    let content = std::fs::read(&requirements)
        .with_context(|| format!("reading {}", requirements.display()))?;
    // The interpreter is part of the fingerprint: a venv does not survive a change of the Python it was made from.
    let python = Command::new("python3")
        .arg("--version")
        .output()
        .context("running python3 --version")?;
    let stamp = venv.join(STAMP);
    let wanted = fingerprint(&[content, python.stdout]);
    if stamp_matches(&stamp, &wanted) {
        return Ok(());
    }
    let started = Instant::now();
    run_command(
        Command::new("python3")
            .args(["-m", "venv", "--clear"])
            .arg(venv),
    )
    .context("creating the Python venv")?;
    run_command(
        Command::new(venv.join("bin/pip"))
            .args(["install", "--quiet", "--disable-pip-version-check", "-r"])
            .arg(&requirements),
    )
    .context("installing the Python peers")?;
    std::fs::write(&stamp, &wanted).with_context(|| format!("writing {}", stamp.display()))?;
    eprintln!(
        "xtask: Python peers installed in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Data files of the fixtures, copied with them.
const FIXTURE_DATA: &[&str] = &["bench_form.json"];

/// Copies `tests/peers/*.mjs`, `*.py` and [`FIXTURE_DATA`] next to `node_modules`, every run: it is cheap and
/// keeps edits live.
fn copy_fixtures(source: &Path, npm_dir: &Path) -> Result<()> {
    for entry in
        std::fs::read_dir(source).with_context(|| format!("listing {}", source.display()))?
    {
        let path = entry?.path();
        let is_fixture = matches!(
            path.extension().and_then(|ext| ext.to_str()),
            Some("mjs" | "py")
        ) || path
            .file_name()
            .and_then(|name| name.to_str())
            .is_some_and(|name| FIXTURE_DATA.contains(&name));
        if let (true, Some(name)) = (is_fixture, path.file_name()) {
            std::fs::copy(&path, npm_dir.join(name))
                .with_context(|| format!("copying {}", path.display()))?;
        }
    }
    Ok(())
}

fn stamp_matches(stamp: &Path, wanted: &str) -> bool {
    std::fs::read_to_string(stamp).is_ok_and(|found| found == wanted)
}

/// FNV-1a over each part and its length: stable across Rust releases, unlike `DefaultHasher`.
fn fingerprint(parts: &[Vec<u8>]) -> String {
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for byte in (part.len() as u64).to_le_bytes().iter().chain(part) {
            hash = (hash ^ u64::from(*byte)).wrapping_mul(PRIME);
        }
    }
    format!("{hash:016x}\n")
}

#[cfg(test)]
mod tests {
    use super::fingerprint;

    #[test]
    fn fingerprint_is_stable_and_separates_parts() {
        assert_eq!(
            fingerprint(&[b"abc".to_vec()]),
            fingerprint(&[b"abc".to_vec()])
        );
        assert_ne!(
            fingerprint(&[b"ab".to_vec(), b"c".to_vec()]),
            fingerprint(&[b"a".to_vec(), b"bc".to_vec()])
        );
        // A fixed value: a change here would silently force every checkout to reinstall its peers.
        assert_eq!(fingerprint(&[]), "cbf29ce484222325\n");
    }
}
