// Drives the bash-mcp binary with the TypeScript SDK v1 client (pinned in
// .ci/install-clients.sh), which speaks the handshake era only; its
// `client.experimental.tasks` drives 2025-11-25 tasks. Every case runs over
// stdio and over Streamable HTTP (`serve --http`, a server this script
// starts and stops; those cases are labelled "http").
//
// Usage: node ts_client.mjs /path/to/bash-mcp /path/to/npm-prefix
// Prints one line per case (PASS/FAIL) and exits non-zero if any failed.

import { createRequire } from "node:module";
import { spawn } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

const [binary, prefix] = process.argv.slice(2);
const require = createRequire(join(prefix, "package.json"));
const { Client } = require("@modelcontextprotocol/sdk/client/index.js");
const { StdioClientTransport } = require("@modelcontextprotocol/sdk/client/stdio.js");
const { StreamableHTTPClientTransport } = require("@modelcontextprotocol/sdk/client/streamableHttp.js");
const { CallToolResultSchema, TaskStatusNotificationSchema } = require("@modelcontextprotocol/sdk/types.js");

const TAG_VAR = "BASH_MCP_TEST_TAG";
const failures = [];
let label = "";
function check(name, ok, detail) {
  name = label + name;
  if (ok) {
    console.log(`PASS ${name}`);
  } else {
    console.log(`FAIL ${name}: ${JSON.stringify(detail)}`);
    failures.push(name);
  }
}

