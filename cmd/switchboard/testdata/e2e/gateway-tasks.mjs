// gateway-tasks.mjs: tasks the gateway makes for a tool whose upstream takes none (issue 19, item 3), across two
// replicas, through the TypeScript SDK client (2025-11-25) and raw 2026-07-28 requests.
//
//   node gateway-tasks.mjs --phase start  --url A [--prefix everything__]
//   node gateway-tasks.mjs --phase finish --url B --task ID [--prefix everything__]
//   node gateway-tasks.mjs --phase modern --url A --other B [--prefix everything__]
//
// start: the tool <prefix>trigger-long-running-operation is listed with execution.taskSupport "optional" (the
// gateway's, server-everything declares none for it); a tools/call with params.task answers a 2025-11-25
// CreateTaskResult at once, and tasks/list shows it; the script prints the task id and exits, closing its
// session while the call runs.
// finish: a new client on the other replica reads the task (tasks/get: working, then a progress statusMessage
// or completed), does not find it in its tasks/list (without auth a session lists its own), and gets the
// tool's own result from tasks/result.
// modern: a 2026-07-28 request that declares the extension gets a CreateTaskResult (resultType "task") from A
// once the sync window passes; B answers tasks/get for it until it is completed with the result inlined; a
// second task is cancelled on B and is cancelled when read on A; tasks/get without the extension is -32021.
import { randomUUID } from "node:crypto";
import { CallToolResultSchema, CreateTaskResultSchema } from "@modelcontextprotocol/sdk/types.js";
import { connect, disconnect, expect, parseFlags, rawMessages, rawPost, run, sleep, textOf, waitForTool } from "./lib.mjs";

const flags = parseFlags({ phase: { type: "string" }, task: { type: "string" }, other: { type: "string" } });
const tool = `${flags.prefix}trigger-long-running-operation`;
const modernVersion = "2026-07-28";
let nextID = 1;

await run(`gateway-tasks ${flags.phase}`, flags.timeout, async (summary) => {
  switch (flags.phase) {
    case "start":
      return start(summary);
    case "finish":
      return finish(summary);
    case "modern":
      return modern(summary);
    default:
      throw new Error(`unknown --phase ${flags.phase}`);
  }
});

async function start(summary) {
  summary.step = "connect";
  const client = await connect(flags.url, "switchboard-e2e-gateway-tasks");
  summary.step = `wait for ${tool}`;
  const listed = await waitForTool(client, tool);
  expect(listed.execution?.taskSupport === "optional", `${tool} execution ${JSON.stringify(listed.execution)}, want taskSupport optional`);
  expect(client.getServerCapabilities()?.tasks?.requests?.tools?.call !== undefined, "the gateway does not offer task-augmented tools/call");
  summary.step = "tools/call with task";
  const created = await client.request(
    { method: "tools/call", params: { name: tool, arguments: { duration: 4, steps: 4 }, task: { ttl: 120_000 }, _meta: { progressToken: "e2e-progress" } } },
    CreateTaskResultSchema,
    { timeout: 5_000 },
  );
  summary.created = created.task;
  expect(created.task?.status === "working" && typeof created.task?.taskId === "string", `CreateTaskResult ${JSON.stringify(created)}`);
  expect(created.task.ttl === 120_000, `ttl ${created.task.ttl}, want the 120000 asked for`);
  summary.taskId = created.task.taskId;
  summary.step = "tasks/list";
  const list = await client.experimental.tasks.listTasks(undefined, { timeout: 5_000 });
  expect(list.tasks.some((t) => t.taskId === created.task.taskId), `tasks/list lacks the session's own task: ${JSON.stringify(list.tasks)}`);
  console.log(JSON.stringify({ taskId: created.task.taskId }));
  summary.step = "disconnect";
  await disconnect(client); // the call goes on without its client
}

