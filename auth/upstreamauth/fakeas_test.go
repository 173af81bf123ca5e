package upstreamauth

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"mime"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
)

// fakeAS is an upstream MCP server's protected-resource metadata and its
// authorization server, in one loopback server. It checks what a real
// server checks (PKCE, single-use codes, redirect_uri, resource, client
// authentication) and records what it was sent. Configure it before use.
type fakeAS struct {
	t   *testing.T
	srv *httptest.Server

	// issuerPath is the issuer's path ("" or "/tenant1").
	issuerPath string
	// prmPaths and metaPaths are where the two documents are served; other
	// GETs answer 404.
	prmPaths, metaPaths []string
	// prm and meta are merged over the default documents (a nil value
	// deletes the key).
	prm, meta map[string]any
	// statusAt answers a GET of a path with a status instead.
	statusAt map[string]int
	// iss is put in the authorization response ("" for none); issRepeat
	// puts it twice.
	iss       string
	issRepeat bool
	// denyWith makes the authorization endpoint answer this error.
	denyWith string
	// clientSecret, when set, is required with HTTP Basic at the token and
	// revocation endpoints.
	clientSecret string
	// rotate makes refresh issue a new refresh token and kill the old.
	rotate bool
	// tokenType is the token_type issued ("Bearer" when "").
	tokenType string
	// echo makes error descriptions repeat the request's parameters, as a
	// careless server's do.
	echo bool
	// failStatus makes the token endpoint answer this status with an HTML
	// body that repeats the request.
	failStatus int
	// regSecret makes registration issue a secret expiring at regExpires.
	regSecret  bool
	regExpires int64
	// cimdClient fetches Client ID Metadata Documents: a client_id that is
	// an https URL is one, and the authorization request is checked against
	// it.
	cimdClient *http.Client

	cimdFetched []string

	mu          sync.Mutex
	n           int
	hits        []string
	authorizeQs []url.Values
	tokenForms  []url.Values
	dpopProofs  []string // each token request's DPoP header
	grants      map[string]*fakeGrant
	refresh     map[string]bool
	registered  []map[string]any
	revoked     []url.Values
}

type fakeGrant struct {
	clientID, redirect, challenge, resource string
	used                                    bool
}

