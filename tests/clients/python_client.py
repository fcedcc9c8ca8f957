"""Drives the bash-mcp binary with the Python `mcp` client (pinned in
.ci/install-clients.sh) in three modes: handshake ("legacy"), auto-probe
("auto": server/discover first) and stateless ("2026-07-28"), over stdio
and over Streamable HTTP (`serve --http`, servers this script starts and
stops; their cases are labelled "http").

Usage: python_client.py /path/to/bash-mcp
Prints one line per case (PASS/FAIL) and exits non-zero if any case failed.
"""

import asyncio
import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from typing import Any, Literal

import anyio
import jsonschema
import mcp_types as types
from mcp import Client, StdioServerParameters
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from mcp.shared.exceptions import MCPError
from pydantic import ConfigDict

BINARY = sys.argv[1]
TAG_VAR = "BASH_MCP_TEST_TAG"
failures = []


def check(name, condition, detail=""):
    if condition:
        print(f"PASS {name}")
    else:
        print(f"FAIL {name}: {detail}")
        failures.append(name)


def tagged_pids(tag):
    """Live processes whose environment carries TAG_VAR=tag."""
    needle = f"{TAG_VAR}={tag}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as f:
                env = f.read().split(b"\0")
            with open(f"/proc/{entry}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if needle in env and state != "Z":
            found.append(int(entry))
    return found


async def wait_gone(tag, limit=3.0):
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if not tagged_pids(tag):
            return True
        await anyio.sleep(0.05)
    return False


def stdio(args):
    return StdioServerParameters(command=BINARY, args=args)


@contextlib.contextmanager
def http_server(args):
    """`bash-mcp serve --http 127.0.0.1:0 ARGS`, yielding its URL; stopped
    with SIGTERM (as an orchestrator does) and checked to exit cleanly."""
    process = subprocess.Popen(
        [BINARY, "serve", "--http", "127.0.0.1:0", *args],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )
    try:
        line = process.stderr.readline().decode()
        found = re.search(r"serving MCP on (http://\S+)", line)
        if not found:
            raise RuntimeError(f"the HTTP server did not start: {line!r}")
        yield found.group(1)
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            status = process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            status = process.wait()
        process.stderr.close()
        check(f"[http server {' '.join(args)}] exits 0 on SIGTERM", status == 0, status)


async def run_mode(mode, target=None, label=None):
    params = target or stdio(["serve", "--timeout", "20"])
    async with Client(params, mode=mode) as client:
        p = f"[{label or mode}]"
        version = client.protocol_version
        expected = "2025-11-25" if mode == "legacy" else "2026-07-28"
        check(f"{p} negotiated {expected}", version == expected, version)

        tools = (await client.list_tools()).tools
        names = [t.name for t in tools]
        check(
            f"{p} tools/list",
            names[0] == "execute" and {"job_status", "status", "classify"} <= set(names),
            names,
        )
        execute = tools[0]
        ann = execute.annotations
        check(
            f"{p} honest annotations",
            ann is not None
            and ann.read_only_hint is False
            and ann.destructive_hint is True
            and ann.idempotent_hint is False
            and ann.open_world_hint is True,
            ann,
        )
        schema = execute.output_schema
        check(f"{p} output schema declared", isinstance(schema, dict) and schema.get("type") == "object", schema)

        # The client validates non-error results against the output schema itself
        # (and raises if they do not conform); also validate every result here.
        result = await client.call_tool("execute", {"command": "echo hello from $0"})
        doc = result.structured_content
        check(f"{p} call", not result.is_error and doc["exit_code"] == 0 and doc["output"] == "hello from /bin/sh\n", result)
        check(f"{p} text block", result.content[0].text == "hello from /bin/sh\n[exit code: 0]", result.content)
        jsonschema.validate(doc, schema)

        # A cut result names output_read; the default tool list offers it, and
        # calling it as the text says reads the part left out.
        check(f"{p} output_read listed", "output_read" in names, names)
        result = await client.call_tool("execute", {"command": "seq 1 30000"})
        doc = result.structured_content
        output_id = doc.get("output_id")
        check(
            f"{p} a cut result names output_read",
            output_id is not None and f'output_read {{"output_id": "{output_id}"}}' in result.content[0].text,
            doc.get("truncated"),
        )
        jsonschema.validate(doc, schema)
        result = await client.call_tool("output_read", {"output_id": output_id, "grep": "^15000$", "context": 0})
        check(
            f"{p} output_read reads a cut result",
            not result.is_error and "15000" in result.content[0].text,
            result,
        )

        result = await client.call_tool("execute", {"command": "echo oops >&2; exit 3"})
        doc = result.structured_content
        check(f"{p} non-zero exit is a normal result", not result.is_error and doc["exit_code"] == 3, result)
        jsonschema.validate(doc, schema)

        result = await client.call_tool("execute", {"command": "echo started; sleep 10", "timeout_seconds": 0.5})
        doc = result.structured_content
        check(
            f"{p} timeout",
            result.is_error and doc["error"] == "timeout" and doc["timed_out"] is True and "started" in doc["output"],
            result,
        )
        jsonschema.validate(doc, schema)

        result = await client.call_tool("execute", {"command": "true", "bogus": 1})
        check(f"{p} bad arguments are an error result", result.is_error and result.structured_content["error"] == "unknown_argument", result)
        jsonschema.validate(result.structured_content, schema)

        # Progress on a 3-second command.
        updates = []

        async def on_progress(progress, total, message):
            updates.append((progress, message))

        command = "for i in 1 2 3 4 5 6; do echo tick $i; sleep 0.5; done"
        result = await client.call_tool("execute", {"command": command}, progress_callback=on_progress)
        values = [u[0] for u in updates]
        check(
            f"{p} progress",
            not result.is_error
            and len(updates) >= 2
            and all(b > a for a, b in zip(values, values[1:]))
            and any("last output: tick" in (m or "") for _, m in updates),
            updates,
        )

        # Cancellation: the client's read timeout sends notifications/cancelled.
        tag = f"py-{mode}-{uuid.uuid4().hex[:8]}"
        started = time.monotonic()
        try:
            await client.call_tool(
                "execute",
                {"command": "sleep 30 & sleep 30", "env": {TAG_VAR: tag}},
                read_timeout_seconds=1.0,
            )
            check(f"{p} cancellation", False, "the call was not timed out by the client")
        except Exception as e:  # the client raises its timeout error
            await anyio.sleep(0.1)
            gone = await wait_gone(tag)
            check(f"{p} cancellation leaves no process", gone, f"{type(e).__name__}: {e}; left: {tagged_pids(tag)}")
        check(f"{p} cancellation was prompt", time.monotonic() - started < 5)

        # Still serving after the cancel.
        result = await client.call_tool("execute", {"command": "echo after"})
        check(f"{p} serves after a cancel", result.structured_content["output"] == "after\n", result)


# ------------------------------------------------------------------ tasks

RELATED = "io.modelcontextprotocol/related-task"


class TaskHandle(types.Result):
    """The 2026-07-28 CreateTaskResult (flat, resultType "task")."""

    model_config = ConfigDict(extra="allow")
    result_type: Literal["task"]
    task_id: str
    status: str
    created_at: str
    last_updated_at: str
    ttl_ms: int | None
    poll_interval_ms: int | None = None


class DetailedTask(types.Result):
    """The 2026-07-28 tasks/get result."""

    model_config = ConfigDict(extra="allow")
    task_id: str
    status: str
    ttl_ms: int | None
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None


class TaskIdParams(types.RequestParams):
    task_id: str


class TasksGet(types.Request[TaskIdParams, Literal["tasks/get"]]):
    method: Literal["tasks/get"] = "tasks/get"
    params: TaskIdParams


class TasksCancel(types.Request[TaskIdParams, Literal["tasks/cancel"]]):
    method: Literal["tasks/cancel"] = "tasks/cancel"
    params: TaskIdParams


handles = []


async def resolve_task(handle, ctx: ClaimContext):
    handles.append(handle)
    while True:
        got = await ctx.session.send_request(TasksGet(params=TaskIdParams(task_id=handle.task_id)), DetailedTask)
        if got.status == "completed":
            return types.CallToolResult.model_validate(got.result)
        if got.status != "working":
            raise RuntimeError(f"task ended {got.status}: {got}")
        await anyio.sleep((handle.poll_interval_ms or 1000) / 1000)


class TasksExtension(ClientExtension):
    identifier = "io.modelcontextprotocol/tasks"

    def claims(self):
        return [ResultClaim(result_type="task", model=TaskHandle, resolve=resolve_task)]


async def raw_task_call(client, arguments, ttl):
    """A task-augmented tools/call (2025-11-25) through the raw dispatcher."""
    params = {"name": "execute", "arguments": arguments, "task": {"ttl": ttl}}
    raw = await client.session._dispatcher.send_raw_request("tools/call", params, {})
    return types.CreateTaskResult.model_validate(raw).task


async def get_2025(client, task_id):
    request = types.GetTaskRequest(params=types.GetTaskRequestParams(task_id=task_id))
    return await client.session.send_request(request, types.GetTaskResult)


async def poll_2025(client, task_id, status, limit=20.0):
    deadline = time.monotonic() + limit
    while True:
        task = await get_2025(client, task_id)
        if task.status == status or time.monotonic() > deadline:
            return task
        await anyio.sleep((task.poll_interval or 100) / 1000)


async def expect_gone(coroutine):
    """The MCPError code of a request that must fail (None if it did not)."""
    try:
        await coroutine
    except MCPError as e:
        return e.error.code
    return None


async def tasks_2025(target, label=""):
    p = f"[{label}tasks 2025-11-25]"
    async with Client(target, mode="legacy") as client:
        caps = client.server_capabilities.tasks
        check(f"{p} capability", caps is not None and caps.list is not None and caps.cancel is not None
              and caps.requests.tools.call is not None, caps)
        tools = (await client.list_tools()).tools
        support = {t.name: (t.execution.task_support if t.execution else None) for t in tools}
        check(f"{p} execute's taskSupport", support["execute"] == "optional"
              and all(v is None for k, v in support.items() if k != "execute"), support)

        # The result, read after the command ended.
        task = await raw_task_call(client, {"command": "echo from a task"}, 60000)
        check(f"{p} created working", task.status == "working" and task.ttl == 60000, task)
        done = await poll_2025(client, task.task_id, "completed")
        check(f"{p} completed", done.status == "completed", done)
        await anyio.sleep(0.3)
        raw = await client.session._dispatcher.send_raw_request("tasks/result", {"taskId": task.task_id}, {})
        result = types.CallToolResult.model_validate(raw)
        check(f"{p} tasks/result after the end",
              result.structured_content["output"] == "from a task\n" and not result.is_error
              and raw["_meta"][RELATED] == {"taskId": task.task_id}, raw)
        listed = await client.session.send_request(types.ListTasksRequest(), types.ListTasksResult)
        check(f"{p} tasks/list", [t.task_id for t in listed.tasks] == [task.task_id], listed)

        # Cancel kills the process group before the answer.
        tag = f"py-task-{uuid.uuid4().hex[:8]}"
        task = await raw_task_call(client, {"command": "sleep 30 & sleep 30", "env": {TAG_VAR: tag}}, 60000)
        deadline = time.monotonic() + 10
        while len(tagged_pids(tag)) < 2 and time.monotonic() < deadline:
            await anyio.sleep(0.05)
        running = len(tagged_pids(tag))
        request = types.CancelTaskRequest(params=types.CancelTaskRequestParams(task_id=task.task_id))
        cancelled = await client.session.send_request(request, types.CancelTaskResult)
        check(f"{p} cancel", running >= 2 and cancelled.status == "cancelled", (running, cancelled))
        check(f"{p} cancel kills the group", await wait_gone(tag), tagged_pids(tag))
        code = await expect_gone(client.session.send_request(request, types.CancelTaskResult))
        check(f"{p} cancelling a terminal task is -32602", code == -32602, code)

        # Expiry: a 1 s task, still running, is killed and forgotten.
        tag = f"py-expiry-{uuid.uuid4().hex[:8]}"
        task = await raw_task_call(client, {"command": "sleep 30", "env": {TAG_VAR: tag}}, 1000)
        check(f"{p} ttl granted", task.ttl == 1000, task)
        await anyio.sleep(1.2)
        code = await expect_gone(get_2025(client, task.task_id))
        check(f"{p} expired task is -32602", code == -32602, code)
        check(f"{p} expiry kills the job", await wait_gone(tag), tagged_pids(tag))


async def tasks_2026(target, short_target, label=""):
    p = f"[{label}tasks 2026-07-28]"
    handles.clear()
    async with Client(target, mode="2026-07-28", extensions=[TasksExtension()]) as client:
        result = await client.call_tool("execute", {"command": "echo quick"})
        check(f"{p} a quick call gets its plain result", result.structured_content["output"] == "quick\n" and not handles,
              (result, handles))
        result = await client.call_tool("execute", {"command": "sleep 4; echo slow; exit 3"})
        check(f"{p} a slow call becomes a task the SDK resolves",
              len(handles) == 1 and handles[0].ttl_ms is not None
              and result.structured_content["output"] == "slow\n" and result.structured_content["exit_code"] == 3,
              (result, handles))

        tag = f"py-task26-{uuid.uuid4().hex[:8]}"
        handle = await client.session.call_tool(
            "execute", {"command": "sleep 30 & sleep 30", "env": {TAG_VAR: tag}}, allow_claimed=True
        )
        check(f"{p} task handle", isinstance(handle, TaskHandle) and handle.status == "working", handle)
        ack = await client.session.send_request(TasksCancel(params=TaskIdParams(task_id=handle.task_id)), types.Result)
        check(f"{p} cancel acknowledged", ack is not None, ack)
        check(f"{p} cancel kills the group", await wait_gone(tag), tagged_pids(tag))
        got = await client.session.send_request(TasksGet(params=TaskIdParams(task_id=handle.task_id)), DetailedTask)
        check(f"{p} cancelled", got.status == "cancelled" and got.result is None, got)

    async with Client(short_target, mode="2026-07-28", extensions=[TasksExtension()]) as client:
        tag = f"py-expiry26-{uuid.uuid4().hex[:8]}"
        handle = await client.session.call_tool(
            "execute", {"command": "sleep 30", "env": {TAG_VAR: tag}}, allow_claimed=True
        )
        check(f"{p} short ttl", isinstance(handle, TaskHandle) and handle.ttl_ms == 1000, handle)
        await anyio.sleep(1.2)
        code = await expect_gone(
            client.session.send_request(TasksGet(params=TaskIdParams(task_id=handle.task_id)), DetailedTask)
        )
        check(f"{p} expired task is -32602", code == -32602, code)
        check(f"{p} expiry kills the job", await wait_gone(tag), tagged_pids(tag))


async def guarded_tasks():
    with tempfile.TemporaryDirectory(prefix="bash-mcp-py-tasks-") as folder:
        short = os.path.join(folder, "short.json")
        with open(short, "w") as f:
            json.dump({"tasks": {"ttl_seconds": 1, "poll_interval_ms": 200}}, f)
        normal = os.path.join(folder, "normal.json")
        with open(normal, "w") as f:
            # The server answers a 2026-07-28 call plainly when it ends within
            # one poll interval: 2 s, far above what `echo` takes even on a
            # loaded machine, and below the slow call's 4 s.
            json.dump({"tasks": {"ttl_seconds": 60, "poll_interval_ms": 2000}}, f)
        normal_args, short_args = ["--config", normal], ["--config", short]
        with http_server(normal_args) as normal_url, http_server(short_args) as short_url:
            for name, run in [
                ("tasks 2025-11-25", lambda: tasks_2025(stdio(["serve", *normal_args]))),
                ("tasks 2026-07-28", lambda: tasks_2026(stdio(["serve", *normal_args]), stdio(["serve", *short_args]))),
                ("http tasks 2025-11-25", lambda: tasks_2025(normal_url, "http ")),
                ("http tasks 2026-07-28", lambda: tasks_2026(normal_url, short_url, "http ")),
            ]:
                try:
                    await run()
                except Exception as e:
                    check(f"[{name}] session", False, f"{type(e).__name__}: {e}")


async def guarded(mode, target=None, label=None):
    try:
        await run_mode(mode, target, label)
    except Exception as e:
        check(f"[{label or mode}] session", False, f"{type(e).__name__}: {e}")


async def main():
    # The three modes run side by side, each against its own server process
    # over stdio, and each as a client of one shared HTTP server.
    with http_server(["--timeout", "20"]) as url:
        async with anyio.create_task_group() as group:
            for mode in ["legacy", "auto", "2026-07-28"]:
                group.start_soon(guarded, mode)
                group.start_soon(guarded, mode, url, f"http {mode}")
            group.start_soon(guarded_tasks)
    print(f"{len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
