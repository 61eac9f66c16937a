// What the conversation tests of the workbench share (model.mjs, the model loop; codex.mjs, the Codex runtime):
// the steps of a person in a conversation, and the runner that opens the page and runs the cases in order,
// printing `ok <case>` / `FAIL <case>: <why>` lines and `N passed, M failed`, like run.mjs. A failed case leaves
// a screenshot `<prefix>-<case>.png` in FORMWORK_BROWSER_SCREENSHOTS (else target/browser-failures).

import { createRequire } from "node:module";
import { mkdirSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import assert from "node:assert/strict";

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(path.join(process.env.FORMWORK_PEERS, "npm", "node_modules", "noop.js"));
process.env.PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD = "1";
const { chromium } = require("playwright-core");

const screenshots = process.env.FORMWORK_BROWSER_SCREENSHOTS ?? path.resolve(here, "../../target/browser-failures");

export const tid = (id) => `[data-testid="${id}"]`;

// Opens a new session and waits until its socket has delivered the (empty) snapshot.
export async function newSession(page) {
  const before = page.url();
  await page.locator(tid("new-session")).click();
  await page.waitForURL((u) => u.toString() !== before && /#\/sessions\//.test(u.toString()));
  await page.locator(`${tid("connection-status")}[data-state="connected"]`).waitFor();
  await page.locator(tid("transcript-empty")).waitFor();
}

export async function say(page, text) {
  await page.locator(tid("message-input")).fill(text);
  await page.locator(tid("message-input")).press("Enter");
}

export async function turnOver(page) {
  await page.locator(tid("stop-turn")).waitFor({ state: "hidden" });
}

// Opens `url` in headless Chromium (each wait up to `wait` ms), runs `ready(page)` once connected, then each of
// `cases` ({name, body(page)}) whose name `filter` (comma-separated) lets through; then exits 0 when all passed.
export function runCases({ url, filter, cases, prefix, wait, ready = async () => {} }) {
  main().then(
    (ok) => process.exit(ok ? 0 : 1),
    (error) => {
      console.log(`FAIL setup: ${error?.stack ?? error}`);
      console.log("0 passed, 1 failed");
      process.exit(1);
    },
  );

  async function main() {
    const browser = await chromium.launch({
      executablePath: process.env.FORMWORK_CHROMIUM ?? "/usr/bin/chromium",
      args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--no-first-run"],
    });
    const context = await browser.newContext();
    context.setDefaultTimeout(wait);
    const page = await context.newPage();
    const pageErrors = [];
    page.on("pageerror", (error) => pageErrors.push(error.message));
    await page.goto(url);
    await page.locator(`${tid("connection-status")}[data-state="connected"]`).waitFor();
    await ready(page);
    let passed = 0;
    let failed = 0;
    for (const { name, body } of cases) {
      if (filter && !filter.split(",").includes(name)) continue;
      pageErrors.length = 0;
      try {
        await body(page);
        assert.deepEqual(pageErrors, [], "errors thrown in the page");
        passed += 1;
        console.log(`ok ${name}`);
      } catch (error) {
        failed += 1;
        console.log(`FAIL ${name}: ${String(error?.message ?? error).split("\n").slice(0, 30).join("\n    ")}`);
        mkdirSync(screenshots, { recursive: true });
        await page.screenshot({ path: path.join(screenshots, `${prefix}-${name}.png`), fullPage: true }).catch(() => {});
      }
    }
    await browser.close();
    console.log(`${passed} passed, ${failed} failed`);
    return failed === 0 && passed > 0;
  }
}
