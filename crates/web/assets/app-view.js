// One app on the page (see `apps.js`): its card in the call's entry, its frame, the messages between the frame
// and the host, and where it is shown (inline, the side panel, fullscreen, picture in picture) and how big.

import { after, el } from "./dom.js";
import { api } from "./net.js";
import { hostStyles, currentTheme } from "./app-context.js";
import { KEEPS_MOVED_FRAMES, actionButton, appFrameElement, isLastIn, isRpc, moveInto, within } from "./app-frames.js";
import { SPARE_ANSWER_WAIT_MS } from "./app-spare.js";

const HOST_MODES = ["inline", "fullscreen", "pip"];
// Where an app that cannot be inline is shown instead, in this order.
const SHOWN_ELSEWHERE = ["fullscreen", "pip"];
// Modes that take the person's screen: an app enters them only right after the person clicked in it (the click
// activates the page too, and leaves the focus on the app's frame); the host's own buttons always may.
const NEEDS_A_CLICK = ["fullscreen", "pip"];
const justClickedIn = (frame) => frame !== null && document.activeElement === frame && navigator.userActivation?.isActive === true;
const TEARDOWN_WAIT_MS = 1000;
const INLINE_MAX_HEIGHT = 640;
const MIN_HEIGHT = 48;

export class AppView {
  constructor(apps, event, call) {
    this.apps = apps;
    this.callId = event.call_id;
    this.resourceUri = event.resource_uri;
    this.server = call.server;
    this.title = `${call.server} · ${call.tool}`;
    this.arguments = call.arguments ?? {};
    this.outcome = null;
    // Settled once the call has ended: a widget's document is asked for then.
    this.ended = new Promise((resolve) => {
      this.callEnded = resolve;
    });
    this.sentOutcome = null;
    this.initialized = false;
    this.mode = "inline";
    this.appModes = null;
    this.nextId = 1;
    this.pending = new Map();
    // The app's requests on their way to the host (their api() promises).
    this.relays = new Set();
    this.doc = null;
    this.origin = null;
    this.frame = null;
    this.state = "loading";
    // Its session is no longer shown (see `Apps.leave`).
    this.leaving = false;
    // Its frame went when the transcript was redrawn, in a browser that cannot keep it (see `park`).
    this.parkedAway = false;
    // The container's width the app was last told of.
    this.toldWidth = null;

    this.status = el("span", { class: "app-status", testid: "app-status", text: "loading" });
    this.error = el("p", { class: "app-error", testid: "app-error", role: "alert", hidden: true });
    this.box = el("div", { class: "app-box", testid: "app-box" });
    this.slot = el("div", { class: "app-slot", testid: "app-slot" }, this.box);
    this.placeNote = el("p", { class: "hint app-place", testid: "app-place", hidden: true });
    this.buttons = {
      inline: actionButton("app-inline", "Inline", () => this.setMode("inline")),
      tab: actionButton("app-tab", "Side panel", () => this.setMode("tab")),
      fullscreen: actionButton("app-fullscreen", "Fullscreen", () => this.setMode("fullscreen")),
      pip: actionButton("app-pip", "Picture in picture", () => this.setMode("pip")),
      close: actionButton("app-close", "Close app", () => this.close()),
      reopen: actionButton("app-reopen", "Open app", () => this.reopen()),
    };
    this.buttons.reopen.hidden = true;
    this.element = el(
      "section",
      { class: "app-card", testid: "app-card", dataset: { callId: this.callId, state: "loading", mode: "inline" }, "aria-label": `App of ${this.title}` },
      el(
        "header",
        { class: "app-head" },
        el("span", { class: "app-name", text: "App" }),
        this.status,
        el("span", { class: "app-actions" }, ...Object.values(this.buttons)),
      ),
      this.error,
      this.placeNote,
      this.slot,
    );
    this.updateButtons();
    // The width follows the window and the side panel; the height follows the app itself (so a change of it alone
    // is no news to the app).
    new ResizeObserver(() => this.widthChanged()).observe(this.box);
    this.load();
  }

