// Browser tests of replicas: `formwork serve` processes A, B and C on one PostgreSQL database with one token, the
// TS SDK plugin as server `ts` (pushed forms) and the Python SDK plugin as `py` (2026-07-28 rounds, its instances
// sharing one requestState key). Started by crates/cli/tests/browser.rs (`replicas_in_headless_chromium`):
//
//   node tests/browser/replicas.mjs live <URL A> <URL B> <URL C>     (FORMWORK_REPLICA_A_PID: A's process)
//   node tests/browser/replicas.mjs restarted <URL A again> <URL B> <session>
//
// `live` answers on B a card asked on A, then SIGKILLs A while a round's card is open and finishes that call from
// B and C; it prints `session <id>` of that call. `restarted` checks that A, started again, shows that session's
// whole transcript as B does. Prints `ok <case>` / `FAIL <case>: <why>` lines and `N passed, M failed`.

import assert from "node:assert/strict";

import { callTool, exitWhenDone, launch, newSession, runInOrder, tid } from "./lib.mjs";

const [phase, ...args] = process.argv.slice(2);
const WAIT = 30_000;

// A page of the workbench at `url` (which carries the token), connected.
async function workbench(context, url) {
  const page = await context.newPage();
  await page.goto(url);
  await page.locator(`${tid("connection-status")}[data-state="connected"]`).waitFor();
  return page;
}

// Shows `session` on `page`, as following its link does.
async function show(page, session) {
  await page.evaluate((id) => {
    location.hash = `#/sessions/${encodeURIComponent(id)}`;
  }, session);
  await page.waitForURL((u) => u.hash === `#/sessions/${encodeURIComponent(session)}`);
  await page.locator(`${tid("connection-status")}[data-state="connected"]`).waitFor();
}

// The session on screen.
function sessionOf(page) {
  return decodeURIComponent(new URL(page.url()).hash.replace("#/sessions/", ""));
}

// The open card `id` (or the only open one), located by its id so that it is found once resolved too.
async function openCard(page, id) {
  const open = id
    ? page.locator(`${tid("form-card")}[data-form-id="${id}"][data-state="open"]`)
    : page.locator(`${tid("form-card")}[data-state="open"]`);
  await open.waitFor();
  const formId = await open.getAttribute("data-form-id");
  return { id: formId, card: page.locator(`${tid("form-card")}[data-form-id="${formId}"]`) };
}

function option(card, label) {
  return card.locator(`${tid("option")}[data-label="${label}"]`);
}

// The result text of the finished call of `tool`.
async function resultOf(page, tool) {
  const done = page.locator(`${tid("tool-call")}[data-tool="${tool}"][data-state="done"]`).last();
  await done.waitFor();
  return done.locator(tid("result-text")).first().textContent();
}

// What the transcript shows, item by item: each call's tool, state and result, each card's state and outcome.
async function transcript(page) {
  await page.locator(tid("tool-call")).first().waitFor();
  return page.evaluate(() =>
    [...document.querySelectorAll('[data-testid="tool-call"], [data-testid="form-card"]')].map((node) =>
      node.dataset.testid === "tool-call"
        ? `call ${node.dataset.tool} ${node.dataset.state} ${node.querySelector('[data-testid="result-text"]')?.textContent ?? ""}`
        : `card ${node.dataset.formId} ${node.dataset.state} ${node.querySelector('[data-testid="outcome-text"]')?.textContent ?? ""}`,
    ),
  );
}

const cases = [];
const test = (name, body) => cases.push({ name, body });

// The pages by the suffix of their screenshots: `-a`, `-b`, ...
const suffixed = (pages) => Object.fromEntries(Object.entries(pages).map(([replica, page]) => [`-${replica}`, page]));

if (phase === "live") {
  const [aUrl, bUrl, cUrl] = args;
  const aPid = Number(process.env.FORMWORK_REPLICA_A_PID);

  test("a-card-asked-on-a-is-answered-on-b", async ({ a, b }) => {
    await newSession(a);
    await callTool(a, "ts", "ask_enum");
    const onA = await openCard(a);
    await show(b, sessionOf(a));
    const onB = await openCard(b, onA.id);
    await option(onB.card, "green").click();
    const picked = 'result: {"action":"accept","content":{"color":"green"}}';
    assert.equal(await resultOf(a, "ask_enum"), picked);
    assert.equal(await resultOf(b, "ask_enum"), picked);
    await a.locator(`${tid("form-card")}[data-form-id="${onA.id}"][data-state="resolved"]`).waitFor();
  });

  test("a-round-outlives-its-replica", async ({ a, b, c }) => {
    await newSession(a);
    const session = sessionOf(a);
    await callTool(a, "py", "deploy");
    const first = await openCard(a);
    await show(b, session);
    const onB = await openCard(b, first.id);
    // B read the card from the store: A can die now.
    process.kill(aPid, "SIGKILL");
    await option(onB.card, "production").click();
    // Once A's lease expired, B or C carries the call on; its next round shows on every replica.
    await show(c, session);
    const second = await openCard(c);
    assert.notEqual(second.id, first.id);
    await option(second.card, "true").click();
    const done = 'target: accept {"target":"production"}; confirm: {"confirm":true}';
    assert.equal(await resultOf(c, "deploy"), done);
    assert.equal(await resultOf(b, "deploy"), done);
    console.log(`session ${session}`);
  });

  exitWhenDone(async () => {
    const { browser, context } = await launch({}, WAIT);
    const pages = { a: await workbench(context, aUrl), b: await workbench(context, bUrl), c: await workbench(context, cUrl) };
    const ok = await runInOrder({ cases, arg: pages, pages: suffixed(pages), prefix: "replicas" });
    await browser.close();
    return ok;
  });
} else if (phase === "restarted") {
  const [aUrl, bUrl, session] = args;

  test("a-restarted-replica-shows-the-whole-transcript", async ({ a, b }) => {
    await show(a, session);
    await show(b, session);
    const done = 'target: accept {"target":"production"}; confirm: {"confirm":true}';
    assert.equal(await resultOf(a, "deploy"), done);
    const onA = await transcript(a);
    assert.deepEqual(onA, await transcript(b));
    assert.equal(onA.filter((item) => item.startsWith("card ")).length, 2, onA.join("\n"));
  });

  exitWhenDone(async () => {
    const { browser, context } = await launch({}, WAIT);
    const pages = { a: await workbench(context, aUrl), b: await workbench(context, bUrl) };
    const ok = await runInOrder({ cases, arg: pages, pages: suffixed(pages), prefix: "replicas" });
    await browser.close();
    return ok;
  });
} else {
  throw new Error(`unknown phase ${phase}`);
}
