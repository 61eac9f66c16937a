// A stdio MCP plugin written with the official TypeScript SDK (@modelcontextprotocol/sdk 1.32.2, McpServer).
//
// Every tool asks the host for a form through the SDK's own `server.server.elicitInput`, so the SDK's Ajv check of
// accepted content runs exactly as it does for any real plugin. Each tool returns `result: <JSON of the
// ElicitResult the SDK handed back>`, or `isError` with the SDK's error text, so the integration tests can assert
// what the plugin really received. `cargo xtask peers` copies this file next to the pinned node_modules.
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { closeSync, fsyncSync, openSync, writeSync, writeFileSync } from "node:fs";
import { z } from "zod";

const server = new McpServer({ name: "ts-plugin", version: "0.1.0" });

// The 10-field form of peers.md §3.1: one property of every kind, some with defaults, three required.
const formSchema = {
  type: "object",
  properties: {
    name: { type: "string", title: "Name", description: "Your name", minLength: 2, maxLength: 20, default: "Ada" },
    email: { type: "string", title: "Email", format: "email" },
    age: { type: "integer", title: "Age", minimum: 0, maximum: 150, default: 36 },
    score: { type: "number", title: "Score", minimum: 0, maximum: 10, default: 7.5 },
    subscribe: { type: "boolean", title: "Subscribe", default: false },
    color: { type: "string", title: "Color", enum: ["red", "green", "blue"], default: "green" },
    size: {
      type: "string",
      title: "Size",
      oneOf: [
        { const: "s", title: "Small" },
        { const: "m", title: "Medium" },
        { const: "l", title: "Large" },
      ],
      default: "m",
    },
    legacy: { type: "string", title: "Legacy", enum: ["a", "b"], enumNames: ["Alpha", "Beta"] },
    tags: {
      type: "array",
      title: "Tags",
      minItems: 1,
      maxItems: 2,
      items: { type: "string", enum: ["x", "y", "z"] },
      default: ["x"],
    },
    toppings: {
      type: "array",
      title: "Toppings",
      items: {
        anyOf: [
          { const: "ch", title: "Cheese" },
          { const: "ol", title: "Olives" },
        ],
      },
    },
  },
  required: ["name", "email", "color"],
};

// One tool per field kind: a single required property, named so that an error message naming it is unambiguous.
// The SDK sends the schema as written (a server strips nothing), so `pattern` reaches the host and Ajv checks it.
const singleKind = {
  ask_string: {
    nickname: {
      type: "string",
      title: "Nickname",
      description: "3 to 8 lowercase letters, digits or dashes",
      minLength: 3,
      maxLength: 8,
      pattern: "^[a-z0-9-]+$",
    },
  },
  // A pattern that takes exponential time in a backtracking engine on "aaa…a!": the workbench must not run it.
  ask_hostile_pattern: { word: { type: "string", title: "Word", pattern: "^(a+)+$" } },
  ask_email: { email: { type: "string", title: "Email", format: "email" } },
  ask_uri: { homepage: { type: "string", title: "Homepage", format: "uri" } },
  ask_date: { birthday: { type: "string", title: "Birthday", format: "date" } },
  ask_datetime: { meeting: { type: "string", title: "Meeting", format: "date-time" } },
  ask_integer: { age: { type: "integer", title: "Age", minimum: 0, maximum: 150 } },
  ask_number: { score: { type: "number", title: "Score", minimum: 0, maximum: 10 } },
  ask_boolean: { agree: { type: "boolean", title: "Agree to the terms" } },
  ask_enum: { color: { type: "string", title: "Color", enum: ["red", "green", "blue"] } },
  ask_titled: {
    size: {
      type: "string",
      title: "Size",
      oneOf: [
        { const: "s", title: "Small" },
        { const: "m", title: "Medium" },
        { const: "l", title: "Large" },
      ],
    },
  },
  // A key that holds ": ", so an error naming it cannot be split at the separator.
  ask_colon_key: { "code: id": { type: "string", title: "Code", pattern: "^[0-9]+$" } },
  ask_legacy: { legacy: { type: "string", title: "Legacy", enum: ["a", "b"], enumNames: ["Alpha", "Beta"] } },
  ask_multi: {
    tags: { type: "array", title: "Tags", minItems: 1, maxItems: 2, items: { type: "string", enum: ["x", "y", "z"] } },
  },
  ask_titled_multi: {
    toppings: {
      type: "array",
      title: "Toppings",
      minItems: 1,
      maxItems: 2,
      items: {
        anyOf: [
          { const: "ch", title: "Cheese" },
          { const: "ol", title: "Olives" },
          { const: "pe", title: "Peppers" },
        ],
      },
    },
  },
};

