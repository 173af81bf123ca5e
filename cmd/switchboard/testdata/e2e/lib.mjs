// Shared helpers for Switchboard's end-to-end scripts.
//
// Every script is a real MCP client (the official TypeScript SDK's Client over
// StreamableHTTPClientTransport) talking to a URL given on the command line:
// Switchboard in the Go harness (cmd/switchboard/e2e_test.go), or
// server-everything directly when checking the scripts themselves.
//
// Common flags (each also readable from the environment):
//   --url URL          MCP endpoint (env E2E_URL), e.g. http://127.0.0.1:8080/mcp
//   --prefix P         name prefix of the server-everything tools (env E2E_PREFIX,
//                      default "everything__"); pass --prefix '' to run against
//                      server-everything directly
//   --timeout SECONDS  hard limit for the whole script (env E2E_TIMEOUT, default 60)
//
// Output: one JSON summary line on stdout ({"script":…,"ok":true|false,…}).
// On a failed expectation: "FAIL <script>: <why>" on stderr and exit code 1.

import { createHash } from "node:crypto";
import { parseArgs } from "node:util";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

export class ExpectationError extends Error {}

/** Throws an ExpectationError (reported as a failed expectation) unless cond holds. */
export function expect(cond, message) {
  if (!cond) throw new ExpectationError(message);
}

/**
 * Parses the common flags plus the script's own options (node:util parseArgs
 * syntax). Returns the values with url, prefix and timeout filled in.
 */
export function parseFlags(extraOptions = {}, { requireUrl = true } = {}) {
  const { values } = parseArgs({
    args: process.argv.slice(2),
    options: {
      url: { type: "string" },
      prefix: { type: "string" },
      timeout: { type: "string" },
      ...extraOptions,
    },
    strict: true,
    allowPositionals: false,
  });
  values.url = values.url ?? process.env.E2E_URL;
  values.prefix = values.prefix ?? process.env.E2E_PREFIX ?? "everything__";
  values.timeout = Number(values.timeout ?? process.env.E2E_TIMEOUT ?? 60);
  if (!values.url && requireUrl) {
    console.error("usage: node SCRIPT.mjs --url http://HOST:PORT/mcp [--prefix everything__|''] [options]");
    process.exit(2);
  }
  if (!Number.isFinite(values.timeout) || values.timeout <= 0) {
    console.error(`bad --timeout ${values.timeout}`);
    process.exit(2);
  }
  return values;
}

/**
 * Connects a new client session. Transport/protocol errors are kept in client.errors.
 *
 * Options:
 *   capabilities  the client capabilities to declare (default {})
 *   setup(client) called before connecting: register request/notification
 *                 handlers here (the SDK checks them against the capabilities)
 *   transport     a transport to use instead of StreamableHTTPClientTransport(url)
 */
export async function connect(url, name = "switchboard-e2e", { capabilities = {}, setup, transport } = {}) {
  const client = new Client({ name, version: "0.0.0" }, { capabilities });
  client.errors = [];
  client.onerror = (err) => client.errors.push(String(err?.message ?? err));
  if (setup) setup(client);
  transport = transport ?? new StreamableHTTPClientTransport(new URL(url));
  await client.connect(transport);
  client.transportRef = transport;
  return client;
}

/** Resolves after ms milliseconds. */
export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Every tool of the session, following nextCursor (bounded to 1000 pages). */
export async function listAllTools(client) {
  const tools = [];
  let cursor;
  for (let page = 0; page < 1000; page++) {
    const res = await client.listTools(cursor === undefined ? {} : { cursor });
    tools.push(...res.tools);
    cursor = res.nextCursor;
    if (cursor === undefined) return tools;
  }
  throw new ExpectationError("tools/list: more than 1000 pages");
}

/**
 * Waits (bounded) until tools/list offers the named tool. server-everything
 * registers its capability-dependent tools (sampling, elicitation, roots,
 * tasks) only after notifications/initialized, so they can appear a moment
 * after the session starts.
 */