func newFakeAS(t *testing.T) *fakeAS {
	f := &fakeAS{t: t, grants: map[string]*fakeGrant{}, refresh: map[string]bool{}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	f.prmPaths = []string{wellKnownResource + "/mcp"}
	f.metaPaths = []string{"/.well-known/oauth-authorization-server"}
	return f
}

func (f *fakeAS) mcpURL() string { return f.srv.URL + "/mcp" }
func (f *fakeAS) issuer() string { return f.srv.URL + f.issuerPath }

func (f *fakeAS) prmDoc() map[string]any {
	return merge(map[string]any{
		"resource":              f.mcpURL(),
		"authorization_servers": []string{f.issuer()},
		"scopes_supported":      []string{"repo", "read:user"},
	}, f.prm)
}

func (f *fakeAS) metaDoc() map[string]any {
	return merge(map[string]any{
		"issuer":                                f.issuer(),
		"authorization_endpoint":                f.srv.URL + "/authorize",
		"token_endpoint":                        f.srv.URL + "/token",
		"registration_endpoint":                 f.srv.URL + "/register",
		"revocation_endpoint":                   f.srv.URL + "/revoke",
		"response_types_supported":              []string{"code"},
		"code_challenge_methods_supported":      []string{"S256"},
		"token_endpoint_auth_methods_supported": []string{"none", "client_secret_basic"},
	}, f.meta)
}

func merge(base, over map[string]any) map[string]any {
	for k, v := range over {
		if v == nil {
			delete(base, k)
			continue
		}
		base[k] = v
	}
	return base
}

func (f *fakeAS) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r.Method == http.MethodGet && r.URL.Path != "/authorize" {
		f.hits = append(f.hits, r.URL.RequestURI())
		switch {
		case f.statusAt[r.URL.RequestURI()] != 0:
			http.Error(w, "failing", f.statusAt[r.URL.RequestURI()])
		case slices.Contains(f.prmPaths, r.URL.RequestURI()):
			writeJSON(w, http.StatusOK, f.prmDoc())
		case slices.Contains(f.metaPaths, r.URL.Path):
			writeJSON(w, http.StatusOK, f.metaDoc())
		default:
			http.NotFound(w, r)
		}
		return
	}
	switch r.URL.Path {
	case "/authorize":
		f.authorize(w, r)
	case "/token":
		f.token(w, r)
	case "/register":
		f.register(w, r)
	case "/revoke":
		f.revoke(w, r)
	default:
		http.NotFound(w, r)
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func (f *fakeAS) oauthError(w http.ResponseWriter, r *http.Request, status int, code, desc string, form url.Values) {
	if f.echo {
		desc += " (sent " + form.Encode() + ";"
		for _, k := range slices.Sorted(maps.Keys(form)) {
			desc += " " + k + "=" + form.Get(k)
		}
		if id, secret, ok := r.BasicAuth(); ok {
			desc += " basic=" + id + ":" + secret
		}
		desc += ")"
	}
	writeJSON(w, status, map[string]string{"error": code, "error_description": desc})
}

// authorize is the authorization endpoint, the user consenting at once.
func (f *fakeAS) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f.authorizeQs = append(f.authorizeQs, q)
	redirect := q.Get("redirect_uri")
	if redirect == "" || q.Get("client_id") == "" || q.Get("state") == "" {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	if strings.HasPrefix(q.Get("client_id"), "https://") {
		if err := f.checkMetadataDocument(q.Get("client_id"), redirect); err != nil {
			// An unverified redirect_uri is not redirected to.
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
	}
	back := url.Values{"state": {q.Get("state")}}
	if f.iss != "" {
		back["iss"] = []string{f.iss}
		if f.issRepeat {
			back["iss"] = append(back["iss"], f.iss)
		}
	}
	switch {
	case f.denyWith != "":
		back.Set("error", f.denyWith)
		back.Set("error_description", "The user said no")
	case q.Get("response_type") != "code":
		back.Set("error", "unsupported_response_type")
	case q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "":
		// OAuth 2.1 §4.1.1: the server requires PKCE.
		back.Set("error", "invalid_request")
		back.Set("error_description", "PKCE S256 required")
	default:
		f.n++
		code := fmt.Sprintf("code-%d-secretish", f.n)
		f.grants[code] = &fakeGrant{
			clientID: q.Get("client_id"), redirect: redirect,
			challenge: q.Get("code_challenge"), resource: q.Get("resource"),
		}
		back.Set("code", code)
	}
	http.Redirect(w, r, redirect+"?"+back.Encode(), http.StatusFound)
}

// checkMetadataDocument fetches the client's document and checks it as the
// specification has authorization servers do: "MUST validate that the
// fetched document's client_id matches the URL exactly" and "MUST validate
// redirect URIs presented in an authorization request against those in the
// metadata document".
func (f *fakeAS) checkMetadataDocument(clientID, redirect string) error {
	f.cimdFetched = append(f.cimdFetched, clientID)
	if f.cimdClient == nil {
		return fmt.Errorf("no metadata documents here")
	}
	resp, err := f.cimdClient.Get(clientID)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	var doc struct {
		ClientID     string   `json:"client_id"`
		RedirectURIs []string `json:"redirect_uris"`
		AuthMethod   string   `json:"token_endpoint_auth_method"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		return err
	}
	if doc.ClientID != clientID || !slices.Contains(doc.RedirectURIs, redirect) || doc.AuthMethod != "none" {
		return fmt.Errorf("metadata document %+v does not allow this request", doc)
	}
	return nil
}

// clientOK checks the client's authentication: the secret, with Basic or
// in the body, when one is configured; else a client_id in the body.
func (f *fakeAS) clientOK(r *http.Request, form url.Values) (string, bool) {
	if f.clientSecret != "" {
		id, secret, ok := r.BasicAuth()
		if !ok {
			// client_secret_post
			return form.Get("client_id"), form.Get("client_secret") == f.clientSecret
		}
		id, _ = url.QueryUnescape(id)
		secret, _ = url.QueryUnescape(secret)
		return id, secret == f.clientSecret && !form.Has("client_secret")
	}
	if _, _, ok := r.BasicAuth(); ok {
		return "", false
	}
	return form.Get("client_id"), form.Get("client_id") != ""
}

func s256(verifier string) string {
	sum := sha256.Sum256([]byte(verifier))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// token is the token endpoint.
func (f *fakeAS) token(w http.ResponseWriter, r *http.Request) {
	if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); r.Method != http.MethodPost || ct != "application/x-www-form-urlencoded" {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	form := r.PostForm
	f.tokenForms = append(f.tokenForms, form)
	f.dpopProofs = append(f.dpopProofs, r.Header.Get("DPoP"))
	if f.failStatus != 0 {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(f.failStatus)
		_, _ = fmt.Fprintf(w, "<html><body>failed on %s</body></html>", form.Encode())
		return
	}
	clientID, ok := f.clientOK(r, form)
	if !ok {
		f.oauthError(w, r, http.StatusUnauthorized, "invalid_client", "client authentication failed", form)
		return
	}
	var refreshOut string
	switch form.Get("grant_type") {
	case "authorization_code":
		g := f.grants[form.Get("code")]
		switch {
		case g == nil:
			f.oauthError(w, r, http.StatusBadRequest, "invalid_grant", "unknown code", form)
			return
		case g.used:
			// RFC 6749 §4.1.2: "The client MUST NOT use the authorization
			// code more than once."
			f.oauthError(w, r, http.StatusBadRequest, "invalid_grant", "code already used", form)
			return
		}
		g.used = true
		switch {
		case g.clientID != clientID:
			f.oauthError(w, r, http.StatusBadRequest, "invalid_grant", "code issued to another client", form)
			return
		case g.redirect != form.Get("redirect_uri"):
			f.oauthError(w, r, http.StatusBadRequest, "invalid_grant", "redirect_uri mismatch", form)
			return
		case s256(form.Get("code_verifier")) != g.challenge:
			f.oauthError(w, r, http.StatusBadRequest, "invalid_grant", "PKCE verification failed", form)
			return
		case g.resource != form.Get("resource"):
			f.oauthError(w, r, http.StatusBadRequest, "invalid_target", "resource differs from the authorization request", form)
			return
		}
		f.n++
		refreshOut = fmt.Sprintf("rt-%d-secretish", f.n)
		f.refresh[refreshOut] = true
	case "refresh_token":
		rt := form.Get("refresh_token")
		if !f.refresh[rt] {
			f.oauthError(w, r, http.StatusBadRequest, "invalid_grant", "refresh token unknown or revoked", form)
			return
		}
		if f.rotate {
			delete(f.refresh, rt)
			f.n++
			refreshOut = fmt.Sprintf("rt-%d-secretish", f.n)
			f.refresh[refreshOut] = true
		}
	default:
		f.oauthError(w, r, http.StatusBadRequest, "unsupported_grant_type", "", form)
		return
	}
	f.n++
	tt := f.tokenType
	if tt == "" {
		tt = "Bearer"
	}
	out := map[string]any{
		"access_token": fmt.Sprintf("at-%d-secretish", f.n),
		"token_type":   tt,
		"expires_in":   3600,
	}
	if refreshOut != "" {
		out["refresh_token"] = refreshOut
	}
	writeJSON(w, http.StatusOK, out)
}

// register is the RFC 7591 registration endpoint.
func (f *fakeAS) register(w http.ResponseWriter, r *http.Request) {
	if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); r.Method != http.MethodPost || ct != "application/json" {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	var md map[string]any
	if err := json.NewDecoder(r.Body).Decode(&md); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_client_metadata"})
		return
	}
	f.registered = append(f.registered, md)
	if uris, _ := md["redirect_uris"].([]any); len(uris) == 0 {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_redirect_uri", "error_description": "redirect_uris is required"})
		return
	}
	f.n++
	out := maps.Clone(md)
	out["client_id"] = fmt.Sprintf("dyn-%d", f.n)
	out["client_id_issued_at"] = 1700000000
	if f.regSecret {
		out["client_secret"] = "dyn-secret-secretish"
		out["client_secret_expires_at"] = f.regExpires
		out["token_endpoint_auth_method"] = AuthSecretBasic
	}
	writeJSON(w, http.StatusCreated, out)
}

// revoke is the RFC 7009 revocation endpoint.
func (f *fakeAS) revoke(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil || r.Method != http.MethodPost {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	form := r.PostForm
	if _, ok := f.clientOK(r, form); !ok {
		f.oauthError(w, r, http.StatusUnauthorized, "invalid_client", "client authentication failed", form)
		return
	}
	if form.Get("token_type_hint") == "bogus" {
		f.oauthError(w, r, http.StatusBadRequest, "unsupported_token_type", "cannot revoke that", form)
		return
	}
	f.revoked = append(f.revoked, form)
	delete(f.refresh, form.Get("token"))
	w.WriteHeader(http.StatusOK)
}

// authorizeVia follows the authorization URL like a browser whose user
// consents, and returns the callback's query.
func (f *fakeAS) authorizeVia(t *testing.T, authURL, redirectURL string) url.Values {
	t.Helper()
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Get(authURL)
	if err != nil {
		t.Fatalf("authorize: %v", err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		t.Fatalf("authorize: HTTP %d", resp.StatusCode)
	}
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil {
		t.Fatalf("authorize: Location: %v", err)
	}
	if got := loc.Scheme + "://" + loc.Host + loc.Path; got != redirectURL {
		t.Fatalf("authorize redirected to %s, want %s", got, redirectURL)
	}
	return loc.Query()
}

// snapshot returns copies of what the fake recorded.
func (f *fakeAS) snapshot() (hits []string, authorizeQs, tokenForms, revoked []url.Values, registered []map[string]any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.hits), slices.Clone(f.authorizeQs), slices.Clone(f.tokenForms), slices.Clone(f.revoked), slices.Clone(f.registered)
}
