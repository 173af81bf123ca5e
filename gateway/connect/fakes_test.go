package connect

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/switchboard-mcp/switchboard/auth/browser"
	"github.com/switchboard-mcp/switchboard/auth/upstreamauth"
	"github.com/switchboard-mcp/switchboard/auth/vault"
	"github.com/switchboard-mcp/switchboard/routing/state"
)

// Addresses of the fakes. Nothing listens there: every request goes through
// handlerTransport, in process, so that tests run inside synctest bubbles.
const (
	asIssuer    = "http://127.0.0.1:9001"
	mcpResource = "http://127.0.0.1:9002/mcp"
	publicURL   = "http://127.0.0.1:8080"
	idpIssuer   = "https://idp.example"
)

// The people of the tests.
var (
	alice = browser.User{Issuer: idpIssuer, Subject: "alice"}
	bob   = browser.User{Issuer: idpIssuer, Subject: "bob"}
)

// handlerTransport answers requests with a handler, in process.
type handlerTransport struct{ h http.Handler }

// RoundTrip implements http.RoundTripper.
func (t handlerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	t.h.ServeHTTP(rec, r)
	resp := rec.Result()
	resp.Request = r
	return resp, nil
}

var _ http.RoundTripper = handlerTransport{}

// secretish marks every code and token the fake issues, so that a scan finds
// them wherever they leak.
var secretish = regexp.MustCompile(`(code|at|rt)-\d+-secretish`)

// fakeAS is an upstream's authorization server: PKCE-checked single-use
// codes, refresh (rotating when asked), revocation. Configure before use.
type fakeAS struct {
	// iss is put in authorization responses (asIssuer when "", none when
	// "-").
	iss string
	// denyWith makes the authorization endpoint answer this error.
	denyWith string
	// tokenStatus makes the token endpoint fail with this status and an
	// HTML body that echoes the request.
	tokenStatus int
	// rotate makes refresh issue a new refresh token and kill the old.
	rotate bool
	// refreshGate, when set, holds each refresh until it is closed; refreshing then hears of each held one.
	refreshGate chan struct{}
	refreshing  chan struct{}
	// refuseClient makes the token endpoint answer invalid_client, as for a
	// client the server no longer knows.
	refuseClient bool
	// revokeGate, when set, holds each revocation until it is closed.
	revokeGate chan struct{}
	// jwtAccess: access tokens cannot be revoked (unsupported_token_type), as at oidc-provider.
	jwtAccess bool
	// expiresIn is the access tokens' lifetime in seconds (3600 when 0).
	expiresIn int

	mu        sync.Mutex
	n         int
	codes     map[string]fakeCode
	refresh   map[string]bool
	refreshes int
	revoked   []url.Values
	// revoking counts the revocations in flight, maxRevoking the most.
	revoking, maxRevoking int
}

type fakeCode struct{ challenge, redirect, resource string }

func newFakeAS() *fakeAS {
	return &fakeAS{codes: map[string]fakeCode{}, refresh: map[string]bool{}, refreshing: make(chan struct{}, 1)}
}

