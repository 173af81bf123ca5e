// childlists.mjs: a per-client child's list_changed reaches its own client (issue 19, item 5).
//
//   node childlists.mjs --url URL [--prefix everything__]
//
// The upstream behind --prefix is per-client over stdio (server-everything), so every client session has a
// child process of its own. Client A calls gzip-file-as-resource, which registers a session resource on A's
// child only; the child announces notifications/resources/list_changed. Expected:
//   1. A hears notifications/resources/list_changed from the gateway;
//   2. A's resources/list (every page) offers the session resource, and A reads it back (its gzip of the data);
//   3. B, another client of the same upstream, neither hears a resources list change nor lists the resource, and
//      reading it is refused.

import { gunzipSync } from "node:zlib";
import { ResourceListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { connect, disconnect, expect, parseFlags, run, waitFor } from "./lib.mjs";

const flags = parseFlags();

/** Every resource of the session, following nextCursor. */
async function listAllResources(client) {
  const out = [];
  let cursor;
  for (let page = 0; page < 1000; page++) {
    const res = await client.listResources(cursor === undefined ? {} : { cursor });
    out.push(...res.resources);
    cursor = res.nextCursor;
    if (cursor === undefined) return out;
  }
  throw new Error("resources/list: more than 1000 pages");
}

/** A client that counts the resources list changes it hears. */
async function listener(name) {
  const heard = [];
  const client = await connect(flags.url, name, {
    setup: (c) => c.setNotificationHandler(ResourceListChangedNotificationSchema, () => heard.push(Date.now())),
  });
  client.heard = heard;
  return client;
}

await run("childlists", flags.timeout, async (summary) => {
  let a, b;
  try {
    summary.step = "connect";
    a = await listener("childlists-a");
    b = await listener("childlists-b");
    // Each client's first call starts its own child.
    for (const c of [a, b]) {
      const res = await c.callTool({ name: `${flags.prefix}echo`, arguments: { message: "hello" } });
      expect(!res.isError, `echo: ${JSON.stringify(res)}`);
    }
    // (Their start-up announcements, server-everything's tools after initialize, are no resources list change.)
    const name = `childlists-${Date.now().toString(36)}.gz`;
    const text = `hello from A's own child ${name}`;
    summary.step = "gzip-file-as-resource";
    const t0 = Date.now();
    const res = await a.callTool({
      name: `${flags.prefix}gzip-file-as-resource`,
      arguments: { name, data: `data:text/plain;base64,${Buffer.from(text).toString("base64")}`, outputType: "resourceLink" },
    });
    expect(!res.isError, `gzip-file-as-resource: ${JSON.stringify(res)}`);
    const link = res.content.find((c) => c.type === "resource_link");
    expect(link?.uri, `no resource_link in ${JSON.stringify(res.content)}`);
    summary.uri = link.uri;

    summary.step = "A hears resources/list_changed";
    expect(await waitFor(() => a.heard.length > 0, 10_000), "A heard no notifications/resources/list_changed within 10 s");
    summary.heardAfterMs = a.heard[0] - t0;

    summary.step = "A lists the resource";
    const aList = await listAllResources(a);
    const mine = aList.find((r) => r.uri === link.uri);
    expect(mine, `A's resources/list lacks ${link.uri} (${aList.length}: ${aList.map((r) => r.uri).join(", ")})`);
    summary.listedByA = aList.length;

    summary.step = "A reads the resource";
    const read = await a.readResource({ uri: link.uri });
    const blob = read.contents?.[0]?.blob;
    expect(blob, `read ${link.uri}: ${JSON.stringify(read)}`);
    expect(gunzipSync(Buffer.from(blob, "base64")).toString() === text, `read ${link.uri}: the gzip holds something else`);

    summary.step = "B does not see it";
    const bList = await listAllResources(b);
    expect(!bList.some((r) => r.uri === link.uri), `B lists A's session resource ${link.uri}`);
    summary.listedByB = bList.length;
    let refused = false;
    try {
      await b.readResource({ uri: link.uri });
    } catch {
      refused = true;
    }
    expect(refused, `B read A's session resource ${link.uri}`);
    expect(b.heard.length === 0, `B heard ${b.heard.length} resources list change(s) of A's child`);
  } finally {
    await disconnect(a);
    await disconnect(b);
  }
});