function singleKindSchema(tool) {
  const properties = singleKind[tool];
  return { type: "object", properties, required: Object.keys(properties) };
}

function resultText(r) {
  return { content: [{ type: "text", text: "result: " + JSON.stringify(r) }] };
}

function errorText(e) {
  return { isError: true, content: [{ type: "text", text: `error: ${e.constructor.name} code=${e.code} msg=${e.message}` }] };
}

async function elicit(params) {
  try {
    return resultText(await server.server.elicitInput(params));
  } catch (e) {
    return errorText(e);
  }
}

server.registerTool("ask_form", { description: "Ask for the 10-field form" }, async () =>
  elicit({ message: "Please fill the form", requestedSchema: formSchema }),
);

for (const tool of Object.keys(singleKind)) {
  const key = Object.keys(singleKind[tool])[0];
  server.registerTool(tool, { description: `Ask for one ${key}` }, async () =>
    elicit({ message: `Please give ${key}`, requestedSchema: singleKindSchema(tool) }),
  );
}

server.registerTool("ask_twice", { description: "Ask for a color, then for agreement" }, async () => {
  try {
    const first = await server.server.elicitInput({ message: "First form", requestedSchema: singleKindSchema("ask_enum") });
    const second = await server.server.elicitInput({ message: "Second form", requestedSchema: singleKindSchema("ask_boolean") });
    return { content: [{ type: "text", text: "result: " + JSON.stringify([first, second]) }] };
  } catch (e) {
    return errorText(e);
  }
});

// `count` forms at once, each asking for one boolean; returns the ElicitResult of each, in order.
server.registerTool(
  "ask_many",
  { description: "Ask `count` forms at once", inputSchema: { count: z.number().int() } },
  async ({ count }) => {
    const asks = Array.from({ length: count }, (_, i) =>
      server.server
        .elicitInput({ message: `Form ${i + 1}`, requestedSchema: singleKindSchema("ask_boolean") })
        .catch((e) => ({ error: e.message })),
    );
    return resultText(await Promise.all(asks));
  },
);

// A form that asks for a secret, which plugins must not do: the host warns (or declines).
server.registerTool("ask_password", { description: "Ask for a password" }, async () =>
  elicit({
    message: "Sign in to the legacy service",
    requestedSchema: {
      type: "object",
      properties: {
        user: { type: "string", title: "User name" },
        password: { type: "string", title: "Password" },
      },
      required: ["user", "password"],
    },
  }),
);

server.registerTool("ask_url", { description: "Ask the user to open a URL, then report completion" }, async () => {
  try {
    const r = await server.server.elicitInput({
      mode: "url",
      message: "Log in please",
      url: "https://example.com/login",
      elicitationId: "e-42",
    });
    try {
      await server.server.createElicitationCompletionNotifier("e-42")();
    } catch (e) {
      console.error("notifier:", e.message);
    }
    return resultText(r);
  } catch (e) {
    return errorText(e);
  }
});

// URL mode to the URL the caller names (the browser tests point it at a listener of their own).
server.registerTool(
  "ask_url_to",
  { description: "Ask the user to open the URL given", inputSchema: { url: z.string() } },
  async ({ url }) => elicit({ mode: "url", message: "Open this link", url, elicitationId: "e-to" }),
);

