// useroauth.mjs: MCP clients (the official TypeScript SDK) of a gateway with a
// per-user OAuth upstream (issue 17), driven step by step by the Go test
// (cmd/switchboard/useroauth_e2e_test.go), which opens the links the gateway
// elicits in a real browser between the steps.
//
//   node useroauth.mjs --url URL [--timeout SECONDS]
//
// Commands come on stdin, one JSON object a line, each with a seq number the
// answer repeats:
//   {"seq":1,"cmd":"connect","client":"alice","token":"…","urlElicitation":true}
//       a new session (StreamableHTTPClientTransport, Authorization: Bearer),
//       declaring elicitation {url: {}} (urlElicitation) or {form: {}} only;
//       answers {"seq":1,"ok":true,"protocolVersion":"…","session":"…"}
//   {"seq":2,"cmd":"list","client":"alice"}
//       answers {"seq":2,"ok":true,"tools":["name",…]}
//   {"seq":3,"cmd":"call","client":"alice","name":"whoami__whoami","arguments":{}}
//       answers {"seq":3,"ok":true,"result":{"isError":false,"text":"alice"}}, or
//       for a JSON-RPC error {"seq":3,"ok":true,"error":{"code":-32042,"message":"…",
//       "data":{…},"class":"UrlElicitationRequiredError","elicitations":[…]}}
//   {"seq":4,"cmd":"close","client":"alice"}
//   {"seq":5,"cmd":"exit"}
// A command that fails answers {"seq":n,"ok":false,"why":"…"}.
//
// What the sessions hear is written as it arrives, unasked:
//   {"event":"elicitation-complete","client":"alice","elicitationId":"…"}
//   {"event":"tools-changed","client":"alice"}
//   {"event":"elicitation-request","client":"alice","params":{…}}  (elicitation/create;
//       accepted, so a gateway that chose that path over -32042 is seen)
//   {"event":"error","client":"alice","message":"…"}              (transport or protocol)
//
// Nothing here holds a token longer than its transport does, and no token is
// ever written out.
import { createInterface } from "node:readline";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
  ElicitRequestSchema,
  ElicitationCompleteNotificationSchema,
  ToolListChangedNotificationSchema,
  UrlElicitationRequiredError,
} from "@modelcontextprotocol/sdk/types.js";
import { connect, disconnect, listAllTools, parseFlags, textOf } from "./lib.mjs";

const flags = parseFlags();

const out = (obj) => process.stdout.write(JSON.stringify(obj) + "\n");
const clients = new Map();

// The hard limit: a test that stops driving the script must not leave it running.
const limit = setTimeout(() => {
  out({ event: "fatal", message: `timed out after ${flags.timeout}s` });
  process.exit(1);
}, flags.timeout * 1000);

function client(name) {
  const c = clients.get(name);
  if (!c) throw new Error(`no client ${JSON.stringify(name)}`);
  return c;
}

const commands = {
  async connect({ client: name, token, urlElicitation }) {
    if (clients.has(name)) throw new Error(`client ${name} is already connected`);
    const transport = new StreamableHTTPClientTransport(new URL(flags.url), {
      requestInit: { headers: { Authorization: `Bearer ${token}` } },
    });
    const c = await connect(flags.url, `useroauth-e2e-${name}`, {
      capabilities: { elicitation: urlElicitation ? { url: {} } : { form: {} } },
      transport,
      setup: (c) => {
        c.setNotificationHandler(ElicitationCompleteNotificationSchema, (n) =>
          out({ event: "elicitation-complete", client: name, elicitationId: n.params.elicitationId }),
        );
        c.setNotificationHandler(ToolListChangedNotificationSchema, () => out({ event: "tools-changed", client: name }));
        c.setRequestHandler(ElicitRequestSchema, async (req) => {
          out({ event: "elicitation-request", client: name, params: req.params });
          return req.params.mode === "url" ? { action: "accept" } : { action: "decline" };
        });
      },
    });
    c.onerror = (err) => out({ event: "error", client: name, message: String(err?.message ?? err) });
    clients.set(name, c);
    return { protocolVersion: transport.protocolVersion ?? null, session: transport.sessionId ?? null };
  },

  async list({ client: name }) {
    const tools = await listAllTools(client(name));
    return { tools: tools.map((t) => t.name) };
  },

  async call({ client: name, name: tool, arguments: args }) {
    try {
      const res = await client(name).callTool({ name: tool, arguments: args ?? {} }, undefined, { timeout: 30_000 });
      return { result: { isError: res.isError === true, text: textOf(res) } };
    } catch (err) {
      if (typeof err?.code !== "number") throw err;
      const e = { code: err.code, message: err.message, data: err.data ?? null, class: err.constructor?.name ?? "" };
      if (err instanceof UrlElicitationRequiredError) e.elicitations = err.elicitations;
      return { error: e };
    }
  },

  async close({ client: name }) {
    const c = client(name);
    clients.delete(name);
    await disconnect(c);
    return {};
  },
};

async function exit(code) {
  clearTimeout(limit);
  for (const c of clients.values()) await disconnect(c);
  process.exit(code);
}

// One command at a time, in order: the Go test waits for each answer.
const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
for await (const line of lines) {
  if (line.trim() === "") continue;
  let msg;
  try {
    msg = JSON.parse(line);
  } catch (err) {
    out({ event: "fatal", message: `bad command line: ${err.message}` });
    await exit(2);
  }
  if (msg.cmd === "exit") {
    out({ seq: msg.seq, ok: true });
    await exit(0);
  }
  const run = commands[msg.cmd];
  if (!run) {
    out({ seq: msg.seq, ok: false, why: `unknown command ${JSON.stringify(msg.cmd)}` });
    continue;
  }
  try {
    out({ seq: msg.seq, ok: true, ...(await run(msg)) });
  } catch (err) {
    out({ seq: msg.seq, ok: false, why: String(err?.stack ?? err?.message ?? err) });
  }
}
// stdin closed: the test is gone.
await exit(0);
