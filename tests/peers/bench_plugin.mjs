// The plugin that `cargo xtask bench` drives: a stdio MCP server on the official TypeScript SDK
// (@modelcontextprotocol/sdk 1.32.2, the low-level `Server`), shared by every client the benchmark compares.
//
// Its one tool, `bench {n, warmup}`, sends `warmup` and then `n` sequential `elicitation/create` requests for the
// same realistic form and times each round trip itself, so every client is measured at the same two points: from
// the moment the SDK hands the request line to stdout (a wrapped `transport.send`) until the SDK's transport has
// parsed the response line (a wrapped `transport.onmessage`). The plugin-side SDK work is thus identical for all
// clients and mostly outside the measured span. Every result must be `accept` with exactly the form's defaults;
// anything else ends the tool with `isError`. On success the tool returns the measured (not warm-up) durations in
// nanoseconds as the JSON text `{"ns":[...]}`. `cargo xtask bench` copies this file next to the pinned
// node_modules so that its imports resolve.
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { CallToolRequestSchema, ElicitResultSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { EXPECTED, params } from "./bench_form.mjs";


const server = new Server({ name: "bench-plugin", version: "0.1.0" }, { capabilities: { tools: {} } });
const transport = new StdioServerTransport();

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
