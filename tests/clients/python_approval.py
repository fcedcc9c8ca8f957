"""Asks the person through the Python `mcp` client's elicitation_callback,
against the bash-mcp binary under permission rules: approve once, approve
for the server (the second call asks nothing), deny (nothing ran, shown on
the file system), cancel, and a client without elicitation (a refusal whose
hint says what to add to the configuration). In 2026-07-28 mode also a
client with the tasks extension (io.modelcontextprotocol/tasks): the call
becomes a task in `input_required`, the question is read from `tasks/get`'s
`inputRequests`, answered by the same elicitation callback and sent back
with `tasks/update`; the task then runs the command (or refuses it).

Usage: python_approval.py /path/to/bash-mcp MODE...   (MODE: legacy, 2026-07-28)
Prints one line per case (PASS/FAIL) and exits non-zero if any case failed.
"""

import json
import os
import shutil
import sys
import tempfile

from typing import Any, Literal

import anyio
import mcp_types as types
from mcp import Client, StdioServerParameters
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from pydantic import ConfigDict

BINARY = sys.argv[1]
MODES = sys.argv[2:] or ["legacy"]
failures = []


def check(name, condition, detail=""):
    if condition:
        print(f"PASS {name}")
    else:
        print(f"FAIL {name}: {detail}")
        failures.append(name)


class Person:
    """Answers each question with the next planned answer, and keeps them."""

    def __init__(self):
        self.plan = []
        self.asked = []

    async def __call__(self, ctx, params):
        self.asked.append(params)
        action, decision = self.plan.pop(0)
        if action == "accept":
            return types.ElicitResult(action="accept", content={"decision": decision})
        return types.ElicitResult(action=action)


class TaskHandle(types.Result):
    """The 2026-07-28 CreateTaskResult (flat, resultType "task")."""

    model_config = ConfigDict(extra="allow")
    result_type: Literal["task"]
    task_id: str
    status: str
    poll_interval_ms: int | None = None


class DetailedTask(types.Result):
    """The 2026-07-28 tasks/get result."""

    model_config = ConfigDict(extra="allow")
    task_id: str
    status: str
    result: dict[str, Any] | None = None
    input_requests: dict[str, Any] | None = None


class TaskIdParams(types.RequestParams):
    task_id: str


class UpdateParams(types.RequestParams):
    task_id: str
    input_responses: dict[str, Any]


class TasksGet(types.Request[TaskIdParams, Literal["tasks/get"]]):
    method: Literal["tasks/get"] = "tasks/get"
    params: TaskIdParams


class TasksUpdate(types.Request[UpdateParams, Literal["tasks/update"]]):
    method: Literal["tasks/update"] = "tasks/update"
    params: UpdateParams


class TasksExtension(ClientExtension):
    """The tasks extension: polls a task, answers its questions through the
    person's elicitation callback and `tasks/update`, returns its result."""

    identifier = "io.modelcontextprotocol/tasks"

    def __init__(self, person):
        self.person = person
        self.statuses = []

    def claims(self):
        return [ResultClaim(result_type="task", model=TaskHandle, resolve=self.resolve)]

    async def resolve(self, handle, ctx: ClaimContext):
        answered = set()
        while True:
            got = await ctx.session.send_request(TasksGet(params=TaskIdParams(task_id=handle.task_id)), DetailedTask)
            self.statuses.append(got.status)
            if got.status == "completed":
                return types.CallToolResult.model_validate(got.result)
            if got.status == "input_required":
                responses = {}
                for key, request in (got.input_requests or {}).items():
                    if key in answered:
                        continue
                    params = types.ElicitRequestFormParams.model_validate(request["params"])
                    answer = await self.person(None, params)
                    responses[key] = answer.model_dump(by_alias=True, exclude_none=True)
                    answered.add(key)
                if responses:
                    await ctx.session.send_request(
                        TasksUpdate(params=UpdateParams(task_id=handle.task_id, input_responses=responses)),
                        types.EmptyResult,
                    )
            elif got.status != "working":
                raise RuntimeError(f"task ended {got.status}: {got}")
            await anyio.sleep((handle.poll_interval_ms or 1000) / 1000)


