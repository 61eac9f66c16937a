// What the conversation tests of the workbench share (model.mjs, the model loop; codex.mjs, the Codex runtime):
// the end of a turn, and the runner that opens the page and runs the cases in order,
// printing `ok <case>` / `FAIL <case>: <why>` lines and `N passed, M failed`, like run.mjs. A failed case leaves
// a screenshot `<prefix>-<case>.png` in FORMWORK_BROWSER_SCREENSHOTS (else target/browser-failures).

import { mkdirSync } from "node:fs";
import path from "node:path";
import assert from "node:assert/strict";

import { exitWhenDone, launch, screenshots, tid } from "./lib.mjs";

export async function turnOver(page) {
  await page.locator(tid("stop-turn")).waitFor({ state: "hidden" });
}

// Opens `url` in headless Chromium (each wait up to `wait` ms), runs `ready(page)` once connected, then each of
// `cases` ({name, body(page)}) whose name `filter` (comma-separated) lets through; then exits 0 when all passed.
export function runCases({ url, filter, cases, prefix, wait, ready = async () => {} }) {
  exitWhenDone(main);

  async function main() {
    const { browser, context } = await launch({}, wait);
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
