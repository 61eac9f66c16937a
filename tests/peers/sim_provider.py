# HAND-WRITTEN FAKE (stdlib only): a simulated model provider for formwork's model loop tests and for real Codex
# under the Codex runtime.
# No real model runs offline, so the model is the one peer made up; the plugins, the host and the
# browser are real. It speaks both wires as OpenAI's servers stream them:
#   POST .../responses          the Responses API (`event:` + `data:` lines, no [DONE])
#   POST .../chat/completions   Chat Completions (`data:` chunks, then `data: [DONE]`)
#
# Usage: python3 sim_provider.py SCRIPT LOG   (with stdin a pipe: the provider exits when it closes)
# Listens on 127.0.0.1 (a free port); the first line on stdout is its base URL, `http://127.0.0.1:PORT/v1`.
# Every request is appended to LOG as one JSON line: {"request", "path", "headers", "body",
# "received_ns", "client_port"}, where request numbers the requests from 1, received_ns is when its
# request line was read and client_port the client's end of its connection (a kept connection keeps it); each text delta adds {"request", "delta_ns", "text"} once its event is written, and each
# answer {"request", "answered": path, "last_event_ns", "last_byte_ns"} once its last byte is:
# last_event_ns is the write of its last event (which ends the answer for a client, before the body's
# closing chunk), last_byte_ns that of the closing chunk. A write's time is read just before it (a
# reader the write wakes may run before the writer reads the clock again); the threads of several
# connections may log out of order, hence the numbers. The times are time.time_ns() (CLOCK_REALTIME),
# for `cargo xtask bench --only model`.
#
# SCRIPT is JSON: {"rules": [{"match": REGEX, "steps": [STEP, ...]}, ...]}. The latest user message of a
# request (not counting text a client adds as one: formwork's app data, Codex's <environment_context>) picks the
# first rule whose REGEX finds it (Python `re.search`); the step is how many times the
# model already called tools since that message (a group of parallel calls counts once). A request past
# the last step, or matching no rule, is answered with the text "(nothing scripted)".
#
# A STEP is an object:
#   {"text": "Hello there", "delay_ms": 0}      text, streamed a word at a time, delay_ms between deltas
#   {"calls": [{"name": N, "arguments": OBJ_OR_STRING, "namespace": NS?}], "text": T?}
#                                               function calls (arguments streamed in two pieces), after
#                                               optional text; a string is sent as is (e.g. bad JSON); a
#                                               `namespace` (Responses wire) calls a tool Codex offers in one,
#                                               e.g. `mcp__<server>` for an MCP server's tools
#   {"echo": true}                              text: "seen: " + the outputs of the last calls, joined by " | "
#   {"recall": true}                            text: "you said: " + every user message so far, joined by " / "
#   {"status": 401, "message": M, "retry_after": S?}   an HTTP error with an OpenAI-style body
#   {"cut": "partial text"}                     streams the text, then closes before the response is done
#   {"malformed": true}                         one event that is not JSON
#   {"failed": {"code": C, "message": M}}       the wire's own failure (response.failed / an error chunk)
#   {"stall": true}                             sends the head and one comment, then nothing
# and may carry "first": [STEP, ...]: answers for the first requests at this step, before the step itself
# (e.g. a 429 once, then the text), counted per rule and step.

import itertools
import json
import os
import re
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SCRIPT = json.load(open(sys.argv[1]))
LOG = sys.argv[2]
LOCK = threading.Lock()
ATTEMPTS = {}
REQUESTS = itertools.count(1)


def log(entry):
    with LOCK:
        with open(LOG, "a") as out:
            out.write(json.dumps(entry) + "\n")


def text_of(content):
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return ""


def conversation(path, body):
    """The latest user message, how many call groups followed it, and the outputs of the last group."""
    user, groups, outputs, in_group = "", 0, [], False
    if path.endswith("/responses"):
        for item in body.get("input", []):
            kind = item.get("type", "message")
            if kind == "message" and item.get("role") == "user" and not is_context(text_of(item.get("content"))):
                user, groups, outputs, in_group = text_of(item.get("content")), 0, [], False
            elif kind == "function_call":
                if not in_group:
                    groups, outputs, in_group = groups + 1, [], True
            else:
                in_group = False
                if kind == "function_call_output":
                    outputs.append(text_of(item.get("output")))
    else:
        for message in body.get("messages", []):
            role = message.get("role")
            if role == "user" and not is_context(text_of(message.get("content"))):
                user, groups, outputs = text_of(message.get("content")), 0, []
            elif role == "assistant" and message.get("tool_calls"):
                groups, outputs = groups + 1, []
            elif role == "tool":
                outputs.append(text_of(message.get("content")))
    return user, groups, outputs


