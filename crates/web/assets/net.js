// The workbench's two channels to the server: REST calls and the session socket.
//
// The access token travels in an HttpOnly cookie the server set when the page was first opened, so
// neither channel handles it here.

export async function api(path, options = {}) {
  const response = await fetch(path, {
    credentials: "same-origin",
    ...options,
    headers: { Accept: "application/json", ...(options.headers ?? {}) },
  });
  if (!response.ok) {
    const text = await response.text();
    throw new Error(`${response.status}: ${text.trim()}`);
  }
  return response.json();
}

// One WebSocket to /api/sessions/{id}/socket. Messages arrive as parsed JSON through onMessage;
// commands go out with send(). There is no automatic reconnect (and so no timer): the page offers a
// Reconnect button instead.
export class SessionSocket {
  constructor(sessionId, { onMessage, onOpen, onClose }) {
    this.sessionId = sessionId;
    this.handlers = { onMessage, onOpen, onClose };
    this.ws = null;
    this.stopped = false;
  }

  connect() {
    const url = new URL(`/api/sessions/${encodeURIComponent(this.sessionId)}/socket`, location.href);
    url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
    url.search = "";
    url.hash = "";
    const ws = new WebSocket(url);
    this.ws = ws;
    ws.addEventListener("open", () => this.handlers.onOpen?.());
    ws.addEventListener("message", (message) => {
      let data;
      try {
        data = JSON.parse(message.data);
      } catch {
        return;
      }
      this.handlers.onMessage?.(data);
    });
    ws.addEventListener("close", (event) => {
      if (this.ws === ws && !this.stopped) this.handlers.onClose?.(event);
    });
  }

  get open() {
    return this.ws?.readyState === WebSocket.OPEN;
  }

  // Sends one command; false when the socket is not open.
  send(command) {
    if (!this.open) return false;
    this.ws.send(JSON.stringify(command));
    return true;
  }

  close() {
    this.stopped = true;
    this.ws?.close();
  }
}
