// The instrument of the 2026-07-28 part of `cargo xtask bench`: a stdio plugin on the official TypeScript SDK 2.4.0
// (`@modelcontextprotocol/server`, `serveStdio`), shared by every client that part compares.
//
// Its tool `bench_rounds {rounds}` answers `input_required` with the same realistic form `rounds` times (at most 9,
// under every client's limit of 10), then completes. Each round is timed by the plugin itself, from the moment the
// `input_required` line is handed to stdout until the retry's bytes arrive on stdin (before the SDK parses them), so
// every client is measured between the same two points and the plugin's own SDK work is outside the span. Rounds
// are sequential, so one time of each kind suffices; the samples ride the plain-JSON `requestState`.
// Every answer must be `accept` with exactly the form's defaults; anything else ends the tool with `isError`. The
// result is the JSON text `{"ns":[...]}` of the rounds after the first (which carries each client's cold path).
import { McpServer, inputRequired, inputResponse } from "@modelcontextprotocol/server";
import { serveStdio } from "@modelcontextprotocol/server/stdio";
import * as z from "zod";
import { EXPECTED, params } from "./bench_form.mjs";

const expected = JSON.stringify(EXPECTED);
const form = { method: "elicitation/create", params };
const fail = (text) => ({ content: [{ type: "text", text }], isError: true });

let askedAt = 0n;
let retriedAt = 0n;
const write = process.stdout.write.bind(process.stdout);
process.stdout.write = (chunk, ...rest) => {
  if (String(chunk).includes('"input_required"')) askedAt = process.hrtime.bigint();
  return write(chunk, ...rest);
};
process.stdin.prependListener("data", (chunk) => {
  if (chunk.includes('"inputResponses"')) retriedAt = process.hrtime.bigint();
});

function plugin() {
  const server = new McpServer({ name: "bench-mrtr-plugin", version: "0.1.0" });
  server.registerTool(
    "bench_rounds",
    { description: "Timed input_required rounds", inputSchema: z.object({ rounds: z.number().int().min(1).max(9) }) },
    async ({ rounds }, ctx) => {
      const stateText = ctx.mcpReq.requestState();
      const state = stateText ? JSON.parse(stateText) : { done: 0, ns: [] };
      if (stateText) {
        const answer = inputResponse(ctx.mcpReq.inputResponses, "choice");
        if (answer.kind !== "elicit" || answer.action !== "accept" || JSON.stringify(answer.content) !== expected) {
          return fail(`round ${state.done + 1}: unexpected answer ${JSON.stringify(answer)}`);
        }
        if (state.done > 0) state.ns.push((retriedAt - askedAt).toString());
        state.done += 1;
      }
      if (state.done === rounds) {
        return { content: [{ type: "text", text: `{"ns":[${state.ns.join(",")}]}` }] };
      }
      return inputRequired({ inputRequests: { choice: form }, requestState: JSON.stringify(state) });
    },
  );
  return server;
}

serveStdio(plugin);