  widthChanged() {
    // Parked (while the transcript redraws, or leaving) is not where the app is shown.
    if (!this.initialized || this.box.clientWidth === 0 || this.apps.places.parking.contains(this.box)) return;
    const dimensions = this.dimensions();
    if (dimensions.width === this.toldWidth) return;
    this.toldWidth = dimensions.width;
    this.post({ jsonrpc: "2.0", method: "ui/notifications/host-context-changed", params: { containerDimensions: dimensions } });
  }

  attach(callNode) {
    this.place(callNode, this.element);
    if (this.mode === "inline") this.place(this.slot, this.box);
    if (this.parkedAway) {
      this.parkedAway = false;
      this.load({ fresh: true });
    }
  }

  park() {
    // A browser that cannot keep the frame alive in the parking place: it goes now, and the app starts again
    // once its call is back in the transcript.
    if (!KEEPS_MOVED_FRAMES && this.frame) {
      this.dropFrame();
      this.parkedAway = true;
    }
    if (this.mode === "inline") moveInto(this.apps.places.parking, this.box);
    moveInto(this.apps.places.parking, this.element);
  }

  // Moves `node` (the card or the box, which hold the frame) to the end of `parent`. A browser that cannot move
  // the frame alive would load its document again, which the sandbox serves once: there the frame goes first,
  // and the app starts again in a document of its own.
  place(parent, node) {
    const restart = !KEEPS_MOVED_FRAMES && this.frame !== null && node.contains(this.frame) && !isLastIn(parent, node);
    if (restart) this.dropFrame();
    moveInto(parent, node);
    if (restart) this.load({ fresh: true });
  }

  // The frame and its document go; the app's requests still on their way are answered to nobody.
  dropFrame() {
    this.frame?.remove();
    this.frame = null;
    if (this.doc) api(`/api/apps/${this.doc}`, { method: "DELETE" }).catch(() => {});
    this.doc = null;
    this.origin = null;
    this.initialized = false;
    this.sentOutcome = null;
    for (const done of this.pending.values()) done(null);
    this.pending.clear();
  }

  setState(state, text) {
    this.state = state;
    this.element.dataset.state = state;
    this.status.textContent = text ?? state;
  }

  showError(message) {
    this.setState("error", "unavailable");
    this.error.textContent = message;
    this.error.hidden = false;
  }

  async load({ fresh = false } = {}) {
    const spare = fresh ? null : this.apps.takeSpare(this);
    const url = `/api/sessions/${encodeURIComponent(this.apps.sessionId)}/apps/${encodeURIComponent(this.callId)}`;
    let opened;
    try {
      opened = await api(spare ? `${url}?spare=${spare.doc}` : url, { method: "POST" });
    } catch (error) {
      this.apps.discardSpare(spare);
      this.showError(`The app could not be loaded: ${error.data?.error ?? error.message}`);
      return;
    }
    // The host binds the spare to this app only when it runs this app's document.
    const inSpare = spare !== null && opened.spare === true && opened.doc === spare.doc;
    if (!inSpare || this.state === "closed") this.apps.discardSpare(spare);
    if (this.state === "closed") {
      if (!inSpare) api(`/api/apps/${opened.doc}`, { method: "DELETE" }).catch(() => {});
      return;
    }
    this.doc = opened.doc;
    this.origin = opened.origin;
    this.skybridge = opened.skybridge === true;
    this.element.dataset.origin = opened.origin;
    if (opened.prefers_border === false) this.box.dataset.border = "none";
    const frame = inSpare ? spare.frame : appFrameElement("app-frame");
    frame.dataset.testid = "app-frame";
    delete frame.dataset.state;
    frame.title = `App of ${this.title}`;
    frame.style.height = "160px";
    this.frame = frame;
    moveInto(this.box, frame);
    this.setState("loading", "starting");
    if (inSpare) {
      // The document is in the frame already; what it asked while it waited is this app's now.
      this.apps.spares.delete(spare);
      this.answerHeld(spare.held);
      return;
    }
    // The frame's permissions apply from its next navigation on: the app's document.
    if (opened.allow) frame.setAttribute("allow", opened.allow);
    if (!opened.skybridge) {
      frame.src = opened.src;
      return;
    }
    // A widget reads `window.openai` from its first line on, as in ChatGPT, where it shows only once the call
    // has ended: its document is asked for then, and the sandbox puts in the call's result and where it is shown.
    await this.ended;
    if (this.frame !== frame || this.state === "closed") return;
    const context = this.context();
    const shown = new URLSearchParams({
      theme: context.theme,
      displayMode: context.displayMode,
      maxHeight: String(context.containerDimensions.maxHeight ?? context.containerDimensions.height),
      locale: context.locale,
    });
    frame.src = `${opened.src}?${shown}`;
  }

