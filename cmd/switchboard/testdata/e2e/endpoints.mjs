// endpoints.mjs: team endpoints and overrides (issue 15), seen by the official TypeScript SDK client.
// Driven by cmd/switchboard/catalog_e2e_test.go, which computes the expected views and compares.
//
//   node endpoints.mjs --mode list    --url URL [--transport streamable|sse|stdio] [--bin B --config F --endpoint E]
//   node endpoints.mjs --mode rename  --url URL --tool NAME --gone NAME
//   node endpoints.mjs --mode preset  --url URL --tool NAME --argument ARG --value VALUE
//   node endpoints.mjs --mode reload  --url URL [--reload-wait SECONDS]
//
// list:   lists every tool (all pages) over the chosen transport and reports them (summary.tools, the full
//         tool objects). sse connects the SDK's SSEClientTransport to --url (a /mcp/<name>/sse path) as a
//         2024-11-05 client; stdio launches `B stdio --config F --endpoint E` with StdioClientTransport.
// rename: expects --tool listed and --gone not, and a call by --gone to fail; calls --tool {duration 2, steps 4} with a progress token and
//         asserts increasing progress up to 4 and the result; then calls it {duration 30, steps 30}, aborts
//         after the first progress notification and asserts the SDK rejects as aborted within 2 s; then a
//         following short call on the same session still answers.
// preset: expects --tool's listed inputSchema to lack --argument (in properties and required); a call without it
//         answers "Echo: <value>"; a call that sends it is refused with -32602 whose message names it.
// reload: connects, lists, prints {"event":"ready",...} on a line of its own, then waits (--reload-wait) for
//         notifications/tools/list_changed; after each it lists again, until the view differs from the first.
//         Reports both views, the session id before and after, how many initialize requests it sent, and the
//         notifications after which the view had not changed (stale).
//
// Output: one JSON summary line (last line of stdout), as lib.mjs's run prints it.
import { randomUUID } from "node:crypto";
import { SSEClientTransport } from "@modelcontextprotocol/sdk/client/sse.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { connect, disconnect, expect, listAllTools, parseFlags, run, textOf, waitFor } from "./lib.mjs";

const flags = parseFlags(
  {
    mode: { type: "string" },
    transport: { type: "string", default: "streamable" },
    bin: { type: "string" },
    config: { type: "string" },
    endpoint: { type: "string" },
    tool: { type: "string" },
    gone: { type: "string" },
    argument: { type: "string" },
    value: { type: "string" },
    "reload-wait": { type: "string", default: "30" },
  },
  { requireUrl: false },
);
const LEGACY = "2024-11-05";

// open connects a client over the chosen transport; initializes counts the initialize requests it sends.
async function open(summary, setup) {
  let transport;
  let stderr = "";
  switch (flags.transport) {
    case "streamable":
      transport = new StreamableHTTPClientTransport(new URL(flags.url));
      break;
    case "sse":
      transport = new SSEClientTransport(new URL(flags.url));
      break;
    case "stdio": {
      expect(flags.bin && flags.config && flags.endpoint, "--transport stdio needs --bin, --config and --endpoint");
      transport = new StdioClientTransport({
        command: flags.bin,
        args: ["stdio", "--config", flags.config, "--endpoint", flags.endpoint],
        stderr: "pipe",
      });
      transport.stderr?.on("data", (d) => {
        stderr += d.toString();
        if (stderr.length > 20_000) stderr = stderr.slice(-20_000);
      });
      break;
    }
    default:
      expect(false, `unknown --transport ${flags.transport}`);
  }
  const counts = { initialize: 0 };
  const send = transport.send.bind(transport);
  transport.send = async (message, options) => {
    if (message.method === "initialize") {
      counts.initialize++;
      if (flags.transport === "sse") message = { ...message, params: { ...message.params, protocolVersion: LEGACY } };
    }
    return send(message, options);
  };
  let client;
  try {
    client = await connect(flags.url, `switchboard-e2e-endpoints-${flags.mode}`, { transport, setup });
  } catch (err) {
    throw new Error(`connect over ${flags.transport}: ${err?.message ?? err}${stderr ? `\n--- switchboard stdio stderr:\n${stderr.slice(-3000)}` : ""}`);
  }
  client.counts = counts;
  summary.transport = flags.transport;
  summary.protocolVersion = client.transportRef.protocolVersion ?? transport._protocolVersion;
  return client;
}

