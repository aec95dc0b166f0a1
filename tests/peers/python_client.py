"""A client on the official Python SDK (`mcp` 2.3.0): lists the tools of a server, calls
`echo`, then the conformance fixture's `test_sampling` and `test_elicitation`, answering the
sampling and the elicitation, and prints what it saw as one JSON document.

Usage: python_client.py [--no-input] MODE (URL | COMMAND ARGS...), MODE being `legacy`,
`auto` or `2026-07-28`. With `--no-input` the two tools that ask the client for input are
not called (for a server that does not forward such requests, like `switchboard serve`).
"""

import asyncio
import json
import sys

from mcp import Client, StdioServerParameters, types


async def sample(context, params):
    return types.CreateMessageResult(
        role="assistant",
        content=types.TextContent(type="text", text="sampled by python"),
        model="python-model",
    )


async def elicit(context, params):
    return types.ElicitResult(action="accept", content={"response": "answered by python"})


def text(result):
    return "".join(block.text for block in result.content if block.type == "text")


async def main():
    args = sys.argv[1:]
    with_input = args[0] != "--no-input"
    if not with_input:
        args = args[1:]
    mode, target = args[0], args[1:]
    if target[0].startswith("http"):
        server = target[0]
    else:
        server = StdioServerParameters(command=target[0], args=target[1:])
    async with Client(
        server, mode=mode, sampling_callback=sample, elicitation_callback=elicit
    ) as client:
        tools = await client.list_tools()
        seen = {"tools": [tool.name for tool in tools.tools]}
        seen["echo"] = text(await client.call_tool("echo", {"text": "hi"}))
        seen["simple"] = text(await client.call_tool("test_simple_text", {}))
        if with_input:
            seen["sampling"] = text(await client.call_tool("test_sampling", {"prompt": "p"}))
            seen["elicitation"] = text(
                await client.call_tool("test_elicitation", {"message": "m"})
            )
    print(json.dumps(seen))


asyncio.run(main())
