// A stdio plugin on the official TypeScript SDK 2.4.0 (`@modelcontextprotocol/server`) that asks through
// 2026-07-28 rounds: each tool returns `inputRequired(...)` until `ctx.mcpReq.inputResponses` holds what it needs.
// `serveStdio` lets the opening exchange choose the era (`server/discover`: 2026-07-28; `initialize`: the SDK's
// legacy shim pushes the same requests as `elicitation/create`).
//
// - `deploy`: a target form; for production a confirmation form in a second round (the target rides the
//   plain-JSON `requestState`).
// - `two_forms`: two forms in one round.
// - `state_only`: a result with only `requestState`, then the state it got back.
// - `open_url`: a URL-mode request; reports the action.
import { McpServer, acceptedContent, inputRequired, inputResponse } from "@modelcontextprotocol/server";
import { serveStdio } from "@modelcontextprotocol/server/stdio";
import * as z from "zod";

const text = (value) => ({ content: [{ type: "text", text: value }] });
const outcome = (responses, key) => {
  const view = inputResponse(responses, key);
  if (view.kind !== "elicit") return view.kind;
  return view.action === "accept" && view.content ? `accept ${JSON.stringify(view.content)}` : view.action;
};

function plugin() {
  const server = new McpServer({ name: "ts2-mrtr-plugin", version: "1.0.0" });
  const Target = z.object({ target: z.enum(["staging", "production"]) });
  const Confirm = z.object({ confirm: z.boolean() });

  server.registerTool("deploy", { description: "A target, then a confirmation for production" }, async (ctx) => {
    const responses = ctx.mcpReq.inputResponses;
    const stateText = ctx.mcpReq.requestState();
    const state = stateText ? JSON.parse(stateText) : {};
    const target = state.target ?? acceptedContent(responses, "target", Target)?.target;
    if (target === undefined) {
      if (responses?.target) return text(`target: ${outcome(responses, "target")}`);
      return inputRequired({
        inputRequests: { target: inputRequired.elicit({ message: "Where should it go?", requestedSchema: Target }) },
      });
    }
    if (target !== "production") return text(`target: ${target}`);
    if (responses?.confirm === undefined) {
      return inputRequired({
        inputRequests: { confirm: inputRequired.elicit({ message: "Deploy to production now?", requestedSchema: Confirm }) },
        requestState: JSON.stringify({ target }),
      });
    }
    return text(`target: ${target}; confirm: ${outcome(responses, "confirm")}`);
  });

  const Name = z.object({ name: z.string() });
  const Color = z.object({ color: z.enum(["red", "green", "blue"]) });
  server.registerTool("two_forms", { description: "Two forms in one round" }, async (ctx) => {
    const responses = ctx.mcpReq.inputResponses;
    if (!responses) {
      return inputRequired({
        inputRequests: {
          name: inputRequired.elicit({ message: "Who are you?", requestedSchema: Name }),
          color: inputRequired.elicit({ message: "Pick a color", requestedSchema: Color }),
        },
      });
    }
    return text(`name: ${outcome(responses, "name")}; color: ${outcome(responses, "color")}`);
  });

  server.registerTool("state_only", { description: "Asks to be called again, once" }, async (ctx) => {
    const state = ctx.mcpReq.requestState();
    if (state === undefined) return inputRequired({ requestState: "come back later" });
    return text(`state: ${state}`);
  });

  server.registerTool("open_url", { description: "A URL-mode request" }, async (ctx) => {
    const responses = ctx.mcpReq.inputResponses;
    if (!responses) {
      return inputRequired({
        inputRequests: { link: inputRequired.elicitUrl({ message: "Sign in", url: "https://example.com/sign-in" }) },
      });
    }
    return text(`link: ${outcome(responses, "link")}`);
  });

  return server;
}

serveStdio(plugin);
