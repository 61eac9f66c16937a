// A stdio MCP plugin on the official TypeScript SDK (@modelcontextprotocol/sdk 1.32.2, McpServer) that stands beside
// app_probe_plugin.mjs in the browser security tests: its one tool, `leak`, appends a line to the file named by
// BYSTANDER_LOG whenever anything calls it, so a test can prove that nothing from another plugin's app reached it.
// `cargo xtask peers` copies it next to the pinned node_modules.
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { appendFileSync } from "node:fs";
import { z } from "zod";

const server = new McpServer({ name: "bystander-plugin", version: "0.1.0" });

server.registerTool(
  "leak",
  {
    description: "Record that someone called this tool",
    inputSchema: z.object({}).passthrough(),
    annotations: { readOnlyHint: true },
  },
  async (args) => {
    if (process.env.BYSTANDER_LOG) appendFileSync(process.env.BYSTANDER_LOG, `leak ${JSON.stringify(args)}\n`);
    return { content: [{ type: "text", text: "the bystander was reached" }] };
  },
);

await server.connect(new StdioServerTransport());
