package main

import (
	"bytes"
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/switchboard-mcp/switchboard/auth"
	"github.com/switchboard-mcp/switchboard/cmd/internal/config"
	"github.com/switchboard-mcp/switchboard/routing/state"
	"github.com/switchboard-mcp/switchboard/upstream/protocol"
)

// TestCredentialOptions: an upstream block of the file becomes auth's options (this half of what was auth's
// TestNewCredentialSourceFromConfig; auth's TestNewCredentialSource checks the source built from them).
func TestCredentialOptions(t *testing.T) {
	cfg, err := config.Parse("c.yaml", []byte(`
upstreams:
  - name: search
    url: https://search.internal/mcp
    headers: {X-Api-Key: "file:/run/secrets/k", X-Team: blue}
    auth:
      clientCredentials: {tokenURL: "https://login.example.com/token", clientId: gw, clientSecret: "${S}"}
  - name: wiki
    url: https://wiki.internal/mcp
    auth:
      tokenExchange: {tokenURL: "https://login.example.com/token", clientId: gw, clientSecret: "${S}", audience: wiki, scopes: [read]}
  - name: plain
    command: srv
`), func(k string) (string, bool) { return "sek", k == "S" })
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []auth.CredentialOptions{
		{
			Upstream: "search", Headers: map[string]string{"X-Team": "blue"}, HeaderFiles: map[string]string{"X-Api-Key": "/run/secrets/k"},
			ClientCredentials: &auth.ClientCredentialsConfig{TokenURL: "https://login.example.com/token", ClientID: "gw",
				ClientSecret: "sek", Resource: "https://search.internal/mcp"},
		},
		{
			Upstream: "wiki",
			TokenExchange: &auth.TokenExchangeConfig{TokenURL: "https://login.example.com/token", ClientID: "gw", ClientSecret: "sek",
				Audience: "wiki", Resource: "https://wiki.internal/mcp", Scopes: []string{"read"}},
		},
		{Upstream: "plain"},
	} {
		got := credentialOptions(cfg.Upstreams[i])
		if len(got.Headers) == 0 {
			got.Headers = nil
		}
		if len(got.HeaderFiles) == 0 {
			got.HeaderFiles = nil
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\n got %+v\nwant %+v", want.Upstream, got, want)
		}
	}
}

// TestPolicyRules: no policy: block stays nil (allow everything), an empty one stays empty (deny everything).
func TestPolicyRules(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []config.PolicyRule
		want []auth.PolicyRule
	}{
		{"absent", nil, nil},
		{"empty", []config.PolicyRule{}, []auth.PolicyRule{}},
		{"rules", []config.PolicyRule{{Name: "eng", Match: config.PolicyMatch{Sub: []string{"a*"}, Groups: []string{"eng"},
			Scopes: []string{"s"}, Claims: map[string][]any{"tier": {float64(2)}}}, Allow: []string{"files"}, Deny: []string{"files/rm"}}},
			[]auth.PolicyRule{{Name: "eng", Match: auth.PolicyMatch{Sub: []string{"a*"}, Groups: []string{"eng"},
				Scopes: []string{"s"}, Claims: map[string][]any{"tier": {float64(2)}}}, Allow: []string{"files"}, Deny: []string{"files/rm"}}}},
	} {
		got := policyRules(tc.in)
		if !reflect.DeepEqual(got, tc.want) || (got == nil) != (tc.want == nil) {
			t.Errorf("%s: got %#v, want %#v", tc.name, got, tc.want)
		}
	}
}

