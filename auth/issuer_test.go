package auth

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

const testAudience = "https://mcp.example.com/mcp"

// testIssuer is a real OAuth authorization server over HTTP: OIDC
// discovery, a JWKS, introspection and a token endpoint. Tokens are signed
// with go-jose.
type testIssuer struct {
	t   *testing.T
	srv *httptest.Server

	rsaKey *rsa.PrivateKey
	ecKey  *ecdsa.PrivateKey

	mu        sync.Mutex
	published []jose.JSONWebKey
	active    map[string]map[string]any // introspection answers by token
	token     http.HandlerFunc          // the token endpoint, set by a test

	down       atomic.Bool // discovery answers 503
	jwksHits   atomic.Int32
	introHits  atomic.Int32
	discovered atomic.Int32
}

func newTestIssuer(t *testing.T) *testIssuer {
	t.Helper()
	ti := &testIssuer{t: t, active: map[string]map[string]any{}}
	var err error
	if ti.rsaKey, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
		t.Fatal(err)
	}
	if ti.ecKey, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
		t.Fatal(err)
	}
	ti.publish("rsa-1", &ti.rsaKey.PublicKey, "RS256")
	ti.publish("ec-1", &ti.ecKey.PublicKey, "ES256")
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		ti.discovered.Add(1)
		if ti.down.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		writeJSONT(w, map[string]any{
			"issuer":                                ti.srv.URL,
			"jwks_uri":                              ti.srv.URL + "/jwks",
			"token_endpoint":                        ti.srv.URL + "/token",
			"introspection_endpoint":                ti.srv.URL + "/introspect",
			"authorization_endpoint":                ti.srv.URL + "/authorize",
			"id_token_signing_alg_values_supported": []string{"RS256", "ES256"},
		})
	})
	mux.HandleFunc("/jwks", func(w http.ResponseWriter, r *http.Request) {
		ti.jwksHits.Add(1)
		ti.mu.Lock()
		set := jose.JSONWebKeySet{Keys: append([]jose.JSONWebKey(nil), ti.published...)}
		ti.mu.Unlock()
		writeJSONT(w, set)
	})
	mux.HandleFunc("/introspect", func(w http.ResponseWriter, r *http.Request) {
		ti.introHits.Add(1)
		id, secret, ok := r.BasicAuth()
		if !ok || id != "gateway" || secret != "s3cret" {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		if err := r.ParseForm(); err != nil || r.PostForm.Get("token_type_hint") != "access_token" {
			http.Error(w, "bad form", http.StatusBadRequest)
			return
		}
		ti.mu.Lock()
		ans, ok := ti.active[r.PostForm.Get("token")]
		ti.mu.Unlock()
		if !ok {
			ans = map[string]any{"active": false}
		}
		writeJSONT(w, ans)
	})
	mux.HandleFunc("/token", func(w http.ResponseWriter, r *http.Request) {
		ti.mu.Lock()
		h := ti.token
		ti.mu.Unlock()
		if h == nil {
			http.Error(w, "no token endpoint", http.StatusNotFound)
			return
		}
		h(w, r)
	})
	ti.srv = httptest.NewServer(mux)
	t.Cleanup(ti.srv.Close)
	return ti
}

func writeJSONT(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func (ti *testIssuer) publish(kid string, pub any, alg string) {
	ti.mu.Lock()
	defer ti.mu.Unlock()
	ti.published = append(ti.published, jose.JSONWebKey{Key: pub, KeyID: kid, Algorithm: alg, Use: "sig"})
}

// claims returns valid claims for the test audience, to be modified.
func (ti *testIssuer) claims() map[string]any {
	now := time.Now()
	return map[string]any{
		"iss":    ti.srv.URL,
		"sub":    "alice",
		"aud":    testAudience,
		"exp":    now.Add(time.Hour).Unix(),
		"iat":    now.Unix(),
		"scope":  "mcp files:read",
		"groups": []string{"eng"},
	}
}

func (ti *testIssuer) sign(alg jose.SignatureAlgorithm, key any, kid string, claims map[string]any) string {
	ti.t.Helper()
	opts := (&jose.SignerOptions{}).WithType("at+jwt")
	if kid != "" {
		opts = opts.WithHeader("kid", kid)
	}
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: key}, opts)
	if err != nil {
		ti.t.Fatal(err)
	}
	payload, _ := json.Marshal(claims)
	jws, err := s.Sign(payload)
	if err != nil {
		ti.t.Fatal(err)
	}
	out, err := jws.CompactSerialize()
	if err != nil {
		ti.t.Fatal(err)
	}
	return out
}

func (ti *testIssuer) rs256(claims map[string]any) string {
	return ti.sign(jose.RS256, ti.rsaKey, "rsa-1", claims)
}

// unsigned builds an alg=none token.
func unsigned(claims map[string]any) string {
	enc := base64.RawURLEncoding
	h, _ := json.Marshal(map[string]string{"alg": "none", "typ": "JWT"})
	p, _ := json.Marshal(claims)
	return enc.EncodeToString(h) + "." + enc.EncodeToString(p) + "."
}

func (ti *testIssuer) config() ResourceConfig {
	return ResourceConfig{
		Issuer:    ti.srv.URL,
		Audience:  testAudience,
		Scopes:    []string{"mcp"},
		ClockSkew: 30 * time.Second,
	}
}

func (ti *testIssuer) server(t *testing.T, cfg ResourceConfig) *ResourceServer {
	t.Helper()
	rs, err := NewResourceServer(context.Background(), cfg, ti.srv.Client())
	if err != nil {
		t.Fatalf("NewResourceServer: %v", err)
	}
	return rs
}

func request(token string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	return r
}
