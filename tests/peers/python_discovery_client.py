"""A client on the official Python SDK (`mcp` 2.3.0) of a gateway in discovery mode: lists
the tools (the two meta-tools), searches for the conformance fixture's progress tool and its
elicitation tool, calls both through `call_tool` (counting the progress, answering the
elicitation), and prints what it saw as one JSON document.

Usage: python_discovery_client.py MODE (URL | COMMAND ARGS...), MODE being `legacy`, `auto`
or `2026-07-28`.
"""

import asyncio
import json
import sys

from mcp import Client, StdioServerParameters, types


async def elicit(context, params):
    return types.ElicitResult(action="accept", content={"response": "answered by python"})


def text(result):
    return "".join(block.text for block in result.content if block.type == "text")


async def main():
    mode, target = sys.argv[1], sys.argv[2:]
    if target[0].startswith("http"):
        server = target[0]
    else:
        server = StdioServerParameters(command=target[0], args=target[1:])
    async with Client(server, mode=mode, elicitation_callback=elicit) as client:
        tools = await client.list_tools()
        seen = {"tools": [tool.name for tool in tools.tools]}
        search = next(tool for tool in tools.tools if tool.name == "search_tools")
        seen["search_output_schema"] = search.output_schema is not None
        found = {}
        for query in ["report progress notifications", "elicitation user input request"]:
            result = await client.call_tool("search_tools", {"query": query, "limit": 3})
            names = [match["name"] for match in result.structured_content["tools"]]
            # The text block carries the same matches, for clients that read only text.
            assert json.loads(text(result)) == result.structured_content
            found[query] = names
        seen["found"] = found
        progress = []

        async def on_progress(value, total, message):
            progress.append(value)

        result = await client.call_tool(
            "call_tool",
            {"name": found["report progress notifications"][0], "arguments": {}},
            progress_callback=on_progress,
        )
        seen["progress"] = len(progress)
        seen["progress_error"] = bool(result.is_error)
        result = await client.call_tool(
            "call_tool", {"name": "test_elicitation", "arguments": {"message": "m"}}
        )
        seen["elicitation"] = text(result)
    print(json.dumps(seen))


asyncio.run(main())