  // The `ui/initialize` a spare held goes on as this app's. An app that gave up on it meanwhile stays silent;
  // then it starts again, in a new frame with a document of its own.
  async answerHeld(held) {
    const frame = this.frame;
    await this.receive(held);
    await new Promise((resolve) => after(SPARE_ANSWER_WAIT_MS, resolve));
    if (this.frame !== frame || this.initialized || this.state === "closed") return;
    this.dropFrame();
    this.load({ fresh: true });
  }

  // ---- from the app ----

  // One message of the app; for one that goes on to the host, the promise of its relay.
  receive(event) {
    // The frame's window alone is not enough: the document in it must be the one minted for this call.
    if (event.origin !== this.origin) return;
    const message = event.data;
    if (!isRpc(message)) return;
    if (message.method === undefined) {
      this.settle(message);
      return;
    }
    if (typeof message.method !== "string") return;
    const request = message.id !== undefined;
    switch (message.method) {
      case "ui/notifications/initialized":
        // The input goes once; an app that says it again gets nothing new.
        if (this.initialized) return;
        this.initialized = true;
        this.setState("ready", "ready");
        // This app is up: the next app of its document may start ahead.
        this.apps.prepareSpare(this);
        this.post({ jsonrpc: "2.0", method: "ui/notifications/tool-input", params: { arguments: this.arguments } });
        this.sendOutcome();
        return;
      case "ui/notifications/size-changed":
        this.resize(message.params);
        return;
      case "ui/notifications/request-teardown":
        this.close();
        return;
      case "ui/request-display-mode":
        if (request) this.displayModeRequested(message);
        return;
      default:
        if (message.method === "ui/initialize" && request) {
          this.appModes = message.params?.appCapabilities?.availableDisplayModes ?? null;
          // An app that starts its bridge again (a second App in the same document) is a new start: its
          // `initialized` brings the input and the outcome again.
          this.initialized = false;
          this.sentOutcome = null;
          // No mode the app did not declare: one that cannot be where it is goes to the first it can be in
          // (before the answer, which tells it its mode), and the buttons offer only what it declared.
          if (!this.mayShow(this.mode)) {
            const shown = SHOWN_ELSEWHERE.find((mode) => this.mayShow(mode));
            if (shown && justClickedIn(this.frame)) this.setMode(shown);
            else if (shown) this.collapse();
          }
          this.updateButtons();
        }
        return this.relay(message, request);
    }
  }

  async relay(message, request) {
    // The answer is for the document that asked, not for one that took its place since.
    const frame = this.frame;
    let reply;
    const context = message.method === "ui/initialize" ? this.context() : null;
    if (context) this.toldWidth = context.containerDimensions.width;
    const sent = this.apps.rpc(this.doc, message, context, !this.leaving);
    this.relays.add(sent);
    try {
      reply = await sent;
    } catch (error) {
      if (request && this.frame === frame) this.post({ jsonrpc: "2.0", id: message.id, error: { code: -32000, message: `formwork could not serve the request: ${error.message}` } });
      return;
    } finally {
      this.relays.delete(sent);
    }
    if (reply.open_link) window.open(reply.open_link, "_blank", "noopener,noreferrer");
    if (request && reply.response && this.frame === frame) this.post(reply.response);
  }

