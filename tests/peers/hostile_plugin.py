#!/usr/bin/env python3
"""A HAND-WRITTEN MCP plugin that sends hostile `elicitation/create` requests to the host.

No real plugin sends malformed or malicious forms on purpose, so no official SDK can produce these; this one speaks
newline-delimited JSON-RPC over stdio by hand, with the Python standard library only.

Tools:
- `hostile {case: integer}`: sends case N and returns what came back, as text: `result:<json>` or `error:<code>`,
  one outcome per awaited response (joined by a space), or `timeout` when the host never answered within
  TIMEOUT_SECONDS (the tests treat `timeout` as a failure: a host must never leave a plugin hanging).
- `cases`: the number of cases, as text.
- `all_cases`: runs every case in this one process, then pings the host, and returns a JSON list of
  `{"case", "name", "outcome"}` (the last entry is the ping).
- `flood {kind, count}`: writes one hostile line (`array`: a JSON array of `count` numbers; `oversized`: `count` MiB
  of `x`) or `count` lines (`garbage`: text that is not JSON), then pings the host, and returns
  `errors:<E> ping:<outcome>`, E being the number of error responses with `"id": null` that came before the ping's
  answer (the host answers in order, so these are its answers to the flood).
- `rpc_error {message}` (not listed): answers the call with a JSON-RPC error carrying `message`.
- `echo {message}`: returns the message in a result whose keys are in an unusual order, so the tests can check that
  the host prints results exactly as sent; it also writes the message to stderr (the host passes that through).
`tools/list` is paginated (two pages) and its tool objects carry an unknown key, for the same reason.

Command-line helpers for the tests: `--print-params N` prints the `params` of case N's last request;
`--print-tools` prints the tool list; `--endless-tools BYTES` serves, but answers every `tools/list` with a new page
(one tool whose description is BYTES long) and a new cursor, for ever; `--stop-reading` answers `initialize`, then
never reads its input again; `--modern` offers 2026-07-28 in `server/discover`, and its `hostile_round {kind}` answers
with the malformed `input_required` result ROUNDS[kind], then (when retried) with the `inputResponses` it got, as text;
`--modern-slow` is `--modern` that answers `server/discover` only after 11 s (a plugin busy starting), and from then
on refuses `initialize` as a 2026-07-28-only server does (-32022).
"""

import json
import os
import select
import sys
import time

TIMEOUT_SECONDS = 5.0

# Malformed or unexpected 2026-07-28 `input_required` results, by kind.
ROUNDS = {
    "requests_not_object": {"resultType": "input_required", "inputRequests": ["a"]},
    "no_method": {"resultType": "input_required", "inputRequests": {"a": {"params": {}}}},
    "unknown_kind": {"resultType": "input_required", "inputRequests": {"a": {"method": "tasks/create", "params": {}}}},
    "roots": {"resultType": "input_required", "inputRequests": {"a": {"method": "roots/list"}}},
    "params_not_object": {
        "resultType": "input_required",
        "inputRequests": {"a": {"method": "elicitation/create", "params": "hello"}},
    },
    "unshowable_schema": {
        "resultType": "input_required",
        "inputRequests": {
            "a": {
                "method": "elicitation/create",
                "params": {"message": "m", "requestedSchema": {"type": "object", "properties": {"x": {"type": "object"}}}},
            }
        },
        "requestState": "kept",
    },
    "neither": {"resultType": "input_required"},
    "state_not_string": {"resultType": "input_required", "requestState": 5},
    "other_type": {"resultType": "task", "task": {"taskId": "t"}},
}


# ---------------------------------------------------------------------------------------------------------------
# The cases. Each is (name, build) where build(next_id) returns (lines, awaited_ids, id_unreadable): the raw lines to
# write; the JSON-RPC ids whose responses to wait for (None for `"id": null`); and whether the host may be unable to
# read the request's id, in which case an error response with `"id": null` answers it. Otherwise such an error (say,
# the parse error for a garbage line) answers nothing, and the case waits on.


def valid_schema():
    return {
        "type": "object",
        "properties": {"color": {"type": "string", "title": "Color", "enum": ["red", "green", "blue"]}},
        "required": ["color"],
    }


