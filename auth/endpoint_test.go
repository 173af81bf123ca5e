package auth

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path"
	"strings"
	"sync"
	"testing"
	"time"
)

const (
	testEndpointA = testAudience + "/a" // https://mcp.example.com/mcp/a
	testEndpointB = testAudience + "/b"
)

// TestEndpointMetadata: every endpoint is its own RFC 9728 resource, whose document is served at the §3.1 path
// built from its identifier and announced by its challenges; the gateway's own stays as it was.
func TestEndpointMetadata(t *testing.T) {
	ti := newTestIssuer(t)
	const wk = "/.well-known/oauth-protected-resource"
	for _, tc := range []struct {
		name, audience, announced, endpoint string
		resource, metadataURL, path         string
	}{
		{"default", "https://gw.example/mcp", "", "team",
			"https://gw.example/mcp/team", "https://gw.example" + wk + "/mcp/team", wk + "/mcp/team"},
		{"audience with trailing slash", "https://gw.example/mcp/", "", "team",
			"https://gw.example/mcp/team", "https://gw.example" + wk + "/mcp/team", wk + "/mcp/team"},
		{"audience without a path", "https://gw.example", "", "team",
			"https://gw.example/team", "https://gw.example" + wk + "/team", wk + "/team"},
		{"audience at the root", "https://gw.example/", "", "team-2",
			"https://gw.example/team-2", "https://gw.example" + wk + "/team-2", wk + "/team-2"},
		{"audience under a prefix with a port", "https://gw.example:8443/tenant/a/mcp", "", "0",
			"https://gw.example:8443/tenant/a/mcp/0", "https://gw.example:8443" + wk + "/tenant/a/mcp/0", wk + "/tenant/a/mcp/0"},
		{"announced: the §3.1 URL, configured", "https://gw.example/mcp", "https://gw.example" + wk + "/mcp", "team",
			"https://gw.example/mcp/team", "https://gw.example" + wk + "/mcp/team", wk + "/mcp/team"},
		{"announced: the §3.1 path at a public origin", "https://gw.example/mcp", "https://public.example" + wk + "/mcp", "team",
			"https://gw.example/mcp/team", "https://public.example" + wk + "/mcp/team", wk + "/mcp/team"},
		{"announced: a document hosted elsewhere", "https://gw.example/mcp", "https://docs.example/prm.json", "team",
			"https://gw.example/mcp/team", "https://gw.example" + wk + "/mcp/team", wk + "/mcp/team"},
		{"announced: the root form, not the audience's", "https://gw.example/mcp", "https://gw.example" + wk, "team",
			"https://gw.example/mcp/team", "https://gw.example" + wk + "/mcp/team", wk + "/mcp/team"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := ti.config()
			cfg.Audience, cfg.ResourceMetadataURL = tc.audience, tc.announced
			cfg.ResourceName, cfg.DocumentationURL = "Switchboard", "https://docs.example/mcp"
			rs := ti.server(t, cfg)
			rootPath, rootMeta := rs.MetadataPath(), rs.Metadata()
			e := rs.ForEndpoint(tc.endpoint)
			if e == nil {
				t.Fatal("ForEndpoint = nil")
			}
			if got := e.Metadata().Resource; got != tc.resource {
				t.Errorf("Metadata().Resource = %q, want %q", got, tc.resource)
			}
			if got := e.MetadataPath(); got != tc.path || path.Base(got) != tc.endpoint {
				t.Errorf("MetadataPath() = %q, want %q, ending in the name (the gateway serves every name's there)", got, tc.path)
			}
			if got := e.cfg.ResourceMetadataURL; got != tc.metadataURL {
				t.Errorf("metadata URL = %q, want %q", got, tc.metadataURL)
			}
			if want := `Bearer resource_metadata="` + tc.metadataURL + `", scope="mcp"`; e.ChallengeHeader("", e.cfg.Scopes, "") != want {
				t.Errorf("challenge = %s, want %s", e.ChallengeHeader("", e.cfg.Scopes, ""), want)
			}
			// The document served at the endpoint's path names the endpoint's resource, and otherwise is rs's.
			w := httptest.NewRecorder()
			e.MetadataHandler().ServeHTTP(w, httptest.NewRequest(http.MethodGet, tc.path, nil))
			var doc map[string]any
			if err := json.Unmarshal(w.Body.Bytes(), &doc); err != nil || w.Code != 200 {
				t.Fatalf("metadata: %d %s", w.Code, w.Body)
			}
			want := map[string]any{
				"resource":                 tc.resource,
				"authorization_servers":    []any{ti.srv.URL},
				"scopes_supported":         []any{"mcp"},
				"bearer_methods_supported": []any{"header"},
				"resource_name":            "Switchboard",
				"resource_documentation":   "https://docs.example/mcp",
			}
			if fmt.Sprint(doc) != fmt.Sprint(want) {
				t.Errorf("metadata:\n got %v\nwant %v", doc, want)
			}
			// rs is untouched.
			if rs.MetadataPath() != rootPath || fmt.Sprint(rs.Metadata()) != fmt.Sprint(rootMeta) || rs.Metadata().Resource != tc.audience {
				t.Errorf("rs changed: %s %v", rs.MetadataPath(), rs.Metadata())
			}
			// §3.3: the resource is the identifier the well-known path was built from.
			if !strings.HasSuffix(MetadataURL(tc.resource), tc.path) {
				t.Errorf("MetadataURL(%s) = %s does not end in the served path %s", tc.resource, MetadataURL(tc.resource), tc.path)
			}
		})
	}
}

