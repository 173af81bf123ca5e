// modern-bridge.mjs: a legacy client (the TypeScript SDK speaks 2025-11-25) calls tools of a stateless
// 2026-07-28 upstream (the Go SDK conformance fixture) through the gateway. The upstream never sends requests: it
// answers input_required; the gateway must ask the client with ordinary server->client requests on the call's
// stream, then retry the call upstream with the answers (design §6, bridge "modern upstream -> legacy client").
//
//   node modern-bridge.mjs --url URL [--prefix fx__]
//
//  1. a plain call works (resultType is not leaked as an error, the content arrives);
//  2. elicitation: one elicitation/create reaches the client; its answer makes "Hello, <name>!";
//  3. sampling: one sampling/createMessage; the answer makes "Sampling response: <text>";
//  4. roots: one roots/list; the answer makes "Client exposed 1 root(s): <uri>";
//  5. multi round: two elicitations in turn, the upstream's requestState carried between rounds by the gateway.
import { CreateMessageRequestSchema, ElicitRequestSchema, ListRootsRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { connect, disconnect, expect, parseFlags, run, textOf, waitForTool } from "./lib.mjs";

const flags = parseFlags();

await run("modern-bridge", flags.timeout, async (summary) => {
  const seen = { elicit: [], sampling: 0, roots: 0 };
  summary.step = "connect";
  const client = await connect(flags.url, "switchboard-e2e-modern-bridge", {
    capabilities: { elicitation: { form: {} }, sampling: {}, roots: { listChanged: true } },
    setup: (c) => {
      c.setRequestHandler(ElicitRequestSchema, async (req) => {
        seen.elicit.push(req.params.message);
        if (/color/i.test(req.params.message)) return { action: "accept", content: { color: "teal" } };
        return { action: "accept", content: { name: "Bridge" } };
      });
      c.setRequestHandler(CreateMessageRequestSchema, async () => {
        seen.sampling++;
        return { role: "assistant", content: { type: "text", text: "Paris" }, model: "e2e-model", stopReason: "endTurn" };
      });
      c.setRequestHandler(ListRootsRequestSchema, async () => {
        seen.roots++;
        return { roots: [{ uri: "file:///e2e-root", name: "e2e" }] };
      });
    },
  });
  try {
    const p = flags.prefix;
    summary.step = "wait for tools";
    await waitForTool(client, `${p}test_input_required_result_elicitation`);
    const call = async (name) => {
      summary.step = `call ${name}`;
      const res = await client.callTool({ name: p + name, arguments: {} }, undefined, { timeout: 20_000 });
      expect(!res.isError, `${name}: isError: ${textOf(res)}`);
      return textOf(res);
    };
    const simple = await call("test_simple_text");
    expect(simple.includes("simple text"), `test_simple_text answered ${JSON.stringify(simple)}`);

    const hello = await call("test_input_required_result_elicitation");
    expect(hello === "Hello, Bridge!", `elicitation: ${JSON.stringify(hello)}, want "Hello, Bridge!"`);
    expect(seen.elicit.length === 1, `elicitation: the client got ${seen.elicit.length} elicitation request(s), want 1`);

    const sampled = await call("test_input_required_result_sampling");
    expect(sampled === "Sampling response: Paris", `sampling: ${JSON.stringify(sampled)}`);
    expect(seen.sampling === 1, `sampling: the client got ${seen.sampling} sampling request(s), want 1`);

    const roots = await call("test_input_required_result_list_roots");
    expect(roots === "Client exposed 1 root(s): file:///e2e-root", `roots: ${JSON.stringify(roots)}`);
    expect(seen.roots === 1, `roots: the client got ${seen.roots} roots/list request(s), want 1`);

    const multi = await call("test_input_required_result_multi_round");
    expect(multi === "Multi-round complete: Bridge likes teal", `multi round: ${JSON.stringify(multi)}`);
    expect(seen.elicit.length === 3, `multi round: ${seen.elicit.length - 1} elicitation request(s) for it, want 2`);
    summary.result = "plain, elicitation, sampling, roots and two-round calls bridged";
  } finally {
    await disconnect(client);
  }
});
