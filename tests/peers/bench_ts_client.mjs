// The reference client of `cargo xtask bench`: the official TypeScript SDK (@modelcontextprotocol/sdk 1.32.2)
// `Client`, with an elicitation handler that accepts every form at once with the fixed content `bench_plugin.mjs`
// expects. Usage:
//
//   node bench_ts_client.mjs '<tool arguments JSON>' <plugin command...>   over stdio (`StdioClientTransport`)
//   node bench_ts_client.mjs '<tool arguments JSON>' --url URL             over Streamable HTTP
//                                                                          (`StreamableHTTPClientTransport`)
//
// Over stdio it spawns the plugin command. It calls the plugin's `bench` tool and prints the `CallToolResult` as
// JSON on stdout, like `formwork call`. Exit 1 when the call fails or the result has `isError`. For an `https`
// URL signed by a CA of its own, node trusts that CA through `NODE_EXTRA_CA_CERTS`.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const [toolArguments, pluginProgram, ...pluginArgs] = process.argv.slice(2);
if (!pluginProgram || (pluginProgram === "--url" && pluginArgs.length !== 1)) {
  console.error("usage: node bench_ts_client.mjs '<tool arguments JSON>' (<plugin command...> | --url URL)");
  process.exit(2);
}

const CONTENT = { strategy: "safe", dry_run: true, retries: 3, target: "staging" };

const client = new Client({ name: "bench-ts-client", version: "0.1.0" }, { capabilities: { elicitation: { form: {} } } });
client.setRequestHandler(ElicitRequestSchema, async () => ({ action: "accept", content: { ...CONTENT } }));

const transport =
  pluginProgram === "--url"
    ? new StreamableHTTPClientTransport(new URL(pluginArgs[0]))
    : new StdioClientTransport({ command: pluginProgram, args: pluginArgs, stderr: "inherit" });
await client.connect(transport);
// A whole bench run is one tool call; the SDK's default 60 s request timeout would cut a long one short.
const result = await client.callTool({ name: "bench", arguments: JSON.parse(toolArguments) }, undefined, {
  timeout: 3_600_000,
});
process.stdout.write(JSON.stringify(result) + "\n");
await client.close();
process.exit(result.isError ? 1 : 0);
