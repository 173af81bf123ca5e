// namespacing.mjs: resource URIs namespaced, no silent winner (issue 19, item 4).
//
//   node namespacing.mjs --url URL --a mem-a --b mem-b [--templates everything,everything-http]
//
// The gateway fronts two server-memory instances (upstreams --a and --b, each with its own memory file), which
// both offer memory://knowledge-graph, and with --templates two upstreams that both offer server-everything's
// resource templates. With resourceNamespacing: auto, expected:
//   1. resources/list (every page) offers <a>+memory://knowledge-graph and <b>+memory://knowledge-graph, not the
//      URI alone;
//   2. a subscription to <a>'s, then an entity created through <a>'s tool: notifications/resources/updated for
//      <a>+memory://knowledge-graph, and none for <b>'s; each read returns its own graph (the entity in <a>'s only,
//      and one created through <b> in <b>'s only), its contents named as the client read them;
//   3. reading memory://knowledge-graph alone is refused, naming both;
//   4. with --templates: resources/templates/list shows each template once per upstream, namespaced, none plain;
//      completion on one namespaced template and a read of a URI expanded from it answer from that upstream.

import { ResourceUpdatedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { connect, disconnect, expect, parseFlags, run, waitFor } from "./lib.mjs";

const flags = parseFlags({ a: { type: "string" }, b: { type: "string" }, templates: { type: "string" } });
const GRAPH = "memory://knowledge-graph";

/** Every item of a paginated list method of the client. */
async function listAll(call, key) {
  const out = [];
  let cursor;
  for (let page = 0; page < 1000; page++) {
    const res = await call(cursor === undefined ? {} : { cursor });
    out.push(...res[key]);
    cursor = res.nextCursor;
    if (cursor === undefined) return out;
  }
  throw new Error(`${key}: more than 1000 pages`);
}

await run("namespacing", flags.timeout, async (summary) => {
  expect(flags.a && flags.b, "--a and --b name the two memory upstreams");
  const updates = [];
  let client;
  try {
    summary.step = "connect";
    client = await connect(flags.url, "namespacing", {
      setup: (c) => c.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => updates.push(n.params.uri)),
    });
    const inA = `${flags.a}+${GRAPH}`;
    const inB = `${flags.b}+${GRAPH}`;

    summary.step = "resources/list";
    const resources = (await listAll((p) => client.listResources(p), "resources")).map((r) => r.uri);
    expect(resources.includes(inA) && resources.includes(inB), `resources/list lacks ${inA} or ${inB}: ${resources.join(", ")}`);
    expect(!resources.includes(GRAPH), `resources/list still offers ${GRAPH} itself: ${resources.join(", ")}`);
    expect(resources.filter((u) => u === inA).length === 1, `${inA} is listed more than once`);
    summary.resources = resources.length;

    summary.step = `subscribe ${inA}`;
    await client.subscribeResource({ uri: inA });
    const alpha = `alpha-${Date.now().toString(36)}`;
    const beta = `beta-${Date.now().toString(36)}`;
    summary.step = "create an entity through a";
    let res = await client.callTool({
      name: `${flags.a}__create_entities`,
      arguments: { entities: [{ name: alpha, entityType: "test", observations: ["made through a"] }] },
    });
    expect(!res.isError, `${flags.a}__create_entities: ${JSON.stringify(res)}`);
    expect(await waitFor(() => updates.includes(inA), 10_000), `no notifications/resources/updated for ${inA} within 10 s (got ${JSON.stringify(updates)})`);
    expect(!updates.includes(inB) && !updates.includes(GRAPH), `updates for what was not subscribed to: ${JSON.stringify(updates)}`);

    summary.step = "create an entity through b";
    res = await client.callTool({
      name: `${flags.b}__create_entities`,
      arguments: { entities: [{ name: beta, entityType: "test", observations: ["made through b"] }] },
    });
    expect(!res.isError, `${flags.b}__create_entities: ${JSON.stringify(res)}`);

    summary.step = "read both graphs";
    const readA = await client.readResource({ uri: inA });
    const readB = await client.readResource({ uri: inB });
    expect(readA.contents?.[0]?.uri === inA, `read ${inA}: contents named ${readA.contents?.[0]?.uri}`);
    expect(readB.contents?.[0]?.uri === inB, `read ${inB}: contents named ${readB.contents?.[0]?.uri}`);
    const textA = readA.contents[0].text;
    const textB = readB.contents[0].text;
    expect(textA.includes(alpha) && !textA.includes(beta), `${inA} holds ${textA}`);
    expect(textB.includes(beta) && !textB.includes(alpha), `${inB} holds ${textB}`);
    expect(!updates.includes(inB), `an update for ${inB}, which was not subscribed to`);
    await client.unsubscribeResource({ uri: inA });

    summary.step = `read ${GRAPH} alone`;
    let refusal;
    try {
      await client.readResource({ uri: GRAPH });
    } catch (err) {
      refusal = String(err?.message ?? err);
    }
    expect(refusal, `${GRAPH} was read without naming an upstream`);
    expect(refusal.includes(inA) && refusal.includes(inB), `the refusal names neither: ${refusal}`);
    summary.refusal = refusal;

    if (flags.templates) {
      const [x, y] = flags.templates.split(",");
      summary.step = "resources/templates/list";
      const templates = (await listAll((p) => client.listResourceTemplates(p), "resourceTemplates")).map((t) => t.uriTemplate);
      const text = "demo://resource/dynamic/text/{resourceId}";
      for (const want of [`${x}+${text}`, `${y}+${text}`]) {
        expect(templates.filter((t) => t === want).length === 1, `${want} is not listed once: ${templates.join(", ")}`);
      }
      expect(!templates.includes(text), `${text} is listed without a namespace: ${templates.join(", ")}`);
      summary.templates = templates.length;

      summary.step = `complete ${y}+${text}`;
      const done = await client.complete({ ref: { type: "ref/resource", uri: `${y}+${text}` }, argument: { name: "resourceId", value: "7" } });
      expect(done.completion?.values?.includes("7"), `completion: ${JSON.stringify(done)}`);

      summary.step = `read ${y}+demo://resource/dynamic/text/7`;
      const uri = `${y}+demo://resource/dynamic/text/7`;
      const read = await client.readResource({ uri });
      expect(read.contents?.[0]?.uri === uri, `read ${uri}: ${JSON.stringify(read)}`);
    }
  } finally {
    await disconnect(client);
  }
});
