// The plugin that `cargo xtask bench` drives: an MCP server on the official TypeScript SDK
// (@modelcontextprotocol/sdk 1.32.2, the low-level `Server`), shared by every client the benchmark compares.
//
//   node bench_plugin.mjs                                      stdio, one client
//   node bench_plugin.mjs --http PORT                          Streamable HTTP on http://127.0.0.1:PORT/mcp
//   node bench_plugin.mjs --https PORT --cert FILE --key FILE  the same on node's `https` server
//
// Over HTTP it is a long-running server: an MCP session per client (the SDK's `StreamableHTTPServerTransport`
// per `Mcp-Session-Id`, on node's server), one after the other or at once, and it prints `listening <port>` on
// stdout once it accepts connections (PORT 0 picks a free one). Its forms go out on the response stream of the
// call they belong to.
//
// Its one tool, `bench {n, warmup}`, sends `warmup` and then `n` sequential `elicitation/create` requests for the
// same realistic form and times each round trip itself, so every client is measured at the same two points on
// every transport: from the moment the plugin hands the request to the SDK's transport (a wrapped
// `transport.send`) until that transport has parsed the response (a wrapped `transport.onmessage`). The
// plugin-side SDK work is thus identical for all clients and mostly outside the measured span. Every result must
// be `accept` with exactly the form's defaults; anything else ends the tool with `isError`. On success the tool
// returns the measured (not warm-up) durations in nanoseconds as the JSON text `{"ns":[...]}`. `cargo xtask
// bench` copies this file next to the pinned node_modules so that its imports resolve.
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { CallToolRequestSchema, ElicitResultSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { EXPECTED, params } from "./bench_form.mjs";
import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import http from "node:http";
import https from "node:https";

/// Serves the `bench` tool on `transport`, one client's connection, timing its round trips.
async function serve(transport) {
  const server = new Server({ name: "bench-plugin", version: "0.1.0" }, { capabilities: { tools: {} } });

  // Sequential requests: at most one elicitation is in flight, so one start time suffices.
  let pendingId = null;
  let sentAt = 0n;
  let lastDuration = 0n;
  const send = transport.send.bind(transport);
  transport.send = (message, options) => {
    if (message.method === "elicitation/create") {
      pendingId = message.id;
      sentAt = process.hrtime.bigint();
    }
    return send(message, options);
  };

  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: [
      {
        name: "bench",
        description: "Times `warmup` + `n` sequential elicitation round trips; returns the n durations in ns.",
        inputSchema: {
          type: "object",
          properties: { n: { type: "integer", minimum: 1 }, warmup: { type: "integer", minimum: 0 } },
          required: ["n"],
        },
      },
    ],
  }));

  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    if (request.params.name !== "bench") {
      return failure(`unknown tool ${request.params.name}`);
    }
    const n = request.params.arguments?.n ?? 0;
    const warmup = request.params.arguments?.warmup ?? 0;
    const ns = [];
    for (let i = 0; i < warmup + n; i++) {
      const result = await server.request({ method: "elicitation/create", params }, ElicitResultSchema, {
        relatedRequestId: extra.requestId,
      });
      const problem = unexpected(result);
      if (problem) {
        return failure(`round trip ${i}: ${problem}: ${JSON.stringify(result)}`);
      }
      if (i >= warmup) {
        ns.push(Number(lastDuration));
      }
    }
    return { content: [{ type: "text", text: JSON.stringify({ ns }) }] };
  });

  await server.connect(transport);

  // Installed after `connect`, which sets the SDK's own handler; the response is timed before the SDK dispatches it.
  const dispatch = transport.onmessage;
  transport.onmessage = (message, extra) => {
    if (pendingId !== null && message.id === pendingId && !("method" in message)) {
      lastDuration = process.hrtime.bigint() - sentAt;
      pendingId = null;
    }
    dispatch(message, extra);
  };
}

function unexpected(result) {
  if (result.action !== "accept") {
    return `action ${result.action}, expected accept`;
  }
  const content = result.content ?? {};
  const keys = Object.keys(content);
  if (keys.length !== Object.keys(EXPECTED).length || keys.some((key) => content[key] !== EXPECTED[key])) {
    return `content differs from ${JSON.stringify(EXPECTED)}`;
  }
  return null;
}

function failure(text) {
  return { isError: true, content: [{ type: "text", text }] };
}

const option = (name) => {
  const at = process.argv.indexOf(name);
  return at < 0 ? undefined : process.argv[at + 1];
};
const httpPort = option("--http");
const httpsPort = option("--https");

if (httpPort === undefined && httpsPort === undefined) {
  await serve(new StdioServerTransport());
} else {
  const sessions = new Map();
  const handle = async (req, res) => {
    if (new URL(req.url, "http://localhost").pathname !== "/mcp") {
      res.writeHead(404).end();
      return;
    }
    try {
      const sessionId = req.headers["mcp-session-id"];
      let transport = sessionId === undefined ? undefined : sessions.get(sessionId);
      if (sessionId !== undefined && transport === undefined) {
        res.writeHead(404).end("no such session");
        return;
      }
      if (transport === undefined) {
        // A request without a session: the SDK's transport answers it, and keeps the session it opens with
        // `initialize` (anything else it refuses, and the transport is dropped).
        const fresh = new StreamableHTTPServerTransport({
          sessionIdGenerator: () => randomUUID(),
          onsessioninitialized: (id) => sessions.set(id, fresh),
        });
        fresh.onclose = () => sessions.delete(fresh.sessionId);
        await serve(fresh);
        transport = fresh;
      }
      await transport.handleRequest(req, res);
    } catch (e) {
      console.error(`bench_plugin: ${e?.stack ?? e}`);
      if (!res.headersSent) res.writeHead(500).end(String(e));
    }
  };
  const httpServer =
    httpsPort === undefined
      ? http.createServer(handle)
      : https.createServer({ cert: readFileSync(option("--cert")), key: readFileSync(option("--key")) }, handle);
  httpServer.keepAliveTimeout = 60_000;
  httpServer.listen(Number(httpPort ?? httpsPort), "127.0.0.1", () => {
    console.log(`listening ${httpServer.address().port}`);
  });
}