server.registerTool("crash_mid_form", { description: "Send a form, then exit(1) 200 ms later" }, async () => {
  setTimeout(() => process.exit(1), 200);
  await server.server.elicitInput({ message: "This plugin is about to crash", requestedSchema: singleKindSchema("ask_enum") });
  // Never answer: the process exits while the call is still running.
  await new Promise(() => {});
});

// Asks for a form after the call has returned, when no tool call of this client is running.
let lastOutcome = null;
server.registerTool("ask_later", { description: "Return at once, then ask for a color 300 ms later" }, async () => {
  lastOutcome = null;
  setTimeout(() => {
    server.server
      .elicitInput({ message: "A form outside any call", requestedSchema: singleKindSchema("ask_enum") })
      .then((r) => (lastOutcome = r), (e) => (lastOutcome = { error: e.message }));
  }, 300);
  return { content: [{ type: "text", text: "scheduled" }] };
});
// Asks during the call but returns without waiting for the answer (the form outlives its call).
server.registerTool("ask_and_return", { description: "Ask for a color, return 300 ms later without the answer" }, async () => {
  lastOutcome = null;
  server.server
    .elicitInput({ message: "A form its call does not wait for", requestedSchema: singleKindSchema("ask_enum") })
    .then((r) => (lastOutcome = r), (e) => (lastOutcome = { error: e.message }));
  await new Promise((resolve) => setTimeout(resolve, 300));
  return { content: [{ type: "text", text: "returned" }] };
});
server.registerTool("last_outcome", { description: "What the form of ask_later or ask_and_return got back" }, async () => ({
  content: [{ type: "text", text: "result: " + JSON.stringify(lastOutcome) }],
}));

// Runs until the client cancels it (writing the file `marker` once running); `last_abort` tells what
// the cancellation said.
let lastAbort = null;
async function untilCancelled(extra) {
  await new Promise((resolve) => {
    const aborted = () => {
      lastAbort = String(extra.signal.reason);
      resolve();
    };
    // The cancellation may come before the handler runs.
    if (extra.signal.aborted) aborted();
    else extra.signal.addEventListener("abort", aborted);
  });
  return { content: [{ type: "text", text: "cancelled" }] };
}
server.registerTool("hold", { description: "Run until cancelled", inputSchema: { marker: z.string().optional() } }, async ({ marker }, extra) => {
  lastAbort = null;
  if (marker) writeFileSync(marker, "running");
  return untilCancelled(extra);
});
// Asks for agreement, then runs until cancelled like `hold`: a form, then a call that never ends.
server.registerTool("ask_then_hold", { description: "Ask for agreement, then run until cancelled" }, async (extra) => {
  lastAbort = null;
  await server.server.elicitInput({ message: "Agree, then wait", requestedSchema: singleKindSchema("ask_boolean") });
  return untilCancelled(extra);
});
server.registerTool("last_abort", { description: "The reason the last `hold` or `ask_then_hold` was cancelled with" }, async () => ({
  content: [{ type: "text", text: "aborted: " + JSON.stringify(lastAbort) }],
}));

