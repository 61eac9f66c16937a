// An app moved without moveBefore or initialised again, its display modes and fullscreen, its call of a prompt
// tool, and a remote plugin's app.

import assert from "node:assert/strict";

import { callTool, newSession, sleep, tid } from "./lib.mjs";
import { APP_ORIGIN, RESULT_META, appFrame, calls, clickWhenStill, collapsed, lines, openCard, pageErrors, policy, readyApp, screenshot, shared, test, textBecomes, token, until, url } from "./apps_steps.mjs";

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
