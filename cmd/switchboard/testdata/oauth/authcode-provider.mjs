// authcode-provider.mjs: a real OAuth 2.1 authorization server for the
// end-to-end tests of per-user upstream OAuth (issue 17;
// cmd/switchboard/upstream_oauth_e2e_test.go), built on the npm package
// oidc-provider (pinned in .ci/peers/package.json; version 9 needs Node 22).
//
//   node authcode-provider.mjs --port PORT --resource URL [--resource URL...]
//                              [--scope mcp] [--users alice,bob] [--consent auto|page]
//
// - issuer http://127.0.0.1:PORT; an RS256 signing key generated at start
//   (never written to disk);
// - the authorization-code grant with PKCE, S256 only and required of every
//   client; RFC 9207: the authorization response carries iss, and the
//   metadata says authorization_response_iss_parameter_supported;
// - RFC 8707 resource indicators: each --resource is a known resource (an MCP
//   server's URL), for which access tokens are RS256 JWTs (RFC 9068, typ
//   at+jwt) with aud = that resource, sub = the user, scope and client_id;
//   another resource is refused with invalid_target;
// - refresh tokens for every client allowed the refresh_token grant (no
//   offline_access needed), rotated on each use;
// - RFC 7009 revocation; RFC 7591 dynamic registration, open (no initial
//   access token);
// - OAuth Client ID Metadata Documents (oidc-provider's experimental
//   draft-02 feature), so the metadata says
//   client_id_metadata_document_supported; the provider only fetches https
//   client_id URLs;
// - discovery at /.well-known/openid-configuration and, for RFC 8414 clients,
//   the same document at /.well-known/oauth-authorization-server;
// - a login a browser can drive: GET /interaction/UID is a form with a
//   username field (input#username, name=login; one of --users, no password)
//   and a submit button (button#submit); consent is then given at once
//   (--consent auto) or by one button (--consent page: button#allow).
//
// Once it listens it prints one JSON line on stdout:
//   {"ready":true,"issuer":"http://127.0.0.1:PORT"}
// and then logs each grant, refusal and revocation on stderr, without tokens.
import { generateKeyPairSync, randomBytes, randomUUID } from "node:crypto";
import { createServer } from "node:http";
import { parseArgs } from "node:util";
import Provider, { errors } from "oidc-provider";

const { values: flags } = parseArgs({
  options: {
    port: { type: "string" },
    resource: { type: "string", multiple: true, default: [] },
    scope: { type: "string", default: "mcp" },
    users: { type: "string", default: "alice,bob" },
    consent: { type: "string", default: "auto" },
  },
  strict: true,
});
if (!flags.port || flags.resource.length === 0) {
  console.error("authcode-provider.mjs: --port and at least one --resource are required");
  process.exit(2);
}
if (!["auto", "page"].includes(flags.consent)) {
  console.error("authcode-provider.mjs: --consent is auto or page");
  process.exit(2);
}
const port = Number(flags.port);
const issuer = `http://127.0.0.1:${port}`;
const resources = new Set(flags.resource);
const scopes = flags.scope.split(" ").filter(Boolean);
const users = new Set(flags.users.split(",").filter(Boolean));

const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
const jwk = { ...privateKey.export({ format: "jwk" }), kid: `e2e-${randomUUID().slice(0, 8)}`, alg: "RS256", use: "sig" };

