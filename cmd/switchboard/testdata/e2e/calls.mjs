// calls.mjs: plain tool calls through the gateway.
//
//   node calls.mjs --url URL [--prefix everything__] [--memory-prefix memory__]
//
// Calls <prefix>echo {message} and <prefix>get-sum {a,b} and checks the text.
// With --memory-prefix (server-memory behind the gateway): creates an entity
// with <memory-prefix>create_entities and finds it in <memory-prefix>read_graph.
// Without it the memory part is skipped (direct runs against server-everything).
import { randomUUID } from "node:crypto";
import { connect, disconnect, expect, parseFlags, run, textOf } from "./lib.mjs";

const flags = parseFlags({ "memory-prefix": { type: "string" } });

await run("calls", flags.timeout, async (summary) => {
  summary.step = "connect";
  const client = await connect(flags.url, "switchboard-e2e-calls");
  try {
    const message = `hello from e2e ${randomUUID()}`;
    summary.step = "echo";
    const echo = await client.callTool({ name: `${flags.prefix}echo`, arguments: { message } });
    expect(!echo.isError, `echo returned isError: ${textOf(echo)}`);
    expect(textOf(echo) === `Echo: ${message}`, `echo: want ${JSON.stringify(`Echo: ${message}`)}, got ${JSON.stringify(textOf(echo))}`);
    summary.echo = "ok";

    summary.step = "get-sum";
    const sum = await client.callTool({ name: `${flags.prefix}get-sum`, arguments: { a: 40, b: 2.5 } });
    expect(!sum.isError, `get-sum returned isError: ${textOf(sum)}`);
    expect(textOf(sum) === "The sum of 40 and 2.5 is 42.5.", `get-sum: got ${JSON.stringify(textOf(sum))}`);
    summary.getSum = "ok";

    summary.step = "unknown tool";
    // An unknown tool must come back as an error (JSON-RPC error or isError), not hang.
    let unknownErr = false;
    try {
      const r = await client.callTool({ name: `${flags.prefix}no-such-tool-${randomUUID().slice(0, 8)}`, arguments: {} });
      unknownErr = r.isError === true;
    } catch {
      unknownErr = true;
    }
    expect(unknownErr, "calling an unknown tool did not fail");
    summary.unknownTool = "error";

    if (flags["memory-prefix"] !== undefined) {
      const mp = flags["memory-prefix"];
      const entity = `e2e-entity-${randomUUID()}`;
      summary.step = "create_entities";
      const created = await client.callTool({
        name: `${mp}create_entities`,
        arguments: { entities: [{ name: entity, entityType: "test", observations: ["made by calls.mjs"] }] },
      });
      expect(!created.isError, `create_entities returned isError: ${textOf(created)}`);
      expect(textOf(created).includes(entity), `create_entities result does not mention ${entity}: ${textOf(created)}`);

      summary.step = "read_graph";
      const graph = await client.callTool({ name: `${mp}read_graph`, arguments: {} });
      expect(!graph.isError, `read_graph returned isError: ${textOf(graph)}`);
      const entities = graph.structuredContent?.entities ?? JSON.parse(textOf(graph)).entities ?? [];
      const found = entities.find((e) => e.name === entity);
      expect(found, `read_graph does not contain ${entity} (has ${entities.length} entities)`);
      expect(found.observations?.includes("made by calls.mjs"), `entity ${entity} lost its observation: ${JSON.stringify(found)}`);
      summary.memory = "ok";
    } else {
      summary.memory = "skipped (no --memory-prefix)";
    }
  } finally {
    await disconnect(client);
  }
});
