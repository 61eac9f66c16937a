// The probe plugin's app and skybridge widget: attacks refused, cards, themes, redraws, reloads, spare frames.

import assert from "node:assert/strict";

import { callTool, newSession, say, sleep, tid } from "./lib.mjs";
import { APP_ORIGIN, RESULT_META, WAIT, appFrame, calls, clickWhenStill, collapsed, confirm, freshOrigin, getAgain, lines, openCard, policy, readyApp, shared, test, textBecomes, token, until, url, userMessages, waitingSpare } from "./apps_steps.mjs";

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
