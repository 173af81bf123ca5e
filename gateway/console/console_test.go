package console

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

const admin = "alice@example.com"

// newTestConsole is a console over a fresh fakeSource; admin says whether
// every request is an admin's.
func newTestConsole(t *testing.T, isAdmin bool) (*Console, *fakeSource) {
	t.Helper()
	src := newFakeSource()
	c, err := New(Options{
		Source: src,
		Admin:  func(*http.Request) (string, bool) { return admin, isAdmin },
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	c.now = func() time.Time { return fixedNow }
	return c, src
}

// serve runs one request through h.
func serve(h http.Handler, method, target string, form url.Values, cookies ...*http.Cookie) *httptest.ResponseRecorder {
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req := httptest.NewRequest(method, target, body)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for _, ck := range cookies {
		req.AddCookie(ck)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w
}

var tokenInForm = regexp.MustCompile(`name="csrf_token" value="([^"]+)"`)

// session gets a page, as a browser's first visit does, and returns the
// CSRF cookie it set and the token in its forms.
func session(t *testing.T, h http.Handler, page string) (*http.Cookie, string) {
	t.Helper()
	w := serve(h, http.MethodGet, page, nil)
	if w.Code != http.StatusOK {
		t.Fatalf("GET %s: %d", page, w.Code)
	}
	cks := w.Result().Cookies()
	if len(cks) != 1 || cks[0].Name != csrfCookie {
		t.Fatalf("GET %s set cookies %v, want the CSRF cookie", page, cks)
	}
	ck := cks[0]
	if ck.SameSite != http.SameSiteStrictMode || !ck.HttpOnly || ck.Path != "/console" {
		t.Errorf("CSRF cookie %+v: want SameSite=Strict, HttpOnly, Path=/console", ck)
	}
	m := tokenInForm.FindStringSubmatch(w.Body.String())
	if m == nil {
		t.Fatalf("GET %s: no CSRF token in a form", page)
	}
	if m[1] != ck.Value {
		t.Fatalf("the form's token %q is not the cookie's %q", m[1], ck.Value)
	}
	return ck, m[1]
}

func TestPages(t *testing.T) {
	c, _ := newTestConsole(t, true)
	tests := []struct {
		path string
		want []string
	}{
		{"/console", []string{"<h1>Overview</h1>", `aria-current="page">Overview`, "github", "modern 2026-03-26", "84.0/min", "1.2%", "42 ms", "910 ms", "JIRA_URL is not set", "no calls", "gw-2", "<dd>14</dd>", "<dd>3</dd>", "5 minutes"}},
		{"/console/", []string{"<h1>Overview</h1>"}},
		{"/console/catalog", []string{"<h1>Catalog</h1>", "github__search_code", "preset org=acme", "withheld", "optional", "as <code>issues://recent</code>", `<option value="team">`}},
		{"/console/catalog?endpoint=team&q=open+an+issue", []string{"Search mode", "search_tools", "What a model gets for <q>open an issue</q>", "score 2.75", "github__create_issue: Creates an issue."}},
		{"/console/pins", []string{"<h1>Pins</h1>", "Approve all 2 changed definitions", "withheld", "served changed", `<span class="inv" title="zero width space">U&#43;200B</span>`, `title="right-to-left override">U&#43;202E</span>`, "keeps only the old definition", `class="line del"`, `class="line add"`, `name="seen" value="sha256:bbbb"`}},
		{"/console/people", []string{"<h1>People</h1>", "Alice Example", "https://idp.example|bob", "read:org", "Revoke all 2 on github", "No one is connected."}},
		{"/console/audit", []string{"<h1>Audit</h1>", "intact", "1532 records in 2 streams", "github__search_code", "policy", "300 µs", "1.2 s"}},
		{"/console/audit?person=bob", []string{"github__create_issue", `value="bob"`}},
		{"/console/config", []string{"<h1>Config</h1>", "switchboard.yaml:12:5", "unknown field", "refused", "[redacted]", "Reload the configuration"}},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			w := serve(c, http.MethodGet, tt.path, nil)
			if w.Code != http.StatusOK {
				t.Fatalf("status %d: %s", w.Code, w.Body)
			}
			if csp := w.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") || strings.Contains(csp, "unsafe") {
				t.Errorf("CSP %q", csp)
			}
			if cc := w.Header().Get("Cache-Control"); cc != "no-store" {
				t.Errorf("Cache-Control %q", cc)
			}
			body := w.Body.String()
			for _, s := range tt.want {
				if !strings.Contains(body, s) {
					t.Errorf("the page lacks %q", s)
				}
			}
			for _, s := range []string{"<script", "style=", " on"} {
				if strings.Contains(body, s+"click") || (s != " on" && strings.Contains(body, s)) {
					t.Errorf("the page has %q: the CSP forbids it", s)
				}
			}
		})
	}
	// The audit filter reaches the source: bob's one event, not alice's.
	if body := serve(c, http.MethodGet, "/console/audit?person=bob", nil).Body.String(); strings.Contains(body, "github__search_code") {
		t.Error("the person filter was not applied")
	}
}