// TestEndpointChallenge: every challenge of an endpoint (no token, invalid token, insufficient scope) points at the
// endpoint's metadata; the gateway's points at its own.
func TestEndpointChallenge(t *testing.T) {
	ti := newTestIssuer(t)
	rs := ti.server(t, ti.config())
	const wk = "https://mcp.example.com/.well-known/oauth-protected-resource"
	for _, tc := range []struct {
		name string
		rs   *ResourceServer
		prm  string
	}{
		{"gateway", rs, wk + "/mcp"},
		{"endpoint a", rs.ForEndpoint("a"), wk + "/mcp/a"},
		{"endpoint b", rs.ForEndpoint("b"), wk + "/mcp/b"},
	} {
		for _, ch := range []struct {
			err    error
			status int
			header string
		}{
			{ErrNoToken, 401, `Bearer resource_metadata="` + tc.prm + `", scope="mcp"`},
			{invalid("x"), 401, `Bearer error="invalid_token", resource_metadata="` + tc.prm + `", scope="mcp", error_description="The access token is invalid or expired."`},
			{&InsufficientScopeError{Scopes: []string{"mcp", "files:write"}}, 403,
				`Bearer error="insufficient_scope", resource_metadata="` + tc.prm + `", scope="mcp files:write", error_description="The access token lacks a required scope."`},
		} {
			t.Run(tc.name+"/"+ch.err.Error(), func(t *testing.T) {
				w := httptest.NewRecorder()
				tc.rs.Challenge(w, ch.err)
				if w.Code != ch.status || w.Header().Get("WWW-Authenticate") != ch.header {
					t.Errorf("%d %s\nwant %d %s", w.Code, w.Header().Get("WWW-Authenticate"), ch.status, ch.header)
				}
			})
		}
	}
	// Through the middleware: a request to endpoint a with a token for endpoint b is challenged with a's metadata.
	c := ti.claims()
	c["aud"] = testEndpointB
	w := httptest.NewRecorder()
	rs.ForEndpoint("a").Middleware(http.NotFoundHandler()).ServeHTTP(w, request(ti.rs256(c)))
	if w.Code != 401 || !strings.Contains(w.Header().Get("WWW-Authenticate"), `error="invalid_token", resource_metadata="`+wk+`/mcp/a"`) {
		t.Errorf("b's token at a: %d %s", w.Code, w.Header().Get("WWW-Authenticate"))
	}
}

