package config

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// secretsFile sets every key the tables mark secret, each to a value of its
// own (the upstream-auth secrets on one upstream each, as the kinds exclude
// each other), and the embeddings API key, read from the environment.
const secretsFile = `
publicURL: https://mcp.example.com
cursorSecret: "cursor-SECRET-0123456789012345678901234567"
auth:
  issuer: https://login.example.com
  introspection: {url: "https://login.example.com/introspect", clientId: i, clientSecret: intro-SECRET}
  browser: {clientId: b, clientSecret: browser-SECRET}
  tokenKeys: "k1:MDEyMzQ1Njc4OTAxMjM0NTY3ODkwMTIzNDU2Nzg5MDE="
redis: {url: "redis://:redisurl-SECRET@redis:6379/0", password: redis-SECRET}
search: {embeddings: {url: "https://api.example.com/v1", model: m, apiKeyEnv: EMBED_KEY}}
upstreams:
  - name: files
    command: npx
    env: {TOKEN: env-SECRET}
  - name: web
    url: https://web.example.com/mcp
    headers: {X-Key: header-SECRET}
    auth: {clientCredentials: {tokenURL: "https://login.example.com/token", clientId: c, clientSecret: cc-SECRET}}
  - name: te
    url: https://te.example.com/mcp
    auth: {tokenExchange: {tokenURL: "https://login.example.com/token", clientId: c, clientSecret: te-SECRET}}
  - name: mine
    url: https://mine.example.com/mcp
    auth: {type: user-oauth, clientId: c, clientSecret: useroauth-SECRET}
  - name: jag
    url: https://jag.example.com/mcp
    auth: {type: id-jag, idp: {tokenURL: "https://login.example.com/token", clientId: i, clientSecret: idp-SECRET},
      issuer: https://as.jag.example.com, tokenURL: "https://as.jag.example.com/token", clientId: c, clientSecret: idjag-SECRET}
`

// secretPaths are the keys secretsFile sets that the tables mark secret.
func secretPaths() []string {
	return []string{"cursorSecret", "auth.introspection.clientSecret", "auth.browser.clientSecret", "auth.tokenKeys",
		"redis.password", "upstreams[].env", "upstreams[].headers", "upstreams[].auth.clientCredentials.clientSecret",
		"upstreams[].auth.tokenExchange.clientSecret", "upstreams[].auth.clientSecret", "upstreams[].auth.idp.clientSecret",
		// The mcpServers form takes the upstreams' keys.
		"mcpServers.<key>.env", "mcpServers.<key>.headers", "servers.<key>.env", "servers.<key>.headers"}
}

// TestSecretsNeverShown: a value the tables mark secret shows neither in
// String nor anywhere in Redacted's copy; and every secret key of the tables
// is one secretsFile sets, so a new secret key needs its line here.
func TestSecretsNeverShown(t *testing.T) {
	var marked []string
	var walk func(prefix string, fs []field)
	walk = func(prefix string, fs []field) {
		for _, f := range fs {
			path := joinPath(prefix, f)
			if f.secret {
				marked = append(marked, path)
			}
			if f.sub != nil {
				walk(path, f.sub())
			}
		}
	}
	walk("", topFields())
	slices.Sort(marked)
	want := slices.Sorted(slices.Values(secretPaths()))
	if !slices.Equal(marked, want) {
		t.Errorf("the tables mark secret:\n  %s\nthe test sets:\n  %s\nset each new secret in secretsFile and list it in secretPaths",
			strings.Join(marked, "\n  "), strings.Join(want, "\n  "))
	}

	env := func(k string) (string, bool) {
		if k == "EMBED_KEY" {
			return "embed-SECRET", true
		}
		return "", false
	}
	cfg, err := Parse("c.yaml", []byte(secretsFile), env)
	if err != nil {
		t.Fatal(err)
	}
	secrets := []string{"cursor-SECRET", "intro-SECRET", "browser-SECRET", "MDEyMzQ1Njc4OTAxMjM0NTY3ODkwMTIzNDU2Nzg5MDE=", "redisurl-SECRET",
		"redis-SECRET", "embed-SECRET", "env-SECRET", "header-SECRET", "cc-SECRET", "te-SECRET", "useroauth-SECRET",
		"idp-SECRET", "idjag-SECRET"}
	shown := map[string]string{"String": cfg.String(), "Redacted": fmt.Sprintf("%+v", deref(cfg.Redacted()))}
	for what, out := range shown {
		for _, s := range secrets {
			if strings.Contains(out, s) {
				t.Errorf("%s shows the secret %q:\n%s", what, s, out)
			}
		}
	}
}

// deref prints a configuration with the blocks its pointers hold, which %+v
// alone shows as addresses.
func deref(c *Config) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%+v\n", *c)
	if c.Auth != nil {
		fmt.Fprintf(&b, "%+v %+v %+v\n", *c.Auth, c.Auth.Introspection, c.Auth.Browser)
	}
	if c.Redis != nil {
		fmt.Fprintf(&b, "%+v\n", *c.Redis)
	}
	if c.Search.Embeddings != nil {
		fmt.Fprintf(&b, "%+v\n", *c.Search.Embeddings)
	}
	for _, u := range c.Upstreams {
		fmt.Fprintf(&b, "%+v\n", u)
		if a := u.Auth; a != nil {
			fmt.Fprintf(&b, "%+v %+v %+v %+v\n", a.ClientCredentials, a.TokenExchange, a.UserOAuth, a.IDJAG)
		}
	}
	return b.String()
}
