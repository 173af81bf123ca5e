package auth

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

func TestAuthenticateJWT(t *testing.T) {
	ti := newTestIssuer(t)
	rs := ti.server(t, ti.config())
	otherRSA, _ := rsa.GenerateKey(rand.Reader, 2048)
	pubDER, _ := x509.MarshalPKIXPublicKey(&ti.rsaKey.PublicKey)
	with := func(mod func(c map[string]any)) map[string]any {
		c := ti.claims()
		mod(c)
		return c
	}
	now := time.Now()
	tests := []struct {
		name  string
		token string
		want  error // nil = accepted
	}{
		{"valid RS256", ti.rs256(ti.claims()), nil},
		{"valid ES256", ti.sign(jose.ES256, ti.ecKey, "ec-1", ti.claims()), nil},
		{"valid without kid", ti.sign(jose.RS256, ti.rsaKey, "", ti.claims()), nil},
		{"aud as a list", ti.rs256(with(func(c map[string]any) { c["aud"] = []string{"other", testAudience} })), nil},
		{"scp array", ti.rs256(with(func(c map[string]any) { delete(c, "scope"); c["scp"] = []string{"mcp"} })), nil},
		{"expired within skew", ti.rs256(with(func(c map[string]any) { c["exp"] = now.Add(-10 * time.Second).Unix() })), nil},
		{"expired", ti.rs256(with(func(c map[string]any) { c["exp"] = now.Add(-time.Minute).Unix() })), ErrInvalidToken},
		{"not yet valid", ti.rs256(with(func(c map[string]any) { c["nbf"] = now.Add(time.Minute).Unix() })), ErrInvalidToken},
		{"nbf within skew", ti.rs256(with(func(c map[string]any) { c["nbf"] = now.Add(10 * time.Second).Unix() })), nil},
		{"no exp", ti.rs256(with(func(c map[string]any) { delete(c, "exp") })), ErrInvalidToken},
		{"no sub", ti.rs256(with(func(c map[string]any) { delete(c, "sub") })), ErrInvalidToken},
		{"wrong audience", ti.rs256(with(func(c map[string]any) { c["aud"] = "https://other.example.com/mcp" })), ErrInvalidToken},
		{"audience with trailing slash", ti.rs256(with(func(c map[string]any) { c["aud"] = testAudience + "/" })), ErrInvalidToken},
		{"wrong issuer", ti.rs256(with(func(c map[string]any) { c["iss"] = "https://evil.example.com" })), ErrInvalidToken},
		{"bad signature (other key, same kid)", ti.sign(jose.RS256, otherRSA, "rsa-1", ti.claims()), ErrInvalidToken},
		{"tampered payload", tamper(ti.rs256(ti.claims())), ErrInvalidToken},
		{"alg none", unsigned(ti.claims()), ErrInvalidToken},
		{"HS256 with the public key as secret", ti.sign(jose.HS256, pubDER, "rsa-1", ti.claims()), ErrInvalidToken},
		{"RSA key with ES256 kid", ti.sign(jose.RS256, ti.rsaKey, "ec-1", ti.claims()), ErrInvalidToken},
		{"missing scope", ti.rs256(with(func(c map[string]any) { c["scope"] = "files:read" })), ErrInsufficientScope},
		{"opaque without introspection", "opaque-token-value", ErrInvalidToken},
		{"no token", "", ErrNoToken},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := rs.Authenticate(request(tt.token))
			if tt.want == nil {
				if err != nil {
					t.Fatalf("Authenticate: %v", err)
				}
				if p.Subject != "alice" || p.Issuer != ti.srv.URL || p.Key() != ti.srv.URL+"|alice" || !p.HasScope("mcp") || p.token != tt.token {
					t.Errorf("principal = %+v scopes %v", p, p.Scopes)
				}
				return
			}
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			if strings.Contains(err.Error(), tt.token) && tt.token != "" {
				t.Errorf("error text contains the token")
			}
		})
	}
}