def form(schema, message="A hostile form"):
    return {"message": message, "requestedSchema": schema}


def one_property(prop, extra=None):
    schema = {"type": "object", "properties": {"field": prop}}
    schema.update(extra or {})
    return form(schema)


NESTED = {"type": "object", "properties": {"address": {"type": "object", "properties": {"street": {"type": "string"}}}}}


def dump(value):
    return json.dumps(value, separators=(",", ":"))


def request(request_id, params, method="elicitation/create"):
    return dump({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})


def plain(params):
    """One well-framed request carrying `params`, awaited by its id."""

    def build(next_id):
        request_id = next_id()
        return [request(request_id, params)], [request_id], False

    return build


def deeply_nested(next_id):
    # Built as text: Python's json module itself refuses 10,000 levels.
    depth = 10_000
    deep = '{"type":"object","properties":{"a":' * depth + '{"type":"string"}' + "}}" * depth
    request_id = next_id()
    line = (
        '{"jsonrpc":"2.0","id":%d,"method":"elicitation/create","params":{"message":"deep",'
        '"requestedSchema":{"type":"object","properties":{"deep":%s}}}}' % (request_id, deep)
    )
    return [line], [request_id], True


def id_null(next_id):
    return [request(None, form(valid_schema()))], [None], False


HUGE_ID = 123456789012345678901234567890


def id_huge(next_id):
    return [request(HUGE_ID, form(valid_schema()))], [HUGE_ID], True


def garbage_then_valid(next_id):
    request_id = next_id()
    return ["this is not JSON {]", request(request_id, form(valid_schema()))], [request_id], False


def duplicate_ids(next_id):
    request_id = next_id()
    line = request(request_id, form(valid_schema()))
    return [line, line], [request_id, request_id], False


def complete_unknown_id(next_id):
    notification = dump(
        {"jsonrpc": "2.0", "method": "notifications/elicitation/complete", "params": {"elicitationId": "never-issued"}}
    )
    request_id = next_id()
    return [notification, request(request_id, form(NESTED))], [request_id], False


def unsolicited_response(next_id):
    request_id = next_id()
    stray = dump({"jsonrpc": "2.0", "id": 999_999, "result": {"action": "accept"}})
    return [stray, request(request_id, form(NESTED))], [request_id], False


# Params as a person might write them: spaces, an escaped character and a number with a trailing zero. A host that
# keeps the plugin's text keeps all three; one that re-serializes a parsed tree loses them.
SPACED_PARAMS = (
    '{ "message" : "Spaced \\u0041" , "requestedSchema" : { "type" : "object" , '
    '"properties" : { "n" : { "type" : "number" , "default" : 1.50 } } } }'
)


def spaced_params(next_id):
    request_id = next_id()
    line = '{"jsonrpc":"2.0","id":%d,"method":"elicitation/create","params":%s}' % (request_id, SPACED_PARAMS)
    return [line], [request_id], False


MARKUP_MESSAGE = "Hello <b>there</b> <script>alert('message')</script>"
MARKUP_TITLE = "<script>alert('title')</script>"
MARKUP_DESCRIPTION = '<img src=x onerror="alert(1)">'

