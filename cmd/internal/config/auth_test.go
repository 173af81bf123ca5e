package config

import (
	"os"
	"reflect"
	"strings"
	"testing"
	"time"
)

const authYAML = `publicURL: https://mcp.example.com
auth:
  issuer: https://login.example.com/realms/eng
  scopes: [mcp]
  algorithms: [RS256, ES256]
  clockSkew: 45s
  introspection: {url: https://login.example.com/introspect, clientId: gateway, clientSecret: "${INTRO_SECRET}", cacheTTL: 1m}
policy:
  - name: engineers
    match: {groups: [eng], claims: {email_verified: true, tier: [1, 2], "realm_access.roles": admin}}
    allow: ["files/*", "search/search_*"]
    deny: ["files/delete_*"]
  - allow: ["*"]
    match: {sub: ["svc-*"], scopes: [admin]}
upstreams:
  - name: files
    command: files-server
  - name: search
    url: https://search.internal/mcp
    headers: {X-Api-Key: "file:${SECRETS:-/run}/search-key", X-Team: blue}
    auth:
      clientCredentials: {tokenURL: https://login.example.com/token, clientId: sb, clientSecret: "${CC_SECRET}", scopes: [search]}
  - name: wiki
    url: https://wiki.internal/mcp
    auth:
      tokenExchange: {tokenURL: https://login.example.com/token, clientId: sb, clientSecret: "${CC_SECRET}", audience: wiki}
`

func TestParseAuth(t *testing.T) {
	cfg, err := Parse("c.yaml", []byte(authYAML), envOf(map[string]string{"INTRO_SECRET": "i-secret", "CC_SECRET": "c-secret"}))
	if err != nil {
		t.Fatal(err)
	}
	wantAuth := &Auth{
		Issuer: "https://login.example.com/realms/eng", Audience: "https://mcp.example.com/mcp", Scopes: []string{"mcp"},
		Algorithms: []string{"RS256", "ES256"}, ClockSkew: 45 * time.Second,
		Introspection: &Introspection{URL: "https://login.example.com/introspect", ClientID: "gateway", ClientSecret: "i-secret", CacheTTL: time.Minute},
	}
	if !reflect.DeepEqual(cfg.Auth, wantAuth) {
		t.Errorf("auth:\n got %#v\nwant %#v", cfg.Auth, wantAuth)
	}
	wantPolicy := []PolicyRule{
		{Name: "engineers", Match: PolicyMatch{Groups: []string{"eng"}, Claims: map[string][]any{
			"email_verified": {true}, "tier": {float64(1), float64(2)}, "realm_access.roles": {"admin"}}},
			Allow: []string{"files/*", "search/search_*"}, Deny: []string{"files/delete_*"}},
		{Match: PolicyMatch{Sub: []string{"svc-*"}, Scopes: []string{"admin"}}, Allow: []string{"*"}},
	}
	if !reflect.DeepEqual(cfg.Policy, wantPolicy) {
		t.Errorf("policy:\n got %#v\nwant %#v", cfg.Policy, wantPolicy)
	}
	s := cfg.Upstreams[1]
	if !reflect.DeepEqual(s.Headers, map[string]string{"X-Team": "blue"}) || !reflect.DeepEqual(s.HeaderFiles, map[string]string{"X-Api-Key": "/run/search-key"}) {
		t.Errorf("headers %v files %v", s.Headers, s.HeaderFiles)
	}
	wantCC := &ClientCredentials{TokenURL: "https://login.example.com/token", ClientID: "sb", ClientSecret: "c-secret", Scopes: []string{"search"}, Resource: "https://search.internal/mcp"}
	if s.Auth == nil || !reflect.DeepEqual(s.Auth.ClientCredentials, wantCC) || s.Auth.TokenExchange != nil {
		t.Errorf("search auth = %#v", s.Auth)
	}
	wantTE := &TokenExchange{TokenURL: "https://login.example.com/token", ClientID: "sb", ClientSecret: "c-secret", Audience: "wiki", Resource: "https://wiki.internal/mcp"}
	if w := cfg.Upstreams[2]; w.Auth == nil || !reflect.DeepEqual(w.Auth.TokenExchange, wantTE) {
		t.Errorf("wiki auth = %#v", w.Auth)
	}
	out := cfg.String()
	for _, secret := range []string{"i-secret", "c-secret"} {
		if strings.Contains(out, secret) || strings.Contains(strings.ReplaceAll(strings.ReplaceAll(
			strings.TrimSpace(stringsOfConfig(cfg.Redacted())), "\n", ""), " ", ""), secret) {
			t.Errorf("secret %q shown:\n%s", secret, out)
		}
	}
	if !strings.Contains(out, "issuer: \"https://login.example.com/realms/eng\"") || !strings.Contains(out, "policy:  # 2 rules") {
		t.Errorf("String:\n%s", out)
	}
	if cfg.Auth.Introspection.ClientSecret != "i-secret" {
		t.Error("Redacted modified the original")
	}
	if cfg.NoAuthOnNetwork("0.0.0.0:80") {
		t.Error("NoAuthOnNetwork with auth")
	}
}

