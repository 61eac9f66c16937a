// The spare: an app document loaded ahead for the session's next app (see `apps.js`).
//
// Each app document is a site of its own, so its frame needs a browser process of its own, and then its script
// must start: most of the time an app takes to show. Once an app of the session is up, the page keeps one spare
// for the session's next app of the same document: the host mints that document again, for no invocation, and
// the page loads it in a hidden frame, holding back its `ui/initialize`. When the next app's document is the same
// (the host decides), it takes the spare over: the frame moves into its card and the held `ui/initialize` goes on
// as the app's own, so the app is up at once. Until then a spare speaks for no invocation: nothing it asks goes
// anywhere. A session that shows no app costs no spare; a spare is renewed before the app would give up waiting.

import { isRpc } from "./app-frames.js";

// How long a spare may hold its app's `ui/initialize`: apps built on the official SDK give up on a request after
// 60 s, and a spare is renewed before that.
export const SPARE_HOLD_MS = 50_000;
// Spares are renewed for this long after the session's last app started, then no more until the next one.
export const SPARE_RENEW_FOR_MS = 10 * 60_000;
// An app may have given up on its held `ui/initialize` sooner (a timeout of its own): when it sends no
// `ui/notifications/initialized` this long after the answer, it starts again in a new frame.
export const SPARE_ANSWER_WAIT_MS = 1000;

// The document of an app the session showed, loaded ahead in a hidden frame for the session's next app of the
// same server and resource. Of what it posts, only its `ui/initialize` is kept, for the app that takes it over.
export class Spare {
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
