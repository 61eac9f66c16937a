// Cards: the forms, URL requests and approvals a session asks of the person.
//
// A card is drawn from one `form_requested` or `approval_requested` event and lives in the transcript
// for good: once it ends, its controls give way to the outcome (accepted values, declined, cancelled
// and why). Card states, also in data-state: waiting (behind another card), open, sending, resolved.

import { el, show } from "./dom.js";
import { createField, answersOnClick } from "./fields.js";
import { APPROVAL_CHOICES, END_REASONS } from "./wire.js";

// A card may end twice: an answer the host could not store is followed by a cancel (`not-stored`),
// which replaces the outcome. A reason that is no EndReason (a decline's) shows as it is.
export function reasonText(reason) {
  return END_REASONS[reason] ?? reason;
}

// The approval choices as the page uses them: the wire name (`choice`) and its words.
const CHOICES = Object.entries(APPROVAL_CHOICES).map(([choice, words]) => ({ choice, ...words }));

// The choice of a render option: the host's approval question gives labels only.
function choiceOfLabel(label) {
  return CHOICES.find((c) => c.label === label);
}

class Card {
  // ctx: {send(command) -> bool, upload(file) -> Promise<{uri, name}>}
  constructor({ id, kind, source, title, ctx }) {
    this.id = id;
    this.ctx = ctx;
    this.heldFocus = false;
    this.titleNode = el("h3", { class: "card-title", testid: "card-header", tabindex: "-1", text: title });
    this.titleNode.id = `card-${id}`;
    this.body = el("div", { class: "card-body" });
    this.errorNode = el("p", { class: "card-error", testid: "card-error", role: "alert", hidden: true });
    this.waitingNode = el("p", {
      class: "card-waiting",
      testid: "card-waiting",
      hidden: true,
      text: "Waiting: another card above must be answered first.",
    });
    this.actions = el("div", { class: "card-actions" });
    this.outcome = el("div", { class: "card-outcome", testid: "outcome", hidden: true });
    this.element = el(
      "article",
      {
        class: `card card-${kind}`,
        testid: "form-card",
        dataset: { kind, formId: id, state: "open" },
        "aria-labelledby": this.titleNode.id,
      },
      el("header", { class: "card-head" }, el("p", { class: "card-source", testid: "card-source", text: source }), this.titleNode),
      this.waitingNode,
      this.body,
      this.errorNode,
      this.actions,
      this.outcome,
    );
  }

  get state() {
    return this.element.dataset.state;
  }

  setState(state) {
    this.element.dataset.state = state;
    const locked = state !== "open";
    this.waitingNode.hidden = state !== "waiting";
    this.setLocked(locked);
  }

  setLocked(locked) {
    for (const node of this.element.querySelectorAll("button, input, select, textarea")) {
      node.disabled = locked || node.dataset.locked === "true";
    }
  }

  setWaiting(waiting) {
    this.setState(waiting ? "waiting" : "open");
  }

  // The control to focus when the card comes up.
  firstControl() {
    return this.element.querySelector("input:not(:disabled), button:not(:disabled)") ?? this.titleNode;
  }

  focus() {
    this.firstControl().focus();
  }

  showError(message) {
    this.errorNode.textContent = message ?? "";
    this.errorNode.hidden = !message;
  }

  send(command) {
    if (this.state !== "open") return;
    if (!this.ctx.send(command)) {
      this.showError("Not connected: reconnect, then answer again.");
      return;
    }
    this.showError(null);
    // Locked controls lose the focus (the browser moves it to the page at its next update), so whether the card
    // held it is noted now, for the outcome to give it back.
    this.heldFocus = this.element.contains(document.activeElement);
    this.setState("sending");
  }

  // Decline and Cancel, which every card has.
  endButtons() {
    return [
      el("button", {
        type: "button",
        class: "button",
        testid: "decline",
        text: "Decline",
        onclick: () => this.send({ type: "answer_form", form_id: this.id, answer: { action: "decline" } }),
      }),
      el("button", {
        type: "button",
        class: "button button-quiet",
        testid: "cancel",
        text: "Cancel",
        onclick: () => this.send({ type: "answer_form", form_id: this.id, answer: { action: "cancel" } }),
      }),
    ];
  }

