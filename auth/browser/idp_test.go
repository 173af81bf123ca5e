package browser

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"golang.org/x/oauth2"
)

const (
	testClientID     = "gateway-browser"
	testClientSecret = "client-secret-not-for-pages"
)

// clock is a settable time source shared by the SignIn and the fake IdP.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// grant is what /authorize remembers about a code, for /token.
type grant struct {
	challenge, nonce, redirectURI string
}

// fakeIdP is an OpenID provider over HTTPS: discovery, a JWKS with one RSA
// key, /authorize that signs the configured subject in at once, and /token
// that checks the client, the single-use code and the PKCE verifier before
// issuing an RS256 ID token. Knobs make it misbehave.
type fakeIdP struct {
	t   *testing.T
	srv *httptest.Server
	key *rsa.PrivateKey
	clk *clock

	mu      sync.Mutex
	subject string
	// Misbehaviour: a non-zero value overrides the honest answer.
	audience     string
	nonce        string
	issuer       string
	expiresIn    time.Duration
	tokenStatus  int
	authError    string
	down         bool
	authMethods  []string // token_endpoint_auth_methods_supported
	publicClient bool     // the client has no secret

	clientAuth []string // "basic" or "post", per token request

	grants    map[string]grant
	authorize []url.Values // each /authorize query
	secrets   []string     // every code, verifier and token seen
}

func newFakeIdP(t *testing.T, clk *clock) *fakeIdP {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	p := &fakeIdP{t: t, key: key, clk: clk, subject: "alice", grants: map[string]grant{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", p.discovery)
	mux.HandleFunc("GET /jwks", p.jwks)
	mux.HandleFunc("GET /authorize", p.authorizeHandler)
	mux.HandleFunc("POST /token", p.token)
	p.srv = httptest.NewTLSServer(mux)
	t.Cleanup(p.srv.Close)
	return p
}

func (p *fakeIdP) set(f func(p *fakeIdP)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f(p)
}

func (p *fakeIdP) authorizations() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.authorize)
}

func (p *fakeIdP) lastAuthorize() url.Values {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.authorize[len(p.authorize)-1]
}

func (p *fakeIdP) seenSecrets() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.secrets)
}

func (p *fakeIdP) discovery(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	down, methods := p.down, p.authMethods
	p.mu.Unlock()
	if down {
		http.Error(w, "down", http.StatusServiceUnavailable)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"token_endpoint_auth_methods_supported": methods,
		"issuer":                                p.srv.URL,
		"authorization_endpoint":                p.srv.URL + "/authorize",
		"token_endpoint":                        p.srv.URL + "/token",
		"jwks_uri":                              p.srv.URL + "/jwks",
		"response_types_supported":              []string{"code"},
		"subject_types_supported":               []string{"public"},
		"id_token_signing_alg_values_supported": []string{"RS256"},
		"code_challenge_methods_supported":      []string{"S256"},
	})
}

func (p *fakeIdP) jwks(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, jose.JSONWebKeySet{Keys: []jose.JSONWebKey{
		{Key: &p.key.PublicKey, KeyID: "k1", Algorithm: "RS256", Use: "sig"},
	}})
}

// authorizeHandler checks the request a relying party must make and
// redirects straight back with a code, as a provider with a live session
// would.
func (p *fakeIdP) authorizeHandler(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	for k, want := range map[string]string{"client_id": testClientID, "response_type": "code", "code_challenge_method": "S256"} {
		if got := q.Get(k); got != want {
			p.t.Errorf("authorize: %s = %q, want %q", k, got, want)
		}
	}
	for _, k := range []string{"state", "nonce", "code_challenge", "redirect_uri"} {
		if q.Get(k) == "" {
			p.t.Errorf("authorize: no %s", k)
		}
	}
	if !slices.Contains(strings.Fields(q.Get("scope")), "openid") {
		p.t.Errorf("authorize: scope %q lacks openid", q.Get("scope"))
	}
	back, err := url.Parse(q.Get("redirect_uri"))
	if err != nil {
		http.Error(w, "bad redirect_uri", http.StatusBadRequest)
		return
	}
	code := rand.Text()
	p.mu.Lock()
	p.authorize = append(p.authorize, q)
	p.grants[code] = grant{challenge: q.Get("code_challenge"), nonce: q.Get("nonce"), redirectURI: q.Get("redirect_uri")}
	p.secrets = append(p.secrets, code)
	authError := p.authError
	p.mu.Unlock()
	answer := url.Values{"state": {q.Get("state")}}
	if authError != "" {
		answer.Set("error", authError)
	} else {
		answer.Set("code", code)
	}
	back.RawQuery = answer.Encode()
	http.Redirect(w, r, back.String(), http.StatusFound)
}

