// progress.mjs: progress notifications travel back to the caller.
//
//   node progress.mjs --url URL [--prefix everything__] [--duration 2] [--steps 4]
//
// Calls <prefix>trigger-long-running-operation {duration, steps} with an
// onprogress callback (the SDK sends a progressToken) and asserts at least
// min(3, steps) notifications, strictly increasing, none after the result,
// the last one at total, and the result text.
import { exposed, connect, disconnect, expect, parseFlags, run, textOf } from "./lib.mjs";

const flags = parseFlags({
  duration: { type: "string", default: "2" },
  steps: { type: "string", default: "4" },
});
const duration = Number(flags.duration);
const steps = Number(flags.steps);

await run("progress", flags.timeout, async (summary) => {
  summary.step = "connect";
  const client = await connect(flags.url, "switchboard-e2e-progress");
  try {
    const progress = [];
    let resolved = false;
    let lateProgress = 0;
    summary.step = "trigger-long-running-operation";
    const t0 = Date.now();
    const result = await client.callTool(
      { name: exposed(flags.prefix, "trigger-long-running-operation"), arguments: { duration, steps } },
      undefined,
      {
        onprogress: (p) => {
          if (resolved) lateProgress++;
          progress.push({ progress: p.progress, total: p.total, atMs: Date.now() - t0 });
        },
        timeout: (duration + 30) * 1000,
      },
    );
    resolved = true;
    summary.callMs = Date.now() - t0;
    summary.progress = progress;
    expect(!result.isError, `tool returned isError: ${textOf(result)}`);
    const want = `Long running operation completed. Duration: ${duration} seconds, Steps: ${steps}.`;
    expect(textOf(result) === want, `result: want ${JSON.stringify(want)}, got ${JSON.stringify(textOf(result))}`);
    const min = Math.min(3, steps);
    expect(progress.length >= min, `got ${progress.length} progress notification(s), want at least ${min}`);
    for (let i = 1; i < progress.length; i++) {
      expect(progress[i].progress > progress[i - 1].progress, `progress not increasing: ${JSON.stringify(progress.map((p) => p.progress))}`);
    }
    for (const p of progress) {
      expect(p.total === undefined || p.total === steps, `progress total ${p.total}, want ${steps}`);
    }
    expect(progress.at(-1).progress === steps, `last progress ${progress.at(-1).progress}, want ${steps}`);
    // The SDK drops progress that arrives after the response and reports it as an error.
    const unknown = client.errors.filter((e) => e.includes("unknown token"));
    expect(lateProgress === 0 && unknown.length === 0, `progress after the result / for an unknown token: ${unknown.join("; ")}`);
  } finally {
    await disconnect(client);
  }
});
