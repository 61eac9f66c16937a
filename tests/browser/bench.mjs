// The workbench benchmark in headless Chromium, the browser part of `cargo xtask bench` (xtask/src/bench/browser.rs):
//
//   node tests/browser/bench.mjs <formwork binary> [--forms N] [--warmup W] [--starts S]
//   node tests/browser/bench.mjs <formwork binary> --screenshot FILE
//
// 1. Forms: `formwork serve` with tests/browser/bench_plugin.mjs as server `bench`; its tool `forms` sends W + N
//    one-click forms in a row. The plugin stamps the wall clock when each `elicitation/create` leaves it and when
//    each result arrives; the page stamps, with the same clock (`performance.timeOrigin + performance.now()`, one
//    machine), when a MutationObserver sees each card enter the DOM, the next animation frame after that (the
//    frame that paints it), and the moment just before it dispatches the click on the card's option. The first W
//    forms are warm-up. Reported: request -> card in the DOM, request -> card's frame, click -> result at the plugin.
// 2. Start-up: S times, `formwork serve --port 0 --data-dir <empty tmp>` with the built-in default config, timed
//    from spawn until the page (`GET /`) and then an API call with the printed token (`GET /api/info` with
//    `Authorization: Bearer`, as the page makes it) have answered 200.
//
// Prints a table of medians against the targets (PASS/MISS). A miss still exits 0: this is a report; only
// a failure (a wrong answer at the plugin, a timeout, a crash) exits 1. --screenshot instead saves a 1200x800 light
// theme picture of the built-in demo's `deploy` form card (docs/form-card.png in the README).
//
// playwright-core comes from $FORMWORK_PEERS/npm/node_modules and drives /usr/bin/chromium (or $FORMWORK_CHROMIUM),
// with the launch flags of run.mjs.

import { spawn } from "node:child_process";
import { createRequire } from "node:module";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const peers = process.env.FORMWORK_PEERS;
if (!peers) {
  console.error("bench.mjs: FORMWORK_PEERS is not set: run `cargo xtask peers` and point it at target/peers");
  process.exit(2);
}
const modules = path.join(peers, "npm", "node_modules");
const require = createRequire(path.join(modules, "noop.js"));
process.env.PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD = "1";
const { chromium } = require("playwright-core");

const TARGET_CARD_MS = 50;
const TARGET_RESULT_MS = 20;
const TARGET_START_MS = 100;
const WAIT = 15_000;

const args = process.argv.slice(2);
const formwork = args[0] && !args[0].startsWith("-") ? path.resolve(args.shift()) : null;
const option = (flag, fallback) => {
  const at = args.indexOf(flag);
  return at < 0 ? fallback : args[at + 1];
};
if (!formwork) {
  console.error("usage: node tests/browser/bench.mjs <formwork binary> [--forms N] [--warmup W] [--starts S] | --screenshot FILE");
  process.exit(2);
}
const forms = Number(option("--forms", 50));
const warmup = Number(option("--warmup", 5));
const starts = Number(option("--starts", 5));
const screenshot = option("--screenshot", null);

const tid = (id) => `[data-testid="${id}"]`;
const now = () => performance.timeOrigin + performance.now();

// ---- formwork serve ----

// Starts `formwork serve` in its own process group; resolves once it printed its URL. Its user config directory is
// one that does not exist, so the person's own ~/.config/formwork/formwork.toml never changes what is measured.
function serve(extra, cwd) {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), "formwork-bench-data-"));
  const spawned = performance.now();
  const child = spawn(formwork, ["serve", "--port", "0", "--data-dir", dataDir, ...extra], {
    cwd,
    env: { ...process.env, XDG_CONFIG_HOME: path.join(cwd, "no-user-config") },
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stderr = "";
  child.stderr.on("data", (chunk) => (stderr += chunk));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGTERM");
      await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 5000))]);
    }
    try {
      process.kill(-child.pid, "SIGKILL"); // whatever of its group is left, usually nothing
    } catch {}
    rmSync(dataDir, { recursive: true, force: true });
    return stderr;
  };
  return new Promise((resolve, reject) => {
    let out = "";
    const timer = setTimeout(() => fail(new Error("no URL within 30 s")), 30_000);
    const fail = async (error) => {
      clearTimeout(timer);
      reject(new Error(`formwork serve: ${error.message}; stderr:\n${await stop()}`));
    };
    child.once("error", fail);
    child.once("exit", (code) => fail(new Error(`exited with ${code} before printing its URL`)));
    child.stdout.on("data", (chunk) => {
      out += chunk;
      const line = out.split("\n");
      if (line.length < 2) return;
      clearTimeout(timer);
      child.removeAllListeners("exit");
      child.stdout.removeAllListeners("data");
      child.stdout.resume();
      const url = line[0].trim().replace(/^formwork serve: /, "");
      if (!url.startsWith("http")) return fail(new Error(`first line is not the URL: ${line[0]}`));
      resolve({ url, spawned, stop });
    });
  });
}