  // A refused command: back to open, with the host's words.
  commandError(message) {
    if (this.state === "resolved") return;
    this.setState("open");
    this.showError(message.message);
  }

  // Replaces the controls by the outcome.
  finish({ action, reason, summary, detail }) {
    const hadFocus = this.heldFocus || this.element.contains(document.activeElement);
    this.body.replaceChildren(...(detail ?? []));
    this.actions.replaceChildren();
    this.showError(null);
    this.outcome.dataset.action = action;
    if (reason) this.outcome.dataset.reason = reason;
    this.outcome.replaceChildren(el("p", { class: "outcome-line", testid: "outcome-text", text: summary }));
    this.outcome.hidden = false;
    this.setState("resolved");
    return hadFocus;
  }

  // A card never answered whose tool call is over (it can happen only after a host crash).
  callFinished() {}
}

// A form: the questions of a render block.
export class FormCard extends Card {
  constructor(event, ctx) {
    const render = event.body.render;
    super({ id: event.form_id, kind: "form", source: `${event.plugin} asks`, title: render.message || "A form", ctx });
    this.questions = render.questions ?? [];
    this.single = answersOnClick(this.questions);
    this.fields = this.questions.map((question) =>
      createField(question, this.single ? { immediate: (label) => this.submit(label) } : { upload: ctx.upload }),
    );
    // A field that names a secret: plugins must not ask for one in a form, so say so plainly.
    const secret = this.questions.filter((q) => q.sensitive).map((q) => q.header);
    if (secret.length) {
      this.body.append(
        el("p", {
          class: "secret-warning",
          testid: "secret-warning",
          role: "alert",
          text:
            `Warning: this plugin asks for something secret (${secret.join(", ")}). Plugins must not ask for ` +
            "passwords, keys, tokens or card numbers in a form: what you type goes to the plugin and is kept in " +
            "this transcript. Cancel unless you trust it with this.",
        }),
      );
    }
    const form = el(
      "form",
      {
        class: "card-form",
        novalidate: true,
        onsubmit: (e) => {
          e.preventDefault();
          this.submit();
        },
      },
      this.fields.map((f) => f.element),
    );
    this.body.append(form);
    if (!this.single) {
      this.actions.append(
        el("button", {
          type: "button",
          class: "button button-primary",
          testid: "submit",
          text: this.questions.length ? "Submit" : "Accept",
          onclick: () => this.submit(),
        }),
      );
    }
    this.actions.append(...this.endButtons());
    // Enter in a text box submits the form, as in any form.
    form.addEventListener("keydown", (e) => {
      if (e.key === "Enter" && e.target instanceof HTMLInputElement && !this.single && e.target.type !== "checkbox" && e.target.type !== "radio") {
        e.preventDefault();
        this.submit();
      }
    });
  }

  focus() {
    (this.fields[0] ?? null)?.focus();
    if (!this.element.contains(document.activeElement)) super.focus();
  }

  // Sends the answers; `label` is the clicked option of a one-question form.
  submit(label) {
    if (this.state !== "open") return;
    const answers = {};
    if (label !== undefined) {
      answers[this.questions[0].id] = { answers: [label] };
    } else {
      let first = null;
      for (const field of this.fields) {
        const problem = field.check(true);
        field.setError(problem);
        if (problem && !first) first = field;
      }
      if (first) {
        this.showError("Some answers need fixing before they can be sent.");
        first.focus();
        return;
      }
      for (const field of this.fields) answers[field.question.id] = { answers: field.answers() };
    }
    this.send({ type: "answer_form", form_id: this.id, answer: { action: "render", answers: { answers } } });
  }

  setLocked(locked) {
    super.setLocked(locked);
    for (const field of this.fields ?? []) field.setDisabled(locked);
  }

