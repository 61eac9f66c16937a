// The workbench page: sessions, the open session's transcript over its socket, the message box, the
// tool palette and the theme. Plain modules, no framework and no timers: everything happens in
// response to an event from the person or the server.

import { el } from "./dom.js";
import { api, takeToken, tokenInFragment, LockedError, SessionSocket, uploadFile } from "./net.js";
import { Transcript } from "./transcript.js";
import { Palette } from "./palette.js";
import { Apps } from "./apps.js";

const $ = (testid) => document.querySelector(`[data-testid=${testid}]`);

const page = {
  sessionId: null,
  socket: null,
  sessions: [],
};

const composerInput = $("message-input");
const stopButton = $("stop-turn");
const connection = $("connection-status");
const reconnectButton = $("reconnect");
// Last in the page: looked up once, not through every card before it on each announcement.
const announcer = $("announcer");

const apps = new Apps({
  panel: $("app-panel"),
  panelBody: $("app-panel-body"),
  panelTitle: $("app-panel-title"),
  panelClose: $("app-panel-close"),
  pip: $("app-pip"),
  parking: $("app-parking"),
}, (message) => page.socket?.send(message) ?? false);

const transcript = new Transcript($("transcript"), {
  apps,
  upload: (file) => uploadFile(page.sessionId, file),
  onSignedIn: () => palette.load(true),
  // The list shows each session's first message (asked of the server when the person writes) and its open cards
  // (counted here for the session on screen, so a card costs no request).
  onListChange: () => loadSessions().catch(() => {}),
  onOpenCards: (count) => showOpenCards(count),
  onTurn: (running) => {
    stopButton.hidden = !running;
  },
  announce: (text) => {
    announcer.textContent = text;
  },
  composer: () => composerInput,
});

const palette = new Palette($("tool-palette"), {
  send: (command) => page.socket?.send(command) ?? false,
});

// ---- theme: system, light or dark, remembered in this browser ----

const THEMES = ["system", "light", "dark"];

function applyTheme(theme) {
  if (theme === "system") delete document.documentElement.dataset.theme;
  else document.documentElement.dataset.theme = theme;
  $("theme-toggle").textContent = `Theme: ${theme}`;
  $("theme-toggle").dataset.theme = theme;
}

function storedTheme() {
  try {
    const theme = localStorage.getItem("formwork-theme");
    return THEMES.includes(theme) ? theme : "system";
  } catch {
    return "system";
  }
}

$("theme-toggle").addEventListener("click", () => {
  const next = THEMES[(THEMES.indexOf(storedTheme()) + 1) % THEMES.length];
  try {
    localStorage.setItem("formwork-theme", next);
  } catch {
    // Storage may be off; the theme still changes for this page.
  }
  applyTheme(next);
  window.dispatchEvent(new Event("formwork-theme"));
});

// ---- sessions ----

function sessionFromHash() {
  const match = /^#\/sessions\/(.+)$/.exec(location.hash);
  return match ? decodeURIComponent(match[1]) : null;
}

async function loadSessions() {
  const { sessions } = await api("/api/sessions");
  page.sessions = sessions;
  drawSessions();
  return sessions;
}

// The session on screen has `count` cards awaiting an answer; a session not in the list yet brings the list anew.
function showOpenCards(count) {
  const entry = page.sessions.find((session) => session.id === page.sessionId);
  if (!entry) {
    loadSessions().catch(() => {});
    return;
  }
  if (entry.open === count) return;
  entry.open = count;
  drawSessions();
}

function drawSessions() {
  const index = page.sessions.findIndex((s) => s.id === page.sessionId);
  $("session-title").textContent = index >= 0 ? page.sessions[index].title ?? `Session ${index + 1}` : "Session";
  $("session-list").replaceChildren(
    ...page.sessions.map((session, index) =>
      el(
        "li",
        {},
        el(
          "a",
          {
            class: "session-link",
            href: `#/sessions/${encodeURIComponent(session.id)}`,
            testid: "session-item",
            dataset: { sessionId: session.id },
            "aria-current": session.id === page.sessionId ? "page" : null,
          },
          el("span", { class: "session-name", text: session.title ?? `Session ${index + 1}` }),
          session.open
            ? el("span", { class: "badge", testid: "session-open", text: `${session.open} open` })
            : null,
        ),
      ),
    ),
  );
}

async function newSession() {
  const { id } = await api("/api/sessions", { method: "POST" });
  await loadSessions();
  location.hash = `#/sessions/${encodeURIComponent(id)}`;
  composerInput.focus();
}

$("new-session").addEventListener("click", () => {
  newSession().catch((error) => failed(error, "Could not create a session"));
});