func tamper(tok string) string {
	parts := strings.Split(tok, ".")
	parts[1] = parts[1][:len(parts[1])-2] + "AA"
	return strings.Join(parts, ".")
}

func TestAuthorizationHeaderForms(t *testing.T) {
	ti := newTestIssuer(t)
	rs := ti.server(t, ti.config())
	tok := ti.rs256(ti.claims())
	for _, tt := range []struct {
		name string
		mod  func(r *http.Request)
		want error
	}{
		{"lowercase scheme", func(r *http.Request) { r.Header.Set("Authorization", "bearer "+tok) }, nil},
		{"basic scheme", func(r *http.Request) { r.Header.Set("Authorization", "Basic YTpi") }, ErrNoToken},
		{"query string is ignored", func(r *http.Request) { r.URL.RawQuery = "access_token=" + tok }, ErrNoToken},
		{"two headers", func(r *http.Request) {
			r.Header.Add("Authorization", "Bearer "+tok)
			r.Header.Add("Authorization", "Bearer "+tok)
		}, ErrInvalidToken},
		{"empty bearer", func(r *http.Request) { r.Header.Set("Authorization", "Bearer ") }, ErrInvalidToken},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
			tt.mod(r)
			_, err := rs.Authenticate(r)
			if tt.want == nil && err != nil || tt.want != nil && !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestAlgorithmsRestricted(t *testing.T) {
	ti := newTestIssuer(t)
	cfg := ti.config()
	cfg.Algorithms = []string{"ES256"}
	rs := ti.server(t, cfg)
	if _, err := rs.Authenticate(request(ti.rs256(ti.claims()))); !errors.Is(err, ErrInvalidToken) {
		t.Errorf("RS256 with algorithms [ES256]: %v", err)
	}
	if _, err := rs.Authenticate(request(ti.sign(jose.ES256, ti.ecKey, "ec-1", ti.claims()))); err != nil {
		t.Errorf("ES256: %v", err)
	}
	cfg.Algorithms = []string{"HS256"}
	if _, err := NewResourceServer(context.Background(), cfg, ti.srv.Client()); err == nil {
		t.Error("HS256 accepted in Algorithms")
	}
}

func TestKeyRotation(t *testing.T) {
	ti := newTestIssuer(t)
	rs := ti.server(t, ti.config())
	if _, err := rs.Authenticate(request(ti.rs256(ti.claims()))); err != nil {
		t.Fatal(err)
	}
	hits := ti.jwksHits.Load()
	// The issuer rotates: a new key appears in its JWKS after the verifier
	// has cached the old set.
	newKey, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	ti.publish("ec-2", &newKey.PublicKey, "ES384")
	tok := ti.sign(jose.ES384, newKey, "ec-2", ti.claims())
	rs.keys.minRefresh = 0 // the throttle is tested below
	if _, err := rs.Authenticate(request(tok)); err != nil {
		t.Fatalf("token signed with the rotated key: %v", err)
	}
	if got := ti.jwksHits.Load(); got != hits+1 {
		t.Errorf("JWKS fetched %d times for the new kid, want 1", got-hits)
	}
	// Known kid: no fetch.
	if _, err := rs.Authenticate(request(tok)); err != nil {
		t.Fatal(err)
	}
	if got := ti.jwksHits.Load(); got != hits+1 {
		t.Errorf("JWKS refetched for a known kid")
	}
}

func TestForgedTokensDoNotHammerJWKS(t *testing.T) {
	ti := newTestIssuer(t)
	rs := ti.server(t, ti.config())
	otherRSA, _ := rsa.GenerateKey(rand.Reader, 2048)
	if _, err := rs.Authenticate(request(ti.rs256(ti.claims()))); err != nil {
		t.Fatal(err)
	}
	hits := ti.jwksHits.Load()
	for i := range 20 {
		// Bad signature with a known kid: never a fetch.
		if _, err := rs.Authenticate(request(ti.sign(jose.RS256, otherRSA, "rsa-1", ti.claims()))); !errors.Is(err, ErrInvalidToken) {
			t.Fatal(err)
		}
		// Unknown kids: at most one fetch per minRefresh.
		if _, err := rs.Authenticate(request(ti.sign(jose.RS256, otherRSA, "kid-"+string(rune('a'+i)), ti.claims()))); !errors.Is(err, ErrInvalidToken) {
			t.Fatal(err)
		}
	}
	if got := ti.jwksHits.Load() - hits; got > 1 {
		t.Errorf("forged tokens caused %d JWKS fetches, want at most 1", got)
	}
}

func TestLazyDiscovery(t *testing.T) {
	ti := newTestIssuer(t)
	ti.down.Store(true)
	rs := ti.server(t, ti.config()) // starts although the issuer is down
	clock := time.Now()
	rs.now = func() time.Time { return clock }
	tok := ti.rs256(ti.claims())
	_, err := rs.Authenticate(request(tok))
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("err = %v, want unavailable", err)
	}
	w := httptest.NewRecorder()
	rs.Challenge(w, err)
	if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") == "" {
		t.Errorf("challenge = %d %v", w.Code, w.Header())
	}
	ti.down.Store(false)
	before := ti.discovered.Load()
	if _, err := rs.Authenticate(request(tok)); !errors.Is(err, ErrUnavailable) {
		t.Errorf("retried discovery before the retry interval: %v", err)
	}
	if ti.discovered.Load() != before {
		t.Error("discovery retried too soon")
	}
	clock = clock.Add(discoveryRetry + time.Second)
	if _, err := rs.Authenticate(request(tok)); err != nil {
		t.Fatalf("after the issuer came back: %v", err)
	}
}