// TestResourceConfig: the auth block becomes the resource server's options; no block, no authentication.
func TestResourceConfig(t *testing.T) {
	if _, ok := resourceConfig(&config.Config{}); ok {
		t.Error("no auth block, yet a resource config")
	}
	cfg, err := config.Parse("c.yaml", []byte(`
publicURL: https://mcp.example.com
auth:
  issuer: https://login.example.com
  scopes: [mcp]
  jwksURL: https://login.example.com/keys
  algorithms: [ES256]
  clockSkew: 10s
  resourceName: Tools
  documentationURL: https://docs.example.com
  introspection: {url: https://login.example.com/introspect, clientId: gw, clientSecret: sek, cacheTTL: 1m}
upstreams:
  - name: plain
    command: srv
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	got, ok := resourceConfig(cfg)
	want := auth.ResourceConfig{Issuer: "https://login.example.com", Audience: "https://mcp.example.com/mcp", Scopes: []string{"mcp"},
		JWKSURL: "https://login.example.com/keys", Algorithms: []string{"ES256"}, ClockSkew: 10 * time.Second,
		ResourceName: "Tools", DocumentationURL: "https://docs.example.com",
		Introspection: &auth.IntrospectionConfig{URL: "https://login.example.com/introspect", ClientID: "gw", ClientSecret: "sek", CacheTTL: time.Minute}}
	if !ok || !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
}

// TestAuthCodesMatchTheVocabulary: auth imports nothing of the project, so it keeps its own copies of the
// JSON-RPC codes it answers with; they must mean what upstream/protocol says.
func TestAuthCodesMatchTheVocabulary(t *testing.T) {
	for _, c := range []struct {
		name      string
		auth, voc int
	}{
		{"Unauthorized", auth.CodeUnauthorized, protocol.CodeUnauthorized},
		{"Forbidden", auth.CodeForbidden, protocol.CodeForbidden},
		{"Unavailable", auth.CodeUnavailable, protocol.CodeUnavailable},
	} {
		if c.auth != c.voc {
			t.Errorf("auth.Code%s = %d, upstream/protocol says %d", c.name, c.auth, c.voc)
		}
	}
}

// TestSharedTokens: id-jag tokens go to the shared store, sealed with auth.tokenKeys, with Redis and the keys, even
// before an upstream is of type id-jag (a reload may add one); Redis and id-jag without the keys keep them per
// replica, and say so in the log; without id-jag, nothing is said.
func TestSharedTokens(t *testing.T) {
	store := state.NewRedis(redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}), "") // never dialled here
	t.Cleanup(store.Shutdown)
	const (
		idjag = `
  - name: crm
    url: https://crm.example/mcp
    auth:
      type: id-jag
      idp: {tokenURL: "https://idp.example/token", clientId: gw, clientSecret: s}
      issuer: https://as.example
      tokenURL: https://as.example/token
      clientId: gw
      clientSecret: s
`
		plain = `
  - name: plain
    url: https://plain.example/mcp
`
		keys = "  tokenKeys: \"k1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\"\n"
	)
	for _, tc := range []struct {
		name            string
		keys, upstreams string
		store           *state.Redis
		shared, warned  bool
	}{
		{"redis, id-jag and keys", keys, idjag, store, true, false},
		{"no redis", keys, idjag, nil, false, false},
		{"no id-jag upstream yet", keys, plain, store, true, false},
		{"no keys", "", idjag, store, false, true},
		{"no keys, no id-jag upstream", "", plain, store, false, false},
	} {
		cfg, err := config.Parse("c.yaml", []byte("auth:\n  issuer: https://idp.example\n  audience: https://gw.example/mcp\n"+
			tc.keys+"upstreams:"+tc.upstreams), nil)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var logs bytes.Buffer
		got, err := sharedTokens(cfg, tc.store, slog.New(slog.NewTextHandler(&logs, nil)))
		warned := strings.Contains(logs.String(), "set auth.tokenKeys")
		if err != nil || (got != nil) != tc.shared || warned != tc.warned {
			t.Errorf("%s: shared %v, warned %v, err %v; want shared %v, warned %v", tc.name, got != nil, warned, err, tc.shared, tc.warned)
		}
		if got != nil && (got.Store == nil || got.Sealer == nil) {
			t.Errorf("%s: %+v, want a store and a sealer", tc.name, got)
		}
	}
}
