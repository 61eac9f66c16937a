"""The Python SDK side of `cargo xtask bench`'s 2026-07-28 part: the official Python SDK (`mcp` 2.3.0, MCPServer) serving
the same form round as formwork-sdk's `crates/sdk/examples/bench_plugin.rs`, written the SDK's own way: a resolver
that returns `Elicit` with a Pydantic model, so the SDK builds the `input_required` result, seals its state,
validates the answer and injects it. Tool `bench_round` reports the answer as text.
"""

from typing import Annotated, Literal

from pydantic import BaseModel, Field

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.resolve import Elicit, ElicitationResult, Resolve

server = MCPServer("bench-py-server")


class Continue(BaseModel):
    strategy: Literal["fast", "safe", "manual"] = Field(default="safe", description="How should the plugin continue?")
    dry_run: bool = Field(default=True, description="Only show what would change")
    retries: int = Field(default=3, ge=0, le=10)
    target: str = Field(default="staging", min_length=1, max_length=40)


def ask() -> Elicit[Continue]:
    return Elicit("Choose how to continue", Continue)


@server.tool()
async def bench_round(answer: Annotated[ElicitationResult[Continue], Resolve(ask)]) -> str:
    """One timed form round."""
    if answer.action != "accept":
        return answer.action
    data = answer.data
    return f"accept {data.strategy} {data.dry_run} {data.retries} {data.target}"


if __name__ == "__main__":
    server.run()