async def tasks_2026(params, work, p):
    person = Person()
    tasks = TasksExtension(person)
    async with Client(params, mode="2026-07-28", elicitation_callback=person, extensions=[tasks]) as client:
        person.plan = [("accept", "allow_once")]
        result = await client.call_tool("execute", {"command": "touch tasked"})
        asked = person.asked[-1] if person.asked else None
        check(
            f"{p} task: input_required, answered by tasks/update, approved runs it",
            "input_required" in tasks.statuses
            and asked is not None
            and "\n    touch tasked\n" in asked.message
            and not result.is_error
            and os.path.exists(os.path.join(work, "tasked")),
            (tasks.statuses, asked, result),
        )
        tasks.statuses.clear()
        person.plan = [("accept", "deny")]
        result = await client.call_tool("execute", {"command": "touch task-denied"})
        doc = result.structured_content or {}
        check(
            f"{p} task: denied runs nothing",
            "input_required" in tasks.statuses
            and result.is_error
            and doc.get("error") == "permission_denied"
            and not os.path.exists(os.path.join(work, "task-denied")),
            (tasks.statuses, result),
        )


async def run_mode(mode):
    # The project is the sandbox's writable root; the file that configures
    # the server lies beside it, where no command can rewrite it.
    top = tempfile.mkdtemp(prefix="bash-mcp-py-approval-")
    work = os.path.join(top, "project")
    os.mkdir(work)
    try:
        config = os.path.join(top, "config.json")
        with open(config, "w") as f:
            json.dump({"audit": None, "permissions": {"allow": ["bash.execute:echo *"]}}, f)
        params = StdioServerParameters(
            command=BINARY,
            args=["serve", "--config", config, "--working-dir", work],
            env={**os.environ, "XDG_DATA_HOME": os.path.join(top, "data")},
        )
        p = f"[{mode}]"
        person = Person()
        async with Client(params, mode=mode, elicitation_callback=person) as client:
            person.plan = [("accept", "allow_once")]
            result = await client.call_tool("execute", {"command": "touch once"})
            asked = person.asked[-1] if person.asked else None
            check(
                f"{p} asked with the exact command and its directory",
                asked is not None and "\n    touch once\n" in asked.message and f"in {work}" in asked.message,
                asked,
            )
            schema = asked.requested_schema if asked else {}
            decision = schema.get("properties", {}).get("decision", {})
            check(
                f"{p} schema: one required decision with titled answers",
                schema.get("required") == ["decision"]
                and [o["const"] for o in decision.get("oneOf", [])] == ["allow_once", "allow_for_server", "deny"]
                and all(o.get("title") for o in decision.get("oneOf", [])),
                schema,
            )
            check(
                f"{p} approve once runs it",
                not result.is_error and os.path.exists(os.path.join(work, "once")),
                result,
            )

            person.plan = [("accept", "allow_for_server")]
            result = await client.call_tool("execute", {"command": "touch granted"})
            os.remove(os.path.join(work, "granted"))
            before = len(person.asked)
            again = await client.call_tool("execute", {"command": "touch granted"})
            check(
                f"{p} approve for the server: the second call asks nothing",
                not result.is_error
                and not again.is_error
                and len(person.asked) == before
                and os.path.exists(os.path.join(work, "granted")),
                (result, again),
            )

            person.plan = [("accept", "deny")]
            result = await client.call_tool("execute", {"command": "touch denied"})
            doc = result.structured_content or {}
            check(
                f"{p} deny: nothing ran",
                result.is_error
                and doc.get("error") == "permission_denied"
                and not os.path.exists(os.path.join(work, "denied")),
                result,
            )

            person.plan = [("cancel", None)]
            result = await client.call_tool("execute", {"command": "touch cancelled"})
            check(
                f"{p} cancel: nothing ran",
                result.is_error and not os.path.exists(os.path.join(work, "cancelled")),
                result,
            )

        async with Client(params, mode=mode) as client:
            result = await client.call_tool("execute", {"command": "touch unasked"})
            doc = result.structured_content or {}
            hint = doc.get("hint", "")
            check(
                f"{p} without elicitation: refused with a hint",
                result.is_error
                and "`bash.execute:touch unasked`" in hint
                and "nothing was run" in hint
                and not os.path.exists(os.path.join(work, "unasked")),
                doc,
            )

        if mode == "2026-07-28":
            await tasks_2026(params, work, p)
    finally:
        shutil.rmtree(top, ignore_errors=True)


async def main():
    for mode in MODES:
        try:
            await run_mode(mode)
        except Exception as e:  # a failure to connect or a protocol error
            check(f"[{mode}] session", False, f"{type(e).__name__}: {e}")
    print(f"\n{len(failures)} failed")
    sys.exit(1 if failures else 0)


anyio.run(main)
