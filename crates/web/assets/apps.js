// MCP Apps on the page: one frame per invocation that declared a UI, the bridge between the frame and the
// host, and where the frame is shown (inline in the conversation, the side panel, fullscreen over the side,
// picture in picture).
//
// The frame's document comes from the sandbox listener, on an origin of its own (`http://<id>.localhost:<port>`),
// never this page's: it cannot reach this page's DOM, storage (the token) or requests. The page is a relay
// with a filter: a message counts only when it comes from the frame's own window AND its document's origin,
// and the page posts only to that window, with that origin as the target. Everything the app asks of the host
// goes over the session's socket (`app_rpc`, answered by `app_reply`), or to `POST /api/apps/{doc}/rpc` while
// the socket is not open; the host decides from the invocation the document was minted for. Only presentation
// is decided here: the frame's size and display mode.
//
// A frame is moved between places with `moveBefore` (the browsing context, its input, login state and
// in-flight requests survive), never re-created, and it is parked while the transcript redraws. A browser
// without `moveBefore` (Firefox, Safari) would load a moved frame's document again, which the sandbox serves
// once: there an app that moves starts again in a document of its own, with its call's input and last outcome,
// as after a reload of the page; and no spares are kept.
//
// Each app document is a site of its own, so its frame needs a browser process of its own, and then its script
// must start: most of the time an app takes to show. Once an app of the session is up, the page keeps one spare
// for the session's next app of the same document: the host mints that document again, for no invocation, and
// the page loads it in a hidden frame, holding back its `ui/initialize`. When the next app's document is the same
// (the host decides), it takes the spare over: the frame moves into its card and the held `ui/initialize` goes on
// as the app's own, so the app is up at once. Until then a spare speaks for no invocation: nothing it asks goes
// anywhere. A session that shows no app costs no spare; a spare is renewed before the app would give up waiting.

import { el } from "./dom.js";
import { api } from "./net.js";

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
// How long a spare may hold its app's `ui/initialize`: apps built on the official SDK give up on a request after
// 60 s, and a spare is renewed before that.
const SPARE_HOLD_MS = 50_000;
// Spares are renewed for this long after the session's last app started, then no more until the next one.
const SPARE_RENEW_FOR_MS = 10 * 60_000;
// An app may have given up on its held `ui/initialize` sooner (a timeout of its own): when it sends no
// `ui/notifications/initialized` this long after the answer, it starts again in a new frame.
const SPARE_ANSWER_WAIT_MS = 1000;

// Whether the browser moves a frame without loading it again.
const KEEPS_MOVED_FRAMES = typeof Element.prototype.moveBefore === "function";

// Whether `node` is at the end of `parent` already.
const isLastIn = (parent, node) => node.parentNode === parent && parent.lastChild === node;

// Moves `node` to the end of `parent` keeping its frames alive when the browser can.
function moveInto(parent, node) {
  if (isLastIn(parent, node)) return;
  if (KEEPS_MOVED_FRAMES && node.isConnected && parent.isConnected) parent.moveBefore(node, null);
  else parent.append(node);
}

// Runs `then` once `ms` passed (with no string a timer could evaluate).
function after(ms, then) {
  AbortSignal.timeout(ms).addEventListener("abort", then, { once: true });
}

// What `promise` resolves to, or null once `ms` passed without it (the page's bounded waits: an app's answer).
function within(promise, ms) {
  const late = new Promise((resolve) => after(ms, () => resolve(null)));
  return Promise.race([promise, late]);
}

function actionButton(testid, text, onclick) {
  return el("button", { type: "button", class: "button button-quiet", testid, text, onclick });
}

// The workbench's colours and fonts as MCP Apps' standard style variables, so an app can look like the page.
const STYLE_VARIABLES = {
  "--color-background-primary": "--panel",
  "--color-background-secondary": "--panel-2",
  "--color-background-tertiary": "--bg",
  "--color-text-primary": "--text",
  "--color-text-secondary": "--muted",
  "--color-text-danger": "--danger",
  "--color-text-success": "--ok",
  "--color-text-warning": "--warn",
  "--color-border-primary": "--border",
  "--color-ring-primary": "--focus",
  "--font-sans": "--font",
  "--font-mono": "--mono",
  "--border-radius-md": "--radius",
};

function hostStyles() {
  const style = getComputedStyle(document.documentElement);
  const variables = {};
  for (const [name, own] of Object.entries(STYLE_VARIABLES)) {
    const value = style.getPropertyValue(own).trim();
    if (value) variables[name] = value;
  }
  return { variables };
}

function currentTheme() {
  const chosen = document.documentElement.dataset.theme;
  if (chosen === "light" || chosen === "dark") return chosen;
  return matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light";
}

