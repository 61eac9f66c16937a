// The workbench's two channels to the server: REST calls and the session socket, and the access token
// both carry.
//
// The token comes in the fragment of the printed URL (`/#token=…`), which the browser never sends
// anywhere. takeToken() moves it into sessionStorage (this origin, port included, and this tab only) and
// out of the address bar. The page then sends it itself, as `Authorization: Bearer` on each API call and
// as a WebSocket subprotocol on the socket, so it reaches this server and no other: there is no cookie,
// which the browser would hand to every server on 127.0.0.1 whatever its port.

const TOKEN_KEY = "formwork-token";
// The characters the server allows in a token (access.rs, usable_token).
const TOKEN_FRAGMENT = /^#token=([A-Za-z0-9._~-]{32,128})$/;

let token = null;

// Whether the address holds a token to take.
export function tokenInFragment() {
  return TOKEN_FRAGMENT.test(location.hash);
}

// Reads the token from the fragment (then drops the fragment) or from this tab's storage. Returns whether
// the page has one.
export function takeToken() {
  const match = TOKEN_FRAGMENT.exec(location.hash);
  if (match) {
    token = match[1];
    history.replaceState(null, "", location.pathname + location.search);
    try {
      sessionStorage.setItem(TOKEN_KEY, token);
    } catch {
      // Storage may be off: the token then lasts as long as this page.
    }
    return true;
  }
  try {
    token = sessionStorage.getItem(TOKEN_KEY);
  } catch {
    token = null;
  }
  return token !== null;
}

// The server refused the token (it was restarted with a new one): forget it.
function forgetToken() {
  token = null;
  try {
    sessionStorage.removeItem(TOKEN_KEY);
  } catch {
    // Nothing was kept.
  }
}

// A refused token, told apart from other failures so the page can say what to do.
export class LockedError extends Error {}

export async function api(path, options = {}) {
  if (token === null) throw new LockedError("no access token");
  const response = await fetch(path, {
    credentials: "omit",
    ...options,
    headers: { Accept: "application/json", ...(options.headers ?? {}), Authorization: `Bearer ${token}` },
  });
  if (response.status === 401) {
    forgetToken();
    throw new LockedError("the access token was refused");
  }
  if (!response.ok) {
    const text = await response.text();
    const error = new Error(`${response.status}: ${text.trim()}`);
    error.status = response.status;
    try {
      error.data = JSON.parse(text);
    } catch {
      error.data = null;
    }
    throw error;
  }
  return response.json();
}

// Stores a file the person adds to a resource picker in session `sessionId`: resolves to {uri, name}, the
// host's copy (its file:// URI is what the picker answers).
export async function uploadFile(sessionId, file) {
  const name = encodeURIComponent(file.name);
  return api(`/api/sessions/${encodeURIComponent(sessionId)}/uploads?name=${name}`, {
    method: "POST",
    headers: { "Content-Type": "application/octet-stream" },
    body: file,
  });
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
    // A browser cannot set headers on a WebSocket: the token goes as the second subprotocol offered,
    // and the server selects the first.
    const ws = new WebSocket(url, ["formwork", `formwork.token.${token ?? ""}`]);
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