const provider = new Provider(issuer, {
  jwks: { keys: [jwk] },
  cookies: { keys: [randomBytes(32).toString("base64url")] },
  scopes: ["openid", "offline_access", ...scopes],
  async findAccount(ctx, id) {
    if (!users.has(id)) {
      return undefined;
    }
    return { accountId: id, async claims() { return { sub: id }; } };
  },
  pkce: { required: () => true },
  // Every client allowed the refresh_token grant gets a refresh token, and
  // each refresh rotates it.
  issueRefreshToken: async (ctx, client) => client.grantTypeAllowed("refresh_token"),
  rotateRefreshToken: () => true,
  features: {
    devInteractions: { enabled: false },
    registration: { enabled: true },
    revocation: { enabled: true },
    introspection: { enabled: false },
    clientIdMetadataDocument: { enabled: true, ack: "draft-02" },
    resourceIndicators: {
      enabled: true,
      defaultResource: (ctx, client, oneOf) => (oneOf ? oneOf[0] : [...resources][0]),
      useGrantedResource: () => true,
      getResourceServerInfo(ctx, resourceIndicator) {
        if (!resources.has(resourceIndicator)) {
          throw new errors.InvalidTarget(`unknown resource ${resourceIndicator}`);
        }
        return {
          scope: scopes.join(" "),
          audience: resourceIndicator,
          accessTokenTTL: 600,
          accessTokenFormat: "jwt",
          jwt: { sign: { alg: "RS256" } },
        };
      },
    },
  },
});

// What the test may check, never a token or a code.
provider.on("grant.success", (ctx) => {
  const p = ctx.oidc?.params ?? {};
  const sub = ctx.oidc?.entities?.Account?.accountId ?? ctx.oidc?.entities?.Grant?.accountId ?? "";
  console.error(`token issued: grant_type=${p.grant_type} client_id=${ctx.oidc?.client?.clientId ?? ""} resource=${p.resource ?? ""} sub=${sub}`);
});
provider.on("grant.error", (ctx, err) => console.error(`token refused: ${err.name}: ${err.error_description ?? err.message}`));
provider.on("grant.revoked", (ctx, grantId) => console.error(`grant revoked: ${grantId}`));
provider.on("revocation.error", (ctx, err) => console.error(`revocation refused: ${err.name}: ${err.error_description ?? err.message}`));
provider.on("registration_create.success", (ctx, client) => console.error(`client registered: ${client.clientId} redirect_uris=${client.redirectUris.join(",")} auth=${client.clientAuthMethod}`));
provider.on("registration_create.error", (ctx, err) => console.error(`registration refused: ${err.name}: ${err.error_description ?? err.message}`));
provider.on("authorization.error", (ctx, err) => console.error(`authorization refused: ${err.name}: ${err.error_description ?? err.message}`));
provider.on("server_error", (ctx, err) => console.error(`server_error: ${err.stack ?? err}`));

// RFC 8414: serve the OpenID configuration at the OAuth well-known path too.
provider.use(async (ctx, next) => {
  if (ctx.method === "GET" && ctx.path === "/.well-known/oauth-authorization-server") {
    ctx.path = "/.well-known/openid-configuration";
  }
  await next();
});

const escape = (s) => String(s).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

