// tasks.mjs: 2025-11-25 task-augmented tools/call through the gateway.
//
//   node tasks.mjs --url URL [--prefix everything__]
//
// Calls <prefix>simulate-research-query {topic} (taskSupport "required") with
// params.task {ttl}, via the SDK's raw request with CreateTaskResultSchema.
// Asserts: the initialize result declares tasks.requests.tools.call; the
// tool's execution.taskSupport is offered; the CreateTaskResult carries a
// taskId and status working; tasks/get with that id answers (same id);
// tasks/list contains it; tasks/result blocks until the end and returns the
// research report for the topic; tasks/get then says completed. The task id
// must round-trip whatever the gateway turns it into.
import { randomUUID } from "node:crypto";
import { CallToolResultSchema, CreateTaskResultSchema } from "@modelcontextprotocol/sdk/types.js";
import { ExpectationError, connect, disconnect, expect, parseFlags, run, textOf, waitForTool } from "./lib.mjs";

const flags = parseFlags();

await run("tasks", flags.timeout, async (summary) => {
  summary.problems = [];
  try {
    await body(summary);
  } catch (err) {
    if (summary.problems.length === 0) throw err;
    throw new ExpectationError([...summary.problems, `then: ${err?.message ?? err}`].join("; "));
  }
  expect(summary.problems.length === 0, summary.problems.join("; "));
  delete summary.problems;
});

async function body(summary) {
  summary.step = "connect";
  const client = await connect(flags.url, "switchboard-e2e-tasks");
  try {
    const caps = client.getServerCapabilities();
    summary.serverTasks = caps?.tasks;
    // A missing capability is reported together with whatever happens next,
    // so one run shows how far the task flow gets.
    if (caps?.tasks?.requests?.tools?.call === undefined) {
      summary.problems.push(`server capabilities lack tasks.requests.tools.call (so a client must not task-augment tools/call): ${JSON.stringify(caps)}`);
    }

    const name = `${flags.prefix}simulate-research-query`;
    summary.step = `wait for ${name}`;
    const tool = await waitForTool(client, name);
    summary.taskSupport = tool.execution?.taskSupport;
    expect(tool.execution?.taskSupport === "required" || tool.execution?.taskSupport === "optional",
      `${name} execution.taskSupport ${JSON.stringify(tool.execution?.taskSupport)}, want required/optional`);

    const topic = `switchboard e2e ${randomUUID().slice(0, 8)}`;
    summary.step = `tools/call ${name} with task`;
    const created = await client.request(
      { method: "tools/call", params: { name, arguments: { topic }, task: { ttl: 60_000 } } },
      CreateTaskResultSchema,
      { timeout: 15_000 },
    );
    const taskId = created.task?.taskId;
    summary.taskId = taskId;
    summary.created = { status: created.task?.status, ttl: created.task?.ttl, pollInterval: created.task?.pollInterval };
    expect(typeof taskId === "string" && taskId !== "", `CreateTaskResult has no taskId: ${JSON.stringify(created)}`);
    expect(["working", "submitted"].includes(created.task.status) || created.task.status === "completed",
      `CreateTaskResult status ${created.task.status}`);

    summary.step = "tasks/get";
    const got = await client.experimental.tasks.getTask(taskId, { timeout: 10_000 });
    expect(got.taskId === taskId, `tasks/get taskId ${JSON.stringify(got.taskId)}, want ${JSON.stringify(taskId)}`);
    summary.get = { status: got.status, statusMessage: got.statusMessage };

    summary.step = "tasks/list";
    const listed = [];
    let cursor;
    for (let page = 0; page < 100; page++) {
      const res = await client.experimental.tasks.listTasks(cursor, { timeout: 10_000 });
      listed.push(...res.tasks);
      cursor = res.nextCursor;
      if (cursor === undefined) break;
    }
    summary.listed = listed.length;
    expect(listed.some((t) => t.taskId === taskId), `tasks/list does not contain ${taskId}: ${JSON.stringify(listed.map((t) => t.taskId))}`);

    summary.step = "tasks/result";
    const result = await client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema, { timeout: 30_000 });
    const text = textOf(result);
    expect(!result.isError, `tasks/result isError: ${text}`);
    expect(text.includes(`# Research Report: ${topic}`), `tasks/result is not the report for ${JSON.stringify(topic)}: ${JSON.stringify(text.slice(0, 200))}`);
    summary.result = "report";

    summary.step = "tasks/get after result";
    const done = await client.experimental.tasks.getTask(taskId, { timeout: 10_000 });
    expect(done.taskId === taskId && done.status === "completed", `tasks/get after result: ${JSON.stringify(done)}, want completed`);
    summary.finalStatus = done.status;
  } finally {
    await disconnect(client);
  }
}
