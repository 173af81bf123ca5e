package config

import (
	"reflect"
	"strings"
	"testing"
)

const userOAuthYAML = `publicURL: https://mcp.example.com
auth:
  issuer: https://login.example.com
  browser: {clientId: switchboard-web, clientSecret: "${WEB_SECRET}", admins: {sub: [alice]}}
  tokenKeys: "${TOKEN_KEYS}"
upstreams:
  - name: github
    url: https://api.github.example/mcp
    headers: {Authorization: "Bearer ${SERVICE_TOKEN}"}
    auth: {type: user-oauth, scopes: [repo, "read:org"]}
  - name: jira
    url: https://jira.example/mcp
    auth: {type: user-oauth, clientId: sb, clientSecret: "${JIRA_SECRET}", resourceParameter: omit}
`

func TestParseUserOAuth(t *testing.T) {
	env := envOf(map[string]string{
		"WEB_SECRET": "w-secret", "TOKEN_KEYS": "k2:" + strings.Repeat("A", 43) + "=,k1:" + strings.Repeat("B", 43) + "=",
		"SERVICE_TOKEN": "svc", "JIRA_SECRET": "j-secret",
	})
	cfg, err := Parse("c.yaml", []byte(userOAuthYAML), env)
	if err != nil {
		t.Fatal(err)
	}
	wantBrowser := &Browser{ClientID: "switchboard-web", ClientSecret: "w-secret", Admins: &PolicyMatch{Sub: []string{"alice"}}}
	if !reflect.DeepEqual(cfg.Auth.Browser, wantBrowser) {
		t.Errorf("browser: got %#v, want %#v", cfg.Auth.Browser, wantBrowser)
	}
	if !strings.HasPrefix(cfg.Auth.TokenKeys, "k2:") {
		t.Errorf("tokenKeys = %q", cfg.Auth.TokenKeys)
	}
	want := []*UserOAuth{
		{Scopes: []string{"repo", "read:org"}},
		{ClientID: "sb", ClientSecret: "j-secret", OmitResource: true},
	}
	for i, u := range cfg.Upstreams {
		if u.Auth == nil || !reflect.DeepEqual(u.Auth.UserOAuth, want[i]) {
			t.Errorf("%s: got %#v, want %#v", u.Name, u.Auth, want[i])
		}
	}
	out := cfg.String()
	for _, secret := range []string{"w-secret", "j-secret", "svc", strings.Repeat("A", 43)} {
		if strings.Contains(out, secret) {
			t.Errorf("check output shows a secret %q:\n%s", secret, out)
		}
	}
	if !strings.Contains(out, `auth: {type: user-oauth, scopes: ["repo", "read:org"], clientId: registered by the gateway, resourceParameter: send}`) {
		t.Errorf("check output does not describe github's auth:\n%s", out)
	}
}