// stringsOfConfig renders every secret-bearing field of a redacted copy.
func stringsOfConfig(c *Config) string {
	var b strings.Builder
	b.WriteString(c.Auth.Introspection.ClientSecret)
	for _, u := range c.Upstreams {
		if u.Auth != nil && u.Auth.ClientCredentials != nil {
			b.WriteString(u.Auth.ClientCredentials.ClientSecret)
		}
		if u.Auth != nil && u.Auth.TokenExchange != nil {
			b.WriteString(u.Auth.TokenExchange.ClientSecret)
		}
	}
	return b.String()
}

func TestNoAuthOnNetwork(t *testing.T) {
	cfg, err := Parse("c.yaml", []byte("upstreams: []\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Auth != nil || cfg.Policy != nil {
		t.Error("auth or policy set by default")
	}
	if !cfg.NoAuthOnNetwork(":8080") || !cfg.NoAuthOnNetwork("0.0.0.0:8080") || cfg.NoAuthOnNetwork("127.0.0.1:8080") || cfg.NoAuthOnNetwork("[::1]:1") {
		t.Error("NoAuthOnNetwork")
	}
}

func TestParseAuthInvalid(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []string
	}{
		{
			name: "http issuer, missing audience",
			in:   "auth:\n  issuer: http://login.example.com\nupstreams: []\n",
			want: []string{
				`c.yaml:2:3: auth: needs audience (the gateway's canonical MCP URL, such as https://mcp.example.com/mcp), or publicURL to derive it from`,
				`c.yaml:2:11: auth.issuer: must use https; http is accepted only on a loopback host (localhost, 127.0.0.1, ::1), for development`,
			},
		},
		{
			name: "loopback http issuer is fine; bad audience, HS256, skew, scope, unknown key",
			in: "auth:\n  issuer: http://127.0.0.1:9000\n  audience: mcp.example.com\n  algorithms: [HS256, RS257]\n  clockSkew: 1h\n" +
				"  scopes: [\"a b\"]\n  jwks: x\nupstreams: []\n",
			want: []string{
				`c.yaml:3:13: auth.audience: has no scheme; it must be an absolute http:// or https:// URL, such as "https://search.internal/mcp"`,
				`c.yaml:4:16: auth.algorithms[0]: "HS256" is refused: a resource server verifies with the issuer's public keys, so only asymmetric algorithms (RS256, RS384, RS512, PS256, PS384, PS512, ES256, ES384, ES512, EdDSA) are safe`,
				`c.yaml:4:23: auth.algorithms[1]: "RS257" is not an accepted algorithm; use RS256, RS384, RS512, PS256, PS384, PS512, ES256, ES384, ES512, EdDSA`,
				`c.yaml:5:14: auth.clockSkew: 1h0m0s is too long; at most 5m0s, or expired tokens stay accepted`,
				`c.yaml:6:12: auth.scopes[0]: "a b" is not a scope: scopes are printable ASCII without spaces, quotes or backslashes`,
				`c.yaml:7:3: auth.jwks: unknown key "jwks"; valid keys are issuer, audience, scopes, jwksURL, algorithms, clockSkew, introspection, resourceName, documentationURL, browser, tokenKeys`,
			},
		},
		{
			name: "uppercase audience host, introspection without secret",
			in:   "auth:\n  issuer: https://a.example\n  audience: https://MCP.example.com/mcp\n  introspection: {url: https://a.example/i, clientId: x}\nupstreams: []\n",
			want: []string{
				`c.yaml:3:13: auth.audience: must have a lowercase scheme and host (the canonical form of RFC 8707), as clients send it in resource`,
				`c.yaml:4:18: auth.introspection: missing clientSecret; take it from the environment, such as clientSecret: "${CLIENT_SECRET}"`,
			},
		},
		{
			name: "policy without auth, unknown upstream, bad patterns",
			in: "policy:\n  - allow: [\"serch/*\", \"files/\", \"/x\", \"Files\"]\n    match: {groups: [], role: x}\n" +
				"upstreams:\n  - name: search\n    url: https://s.example/mcp\n",
			want: []string{
				`c.yaml:1:1: policy: needs an auth block: rules match the claims of verified tokens, so without auth there is no one to match`,
				`c.yaml:2:13: policy[0].allow[0]: no upstream is named "serch"; did you mean "search"?`,
				`c.yaml:2:24: policy[0].allow[1]: "files/" has nothing after '/'; write "files" for the whole upstream, or "files/*" for every item`,
				`c.yaml:2:34: policy[0].allow[2]: "/x" has no upstream before '/'; write "<upstream>/<item>" (use "*/<item>" for every upstream)`,
				`c.yaml:2:40: policy[0].allow[3]: upstream part "Files" may only contain upstream-name characters (a-z, 0-9, '-') and the wildcards * and ?`,
				`c.yaml:3:21: policy[0].match.groups: is an empty list, which no principal matches; remove it or list values`,
				`c.yaml:3:25: policy[0].match.role: unknown key "role"; valid keys are sub, groups, scopes, claims`,
			},
		},
		{
			name: "upstream auth: both kinds, on stdio, with Authorization header, http token URL",
			in: "upstreams:\n  - name: a\n    url: https://a.example/mcp\n    headers: {Authorization: \"Bearer x\"}\n" +
				"    auth:\n      clientCredentials: {tokenURL: \"http://login.example.com/token\", clientId: a, clientSecret: b}\n" +
				"  - name: b\n    command: b\n    auth: {tokenExchange: {}}\n" +
				"  - name: c\n    url: https://c.example/mcp\n    auth:\n      clientCredentials: {}\n      tokenExchange: {}\n",
			want: []string{
				`c.yaml:5:5: upstreams[0].auth: headers (at 4:14) already set Authorization, which auth would replace; keep one`,
				`c.yaml:6:37: upstreams[0].auth.clientCredentials.tokenURL: must use https; http is accepted only on a loopback host (localhost, 127.0.0.1, ::1), for development`,
				`c.yaml:9:5: upstreams[1].auth: auth only applies to a url (HTTP) upstream; a local program gets its credentials from env`,
				`c.yaml:14:7: upstreams[2].auth.tokenExchange: clientCredentials (at 13:7) and tokenExchange are both set; choose exactly one kind of credential`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("c.yaml", []byte(tt.in), nil)
			if err == nil {
				t.Fatal("no error")
			}
			diffLines(t, "problems", problemLines(t, err), tt.want)
		})
	}
}

func TestAuthDocExamples(t *testing.T) {
	data, err := os.ReadFile("../../../docs/auth.md")
	if err != nil {
		t.Fatal(err)
	}
	anyVar := func(string) (string, bool) { return "value", true }
	n := 0
	for i, b := range strings.Split(string(data), "```yaml\n")[1:] {
		b = b[:strings.Index(b, "```")]
		if !strings.Contains(b, "upstreams:") {
			continue
		}
		n++
		if _, err := Parse("auth.md", []byte(b), anyVar); err != nil {
			t.Errorf("yaml block %d:\n%s\n%v", i, b, err)
		}
	}
	if n == 0 {
		t.Error("no complete example in docs/auth.md")
	}
}
