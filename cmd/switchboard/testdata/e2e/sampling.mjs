// sampling.mjs: a server->client sampling/createMessage request travels from
// the upstream through the gateway to this client, and the client's answer
// travels back into the tool result.
//
//   node sampling.mjs --url URL [--prefix everything__]
//
// The client declares `sampling` and answers every sampling/createMessage with
// a canned message (a unique marker). It calls <prefix>trigger-sampling-request
// {prompt, maxTokens} and asserts: exactly one sampling request reached the
// client, it carries the prompt, and the tool result contains the canned
// answer and model name.
import { randomUUID } from "node:crypto";
import { CreateMessageRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { connect, disconnect, expect, parseFlags, run, textOf, waitForTool } from "./lib.mjs";

const flags = parseFlags();

await run("sampling", flags.timeout, async (summary) => {
  const marker = `canned-answer-${randomUUID()}`;
  const model = "switchboard-e2e-model";
  const requests = [];
  summary.step = "connect";
  const client = await connect(flags.url, "switchboard-e2e-sampling", {
    capabilities: { sampling: {} },
    setup: (c) =>
      c.setRequestHandler(CreateMessageRequestSchema, async (req) => {
        requests.push(req.params);
        return { role: "assistant", content: { type: "text", text: marker }, model, stopReason: "endTurn" };
      }),
  });
  try {
    const tool = `${flags.prefix}trigger-sampling-request`;
    summary.step = `wait for ${tool}`;
    await waitForTool(client, tool);

    const prompt = `e2e prompt ${randomUUID()}`;
    summary.step = `call ${tool}`;
    const result = await client.callTool({ name: tool, arguments: { prompt, maxTokens: 42 } }, undefined, { timeout: 20_000 });
    const text = textOf(result);
    summary.samplingRequests = requests.length;
    expect(!result.isError, `tool returned isError: ${text}`);
    expect(requests.length === 1, `client got ${requests.length} sampling/createMessage request(s), want 1`);
    const sent = JSON.stringify(requests[0]);
    expect(sent.includes(prompt), `sampling request does not carry the prompt ${JSON.stringify(prompt)}: ${sent}`);
    expect(requests[0].maxTokens === 42, `sampling request maxTokens ${requests[0].maxTokens}, want 42`);
    expect(text.includes(marker), `tool result does not contain the canned answer ${marker}: ${JSON.stringify(text)}`);
    expect(text.includes(model), `tool result does not contain the model ${model}: ${JSON.stringify(text)}`);
    summary.result = "canned answer returned";
  } finally {
    await disconnect(client);
  }
});