CASES = [
    ("params is an array", plain([1, 2, 3])),
    ("params is a string", plain("form please")),
    ("params is null", plain(None)),
    ("message missing", plain({"requestedSchema": valid_schema()})),
    ("message is a number", plain({"message": 42, "requestedSchema": valid_schema()})),
    ("requestedSchema missing", plain({"message": "no schema"})),
    ("requestedSchema is an array", plain({"message": "array schema", "requestedSchema": [valid_schema()]})),
    ("requestedSchema is a string", plain({"message": "string schema", "requestedSchema": "object"})),
    ("requestedSchema type is not object", plain(form({"type": "array", "items": {"type": "string"}}))),
    ("properties missing", plain(form({"type": "object"}))),
    ("properties is an array", plain(form({"type": "object", "properties": [{"type": "string"}]}))),
    ("property is not an object", plain(form({"type": "object", "properties": {"field": 5}}))),
    ("nested object property", plain(form(NESTED))),
    (
        "array of objects",
        plain(one_property({"type": "array", "items": {"type": "object", "properties": {"a": {"type": "string"}}}})),
    ),
    ("$ref", plain(one_property({"$ref": "#/$defs/thing"}, {"$defs": {"thing": {"type": "string"}}}))),
    ("unknown type", plain(one_property({"type": "date"}))),
    ("type is an array", plain(one_property({"type": ["string", "null"]}))),
    ("enum empty", plain(one_property({"type": "string", "enum": []}))),
    ("enum of numbers", plain(one_property({"type": "string", "enum": [1, 2, 3]}))),
    ("enumNames wrong length", plain(one_property({"type": "string", "enum": ["a", "b"], "enumNames": ["A"]}))),
    ("default outside enum", plain(one_property({"type": "string", "enum": ["a", "b"], "default": "c"}))),
    ("default outside range", plain(one_property({"type": "integer", "minimum": 1, "maximum": 10, "default": 99}))),
    ("default shorter than minLength", plain(one_property({"type": "string", "minLength": 5, "default": "ab"}))),
    (
        "minItems above the number of options",
        plain(one_property({"type": "array", "minItems": 4, "items": {"type": "string", "enum": ["a", "b"]}})),
    ),
    ("bad pattern", plain(one_property({"type": "string", "pattern": "(unclosed"}))),
    ("unknown mode", plain({"mode": "telepathy", "message": "think of a number"})),
    ("url mode without url", plain({"mode": "url", "message": "open it", "elicitationId": "e-1"})),
    (
        "url mode with a javascript: url",
        plain({"mode": "url", "message": "open it", "url": "javascript:alert(1)", "elicitationId": "e-2"}),
    ),
    ("1 MB title", plain(one_property({"type": "string", "title": "x" * 1_000_000}))),
    (
        "10,000 properties",
        plain(form({"type": "object", "properties": {f"p{i}": {"type": "string"} for i in range(10_000)}})),
    ),
    ("nested 10,000 deep", deeply_nested),
    (
        "markup in message, title and description",
        plain(
            {
                "message": MARKUP_MESSAGE,
                "requestedSchema": {
                    "type": "object",
                    "properties": {
                        "color": {
                            "type": "string",
                            "title": MARKUP_TITLE,
                            "description": MARKUP_DESCRIPTION,
                            "enum": ["red", "green"],
                        }
                    },
                    "required": ["color"],
                },
            }
        ),
    ),
    ("request id null", id_null),
    ("request id huge", id_huge),
    ("garbage line, then a valid request", garbage_then_valid),
    ("duplicate request ids", duplicate_ids),
    ("elicitation/complete for an unknown id, then a nested form", complete_unknown_id),
    ("response to a request never sent, then a nested form", unsolicited_response),
    ("params written with spaces and escapes", spaced_params),
]


# ---------------------------------------------------------------------------------------------------------------
# Tools, with keys in unusual orders and an unknown key, to check that the host passes them through untouched.

TOOLS = [
    {
        "inputSchema": {"type": "object", "properties": {"case": {"type": "integer"}}, "required": ["case"]},
        "name": "hostile",
        "x-formwork-test": {"z": 1, "a": 2},
        "description": "Send hostile elicitation case N and report what came back",
    },
    {"name": "cases", "description": "How many hostile cases exist", "inputSchema": {"type": "object"}},
    {
        "name": "all_cases",
        "description": "Run every hostile case in this process, then ping the host",
        "inputSchema": {"type": "object"},
    },
    {
        "name": "flood",
        "description": "Write hostile lines, then ping, and count the errors that came back",
        "inputSchema": {
            "type": "object",
            "properties": {"kind": {"type": "string"}, "count": {"type": "integer"}},
            "required": ["kind", "count"],
        },
    },
    {
        "description": "Echo a message",
        "name": "echo",
        "inputSchema": {"type": "object", "properties": {"message": {"type": "string"}}},
    },
]
TOOL_PAGES = {None: (TOOLS[:2], "page-2"), "page-2": (TOOLS[2:], None)}


# ---------------------------------------------------------------------------------------------------------------
# Transport: newline-delimited JSON-RPC on fd 0 / fd 1, read with select so that every wait has a deadline.


