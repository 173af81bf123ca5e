package config

import (
	"strings"
	"testing"
)

// TestParseServerCard: serverCard: true and the block, their defaults (the name from publicURL's host), the
// primitives flag, and what String prints.
func TestParseServerCard(t *testing.T) {
	const base = "publicURL: https://MCP.Example.com:8443/\nupstreams: [{name: a, command: x}]\n"
	tests := []struct {
		name    string
		in      string
		want    *ServerCard
		warning string
	}{
		{name: "absent", in: base, want: nil},
		{name: "false", in: base + "serverCard: false\n", want: nil},
		{name: "true", in: base + "serverCard: true\n", want: &ServerCard{Name: "com.example.mcp/switchboard"}},
		{name: "empty block", in: base + "serverCard: {}\n", want: &ServerCard{Name: "com.example.mcp/switchboard"}},
		{
			name: "every key",
			in:   base + "serverCard:\n  name: io.github.acme/tools\n  title: Acme tools\n  description: Acme's MCP servers, one URL\n  primitives: true\n",
			want: &ServerCard{Name: "io.github.acme/tools", Title: "Acme tools", Description: "Acme's MCP servers, one URL", Primitives: true},
		},
		{name: "an IP address", in: "publicURL: http://127.0.0.1:8080\nserverCard: true\nupstreams: [{name: a, command: x}]\n", want: &ServerCard{Name: "localhost/switchboard"}},
		{name: "a single-label host", in: "publicURL: http://gateway:8080\nserverCard: true\nupstreams: [{name: a, command: x}]\n", want: &ServerCard{Name: "localhost/switchboard"}},
		{
			name:    "primitives with auth",
			in:      "publicURL: https://mcp.example.com\nauth: {issuer: https://login.example.com}\nserverCard: {primitives: true}\nupstreams: [{name: a, command: x}]\n",
			want:    &ServerCard{Name: "com.example.mcp/switchboard"},
			warning: `c.yaml:3:14: serverCard.primitives: is ignored with auth: the catalog depends on the caller, and a card is public; the cards list capabilities and URLs only`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Parse("c.yaml", []byte(tc.in), envOf(nil))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			var warnings []string
			if tc.warning != "" {
				warnings = []string{tc.warning}
			}
			diffLines(t, "warnings", warningLines(cfg.Warnings), warnings)
			switch {
			case tc.want == nil && cfg.ServerCard != nil:
				t.Fatalf("ServerCard = %+v, want none", *cfg.ServerCard)
			case tc.want == nil:
				if strings.Contains(cfg.String(), "serverCard") {
					t.Errorf("String mentions serverCard:\n%s", cfg.String())
				}
				return
			case cfg.ServerCard == nil:
				t.Fatalf("ServerCard = nil, want %+v", *tc.want)
			case *cfg.ServerCard != *tc.want:
				t.Fatalf("ServerCard = %+v, want %+v", *cfg.ServerCard, *tc.want)
			}
			if s := cfg.String(); !strings.Contains(s, "serverCard:") || !strings.Contains(s, `name: "`+tc.want.Name+`"`) {
				t.Errorf("String does not show the card:\n%s", s)
			}
			if r := cfg.Redacted(); r.ServerCard == cfg.ServerCard {
				t.Errorf("Redacted shares the ServerCard block")
			}
		})
	}
}

// TestParseServerCardInvalid: each error of the serverCard key with its position.
func TestParseServerCardInvalid(t *testing.T) {
	const pub = "publicURL: https://mcp.example.com\nupstreams: []\n" // lines 1-2; each case's own lines start at 3
	tests := []struct {
		name string
		in   string
		want []string
	}{
		{
			name: "no publicURL",
			in:   "upstreams: []\nserverCard: true\n",
			want: []string{`c.yaml:2:1: serverCard: needs publicURL: the card tells clients the gateway's URLs (/mcp and /mcp/<endpoint>), which are built from it; set publicURL, such as https://mcp.example.com`},
		},
		{
			name: "not a boolean",
			in:   pub + "serverCard: yes please\n",
			want: []string{`c.yaml:3:13: serverCard: must be true or false, not a string`},
		},
		{
			name: "unknown keys are explained",
			in:   pub + "serverCard:\n  enabled: true\n  tools: true\n  url: https://x\n",
			want: []string{
				`c.yaml:4:3: serverCard.enabled: unknown key "enabled": the block itself turns the card on (serverCard: true for the defaults); remove enabled`,
				`c.yaml:5:3: serverCard.tools: unknown key "tools": did you mean "primitives" (list the tools, prompts and resources; only without auth)?`,
				`c.yaml:6:3: serverCard.url: unknown key "url": the card's URLs follow from publicURL; remove url`,
			},
		},
		{
			name: "names",
			in:   pub + "serverCard:\n  name: switchboard\n",
			want: []string{`c.yaml:4:9: serverCard.name: must be reverse-DNS with exactly one slash, such as com.example.mcp/switchboard (letters, digits, '.' and '-' before the slash; also '_' after it)`},
		},
		{
			name: "a name too long for the endpoints' cards",
			in:   pub + "serverCard:\n  name: com.example/" + strings.Repeat("x", 160) + "\n",
			want: []string{`c.yaml:4:9: serverCard.name: must be 3 to 167 characters, so that every endpoint's card name (name-<endpoint>) fits in 200`},
		},
		{
			name: "title and description",
			in:   pub + "serverCard:\n  title: \"\"\n  description: " + strings.Repeat("d", 101) + "\n  primitives: maybe\n",
			want: []string{
				`c.yaml:4:10: serverCard.title: must be 1 to 100 characters, not 0`,
				`c.yaml:5:16: serverCard.description: must be 1 to 100 characters, not 101`,
				`c.yaml:6:15: serverCard.primitives: must be true or false, not a string`,
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("c.yaml", []byte(tc.in), envOf(nil))
			if err == nil {
				t.Fatal("Parse accepted the file")
			}
			diffLines(t, "errors", problemLines(t, err), tc.want)
		})
	}
}

// TestDefaultCardName: the reverse-DNS name of publicURL's host.
func TestDefaultCardName(t *testing.T) {
	for in, want := range map[string]string{
		"https://mcp.example.com":       "com.example.mcp/switchboard",
		"https://MCP.Example.COM.:443/": "com.example.mcp/switchboard",
		"https://gw.corp.example.org/x": "org.example.corp.gw/switchboard",
		"http://localhost:8080":         "localhost/switchboard",
		"http://[::1]:8080":             "localhost/switchboard",
		"http://10.0.0.7":               "localhost/switchboard",
		"https://xn--bcher-kva.example": "example.xn--bcher-kva/switchboard",
	} {
		if got := defaultCardName(in); got != want {
			t.Errorf("defaultCardName(%q) = %q, want %q", in, got, want)
		}
	}
}
