// Browser tests of the workbench (`formwork serve`, docs/workbench.md) in headless Chromium from Debian's
// packages, driven by playwright-core. Started by crates/cli/tests/browser.rs:
//
//   node tests/browser/run.mjs <URL printed by formwork serve> [case-name-filter]
//
// The server must have the TS SDK plugin (tests/peers/ts_plugin.mjs) configured as server `ts` with tool
// approval `approve`. Every case opens a new session, calls a tool from the palette, answers the card like
// a person (typing, clicking, ticking), and checks the tool result shown in the transcript: the plugin
// reports `result: <JSON of the ElicitResult its SDK received>`, so each check is made at the plugin.
//
// Prints one line per case (`ok <case> (<ms> ms)` or `FAIL <case>: <why>`) and finally `N passed, M failed`;
// exits 1 when a case failed. A failed case leaves a screenshot at <screenshots>/<case>.png, where
// <screenshots> is $FORMWORK_BROWSER_SCREENSHOTS, else target/browser-failures of this checkout.
//
// playwright-core is loaded from $FORMWORK_PEERS/npm/node_modules (installed by `cargo xtask peers`); it never
// downloads a browser: Chromium is /usr/bin/chromium, or $FORMWORK_CHROMIUM.

import { mkdirSync, readFileSync } from "node:fs";
import http from "node:http";
import path from "node:path";
import { fileURLToPath } from "node:url";
import assert from "node:assert/strict";

import { callTool, exitWhenDone, launch, newSession, screenshots, tid } from "./lib.mjs";