export async function waitForTool(client, name, timeoutMs = 10_000) {
  const deadline = Date.now() + timeoutMs;
  let names = [];
  for (;;) {
    const tools = await listAllTools(client);
    const tool = tools.find((t) => t.name === name);
    if (tool) return tool;
    names = tools.map((t) => t.name);
    if (Date.now() > deadline) break;
    await sleep(250);
  }
  throw new ExpectationError(`tool ${name} not offered within ${timeoutMs} ms (tools/list has ${names.length}: ${[...names].sort().join(", ")})`);
}

/**
 * Waits until pred() is true, polling every 50 ms; false if it still is not
 * after timeoutMs.
 */
export async function waitFor(pred, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  while (!pred()) {
    if (Date.now() > deadline) return false;
    await sleep(50);
  }
  return true;
}

/** The gateway's upstream name for a tool prefix: "everything_http__" -> "everything-http". */
export function upstreamOfPrefix(prefix) {
  if (!prefix) return undefined;
  return prefix.replace(/__$/, "").replace(/_/g, "-");
}

/**
 * The first of uris that names base… as the upstream behind prefix serves it: "<upstream>+base…" where the
 * gateway namespaced the URIs (resourceNamespacing: two upstreams offer them), else "base…" itself.
 */
export function pickURI(uris, base, prefix) {
  const up = upstreamOfPrefix(prefix);
  return uris.find((u) => up && u.startsWith(`${up}+${base}`)) ?? uris.find((u) => u.startsWith(base));
}

/** Ends the session politely (DELETE; 405 is accepted) and closes the client. */
export async function disconnect(client) {
  if (!client) return;
  try {
    await client.transportRef?.terminateSession();
  } catch {
    // best effort: the session may already be gone
  }
  try {
    await client.close();
  } catch {
    // ignore
  }
}

/** Concatenated text of a CallToolResult's text content blocks. */
export function textOf(result) {
  return (result?.content ?? [])
    .filter((c) => c.type === "text")
    .map((c) => c.text)
    .join("\n");
}

/**
 * Runs body(summary) under a hard timeout and prints the summary.
 * Exit codes: 0 all expectations held, 1 a failed expectation or error.
 */
export async function run(script, timeoutSeconds, body) {
  const started = Date.now();
  const summary = { script, ok: false };
  const finish = (code, why) => {
    summary.ms = Date.now() - started;
    if (why) {
      summary.error = why;
      console.error(`FAIL ${script}: ${why}`);
    }
    console.log(JSON.stringify(summary));
    process.exit(code);
  };
  const timer = setTimeout(
    () => finish(1, `timed out after ${timeoutSeconds}s (last step: ${summary.step ?? "start"})`),
    timeoutSeconds * 1000,
  );
  try {
    await body(summary);
    clearTimeout(timer);
    summary.ok = true;
    delete summary.step;
    finish(0);
  } catch (err) {
    clearTimeout(timer);
    const kind = err instanceof ExpectationError ? "" : "unexpected error: ";
    finish(1, `${kind}${err?.stack && !(err instanceof ExpectationError) ? err.stack : err?.message ?? err} (step: ${summary.step ?? "start"})`);
  }
}

/**
 * Raw MCP over streamable HTTP, for scripts that need the wire (resumption,
 * batches): POST one message (or an array) and get the fetch Response.
 */
export async function rawPost(url, body, { session, protocolVersion, signal, headers = {} } = {}) {
  const h = { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers };
  if (session) h["mcp-session-id"] = session;
  if (protocolVersion) h["mcp-protocol-version"] = protocolVersion;
  return fetch(url, { method: "POST", headers: h, body: JSON.stringify(body), signal });
}

/**
 * Parses a text/event-stream body into events {id, event, data}; yields each
 * event as soon as its blank line arrives.
 */