  commandError(message) {
    if (this.state === "resolved") return;
    this.setState("open");
    if (message.error !== "invalid") {
      this.showError(message.message);
      return;
    }
    // One `{field, message}` per problem, the field being the question id; problems of no known
    // field go to the card.
    const general = [];
    const byId = new Map(this.fields.map((f) => [f.question.id, f]));
    for (const field of this.fields) field.setError(null);
    let first = null;
    for (const { field: id, message: problem } of message.errors ?? []) {
      const field = byId.get(id);
      if (field) {
        field.setError(problem);
        first ??= field;
      } else general.push(`${id}: ${problem}`);
    }
    this.showError(general.length ? general.join("\n") : "Some answers need fixing before they can be sent.");
    first?.focus();
  }

  resolve(event) {
    const { action, content, reason } = event;
    let summary;
    let detail = [];
    if (action === "accept") {
      summary = "Accepted";
      detail = [this.contentList(content ?? {})];
    } else if (action === "decline") {
      summary = reason ? `Declined: ${reasonText(reason)}` : "Declined";
    } else {
      summary = reason ? `Cancelled: ${reasonText(reason)}` : "Cancelled";
    }
    return this.finish({ action, reason, summary, detail });
  }

  // The accepted content, each value under its question's header, options by their labels.
  contentList(content) {
    const keys = Object.keys(content);
    if (!keys.length) return el("p", { class: "hint", text: "No values." });
    const byId = new Map(this.questions.map((q) => [q.id, q]));
    return el(
      "dl",
      { class: "content-list", testid: "accepted-values" },
      keys.map((key) => {
        const question = byId.get(key);
        return [
          el("dt", { text: question?.header ?? key }),
          el("dd", { dataset: { key }, testid: "accepted-value", text: displayValue(question, content[key]) }),
        ];
      }),
    );
  }
}

function displayValue(question, value) {
  const options = question?.options ?? [];
  const label = (v) => options.find((o) => JSON.stringify(o.value) === JSON.stringify(v))?.label ?? show(v);
  if (Array.isArray(value)) return value.length ? value.map(label).join(", ") : "(none)";
  return label(value);
}

// A URL-mode request: the full URL, its domain and the host's warnings about where it leads (plain http, a
// loopback or private address); the link opens only on a click, then the card waits for the plugin to
// finish.
export class UrlCard extends Card {
  constructor(event, ctx) {
    const { message, url, domain, warnings } = event.body;
    super({ id: event.form_id, kind: "url", source: `${event.plugin} asks you to open a link`, title: message || "Open a link", ctx });
    this.url = url;
    this.domain = domain;
    this.callId = event.call_id ?? null;
    let safe = false;
    try {
      safe = ["http:", "https:"].includes(new URL(url).protocol);
    } catch {
      safe = false;
    }
    this.body.append(
      el(
        "div",
        { class: "url-box" },
        el("p", { class: "url-domain" }, "Domain: ", el("strong", { testid: "card-domain", text: domain })),
        el("p", { class: "url-full" }, el("code", { testid: "card-url", text: url })),
        ...(Array.isArray(warnings) ? warnings : []).map((warning) =>
          el("p", {
            class: "url-warning",
            testid: "url-warning",
            dataset: { code: String(warning?.code ?? "") },
            text: `Warning: ${warning?.message ?? ""}`,
          }),
        ),
        safe ? null : el("p", { class: "card-error", text: "formwork opens only http and https links." }),
      ),
    );
    this.actions.append(
      el("button", {
        type: "button",
        class: "button button-primary",
        testid: "open-url",
        text: `Open ${domain} in a new tab`,
        disabled: !safe,
        dataset: { locked: safe ? null : "true" },
        onclick: () => this.open(),
      }),
      ...this.endButtons(),
    );
  }

  open() {
    if (this.state !== "open") return;
    // Opened from the click itself (popup blockers allow that), without access to this page.
    window.open(this.url, "_blank", "noopener,noreferrer");
    this.opened = true;
    this.send({ type: "answer_form", form_id: this.id, answer: { action: "accept_url" } });
  }

