// The frames of app documents (see `apps.js`), and the small helpers the apps' modules share.
//
// A frame is moved between places with `moveBefore` (the browsing context, its input, login state and
// in-flight requests survive), never re-created, and it is parked while the transcript redraws. A browser
// without `moveBefore` (Firefox, Safari) would load a moved frame's document again, which the sandbox serves
// once: there an app that moves starts again in a document of its own, with its call's input and last outcome,
// as after a reload of the page; and no spares are kept.

import { after, el } from "./dom.js";

// Whether the browser moves a frame without loading it again.
export const KEEPS_MOVED_FRAMES = typeof Element.prototype.moveBefore === "function";

// Whether `node` is at the end of `parent` already.
export const isLastIn = (parent, node) => node.parentNode === parent && parent.lastChild === node;

// Moves `node` to the end of `parent` keeping its frames alive when the browser can.
export function moveInto(parent, node) {
  if (isLastIn(parent, node)) return;
  if (KEEPS_MOVED_FRAMES && node.isConnected && parent.isConnected) parent.moveBefore(node, null);
  else parent.append(node);
}

// What `promise` resolves to, or null once `ms` passed without it (the page's bounded waits: an app's answer).
export function within(promise, ms) {
  const late = new Promise((resolve) => after(ms, () => resolve(null)));
  return Promise.race([promise, late]);
}

export function actionButton(testid, text, onclick) {
  return el("button", { type: "button", class: "button button-quiet", testid, text, onclick });
}

// A frame element for an app document, empty.
export function appFrameElement(testid) {
  return el("iframe", {
    class: "app-frame",
    testid,
    sandbox: "allow-scripts allow-same-origin allow-forms",
    referrerpolicy: "no-referrer",
  });
}

export function isRpc(data) {
  return data !== null && typeof data === "object" && !Array.isArray(data) && data.jsonrpc === "2.0";
}
