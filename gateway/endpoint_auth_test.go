package gateway_test

import (
	"encoding/json"
	"fmt"
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

// TestAuthEndpointNamesNotEnumerable (issue 31, item 10): to a caller without a token, an endpoint that is not
// configured looks like one that is. /mcp/<name> challenges with the name's resource_metadata, and the metadata
// there answers the same way, naming the resource its path names (RFC 9728 §3.3); only the name differs. A path
// no endpoint could have is 404 alike for every name.
func TestAuthEndpointNamesNotEnumerable(t *testing.T) {
	ai := newAuthIssuer(t)
	up := startAuthUpstream(t, "files", []string{"read"}, nil, nil)
	g := startAuthGateway(t, ai, authGatewayOptions{endpoints: []routing.Endpoint{{Name: "team", Include: []string{"files__*"}}}}, routingUpstream(t, testUpstream{Name: "files", URL: up.url}))
	const wk = "/.well-known/oauth-protected-resource/mcp/"
	// seen is what an anonymous caller learns of a name, with the name itself replaced by "NAME".
	seen := func(name string) string {
		t.Helper()
		var b strings.Builder
		for _, r := range []rawResp{
			g.send(t, http.MethodPost, "/mcp/"+name, "", "", initBody),
			g.send(t, http.MethodGet, wk+name, "", "", ""),
			g.send(t, http.MethodHead, wk+name, "", "", ""),
			g.send(t, http.MethodOptions, wk+name, "", "", ""),
		} {
			fmt.Fprintf(&b, "%d %q %q %q %s\n", r.status, r.header.Get("WWW-Authenticate"), r.header.Get("Content-Type"), r.header.Get("Cache-Control"), r.body)
		}
		return strings.ReplaceAll(b.String(), "/mcp/"+name, "/mcp/NAME")
	}
	team := seen("team")
	if !strings.Contains(team, `"resource": "`+g.audience+`/NAME"`) || !strings.HasPrefix(team, "401 ") {
		t.Fatalf("a configured endpoint: %s\nwant a 401 and its metadata", team)
	}
	for _, name := range []string{"nope", "ops", "0", strings.Repeat("a", 32)} {
		if got := seen(name); got != team {
			t.Errorf("endpoint %q, not configured, is told apart from a configured one:\n got %s\nwant %s", name, got, team)
		}
	}
	// Paths no endpoint could have: 404 whether or not their last segment is configured.
	for _, p := range []string{wk + "Team", wk + "team/", wk + "team/x", wk + "x/team", wk + strings.Repeat("a", 33), wk + "-a"} {
		if r := g.send(t, http.MethodGet, p, "", "", ""); r.status != http.StatusNotFound {
			t.Errorf("GET %s: HTTP %d, want 404", p, r.status)
		}
	}
	// A caller with a valid token learns it: that is where the name stops being secret.
	tok := ai.sign(ai.claims(g.audience, "ann", "eng"))
	if r := g.send(t, http.MethodPost, "/mcp/nope", tok, "", initBody); r.status != http.StatusNotFound {
		t.Errorf("/mcp/nope with a token: HTTP %d, want 404", r.status)
	}
}
