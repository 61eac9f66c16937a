// What the MCP Apps cases (apps.mjs and its apps_*.mjs) share: the run's arguments and settings, the steps and
// waits on apps and their frames, and the registry of cases in their order.

import { existsSync, mkdirSync, readFileSync } from "node:fs";
import http from "node:http";
import path from "node:path";
import assert from "node:assert/strict";

import { screenshots, sleep, tid } from "./lib.mjs";

export const logs = process.env.FORMWORK_APPS_LOGS;
if (!logs) {
  console.error("apps.mjs: FORMWORK_APPS_LOGS must be set (crates/cli/tests/browser.rs sets it)");
  process.exit(2);
}

export const [url, filter] = process.argv.slice(2);
if (!url) {
  console.error("usage: node tests/browser/apps.mjs <workbench URL with token> [case filter]");
  process.exit(2);
}
export const token = new URL(url).hash.replace(/^#token=/, "");
export const WAIT = 15_000;
export const LINK = "https://modelcontextprotocol.io/";
export const RESULT_META = '{"zeta":1,"alpha":{"y":2,"b":3},"mid":[1]}';
export const APP_ORIGIN = /^http:\/\/[0-9a-f]{32}\.localhost:(\d+)$/;
export const APP_ONLY_REFUSAL = '`poll-system-stats` is a tool for the plugin\'s app only (its `_meta.ui.visibility` lacks "model")';

// ---- waiting and reading ----

// Polls `check` until it returns true; the error says what was last seen.
export async function until(what, check, timeout = WAIT) {
  const started = Date.now();
  let last;
  while (Date.now() - started < timeout) {
    try {
      last = await check();
      if (last === true) return;
    } catch (error) {
      last = error.message;
    }
    await sleep(50);
  }
  throw new Error(`timed out after ${timeout} ms waiting for ${what} (last seen: ${JSON.stringify(last)})`);
}

export const collapsed = (text) => (text ?? "").replace(/\s+/g, " ").trim();

// Waits until the locator's text (whitespace collapsed) is `expected` (a string, or a RegExp it matches).
export async function textBecomes(locator, expected, what) {
  let seen;
  await until(what ?? `${locator} to read ${expected}`, async () => {
    seen = collapsed(await locator.textContent({ timeout: 1000 }));
    return (typeof expected === "string" ? seen === expected : expected.test(seen)) || seen;
  });
  return seen;
}

export function lines(file) {
  const full = path.join(logs, file);
  if (!existsSync(full)) return [];
  return readFileSync(full, "utf8").split("\n").filter((line) => line !== "");
}

// ---- what a person does ----

export const calls = (page, tool) => page.locator(`${tid("tool-call")}[data-tool="${tool}"]`);

// The card of the call, once its app is `ready` (initialised).
export async function readyApp(call) {
  const card = call.locator(tid("app-card"));
  await call.locator(`${tid("app-card")}[data-state="ready"]`).waitFor();
  return card;
}

// The page's spare, once its app waits for its `ui/initialize`.
export function waitingSpare(page) {
  const spare = page.locator(`${tid("app-parking")} ${tid("app-spare")}[data-state="waiting"]`);
  return spare.waitFor({ state: "attached" }).then(() => spare);
}

// The app's frame, found by its document's origin: it stays the same frame wherever the page moves it.
export async function appFrame(page, card) {
  const origin = await card.getAttribute("data-origin");
  assert.match(origin ?? "", APP_ORIGIN, "the app card names its document's origin");
  let frame;
  await until(`the frame of ${origin}`, async () => {
    frame = page.frames().find((candidate) => candidate.url().startsWith(`${origin}/`));
    return frame !== undefined;
  });
  return frame;
}

// Waits until `locator` (in a frame that resizes itself as its content changes, in a transcript that grows) stays
// put on the page for 150 ms, then clicks it. Playwright waits for an element to be still within its own frame
// only: a frame that moves on the page between its aim and its click sends the click elsewhere.
export async function clickWhenStill(locator) {
  let before = JSON.stringify(await locator.boundingBox());
  await until(`${locator} to stop moving`, async () => {
    await sleep(150);
    const now = JSON.stringify(await locator.boundingBox());
    const still = now === before;
    before = now;
    return still || now;
  });
  await locator.click();
}

// The one open card (a form), by its id so the locator outlives its answer.
export async function openCard(page) {
  const open = page.locator(`${tid("form-card")}[data-state="open"]`);
  await open.first().waitFor();
  assert.equal(await open.count(), 1, "exactly one open card");
  const id = await open.getAttribute("data-form-id");
  return page.locator(`${tid("form-card")}[data-form-id="${id}"]`);
}

export const option = (scope, label) => scope.locator(`${tid("option")}[data-label="${label}"]`);

// Answers the confirmation the host asks before an app's ui/message or ui/open-link.
export async function confirm(page, expectedTitle, choice) {
  const card = await openCard(page);
  assert.equal(collapsed(await card.locator(tid("card-header")).textContent()), collapsed(expectedTitle));
  await option(card, choice).click();
  await card.locator(tid("outcome")).waitFor();
  return card;
}

export const userMessages = (page) => page.locator(`${tid("message")}[data-role="user"] ${tid("message-text")}`);

// No popup opens within `ms`.
export async function noPopup(page, ms) {
  const popup = await page.waitForEvent("popup", { timeout: ms }).catch(() => null);
  assert.equal(popup, null, `a popup opened: ${popup?.url()}`);
}

// The app document's second GET, as a frame would ask: the listener served it once and never again.
export function getAgain(src) {
  const target = new URL(src);
  return new Promise((resolve, reject) => {
    const request = http.get(
      {
        host: "127.0.0.1",
        port: target.port,
        path: target.pathname,
        headers: { Host: target.host, "Sec-Fetch-Dest": "iframe", Referer: new URL(url).origin + "/" },
      },
      (response) => {
        response.resume();
        resolve(response.statusCode);
      },
    );
    request.on("error", reject);
  });
}

// ---- the cases ----

export const cases = [];
// Uncaught errors of the page and its frames during the current case.
export const pageErrors = [];
// What the page and its frames logged as errors during the case, shown when it fails.
export const consoleErrors = [];
export const test = (name, body) => cases.push({ name, body });
// What one case leaves for a later one.
export const shared = { origins: new Set(), policies: new Map() };

// The Content-Security-Policy header of an app document with this connect-src.
export function policy(connect) {
  const port = new URL(url).port;
  return (
    "default-src 'none'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; " +
    `media-src 'self' data: blob:; font-src 'self'; ${connect}; frame-src 'none'; object-src 'none'; base-uri 'self'; ` +
    `form-action 'none'; frame-ancestors http://127.0.0.1:${port} http://localhost:${port}`
  );
}

// Every app document has an origin of its own, never shared with another app.
export async function freshOrigin(card) {
  const origin = await card.getAttribute("data-origin");
  assert.match(origin, APP_ORIGIN);
  assert.equal(new URL(origin).port === new URL(url).port, false, "the app listener is not the workbench's");
  assert.equal(shared.origins.has(origin), false, `origin ${origin} was used before`);
  shared.origins.add(origin);
  return origin;
}

// Saves the whole of `page` as <screenshots>/apps-<name>.png, and says where.
export async function screenshot(page, name) {
  try {
    mkdirSync(screenshots, { recursive: true });
    const file = path.join(screenshots, `apps-${name}.png`);
    await page.screenshot({ path: file, fullPage: true });
    console.log(`    screenshot: ${file}`);
  } catch (shotError) {
    console.log(`    no screenshot: ${shotError.message}`);
  }
}
