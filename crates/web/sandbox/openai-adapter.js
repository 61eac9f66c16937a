// formwork's window.openai for text/html+skybridge widgets, put first in the widget's document by the app
// sandbox. It speaks the MCP Apps bridge to the workbench page (JSON-RPC over postMessage to the parent), so a
// widget's calls take the same road, and meet the same checks in the host, as an MCP App's.
//
// The sandbox calls it with what is known when the document is served (the call's arguments, its result if it
// came, the saved widget state, the page's theme, display mode, height and locale), so that a widget reading
// `window.openai` in its first lines sees them, as in ChatGPT; the bridge keeps them current after that.
((initial) => {
  "use strict";
  const parent = window.parent;
  if (!parent || parent === window) return;
  const pending = new Map();
  let nextId = 1;
  const globals = {
    toolInput: {},
    toolOutput: null,
    toolResponseMetadata: null,
    widgetState: null,
    theme: "light",
    displayMode: "inline",
    maxHeight: 640,
    locale: "en",
    safeArea: { insets: { top: 0, bottom: 0, left: 0, right: 0 } },
    userAgent: { device: { type: "desktop" }, capabilities: { hover: true, touch: false } },
  };
  for (const key of ["toolInput", "toolOutput", "toolResponseMetadata", "widgetState", "theme", "displayMode", "maxHeight", "locale"]) {
    if (initial && key in initial) globals[key] = initial[key];
  }

  function post(message) {
    parent.postMessage(message, "*");
  }

  function request(method, params) {
    const id = `openai-${nextId++}`;
    return new Promise((resolve, reject) => {
      pending.set(id, { resolve, reject });
      post({ jsonrpc: "2.0", id, method, params });
    });
  }

  function setGlobals(changes) {
    Object.assign(globals, changes);
    window.dispatchEvent(new CustomEvent("openai:set_globals", { detail: { globals: changes } }));
  }

  function fromContext(context) {
    const changes = {};
    if (context.theme === "light" || context.theme === "dark") changes.theme = context.theme;
    if (typeof context.displayMode === "string") changes.displayMode = context.displayMode;
    const box = context.containerDimensions;
    if (box && typeof (box.maxHeight ?? box.height) === "number") changes.maxHeight = box.maxHeight ?? box.height;
    if (typeof context.locale === "string") changes.locale = context.locale;
    if ("openai/widgetState" in context) changes.widgetState = context["openai/widgetState"];
    return changes;
  }

  window.addEventListener("message", (event) => {
    if (event.source !== parent) return;
    const message = event.data;
    if (!message || message.jsonrpc !== "2.0") return;
    if (message.method === undefined) {
      const waiting = pending.get(message.id);
      if (!waiting) return;
      pending.delete(message.id);
      if (message.error) waiting.reject(new Error(message.error.message));
      else waiting.resolve(message.result);
      return;
    }
    const params = message.params ?? {};
    switch (message.method) {
      case "ui/notifications/tool-input":
        setGlobals({ toolInput: params.arguments ?? {} });
        break;
      case "ui/notifications/tool-result":
        setGlobals({ toolOutput: params.structuredContent ?? null, toolResponseMetadata: params._meta ?? null });
        break;
      case "ui/notifications/host-context-changed":
        setGlobals(fromContext(params));
        break;
      case "ui/resource-teardown":
        post({ jsonrpc: "2.0", id: message.id, result: {} });
        break;
      default:
        break;
    }
  });

  const api = {
    callTool: (name, args) => request("tools/call", { name, arguments: args ?? {} }),
    setWidgetState: (state) => {
      setGlobals({ widgetState: state });
      return request("openai/setWidgetState", { state });
    },
    sendFollowUpMessage: ({ prompt }) =>
      request("ui/message", { role: "user", content: [{ type: "text", text: String(prompt) }] }).then(() => undefined),
    openExternal: ({ href }) => request("ui/open-link", { url: String(href) }).then(() => undefined),
    requestDisplayMode: ({ mode }) =>
      request("ui/request-display-mode", { mode }).then((result) => {
        setGlobals({ displayMode: result.mode });
        return result;
      }),
    notifyIntrinsicHeight: (height) => post({ jsonrpc: "2.0", method: "ui/notifications/size-changed", params: { height } }),
  };
  const openai = {};
  for (const key of Object.keys(globals)) Object.defineProperty(openai, key, { get: () => globals[key], enumerable: true });
  for (const [key, value] of Object.entries(api)) Object.defineProperty(openai, key, { value, enumerable: true });
  Object.defineProperty(window, "openai", { value: Object.freeze(openai), writable: false, configurable: false });

  request("ui/initialize", {
    appInfo: { name: "openai-widget", version: "1" },
    appCapabilities: {},
    protocolVersion: "2026-01-26",
  }).then((result) => {
    const changes = fromContext(result?.hostContext ?? {});
    // The state served with the document is the latest until the widget sets one: the host may have read it
    // before the widget's own first setWidgetState arrived.
    if (initial && "widgetState" in initial) delete changes.widgetState;
    setGlobals(changes);
    post({ jsonrpc: "2.0", method: "ui/notifications/initialized", params: {} });
  });
})
