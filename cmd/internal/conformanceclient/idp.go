package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// idp is the gateway's own identity provider for the user-oauth scenarios: the gateway needs an auth: block
// (an issuer whose tokens its clients bring, and a browser sign-in there) before it takes a user-oauth upstream.
// It knows one person, conformancePerson, who is always signed in: /authorize answers at once with a code, as a
// provider with a live session does. It is the harness's side of the test, not the gateway's: the scenario's
// own authorization server is the upstream's, which the gateway deals with alone.
type idp struct {
	issuer string
	secret string // the browser client's secret
	key    *ecdsa.PrivateKey
	srv    *http.Server

	mu     sync.Mutex
	nonces map[string]string // code -> nonce, single use
}

// startIDP serves the provider on a loopback port. Close stops it.
func startIDP() (*idp, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("identity provider key: %w", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("identity provider: %w", err)
	}
	p := &idp{issuer: "http://" + ln.Addr().String(), secret: rand.Text(), key: key, nonces: map[string]string{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", p.discovery)
	mux.HandleFunc("GET /jwks", p.jwks)
	mux.HandleFunc("GET /authorize", p.authorize)
	mux.HandleFunc("POST /token", p.token)
	p.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go p.srv.Serve(ln) //nolint:errcheck // ends with Close
	return p, nil
}

// Close stops the provider.
func (p *idp) Close() error { return p.srv.Close() }

func (p *idp) discovery(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"issuer":                                p.issuer,
		"authorization_endpoint":                p.issuer + "/authorize",
		"token_endpoint":                        p.issuer + "/token",
		"jwks_uri":                              p.issuer + "/jwks",
		"response_types_supported":              []string{"code"},
		"subject_types_supported":               []string{"public"},
		"id_token_signing_alg_values_supported": []string{"ES256"},
		"code_challenge_methods_supported":      []string{"S256"},
		"token_endpoint_auth_methods_supported": []string{"client_secret_basic", "client_secret_post"},
	})
}

func (p *idp) jwks(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, jose.JSONWebKeySet{Keys: []jose.JSONWebKey{
		{Key: &p.key.PublicKey, KeyID: "k1", Algorithm: "ES256", Use: "sig"},
	}})
}

func (p *idp) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	back, err := url.Parse(q.Get("redirect_uri"))
	if err != nil || q.Get("client_id") != browserClientID {
		http.Error(w, "unknown client or redirect_uri", http.StatusBadRequest)
		return
	}
	code := rand.Text()
	p.mu.Lock()
	p.nonces[code] = q.Get("nonce")
	p.mu.Unlock()
	back.RawQuery = url.Values{"code": {code}, "state": {q.Get("state")}, "iss": {p.issuer}}.Encode()
	http.Redirect(w, r, back.String(), http.StatusFound)
}

func (p *idp) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_request"})
		return
	}
	id, secret, ok := r.BasicAuth()
	if !ok {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	if id != browserClientID || secret != p.secret {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "invalid_client"})
		return
	}
	code := r.PostForm.Get("code")
	p.mu.Lock()
	nonce, found := p.nonces[code]
	delete(p.nonces, code)
	p.mu.Unlock()
	if r.PostForm.Get("grant_type") != "authorization_code" || !found {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant"})
		return
	}
	idToken, err := p.sign(map[string]any{"aud": browserClientID, "nonce": nonce, "name": "Conformance Person"})
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, map[string]string{"error": "server_error"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"access_token": rand.Text(), "token_type": "Bearer", "expires_in": 3600, "id_token": idToken,
	})
}

// accessToken is the MCP client's token to the gateway, for audience: what a client gets from the company's
// identity provider before it connects.
func (p *idp) accessToken(audience string) (string, error) {
	return p.sign(map[string]any{"aud": audience, "scope": "mcp"})
}

// sign issues a JWT for conformancePerson with the given claims, valid for an hour.
func (p *idp) sign(claims map[string]any) (string, error) {
	now := time.Now()
	all := map[string]any{"iss": p.issuer, "sub": conformancePerson, "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}
	for k, v := range claims {
		all[k] = v
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: jose.JSONWebKey{Key: p.key, KeyID: "k1"}},
		(&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		return "", fmt.Errorf("signer: %w", err)
	}
	payload, err := json.Marshal(all)
	if err != nil {
		return "", fmt.Errorf("claims: %w", err)
	}
	jws, err := signer.Sign(payload)
	if err != nil {
		return "", fmt.Errorf("sign: %w", err)
	}
	return jws.CompactSerialize()
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v) //nolint:errcheck // the client went away
}
