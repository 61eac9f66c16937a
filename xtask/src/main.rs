//! Repository automation, run as `cargo xtask <command>` (the alias lives in `.cargo/config.toml`).
//!
//! Commands:
//! - `peers`: install the pinned third-party test peers (npm and PyPI) under `target/peers/`.
//! - `test [-- <cargo test args>]`: repository checks (format, dependency direction, clippy), then the peers, then
//!   `cargo test --workspace --all-targets` with the peers on `FORMWORK_PEERS` and node 22 first on `PATH`.
//! - `bench [--rounds R] [--n N] [--warmup W] [--formwork PATH] [--load N,N] [--forms N] [--apps N] [--only PART]`:
//!   the elicitation round trip through formwork against the TS SDK client and a raw JSON-RPC client, the host
//!   under load, the host's time in a model turn, the workbench and its MCP Apps in Chromium (see `bench.rs`).
//! - `fuzz --time SECONDS [--runs N] [--cmin] [TARGET...]`: each cargo-fuzz target for SECONDS (or N executions),
//!   with its saved corpus, seeds and dictionary; fails when one crashes (see `fuzz.rs`).

mod bench;
mod checks;
mod doc_check;
mod fuzz;
mod peers;
mod test;
mod wire_names;

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

const USAGE: &str = "\
usage: cargo xtask <command>
  peers                       install the pinned test peers into target/peers/
  test [-- <cargo test args>] checks, peers, then the whole test suite
  bench [--rounds R] [--n N] [--warmup W] [--formwork PATH] [--load N,N] [--forms N]
        [--apps N] [--only PART]
                              elicitation round trip: formwork vs the TS SDK client vs a raw client,
                              and the other parts (`bench --help`)
  fuzz --time SECONDS [--runs N] [--cmin] [TARGET...]
                              run the fuzz targets (parse_map_answer, parse_frame) one after the other,
                              each for SECONDS or N executions, whichever first; --cmin folds what
                              they found into the saved corpora and minimizes them";

fn main() -> std::process::ExitCode {
    match run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("xtask: {err:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn run() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let root = repo_root();
    match args.first().map(String::as_str) {
        Some("peers") => peers::install(&root).map(|_| ()),
        Some("bench") => bench::run(&root, &args[1..]),
        Some("fuzz") => fuzz::run(&root, &args[1..]),
        Some("test") => {
            let rest = match args.get(1).map(String::as_str) {
                Some("--") => &args[2..],
                None => &[],
                Some(other) => bail!("unexpected argument `{other}`\n{USAGE}"),
            };
            test::run(&root, rest)
        }
        Some("-h" | "--help") => {
            println!("{USAGE}");
            Ok(())
        }
        Some(other) => bail!("unknown command `{other}`\n{USAGE}"),
        None => bail!("no command given\n{USAGE}"),
    }
}

/// The workspace root: xtask's own manifest sits one level below it.
fn repo_root() -> PathBuf {
    let manifest_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest_dir.parent().unwrap_or(manifest_dir).to_path_buf()
}

/// `target/` of the workspace, honouring `CARGO_TARGET_DIR` the way cargo does.
fn target_dir(root: &Path) -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) => root.join(dir),
        None => root.join("target"),
    }
}

/// Runs `cmd` to completion with inherited stdio, failing when it cannot start or exits non-zero.
fn run_command(cmd: &mut Command) -> Result<()> {
    let shown = format!("{cmd:?}");
    eprintln!("xtask: running {shown}");
    let status = cmd
        .status()
        .with_context(|| format!("could not start {shown}"))?;
    if !status.success() {
        bail!("{shown} failed ({status})");
    }
    Ok(())
}

/// `cargo`, as the one that runs us (so `cargo +toolchain xtask` stays on that toolchain).
fn cargo() -> Command {
    Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
}