const [url, filter] = process.argv.slice(2);
if (!url) {
  console.error("usage: node tests/browser/run.mjs <workbench URL with token> [case filter]");
  process.exit(2);
}
// The access token, from the fragment of the printed URL (or its query, as older builds printed it, so that
// the credential case can judge those too).
const token = new URL(url).hash.replace(/^#token=/, "") || new URL(url).searchParams.get("token") || "";
const SERVER = "ts";
// Long enough for a cold plugin start on a busy machine, short enough to keep a hang from eating the run.
const WAIT = 15_000;


// ---- what a person does ----

// The card that is open for an answer (there is one per case), located by its form id so that the locator
// still finds it once it is resolved.
async function openCard(page) {
  const open = page.locator(`${tid("form-card")}[data-state="open"]`);
  await open.waitFor();
  assert.equal(await open.count(), 1, "exactly one open card");
  const id = await open.getAttribute("data-form-id");
  return page.locator(`${tid("form-card")}[data-form-id="${id}"]`);
}

// A question of the card by its id.
function question(card, id) {
  return card.locator(`${tid("question")}[data-question-id="${id}"]`);
}

// The option (button, radio or checkbox label) with this label.
function option(scope, label) {
  return scope.locator(`${tid("option")}[data-label="${label}"]`);
}

// Waits for the call of `tool` to finish and returns the JSON after `result: ` in its result text.
async function pluginResult(page, tool, state = "done") {
  const call = page.locator(`${tid("tool-call")}[data-tool="${tool}"]`).last();
  await page.locator(`${tid("tool-call")}[data-tool="${tool}"][data-state="done"], ${tid("tool-call")}[data-tool="${tool}"][data-state="error"]`).last().waitFor();
  assert.equal(await call.getAttribute("data-state"), state, `state of the ${tool} call`);
  const text = await call.locator(tid("result-text")).first().textContent();
  assert.ok(text.startsWith("result: "), `the plugin reported no result: ${text}`);
  return JSON.parse(text.slice("result: ".length));
}

// The card's outcome once resolved: {action, reason, text}.
async function outcome(card) {
  const node = card.locator(tid("outcome"));
  await node.waitFor();
  return {
    action: await node.getAttribute("data-action"),
    reason: await node.getAttribute("data-reason"),
    text: await node.locator(tid("outcome-text")).textContent(),
  };
}

// Calls `tool`, lets `answer(card)` answer its one form, and checks that the plugin received `expected`.
async function answered(page, tool, answer, expected) {
  await newSession(page);
  await callTool(page, SERVER, tool);
  const card = await openCard(page);
  await answer(card);
  assert.deepEqual(await pluginResult(page, tool), expected);
  return card;
}

const accept = (content) => ({ action: "accept", content });

async function typeInto(card, id, text) {
  const input = question(card, id).locator(tid("question-input"));
  await input.click();
  await input.fill("");
  await input.pressSequentially(text);
}

const submit = (card) => card.locator(tid("submit")).click();

// ---- the cases, in the order of the list ----

const cases = [];
const test = (name, body) => cases.push({ name, body });

// Each field kind, answered in the browser and checked at the plugin.
test("kind-text-pattern", (page) =>
  answered(page, "ask_string", async (card) => {
    await typeInto(card, "nickname", "ada-99");
    await submit(card);
  }, accept({ nickname: "ada-99" })));

test("kind-email", (page) =>
  answered(page, "ask_email", async (card) => {
    await typeInto(card, "email", "ada@example.com");
    await submit(card);
  }, accept({ email: "ada@example.com" })));

test("kind-uri", (page) =>
  answered(page, "ask_uri", async (card) => {
    await typeInto(card, "homepage", "https://example.com/ada");
    await submit(card);
  }, accept({ homepage: "https://example.com/ada" })));

test("kind-date", (page) =>
  answered(page, "ask_date", async (card) => {
    assert.equal(await question(card, "birthday").locator(tid("question-input")).getAttribute("type"), "date");
    await question(card, "birthday").locator(tid("question-input")).fill("1815-12-10");
    await submit(card);
  }, accept({ birthday: "1815-12-10" })));

// The browser runs in Europe/Berlin (see main): a local 10:30 in November goes out as +01:00.
test("kind-datetime", (page) =>
  answered(page, "ask_datetime", async (card) => {
    const input = question(card, "meeting").locator(tid("question-input"));
    assert.equal(await input.getAttribute("type"), "datetime-local");
    await input.fill("2026-11-29T10:30:00");
    await submit(card);
  }, accept({ meeting: "2026-11-29T10:30:00+01:00" })));

test("kind-integer", (page) =>
  answered(page, "ask_integer", async (card) => {
    await typeInto(card, "age", "36");
    await submit(card);
  }, accept({ age: 36 })));

test("kind-number", (page) =>
  answered(page, "ask_number", async (card) => {
    await typeInto(card, "score", "7.25");
    await submit(card);
  }, accept({ score: 7.25 })));

test("kind-boolean", (page) =>
  answered(page, "ask_boolean", (card) => option(card, "true").click(), accept({ agree: true })));

// A 2026-07-28 call: each round's form is a card of the call, which shows the round it is in.
test("rounds-2026", async (page) => {
  await newSession(page);
  await callTool(page, "ts2", "deploy");
  const call = page.locator(`${tid("tool-call")}[data-server="ts2"][data-tool="deploy"]`);
  let card = await openCard(page);
  assert.equal(await call.getAttribute("data-round"), "1");
  await option(card, "production").click();
  await page.locator(`${tid("tool-call")}[data-server="ts2"][data-round="2"]`).waitFor();
  assert.equal(await call.locator(tid("tool-status")).textContent(), "running · asked for input (round 2)");
  card = await openCard(page);
  await option(card, "true").click();
  await page.locator(`${tid("tool-call")}[data-server="ts2"][data-state="done"]`).waitFor();
  assert.equal(
    await call.locator(tid("result-text")).first().textContent(),
    'target: production; confirm: accept {"confirm":true}',
  );
});

test("kind-enum", (page) =>
  answered(page, "ask_enum", (card) => option(card, "blue").click(), accept({ color: "blue" })));

test("kind-titled-enum", async (page) => {
  const card = await answered(page, "ask_titled", (card) => option(card, "Large").click(), accept({ size: "l" }));
  assert.equal(await card.locator(`${tid("accepted-value")}[data-key="size"]`).textContent(), "Large");
});

test("kind-legacy-enum-names", (page) =>
  answered(page, "ask_legacy", (card) => option(card, "Beta").click(), accept({ legacy: "b" })));

// Ticked z then x: answered in the order ticked.
test("kind-multi-select", (page) =>
  answered(page, "ask_multi", async (card) => {
    await option(card, "z").locator(tid("option-input")).check();
    await option(card, "x").locator(tid("option-input")).check();
    // maxItems 2: the third box is locked.
    assert.equal(await option(card, "y").locator(tid("option-input")).isDisabled(), true, "y locked at maxItems");
    await submit(card);
  }, accept({ tags: ["z", "x"] })));

test("kind-titled-multi-select", (page) =>
  answered(page, "ask_titled_multi", async (card) => {
    await option(card, "Cheese").locator(tid("option-input")).check();
    await option(card, "Peppers").locator(tid("option-input")).check();
    await submit(card);
  }, accept({ toppings: ["ch", "pe"] })));

// A one-question option form has no Submit: the click on an option is the answer.
test("instant-submit", (page) =>
  answered(page, "ask_boolean", async (card) => {
    assert.equal(await card.locator(tid("submit")).count(), 0, "no Submit button");
    assert.equal(await card.locator(tid("option")).count(), 2, "one button per option");
    await option(card, "false").click();
  }, accept({ agree: false })));

// In the page: whether the top of the card with form id `id` is within its transcript's view.
function cardTopInView(id) {
  const node = document.querySelector(`[data-testid="form-card"][data-form-id="${id}"]`);
  const view = node.closest(`[data-testid="transcript"]`).getBoundingClientRect();
  const top = node.getBoundingClientRect().top;
  return top >= view.top - 1 && top < view.bottom;
}

// A card that comes up is scrolled into view and takes the focus, so a keyboard alone answers it; once it is
// answered the focus goes back to the message box. Call after call, so that the transcript has to scroll. A
// card that comes up while the person is writing a message is scrolled to, and leaves the focus where it is.
test("a-card-takes-the-focus-and-gives-it-back", async (page) => {
  await newSession(page);
  const done = page.locator(`${tid("tool-call")}[data-tool="ask_boolean"][data-state="done"]`);
  for (let i = 1; i <= 6; i++) {
    await callTool(page, SERVER, "ask_boolean");
    const card = await openCard(page);
    await page.waitForFunction(() => document.activeElement?.closest(`[data-testid="form-card"][data-state="open"]`));
    assert.ok(await page.evaluate(cardTopInView, await card.getAttribute("data-form-id")), `call ${i}: the card's top is out of view`);
    await page.keyboard.press("Space");
    await done.nth(i - 1).waitFor();
    assert.deepEqual(await pluginResult(page, "ask_boolean"), accept({ agree: true }), `call ${i}`);
    await page.waitForFunction(() => document.activeElement?.dataset.testid === "message-input");
  }

  // The same session in a second tab calls the tool while the person writes in the first.
  const session = new URL(page.url()).hash;
  await page.locator(tid("message-input")).fill("half a thought");
  const tab = await page.context().newPage();
  try {
    await tab.goto(url);
    await tab.evaluate((hash) => (location.hash = hash), session);
    await tab.locator(`${tid("connection-status")}[data-state="connected"]`).waitFor();
    await callTool(tab, SERVER, "ask_boolean");
    const card = await openCard(page);
    await page.waitForFunction(cardTopInView, await card.getAttribute("data-form-id"));
    assert.equal(await page.evaluate(() => document.activeElement?.dataset.testid), "message-input", "the card took the focus from the message being written");
    await option(await openCard(tab), "false").click();
    await done.nth(6).waitFor();
    assert.deepEqual(await pluginResult(page, "ask_boolean"), accept({ agree: false }));
  } finally {
    await tab.close();
  }
});

// The 10-field form: every field changed from its default, then Submit.
test("multi-question-submit", async (page) => {
  const card = await answered(page, "ask_form", async (card) => {
    await typeInto(card, "name", "Grace");
    await typeInto(card, "email", "grace@example.com");
    await typeInto(card, "age", "85");
    await typeInto(card, "score", "9.5");
    await option(question(card, "subscribe"), "true").locator(tid("option-input")).check();
    await option(question(card, "color"), "red").locator(tid("option-input")).check();
    await option(question(card, "size"), "Small").locator(tid("option-input")).check();
    await option(question(card, "legacy"), "Alpha").locator(tid("option-input")).check();
    await option(question(card, "tags"), "x").locator(tid("option-input")).uncheck();
    await option(question(card, "tags"), "y").locator(tid("option-input")).check();
    await option(question(card, "tags"), "z").locator(tid("option-input")).check();
    await option(question(card, "toppings"), "Olives").locator(tid("option-input")).check();
    await submit(card);
  }, accept({
    name: "Grace", email: "grace@example.com", age: 85, score: 9.5, subscribe: true,
    color: "red", size: "s", legacy: "a", tags: ["y", "z"], toppings: ["ol"],
  }));
  assert.equal((await outcome(card)).action, "accept");
  assert.equal(await card.locator(`${tid("accepted-value")}[data-key="tags"]`).textContent(), "y, z");
});

// Multi-question form with only the required answer without a default typed: the defaults fill the rest, and
// `legacy`, an option question without a default, goes out on its first option, where its radio group starts.
test("multi-question-defaults", (page) =>
  answered(page, "ask_form", async (card) => {
    await typeInto(card, "email", "ada@example.com");
    await submit(card);
  }, accept({
    name: "Ada", email: "ada@example.com", age: 36, score: 7.5, subscribe: false,
    color: "green", size: "m", legacy: "a", tags: ["x"],
  })));

test("decline", async (page) => {
  const card = await answered(page, "ask_enum", (card) => card.locator(tid("decline")).click(), { action: "decline" });
  assert.equal((await outcome(card)).action, "decline");
});

test("cancel", async (page) => {
  const card = await answered(page, "ask_form", (card) => card.locator(tid("cancel")).click(), { action: "cancel" });
  assert.equal((await outcome(card)).action, "cancel");
});

// Without a model a message is only recorded, and it cancels the open form as in a chat.
test("new-message-cancels-card", async (page) => {
  const card = await answered(page, "ask_enum", async () => {
    await page.locator(tid("message-input")).fill("never mind");
    await page.locator(tid("message-input")).press("Enter");
  }, { action: "cancel" });
  const { action, reason } = await outcome(card);
  assert.deepEqual([action, reason], ["cancel", "new-message"]);
  assert.equal(await page.locator(`${tid("message")}[data-role="user"] ${tid("message-text")}`).textContent(), "never mind");
});

// crash_mid_form exits 200 ms after its form came up: the card ends as cancelled, plugin gone.
test("plugin-killed-with-card-open", async (page) => {
  await newSession(page);
  await callTool(page, SERVER, "crash_mid_form");
  const card = page.locator(tid("form-card")).last();
  await card.waitFor();
  const { action, reason } = await outcome(card);
  assert.deepEqual([action, reason], ["cancel", "plugin-gone"]);
  assert.match(await card.locator(tid("outcome-text")).textContent(), /plugin went away/);
  const call = page.locator(`${tid("tool-call")}[data-tool="crash_mid_form"][data-state="error"]`);
  await call.waitFor();
  // Its buttons are gone: nothing can be sent for it any more.
  assert.equal(await card.locator("button").count(), 0);
});

// Markup typed by the person stays text: in the message, in a text answer, in the accepted values and in the
// tool result echoed from the plugin. No element is made from it and no handler runs.
test("markup-typed-by-the-person-stays-inert", async (page) => {
  const markup = `<img src=x onerror="window.__formworkPwned=1"><b>bold</b><script>window.__formworkPwned=2</script>`;
  await newSession(page);
  await page.locator(tid("message-input")).fill(markup);
  await page.locator(tid("message-input")).press("Enter");
  await page.locator(`${tid("message")}[data-role="user"]`).waitFor();
  assert.equal(await page.locator(`${tid("message")} ${tid("message-text")}`).textContent(), markup);
  const name = "<b>x</b><i>y</i>"; // within the 20 code points of `name`
  await callTool(page, SERVER, "ask_form");
  const card = await openCard(page);
  await typeInto(card, "name", name);
  await typeInto(card, "email", "ada@example.com");
  await submit(card);
  const result = await pluginResult(page, "ask_form");
  assert.equal(result.content.name, name);
  assert.equal(await card.locator(`${tid("accepted-value")}[data-key="name"]`).textContent(), name);
  const transcript = page.locator(tid("transcript"));
  assert.equal(await transcript.locator("img, b, i, script").count(), 0, "no element made from markup");
  assert.equal(await page.evaluate(() => window.__formworkPwned), undefined);
});

// Every text the plugin sends is HTML (tests/browser/markup_plugin.mjs, server `markup`): the tool's title and
// description, the form's message, question titles and descriptions, option labels, a text default and the tool
// result. Each shows as the very text, and none becomes an element or runs.
const markup = (tag) => `<img src=x onerror="window.__formworkPwned='${tag}'"><b>${tag}</b><script>window.__formworkPwned='${tag}'</script>`;

test("markup-from-the-plugin-stays-inert", async (page) => {
  await newSession(page);
  const entry = page.locator(`${tid("palette-tool")}[data-server="markup"][data-tool="ask_markup"]`);
  assert.equal(await entry.locator(".palette-tool-name").textContent(), markup("tool-title"));
  assert.equal(await entry.locator(".palette-tool-description").textContent(), markup("tool-description"));
  await callTool(page, "markup", "ask_markup");
  const card = await openCard(page);
  assert.equal(await card.locator(tid("card-header")).textContent(), markup("form-message"));
  const note = question(card, "note");
  assert.equal(await note.locator(tid("question-header")).textContent(), markup("note-title"));
  assert.equal(await note.locator(tid("question-text")).textContent(), markup("note-description"));
  assert.equal(await note.locator(tid("question-input")).inputValue(), markup("note-default"));
  const pick = question(card, "pick");
  assert.equal(await pick.locator(tid("question-header")).textContent(), markup("pick-title"));
  assert.equal(await pick.locator(tid("question-text")).textContent(), markup("pick-description"));
  assert.equal(await pick.locator(`${tid("option")} .option-label`).nth(1).textContent(), markup("option-two"));
  await pick.locator(`${tid("option")} ${tid("option-input")}`).nth(1).check();
  await submit(card);
  assert.deepEqual(await pluginResult(page, "ask_markup"), accept({ note: markup("note-default"), pick: "two" }));
  const call = page.locator(`${tid("tool-call")}[data-tool="ask_markup"]`);
  assert.equal(await call.locator(tid("result-text")).nth(1).textContent(), markup("result-text"));
  assert.equal(await card.locator(`${tid("accepted-value")}[data-key="pick"]`).textContent(), markup("option-two"));
  for (const area of ["transcript", "tool-palette"]) {
    assert.equal(await page.locator(tid(area)).locator("img, b, script").count(), 0, `no element made from markup in ${area}`);
  }
  assert.equal(await page.evaluate(() => window.__formworkPwned), undefined);
});

// An answer the database refuses (crates/cli/tests/browser.rs makes it refuse the nickname `no-store`): the card
// that showed it accepted turns into a cancel and says why, a diagnostic quotes the database, and the plugin got
// `cancel`, never the content.
test("answer-not-stored", async (page) => {
  const card = await answered(page, "ask_string", async (card) => {
    await typeInto(card, "nickname", "no-store");
    await submit(card);
  }, { action: "cancel" });
  assert.deepEqual(await outcome(card), { action: "cancel", reason: "not-stored", text: "Cancelled: the answer could not be stored" });
  assert.equal(await card.locator(tid("accepted-values")).count(), 0, "no accepted values left on the card");
  const diagnostic = page.locator(`${tid("diagnostic")}[data-code="answer-not-stored"]`);
  const formId = await card.getAttribute("data-form-id");
  assert.equal(
    await diagnostic.textContent(),
    `answer-not-stored the answer to form ${formId} could not be stored, so the plugin was told \`cancel\`: database error: the database refused this answer`,
  );
});

// A reload redraws the transcript from the server and the card that still waits can be answered.
test("reload-restores-transcript-and-pending-card", async (page) => {
  await newSession(page);
  await page.locator(tid("message-input")).fill("before the form");
  await page.locator(tid("message-input")).press("Enter");
  await page.locator(`${tid("message")}[data-role="user"]`).waitFor();
  await callTool(page, SERVER, "ask_titled");
  await openCard(page);
  const address = page.url();
  await page.reload();
  assert.equal(page.url(), address);
  await page.locator(`${tid("connection-status")}[data-state="connected"]`).waitFor();
  assert.equal(await page.locator(`${tid("message")} ${tid("message-text")}`).textContent(), "before the form");
  assert.equal(await page.locator(`${tid("tool-call")}[data-tool="ask_titled"]`).getAttribute("data-state"), "running");
  const card = await openCard(page);
  assert.equal(await card.locator(tid("card-header")).textContent(), "Please give size");
  await option(card, "Medium").click();
  assert.deepEqual(await pluginResult(page, "ask_titled"), accept({ size: "m" }));
});

// ---- the credential stays with the workbench (docs/workbench.md, "The lock") ----

// Another local server: listens on 127.0.0.1 (and ::1 when it can, so `localhost` reaches it either way) and
// records every request it gets, with all its headers.
async function recorder() {
  const seen = [];
  const handler = (request, response) => {
    seen.push({ method: request.method, url: request.url, headers: request.headers });
    response.writeHead(200, { "content-type": "text/plain" });
    response.end("recorded\n");
  };
  const v4 = http.createServer(handler);
  await new Promise((resolve, reject) => {
    v4.once("error", reject);
    v4.listen(0, "127.0.0.1", resolve);
  });
  const { port } = v4.address();
  const v6 = http.createServer(handler);
  const hasV6 = await new Promise((resolve) => {
    v6.once("error", () => resolve(false));
    v6.listen(port, "::1", () => resolve(true));
  });
  const close = () => {
    for (const server of hasV6 ? [v4, v6] : [v4]) {
      server.closeAllConnections();
      server.close();
    }
  };
  return { port, seen, close };
}

// Waits until the recorder has seen a request for `path` on `host`.
async function until(seen, host, path) {
  const t0 = Date.now();
  while (!seen.some((r) => r.headers.host === host && r.url === path)) {
    if (Date.now() - t0 > WAIT) throw new Error(`no request for ${host}${path}; seen: ${JSON.stringify(seen)}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

// With the workbench open and connected (this page, and a second tab opened from the printed URL), a visit to
// another port of 127.0.0.1 or localhost carries no cookie and no token: typed into the address bar, or opened
// from a URL card. The card warns that its link is plain http to this computer.
test("credential-reaches-no-other-local-server", async (page) => {
  assert.ok(token.length >= 32, `no token in ${url}`);
  const other = await recorder();
  const context = page.context();
  try {
    await newSession(page);
    assert.ok(!page.url().includes(token), `the token stays in the address bar: ${page.url()}`);
    const tab = await context.newPage();
    await tab.goto(url);
    await tab.locator(`${tid("connection-status")}[data-state="connected"]`).waitFor();
    assert.ok(!tab.url().includes(token), `the token stays in the address bar: ${tab.url()}`);
    for (const host of [`127.0.0.1:${other.port}`, `localhost:${other.port}`]) {
      await tab.goto(`http://${host}/typed`);
      await until(other.seen, host, "/typed");
    }
    await tab.close();

    // A plugin's link to that server, opened from its card.
    const link = `http://127.0.0.1:${other.port}/from-card?state=1`;
    await page.locator(`${tid("palette-tool")}[data-server="${SERVER}"][data-tool="ask_url_to"]`).click();
    const panel = page.locator(`${tid("palette-panel")}[data-tool="ask_url_to"]`);
    await panel.locator(`${tid("question")}[data-question-id="url"] ${tid("question-input")}`).fill(link);
    await page.locator(tid("palette-call")).click();
    const card = await openCard(page);
    assert.equal(await card.locator(tid("card-url")).textContent(), link);
    assert.equal(await card.locator(tid("card-domain")).textContent(), "127.0.0.1");
    const warnings = card.locator(tid("url-warning"));
    assert.deepEqual(
      await warnings.evaluateAll((nodes) => nodes.map((n) => [n.dataset.code, n.textContent])),
      [
        ["plain_http", "Warning: The link uses plain http: what you see and type there is not encrypted."],
        ["loopback", "Warning: The link leads to this computer (a loopback address), not to a site on the internet."],
      ],
    );
    const popup = context.waitForEvent("page");
    await card.locator(tid("open-url")).click();
    await until(other.seen, `127.0.0.1:${other.port}`, "/from-card?state=1");
    await (await popup).close();
    assert.deepEqual(await pluginResult(page, "ask_url_to"), { action: "accept" });

    for (const request of other.seen) {
      const where = `${request.method} ${request.headers.host}${request.url}`;
      assert.equal(request.headers.cookie, undefined, `${where} carried a cookie: ${request.headers.cookie}`);
      assert.equal(request.headers.authorization, undefined, `${where} carried ${request.headers.authorization}`);
      assert.ok(!JSON.stringify(request).includes(token), `${where} carried the token: ${JSON.stringify(request)}`);
    }
    assert.deepEqual(await context.cookies(), [], "the workbench keeps no cookie");
  } finally {
    other.close();
  }
});