func (f *fakeAS) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/authorize":
		f.authorize(w, r)
	case "/token":
		f.token(w, r)
	case "/revoke":
		_ = r.ParseForm()
		f.mu.Lock()
		f.revoking++
		f.maxRevoking = max(f.maxRevoking, f.revoking)
		gate := f.revokeGate
		f.mu.Unlock()
		if gate != nil {
			<-gate
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		f.revoking--
		if f.jwtAccess && r.PostForm.Get("token_type_hint") == "access_token" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"error":"unsupported_token_type","error_description":"structured JWT access tokens cannot be revoked"}`))
			return
		}
		f.revoked = append(f.revoked, r.PostForm)
		delete(f.refresh, r.PostForm.Get("token"))
	default:
		http.NotFound(w, r)
	}
}

func (f *fakeAS) authorize(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	q := r.URL.Query()
	back := url.Values{"state": {q.Get("state")}}
	switch f.iss {
	case "":
		back.Set("iss", asIssuer)
	case "-":
	default:
		back.Set("iss", f.iss)
	}
	if f.denyWith != "" {
		back.Set("error", f.denyWith)
		back.Set("error_description", "no <b>thanks</b>")
	} else {
		f.n++
		code := fmt.Sprintf("code-%d-secretish", f.n)
		f.codes[code] = fakeCode{challenge: q.Get("code_challenge"), redirect: q.Get("redirect_uri"), resource: q.Get("resource")}
		back.Set("code", code)
	}
	http.Redirect(w, r, q.Get("redirect_uri")+"?"+back.Encode(), http.StatusFound)
}

func (f *fakeAS) token(w http.ResponseWriter, r *http.Request) {
	_ = r.ParseForm()
	form := r.PostForm
	if form.Get("grant_type") == "refresh_token" && f.refreshGate != nil {
		f.mu.Lock()
		f.refreshes++
		f.mu.Unlock()
		select {
		case f.refreshing <- struct{}{}:
		default:
		}
		<-f.refreshGate
	} else if form.Get("grant_type") == "refresh_token" {
		f.mu.Lock()
		f.refreshes++
		f.mu.Unlock()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.tokenStatus != 0 {
		w.WriteHeader(f.tokenStatus)
		_, _ = fmt.Fprintf(w, "<html>failed on %s</html>", form.Encode())
		return
	}
	if f.refuseClient {
		oauthErr(w, "invalid_client", "unknown client "+form.Get("client_id"))
		return
	}
	var refreshOut string
	switch form.Get("grant_type") {
	case "authorization_code":
		c, ok := f.codes[form.Get("code")]
		delete(f.codes, form.Get("code"))
		sum := sha256.Sum256([]byte(form.Get("code_verifier")))
		if !ok || c.redirect != form.Get("redirect_uri") || c.resource != form.Get("resource") ||
			base64.RawURLEncoding.EncodeToString(sum[:]) != c.challenge {
			oauthErr(w, "invalid_grant", "bad code "+form.Get("code"))
			return
		}
		f.n++
		refreshOut = fmt.Sprintf("rt-%d-secretish", f.n)
		f.refresh[refreshOut] = true
	case "refresh_token":
		rt := form.Get("refresh_token")
		if !f.refresh[rt] {
			oauthErr(w, "invalid_grant", "refresh token "+rt+" unknown or revoked")
			return
		}
		if f.rotate {
			delete(f.refresh, rt)
			f.n++
			refreshOut = fmt.Sprintf("rt-%d-secretish", f.n)
			f.refresh[refreshOut] = true
		}
	default:
		oauthErr(w, "unsupported_grant_type", "")
		return
	}
	f.n++
	out := map[string]any{"access_token": fmt.Sprintf("at-%d-secretish", f.n), "token_type": "Bearer", "expires_in": cmp.Or(f.expiresIn, 3600), "scope": "repo"}
	if refreshOut != "" {
		out["refresh_token"] = refreshOut
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

func oauthErr(w http.ResponseWriter, code, desc string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": code, "error_description": desc})
}

// addRefresh makes rt a live refresh token.
func (f *fakeAS) addRefresh(rt string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.refresh[rt] = true
}

func (f *fakeAS) counts() (refreshes int, revoked []url.Values) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.refreshes, append([]url.Values(nil), f.revoked...)
}

// newFlow is a flow toward as, with or without revocation.
func newFlow(t *testing.T, as *fakeAS, revocation bool) *upstreamauth.Flow {
	t.Helper()
	srv := &upstreamauth.Server{
		Resource:              mcpResource,
		Issuer:                asIssuer,
		AuthorizationEndpoint: asIssuer + "/authorize",
		TokenEndpoint:         asIssuer + "/token",
		CodeChallengeMethods:  []string{"S256"},
		IssParameterSupported: true,
	}
	if revocation {
		srv.RevocationEndpoint = asIssuer + "/revoke"
	}
	flow, err := upstreamauth.NewFlow(upstreamauth.FlowConfig{
		Server:      srv,
		Client:      upstreamauth.Client{ID: "switchboard"},
		RedirectURL: CallbackURL(publicURL),
		Scopes:      []string{"repo"},
		HTTPClient:  &http.Client{Transport: handlerTransport{as}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return flow
}

// stubFlows gives fixed flows by upstream name.
type stubFlows map[string]*upstreamauth.Flow

// Flow implements Flows.
func (s stubFlows) Flow(_ context.Context, upstream string) (*upstreamauth.Flow, error) {
	if f, ok := s[upstream]; ok {
		return f, nil
	}
	return nil, fmt.Errorf("%w %q", ErrUnknownUpstream, upstream)
}

var _ Flows = stubFlows(nil)

// fakeNotifier records completions.
type fakeNotifier struct {
	mu   sync.Mutex
	done []state.ConnectRecord
}

// Completed implements Notifier.
func (n *fakeNotifier) Completed(_ context.Context, rec state.ConnectRecord) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.done = append(n.done, rec)
}

func (n *fakeNotifier) calls() []state.ConnectRecord {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]state.ConnectRecord(nil), n.done...)
}

var _ Notifier = (*fakeNotifier)(nil)

// recordingSealer is a Keyring that remembers what it sealed, so that the
// secret scan knows the verifiers.
type recordingSealer struct {
	*vault.Keyring
	mu     sync.Mutex
	sealed [][]byte
}

// Seal implements Sealer.
func (s *recordingSealer) Seal(plaintext, aad []byte) ([]byte, error) {
	s.mu.Lock()
	s.sealed = append(s.sealed, bytes.Clone(plaintext))
	s.mu.Unlock()
	return s.Keyring.Seal(plaintext, aad)
}

var _ Sealer = (*recordingSealer)(nil)

// syncBuffer is a log sink for concurrent writers.
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

// env is a gateway's connect side over fakes: a Memory store, the fake
// authorization server behind the upstream "github", a keyring, and a
// record of every page, header and log line for the secret scan.
type env struct {
	t      *testing.T
	store  *state.Memory
	as     *fakeAS
	flows  stubFlows
	sealer *recordingSealer
	notes  *fakeNotifier
	logs   *syncBuffer
	links  *Links
	h      *Handler
	tokens *Tokens

	mu      sync.Mutex
	seen    []string // bodies and headers answered, the Location of redirects to the AS aside
	secrets []string // link ids and state values handed out
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{t: t, store: state.NewMemory(), as: newFakeAS(), notes: &fakeNotifier{}, logs: &syncBuffer{}}
	e.flows = stubFlows{"github": newFlow(t, e.as, true)}
	kr, err := vault.NewKeyring("k1", map[string][]byte{"k1": bytes.Repeat([]byte{7}, vault.KeySize)})
	if err != nil {
		t.Fatal(err)
	}
	e.sealer = &recordingSealer{Keyring: kr}
	log := slog.New(slog.NewTextHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	if e.links, err = NewLinks(e.store, publicURL, 0); err != nil {
		t.Fatal(err)
	}
	e.h, err = NewHandler(HandlerConfig{
		Store: e.store, Flows: e.flows, Sealer: e.sealer, Notifier: e.notes, Logger: log,
		User:        userFromHeader,
		ClientIDURL: MetadataDocumentURL(publicURL), RedirectURL: CallbackURL(publicURL),
		Links: e.links,
	})
	if err != nil {
		t.Fatal(err)
	}
	e.tokens = e.newTokens(nil)
	t.Cleanup(e.checkNoSecrets)
	return e
}

// newTokens is another Tokens over the same store (another replica).
func (e *env) newTokens(wait func(context.Context) error) *Tokens {
	e.t.Helper()
	tk, err := NewTokens(TokensConfig{
		Store: e.store, Flows: e.flows, Sealer: e.sealer, Wait: wait,
		Logger: slog.New(slog.NewTextHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return tk
}

// userHeader carries the test's signed-in subject: the fake of
// browser.SignIn.Require.
const userHeader = "X-Test-Subject"

func userFromHeader(r *http.Request) (browser.User, bool) {
	sub := r.Header.Get(userHeader)
	if sub == "" {
		return browser.User{}, false
	}
	return browser.User{Issuer: idpIssuer, Subject: sub}, true
}

// link mints a link for alice's session to connect github, and returns its
// path.
func (e *env) link(principal browser.User) string {
	e.t.Helper()
	raw, err := e.links.New(context.Background(), principal.Key(), "github", "session-1", "elicitation-1")
	if err != nil {
		e.t.Fatal(err)
	}
	u, err := url.Parse(raw)
	if err != nil {
		e.t.Fatal(err)
	}
	e.mu.Lock()
	e.secrets = append(e.secrets, strings.TrimPrefix(u.Path, Prefix))
	e.mu.Unlock()
	return u.Path
}

// get serves GET target as user ("" for no one) and records the answer.
func (e *env) get(target, user string) *httptest.ResponseRecorder {
	e.t.Helper()
	r := httptest.NewRequest(http.MethodGet, target, nil)
	if user != "" {
		r.Header.Set(userHeader, user)
	}
	w := httptest.NewRecorder()
	e.h.ServeHTTP(w, r)
	var b strings.Builder
	for k, vs := range w.Header() {
		if k == "Location" && strings.HasPrefix(vs[0], asIssuer+"/authorize?") {
			// The state goes to the AS by design; the scan checks the rest.
			u, _ := url.Parse(vs[0])
			e.mu.Lock()
			e.secrets = append(e.secrets, u.Query().Get("state"))
			e.mu.Unlock()
			if strings.Contains(vs[0], "verifier") || secretish.MatchString(vs[0]) {
				e.t.Errorf("redirect to the AS carries a secret: %s", vs[0])
			}
			continue
		}
		fmt.Fprintf(&b, "%s: %s\n", k, strings.Join(vs, ", "))
	}
	b.WriteString(w.Body.String())
	e.mu.Lock()
	e.seen = append(e.seen, b.String())
	e.mu.Unlock()
	return w
}

// authorize follows the authorization URL like a consenting user's browser
// and returns the callback's path and query.
func (e *env) authorize(w *httptest.ResponseRecorder) string {
	e.t.Helper()
	if w.Code != http.StatusFound {
		e.t.Fatalf("link: HTTP %d, want 302: %s", w.Code, w.Body)
	}
	c := &http.Client{Transport: handlerTransport{e.as}, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Get(w.Header().Get("Location"))
	if err != nil {
		e.t.Fatal(err)
	}
	_ = resp.Body.Close()
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || !strings.HasPrefix(loc.String(), CallbackURL(publicURL)+"?") {
		e.t.Fatalf("the AS redirected to %q", resp.Header.Get("Location"))
	}
	return loc.RequestURI()
}

// grant opens the stored grant of principal for github.
func (e *env) grant(principal browser.User) (grant, error) {
	sealed, err := e.store.GetGrant(context.Background(), principal.Key(), "github")
	if err != nil {
		return grant{}, err
	}
	if secretish.Match(sealed) {
		e.t.Errorf("the stored grant holds a token in the clear")
	}
	plain, err := e.sealer.Open(sealed, grantAAD(principal.Key(), "github"))
	if err != nil {
		return grant{}, err
	}
	var g grant
	return g, json.Unmarshal(plain, &g)
}

// putGrant stores g for principal, sealed.
func (e *env) putGrant(principal browser.User, g grant) {
	e.t.Helper()
	sealed, err := sealGrant(e.sealer, principal.Key(), "github", g)
	if err != nil {
		e.t.Fatal(err)
	}
	if err := e.store.PutGrant(context.Background(), principal.Key(), "github", sealed); err != nil {
		e.t.Fatal(err)
	}
}

// checkNoSecrets scans every page, header and log line for link ids, state
// values, codes, verifiers and tokens.
func (e *env) checkNoSecrets() {
	e.mu.Lock()
	secrets := append([]string(nil), e.secrets...)
	seen := strings.Join(e.seen, "\n")
	e.mu.Unlock()
	e.sealer.mu.Lock()
	for _, p := range e.sealer.sealed {
		var pending upstreamauth.Pending
		if json.Unmarshal(p, &pending) == nil && pending.Verifier != "" {
			secrets = append(secrets, pending.Verifier)
		}
	}
	e.sealer.mu.Unlock()
	for where, text := range map[string]string{"pages and headers": seen, "logs": e.logs.String()} {
		if m := secretish.FindString(text); m != "" {
			e.t.Errorf("%s hold a code or token (%s):\n%s", where, m, text)
		}
		for _, s := range secrets {
			if s != "" && strings.Contains(text, s) {
				e.t.Errorf("%s hold a link id, state or verifier (%s):\n%s", where, s, text)
			}
		}
	}
}

// errIs is errors.Is for table cases that may want no error.
func errIs(err, target error) bool {
	if target == nil {
		return err == nil
	}
	return errors.Is(err, target)
}
