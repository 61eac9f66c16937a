//! The browser parts of `cargo xtask bench`: the workbench (`formwork serve`) in headless Chromium, run by
//! `tests/browser/bench.mjs` against the same release binary as the other parts.
//!
//! Forms: the medians of a plugin's `elicitation/create` to the form card being in the page (and painted, the
//! next frame), the click on the card to the result at the plugin (over `--forms` one-click forms from
//! `tests/browser/bench_plugin.mjs`, a TS SDK plugin), and `formwork serve`'s start to its first page. Targets: card
//! visible within 50 ms (and within one frame, 16.7 ms, at p90), result within 20 ms, first page within 100 ms.
//!
//! MCP Apps (`tests/browser/apps_bench_plugin.mjs`, a TS SDK plugin with an app): median and p99 of a tool's result
//! leaving the plugin to the app's first `ui/notifications/tool-result` (the app's document cached), beside the
//! same result reaching the page's transcript; and of a bridge `tools/call` from the app to the plugin and back,
//! against the same call made directly by the host's plugin connection (`load-bench --direct-calls`, built here).
//! Targets: first tool-result within 100 ms (median), bridge call at most 2x the direct one and at most the
//! browser's own frame echo + the page's call + 0.2 ms, the page's `call_tool` at most 3x the direct call (beside
//! its floor: the browser's WebSocket echo on a plain local server + the direct call; and beside the same command
//! from a plain WebSocket client, `load-bench --socket-calls`, which splits the page's time into the host's share
//! and the browser's). A miss is reported, not failed.

use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result, bail};

use super::build_load_bench;
use crate::peers::{self, CHROMIUM};
use crate::target_dir;

/// How much of each browser part runs; 0 skips a part.
pub struct Parts {
    /// Measured one-click forms.
    pub forms: usize,
    /// Measured calls per tool of the apps part.
    pub apps: usize,
}

/// Runs `tests/browser/bench.mjs`; its tables go straight to stdout.
pub fn run(root: &Path, formwork: &Path, node: &Path, parts: &Parts) -> Result<()> {
    let target = target_dir(root);
    let peers_dir = target.join("peers");
    if !Path::new(CHROMIUM).exists() || !peers_dir.join("npm/node_modules/playwright-core").is_dir()
    {
        peers::install(root)?;
    }
    if !Path::new(CHROMIUM).exists() {
        bail!("{CHROMIUM} is missing: install it with `sudo apt-get install -y chromium`");
    }
    let mut command = Command::new(node);
    command
        .arg(root.join("tests/browser/bench.mjs"))
        .arg(formwork)
        .args(["--forms", &parts.forms.to_string()])
        .args(["--apps", &parts.apps.to_string()]);
    if parts.apps > 0 {
        let load_bench = build_load_bench(root, "the direct and socket calls of the apps part")?;
        command.arg("--direct").arg(load_bench);
    }
    println!();
    let status = command
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