// Deletes the session on screen (its transcript and the files added to it), once the person confirms, then shows
// the newest one left (or a new one).
async function deleteSession() {
  const id = page.sessionId;
  if (!id || !window.confirm("Delete this session? Its transcript and the files added to it are removed.")) return;
  await api(`/api/sessions/${encodeURIComponent(id)}`, { method: "DELETE" });
  page.socket?.close();
  page.socket = null;
  page.sessionId = null;
  const left = await loadSessions();
  if (left.length) location.hash = `#/sessions/${encodeURIComponent(left[left.length - 1].id)}`;
  else await newSession();
}

$("delete-session").addEventListener("click", () => {
  deleteSession().catch((error) => failed(error, "Could not delete the session"));
});

async function route() {
  let id = sessionFromHash();
  if (!id) {
    const sessions = page.sessions.length ? page.sessions : await loadSessions();
    if (!sessions.length) {
      await newSession();
      return;
    }
    id = sessions[sessions.length - 1].id;
    location.replace(`#/sessions/${encodeURIComponent(id)}`);
    return;
  }
  openSession(id);
}

function openSession(id) {
  if (page.sessionId === id && page.socket) return;
  page.socket?.close();
  page.sessionId = id;
  apps.open(id);
  drawSessions();
  connect();
}

function connect() {
  const id = page.sessionId;
  transcript.reset();
  setConnection("connecting", "Connecting…");
  const socket = new SessionSocket(id, {
    onOpen: () => setConnection("connected", "Connected"),
    onMessage: transcript.receive,
    onClose: (event) => {
      apps.socketClosed();
      setConnection("disconnected", event.reason ? `Disconnected: ${event.reason}` : "Disconnected");
    },
  });
  page.socket = socket;
  transcript.attach(socket);
  socket.connect();
}

// Without a token the page can do nothing but say how to get one.
function showLocked() {
  page.socket?.close();
  page.socket = null;
  setConnection("locked", "Locked");
  $("locked").hidden = false;
}

function failed(error, what) {
  if (error instanceof LockedError) showLocked();
  else setConnection("error", what ? `${what}: ${error.message}` : error.message);
}

function setConnection(state, text) {
  connection.dataset.state = state;
  connection.textContent = text;
  reconnectButton.hidden = state !== "disconnected";
}

// A server restarted on the same port has a new token: ask with the one kept before reconnecting, so a
// refused token shows the way out instead of a socket that keeps closing.
reconnectButton.addEventListener("click", () => {
  if (!page.sessionId) return;
  api("/api/info").then(
    () => connect(),
    (error) => {
      if (error instanceof LockedError) showLocked();
      else setConnection("disconnected", `Disconnected: ${error.message}`);
    },
  );
});

window.addEventListener("hashchange", () => {
  // The printed URL opened again in this tab is a jump within the page: take its token and start over.
  if (tokenInFragment()) {
    start().catch((error) => failed(error, "The workbench could not start"));
    return;
  }
  route().catch((error) => failed(error));
});

// ---- the message box ----

function sendMessage() {
  const text = composerInput.value.trim();
  if (!text) return;
  if (page.socket?.send({ type: "send_message", text })) composerInput.value = "";
  else setConnection("disconnected", "Disconnected: the message was not sent");
}

$("composer").addEventListener("submit", (event) => {
  event.preventDefault();
  sendMessage();
});

composerInput.addEventListener("keydown", (event) => {
  if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
    event.preventDefault();
    sendMessage();
  }
});

stopButton.addEventListener("click", () => page.socket?.send({ type: "stop_turn" }));

// ---- start ----

async function start() {
  applyTheme(storedTheme());
  if (!takeToken()) {
    showLocked();
    return;
  }
  $("locked").hidden = true;
  const info = await api("/api/info");
  if (!info.model) {
    const hint = $("model-hint");
    hint.textContent =
      "No model is configured: messages are recorded, and a new message cancels open forms. Call tools from the palette, or start formwork serve with --model-provider (see docs/cli.md) or --scripted-model FILE.";
    hint.hidden = false;
  } else if (info.runtime === "codex") {
    const hint = $("model-hint");
    const model = info.model_name ? ` with ${info.model_name}` : "";
    hint.textContent = `Codex runs the conversation${model}; formwork shows its forms and approvals. Stop, or a new message, ends its turn.`;
    hint.hidden = false;
  } else if (info.model_name) {
    const hint = $("model-hint");
    hint.textContent = `The model is ${info.model_name}. Stop, or a new message, ends its turn.`;
    hint.hidden = false;
  }
  await loadSessions();
  await route();
  await palette.load();
}

start().catch((error) => failed(error, "The workbench could not start"));
