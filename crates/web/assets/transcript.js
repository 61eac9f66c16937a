// The transcript of one session, drawn from the socket's events in order: messages, tool calls with
// their arguments and results, cards and their outcomes, diagnostics.

import { after, el, pretty } from "./dom.js";
import { FormCard, UrlCard, ApprovalCard } from "./cards.js";

const IMAGE_TYPES = new Set(["image/png", "image/jpeg", "image/gif", "image/webp"]);

// What changes the number of the session's cards awaiting an answer.
const CARD_CHANGES = new Set(["form_requested", "approval_requested", "form_resolved", "approval_resolved"]);

// What draws the entry of a call: of an app's own calls, drawn in batches (`deferAppCall`).
const CALL_ENTRY_CHANGES = new Set(["tool_call_started", "tool_call_round", "tool_call_finished"]);

// How often the entries of an app's own calls are drawn, at most: ten times a second still reads as live.
const APP_CALLS_DRAWN_EVERY_MS = 100;

export class Transcript {
  // hooks: {upload(file) -> Promise<{uri, name}>, onTurn(running), announce(text), composer(), onSignedIn(),
  //         onListChange() (the person wrote: a title may change), onOpenCards(count), apps: the page's Apps}
  constructor(root, hooks) {
    this.root = root;
    this.hooks = hooks;
    this.socket = null;
    this.receive = this.receive.bind(this);
    this.reset();
  }

  // The session's socket: its messages come to `receive`, and the cards' commands go out on it.
  attach(socket) {
    this.socket = socket;
  }

  send(command) {
    return this.socket?.send(command) ?? false;
  }

  // One message from the session's socket.
  receive(message) {
    switch (message.type) {
      case "snapshot_done":
        return this.snapshotDone();
      case "reset":
        return this.reset();
      case "app_reply":
        return this.hooks.apps.replied(message);
      case "signed_in":
        // The server's tools can be listed now; a replayed one (a reconnect) needs nothing.
        if (this.live) this.hooks.onSignedIn();
        return;
    }
    if (this.deferAppCall(message)) return;
    this.applyDeferred();
    this.apply(message);
    if (!this.live) return;
    if (message.type === "message_added" && message.role === "user") this.hooks.onListChange();
    else if (CARD_CHANGES.has(message.type)) this.hooks.onOpenCards(this.unresolved.size);
  }

  // The entries of an app's own calls are drawn in batches, at most every APP_CALLS_DRAWN_EVERY_MS: an app that
  // calls often (a monitor polls) then rarely waits for its answers behind the drawing of its calls, as each
  // drawing (and the frame it takes) would hold the page that relays them. Any other event draws them first, so
  // events still apply in order.
  deferAppCall(message) {
    const id = message.call_id;
    if (message.type === "tool_call_started" && message.asked_by) this.appCallIds.add(id);
    const appCall = CALL_ENTRY_CHANGES.has(message.type) && this.appCallIds.has(id);
    if (message.type === "tool_call_finished") this.appCallIds.delete(id);
    if (!appCall || !this.live) return false;
    const batch = this.deferred;
    if (!batch.length) after(APP_CALLS_DRAWN_EVERY_MS, () => this.deferred === batch && this.applyDeferred());
    batch.push(message);
    return true;
  }

  applyDeferred() {
    const batch = this.deferred;
    if (!batch.length) return;
    this.deferred = [];
    for (const message of batch) this.apply(message);
  }

  // Forgets everything: a snapshot follows.
  reset() {
    this.hooks.apps.park();
    this.root.replaceChildren();
    this.cards = new Map();
    // Cards requested and not yet resolved, as the host counts a session's open cards.
    this.unresolved = new Set();
    this.calls = new Map();
    // The calls apps made that have not finished, and their events waiting to be drawn.
    this.appCallIds = new Set();
    this.deferred = [];
    this.unreveal();
    // The model's answer while it streams: {id, node, text}; the whole message replaces it.
    this.streaming = null;
    this.live = false;
    this.running = false;
    this.hooks.onTurn(false);
    this.root.append(this.emptyNote());
  }

