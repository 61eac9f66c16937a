// What the conversation tests of the workbench share (model.mjs, the model loop; codex.mjs, the Codex runtime):
// the end of a turn, and the runner that opens the page and runs the cases in order,
// printing `ok <case>` / `FAIL <case>: <why>` lines and `N passed, M failed`, like run.mjs. A failed case leaves
// a screenshot `<prefix>-<case>.png` in FORMWORK_BROWSER_SCREENSHOTS (else target/browser-failures).

import { exitWhenDone, launch, runInOrder, tid } from "./lib.mjs";

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
    await page.goto(url);
    await page.locator(`${tid("connection-status")}[data-state="connected"]`).waitFor();
    await ready(page);
    const ok = await runInOrder({ cases, filter, arg: page, pages: { "": page }, prefix });
    await browser.close();
    return ok;
  }
}