async function close(client) {
  await disconnect(client);
}

const names = (tools) => tools.map((t) => t.name).sort();

async function list(summary) {
  summary.step = "connect";
  const client = await open(summary);
  try {
    summary.step = "tools/list";
    const tools = await listAllTools(client);
    summary.tools = tools;
    summary.names = names(tools);
  } finally {
    await close(client);
  }
}

async function rename(summary) {
  expect(flags.tool && flags.gone, "--mode rename needs --tool and --gone");
  summary.step = "connect";
  const client = await open(summary);
  try {
    summary.step = "tools/list";
    const tools = await listAllTools(client);
    const listed = tools.find((t) => t.name === flags.tool);
    expect(listed, `tools/list lacks the renamed ${flags.tool}: ${names(tools).join(", ")}`);
    expect(!tools.some((t) => t.name === flags.gone), `tools/list still offers the old name ${flags.gone}`);
    summary.description = listed.description;

    summary.step = "call by the old name";
    let oldName;
    try {
      const r = await client.callTool({ name: flags.gone, arguments: { duration: 0.1, steps: 1 } }, undefined, { timeout: 15_000 });
      oldName = { answered: r.isError ? "isError" : "ok", text: textOf(r) };
    } catch (err) {
      oldName = { code: err.code, message: String(err.message) };
    }
    summary.oldName = oldName;
    expect(oldName.answered !== "ok", `a call by the old name ${flags.gone} succeeded: ${oldName.text}`);

    summary.step = "call with progress";
    const progress = [];
    let resolved = false;
    let late = 0;
    const t0 = Date.now();
    const result = await client.callTool({ name: flags.tool, arguments: { duration: 2, steps: 4 } }, undefined, {
      timeout: 30_000,
      onprogress: (p) => {
        if (resolved) late++;
        progress.push(p.progress);
      },
    });
    resolved = true;
    summary.callMs = Date.now() - t0;
    summary.progress = progress;
    const want = "Long running operation completed. Duration: 2 seconds, Steps: 4.";
    expect(!result.isError && textOf(result) === want, `result: want ${JSON.stringify(want)}, got ${JSON.stringify(textOf(result))}`);
    expect(progress.length >= 3, `got ${progress.length} progress notification(s), want at least 3`);
    for (let i = 1; i < progress.length; i++) expect(progress[i] > progress[i - 1], `progress not increasing: ${JSON.stringify(progress)}`);
    expect(progress.at(-1) === 4, `last progress ${progress.at(-1)}, want 4`);
    expect(late === 0, `${late} progress notification(s) after the result`);

    summary.step = "call, then cancel";
    const controller = new AbortController();
    let abortedAt;
    const call = client.callTool({ name: flags.tool, arguments: { duration: 30, steps: 30 } }, undefined, {
      signal: controller.signal,
      timeout: 60_000,
      onprogress: () => {
        if (abortedAt === undefined) {
          abortedAt = Date.now();
          controller.abort();
        }
      },
    });
    let outcome;
    try {
      outcome = { resolved: true, text: textOf(await call) };
    } catch (err) {
      outcome = { error: err };
    }
    const settledAt = Date.now();
    expect(abortedAt !== undefined, "no progress notification arrived, so the call was never aborted");
    expect(!outcome.resolved, `the call resolved after abort: ${outcome.text}`);
    const msg = String(outcome.error?.message ?? outcome.error);
    summary.rejection = { code: outcome.error?.code, message: msg };
    expect(/AbortError|aborted/i.test(msg) || outcome.error?.name === "AbortError", `call rejected, but not as aborted: ${msg}`);
    summary.rejectAfterAbortMs = settledAt - abortedAt;
    expect(settledAt - abortedAt <= 2000, `rejected ${settledAt - abortedAt} ms after abort, want <= 2000`);

    summary.step = "call after cancel";
    const again = await client.callTool({ name: flags.tool, arguments: { duration: 0.2, steps: 1 } }, undefined, { timeout: 15_000 });
    const want2 = "Long running operation completed. Duration: 0.2 seconds, Steps: 1.";
    expect(textOf(again) === want2, `call after cancel: want ${JSON.stringify(want2)}, got ${JSON.stringify(textOf(again))}`);
    summary.lateProgressErrors = client.errors.filter((e) => e.includes("unknown token")).length;
  } finally {
    await close(client);
  }
}

