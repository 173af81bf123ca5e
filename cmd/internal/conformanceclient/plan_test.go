package main

import (
	"slices"
	"strings"
	"testing"
)

func TestPlanFor(t *testing.T) {
	tests := []struct {
		scenario, context string
		want              upstreamAuth
		id, secret        string
	}{
		{scenario: "tools_call", want: authNone},
		{scenario: "http-custom-headers", context: `{"toolCalls":[]}`, want: authNone},
		{scenario: "auth/metadata-default", want: authUserOAuth},
		{scenario: "auth/pre-registration", context: `{"client_id":"c1","client_secret":"s1","issuer":"http://x"}`,
			want: authUserOAuth, id: "c1", secret: "s1"},
		{scenario: "auth/dpop", want: authUserOAuth},
		{scenario: "auth/scope-step-up", context: `{"client_secret":"orphan"}`, want: authUserOAuth}, // no id: no client
		{scenario: "auth/client-credentials-basic", context: `{"client_id":"c2","client_secret":"s2"}`,
			want: authClientCredentials, id: "c2", secret: "s2"},
		{scenario: "auth/client-credentials-jwt", context: `{"client_id":"c3","private_key_pem":"PEM"}`, want: authClientCredentials, id: "c3"},
		{scenario: "auth/enterprise-managed-authorization", context: `{"client_id":"x1","client_secret":"xs","idp_id_token":"t"}`,
			want: authIDJAG, id: "x1", secret: "xs"},
		{scenario: "auth/wif-jwt-bearer", context: `{"client_id":"w1","valid_jwt":"j"}`, want: authWorkload, id: "w1"},
	}
	for _, tt := range tests {
		t.Run(tt.scenario, func(t *testing.T) {
			c, err := parseContext(tt.context)
			if err != nil {
				t.Fatal(err)
			}
			p := planFor(tt.scenario, c)
			if p.auth != tt.want || p.clientID != tt.id || p.clientSecret != tt.secret {
				t.Errorf("planFor = {%v, %q, %q}, want {%v, %q, %q}", p.auth, p.clientID, p.clientSecret, tt.want, tt.id, tt.secret)
			}
			if (p.auth == authUnsupported) != (p.unsupported != "") {
				t.Errorf("unsupported = %q for auth %v", p.unsupported, p.auth)
			}
		})
	}
}

func TestParseContextRejectsJunk(t *testing.T) {
	if _, err := parseContext("{not json"); err == nil {
		t.Error("parseContext accepted junk")
	}
}