function page(res, status, title, body) {
  res.statusCode = status;
  res.setHeader("Content-Type", "text/html; charset=utf-8");
  res.setHeader("Cache-Control", "no-store");
  res.end(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${escape(title)}</title>
<style>
body { font-family: system-ui, sans-serif; background: #f4f5f7; margin: 0; }
main { max-width: 22rem; margin: 4rem auto; background: #fff; padding: 2rem; border-radius: 8px; box-shadow: 0 1px 4px #0002; }
h1 { font-size: 1.3rem; margin-top: 0; }
label { display: block; margin-bottom: .3rem; }
input { width: 100%; box-sizing: border-box; padding: .5rem; font-size: 1rem; margin-bottom: 1rem; }
button { padding: .5rem 1.2rem; font-size: 1rem; background: #2456c7; color: #fff; border: 0; border-radius: 4px; }
.err { color: #a40000; } .small { color: #555; font-size: .9rem; }
</style></head><body><main>${body}</main></body></html>`);
}

async function readForm(req) {
  let body = "";
  for await (const chunk of req) {
    body += chunk;
    if (body.length > 8192) {
      break;
    }
  }
  return new URLSearchParams(body);
}

function loginPage(res, uid, clientName, error) {
  page(res, error ? 400 : 200, "Sign in", `<h1>Sign in</h1>
<p class="small">to continue to ${escape(clientName)}</p>
${error ? `<p class="err" role="alert">${escape(error)}</p>` : ""}
<form method="post" action="/interaction/${escape(uid)}/login" autocomplete="off">
<label for="username">Username</label>
<input id="username" name="login" required autofocus>
<button id="submit" type="submit">Sign in</button>
</form>
<p class="small">Known users: ${escape([...users].join(", "))}</p>`);
}

// consentResult grants everything the interaction misses: OIDC scopes and
// claims, and the resource scopes.
async function consentResult(interaction) {
  const { prompt: { details }, params, session: { accountId } } = interaction;
  const grant = interaction.grantId
    ? await provider.Grant.find(interaction.grantId)
    : new provider.Grant({ accountId, clientId: params.client_id });
  if (details.missingOIDCScope) {
    grant.addOIDCScope(details.missingOIDCScope.join(" "));
  }
  if (details.missingOIDCClaims) {
    grant.addOIDCClaims(details.missingOIDCClaims);
  }
  for (const [indicator, s] of Object.entries(details.missingResourceScopes ?? {})) {
    grant.addResourceScope(indicator, s.join(" "));
  }
  const grantId = await grant.save();
  return { consent: interaction.grantId ? {} : { grantId } };
}

async function finish(req, res, result) {
  await provider.interactionFinished(req, res, result, { mergeWithLastSubmission: false });
}

async function interactions(req, res, url) {
  const m = url.pathname.match(/^\/interaction\/([^/]+)(?:\/(login|consent))?$/);
  if (!m) {
    return page(res, 404, "Not found", "<h1>Not found</h1>");
  }
  const [, uid, step] = m;
  const interaction = await provider.interactionDetails(req, res);
  if (interaction.uid !== uid) {
    return page(res, 400, "Wrong interaction", "<h1>Wrong interaction</h1>");
  }
  const client = await provider.Client.find(interaction.params.client_id);
  const clientName = client?.clientName ?? interaction.params.client_id;
  const prompt = interaction.prompt.name;
  if (req.method === "GET" && !step) {
    if (prompt === "login") {
      return loginPage(res, uid, clientName);
    }
    if (prompt === "consent" && flags.consent === "auto") {
      console.error(`consent given: ${interaction.session.accountId} to ${interaction.params.client_id}`);
      return finish(req, res, await consentResult(interaction));
    }
    if (prompt === "consent") {
      return page(res, 200, "Allow access", `<h1>Allow access</h1>
<p>${escape(clientName)} asks to reach <code>${escape(interaction.params.resource ?? "")}</code>
as <strong>${escape(interaction.session.accountId)}</strong>, with scope <code>${escape(interaction.params.scope ?? "")}</code>.</p>
<form method="post" action="/interaction/${escape(uid)}/consent"><button id="allow" type="submit">Allow</button></form>`);
    }
    return page(res, 400, "Unexpected prompt", `<h1>Unexpected prompt ${escape(prompt)}</h1>`);
  }
  if (req.method === "POST" && step === "login" && prompt === "login") {
    const login = (await readForm(req)).get("login") ?? "";
    if (!users.has(login)) {
      return loginPage(res, uid, clientName, `Unknown user ${login}`);
    }
    console.error(`signed in: ${login}`);
    return finish(req, res, { login: { accountId: login } });
  }
  if (req.method === "POST" && step === "consent" && prompt === "consent") {
    console.error(`consent given: ${interaction.session.accountId} to ${interaction.params.client_id}`);
    return finish(req, res, await consentResult(interaction));
  }
  return page(res, 400, "Bad request", "<h1>Bad request</h1>");
}

const callback = provider.callback();
const server = createServer((req, res) => {
  const url = new URL(req.url, issuer);
  if (!url.pathname.startsWith("/interaction/")) {
    return callback(req, res);
  }
  interactions(req, res, url).catch((err) => {
    console.error(`interaction error: ${err.name}: ${err.message}`);
    if (!res.headersSent) {
      page(res, 400, "Error", `<h1>Error</h1><p>${escape(err.message)}</p>`);
    }
  });
});
server.listen(port, "127.0.0.1", () => {
  console.log(JSON.stringify({ ready: true, issuer }));
});
const stop = () => server.close(() => process.exit(0));
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
