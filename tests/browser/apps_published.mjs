// The published MCP Apps of the test peers: budget allocator, system monitor, basic, debug and video resource.

import { readFileSync } from "node:fs";
import http from "node:http";
import path from "node:path";
import assert from "node:assert/strict";

import { callTool, newSession, say, sleep, tid } from "./lib.mjs";
import { APP_ONLY_REFUSAL, LINK, appFrame, calls, clickWhenStill, collapsed, confirm, freshOrigin, lines, noPopup, pageErrors, policy, readyApp, shared, test, textBecomes, until, userMessages, waitingSpare } from "./apps_steps.mjs";

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