// A page opened without the token (or with a stale one) says where to get it, and reaches nothing; the printed
// URL opened in that tab then (a jump within the page, no reload) lets it in.
test("no-token-shows-the-way", async (page) => {
  const { origin } = new URL(url);
  for (const address of [`${origin}/`, `${origin}/#token=${"0".repeat(64)}`]) {
    const tab = await page.context().newPage();
    try {
      await tab.goto(address);
      await tab.locator(`${tid("connection-status")}[data-state="locked"]`).waitFor();
      assert.equal(await tab.locator(tid("locked")).isVisible(), true, address);
      assert.match(await tab.locator(tid("locked")).textContent(), /Open the URL that formwork serve printed/);
      assert.equal(await tab.locator(tid("session-item")).count(), 0, address);
      await tab.goto(url);
      await tab.locator(`${tid("connection-status")}[data-state="connected"]`).waitFor();
      assert.equal(await tab.locator(tid("locked")).isHidden(), true, address);
      assert.ok((await tab.locator(tid("session-item")).count()) > 0, address);
    } finally {
      await tab.close();
    }
  }
});

// ---- a plugin's pattern never runs in the page ----

// `^(a+)+$` on forty a's and a `!` takes a backtracking engine (the browser's RegExp) longer than anyone waits.
// The page shows the pattern as a hint, the host checks it on Submit in linear time and its verdict lands under the
// field, and Cancel works at once.
test("hostile-pattern-never-runs-in-the-page", async (page) => {
  await newSession(page);
  await callTool(page, SERVER, "ask_hostile_pattern");
  const card = await openCard(page);
  const word = question(card, "word");
  assert.equal(await word.locator(tid("question-hint")).textContent(), "Must match ^(a+)+$");
  await typeInto(card, "word", `${"a".repeat(40)}!`);
  await submit(card);
  const error = word.locator(tid("field-error"));
  await error.waitFor({ timeout: 2000 });
  assert.equal(await error.textContent(), "must match the pattern `^(a+)+$`");
  const t0 = Date.now();
  await card.locator(tid("cancel")).click({ timeout: 2000 });
  await card.locator(tid("outcome")).waitFor({ timeout: 2000 });
  assert.ok(Date.now() - t0 < 2000, `Cancel took ${Date.now() - t0} ms`);
  assert.equal((await outcome(card)).action, "cancel");
  assert.deepEqual(await pluginResult(page, "ask_hostile_pattern"), { action: "cancel" });
});

