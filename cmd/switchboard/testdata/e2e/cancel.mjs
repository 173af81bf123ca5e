// cancel.mjs: cancelling a call in flight, and the session survives it.
//
//   node cancel.mjs --url URL [--prefix everything__] [--max-reject-ms 2000]
//
// Starts <prefix>trigger-long-running-operation {duration: 30, steps: 30} with
// an AbortSignal and aborts after the first progress notification. The SDK then
// sends notifications/cancelled and rejects the call at once; note that it
// rejects with McpError code -32001 (RequestTimeout) whose message carries the
// abort reason ("AbortError: This operation was aborted"), not with the
// DOMException itself. Asserts the rejection came within --max-reject-ms and is
// that abort, that no result arrived, and that the same session still answers
// an echo call afterwards.
import { randomUUID } from "node:crypto";
import { exposed, connect, disconnect, expect, parseFlags, run, textOf } from "./lib.mjs";

const flags = parseFlags({ "max-reject-ms": { type: "string", default: "2000" } });
const maxRejectMs = Number(flags["max-reject-ms"]);

await run("cancel", flags.timeout, async (summary) => {
  summary.step = "connect";
  const client = await connect(flags.url, "switchboard-e2e-cancel");
  try {
    const controller = new AbortController();
    let abortedAt;
    let progressCount = 0;
    const t0 = Date.now();
    summary.step = "start long-running call";
    const call = client.callTool(
      { name: exposed(flags.prefix, "trigger-long-running-operation"), arguments: { duration: 30, steps: 30 } },
      undefined,
      {
        signal: controller.signal,
        timeout: 60_000,
        onprogress: () => {
          progressCount++;
          if (abortedAt === undefined) {
            abortedAt = Date.now();
            controller.abort();
          }
        },
      },
    );
    let outcome;
    try {
      const r = await call;
      outcome = { resolved: true, text: textOf(r) };
    } catch (err) {
      outcome = { rejected: true, error: err };
    }
    const settledAt = Date.now();
    summary.step = "check rejection";
    expect(abortedAt !== undefined, "no progress notification arrived before the call ended, so it was never aborted");
    summary.firstProgressMs = abortedAt - t0;
    summary.rejectAfterAbortMs = settledAt - abortedAt;
    expect(!outcome.resolved, `the call resolved after abort: ${outcome.text}`);
    const msg = String(outcome.error?.message ?? outcome.error);
    summary.rejection = { name: outcome.error?.name, code: outcome.error?.code, message: msg };
    expect(/AbortError|aborted/i.test(msg) || outcome.error?.name === "AbortError", `call rejected, but not as aborted: ${msg}`);
    expect(settledAt - abortedAt <= maxRejectMs, `call rejected ${settledAt - abortedAt} ms after abort, want <= ${maxRejectMs}`);

    summary.step = "echo after cancel";
    const message = `still alive ${randomUUID()}`;
    const echo = await client.callTool({ name: `${flags.prefix}echo`, arguments: { message } }, undefined, { timeout: 15_000 });
    expect(textOf(echo) === `Echo: ${message}`, `echo after cancel: got ${JSON.stringify(textOf(echo))}`);
    summary.echoAfterCancel = "ok";
    // Progress that the upstream still sends after the cancel is dropped by the
    // SDK and reported as "unknown token"; a gateway should stop forwarding it,
    // but a direct server-everything keeps sending it (it ignores the cancel).
    summary.progressBeforeSettle = progressCount;
    summary.lateProgressErrors = client.errors.filter((e) => e.includes("unknown token")).length;
  } finally {
    await disconnect(client);
  }
});