  resolve(event) {
    const { action, reason } = event;
    if (action === "accept") {
      const done = this.pendingCompletion === true;
      const hadFocus = this.finish({
        action,
        reason,
        summary: done ? `Opened ${this.domain}; completed.` : `Opened ${this.domain}; waiting for the plugin to finish.`,
        detail: [el("p", { class: "url-full" }, el("code", { testid: "card-url", text: this.url }))],
      });
      this.outcome.dataset.completion = done ? "done" : "waiting";
      return hadFocus;
    }
    const summary =
      action === "decline"
        ? reason ? `Declined: ${reasonText(reason)}` : "Declined"
        : reason ? `Cancelled: ${reasonText(reason)}` : "Cancelled";
    // An accept the host could not store comes back as a cancel: nothing waits for completion.
    delete this.outcome.dataset.completion;
    return this.finish({ action, reason, summary });
  }

  // The plugin reported the out-of-band step finished (`form_completed`).
  completed() {
    // It may come before the person's answer; `resolve` then shows it at once.
    this.pendingCompletion = true;
    if (this.outcome?.dataset.completion !== "waiting") return;
    this.outcome.dataset.completion = "done";
    const line = this.outcome.querySelector("[data-testid=outcome-text]");
    if (line) line.textContent = `Opened ${this.domain}; completed.`;
  }

  // The tool call this link belongs to ended: the out-of-band step is over.
  callFinished(event) {
    if (this.outcome.dataset.completion !== "waiting") return;
    const failed = event.error || event.result?.isError;
    this.outcome.dataset.completion = failed ? "failed" : "done";
    const line = this.outcome.querySelector("[data-testid=outcome-text]");
    if (line) line.textContent = failed ? `Opened ${this.domain}; the plugin reported a failure.` : `Opened ${this.domain}; completed.`;
  }
}

// An approval: may this tool call run?
export class ApprovalCard extends Card {
  constructor(event, ctx) {
    const render = event.body.render ?? { message: "", questions: [] };
    super({
      id: event.approval_id,
      kind: "approval",
      source: `${event.server} wants to run a tool`,
      title: `Allow ${event.server} · ${event.tool}?`,
      ctx,
    });
    this.callId = event.call_id;
    if (render.message) this.body.append(el("p", { class: "approval-message", testid: "card-message", text: render.message }));
    const question = render.questions?.[0];
    let choices = [];
    if (question?.options?.length) {
      choices = question.options
        .map((option) => {
          const known = choiceOfLabel(option.label);
          return known ? { ...known, description: option.description } : null;
        })
        .filter(Boolean);
    } else {
      const persist = event.body.meta?.persist;
      const offers = Array.isArray(persist) ? persist : persist ? [persist] : [];
      choices = CHOICES.filter(
        (c) =>
          c.choice === "allow" ||
          c.choice === "deny" ||
          (c.choice === "allow_for_session" && offers.includes("session")) ||
          (c.choice === "always_allow" && offers.includes("always")),
      );
    }
    if (!choices.length) choices = CHOICES.filter((c) => c.choice === "allow" || c.choice === "deny");
    this.actions.append(
      ...choices.map((c) =>
        el(
          "button",
          {
            type: "button",
            class: c.choice === "deny" ? "button" : c.choice === "allow" ? "button button-primary" : "button",
            testid: "approval-choice",
            dataset: { choice: c.choice },
            title: c.description || null,
            onclick: () => this.send({ type: "answer_approval", approval_id: this.id, choice: c.choice }),
          },
          c.label,
        ),
      ),
    );
  }

  resolve(event) {
    const known = APPROVAL_CHOICES[event.choice];
    const detail = event.reason ? [el("p", { class: "hint", testid: "outcome-reason", text: event.reason })] : [];
    // A cancelled card comes as `deny` with `cancelled: true`; its reason says why.
    if (event.cancelled) return this.finish({ action: "cancel", summary: "Cancelled", detail });
    const summary = known ? known.done : event.choice;
    return this.finish({ action: event.choice, summary, detail });
  }
}