function taggedPids(tag) {
  const needle = `${TAG_VAR}=${tag}`;
  const found = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const env = readFileSync(`/proc/${entry}/environ`, "latin1").split("\0");
      const state = readFileSync(`/proc/${entry}/stat`, "latin1").split(")").pop().trim()[0];
      if (env.includes(needle) && state !== "Z") found.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function waitGone(tag, limitMs = 3000) {
  const deadline = Date.now() + limitMs;
  while (Date.now() < deadline) {
    if (taggedPids(tag).length === 0) return true;
    await sleep(50);
  }
  return false;
}

// `bash-mcp serve --http 127.0.0.1:0`; resolves to the server and its URL.
function startHttpServer() {
  const server = spawn(binary, ["serve", "--http", "127.0.0.1:0"], { stdio: ["ignore", "ignore", "pipe"] });
  return new Promise((resolve, reject) => {
    let seen = "";
    server.stderr.on("data", (chunk) => {
      seen += chunk;
      const found = /serving MCP on (http:\/\/\S+)/.exec(seen);
      if (found) resolve({ server, url: found[1] });
    });
    server.on("exit", (code) => reject(new Error(`the HTTP server exited (${code}) before serving: ${seen}`)));
  });
}

async function session(transport) {
const client = new Client({ name: "bash-mcp-ts-test", version: "1.0.0" });
try {
  await client.connect(transport);
  check("initialize", client.getServerVersion()?.name === "bash-mcp", client.getServerVersion());

  const { tools } = await client.listTools();
  check(
    "tools/list",
    tools[0].name === "execute" && ["job_status", "status", "classify"].every((n) => tools.some((t) => t.name === n)),
    tools.map((t) => t.name),
  );
  check("title and output schema", tools[0].title === "Run a shell command" && tools[0].outputSchema?.type === "object", tools[0]);
  check("annotations", tools[0].annotations?.destructiveHint === true && tools[0].annotations?.readOnlyHint === false, tools[0].annotations);

  // callTool validates structuredContent against the output schema (error results too).
  let result = await client.callTool({ name: "execute", arguments: { command: "echo hi" } });
  check("call", !result.isError && result.structuredContent.output === "hi\n" && result.content[0].text === "hi\n[exit code: 0]", result);

  result = await client.callTool({ name: "execute", arguments: { command: "exit 5" } });
  check("non-zero exit", !result.isError && result.structuredContent.exit_code === 5, result);

  result = await client.callTool({ name: "execute", arguments: { command: "sleep 5", timeout_seconds: 0.3 } });
  check("timeout", result.isError && result.structuredContent.error === "timeout", result);

  result = await client.callTool({ name: "execute", arguments: {} });
  check("missing argument", result.isError && result.structuredContent.error === "invalid_arguments", result);

  try {
    await client.callTool({ name: "nope", arguments: {} });
    check("unknown tool", false, "no error");
  } catch (e) {
    check("unknown tool", e.code === -32602, String(e));
  }

  const updates = [];
  result = await client.callTool(
    { name: "execute", arguments: { command: "for i in 1 2 3 4 5; do echo line $i; sleep 0.5; done" } },
    CallToolResultSchema,
    { onprogress: (p) => updates.push(p), resetTimeoutOnProgress: true },
  );
  const values = updates.map((u) => u.progress);
  check(
    "progress",
    !result.isError && updates.length >= 2 && values.every((v, i) => i === 0 || v > values[i - 1]) && updates.some((u) => /last output: line/.test(u.message)),
    updates,
  );

  const tag = `ts-${process.pid}-${Date.now()}`;
  const controller = new AbortController();
  const pending = client.callTool(
    { name: "execute", arguments: { command: "sleep 30 & sleep 30", env: { [TAG_VAR]: tag } } },
    CallToolResultSchema,
    { signal: controller.signal },
  );
  await sleep(500);
  const running = taggedPids(tag).length;
  controller.abort("test cancel");
  try {
    await pending;
    check("cancellation", false, "call completed");
  } catch {
    check("cancellation leaves no process", running >= 2 && (await waitGone(tag)), { running, left: taggedPids(tag) });
  }

  result = await client.callTool({ name: "execute", arguments: { command: "echo after" } });
  check("serves after a cancel", result.structuredContent.output === "after\n", result);

  // Tasks (2025-11-25) through client.experimental.tasks; status
  // notifications parsed by the SDK's own schema.
  const statuses = [];
  client.setNotificationHandler(TaskStatusNotificationSchema, (n) => statuses.push(n.params));
  const statusOf = async (id, status) => {
    const deadline = Date.now() + 10000;
    while (Date.now() < deadline) {
      const seen = statuses.find((s) => s.taskId === id && s.status === status);
      if (seen) return seen;
      await sleep(20);
    }
    return undefined;
  };
  check("tasks capability", client.getServerCapabilities()?.tasks?.requests?.tools?.call !== undefined, client.getServerCapabilities());
  check("execute's taskSupport", tools[0].execution?.taskSupport === "optional", tools[0].execution);
  const kinds = [];
  let taskId;
  for await (const message of client.experimental.tasks.callToolStream(
    { name: "execute", arguments: { command: "sleep 0.5; echo ts-task" } },
    CallToolResultSchema,
    { task: { ttl: 60000 } },
  )) {
    kinds.push(message.type);
    if (message.type === "taskCreated") taskId = message.task.taskId;
    if (message.type === "result") result = message.result;
    if (message.type === "error") result = String(message.error);
  }
  check(
    "task stream",
    kinds[0] === "taskCreated" && kinds.at(-1) === "result" && result.structuredContent?.output === "ts-task\n",
    { kinds, result },
  );
  const announced = await statusOf(taskId, "completed");
  check("task status notification", announced?.ttl === 60000 && announced?._meta === undefined, statuses);
  await sleep(200);
  const payload = await client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema);
  check(
    "task result after the end",
    payload.structuredContent?.output === "ts-task\n" && payload._meta?.["io.modelcontextprotocol/related-task"]?.taskId === taskId,
    payload,
  );
  const listed = await client.experimental.tasks.listTasks();
  check("tasks/list", listed.tasks.some((t) => t.taskId === taskId && t.status === "completed"), listed);

  const taskTag = `ts-task-${process.pid}-${Date.now()}`;
  let cancelId;
  for await (const message of client.experimental.tasks.callToolStream(
    { name: "execute", arguments: { command: "sleep 30 & sleep 30", env: { [TAG_VAR]: taskTag } } },
    CallToolResultSchema,
    { task: { ttl: 60000 } },
  )) {
    if (message.type === "taskCreated") {
      cancelId = message.task.taskId;
      break;
    }
  }
  const deadline = Date.now() + 10000;
  while (taggedPids(taskTag).length < 2 && Date.now() < deadline) await sleep(50);
  const cancelled = await client.experimental.tasks.cancelTask(cancelId);
  check("task cancel", cancelled.status === "cancelled", cancelled);
  check("task cancel kills the group", await waitGone(taskTag), taggedPids(taskTag));
  check("task status notification of the cancel", (await statusOf(cancelId, "cancelled")) !== undefined, statuses);
  const after = await client.experimental.tasks.getTask(cancelId);
  check("task stays cancelled", after.status === "cancelled", after);
  await client.close();
} catch (e) {
  check("session", false, String(e?.stack ?? e));
}
}

await session(new StdioClientTransport({ command: binary, args: ["serve"], stderr: "ignore" }));
label = "http ";
try {
  const { server, url } = await startHttpServer();
  const exited = new Promise((resolve) => server.on("exit", (code, signal) => resolve({ code, signal })));
  await session(new StreamableHTTPClientTransport(new URL(url)));
  server.kill("SIGTERM");
  const status = await exited;
  check("server exits 0 on SIGTERM", status.code === 0, status);
} catch (e) {
  check("server", false, String(e?.stack ?? e));
}
console.log(`${failures.length} failed`);
process.exit(failures.length ? 1 : 0);