class Stdio:
    def __init__(self):
        self.buffer = b""
        self.closed = False

    def write_line(self, line):
        sys.stdout.buffer.write(line.encode() + b"\n")
        sys.stdout.buffer.flush()

    def send(self, message):
        self.write_line(dump(message))

    def read_line(self, deadline=None):
        """The next line, or None at end of input or when the deadline passes."""
        while b"\n" not in self.buffer:
            if self.closed:
                return None
            timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
            ready, _, _ = select.select([0], [], [], timeout)
            if not ready:
                return None
            chunk = os.read(0, 1 << 16)
            if not chunk:
                self.closed = True
                if not self.buffer:
                    return None
                self.buffer += b"\n"
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return line.decode("utf-8", "replace")


class Plugin:
    def __init__(self, endless_tools=None, modern=False, slow_discover=False):
        self.io = Stdio()
        self.last_id = 100
        self.endless_tools = endless_tools
        self.modern = modern
        self.slow_discover = slow_discover
        self.discovered = False

    def next_id(self):
        self.last_id += 1
        return self.last_id

    def serve(self):
        while True:
            line = self.io.read_line()
            if line is None:
                return
            try:
                message = json.loads(line)
            except ValueError:
                continue
            if isinstance(message, dict):
                self.handle(message)

    def handle(self, message):
        method = message.get("method")
        if "id" not in message or method is None:
            return  # a notification, or a response nobody waits for
        request_id = message["id"]
        params = message.get("params") or {}
        if method == "initialize" and self.discovered:
            error = {"code": -32022, "message": "this connection speaks 2026-07-28", "data": {"supported": ["2026-07-28"]}}
            self.io.send({"jsonrpc": "2.0", "id": request_id, "error": error})
        elif method == "initialize":
            self.answer(
                request_id,
                {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "hostile-plugin", "version": "0.1.0"},
                },
            )
        elif method == "server/discover" and self.modern:
            if self.slow_discover and not self.discovered:
                time.sleep(11)
            self.discovered = True
            self.answer(
                request_id,
                {"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}}, "resultType": "complete"},
            )
        elif method == "tools/call" and params.get("name") == "hostile_round":
            if "inputResponses" in params or "requestState" in params:
                got = {key: params[key] for key in ("inputResponses", "requestState") if key in params}
                self.answer(request_id, text("retried with " + json.dumps(got, separators=(",", ":"))))
            else:
                self.answer(request_id, ROUNDS[(params.get("arguments") or {})["kind"]])
        elif method == "ping":
            self.answer(request_id, {})
        elif method == "tools/list" and self.endless_tools is not None:
            # A new page and a new cursor every time, each page one tool this many bytes long.
            tool = {"name": f"t{request_id}", "description": "x" * self.endless_tools, "inputSchema": {"type": "object"}}
            self.answer(request_id, {"tools": [tool], "nextCursor": f"after-{request_id}"})
        elif method == "tools/list":
            tools, cursor = TOOL_PAGES.get(params.get("cursor"), ([], None))
            result = {"tools": tools}
            if cursor:
                result["nextCursor"] = cursor
            self.answer(request_id, result)
        elif method == "tools/call" and params.get("name") == "rpc_error":
            # Not a tool result but a JSON-RPC error, with whatever message the test asks for.
            message = (params.get("arguments") or {}).get("message", "")
            self.io.send({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32000, "message": message}})
        elif method == "tools/call":
            self.answer(request_id, self.call(params.get("name"), params.get("arguments") or {}))
        else:
            self.io.send({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32601, "message": "no such method"}})

    def answer(self, request_id, result):
        self.io.send({"jsonrpc": "2.0", "id": request_id, "result": result})

    def call(self, name, arguments):
        if name == "hostile":
            return text(self.run_case(int(arguments["case"])))
        if name == "cases":
            return text(str(len(CASES)))
        if name == "all_cases":
            outcomes = [
                {"case": index, "name": CASES[index][0], "outcome": self.run_case(index)} for index in range(len(CASES))
            ]
            ping_id = self.next_id()
            self.io.write_line(request(ping_id, {}, method="ping"))
            outcome = self.await_responses([ping_id], id_unreadable=False)
            outcomes.append({"case": None, "name": "ping after all cases", "outcome": outcome})
            return text(dump(outcomes))
        if name == "flood":
            return text(self.flood(arguments["kind"], int(arguments["count"])))
        if name == "echo":
            print(f"hostile plugin stderr: {arguments.get('message', '')}", file=sys.stderr, flush=True)
            return {
                "isError": False,
                "content": [{"type": "text", "text": arguments.get("message", "")}],
                "structuredContent": {"b": 1, "a": 2},
            }
        return {"content": [{"type": "text", "text": f"unknown tool {name}"}], "isError": True}

    def flood(self, kind, count):
        if kind == "array":
            self.io.write_line("[" + ",".join(["1"] * count) + "]")
        elif kind == "oversized":
            self.io.write_line("x" * (count << 20))
        else:
            for _ in range(count):
                self.io.write_line("this is not JSON {]")
        ping_id = self.next_id()
        self.io.write_line(request(ping_id, {}, method="ping"))
        errors = 0
        deadline = time.monotonic() + TIMEOUT_SECONDS
        while True:
            line = self.io.read_line(deadline)
            if line is None:
                return f"errors:{errors} ping:timeout"
            try:
                message = json.loads(line)
            except ValueError:
                continue
            if not isinstance(message, dict):
                continue
            if "method" in message:
                self.handle(message)
            elif message.get("id") == ping_id:
                return f"errors:{errors} ping:{outcome(message)}"
            elif message.get("id") is None and "error" in message:
                errors += 1

    def run_case(self, index):
        lines, awaited, id_unreadable = CASES[index][1](self.next_id)
        for line in lines:
            self.io.write_line(line)
        return self.await_responses(awaited, id_unreadable)

    def await_responses(self, awaited, id_unreadable):
        """One outcome per awaited id, in order. With `id_unreadable`, an error with `id: null` answers the oldest
        awaited request."""
        results = [None] * len(awaited)
        pending = list(range(len(awaited)))
        deadline = time.monotonic() + TIMEOUT_SECONDS
        while pending:
            line = self.io.read_line(deadline)
            if line is None:
                break
            try:
                message = json.loads(line)
            except ValueError:
                continue
            if not isinstance(message, dict):
                continue
            if "method" in message:
                self.handle(message)  # the host may ping us while we wait
                continue
            response_id = message.get("id")
            slot = next((i for i in pending if awaited[i] == response_id), None)
            if slot is None and id_unreadable and response_id is None and "error" in message:
                slot = pending[0]
            if slot is not None:
                pending.remove(slot)
                results[slot] = outcome(message)
        return " ".join(result or "timeout" for result in results)