async function finish(summary) {
  const taskId = flags.task;
  summary.step = "connect";
  const client = await connect(flags.url, "switchboard-e2e-gateway-tasks-2");
  try {
    summary.step = "tasks/get";
    const seen = new Set();
    let got;
    for (let i = 0; i < 100; i++) {
      got = await client.experimental.tasks.getTask(taskId, { timeout: 5_000 });
      seen.add(`${got.status}${got.statusMessage ? `: ${got.statusMessage}` : ""}`);
      if (got.status === "completed" || (got.statusMessage ?? "").startsWith("progress")) break;
      await sleep(200);
    }
    summary.seen = [...seen];
    expect(got.taskId === taskId, `tasks/get answered for ${got.taskId}`);
    expect([...seen].some((s) => s.startsWith("working") || s === "completed"), `statuses ${summary.seen}`);

    summary.step = "tasks/list";
    // Without auth every caller is the same nobody: a session lists only the tasks it created (start's did).
    const list = await client.experimental.tasks.listTasks(undefined, { timeout: 5_000 });
    expect(!list.tasks.some((t) => t.taskId === taskId), `another session's tasks/list shows ${taskId}: ${JSON.stringify(list.tasks.map((t) => t.taskId))}`);

    summary.step = "tasks/result";
    const result = await client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema, { timeout: 30_000 });
    summary.result = textOf(result);
    expect(/Long running operation completed/.test(summary.result), `tasks/result ${JSON.stringify(result)}`);
    const after = await client.experimental.tasks.getTask(taskId, { timeout: 5_000 });
    expect(after.status === "completed", `tasks/get after the result: ${after.status}`);
  } finally {
    await disconnect(client);
  }
}


// call sends one 2026-07-28 request with the tasks extension declared (or not) and returns its answer.
async function call(url, method, params, { tasks = true, name } = {}) {
  const caps = tasks ? { extensions: { "io.modelcontextprotocol/tasks": {} } } : {};
  const body = {
    jsonrpc: "2.0", id: nextID++, method,
    params: { ...params, _meta: { "io.modelcontextprotocol/protocolVersion": modernVersion, "io.modelcontextprotocol/clientCapabilities": caps, "io.modelcontextprotocol/clientInfo": { name: "e2e", version: "1" } } },
  };
  const headers = { "mcp-method": method };
  if (name !== undefined) headers["mcp-name"] = name;
  const res = await rawPost(url, body, { protocolVersion: modernVersion, headers });
  const { messages } = await rawMessages(res);
  return messages.find((m) => m.id === body.id);
}

async function modern(summary) {
  const a = flags.url;
  const b = flags.other;
  summary.step = "server/discover";
  const disc = await call(a, "server/discover", {});
  expect(disc.result?.capabilities?.extensions?.["io.modelcontextprotocol/tasks"] !== undefined, `server/discover offers no tasks extension: ${JSON.stringify(disc)}`);

  summary.step = "tools/call (task)";
  const created = await call(a, "tools/call", { name: tool, arguments: { duration: 3, steps: 3 } }, { name: tool });
  expect(created.result?.resultType === "task" && typeof created.result.taskId === "string", `tools/call answered ${JSON.stringify(created)}`);
  const id = created.result.taskId;
  summary.created = created.result;

  summary.step = "tasks/get without the extension";
  const refused = await call(b, "tasks/get", { taskId: id }, { tasks: false, name: id });
  expect(refused.error?.code === -32021, `tasks/get without the extension: ${JSON.stringify(refused)}`);

  summary.step = "tasks/get on the other replica";
  let got;
  for (let i = 0; i < 100; i++) {
    got = await call(b, "tasks/get", { taskId: id }, { name: id });
    expect(got.result !== undefined, `tasks/get on the other replica: ${JSON.stringify(got)}`);
    if (got.result.status === "completed") break;
    await sleep(200);
  }
  expect(got.result.status === "completed" && /Long running operation completed/.test(textOf(got.result.result)),
    `the task as the other replica sees it: ${JSON.stringify(got.result)}`);

  summary.step = "cancel on the other replica";
  const second = await call(a, "tools/call", { name: tool, arguments: { duration: 30, steps: 30 } }, { name: tool });
  const id2 = second.result?.taskId;
  expect(typeof id2 === "string", `second tools/call answered ${JSON.stringify(second)}`);
  const ack = await call(b, "tasks/cancel", { taskId: id2 }, { name: id2 });
  expect(ack.result !== undefined && ack.result.taskId === undefined, `tasks/cancel answered ${JSON.stringify(ack)}`);
  const cancelled = await call(a, "tasks/get", { taskId: id2 }, { name: id2 });
  expect(cancelled.result?.status === "cancelled", `the cancelled task read on its own replica: ${JSON.stringify(cancelled)}`);

  summary.step = "an unknown task";
  const unknown = await call(b, "tasks/get", { taskId: randomUUID() }, { name: undefined });
  expect(unknown.error !== undefined, `an unknown task id: ${JSON.stringify(unknown)}`);
}
