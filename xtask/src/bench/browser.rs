//! The browser part of `cargo xtask bench`: the workbench (`formwork serve`) in headless Chromium, run by
//! `tests/browser/bench.mjs` against the same release binary as the other parts.
//!
//! It reports the medians of: a plugin's `elicitation/create` to the form card being in the page (and painted, the
//! next frame), the click on the card to the result at the plugin (over `--forms` one-click forms from
//! `tests/browser/bench_plugin.mjs`, a TS SDK plugin), and `formwork serve`'s start to its first page. Targets: card
//! visible within 50 ms, result within 20 ms, first page within 100 ms. A miss is reported, not failed.

use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::peers::{self, CHROMIUM};
use crate::target_dir;

/// Runs `tests/browser/bench.mjs` with `forms` measured forms; its table goes straight to stdout.
pub fn run(root: &Path, formwork: &Path, node: &Path, forms: usize) -> Result<()> {
    let peers_dir = target_dir(root).join("peers");
    if !Path::new(CHROMIUM).exists() || !peers_dir.join("npm/node_modules/playwright-core").is_dir()
    {
        peers::install(root)?;
    }
    if !Path::new(CHROMIUM).exists() {
        bail!("{CHROMIUM} is missing: install it with `sudo apt-get install -y chromium`");
    }
    println!();
    let status = Command::new(node)
        .arg(root.join("tests/browser/bench.mjs"))
        .arg(formwork)
        .args(["--forms", &forms.to_string()])
        .env("FORMWORK_PEERS", &peers_dir)
        .env("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1")
        .current_dir(root)
        .status()
        .context("running tests/browser/bench.mjs")?;
    if !status.success() {
        bail!("the browser bench failed ({status})");
    }
    Ok(())
}