// audienceMatrix is who accepts a token by its aud: the gateway's own resource (rs), endpoint a and endpoint b.
var audienceMatrix = []struct {
	name     string
	aud      any
	rs, a, b bool
}{
	{"gateway aud", testAudience, true, true, true},
	{"endpoint a aud", testEndpointA, false, true, false},
	{"endpoint b aud", testEndpointB, false, false, true},
	{"gateway and a", []string{testAudience, testEndpointA}, true, true, true},
	{"a and b", []string{testEndpointA, testEndpointB}, false, true, true},
	{"a and another resource", []string{"https://other.example/mcp", testEndpointA}, false, true, false},
	{"a with a trailing slash", testEndpointA + "/", false, false, false},
	{"a in upper case", strings.ToUpper(testEndpointA), false, false, false},
	{"an undeclared endpoint's", testAudience + "/c", false, false, false},
	{"another resource", "https://other.example/mcp", false, false, false},
	{"the gateway's origin", "https://mcp.example.com", false, false, false},
	{"none", nil, false, false, false},
}

// TestEndpointAudienceJWT: the audience matrix with real signed JWTs.
func TestEndpointAudienceJWT(t *testing.T) {
	ti := newTestIssuer(t)
	rs := ti.server(t, ti.config())
	for _, tc := range audienceMatrix {
		c := ti.claims()
		if tc.aud == nil {
			delete(c, "aud")
		} else {
			c["aud"] = tc.aud
		}
		tok := ti.rs256(c)
		checkAudience(t, rs, tc.name, tok, tc.rs, tc.a, tc.b)
	}
	// One discovery and one JWKS fetch served the gateway and both endpoints.
	if ti.discovered.Load() != 1 || ti.jwksHits.Load() != 1 {
		t.Errorf("discovery %d times, JWKS %d times; want 1 and 1", ti.discovered.Load(), ti.jwksHits.Load())
	}
}

// TestEndpointAudienceIntrospection: the audience matrix with opaque tokens; one introspection answer, cached,
// serves every resource, and the audience is decided per resource on every use.
func TestEndpointAudienceIntrospection(t *testing.T) {
	ti := newTestIssuer(t)
	cfg := ti.config()
	cfg.Introspection = &IntrospectionConfig{URL: ti.srv.URL + "/introspect", ClientID: "gateway", ClientSecret: "s3cret", CacheTTL: time.Minute}
	rs := ti.server(t, cfg)
	exp := float64(time.Now().Add(time.Hour).Unix())
	for i, tc := range audienceMatrix {
		tok := fmt.Sprintf("opaque-%d", i)
		ans := map[string]any{"active": true, "sub": "alice", "scope": "mcp", "exp": exp, "iss": ti.srv.URL}
		if tc.aud != nil {
			ans["aud"] = tc.aud
		}
		ti.mu.Lock()
		ti.active[tok] = ans
		ti.mu.Unlock()
		before := ti.introHits.Load()
		checkAudience(t, rs, tc.name, tok, tc.rs, tc.a, tc.b)
		if n := ti.introHits.Load() - before; n != 1 {
			t.Errorf("%s: introspected %d times for three resources, want 1", tc.name, n)
		}
	}
}

// checkAudience authenticates tok at rs, rs.ForEndpoint("a") and rs.ForEndpoint("b"), in both orders.
func checkAudience(t *testing.T, rs *ResourceServer, name, tok string, atRS, atA, atB bool) {
	t.Helper()
	for _, at := range []struct {
		where  string
		rs     *ResourceServer
		accept bool
	}{{"rs", rs, atRS}, {"a", rs.ForEndpoint("a"), atA}, {"b", rs.ForEndpoint("b"), atB}, {"rs again", rs, atRS}} {
		t.Run(name+"/at "+at.where, func(t *testing.T) {
			p, err := at.rs.Authenticate(request(tok))
			switch {
			case at.accept && err != nil:
				t.Errorf("refused: %v", err)
			case at.accept && p.Subject != "alice":
				t.Errorf("principal %v", p)
			case !at.accept && !errors.Is(err, ErrInvalidToken):
				t.Errorf("err = %v, want invalid_token", err)
			case !at.accept:
				w := httptest.NewRecorder()
				at.rs.Challenge(w, err)
				if w.Code != 401 || !strings.Contains(w.Header().Get("WWW-Authenticate"), `error="invalid_token"`) {
					t.Errorf("challenge %d %s", w.Code, w.Header().Get("WWW-Authenticate"))
				}
			}
		})
	}
}

