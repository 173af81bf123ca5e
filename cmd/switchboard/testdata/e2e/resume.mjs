// resume.mjs: a POST's SSE stream that drops is resumed with GET + Last-Event-ID.
//
//   node resume.mjs --url URL [--prefix everything__] [--duration 3] [--steps 3]
//
// Raw HTTP (fetch): initialize, initialized, then POST tools/call
// <prefix>trigger-long-running-operation {duration, steps} with a progressToken
// and Accept: application/json, text/event-stream. Read SSE events until the
// first progress event (it must carry an `id:`), abort the fetch, then GET the
// endpoint with Mcp-Session-Id and Last-Event-ID and read until the response
// to the call's id. Asserts: every progress after the last one seen arrives
// (in order, none repeated), then the result, with the right text.
//
// --resume-delay-ms MS waits before the GET (default 0: resume while the call
// still runs, so the rest must arrive live on the resumed stream). Direct runs
// against server-everything need a delay past the call's end (e.g. 3500): its
// demo event store only replays stored events and returns an event id where the
// SDK expects a stream id, so live events after the replay are lost.
import { randomUUID } from "node:crypto";
import { exposed, expect, parseFlags, rawInitialize, rawPost, run, sleep, sseEvents } from "./lib.mjs";

const flags = parseFlags({
  duration: { type: "string", default: "3" },
  steps: { type: "string", default: "3" },
  "resume-delay-ms": { type: "string", default: "0" },
});
const duration = Number(flags.duration);
const steps = Number(flags.steps);

await run("resume", flags.timeout, async (summary) => {
  summary.step = "initialize";
  const { session, protocolVersion } = await rawInitialize(flags.url, "2025-11-25", "switchboard-e2e-resume");
  expect(session, "initialize: no Mcp-Session-Id (resumption needs a session)");
  summary.protocolVersion = protocolVersion;
  try {
    const token = `resume-${randomUUID()}`;
    const callId = 41;
    summary.step = "POST tools/call";
    const abort = new AbortController();
    const res = await rawPost(
      flags.url,
      {
        jsonrpc: "2.0",
        id: callId,
        method: "tools/call",
        params: { name: exposed(flags.prefix, "trigger-long-running-operation"), arguments: { duration, steps }, _meta: { progressToken: token } },
      },
      { session, protocolVersion, signal: abort.signal },
    );
    expect(res.ok, `tools/call: HTTP ${res.status}`);
    const type = res.headers.get("content-type") ?? "";
    expect(type.includes("text/event-stream"), `tools/call answered ${type}, want text/event-stream (progress must stream)`);

    const before = [];
    let lastId;
    let lastProgress;
    try {
      for await (const ev of sseEvents(res)) {
        before.push({ id: ev.id, data: ev.data.slice(0, 120) });
        if (ev.data.trim() === "") continue; // priming event
        const m = JSON.parse(ev.data);
        expect(m.id !== callId, `the call finished before any progress arrived: ${ev.data}`);
        if (m.method === "notifications/progress") {
          expect(m.params.progressToken === token, `progress for token ${JSON.stringify(m.params.progressToken)}, want ${token}`);
          expect(ev.id !== undefined && ev.id !== "", `the progress event has no SSE id, so the stream cannot be resumed: ${JSON.stringify(ev)}`);
          lastId = ev.id;
          lastProgress = m.params.progress;
          break;
        }
      }
    } finally {
      abort.abort();
    }
    summary.beforeDrop = before;
    expect(lastId !== undefined, `the POST stream ended without a progress event: ${JSON.stringify(before)}`);
    summary.lastEventId = lastId;
    summary.lastProgressSeen = lastProgress;

    await sleep(Number(flags["resume-delay-ms"]));
    summary.step = "GET with Last-Event-ID";
    const resumed = await fetch(flags.url, {
      method: "GET",
      headers: { accept: "text/event-stream", "mcp-session-id": session, "mcp-protocol-version": protocolVersion, "last-event-id": lastId },
      signal: AbortSignal.timeout((duration + 15) * 1000),
    });
    if (!resumed.ok) expect(false, `GET with Last-Event-ID: HTTP ${resumed.status} ${await resumed.text().catch(() => "")}`);
    expect((resumed.headers.get("content-type") ?? "").includes("text/event-stream"), `GET answered ${resumed.headers.get("content-type")}`);
    const after = [];
    let result;
    for await (const ev of sseEvents(resumed)) {
      if (ev.data.trim() === "") continue;
      const m = JSON.parse(ev.data);
      after.push({ id: ev.id, method: m.method, progress: m.params?.progress, resultFor: m.id });
      if (m.method === "notifications/progress" && m.params.progressToken === token) continue;
      if (m.id === callId) {
        result = m;
        break;
      }
    }
    summary.afterResume = after;
    expect(result, `the resumed stream ended without the response to id ${callId}`);
    expect(result.result, `the call failed: ${JSON.stringify(result.error)}`);
    const text = (result.result.content ?? []).map((c) => c.text).join("\n");
    const want = `Long running operation completed. Duration: ${duration} seconds, Steps: ${steps}.`;
    expect(text === want, `result ${JSON.stringify(text)}, want ${JSON.stringify(want)}`);
    const progress = after.filter((e) => e.method === "notifications/progress").map((e) => e.progress);
    const expected = [];
    for (let p = lastProgress + 1; p <= steps; p++) expected.push(p);
    expect(JSON.stringify(progress) === JSON.stringify(expected),
      `progress after resuming ${JSON.stringify(progress)}, want ${JSON.stringify(expected)} (everything after ${lastProgress}, nothing repeated)`);
  } finally {
    await fetch(flags.url, { method: "DELETE", headers: { "mcp-session-id": session, "mcp-protocol-version": protocolVersion } }).catch(() => {});
  }
});
