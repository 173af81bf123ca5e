package config

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseWorkloadIdentity(t *testing.T) {
	in := "upstreams:\n  - name: crm\n    url: https://mcp.crm.example/mcp\n    auth:\n      type: workload-identity\n" +
		"      tokenFile: /var/run/secrets/switchboard/workload/token\n      tokenURL: https://auth.crm.example/oauth2/token\n" +
		"      clientId: switchboard-workload\n      scopes: [crm.read]\n"
	cfg, err := Parse("c.yaml", []byte(in), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := &WorkloadIdentity{TokenFile: "/var/run/secrets/switchboard/workload/token", TokenURL: "https://auth.crm.example/oauth2/token",
		ClientID: "switchboard-workload", Scopes: []string{"crm.read"}, Resource: "https://mcp.crm.example/mcp"}
	if got := cfg.Upstreams[0].Auth.WorkloadIdentity; !reflect.DeepEqual(got, want) {
		t.Errorf("got %#v, want %#v", got, want)
	}
	if out := cfg.String(); !strings.Contains(out, `auth: {type: workload-identity, tokenFile: "/var/run/secrets/switchboard/workload/token"`) {
		t.Errorf("check output does not describe the auth:\n%s", out)
	}
}

func TestParseWorkloadIdentityInvalid(t *testing.T) {
	in := "upstreams:\n" +
		"  - name: a\n    url: https://a.example/mcp\n    auth: {type: workload-identity}\n" +
		"  - name: b\n    url: https://b.example/mcp\n    auth: {type: workload-identity, tokenFile: /t, tokenURL: https://as.example/t, clientSecret: s}\n" +
		"  - name: c\n    url: https://c.example/mcp\n    auth: {tokenFile: /t}\n" +
		"  - name: d\n    url: https://d.example/mcp\n    headers: {Authorization: Bearer x}\n    auth: {type: workload-identity, tokenFile: /t, tokenURL: http://as.example/t}\n"
	want := []string{
		`c.yaml:4:11: upstreams[0].auth: type: workload-identity needs tokenFile`,
		`c.yaml:4:11: upstreams[0].auth: type: workload-identity needs tokenURL`,
		`c.yaml:7:84: upstreams[1].auth.clientSecret: does not go with type: workload-identity (the workload's token is its credential)`,
		`c.yaml:10:12: upstreams[2].auth.tokenFile: belongs to type: id-jag or workload-identity (or inside clientCredentials: or tokenExchange:); add the type or move it`,
		`c.yaml:14:5: upstreams[3].auth: headers (at 13:14) already set Authorization, which auth would replace; keep one`,
		`c.yaml:14:62: upstreams[3].auth.tokenURL: must use https; http is accepted only on a loopback host (localhost, 127.0.0.1, ::1), for development`,
	}
	_, err := Parse("c.yaml", []byte(in), nil)
	if err == nil {
		t.Fatal("no error")
	}
	diffLines(t, "problems", problemLines(t, err), want)
}