// A host error for a key that holds ": " lands under that field, not split at the separator.
test("an-error-lands-under-its-field-whatever-the-key", async (page) => {
  await newSession(page);
  await callTool(page, SERVER, "ask_colon_key");
  const card = await openCard(page);
  await typeInto(card, "code: id", "12a");
  await submit(card);
  const error = question(card, "code: id").locator(tid("field-error"));
  await error.waitFor();
  assert.equal(await error.textContent(), "must match the pattern `^[0-9]+$`");
  // Nothing was left over for the card itself.
  assert.equal(await card.locator(tid("card-error")).textContent(), "Some answers need fixing before they can be sent.");
  await typeInto(card, "code: id", "12");
  await submit(card);
  assert.equal((await outcome(card)).action, "accept");
  assert.deepEqual(await pluginResult(page, "ask_colon_key"), { action: "accept", content: { "code: id": "12" } });
});

// A form that asks for a password says plainly that it asks for a secret, and marks the field.
test("a-form-asking-for-a-secret-warns", async (page) => {
  await newSession(page);
  await callTool(page, SERVER, "ask_password");
  const card = await openCard(page);
  const warning = card.locator(tid("secret-warning"));
  assert.match(await warning.textContent(), /^Warning: this plugin asks for something secret \(Password\)\./);
  assert.equal(await question(card, "password").locator(tid("secret-mark")).count(), 1);
  assert.equal(await question(card, "user").locator(tid("secret-mark")).count(), 0);
  await card.locator(tid("cancel")).click();
  assert.equal((await outcome(card)).action, "cancel");
});

