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
// This module keeps a session's apps, relays their messages and holds the side panel; `app-view.js` is one app's
// card and frame, `app-spare.js` the frame loaded ahead for the next app, `app-frames.js` the frames' helpers,
// `app-context.js` the look an app is told of.

import { after, el } from "./dom.js";
import { api } from "./net.js";
import { hostStyles, currentTheme } from "./app-context.js";
import { KEEPS_MOVED_FRAMES, actionButton, appFrameElement, moveInto } from "./app-frames.js";
import { SPARE_HOLD_MS, SPARE_RENEW_FOR_MS, Spare } from "./app-spare.js";
import { AppView } from "./app-view.js";

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