export async function* sseEvents(response) {
  const decoder = new TextDecoder();
  let buf = "";
  let ev = { data: [] };
  for await (const chunk of response.body) {
    buf += decoder.decode(chunk, { stream: true });
    let i;
    while ((i = buf.search(/\r\n|\n|\r/)) >= 0) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + (buf.startsWith("\r\n", i) ? 2 : 1));
      if (line === "") {
        if (ev.data.length > 0 || ev.id !== undefined) yield { id: ev.id, event: ev.event, data: ev.data.join("\n") };
        ev = { data: [] };
        continue;
      }
      if (line.startsWith(":")) continue;
      const c = line.indexOf(":");
      const field = c < 0 ? line : line.slice(0, c);
      let value = c < 0 ? "" : line.slice(c + 1);
      if (value.startsWith(" ")) value = value.slice(1);
      if (field === "data") ev.data.push(value);
      else if (field === "id") ev.id = value;
      else if (field === "event") ev.event = value;
    }
  }
}

/**
 * The JSON-RPC messages of a POST's answer, whether application/json (one
 * message or an array) or text/event-stream (one message per event; events
 * without data, such as priming events, are skipped).
 */
export async function rawMessages(response) {
  const type = response.headers.get("content-type") ?? "";
  if (type.includes("text/event-stream")) {
    const out = [];
    for await (const ev of sseEvents(response)) {
      if (ev.data.trim() === "") continue;
      const m = JSON.parse(ev.data);
      out.push(...(Array.isArray(m) ? m : [m]));
    }
    return { kind: "sse", messages: out };
  }
  const text = await response.text();
  if (text.trim() === "") return { kind: "empty", messages: [] };
  const m = JSON.parse(text);
  return { kind: Array.isArray(m) ? "json-array" : "json", messages: Array.isArray(m) ? m : [m], raw: m };
}

/**
 * initialize + notifications/initialized over raw HTTP. Returns
 * {session, protocolVersion, result}.
 */
export async function rawInitialize(url, protocolVersion = "2025-11-25", name = "switchboard-e2e-raw") {
  const res = await rawPost(url, {
    jsonrpc: "2.0",
    id: 0,
    method: "initialize",
    params: { protocolVersion, capabilities: {}, clientInfo: { name, version: "0.0.0" } },
  });
  if (!res.ok) expect(false, `initialize: HTTP ${res.status} ${await res.text().catch(() => "")}`);
  const session = res.headers.get("mcp-session-id") ?? undefined;
  const { messages } = await rawMessages(res);
  const init = messages.find((m) => m.id === 0);
  expect(init?.result, `initialize: no result: ${JSON.stringify(messages)}`);
  const negotiated = init.result.protocolVersion;
  const ack = await rawPost(url, { jsonrpc: "2.0", method: "notifications/initialized" }, { session, protocolVersion: negotiated });
  expect(ack.status === 202, `notifications/initialized: HTTP ${ack.status}, want 202`);
  await ack.body?.cancel();
  return { session, protocolVersion: negotiated, result: init.result };
}

// exposed is the name the gateway gives an upstream's tool, as docs/configuration.md ("Tool names") describes it:
// prefix+name when that fits the budget (default 46) in [A-Za-z0-9_-]; otherwise sanitised, cut, and ending in
// "_" plus 8 hex digits of the SHA-256 of prefix+name. Computed here independently, as a client could.
export function exposed(prefix, name, budget = 46) {
  const full = prefix + name;
  if (full.length > 0 && full.length <= budget && /^[A-Za-z0-9_-]+$/.test(full)) return full;
  const bytes = Buffer.from(full, "utf8");
  let b = "";
  for (const c of bytes) b += /[A-Za-z0-9_-]/.test(String.fromCharCode(c)) ? String.fromCharCode(c) : "_";
  const suffix = "_" + createHash("sha256").update(bytes).digest("hex").slice(0, 8);
  return b.slice(0, budget - suffix.length) + suffix;
}
