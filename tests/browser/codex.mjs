// Browser tests of the Codex runtime in the workbench: `formwork serve --runtime codex`, where real Codex
// (`codex app-server`, the pinned @openai/codex 0.171.0) runs the conversation against the simulated Responses
// model (tests/peers/sim_provider.py, the one hand-written fake) and is the MCP client of the TS SDK plugin, server
// `ts`; formwork turns Codex's `mcpServer/elicitation/request` into the page's form cards. Started by
// crates/cli/tests/browser.rs (`codex_runtime_in_headless_chromium`), which writes the model's script (one rule per
// case, keyed by the message: call `mcp__ts` `ask_enum` (or the built-in demo's `deploy`), then echo the tool's
// output) and sets FORMWORK_CODEX_HOME:
//
//   node tests/browser/codex.mjs <URL printed by formwork serve> [case-name-filter]
//
// Each case sends a message in a new session; the model calls `ask_enum`, whose card comes up under the call. The
// card is answered, declined or cancelled on the page, ended by Stop or a new message, or answered by another
// app-server client (tests/peers/codex_other_client.py, on Codex's socket in FORMWORK_CODEX_HOME). The last case
// runs the built-in demo plugin's `deploy` (two cards) through Codex. Prints
// `ok <case>` / `FAIL <case>: <why>` lines and `N passed, M failed`, like run.mjs.

import { execFile } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import assert from "node:assert/strict";

import { runCases, turnOver } from "./conversation.mjs";
import { newSession, say, tid } from "./lib.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const [url, filter] = process.argv.slice(2);
const codexHome = process.env.FORMWORK_CODEX_HOME;

// The call of `ask_enum` and its open form card, which comes after the call in the transcript.
async function askEnum(page) {
  const call = page.locator(`${tid("tool-call")}[data-server="ts"][data-tool="ask_enum"]`);
  await call.waitFor();
  const open = page.locator(`${tid("form-card")}[data-state="open"]`);
  await open.waitFor();
  // By its id, so that the locator still finds it once it is resolved.
  const id = await open.getAttribute("data-form-id");
  const card = page.locator(`${tid("form-card")}[data-form-id="${id}"]`);
  assert.equal(await card.locator(tid("card-source")).textContent(), "ts asks");
  assert.equal(await card.locator(tid("card-header")).textContent(), "Please give color");
  assert.deepEqual(await card.locator(tid("option")).evaluateAll((nodes) => nodes.map((n) => n.dataset.label)), [
    "red",
    "green",
    "blue",
  ]);
  const after = await call.evaluate(
    (node, selector) => {
      const cardNode = document.querySelector(selector);
      return Boolean(node.compareDocumentPosition(cardNode) & Node.DOCUMENT_POSITION_FOLLOWING);
    },
    `${tid("form-card")}[data-form-id="${id}"]`,
  );
  assert.ok(after, "the card comes under its tool call");
  assert.equal(await call.getAttribute("data-state"), "running");
  return { call, card };
}

// The card's outcome once it has ended: [action, reason, text].
async function outcomeOf(card) {
  await card.locator(`${tid("outcome")}[data-action]`).waitFor();
  assert.equal(await card.getAttribute("data-state"), "resolved");
  const outcome = card.locator(tid("outcome"));
  return [
    await outcome.getAttribute("data-action"),
    await outcome.getAttribute("data-reason"),
    await outcome.locator(tid("outcome-text")).textContent(),
  ];
}

// The call's state and result text once it has finished.
async function resultOf(call) {
  await call.locator(`${tid("tool-result")}, ${tid("tool-error")}`).waitFor();
  const error = call.locator(tid("tool-error"));
  if (await error.count()) return [await call.getAttribute("data-state"), `error: ${await error.textContent()}`];
  return [await call.getAttribute("data-state"), await call.locator(tid("result-text")).textContent()];
}

