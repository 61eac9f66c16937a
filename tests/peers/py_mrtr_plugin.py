"""A stdio plugin on the official Python SDK (`mcp` 2.3.0, MCPServer) that asks through 2026-07-28 rounds.

Its resolver tools (`Resolve` + `Elicit`) work in both eras: on 2026-07-28 the SDK answers `input_required` and
replays the answers of earlier rounds through its sealed `requestState`; on a handshake connection it sends
`elicitation/create` instead. The other tools hand-build their `InputRequiredResult`s:

- `deploy`: a target form, then, only for production, a confirmation form in a second round.
- `two_forms`: two independent forms in one round.
- `state_only`: first a result with only `requestState`, then the text of the state it got back.
- `open_url`: a URL-mode request (no `elicitationId` in 2026-07-28); reports the action.
- `endless`: asks for a form in every round, for ever; with `PY_MRTR_LOG` set, appends each round's number to that
  file, so a test sees every request that reached the plugin.
- `big_state`: a `requestState` of 1 MB; reports how many bytes came back.
- `sample`: asks for `sampling/createMessage`, which the host does not offer.
- `era`: the protocol version of the request, as the SDK saw it.

The prompt `greeting` and the resource template `note://{topic}` ask for a number the same way, then report it.

`--http PORT` serves Streamable HTTP at `http://127.0.0.1:PORT/mcp` instead of stdio.

With `PY_MRTR_STATE_KEY` set (32 bytes or more), the SDK seals `requestState` with that key instead of one of its own
per process, as several instances of one server must: a retry sealed by one instance is then read by another (a host
replica that carries a call on starts a new instance).
"""

import os
import sys

from typing import Annotated, Literal

from pydantic import BaseModel, Field

import mcp_types as types
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.resolve import Elicit, ElicitationResult, Resolve
from mcp.server.request_state import RequestStateSecurity

_state_key = os.environ.get("PY_MRTR_STATE_KEY")
server = MCPServer(
    "py-mrtr-plugin",
    request_state_security=RequestStateSecurity(keys=[_state_key]) if _state_key else None,
)


class Target(BaseModel):
    target: Literal["staging", "production"] = "staging"


class Confirm(BaseModel):
    confirm: bool = False


class Name(BaseModel):
    name: str = Field(description="Your name")


class Color(BaseModel):
    color: Literal["red", "green", "blue"] = "green"


def ask_target() -> Elicit[Target]:
    return Elicit("Where should it go?", Target)


def ask_confirmation(
    target: Annotated[ElicitationResult[Target], Resolve(ask_target)],
) -> Elicit[Confirm] | None:
    if target.action == "accept" and target.data.target == "production":
        return Elicit("Deploy to production now?", Confirm)
    return None


def outcome(result) -> str:
    if result.action == "accept":
        return f"accept {result.data.model_dump_json()}"
    return result.action


@server.tool()
async def deploy(
    target: Annotated[ElicitationResult[Target], Resolve(ask_target)],
    confirm: Annotated[Confirm | None, Resolve(ask_confirmation)],
) -> str:
    """A target, then a confirmation for production."""
    confirmed = "not asked" if confirm is None else confirm.model_dump_json()
    return f"target: {outcome(target)}; confirm: {confirmed}"


def ask_name() -> Elicit[Name]:
    return Elicit("Who are you?", Name)


def ask_color() -> Elicit[Color]:
    return Elicit("Pick a color", Color)


@server.tool()
async def two_forms(
    name: Annotated[ElicitationResult[Name], Resolve(ask_name)],
    color: Annotated[ElicitationResult[Color], Resolve(ask_color)],
) -> str:
    """Two forms in one round."""
    return f"name: {outcome(name)}; color: {outcome(color)}"


def form(message: str) -> types.ElicitRequest:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    return types.ElicitRequest(params=types.ElicitRequestFormParams(message=message, requested_schema=schema))


@server.tool()
async def state_only(ctx: Context) -> types.InputRequiredResult | str:
    """Asks to be called again, once."""
    if ctx.request_state is None:
        return types.InputRequiredResult(request_state="come back later")
    return f"state: {ctx.request_state}; responses: {ctx.input_responses}"


@server.tool()
async def open_url(ctx: Context) -> types.InputRequiredResult | str:
    """A URL-mode request."""
    responses = ctx.input_responses or {}
    if "link" not in responses:
        params = types.ElicitRequestURLParams(mode="url", message="Sign in", url="https://example.com/sign-in")
        return types.InputRequiredResult(input_requests={"link": types.ElicitRequest(params=params)})
    return f"link: {responses['link'].action}"


@server.tool()
async def endless(ctx: Context) -> types.InputRequiredResult | str:
    """Never satisfied."""
    rounds = int(ctx.request_state or "0") + 1
    if log := os.environ.get("PY_MRTR_LOG"):
        with open(log, "a") as file:
            file.write(f"{rounds}\n")
    return types.InputRequiredResult(input_requests={"again": form(f"Round {rounds}")}, request_state=str(rounds))


@server.tool()
async def big_state(ctx: Context) -> types.InputRequiredResult | str:
    """A requestState of a mebibyte."""
    if ctx.request_state is None:
        return types.InputRequiredResult(input_requests={"go": form("Go on?")}, request_state="x" * (1 << 20))
    return f"state came back with {len(ctx.request_state)} bytes"


@server.tool()
async def sample(ctx: Context) -> types.InputRequiredResult | str:
    """Asks the host's model, which it does not offer."""
    message = types.SamplingMessage(role="user", content=types.TextContent(type="text", text="Capital of France?"))
    request = types.CreateMessageRequest(params=types.CreateMessageRequestParams(messages=[message], max_tokens=10))
    return types.InputRequiredResult(input_requests={"capital": request})


@server.tool()
async def era(ctx: Context) -> str:
    """The request's protocol version."""
    return f"protocol: {ctx.protocol_version}"


@server.prompt()
async def greeting(ctx: Context) -> types.InputRequiredResult | str:
    """A prompt that asks first."""
    responses = ctx.input_responses or {}
    if "n" not in responses:
        return types.InputRequiredResult(input_requests={"n": form("How many?")})
    return f"greeting: {responses['n'].action} {responses['n'].content}"


@server.resource("note://{topic}")
async def note(topic: str, ctx: Context) -> types.InputRequiredResult | str:
    """A resource that asks first."""
    responses = ctx.input_responses or {}
    if "n" not in responses:
        return types.InputRequiredResult(input_requests={"n": form(f"How many {topic}?")})
    return f"note {topic}: {responses['n'].action} {responses['n'].content}"


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--http":
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()