// TestEndpointNames: a name outside ^[a-z0-9][a-z0-9-]{0,31}$ gives nil, so nothing can be injected into a path or
// a URL; so do a nil server and an endpoint's own server (endpoints do not nest).
func TestEndpointNames(t *testing.T) {
	ti := newTestIssuer(t)
	rs := ti.server(t, ti.config())
	for _, name := range []string{"a", "0", "team", "team-2", "a-", "9-lives", strings.Repeat("x", 32)} {
		if e := rs.ForEndpoint(name); e == nil || e.Metadata().Resource != testAudience+"/"+name {
			t.Errorf("ForEndpoint(%q) = %v", name, e)
		}
	}
	for _, name := range []string{"", "-a", "Team", "team_2", "a/b", "../admin", "a?b", "a#b", "a%2fb", "a b", "a.b",
		".", "..", "é", "a\x00", strings.Repeat("x", 33), "team\n"} {
		if e := rs.ForEndpoint(name); e != nil {
			t.Errorf("ForEndpoint(%q) = %s, want nil", name, e.Metadata().Resource)
		}
	}
	if e := rs.ForEndpoint("a").ForEndpoint("b"); e != nil {
		t.Errorf("nested endpoint = %s, want nil", e.Metadata().Resource)
	}
	var none *ResourceServer
	if none.ForEndpoint("a") != nil {
		t.Error("nil server: ForEndpoint != nil")
	}
}

// TestEndpointConcurrent: many goroutines asking for endpoints' servers and authenticating through them (run with
// -race) all get the one server of each name, and share one key set.
func TestEndpointConcurrent(t *testing.T) {
	ti := newTestIssuer(t)
	rs := ti.server(t, ti.config())
	names := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	toks := map[string]string{}
	for _, n := range names {
		c := ti.claims()
		c["aud"] = testAudience + "/" + n
		toks[n] = ti.rs256(c)
	}
	const workers = 64
	got := make([][]*ResourceServer, workers)
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			for i := range 200 {
				n := names[(w+i)%len(names)]
				e := rs.ForEndpoint(n)
				got[w] = append(got[w], e)
				if i%20 == 0 {
					if _, err := e.Authenticate(request(toks[n])); err != nil {
						errs <- fmt.Errorf("%s: %v", n, err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for w := range got {
		for _, e := range got[w] {
			if e != rs.ForEndpoint(e.endpoint) || e.shared != rs.shared {
				t.Fatalf("worker %d got a second server for %q", w, e.endpoint)
			}
		}
	}
	if rs.nEndpoints != len(names) || ti.jwksHits.Load() != 1 {
		t.Errorf("%d endpoints kept, JWKS fetched %d times", rs.nEndpoints, ti.jwksHits.Load())
	}
}

// TestEndpointLimit: past the bound, ForEndpoint still gives a correct server, built for the call and not kept.
func TestEndpointLimit(t *testing.T) {
	ti := newTestIssuer(t)
	rs := ti.server(t, ti.config())
	rs.endpointLimit = 2
	a, b := rs.ForEndpoint("a"), rs.ForEndpoint("b")
	c1, c2 := rs.ForEndpoint("c"), rs.ForEndpoint("c")
	if a != rs.ForEndpoint("a") || b != rs.ForEndpoint("b") {
		t.Error("kept servers not returned again")
	}
	if c1 == nil || c1 == c2 || c1.Metadata().Resource != testAudience+"/c" || c1.MetadataPath() != "/.well-known/oauth-protected-resource/mcp/c" {
		t.Errorf("past the bound: %p %p %v", c1, c2, c1)
	}
	if rs.nEndpoints != 2 {
		t.Errorf("kept %d, want 2", rs.nEndpoints)
	}
	c := ti.claims()
	c["aud"] = testAudience + "/c"
	if _, err := c1.Authenticate(request(ti.rs256(c))); err != nil {
		t.Errorf("past the bound: %v", err)
	}
}