// The assistant's last whole message (not one still streaming), once one contains `text`.
async function answerWith(page, text) {
  const selector = `${tid("message")}[data-role="assistant"]:not([data-streaming])`;
  await page.waitForFunction(
    ([selector, want]) => {
      const all = document.querySelectorAll(selector);
      return all.length > 0 && all[all.length - 1].querySelector('[data-testid="message-text"]').textContent.includes(want);
    },
    [selector, text],
  );
  return page.locator(`${selector} ${tid("message-text")}`).last().textContent();
}

// The assistant's final message: Codex hands the model the tool's output after a line of its own
// ("Wall time: ..."), and the simulated model's `echo` step repeats it after "seen: ".
async function echoed(page, result) {
  const text = await answerWith(page, result);
  assert.ok(text.startsWith("seen: ") && text.endsWith(result), `the model's answer: ${JSON.stringify(text)}`);
}

const result = (answer) => `result: ${JSON.stringify(answer)}`;
const cases = [];
const test = (name, body) => cases.push({ name, body });

test("answer", async (page) => {
  await newSession(page);
  await say(page, "answer test");
  const { call, card } = await askEnum(page);
  await card.locator(`${tid("option")}[data-label="green"]`).click();
  assert.deepEqual(await outcomeOf(card), ["accept", null, "Accepted"]);
  assert.equal(await card.locator(`${tid("accepted-value")}[data-key="color"]`).textContent(), "green");
  const picked = result({ action: "accept", content: { color: "green" } });
  assert.deepEqual(await resultOf(call), ["done", picked]);
  await echoed(page, picked);
  await turnOver(page);
  assert.equal(await page.locator(tid("turn-ended")).count(), 0, "the turn completed");
  assert.equal(await page.locator(`${tid("message")}[data-streaming]`).count(), 0, "no bubble left streaming");
  assert.equal(await page.locator(tid("tool-call")).count(), 1);
});

for (const [name, button, action] of [
  ["decline", "decline", "Declined"],
  ["cancel", "cancel", "Cancelled"],
]) {
  test(name, async (page) => {
    await newSession(page);
    await say(page, `${name} test`);
    const { call, card } = await askEnum(page);
    await card.locator(tid(button)).click();
    assert.deepEqual(await outcomeOf(card), [name, null, action]);
    const answered = result({ action: name });
    assert.deepEqual(await resultOf(call), ["done", answered]);
    await echoed(page, answered);
    await turnOver(page);
    assert.equal(await page.locator(tid("turn-ended")).count(), 0, "the turn completed");
  });
}

// Stop interrupts Codex's turn; the open card ends cancelled, and the model is not asked again.
test("stop", async (page) => {
  await newSession(page);
  await say(page, "stop test");
  const { call, card } = await askEnum(page);
  await page.locator(tid("stop-turn")).click();
  assert.deepEqual(await outcomeOf(card), ["cancel", "stopped", "Cancelled: the turn was stopped"]);
  await page.locator(`${tid("turn-ended")}[data-reason="stopped"]`).waitFor();
  await turnOver(page);
  assert.deepEqual(await resultOf(call), ["error", "error: the turn was stopped"], "the call ends with its turn");
  assert.equal(await page.locator(`${tid("message")}[data-role="assistant"]`).count(), 0, "no answer from the model");
});

// A new message interrupts the turn (its card ends cancelled) and runs a turn of its own.
test("new-message", async (page) => {
  await newSession(page);
  await say(page, "new message test");
  const { call, card } = await askEnum(page);
  await say(page, "never mind");
  assert.deepEqual(await outcomeOf(card), ["cancel", "new-message", "Cancelled: a new message was sent"]);
  await page.locator(`${tid("turn-ended")}[data-reason="stopped"]`).waitFor();
  assert.equal(await answerWith(page, "Fine."), "Fine.");
  await turnOver(page);
  assert.deepEqual(await resultOf(call), ["error", "error: the turn was stopped"], "the call ends with its turn");
  assert.equal(await page.locator(tid("form-card")).count(), 1, "the new message asked for no form");
});