// ---- the run ----

// OpenAI's form extension (the server runs with features.openai_elicitation): option images, a text list with
// suggestions, and a resource picker answered with a file the person adds, which the plugin gets as the file://
// URI of the host's copy.
test("openai-picker-images-list-upload", async (page) => {
  await newSession(page);
  await callTool(page, SERVER, "ask_openai_part");
  const card = await openCard(page);
  const part = question(card, "part");
  assert.equal(await part.getAttribute("data-input"), "resource");
  const images = part.locator(tid("option-image"));
  assert.equal(await images.count(), 2, "every option has an image slot");
  assert.equal(await images.nth(0).evaluate((node) => node.tagName), "IMG");
  assert.equal(await images.nth(0).evaluate((node) => node.src), "data:image/gif;base64,R0lGODlhAQABAAAAACw=");
  assert.equal(await images.nth(1).evaluate((node) => node.tagName), "SPAN", "a placeholder where there is none");
  assert.equal(await option(part, "M6 hex bolt").locator(".option-description").textContent(), "A fastener for the main joint");
  const list = question(card, "accessories");
  await list.locator(`${tid("suggestion")}[data-label="Washer"]`).click();
  await list.locator(tid("add-item")).click();
  await list.locator(tid("item-input")).nth(1).pressSequentially("custom-gasket");
  const chooser = part.locator(tid("file-input"));
  assert.equal(await chooser.getAttribute("accept"), ".stl");
  await chooser.setInputFiles({ name: "my bolt.stl", mimeType: "model/stl", buffer: Buffer.from("solid bolt") });
  await option(part, "1-my_bolt.stl").waitFor();
  assert.equal(await option(part, "1-my_bolt.stl").locator(tid("option-input")).isChecked(), true);
  await submit(card);
  const result = await pluginResult(page, "ask_openai_part");
  assert.equal(result.action, "accept");
  assert.deepEqual(result.content.accessories, ["washer", "custom-gasket"]);
  assert.match(result.content.part, /^file:\/\/\/.*\/uploads\/[^/]+\/1-my_bolt\.stl$/);
  assert.equal(readFileSync(fileURLToPath(result.content.part), "utf8"), "solid bolt");
});

