package connections

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-mcp/switchboard/auth/browser"
)

// fakeGrants is an in-memory Grants: connections per user, disconnects
// recorded and applied.
type fakeGrants struct {
	mu            sync.Mutex
	conns         map[string][]Connection
	disconnected  []string // "user upstream"
	listErr       error
	disconnectErr error
}

var _ Grants = (*fakeGrants)(nil)

func (g *fakeGrants) Connections(_ context.Context, user string) ([]Connection, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.listErr != nil {
		return nil, g.listErr
	}
	return slices.Clone(g.conns[user]), nil
}

func (g *fakeGrants) Disconnect(_ context.Context, user, upstream string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.disconnectErr != nil {
		return g.disconnectErr
	}
	g.disconnected = append(g.disconnected, user+" "+upstream)
	for i, c := range g.conns[user] {
		if c.Upstream == upstream {
			g.conns[user][i] = Connection{Upstream: c.Upstream, Title: c.Title, Scopes: c.Scopes, ConnectURL: c.ConnectURL}
		}
	}
	return nil
}

func (g *fakeGrants) disconnects() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.disconnected)
}

// fakeStatus is a fixed Status that counts its calls.
type fakeStatus struct {
	mu        sync.Mutex
	upstreams []UpstreamHealth
	catalog   int
	calls     int
}

var _ Status = (*fakeStatus)(nil)

func (s *fakeStatus) Upstreams(context.Context) []UpstreamHealth {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	return slices.Clone(s.upstreams)
}

func (s *fakeStatus) CatalogCount(context.Context) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	return s.catalog
}

func (s *fakeStatus) callCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

// fakeCSRF has one token for everyone and checks the form field the way
// auth/browser's CheckCSRF does.
type fakeCSRF struct{ token string }

var _ CSRF = fakeCSRF{}

func (c fakeCSRF) Token(*http.Request) string { return c.token }

func (c fakeCSRF) Check(r *http.Request) bool {
	return c.token != "" && r.PostFormValue(browser.CSRFField) == c.token
}

const (
	testToken = "csrf-token-of-the-session-7f3a"
	alice     = "https://idp.example|alice"
	// The test's request headers naming the user and the admin; the real
	// gateway reads the sign-in's session instead.
	hdrUser  = "X-Test-User"
	hdrAdmin = "X-Test-Admin"
)

// fixedNow is the tests' clock.
func fixedNow() time.Time { return time.Date(2026, 10, 20, 9, 0, 0, 0, time.UTC) }

func sampleConnections() []Connection {
	return []Connection{
		{Upstream: "github", Title: "GitHub", Connected: true, Scopes: []string{"repo", "read:org"}, Expires: fixedNow().Add(42 * time.Minute), ConnectURL: "/connect/github?s=1"},
		{Upstream: "linear", Title: "Linear", Connected: false, Scopes: []string{"read", "write"}, ConnectURL: "/connect/linear?s=2"},
		{Upstream: "jira", Title: "Jira Cloud", Connected: true, Scopes: []string{"read:jira-work"}, Expires: fixedNow().Add(-5 * time.Minute), ConnectURL: "/connect/jira?s=3"},
	}
}

func sampleStatus() *fakeStatus {
	return &fakeStatus{
		catalog: 57,
		upstreams: []UpstreamHealth{
			{Name: "github", State: "ready", Tools: 31},
			{Name: "linear", State: "ready", Tools: 19},
			{Name: "jira", State: "down", Tools: 7, Error: "dial tcp: connection refused"},
			{Name: "files", State: "connecting"},
		},
	}
}

