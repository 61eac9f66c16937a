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

import { existsSync, mkdirSync, readFileSync } from "node:fs";
import http from "node:http";
import path from "node:path";
import assert from "node:assert/strict";

import { callTool, exitWhenDone, launch, newSession, say, screenshots, sleep, tid } from "./lib.mjs";

const logs = process.env.FORMWORK_APPS_LOGS;
if (!logs) {
  console.error("apps.mjs: FORMWORK_APPS_LOGS must be set (crates/cli/tests/browser.rs sets it)");
  process.exit(2);
}

const [url, filter] = process.argv.slice(2);
if (!url) {
  console.error("usage: node tests/browser/apps.mjs <workbench URL with token> [case filter]");
  process.exit(2);
}
const token = new URL(url).hash.replace(/^#token=/, "");
const WAIT = 15_000;
const LINK = "https://modelcontextprotocol.io/";
const RESULT_META = '{"zeta":1,"alpha":{"y":2,"b":3},"mid":[1]}';
const APP_ORIGIN = /^http:\/\/[0-9a-f]{32}\.localhost:(\d+)$/;
const APP_ONLY_REFUSAL = '`poll-system-stats` is a tool for the plugin\'s app only (its `_meta.ui.visibility` lacks "model")';


// ---- waiting and reading ----

// Polls `check` until it returns true; the error says what was last seen.
async function until(what, check, timeout = WAIT) {
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

const collapsed = (text) => (text ?? "").replace(/\s+/g, " ").trim();

// Waits until the locator's text (whitespace collapsed) is `expected` (a string, or a RegExp it matches).
async function textBecomes(locator, expected, what) {
  let seen;
  await until(what ?? `${locator} to read ${expected}`, async () => {
    seen = collapsed(await locator.textContent({ timeout: 1000 }));
    return (typeof expected === "string" ? seen === expected : expected.test(seen)) || seen;
  });
  return seen;
}

function lines(file) {
  const full = path.join(logs, file);
  if (!existsSync(full)) return [];
  return readFileSync(full, "utf8").split("\n").filter((line) => line !== "");
}

// ---- what a person does ----

const calls = (page, tool) => page.locator(`${tid("tool-call")}[data-tool="${tool}"]`);

// The card of the call, once its app is `ready` (initialised).
async function readyApp(call) {
  const card = call.locator(tid("app-card"));
  await call.locator(`${tid("app-card")}[data-state="ready"]`).waitFor();
  return card;
}

// The page's spare, once its app waits for its `ui/initialize`.
function waitingSpare(page) {
  const spare = page.locator(`${tid("app-parking")} ${tid("app-spare")}[data-state="waiting"]`);
  return spare.waitFor({ state: "attached" }).then(() => spare);
}

// The app's frame, found by its document's origin: it stays the same frame wherever the page moves it.
async function appFrame(page, card) {
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
async function clickWhenStill(locator) {
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
async function openCard(page) {
  const open = page.locator(`${tid("form-card")}[data-state="open"]`);
  await open.first().waitFor();
  assert.equal(await open.count(), 1, "exactly one open card");
  const id = await open.getAttribute("data-form-id");
  return page.locator(`${tid("form-card")}[data-form-id="${id}"]`);
}

const option = (scope, label) => scope.locator(`${tid("option")}[data-label="${label}"]`);

// Answers the confirmation the host asks before an app's ui/message or ui/open-link.
async function confirm(page, expectedTitle, choice) {
  const card = await openCard(page);
  assert.equal(collapsed(await card.locator(tid("card-header")).textContent()), collapsed(expectedTitle));
  await option(card, choice).click();
  await card.locator(tid("outcome")).waitFor();
  return card;
}

const userMessages = (page) => page.locator(`${tid("message")}[data-role="user"] ${tid("message-text")}`);

// No popup opens within `ms`.
async function noPopup(page, ms) {
  const popup = await page.waitForEvent("popup", { timeout: ms }).catch(() => null);
  assert.equal(popup, null, `a popup opened: ${popup?.url()}`);
}

// The app document's second GET, as a frame would ask: the listener served it once and never again.
function getAgain(src) {
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

const cases = [];
// Uncaught errors of the page and its frames during the current case.
const pageErrors = [];
// What the page and its frames logged as errors during the case, shown when it fails.
const consoleErrors = [];
const test = (name, body) => cases.push({ name, body });
// What one case leaves for a later one.
const shared = { origins: new Set(), policies: new Map() };

// The Content-Security-Policy header of an app document with this connect-src.
function policy(connect) {
  const port = new URL(url).port;
  return (
    "default-src 'none'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; " +
    `media-src 'self' data: blob:; font-src 'self'; ${connect}; frame-src 'none'; object-src 'none'; base-uri 'self'; ` +
    `form-action 'none'; frame-ancestors http://127.0.0.1:${port} http://localhost:${port}`
  );
}

// Every app document has an origin of its own, never shared with another app.
async function freshOrigin(card) {
  const origin = await card.getAttribute("data-origin");
  assert.match(origin, APP_ORIGIN);
  assert.equal(new URL(origin).port === new URL(url).port, false, "the app listener is not the workbench's");
  assert.equal(shared.origins.has(origin), false, `origin ${origin} was used before`);
  shared.origins.add(origin);
  return origin;
}

// The budget allocator works, keeps its state (and its browsing context) through every display mode, and
// closes with ui/resource-teardown although it answers that with -32601.
test("budget-allocator", async (page) => {
  await newSession(page);
  const call = await callTool(page, "budget-allocator", "get-budget-data");
  const card = await readyApp(call);
  await freshOrigin(card);
  const frame = await appFrame(page, card);
  await textBecomes(frame.locator("#status-bar"), "Allocated: $100,000 / $100,000");
  // The resource declares no policy: the spec's default, as a response header.
  assert.equal(shared.policies.get(await card.locator(tid("app-frame")).getAttribute("src")), policy("connect-src 'none'"));
  assert.equal(await frame.locator("#budget-selector").inputValue(), "100000");
  if (process.env.FORMWORK_README_SCREENSHOT) {
    await sleep(500);
    await page.screenshot({ path: process.env.FORMWORK_README_SCREENSHOT, fullPage: true });
  }
  await frame.locator("#budget-selector").selectOption("250000");
  await textBecomes(frame.locator("#status-bar"), "Allocated: $250,000 / $250,000");
  await frame.evaluate(() => {
    window.__mark = 1;
  });
  const panel = page.locator(tid("app-panel"));
  const box = card.locator(tid("app-box"));
  const where = async () =>
    frame.frameElement().then((element) =>
      element.evaluate((node) => {
        if (node.closest("[data-testid=app-panel-body]")) return "panel";
        if (node.closest("[data-testid=app-pip]")) return "pip";
        if (node.closest("[data-testid=app-card]")) return "card";
        return "elsewhere";
      }),
    );
  // Fullscreen hides the conversation (and the card's buttons): the panel has buttons of its own.
  const steps = [
    [card, "app-tab", "tab", "panel", "tab"],
    [card, "app-fullscreen", "fullscreen", "panel", "fullscreen"],
    [panel, "app-panel-tab", "tab", "panel", "tab"],
    [panel, "app-panel-fullscreen", "fullscreen", "panel", "fullscreen"],
    [panel, "app-panel-pip", "pip", "pip", null],
    [card, "app-inline", "inline", "card", null],
    [card, "app-tab", "tab", "panel", "tab"],
  ];
  for (const [scope, button, mode, place, panelMode] of steps) {
    await scope.locator(tid(button)).click();
    await card.locator(`:scope[data-mode="${mode}"]`).waitFor({ state: "attached" });
    assert.equal(await where(), place, `the frame's place in mode ${mode}`);
    assert.equal(await panel.isVisible(), panelMode !== null, `the side panel in mode ${mode}`);
    if (panelMode) {
      assert.equal(await panel.getAttribute("data-mode"), panelMode);
      assert.equal(await page.locator(tid("app-panel-title")).textContent(), "budget-allocator · get-budget-data");
    }
    if (mode === "pip") {
      // The picture-in-picture window stays on the screen, however tall the app says it is.
      const shown = await page.locator(`${tid("app-pip")} ${tid("app-box")}`).boundingBox();
      assert.ok(shown && shown.y >= 0 && shown.y + shown.height <= 900, `the pip window is off-screen: ${JSON.stringify(shown)}`);
    }
    assert.equal(frame.isDetached(), false, `the frame was detached in mode ${mode}`);
    assert.equal(await frame.evaluate(() => window.__mark), 1, `the frame was reloaded in mode ${mode}`);
    assert.equal(collapsed(await frame.locator("#status-bar").textContent()), "Allocated: $250,000 / $250,000");
  }
  await page.locator(tid("app-panel-close")).click();
  await card.locator(`:scope[data-mode="inline"]`).waitFor();
  assert.equal(await panel.isVisible(), false);
  assert.equal(await where(), "card");
  assert.equal(await box.isVisible(), true);
  assert.equal(await frame.evaluate(() => window.__mark), 1, "the frame was reloaded by closing the panel");
  const closing = Date.now();
  await card.locator(tid("app-close")).click();
  await call.locator(`${tid("app-card")}[data-state="closed"]`).waitFor();
  assert.ok(Date.now() - closing < 3000, "closing waited too long for the teardown answer");
  assert.equal(await card.locator(tid("app-status")).textContent(), "closed");
  assert.equal(await card.locator(tid("app-frame")).count(), 0, "the frame is released");
  assert.equal(frame.isDetached(), true);
  assert.equal(await card.locator(tid("app-reopen")).isVisible(), true);
  // Opened again: a new document with the call's result, no tool call.
  await card.locator(tid("app-reopen")).click();
  await call.locator(`${tid("app-card")}[data-state="ready"]`).waitFor();
  const again = await appFrame(page, card);
  assert.notEqual(again, frame);
  await freshOrigin(card);
  await textBecomes(again.locator("#status-bar"), "Allocated: $100,000 / $100,000");
  assert.equal(await calls(page, "get-budget-data").count(), 1);
});

// The system monitor polls through the bridge with its app-only tool, which the palette and the model never get.
test("system-monitor", async (page) => {
  await newSession(page);
  assert.equal(await page.locator(`${tid("palette-tool")}[data-server="system-monitor"][data-tool="get-system-info"]`).count(), 1);
  assert.equal(await page.locator(`${tid("palette-tool")}[data-tool="poll-system-stats"]`).count(), 0, "the palette lists the app-only tool");
  await say(page, "show me the system info");
  const call = calls(page, "get-system-info").last();
  const card = await readyApp(call);
  await freshOrigin(card);
  const frame = await appFrame(page, card);
  await textBecomes(frame.locator("#memory-percent"), /^\d+%$/);
  await textBecomes(frame.locator("#status-text"), /^\d\d:\d\d:\d\d$/);
  assert.equal(await frame.locator("#info-platform").textContent(), "linux x64");
  await page.locator(`${tid("message")}[data-role="assistant"]`).filter({ hasText: "Here is the system." }).waitFor();

  await say(page, "now poll the stats");
  const refused = calls(page, "poll-system-stats").last();
  await page.locator(`${tid("tool-call")}[data-tool="poll-system-stats"][data-state="error"]`).waitFor();
  assert.equal(await refused.locator(tid("tool-error")).textContent(), APP_ONLY_REFUSAL);
  assert.equal(await refused.locator(tid("app-card")).count(), 0);
  // The app keeps polling meanwhile.
  assert.match(collapsed(await frame.locator("#status-text").textContent()), /^\d\d:\d\d:\d\d$/);
  // Another session: the apps of this one go, the side panel with them.
  await card.locator(tid("app-tab")).click();
  await page.locator(`${tid("app-panel")}[data-mode="tab"]`).waitFor();
  await newSession(page);
  assert.equal(await page.locator(tid("app-panel")).isVisible(), false, "the side panel outlived its session");
  assert.equal(await page.locator(tid("tool-palette")).isVisible(), true);
  assert.equal(frame.isDetached(), true, "the app outlived its session");
});

// basic-vanillajs: a tool call from the app, a message and a link, each asked of the person first.
test("basic-vanillajs", async (page) => {
  await newSession(page);
  const call = await callTool(page, "basic", "get-time");
  const card = await readyApp(call);
  await freshOrigin(card);
  const frame = await appFrame(page, card);
  // The time of the call's result, then a newer one from the app's own call of the tool.
  const iso = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
  const timesCome = async (frame) => {
    const first = await textBecomes(frame.locator("#server-time"), iso);
    await sleep(5);
    await clickWhenStill(frame.locator("#get-time-btn"));
    await until("a new server time", async () => {
      const now = collapsed(await frame.locator("#server-time").textContent());
      return (iso.test(now) && now !== first) || now;
    });
  };
  await timesCome(frame);

  // The new time may resize the app, and its card with it: a click lands only once it stays put.
  await clickWhenStill(frame.locator("#send-message-btn"));
  await confirm(page, "The app of basic · get-time wants to send this message as you: This is message text.", "Send");
  await textBecomes(userMessages(page).last(), "This is message text.");

  const popup = page.waitForEvent("popup");
  await clickWhenStill(frame.locator("#open-link-btn"));
  await confirm(page, `The app of basic · get-time wants to open a link: ${LINK}`, "Open");
  const opened = await popup;
  await opened.waitForURL(LINK);
  assert.equal(opened.url(), LINK);
  await opened.close();

  await clickWhenStill(frame.locator("#open-link-btn"));
  await confirm(page, `The app of basic · get-time wants to open a link: ${LINK}`, "Don't open");
  await noPopup(page, 1000);
  // The app got the host's error (it leaves the rejection unhandled: an error of its frame).
  await until("the refusal in the app", async () => pageErrors.includes("the person did not open the link") || pageErrors);
  pageErrors.splice(pageErrors.indexOf("the person did not open the link"), 1);
  assert.equal(await userMessages(page).count(), 1);

  // The next call starts in the spare, where the official SDK's handshake waited: it goes on as this call's app's.
  const ahead = new URL(await (await waitingSpare(page)).getAttribute("src")).origin;
  const again = await readyApp(await callTool(page, "basic", "get-time"));
  assert.equal(await again.getAttribute("data-origin"), ahead, "the second app did not start in the spare");
  await timesCome(await appFrame(page, again));
});

// server-debug: every button, each request working or refused as the host's capabilities say.
test("server-debug", async (page) => {
  await newSession(page);
  // Its app-only tools declare the app's UI too; they stay hidden all the same.
  const listed = await page.locator(`${tid("palette-tool")}[data-server="debug"]`).evaluateAll((nodes) => nodes.map((node) => node.dataset.tool));
  assert.deepEqual(listed, ["debug-tool"]);
  const call = await callTool(page, "debug", "debug-tool");
  const card = await readyApp(call);
  await freshOrigin(card);
  const frame = await appFrame(page, card);
  const entries = frame.locator("#event-log > .log-entry");
  const types = async () => (await entries.locator(".log-type").allTextContents()).map((text) => text.replace(/:$/, ""));
  await until("connected, ontoolinput, ontoolresult", async () => {
    const seen = await types();
    return ["connected", "ontoolinput", "ontoolresult"].every((type) => seen.includes(type)) || seen;
  });
  assert.equal((await types()).includes("error"), false);
  const info = (await frame.locator("#host-capabilities-info").textContent()).replace(/\s+/g, "");
  assert.equal(info, "openLinks✓serverTools✓serverResources✓logging✓message✓updateModelContext✓");
  assert.match(collapsed(await frame.locator("#host-context-info").textContent()), /Display Mode ?inline Host ?formwork v\d/);

  // Clears the log, presses `button`, lets `then` answer what the host asks, and returns the entries it logged
  // once `last` is among them: [{type, payload}].
  async function press(button, last, then) {
    await clickWhenStill(frame.locator("#clear-log-btn"));
    await until(`an empty log before ${button}`, async () => (await entries.count()) === 0 || (await types()));
    await clickWhenStill(frame.locator(button));
    if (then) await then();
    await until(`a ${last} entry after ${button}`, async () => (await types()).includes(last) || (await types()));
    const logged = [];
    for (const entry of await entries.all()) {
      const type = (await entry.locator(".log-type").textContent()).replace(/:$/, "");
      const full = await entry.locator(".log-payload-full").textContent().catch(() => "null");
      let payload;
      try {
        payload = JSON.parse(full);
      } catch {
        payload = full;
      }
      logged.push({ type, payload });
    }
    return logged;
  }
  const typesOf = (logged) => logged.map((entry) => entry.type);

  const sent = await press("#send-message-text-btn", "send-message-result", () =>
    confirm(page, "The app of debug · debug-tool wants to send this message as you: Hello from debug app!", "Send"),
  );
  assert.deepEqual(typesOf(sent), ["send-message-result"]);
  await textBecomes(userMessages(page).last(), "Hello from debug app!");
  // The host takes text messages only (hostCapabilities.message = {text: {}}).
  const image = await press("#send-message-image-btn", "error");
  assert.deepEqual(typesOf(image), ["error"]);
  for (const level of ["debug", "info", "warning", "error"]) {
    assert.deepEqual(typesOf(await press(`#log-${level}-btn`, "send-log")), ["send-log"], `log ${level}`);
  }
  for (const kind of ["text", "structured"]) {
    assert.deepEqual(typesOf(await press(`#update-context-${kind}-btn`, "update-context")), ["update-context"], `update ${kind}`);
  }
  // Model context is text and structured content only (hostCapabilities.updateModelContext): an image is refused.
  assert.deepEqual(typesOf(await press("#update-context-image-btn", "error")), ["error"]);
  for (const mode of ["fullscreen", "pip", "inline"]) {
    const logged = await press(`#display-${mode}-btn`, "display-mode-result");
    // The host switches, tells the app its new context, then answers with the granted mode.
    assert.deepEqual(typesOf(logged), ["onhostcontextchanged", "display-mode-result"], `display mode ${mode}`);
    assert.equal(logged[0].payload.displayMode, mode);
    assert.deepEqual(logged[1].payload, { mode, result: { mode } });
    if (mode === "pip") {
      // The app is far taller than the screen: the picture-in-picture window scrolls it and stays on the screen.
      const shown = await page.locator(`${tid("app-pip")} ${tid("app-box")}`).boundingBox();
      assert.ok(shown && shown.y >= 0 && shown.y + shown.height <= 900, `the pip window is off-screen: ${JSON.stringify(shown)}`);
    }
    assert.equal(await card.getAttribute("data-mode"), mode);
  }
  const popup = page.waitForEvent("popup");
  const link = await press("#open-link-btn", "open-link-result", () =>
    confirm(page, `The app of debug · debug-tool wants to open a link: ${LINK}`, "Open"),
  );
  assert.deepEqual(typesOf(link), ["open-link-result"]);
  const opened = await popup;
  await opened.waitForURL(LINK);
  await opened.close();
  assert.deepEqual(typesOf(await press("#resize-400x300-btn", "manual-resize")), ["manual-resize"]);
  const tool = await press("#call-debug-tool-btn", "server-tool-result");
  assert.deepEqual(typesOf(tool), ["call-server-tool", "server-tool-result"]);
  const refresh = await press("#call-debug-refresh-btn", "server-tool-result");
  assert.deepEqual(typesOf(refresh), ["call-server-tool", "server-tool-result"]);

  await card.locator(tid("app-close")).click();
  await call.locator(`${tid("app-card")}[data-state="closed"]`).waitFor();
  // What the app's debug-log calls wrote at the plugin, the one made while handling the teardown included.
  const logged = lines("debug.log").map((line) => JSON.parse(line).type);
  for (const type of [
    "connected",
    "ontoolinput",
    "ontoolresult",
    "send-message-result",
    "send-log",
    "update-context",
    "display-mode-result",
    "open-link-result",
    "server-tool-result",
    "onteardown",
  ]) {
    assert.ok(logged.includes(type), `DEBUG_LOG_FILE has no ${type}: ${logged.join(", ")}`);
  }
});

// A real app that reads resources: server-video-resource's app reads the video its tool names (`resources/read`, a
// 1 MiB base64 blob from the CDN stand-in) and plays it from a `blob:` URL, which the document's policy allows; it
// lists the server's videos (`resources/list`); a read that fails at the server shows the server's error.
test("video-resource", async (page) => {
  await newSession(page);
  const call = await callTool(page, "video", "play_video");
  const card = await readyApp(call);
  await freshOrigin(card);
  const frame = await appFrame(page, card);
  await textBecomes(frame.locator("#video-info"), "Loaded via MCP resource (1MB)");
  assert.match(await frame.locator("#video").getAttribute("src"), /^blob:http:\/\/[0-9a-f]{32}\.localhost:\d+\//);
  // The bytes came whole (base64 of 1 MiB) and the browser decoded them: 1048532 bytes of 8 kHz 8-bit samples.
  await until("the video's metadata", async () => {
    const video = await frame.locator("#video").evaluate((node) => ({ ready: node.readyState, duration: node.duration, error: node.error?.message ?? null }));
    return (video.ready >= 1 && Math.abs(video.duration - 131.0665) < 0.001) || video;
  });
  const cdnLog = () => readFileSync(process.env.FORMWORK_VIDEO_CDN_LOG, "utf8").trim().split("\n");
  const base = "GET /vids/bigbuckbunny/mp4/h264";
  assert.deepEqual(cdnLog(), [`${base}/360/Big_Buck_Bunny_360_10s_1MB.mp4 200`]);

  await clickWhenStill(frame.locator("#change-video-btn"));
  const options = frame.locator("#video-picker > option");
  await until("the server's videos in the picker", async () => (await options.count()) > 1 || (await options.count()));
  assert.deepEqual(await options.allTextContents(), [
    "Select a video...",
    "video-bunny-1mb",
    "video-bunny-5mb",
    "video-bunny-10mb",
    "video-bunny-20mb",
    "video-bunny-30mb",
    "video-bunny-150mb",
  ]);
  await frame.locator("#video-picker").selectOption("videos://bunny-5mb");
  await clickWhenStill(frame.locator("#load-video-btn"));
  await textBecomes(frame.locator("#error-message"), /Failed to fetch video: 404 Not Found$/);
  assert.deepEqual(cdnLog(), [`${base}/360/Big_Buck_Bunny_360_10s_1MB.mp4 200`, `${base}/360/Big_Buck_Bunny_360_10s_5MB.mp4 404`]);
});

// The probe app attacks the host from inside its frame; every attempt is refused and nothing reaches the bystander.
test("security-probe", async (page) => {
  await newSession(page);
  // Another app in the same page, for the probe to post forged messages to.
  const neighbour = await appFrame(page, await readyApp(await callTool(page, "basic", "get-time")));
  const iso = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
  await textBecomes(neighbour.locator("#server-time"), iso);
  const before = lines("probe.log").length;
  const call = await callTool(page, "probe", "open-probe");
  const card = await readyApp(call);
  const origin = await freshOrigin(card);
  const frame = await appFrame(page, card);
  await frame.locator('body[data-done="1"]').waitFor({ timeout: WAIT });
  const outcomes = {};
  for (const item of await frame.locator("#probes > li").all()) {
    outcomes[await item.getAttribute("data-probe")] = [await item.getAttribute("data-outcome"), await item.textContent()];
  }
  const expected = {
    "call-own-app-tool": "allowed",
    "call-model-only": "refused",
    "call-other-plugin": "refused",
    "name-other-server": "refused",
    "escalate-metadata": "refused",
    "fetch-undeclared": "refused",
    "fetch-hostile-entry": "refused",
    "fetch-workbench": "refused",
    "script-undeclared": "refused",
    "child-frame": "refused",
    "read-parent-storage": "refused",
    "open-popup": "refused",
    "post-forged": "refused",
    "post-other-frames": "refused",
    // The app is on *.localhost, another site than the page: Chromium gives it no storage (APPS-FACTS 12).
    "own-storage": "refused",
    "navigate-top": "refused",
  };
  assert.deepEqual(Object.keys(outcomes).sort(), [...Object.keys(expected), "fetch-declared"].sort());
  for (const [probe, outcome] of Object.entries(expected)) {
    assert.equal(outcomes[probe][0], outcome, `${probe}: ${outcomes[probe][1]}`);
  }
  assert.notEqual(outcomes["fetch-declared"][0], "refused", `fetch-declared: ${outcomes["fetch-declared"][1]}`);
  assert.equal(outcomes["call-own-app-tool"][1], 'result: {"probe":"own"}');
  assert.match(outcomes["call-model-only"][1], /^error -?\d+: `model-only` is not visible to apps/);
  assert.match(outcomes["call-other-plugin"][1], /^error -32000: `probe` lists no tool `leak`$/);
  // The neighbour, and the page's spare (the next probe app, loaded ahead) when it is in already.
  assert.match(outcomes["post-other-frames"][1], /^posted to [12] other frame\(s\) of the top window; no answer within 2 s$/);
  assert.match(collapsed(await neighbour.locator("#server-time").textContent()), iso, "the neighbour took the forged result");
  assert.match(outcomes["read-parent-storage"][1], /^parent\.sessionStorage: SecurityError; parent\.localStorage: SecurityError;/);
  // What the app got, exactly as the plugin sent it (the metadata's key order too).
  assert.equal(await frame.locator("#result-meta").textContent(), RESULT_META);
  assert.equal(await frame.locator("#result-structured").textContent(), '{"probe":"app","label":null}');
  assert.equal(await frame.locator("#result-content").textContent(), '[{"type":"text","text":"probe opened"}]');
  assert.equal(await frame.locator("#tool-input").textContent(), "{}");
  assert.equal(await frame.locator("body").getAttribute("data-tool-results"), "1");
  // The workbench's credential: neither in the frame nor reachable from it.
  const reach = await frame.evaluate(() => {
    const attempt = (read) => {
      try {
        return `read ${JSON.stringify(read())}`;
      } catch (error) {
        return error.name;
      }
    };
    return {
      parent: attempt(() => window.parent.sessionStorage.getItem("formwork-token")),
      own: attempt(() => window.sessionStorage.getItem("formwork-token")),
    };
  });
  assert.equal(reach.parent, "SecurityError");
  assert.notEqual(reach.own, `read ${JSON.stringify(token)}`);
  assert.equal((await frame.content()).includes(token), false, "the token is in the app document");
  // Served once, to the frame it was minted for.
  const src = await card.locator(tid("app-frame")).getAttribute("src");
  assert.equal(new URL(src).origin, origin);
  // The declared origin is in the policy, the entry that would have injected a directive is not.
  assert.equal(shared.policies.get(src), policy("connect-src 'self' https://declared.example"));
  assert.equal(await getAgain(src), 410, "a second GET of the app document");
  // A minted document is served to a frame only (no Sec-Fetch-Dest: iframe, no document).
  const other = new URL(src);
  other.hostname = `${"0".repeat(32)}.localhost`;
  assert.equal(await getAgain(other.toString()), 404, "a GET of a document never minted");
  // What reached the plugins: the app's own call only.
  assert.deepEqual(lines("probe.log").slice(before), ['app-echo {"probe":"own"}']);
  assert.deepEqual(lines("bystander.log"), []);
  shared.probe = { session: page.url(), origin };
});

// A form the plugin opens during the app's tool call is an ordinary card; the answer goes back to the app.
test("app-tool-call-opens-a-form", async (page) => {
  assert.ok(shared.probe, "needs the security-probe case");
  const call = calls(page, "open-probe").last();
  const frame = await appFrame(page, call.locator(tid("app-card")));
  await clickWhenStill(frame.locator("#echo"));
  await textBecomes(frame.locator("#echo-result"), '["allowed","result: {\\"text\\":\\"hello\\"}"]');
  await clickWhenStill(frame.locator("#ask"));
  const card = await openCard(page);
  assert.equal(await card.locator(tid("card-header")).textContent(), "The probe app asks for a word");
  const input = card.locator(`${tid("question")}[data-question-id="word"] ${tid("question-input")}`);
  await input.fill("kiwi");
  await card.locator(tid("submit")).click();
  await textBecomes(frame.locator("#ask-result"), '{"answer":{"action":"accept","content":{"word":"kiwi"}}}');
  assert.deepEqual(lines("probe.log").slice(-2), ['app-echo {"text":"hello"}', "ask-during-app {}"]);
  assert.deepEqual(lines("bystander.log"), []);
  // Both calls are the transcript's, each saying which app asked.
  const probeCall = await call.getAttribute("data-call-id");
  for (const tool of ["app-echo", "ask-during-app"]) {
    const made = call.locator(`${tid("app-tool-call")}[data-tool="${tool}"]`).last();
    assert.equal(await made.getAttribute("data-asked-by"), probeCall, `${tool} is not the probe app's`);
    assert.equal(await made.locator(tid("tool-asked-by")).textContent(), "asked by the app of probe · open-probe");
    await made.locator(':scope[data-state="done"]').waitFor({ state: "attached" });
  }
});

// The workbench's theme reaches the app as host-context-changed.
test("theme-reaches-apps", async (page) => {
  assert.ok(shared.probe, "needs the security-probe case");
  const frame = await appFrame(page, calls(page, "open-probe").last().locator(tid("app-card")));
  const context = async () => JSON.parse((await frame.locator("#host-context").textContent()) || "{}");
  assert.equal((await context()).theme, "light", "the initial theme (Chromium's default scheme is light)");
  // The page's colours and fonts come as the standard style variables, and change with the theme.
  const background = async () => (await context()).styles?.variables?.["--color-background-primary"];
  assert.equal(await background(), "#ffffff");
  assert.equal((await context()).styles.variables["--font-mono"].startsWith("ui-monospace"), true);
  const toggle = page.locator(tid("theme-toggle"));
  for (const [theme, shown] of [
    ["light", "light"],
    ["dark", "dark"],
    ["system", "light"],
  ]) {
    await toggle.click();
    await page.locator(`${tid("theme-toggle")}[data-theme="${theme}"]`).waitFor();
    await until(`theme ${shown} in the app`, async () => (await context()).theme === shown || (await context()).theme);
    assert.equal(await background(), shown === "dark" ? "#1a1f27" : "#ffffff", `the background under ${theme}`);
  }
  await until("three host-context-changed", async () => (await frame.locator("body").getAttribute("data-context-changes")) === "3" || (await frame.locator("body").getAttribute("data-context-changes")));
  // A narrower window makes a narrower card: the app hears its new width (and only that), and again when the
  // window is as before.
  const width = async () => (await context()).containerDimensions?.width;
  const wide = await width();
  assert.ok(wide > 0, `the app's width: ${wide}`);
  await page.setViewportSize({ width: 1100, height: 900 });
  await until("a narrower container in the app", async () => (await width()) < wide || (await width()));
  assert.equal((await context()).theme, "light");
  await page.setViewportSize({ width: 1400, height: 900 });
  await until("the first width in the app again", async () => (await width()) === wide || (await width()));
  assert.equal(await frame.locator("body").getAttribute("data-context-changes"), "5");
});


// The socket drops and comes back: the transcript is redrawn from a snapshot, the frame lives on, and the equal
// result is not sent to it again.
test("transcript-refresh-sends-no-equal-result", async (page) => {
  assert.ok(shared.probe, "needs the security-probe case");
  const call = calls(page, "open-probe").last();
  const frame = await appFrame(page, call.locator(tid("app-card")));
  await frame.evaluate(() => {
    window.__mark = 1;
  });
  await call.evaluate((node) => {
    node.dataset.before = "1";
  });
  // The socket drops as a network would drop it (the page's socket goes through the test's proxy, see main).
  assert.ok(shared.socket, "the page's socket is not proxied");
  await shared.socket.close({ reason: "the test dropped the socket" });
  await page.locator(`${tid("connection-status")}[data-state="disconnected"]`).waitFor();
  await page.locator(tid("reconnect")).click();
  await page.locator(`${tid("connection-status")}[data-state="connected"]`).waitFor();
  await calls(page, "open-probe").last().locator(`${tid("app-card")}[data-state="ready"]`).waitFor();
  await sleep(500);
  assert.equal(await calls(page, "open-probe").last().getAttribute("data-before"), null, "the transcript was not redrawn");
  assert.equal(frame.isDetached(), false, "the frame was dropped by the redraw");
  assert.equal(await frame.evaluate(() => window.__mark), 1, "the frame was reloaded by the redraw");
  assert.equal(await frame.locator("body").getAttribute("data-tool-results"), "1", "the equal result was sent again");
  assert.equal(await frame.locator("body").getAttribute("data-tool-inputs"), "1", "the tool input was sent again");
});

// After a reload the apps of the transcript come back with their last result, and no tool runs again.
test("reload-restores-apps", async (page) => {
  assert.ok(shared.probe, "needs the security-probe case");
  const budget = await callTool(page, "budget-allocator", "get-budget-data");
  await readyApp(budget);
  const toolCalls = await page.locator(tid("tool-call")).count();
  const probeLog = lines("probe.log").length;
  await page.reload();
  await page.locator(`${tid("connection-status")}[data-state="connected"]`).waitFor();
  const probe = await readyApp(calls(page, "open-probe").last());
  const probeFrame = await appFrame(page, probe);
  assert.notEqual(await probe.getAttribute("data-origin"), shared.probe.origin, "a reload mints a new document");
  await probeFrame.locator('body[data-done="1"]').waitFor();
  assert.equal(await probeFrame.locator("#result-meta").textContent(), RESULT_META);
  assert.equal(await probeFrame.locator("body").getAttribute("data-tool-results"), "1");
  const budgetFrame = await appFrame(page, await readyApp(calls(page, "get-budget-data").last()));
  await textBecomes(budgetFrame.locator("#status-bar"), "Allocated: $100,000 / $100,000");
  assert.equal(await page.locator(tid("tool-call")).count(), toolCalls, "a tool was called again");
  // The reloaded probe ran its probes again (its own app-echo), and nothing else reached the plugin.
  assert.deepEqual(lines("probe.log").slice(probeLog), ['app-echo {"probe":"own"}']);
});

// An app up before its call ends gets the result once, also when the result comes while the page's socket is down
// (the redraw after the reconnect brings the changed outcome); a call the person stops sends tool-cancelled, once,
// and a later redraw sends neither again.
test("a-running-app-gets-each-changed-outcome-once", async (page) => {
  assert.ok(shared.socket, "the page's socket is not proxied");
  await newSession(page);
  const call = await callTool(page, "probe", "open-probe-after");
  const frame = await appFrame(page, await readyApp(call));
  await frame.locator('body[data-tool-inputs="1"]').waitFor();
  assert.equal(await call.getAttribute("data-state"), "running", "the result came before the app was up");
  assert.equal(await frame.locator("body").getAttribute("data-tool-results"), "0");
  await frame.evaluate(() => {
    window.__mark = 1;
  });
  await shared.socket.close({ reason: "the test dropped the socket" });
  await page.locator(`${tid("connection-status")}[data-state="disconnected"]`).waitFor();
  // The result leaves the plugin 3 s after the call, while the page is not listening.
  await until("the call's result at the plugin", async () => lines("probe.log").includes("open-probe-after {}") || lines("probe.log").slice(-2));
  await sleep(300);
  await page.locator(tid("reconnect")).click();
  await page.locator(`${tid("connection-status")}[data-state="connected"]`).waitFor();
  await calls(page, "open-probe-after").last().locator(`:scope[data-state="done"]`).waitFor();
  await frame.locator('body[data-tool-results="1"]').waitFor();
  assert.equal(await frame.evaluate(() => window.__mark), 1, "the frame was reloaded by the redraw");
  assert.equal(await frame.locator("#result-content").textContent(), '[{"type":"text","text":"probe opened"}]');

  const held = await callTool(page, "probe", "open-probe-held");
  const heldFrame = await appFrame(page, await readyApp(held));
  await heldFrame.locator('body[data-tool-inputs="1"]').waitFor();
  await page.locator(tid("stop-turn")).click();
  await held.locator(`:scope[data-state="error"]`).waitFor();
  await heldFrame.locator('body[data-tool-cancels="1"]').waitFor();
  const reason = await heldFrame.locator("body").getAttribute("data-cancelled");
  assert.equal(reason, await held.locator(tid("tool-error")).textContent(), "tool-cancelled carries the call's error");
  assert.equal(await heldFrame.locator("body").getAttribute("data-tool-results"), "0");

  await shared.socket.close({ reason: "the test dropped the socket" });
  await page.locator(`${tid("connection-status")}[data-state="disconnected"]`).waitFor();
  await page.locator(tid("reconnect")).click();
  await page.locator(`${tid("connection-status")}[data-state="connected"]`).waitFor();
  await calls(page, "open-probe-held").last().locator(`:scope[data-state="error"]`).waitFor();
  await sleep(500);
  assert.equal(await frame.locator("body").getAttribute("data-tool-results"), "1", "the equal result was sent again");
  assert.equal(await heldFrame.locator("body").getAttribute("data-tool-cancels"), "1", "the equal cancellation was sent again");
  assert.equal(await heldFrame.locator("body").getAttribute("data-tool-results"), "0");
});

// Another document in the app's window. The app cannot put one there: the workbench's `frame-src` refuses its
// navigation away. The test puts one there (as a listener serving the wrong document would): a second document
// minted for the same call, on an origin of its own. Its `ui/initialize` gets no answer, and its call, from the
// right window with another origin, is dropped; the minted document's same call went through.
test("a-message-from-the-apps-window-with-another-origin-is-dropped", async (page) => {
  await newSession(page);
  const call = await callTool(page, "probe", "open-probe");
  const card = await readyApp(call);
  const origin = await card.getAttribute("data-origin");
  const frame = await appFrame(page, card);
  await frame.locator('body[data-done="1"]').waitFor();
  const echo = { jsonrpc: "2.0", id: 900, method: "tools/call", params: { name: "app-echo", arguments: { probe: "right-origin" } } };
  await frame.evaluate((message) => window.parent.postMessage(message, "*"), echo);
  await until("the minted document's call at the plugin", async () => lines("probe.log").includes('app-echo {"probe":"right-origin"}') || lines("probe.log").slice(-3));
  const before = lines("probe.log").length;

  const away = `<script>parent.postMessage(${JSON.stringify({ ...echo, params: { ...echo.params, arguments: { probe: "data-url" } } })}, "*")</script>`;
  await frame.evaluate((url) => {
    location.href = url;
  }, `data:text/html,${encodeURIComponent(away)}`);
  let refused = null;
  await until("the refused navigation", async () => {
    refused = page.frames().find((candidate) => candidate.url() === "chrome-error://chromewebdata/");
    return Boolean(refused) || page.frames().map((candidate) => candidate.url().slice(0, 50));
  });

  const session = decodeURIComponent(new URL(page.url()).hash.replace(/^#\/sessions\//, ""));
  const callId = await call.getAttribute("data-call-id");
  const minted = await page.evaluate(
    async ([session, callId, token]) => {
      const response = await fetch(`/api/sessions/${encodeURIComponent(session)}/apps/${encodeURIComponent(callId)}`, {
        method: "POST",
        headers: { Authorization: `Bearer ${token}` },
      });
      return response.json();
    },
    [session, callId, token],
  );
  assert.notEqual(minted.origin, origin);
  await refused.goto(minted.src);
  const stranger = page.frames().find((candidate) => candidate.url().startsWith(`${minted.origin}/`));
  assert.ok(stranger, "the second document is not in the app's window");
  // Nothing the page posts reaches it (the page names the minted origin as the target) ...
  await stranger.locator('body[data-initialized="failed"]').waitFor();
  assert.equal(await stranger.locator("#init-result").textContent(), '{"timeout":true}');
  // ... and nothing it posts reaches the host.
  await stranger.evaluate((message) => window.parent.postMessage(message, "*"), { ...echo, params: { ...echo.params, arguments: { probe: "stranger" } } });
  await sleep(1000);
  assert.deepEqual(lines("probe.log").slice(before), [], "a call of another document reached the plugin");
});

// A long transcript: an app scrolled far out of view keeps its document and state and still gets the host's
// messages; scrolled back, it is the same frame and its calls work.
test("a-long-transcript-keeps-off-screen-apps-alive", async (page) => {
  await newSession(page);
  const call = await callTool(page, "probe", "open-probe");
  const card = await readyApp(call);
  const frame = await appFrame(page, card);
  await frame.locator('body[data-done="1"]').waitFor();
  await frame.evaluate(() => {
    window.__mark = "kept";
  });
  const paragraph = Array.from({ length: 6 }, (_, line) => `line ${line} of a long message`).join("\n");
  for (let i = 0; i < 30; i++) await say(page, `message ${i}\n${paragraph}`);
  await until("30 messages", async () => (await userMessages(page).count()) === 30 || (await userMessages(page).count()));
  await userMessages(page).last().scrollIntoViewIfNeeded();
  const off = await card.evaluate((node) => node.getBoundingClientRect().bottom);
  assert.ok(off < 0, `the app is still on the screen (its bottom at ${off} px)`);
  const changes = Number((await frame.locator("body").getAttribute("data-context-changes")) ?? "0");
  await page.locator(tid("theme-toggle")).click();
  await until("the theme change in the off-screen app", async () => {
    const seen = Number((await frame.locator("body").getAttribute("data-context-changes")) ?? "0");
    return seen === changes + 1 || seen;
  });
  await card.scrollIntoViewIfNeeded();
  assert.equal(await frame.evaluate(() => window.__mark), "kept", "the app was reloaded");
  await frame.locator("#echo-text").fill("still here");
  await clickWhenStill(frame.locator("#echo"));
  await textBecomes(frame.locator("#echo-result"), '["allowed","result: {\\"text\\":\\"still here\\"}"]');
  // Back to the page's first theme for the cases after this one.
  for (let i = 0; i < 2; i++) await page.locator(tid("theme-toggle")).click();
});

// Once an app of the session is up, the page keeps a spare for the next app of the same document: that document,
// loaded ahead in a hidden frame on an origin of its own, whose `ui/initialize` waits. The next call of the same app
// takes it over: the same document (a mark set in it survives) on the spare's origin, initialised as that call's
// app; and a new spare follows. The probe app gives up on its `ui/initialize` after 5 s: in a spare it gave up on,
// the app starts again in a new frame. An app of another document does not take the spare. A new session has none
// until one of its apps is up, and a spare asks the host nothing.
test("an-app-starts-in-the-spare-frame", async (page) => {
  await newSession(page);
  await sleep(500);
  assert.equal(await page.locator(tid("app-spare")).count(), 0, "a spare before any app of the session");
  const first = await readyApp(await callTool(page, "probe", "open-probe"));
  // The spare's document is up and waiting: its `ui/initialize` has no answer.
  const waiting = async () => {
    const src = new URL(await (await waitingSpare(page)).getAttribute("src"));
    return { origin: src.origin, frame: page.frames().find((candidate) => candidate.url() === src.href) };
  };
  const ahead = await waiting();
  assert.equal(await page.locator(tid("app-spare")).count(), 1);
  assert.match(ahead.origin, APP_ORIGIN);
  assert.notEqual(ahead.origin, await first.getAttribute("data-origin"));
  assert.equal(await ahead.frame.locator("#init-result").textContent(), "");
  await ahead.frame.evaluate(() => {
    window.__mark = "ahead";
    parent.postMessage({ jsonrpc: "2.0", id: 901, method: "tools/call", params: { name: "app-echo", arguments: { probe: "spare" } } }, "*");
  });
  const call = await callTool(page, "probe", "open-probe");
  const card = await readyApp(call);
  assert.equal(await card.getAttribute("data-origin"), ahead.origin, "the app did not start in the spare");
  const frame = await appFrame(page, card);
  assert.equal(await frame.evaluate(() => window.__mark), "ahead", "the spare's document was reloaded");
  await frame.locator('body[data-done="1"]').waitFor();
  assert.equal(await frame.locator("body").getAttribute("data-tool-results"), "1");
  assert.equal(JSON.parse(await frame.locator("#init-result").textContent()).protocolVersion, "2026-01-26");
  assert.ok(!lines("probe.log").some((line) => line.includes('"probe":"spare"')), "a spare's call reached the plugin");

  // A spare whose app gave up waiting: the next app starts in a frame of its own.
  const stale = await waiting();
  assert.notEqual(stale.origin, ahead.origin);
  await stale.frame.locator('body[data-initialized="failed"]').waitFor();
  const late = await readyApp(await callTool(page, "probe", "open-probe"));
  const lateOrigin = await late.getAttribute("data-origin");
  assert.notEqual(lateOrigin, stale.origin);
  const lateFrame = await appFrame(page, late);
  await lateFrame.locator('body[data-done="1"]').waitFor();
  assert.equal(JSON.parse(await lateFrame.locator("#init-result").textContent()).protocolVersion, "2026-01-26");

  // Another document does not take the spare, which goes. A widget makes none (its page is made when served).
  const before = await waiting();
  const widget = await readyApp(await callTool(page, "probe", "widget"));
  assert.notEqual(await widget.getAttribute("data-origin"), before.origin);
  await until("the old spare gone", async () => !page.frames().some((candidate) => candidate.url().startsWith(`${before.origin}/`)));
  await sleep(300);
  assert.equal(await page.locator(tid("app-spare")).count(), 0);
  // The next app of another document makes the next spare, like itself.
  await readyApp(await callTool(page, "probe", "open-probe"));
  const next = await waiting();
  assert.notEqual(next.origin, before.origin);
  assert.match(await next.frame.locator("h1").textContent(), /^Probe app v\d+$/);
});

// Only calls that declare a UI get an app card; a declared UI that cannot be read shows why; the legacy flat key
// and a UI named by the result's metadata open the app too.
test("which-calls-get-apps", async (page) => {
  await newSession(page);
  const plain = await callTool(page, "probe", "bump-app");
  await plain.locator(`:scope[data-state="done"]`).waitFor();
  await sleep(300);
  assert.equal(await plain.locator(tid("app-card")).count(), 0, "an ordinary tool got an app card");
  const missing = await callTool(page, "probe", "open-missing");
  await missing.locator(`${tid("app-card")}[data-state="error"]`).waitFor();
  assert.match(await missing.locator(tid("app-error")).textContent(), /^The app could not be loaded: .*ui:\/\/probe\/missing\.html/);
  assert.equal(await missing.locator(tid("app-frame")).count(), 0);
  const opened = [];
  for (const tool of ["open-probe-late", "open-probe-flat"]) opened.push([tool, await callTool(page, "probe", tool)]);
  for (const [tool, call] of opened) {
    const card = await readyApp(call);
    await freshOrigin(card);
    const frame = await appFrame(page, card);
    await frame.locator('body[data-done="1"]').waitFor();
    assert.equal(await frame.locator("body").getAttribute("data-version"), "2", `${tool} shows the bumped app`);
    assert.equal(await frame.locator('#probes > li[data-probe="call-own-app-tool"]').getAttribute("data-outcome"), "allowed");
  }
  assert.deepEqual(lines("bystander.log"), []);
});

// A skybridge widget sees window.openai, built on the same bridge (its calls, messages, links and display modes meet
// the same checks and cards); its widget state outlives a reload.
test("skybridge-widget", async (page) => {
  await newSession(page);
  const call = await callTool(page, "probe", "widget");
  const card = await readyApp(call);
  await freshOrigin(card);
  let frame = await appFrame(page, card);
  await frame.locator('body[data-openai="present"]').waitFor();
  const read = async (id) => frame.locator(`#${id}`).textContent();
  // What its first line saw, before any message: the call's result and where it is shown, as in ChatGPT.
  const atLoad = {
    toolInput: {},
    toolOutput: { widget: "output", n: 1 },
    toolResponseMetadata: JSON.parse(RESULT_META),
    widgetState: null,
    theme: "light",
    displayMode: "inline",
    maxHeight: 640,
    locale: "en-GB",
  };
  assert.deepEqual(JSON.parse(await read("at-load")), atLoad);
  await textBecomes(frame.locator("#tool-output"), '{"widget":"output","n":1}');
  assert.equal(await read("tool-input"), "{}");
  assert.equal(await read("tool-response-metadata"), RESULT_META);
  assert.equal(await read("theme"), '"light"');
  assert.equal(await read("display-mode"), '"inline"');
  assert.equal(await read("max-height"), "640");
  assert.equal(await read("locale"), '"en-GB"');
  assert.equal(await read("widget-state"), "null");
  assert.ok(Number(await frame.locator("body").getAttribute("data-set-globals")) >= 2, "openai:set_globals fired");
  await clickWhenStill(frame.locator("#set-state"));
  await textBecomes(frame.locator("#widget-state"), '{"count":1}');
  await clickWhenStill(frame.locator("#call-tool"));
  await textBecomes(frame.locator("#call-result"), /^\{"ok":/);
  const result = JSON.parse(await read("call-result")).ok;
  assert.deepEqual(result.structuredContent, { echo: { from: "widget" } });
  await clickWhenStill(frame.locator("#follow-up"));
  await confirm(page, "The app of probe · widget wants to send this message as you: a follow-up from the widget", "Send");
  await textBecomes(frame.locator("#follow-up-result"), '{"ok":null}');
  await textBecomes(userMessages(page).last(), "a follow-up from the widget");
  const popup = page.waitForEvent("popup");
  await clickWhenStill(frame.locator("#open-external"));
  await confirm(page, "The app of probe · widget wants to open a link: https://example.com/", "Open");
  const opened = await popup;
  await opened.waitForURL("https://example.com/");
  await opened.close();
  await textBecomes(frame.locator("#open-external-result"), '{"ok":null}');
  await clickWhenStill(frame.locator("#fullscreen"));
  await textBecomes(frame.locator("#display-result"), '{"ok":{"mode":"fullscreen"}}');
  await textBecomes(frame.locator("#display-mode"), '"fullscreen"');
  assert.equal(await card.getAttribute("data-mode"), "fullscreen");
  await page.reload();
  await page.locator(`${tid("connection-status")}[data-state="connected"]`).waitFor();
  frame = await appFrame(page, await readyApp(calls(page, "widget").last()));
  await textBecomes(frame.locator("#widget-state"), '{"count":1}');
  await textBecomes(frame.locator("#tool-output"), '{"widget":"output","n":1}');
  // The saved state, too, is there from the first line on.
  assert.deepEqual(JSON.parse(await read("at-load")), { ...atLoad, widgetState: { count: 1 } });
});

// Leaving a session tears its apps down as closing them does: each gets ui/resource-teardown (the probe app makes
// its teardown call to the plugin then), off-screen, and its frame goes after.
test("leaving-a-session-tears-its-apps-down", async (page) => {
  await newSession(page);
  const card = await readyApp(await callTool(page, "probe", "open-probe"));
  const origin = await card.getAttribute("data-origin");
  const teardowns = () => lines("probe.log").filter((line) => line === 'app-echo {"event":"teardown"}').length;
  const before = teardowns();
  await newSession(page);
  await until("the app's teardown call reached the plugin", async () => teardowns() === before + 1);
  await until("the app's frame gone", async () => !page.frames().some((frame) => frame.url().startsWith(`${origin}/`)));
  assert.equal(await page.locator(tid("app-card")).count(), 0);
});

// A browser without `Element.moveBefore` (Firefox, Safari) cannot move a frame alive: it would load the document
// again, which the sandbox serves once. There an app that moves (to the side panel, picture in picture, back
// inline, through a transcript redraw) starts again in a new document with its call's input and last result, no tool
// runs again, no document is asked for twice, and no spare is made. A page of its own, with `moveBefore` taken away
// before any of its scripts runs.
test("without-movebefore-a-moved-app-starts-again-with-its-result", async (page) => {
  const other = await page.context().newPage();
  try {
    await other.addInitScript(() => {
      delete Element.prototype.moveBefore;
    });
    other.on("pageerror", (error) => pageErrors.push(error.message));
    const served = [];
    other.on("response", (response) => {
      const target = new URL(response.url());
      if (APP_ORIGIN.test(target.origin)) served.push(`${response.status()} ${target.origin}${target.pathname}`);
    });
    let socket = null;
    await other.routeWebSocket(/\/api\/sessions\/[^/]+\/socket/, (route) => {
      route.connectToServer();
      socket = route;
    });
    await other.goto(url);
    await newSession(other);
    assert.equal(await other.evaluate(() => typeof Element.prototype.moveBefore), "undefined");
    const call = await callTool(other, "probe", "open-probe");
    const card = call.locator(tid("app-card"));
    const origins = [];
    // The app is up in a document of its own, with the call's input and result, each once.
    const upAgain = async (what) => {
      await until(`the app up again ${what}`, async () => {
        const origin = await card.getAttribute("data-origin");
        return (origin !== origins.at(-1) && (await card.getAttribute("data-state")) === "ready") || origin;
      });
      const origin = await card.getAttribute("data-origin");
      assert.match(origin, APP_ORIGIN);
      origins.push(origin);
      const frame = await appFrame(other, card);
      await frame.locator('body[data-done="1"]').waitFor();
      assert.equal(await frame.locator("#result-meta").textContent(), RESULT_META, what);
      assert.equal(await frame.locator("body").getAttribute("data-tool-inputs"), "1", what);
      assert.equal(await frame.locator("body").getAttribute("data-tool-results"), "1", what);
      return frame;
    };
    await upAgain("at first");
    const where = (place) => other.locator(`${tid(place)} ${tid("app-frame")}`).waitFor();
    await card.locator(tid("app-tab")).click();
    await where("app-panel-body");
    await upAgain("in the side panel");
    await other.locator(tid("app-panel-pip")).click();
    await where("app-pip");
    await upAgain("in picture in picture");
    await card.locator(tid("app-inline")).click();
    await where("app-card");
    await upAgain("inline");
    // The transcript is redrawn after the socket drops.
    assert.ok(socket, "the page's socket is not proxied");
    await socket.close({ reason: "the test dropped the socket" });
    await other.locator(`${tid("connection-status")}[data-state="disconnected"]`).waitFor();
    await other.locator(tid("reconnect")).click();
    await other.locator(`${tid("connection-status")}[data-state="connected"]`).waitFor();
    await upAgain("after the redraw");
    assert.equal(new Set(origins).size, 5, "an origin was used twice");
    assert.equal(await calls(other, "open-probe").count(), 1, "the tool ran again");
    await sleep(500);
    assert.equal(await other.locator(tid("app-spare")).count(), 0, "a spare was made");
    // Each document was asked for once, and served: none was loaded again (410).
    assert.deepEqual(
      served,
      origins.map((origin) => `200 ${origin}/`),
    );
    // The documents left behind were released: only the last one's calls are answered.
    const released = await other.evaluate(
      async ([origins, token]) => {
        const statuses = [];
        for (const origin of origins) {
          const doc = new URL(origin).hostname.split(".")[0];
          const response = await fetch(`/api/apps/${doc}/rpc`, {
            method: "POST",
            headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" },
            body: JSON.stringify({ message: { jsonrpc: "2.0", id: 1, method: "ping" }, context: null }),
          });
          statuses.push(response.status);
        }
        return statuses;
      },
      [origins, token],
    );
    assert.deepEqual(released, [404, 404, 404, 404, 200]);
  } catch (error) {
    // The failure is on this page: the runner's screenshot is of the other one.
    await screenshot(other, "without-movebefore-page");
    throw error;
  } finally {
    await other.close();
  }
});

// What the frame's app gets for a request of its own that it posts by hand (a second `ui/initialize`, say).
function askFromApp(frame, method, params) {
  return frame.evaluate(
    ({ method, params }) =>
      new Promise((resolve) => {
        const id = 9100 + Math.floor(Math.random() * 1000);
        const heard = (event) => {
          if (event.data?.id !== id) return;
          window.removeEventListener("message", heard);
          if (method === "ui/initialize") window.parent.postMessage({ jsonrpc: "2.0", method: "ui/notifications/initialized" }, "*");
          resolve(event.data);
        };
        window.addEventListener("message", heard);
        window.parent.postMessage({ jsonrpc: "2.0", id, method, params }, "*");
      }),
    { method, params },
  );
}

// An app that starts its bridge again in the same document (a second App instance: ui/initialize, then
// initialized) gets the call's input and result again, as a first start does.
test("an-app-that-initializes-again-gets-its-input-and-result-again", async (page) => {
  await newSession(page);
  const call = await callTool(page, "probe", "open-probe");
  const frame = await appFrame(page, await readyApp(call));
  await frame.locator('body[data-done="1"]').waitFor();
  assert.equal(await frame.locator("body").getAttribute("data-tool-inputs"), "1");
  const answer = await askFromApp(frame, "ui/initialize", { protocolVersion: "2026-01-26", appInfo: { name: "again", version: "1" }, appCapabilities: {} });
  assert.equal(answer.result?.protocolVersion, "2026-01-26", JSON.stringify(answer));
  await frame.locator('body[data-tool-inputs="2"]').waitFor();
  await frame.locator('body[data-tool-results="2"]').waitFor();
  assert.equal(await frame.locator("#result-meta").textContent(), RESULT_META);
});

// The host never shows an app in a mode it did not declare: not by the card's buttons, not on the app's own request;
// an app that cannot be inline is shown fullscreen, and after the panel closes it comes back there, visible.
test("an-app-is-shown-only-in-the-modes-it-declares", async (page) => {
  await newSession(page);
  const call = await callTool(page, "probe", "open-probe");
  const card = await readyApp(call);
  const frame = await appFrame(page, card);
  await frame.locator('body[data-done="1"]').waitFor();
  const initialize = (modes) =>
    askFromApp(frame, "ui/initialize", { protocolVersion: "2026-01-26", appInfo: { name: "modes", version: "1" }, appCapabilities: { availableDisplayModes: modes } });

  const inlineOnly = await initialize(["inline"]);
  assert.equal(inlineOnly.result?.hostContext?.displayMode, "inline", JSON.stringify(inlineOnly));
  assert.equal(await card.locator(tid("app-fullscreen")).isVisible(), false, "a fullscreen button for an inline-only app");
  assert.equal(await card.locator(tid("app-pip")).isVisible(), false, "a pip button for an inline-only app");
  assert.equal(await card.locator(tid("app-tab")).isVisible(), true);
  const asked = await askFromApp(frame, "ui/request-display-mode", { mode: "fullscreen" });
  assert.deepEqual(asked.result, { mode: "inline" });
  assert.equal(await card.getAttribute("data-mode"), "inline");

  const panel = page.locator(tid("app-panel"));
  // An app that cannot be inline takes no screen by itself: it waits behind Open app until the person clicks.
  await initialize(["fullscreen"]);
  await card.locator(':scope[data-mode="collapsed"]').waitFor();
  assert.equal(await panel.isVisible(), false, "the app took the screen with no click");
  await card.locator(tid("app-reopen")).click();
  assert.equal(await card.getAttribute("data-mode"), "fullscreen");
  await panel.locator(":scope[data-mode=\"fullscreen\"]").waitFor();
  assert.equal(await page.locator(tid("app-panel-tab")).isVisible(), false, "a side-panel button for a fullscreen-only app");
  await page.locator(tid("app-panel-close")).click();
  await card.locator(':scope[data-mode="collapsed"]').waitFor();
  assert.equal(await card.locator(tid("app-inline")).isVisible(), false);
  await card.locator(tid("app-reopen")).click();
  // Fullscreen hides the conversation, the card with it.
  await card.locator(':scope[data-mode="fullscreen"]').waitFor({ state: "attached" });
  const shown = await page.locator(`${tid("app-panel-body")} ${tid("app-box")}`).boundingBox();
  assert.ok(shown && shown.width > 0 && shown.height > 0, `the reopened app is not visible: ${JSON.stringify(shown)}`);
  assert.equal(frame.isDetached(), false, "the frame was replaced");
  await page.locator(tid("app-panel-close")).click();
  await card.locator(':scope[data-mode="collapsed"]').waitFor();
  await card.locator(tid("app-close")).click();
  await card.locator(':scope[data-state="closed"]').waitFor();
});

// An app's tool call goes through the person's policy: a tool set to `prompt` asks with a card that names the app;
// Deny answers the app with the refusal, the plugin hears nothing, and the call is in the app's list as failed.
test("an-apps-call-of-a-prompt-tool-asks-naming-the-app", async (page) => {
  await newSession(page);
  const call = await callTool(page, "probe", "open-probe");
  const frame = await appFrame(page, await readyApp(call));
  await frame.locator('body[data-done="1"]').waitFor();
  const before = lines("probe.log").length;
  const answer = askFromApp(frame, "tools/call", { name: "app-erase", arguments: {} });
  const card = await openCard(page);
  assert.equal(collapsed(await card.locator(tid("card-header")).textContent()), "Allow probe · app-erase?");
  assert.equal(
    await card.locator(tid("card-message")).textContent(),
    'The app of probe · open-probe asks. Allow the probe MCP server to run tool "app-erase"?',
  );
  await card.locator(`${tid("approval-choice")}[data-choice="deny"]`).click();
  const reply = await answer;
  assert.deepEqual(reply.error, { code: -32000, message: "user rejected MCP tool call" });
  const made = call.locator(`${tid("app-tool-call")}[data-tool="app-erase"]`);
  await made.locator(':scope[data-state="error"]').waitFor({ state: "attached" });
  assert.deepEqual(lines("probe.log").slice(before), []);
});

// A remote plugin's app gets no entry on this machine in its CSP, whatever it declares: its fetch of the plugin's
// own local port is refused by the policy.
test("a-remote-plugins-app-reaches-no-local-service", async (page) => {
  await newSession(page);
  const call = await callTool(page, "remote", "open-remote-app");
  const card = await readyApp(call);
  const frame = await appFrame(page, card);
  const src = await card.locator(tid("app-frame")).getAttribute("src");
  assert.equal(shared.policies.get(src), policy("connect-src 'self' https://declared.example"));
  await frame.locator("body[data-fetch]").waitFor({ state: "attached" });
  assert.equal(await frame.locator("body").getAttribute("data-fetch"), "refused");
});

// An app asks for fullscreen or picture in picture: granted only right after the person clicked in it. A card
// that opens while an app is fullscreen is never behind it: the app steps aside to the side panel.
test("fullscreen-needs-a-click-and-never-hides-a-card", async (page) => {
  await newSession(page);
  const call = await callTool(page, "probe", "open-probe");
  const card = await readyApp(call);
  const frame = await appFrame(page, card);
  await frame.locator('body[data-done="1"]').waitFor();
  for (const mode of ["fullscreen", "pip"]) {
    const asked = await askFromApp(frame, "ui/request-display-mode", { mode });
    assert.deepEqual(asked.result, { mode: "inline" }, `${mode} with no click`);
    assert.equal(await card.getAttribute("data-mode"), "inline");
  }
  await frame.locator("#host-context").click();
  const asked = await askFromApp(frame, "ui/request-display-mode", { mode: "fullscreen" });
  assert.deepEqual(asked.result, { mode: "fullscreen" });
  const panel = page.locator(tid("app-panel"));
  await panel.locator(':scope[data-mode="fullscreen"]').waitFor();
  await clickWhenStill(frame.locator("#ask"));
  const form = await openCard(page);
  await panel.locator(':scope[data-mode="tab"]').waitFor();
  assert.equal(await card.getAttribute("data-mode"), "tab");
  const shown = await form.boundingBox();
  assert.ok(shown && shown.width > 0 && shown.y >= 0 && shown.y < 900, `the card is out of view: ${JSON.stringify(shown)}`);
  await form.locator(`${tid("question")}[data-question-id="word"] ${tid("question-input")}`).fill("fig");
  await form.locator(tid("submit")).click();
  await textBecomes(frame.locator("#ask-result"), '{"answer":{"action":"accept","content":{"word":"fig"}}}');
});

// Saves the whole of `page` as <screenshots>/apps-<name>.png, and says where.
async function screenshot(page, name) {
  try {
    mkdirSync(screenshots, { recursive: true });
    const file = path.join(screenshots, `apps-${name}.png`);
    await page.screenshot({ path: file, fullPage: true });
    console.log(`    screenshot: ${file}`);
  } catch (shotError) {
    console.log(`    no screenshot: ${shotError.message}`);
  }
}

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
