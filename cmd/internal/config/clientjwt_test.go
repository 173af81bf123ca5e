package config

import (
	"strings"
	"testing"
)

func TestParseClientCredentialsPrivateKeyJWT(t *testing.T) {
	in := "upstreams:\n  - name: a\n    url: https://a.example/mcp\n    auth:\n      clientCredentials:\n" +
		"        tokenURL: https://as.example/token\n        clientId: gw\n        privateKeyFile: /run/secrets/client-key.pem\n" +
		"        assertionAudience: https://as.example\n"
	cfg, err := Parse("c.yaml", []byte(in), nil)
	if err != nil {
		t.Fatal(err)
	}
	c := cfg.Upstreams[0].Auth.ClientCredentials
	if c.PrivateKeyFile != "/run/secrets/client-key.pem" || c.AssertionAudience != "https://as.example" || c.ClientSecret != "" {
		t.Errorf("got %#v", c)
	}
	if out := cfg.String(); !strings.Contains(out, `privateKeyFile: "/run/secrets/client-key.pem", assertionAudience: "https://as.example"`) {
		t.Errorf("check output:\n%s", out)
	}

	bad := "upstreams:\n" +
		"  - name: a\n    url: https://a.example/mcp\n    auth: {clientCredentials: {tokenURL: https://as.example/t, clientId: c, clientSecret: s, privateKeyFile: /k}}\n" +
		"  - name: b\n    url: https://b.example/mcp\n    auth: {clientCredentials: {privateKeyFile: /k}}\n" +
		"  - name: c\n    url: https://c.example/mcp\n    auth: {clientCredentials: {tokenURL: https://as.example/t, clientId: c, clientSecret: s, assertionAudience: https://as.example}}\n"
	_, err = Parse("c.yaml", []byte(bad), nil)
	if err == nil {
		t.Fatal("no error")
	}
	diffLines(t, "problems", problemLines(t, err), []string{
		`c.yaml:4:77: upstreams[0].auth.clientCredentials.clientSecret: and privateKeyFile (at 4:94) are both set; the client authenticates with one`,
		`c.yaml:7:31: upstreams[1].auth.clientCredentials: missing tokenURL`,
		`c.yaml:7:31: upstreams[1].auth.clientCredentials: missing clientId`,
		`c.yaml:10:94: upstreams[2].auth.clientCredentials.assertionAudience: goes with privateKeyFile`,
	})
}
