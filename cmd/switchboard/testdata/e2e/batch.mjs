// batch.mjs: JSON-RPC batches on a 2025-03-26 session.
//
//   node batch.mjs --url URL [--prefix everything__] [--require-json-array]
//
// Raw HTTP (fetch): initialize with protocolVersion 2025-03-26 (the last
// revision with batching), initialized, then POST one JSON array of two
// requests (tools/call <prefix>echo, ping) and one notification
// (notifications/cancelled for an id that is not in flight, which the receiver
// ignores). Asserts: HTTP 200, an application/json answer that is a JSON array
// (or, accepted but recorded, an SSE stream), holding exactly the two
// responses, matched by id: the echo text and an empty ping result.
// --require-json-array refuses the SSE form (server-everything answers a
// batch with SSE; the gateway answers with one JSON array).
import { randomUUID } from "node:crypto";
import { expect, parseFlags, rawInitialize, rawMessages, rawPost, run } from "./lib.mjs";

const flags = parseFlags({ "require-json-array": { type: "boolean", default: false } });

await run("batch", flags.timeout, async (summary) => {
  summary.step = "initialize 2025-03-26";
  const { session, protocolVersion } = await rawInitialize(flags.url, "2025-03-26", "switchboard-e2e-batch");
  summary.protocolVersion = protocolVersion;
  expect(protocolVersion === "2025-03-26", `initialize negotiated ${protocolVersion}, want 2025-03-26`);
  try {
    const message = `batched ${randomUUID()}`;
    const batch = [
      { jsonrpc: "2.0", id: "echo-1", method: "tools/call", params: { name: `${flags.prefix}echo`, arguments: { message } } },
      { jsonrpc: "2.0", id: 2, method: "ping" },
      { jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: "not-in-flight", reason: "e2e batch notification" } },
    ];
    summary.step = "POST batch";
    const res = await rawPost(flags.url, batch, { session, protocolVersion, signal: AbortSignal.timeout(20_000) });
    if (res.status !== 200) expect(false, `batch: HTTP ${res.status}, want 200: ${await res.text().catch(() => "")}`);
    const { kind, messages, raw } = await rawMessages(res);
    summary.answer = kind;
    const allowed = flags["require-json-array"] ? ["json-array"] : ["json-array", "sse"];
    expect(allowed.includes(kind), `batch answer is ${kind}, want a JSON array: ${JSON.stringify(raw)}`);
    const ids = messages.map((m) => m.id);
    summary.ids = ids;
    expect(messages.length === 2, `batch answer has ${messages.length} message(s), want 2 responses: ${JSON.stringify(messages)}`);
    const echo = messages.find((m) => m.id === "echo-1");
    const ping = messages.find((m) => m.id === 2);
    expect(echo, `no response with id "echo-1": ${JSON.stringify(messages)}`);
    expect(ping, `no response with id 2: ${JSON.stringify(messages)}`);
    expect(echo.result, `echo failed: ${JSON.stringify(echo.error)}`);
    const text = (echo.result.content ?? []).map((c) => c.text).join("\n");
    expect(text === `Echo: ${message}`, `echo text ${JSON.stringify(text)}, want ${JSON.stringify(`Echo: ${message}`)}`);
    expect(ping.result && Object.keys(ping.result).length === 0, `ping: want an empty result, got ${JSON.stringify(ping)}`);
  } finally {
    await fetch(flags.url, { method: "DELETE", headers: { "mcp-session-id": session ?? "", "mcp-protocol-version": protocolVersion } }).catch(() => {});
  }
});