  displayModeRequested(message) {
    const mode = message.params?.mode;
    const wanted = mode === "inline" ? "inline" : mode;
    const allowed = !NEEDS_A_CLICK.includes(wanted) || justClickedIn(this.frame);
    if (HOST_MODES.includes(wanted) && this.mayShow(wanted) && allowed) this.setMode(wanted);
    this.post({ jsonrpc: "2.0", id: message.id, result: { mode: this.appMode() } });
  }

  resize(params) {
    const height = Number(params?.height);
    if (!Number.isFinite(height) || !this.frame) return;
    const limit = this.mode === "inline" ? INLINE_MAX_HEIGHT * 3 : 4000;
    this.frame.style.height = `${Math.max(MIN_HEIGHT, Math.min(Math.ceil(height), limit))}px`;
  }

  // ---- to the app ----

  post(message) {
    if (!this.frame?.contentWindow || !this.origin) return;
    this.frame.contentWindow.postMessage(message, this.origin);
  }

  // A request to the app, answered or given up after a moment (an app that never answers cannot hold the
  // page up).
  request(method, params) {
    const id = this.nextId++;
    const answered = new Promise((resolve) => this.pending.set(id, resolve));
    this.post({ jsonrpc: "2.0", id, method, params });
    return within(answered, TEARDOWN_WAIT_MS).finally(() => this.pending.delete(id));
  }

  settle(message) {
    const done = this.pending.get(message.id);
    if (!done) return;
    this.pending.delete(message.id);
    done(message);
  }

  finished(event) {
    this.outcome = event.error !== undefined && event.error !== null ? { error: event.error } : { result: event.result ?? {} };
    this.callEnded();
    this.sendOutcome();
  }

  // The result goes once per distinct outcome: a redrawn transcript does not send an equal one again.
  sendOutcome() {
    if (!this.initialized || !this.outcome) return;
    const text = JSON.stringify(this.outcome);
    if (text === this.sentOutcome) return;
    this.sentOutcome = text;
    if (this.outcome.error !== undefined) {
      this.post({ jsonrpc: "2.0", method: "ui/notifications/tool-cancelled", params: { reason: this.outcome.error } });
    } else {
      this.post({ jsonrpc: "2.0", method: "ui/notifications/tool-result", params: this.outcome.result });
    }
  }

  context() {
    return {
      theme: currentTheme(),
      styles: hostStyles(),
      displayMode: this.appMode(),
      availableDisplayModes: HOST_MODES,
      containerDimensions: this.dimensions(),
      locale: navigator.language,
      timeZone: Intl.DateTimeFormat().resolvedOptions().timeZone,
      platform: "web",
      userAgent: "formwork-workbench",
      deviceCapabilities: { hover: matchMedia("(hover: hover)").matches, touch: navigator.maxTouchPoints > 0 },
    };
  }

  dimensions() {
    const width = Math.round(this.box.clientWidth || this.slot.clientWidth || 600);
    if (this.mode === "inline") return { width, maxHeight: INLINE_MAX_HEIGHT };
    return { width, height: Math.round(this.box.clientHeight || 480) };
  }

  contextChanged(change) {
    if (this.initialized) this.post({ jsonrpc: "2.0", method: "ui/notifications/host-context-changed", params: change });
  }

  // ---- where it is shown ----

  // The MCP Apps name of the mode: the side panel is inline presentation beside the conversation.
  appMode() {
    return this.mode === "tab" ? "inline" : this.mode;
  }

  mayShow(mode) {
    const appMode = mode === "tab" ? "inline" : mode;
    return !Array.isArray(this.appModes) || this.appModes.includes(appMode);
  }