// fixture is a Page over fakes, with its log in a buffer.
type fixture struct {
	page   *Page
	grants *fakeGrants
	status *fakeStatus
	log    *bytes.Buffer
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{
		grants: &fakeGrants{conns: map[string][]Connection{alice: sampleConnections()}},
		status: sampleStatus(),
		log:    &bytes.Buffer{},
	}
	p, err := New(Options{
		Grants: f.grants,
		Status: f.status,
		CSRF:   fakeCSRF{testToken},
		User: func(r *http.Request) (string, string, bool) {
			id := r.Header.Get(hdrUser)
			return id, "Alice Example", id != ""
		},
		IsAdmin: func(r *http.Request) bool { return r.Header.Get(hdrAdmin) == "yes" },
		Logger:  slog.New(slog.NewTextHandler(f.log, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	if err != nil {
		t.Fatal(err)
	}
	p.now = fixedNow
	f.page = p
	return f
}

type request struct {
	method, path string
	form         url.Values // sent as the body, form-encoded
	user         string
	admin        bool
}

func (f *fixture) do(t *testing.T, rq request) *http.Response {
	t.Helper()
	var body io.Reader
	if rq.form != nil {
		body = strings.NewReader(rq.form.Encode())
	}
	r := httptest.NewRequestWithContext(t.Context(), rq.method, rq.path, body)
	if rq.form != nil {
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if rq.user != "" {
		r.Header.Set(hdrUser, rq.user)
	}
	if rq.admin {
		r.Header.Set(hdrAdmin, "yes")
	}
	w := httptest.NewRecorder()
	f.page.ServeHTTP(w, r)
	return w.Result()
}

func readBody(t *testing.T, resp *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func disconnectForm(upstream, token string) url.Values {
	v := url.Values{browser.CSRFField: {token}}
	if upstream != "" {
		v.Set(fieldUpstream, upstream)
	}
	return v
}

func TestRoutes(t *testing.T) {
	tests := []struct {
		name       string
		req        request
		setup      func(*fakeGrants)
		status     int
		location   string
		allow      string
		contains   []string
		excludes   []string
		disconnect []string // the disconnects recorded afterwards
	}{
		{name: "page", req: request{method: "GET", path: "/connections", user: alice}, status: 200,
			contains: []string{"<h1>Connections</h1>", "GitHub", "Linear", "Jira Cloud", "Signed in as <strong>Alice Example</strong>", `href="/connect/linear?s=2"`, "in 42 minutes", "(expired)"}},
		{name: "page with a slash", req: request{method: "GET", path: "/connections/", user: alice}, status: 200, contains: []string{"<h1>Connections</h1>"}},
		{name: "head", req: request{method: "HEAD", path: "/connections", user: alice}, status: 200},
		{name: "page not signed in", req: request{method: "GET", path: "/connections"}, status: 401,
			contains: []string{"Not signed in"}, excludes: []string{"GitHub"}},
		{name: "page put", req: request{method: "PUT", path: "/connections", user: alice}, status: 405, allow: "GET, HEAD"},
		{name: "page post", req: request{method: "POST", path: "/connections", user: alice, form: disconnectForm("github", testToken)}, status: 405, allow: "GET, HEAD", disconnect: nil},
		{name: "page listing fails", req: request{method: "GET", path: "/connections", user: alice},
			setup:  func(g *fakeGrants) { g.listErr = errors.New("store down") },
			status: 500, contains: []string{"Connections unavailable"}, excludes: []string{"store down"}},
		{name: "no connections", req: request{method: "GET", path: "/connections", user: "https://idp.example|carol"}, status: 200,
			contains: []string{"there is nothing to connect"}, excludes: []string{"<table class=\"connections\">"}},
		{name: "flash disconnected", req: request{method: "GET", path: "/connections?flash=disconnected", user: alice}, status: 200,
			contains: []string{`role="status"`, "Disconnected."}},
		{name: "flash failed", req: request{method: "GET", path: "/connections?flash=disconnect-failed", user: alice}, status: 200,
			contains: []string{`class="flash flash-error" role="status"`, "did not complete"}},
		{name: "flash unknown key", req: request{method: "GET", path: "/connections?flash=You+have+won", user: alice}, status: 200,
			excludes: []string{`role="status"`, "You have won", "You+have+won"}},
		{name: "style", req: request{method: "GET", path: "/connections/style.css"}, status: 200, contains: []string{":focus-visible"}},
		{name: "style head", req: request{method: "HEAD", path: "/connections/style.css"}, status: 200},
		{name: "style post", req: request{method: "POST", path: "/connections/style.css"}, status: 405, allow: "GET, HEAD"},
		{name: "unknown path", req: request{method: "GET", path: "/connections/nope", user: alice}, status: 404},
		{name: "outside the base path", req: request{method: "GET", path: "/connectionsx", user: alice}, status: 404},
		{name: "disconnect", req: request{method: "POST", path: "/connections/disconnect", user: alice, form: disconnectForm("github", testToken)},
			status: 303, location: "/connections?flash=disconnected", disconnect: []string{alice + " github"}},
		{name: "disconnect one not connected", req: request{method: "POST", path: "/connections/disconnect", user: alice, form: disconnectForm("linear", testToken)},
			status: 303, location: "/connections?flash=disconnected", disconnect: []string{alice + " linear"}},
		{name: "disconnect get", req: request{method: "GET", path: "/connections/disconnect?upstream=github", user: alice}, status: 405, allow: "POST"},
		{name: "disconnect not signed in", req: request{method: "POST", path: "/connections/disconnect", form: disconnectForm("github", testToken)}, status: 401},
		{name: "disconnect without a token", req: request{method: "POST", path: "/connections/disconnect", user: alice, form: disconnectForm("github", "")},
			status: 403, contains: []string{"Request refused"}},
		{name: "disconnect with a wrong token", req: request{method: "POST", path: "/connections/disconnect", user: alice, form: disconnectForm("github", "forged")}, status: 403},
		{name: "disconnect with the token in the query", req: request{method: "POST", path: "/connections/disconnect?" + browser.CSRFField + "=" + testToken, user: alice, form: url.Values{fieldUpstream: {"github"}}}, status: 403},
		{name: "disconnect unknown upstream", req: request{method: "POST", path: "/connections/disconnect", user: alice, form: disconnectForm("gitlab", testToken)},
			status: 404, contains: []string{"Unknown upstream"}, excludes: []string{"gitlab"}},
		{name: "disconnect another user's upstream", req: request{method: "POST", path: "/connections/disconnect", user: "https://idp.example|carol", form: disconnectForm("github", testToken)}, status: 404},
		{name: "disconnect without an upstream", req: request{method: "POST", path: "/connections/disconnect", user: alice, form: disconnectForm("", testToken)}, status: 400},
		{name: "disconnect fails", req: request{method: "POST", path: "/connections/disconnect", user: alice, form: disconnectForm("github", testToken)},
			setup:  func(g *fakeGrants) { g.disconnectErr = errors.New("revocation endpoint said 503") },
			status: 303, location: "/connections?flash=disconnect-failed"},
		{name: "disconnect listing fails", req: request{method: "POST", path: "/connections/disconnect", user: alice, form: disconnectForm("github", testToken)},
			setup:  func(g *fakeGrants) { g.listErr = errors.New("store down") },
			status: 500},
		{name: "disconnect body too large", req: request{method: "POST", path: "/connections/disconnect", user: alice,
			form: url.Values{browser.CSRFField: {testToken}, fieldUpstream: {"github"}, "pad": {strings.Repeat("x", maxFormBytes)}}},
			status: 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			if tt.setup != nil {
				tt.setup(f.grants)
			}
			resp := f.do(t, tt.req)
			body := readBody(t, resp)
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d; body:\n%s", resp.StatusCode, tt.status, body)
			}
			if got := resp.Header.Get("Location"); got != tt.location {
				t.Errorf("Location %q, want %q", got, tt.location)
			}
			if got := resp.Header.Get("Allow"); got != tt.allow {
				t.Errorf("Allow %q, want %q", got, tt.allow)
			}
			if tt.req.method == "HEAD" && body != "" {
				t.Errorf("HEAD answered with a body of %d bytes", len(body))
			}
			for _, s := range tt.contains {
				if !strings.Contains(body, s) {
					t.Errorf("body lacks %q:\n%s", s, body)
				}
			}
			for _, s := range tt.excludes {
				if strings.Contains(body, s) {
					t.Errorf("body has %q:\n%s", s, body)
				}
			}
			if got := f.grants.disconnects(); !slices.Equal(got, tt.disconnect) {
				t.Errorf("disconnects %q, want %q", got, tt.disconnect)
			}
			if strings.Contains(f.log.String(), testToken) {
				t.Errorf("the log holds the CSRF token:\n%s", f.log)
			}
		})
	}
}

// TestDisconnectRoundTrip follows the redirect: the page then shows the
// upstream as not connected, with a connect link, and the flash.
func TestDisconnectRoundTrip(t *testing.T) {
	f := newFixture(t)
	resp := f.do(t, request{method: "POST", path: "/connections/disconnect", user: alice, form: disconnectForm("github", testToken)})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("status %d", resp.StatusCode)
	}
	resp = f.do(t, request{method: "GET", path: resp.Header.Get("Location"), user: alice})
	body := readBody(t, resp)
	for _, want := range []string{"Disconnected.", `href="/connect/github?s=1"`} {
		if !strings.Contains(body, want) {
			t.Errorf("page after the disconnect lacks %q:\n%s", want, body)
		}
	}
	if strings.Contains(body, `name="upstream" value="github"`) {
		t.Error("page after the disconnect still offers to disconnect github")
	}
	if !strings.Contains(f.log.String(), "connections: disconnected") {
		t.Errorf("the disconnect is not logged:\n%s", f.log)
	}
}

// TestForms checks what the page's forms carry: the session's token in the
// field auth/browser reads, the upstream, a POST to the disconnect path, and
// a real button.
func TestForms(t *testing.T) {
	f := newFixture(t)
	body := readBody(t, f.do(t, request{method: "GET", path: "/connections", user: alice}))
	for _, want := range []string{
		`<form method="post" action="/connections/disconnect">`,
		`<input type="hidden" name="csrf_token" value="` + testToken + `">`,
		`<input type="hidden" name="upstream" value="github">`,
		`<input type="hidden" name="upstream" value="jira">`,
		`<button type="submit" class="button danger">Disconnect<span class="vh"> GitHub</span></button>`,
		`<a class="button primary" href="/connect/linear?s=2">Connect<span class="vh"> Linear</span></a>`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	if n := strings.Count(body, "<form "); n != 2 {
		t.Errorf("%d forms, want 2 (one for each connected upstream)", n)
	}
}

// TestAccessibleMarkup checks the structure a screen reader and a keyboard
// rely on.
func TestAccessibleMarkup(t *testing.T) {
	f := newFixture(t)
	body := readBody(t, f.do(t, request{method: "GET", path: "/connections", user: alice, admin: true}))
	for _, want := range []string{
		`<html lang="en">`,
		`<meta name="viewport"`,
		`<a class="skip" href="#main">`,
		`<header class="banner">`,
		`<main id="main"`,
		`<section class="card" aria-labelledby="yours">`,
		`<h2 id="yours">`,
		`<aside class="card status" aria-labelledby="status">`,
		`<caption>`,
		`<th scope="col">Upstream</th>`,
		`<th scope="row">`,
		`<time datetime="2026-10-20T09:42:00Z">20 Oct 2026, 09:42 UTC</time>`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	if strings.Contains(body, "style=") || strings.Contains(body, "<style") || strings.Contains(body, "<script") {
		t.Error("page has an inline style or a script, which its CSP forbids")
	}
}

func TestStatusOnlyForAdmins(t *testing.T) {
	tests := []struct {
		name      string
		admin     bool
		noStatus  bool
		wantShown bool
	}{
		{name: "admin", admin: true, wantShown: true},
		{name: "not admin", admin: false},
		{name: "admin without a Status", admin: true, noStatus: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			if tt.noStatus {
				f.page.status = nil
			}
			body := readBody(t, f.do(t, request{method: "GET", path: "/connections", user: alice, admin: tt.admin}))
			shown := strings.Contains(body, "Gateway status")
			if shown != tt.wantShown {
				t.Fatalf("status view shown: %v, want %v", shown, tt.wantShown)
			}
			if !tt.wantShown {
				if n := f.status.callCount(); n != 0 {
					t.Errorf("Status called %d times for a page without the status view", n)
				}
				for _, s := range []string{"dial tcp", "in the catalog", "with-status"} {
					if strings.Contains(body, s) {
						t.Errorf("non-admin page has %q", s)
					}
				}
				return
			}
			for _, want := range []string{
				"<strong>57</strong> tools in the catalog",
				`<span class="badge ok">ready</span>`,
				`<span class="badge bad">down</span><span class="error">dial tcp: connection refused</span>`,
				`<span class="badge pending">connecting</span>`,
				`<td class="num">31</td>`,
				`class="layout with-status"`,
			} {
				if !strings.Contains(body, want) {
					t.Errorf("admin page lacks %s", want)
				}
			}
		})
	}
}

// TestEscaping puts markup and a javascript: URL everywhere a value reaches
// the page; none of it may come out live.
func TestEscaping(t *testing.T) {
	const evil = `<script>alert(1)</script>`
	const attr = `"><img src=x onerror=alert(2)>`
	f := newFixture(t)
	f.grants.conns[alice] = []Connection{
		{Upstream: evil, Title: attr, Connected: true, Scopes: []string{evil}, Expires: fixedNow().Add(time.Hour)},
		{Upstream: "x" + attr, Title: evil, ConnectURL: "javascript:alert(3)"},
	}
	f.status.upstreams = []UpstreamHealth{{Name: evil, State: attr, Error: evil}}
	p, err := New(Options{
		Grants: f.grants, Status: f.status, CSRF: fakeCSRF{`tok"en<`},
		User:    func(*http.Request) (string, string, bool) { return alice, "<b>Alice</b>", true },
		IsAdmin: func(*http.Request) bool { return true },
	})
	if err != nil {
		t.Fatal(err)
	}
	f.page = p
	body := readBody(t, f.do(t, request{method: "GET", path: "/connections", user: alice}))
	for _, bad := range []string{"<script", "<img", "<b>Alice", "javascript:", `"tok"en`} {
		if strings.Contains(body, bad) {
			t.Errorf("page has %q unescaped:\n%s", bad, body)
		}
	}
	for _, want := range []string{"&lt;script&gt;alert(1)&lt;/script&gt;", "&#34;&gt;&lt;img src=x onerror=alert(2)&gt;", "&lt;b&gt;Alice&lt;/b&gt;", `href="#ZgotmplZ"`} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks the escaped %s", want)
		}
	}

	// The hostile name is still an upstream that can be disconnected: the
	// form posts it back intact.
	resp := f.do(t, request{method: "POST", path: "/connections/disconnect", user: alice,
		form: url.Values{browser.CSRFField: {`tok"en<`}, fieldUpstream: {evil}}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("disconnect of the hostile name: status %d", resp.StatusCode)
	}
	if got := f.grants.disconnects(); !slices.Equal(got, []string{alice + " " + evil}) {
		t.Errorf("disconnects %q", got)
	}
}

func TestHeaders(t *testing.T) {
	html := map[string]string{
		"Content-Type":            "text/html; charset=utf-8",
		"Content-Security-Policy": "default-src 'none'; style-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
		"X-Content-Type-Options":  "nosniff",
		"Referrer-Policy":         "no-referrer",
		"Cache-Control":           "no-store",
	}
	tests := []struct {
		name   string
		req    request
		status int
		want   map[string]string
	}{
		{"page", request{method: "GET", path: "/connections", user: alice, admin: true}, 200, html},
		{"401", request{method: "GET", path: "/connections"}, 401, html},
		{"403", request{method: "POST", path: "/connections/disconnect", user: alice, form: disconnectForm("github", "x")}, 403, html},
		{"404", request{method: "GET", path: "/connections/x", user: alice}, 404, html},
		{"405", request{method: "DELETE", path: "/connections", user: alice}, 405, html},
		{"303", request{method: "POST", path: "/connections/disconnect", user: alice, form: disconnectForm("github", testToken)}, 303, map[string]string{"Cache-Control": "no-store"}},
		{"style", request{method: "GET", path: "/connections/style.css"}, 200, map[string]string{
			"Content-Type":           "text/css; charset=utf-8",
			"X-Content-Type-Options": "nosniff",
			"Cache-Control":          "public, max-age=31536000, immutable",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := newFixture(t).do(t, tt.req)
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, tt.status)
			}
			for k, v := range tt.want {
				if got := resp.Header.Get(k); got != v {
					t.Errorf("%s: %q, want %q", k, got, v)
				}
			}
		})
	}
}

// TestStyleVersioned checks that the page links the stylesheet under a URL
// that changes with its content (so a year's cache is safe) and that a
// revalidation gets a 304.
func TestStyleVersioned(t *testing.T) {
	f := newFixture(t)
	body := readBody(t, f.do(t, request{method: "GET", path: "/connections", user: alice}))
	link := `<link rel="stylesheet" href="` + f.page.styleURL + `">`
	if !strings.Contains(body, link) || !strings.Contains(f.page.styleURL, "/connections/style.css?v=") {
		t.Fatalf("page lacks %s", link)
	}
	resp := f.do(t, request{method: "GET", path: f.page.styleURL})
	etag := resp.Header.Get("ETag")
	if resp.StatusCode != 200 || etag == "" {
		t.Fatalf("style: status %d, ETag %q", resp.StatusCode, etag)
	}
	r := httptest.NewRequestWithContext(t.Context(), "GET", f.page.styleURL, nil)
	r.Header.Set("If-None-Match", etag)
	w := httptest.NewRecorder()
	f.page.ServeHTTP(w, r)
	if w.Code != http.StatusNotModified || w.Body.Len() != 0 {
		t.Errorf("revalidation: status %d, %d bytes", w.Code, w.Body.Len())
	}
}

func TestBasePath(t *testing.T) {
	f := newFixture(t)
	p, err := New(Options{Grants: f.grants, CSRF: fakeCSRF{testToken}, BasePath: "/me/connections",
		User: func(*http.Request) (string, string, bool) { return alice, "", true }})
	if err != nil {
		t.Fatal(err)
	}
	f.page = p
	body := readBody(t, f.do(t, request{method: "GET", path: "/me/connections"}))
	for _, want := range []string{`action="/me/connections/disconnect"`, `href="/me/connections/style.css?v=`, "Signed in as <strong>" + alice} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	resp := f.do(t, request{method: "POST", path: "/me/connections/disconnect", form: disconnectForm("github", testToken)})
	if got := resp.Header.Get("Location"); got != "/me/connections?flash=disconnected" {
		t.Errorf("Location %q", got)
	}
	if resp := f.do(t, request{method: "GET", path: "/connections"}); resp.StatusCode != http.StatusNotFound {
		t.Errorf("the default path answered %d under another BasePath", resp.StatusCode)
	}
}

func TestNewChecksOptions(t *testing.T) {
	user := func(*http.Request) (string, string, bool) { return "", "", false }
	tests := []struct {
		name    string
		opts    Options
		wantErr string
	}{
		{"complete", Options{Grants: &fakeGrants{}, CSRF: fakeCSRF{}, User: user}, ""},
		{"no grants", Options{CSRF: fakeCSRF{}, User: user}, "Grants is required"},
		{"no csrf", Options{Grants: &fakeGrants{}, User: user}, "CSRF is required"},
		{"no user", Options{Grants: &fakeGrants{}, CSRF: fakeCSRF{}}, "User is required"},
		{"relative base", Options{Grants: &fakeGrants{}, CSRF: fakeCSRF{}, User: user, BasePath: "connections"}, "BasePath"},
		{"trailing slash", Options{Grants: &fakeGrants{}, CSRF: fakeCSRF{}, User: user, BasePath: "/connections/"}, "BasePath"},
		{"root", Options{Grants: &fakeGrants{}, CSRF: fakeCSRF{}, User: user, BasePath: "/"}, "BasePath"},
		{"query", Options{Grants: &fakeGrants{}, CSRF: fakeCSRF{}, User: user, BasePath: "/c?x=1"}, "BasePath"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.opts)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("New: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("New: %v, want an error with %q", err, tt.wantErr)
			}
		})
	}
}