async function preset(summary) {
  expect(flags.tool && flags.argument && flags.value !== undefined, "--mode preset needs --tool, --argument and --value");
  summary.step = "connect";
  const client = await open(summary);
  try {
    summary.step = "tools/list";
    const tools = await listAllTools(client);
    const tool = tools.find((t) => t.name === flags.tool);
    expect(tool, `tools/list lacks ${flags.tool}: ${names(tools).join(", ")}`);
    summary.inputSchema = tool.inputSchema;
    expect(!(flags.argument in (tool.inputSchema?.properties ?? {})), `inputSchema.properties still has the preset ${flags.argument}: ${JSON.stringify(tool.inputSchema)}`);
    expect(!(tool.inputSchema?.required ?? []).includes(flags.argument), `inputSchema.required still names the preset ${flags.argument}: ${JSON.stringify(tool.inputSchema)}`);

    summary.step = "call without the preset";
    const r = await client.callTool({ name: flags.tool, arguments: {} }, undefined, { timeout: 15_000 });
    expect(!r.isError && textOf(r) === `Echo: ${flags.value}`, `call without ${flags.argument}: got ${JSON.stringify(r)}`);

    summary.step = "call that sends the preset";
    const mine = `client ${randomUUID()}`;
    let err;
    let res;
    try {
      res = await client.callTool({ name: flags.tool, arguments: { [flags.argument]: mine } }, undefined, { timeout: 15_000 });
    } catch (e) {
      err = e;
    }
    expect(err, `a call that sends the preset ${flags.argument} was answered: ${JSON.stringify(res)}`);
    summary.refusal = { code: err.code, message: String(err.message) };
    expect(err.code === -32602, `refused with code ${err.code}, want -32602: ${err.message}`);
    expect(String(err.message).includes(flags.argument), `the -32602 message does not name ${flags.argument}: ${err.message}`);
    expect(!String(err.message).includes(mine), `the refusal echoes the client's value: ${err.message}`);

    summary.step = "call after the refusal";
    const r2 = await client.callTool({ name: flags.tool }, undefined, { timeout: 15_000 });
    expect(textOf(r2) === `Echo: ${flags.value}`, `call after the refusal: got ${JSON.stringify(textOf(r2))}`);
  } finally {
    await close(client);
  }
}

async function reload(summary) {
  const waitMs = Number(flags["reload-wait"]) * 1000;
  const notifications = [];
  summary.step = "connect";
  const client = await open(summary, (c) =>
    c.setNotificationHandler(ToolListChangedNotificationSchema, () => notifications.push(Date.now())),
  );
  try {
    const session = client.transportRef.sessionId;
    expect(session, "the gateway gave no Mcp-Session-Id");
    summary.step = "tools/list before";
    const before = names(await listAllTools(client));
    summary.before = before;
    summary.sessionBefore = session;
    // The harness rewrites the config when it reads this line.
    console.log(JSON.stringify({ event: "ready", session, tools: before }));

    summary.step = "wait for notifications/tools/list_changed";
    summary.stale = 0;
    let seen = 0;
    let after;
    const deadline = Date.now() + waitMs;
    for (;;) {
      const left = deadline - Date.now();
      expect(left > 0 && (await waitFor(() => notifications.length > seen, left)),
        `no notifications/tools/list_changed with a new view within ${waitMs} ms (${notifications.length} seen, ${summary.stale} stale)`);
      seen = notifications.length;
      const now = await listAllTools(client);
      if (JSON.stringify(names(now)) !== JSON.stringify(before)) {
        after = now;
        break;
      }
      summary.stale++;
    }
    summary.notifications = notifications.length;
    summary.after = after;
    summary.sessionAfter = client.transportRef.sessionId;
    summary.initializeRequests = client.counts.initialize;
    summary.step = "ping on the same session";
    await client.ping();
  } finally {
    await close(client);
  }
}

const modes = { list, rename, preset, reload };
await run(`endpoints-${flags.mode}`, flags.timeout, async (summary) => {
  const body = modes[flags.mode];
  expect(body, `--mode must be one of ${Object.keys(modes).join(", ")}`);
  expect(flags.url || flags.transport === "stdio", "--url is required");
  await body(summary);
});