// A remote server behind OAuth (the TS SDK's example with its demo authorization server, as `demo`): the palette
// offers to sign in, the session shows the "Sign in to demo" card, its link opens the authorization page in a new
// tab, the redirect comes back to formwork, and the palette lists the server's tools, which then run.
test("sign-in-card", async (page) => {
  await newSession(page);
  const demo = page.locator(`${tid("palette-server")}[data-server="demo"]`);
  assert.match(await demo.locator(tid("palette-server-error")).textContent(), /demo needs you to sign in/);
  await demo.locator(tid("palette-sign-in")).click();
  const card = await openCard(page);
  assert.match(await card.textContent(), /Sign in to demo\. It asks for your authorization/);
  const popup = page.context().waitForEvent("page");
  await card.locator(tid("open-url")).click();
  const tab = await popup;
  await tab.waitForURL(/^http:\/\/127\.0\.0\.1:\d+\/callback\?/);
  await tab.locator("text=Signed in.").waitFor();
  await tab.close();
  assert.equal((await outcome(card)).action, "accept");
  await card.locator(`${tid("outcome")}[data-completion="done"]`).waitFor();
  await page.locator(`${tid("palette-tool")}[data-server="demo"][data-tool="greet"]`).click();
  const panel = page.locator(`${tid("palette-panel")}[data-tool="greet"]`);
  await panel.locator(`${tid("question")}[data-question-id="name"] ${tid("question-input")}`).fill("Ada");
  await page.locator(tid("palette-call")).click();
  const call = page.locator(`${tid("tool-call")}[data-tool="greet"][data-state="done"]`).last();
  await call.waitFor();
  assert.equal(await call.locator(tid("result-text")).first().textContent(), "Hello, Ada!");
});

