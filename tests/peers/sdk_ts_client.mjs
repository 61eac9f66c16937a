// A client on the official TS SDK 1.32.2 (2025-11-25, the push era) for the formwork-sdk tests.
//
// Usage: node sdk_ts_client.mjs TOOL ANSWERS -- COMMAND...
// It declares `elicitation: {form: {}}`, answers each elicitation/create with the next ElicitResult of
// the JSON list ANSWERS, calls TOOL once, and prints {"received": [params the handler saw], "result": …}.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const [tool, answersText, dashes, command, ...args] = process.argv.slice(2);
if (dashes !== "--") throw new Error("usage: TOOL ANSWERS -- COMMAND...");
const answers = JSON.parse(answersText);
const received = [];

const client = new Client(
  { name: "sdk-ts-client", version: "1.0.0" },
  { capabilities: { elicitation: { form: {} } } },
);
client.setRequestHandler(ElicitRequestSchema, async (request) => {
  received.push(request.params);
  return answers.shift() ?? { action: "cancel" };
});
await client.connect(new StdioClientTransport({ command, args, env: process.env }));
const result = await client.callTool({ name: tool, arguments: {} });
console.log(JSON.stringify({ received, result }));
await client.close();