def outcome(response):
    if "error" in response:
        error = response["error"]
        return "error:%s" % (error.get("code") if isinstance(error, dict) else dump(error))
    return "result:" + dump(response.get("result"))


def text(value):
    return {"content": [{"type": "text", "text": value}]}


def main(argv):
    if len(argv) == 3 and argv[1] == "--print-params":
        lines = CASES[int(argv[2])][1](iter(range(1, 100)).__next__)[0]
        print(dump(json.loads(lines[-1])["params"]))
    elif len(argv) == 2 and argv[1] == "--print-tools":
        print(dump(TOOLS))
    elif len(argv) == 2 and argv[1] == "--stop-reading":
        plugin = Plugin()
        while True:  # `server/discover` (answered: no such method), then initialize
            message = json.loads(plugin.io.read_line())
            plugin.handle(message)
            if message.get("method") == "initialize":
                break  # and not one byte more
        while True:
            time.sleep(60)
    elif len(argv) == 2 and argv[1] == "--modern":
        Plugin(modern=True).serve()
    elif len(argv) == 2 and argv[1] == "--modern-slow":
        Plugin(modern=True, slow_discover=True).serve()
    elif len(argv) == 3 and argv[1] == "--endless-tools":
        Plugin(endless_tools=int(argv[2])).serve()
    else:
        Plugin().serve()


if __name__ == "__main__":
    main(sys.argv)
