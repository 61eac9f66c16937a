"""A stdio MCP plugin written with fastmcp 4.1.6.

`ask_person` elicits a dataclass (one required field, one with a default); `pick_color` and `pick_toppings` use
`response_type=[...]` choices, which fastmcp wraps as a single property named `value`. Each tool returns what
fastmcp handed back, as JSON text.
"""

import json
from dataclasses import asdict, dataclass

from fastmcp import Context, FastMCP


@dataclass
class Person:
    name: str
    age: int = 36


server = FastMCP("fastmcp-plugin")


def describe(result, data):
    if result.action == "accept":
        return f"action=accept data={json.dumps(data)}"
    return f"action={result.action}"


@server.tool
async def ask_person(ctx: Context) -> str:
    """Ask for a person."""
    result = await ctx.elicit("Please fill the form", response_type=Person)
    return describe(result, asdict(result.data) if result.action == "accept" else None)


@server.tool
async def pick_color(ctx: Context) -> str:
    """Ask for one color."""
    result = await ctx.elicit("Pick a color", response_type=["red", "green", "blue"])
    return describe(result, result.data if result.action == "accept" else None)


@server.tool
async def pick_toppings(ctx: Context) -> str:
    """Ask for several toppings."""
    result = await ctx.elicit("Pick toppings", response_type=[["cheese", "olives", "peppers"]])
    return describe(result, result.data if result.action == "accept" else None)


if __name__ == "__main__":
    server.run()