func TestUntil(t *testing.T) {
	tests := []struct {
		d       time.Duration
		want    string
		expired bool
	}{
		{-time.Hour, "expired", true},
		{0, "expired", true},
		{30 * time.Second, "in less than a minute", false},
		{time.Minute, "in 1 minute", false},
		{59*time.Minute + 59*time.Second, "in 59 minutes", false},
		{time.Hour, "in 1 hour", false},
		{47 * time.Hour, "in 47 hours", false},
		{48 * time.Hour, "in 2 days", false},
		{90 * 24 * time.Hour, "in 90 days", false},
	}
	for _, tt := range tests {
		got, expired := until(tt.d)
		if got != tt.want || expired != tt.expired {
			t.Errorf("until(%v) = %q, %v; want %q, %v", tt.d, got, expired, tt.want, tt.expired)
		}
	}
}

func TestLongErrorCut(t *testing.T) {
	long := strings.Repeat("é", maxErrorRunes+50)
	got := healthViews([]UpstreamHealth{{Name: "a", State: "ready", Error: long}})
	if n := len([]rune(got[0].Error)); n != maxErrorRunes+1 {
		t.Errorf("error cut to %d runes, want %d and an ellipsis", n, maxErrorRunes)
	}
	if got[0].Class != "bad" {
		t.Errorf("an upstream with an error has class %q", got[0].Class)
	}
}
