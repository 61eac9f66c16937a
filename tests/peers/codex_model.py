# HAND-WRITTEN FAKE (stdlib only): a simulated OpenAI Responses model for driving real Codex in tests.
# There is no real model to run offline, so this is the one place a peer is made up; Codex itself is real.
#
# Usage: python3 codex_model.py LOG NAMESPACE TOOL
# Listens on 127.0.0.1 (a free port, printed as the first line on stdout) and serves
# `POST /v1/responses` as server-sent events. A request whose `input` holds no `function_call_output`
# is answered with one call of TOOL in NAMESPACE (Codex names an MCP server's tools `mcp__<server>`);
# a request that carries the tool's output is answered with a final assistant message. Every request
# is appended to LOG as one JSON line, `{"path": ..., "body": ...}`, so a test can read what the tool
# returned to the model. Any other path gets 404.

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOG, NAMESPACE, TOOL = sys.argv[1], sys.argv[2], sys.argv[3]


def has_tool_output(body):
    items = body.get("input")
    if not isinstance(items, list):
        return False
    return any(isinstance(item, dict) and item.get("type") == "function_call_output" for item in items)


def events(body, number):
    response_id = f"resp_{number}"
    if has_tool_output(body):
        item = {
            "type": "message",
            "role": "assistant",
            "id": f"msg_{number}",
            "content": [{"type": "output_text", "text": "done"}],
        }
    else:
        item = {
            "type": "function_call",
            "id": f"fc_{number}",
            "call_id": f"call_{number}",
            "namespace": NAMESPACE,
            "name": TOOL,
            "arguments": "{}",
        }
    usage = {
        "input_tokens": 1,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 1,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 2,
    }
    return [
        ("response.created", {"type": "response.created", "response": {"id": response_id}}),
        ("response.output_item.done", {"type": "response.output_item.done", "output_index": 0, "item": item}),
        ("response.completed", {"type": "response.completed", "response": {"id": response_id, "usage": usage}}),
    ]


class Handler(BaseHTTPRequestHandler):
    requests = 0

    def do_POST(self):
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length)
        try:
            body = json.loads(raw)
        except ValueError:
            body = raw.decode("utf-8", "replace")
        with open(LOG, "a", encoding="utf-8") as log:
            log.write(json.dumps({"path": self.path, "body": body}) + "\n")
        if self.path != "/v1/responses" or not isinstance(body, dict):
            self.send_error(404)
            return
        Handler.requests += 1
        stream = "".join(
            f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events(body, Handler.requests)
        ).encode()
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("content-length", str(len(stream)))
        self.end_headers()
        self.wfile.write(stream)

    def do_GET(self):
        with open(LOG, "a", encoding="utf-8") as log:
            log.write(json.dumps({"path": self.path, "body": None}) + "\n")
        self.send_error(404)

    def log_message(self, *args):
        pass


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
