package gateway_test

// The server cards (gateway/servercard.go, experimental SEP-2127): their documents against golden files and the
// SEP's shape, per endpoint, with and without auth, and their HTTP (404 when off or unknown, CORS, caching, rate
// limit).

import (
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/switchboard-mcp/switchboard/gateway"
	"github.com/switchboard-mcp/switchboard/routing"
	"github.com/switchboard-mcp/switchboard/routing/state"
	"github.com/switchboard-mcp/switchboard/upstream/protocol"
)

// cardGateway runs a gateway over one shared upstream (alpha, the SDK test server) with an endpoint "echoes" (the
// echo tools), serving cards as card says (nil: none).
func cardGateway(t *testing.T, card *gateway.ServerCard, gopts gateway.Options) *harness {
	t.Helper()
	up, _ := httpUpstream(t, "alpha", routing.Shared, markerSink(t))
	gopts.ServerCard = card
	return startGateway(t, routing.Options{Shape: routing.Shape{Endpoints: []routing.Endpoint{
		{Name: "echoes", Include: []string{"*__echo"}},
	}}}, gopts, up)
}

// getCard fetches path from the gateway.
func getCard(t *testing.T, h *harness, method, path string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctxGuard(t), method, h.ts.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, body
}

// sepCard is the shape SEP-2127 gives a card; checkSEPShape checks a document against it.
type sepCard struct {
	Schema       string            `json:"$schema"`
	Name         string            `json:"name"`
	Version      string            `json:"version"`
	Description  string            `json:"description"`
	Title        string            `json:"title"`
	Capabilities map[string]any    `json:"capabilities"`
	Tools        []json.RawMessage `json:"tools"`
	Prompts      []json.RawMessage `json:"prompts"`
	Resources    []json.RawMessage `json:"resources"`
	Remotes      []struct {
		Type                      string   `json:"type"`
		URL                       string   `json:"url"`
		SupportedProtocolVersions []string `json:"supportedProtocolVersions"`
		Authentication            *struct {
			Required *bool    `json:"required"`
			Schemes  []string `json:"schemes"`
		} `json:"authentication"`
	} `json:"remotes"`
}

var (
	// cardName is the SEP's name: "reverse-DNS format. Must contain exactly one forward slash".
	cardName = regexp.MustCompile(`^[a-zA-Z0-9.-]+/[a-zA-Z0-9._-]+$`)
	// remoteURL is the schema's pattern of a remote's URL (without template variables, which the gateway does not use).
	remoteURL = regexp.MustCompile(`^https?://[^\s]+$`)
)

// checkSEPShape checks a card's required fields and their forms, and returns it decoded.
func checkSEPShape(t *testing.T, body []byte) sepCard {
	t.Helper()
	var c sepCard
	dec := json.NewDecoder(strings.NewReader(string(body)))
	if err := dec.Decode(&c); err != nil {
		t.Fatalf("not a card: %v: %s", err, body)
	}
	if c.Schema != "https://static.modelcontextprotocol.io/schemas/v1/server-card.schema.json" {
		t.Errorf("$schema = %q", c.Schema)
	}
	if !cardName.MatchString(c.Name) || len(c.Name) > 200 {
		t.Errorf("name %q is not reverse-DNS with one slash", c.Name)
	}
	if c.Version == "" || strings.ContainsAny(c.Version, "^~><*") {
		t.Errorf("version %q", c.Version)
	}
	if n := len([]rune(c.Description)); n == 0 || n > 100 {
		t.Errorf("description %q: %d characters", c.Description, n)
	}
	if c.Capabilities == nil {
		t.Errorf("capabilities (required) missing")
	}
	if len(c.Remotes) == 0 {
		t.Fatalf("no remotes")
	}
	for _, r := range c.Remotes {
		if r.Type != "streamable-http" && r.Type != "sse" || !remoteURL.MatchString(r.URL) || len(r.SupportedProtocolVersions) == 0 {
			t.Errorf("remote %+v", r)
		}
		if a := r.Authentication; a != nil && (a.Required == nil || len(a.Schemes) == 0) {
			t.Errorf("remote %s: authentication needs required and schemes: %+v", r.URL, *a)
		}
	}
	return c
}

