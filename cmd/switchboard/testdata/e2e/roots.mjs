// roots.mjs: roots/list from the upstream reaches this client, and
// notifications/roots/list_changed reaches the upstream.
//
//   node roots.mjs --url URL [--prefix everything__]
//
// The client declares `roots: {listChanged: true}` and answers roots/list with
// its current list (two file:// roots). <prefix>get-roots-list must show both.
// Then the list changes (one new root), the client sends
// notifications/roots/list_changed, the upstream asks roots/list again, and
// get-roots-list must show the new list (polled, bounded).
import { randomUUID } from "node:crypto";
import { ListRootsRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { ExpectationError, connect, disconnect, expect, parseFlags, run, sleep, textOf, waitFor, waitForTool } from "./lib.mjs";

const flags = parseFlags();

await run("roots", flags.timeout, async (summary) => {
  const id = randomUUID().slice(0, 8);
  let roots = [
    { uri: `file:///tmp/switchboard-e2e-${id}/alpha`, name: `alpha-${id}` },
    { uri: `file:///tmp/switchboard-e2e-${id}/beta`, name: `beta-${id}` },
  ];
  let listCalls = 0;
  const started = Date.now();
  summary.step = "connect";
  const client = await connect(flags.url, "switchboard-e2e-roots", {
    capabilities: { roots: { listChanged: true } },
    setup: (c) =>
      c.setRequestHandler(ListRootsRequestSchema, async (_req, extra) => {
        listCalls++;
        // Kept in the summary, so a hang shows which roots/list requests arrived.
        (summary.rootsRequests ??= []).push({ id: extra.requestId, atMs: Date.now() - started });
        return { roots };
      }),
  });
  try {
    const tool = `${flags.prefix}get-roots-list`;
    summary.step = `wait for ${tool}`;
    await waitForTool(client, tool);

    summary.step = `call ${tool} (first list)`;
    let first;
    try {
      first = textOf(await client.callTool({ name: tool, arguments: {} }, undefined, { timeout: 15_000 }));
    } catch (err) {
      // server-everything asks roots/list without tying it to the tool call (so
      // on an HTTP upstream it goes on the standalone GET stream); a request
      // that never reaches this client leaves the tool waiting.
      throw new ExpectationError(`${tool} did not answer (${err?.message ?? err}); this client answered ${listCalls} roots/list request(s) meanwhile`);
    }
    for (const r of roots) {
      expect(first.includes(r.uri) && first.includes(r.name), `first list: ${r.uri} (${r.name}) missing from ${JSON.stringify(first)}`);
    }
    expect(first.includes("(2 total)"), `first list: want "(2 total)": ${JSON.stringify(first)}`);
    expect(listCalls >= 1, "the upstream never asked this client for roots/list");
    summary.first = roots.map((r) => r.name);
    summary.listCallsBeforeChange = listCalls;

    summary.step = "roots changed";
    roots = [{ uri: `file:///tmp/switchboard-e2e-${id}/gamma`, name: `gamma-${id}` }];
    const before = listCalls;
    await client.sendRootsListChanged();
    const asked = await waitFor(() => listCalls > before, 10_000);
    expect(asked, "after notifications/roots/list_changed the upstream did not ask roots/list again within 10 s");

    summary.step = `call ${tool} (new list)`;
    let second = "";
    const deadline = Date.now() + 5_000;
    do {
      second = textOf(await client.callTool({ name: tool, arguments: {} }, undefined, { timeout: 15_000 }));
      if (second.includes(roots[0].uri)) break;
      await sleep(100);
    } while (Date.now() < deadline);
    expect(second.includes(roots[0].uri) && second.includes("(1 total)"), `new list: want only ${roots[0].uri}: ${JSON.stringify(second)}`);
    expect(!second.includes("/alpha"), `new list still shows the old roots: ${JSON.stringify(second)}`);
    summary.second = roots.map((r) => r.name);
    summary.listCalls = listCalls;
  } finally {
    await disconnect(client);
  }
});
