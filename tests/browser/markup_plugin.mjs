// A stdio MCP plugin on the official TypeScript SDK whose every piece of text is HTML: the tool's title and
// description, the form's message, each question's title and description, option labels, a text default, and
// the tool result. The browser test (run.mjs, case `markup-from-the-plugin-stays-inert`) checks that the workbench
// shows all of it as text. The SDK is loaded from $FORMWORK_PEERS/npm/node_modules, so this file can stay in
// tests/browser/.
import { createRequire } from "node:module";
import path from "node:path";

const modules = process.argv[2] ?? path.join(process.env.FORMWORK_PEERS ?? ".", "npm", "node_modules");
const require = createRequire(path.join(modules, "noop.js"));
const { McpServer } = require("@modelcontextprotocol/sdk/server/mcp.js");
const { StdioServerTransport } = require("@modelcontextprotocol/sdk/server/stdio.js");

// Each string sets window.__formworkPwned if it ever becomes markup.
const m = (tag) => `<img src=x onerror="window.__formworkPwned='${tag}'"><b>${tag}</b><script>window.__formworkPwned='${tag}'</script>`;

const server = new McpServer({ name: "markup-plugin", version: "0.1.0" });

const schema = {
  type: "object",
  properties: {
    note: { type: "string", title: m("note-title"), description: m("note-description"), default: m("note-default") },
    pick: {
      type: "string",
      title: m("pick-title"),
      description: m("pick-description"),
      oneOf: [
        { const: "one", title: m("option-one") },
        { const: "two", title: m("option-two") },
      ],
    },
  },
  required: ["note", "pick"],
};

server.registerTool("ask_markup", { title: m("tool-title"), description: m("tool-description") }, async () => {
  try {
    const r = await server.server.elicitInput({ message: m("form-message"), requestedSchema: schema });
    return { content: [{ type: "text", text: "result: " + JSON.stringify(r) }, { type: "text", text: m("result-text") }] };
  } catch (e) {
    return { isError: true, content: [{ type: "text", text: `error: ${e.message}` }] };
  }
});

await server.connect(new StdioServerTransport());
