// catalog.mjs: list ALL tools page by page (following nextCursor) and check the
// merged catalog.
//
//   node catalog.mjs --url URL [--prefix everything__] [--page-size N]
//                    [--expect-tool NAME ...] [--min-tools N]
//
// Always expected: <prefix>echo, <prefix>get-sum, <prefix>trigger-long-running-operation.
// --expect-tool adds names only the gateway has (memory__create_entities,
// everything_http__echo, ...). --page-size N (the gateway's configured page
// size) asserts that no page is larger than N and that pagination was really
// followed (at least ceil(total/N) pages, so more than one when total > N).
// Names must be unique across all pages.
import { exposed, connect, disconnect, expect, parseFlags, run } from "./lib.mjs";

const flags = parseFlags({
  "page-size": { type: "string" },
  "expect-tool": { type: "string", multiple: true },
  "min-tools": { type: "string" },
});

await run("catalog", flags.timeout, async (summary) => {
  summary.step = "connect";
  const client = await connect(flags.url, "switchboard-e2e-catalog");
  try {
    const names = [];
    const pageSizes = [];
    let cursor;
    const seenCursors = new Set();
    do {
      summary.step = `tools/list page ${pageSizes.length + 1}`;
      const page = await client.listTools(cursor === undefined ? {} : { cursor });
      expect(Array.isArray(page.tools), `page ${pageSizes.length + 1} has no tools array`);
      pageSizes.push(page.tools.length);
      for (const t of page.tools) names.push(t.name);
      cursor = page.nextCursor;
      if (cursor !== undefined) {
        expect(typeof cursor === "string" && cursor !== "", `page ${pageSizes.length}: nextCursor is not a non-empty string: ${JSON.stringify(cursor)}`);
        expect(!seenCursors.has(cursor), `nextCursor ${JSON.stringify(cursor)} repeated: pagination loops`);
        seenCursors.add(cursor);
        expect(pageSizes.length < 1000, "more than 1000 pages: pagination does not end");
      }
    } while (cursor !== undefined);
    summary.step = "check catalog";

    summary.pages = pageSizes.length;
    summary.pageSizes = pageSizes;
    summary.tools = names.length;
    summary.names = [...names].sort();

    const dupes = [...new Set(names.filter((n, i) => names.indexOf(n) !== i))];
    expect(dupes.length === 0, `duplicate tool names across pages: ${dupes.join(", ")}`);

    const expected = [
      `${flags.prefix}echo`,
      `${flags.prefix}get-sum`,
      exposed(flags.prefix, "trigger-long-running-operation"),
      ...(flags["expect-tool"] ?? []),
    ];
    summary.expected = expected;
    const missing = expected.filter((n) => !names.includes(n));
    expect(missing.length === 0, `expected tools missing: ${missing.join(", ")} (got ${names.length}: ${[...names].sort().join(", ")})`);

    if (flags["min-tools"] !== undefined) {
      const min = Number(flags["min-tools"]);
      expect(names.length >= min, `expected at least ${min} tools, got ${names.length}`);
    }

    if (flags["page-size"] !== undefined) {
      const size = Number(flags["page-size"]);
      expect(Number.isInteger(size) && size > 0, `bad --page-size ${flags["page-size"]}`);
      const big = pageSizes.findIndex((n) => n > size);
      expect(big === -1, `page ${big + 1} has ${pageSizes[big]} tools, more than the page size ${size}`);
      const minPages = Math.ceil(names.length / size);
      expect(pageSizes.length >= minPages, `${names.length} tools in ${pageSizes.length} page(s); with page size ${size} expected at least ${minPages}: nextCursor not followed/offered`);
      expect(names.length <= size || pageSizes.length > 1, "catalog larger than one page but only one page was returned");
    }
  } finally {
    await disconnect(client);
  }
});