// A frame element for an app document, empty.
function appFrameElement(testid) {
  return el("iframe", {
    class: "app-frame",
    testid,
    sandbox: "allow-scripts allow-same-origin allow-forms",
    referrerpolicy: "no-referrer",
  });
}

function isRpc(data) {
  return data !== null && typeof data === "object" && !Array.isArray(data) && data.jsonrpc === "2.0";
}

// The document of an app the session showed, loaded ahead in a hidden frame for the session's next app of the
// same server and resource. Of what it posts, only its `ui/initialize` is kept, for the app that takes it over.
class Spare {
  constructor(like) {
    this.server = like.server;
    this.resourceUri = like.resourceUri;
    this.doc = null;
    this.origin = null;
    this.frame = null;
    this.held = null;
    this.mintedAt = 0;
  }

  hold(event) {
    const message = event.data;
    if (event.origin !== this.origin || !isRpc(message) || message.method !== "ui/initialize" || message.id === undefined) return;
    this.held = event;
    this.frame.dataset.state = "waiting";
  }

  // Of the same document, its app waiting for its `ui/initialize` and not about to give up on it.
  fits(view) {
    return (
      this.held !== null &&
      this.server === view.server &&
      this.resourceUri === view.resourceUri &&
      performance.now() - this.mintedAt < SPARE_HOLD_MS
    );
  }
}

export class Apps {
  // places: {panel, panelBody, panelTitle, panelClose, pip, parking}; send(message) puts a message on the
  // session's socket, false when it is not open.
  constructor(places, send) {
    this.places = places;
    this.send = send;
    // App messages on the socket waiting for their `app_reply`, by relay number.
    this.relays = new Map();
    this.nextRelay = 1;
    this.views = new Map();
    // Apps of the session shown before, being torn down.
    this.leaving = new Set();
    this.sessionId = null;
    this.inPanel = null;
    // The spare for the session's next app, and every spare whose frame is still the spare's (the one being
    // taken over, too), whose messages are held.
    this.spare = null;
    this.spares = new Set();
    // When an app of the session last started (asked for its document).
    this.lastStart = 0;
    places.panelClose.addEventListener("click", () => this.inPanel?.leavePanel());
    // Fullscreen hides the conversation, and with it the card's buttons: the panel has its own.
    this.panelButtons = {
      tab: actionButton("app-panel-tab", "Side panel", () => this.inPanel?.setMode("tab")),
      fullscreen: actionButton("app-panel-fullscreen", "Fullscreen", () => this.inPanel?.setMode("fullscreen")),
      pip: actionButton("app-panel-pip", "Picture in picture", () => this.inPanel?.setMode("pip")),
    };
    places.panelClose.before(el("span", { class: "app-actions" }, ...Object.values(this.panelButtons)));
    window.addEventListener("message", (event) => {
      for (const view of [...this.views.values(), ...this.leaving]) {
        if (view.frame && event.source === view.frame.contentWindow) {
          view.receive(event);
          return;
        }
      }
      for (const spare of this.spares) {
        if (spare.frame && event.source === spare.frame.contentWindow) {
          spare.hold(event);
          return;
        }
      }
    });
    window.addEventListener("formwork-theme", () => {
      const change = { theme: currentTheme(), styles: hostStyles() };
      for (const view of this.views.values()) view.contextChanged(change);
    });
  }

