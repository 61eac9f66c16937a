# HAND-WRITTEN (stdlib only): the stdio plugin of `cargo xtask bench --only model`, an instrument
# rather than a peer under test. An SDK would put its own parsing and validation between the line
# arriving and the tool running; this reads and writes JSON-RPC lines itself, so its times are the
# host's bytes arriving and its own bytes leaving.
#
# Usage: python3 bench_model_plugin.py LOG
# One tool, `stamp` (no arguments needed, any accepted), answering the text "stamped". Each call
# appends {"received_ns", "returned_ns"} to LOG: when the `tools/call` line was read, and just
# before its result is written. Both are time.time_ns() (CLOCK_REALTIME).

import json
import sys
import time

LOG = open(sys.argv[1], "a")
TOOL = {
    "name": "stamp",
    "description": "Stamps the time. Call it whenever asked.",
    "inputSchema": {"type": "object", "properties": {"turn": {"type": "integer"}}},
    "annotations": {"readOnlyHint": True},
}


def line_of(message):
    return json.dumps(message).encode() + b"\n"


def send(data):
    sys.stdout.buffer.write(data)
    sys.stdout.buffer.flush()


def answer(request):
    method = request.get("method")
    if method == "initialize":
        return {"protocolVersion": request.get("params", {}).get("protocolVersion", "2025-11-25"),
                "capabilities": {"tools": {}}, "serverInfo": {"name": "bench-model", "version": "0.1.0"}}
    if method == "tools/list":
        return {"tools": [TOOL]}
    if method == "ping":
        return {}
    return None


while True:
    line = sys.stdin.buffer.readline()
    received = time.time_ns()
    if not line:
        break
    try:
        request = json.loads(line)
    except ValueError:
        continue
    if not isinstance(request, dict) or "id" not in request or "method" not in request:
        continue  # a notification, or a response to nothing we asked
    if request["method"] == "tools/call":
        data = line_of({"jsonrpc": "2.0", "id": request["id"],
                        "result": {"content": [{"type": "text", "text": "stamped"}]}})
        returned = time.time_ns()
        send(data)
        LOG.write(json.dumps({"received_ns": received, "returned_ns": returned}) + "\n")
        LOG.flush()
        continue
    result = answer(request)
    if result is None:
        send(line_of({"jsonrpc": "2.0", "id": request["id"],
                      "error": {"code": -32601, "message": "no such method"}}))
    else:
        send(line_of({"jsonrpc": "2.0", "id": request["id"], "result": result}))
