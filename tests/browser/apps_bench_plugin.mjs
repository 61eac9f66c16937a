// The plugin of the MCP Apps benchmark (the apps part of tests/browser/bench.mjs, run by `cargo xtask bench`): a
// stdio MCP server on the official TypeScript SDK (@modelcontextprotocol/sdk 1.32.2, McpServer) with an app.
//
//   node tests/browser/apps_bench_plugin.mjs <node_modules> <stamps file>
//
// Tools (each `readOnlyHint`, so no approval card stands in the way):
//   show       `_meta.ui.resourceUri` = ui://bench/app.html; returns at once, `structuredContent: {"n": <count>}`
//   show-late  the same app, but the result comes 400 ms after the call: the app is (normally) up by then
//   echo       visibility ["app"]: returns its arguments as text and as `structuredContent.echo`
// When the SDK hands a result of show or show-late to stdout (a wrapped `transport.send`), the plugin appends
// `<n> <ms>` to the stamps file, the wall clock (`performance.timeOrigin + performance.now()`, the clock the
// page and the app read) of the moment the host can have the result.
//
// The app (`text/html;profile=mcp-app`) speaks the app side of the bridge by hand (JSON-RPC over postMessage to
// `window.parent`, no library): `ui/initialize`, `ui/notifications/initialized`; on `ui/notifications/tool-result`
// it stamps the same clock into `body[data-result-at]` (first delivery only) and the result's `n` into
// `body[data-n]`; also when its script started (`data-script-at`), when `ui/initialize` was answered
// (`data-answered-at`) and when it sent `initialized` (`data-initialized-at`). `window.benchEchoes(count)` (called
// by the bench in the frame) makes `count` sequential `tools/call echo {"text":"bench"}` round trips and resolves
// with each one's duration in ms, from `postMessage` to the answer's `message` event; the durations are also
// written to `pre#echo-samples` as JSON. `window.benchPings(count)` does the same with `ping`, which the host
// answers itself. `window.benchFrameEchoes(count)` times `count` plain `{benchEcho: i}` messages to the page and
// back, which only the bench's own listener in the page answers (no host, no JSON-RPC): the browser's frame <-> page
// hop alone, the floor under every bridge message. `ui/resource-teardown` is answered `{}` at once.
import { appendFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";

const modules = process.argv[2] ?? path.join(process.env.FORMWORK_PEERS ?? ".", "npm", "node_modules");
const stamps = process.argv[3];
const require = createRequire(path.join(modules, "noop.js"));
const { McpServer } = require("@modelcontextprotocol/sdk/server/mcp.js");
const { StdioServerTransport } = require("@modelcontextprotocol/sdk/server/stdio.js");
const { z } = require("zod");

const APP_URI = "ui://bench/app.html";
const APP_MIME = "text/html;profile=mcp-app";
const LATE_MS = 400;
const readOnly = { readOnlyHint: true };
const now = () => performance.timeOrigin + performance.now();

const server = new McpServer({ name: "apps-bench-plugin", version: "0.1.0" });
let shown = 0;

const result = (n) => ({ content: [{ type: "text", text: `shown ${n}` }], structuredContent: { n } });
server.registerTool(
  "show",
  { description: "Show the bench app", annotations: readOnly, _meta: { ui: { resourceUri: APP_URI } } },
  async () => result(++shown),
);
server.registerTool(
  "show-late",
  { description: "Show the bench app, the result late", annotations: readOnly, _meta: { ui: { resourceUri: APP_URI } } },
  async () => {
    await new Promise((resolve) => setTimeout(resolve, LATE_MS));
    return result(++shown);
  },
);
server.registerTool(
  "echo",
  {
    description: "Echo the arguments (app-only)",
    inputSchema: z.object({}).passthrough(),
    annotations: readOnly,
    _meta: { ui: { visibility: ["app"] } },
  },
  async (args) => ({ content: [{ type: "text", text: JSON.stringify(args) }], structuredContent: { echo: args } }),
);
// The same echo for the page's own calls through the host (no visibility: the palette may call it).
server.registerTool(
  "echo-page",
  { description: "Echo the arguments", inputSchema: z.object({}).passthrough(), annotations: readOnly },
  async (args) => ({ content: [{ type: "text", text: JSON.stringify(args) }], structuredContent: { echo: args } }),
);
server.registerResource("bench-app", APP_URI, { mimeType: APP_MIME }, async (uri) => ({
  contents: [{ uri: uri.href, mimeType: APP_MIME, text: appDocument(), _meta: { ui: {} } }],
}));

const transport = new StdioServerTransport();
const send = transport.send.bind(transport);
transport.send = (message, options) => {
  const n = message.result?.structuredContent?.n;
  const sent = send(message, options);
  if (stamps && typeof n === "number") appendFileSync(stamps, `${n} ${now()}\n`);
  return sent;
};
await server.connect(transport);

function appDocument() {
  return `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Bench app</title></head>
<body><h1>Bench app</h1><pre id="echo-samples"></pre>
<script>(${benchApp.toString()})();</script>
</body></html>`;
}

// Runs inside the app frame (serialised with toString above): it must not refer to anything outside itself.
function benchApp() {
  const host = window.parent;
  const body = document.body;
  const pending = new Map();
  let nextId = 1;
  const stamp = () => performance.timeOrigin + performance.now();
  const post = (message) => host.postMessage(message, "*");
  const request = (method, params) =>
    new Promise((resolve) => {
      const id = nextId++;
      pending.set(id, resolve);
      post({ jsonrpc: "2.0", id, method, params });
    });

  let echoed = null;
  window.addEventListener("message", (event) => {
    const message = event.data;
    if (event.source === host && typeof message?.benchEcho === "number" && echoed) return echoed(message.benchEcho);
    if (event.source !== host || !message || message.jsonrpc !== "2.0") return;
    if ("id" in message && !("method" in message)) {
      const resolve = pending.get(message.id);
      pending.delete(message.id);
      if (resolve) resolve(message);
      return;
    }
    if (message.method === "ui/notifications/tool-result") {
      if (!body.dataset.resultAt) body.dataset.resultAt = String(stamp());
      body.dataset.n = String(message.params?.structuredContent?.n ?? "");
    } else if (message.method === "ui/resource-teardown" || message.method === "ping") {
      post({ jsonrpc: "2.0", id: message.id, result: {} });
    }
  });

  // `count` sequential requests, each timed from postMessage to its answer's message event (ms).
  const timed = async (count, method, params, check) => {
    const samples = [];
    for (let i = 0; i < count; i++) {
      const started = performance.now();
      const answer = await request(method, params);
      samples.push(performance.now() - started);
      if (!check(answer)) throw new Error(`${method} ${i + 1}: ${JSON.stringify(answer)}`);
    }
    return samples;
  };
  window.benchEchoes = async (count) => {
    const samples = await timed(count, "tools/call", { name: "echo", arguments: { text: "bench" } }, (answer) => answer.result?.structuredContent?.echo?.text === "bench");
    document.getElementById("echo-samples").textContent = JSON.stringify(samples);
    return samples;
  };
  window.benchPings = (count) => timed(count, "ping", {}, (answer) => answer.result !== undefined);
  window.benchFrameEchoes = async (count) => {
    const samples = [];
    for (let i = 0; i < count; i++) {
      const started = performance.now();
      const back = await new Promise((resolve) => {
        echoed = resolve;
        host.postMessage({ benchEcho: i }, "*");
      });
      samples.push(performance.now() - started);
      if (back !== i) throw new Error(`frame echo ${i}: ${back}`);
    }
    echoed = null;
    return samples;
  };

  body.dataset.scriptAt = String(stamp());
  (async () => {
    const init = await request("ui/initialize", {
      protocolVersion: "2026-01-26",
      appInfo: { name: "formwork-bench-app", version: "0.1.0" },
      appCapabilities: { availableDisplayModes: ["inline"] },
    });
    if (!init.result) {
      body.dataset.initialized = "failed";
      return;
    }
    body.dataset.answeredAt = String(stamp());
    post({ jsonrpc: "2.0", method: "ui/notifications/initialized", params: {} });
    body.dataset.initializedAt = String(stamp());
  })();
}
