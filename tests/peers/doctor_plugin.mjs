// A stdio MCP plugin on the official TypeScript SDK (@modelcontextprotocol/sdk 1.32.2, McpServer) that provokes each
// row of the plugin-forms symptom table, for `formwork doctor`'s tests. `cargo xtask peers` copies it next to the
// pinned node_modules.
//
//   node doctor_plugin.mjs                       every tool says readOnlyHint: true (no approval card under "auto")
//   node doctor_plugin.mjs --unannotated         no annotations (every call asks under "auto")
//   node doctor_plugin.mjs --ask-while-listing   asks for a form while answering tools/list (outside any tool call)
//
// Each tool that asks returns `result: <JSON of the ElicitResult>` or `error: ...` with isError.
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { ElicitResultSchema } from "@modelcontextprotocol/sdk/types.js";

const unannotated = process.argv.includes("--unannotated");
const askWhileListing = process.argv.includes("--ask-while-listing");

const server = new McpServer({ name: "doctor-plugin", version: "0.1.0" });

// The seed's single-choice form.
const strategyForm = {
  mode: "form",
  message: "Choose how to continue",
  requestedSchema: {
    type: "object",
    properties: {
      strategy: {
        type: "string",
        title: "Strategy",
        description: "How should the plugin continue?",
        oneOf: [
          { const: "fast", title: "Fast" },
          { const: "safe", title: "Safe" },
          { const: "manual", title: "Ask me before each step" },
        ],
      },
    },
    required: ["strategy"],
  },
};

function tool(name, description, handler) {
  const config = { description };
  if (!unannotated) config.annotations = { readOnlyHint: true };
  server.registerTool(name, config, handler);
}

const text = (t, isError = false) => ({ content: [{ type: "text", text: t }], ...(isError ? { isError } : {}) });

tool("choose_strategy", "Ask the seed's strategy form and report the answer", async () => {
  try {
    return text("result: " + JSON.stringify(await server.server.elicitInput(strategyForm)));
  } catch (e) {
    return text(`error: ${e.message}`, true);
  }
});

// A plugin that requires the openai/form extension: it looks for it in the client capabilities, as the seed
// recommends, and fails before sending anything when it is missing.
tool("ask_openai_form", "Ask with openai/form when the client declares it", async () => {
  const capabilities = server.server.getClientCapabilities() ?? {};
  const extension = capabilities.extensions?.["openai/form"] ?? capabilities.experimental?.["openai/form"];
  if (!extension) {
    return text("error: The MCP client does not support openai/form requests.", true);
  }
  const r = await server.server.request({ method: "openai/form", params: strategyForm }, ElicitResultSchema);
  return text("result: " + JSON.stringify(r));
});

// A plugin that sends the custom openai/form request without checking.
tool("send_openai_form", "Send an openai/form request regardless of the client capabilities", async () => {
  try {
    const r = await server.server.request({ method: "openai/form", params: strategyForm }, ElicitResultSchema);
    return text("result: " + JSON.stringify(r));
  } catch (e) {
    return text(`error: code=${e.code} ${e.message}`, true);
  }
});

// A schema no form can show: a nested object.
tool("ask_nested", "Ask for an address as a nested object", async () => {
  try {
    const r = await server.server.elicitInput({
      message: "Where should we ship?",
      requestedSchema: {
        type: "object",
        properties: {
          address: {
            type: "object",
            title: "Address",
            properties: { street: { type: "string" }, city: { type: "string" } },
          },
        },
        required: ["address"],
      },
    });
    return text("result: " + JSON.stringify(r));
  } catch (e) {
    return text(`error: ${e.message}`, true);
  }
});

// Handles accept, but forgets cancel and decline: the call never returns after them.
tool("ask_then_hang", "Ask the strategy form; only an accepted answer lets the call finish", async () => {
  const r = await server.server.elicitInput(strategyForm);
  if (r.action === "accept") return text("result: " + JSON.stringify(r));
  await new Promise(() => {});
});

tool("ask_then_exit", "Ask the strategy form; exit without answering the call unless it was accepted", async () => {
  const r = await server.server.elicitInput(strategyForm);
  if (r.action === "accept") return text("result: " + JSON.stringify(r));
  process.exit(0);
});

// What the client declared in initialize, as the SDK saw it.
tool("client_capabilities", "Report the client capabilities", async () =>
  text("result: " + JSON.stringify(server.server.getClientCapabilities() ?? null)),
);

if (askWhileListing) {
  // Wrap the SDK's tools/list handler: ask a form first, then list.
  const handlers = server.server._requestHandlers;
  const list = handlers.get("tools/list");
  handlers.set("tools/list", async (request, extra) => {
    try {
      await server.server.elicitInput(strategyForm);
    } catch (e) {
      console.error("doctor_plugin: form while listing failed:", e.message);
    }
    return list(request, extra);
  });
}

await server.connect(new StdioServerTransport());
