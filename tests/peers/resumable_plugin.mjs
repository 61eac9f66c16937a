// A Streamable HTTP plugin on the official TypeScript SDK 1.32.2 that ends a call's event stream before
// the call is over and lets the client resume it (SEP-1699): its transport keeps every event in a store
// and primes each stream with an event id and `retry: 200`, and a tool ends its own stream with the SDK's
// `extra.closeSSEStream()`. What the call sends afterwards waits in the store, or goes on the resumed
// stream once the client is back with `Last-Event-ID`.
//
//   node resumable_plugin.mjs
//
// prints "listening <port>" on stdout once it accepts connections (the MCP endpoint is `/mcp`).
//
// Tool `close_then_return`: ends its stream, and 50 ms later (before the client is back) returns the text
// `returned after the stream closed`. Tool `ask_then_close`: asks for a form on its stream, ends the
// stream while the form is open, and returns `answer: <ElicitResult JSON>`. Tool `close_then_ask`: ends
// its stream first, then asks (the form reaches the client on the resumed stream) and returns the same.
import http from "node:http";
import { randomUUID } from "node:crypto";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { isInitializeRequest } from "@modelcontextprotocol/sdk/types.js";

const RETRY_MS = 200;

const schema = {
  type: "object",
  properties: { agree: { type: "boolean", title: "Agree" } },
  required: ["agree"],
};

// The events of every stream of the process, in the order they were stored. An id is the stream's id and
// a counter, so that it names its stream and sorts in order.
class EventLog {
  #events = [];
  #count = 0;

  async storeEvent(streamId, message) {
    this.#count += 1;
    const eventId = `${streamId}.${this.#count}`;
    this.#events.push({ eventId, streamId, message });
    return eventId;
  }

  async getStreamIdForEventId(eventId) {
    return this.#events.find((event) => event.eventId === eventId)?.streamId;
  }

  async replayEventsAfter(lastEventId, { send }) {
    const at = this.#events.findIndex((event) => event.eventId === lastEventId);
    if (at < 0) return "";
    const { streamId } = this.#events[at];
    for (const event of this.#events.slice(at + 1)) {
      if (event.streamId === streamId) await send(event.eventId, event.message);
    }
    return streamId;
  }
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function newServer() {
  const server = new McpServer({ name: "resumable-plugin", version: "0.1.0" });
  const ask = (extra) =>
    server.server.elicitInput({ message: "Agree?", requestedSchema: schema }, { relatedRequestId: extra.requestId });
  const text = (value) => ({ content: [{ type: "text", text: value }] });
  server.registerTool("close_then_return", { description: "End the stream, then return" }, async (extra) => {
    extra.closeSSEStream();
    await sleep(50);
    return text("returned after the stream closed");
  });
  server.registerTool("ask_then_close", { description: "Ask, end the stream while the form is open" }, async (extra) => {
    const answer = ask(extra);
    // The form is on its way out on the stream; end the stream well before anyone can answer.
    await sleep(20);
    extra.closeSSEStream();
    return text(`answer: ${JSON.stringify(await answer)}`);
  });
  server.registerTool("close_then_ask", { description: "End the stream, then ask" }, async (extra) => {
    extra.closeSSEStream();
    return text(`answer: ${JSON.stringify(await ask(extra))}`);
  });
  return server;
}

const events = new EventLog();
const transports = new Map();

async function readBody(req) {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  const body = Buffer.concat(chunks).toString("utf8");
  return body ? JSON.parse(body) : undefined;
}

const httpServer = http.createServer(async (req, res) => {
  try {
    const body = req.method === "POST" ? await readBody(req) : undefined;
    const sessionId = req.headers["mcp-session-id"];
    let transport = sessionId ? transports.get(sessionId) : undefined;
    if (!transport && !sessionId && req.method === "POST" && isInitializeRequest(body)) {
      transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        eventStore: events,
        retryInterval: RETRY_MS,
        onsessioninitialized: (id) => transports.set(id, transport),
      });
      transport.onclose = () => {
        if (transport.sessionId) transports.delete(transport.sessionId);
      };
      await newServer().connect(transport);
    }
    if (!transport) {
      res.writeHead(sessionId ? 404 : 400).end("no session");
      return;
    }
    await transport.handleRequest(req, res, body);
  } catch (e) {
    console.error(`resumable_plugin: ${e?.stack ?? e}`);
    if (!res.headersSent) res.writeHead(500).end(String(e));
  }
});
httpServer.listen(0, "127.0.0.1", () => {
  console.log(`listening ${httpServer.address().port}`);
});
