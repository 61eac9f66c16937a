// A Streamable HTTP plugin written with the official TypeScript SDK 1.32.2. Used by the load test
// and the load benchmark: many host sessions, each with a form open at the same time.
//
//   node http_plugin.mjs [port] [--related]
//
// prints "listening <port>" on stdout once it accepts connections. It keeps one MCP session per client
// session (the SDK's own pattern: a transport per `Mcp-Session-Id`). By default its forms go out on the
// session's listening stream (`elicitInput` with no related request); with `--related` each goes out on the
// response stream of the call it belongs to (`relatedRequestId`), as the spec recommends, which lets a
// client serve many of its own sessions over one MCP session.
//
// Tool `ask {n}`: asks for a small form and returns `result: <ElicitResult JSON> n=<n>`, so a test can
// check that every answer reached the call it belongs to. Tool `clients`: how many `initialize` requests
// the plugin has answered, as the text `initialized: <count>`. Tool `open-remote-app`: a call with an MCP App
// (`ui://remote/app.html`) whose CSP declares `https://declared.example` and this machine's services
// (`http://127.0.0.1:<this port>`, `http://localhost:5173`), which a host must not grant a remote plugin's app. The app
// initialises, then fetches `http://127.0.0.1:<this port>/stats` and writes the outcome into `body[data-fetch]`:
// `refused` (a CSP violation), `allowed` or `failed`. Tool `wait {ms}`: returns `waited <ms> ms`
// after that long. Tool `ask_then_exit`: asks, and unless the answer was accept exits the whole process 100 ms later,
// the call unanswered. Tool `ask_then_hang`: asks, then never returns. `GET /stats` (not MCP): `{"open": <MCP sessions open>}`.
import http from "node:http";
import { randomUUID } from "node:crypto";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { isInitializeRequest } from "@modelcontextprotocol/sdk/types.js";
import { AjvJsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/ajv";
import { z } from "zod";

const schema = {
  type: "object",
  properties: {
    strategy: {
      type: "string",
      title: "Strategy",
      oneOf: [
        { const: "fast", title: "Fast" },
        { const: "safe", title: "Safe" },
      ],
      default: "safe",
    },
    retries: { type: "integer", title: "Retries", minimum: 0, maximum: 10, default: 3 },
  },
  required: ["strategy"],
};

const related = process.argv.includes("--related");

// The SDK checks each accepted answer against the requested schema with ajv, which compiles the schema
// into code (that node then compiles again) and caches it per ajv instance. Each `Server` makes its own
// instance unless given one, so with a server per session every answer paid for a compile: one
// validator for the process compiles once (the bench's median answer round trip halved).
const validator = new AjvJsonSchemaValidator();

function newServer() {
  const server = new McpServer({ name: "http-plugin", version: "0.1.0" }, { jsonSchemaValidator: validator });
  server.registerTool("ask", { description: "Ask for a small form", inputSchema: { n: z.number().int().optional() } }, async ({ n }, extra) => {
    try {
      // A person may take minutes; the SDK's default of 60 s would end forms a load test still holds open.
      const options = { timeout: 600_000, ...(related ? { relatedRequestId: extra.requestId } : {}) };
      const r = await server.server.elicitInput({ message: "Choose a strategy", requestedSchema: schema }, options);
      return { content: [{ type: "text", text: `result: ${JSON.stringify(r)} n=${n ?? ""}` }] };
    } catch (e) {
      return { isError: true, content: [{ type: "text", text: `error: ${e.message}` }] };
    }
  });
  server.registerTool("ask_then_exit", { description: "Ask; exit the process unless the answer was accept" }, async (extra) => {
    const options = related ? { relatedRequestId: extra.requestId } : {};
    const r = await server.server.elicitInput({ message: "Choose a strategy", requestedSchema: schema }, options);
    if (r.action === "accept") return { content: [{ type: "text", text: `result: ${JSON.stringify(r)}` }] };
    // A moment later, so that the answer's POST has been acknowledged: the call's stream breaks.
    setTimeout(() => process.exit(0), 100);
    await new Promise(() => {});
  });
  server.registerTool("ask_then_hang", { description: "Ask, then never return" }, async (extra) => {
    const options = related ? { relatedRequestId: extra.requestId } : {};
    await server.server.elicitInput({ message: "Choose a strategy", requestedSchema: schema }, options);
    await new Promise(() => {});
  });
  server.registerTool("wait", { description: "Return after `ms` milliseconds", inputSchema: { ms: z.number().int() } }, async ({ ms }) => {
    await new Promise((resolve) => setTimeout(resolve, ms));
    return { content: [{ type: "text", text: `waited ${ms} ms` }] };
  });
  server.registerTool("clients", { description: "How many clients initialized" }, async () => ({
    content: [{ type: "text", text: `initialized: ${initialized}` }],
  }));
  server.registerTool(
    "open-remote-app",
    { description: "Open the remote plugin's app", annotations: { readOnlyHint: true }, _meta: { ui: { resourceUri: REMOTE_APP } } },
    async () => ({ content: [{ type: "text", text: "remote app opened" }] }),
  );
  server.registerResource("remote-app", REMOTE_APP, { mimeType: "text/html;profile=mcp-app" }, async (uri) => ({
    contents: [{ uri: uri.href, mimeType: "text/html;profile=mcp-app", text: remoteApp(), _meta: { ui: { csp: remoteCsp() } } }],
  }));
  return server;
}

const REMOTE_APP = "ui://remote/app.html";
const ownPort = () => httpServer.address().port;
const remoteCsp = () => ({ connectDomains: ["https://declared.example", `http://127.0.0.1:${ownPort()}`, "http://localhost:5173"] });
// Speaks just enough of the MCP Apps bridge to be shown, then probes this machine's service.
const remoteApp = () => `<!doctype html><html><body><script>
let violated = false;
document.addEventListener("securitypolicyviolation", () => { violated = true; });
window.addEventListener("message", async (event) => {
  if (event.data?.id !== 1) return;
  window.parent.postMessage({ jsonrpc: "2.0", method: "ui/notifications/initialized" }, "*");
  let outcome;
  try {
    await fetch("http://127.0.0.1:${ownPort()}/stats");
    outcome = "allowed";
  } catch {
    await new Promise((resolve) => setTimeout(resolve, 200));
    outcome = violated ? "refused" : "failed";
  }
  document.body.dataset.fetch = outcome;
});
window.parent.postMessage({ jsonrpc: "2.0", id: 1, method: "ui/initialize",
  params: { protocolVersion: "2026-01-26", appInfo: { name: "remote", version: "1" }, appCapabilities: {} } }, "*");
</script></body></html>`;

let initialized = 0;

const transports = new Map();

async function readBody(req) {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  const text = Buffer.concat(chunks).toString("utf8");
  return text ? JSON.parse(text) : undefined;
}

const httpServer = http.createServer(async (req, res) => {
  if (req.url === "/stats") {
    // Outside MCP, for tests: the MCP sessions open now.
    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ open: transports.size }));
    return;
  }
  try {
    const body = req.method === "POST" ? await readBody(req) : undefined;
    if (body !== undefined && isInitializeRequest(body)) initialized += 1;
    const sessionId = req.headers["mcp-session-id"];
    if (req.method === "POST") {
      let transport = sessionId ? transports.get(sessionId) : undefined;
      if (!transport && !sessionId && isInitializeRequest(body)) {
        transport = new StreamableHTTPServerTransport({
          sessionIdGenerator: () => randomUUID(),
          onsessioninitialized: (id) => transports.set(id, transport),
        });
        transport.onclose = () => {
          if (transport.sessionId) transports.delete(transport.sessionId);
        };
        await newServer().connect(transport);
      }
      if (!transport) {
        // The spec: 404 for a session this server does not know (it restarted, say), 400 without one.
        res.writeHead(sessionId ? 404 : 400).end(JSON.stringify({ jsonrpc: "2.0", error: { code: -32000, message: "no session" }, id: null }));
        return;
      }
      await transport.handleRequest(req, res, body);
      return;
    }
    const transport = sessionId ? transports.get(sessionId) : undefined;
    if (!transport) {
      res.writeHead(sessionId ? 404 : 400).end("no session");
      return;
    }
    await transport.handleRequest(req, res);
  } catch (e) {
    console.error(`http_plugin: ${e?.stack ?? e}`);
    if (!res.headersSent) res.writeHead(500).end(String(e));
  }
});
httpServer.keepAliveTimeout = 60_000;
const port = process.argv.slice(2).find((arg) => !arg.startsWith("--")) ?? 0;
httpServer.listen(Number(port), "127.0.0.1", () => {
  console.log(`listening ${httpServer.address().port}`);
});
