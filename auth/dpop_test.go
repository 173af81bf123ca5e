package auth

import (
	"bytes"
	"crypto"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// proofClaims verifies proof as a resource or authorization server would (RFC 9449 §4.3: typ, alg, a public
// jwk, the signature by that jwk) and returns its claims and the jwk's thumbprint.
func proofClaims(t *testing.T, proof string) (map[string]any, string) {
	t.Helper()
	jws, err := jose.ParseSignedCompact(proof, []jose.SignatureAlgorithm{jose.ES256})
	if err != nil {
		t.Fatalf("proof %q: %v", proof, err)
	}
	h := jws.Signatures[0].Protected
	if typ, _ := h.ExtraHeaders[jose.HeaderType].(string); typ != "dpop+jwt" {
		t.Errorf("typ = %q, want dpop+jwt", typ)
	}
	if h.JSONWebKey == nil || !h.JSONWebKey.IsPublic() {
		t.Fatalf("jwk header %v: want a public key", h.JSONWebKey)
	}
	payload, err := jws.Verify(h.JSONWebKey)
	if err != nil {
		t.Fatalf("proof does not verify with its own jwk: %v", err)
	}
	var claims map[string]any
	if err := json.Unmarshal(payload, &claims); err != nil {
		t.Fatal(err)
	}
	tp, err := h.JSONWebKey.Thumbprint(crypto.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	return claims, base64.RawURLEncoding.EncodeToString(tp)
}

func TestDPoPProof(t *testing.T) {
	key, err := NewDPoPKey()
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte("tok-1"))
	ath := base64.RawURLEncoding.EncodeToString(sum[:])
	for _, tc := range []struct {
		name, method, url, token, nonce string
		wantHTU, wantAth                string
	}{
		{name: "token request", method: "POST", url: "https://as.example/token", wantHTU: "https://as.example/token"},
		{name: "query and fragment dropped", method: "GET", url: "https://RS.example/mcp?a=b#frag", token: "tok-1",
			wantHTU: "https://rs.example/mcp", wantAth: ath},
		{name: "nonce carried", method: "POST", url: "http://127.0.0.1:8080/mcp", token: "tok-1", nonce: "n-1",
			wantHTU: "http://127.0.0.1:8080/mcp", wantAth: ath},
	} {
		t.Run(tc.name, func(t *testing.T) {
			proof, err := key.Proof(tc.method, tc.url, tc.token, tc.nonce)
			if err != nil {
				t.Fatal(err)
			}
			c, tp := proofClaims(t, proof)
			if tp != key.Thumbprint() {
				t.Errorf("jwk thumbprint %s, key's %s", tp, key.Thumbprint())
			}
			if c["htm"] != tc.method || c["htu"] != tc.wantHTU {
				t.Errorf("htm, htu = %v, %v; want %s, %s", c["htm"], c["htu"], tc.method, tc.wantHTU)
			}
			if iat, _ := c["iat"].(float64); time.Since(time.Unix(int64(iat), 0)).Abs() > time.Minute {
				t.Errorf("iat = %v", c["iat"])
			}
			if jti, _ := c["jti"].(string); len(jti) < 16 {
				t.Errorf("jti = %q", jti)
			}
			if got, _ := c["ath"].(string); got != tc.wantAth {
				t.Errorf("ath = %q, want %q", got, tc.wantAth)
			}
			if got, _ := c["nonce"].(string); got != tc.nonce {
				t.Errorf("nonce = %q, want %q", got, tc.nonce)
			}
		})
	}
	a, _ := key.Proof("POST", "https://as.example/token", "", "")
	b, _ := key.Proof("POST", "https://as.example/token", "", "")
	ca, _ := proofClaims(t, a)
	cb, _ := proofClaims(t, b)
	if ca["jti"] == cb["jti"] {
		t.Errorf("two proofs share jti %v", ca["jti"])
	}
	if _, err := key.Proof("GET", "/relative", "", ""); err == nil {
		t.Error("a relative URL made a proof")
	}
}

// dpopServer is an authorization and resource server in one that, when nonce is set, refuses every proof
// without it the way RFC 9449 §8 and §9 say, and records what it saw (the test verifies the proofs).
type dpopServer struct {
	nonce  string
	mu     sync.Mutex
	proofs []string // each request's DPoP header
}

func (s *dpopServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	proof := r.Header.Get("DPoP")
	s.mu.Lock()
	s.proofs = append(s.proofs, proof)
	s.mu.Unlock()
	var claims struct {
		Nonce string `json:"nonce"`
	}
	if jws, err := jose.ParseSignedCompact(proof, []jose.SignatureAlgorithm{jose.ES256}); err == nil {
		_ = json.Unmarshal(jws.UnsafePayloadWithoutVerification(), &claims) // verified by the test
	}
	if string(body) != "grant_type=x" && r.URL.Path == "/token" {
		http.Error(w, "body lost", http.StatusTeapot)
		return
	}
	if s.nonce != "" && proof != "" && claims.Nonce != s.nonce {
		w.Header().Set("DPoP-Nonce", s.nonce)
		if r.URL.Path == "/token" {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"error":"use_dpop_nonce"}`)
			return
		}
		w.Header().Set("WWW-Authenticate", `DPoP error="use_dpop_nonce"`)
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	w.WriteHeader(http.StatusOK)
}

func TestDPoPTransport(t *testing.T) {
	for _, tc := range []struct {
		name       string
		nonce      string
		path, auth string
		repeat     int // requests sent
		wantSent   int // requests the server saw
		wantProofs bool
		wantAth    bool
	}{
		{name: "token request", path: "/token", repeat: 1, wantSent: 1, wantProofs: true},
		{name: "token request with nonce", nonce: "as-n", path: "/token", repeat: 2, wantSent: 3, wantProofs: true},
		{name: "resource request", path: "/mcp", auth: "DPoP tok", repeat: 1, wantSent: 1, wantProofs: true, wantAth: true},
		{name: "resource request with nonce", nonce: "rs-n", path: "/mcp", auth: "DPoP tok", repeat: 2, wantSent: 3, wantProofs: true, wantAth: true},
		{name: "bearer request untouched", nonce: "rs-n", path: "/mcp", auth: "Bearer tok", repeat: 1, wantSent: 1},
		{name: "other endpoint untouched", path: "/revoke", repeat: 1, wantSent: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := &dpopServer{nonce: tc.nonce}
			ts := httptest.NewServer(srv)
			defer ts.Close()
			key, err := NewDPoPKey()
			if err != nil {
				t.Fatal(err)
			}
			c := &http.Client{Transport: &DPoPTransport{Key: key, TokenURL: ts.URL + "/token"}}
			for range tc.repeat {
				req, _ := http.NewRequest(http.MethodPost, ts.URL+tc.path+"?q=1", strings.NewReader("grant_type=x"))
				if tc.auth != "" {
					req.Header.Set("Authorization", tc.auth)
				}
				resp, err := c.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				_ = resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("status %d", resp.StatusCode)
				}
			}
			srv.mu.Lock()
			proofs := slices.Clone(srv.proofs)
			srv.mu.Unlock()
			if len(proofs) != tc.wantSent {
				t.Fatalf("server saw %d requests, want %d", len(proofs), tc.wantSent)
			}
			jtis := map[any]bool{}
			for i, p := range proofs {
				if (p != "") != tc.wantProofs {
					t.Fatalf("request %d: proof %q, want one: %v", i, p, tc.wantProofs)
				}
				if p == "" {
					continue
				}
				c, tp := proofClaims(t, p)
				if tp != key.Thumbprint() {
					t.Errorf("request %d: proof by key %s, want %s", i, tp, key.Thumbprint())
				}
				if jtis[c["jti"]] {
					t.Errorf("request %d reuses jti %v", i, c["jti"])
				}
				jtis[c["jti"]] = true
				if c["htu"] != ts.URL+tc.path {
					t.Errorf("htu %v", c["htu"])
				}
				if _, ok := c["ath"]; ok != tc.wantAth {
					t.Errorf("request %d: ath present %v, want %v", i, ok, tc.wantAth)
				}
				if tc.nonce != "" && i > 0 && c["nonce"] != tc.nonce {
					t.Errorf("request %d: nonce %v, want %s (learned from the first answer)", i, c["nonce"], tc.nonce)
				}
			}
		})
	}
}

// TestDPoPKeyFrom: replicas given the same sealing secret prove the same key (a token bound on one works on all,
// and after a restart); another secret makes another key; a short secret is refused; the proof verifies.
func TestDPoPKeyFrom(t *testing.T) {
	secret := bytes.Repeat([]byte{7}, 32)
	a, err := DPoPKeyFrom(secret)
	if err != nil {
		t.Fatal(err)
	}
	b, err := DPoPKeyFrom(append([]byte(nil), secret...))
	if err != nil {
		t.Fatal(err)
	}
	if a.Thumbprint() != b.Thumbprint() {
		t.Errorf("the same secret gave keys %s and %s", a.Thumbprint(), b.Thumbprint())
	}
	other, err := DPoPKeyFrom(bytes.Repeat([]byte{8}, 32))
	if err != nil {
		t.Fatal(err)
	}
	if other.Thumbprint() == a.Thumbprint() {
		t.Error("another secret gave the same key")
	}
	fresh, err := NewDPoPKey()
	if err != nil {
		t.Fatal(err)
	}
	if fresh.Thumbprint() == a.Thumbprint() {
		t.Error("a fresh key is the derived one")
	}
	if _, err := DPoPKeyFrom([]byte("short")); err == nil {
		t.Error("a 5-byte secret made a key")
	}
	proof, err := b.Proof("POST", "https://as.example/token", "", "")
	if err != nil {
		t.Fatal(err)
	}
	jws, err := jose.ParseSignedCompact(proof, []jose.SignatureAlgorithm{jose.ES256})
	if err != nil {
		t.Fatal(err)
	}
	jwk := jws.Signatures[0].Protected.JSONWebKey
	if jwk == nil {
		t.Fatal("the proof carries no jwk")
	}
	if _, err := jws.Verify(jwk); err != nil {
		t.Errorf("b's proof does not verify: %v", err)
	}
	if tp, _ := jwk.Thumbprint(crypto.SHA256); base64.RawURLEncoding.EncodeToString(tp) != a.Thumbprint() {
		t.Error("b's proof is not of a's key")
	}
}
