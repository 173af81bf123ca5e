package gateway_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/switchboard-mcp/switchboard/routing"
)

// TestAuthEndpoints: an endpoint is a protected resource of its own (RFC 9728): its metadata at the well-known
// path suffixed with its path, naming it; its 401 challenge pointing there; and tokens accepted for it or for
// the gateway, while a token for the endpoint is refused on /mcp and one for another endpoint on this one.
func TestAuthEndpoints(t *testing.T) {
	ai := newAuthIssuer(t)
	up := startAuthUpstream(t, "files", []string{"read"}, nil, nil)
	g := startAuthGateway(t, ai, authGatewayOptions{endpoints: []routing.Endpoint{{Name: "team", Include: []string{"files__*"}}}}, routingUpstream(t, testUpstream{Name: "files", URL: up.url}))
	team := g.audience + "/team"

	md := g.send(t, http.MethodGet, "/.well-known/oauth-protected-resource/mcp/team", "", "", "")
	var doc struct{ Resource string }
	if md.status != http.StatusOK || json.Unmarshal(md.body, &doc) != nil || doc.Resource != team {
		t.Errorf("the endpoint's metadata: HTTP %d %s, want resource %s", md.status, md.body, team)
	}
	if r := g.send(t, http.MethodGet, "/.well-known/oauth-protected-resource/mcp/nope", "", "", ""); r.status != http.StatusNotFound {
		t.Errorf("metadata of an endpoint that is not configured: HTTP %d, want 404", r.status)
	}
	challenge := g.send(t, http.MethodPost, "/mcp/team", "", "", initBody)
	if want := `resource_metadata="` + g.base + `/.well-known/oauth-protected-resource/mcp/team"`; challenge.status != http.StatusUnauthorized ||
		!strings.Contains(challenge.header.Get("WWW-Authenticate"), want) {
		t.Errorf("no token on /mcp/team: HTTP %d, WWW-Authenticate %q; want 401 with %s", challenge.status, challenge.header.Get("WWW-Authenticate"), want)
	}
	if r := g.send(t, http.MethodOptions, "/mcp/team", "", "", ""); r.status == http.StatusUnauthorized {
		t.Errorf("a preflight of /mcp/team was challenged (HTTP %d): preflights carry no credentials", r.status)
	}
	for _, c := range []struct {
		audience, path string
		want           int
	}{
		{g.audience, "/mcp/team", http.StatusOK}, // a client that knows only the gateway
		{team, "/mcp/team", http.StatusOK},       // RFC 8707: the token names the endpoint
		{team, "/mcp", http.StatusUnauthorized},  // minted for the narrower resource
		{g.audience + "/other", "/mcp/team", http.StatusUnauthorized},
	} {
		tok := ai.sign(ai.claims(c.audience, "ann", "eng"))
		if r := g.send(t, http.MethodPost, c.path, tok, "", initBody); r.status != c.want {
			t.Errorf("a token for %s on %s: HTTP %d, want %d (%s)", c.audience, c.path, r.status, c.want, r.body)
		}
	}
}