func TestConfig(t *testing.T) {
	setup := gatewaySetup{listen: "127.0.0.1:4000", upstreamURL: "http://localhost:5000/mcp", issuer: "http://127.0.0.1:6000",
		tokenURL: "http://localhost:7000/token", tokenKeys: "k1:KEY", browserSecret: "b-secret-value",
		asIssuer: "http://localhost:7000", idTokenFile: "/tmp/x/id_token", keyFile: "/tmp/x/client_key.pem"}
	tests := []struct {
		name      string
		plan      plan
		want      []string // lines the YAML must have
		wantNot   []string // and must not
		env       []string
		wantError string
	}{{
		name: "none",
		plan: plan{scenario: "tools_call", auth: authNone},
		want: []string{`listen: "127.0.0.1:4000"`, `    url: "http://localhost:5000/mcp"`, `    prefix: ""`,
			`    session: per-client`, `    protocol: auto`},
		wantNot: []string{"auth:", "publicURL:"},
	}, {
		name: "user-oauth, gateway finds its client",
		plan: plan{scenario: "auth/metadata-default", auth: authUserOAuth},
		want: []string{`publicURL: "http://127.0.0.1:4000"`, `  issuer: "http://127.0.0.1:6000"`,
			`  audience: "http://127.0.0.1:4000/mcp"`, `    clientId: "switchboard-web"`,
			`    clientSecret: "${CONFORMANCE_BROWSER_SECRET}"`, `  tokenKeys: "${SWITCHBOARD_TOKEN_KEYS}"`,
			`      type: user-oauth`},
		wantNot: []string{`      clientId:`, `      clientSecret:`, "k1:KEY", "b-secret-value"},
		env:     []string{"SWITCHBOARD_TOKEN_KEYS=k1:KEY", "CONFORMANCE_BROWSER_SECRET=b-secret-value"},
	}, {
		name:    "user-oauth, pre-registered",
		plan:    plan{scenario: "auth/pre-registration", auth: authUserOAuth, clientID: "c1", clientSecret: "s1"},
		want:    []string{`      type: user-oauth`, `      clientId: "c1"`, `      clientSecret: "${CONFORMANCE_UPSTREAM_SECRET}"`},
		wantNot: []string{"s1"},
		env: []string{"SWITCHBOARD_TOKEN_KEYS=k1:KEY", "CONFORMANCE_BROWSER_SECRET=b-secret-value",
			"CONFORMANCE_UPSTREAM_SECRET=s1"},
	}, {
		name: "client credentials",
		plan: plan{scenario: "auth/client-credentials-basic", auth: authClientCredentials, clientID: "c2", clientSecret: "s2"},
		want: []string{`      clientCredentials:`, `        tokenURL: "http://localhost:7000/token"`, `        clientId: "c2"`,
			`        clientSecret: "${CONFORMANCE_UPSTREAM_SECRET}"`},
		wantNot: []string{"publicURL:", "issuer:", "s2"},
		env:     []string{"CONFORMANCE_UPSTREAM_SECRET=s2"},
	}, {
		name:      "client credentials without a secret",
		plan:      plan{scenario: "auth/client-credentials-basic", auth: authClientCredentials, clientID: "c2"},
		wantError: "client credentials need",
	}, {
		name: "id-jag",
		plan: planFor("auth/enterprise-managed-authorization", scenarioContext{"client_id": "x1", "client_secret": "xs",
			"idp_id_token": "the-id-token", "idp_token_endpoint": "http://localhost:8000/token"}),
		want: []string{`      type: id-jag`, `      idp: {tokenURL: "http://localhost:8000/token", idTokenFile: "/tmp/x/id_token"}`,
			`      issuer: "http://localhost:7000"`, `      tokenURL: "http://localhost:7000/token"`, `      clientId: "x1"`,
			`      clientSecret: "${CONFORMANCE_UPSTREAM_SECRET}"`},
		wantNot: []string{"publicURL:", "the-id-token", "xs"},
		env:     []string{"CONFORMANCE_UPSTREAM_SECRET=xs"},
	}, {
		name: "workload identity",
		plan: planFor("auth/wif-jwt-bearer", scenarioContext{"client_id": "w1", "valid_jwt": "the-workload-jwt"}),
		want: []string{`      type: workload-identity`, `      tokenFile: "/tmp/x/id_token"`,
			`      tokenURL: "http://localhost:7000/token"`, `      clientId: "w1"`},
		wantNot: []string{"publicURL:", "the-workload-jwt", "clientSecret"},
	}, {
		name: "client credentials, private_key_jwt",
		plan: planFor("auth/client-credentials-jwt", scenarioContext{"client_id": "c3", "private_key_pem": "-----BEGIN PRIVATE KEY-----"}),
		want: []string{`      clientCredentials:`, `        tokenURL: "http://localhost:7000/token"`, `        clientId: "c3"`,
			`        privateKeyFile: "/tmp/x/client_key.pem"`, `        assertionAudience: "http://localhost:7000"`},
		wantNot: []string{"clientSecret", "BEGIN"},
	}, {
		name:      "private_key_jwt without a client_id",
		plan:      plan{scenario: "auth/client-credentials-jwt", auth: authClientCredentials, privateKey: "k"},
		wantError: "private_key_jwt needs",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			yaml, env, err := tt.plan.config(setup)
			if tt.wantError != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantError) {
					t.Fatalf("config error = %v, want one containing %q", err, tt.wantError)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(yaml, "\n")
			for _, w := range tt.want {
				if !slices.Contains(lines, w) {
					t.Errorf("config lacks the line %q:\n%s", w, yaml)
				}
			}
			for _, w := range tt.wantNot {
				if strings.Contains(yaml, w) {
					t.Errorf("config has %q:\n%s", w, yaml)
				}
			}
			if !slices.Equal(env, tt.env) {
				t.Errorf("env = %q, want %q", env, tt.env)
			}
		})
	}
}

func TestPageText(t *testing.T) {
	got := pageText([]byte("<html><h1>Link expired</h1>\n<p>Ask   again.</p></html>"))
	if got != "Link expired Ask again." {
		t.Errorf("pageText = %q", got)
	}
}
