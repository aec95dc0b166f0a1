"""A client on the official Python SDK (`mcp` 2.3.0) of a gateway whose upstream needs each
user's own OAuth authorization: it lists the tools and calls `echo` a number of times,
answering each URL-mode elicitation as a person would, by opening the URL in a "browser"
(an HTTP client that follows redirects; the test's authorization server approves the user
named in `X-Test-User` at once and redirects to the gateway's callback). Prints what it saw
as one JSON document.

Usage: python_per_user_client.py URL KEY USER MODE CALLS, MODE being `legacy` or
`2026-07-28`.
"""

import asyncio
import json
import sys

import httpx2
from mcp import Client, types
from mcp.client.streamable_http import streamable_http_client


def text(result):
    return "".join(block.text for block in result.content if block.type == "text")


async def main():
    url, key, user, mode, calls = sys.argv[1:6]
    seen = {"elicitations": [], "texts": [], "pages": []}

    async def elicit(context, params):
        seen["elicitations"].append(params.mode)
        if params.mode != "url":
            return types.ElicitResult(action="decline")
        async with httpx2.AsyncClient(follow_redirects=True, headers={"X-Test-User": user}) as browser:
            page = await browser.get(params.url)
            seen["pages"].append([page.status_code, page.text.strip()])
        return types.ElicitResult(action="accept")

    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=60)
    transport = streamable_http_client(url, http_client=http)
    async with Client(transport, mode=mode, elicitation_callback=elicit) as client:
        tools = await client.list_tools()
        seen["tools"] = sorted(tool.name for tool in tools.tools)
        for i in range(int(calls)):
            result = await client.call_tool("echo", {"text": f"call {i}"})
            seen["texts"].append(("error: " if result.is_error else "") + text(result))
    print(json.dumps(seen))


asyncio.run(main())
