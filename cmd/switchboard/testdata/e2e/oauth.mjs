// oauth.mjs: an MCP client that starts with only the gateway's URL and finds
// its way to a token (MCP authorization, 2025-11-25), against a gateway whose
// auth: block points at a real OAuth server (testdata/oauth/provider.mjs).
//
//   node oauth.mjs --url URL --client-id ID --client-secret SECRET
//                  [--expect-tool NAME ...] [--hidden-tool NAME ...] [--prefix P]
//
// Part 1, by hand with fetch, checking every step of the discovery:
//   1. POST initialize without a token: 401 and a WWW-Authenticate Bearer
//      challenge with resource_metadata and scope; a bad token: invalid_token;
//   2. GET the protected-resource metadata (RFC 9728): resource = the URL,
//      authorization_servers = [issuer];
//   3. GET the authorization server metadata (RFC 8414, then OpenID discovery);
//   4. POST the token endpoint: client_credentials with resource=<the resource>
//      (RFC 8707) and the challenge's scope; the JWT's aud is the resource;
//   5. the TypeScript SDK client with that token: tools/list (all pages) is
//      exactly the --expect-tool set, <prefix>echo answers, a --hidden-tool
//      is an unknown tool.
// Part 2, the TypeScript SDK's own OAuth support: StreamableHTTPClientTransport
// with a ClientCredentialsProvider, given only the URL and the client's
// credentials, connects (401 → discovery → token → retry), lists and calls.
import { randomUUID } from "node:crypto";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ClientCredentialsProvider } from "@modelcontextprotocol/sdk/client/auth-extensions.js";
import { expect, listAllTools, parseFlags, run, textOf } from "./lib.mjs";

const flags = parseFlags({
  "client-id": { type: "string" },
  "client-secret": { type: "string" },
  "expect-tool": { type: "string", multiple: true, default: [] },
  "hidden-tool": { type: "string", multiple: true, default: [] },
});

const initialize = {
  jsonrpc: "2.0",
  id: 0,
  method: "initialize",
  params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "oauth-e2e", version: "0.0.0" } },
};

/** The parameters of a Bearer challenge: {resource_metadata, scope, error, ...}. */
function challengeParams(header) {
  expect(header && /^Bearer\s/i.test(header), `WWW-Authenticate is not a Bearer challenge: ${JSON.stringify(header)}`);
  const params = {};
  for (const m of header.matchAll(/([a-z_]+)="([^"]*)"/g)) params[m[1]] = m[2];
  return params;
}

async function getJSON(url) {
  const res = await fetch(url, { headers: { accept: "application/json" } });
  expect(res.ok, `GET ${url}: HTTP ${res.status}`);
  return res.json();
}

async function checkTools(client, summary, label) {
  const names = (await listAllTools(client)).map((t) => t.name).sort();
  const want = [...flags["expect-tool"]].sort();
  if (want.length > 0) {
    expect(JSON.stringify(names) === JSON.stringify(want), `${label}: tools/list = ${JSON.stringify(names)}, want ${JSON.stringify(want)}`);
  }
  const message = `oauth e2e ${randomUUID()}`;
  const echo = await client.callTool({ name: `${flags.prefix}echo`, arguments: { message } });
  expect(!echo.isError && textOf(echo) === `Echo: ${message}`, `${label}: echo: ${JSON.stringify(echo)}`);
  for (const hidden of flags["hidden-tool"]) {
    let refused = false;
    try {
      const r = await client.callTool({ name: hidden, arguments: {} });
      refused = r.isError === true;
    } catch (err) {
      refused = /unknown tool/i.test(String(err?.message ?? err));
    }
    expect(refused, `${label}: the hidden tool ${hidden} was callable`);
  }
  summary[label] = { tools: names.length, echo: "ok" };
}