func (p *fakeIdP) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_request"})
		return
	}
	style := "basic"
	id, secret, ok := r.BasicAuth()
	if !ok {
		style = "post"
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	p.mu.Lock()
	p.clientAuth = append(p.clientAuth, style)
	p.mu.Unlock()
	p.mu.Lock()
	wantSecret := testClientSecret
	if p.publicClient {
		wantSecret = ""
	}
	p.mu.Unlock()
	if id != testClientID || secret != wantSecret {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "invalid_client"})
		return
	}
	code, verifier := r.PostForm.Get("code"), r.PostForm.Get("code_verifier")
	p.mu.Lock()
	defer p.mu.Unlock()
	p.secrets = append(p.secrets, verifier)
	g, ok := p.grants[code]
	delete(p.grants, code) // single use, even when refused below
	switch {
	case r.PostForm.Get("grant_type") != "authorization_code" || !ok:
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant"})
		return
	case r.PostForm.Get("redirect_uri") != g.redirectURI:
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant", "error_description": "redirect_uri"})
		return
	case verifier == "" || oauth2.S256ChallengeFromVerifier(verifier) != g.challenge:
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant", "error_description": "PKCE verification failed"})
		return
	case p.tokenStatus != 0:
		writeJSON(w, p.tokenStatus, map[string]string{"error": "server_error"})
		return
	}
	now := p.clk.Now()
	claims := map[string]any{
		"iss":   or(p.issuer, p.srv.URL),
		"sub":   p.subject,
		"aud":   or(p.audience, testClientID),
		"nonce": or(p.nonce, g.nonce),
		"iat":   now.Unix(),
		"exp":   now.Add(cmp(p.expiresIn, time.Hour)).Unix(),
		"name":  strings.ToUpper(p.subject[:1]) + p.subject[1:],
		"email": p.subject + "@example.com",
	}
	idToken := p.sign(claims)
	access := rand.Text()
	p.secrets = append(p.secrets, idToken, access)
	writeJSON(w, http.StatusOK, map[string]any{
		"access_token": access,
		"token_type":   "Bearer",
		"expires_in":   3600,
		"id_token":     idToken,
	})
}

func (p *fakeIdP) sign(claims map[string]any) string {
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: jose.JSONWebKey{Key: p.key, KeyID: "k1"}}, nil)
	if err != nil {
		p.t.Error(err)
		return ""
	}
	payload, _ := json.Marshal(claims)
	jws, err := signer.Sign(payload)
	if err != nil {
		p.t.Error(err)
		return ""
	}
	s, _ := jws.CompactSerialize()
	return s
}

func or(s, fallback string) string {
	if s != "" {
		return s
	}
	return fallback
}

func cmp(d, fallback time.Duration) time.Duration {
	if d != 0 {
		return d
	}
	return fallback
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// syncBuffer is a log sink the servers' goroutines write to.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// harness is a gateway with a SignIn in front of a page, its fake IdP, and
// a browser.
type harness struct {
	idp      *fakeIdP
	app      *httptest.Server
	s        *SignIn
	clk      *clock
	logs     *syncBuffer
	browsers []*browser
}

// newHarness builds a harness; idpEdit sets the IdP's knobs before
// discovery, cfgEdit the SignIn's config. Either may be nil.
func newHarness(t *testing.T, idpEdit func(*fakeIdP), cfgEdit func(*Config)) *harness {
	t.Helper()
	clk := &clock{t: time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)}
	h := &harness{idp: newFakeIdP(t, clk), clk: clk, logs: &syncBuffer{}}
	if idpEdit != nil {
		h.idp.set(idpEdit)
	}
	// The listener exists before the server starts, so the RedirectURL is
	// known when the SignIn is built.
	h.app = httptest.NewUnstartedServer(http.NotFoundHandler())
	base := "https://" + h.app.Listener.Addr().String()
	cfg := Config{
		Issuer:       h.idp.srv.URL,
		ClientID:     testClientID,
		ClientSecret: testClientSecret,
		RedirectURL:  base + "/callback",
		CookieKey:    bytes.Repeat([]byte{7}, 32),
		SessionTTL:   time.Hour,
		Secure:       true,
		Logger:       slog.New(slog.NewTextHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	if cfgEdit != nil {
		cfgEdit(&cfg)
	}
	s, err := New(context.Background(), cfg, h.idp.srv.Client())
	if err != nil {
		t.Fatal(err)
	}
	s.now = clk.Now
	h.s = s
	mux := http.NewServeMux()
	mux.Handle("/", s.Require(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, ok := UserFrom(r.Context())
		if !ok {
			t.Error("Require served a page without a user")
		}
		io.WriteString(w, "hello "+u.Subject+" ("+u.Name+", "+u.Email+") at "+r.URL.RequestURI())
	})))
	mux.Handle("POST /action", s.Require(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.CheckCSRF(r) {
			http.Error(w, "forged", http.StatusForbidden)
			return
		}
		io.WriteString(w, "done")
	})))
	mux.HandleFunc("/go", func(w http.ResponseWriter, r *http.Request) { s.Start(w, r, r.URL.Query().Get("to")) })
	mux.Handle(s.CallbackPath(), s.Callback())
	mux.Handle("/signout", s.SignOut())
	h.app.Config.Handler = mux
	h.app.StartTLS()
	t.Cleanup(h.app.Close)
	t.Cleanup(func() { h.assertNoSecrets(t) })
	return h
}