  emptyNote() {
    this.empty = el("p", {
      class: "empty-note",
      testid: "transcript-empty",
      text: "Nothing here yet. Send a message, or call a tool from the palette.",
    });
    return this.empty;
  }

  // The snapshot is in: from now on events are live, and a card that comes up may take the focus.
  snapshotDone() {
    this.live = true;
    const shown = this.openCard();
    if (shown) this.focusAtFrame(shown);
  }

  // The first card awaiting an answer, if any.
  openCard() {
    for (const id of this.unresolved) {
      const card = this.cards.get(id);
      if (card?.state === "open") return card;
    }
    return null;
  }

  // Appends an item; live items are scrolled into view (a card by its top, so its header shows).
  add(node) {
    this.empty?.remove();
    this.empty = null;
    this.root.append(node);
    if (this.live) this.reveal({ scroll: node });
    return node;
  }

  // Scrolls to new items, then moves the focus, just before the next frame: both need the page laid out, and
  // done in one place they lay it out once per frame, not once per event of a burst.
  reveal({ scroll, focus }) {
    if (scroll) {
      // Where the transcript ends up depends only on the last form card (shown by its top) and the last item.
      const card = this.revealing.scroll.find(isFormCard);
      this.revealing.scroll = isFormCard(scroll) || !card ? [scroll] : [card, scroll];
    }
    if (focus) this.revealing.focus = focus;
    this.revealing.frame ||= requestAnimationFrame(() => {
      const { scroll, focus } = this.revealing;
      this.unreveal();
      for (const node of scroll) {
        if (node.isConnected) node.scrollIntoView({ block: isFormCard(node) ? "start" : "nearest" });
      }
      focus?.();
    });
  }

  // Forgets what the next frame was to reveal.
  unreveal() {
    if (this.revealing?.frame) cancelAnimationFrame(this.revealing.frame);
    this.revealing = { frame: 0, scroll: [], focus: null };
  }

  // Focus moves to a new card unless the person is busy typing elsewhere (a half-written message, a
  // tool's arguments); a keyboard user who just sent a message lands on the card that answers it.
  mayTakeFocus() {
    const active = document.activeElement;
    if (!active || active === document.body || this.root.contains(active)) return true;
    const typing = (active instanceof HTMLTextAreaElement || active instanceof HTMLInputElement) && active.value !== "";
    return !typing;
  }

  // Gives `card` the focus at the next frame, asked then, not now: the person may have started typing, or answered
  // the card, in between.
  focusAtFrame(card) {
    this.reveal({ focus: () => card.state === "open" && this.mayTakeFocus() && card.focus() });
  }

  cardUp(card) {
    if (!this.live) return;
    this.focusAtFrame(card);
    this.hooks.announce(`${card.element.querySelector("[data-testid=card-source]")?.textContent ?? "A card"}: ${card.titleNode.textContent}`);
  }

  apply(message) {
    switch (message.type) {
      case "message_added":
        return this.message(message);
      case "message_delta":
        return this.delta(message);
      case "turn_started":
        this.running = true;
        return this.hooks.onTurn(true);
      case "turn_ended":
        this.running = false;
        this.hooks.onTurn(false);
        if (message.reason !== "completed") {
          this.add(el("p", { class: "note", testid: "turn-ended", dataset: { reason: message.reason }, text: `Turn ${message.reason}` }));
        }
        return;
      case "tool_call_started":
        return this.callStarted(message);
      case "tool_call_finished":
        return this.callFinished(message);
      case "tool_call_round":
        return this.callRound(message);
      case "older_protocol_offered":
        return this.olderProtocolOffered(message);
      case "tool_call_app": {
        const call = this.calls.get(message.call_id);
        if (call) call.app = this.hooks.apps.declare(message, call.call, call.node);
        return;
      }
      case "form_requested":
      case "approval_requested":
        return this.cardRequested(message);
      case "form_shown": {
        const card = this.cards.get(message.form_id);
        if (card && card.state === "waiting") {
          card.setWaiting(false);
          this.cardUp(card);
        }
        return;
      }
      case "form_completed": {
        const card = this.cards.get(message.form_id);
        if (card && card.completed) card.completed();
        return;
      }
      case "form_resolved":
        return this.cardResolved(message.form_id, message);
      case "approval_resolved":
        return this.cardResolved(message.approval_id, message);
      case "diagnostic":
        return this.add(
          el(
            "p",
            { class: "diagnostic", testid: "diagnostic", dataset: { code: message.code } },
            el("span", { class: "diagnostic-code", text: message.code }),
            " ",
            el("span", { text: message.message }),
          ),
        );
      case "command_error":
        return this.commandError(message);
      default:
        return undefined;
    }
  }

