// A Streamable HTTP client on the official TypeScript SDK (@modelcontextprotocol/sdk 1.32.2) that checks a
// server's log filter: it sets the level to `warning`, calls `test_tool_with_logging` (whose messages are `info`),
// then sets `info` and calls it again. Usage: `node log_level_client.mjs <url>`. It prints the data of every log
// message it received, as a JSON array on one line: once three are in (or after 5 s), and 300 ms later, so that
// messages of the first call, had any been sent, would be in too (they were sent before the second call began).
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { LoggingMessageNotificationSchema } from "@modelcontextprotocol/sdk/types.js";

const [url] = process.argv.slice(2);
if (!url) {
  console.error("usage: node log_level_client.mjs <url>");
  process.exit(2);
}

const received = [];
const client = new Client({ name: "log-level-client", version: "0.1.0" });
client.setNotificationHandler(LoggingMessageNotificationSchema, (notification) => {
  received.push(notification.params.data);
});
await client.connect(new StreamableHTTPClientTransport(new URL(url)));

await client.setLoggingLevel("warning");
await client.callTool({ name: "test_tool_with_logging", arguments: {} });
await client.setLoggingLevel("info");
await client.callTool({ name: "test_tool_with_logging", arguments: {} });

const deadline = Date.now() + 5000;
while (received.length < 3 && Date.now() < deadline) {
  await new Promise((resolve) => setTimeout(resolve, 20));
}
await new Promise((resolve) => setTimeout(resolve, 300));
process.stdout.write(JSON.stringify(received) + "\n");
await client.close();
