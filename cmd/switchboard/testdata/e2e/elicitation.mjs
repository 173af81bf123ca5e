// elicitation.mjs: server->client elicitation/create in form mode and URL mode
// through the gateway.
//
//   node elicitation.mjs --url URL [--prefix everything__] [--no-url-mode]
//
// The client declares `elicitation: {form: {}, url: {}}`.
//  1. Form mode: <prefix>trigger-elicitation-request; the client accepts with
//     content; the tool result must echo that content.
//  2. URL mode (request path): <prefix>trigger-url-elicitation {url,
//     elicitationId}; the client must see mode "url", the url and an
//     elicitationId, and accepts; the result must report completion with the
//     tool's elicitationId. notifications/elicitation/complete is recorded if
//     it arrives (server-everything does not send one), never required.
//  3. URL mode (error path): the same tool with errorPath: true must fail with
//     -32042 carrying data.elicitations[0] (mode "url"), and a retry with the
//     same arguments must then succeed.
import { randomUUID } from "node:crypto";
import { ElicitRequestSchema, ElicitationCompleteNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { connect, disconnect, expect, parseFlags, run, sleep, textOf, waitForTool } from "./lib.mjs";

const flags = parseFlags({ "no-url-mode": { type: "boolean", default: false } });

await run("elicitation", flags.timeout, async (summary) => {
  const requests = [];
  const completes = [];
  const name = `E2E Tester ${randomUUID().slice(0, 8)}`;
  summary.step = "connect";
  const client = await connect(flags.url, "switchboard-e2e-elicitation", {
    capabilities: { elicitation: { form: {}, url: {} } },
    setup: (c) => {
      c.setRequestHandler(ElicitRequestSchema, async (req) => {
        requests.push(req.params);
        if (req.params.mode === "url") return { action: "accept" };
        return { action: "accept", content: { name, check: true, email: "e2e@example.com", integer: 7 } };
      });
      c.setNotificationHandler(ElicitationCompleteNotificationSchema, (n) => completes.push(n.params));
    },
  });
  try {
    // 1. Form mode.
    const formTool = `${flags.prefix}trigger-elicitation-request`;
    summary.step = `wait for ${formTool}`;
    await waitForTool(client, formTool);
    summary.step = `call ${formTool}`;
    const form = await client.callTool({ name: formTool, arguments: {} }, undefined, { timeout: 20_000 });
    const formText = textOf(form);
    expect(!form.isError, `form: tool returned isError: ${formText}`);
    expect(requests.length === 1, `form: client got ${requests.length} elicitation request(s), want 1`);
    const f = requests[0];
    expect(f.mode === undefined || f.mode === "form", `form: request mode ${JSON.stringify(f.mode)}, want form/absent`);
    expect(f.requestedSchema?.properties?.name, `form: request has no requestedSchema.properties.name: ${JSON.stringify(f)}`);
    expect(formText.includes(`- Name: ${name}`), `form: result does not echo the accepted name ${JSON.stringify(name)}: ${JSON.stringify(formText)}`);
    expect(formText.includes("- Favorite Integer: 7"), `form: result does not echo integer 7: ${JSON.stringify(formText)}`);
    summary.form = "accepted content echoed";

    if (flags["no-url-mode"]) return;

    // 2. URL mode, request path.
    const urlTool = `${flags.prefix}trigger-url-elicitation`;
    summary.step = `wait for ${urlTool}`;
    await waitForTool(client, urlTool);
    const url = `https://example.com/switchboard-e2e/${randomUUID()}`;
    const elicitationId = `e2e-${randomUUID()}`;
    summary.step = `call ${urlTool}`;
    const urlRes = await client.callTool({ name: urlTool, arguments: { url, elicitationId } }, undefined, { timeout: 20_000 });
    const urlText = textOf(urlRes);
    expect(!urlRes.isError, `url: tool returned isError: ${urlText}`);
    expect(requests.length === 2, `url: client got ${requests.length - 1} more elicitation request(s), want 1`);
    const u = requests[1];
    expect(u.mode === "url", `url: request mode ${JSON.stringify(u.mode)}, want "url": ${JSON.stringify(u)}`);
    expect(u.url === url, `url: request url ${JSON.stringify(u.url)}, want ${JSON.stringify(url)}`);
    expect(typeof u.elicitationId === "string" && u.elicitationId !== "", `url: request has no elicitationId: ${JSON.stringify(u)}`);
    summary.urlElicitationIdSeen = u.elicitationId === elicitationId ? "as sent by the tool" : `rewritten (${u.elicitationId})`;
    expect(urlText.includes("User completed the URL elicitation flow") && urlText.includes(`Elicitation ID: ${elicitationId}`),
      `url: result does not report completion of ${elicitationId}: ${JSON.stringify(urlText)}`);
    summary.url = "accepted";

    // 3. URL mode, error path (-32042).
    const errUrl = `https://example.com/switchboard-e2e-errpath/${randomUUID()}`;
    summary.step = `call ${urlTool} errorPath`;
    let err;
    try {
      const r = await client.callTool({ name: urlTool, arguments: { url: errUrl, errorPath: true } }, undefined, { timeout: 20_000 });
      err = { noError: r };
    } catch (e) {
      err = e;
    }
    expect(!err.noError, `url errorPath: call succeeded, want error -32042: ${JSON.stringify(err.noError)}`);
    expect(err.code === -32042, `url errorPath: error code ${err.code}, want -32042 (${err.message})`);
    const els = err.data?.elicitations;
    expect(Array.isArray(els) && els.length === 1 && els[0].mode === "url" && typeof els[0].url === "string" && els[0].elicitationId,
      `url errorPath: error data.elicitations not one URL elicitation: ${JSON.stringify(err.data)}`);
    summary.step = `retry ${urlTool} errorPath`;
    const retry = await client.callTool({ name: urlTool, arguments: { url: errUrl, errorPath: true } }, undefined, { timeout: 20_000 });
    expect(!retry.isError && textOf(retry).includes("User completed the URL elicitation flow"),
      `url errorPath: retry did not complete: ${JSON.stringify(textOf(retry))}`);
    summary.urlErrorPath = "-32042 then retry ok";

    // notifications/elicitation/complete: optional (server-everything sends none).
    await sleep(200);
    summary.elicitationComplete = completes;
  } finally {
    await disconnect(client);
  }
});