  setMode(mode) {
    if (this.state === "closed" || mode === this.mode || !this.mayShow(mode)) return;
    const before = this.appMode();
    // Out of the Open app state of an app that cannot be inline, if it was there.
    this.box.hidden = false;
    this.buttons.reopen.hidden = true;
    if (this.mode === "pip") delete this.box.dataset.pip;
    if (mode === "inline") {
      this.apps.releasePanel(this);
      this.place(this.slot, this.box);
    } else if (mode === "tab" || mode === "fullscreen") {
      this.apps.takePanel(this, mode === "fullscreen");
    } else if (mode === "pip") {
      this.apps.releasePanel(this);
      this.place(this.apps.places.pip, this.box);
      this.box.dataset.pip = "true";
    }
    this.mode = mode;
    this.element.dataset.mode = mode;
    this.placeNote.hidden = mode === "inline";
    this.placeNote.textContent = { tab: "Shown in the side panel.", fullscreen: "Shown fullscreen in the side panel.", pip: "Shown in picture in picture." }[mode] ?? "";
    this.updateButtons();
    const change = { containerDimensions: this.dimensions() };
    this.toldWidth = change.containerDimensions.width;
    if (this.appMode() !== before) change.displayMode = this.appMode();
    this.contextChanged(change);
  }

  // The side panel was closed: an app that can be inline comes back to the conversation; one that cannot
  // keeps its document hidden behind the Open app button.
  leavePanel() {
    if (this.mayShow("inline")) {
      this.setMode("inline");
      return;
    }
    this.collapse();
  }

  // An app that cannot be inline, out of sight: its document waits, hidden, behind the Open app button.
  collapse() {
    this.apps.releasePanel(this);
    this.place(this.slot, this.box);
    this.box.hidden = true;
    this.mode = "inline";
    this.element.dataset.mode = "collapsed";
    this.placeNote.hidden = true;
    this.updateButtons();
    this.buttons.reopen.hidden = false;
  }

  updateButtons() {
    const closed = this.state === "closed";
    this.buttons.inline.hidden = closed || this.mode === "inline" || !this.mayShow("inline");
    this.buttons.tab.hidden = closed || this.mode === "tab" || !this.mayShow("inline");
    this.buttons.fullscreen.hidden = closed || this.mode === "fullscreen" || !this.mayShow("fullscreen");
    this.buttons.pip.hidden = closed || this.mode === "pip" || !this.mayShow("pip");
    this.buttons.close.hidden = closed;
  }

  // Closing sends `ui/resource-teardown` (waiting a moment for the answer and for the app's requests still on their
  // way), then releases the document.
  async close({ reason = "The person closed the app." } = {}) {
    if (this.state === "closed") return;
    if (this.initialized) await this.request("ui/resource-teardown", { reason });
    // What the app asked while tearing down (a last tool call, say) reaches the host before its document goes.
    if (this.relays.size > 0) await within(Promise.allSettled([...this.relays]), TEARDOWN_WAIT_MS);
    this.apps.releasePanel(this);
    this.frame?.remove();
    this.frame = null;
    this.box.hidden = false;
    moveInto(this.slot, this.box);
    if (this.doc) api(`/api/apps/${this.doc}`, { method: "DELETE" }).catch(() => {});
    this.doc = null;
    this.initialized = false;
    this.sentOutcome = null;
    this.mode = "inline";
    this.element.dataset.mode = "inline";
    this.placeNote.hidden = true;
    this.setState("closed", "closed");
    this.updateButtons();
    this.buttons.reopen.hidden = false;
  }

  reopen() {
    this.buttons.reopen.hidden = true;
    if (this.frame) {
      // Only an app that cannot be inline waits here with its document: it goes back where it can be.
      const shown = SHOWN_ELSEWHERE.find((mode) => this.mayShow(mode));
      if (shown && !this.mayShow("inline")) {
        this.setMode(shown);
        return;
      }
      this.box.hidden = false;
      this.element.dataset.mode = "inline";
      this.updateButtons();
      return;
    }
    this.error.hidden = true;
    this.setState("loading");
    this.updateButtons();
    this.load();
  }
}
