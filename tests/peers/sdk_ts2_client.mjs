// A client on the split TS SDK 2.4.0 (`@modelcontextprotocol/client`) for the formwork-sdk tests.
//
// Usage: node sdk_ts2_client.mjs ERA TOOL ANSWERS -- COMMAND...
// ERA is "legacy" (the initialize handshake) or "2026-07-28" (pinned, no handshake; the SDK drives
// input_required rounds through the same handler). It declares `elicitation: {form: {}}`, answers each
// elicitation/create with the next ElicitResult of the JSON list ANSWERS, calls TOOL once, and prints
// {"received": [params the handler saw], "result": …}.
import { Client } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";

const [era, tool, answersText, dashes, command, ...args] = process.argv.slice(2);
if (dashes !== "--") throw new Error("usage: ERA TOOL ANSWERS -- COMMAND...");
const answers = JSON.parse(answersText);
const received = [];

const options = { capabilities: { elicitation: { form: {} } } };
if (era !== "legacy") options.versionNegotiation = { mode: { pin: era } };
const client = new Client({ name: "sdk-ts2-client", version: "1.0.0" }, options);
client.setRequestHandler("elicitation/create", async (request) => {
  received.push(request.params);
  return answers.shift() ?? { action: "cancel" };
});
await client.connect(new StdioClientTransport({ command, args, env: process.env }));
const result = await client.callTool({ name: tool, arguments: {} });
console.log(JSON.stringify({ received, result }));
await client.close();