// TestServerCard: the card of the gateway and of an endpoint, against golden files and the SEP's shape. Without
// auth, with primitives, each card lists the catalog as a caller sees it there (the endpoint's only its echo
// tool) and its remotes are its own URLs, unauthenticated; with auth, the cards say authentication is required
// and list no tools, prompts or resources, even with primitives asked for.
func TestServerCard(t *testing.T) {
	card := &gateway.ServerCard{PublicURL: "https://mcp.example.com/", Name: "com.example.mcp/switchboard", Primitives: true}
	for _, tc := range []struct {
		name  string
		gopts gateway.Options
		path  string
		file  string
		check func(t *testing.T, c sepCard)
	}{
		{name: "gateway", path: "/.well-known/mcp/server-card", file: "server-card.json", check: func(t *testing.T, c sepCard) {
			if len(c.Tools) < 4 || c.Prompts == nil || c.Resources == nil {
				t.Errorf("lists: %d tools, prompts %v, resources %v", len(c.Tools), c.Prompts, c.Resources)
			}
		}},
		{name: "endpoint", path: "/.well-known/mcp/server-card/echoes", file: "server-card-echoes.json", check: func(t *testing.T, c sepCard) {
			if c.Name != "com.example.mcp/switchboard-echoes" || c.Remotes[0].URL != "https://mcp.example.com/mcp/echoes" {
				t.Errorf("name %q, remote %q", c.Name, c.Remotes[0].URL)
			}
			var names []string
			for _, raw := range c.Tools {
				var tl struct{ Name string }
				_ = json.Unmarshal(raw, &tl)
				names = append(names, tl.Name)
			}
			if !slices.Equal(names, []string{"alpha__echo"}) {
				t.Errorf("the endpoint's card lists %v, want its one tool", names)
			}
		}},
		{name: "auth on", gopts: gateway.Options{Auth: headerAuth{}, Identify: headerIdentity}, path: "/.well-known/mcp/server-card", file: "server-card-auth.json", check: func(t *testing.T, c sepCard) {
			if c.Tools != nil || c.Prompts != nil || c.Resources != nil {
				t.Errorf("with auth the card lists tools %d, prompts %v, resources %v", len(c.Tools), c.Prompts, c.Resources)
			}
			for _, r := range c.Remotes {
				if a := r.Authentication; a == nil || !*a.Required || !slices.Equal(a.Schemes, []string{"bearer", "oauth2"}) {
					t.Errorf("remote %s does not require bearer/oauth2 authentication", r.URL)
				}
			}
		}},
		{name: "auth on, endpoint", gopts: gateway.Options{Auth: headerAuth{}, Identify: headerIdentity}, path: "/.well-known/mcp/server-card/echoes", file: "server-card-auth-echoes.json", check: func(t *testing.T, c sepCard) {
			if c.Tools != nil {
				t.Errorf("with auth the endpoint's card lists %d tools", len(c.Tools))
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := cardGateway(t, card, tc.gopts)
			resp, body := getCard(t, h, http.MethodGet, tc.path)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("GET %s: %d %s", tc.path, resp.StatusCode, body)
			}
			for k, want := range map[string]string{
				"Content-Type": "application/json", "Cache-Control": "public, max-age=300",
				"Access-Control-Allow-Origin": "*", "Access-Control-Allow-Methods": "GET", "Access-Control-Allow-Headers": "Content-Type",
			} {
				if got := resp.Header.Get(k); got != want {
					t.Errorf("%s: %q, want %q", k, got, want)
				}
			}
			c := checkSEPShape(t, body)
			if c.Remotes[0].Type != "streamable-http" || !slices.Equal(c.Remotes[0].SupportedProtocolVersions, protocol.Supported()) {
				t.Errorf("first remote %+v, want streamable HTTP in every version", c.Remotes[0])
			}
			tc.check(t, c)
			golden(t, tc.file, body)
		})
	}
}

// TestServerCardHTTP: no card unless configured (404 at both paths), none for an endpoint that does not exist,
// the CORS preflight, HEAD, and the caller's rate limit.
func TestServerCardHTTP(t *testing.T) {
	card := &gateway.ServerCard{PublicURL: "https://mcp.example.com", Name: "com.example.mcp/switchboard"}
	off := cardGateway(t, nil, gateway.Options{})
	on := cardGateway(t, card, gateway.Options{})
	limited := cardGateway(t, card, gateway.Options{Limits: gateway.Limits{Limiter: state.NewMemory(), RequestsPerSecond: 0.01, Burst: 1}})
	for _, tc := range []struct {
		name   string
		h      *harness
		method string
		path   string
		status int
	}{
		{"off", off, http.MethodGet, "/.well-known/mcp/server-card", http.StatusNotFound},
		{"off, endpoint", off, http.MethodGet, "/.well-known/mcp/server-card/echoes", http.StatusNotFound},
		{"unknown endpoint", on, http.MethodGet, "/.well-known/mcp/server-card/nope", http.StatusNotFound},
		{"deeper path", on, http.MethodGet, "/.well-known/mcp/server-card/echoes/more", http.StatusNotFound},
		{"preflight", on, http.MethodOptions, "/.well-known/mcp/server-card", http.StatusNoContent},
		{"HEAD", on, http.MethodHead, "/.well-known/mcp/server-card/echoes", http.StatusOK},
		{"POST", on, http.MethodPost, "/.well-known/mcp/server-card", http.StatusMethodNotAllowed},
		{"within the rate", limited, http.MethodGet, "/.well-known/mcp/server-card", http.StatusOK},
		{"over the rate", limited, http.MethodGet, "/.well-known/mcp/server-card", http.StatusTooManyRequests},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := getCard(t, tc.h, tc.method, tc.path)
			if resp.StatusCode != tc.status {
				t.Fatalf("%s %s: %d, want %d: %s", tc.method, tc.path, resp.StatusCode, tc.status, body)
			}
			switch tc.status {
			case http.StatusNoContent:
				if resp.Header.Get("Access-Control-Allow-Origin") != "*" || resp.Header.Get("Access-Control-Allow-Methods") != "GET" {
					t.Errorf("preflight headers %v", resp.Header)
				}
			case http.StatusTooManyRequests:
				if resp.Header.Get("Retry-After") == "" {
					t.Errorf("429 without Retry-After")
				}
			case http.StatusOK:
				if tc.method == http.MethodHead && len(body) > 0 {
					t.Errorf("HEAD with a body")
				}
			}
		})
	}
}
