// subscriptions.mjs: resources/subscribe through the gateway, and
// notifications/resources/updated only for the subscriber.
//
//   node subscriptions.mjs --url URL [--prefix everything__] [--uri URI]
//
// Client A subscribes to a static document of server-everything (the first
// demo://resource/static/document/* in resources/list, all pages, unless --uri;
// the one of the upstream behind --prefix, "<upstream>+demo://…", where the
// gateway namespaced them)
// and calls <prefix>toggle-subscriber-updates, which makes the upstream send
// notifications/resources/updated for its subscribed URIs at once and then
// every 5 s. Client B, connected at the same time, subscribes to nothing.
// Asserts: A gets an update for the URI within 12 s; B gets none (B is given
// a 1 s grace after A's first update); after A unsubscribes (updates still
// toggled on), A gets no update for 6 s. Updates are toggled off at the end.
import { ResourceUpdatedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { connect, disconnect, expect, parseFlags, pickURI, run, sleep, waitFor } from "./lib.mjs";

const flags = parseFlags({ uri: { type: "string" } });

function listener(label, updates) {
  return (c) =>
    c.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => updates.push({ uri: n.params.uri, at: Date.now() }));
}

await run("subscriptions", flags.timeout, async (summary) => {
  const updatesA = [];
  const updatesB = [];
  let a, b;
  let toggled = false;
  const toggle = `${flags.prefix}toggle-subscriber-updates`;
  try {
    summary.step = "connect A and B";
    a = await connect(flags.url, "switchboard-e2e-subscriptions-A", { setup: listener("A", updatesA) });
    b = await connect(flags.url, "switchboard-e2e-subscriptions-B", { setup: listener("B", updatesB) });
    expect(a.getServerCapabilities()?.resources?.subscribe === true, `server capabilities lack resources.subscribe: ${JSON.stringify(a.getServerCapabilities())}`);

    let uri = flags.uri;
    if (!uri) {
      summary.step = "resources/list";
      const all = [];
      let cursor;
      for (let page = 0; page < 100; page++) {
        const res = await a.listResources(cursor === undefined ? {} : { cursor });
        all.push(...res.resources);
        cursor = res.nextCursor;
        if (cursor === undefined) break;
      }
      uri = pickURI(all.map((r) => r.uri), "demo://resource/static/document/", flags.prefix);
      expect(uri, `no demo://resource/static/document/* in resources/list (${all.length}: ${all.map((r) => r.uri).join(", ")})`);
    }
    summary.uri = uri;

    summary.step = "A subscribes";
    await a.subscribeResource({ uri });
    summary.step = `A calls ${toggle}`;
    const t0 = Date.now();
    await a.callTool({ name: toggle, arguments: {} }, undefined, { timeout: 15_000 });
    toggled = true;

    summary.step = "wait for A's update";
    const got = await waitFor(() => updatesA.some((u) => u.uri === uri), 12_000);
    expect(got, `A got no notifications/resources/updated for ${uri} within 12 s (A got: ${JSON.stringify(updatesA.map((u) => u.uri))})`);
    summary.firstUpdateMs = updatesA.find((u) => u.uri === uri).at - t0;
    const foreign = updatesA.filter((u) => u.uri !== uri);
    expect(foreign.length === 0, `A got updates for URIs it did not subscribe to: ${JSON.stringify(foreign.map((u) => u.uri))}`);

    summary.step = "B must get nothing";
    await sleep(1000);
    expect(updatesB.length === 0, `B (not subscribed) got ${updatesB.length} resource update(s): ${JSON.stringify(updatesB.map((u) => u.uri))}`);

    summary.step = "A unsubscribes";
    await a.unsubscribeResource({ uri });
    const unsubscribedAt = Date.now();
    await sleep(6000);
    const late = updatesA.filter((u) => u.at > unsubscribedAt + 200);
    expect(late.length === 0, `A got ${late.length} update(s) after unsubscribing: ${JSON.stringify(late.map((u) => u.uri))}`);
    expect(updatesB.length === 0, `B (not subscribed) got ${updatesB.length} resource update(s)`);
    summary.updatesA = updatesA.length;
    summary.updatesB = updatesB.length;
  } finally {
    if (toggled && a) {
      try {
        await a.callTool({ name: toggle, arguments: {} }, undefined, { timeout: 5_000 });
      } catch {
        // best effort: stop the upstream's interval
      }
    }
    await disconnect(a);
    await disconnect(b);
  }
});
