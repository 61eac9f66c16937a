// Browser tests of MCP Apps in the workbench (docs/workbench.md) in headless Chromium from Debian's packages,
// driven by playwright-core. Started by crates/cli/tests/browser.rs (`mcp_apps_in_headless_chromium`):
//
//   node tests/browser/apps.mjs <URL printed by formwork serve> [case-name-filter]
//
// The server runs five published apps of the test peers as servers `budget-allocator`, `system-monitor`,
// `basic`, `debug` (DEBUG_LOG_FILE=<logs>/debug.log) and `video` (server-video-resource, whose videos come from
// tests/peers/video_cdn.mjs, logging each request to $FORMWORK_VIDEO_CDN_LOG), tests/peers/app_probe_plugin.mjs as `probe`
// (PROBE_LOG=<logs>/probe.log) and tests/peers/bystander_plugin.mjs as `bystander` (BYSTANDER_LOG=<logs>/bystander.log),
// tests/peers/http_plugin.mjs over Streamable HTTP as `remote` (a remote plugin with an app),
// every one with tool approval `approve` (but the probe's `app-erase`, `prompt`), and a scripted model that calls `system-monitor`'s app-only
// `poll-system-stats` on "poll the stats" and `get-system-info` on "system info". <logs> is $FORMWORK_APPS_LOGS.
//
// Some cases go on in the session an earlier one left (the probe's cases share one session and one app), so run
// them in order; a filter (a regular expression) runs the matching cases only, with whatever state they need missing.
//
// Prints one line per case (`ok <case> (<ms> ms)` or `FAIL <case>: <why>`) and finally `N passed, M failed`;
// exits 1 when a case failed. A failed case leaves a screenshot at <screenshots>/<case>.png, where
// <screenshots> is $FORMWORK_BROWSER_SCREENSHOTS, else target/browser-failures of this checkout. With
// $FORMWORK_README_SCREENSHOT set, the budget allocator case also saves the whole page there (the README's picture).

import assert from "node:assert/strict";

import { exitWhenDone, launch, tid } from "./lib.mjs";
import { APP_ORIGIN, LINK, WAIT, cases, consoleErrors, filter, pageErrors, screenshot, shared, url } from "./apps_steps.mjs";

// The cases, registered in the order they run.
import "./apps_published.mjs";
import "./apps_probe.mjs";
import "./apps_frames.mjs";

async function main() {
  const { browser, context } = await launch({ timezoneId: "Europe/Berlin", locale: "en-GB", viewport: { width: 1400, height: 900 } }, WAIT);
  // Links the apps open never leave the machine.
  for (const link of [LINK, "https://example.com/"]) {
    await context.route(`${link}**`, (route) => route.fulfill({ status: 200, contentType: "text/plain", body: "opened" }));
  }
  const page = await context.newPage();
  // The session socket passes through a proxy of the test, which can drop it (the transcript-refresh case).
  await page.routeWebSocket(/\/api\/sessions\/[^/]+\/socket/, (socket) => {
    socket.connectToServer();
    shared.socket = socket;
  });
  page.on("pageerror", (error) => pageErrors.push(error.message));
  page.on("console", (message) => {
    if (message.type() === "error") consoleErrors.push(message.text());
  });
  // The policy each app document came with.
  page.on("response", (response) => {
    if (APP_ORIGIN.test(new URL(response.url()).origin)) shared.policies.set(response.url(), response.headers()["content-security-policy"]);
  });
  await page.goto(url);
  await page.locator(`${tid("palette-tool")}[data-server="probe"]`).first().waitFor();

  let passed = 0;
  let failed = 0;
  const started = Date.now();
  for (const { name, body } of cases) {
    if (filter && !new RegExp(filter).test(name)) continue;
    const t0 = Date.now();
    pageErrors.length = 0;
    consoleErrors.length = 0;
    try {
      await body(page);
      assert.deepEqual(pageErrors, [], "errors thrown in the page");
      passed += 1;
      console.log(`ok ${name} (${Date.now() - t0} ms)`);
    } catch (error) {
      failed += 1;
      console.log(`FAIL ${name}: ${String(error?.message ?? error).split("\n").slice(0, 40).join("\n    ")}`);
      for (const thrown of pageErrors) console.log(`    thrown in the page: ${thrown}`);
      for (const logged of consoleErrors) console.log(`    logged in the page: ${logged}`);
      await screenshot(page, name);
    }
  }
  await browser.close();
  console.log(`${passed} passed, ${failed} failed (${((Date.now() - started) / 1000).toFixed(1)} s)`);
  return failed === 0 && passed > 0;
}

exitWhenDone(main);