func TestDiscoveryErrors(t *testing.T) {
	ti := newTestIssuer(t)
	cfg := ti.config()
	cfg.Issuer = ti.srv.URL + "/"
	if _, err := NewResourceServer(context.Background(), cfg, ti.srv.Client()); err == nil || !strings.Contains(err.Error(), "names issuer") {
		t.Errorf("issuer mismatch: %v", err)
	}
	cfg = ti.config()
	cfg.Issuer = "http://login.example.com"
	if _, err := NewResourceServer(context.Background(), cfg, ti.srv.Client()); err == nil || !strings.Contains(err.Error(), "https") {
		t.Errorf("http issuer on a non-loopback host: %v", err)
	}
}

func TestJWKSURLOverrideAndRFC8414(t *testing.T) {
	ti := newTestIssuer(t)
	cfg := ti.config()
	cfg.JWKSURL = ti.srv.URL + "/jwks"
	ti.down.Store(true) // discovery must not be needed
	rs := ti.server(t, cfg)
	if _, err := rs.Authenticate(request(ti.rs256(ti.claims()))); err != nil {
		t.Fatalf("with jwksURL: %v", err)
	}

	// An OAuth server with only RFC 8414 metadata, issuer with a path.
	mux := http.NewServeMux()
	as := httptest.NewServer(mux)
	defer as.Close()
	mux.HandleFunc("/.well-known/oauth-authorization-server/tenant1", func(w http.ResponseWriter, r *http.Request) {
		writeJSONT(w, map[string]any{"issuer": as.URL + "/tenant1", "jwks_uri": ti.srv.URL + "/jwks"})
	})
	cfg = ti.config()
	cfg.Issuer = as.URL + "/tenant1"
	rs, err := NewResourceServer(context.Background(), cfg, as.Client())
	if err != nil {
		t.Fatal(err)
	}
	c := ti.claims()
	c["iss"] = cfg.Issuer
	if _, err := rs.Authenticate(request(ti.rs256(c))); err != nil {
		t.Fatalf("RFC 8414 discovery: %v", err)
	}
}