func TestPageErrors(t *testing.T) {
	c, src := newTestConsole(t, true)
	tests := []struct {
		method, path string
		status       int
	}{
		{http.MethodGet, "/console/nope", http.StatusNotFound},
		{http.MethodGet, "/elsewhere", http.StatusNotFound},
		{http.MethodGet, "/console/catalog?endpoint=nope", http.StatusNotFound},
		{http.MethodPost, "/console/pins", http.StatusMethodNotAllowed},
		{http.MethodGet, "/console/pins/approve", http.StatusMethodNotAllowed},
		{http.MethodPost, "/console/style.css", http.StatusMethodNotAllowed},
	}
	for _, tt := range tests {
		if w := serve(c, tt.method, tt.path, nil); w.Code != tt.status {
			t.Errorf("%s %s: %d, want %d", tt.method, tt.path, w.Code, tt.status)
		}
	}
	src.fail = true
	for _, p := range []string{"/console", "/console/catalog", "/console/pins", "/console/people", "/console/audit", "/console/config"} {
		w := serve(c, http.MethodGet, p, nil)
		if w.Code != http.StatusInternalServerError || strings.Contains(w.Body.String(), "store is down") {
			t.Errorf("GET %s with a failing source: %d, %q (want 500 without the error's text)", p, w.Code, w.Body)
		}
	}
}

func TestStyle(t *testing.T) {
	c, _ := newTestConsole(t, false) // no admin needed for the stylesheet
	w := serve(c, http.MethodGet, c.styleURL, nil)
	if w.Code != http.StatusOK || !strings.HasPrefix(w.Header().Get("Content-Type"), "text/css") || !strings.Contains(w.Body.String(), "--fg:") {
		t.Fatalf("stylesheet: %d %q", w.Code, w.Header().Get("Content-Type"))
	}
	req := httptest.NewRequest(http.MethodGet, c.styleURL, nil)
	req.Header.Set("If-None-Match", c.style.ETag())
	w = httptest.NewRecorder()
	c.ServeHTTP(w, req)
	if w.Code != http.StatusNotModified {
		t.Errorf("conditional GET: %d", w.Code)
	}
}

