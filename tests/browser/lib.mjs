// What the workbench's browser scripts share (run.mjs, apps.mjs, conversation.mjs and its model.mjs and codex.mjs,
// replicas.mjs, bench.mjs): playwright-core and headless Chromium from the test peers, where a failed case's screenshot goes,
// and the steps of a person on the page that every script takes the same way.

import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const script = path.basename(process.argv[1] ?? "lib.mjs");
const peers = process.env.FORMWORK_PEERS;
if (!peers) {
  console.error(`${script}: FORMWORK_PEERS is not set: run \`cargo xtask peers\` and point it at target/peers`);
  process.exit(2);
}
const require = createRequire(path.join(peers, "npm", "node_modules", "noop.js"));
process.env.PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD = "1";
const { chromium } = require("playwright-core");

// Where a failed case leaves its screenshot: FORMWORK_BROWSER_SCREENSHOTS, else target/browser-failures.
export const screenshots = process.env.FORMWORK_BROWSER_SCREENSHOTS ?? path.resolve(here, "../../target/browser-failures");

export const tid = (id) => `[data-testid="${id}"]`;
export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// Headless Chromium (Debian's, or FORMWORK_CHROMIUM) and a context with `contextOptions`, each wait up to `wait` ms.
export async function launch(contextOptions, wait) {
  const browser = await chromium.launch({
    executablePath: process.env.FORMWORK_CHROMIUM ?? "/usr/bin/chromium",
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--no-first-run"],
  });
  const context = await browser.newContext(contextOptions);
  context.setDefaultTimeout(wait);
  return { browser, context };
}

// Runs `main` (which resolves whether every case passed) and exits 0 when all did; a failure before any case is
// reported as the failed case `setup`.
export function exitWhenDone(main) {
  main().then(
    (ok) => process.exit(ok ? 0 : 1),
    (error) => {
      console.log(`FAIL setup: ${error?.stack ?? error}`);
      console.log("0 passed, 1 failed");
      process.exit(1);
    },
  );
}

// Runs `cases` ({name, body(arg)}) in order, those `filter` (comma-separated) lets through, each given `arg`;
// errors thrown in `pages` ({suffix: page}) fail the case they happen in, and a failed case leaves a screenshot
// of each page, `<prefix>-<case><suffix>.png`. Prints `ok <case>` / `FAIL <case>: <why>` and `N passed, M failed`;
// resolves whether every case that ran passed (and one did).
export async function runInOrder({ cases, filter, arg, pages, prefix }) {
  const pageErrors = [];
  for (const page of Object.values(pages)) page.on("pageerror", (error) => pageErrors.push(error.message));
  let passed = 0;
  let failed = 0;
  for (const { name, body } of cases) {
    if (filter && !filter.split(",").includes(name)) continue;
    pageErrors.length = 0;
    try {
      await body(arg);
      assert.deepEqual(pageErrors, [], "errors thrown in the page");
      passed += 1;
      console.log(`ok ${name}`);
    } catch (error) {
      failed += 1;
      console.log(`FAIL ${name}: ${String(error?.message ?? error).split("\n").slice(0, 30).join("\n    ")}`);
      mkdirSync(screenshots, { recursive: true });
      for (const [suffix, page] of Object.entries(pages)) {
        const file = path.join(screenshots, `${prefix}-${name}${suffix}.png`);
        await page.screenshot({ path: file, fullPage: true }).catch(() => {});
      }
    }
  }
  console.log(`${passed} passed, ${failed} failed`);
  return failed === 0 && passed > 0;
}

// ---- what a person does ----

// Opens a new session and waits until its socket has delivered the (empty) snapshot.
export async function newSession(page) {
  const before = page.url();
  await page.locator(tid("new-session")).click();
  await page.waitForURL((u) => u.toString() !== before && /#\/sessions\//.test(u.toString()));
  await page.locator(`${tid("connection-status")}[data-state="connected"]`).waitFor();
  await page.locator(tid("transcript-empty")).waitFor();
}

// Picks `tool` of `server` in the palette, presses Call, and returns the new call's node in the transcript.
export async function callTool(page, server, tool) {
  const calls = page.locator(`${tid("tool-call")}[data-tool="${tool}"]`);
  const before = await calls.count();
  await page.locator(`${tid("palette-tool")}[data-server="${server}"][data-tool="${tool}"]`).click();
  await page.locator(`${tid("palette-panel")}[data-tool="${tool}"]`).waitFor();
  await page.locator(tid("palette-call")).click();
  await calls.nth(before).waitFor();
  return calls.last();
}

// Sends `text` as the person's message.
export async function say(page, text) {
  await page.locator(tid("message-input")).fill(text);
  await page.locator(tid("message-input")).press("Enter");
}