// exchange is one response the browser received.
type exchange struct {
	method, url string
	status      int
	header      http.Header
	body        string
}

// browser is an http.Client with a cookie jar that records every response
// and every redirect it follows.
type browser struct {
	h      *harness
	c      *http.Client
	mu     sync.Mutex
	seen   []exchange
	hops   []string
	stopAt string // a path whose redirect is not followed
}

func (h *harness) browser(t *testing.T) *browser {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	b := &browser{h: h}
	h.browsers = append(h.browsers, b) // for the final secret scan
	base := h.app.Client()             // trusts the httptest certificate both servers use
	b.c = &http.Client{
		Jar:       jar,
		Transport: recordingTransport{b: b, base: base.Transport},
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			b.hops = append(b.hops, req.URL.String())
			if b.stopAt != "" && req.URL.Path == b.stopAt {
				return http.ErrUseLastResponse
			}
			if len(via) > 10 {
				return http.ErrUseLastResponse
			}
			return nil
		},
	}
	return b
}

type recordingTransport struct {
	b    *browser
	base http.RoundTripper
}

func (rt recordingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := rt.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	rt.b.mu.Lock()
	rt.b.seen = append(rt.b.seen, exchange{req.Method, req.URL.String(), resp.StatusCode, resp.Header.Clone(), string(body)})
	rt.b.mu.Unlock()
	return resp, nil
}

// do sends req and returns the final response and its body.
func (b *browser) do(t *testing.T, req *http.Request) (*http.Response, string) {
	t.Helper()
	resp, err := b.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(body)
}

func (b *browser) get(t *testing.T, rawURL string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, rawURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	return b.do(t, req)
}

func (b *browser) post(t *testing.T, rawURL string, form url.Values, edit func(*http.Request)) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, rawURL, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if edit != nil {
		edit(req)
	}
	return b.do(t, req)
}

// cookie returns the jar's value of the named cookie for the app at path.
func (b *browser) cookie(t *testing.T, name, path string) string {
	t.Helper()
	u, _ := url.Parse(b.h.app.URL + path)
	for _, c := range b.c.Jar.Cookies(u) {
		if c.Name == name {
			return c.Value
		}
	}
	return ""
}

// appResponses are the responses the gateway (not the IdP) sent.
func (b *browser) appResponses() []exchange {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []exchange
	for _, x := range b.seen {
		if strings.HasPrefix(x.url, b.h.app.URL) {
			out = append(out, x)
		}
	}
	return out
}

// setCookies are the cookies the gateway set, in order.
func (b *browser) setCookies() []*http.Cookie {
	var out []*http.Cookie
	for _, x := range b.appResponses() {
		out = append(out, (&http.Response{Header: x.header}).Cookies()...)
	}
	return out
}

// assertNoSecrets checks that no code, verifier, token, client secret or
// cookie value appears in a body or a header (other than Set-Cookie) the
// gateway sent, or in its logs.
func (h *harness) assertNoSecrets(t *testing.T) {
	t.Helper()
	secrets := append(h.idp.seenSecrets(), testClientSecret)
	type place struct{ where, text string }
	var places []place
	for _, b := range h.browsers {
		for _, c := range b.setCookies() {
			if c.Value != "" {
				secrets = append(secrets, c.Value)
			}
		}
		for _, x := range b.appResponses() {
			hdr := x.header.Clone()
			hdr.Del("Set-Cookie")
			var sb strings.Builder
			_ = hdr.Write(&sb)
			// The request's URL is the browser's, not the gateway's answer:
			// the callback's carries the code by design.
			where := x.method + " " + x.url
			places = append(places, place{where + " body", x.body}, place{where + " header", sb.String()})
		}
	}
	places = append(places, place{"logs", h.logs.String()})
	for _, s := range secrets {
		if len(s) < 8 {
			continue
		}
		for _, p := range places {
			if strings.Contains(p.text, s) {
				t.Errorf("a secret (%.6s...) leaked in the %s: %.300s", s, p.where, p.text)
			}
		}
	}
}
