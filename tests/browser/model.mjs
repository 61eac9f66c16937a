// Browser tests of the model loop in the workbench: `formwork serve --model-provider ...` against the simulated
// provider (tests/peers/sim_provider.py, the one hand-written fake) with the TS SDK plugin as server `ts`.
// Started by crates/cli/tests/browser.rs (`model_loop_in_headless_chromium`), which writes the provider's script:
//
//   node tests/browser/model.mjs <URL printed by formwork serve> [case-name-filter]
//
// A person types a message; the model's text streams into the transcript, its tool call shows with its form card,
// the answer goes to the plugin, the plugin's result back to the model (the simulated model's `echo` step repeats
// what it was given), and the model's final text appears. Prints `ok <case>` / `FAIL <case>: <why>` lines and
// `N passed, M failed`, like run.mjs.

import assert from "node:assert/strict";

import { runCases, turnOver } from "./conversation.mjs";
import { newSession, say, tid } from "./lib.mjs";

const [url, filter] = process.argv.slice(2);

// The open form card of the call of `tool`.
async function cardOf(page, tool) {
  await page.locator(`${tid("tool-call")}[data-server="ts"][data-tool="${tool}"]`).last().waitFor();
  const open = page.locator(`${tid("form-card")}[data-state="open"]`);
  await open.waitFor();
  // By its id, so that the locator still finds it once it is resolved.
  const id = await open.getAttribute("data-form-id");
  return page.locator(`${tid("form-card")}[data-form-id="${id}"]`);
}

// Waits until the assistant's last whole message (not one still streaming) is `text`.
async function answerIs(page, text) {
  const last = page.locator(`${tid("message")}[data-role="assistant"]:not([data-streaming])`).last();
  await page.waitForFunction(
    ([selector, want]) => {
      const all = document.querySelectorAll(selector);
      return all.length > 0 && all[all.length - 1].querySelector('[data-testid="message-text"]').textContent === want;
    },
    [`${tid("message")}[data-role="assistant"]:not([data-streaming])`, text],
  );
  return last;
}

async function diagnostic(page, code) {
  const node = page.locator(`${tid("diagnostic")}[data-code="${code}"]`).last();
  await node.waitFor();
  return (await node.textContent()).slice(code.length + 1);
}

const PICKED = 'result: {"action":"accept","content":{"color":"green"}}';
const cases = [];
const test = (name, body) => cases.push({ name, body });

// The text streams in (a bubble marked streaming, filled word by word), then the call, its card, the answer, and
// the model's final text built from the plugin's result.
test("call-form", async (page) => {
  await newSession(page);
  await say(page, "pick a color");
  const streaming = page.locator(`${tid("message")}[data-streaming="true"] ${tid("message-text")}`);
  await streaming.filter({ hasText: "Let me" }).waitFor();
  const card = await cardOf(page, "ask_enum");
  await card.locator(`${tid("option")}[data-label="green"]`).click();
  await answerIs(page, `seen: ${PICKED}`);
  await turnOver(page);
  const texts = await page.locator(`${tid("message")}[data-role="assistant"] ${tid("message-text")}`).allTextContents();
  assert.deepEqual(texts, ["Let me ask the plugin.", `seen: ${PICKED}`]);
  assert.equal(await page.locator(`${tid("message")}[data-streaming]`).count(), 0, "no bubble left streaming");
  const call = page.locator(`${tid("tool-call")}[data-tool="ask_enum"]`);
  assert.equal(await call.getAttribute("data-state"), "done");
});

test("decline-reaches-the-model", async (page) => {
  await newSession(page);
  await say(page, "decline test");
  const card = await cardOf(page, "ask_enum");
  await card.locator(tid("decline")).click();
  await answerIs(page, 'seen: result: {"action":"decline"}');
});

test("cancel-reaches-the-model", async (page) => {
  await newSession(page);
  await say(page, "cancel test");
  const card = await cardOf(page, "ask_enum");
  await card.locator(tid("cancel")).click();
  await answerIs(page, 'seen: result: {"action":"cancel"}');
});

// Stop ends the call and its card; the model is not asked again.
test("stop", async (page) => {
  await newSession(page);
  await say(page, "wait for me");
  const card = await cardOf(page, "ask_then_hold");
  await page.locator(tid("stop-turn")).click();
  await page.locator(`${tid("turn-ended")}[data-reason="stopped"]`).waitFor();
  const outcome = card.locator(tid("outcome"));
  await outcome.waitFor();
  assert.equal(await outcome.getAttribute("data-action"), "cancel");
  assert.equal(await outcome.getAttribute("data-reason"), "stopped");
  assert.equal(await page.locator(`${tid("tool-call")}[data-tool="ask_then_hold"]`).getAttribute("data-state"), "error");
  await turnOver(page);
});

// A new message stops the running turn (its call hears notifications/cancelled) and starts its own.
test("new-message-cancels-the-turn", async (page) => {
  await newSession(page);
  await say(page, "hold on");
  await page.locator(`${tid("tool-call")}[data-tool="hold"][data-state="running"]`).waitFor();
  await say(page, "abort report");
  await page.locator(`${tid("turn-ended")}[data-reason="stopped"]`).waitFor();
  await answerIs(page, 'seen: aborted: "the host no longer waits for it"');
  assert.equal(await page.locator(`${tid("tool-call")}[data-tool="hold"]`).getAttribute("data-state"), "error");
});

test("provider-401", async (page) => {
  await newSession(page);
  await say(page, "refused");
  assert.equal(
    await diagnostic(page, "model-error"),
    "Sim refused the request (HTTP 401: Incorrect API key provided); check the API key in FORMWORK_TEST_SIM_KEY",
  );
  await page.locator(`${tid("turn-ended")}[data-reason="failed"]`).waitFor();
});

test("provider-429", async (page) => {
  await newSession(page);
  await say(page, "limited");
  assert.equal(
    await diagnostic(page, "model-retry"),
    "Sim is limiting requests (HTTP 429: slow down); asking again in 1 s (1 of 1)",
  );
  await answerIs(page, "made it");
  await turnOver(page);
});

// Before a restart: a conversation to continue.
test("restart-before", async (page) => {
  await newSession(page);
  await say(page, "remember apples");
  await answerIs(page, "Noted.");
  await turnOver(page);
});

// After a restart (a new `formwork serve` on the same data directory): the session is there, and the model gets
// the conversation so far with the new message.
test("restart-after", async (page) => {
  await page.locator(`${tid("session-list")} li`, { hasText: "remember apples" }).first().click();
  await page.locator(`${tid("message")}[data-role="assistant"]`, { hasText: "Noted." }).waitFor();
  await say(page, "what did I say");
  await answerIs(page, "you said: remember apples / what did I say");
});

runCases({ url, filter, cases, prefix: "model", wait: 15_000 });