func TestParseUserOAuthInvalid(t *testing.T) {
	key := strings.Repeat("A", 43) + "="
	tests := []struct {
		name string
		in   string
		want []string
	}{
		{
			name: "no auth block, no publicURL, shared",
			in:   "upstreams:\n  - name: gh\n    url: https://gh.example/mcp\n    session: shared\n    auth: {type: user-oauth}\n",
			want: []string{
				`c.yaml:2:5: upstreams[0].auth: type: user-oauth needs the gateway's auth: block: each person's grant is kept under their verified identity, so clients must sign in`,
				`c.yaml:2:5: upstreams[0].auth: type: user-oauth needs publicURL: connect links and the authorization server's callback are under it`,
				`c.yaml:2:5: upstreams[0].session: is shared, but type: user-oauth calls the upstream with each person's own token, which needs a session per client; remove session: shared`,
			},
		},
		{
			name: "no browser",
			in: "publicURL: https://mcp.example.com\nauth: {issuer: https://login.example.com}\n" +
				"upstreams:\n  - name: gh\n    url: https://gh.example/mcp\n    auth: {type: user-oauth}\n",
			want: []string{
				`c.yaml:4:5: upstreams[0].auth: type: user-oauth needs auth.browser {clientId, clientSecret}: the connect page signs the browser in at https://login.example.com to check it is the person the link was made for`,
			},
		},
		{
			name: "no token keys; bad type, mixed kinds, stray keys, bad resourceParameter, secret without id",
			in: "publicURL: https://mcp.example.com\nauth: {issuer: https://login.example.com, browser: {clientId: a, clientSecret: b}}\n" +
				"upstreams:\n  - name: gh\n    url: https://gh.example/mcp\n    auth: {type: user-oauth}\n" +
				"  - name: b\n    url: https://b.example/mcp\n    auth: {type: oauth}\n" +
				"  - name: c\n    url: https://c.example/mcp\n    auth: {type: user-oauth, tokenExchange: {}}\n" +
				"  - name: d\n    url: https://d.example/mcp\n    auth: {scopes: [x]}\n" +
				"  - name: e\n    url: https://e.example/mcp\n    auth: {type: user-oauth, resourceParameter: maybe, clientSecret: s}\n",
			want: []string{
				`c.yaml:4:5: upstreams[0].auth: type: user-oauth needs auth.tokenKeys, the keys that seal upstream tokens at rest, such as tokenKeys: "${SWITCHBOARD_TOKEN_KEYS}" holding "k1:<openssl rand -base64 32>"`,
				`c.yaml:9:18: upstreams[1].auth.type: "oauth" is not a kind of upstream auth; type takes user-oauth (each person's own grant), id-jag (each person's identity assertion, exchanged) or workload-identity (the gateway's platform-issued token), and the gateway's other credentials are written as clientCredentials: or tokenExchange: without type`,
				`c.yaml:12:30: upstreams[2].auth.tokenExchange: does not go with type: user-oauth; choose one kind of credential`,
				`c.yaml:15:12: upstreams[3].auth.scopes: belongs to type: user-oauth (or inside clientCredentials: or tokenExchange:); add type: user-oauth or move it`,
				`c.yaml:16:5: upstreams[4].auth: type: user-oauth needs auth.tokenKeys, the keys that seal upstream tokens at rest, such as tokenKeys: "${SWITCHBOARD_TOKEN_KEYS}" holding "k1:<openssl rand -base64 32>"`,
				`c.yaml:18:49: upstreams[4].auth.resourceParameter: "maybe" is not send or omit (omit for authorization servers that reject RFC 8707 resource, such as Entra ID)`,
				`c.yaml:18:56: upstreams[4].auth.clientSecret: needs clientId: the secret belongs to a pre-registered client`,
			},
		},
		{
			name: "token keys: short key",
			in:   "auth: {issuer: https://login.example.com, audience: https://mcp.example.com/mcp, tokenKeys: \"k1:AAAA,k1:" + key + "\"}\nupstreams: []\n",
			want: []string{
				`c.yaml:1:93: auth.tokenKeys: key entry 1 ("k1"): the key decodes to 3 bytes, want 32 (generate one with: openssl rand -base64 32); write "k1:<base64 of 32 random bytes>", newest first, such as "${SWITCHBOARD_TOKEN_KEYS}"`,
			},
		},
	}
	tests = append(tests, struct {
		name string
		in   string
		want []string
	}{
		name: "plain http off loopback",
		in: "publicURL: https://mcp.example.com\nauth: {issuer: https://login.example.com, browser: {clientId: a, clientSecret: b}, tokenKeys: \"k1:" + key + "\"}\n" +
			"upstreams:\n  - name: gh\n    url: http://gh.example/mcp\n    auth: {type: user-oauth}\n" +
			"  - name: local\n    url: http://127.0.0.1:9/mcp\n    auth: {type: user-oauth}\n",
		want: []string{`c.yaml:5:10: upstreams[0].url: is plain http to a non-loopback host, and type: user-oauth sends each person's token there; use https (http only on a loopback host, for development)`},
	}, struct {
		name string
		in   string
		want []string
	}{
		name: "token keys: a key id twice",
		in:   "auth: {issuer: https://login.example.com, audience: https://mcp.example.com/mcp, tokenKeys: \"k1:" + key + ",k1:" + key + "\"}\nupstreams: []\n",
		want: []string{`c.yaml:1:93: auth.tokenKeys: key entry 2: id "k1" appears twice; write "k1:<base64 of 32 random bytes>", newest first, such as "${SWITCHBOARD_TOKEN_KEYS}"`},
	})
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
