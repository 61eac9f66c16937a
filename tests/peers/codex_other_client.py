# A REAL client of the real Codex app-server (not a fake): a second app-server client beside formwork, for the
# Codex runtime's browser test (tests/browser/codex.mjs, case `answered-elsewhere`). It speaks Codex's own
# app-server protocol on the socket formwork's Codex listens on and answers a form before formwork's card does.
#
# Usage: python codex_other_client.py SOCKET CONTENT_JSON   (the test peers' venv, which has `websockets`)
#
# SOCKET is `<CODEX_HOME>/app-server.sock`: WebSocket framing over the unix socket, one JSON-RPC message per
# text frame. The client sends `initialize` (experimentalApi) and `initialized`, finds the loaded threads with
# `thread/loaded/list` (formwork tells it nothing), joins each with `thread/resume {excludeTurns: true}`, waits
# for the `mcpServer/elicitation/request` Codex replays to a joining client, answers it
# `{"action": "accept", "content": CONTENT_JSON, "_meta": null}`, and waits for Codex's `serverRequest/resolved`
# of that request. Then it prints `answered <threadId> <serverName>: <message>` and exits 0; it exits 1 (with the
# reason on stderr) when no form came within 30 s.

import asyncio
import itertools
import json
import sys

from websockets.asyncio.client import unix_connect

SOCKET, CONTENT = sys.argv[1], json.loads(sys.argv[2])
TIMEOUT = 30


async def main():
    async with unix_connect(SOCKET, "ws://localhost/") as ws:
        ids = itertools.count(1)
        # Messages read while waiting for a response, handled once it came.
        early = []

        async def request(method, params):
            number = next(ids)
            await ws.send(json.dumps({"id": number, "method": method, "params": params}))
            while True:
                message = json.loads(await ws.recv())
                if message.get("id") == number and "method" not in message:
                    if "error" in message:
                        raise RuntimeError(f"{method}: {message['error']}")
                    return message["result"]
                early.append(message)

        async def incoming():
            while early:
                yield early.pop(0)
            while True:
                yield json.loads(await ws.recv())

        await request("initialize", {
            "clientInfo": {"name": "codex_other_client", "version": "1"},
            "capabilities": {"experimentalApi": True},
        })
        await ws.send(json.dumps({"method": "initialized"}))
        threads = (await request("thread/loaded/list", {}))["data"]
        if not threads:
            raise RuntimeError("Codex has no loaded thread")
        for thread in threads:
            await request("thread/resume", {"threadId": thread, "excludeTurns": True})
        answered = None
        async for message in incoming():
            if answered is None and message.get("method") == "mcpServer/elicitation/request":
                answered = message
                await ws.send(json.dumps({"id": message["id"], "result": {
                    "action": "accept", "content": CONTENT, "_meta": None}}))
            elif (answered is not None and message.get("method") == "serverRequest/resolved"
                  and message["params"]["requestId"] == answered["id"]):
                params = answered["params"]
                print(f"answered {params['threadId']} {params['serverName']}: {params.get('message')}", flush=True)
                return


try:
    asyncio.run(asyncio.wait_for(main(), TIMEOUT))
except TimeoutError:
    print(f"codex_other_client: no form to answer within {TIMEOUT} s", file=sys.stderr)
    sys.exit(1)
