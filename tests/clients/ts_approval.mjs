// Asks the person through the TypeScript SDK v1 client's elicitation
// handler, against the bash-mcp binary under permission rules: approve
// once, approve for the server (the second call asks nothing), deny
// (nothing ran, shown on the file system), cancel, and a client without
// elicitation (a refusal whose hint says what to add to the configuration);
// and a task-augmented call (2025-11-25) that asks while in input_required,
// through `client.experimental.tasks.callToolStream`.
// Over stdio, then over Streamable HTTP (`serve --http`; cases labelled
// "http"), where the question travels on the call's event stream or the
// session's GET stream and the answer comes back as a POST.
//
// Usage: node ts_approval.mjs /path/to/bash-mcp /path/to/npm-prefix
// Prints one line per case (PASS/FAIL) and exits non-zero if any failed.

import { spawn } from "node:child_process";
import { createRequire } from "node:module";
import { existsSync, mkdirSync, mkdtempSync, rmSync, unlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const [binary, prefix] = process.argv.slice(2);
const require = createRequire(join(prefix, "package.json"));
const { Client } = require("@modelcontextprotocol/sdk/client/index.js");
const { StdioClientTransport } = require("@modelcontextprotocol/sdk/client/stdio.js");
const { StreamableHTTPClientTransport } = require("@modelcontextprotocol/sdk/client/streamableHttp.js");
const { CallToolResultSchema, ElicitRequestSchema } = require("@modelcontextprotocol/sdk/types.js");

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

// The project is the sandbox's writable root; the file that configures the
// server lies beside it, where no command can rewrite it.
const top = mkdtempSync(join(tmpdir(), "bash-mcp-ts-approval-"));
const work = join(top, "project");
mkdirSync(work);
const config = join(top, "config.json");
writeFileSync(config, JSON.stringify({ audit: null, permissions: { allow: ["bash.execute:echo *"] } }));
const stdioTransport = () =>
  new StdioClientTransport({
    command: binary,
    args: ["serve", "--config", config, "--working-dir", work],
    env: { ...process.env, XDG_DATA_HOME: join(top, "data") },
    stderr: "ignore",
  });
const file = (name) => join(work, name);

async function cases(transport) {
  const asked = [];
  const plan = [];
  const client = new Client({ name: "ts-approval", version: "1" }, { capabilities: { elicitation: { form: {} } } });
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    asked.push(request.params);
    const [action, decision] = plan.shift();
    return action === "accept" ? { action, content: { decision } } : { action };
  });
  await client.connect(transport());

  plan.push(["accept", "allow_once"]);
  let result = await client.callTool({ name: "execute", arguments: { command: "touch once" } });
  const question = asked.at(-1);
  check(
    "asked with the exact command and its directory",
    question && question.mode === "form" && question.message.includes("\n    touch once\n") && question.message.includes(`in ${work}`),
    question,
  );
  const options = question?.requestedSchema?.properties?.decision?.oneOf ?? [];
  check(
    "schema: one required decision with titled answers",
    JSON.stringify(question?.requestedSchema?.required) === '["decision"]' &&
      options.map((o) => o.const).join() === "allow_once,allow_for_server,deny" &&
      options.every((o) => o.title),
    question?.requestedSchema,
  );
  check("approve once runs it", !result.isError && existsSync(file("once")), result);

  plan.push(["accept", "allow_for_server"]);
  result = await client.callTool({ name: "execute", arguments: { command: "touch granted" } });
  unlinkSync(file("granted"));
  const before = asked.length;
  const again = await client.callTool({ name: "execute", arguments: { command: "touch granted" } });
  check(
    "approve for the server: the second call asks nothing",
    !result.isError && !again.isError && asked.length === before && existsSync(file("granted")),
    [result, again],
  );

  plan.push(["accept", "deny"]);
  result = await client.callTool({ name: "execute", arguments: { command: "touch denied" } });
  check(
    "deny: nothing ran",
    result.isError && result.structuredContent?.error === "permission_denied" && !existsSync(file("denied")),
    result,
  );

  plan.push(["cancel"]);
  result = await client.callTool({ name: "execute", arguments: { command: "touch cancelled" } });
  check("cancel: nothing ran", result.isError && !existsSync(file("cancelled")), result);

  // A task (2025-11-25): it goes to input_required, the SDK calls
  // tasks/result, the question arrives tied to the task, and the answer
  // resumes it (or refuses it).
  const taskCall = async (command) => {
    const seen = [];
    let last;
    for await (const message of client.experimental.tasks.callToolStream(
      { name: "execute", arguments: { command } },
      CallToolResultSchema,
      { task: { ttl: 60000 } },
    )) {
      if (message.type === "taskStatus") seen.push(message.task.status);
      if (message.type === "result" || message.type === "error") last = message;
    }
    return { seen, last };
  };
  plan.push(["accept", "allow_once"]);
  let asked_before = asked.length;
  let run = await taskCall("touch tasked");
  let taskQuestion = asked.at(-1);
  check(
    "task: input_required, asked for the task, approved runs it",
    run.seen.includes("input_required") &&
      asked.length === asked_before + 1 &&
      taskQuestion.message.includes("\n    touch tasked\n") &&
      taskQuestion._meta?.["io.modelcontextprotocol/related-task"]?.taskId !== undefined &&
      run.last?.type === "result" &&
      run.last.result.structuredContent?.exit_code === 0 &&
      existsSync(file("tasked")),
    { run, taskQuestion },
  );
  plan.push(["accept", "deny"]);
  run = await taskCall("touch task-denied");
  check(
    "task: denied runs nothing",
    run.seen.includes("input_required") &&
      run.last?.type === "result" &&
      run.last.result.isError &&
      run.last.result.structuredContent?.error === "permission_denied" &&
      !existsSync(file("task-denied")),
    run,
  );
  await client.close();

  const plain = new Client({ name: "ts-no-elicitation", version: "1" });
  await plain.connect(transport());
  result = await plain.callTool({ name: "execute", arguments: { command: "touch unasked" } });
  const hint = result.structuredContent?.hint ?? "";
  check(
    "without elicitation: refused with a hint",
    result.isError && hint.includes("`bash.execute:touch unasked`") && hint.includes("nothing was run") && !existsSync(file("unasked")),
    result.structuredContent,
  );
  await plain.close();
}

function startHttpServer() {
  const server = spawn(binary, ["serve", "--http", "127.0.0.1:0", "--config", config, "--working-dir", work], {
    stdio: ["ignore", "ignore", "pipe"],
    env: { ...process.env, XDG_DATA_HOME: join(top, "data") },
  });
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

try {
  await cases(stdioTransport);
  for (const name of ["once", "granted", "tasked"]) rmSync(file(name), { force: true });
  label = "http ";
  const { server, url } = await startHttpServer();
  const exited = new Promise((resolve) => server.on("exit", (code) => resolve(code)));
  try {
    await cases(() => new StreamableHTTPClientTransport(new URL(url)));
  } finally {
    server.kill("SIGTERM");
    check("server exits 0 on SIGTERM", (await exited) === 0);
  }
} catch (e) {
  check("session", false, String(e?.stack ?? e));
} finally {
  rmSync(top, { recursive: true, force: true });
}
console.log(`\n${failures.length} failed`);
process.exit(failures.length ? 1 : 0);
