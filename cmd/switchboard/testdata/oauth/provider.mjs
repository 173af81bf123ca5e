// provider.mjs: a real OAuth 2.1 / OpenID Connect authorization server for the
// end-to-end auth test (cmd/switchboard/auth_e2e_test.go), built on the npm
// package oidc-provider (pinned in the repository's package.json).
//
//   node provider.mjs --port PORT --audience URL --client-id ID --client-secret SECRET [--scope mcp]
//                     [--groups eng,ops]
//
// - issuer http://127.0.0.1:PORT (plain http is accepted by Switchboard on loopback only);
// - an RS256 signing key generated at start (never written to disk);
// - one confidential client allowed the client_credentials grant only
//   (client_secret_basic or client_secret_post);
// - RFC 8707 resource indicators: the only known resource is --audience, for
//   which access tokens are JWTs (RFC 9068, typ at+jwt) with aud = the audience,
//   sub = the client id, scope = the granted scopes, and a groups claim;
// - discovery at /.well-known/openid-configuration (oidc-provider's own) and,
//   for RFC 8414 clients, the same document at /.well-known/oauth-authorization-server.
//
// Prints one line "READY <issuer>" on stdout once it listens.
import { generateKeyPairSync, randomUUID } from "node:crypto";
import { parseArgs } from "node:util";
import Provider, { errors } from "oidc-provider";

const { values: flags } = parseArgs({
  options: {
    port: { type: "string" },
    audience: { type: "string" },
    "client-id": { type: "string" },
    "client-secret": { type: "string" },
    scope: { type: "string", default: "mcp" },
    groups: { type: "string", default: "" },
  },
  strict: true,
});
for (const k of ["port", "audience", "client-id", "client-secret"]) {
  if (!flags[k]) {
    console.error(`provider.mjs: --${k} is required`);
    process.exit(2);
  }
}
const port = Number(flags.port);
const issuer = `http://127.0.0.1:${port}`;
const audience = flags.audience;
const scopes = flags.scope.split(" ").filter(Boolean);
const groups = flags.groups.split(",").filter(Boolean);

const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
const jwk = { ...privateKey.export({ format: "jwk" }), kid: `e2e-${randomUUID().slice(0, 8)}`, alg: "RS256", use: "sig" };

const provider = new Provider(issuer, {
  clients: [
    {
      client_id: flags["client-id"],
      client_secret: flags["client-secret"],
      grant_types: ["client_credentials"],
      redirect_uris: [],
      response_types: [],
      token_endpoint_auth_method: "client_secret_basic",
      scope: scopes.join(" "),
    },
  ],
  jwks: { keys: [jwk] },
  scopes,
  features: {
    devInteractions: { enabled: false },
    clientCredentials: { enabled: true },
    introspection: { enabled: false },
    revocation: { enabled: false },
    resourceIndicators: {
      enabled: true,
      // A token request without resource= gets a token for the gateway anyway
      // (oidc-provider would otherwise issue an opaque token for its userinfo).
      defaultResource: () => audience,
      useGrantedResource: () => true,
      getResourceServerInfo(ctx, resourceIndicator) {
        if (resourceIndicator !== audience) {
          throw new errors.InvalidTarget(`unknown resource ${resourceIndicator}`);
        }
        return {
          scope: scopes.join(" "),
          audience,
          accessTokenTTL: 600,
          accessTokenFormat: "jwt",
          jwt: { sign: { alg: "RS256" } },
        };
      },
    },
  },
  extraTokenClaims() {
    return groups.length > 0 ? { groups } : undefined;
  },
});

// The token requests the test cares about, without secrets: the test checks
// that resource= was sent.
provider.on("grant.success", (ctx) => {
  const p = ctx.oidc?.params ?? {};
  console.error(`token issued: grant_type=${p.grant_type} resource=${p.resource ?? ""} scope=${p.scope ?? ""}`);
});
provider.on("grant.error", (ctx, err) => console.error(`token refused: ${err.name}: ${err.error_description ?? err.message}`));
provider.on("server_error", (ctx, err) => console.error(`server_error: ${err.stack ?? err}`));

// RFC 8414: oidc-provider serves only the OpenID configuration; the MCP
// client looks for the OAuth form first. Serve the same document there.
provider.use(async (ctx, next) => {
  if (ctx.method === "GET" && ctx.path === "/.well-known/oauth-authorization-server") {
    ctx.path = "/.well-known/openid-configuration";
  }
  await next();
});

const server = provider.listen(port, "127.0.0.1", () => {
  console.log(`READY ${issuer}`);
});
const stop = () => server.close(() => process.exit(0));
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
