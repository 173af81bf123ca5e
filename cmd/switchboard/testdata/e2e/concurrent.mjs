// concurrent.mjs: two client sessions at once; each sees only its own progress
// and results.
//
//   node concurrent.mjs --url URL [--prefix everything__]
//
// Client A runs trigger-long-running-operation with 3 steps, client B with 5,
// at the same time (both SDK clients use the same request ids, so progress
// tokens collide unless the gateway keeps them apart), each also calling echo
// with its own message while the long call runs. Every progress notification
// a client gets must carry its own total, count 1..steps, and nothing may arrive
// for an unknown token.
import { randomUUID } from "node:crypto";
import { exposed, connect, disconnect, expect, parseFlags, run, textOf } from "./lib.mjs";

const flags = parseFlags({ duration: { type: "string", default: "3" } });
const duration = Number(flags.duration);

async function session(label, steps, summary) {
  const client = await connect(flags.url, `switchboard-e2e-concurrent-${label}`);
  const out = { steps, progress: [] };
  summary[label] = out;
  try {
    const long = client.callTool(
      { name: exposed(flags.prefix, "trigger-long-running-operation"), arguments: { duration, steps } },
      undefined,
      {
        timeout: (duration + 30) * 1000,
        onprogress: (p) => out.progress.push([p.progress, p.total]),
      },
    );
    const message = `${label}-${randomUUID()}`;
    const echo = await client.callTool({ name: `${flags.prefix}echo`, arguments: { message } });
    expect(textOf(echo) === `Echo: ${message}`, `${label}: echo got ${JSON.stringify(textOf(echo))}, want its own message`);
    out.echo = "ok";
    const result = await long;
    const want = `Long running operation completed. Duration: ${duration} seconds, Steps: ${steps}.`;
    expect(textOf(result) === want, `${label}: long-running result ${JSON.stringify(textOf(result))}, want ${JSON.stringify(want)}`);
    const foreign = out.progress.filter(([, total]) => total !== steps);
    expect(foreign.length === 0, `${label}: got progress of another session: ${JSON.stringify(foreign)}`);
    const seq = out.progress.map(([p]) => p);
    expect(JSON.stringify(seq) === JSON.stringify(Array.from({ length: steps }, (_, i) => i + 1)), `${label}: progress ${JSON.stringify(seq)}, want 1..${steps}`);
    const unknown = client.errors.filter((e) => e.includes("unknown token"));
    expect(unknown.length === 0, `${label}: progress for an unknown token: ${unknown.join("; ")}`);
  } finally {
    await disconnect(client);
  }
}

await run("concurrent", flags.timeout, async (summary) => {
  summary.step = "two sessions";
  const results = await Promise.allSettled([session("A", 3, summary), session("B", 5, summary)]);
  const failed = results.filter((r) => r.status === "rejected").map((r) => r.reason);
  if (failed.length > 0) throw failed[0];
});
