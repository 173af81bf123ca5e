// legacy-sse.mjs: a 2024-11-05 client over the legacy HTTP+SSE transport.
//
//   node legacy-sse.mjs --url URL [--sse-url URL] [--prefix everything__]
//
// Connects the SDK's SSEClientTransport to --sse-url (default: --url with its
// path replaced by /sse), asking for protocolVersion 2024-11-05 in initialize
// (the SDK always asks for its latest, so the outgoing initialize is
// rewritten). Asserts: the negotiated version is 2024-11-05, tools/list (all
// pages) offers <prefix>echo, and an echo call answers.
import { randomUUID } from "node:crypto";
import { SSEClientTransport } from "@modelcontextprotocol/sdk/client/sse.js";
import { connect, disconnect, expect, listAllTools, parseFlags, run, textOf } from "./lib.mjs";

const flags = parseFlags({ "sse-url": { type: "string" } });
const LEGACY = "2024-11-05";

await run("legacy-sse", flags.timeout, async (summary) => {
  const sseUrl = new URL(flags["sse-url"] ?? flags.url);
  if (!flags["sse-url"]) sseUrl.pathname = "/sse";
  summary.sseUrl = sseUrl.href;
  const transport = new SSEClientTransport(sseUrl);
  let negotiated;
  const send = transport.send.bind(transport);
  transport.send = async (message, options) => {
    if (message.method === "initialize") message = { ...message, params: { ...message.params, protocolVersion: LEGACY } };
    return send(message, options);
  };
  const onmessage = () => transport.onmessage;
  summary.step = "connect";
  // Record the version the server answers to our initialize.
  const origStart = transport.start.bind(transport);
  transport.start = async () => {
    await origStart();
    const inner = onmessage();
    transport.onmessage = (m, extra) => {
      if (m.id !== undefined && m.result?.protocolVersion) negotiated = m.result.protocolVersion;
      inner?.(m, extra);
    };
  };
  const client = await connect(undefined, "switchboard-e2e-legacy-sse", { transport });
  try {
    summary.protocolVersion = negotiated;
    expect(negotiated === LEGACY, `initialize answered protocolVersion ${JSON.stringify(negotiated)}, want ${LEGACY}`);

    summary.step = "tools/list";
    const tools = await listAllTools(client);
    summary.tools = tools.length;
    const echoName = `${flags.prefix}echo`;
    expect(tools.some((t) => t.name === echoName), `tools/list lacks ${echoName} (${tools.length}: ${tools.map((t) => t.name).sort().join(", ")})`);
    if (flags.prefix) {
      const unprefixed = tools.filter((t) => !t.name.includes("__"));
      expect(unprefixed.length === 0, `tools without a prefix: ${unprefixed.map((t) => t.name).join(", ")}`);
    }

    summary.step = "echo";
    const message = `legacy ${randomUUID()}`;
    const echo = await client.callTool({ name: echoName, arguments: { message } }, undefined, { timeout: 15_000 });
    expect(textOf(echo) === `Echo: ${message}`, `echo: got ${JSON.stringify(textOf(echo))}`);
    summary.echo = "ok";
  } finally {
    await disconnect(client);
  }
});
