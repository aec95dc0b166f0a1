"""The 2026-07-28 tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663) on the official
Python SDK (`mcp` 2.x), for Switchboard's interop tests.

The SDK ships the extension mechanism (SEP-2133: `Extension`, its `tools/call` interceptor and
`MethodBinding`s for new methods, `require_client_extension`, results with an extension
`resultType`) but no tasks extension of its own: this is one, on that mechanism. A call of
`research` (from a client that declares the extension) answers `resultType: "task"` at once;
`tasks/get` shows the task working, then (with `ambiguous`) `input_required` with an
elicitation inline, which `tasks/update` answers; then `completed` with the result inline.
`tasks/cancel` is acknowledged. Over HTTP, every `tasks/*` request must carry `Mcp-Name:
<taskId>`, or it is refused with -32020 (header mismatch).

Run by `tests/it/interop_python_tasks.rs` over stdio (`SWITCHBOARD_PYTHON`), or with
`--http PORT` over Streamable HTTP at `http://127.0.0.1:PORT/mcp`.
"""

import asyncio
import secrets
from datetime import datetime, timezone
from typing import Any

from mcp.server.extension import Extension, MethodBinding
from mcp.server.mcpserver import MCPServer, require_client_extension
from mcp.shared.exceptions import MCPError
from mcp_types import GetTaskRequestParams, RequestParams
from pydantic import Field

EXTENSION = "io.modelcontextprotocol/tasks"
STAGE_SECONDS = 0.2


def now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class UpdateTaskParams(RequestParams):
    task_id: str
    input_responses: dict[str, Any] = Field(default_factory=dict)


class Research:
    """One task: stages, maybe a question, then a report."""

    def __init__(self, topic: str, ambiguous: bool) -> None:
        self.id = secrets.token_hex(16)
        self.topic = topic
        self.ambiguous = ambiguous
        self.status = "working"
        self.message = "Gathering sources"
        self.created = now()
        self.updated = self.created
        self.result: dict[str, Any] | None = None
        self.answer: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self.runner = asyncio.create_task(self.run())

    def set(self, status: str, message: str) -> None:
        self.status, self.message, self.updated = status, message, now()

    async def run(self) -> None:
        await asyncio.sleep(STAGE_SECONDS)
        self.set("working", "Analyzing content")
        clarification = None
        if self.ambiguous:
            self.set("input_required", f"Which {self.topic} do you mean?")
            response = await self.answer
            clarification = (response.get("content") or {}).get("interpretation")
            self.set("working", f"Continuing with {clarification}")
        await asyncio.sleep(STAGE_SECONDS)
        topic = f"{self.topic} ({clarification})" if clarification else self.topic
        self.result = {
            "resultType": "complete",
            "content": [{"type": "text", "text": f"# Research Report: {topic}"}],
        }
        self.set("completed", "Done")

    def fields(self) -> dict[str, Any]:
        return {
            "taskId": self.id,
            "status": self.status,
            "statusMessage": self.message,
            "createdAt": self.created,
            "lastUpdatedAt": self.updated,
            "ttlMs": 60_000,
            "pollIntervalMs": 100,
        }

    def detailed(self) -> dict[str, Any]:
        got = {"resultType": "complete", **self.fields()}
        if self.status == "input_required":
            got["inputRequests"] = {
                "clarify-1": {
                    "method": "elicitation/create",
                    "params": {
                        "mode": "form",
                        "message": f"Which {self.topic} do you mean?",
                        "requestedSchema": {
                            "type": "object",
                            "properties": {
                                "interpretation": {
                                    "type": "string",
                                    "enum": ["technical", "historical"],
                                }
                            },
                            "required": ["interpretation"],
                        },
                    },
                }
            }
        if self.status == "completed":
            got["result"] = self.result
        return got


TASKS: dict[str, Research] = {}


def check_routing(ctx: Any, task_id: str) -> None:
    """Over HTTP, the task's requests carry `Mcp-Name: <taskId>` (SEP-2663)."""
    request = getattr(ctx, "request", None)
    headers = getattr(request, "headers", None)
    if headers is not None and headers.get("mcp-name") != task_id:
        raise MCPError(code=-32020, message="Mcp-Name does not name the task")


def task_of(ctx: Any, task_id: str) -> Research:
    check_routing(ctx, task_id)
    task = TASKS.get(task_id)
    if task is None:
        raise MCPError(code=-32602, message=f"Task not found: {task_id}")
    return task


async def get_task(ctx: Any, params: GetTaskRequestParams) -> dict[str, Any]:
    return task_of(ctx, params.task_id).detailed()


async def update_task(ctx: Any, params: UpdateTaskParams) -> dict[str, Any]:
    task = task_of(ctx, params.task_id)
    response = params.input_responses.get("clarify-1")
    if response is not None and not task.answer.done():
        task.answer.set_result(response)
    return {"resultType": "complete"}


async def cancel_task(ctx: Any, params: GetTaskRequestParams) -> dict[str, Any]:
    task = task_of(ctx, params.task_id)
    if task.status not in ("completed", "failed", "cancelled"):
        task.runner.cancel()
        task.set("cancelled", "Cancelled by the client")
    return {"resultType": "complete"}


class Tasks(Extension):
    identifier = EXTENSION

    def methods(self) -> list[MethodBinding]:
        return [
            MethodBinding("tasks/get", GetTaskRequestParams, get_task),
            MethodBinding("tasks/update", UpdateTaskParams, update_task),
            MethodBinding("tasks/cancel", GetTaskRequestParams, cancel_task),
        ]

    async def intercept_tool_call(self, params: Any, ctx: Any, call_next: Any) -> Any:
        if params.name != "research":
            return await call_next(ctx)
        require_client_extension(ctx, EXTENSION)
        arguments = params.arguments or {}
        task = Research(str(arguments.get("topic", "")), bool(arguments.get("ambiguous", False)))
        TASKS[task.id] = task
        return {"resultType": "task", **task.fields()}


mcp = MCPServer("switchboard-python-tasks", version="1.0.0", extensions=[Tasks()])


@mcp.tool()
def research(topic: str, ambiguous: bool = False) -> str:
    """Researches a topic, as a task (the extension answers the call)."""
    return f"not as a task: {topic}"


if __name__ == "__main__":
    import sys

    args = sys.argv[1:]
    if args[:1] == ["--http"]:
        mcp.run(transport="streamable-http", host="127.0.0.1", port=int(args[1]), json_response=True)
    else:
        mcp.run()
