package config

import (
	"reflect"
	"strings"
	"testing"
)

// An Okta-style id-jag upstream behind the gateway's own sign-in (each client's ID token is exchanged), and one
// person's desktop gateway without auth: (the ID token from a file).
const idJAGYAML = `auth:
  issuer: https://acme.okta.com
  audience: https://mcp.acme.example/mcp
upstreams:
  - name: crm
    url: https://mcp.crm.example/mcp
    auth:
      type: id-jag
      idp: {tokenURL: "https://acme.okta.com/oauth2/v1/token", clientId: switchboard, clientSecret: "${OKTA_SECRET}"}
      issuer: https://auth.crm.example
      tokenURL: https://auth.crm.example/oauth2/token
      clientId: acme-switchboard
      clientSecret: "${CRM_SECRET}"
      scopes: [crm.read]
`

func TestParseIDJAG(t *testing.T) {
	env := envOf(map[string]string{"OKTA_SECRET": "okta-secret", "CRM_SECRET": "crm-secret"})
	cfg, err := Parse("c.yaml", []byte(idJAGYAML), env)
	if err != nil {
		t.Fatal(err)
	}
	want := &IDJAG{
		IdP:    IDJAGIdP{TokenURL: "https://acme.okta.com/oauth2/v1/token", ClientID: "switchboard", ClientSecret: "okta-secret"},
		Issuer: "https://auth.crm.example", TokenURL: "https://auth.crm.example/oauth2/token",
		ClientID: "acme-switchboard", ClientSecret: "crm-secret", Scopes: []string{"crm.read"}, Resource: "https://mcp.crm.example/mcp",
	}
	if got := cfg.Upstreams[0].Auth.IDJAG; !reflect.DeepEqual(got, want) {
		t.Errorf("got %#v, want %#v", got, want)
	}
	out := cfg.String()
	for _, secret := range []string{"okta-secret", "crm-secret"} {
		if strings.Contains(out, secret) {
			t.Errorf("check output shows a secret %q:\n%s", secret, out)
		}
	}
	if !strings.Contains(out, `auth: {type: id-jag, idp: {tokenURL: "https://acme.okta.com/oauth2/v1/token", clientId: "switchboard", idToken: each client's token}, issuer: "https://auth.crm.example"`) {
		t.Errorf("check output does not describe crm's auth:\n%s", out)
	}

	desktop := "upstreams:\n  - name: crm\n    url: https://mcp.crm.example/mcp\n    session: shared\n    auth: {type: id-jag, " +
		"idp: {tokenURL: \"https://acme.okta.com/oauth2/v1/token\", idTokenFile: /run/sso/id_token, subjectTokenType: access_token}, issuer: https://auth.crm.example, " +
		"tokenURL: https://auth.crm.example/token, clientId: c, clientSecret: s}\n"
	cfg, err = Parse("c.yaml", []byte(desktop), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Upstreams[0].Auth.IDJAG.IdP; got.IDTokenFile != "/run/sso/id_token" || got.ClientID != "" ||
		got.SubjectTokenType != "urn:ietf:params:oauth:token-type:access_token" {
		t.Errorf("idp = %#v", got)
	}
}

func TestParseIDJAGInvalid(t *testing.T) {
	const as = "issuer: https://as.example, tokenURL: https://as.example/token, clientId: c, clientSecret: s"
	const idp = "idp: {tokenURL: \"https://idp.example/token\"}"
	tests := []struct {
		name string
		in   string
		want []string
	}{
		{
			name: "no auth block and no ID token file; plain http",
			in:   "upstreams:\n  - name: a\n    url: http://a.example/mcp\n    auth: {type: id-jag, " + idp + ", " + as + "}\n",
			want: []string{
				`c.yaml:2:5: upstreams[0].auth: type: id-jag exchanges each client's ID token, which needs the gateway's auth: block; for a gateway that serves one person without it, set idp.idTokenFile`,
				`c.yaml:3:10: upstreams[0].url: is plain http to a non-loopback host, and type: id-jag sends each person's token there; use https (http only on a loopback host, for development)`,
			},
		},
		{
			name: "missing keys, stray keys, bad URLs",
			in: "auth: {issuer: https://login.example, audience: https://mcp.example/mcp}\nupstreams:\n" +
				"  - name: a\n    url: https://a.example/mcp\n    auth: {type: id-jag}\n" +
				"  - name: b\n    url: https://b.example/mcp\n    auth: {type: id-jag, idp: {clientSecret: x}, issuer: http://as.example, tokenURL: https://as.example/t, clientId: c, clientSecret: s}\n" +
				"  - name: c\n    url: https://c.example/mcp\n    auth: {type: id-jag, resourceParameter: omit, " + idp + ", " + as + "}\n" +
				"  - name: d\n    url: https://d.example/mcp\n    auth: {type: user-oauth, " + idp + "}\n" +
				"  - name: e\n    url: https://e.example/mcp\n    auth: {issuer: https://as.example}\n" +
				"  - name: f\n    url: https://f.example/mcp\n    session: shared\n    auth: {type: id-jag, idp: {tokenURL: \"https://idp.example/token\", idTokenFile: /f}, " + as + "}\n",
			want: []string{
				`c.yaml:5:11: upstreams[0].auth: type: id-jag needs idp: {tokenURL: ...}, the identity provider where each person's ID token is exchanged`,
				`c.yaml:5:11: upstreams[0].auth: type: id-jag needs issuer, the upstream's authorization server as its metadata names it (the ID-JAG's audience)`,
				`c.yaml:5:11: upstreams[0].auth: type: id-jag needs tokenURL, the upstream authorization server's token endpoint`,
				`c.yaml:5:11: upstreams[0].auth: missing clientId`,
				`c.yaml:5:11: upstreams[0].auth: missing clientSecret; take it from the environment, such as clientSecret: "${CLIENT_SECRET}"`,
				`c.yaml:8:31: upstreams[1].auth.idp: missing tokenURL; give the identity provider's token endpoint, such as https://acme.okta.com/oauth2/v1/token`,
				`c.yaml:8:31: upstreams[1].auth.idp: has clientSecret without clientId`,
				`c.yaml:8:58: upstreams[1].auth.issuer: must use https; http is accepted only on a loopback host (localhost, 127.0.0.1, ::1), for development`,
				`c.yaml:11:26: upstreams[2].auth.resourceParameter: does not go with type: id-jag`,
				`c.yaml:14:30: upstreams[3].auth.idp: belongs to type: id-jag or workload-identity, not user-oauth`,
				`c.yaml:17:12: upstreams[4].auth.issuer: belongs to type: id-jag or workload-identity (or inside clientCredentials: or tokenExchange:); add the type or move it`,
				`c.yaml:18:5: upstreams[5].auth.idp.idTokenFile: is for a gateway without an auth: block; with auth: each client's own token is exchanged, and one person's must not stand in for the others`,
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
