// logging.mjs: logging/setLevel and notifications/message through the gateway.
//
//   node logging.mjs --url URL [--prefix everything__] [--upstream NAME]
//
// setLevel debug, then <prefix>toggle-simulated-logging (the upstream logs one
// message of a random level at once and then every 5 s). At least one message
// must arrive within 8 s, and its `logger` must name the upstream: NAME or
// NAME/<original logger> (NAME from --upstream, by default derived from the
// prefix: everything_http__ -> everything-http; no check with --prefix '').
// Then setLevel error: for 6 s no message below error may arrive. Logging is
// toggled off at the end.
import { LoggingMessageNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { connect, disconnect, expect, parseFlags, run, sleep, upstreamOfPrefix, waitFor } from "./lib.mjs";

const flags = parseFlags({ upstream: { type: "string" } });
const upstream = flags.upstream ?? upstreamOfPrefix(flags.prefix);
const LEVELS = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"];
const simulated = (m) => typeof m.data === "string" && /level[- ]message/i.test(m.data);

await run("logging", flags.timeout, async (summary) => {
  const messages = [];
  let toggled = false;
  const toggle = `${flags.prefix}toggle-simulated-logging`;
  summary.step = "connect";
  const client = await connect(flags.url, "switchboard-e2e-logging", {
    setup: (c) => c.setNotificationHandler(LoggingMessageNotificationSchema, (n) => messages.push({ ...n.params, at: Date.now() })),
  });
  try {
    expect(client.getServerCapabilities()?.logging, `server capabilities lack logging: ${JSON.stringify(client.getServerCapabilities())}`);
    summary.step = "setLevel debug";
    await client.setLoggingLevel("debug");

    summary.step = `call ${toggle}`;
    await client.callTool({ name: toggle, arguments: {} }, undefined, { timeout: 15_000 });
    toggled = true;
    summary.step = "wait for a simulated message";
    const got = await waitFor(() => messages.some(simulated), 8_000);
    expect(got, `no simulated notifications/message within 8 s after setLevel debug (got ${messages.length} other: ${JSON.stringify(messages)})`);
    const first = messages.find(simulated);
    summary.first = { level: first.level, logger: first.logger, data: first.data };
    // A wrong logger is reported at the end, so the level check still runs.
    const problems = [];
    if (upstream && !(first.logger === upstream || (typeof first.logger === "string" && first.logger.startsWith(`${upstream}/`)))) {
      problems.push(`notifications/message logger ${JSON.stringify(first.logger)}, want ${JSON.stringify(upstream)} or "${upstream}/<logger>" (message: ${JSON.stringify(first)})`);
    }

    summary.step = "setLevel error";
    await client.setLoggingLevel("error");
    const errorFrom = Date.now();
    await sleep(6_000);
    const after = messages.filter((m) => m.at > errorFrom + 100 && simulated(m));
    summary.afterError = after.map((m) => m.level);
    const below = after.filter((m) => LEVELS.indexOf(m.level) < LEVELS.indexOf("error"));
    if (below.length > 0) problems.push(`after setLevel error got messages below error: ${JSON.stringify(below)}`);
    summary.messages = messages.length;
    summary.step = "check";
    expect(problems.length === 0, problems.join("; "));
  } finally {
    if (toggled) {
      try {
        await client.callTool({ name: toggle, arguments: {} }, undefined, { timeout: 5_000 });
      } catch {
        // best effort
      }
    }
    await disconnect(client);
  }
});
