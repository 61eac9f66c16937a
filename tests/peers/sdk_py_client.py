"""A client on the official Python SDK (`mcp` 2.3.0) for the formwork-sdk tests.

Usage: sdk_py_client.py MODE SCENARIO TOOL ANSWERS OPENAI TAPLOG -- PLUGIN...

- MODE: "legacy" (initialize handshake) or "2026-07-28" (no handshake, per-request capabilities).
- SCENARIO: "auto" lets the SDK drive the call (it answers pushed requests and input_required rounds
  from ANSWERS); "manual:<retry>" makes the first call by hand, prints its InputRequiredResult, then
  retries once as <retry> says: "answer", "tamper", "other-tool", "other-args", "other-principal",
  "late", "unanswered" (no inputResponses), "reversed" (inputResponses in the reverse order), "extra"
  (with the responses in SDK_CLIENT_EXTRA_RESPONSES too), "replay" (then the same retry again,
  reported as "replay"), "limit" (a second call's state is retried after the first, reported as
  "other", then the first state again, as "replay").
- ANSWERS: a JSON list of ElicitResults, given in order, or an object from a question's message to its
  ElicitResult (a question whose message it lacks is cancelled, or by hand left unanswered); "none"
  declares no elicitation capability.
- OPENAI: "openai" also declares extensions["openai/elicitation"] = {"form": {}}.
- TAPLOG: the plugin runs behind a tap that appends every line it reads ("> ") and writes ("< ") here.

The tool is called with the JSON object in the environment variable SDK_CLIENT_ARGUMENTS (default {}).

Prints one JSON object: the elicitation params the callback saw, and the call's result or error.
"""

import asyncio
import json
import os
import subprocess
import sys
import threading

import mcp_types as types
from mcp.client import Client, advertise
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError


def tap(log_path, command):
    child = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    log = open(log_path, "a", buffering=1)
    lock = threading.Lock()

    def note(prefix, line):
        with lock:
            log.write(prefix + line.decode().rstrip("\n") + "\n")

    def pump_in():
        for line in sys.stdin.buffer:
            note("> ", line)
            child.stdin.write(line)
            child.stdin.flush()
        child.stdin.close()

    threading.Thread(target=pump_in, daemon=True).start()
    for line in child.stdout:
        note("< ", line)
        sys.stdout.buffer.write(line)
        sys.stdout.buffer.flush()
    sys.exit(child.wait())


def dump(model):
    return model.model_dump(by_alias=True, exclude_none=True, mode="json")


async def main(mode, scenario, tool, answers, openai, log_path, plugin):
    received = []
    by_message = answers if isinstance(answers, dict) else None
    queue = list(answers or []) if by_message is None else []

    async def on_elicit(context, params):
        received.append(dump(params))
        if by_message is not None and params.message in by_message:
            return types.ElicitResult.model_validate(by_message[params.message])
        if not queue:
            return types.ElicitResult(action="cancel")
        return types.ElicitResult.model_validate(queue.pop(0))

    server = StdioServerParameters(
        command=sys.executable, args=[__file__, "--tap", log_path, *plugin], env=dict(os.environ)
    )
    client = Client(
        server,
        mode=mode,
        elicitation_callback=on_elicit if answers is not None else None,
        extensions=[advertise("openai/elicitation", {"form": {}})] if openai else None,
    )
    meta = {"example/principal": "alice"}
    call_arguments = json.loads(os.environ.get("SDK_CLIENT_ARGUMENTS", "{}"))
    out = {"received": received}
    async with client:
        if scenario == "auto":
            try:
                result = await client.call_tool(tool, call_arguments, meta=meta)
                out["result"] = dump(result)
            except MCPError as error:
                out["error"] = {"code": error.code, "message": error.error.message}
        else:
            retry = scenario.split(":", 1)[1]

            async def call(name, arguments, meta, **retry_params):
                try:
                    result = await client.session.call_tool(
                        name, arguments, meta=meta, allow_input_required=True, **retry_params
                    )
                    return {"result": dump(result)}
                except MCPError as error:
                    return {"error": {"code": error.code, "message": error.error.message}}

            first = (await call(tool, call_arguments, meta))["result"]
            out["first"] = first
            other = None
            if retry == "limit":
                other = (await call(tool, call_arguments, meta))["result"]
            state = first.get("requestState")
            requests = first.get("inputRequests", {})
            if by_message is None:
                responses = {key: queue[0] for key in requests}
            else:
                responses = {
                    key: by_message[request["params"]["message"]]
                    for key, request in requests.items()
                    if request["params"]["message"] in by_message
                }
            name, arguments = tool, call_arguments
            if retry == "tamper":
                state = state[:-2] + ("AA" if not state.endswith("AA") else "BB")
            elif retry == "other-tool":
                name = "deploy_twice" if tool != "deploy_twice" else "deploy"
            elif retry == "other-args":
                arguments = {"replicas": 9}
            elif retry == "other-principal":
                meta = {"example/principal": "mallory"}
            elif retry == "unanswered":
                responses = {}
            elif retry == "late":
                await asyncio.sleep(0.3)
            elif retry == "reversed":
                responses = dict(reversed(list(responses.items())))
            elif retry == "extra":
                responses = {**responses, **json.loads(os.environ["SDK_CLIENT_EXTRA_RESPONSES"])}
            answered = {"input_responses": responses, "request_state": state}
            out.update(await call(name, arguments, meta, **answered))
            if other is not None:
                other_answered = {"input_responses": responses, "request_state": other["requestState"]}
                out["other"] = await call(name, arguments, meta, **other_answered)
            if retry in ("replay", "limit"):
                out["replay"] = await call(name, arguments, meta, **answered)
    print(json.dumps(out))


if __name__ == "__main__":
    if sys.argv[1] == "--tap":
        tap(sys.argv[2], sys.argv[3:])
    mode, scenario, tool, answers, openai, log_path = sys.argv[1:7]
    assert sys.argv[7] == "--"
    asyncio.run(
        main(
            mode,
            scenario,
            tool,
            None if answers == "none" else json.loads(answers),
            openai == "openai",
            log_path,
            sys.argv[8:],
        )
    )
