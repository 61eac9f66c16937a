// The plugin of the browser benchmark (tests/browser/bench.mjs, run by `cargo xtask bench`): a stdio MCP server on
// the official TypeScript SDK (@modelcontextprotocol/sdk 1.32.2, the low-level `Server`).
//
//   node tests/browser/bench_plugin.mjs <node_modules> <count>
//
// Its one tool, `forms` (no arguments), sends <count> sequential `elicitation/create` requests, each a form whose
// only question is an option question (answered by one click in the workbench), and stamps the wall clock
// (`performance.timeOrigin + performance.now()`, the same clock the page reads) at two points of each: when the
// SDK hands the request to stdout (a wrapped `transport.send`) and when the SDK's transport has parsed the
// response (a wrapped `transport.onmessage`). The tool returns the JSON text
// `{"sent":[ms...],"received":[ms...],"actions":[...]}`; an error from the SDK ends it with `isError`.
import { createRequire } from "node:module";
import path from "node:path";

const modules = process.argv[2] ?? path.join(process.env.FORMWORK_PEERS ?? ".", "npm", "node_modules");
const count = Number(process.argv[3] ?? 50);
const require = createRequire(path.join(modules, "noop.js"));
const { Server } = require("@modelcontextprotocol/sdk/server/index.js");
const { StdioServerTransport } = require("@modelcontextprotocol/sdk/server/stdio.js");
const { CallToolRequestSchema, ElicitResultSchema, ListToolsRequestSchema } = require("@modelcontextprotocol/sdk/types.js");

const now = () => performance.timeOrigin + performance.now();

const params = (i) => ({
  mode: "form",
  message: `Form ${i + 1} of ${count}`,
  requestedSchema: {
    type: "object",
    properties: {
      go: {
        type: "string",
        title: "Continue?",
        oneOf: [
          { const: "yes", title: "Yes" },
          { const: "no", title: "No" },
        ],
      },
    },
    required: ["go"],
  },
});

const server = new Server({ name: "browser-bench-plugin", version: "0.1.0" }, { capabilities: { tools: {} } });
const transport = new StdioServerTransport();

// Sequential requests: at most one elicitation is in flight.
let pendingId = null;
let sentAt = 0;
let receivedAt = 0;
const send = transport.send.bind(transport);
transport.send = (message, options) => {
  if (message.method === "elicitation/create") {
    pendingId = message.id;
    sentAt = now();
  }
  return send(message, options);
};

server.setRequestHandler(ListToolsRequestSchema, async () => ({
  tools: [
    {
      name: "forms",
      description: `Sends ${count} one-click forms in a row and reports when each was sent and answered.`,
      inputSchema: { type: "object", properties: {} },
    },
  ],
}));

server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
  if (request.params.name !== "forms") {
    return failure(`unknown tool ${request.params.name}`);
  }
  const sent = [];
  const received = [];
  const actions = [];
  for (let i = 0; i < count; i++) {
    let result;
    try {
      result = await server.request({ method: "elicitation/create", params: params(i) }, ElicitResultSchema, {
        relatedRequestId: extra.requestId,
        timeout: 600_000,
      });
    } catch (error) {
      return failure(`form ${i + 1}: ${error.message}`);
    }
    sent.push(sentAt);
    received.push(receivedAt);
    actions.push(result.action === "accept" ? result.content?.go ?? "accept" : result.action);
  }
  return { content: [{ type: "text", text: JSON.stringify({ sent, received, actions }) }] };
});

await server.connect(transport);

// Installed after `connect`, which sets the SDK's own handler: the response is stamped before the SDK dispatches it.
const dispatch = transport.onmessage;
transport.onmessage = (message, extra) => {
  if (pendingId !== null && message.id === pendingId && !("method" in message)) {
    receivedAt = now();
    pendingId = null;
  }
  dispatch(message, extra);
};

function failure(text) {
  return { isError: true, content: [{ type: "text", text }] };
}
