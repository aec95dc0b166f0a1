"""An MCP server on the official Python SDK (`mcp` 2.x), for Switchboard's interop tests.

Run by `tests/it/interop_python.rs` over stdio with the interpreter of the venv `.ci/run`
creates (`SWITCHBOARD_PYTHON`); with `--http PORT` it serves Streamable HTTP at
`http://127.0.0.1:PORT/mcp` instead (SSE answers, or JSON ones with `--json`). It offers one static resource, one prompt with arguments, a
typed tool whose return annotation gives an `outputSchema` and `structuredContent`, and a tool
that publishes the same schema but answers a `structuredContent` that does not match it.
`book_trip` asks the user (elicitation) before it answers: in 2026-07-28 through an
input-required result, in the handshake era through `elicitation/create`. `touch_greeting`
adds a tool `late_tool` and publishes a tools list change and an update of the greeting, which
reach a 2026-07-28 client on its `subscriptions/listen` stream.
"""

from typing import Annotated

from mcp.server.mcpserver import Context, Elicit, MCPServer, Resolve
from mcp.server.mcpserver.tools import Tool
from mcp_types import CallToolResult, TextContent
from pydantic import BaseModel

GREETING_URI = "python://static/greeting"
GREETING = "Hello from the official Python SDK."


class Forecast(BaseModel):
    """A forecast: the output schema of both tools below."""

    city: str
    temperature_c: float
    conditions: list[str]


def broken_forecast(city: str) -> Annotated[CallToolResult, Forecast]:
    """Publishes Forecast's schema but answers a temperature that is a string."""
    return CallToolResult(
        content=[TextContent(type="text", text=f"{city}: cold")],
        structured_content={"city": city, "temperature_c": "cold", "conditions": []},
    )


# The SDK validates a tool's result against its output model before answering. A schema
# published without a model is advertised but not checked ("hand-built metadata" in
# `mcp.server.mcpserver.utilities.func_metadata`): that is how this server sends a mismatch.
broken = Tool.from_function(broken_forecast)
broken.fn_metadata.output_model = None

mcp = MCPServer("switchboard-python-peer", version="1.0.0", tools=[broken])


@mcp.resource(GREETING_URI, name="greeting", mime_type="text/plain")
def greeting() -> str:
    """A fixed text."""
    return GREETING


@mcp.prompt(description="Asks for a forecast")
def forecast_request(city: str, days: str = "1") -> str:
    """A user message naming the city and the number of days."""
    return f"What will the weather be in {city} for the next {days} day(s)?"


@mcp.tool()
def forecast(city: str, days: int = 1) -> Forecast:
    """A typed tool: its return annotation makes the outputSchema and structuredContent."""
    return Forecast(city=city, temperature_c=12.5 + days, conditions=["cloudy", "windy"])


class Booking(BaseModel):
    """What `book_trip` asks the user."""

    confirm: bool


def ask_booking(city: str) -> Elicit[Booking]:
    """Asks the user whether to book."""
    return Elicit(f"Book a trip to {city}?", Booking)


@mcp.tool()
def book_trip(city: str, booking: Annotated[Booking, Resolve(ask_booking)]) -> str:
    """Books a trip once the user confirms it."""
    return f"booked {city}" if booking.confirm else f"not booked: {city}"


def late_tool() -> str:
    """Added by `touch_greeting`."""
    return "late"


@mcp.tool()
async def touch_greeting(ctx: Context) -> str:
    """Adds `late_tool`, then publishes a tools list change and an update of the greeting."""
    if "late_tool" not in {tool.name for tool in await mcp.list_tools()}:
        mcp.add_tool(late_tool)
    await ctx.notify_tools_changed()
    await ctx.notify_resource_updated(GREETING_URI)
    return "touched"


if __name__ == "__main__":
    import sys

    args = sys.argv[1:]
    if args[:1] == ["--http"]:
        mcp.run(
            transport="streamable-http",
            host="127.0.0.1",
            port=int(args[1]),
            json_response="--json" in args,
        )
    else:
        mcp.run()