// Another app-server client joins formwork's thread on Codex's socket and answers the form first: the page's card
// closes, and the tool gets the other client's answer.
test("answered-elsewhere", async (page) => {
  await newSession(page);
  await say(page, "elsewhere test");
  const { call, card } = await askEnum(page);
  const python = path.join(process.env.FORMWORK_PEERS, "venv", "bin", "python");
  const client = path.resolve(here, "../peers/codex_other_client.py");
  const { stdout } = await promisify(execFile)(
    python,
    [client, path.join(codexHome, "app-server.sock"), JSON.stringify({ color: "blue" })],
    { timeout: 40_000 },
  );
  assert.match(stdout, /^answered \S+ ts: Please give color\n$/);
  assert.deepEqual(await outcomeOf(card), ["cancel", "answered-elsewhere", "Cancelled: it was answered in another client"]);
  const theirs = result({ action: "accept", content: { color: "blue" } });
  assert.deepEqual(await resultOf(call), ["done", theirs]);
  await echoed(page, theirs);
  await turnOver(page);
  assert.equal(await page.locator(tid("turn-ended")).count(), 0, "the turn completed");
});

// The built-in demo plugin's `deploy` through Codex: its plan card (a question per field, in the order Codex
// sorted them into), then the production confirmation; the tool's result comes back to the model. Last, so that
// the other client of `answered-elsewhere` meets no other session's open form.
test("demo-deploy", async (page) => {
  await newSession(page);
  await say(page, "deploy test");
  const call = page.locator(`${tid("tool-call")}[data-server="demo"][data-tool="deploy"]`);
  await call.waitFor();
  const open = () => page.locator(`${tid("form-card")}[data-state="open"]`);
  await open().waitFor();
  let card = page.locator(`${tid("form-card")}[data-form-id="${await open().getAttribute("data-form-id")}"]`);
  assert.equal(await card.locator(tid("card-header")).textContent(), "How should `web` be deployed?");
  await card.locator(`${tid("question")}[data-question-id="target"] ${tid("option")}[data-label="Production"]`).click();
  const replicas = card.locator(`${tid("question")}[data-question-id="replicas"] ${tid("question-input")}`);
  await replicas.fill("3");
  await card.locator(tid("submit")).click();
  assert.equal((await outcomeOf(card))[0], "accept");
  await page.waitForFunction(
    (selector) => document.querySelectorAll(selector).length === 1,
    `${tid("form-card")}[data-state="open"]`,
  );
  card = page.locator(`${tid("form-card")}[data-form-id="${await open().getAttribute("data-form-id")}"]`);
  assert.equal(await card.locator(tid("card-header")).textContent(), "Deploy `web` to production now?");
  await card.locator(`${tid("option")}[data-label="true"]`).click();
  assert.equal((await outcomeOf(card))[0], "accept");
  const [state, text] = await resultOf(call);
  assert.equal(state, "done");
  assert.ok(
    text.startsWith("Deployed web to production with 3 replica(s); notified: email; note: none."),
    `the tool's result: ${text}`,
  );
  await answerWith(page, "Deployed web to production with 3 replica(s)");
  await turnOver(page);
  assert.equal(await page.locator(tid("turn-ended")).count(), 0, "the turn completed");
});

runCases({
  url,
  filter,
  cases,
  prefix: "codex",
  wait: 20_000,
  async ready(page) {
    assert.ok(codexHome, "FORMWORK_CODEX_HOME is not set");
    // The page says that Codex runs the conversation, and with which model.
    const hint = page.locator(`${tid("model-hint")}:not([hidden])`);
    await hint.waitFor();
    const said = await hint.textContent();
    assert.ok(said.startsWith("Codex runs the conversation with sim-1 via Sim;"), said);
  },
});
