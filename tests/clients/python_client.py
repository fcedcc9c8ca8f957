"""Drives the bash-mcp binary with the Python `mcp` client (pinned in
.ci/install-clients.sh) in three modes: handshake ("legacy"), auto-probe
("auto": server/discover first) and stateless ("2026-07-28").

Usage: python_client.py /path/to/bash-mcp
Prints one line per case (PASS/FAIL) and exits non-zero if any case failed.
"""

import asyncio
import os
import sys
import time
import uuid

import anyio
import jsonschema
from mcp import Client, StdioServerParameters

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


async def run_mode(mode):
    params = StdioServerParameters(command=BINARY, args=["serve", "--timeout", "20"])
    async with Client(params, mode=mode) as client:
        p = f"[{mode}]"
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


async def guarded(mode):
    try:
        await run_mode(mode)
    except Exception as e:
        check(f"[{mode}] session", False, f"{type(e).__name__}: {e}")


async def main():
    # The three modes run side by side, each against its own server process.
    async with anyio.create_task_group() as group:
        for mode in ["legacy", "auto", "2026-07-28"]:
            group.start_soon(guarded, mode)
    print(f"{len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