// Delete session removes the session on screen (after the person confirms) and shows another.
test("delete-session", async (page) => {
  await newSession(page);
  const id = decodeURIComponent(page.url().split("#/sessions/")[1]);
  await page.locator(tid("message-input")).fill("to be deleted");
  await page.locator(tid("message-input")).press("Enter");
  await page.locator(`${tid("session-item")}[data-session-id="${id}"]`).waitFor();
  page.once("dialog", (dialog) => dialog.accept());
  await page.locator(tid("delete-session")).click();
  await page.waitForURL((u) => /#\/sessions\//.test(u.toString()) && !u.toString().endsWith(encodeURIComponent(id)));
  await page.locator(`${tid("connection-status")}[data-state="connected"]`).waitFor();
  assert.equal(await page.locator(`${tid("session-item")}[data-session-id="${id}"]`).count(), 0);
  assert.equal(await page.locator(`${tid("message-text")}`).filter({ hasText: "to be deleted" }).count(), 0);
});

// The session list says how many cards of the session on screen await an answer, as they open and end (counted by
// the page, as the host counts them).
test("the-list-counts-open-cards", async (page) => {
  await newSession(page);
  const id = decodeURIComponent(page.url().split("#/sessions/")[1]);
  const badge = page.locator(`${tid("session-item")}[data-session-id="${id}"] ${tid("session-open")}`);
  await callTool(page, SERVER, "ask_enum");
  const card = await openCard(page);
  await badge.filter({ hasText: /^1 open$/ }).waitFor();
  await card.locator(tid("decline")).click();
  await pluginResult(page, "ask_enum");
  await badge.waitFor({ state: "detached" });
  const listed = await (
    await page.request.get(new URL("/api/sessions", url).toString(), { headers: { Authorization: `Bearer ${token}` } })
  ).json();
  assert.equal(listed.sessions.find((session) => session.id === id)?.open, 0, "the host counts none open either");
});

// A plugin that pushes its forms (the Python SDK's `ctx.elicit`, server `py`) fails on 2026-07-28: the call's entry
// names the fix and offers the older version; one click writes it into the config and runs the call again, whose
// form is then a card.
test("a-pushed-form-gets-the-older-protocol-offer", async (page) => {
  await newSession(page);
  await callTool(page, "py", "ask");
  const failed = page.locator(`${tid("tool-call")}[data-tool="ask"]`).first();
  await failed.locator(':scope[data-state="error"]').waitFor();
  assert.match(
    await failed.locator(tid("tool-error")).textContent(),
    /; `py` pushes its forms \(elicitation\/create\), which 2026-07-28 does not carry: speak 2025-11-25 to it \(protocol_version = "2025-11-25" in \[mcp_servers\.py\], or --protocol 2025-11-25\)$/,
  );
  const offer = failed.locator(tid("older-protocol-offer"));
  assert.equal(await offer.getAttribute("data-version"), "2025-11-25");
  await offer.locator(tid("use-older-protocol")).click();
  const card = await openCard(page);
  await submit(card);
  const again = page.locator(`${tid("tool-call")}[data-tool="ask"]`).last();
  await again.locator(':scope[data-state="done"]').waitFor();
  assert.equal(
    await again.locator(tid("result-text")).first().textContent(),
    'action=accept data={"name":"Ada","age":36,"subscribe":false,"color":"green"}',
  );
  await page.locator(`${tid("diagnostic")}[data-code="protocol-version-written"]`).waitFor();
});

async function main() {
  const { browser, context } = await launch({ timezoneId: "Europe/Berlin", locale: "en-GB" }, WAIT);
  const page = await context.newPage();
  const pageErrors = [];
  page.on("pageerror", (error) => pageErrors.push(error.message));
  await page.goto(url);
  await page.locator(`${tid("palette-tool")}[data-server="${SERVER}"]`).first().waitFor();

  let passed = 0;
  let failed = 0;
  const started = Date.now();
  for (const { name, body } of cases) {
    if (filter && !name.includes(filter)) continue;
    const t0 = Date.now();
    pageErrors.length = 0;
    try {
      await body(page);
      assert.deepEqual(pageErrors, [], "errors thrown in the page");
      passed += 1;
      console.log(`ok ${name} (${Date.now() - t0} ms)`);
    } catch (error) {
      failed += 1;
      console.log(`FAIL ${name}: ${String(error?.message ?? error).split("\n").slice(0, 40).join("\n    ")}`);
      try {
        mkdirSync(screenshots, { recursive: true });
        const file = path.join(screenshots, `${name}.png`);
        await page.screenshot({ path: file, fullPage: true });
        console.log(`    screenshot: ${file}`);
      } catch (shotError) {
        console.log(`    no screenshot: ${shotError.message}`);
      }
    }
  }
  await browser.close();
  console.log(`${passed} passed, ${failed} failed (${((Date.now() - started) / 1000).toFixed(1)} s)`);
  return failed === 0 && passed > 0;
}

exitWhenDone(main);
