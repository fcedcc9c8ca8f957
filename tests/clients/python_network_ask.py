"""A running command's connection that its network policy does not allow,
put to the person through the Python `mcp` client's elicitation_callback
(2025-11-25) while the command waits: allowed once (the command's second
connection there passes unasked), allowed for the server (the next command
passes unasked), denied (a 403 naming why, listed in sandbox.denied). The
origin is a server this script starts on the host's loopback, which the
policy lists by address; the command reaches it by the name localhost.

Usage: python_network_ask.py /path/to/bash-mcp
Prints one line per case (PASS/FAIL) and exits non-zero if any case failed.
"""

import http.server
import json
import os
import shutil
import sys
import tempfile
import threading

import anyio
import mcp_types as types
from mcp import Client, StdioServerParameters

BINARY = sys.argv[1]
failures = []


def check(name, condition, detail=""):
    if condition:
        print(f"PASS {name}")
    else:
        print(f"FAIL {name}: {detail}")
        failures.append(name)


class Origin(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = b"from the origin"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


class Person:
    """Answers each question with the next planned decision, and keeps them."""

    def __init__(self):
        self.plan = []
        self.asked = []

    async def __call__(self, ctx, params):
        self.asked.append(params)
        return types.ElicitResult(action="accept", content={"decision": self.plan.pop(0)})


async def run(port):
    top = tempfile.mkdtemp(prefix="bash-mcp-py-net-ask-")
    work = os.path.join(top, "project")
    os.mkdir(work)
    try:
        config = os.path.join(top, "config.json")
        with open(config, "w") as f:
            json.dump({"audit": None, "sandbox": {"network": {"allow": [f"127.0.0.1:{port}"]}}}, f)
        params = StdioServerParameters(
            command=BINARY,
            args=["serve", "--config", config, "--working-dir", work],
            env={**os.environ, "XDG_DATA_HOME": os.path.join(top, "data")},
        )
        fetch = f"curl -sS --noproxy '' -w ' [%{{http_code}}]\\n' http://localhost:{port}/"
        place = f"localhost:{port}"
        person = Person()
        async with Client(params, mode="legacy", elicitation_callback=person) as client:
            person.plan = ["allow_once"]
            result = await client.call_tool("execute", {"command": f"{fetch}; {fetch}"})
            out = (result.structured_content or {}).get("output")
            asked = person.asked[-1] if person.asked else None
            check(
                "asked about the place and the exact command",
                asked is not None and f"is connecting to {place}" in asked.message and fetch in asked.message,
                asked,
            )
            check(
                "allow once: both connections of the command pass, asked once",
                out == "from the origin [200]\nfrom the origin [200]\n" and len(person.asked) == 1,
                result,
            )

            person.plan = ["allow_for_server"]
            first = await client.call_tool("execute", {"command": fetch})
            second = await client.call_tool("execute", {"command": fetch})
            check(
                "allow for the server: the next command passes unasked",
                all((r.structured_content or {}).get("output") == "from the origin [200]\n" for r in (first, second))
                and len(person.asked) == 2,
                (first, second),
            )
            status = await client.call_tool("status", {})
            grants = ((status.structured_content or {}).get("approvals") or {}).get("grants") or []
            check(
                "status lists the connect grant",
                [(g.get("type"), g.get("host"), g.get("port")) for g in grants] == [("connect", "localhost", port)],
                grants,
            )
            await client.call_tool("revoke_grants", {})

            person.plan = ["deny"]
            result = await client.call_tool("execute", {"command": fetch})
            doc = result.structured_content or {}
            rule = "not in network.allow; the person denied it"
            check(
                "deny: a 403 naming why, listed in sandbox.denied",
                f"refused {place} ({rule})" in doc.get("output", "")
                and doc.get("output", "").endswith(" [403]\n")
                and doc.get("sandbox", {}).get("denied") == [{"op": "connect", "host": "localhost", "port": port, "rule": rule}],
                doc,
            )
    finally:
        shutil.rmtree(top, ignore_errors=True)


def main():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Origin)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        anyio.run(run, server.server_address[1])
    except Exception as e:  # noqa: BLE001
        print(f"FAIL the run: {e!r}")
        failures.append("run")
    finally:
        server.shutdown()
        server.server_close()
    sys.exit(1 if failures else 0)


main()
