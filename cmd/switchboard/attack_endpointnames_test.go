package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestAttacksEndpointNames (issue 31, item 10): an anonymous caller probing /mcp/<name> and its RFC 9728
// metadata cannot tell a configured endpoint from one that is not: both answer the same, but for the name.
func TestAttacksEndpointNames(t *testing.T) {
	e2eGate(t)
	// An issuer that answers discovery; no token is ever shown to the gateway here.
	var issuer string
	is := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/.well-known/openid-configuration":
			_ = json.NewEncoder(w).Encode(map[string]any{"issuer": issuer, "jwks_uri": issuer + "/jwks",
				"authorization_endpoint": issuer + "/auth", "token_endpoint": issuer + "/token"})
		case "/jwks":
			_, _ = io.WriteString(w, `{"keys":[]}`)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(is.Close)
	issuer = is.URL
	base, _ := serveAttackGateway(t, "switchboard-attack-endpoints", func(listen string) string {
		return fmt.Sprintf(`listen: %q
auth: {issuer: %q, audience: %q}
upstreams:
  - {name: alpha, url: %q, session: shared}
endpoints:
  - {name: team, include: ["alpha__*"]}
`, listen, issuer, "http://"+listen+"/mcp", sdkUpstream(t, "alpha")+"/mcp")
	})
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"attacker","version":"1"}}}`
	// seen is everything an anonymous caller gets for a name, the name replaced by NAME.
	seen := func(name string) string {
		var b strings.Builder
		for _, a := range []attack{
			{path: "/mcp/" + name, body: initialize},
			{path: "/mcp/" + name + "/sse", method: http.MethodGet},
			{path: "/.well-known/oauth-protected-resource/mcp/" + name, method: http.MethodGet},
			{path: "/.well-known/mcp/server-card/" + name, method: http.MethodGet},
		} {
			status, body := send(t, base, a, "")
			fmt.Fprintf(&b, "%d %s\n", status, body)
		}
		return strings.ReplaceAll(b.String(), "/mcp/"+name, "/mcp/NAME")
	}
	team := seen("team")
	if !strings.Contains(team, `"resource": "`+base+`/mcp/NAME"`) {
		t.Fatalf("the configured endpoint's metadata is not served:\n%s", team)
	}
	for _, name := range []string{"admin", "ops", "x"} {
		if got := seen(name); got != team {
			t.Errorf("%q, not configured, is told apart from a configured endpoint:\n got %s\nwant %s", name, got, team)
		}
	}
}