  // One message of the app of document `doc` to the host: its reply `{response, open_link}`. Over the socket
  // when it is open (and `overSocket`: the socket is the shown session's), else one request.
  rpc(doc, message, context, overSocket = true) {
    const relay = this.nextRelay++;
    return new Promise((resolve, reject) => {
      this.relays.set(relay, { resolve, reject });
      if (overSocket && this.send({ type: "app_rpc", doc, relay, message, context })) return;
      this.relays.delete(relay);
      api(`/api/apps/${doc}/rpc`, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ message, context }),
      }).then(resolve, reject);
    });
  }

  // The host's answer to an `app_rpc`.
  replied(reply) {
    const waiting = this.relays.get(reply.relay);
    if (!waiting) return;
    this.relays.delete(reply.relay);
    if (typeof reply.error === "string") waiting.reject(new Error(reply.error));
    else waiting.resolve(reply);
  }

  // The socket closed: what was sent on it will not be answered there.
  socketClosed() {
    for (const waiting of this.relays.values()) waiting.reject(new Error("the connection to formwork closed"));
    this.relays.clear();
  }

  // A new session is shown: the apps of the old one are torn down, off-screen.
  open(sessionId) {
    if (sessionId === this.sessionId) return;
    this.socketClosed();
    for (const view of this.views.values()) this.leave(view);
    this.views.clear();
    this.discardSpare(this.spare);
    this.sessionId = sessionId;
  }

  // The app of a session no longer shown: parked, it gets its `ui/resource-teardown` and a moment for its last
  // requests (over requests of their own: the socket is the next session's), then goes.
  leave(view) {
    if (!KEEPS_MOVED_FRAMES) {
      // Its frame cannot be kept alive off-screen for the teardown: it goes with the transcript.
      this.releasePanel(view);
      view.dropFrame();
      view.setState("closed");
      view.element.remove();
      return;
    }
    view.leaving = true;
    this.leaving.add(view);
    this.releasePanel(view);
    moveInto(this.places.parking, view.box);
    moveInto(this.places.parking, view.element);
    view.close({ reason: "The person left the session." }).finally(() => {
      this.leaving.delete(view);
      view.element.remove();
    });
  }

  // Loads a spare like the app of `view`, which is up, unless the session has one (or one is on its way).
  prepareSpare(view) {
    // A widget's page is made when it is served, with what its call holds then: no spare runs it ahead. Nor
    // does one where taking it over (moving its frame into the card) would load it again.
    if (this.spare || !this.sessionId || view.skybridge || !KEEPS_MOVED_FRAMES) return;
    const spare = new Spare(view);
    this.spare = spare;
    this.spares.add(spare);
    api(`/api/sessions/${encodeURIComponent(this.sessionId)}/app-spare`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ like: view.callId }),
    }).then(
      (minted) => {
        spare.doc = minted.doc;
        if (this.spare !== spare) {
          this.discardSpare(spare);
          return;
        }
        spare.origin = minted.origin;
        spare.mintedAt = performance.now();
        spare.frame = appFrameElement("app-spare");
        spare.frame.title = "Spare app frame";
        if (minted.allow) spare.frame.setAttribute("allow", minted.allow);
        spare.frame.src = minted.src;
        this.places.parking.append(spare.frame);
        after(SPARE_HOLD_MS, () => {
          if (this.spare !== spare) return;
          this.discardSpare(spare);
          // A page out of sight, or a session whose apps are done for a while, renews nothing: the next app
          // up makes a new spare.
          const recent = performance.now() - this.lastStart < SPARE_RENEW_FOR_MS;
          if (recent && document.visibilityState === "visible") this.prepareSpare(view);
        });
      },
      () => {
        if (this.spare === spare) this.spare = null;
        this.spares.delete(spare);
      },
    );
  }

  // The spare for `view`, which starts now, or null when none fits it (then the spare goes: the next one will be
  // like this app).
  takeSpare(view) {
    this.lastStart = performance.now();
    const spare = this.spare;
    if (!spare) return null;
    if (!spare.fits(view)) {
      this.discardSpare(spare);
      return null;
    }
    this.spare = null;
    return spare;
  }

  // A spare that will not be used: its frame and its document go.
  discardSpare(spare) {
    if (!spare) return;
    if (this.spare === spare) this.spare = null;
    this.spares.delete(spare);
    spare.frame?.remove();
    if (spare.doc) api(`/api/apps/${spare.doc}`, { method: "DELETE" }).catch(() => {});
  }

  // The transcript is redrawn from a snapshot: keep the frames alive off-screen until their calls come back.
  park() {
    for (const view of this.views.values()) view.park();
  }

  // The call `call_id` declared an app: its card goes in `callNode`.
  declare(event, call, callNode) {
    let view = this.views.get(event.call_id);
    if (!view) {
      view = new AppView(this, event, call);
      this.views.set(event.call_id, view);
    }
    view.attach(callNode);
    return view;
  }

  finished(event) {
    this.views.get(event.call_id)?.finished(event);
  }

  // A card opened: an app fullscreen over the conversation steps aside to the side panel (or, when it cannot be
  // there, behind its Open app button), so the card is never hidden behind it.
  cardOpened() {
    const view = this.inPanel;
    if (!view || view.mode !== "fullscreen") return;
    if (view.mayShow("tab")) view.setMode("tab");
    else view.leavePanel();
  }

  // The side panel shows `view` (tab or fullscreen); the one that was there goes back.
  takePanel(view, fullscreen) {
    if (this.inPanel && this.inPanel !== view) this.inPanel.leavePanel();
    this.inPanel = view;
    const { panel, panelBody, panelTitle } = this.places;
    panelTitle.textContent = view.title;
    panel.hidden = false;
    panel.dataset.mode = fullscreen ? "fullscreen" : "tab";
    document.body.dataset.appPanel = fullscreen ? "fullscreen" : "tab";
    this.panelButtons.tab.hidden = !fullscreen || !view.mayShow("tab");
    this.panelButtons.fullscreen.hidden = fullscreen || !view.mayShow("fullscreen");
    this.panelButtons.pip.hidden = !view.mayShow("pip");
    view.place(panelBody, view.box);
  }

  releasePanel(view) {
    if (this.inPanel !== view) return;
    this.inPanel = null;
    this.places.panel.hidden = true;
    delete document.body.dataset.appPanel;
  }
}

class AppView {
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