// actionTests are the console's actions: the form each page posts and what
// the source is asked to do.
var actionTests = []struct {
	name, path string
	form       url.Values
	location   string
	actions    []string
}{
	{"approve", "/console/pins/approve", url.Values{"upstream": {"github"}, "kind": {"tool"}, "name": {"create_issue"}, "seen": {"sha256:bbbb"}},
		"/console/pins?flash=approved", []string{"approve " + admin + " github/tool/create_issue sha256:bbbb"}},
	{"approve stale", "/console/pins/approve", url.Values{"upstream": {"github"}, "kind": {"tool"}, "name": {"create_issue"}, "seen": {"sha256:old"}},
		"/console/pins?flash=approve-stale", []string{"approve " + admin + " github/tool/create_issue sha256:old"}},
	{"approve gone", "/console/pins/approve", url.Values{"upstream": {"github"}, "kind": {"tool"}, "name": {"nope"}, "seen": {"sha256:x"}},
		"/console/pins?flash=approve-gone", []string{"approve " + admin + " github/tool/nope sha256:x"}},
	{"approve all", "/console/pins/approve-all", url.Values{},
		"/console/pins?flash=approved-all&n=2", []string{"approve-all " + admin}},
	{"revoke", "/console/people/revoke", url.Values{"upstream": {"github"}, "subject": {"https://idp.example|bob"}},
		"/console/people?flash=revoked", []string{"revoke " + admin + " github https://idp.example|bob"}},
	{"revoke gone", "/console/people/revoke", url.Values{"upstream": {"github"}, "subject": {"carol"}},
		"/console/people?flash=revoke-gone", []string{"revoke " + admin + " github carol"}},
	{"revoke all", "/console/people/revoke-all", url.Values{"upstream": {"github"}},
		"/console/people?flash=revoked-all&n=2", []string{"revoke-all " + admin + " github"}},
	{"reload", "/console/config/reload", url.Values{},
		"/console/config?flash=reloaded", []string{"reload " + admin}},
}

func TestActions(t *testing.T) {
	for _, tt := range actionTests {
		t.Run(tt.name, func(t *testing.T) {
			c, src := newTestConsole(t, true)
			ck, token := session(t, c, "/console/config")
			form := url.Values{CSRFField: {token}}
			for k, v := range tt.form {
				form[k] = v
			}
			w := serve(c, http.MethodPost, tt.path, form, ck)
			if w.Code != http.StatusSeeOther {
				t.Fatalf("status %d, want 303: %s", w.Code, w.Body)
			}
			if loc := w.Header().Get("Location"); loc != tt.location {
				t.Errorf("Location %q, want %q", loc, tt.location)
			}
			if got := src.recorded(); !slices.Equal(got, tt.actions) {
				t.Errorf("source actions %q, want %q", got, tt.actions)
			}
			// The page it redirects to says what happened.
			page := serve(c, http.MethodGet, w.Header().Get("Location"), nil, ck)
			if page.Code != http.StatusOK || !strings.Contains(page.Body.String(), `role="status"`) {
				t.Errorf("the page after the action: %d, no flash", page.Code)
			}
		})
	}
}

func TestActionsMissingFields(t *testing.T) {
	for _, path := range []string{"/console/pins/approve", "/console/people/revoke", "/console/people/revoke-all"} {
		c, src := newTestConsole(t, true)
		ck, token := session(t, c, "/console/config")
		if w := serve(c, http.MethodPost, path, url.Values{CSRFField: {token}}, ck); w.Code != http.StatusBadRequest {
			t.Errorf("POST %s without its fields: %d, want 400", path, w.Code)
		}
		if got := src.recorded(); len(got) != 0 {
			t.Errorf("POST %s without its fields reached the source: %q", path, got)
		}
	}
}

