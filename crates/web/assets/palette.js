// The tool palette: every tool of every configured server, callable from the page.
//
// A tool's arguments are entered in a form drawn from its inputSchema (the server sends the render
// block when the form engine can draw the schema), or as raw JSON when it cannot or the person prefers.
// A call goes out as a `call_tool` command on the session socket; a server that needs a sign-in gets a
// button that sends `sign_in`, and the list is drawn again once `signed_in` comes back.

import { append, el, pretty } from "./dom.js";
import { createField } from "./fields.js";
import { api } from "./net.js";

export class Palette {
  // hooks: {send(command) -> bool}
  constructor(root, hooks) {
    this.root = root;
    this.hooks = hooks;
    this.list = root.querySelector("[data-testid=palette-list]");
    this.panel = root.querySelector("[data-testid=palette-panel]");
    root.querySelector("[data-testid=palette-refresh]").addEventListener("click", () => this.load(true));
  }

  async load(refresh = false) {
    this.list.replaceChildren(el("p", { class: "hint", testid: "palette-loading", text: "Listing tools…" }));
    let catalogue;
    try {
      catalogue = await api(refresh ? "/api/tools?refresh=true" : "/api/tools");
    } catch (error) {
      this.list.replaceChildren(el("p", { class: "card-error", text: `Could not list the tools: ${error.message}` }));
      return;
    }
    this.draw(catalogue.servers ?? []);
  }

  draw(servers) {
    if (!servers.length) {
      this.list.replaceChildren(el("p", { class: "hint", text: "No servers are configured." }));
      return;
    }
    this.list.replaceChildren(
      ...servers.map((server) =>
        el(
          "section",
          { class: "palette-server", testid: "palette-server", dataset: { server: server.name } },
          el("h3", { text: server.name }),
          server.error ? el("p", { class: "card-error", testid: "palette-server-error", text: server.error }) : null,
          // The server asks a person to sign in: the session connects, and its card takes it from there.
          server.sign_in
            ? el("button", {
                type: "button",
                class: "button",
                testid: "palette-sign-in",
                dataset: { server: server.name },
                text: `Sign in to ${server.name}`,
                onclick: () => this.hooks.send({ type: "sign_in", server: server.name }),
              })
            : null,
          !server.error && !server.tools.length ? el("p", { class: "hint", text: "No tools." }) : null,
          el(
            "ul",
            { class: "palette-tools" },
            server.tools.map((tool) =>
              el(
                "li",
                {},
                el(
                  "button",
                  {
                    type: "button",
                    class: "palette-tool",
                    testid: "palette-tool",
                    dataset: { server: server.name, tool: tool.name },
                    onclick: (event) => this.open(server.name, tool, event.currentTarget),
                  },
                  el("span", { class: "palette-tool-name", text: tool.title || tool.name }),
                  tool.description ? el("span", { class: "palette-tool-description", text: tool.description }) : null,
                ),
              ),
            ),
          ),
        ),
      ),
    );
  }

  // Opens the panel of one tool: its form (or JSON box), Call and Close.
  open(server, tool, opener) {
    this.opener = opener;
    const render = tool.render;
    const fields = render ? render.questions.map((q) => createField(q)) : [];
    let useJson = !render;
    const json = el("textarea", {
      class: "input json-input",
      testid: "palette-json",
      rows: "8",
      spellcheck: "false",
      "aria-label": "Arguments as JSON",
    });
    json.value = "{}";
    const form = el("div", { class: "palette-form", testid: "palette-form" }, fields.map((f) => f.element));
    if (!fields.length) form.append(el("p", { class: "hint", text: "This tool takes no arguments." }));
    const error = el("p", { class: "card-error", testid: "palette-error", role: "alert", hidden: true });
    const status = el("p", { class: "hint", testid: "palette-status", role: "status" });
    const showError = (text) => {
      error.textContent = text ?? "";
      error.hidden = !text;
    };
    const typedArguments = () => {
      const args = {};
      for (const field of fields) {
        const typed = field.typed();
        if (typed.present) args[field.question.id] = typed.value;
      }
      return args;
    };
    const toggle = el("button", {
      type: "button",
      class: "button button-quiet",
      testid: "palette-toggle-json",
      text: "Edit as JSON",
      hidden: !render,
      onclick: () => {
        useJson = !useJson;
        if (useJson) json.value = pretty(typedArguments());
        sync();
      },
    });
    const sync = () => {
      form.hidden = useJson;
      json.hidden = !useJson;
      toggle.textContent = useJson ? "Use the form" : "Edit as JSON";
    };
    const call = () => {
      showError(null);
      let args;
      if (useJson) {
        try {
          args = JSON.parse(json.value);
        } catch (e) {
          showError(`Not JSON: ${e.message}`);
          json.focus();
          return;
        }
        if (args === null || typeof args !== "object" || Array.isArray(args)) {
          showError("The arguments must be a JSON object.");
          json.focus();
          return;
        }
      } else {
        let first = null;
        for (const field of fields) {
          const problem = field.check(true);
          field.setError(problem);
          if (problem && !first) first = field;
        }
        if (first) {
          showError("Some arguments need fixing.");
          first.focus();
          return;
        }
        args = typedArguments();
      }
      if (!this.hooks.send({ type: "call_tool", server, tool: tool.name, arguments: args })) {
        showError("Not connected to a session.");
        return;
      }
      status.textContent = `Called ${server} · ${tool.name}; see the transcript.`;
    };
    const unsupported = tool.unsupported
      ? el("p", { class: "hint", testid: "palette-unsupported", text: `Its arguments cannot be drawn as a form (${tool.unsupported}); enter them as JSON.` })
      : null;
    this.panel.replaceChildren();
    append(this.panel, [
      el("h3", { id: "palette-panel-title", tabindex: "-1", text: `${server} · ${tool.title || tool.name}` }),
      tool.description ? el("p", { class: "palette-description", text: tool.description }) : null,
      unsupported,
      form,
      json,
      el(
        "details",
        { class: "palette-schema" },
        el("summary", { text: "inputSchema" }),
        el("pre", { text: pretty(tool.inputSchema ?? {}) }),
      ),
      error,
      el(
        "div",
        { class: "card-actions" },
        el("button", { type: "button", class: "button button-primary", testid: "palette-call", text: "Call", onclick: call }),
        toggle,
        el("button", { type: "button", class: "button button-quiet", testid: "palette-close", text: "Close", onclick: () => this.close() }),
      ),
      status,
    ]);
    sync();
    this.panel.hidden = false;
    this.panel.dataset.server = server;
    this.panel.dataset.tool = tool.name;
    (fields[0] ?? null)?.focus();
    if (!this.panel.contains(document.activeElement)) this.panel.querySelector("h3").focus();
  }

  close() {
    this.panel.hidden = true;
    this.panel.replaceChildren();
    this.opener?.focus();
  }
}