  // More of the model's answer: a delta of another id starts it anew (the stream was asked again).
  delta({ message_id, delta }) {
    if (this.streaming?.id !== message_id) {
      this.streaming?.node.remove();
      const text = el("p", { class: "message-text", testid: "message-text", text: "" });
      const node = el(
        "div",
        { class: "message message-assistant message-streaming", testid: "message", dataset: { role: "assistant", streaming: "true" } },
        el("p", { class: "message-who", text: "Assistant" }),
        text,
      );
      this.streaming = { id: message_id, node, text };
      this.add(node);
    }
    this.streaming.text.textContent += delta;
  }

  message({ role, text }) {
    if (role === "assistant" && this.streaming) {
      this.streaming.node.remove();
      this.streaming = null;
    }
    this.add(
      el(
        "div",
        { class: `message message-${role}`, testid: "message", dataset: { role } },
        el("p", { class: "message-who", text: role === "user" ? "You" : "Assistant" }),
        el("p", { class: "message-text", testid: "message-text", text }),
      ),
    );
  }

  callStarted({ call_id, server, tool, arguments: args, asked_by }) {
    const status = el("span", { class: "call-status", testid: "tool-status", text: "running" });
    // A call an app made is listed under the app's own call (an app may call often: a monitor polls), saying so.
    const parent = asked_by ? this.calls.get(asked_by) : undefined;
    const askedBy = asked_by
      ? el("span", { class: "call-asked-by", testid: "tool-asked-by", text: parent ? `asked by the app of ${parent.call.server} · ${parent.call.tool}` : "asked by an app" })
      : null;
    const kind = asked_by ? { testid: "app-tool-call" } : { testid: "tool-call" };
    const node = el(
      "article",
      { class: "call", ...kind, dataset: { callId: call_id, server, tool, state: "running", askedBy: asked_by ?? undefined } },
      el("header", { class: "call-head" }, el("span", { class: "call-name", testid: "tool-name", text: `${server} · ${tool}` }), askedBy, status),
      el(
        "details",
        { class: "call-arguments" },
        el("summary", { text: "Arguments" }),
        el("pre", { testid: "tool-arguments", text: pretty(args ?? {}) }),
      ),
    );
    this.calls.set(call_id, { node, status, call: { server, tool, arguments: args } });
    if (parent) this.appCalls(parent).add(node);
    else this.add(node);
  }

  // The folded list of the calls an invocation's app made, below the app.
  appCalls(parent) {
    if (!parent.appCalls) {
      const summary = el("summary", { testid: "app-calls-count" });
      const list = el("details", { class: "app-calls", testid: "app-calls" }, summary);
      parent.node.append(list);
      let count = 0;
      parent.appCalls = {
        add(node) {
          count += 1;
          summary.textContent = `Tool calls made by this app (${count})`;
          list.append(node);
        },
      };
    }
    return parent.appCalls;
  }

  // The call failed because its plugin pushed a form on 2026-07-28: one click has formwork speak the older version
  // to it (written into the person's config) and run the call again.
  olderProtocolOffered({ call_id, server, version }) {
    const call = this.calls.get(call_id);
    if (!call) return;
    const button = el("button", {
      type: "button",
      class: "secondary",
      testid: "use-older-protocol",
      text: `Speak ${version} to this plugin`,
      onclick: () => {
        if (this.send({ type: "use_older_protocol", call_id })) button.disabled = true;
      },
    });
    call.node.append(
      el(
        "p",
        { class: "call-fix", testid: "older-protocol-offer", dataset: { server, version } },
        `${server} pushes its forms, which ${version} carries and 2026-07-28 does not. `,
        button,
      ),
    );
  }

