"""Drives the conduit-mcp reference server with the official Python MCP SDK 1.x
client (a real third-party 2025-11-25 client), over HTTP or stdio.

    legacy_client.py http URL
    legacy_client.py stdio BINARY

It lists the tools, calls one, answers an elicitation and a sampling request
from the server through the SDK's callbacks, and follows a legacy task
(tools/call with params.task) to its result. Exits non-zero on any mismatch.
"""

import asyncio
import warnings
import sys

import anyio

from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamablehttp_client

# The SDK marks its experimental tasks API deprecated; the 2025-11-25 wire is what is tested.
warnings.filterwarnings("ignore", category=DeprecationWarning)

asked = {"elicitation": 0, "sampling": 0}
passed = {"done": False}


async def on_elicit(context, params: types.ElicitRequestParams) -> types.ElicitResult:
    asked["elicitation"] += 1
    return types.ElicitResult(action="accept", content={"name": "Ada"})


async def on_sample(context, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
    asked["sampling"] += 1
    return types.CreateMessageResult(
        role="assistant",
        content=types.TextContent(type="text", text="forty-two"),
        model="test-model",
        stopReason="endTurn",
    )


def text(result: types.CallToolResult) -> str:
    assert not result.isError, f"tool error: {result}"
    return result.content[0].text


async def exercise(read, write, transport: str) -> None:
    async with ClientSession(read, write, elicitation_callback=on_elicit, sampling_callback=on_sample) as s:
        init = await s.initialize()
        assert init.protocolVersion in ("2025-11-25", "2025-06-18"), init.protocolVersion
        assert init.capabilities.tasks is not None, "legacy tasks are declared"
        names = {t.name for t in (await s.list_tools()).tools}
        for needed in ("echo", "ask_name", "ask_model", "build"):
            assert needed in names, f"{needed} missing from {sorted(names)}"
        assert text(await s.call_tool("echo", {"text": "hi"})) == "hi"
        assert text(await s.call_tool("ask_name", {})) == "Hello, Ada!"
        assert text(await s.call_tool("ask_model", {"prompt": "the answer?"})) == "The model said: forty-two"
        assert asked == {"elicitation": 1, "sampling": 1}, asked
        created = await s.experimental.call_tool_as_task("build", {"ref": "main", "steps": 1}, ttl=60000)
        task_id = created.task.taskId
        assert created.task.status == "working", created
        got = await s.experimental.get_task(task_id)
        assert got.taskId == task_id
        listed = await s.experimental.list_tasks()
        assert any(t.taskId == task_id for t in listed.tasks), listed
        final = await s.experimental.get_task_result(task_id, types.CallToolResult)
        assert not final.isError, final
        assert "main" in final.content[0].text, final
        done = await s.experimental.get_task(task_id)
        assert done.status == "completed", done
        asked["elicitation"] = asked["sampling"] = 0
        passed["done"] = True
        print(f"legacy_client.py: {transport}: list, call, elicitation, sampling and a legacy task passed")


async def main() -> None:
    mode, target = sys.argv[1], sys.argv[2]
    if mode == "http":
        async with streamablehttp_client(target) as (read, write, _):
            await exercise(read, write, "http")
    elif mode == "stdio":
        params = StdioServerParameters(command=target, args=["serve", "--stdio"])
        async with stdio_client(params) as (read, write):
            await exercise(read, write, "stdio")
    else:
        raise SystemExit(f"unknown mode {mode!r}")


def only_teardown_race(group: BaseExceptionGroup) -> bool:
    """True when every error in `group` is the SDK's stdio teardown race: its
    `stdio_client` closes the receiving stream while its stdout reader is still
    handing on a message the server wrote after the last awaited response (here an
    optional `notifications/tasks/status` that lost the race with `tasks/result`).
    python-sdk issue #1960, open on 1.x; it can only happen after the checks ran."""
    _, rest = group.split(anyio.BrokenResourceError)
    return rest is None


if __name__ == "__main__":
    try:
        asyncio.run(asyncio.wait_for(main(), timeout=60))
    except BaseExceptionGroup as group:
        if not (passed["done"] and only_teardown_race(group)):
            raise
        print("legacy_client.py: the SDK's stdio teardown race (python-sdk #1960) after every check passed")
