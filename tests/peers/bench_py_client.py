"""The reference client of the 2026-07-28 part of `cargo xtask bench`: the official Python SDK (`mcp` 2.3.0) `Client`
in its 2026-07-28 mode over stdio, with an elicitation callback that accepts every form at once with the fixed
content `bench_mrtr_plugin.mjs` expects. The SDK drives the rounds itself (its `input_required` driver).

Usage: `python bench_py_client.py <calls> <rounds> <plugin command...>`: one connection, `calls` calls of
`bench_rounds {rounds}`; prints `{"ns":[...]}` with every call's samples on stdout. Exit 1 when a call fails.
"""

import asyncio
import json
import sys

import mcp_types as types
from mcp import Client
from mcp.client.stdio import StdioServerParameters

CONTENT = {"strategy": "safe", "dry_run": True, "retries": 3, "target": "staging"}


async def accept(context, params):
    return types.ElicitResult(action="accept", content=dict(CONTENT))


async def main(calls, rounds, command):
    server = StdioServerParameters(command=command[0], args=command[1:])
    samples = []
    async with Client(server, mode="2026-07-28", elicitation_callback=accept) as client:
        for _ in range(calls):
            result = await client.call_tool("bench_rounds", {"rounds": rounds})
            text = result.content[0].text
            if result.is_error:
                print(text, file=sys.stderr)
                sys.exit(1)
            samples.extend(json.loads(text)["ns"])
    print(json.dumps({"ns": samples}))


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]))
