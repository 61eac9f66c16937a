"""A stdio MCP plugin written with the official Python SDK (`mcp` 2.3.0, MCPServer).

Its tool `ask` elicits the Pydantic model of peers.md §4.1 through `ctx.elicit`, whose generated schema carries a
top-level `title` and no `required` array (every field has a default). The SDK validates the accepted content with
Pydantic; the tool returns the validated data as JSON text, so the tests see exactly what the plugin kept.
Its tool `ask_plain` sends a plain `requestedSchema` (no top-level `title`) through `ctx.session.elicit_form`, the shape
Codex 0.171.0 forwards to its client (it refuses the Pydantic one of `ask`, see crates/host/tests/codex.rs).
Its tool `client_capabilities` returns the capabilities the host declared, as the SDK parsed them (the SDK keeps
the 2026-07-28 `extensions` member).
"""

import json
from typing import Literal

from pydantic import BaseModel, Field

from mcp.server.mcpserver import Context, MCPServer


class Form(BaseModel):
    name: str = Field(default="Ada", description="Your name")
    age: int = Field(default=36, ge=0, le=150)
    subscribe: bool = False
    color: Literal["red", "green", "blue"] = "green"


server = MCPServer("py-plugin")


@server.tool()
async def ask(ctx: Context) -> str:
    """Ask for the form and report what came back."""
    result = await ctx.elicit(message="Please fill the form", schema=Form)
    if result.action == "accept":
        return f"action=accept data={result.data.model_dump_json()}"
    return f"action={result.action}"


PLAIN_SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "title": "Name", "default": "Ada"},
        "color": {"type": "string", "enum": ["red", "green", "blue"], "default": "green"},
    },
    "required": ["name", "color"],
}


@server.tool()
async def ask_plain(ctx: Context) -> str:
    """Ask for a name and a color with a plain schema, and report what came back."""
    result = await ctx.session.elicit_form("Who are you?", PLAIN_SCHEMA)
    if result.action == "accept":
        return f"action=accept content={json.dumps(result.content, separators=(',', ':'))}"
    return f"action={result.action}"


@server.tool()
async def client_capabilities(ctx: Context) -> str:
    """Report the client capabilities declared in initialize, as the SDK read them."""
    params = ctx.session.client_params
    if params is None:
        return "no initialize params"
    return params.capabilities.model_dump_json(exclude_none=True)


if __name__ == "__main__":
    server.run()