  // A 2026-07-28 plugin asked for input; the round's cards follow, then the call goes on.
  callRound({ call_id, round }) {
    const call = this.calls.get(call_id);
    if (!call) return;
    call.node.dataset.round = String(round);
    call.status.textContent = `running · asked for input (round ${round})`;
  }

  callFinished(event) {
    const call = this.calls.get(event.call_id);
    for (const card of this.cards.values()) {
      if (card.callId === event.call_id) card.callFinished(event);
    }
    if (!call) return;
    this.hooks.apps.finished(event);
    const { node, status } = call;
    // The outcome goes above the list of the app's own calls, when there is one.
    const show = (view) => {
      const appCalls = node.querySelector(":scope > .app-calls");
      if (appCalls) appCalls.before(view);
      else node.append(view);
    };
    if (event.error) {
      node.dataset.state = "error";
      status.textContent = "failed";
      show(el("p", { class: "call-error", testid: "tool-error", text: event.error }));
      return;
    }
    const result = event.result ?? {};
    const failed = result.isError === true;
    node.dataset.state = failed ? "error" : "done";
    status.textContent = failed ? "tool error" : "done";
    show(resultView(result));
  }

  cardRequested(event) {
    const ctx = { send: (command) => this.send(command), upload: this.hooks.upload };
    let card;
    if (event.type === "approval_requested") card = new ApprovalCard(event, ctx);
    else if (event.body?.mode === "url") card = new UrlCard(event, ctx);
    else card = new FormCard(event, ctx);
    if (event.call_id && card.callId === undefined) card.callId = event.call_id;
    this.cards.set(card.id, card);
    this.unresolved.add(card.id);
    card.setWaiting(event.waiting === true);
    this.add(card.element);
    this.hooks.apps.cardOpened();
    if (!event.waiting) this.cardUp(card);
  }

  cardResolved(id, event) {
    this.unresolved.delete(id);
    const card = this.cards.get(id);
    if (!card) return;
    const hadFocus = card.resolve(event);
    // The focus was on the card's controls, now gone: it goes to the composer, unless another card is open or
    // about to take it (before the frame), or the person put it somewhere meanwhile.
    if (hadFocus && this.live && !this.openCard() && !this.revealing.focus) {
      this.reveal({
        focus: () => {
          const active = document.activeElement;
          if (!this.openCard() && (!active || active === document.body)) this.hooks.composer()?.focus();
        },
      });
    }
  }

  commandError(message) {
    const command = message.command ?? {};
    const id = command.form_id ?? command.approval_id;
    const card = id ? this.cards.get(id) : undefined;
    if (card) {
      card.commandError(message);
      return;
    }
    this.add(el("p", { class: "command-error", testid: "command-error", role: "alert", dataset: { error: message.error }, text: message.message }));
  }
}

const isFormCard = (node) => node.dataset.testid === "form-card";

// A CallToolResult: its content blocks, then its structured content.
function resultView(result) {
  const blocks = Array.isArray(result.content) ? result.content : [];
  const view = el("div", { class: "call-result", testid: "tool-result", dataset: { isError: result.isError === true } });
  for (const block of blocks) {
    if (block?.type === "text" && typeof block.text === "string") {
      view.append(el("pre", { class: "block-text", testid: "result-text", text: block.text }));
    } else if (block?.type === "image" && IMAGE_TYPES.has(block.mimeType) && typeof block.data === "string") {
      // A data: URL of an image type can carry no script; the policy allows data: images only.
      view.append(el("img", { class: "block-image", alt: `Image from the tool (${block.mimeType})`, src: `data:${block.mimeType};base64,${block.data}` }));
    } else {
      view.append(el("pre", { class: "block-other", testid: "result-block", text: pretty(block) }));
    }
  }
  if (!blocks.length) view.append(el("p", { class: "hint", text: "No content." }));
  if (result.structuredContent !== undefined) {
    view.append(
      el(
        "details",
        { class: "structured" },
        el("summary", { text: "Structured content" }),
        el("pre", { testid: "structured-content", text: pretty(result.structuredContent) }),
      ),
    );
  }
  return view;
}