def is_context(text):
    """Text a client adds as a user message that the person did not write: formwork's app data,
    Codex's environment context."""
    return text.startswith("App data") or text.startswith("<environment_context>")


def user_messages(path, body):
    entries = body.get("input", []) if path.endswith("/responses") else body.get("messages", [])
    texts = [text_of(entry.get("content")) for entry in entries
             if entry.get("role") == "user" and entry.get("type", "message") == "message"]
    return [text for text in texts if not is_context(text)]


def choose(path, body):
    user, step, outputs = conversation(path, body)
    for number, rule in enumerate(SCRIPT.get("rules", [])):
        if re.search(rule["match"], user):
            steps = rule.get("steps", [])
            if step >= len(steps):
                break
            chosen = steps[step]
            first = chosen.get("first", [])
            with LOCK:
                key = (number, step)
                count = ATTEMPTS.get(key, 0)
                ATTEMPTS[key] = count + 1
            if count < len(first):
                chosen = first[count]
            if chosen.get("echo"):
                return {"text": "seen: " + " | ".join(outputs)}
            if chosen.get("recall"):
                return {"text": "you said: " + " / ".join(user_messages(path, body))}
            return chosen
    return {"text": "(nothing scripted)"}


USAGE = {
    "input_tokens": 5,
    "input_tokens_details": {"cached_tokens": 0},
    "output_tokens": 2,
    "output_tokens_details": {"reasoning_tokens": 0},
    "total_tokens": 7,
}


def words(text):
    return re.findall(r"\S+\s*|\s+", text) or [""]


def response(status, output, usage):
    return {"id": "resp_1", "object": "response", "created_at": 1, "status": status, "model": "sim",
            "output": output, "usage": usage}


def responses_events(step):
    """(event type, data) pairs of one Responses stream; None marks where a cut closes it."""
    events = [("response.created", {"response": response("in_progress", [], None)})]
    output = []
    text = step.get("text") or step.get("cut")
    if text:
        index = len(output)
        message = {"type": "message", "id": "msg_1", "role": "assistant", "status": "in_progress", "content": []}
        events.append(("response.output_item.added", {"output_index": index, "item": message}))
        part = {"type": "output_text", "text": "", "annotations": []}
        events.append(("response.content_part.added", {"item_id": "msg_1", "output_index": index, "content_index": 0, "part": part}))
        for word in words(text):
            events.append(("response.output_text.delta", {"item_id": "msg_1", "output_index": index, "content_index": 0, "delta": word, "delay": True}))
        if step.get("cut"):
            events.append(None)
            return events
        done_part = {"type": "output_text", "text": text, "annotations": []}
        events.append(("response.output_text.done", {"item_id": "msg_1", "output_index": index, "content_index": 0, "text": text}))
        events.append(("response.content_part.done", {"item_id": "msg_1", "output_index": index, "content_index": 0, "part": done_part}))
        whole = dict(message, status="completed", content=[done_part])
        events.append(("response.output_item.done", {"output_index": index, "item": whole}))
        output.append(whole)
    for number, call in enumerate(step.get("calls", []), start=1):
        index = len(output)
        arguments = call.get("arguments", {})
        arguments = arguments if isinstance(arguments, str) else json.dumps(arguments)
        item = {"type": "function_call", "id": f"fc_{number}", "call_id": f"call_{number}", "name": call["name"],
                "arguments": "", "status": "in_progress"}
        if "namespace" in call:
            item["namespace"] = call["namespace"]
        events.append(("response.output_item.added", {"output_index": index, "item": item}))
        half = len(arguments) // 2
        for piece in (arguments[:half], arguments[half:]):
            events.append(("response.function_call_arguments.delta", {"item_id": item["id"], "output_index": index, "delta": piece}))
        events.append(("response.function_call_arguments.done", {"item_id": item["id"], "output_index": index, "arguments": arguments}))
        whole = dict(item, arguments=arguments, status="completed")
        events.append(("response.output_item.done", {"output_index": index, "item": whole}))
        output.append(whole)
    if step.get("failed"):
        events.append(("response.failed", {"response": dict(response("failed", output, None), error=step["failed"])}))
        return events
    events.append(("response.completed", {"response": response("completed", output, USAGE)}))
    return events