func TestIntrospection(t *testing.T) {
	ti := newTestIssuer(t)
	cfg := ti.config()
	cfg.Introspection = &IntrospectionConfig{URL: ti.srv.URL + "/introspect", ClientID: "gateway", ClientSecret: "s3cret", CacheTTL: time.Minute}
	rs := ti.server(t, cfg)
	exp := float64(time.Now().Add(time.Hour).Unix())
	ti.active["good-opaque"] = map[string]any{"active": true, "sub": "bob", "aud": []string{testAudience}, "scope": "mcp", "exp": exp, "iss": ti.srv.URL}
	ti.active["other-aud"] = map[string]any{"active": true, "sub": "bob", "aud": "https://else", "scope": "mcp", "exp": exp}
	ti.active["no-scope"] = map[string]any{"active": true, "sub": "bob", "aud": testAudience, "scope": "other", "exp": exp}

	p, err := rs.Authenticate(request("good-opaque"))
	if err != nil {
		t.Fatal(err)
	}
	if p.Subject != "bob" || p.Issuer != ti.srv.URL || !p.HasScope("mcp") {
		t.Errorf("principal = %v %v", p, p.Scopes)
	}
	if _, err := rs.Authenticate(request("good-opaque")); err != nil {
		t.Fatal(err)
	}
	if n := ti.introHits.Load(); n != 1 {
		t.Errorf("introspected %d times, want 1 (cached)", n)
	}
	for tok, want := range map[string]error{"revoked": ErrInvalidToken, "other-aud": ErrInvalidToken, "no-scope": ErrInsufficientScope} {
		if _, err := rs.Authenticate(request(tok)); !errors.Is(err, want) {
			t.Errorf("%s: err = %v, want %v", tok, err, want)
		}
	}
	hits := ti.introHits.Load()
	if _, err := rs.Authenticate(request("revoked")); !errors.Is(err, ErrInvalidToken) {
		t.Error(err)
	}
	if ti.introHits.Load() != hits {
		t.Error("inactive answer not cached")
	}
	// The cache expires.
	rs.now = func() time.Time { return time.Now().Add(2 * time.Minute) }
	if _, err := rs.Authenticate(request("good-opaque")); err != nil {
		t.Fatal(err)
	}
	if ti.introHits.Load() != hits+1 {
		t.Error("cache entry outlived cacheTTL")
	}

	// Wrong client secret: the endpoint refuses, which is unavailability,
	// not a verdict on the token.
	cfg.Introspection = &IntrospectionConfig{URL: ti.srv.URL + "/introspect", ClientID: "gateway", ClientSecret: "wrong"}
	rs2 := ti.server(t, cfg)
	if _, err := rs2.Authenticate(request("good-opaque")); !errors.Is(err, ErrUnavailable) {
		t.Errorf("bad introspection credentials: %v", err)
	}
}

func TestMiddleware(t *testing.T) {
	ti := newTestIssuer(t)
	rs := ti.server(t, ti.config())
	var got *Principal
	h := rs.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got = PrincipalFrom(r.Context()) }))
	w := httptest.NewRecorder()
	h.ServeHTTP(w, request(ti.rs256(ti.claims())))
	if w.Code != 200 || got == nil || got.Subject != "alice" || !slices.Contains(got.Groups, "eng") {
		t.Fatalf("code %d principal %v", w.Code, got)
	}
	got = nil
	w = httptest.NewRecorder()
	h.ServeHTTP(w, request(""))
	if w.Code != 401 || got != nil {
		t.Fatalf("no token: code %d, next called: %v", w.Code, got != nil)
	}
}

func TestMetadataURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://mcp.example.com/mcp":        "https://mcp.example.com/.well-known/oauth-protected-resource/mcp",
		"https://mcp.example.com":            "https://mcp.example.com/.well-known/oauth-protected-resource",
		"https://mcp.example.com/":           "https://mcp.example.com/.well-known/oauth-protected-resource",
		"http://127.0.0.1:8080/public/mcp/":  "http://127.0.0.1:8080/.well-known/oauth-protected-resource/public/mcp",
		"https://mcp.example.com:8443/a%20b": "https://mcp.example.com:8443/.well-known/oauth-protected-resource/a%20b",
	} {
		if got := MetadataURL(in); got != want {
			t.Errorf("MetadataURL(%q) = %q, want %q", in, got, want)
		}
	}
}