await run("oauth", flags.timeout, async (summary) => {
  expect(flags["client-id"] && flags["client-secret"], "--client-id and --client-secret are required");

  summary.step = "401 challenge";
  const noToken = await fetch(flags.url, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
    body: JSON.stringify(initialize),
  });
  expect(noToken.status === 401, `initialize without a token: HTTP ${noToken.status}, want 401`);
  expect(!noToken.headers.get("mcp-session-id"), "a session was started without a token");
  const challenge = challengeParams(noToken.headers.get("www-authenticate"));
  expect(challenge.resource_metadata, `no resource_metadata in ${noToken.headers.get("www-authenticate")}`);
  expect(challenge.error === undefined, `a request without a token got error=${challenge.error}`);
  const body = await noToken.json();
  expect(body?.error && body.id === null, `401 body is not a JSON-RPC error: ${JSON.stringify(body)}`);

  summary.step = "bad token";
  const bad = await fetch(flags.url, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream", authorization: "Bearer e30.e30.e30" },
    body: JSON.stringify(initialize),
  });
  expect(bad.status === 401, `a bad token: HTTP ${bad.status}, want 401`);
  expect(challengeParams(bad.headers.get("www-authenticate")).error === "invalid_token", "a bad token: no error=invalid_token");
  await bad.body?.cancel();

  summary.step = "protected-resource metadata";
  const prm = await getJSON(challenge.resource_metadata);
  expect(prm.resource === flags.url, `metadata resource ${prm.resource}, want ${flags.url}`);
  expect(Array.isArray(prm.authorization_servers) && prm.authorization_servers.length > 0, `no authorization_servers: ${JSON.stringify(prm)}`);
  const issuer = prm.authorization_servers[0];
  summary.issuer = issuer;

  summary.step = "authorization server metadata";
  const iu = new URL(issuer);
  const path = iu.pathname === "/" ? "" : iu.pathname.replace(/\/$/, "");
  let asMeta;
  for (const wk of [`/.well-known/oauth-authorization-server${path}`, `${path}/.well-known/openid-configuration`]) {
    const res = await fetch(new URL(wk, iu.origin), { headers: { accept: "application/json" } });
    if (res.ok) {
      asMeta = await res.json();
      summary.asMetadata = wk;
      break;
    }
    await res.body?.cancel();
  }
  expect(asMeta, `no authorization server metadata for ${issuer}`);
  expect(asMeta.issuer === issuer, `metadata issuer ${asMeta.issuer}, want ${issuer}`);
  expect(asMeta.token_endpoint, "no token_endpoint");
  expect((asMeta.grant_types_supported ?? []).includes("client_credentials"), `client_credentials not supported: ${JSON.stringify(asMeta.grant_types_supported)}`);

  summary.step = "token (client_credentials)";
  const form = new URLSearchParams({ grant_type: "client_credentials", resource: prm.resource });
  if (challenge.scope) form.set("scope", challenge.scope);
  const basic = Buffer.from(`${encodeURIComponent(flags["client-id"])}:${encodeURIComponent(flags["client-secret"])}`).toString("base64");
  const tokRes = await fetch(asMeta.token_endpoint, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", accept: "application/json", authorization: `Basic ${basic}` },
    body: form,
  });
  const tok = await tokRes.json();
  expect(tokRes.ok && tok.access_token, `token endpoint: HTTP ${tokRes.status} ${JSON.stringify(tok)}`);
  const claims = JSON.parse(Buffer.from(tok.access_token.split(".")[1] ?? "", "base64url").toString() || "{}");
  expect([].concat(claims.aud).includes(prm.resource), `token aud ${JSON.stringify(claims.aud)}, want ${prm.resource}`);
  summary.token = { format: "jwt", sub: claims.sub, scope: claims.scope };

  summary.step = "SDK client with the token";
  const c1 = new Client({ name: "oauth-e2e-token", version: "0.0.0" }, { capabilities: {} });
  await c1.connect(new StreamableHTTPClientTransport(new URL(flags.url), {
    requestInit: { headers: { authorization: `Bearer ${tok.access_token}` } },
  }));
  try {
    await checkTools(c1, summary, "withToken");
  } finally {
    await c1.close().catch(() => {});
  }

  summary.step = "SDK OAuth (ClientCredentialsProvider)";
  const provider = new ClientCredentialsProvider({
    clientId: flags["client-id"],
    clientSecret: flags["client-secret"],
    scope: challenge.scope,
    // The issuer the client found in part 1: the SDK then sends the credentials only there.
    expectedIssuer: issuer,
  });
  const c2 = new Client({ name: "oauth-e2e-sdk", version: "0.0.0" }, { capabilities: {} });
  await c2.connect(new StreamableHTTPClientTransport(new URL(flags.url), { authProvider: provider }));
  try {
    expect(provider.tokens()?.access_token, "the SDK connected without obtaining a token");
    await checkTools(c2, summary, "sdkOAuth");
  } finally {
    await c2.close().catch(() => {});
  }
});