def chat_chunks(step):
    """Chunks of one Chat Completions stream; None marks where a cut closes it."""
    def chunk(delta, finish=None):
        return {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "sim",
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    if step.get("failed"):
        return [{"error": step["failed"]}]
    chunks = [chunk({"role": "assistant", "content": ""})]
    text = step.get("text") or step.get("cut")
    for word in words(text) if text else []:
        entry = chunk({"content": word})
        entry["delay"] = True
        chunks.append(entry)
    if step.get("cut"):
        chunks.append(None)
        return chunks
    calls = step.get("calls", [])
    for index, call in enumerate(calls):
        arguments = call.get("arguments", {})
        arguments = arguments if isinstance(arguments, str) else json.dumps(arguments)
        first = {"index": index, "id": f"call_{index + 1}", "type": "function",
                 "function": {"name": call["name"], "arguments": ""}}
        chunks.append(chunk({"tool_calls": [first]}))
        half = len(arguments) // 2
        for piece in (arguments[:half], arguments[half:]):
            chunks.append(chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}))
    chunks.append(chunk({}, "tool_calls" if calls else "stop"))
    chunks.append({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "sim", "choices": [],
                   "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}})
    chunks.append("[DONE]")
    return chunks


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Each event goes out when written, as a streaming server sends it: with Nagle's algorithm on, an event
    # written while the one before waits for its (delayed) ACK waits too, 40 ms on Linux.
    disable_nagle_algorithm = True

    def log_message(self, *args):
        pass

    def parse_request(self):
        # Called once the request line is in, before the headers are read.
        self.received = time.time_ns()
        return super().parse_request()

    def do_POST(self):
        received = self.received
        self.number = next(REQUESTS)
        length = int(self.headers.get("content-length", "0"))
        body = json.loads(self.rfile.read(length) or b"{}")
        log({"request": self.number, "path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()}, "body": body,
             "received_ns": received, "client_port": self.client_address[1]})
        path = self.path.split("?")[0]
        if not (path.endswith("/responses") or path.endswith("/chat/completions")):
            return self.plain(404, {"error": {"message": "no such endpoint"}})
        step = choose(path, body)
        if "status" in step:
            headers = {"retry-after": str(step["retry_after"])} if "retry_after" in step else {}
            return self.plain(step["status"], {"error": {"message": step.get("message", "scripted error"),
                                                         "type": "scripted"}}, headers)
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        if step.get("stall"):
            self.chunk(b": waiting\n\n")
            time.sleep(3600)
            return
        if step.get("malformed"):
            return self.finish_stream(path, self.chunk(b"data: {this is not json\n\n"))
        delay = step.get("delay_ms", 0) / 1000
        if path.endswith("/responses"):
            for number, event in enumerate(responses_events(step)):
                if event is None:
                    return self.cut()
                kind, data = event
                is_delta = data.pop("delay", False)
                if is_delta and delay:
                    time.sleep(delay)
                data = dict({"type": kind, "sequence_number": number}, **data)
                written = self.chunk(f"event: {kind}\ndata: {json.dumps(data)}\n\n".encode())
                if is_delta:
                    log({"request": self.number, "delta_ns": written, "text": data["delta"]})
        else:
            for data in chat_chunks(step):
                if data is None:
                    return self.cut()
                is_delta = isinstance(data, dict) and data.pop("delay", False)
                if is_delta and delay:
                    time.sleep(delay)
                text = data if isinstance(data, str) else json.dumps(data)
                written = self.chunk(f"data: {text}\n\n".encode())
                if is_delta:
                    text = data["choices"][0]["delta"]["content"]
                    log({"request": self.number, "delta_ns": written, "text": text})
        self.finish_stream(path, written)

    def chunk(self, data):
        """Writes one chunk; returns when the write began."""
        data = f"{len(data):x}\r\n".encode() + data + b"\r\n"
        began = time.time_ns()
        self.wfile.write(data)
        self.wfile.flush()
        return began

    def finish_stream(self, path, last_event):
        written = self.chunk(b"")
        log({"request": self.number, "answered": path, "last_event_ns": last_event, "last_byte_ns": written})

    def cut(self):
        self.wfile.flush()
        self.close_connection = True
        self.connection.shutdown(2)

    def plain(self, status, body, headers=None):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()


def exit_with_parent():
    # The test that started us holds our stdin: when it goes (even by a panic), so do we.
    sys.stdin.read()
    os._exit(0)


threading.Thread(target=exit_with_parent, daemon=True).start()
class Server(ThreadingHTTPServer):
    def handle_error(self, request, client_address):
        pass  # a client that hangs up (a stopped turn) is no error of ours


server = Server(("127.0.0.1", 0), Handler)
server.daemon_threads = True
print(f"http://127.0.0.1:{server.server_address[1]}/v1", flush=True)
server.serve_forever()