// For the durability test (crates/cli/tests/durability.rs): asks `forms` forms in a row and appends one JSON line per
// ElicitResult the SDK handed back to the file named by $FORMWORK_TEST_RECORD, synced before the tool goes on, so the
// file holds every answer this plugin received. The first line of a call says it started (the host let it run).
// `kill_host_after: n` SIGKILLs the host right after line n is written (0: the start line): at the very moment the
// plugin holds an answer, which is when a host that sent it before storing it would lose it.
const recordSchema = {
  type: "object",
  properties: {
    note: { type: "string", title: "Note", maxLength: 200 },
    count: { type: "integer", title: "Count", minimum: -1000, maximum: 1000 },
    ratio: { type: "number", title: "Ratio" },
    ok: { type: "boolean", title: "OK" },
    pick: { type: "string", title: "Pick", enum: ["alpha", "beta", "gamma"] },
  },
  required: ["note", "count", "ratio", "ok", "pick"],
};
function record(line, killHost) {
  const fd = openSync(process.env.FORMWORK_TEST_RECORD, "a");
  try {
    writeSync(fd, JSON.stringify(line) + "\n");
    if (killHost) process.kill(process.ppid, "SIGKILL");
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  if (killHost) process.exit(0);
}
// A killed host closes stdin without a word, and the SDK would sit out its request timeout: once what arrived
// has been recorded (promise callbacks run before setImmediate's), exit.
if (process.env.FORMWORK_TEST_RECORD) process.stdin.once("end", () => setImmediate(() => process.exit(0)));
server.registerTool(
  "ask_and_record",
  {
    description: "Ask `forms` forms and record every answer received (durability test)",
    inputSchema: { tag: z.string(), forms: z.number().int(), kill_host_after: z.number().int().optional() },
  },
  async ({ tag, forms, kill_host_after }) => {
    if (!process.env.FORMWORK_TEST_RECORD) return errorText(new Error("FORMWORK_TEST_RECORD is not set"));
    record({ tag, started: true, pid: process.pid, ppid: process.ppid }, kill_host_after === 0);
    const results = [];
    for (let form = 1; form <= forms; form += 1) {
      try {
        const result = await server.server.elicitInput({ message: `${tag} form ${form}`, requestedSchema: recordSchema });
        record({ tag, form, result }, kill_host_after === form);
        results.push(result);
      } catch (e) {
        return errorText(e);
      }
    }
    return resultText(results);
  },
);

// Any request the caller spells out, sent as is through the SDK's raw `request` (for `openai/elicitation/create`
// and OpenAI's form shapes, which `elicitInput` would reshape): returns the result exactly as it came, unparsed.
server.registerTool(
  "raw_request",
  {
    description: "Send the request `method` with `params` and return its result as sent",
    inputSchema: { method: z.string(), params: z.object({}).passthrough() },
  },
  async ({ method, params }) => {
    try {
      return resultText(await server.server.request({ method, params }, z.object({}).passthrough()));
    } catch (e) {
      return errorText(e);
    }
  },
);

// An OpenAI form through the extension's own method (the host serves it with features.openai_elicitation): a part
// picked from two resources (one with a data: thumbnail, one without) or from a file the person adds, and a free-text
// list of accessories with two suggestions.
const openaiPartForm = {
  mode: "form",
  message: "Choose a CAD part",
  requestedSchema: {
    type: "object",
    required: ["part"],
    properties: {
      part: {
        type: "string",
        format: "uri",
        title: "Part",
        "x-openai-input": {
          type: "resource",
          options: [
            {
              uri: "cad://parts/hex-bolt",
              name: "hex-bolt",
              title: "M6 hex bolt",
              description: "A fastener for the main joint",
              _meta: { "openai/thumbnail": { src: "data:image/gif;base64,R0lGODlhAQABAAAAACw=" } },
            },
            { uri: "cad://parts/washer", name: "washer" },
          ],
          userOptions: { kind: "file", accept: [".stl"] },
        },
      },
      accessories: {
        type: "array",
        title: "Accessories",
        items: {
          type: "string",
          "x-openai-suggestions": [
            { const: "washer", title: "Washer", description: "M6 steel" },
            { const: "spacer", title: "Spacer" },
          ],
        },
      },
    },
  },
};
server.registerTool("ask_openai_part", { description: "Ask for a part through openai/elicitation/create" }, async () => {
  try {
    return resultText(await server.server.request({ method: "openai/elicitation/create", params: openaiPartForm }, z.object({}).passthrough()));
  } catch (e) {
    return errorText(e);
  }
});

server.registerTool("fail", { description: "Return a tool error without asking anything" }, async () => ({
  content: [{ type: "text", text: "this tool always fails" }],
  isError: true,
}));

await server.connect(new StdioServerTransport());
