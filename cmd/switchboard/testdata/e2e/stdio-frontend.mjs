// stdio-frontend.mjs: the gateway's stdio front end (`switchboard stdio`),
// launched by the SDK's StdioClientTransport.
//
//   node stdio-frontend.mjs --bin PATH --config FILE [--prefix everything__]
//                           [--expect-tool NAME ...]
//   (or SWITCHBOARD_BIN / SWITCHBOARD_CONFIG)
//
// Starts `PATH stdio --config FILE`, lists all tools (all pages), expects
// <prefix>echo and each --expect-tool, calls echo, and closes the transport
// (which ends the child). The gateway's stderr is kept and shown on failure.
// Needs no --url.
import { randomUUID } from "node:crypto";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { connect, disconnect, expect, listAllTools, parseFlags, run, textOf } from "./lib.mjs";

const flags = parseFlags(
  { bin: { type: "string" }, config: { type: "string" }, "expect-tool": { type: "string", multiple: true } },
  { requireUrl: false },
);
const bin = flags.bin ?? process.env.SWITCHBOARD_BIN;
const config = flags.config ?? process.env.SWITCHBOARD_CONFIG;
if (!bin || !config) {
  console.error("usage: node stdio-frontend.mjs --bin PATH/switchboard --config FILE [--prefix everything__]");
  process.exit(2);
}

await run("stdio-frontend", flags.timeout, async (summary) => {
  const transport = new StdioClientTransport({ command: bin, args: ["stdio", "--config", config], stderr: "pipe" });
  let stderr = "";
  transport.stderr?.on("data", (d) => {
    stderr += d.toString();
    if (stderr.length > 20_000) stderr = stderr.slice(-20_000);
  });
  summary.step = "connect";
  let client;
  try {
    try {
      client = await connect(undefined, "switchboard-e2e-stdio", { transport });
    } catch (err) {
      throw new Error(`${err?.message ?? err}\n--- switchboard stdio stderr:\n${stderr.slice(-3000)}`);
    }
    summary.server = client.getServerVersion()?.name;

    summary.step = "tools/list";
    const tools = await listAllTools(client);
    const names = tools.map((t) => t.name);
    summary.tools = names.length;
    const want = [`${flags.prefix}echo`, ...(flags["expect-tool"] ?? [])];
    const missing = want.filter((n) => !names.includes(n));
    expect(missing.length === 0, `tools missing: ${missing.join(", ")} (got ${names.length}: ${[...names].sort().join(", ")})`);

    summary.step = "echo";
    const message = `stdio ${randomUUID()}`;
    const echo = await client.callTool({ name: `${flags.prefix}echo`, arguments: { message } }, undefined, { timeout: 15_000 });
    expect(textOf(echo) === `Echo: ${message}`, `echo: got ${JSON.stringify(textOf(echo))}`);
    summary.echo = "ok";
  } finally {
    await disconnect(client);
    try {
      await transport.close();
    } catch {
      // already closed
    }
  }
});