// One GET with node:http (no lazy fetch machinery inside the timed span): {status, headers}.
function get(url, token) {
  return new Promise((resolve, reject) => {
    const headers = token ? { authorization: `Bearer ${token}` } : {};
    const request = http.get(url, { headers, agent: false }, (response) => {
      response.resume();
      response.on("end", () => resolve({ status: response.statusCode, headers: response.headers }));
    });
    request.on("error", reject);
  });
}

// Spawn -> first page answered 200, in ms.
async function startOnce(cwd) {
  const server = await serve([], cwd);
  try {
    for (;;) {
      try {
        const address = new URL(server.url);
        const token = address.hash.replace(/^#token=/, "");
        address.hash = "";
        const page = await get(address.toString());
        if (page.status !== 200) throw new Error(`GET ${address}: ${page.status}, expected 200`);
        const info = await get(new URL("/api/info", address).toString(), token);
        if (info.status !== 200) throw new Error(`GET /api/info with the token: ${info.status}, expected 200`);
        return performance.now() - server.spawned;
      } catch (error) {
        if (error.code !== "ECONNREFUSED" || performance.now() - server.spawned > 10_000) throw error;
      }
    }
  } finally {
    await server.stop();
  }
}

// ---- the page ----

async function launch(contextOptions = {}) {
  const browser = await chromium.launch({
    executablePath: process.env.FORMWORK_CHROMIUM ?? "/usr/bin/chromium",
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--no-first-run"],
  });
  const context = await browser.newContext({ locale: "en-GB", ...contextOptions });
  context.setDefaultTimeout(WAIT);
  return { browser, context };
}

// Installed before the page's own scripts: stamps each form card's arrival in the DOM and its next frame.
function installObserver() {
  const stamp = () => performance.timeOrigin + performance.now();
  const bench = (window.__bench = { cards: [], seen: new Set(), socket: [] });
  // A listener added in the constructor runs before the page's own: stamps each form_requested frame's arrival.
  const NativeWebSocket = window.WebSocket;
  window.WebSocket = class extends NativeWebSocket {
    constructor(...args) {
      super(...args);
      this.addEventListener("message", (message) => {
        if (typeof message.data === "string" && message.data.includes('"form_requested"')) bench.socket.push(stamp());
      });
    }
  };
  new MutationObserver((records) => {
    const t = stamp();
    for (const record of records) {
      for (const node of record.addedNodes) {
        if (node.nodeType !== Node.ELEMENT_NODE) continue;
        const found = node.matches('[data-testid="form-card"]') ? [node] : node.querySelectorAll('[data-testid="form-card"]');
        for (const card of found) {
          const id = card.dataset.formId;
          if (bench.seen.has(id)) continue;
          bench.seen.add(id);
          const entry = { id, dom: t, frame: null, click: null };
          bench.cards.push(entry);
          requestAnimationFrame(() => (entry.frame = stamp()));
        }
      }
    }
  }).observe(document, { childList: true, subtree: true });
}

async function newSession(page) {
  const before = page.url();
  await page.locator(tid("new-session")).click();
  await page.waitForURL((u) => u.toString() !== before && /#\/sessions\//.test(u.toString()));
  await page.locator(`${tid("connection-status")}[data-state="connected"]`).waitFor();
  await page.locator(tid("transcript-empty")).waitFor();
}

async function callTool(page, server, tool) {
  await page.locator(`${tid("palette-tool")}[data-server="${server}"][data-tool="${tool}"]`).click();
  await page.locator(`${tid("palette-panel")}[data-tool="${tool}"]`).waitFor();
  await page.locator(tid("palette-call")).click();
  await page.locator(`${tid("tool-call")}[data-tool="${tool}"]`).waitFor();
}

// ---- 1. forms ----

async function formsBench() {
  const dir = mkdtempSync(path.join(os.tmpdir(), "formwork-bench-"));
  const config = path.join(dir, "formwork.toml");
  const plugin = path.join(here, "bench_plugin.mjs");
  writeFileSync(
    config,
    `[mcp_servers.bench]\ncommand = ${JSON.stringify(process.execPath)}\n` +
      `args = ${JSON.stringify([plugin, modules, String(warmup + forms)])}\ndefault_tools_approval_mode = "approve"\n`,
  );
  const server = await serve(["--config", config], dir).catch((error) => {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  });
  const { browser, context } = await launch({ viewport: { width: 1200, height: 800 } });
  try {
    await context.addInitScript(installObserver);
    const page = await context.newPage();
    const pageErrors = [];
    page.on("pageerror", (error) => pageErrors.push(error.message));
    await page.goto(server.url);
    await page.locator(`${tid("palette-tool")}[data-server="bench"]`).first().waitFor();
    await newSession(page);
    await callTool(page, "bench", "forms");
    for (let i = 0; i < warmup + forms; i++) {
      await page.waitForFunction(
        (i) => window.__bench.cards.length > i && document.querySelector(`[data-testid="form-card"][data-form-id="${window.__bench.cards[i].id}"][data-state="open"]`),
        i,
        { timeout: WAIT },
      );
      // The click time is stamped in the page right before the click is dispatched.
      await page.evaluate((i) => {
        const entry = window.__bench.cards[i];
        const card = document.querySelector(`[data-testid="form-card"][data-form-id="${entry.id}"]`);
        const yes = card.querySelector('[data-testid="option"][data-label="Yes"]');
        if (!yes) throw new Error(`card ${entry.id} has no Yes button`);
        entry.click = performance.timeOrigin + performance.now();
        yes.click();
      }, i);
    }
    const call = page.locator(`${tid("tool-call")}[data-tool="forms"]`);
    await page.locator(`${tid("tool-call")}[data-tool="forms"][data-state="done"], ${tid("tool-call")}[data-tool="forms"][data-state="error"]`).waitFor();
    const text = await call.locator(tid("result-text")).first().textContent();
    if ((await call.getAttribute("data-state")) !== "done") throw new Error(`the forms tool failed: ${text}`);
    const result = JSON.parse(text);
    const cards = await page.evaluate(() => window.__bench.cards.map(({ dom, frame, click }) => ({ dom, frame, click })));
    const socket = await page.evaluate(() => window.__bench.socket);
    if (pageErrors.length) throw new Error(`errors in the page: ${pageErrors.join("; ")}`);
    const total = warmup + forms;
    if (result.sent.length !== total || cards.length !== total) {
      throw new Error(`${result.sent.length} forms sent, ${cards.length} cards seen, expected ${total}`);
    }
    const wrong = result.actions.findIndex((action) => action !== "yes");
    if (wrong >= 0) throw new Error(`form ${wrong + 1}: the plugin got ${result.actions[wrong]}, expected yes`);
    const measured = (f) => cards.slice(warmup).map((card, j) => f(card, j + warmup));
    return {
      socket: socket.length === total ? measured((card, i) => socket[i] - result.sent[i]) : null,
      dom: measured((card, i) => card.dom - result.sent[i]),
      frame: measured((card, i) => card.frame - result.sent[i]),
      result: measured((card, i) => result.received[i] - card.click),
    };
  } finally {
    await browser.close();
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

// ---- the screenshot ----

async function takeScreenshot(file) {
  // An empty directory: no ./formwork.toml, so serve runs on the built-in default with the demo plugin.
  const dir = mkdtempSync(path.join(os.tmpdir(), "formwork-shot-"));
  const server = await serve([], dir);
  const { browser, context } = await launch({ viewport: { width: 1200, height: 800 }, colorScheme: "light", deviceScaleFactor: 1 });
  try {
    const page = await context.newPage();
    await page.goto(server.url);
    await page.locator(`${tid("connection-status")}[data-state="connected"]`).waitFor();
    await callTool(page, "demo", "deploy");
    const card = page.locator(`${tid("form-card")}[data-state="open"]`);
    await card.waitFor();
    await card.scrollIntoViewIfNeeded();
    await page.mouse.move(0, 0);
    await page.screenshot({ path: file });
    console.log(`saved ${file}`);
  } finally {
    await browser.close();
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

// ---- the report ----

function sortedStats(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (fraction) => sorted[Math.min(sorted.length, Math.max(1, Math.ceil(fraction * sorted.length))) - 1];
  return { count: sorted.length, median: at(0.5), p90: at(0.9), max: sorted[sorted.length - 1] };
}

function row(what, values, target) {
  const s = sortedStats(values);
  const ms = (v) => `${v.toFixed(1)} ms`.padStart(10);
  const verdict = target === null ? "" : `<= ${target} ms  ${s.median <= target ? "PASS" : "MISS"}`;
  console.log(`${what.padEnd(42)} ${String(s.count).padStart(7)} ${ms(s.median)} ${ms(s.p90)} ${ms(s.max)}  ${verdict}`);
  return s;
}

async function main() {
  if (screenshot) {
    await takeScreenshot(path.resolve(screenshot));
    return;
  }
  const times = await formsBench();
  const startup = [];
  for (let i = 0; i < starts; i++) {
    // An empty directory each time: no ./formwork.toml, so the built-in default (the demo plugin).
    const dir = mkdtempSync(path.join(os.tmpdir(), "formwork-start-"));
    try {
      startup.push(await startOnce(dir));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  console.log(
    `workbench in headless Chromium: ${forms} one-click forms (+${warmup} warm-up) from a TS SDK plugin, ` +
      `clocks read in the plugin and the page; formwork serve started ${starts}x`,
  );
  console.log(`${"span".padEnd(42)} ${"samples".padStart(7)} ${"median".padStart(10)} ${"p90".padStart(10)} ${"max".padStart(10)}  target (median)`);
  if (times.socket) row("request -> its event at the page's socket", times.socket, null);
  row("request -> card in the DOM", times.dom, null);
  row("request -> card's frame (visible)", times.frame, TARGET_CARD_MS);
  row("click -> result at the plugin", times.result, TARGET_RESULT_MS);
  row("start -> first page (200)", startup, TARGET_START_MS);
  const negative = [...times.dom, ...times.result].some((v) => v < 0);
  if (negative) console.log("warning: a negative span: the page's and the plugin's clocks disagree");
}

main().then(
  () => process.exit(0),
  (error) => {
    console.error(`bench.mjs: ${error?.stack ?? error}`);
    process.exit(1);
  },
);