// TestActionsRefused: every action is refused, and reaches no source,
// without the CSRF token, with another browser's, from another origin, and
// to someone who is not an admin.
func TestActionsRefused(t *testing.T) {
	refusals := []struct {
		name  string
		admin bool
		// request builds the POST from the action's form, a session's
		// cookie and its token.
		request func(path string, form url.Values, ck *http.Cookie, token string) *http.Request
		status  int
	}{
		{"no token", true, func(path string, form url.Values, ck *http.Cookie, _ string) *http.Request {
			return post(path, form, ck)
		}, http.StatusForbidden},
		{"wrong token", true, func(path string, form url.Values, ck *http.Cookie, token string) *http.Request {
			last := "A"
			if strings.HasSuffix(token, last) {
				last = "B"
			}
			form.Set(CSRFField, token[:len(token)-1]+last)
			return post(path, form, ck)
		}, http.StatusForbidden},
		{"token without its cookie", true, func(path string, form url.Values, _ *http.Cookie, token string) *http.Request {
			form.Set(CSRFField, token)
			return post(path, form)
		}, http.StatusForbidden},
		{"token in the query", true, func(path string, form url.Values, ck *http.Cookie, token string) *http.Request {
			return post(path+"?"+CSRFField+"="+url.QueryEscape(token), form, ck)
		}, http.StatusForbidden},
		{"cross-site", true, func(path string, form url.Values, ck *http.Cookie, token string) *http.Request {
			form.Set(CSRFField, token)
			req := post(path, form, ck)
			req.Header.Set("Sec-Fetch-Site", "cross-site")
			return req
		}, http.StatusForbidden},
		{"other origin", true, func(path string, form url.Values, ck *http.Cookie, token string) *http.Request {
			form.Set(CSRFField, token)
			req := post(path, form, ck)
			req.Header.Set("Origin", "https://evil.example")
			return req
		}, http.StatusForbidden},
		{"not an admin", false, func(path string, form url.Values, ck *http.Cookie, token string) *http.Request {
			form.Set(CSRFField, token)
			return post(path, form, ck)
		}, http.StatusForbidden},
	}
	for _, rf := range refusals {
		for _, tt := range actionTests {
			t.Run(rf.name+"/"+tt.name, func(t *testing.T) {
				c, src := newTestConsole(t, true)
				ck, token := session(t, c, "/console/config")
				if !rf.admin {
					c, src = newTestConsole(t, false)
				}
				form := url.Values{}
				for k, v := range tt.form {
					form[k] = v
				}
				w := httptest.NewRecorder()
				c.ServeHTTP(w, rf.request(tt.path, form, ck, token))
				if w.Code != rf.status {
					t.Errorf("status %d, want %d", w.Code, rf.status)
				}
				if got := src.recorded(); len(got) != 0 {
					t.Errorf("the refused action reached the source: %q", got)
				}
			})
		}
	}
}

func post(target string, form url.Values, cookies ...*http.Cookie) *http.Request {
	req := httptest.NewRequest(http.MethodPost, target, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for _, ck := range cookies {
		req.AddCookie(ck)
	}
	return req
}

// TestNotAdmin: a person who is not an admin sees no page.
func TestNotAdmin(t *testing.T) {
	c, _ := newTestConsole(t, false)
	for _, p := range []string{"/console", "/console/catalog", "/console/pins", "/console/people", "/console/audit", "/console/config"} {
		w := serve(c, http.MethodGet, p, nil)
		if w.Code != http.StatusForbidden {
			t.Errorf("GET %s: %d, want 403", p, w.Code)
		}
		if body := w.Body.String(); strings.Contains(body, "github") || strings.Contains(body, "csrf_token") {
			t.Errorf("GET %s shows the gateway's data to a non-admin", p)
		}
	}
}

// TestFlashIsFixed: the query picks a message, it cannot write one.
func TestFlashIsFixed(t *testing.T) {
	c, _ := newTestConsole(t, true)
	body := serve(c, http.MethodGet, "/console?flash=%3Cb%3Epwned%3C/b%3E", nil).Body.String()
	if strings.Contains(body, "pwned") || strings.Contains(body, `role="status"`) {
		t.Error("an unknown flash key was shown")
	}
}

func TestNew(t *testing.T) {
	src := newFakeSource()
	adminFn := func(*http.Request) (string, bool) { return "", true }
	for _, opts := range []Options{
		{Admin: adminFn},
		{Source: src},
		{Source: src, Admin: adminFn, BasePath: "console"},
		{Source: src, Admin: adminFn, BasePath: "/console/"},
	} {
		if _, err := New(opts); err == nil {
			t.Errorf("New(%+v) accepted", opts)
		}
	}
	c, err := New(Options{Source: src, Admin: adminFn, BasePath: "/ops/console", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if w := serve(c, http.MethodGet, "/ops/console/pins", nil); w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `action="/ops/console/pins/approve"`) {
		t.Errorf("under another BasePath: %d", w.Code)
	}
}
