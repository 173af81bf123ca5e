// search.mjs: tool search (issue 16), seen by the official TypeScript SDK client on an endpoint in search mode.
// Driven by cmd/switchboard/search_e2e_test.go, which knows the catalog and judges the rankings.
//
//   node search.mjs --mode list    --url URL [--keep NAME,NAME...]
//   node search.mjs --mode search  --url URL --queries JSON [--check-errors]
//   node search.mjs --mode call    --url URL --query Q --tool NAME
//   node search.mjs --mode direct  --url URL --calls JSON
//   node search.mjs --mode changed --url URL --query Q --tool NAME --listed NAME [--wait SECONDS]
//   node search.mjs --mode expose  --url URL --query Q
//
// list:    every tool of the session (all pages): summary.names (in order), summary.tools (the full objects; with
//          --keep, only those named) and summary.pages.
// search:  lists the tools (search_tools and call_tool must be there, search_tools with an outputSchema), then
//          calls search_tools for each of --queries ([{query, limit?, brief?}]) and checks every answer: structuredContent
//          valid against the listed outputSchema (the SDK's Ajv validator), each result exactly {name, title?,
//          description?, inputSchema (an object schema), score (a number)}, scores not increasing, and a text
//          content naming every result. summary.results: [{query, limit, tools: structuredContent.tools}] (with
//          brief, each tool's name and score only).
//          --check-errors: an empty query, limit 0 and limit 51 are refused with -32602.
// call:    search_tools --query must find --tool; call_tool {name: --tool, arguments: {duration 2, steps 4}} with a
//          progress token reports increasing progress up to 4 and the long-running operation's result; then
//          call_tool {duration 30, steps 30} is aborted after its first progress notification and the SDK rejects
//          it as aborted; then a short call_tool on the same session answers.
// direct:  for each of --calls ([{query, name, arguments, via?}]): search_tools {query, limit 50} (summary.found:
//          whether name was among the results), then the tool is called by name, directly (tools/call) or, with
//          via "call_tool", through the meta-tool. summary.calls: [{name, found, ok, isError, text, error}].
// changed: searches --query (summary.before: --tool is not found) and lists (--listed is not listed), prints
//          {"event":"ready"} on a line of its own, then waits (--wait) for notifications/tools/list_changed; after
//          each it lists again, until --listed is listed (summary.list; summary.stale: notifications after which it
//          was not), then searches --query again (summary.after, names and scores).
// expose:  lists (summary.before), searches --query (summary.found), then waits (--wait) for
//          notifications/tools/list_changed and lists again (summary.after), until every found tool is listed, as the
//          search described it; summary.stale: notifications after which they were not listed yet.
//
// Output: one JSON summary line (last line of stdout), as lib.mjs's run prints it.
import { ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { AjvJsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/ajv";
import { connect, disconnect, expect, listAllTools, parseFlags, run, textOf, waitFor } from "./lib.mjs";

const flags = parseFlags({
  mode: { type: "string" },
  queries: { type: "string" },
  "check-errors": { type: "boolean", default: false },
  query: { type: "string" },
  tool: { type: "string" },
  calls: { type: "string" },
  keep: { type: "string" },
  listed: { type: "string" },
  wait: { type: "string", default: "30" },
});

const META = ["search_tools", "call_tool"];

// brief keeps a result's name and score: a summary of many full results would outgrow the pipe before exit.
const brief = (hits) => hits.map((h) => ({ name: h.name, score: h.score }));

// canonical is JSON with sorted keys: the SDK's Zod parse of tools/list reorders an inputSchema's members.
const canonical = (v) => JSON.stringify(v, (_, x) => (x && typeof x === "object" && !Array.isArray(x) ? Object.fromEntries(Object.entries(x).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) : x));
const RESULT_KEYS = new Set(["name", "title", "description", "inputSchema", "score", "reason"]);

// open connects a client; notifications counts the tools/list_changed it hears.
async function open(summary) {
  summary.step = "connect";
  const notifications = [];
  const client = await connect(flags.url, `switchboard-e2e-search-${flags.mode}`, {
    setup: (c) => c.setNotificationHandler(ToolListChangedNotificationSchema, () => notifications.push(Date.now())),
  });
  client.notifications = notifications;
  return client;
}

// listPages lists every tool and counts the pages.
async function listPages(client) {
  const tools = [];
  let cursor;
  for (let page = 1; page <= 1000; page++) {
    const res = await client.listTools(cursor === undefined ? {} : { cursor });
    tools.push(...res.tools);
    cursor = res.nextCursor;
    if (cursor === undefined) return { tools, pages: page };
  }
  throw new Error("tools/list: more than 1000 pages");
}

// searcher lists the session's tools and returns a function that runs and checks one search.
async function searcher(client, summary) {
  summary.step = "tools/list";
  const tools = await listAllTools(client);
  for (const m of META) expect(tools.some((t) => t.name === m), `tools/list lacks the meta-tool ${m}: ${tools.map((t) => t.name).join(", ")}`);
  const def = tools.find((t) => t.name === "search_tools");
  expect(def.outputSchema?.type === "object", `search_tools lists no object outputSchema: ${JSON.stringify(def)}`);
  expect((def.inputSchema?.required ?? []).includes("query"), `search_tools' inputSchema does not require query: ${JSON.stringify(def.inputSchema)}`);
  const validate = new AjvJsonSchemaValidator().getValidator(def.outputSchema);
  return async (query, limit) => {
    summary.step = `search_tools ${JSON.stringify(query)}`;
    const args = limit === undefined ? { query } : { query, limit };
    const res = await client.callTool({ name: "search_tools", arguments: args }, undefined, { timeout: 30_000 });
    expect(!res.isError, `search_tools ${JSON.stringify(args)}: isError: ${textOf(res)}`);
    const sc = res.structuredContent;
    const v = validate(sc);
    expect(v.valid, `search_tools ${JSON.stringify(query)}: structuredContent does not match the listed outputSchema: ${v.errorMessage}: ${JSON.stringify(sc)}`);
    const hits = sc.tools;
    expect(hits.length <= (limit ?? 10), `search_tools ${JSON.stringify(args)}: ${hits.length} results`);
    const text = textOf(res);
    expect(text.length > 0, `search_tools ${JSON.stringify(query)}: no text content`);
    for (let i = 0; i < hits.length; i++) {
      const h = hits[i];
      for (const k of Object.keys(h)) expect(RESULT_KEYS.has(k), `search_tools ${JSON.stringify(query)}: result ${h.name} has an unexpected member ${k}`);
      expect(typeof h.name === "string" && h.name !== "", `result ${i} has no name: ${JSON.stringify(h)}`);
      expect(!META.includes(h.name), `a meta-tool is among the results: ${h.name}`);
      expect(h.inputSchema?.type === "object", `result ${h.name}: inputSchema ${JSON.stringify(h.inputSchema)}`);
      expect(typeof h.score === "number" && Number.isFinite(h.score), `result ${h.name}: score ${h.score}`);
      expect(h.reason === undefined || (typeof h.reason === "string" && h.reason !== ""), `result ${h.name}: reason ${JSON.stringify(h.reason)}`);
      expect(i === 0 || h.score <= hits[i - 1].score, `scores increase at ${i}: ${hits.map((x) => x.score).join(", ")}`);
      expect(text.includes(h.name), `the text content does not name ${h.name}: ${text}`);
    }
    return hits;
  };
}

async function list(summary) {
  const client = await open(summary);
  try {
    summary.step = "tools/list";
    const { tools, pages } = await listPages(client);
    const keep = flags.keep === undefined ? undefined : new Set(flags.keep.split(","));
    summary.names = tools.map((t) => t.name);
    summary.tools = keep ? tools.filter((t) => keep.has(t.name)) : tools;
    summary.pages = pages;
  } finally {
    await disconnect(client);
  }
}

async function search(summary) {
  const queries = JSON.parse(flags.queries ?? "[]");
  expect(queries.length > 0, "--mode search needs --queries [{query, limit?}]");
  const client = await open(summary);
  try {
    const find = await searcher(client, summary);
    summary.results = [];
    for (const q of queries) {
      const hits = await find(q.query, q.limit);
      summary.results.push({ query: q.query, limit: q.limit, tools: q.brief ? brief(hits) : hits });
    }
    if (flags["check-errors"]) {
      summary.refusals = [];
      for (const args of [{ query: "  " }, { query: "add two numbers", limit: 0 }, { query: "add two numbers", limit: 51 }]) {
        summary.step = `search_tools ${JSON.stringify(args)} (refused)`;
        let err;
        let res;
        try {
          res = await client.callTool({ name: "search_tools", arguments: args }, undefined, { timeout: 15_000 });
        } catch (e) {
          err = e;
        }
        expect(err, `search_tools ${JSON.stringify(args)} was answered: ${JSON.stringify(res)}`);
        expect(err.code === -32602, `search_tools ${JSON.stringify(args)}: code ${err.code}, want -32602: ${err.message}`);
        summary.refusals.push({ args, message: String(err.message) });
      }
    }
  } finally {
    await disconnect(client);
  }
}

async function call(summary) {
  expect(flags.query && flags.tool, "--mode call needs --query and --tool");
  const client = await open(summary);
  try {
    const find = await searcher(client, summary);
    const hits = await find(flags.query);
    summary.found = hits.map((h) => h.name);
    expect(summary.found.includes(flags.tool), `search_tools ${JSON.stringify(flags.query)} did not find ${flags.tool}: ${summary.found.join(", ")}`);

    summary.step = "call_tool with progress";
    const progress = [];
    let resolved = false;
    let late = 0;
    const result = await client.callTool({ name: "call_tool", arguments: { name: flags.tool, arguments: { duration: 2, steps: 4 } } }, undefined, {
      timeout: 30_000,
      onprogress: (p) => {
        if (resolved) late++;
        progress.push(p.progress);
      },
    });
    resolved = true;
    summary.progress = progress;
    const want = "Long running operation completed. Duration: 2 seconds, Steps: 4.";
    expect(!result.isError && textOf(result) === want, `call_tool: want ${JSON.stringify(want)}, got ${JSON.stringify(result)}`);
    expect(progress.length >= 3, `call_tool: ${progress.length} progress notification(s), want at least 3`);
    for (let i = 1; i < progress.length; i++) expect(progress[i] > progress[i - 1], `call_tool: progress not increasing: ${JSON.stringify(progress)}`);
    expect(progress.at(-1) === 4, `call_tool: last progress ${progress.at(-1)}, want 4`);
    expect(late === 0, `call_tool: ${late} progress notification(s) after the result`);

    summary.step = "call_tool, then cancel";
    const controller = new AbortController();
    let aborted = false;
    const pending = client.callTool({ name: "call_tool", arguments: { name: flags.tool, arguments: { duration: 30, steps: 30 } } }, undefined, {
      signal: controller.signal,
      timeout: 60_000,
      onprogress: () => {
        if (!aborted) {
          aborted = true;
          controller.abort();
        }
      },
    });
    let outcome;
    try {
      outcome = { resolved: true, text: textOf(await pending) };
    } catch (err) {
      outcome = { error: err };
    }
    expect(aborted, "no progress notification arrived, so the call_tool was never aborted");
    expect(!outcome.resolved, `the aborted call_tool resolved: ${outcome.text}`);
    const msg = String(outcome.error?.message ?? outcome.error);
    summary.rejection = { code: outcome.error?.code, message: msg };
    expect(/AbortError|aborted/i.test(msg) || outcome.error?.name === "AbortError", `call_tool rejected, but not as aborted: ${msg}`);

    summary.step = "call_tool after the cancel";
    const again = await client.callTool({ name: "call_tool", arguments: { name: flags.tool, arguments: { duration: 0.2, steps: 1 } } }, undefined, { timeout: 15_000 });
    const want2 = "Long running operation completed. Duration: 0.2 seconds, Steps: 1.";
    expect(textOf(again) === want2, `call_tool after the cancel: want ${JSON.stringify(want2)}, got ${JSON.stringify(again)}`);
  } finally {
    await disconnect(client);
  }
}

async function direct(summary) {
  const calls = JSON.parse(flags.calls ?? "[]");
  expect(calls.length > 0, "--mode direct needs --calls [{query, name, arguments, via?}]");
  const client = await open(summary);
  try {
    const find = await searcher(client, summary);
    summary.calls = [];
    for (const c of calls) {
      const hits = await find(c.query, 50);
      const entry = { name: c.name, via: c.via ?? "tools/call", found: hits.some((h) => h.name === c.name) };
      summary.step = `${entry.via} ${c.name}`;
      const req = entry.via === "call_tool"
        ? { name: "call_tool", arguments: { name: c.name, arguments: c.arguments } }
        : { name: c.name, arguments: c.arguments };
      try {
        const r = await client.callTool(req, undefined, { timeout: 15_000 });
        Object.assign(entry, { ok: !r.isError, isError: !!r.isError, text: textOf(r) });
      } catch (err) {
        Object.assign(entry, { ok: false, error: { code: err.code, message: String(err.message) } });
      }
      summary.calls.push(entry);
    }
  } finally {
    await disconnect(client);
  }
}

async function changed(summary) {
  expect(flags.query && flags.tool && flags.listed, "--mode changed needs --query, --tool and --listed");
  const waitMs = Number(flags.wait) * 1000;
  const client = await open(summary);
  try {
    const find = await searcher(client, summary);
    const names = async () => (await find(flags.query, 50)).map((h) => h.name);
    summary.before = await names();
    expect(!summary.before.includes(flags.tool), `${flags.tool} is found before it exists: ${summary.before.join(", ")}`);
    const listedBefore = (await listAllTools(client)).map((t) => t.name);
    expect(!listedBefore.includes(flags.listed), `${flags.listed} is listed before it exists`);
    // The harness changes the upstream's tools when it reads this line.
    console.log(JSON.stringify({ event: "ready", session: client.transportRef.sessionId }));
    summary.stale = 0;
    let seen = 0;
    const deadline = Date.now() + waitMs;
    for (;;) {
      summary.step = "wait for notifications/tools/list_changed";
      const left = deadline - Date.now();
      expect(left > 0 && (await waitFor(() => client.notifications.length > seen, left)),
        `${flags.listed} not listed after ${client.notifications.length} notifications/tools/list_changed within ${waitMs} ms (${summary.stale} stale)`);
      seen = client.notifications.length;
      summary.step = "tools/list after list_changed";
      const list = (await listAllTools(client)).map((t) => t.name);
      if (list.includes(flags.listed)) {
        summary.list = list;
        break;
      }
      summary.stale++;
    }
    summary.step = "search after list_changed";
    summary.after = brief(await find(flags.query, 50));
    summary.notifications = client.notifications.length;
  } finally {
    await disconnect(client);
  }
}

async function expose(summary) {
  expect(flags.query, "--mode expose needs --query");
  const client = await open(summary);
  try {
    const find = await searcher(client, summary);
    summary.before = (await listAllTools(client)).map((t) => t.name);
    const heard = client.notifications.length;
    const hits = await find(flags.query);
    summary.found = hits;
    expect(hits.length > 0, `search_tools ${JSON.stringify(flags.query)} found nothing`);
    // After each notification, list again until every found tool is there (a notification for another reason
    // would come with an unchanged list: counted as stale).
    summary.stale = 0;
    let seen = heard;
    const deadline = Date.now() + Number(flags.wait) * 1000;
    let after;
    for (;;) {
      summary.step = "wait for notifications/tools/list_changed";
      const left = deadline - Date.now();
      expect(left > 0 && (await waitFor(() => client.notifications.length > seen, left)),
        `no notifications/tools/list_changed listing the found tools within ${flags.wait} s of a search that found ${hits.length} (${summary.stale} stale)`);
      seen = client.notifications.length;
      summary.step = "tools/list after";
      after = await listAllTools(client);
      if (hits.every((h) => after.some((t) => t.name === h.name))) break;
      summary.stale++;
    }
    summary.after = after.map((t) => t.name);
    summary.notifications = client.notifications.length - heard;
    for (const h of hits) {
      const t = after.find((x) => x.name === h.name);
      expect(canonical(t.inputSchema) === canonical(h.inputSchema) && (t.description ?? "") === (h.description ?? ""),
        `listed ${h.name} differs from the search's: ${JSON.stringify(t)} vs ${JSON.stringify(h)}`);
    }
  } finally {
    await disconnect(client);
  }
}

const modes = { list, search, call, direct, changed, expose };
await run(`search-${flags.mode}`, flags.timeout, async (summary) => {
  const body = modes[flags.mode];
  expect(body, `--mode must be one of ${Object.keys(modes).join(", ")}`);
  await body(summary);
});
