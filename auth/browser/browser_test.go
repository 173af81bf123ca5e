package browser

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-mcp/switchboard/auth"
)

const (
	sessionName = "__Host-switchboard-session"
	loginName   = "__Secure-switchboard-session-login"
)

// TestSignInFlow signs a browser in end to end: the page redirects to the
// IdP with PKCE S256, state and nonce, the IdP redirects back with a code,
// the callback exchanges it (the fake IdP checks the verifier) and the
// browser lands on the page it asked for; the next visit needs no IdP.
func TestSignInFlow(t *testing.T) {
	h := newHarness(t, nil, nil)
	b := h.browser(t)

	resp, body := b.get(t, h.app.URL+"/connect/abc?x=1")
	if resp.StatusCode != http.StatusOK || body != "hello alice (Alice, alice@example.com) at /connect/abc?x=1" {
		t.Fatalf("got %d %q", resp.StatusCode, body)
	}
	wantHops := []string{h.idp.srv.URL + "/authorize?", h.app.URL + "/callback?", h.app.URL + "/connect/abc?x=1"}
	if len(b.hops) != len(wantHops) {
		t.Fatalf("redirects %q, want %d", b.hops, len(wantHops))
	}
	for i, want := range wantHops {
		if !strings.HasPrefix(b.hops[i], want) {
			t.Errorf("redirect %d = %q, want prefix %q", i, b.hops[i], want)
		}
	}
	q := h.idp.lastAuthorize()
	if q.Get("redirect_uri") != h.app.URL+"/callback" || q.Has("code_verifier") || len(q.Get("code_challenge")) != 43 {
		t.Errorf("authorize query %v", q)
	}
	if got := strings.Fields(q.Get("scope")); !slices.Equal(got, []string{"openid", "profile", "email"}) {
		t.Errorf("scope %q", got)
	}

	cookies := b.setCookies()
	want := []http.Cookie{
		{Name: loginName, Path: "/callback", MaxAge: 600},
		{Name: loginName, Path: "/callback", MaxAge: -1},
		{Name: sessionName, Path: "/", MaxAge: 3600},
	}
	if len(cookies) != len(want) {
		t.Fatalf("Set-Cookie: %v", cookies)
	}
	for i, w := range want {
		c := cookies[i]
		if c.Name != w.Name || c.Path != w.Path || c.MaxAge != w.MaxAge || !c.HttpOnly || !c.Secure || c.SameSite != http.SameSiteLaxMode || (c.Value == "") != (w.MaxAge < 0) {
			t.Errorf("cookie %d = %s, want %s=... Path=%s Max-Age=%d HttpOnly Secure SameSite=Lax", i, c, w.Name, w.Path, w.MaxAge)
		}
	}

	n := h.idp.authorizations()
	if resp, body := b.get(t, h.app.URL+"/connections"); resp.StatusCode != http.StatusOK || !strings.HasPrefix(body, "hello alice") {
		t.Fatalf("second visit: %d %q", resp.StatusCode, body)
	}
	if h.idp.authorizations() != n {
		t.Error("a signed-in browser was sent to the IdP again")
	}
}

// sealSession seals a session for h's issuer, edited, as a cookie value.
func (h *harness) sealSession(t *testing.T, edit func(*session)) string {
	t.Helper()
	sess := session{ID: "sid-1", Iss: h.idp.srv.URL, Sub: "alice", Exp: h.clk.Now().Add(time.Hour).Unix()}
	if edit != nil {
		edit(&sess)
	}
	v, err := h.s.sealer.seal(purposeSession, sess)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestSessionCookieRefused: any session cookie that is not exactly one the
// gateway sealed, for this issuer and still valid, starts a new sign-in.
func TestSessionCookieRefused(t *testing.T) {
	h := newHarness(t, nil, nil)
	other, err := newSealer(bytes.Repeat([]byte{8}, 32))
	if err != nil {
		t.Fatal(err)
	}
	flip := func(s string) string {
		b := []byte(s)
		i := len(b) / 2
		b[i] ^= 'A' ^ 'B'
		if b[i] == s[i] || !strings.ContainsRune("ABab", rune(s[i])) {
			b[i] = map[bool]byte{true: 'A', false: 'B'}[s[i] != 'A']
		}
		return string(b)
	}
	tests := []struct {
		name   string
		value  func() string
		signed bool
	}{
		{"valid", func() string { return h.sealSession(t, nil) }, true},
		{"one character changed", func() string { return flip(h.sealSession(t, nil)) }, false},
		{"truncated", func() string { v := h.sealSession(t, nil); return v[:len(v)-4] }, false},
		{"not base64", func() string { return "!!not-a-cookie!!" }, false},
		{"empty", func() string { return "" }, false},
		{"sealed with another key", func() string {
			v, _ := other.seal(purposeSession, session{ID: "x", Iss: h.idp.srv.URL, Sub: "mallory", Exp: h.clk.Now().Add(time.Hour).Unix()})
			return v
		}, false},
		{"a login state used as a session", func() string {
			v, _ := h.s.sealer.seal(purposeLogin, session{ID: "x", Iss: h.idp.srv.URL, Sub: "mallory", Exp: h.clk.Now().Add(time.Hour).Unix()})
			return v
		}, false},
		{"another issuer", func() string { return h.sealSession(t, func(s *session) { s.Iss = "https://other.example" }) }, false},
		{"expired", func() string { return h.sealSession(t, func(s *session) { s.Exp = h.clk.Now().Unix() }) }, false},
		{"no subject", func() string { return h.sealSession(t, func(s *session) { s.Sub = "" }) }, false},
		{"no id", func() string { return h.sealSession(t, func(s *session) { s.ID = "" }) }, false},
	}
	page := h.s.Require(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, _ := UserFrom(r.Context())
		w.Write([]byte(u.Subject))
	}))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodGet, h.app.URL+"/connections", nil)
			req.AddCookie(&http.Cookie{Name: sessionName, Value: tt.value()})
			rec := httptest.NewRecorder()
			page.ServeHTTP(rec, req)
			if tt.signed {
				if rec.Code != http.StatusOK || rec.Body.String() != "alice" {
					t.Fatalf("got %d %q, want the page for alice", rec.Code, rec.Body)
				}
				return
			}
			if loc := rec.Header().Get("Location"); rec.Code != http.StatusFound || !strings.HasPrefix(loc, h.idp.srv.URL+"/authorize?") {
				t.Fatalf("got %d to %q, want a new sign-in", rec.Code, loc)
			}
		})
	}
}

// TestSessionExpires: a session lasts SessionTTL on the (injected) clock,
// then the browser is signed in again.
func TestSessionExpires(t *testing.T) {
	h := newHarness(t, nil, nil)
	b := h.browser(t)
	if resp, _ := b.get(t, h.app.URL+"/"); resp.StatusCode != http.StatusOK {
		t.Fatal(resp.Status)
	}
	n := h.idp.authorizations()
	tests := []struct {
		advance    time.Duration
		newSignIns int
	}{
		{time.Hour - time.Second, 0},
		{time.Second, 1}, // exactly SessionTTL after the sign-in
		{time.Minute, 0}, // the new session is fresh
	}
	for _, tt := range tests {
		h.clk.Advance(tt.advance)
		resp, body := b.get(t, h.app.URL+"/page")
		if resp.StatusCode != http.StatusOK || !strings.HasPrefix(body, "hello alice") {
			t.Fatalf("after %v: %d %q", tt.advance, resp.StatusCode, body)
		}
		if got := h.idp.authorizations() - n; got != tt.newSignIns {
			t.Errorf("after %v: %d new sign-ins, want %d", tt.advance, got, tt.newSignIns)
		}
		n = h.idp.authorizations()
	}
}

// TestCallbackRefused drives the flow to the IdP's redirect back, then
// breaks one thing. Each refusal has its status and message, sets no
// session, clears the login state and leaks nothing (assertNoSecrets).
func TestCallbackRefused(t *testing.T) {
	// act performs the callback request given the IdP's redirect back.
	type act func(t *testing.T, h *harness, b *browser, callback string) (*browser, *http.Response, string)
	plain := func(t *testing.T, h *harness, b *browser, callback string) (*browser, *http.Response, string) {
		resp, body := b.get(t, callback)
		return b, resp, body
	}
	editQuery := func(edit func(url.Values)) act {
		return func(t *testing.T, h *harness, b *browser, callback string) (*browser, *http.Response, string) {
			u, _ := url.Parse(callback)
			q := u.Query()
			edit(q)
			u.RawQuery = q.Encode()
			resp, body := b.get(t, u.String())
			return b, resp, body
		}
	}
	tests := []struct {
		name      string
		idp       func(*fakeIdP)
		act       act
		status    int
		message   string
		logReason string
	}{
		{
			name:      "state mismatch",
			act:       editQuery(func(q url.Values) { q.Set("state", "attacker-state") }),
			status:    http.StatusBadRequest,
			message:   "expired or was already used",
			logReason: "state does not match",
		},
		{
			name: "no login-state cookie (another browser)",
			act: func(t *testing.T, h *harness, b *browser, callback string) (*browser, *http.Response, string) {
				other := h.browser(t)
				resp, body := other.get(t, callback)
				return other, resp, body
			},
			status:    http.StatusBadRequest,
			message:   "expired or was already used",
			logReason: "no login-state cookie",
		},
		{
			name: "login state expired",
			act: func(t *testing.T, h *harness, b *browser, callback string) (*browser, *http.Response, string) {
				h.clk.Advance(loginTTL)
				return plain(t, h, b, callback)
			},
			status:    http.StatusBadRequest,
			message:   "expired or was already used",
			logReason: "login state expired",
		},
		{
			name: "replayed callback (the browser cleared the state cookie)",
			act: func(t *testing.T, h *harness, b *browser, callback string) (*browser, *http.Response, string) {
				if resp, _ := b.get(t, callback); resp.StatusCode != http.StatusOK {
					t.Fatalf("first callback: %s", resp.Status)
				}
				other := h.browser(t) // the replay has no session to keep
				for _, c := range b.c.Jar.Cookies(mustURL(t, h.app.URL+"/callback")) {
					if c.Name == loginName {
						other.c.Jar.SetCookies(mustURL(t, h.app.URL+"/callback"), []*http.Cookie{c})
					}
				}
				resp, body := other.get(t, callback)
				return other, resp, body
			},
			status:    http.StatusBadRequest,
			message:   "expired or was already used",
			logReason: "no login-state cookie",
		},
		{
			name: "replayed callback with the used state cookie",
			act: func(t *testing.T, h *harness, b *browser, callback string) (*browser, *http.Response, string) {
				used := b.cookie(t, loginName, "/callback")
				if resp, _ := b.get(t, callback); resp.StatusCode != http.StatusOK {
					t.Fatalf("first callback: %s", resp.Status)
				}
				other := h.browser(t)
				req, _ := http.NewRequest(http.MethodGet, callback, nil)
				req.AddCookie(&http.Cookie{Name: loginName, Value: used})
				resp, body := other.do(t, req)
				return other, resp, body
			},
			status:    http.StatusBadRequest,
			message:   "expired or was already used",
			logReason: "already used",
		},
		{
			name: "a code from another sign-in (PKCE binds the code to its browser)",
			act: func(t *testing.T, h *harness, b *browser, callback string) (*browser, *http.Response, string) {
				b.stopAt = "/callback"
				resp, _ := b.get(t, h.app.URL+"/second")
				b.stopAt = ""
				second, _ := url.Parse(resp.Header.Get("Location"))
				first, _ := url.Parse(callback)
				q := second.Query()
				q.Set("code", first.Query().Get("code"))
				second.RawQuery = q.Encode()
				resp, body := b.get(t, second.String())
				return b, resp, body
			},
			status:    http.StatusBadRequest,
			message:   "expired or was already used",
			logReason: "invalid_grant",
		},
		{
			name:      "no code",
			act:       editQuery(func(q url.Values) { q.Del("code") }),
			status:    http.StatusBadRequest,
			message:   "expired or was already used",
			logReason: "no code",
		},
		{
			name:      "the person refused at the IdP",
			idp:       func(p *fakeIdP) { p.authError = "access_denied" },
			act:       plain,
			status:    http.StatusForbidden,
			message:   "cancelled or refused",
			logReason: "access_denied",
		},
		{
			name:      "the IdP reports an error",
			idp:       func(p *fakeIdP) { p.authError = "temporarily_unavailable" },
			act:       plain,
			status:    http.StatusBadGateway,
			message:   "could not complete the sign-in",
			logReason: "temporarily_unavailable",
		},
		{
			name:      "the token endpoint fails",
			idp:       func(p *fakeIdP) { p.tokenStatus = http.StatusInternalServerError },
			act:       plain,
			status:    http.StatusBadGateway,
			message:   "could not complete the sign-in",
			logReason: "token endpoint: 500",
		},
		{
			name:      "wrong nonce",
			idp:       func(p *fakeIdP) { p.nonce = "another-nonce" },
			act:       plain,
			status:    http.StatusBadGateway,
			message:   "could not complete the sign-in",
			logReason: "nonce does not match",
		},
		{
			name:      "an ID token for another client",
			idp:       func(p *fakeIdP) { p.audience = "another-client" },
			act:       plain,
			status:    http.StatusBadGateway,
			message:   "could not complete the sign-in",
			logReason: "expected audience",
		},
		{
			name:      "an ID token from another issuer",
			idp:       func(p *fakeIdP) { p.issuer = "https://other.example" },
			act:       plain,
			status:    http.StatusBadGateway,
			message:   "could not complete the sign-in",
			logReason: "different provider",
		},
		{
			name:      "an expired ID token",
			idp:       func(p *fakeIdP) { p.expiresIn = -time.Minute },
			act:       plain,
			status:    http.StatusBadGateway,
			message:   "could not complete the sign-in",
			logReason: "expired",
		},
		{
			name: "POST",
			act: func(t *testing.T, h *harness, b *browser, callback string) (*browser, *http.Response, string) {
				resp, body := b.post(t, callback, nil, nil)
				return b, resp, body
			},
			status:  http.StatusMethodNotAllowed,
			message: "opened by the identity provider",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, tt.idp, nil)
			b := h.browser(t)
			b.stopAt = "/callback"
			resp, _ := b.get(t, h.app.URL+"/page")
			callback := resp.Header.Get("Location")
			if resp.StatusCode != http.StatusFound || !strings.HasPrefix(callback, h.app.URL+"/callback?") {
				t.Fatalf("the IdP answered %d to %q", resp.StatusCode, callback)
			}
			b.stopAt = ""

			b, resp, body := tt.act(t, h, b, callback)
			if resp.StatusCode != tt.status || !strings.Contains(body, tt.message) {
				t.Errorf("got %d %q, want %d with %q", resp.StatusCode, body, tt.status, tt.message)
			}
			if ct := resp.Header.Get("Content-Type"); ct != "text/html; charset=utf-8" {
				t.Errorf("Content-Type %q", ct)
			}
			if rp := resp.Header.Get("Referrer-Policy"); rp != "no-referrer" {
				t.Errorf("Referrer-Policy %q", rp)
			}
			if v := b.cookie(t, sessionName, "/"); v != "" {
				t.Error("a refused callback left a session cookie")
			}
			if v := b.cookie(t, loginName, "/callback"); v != "" && tt.status != http.StatusMethodNotAllowed {
				t.Error("a refused callback left the login-state cookie")
			}
			if !strings.Contains(h.logs.String(), tt.logReason) {
				t.Errorf("logs lack %q:\n%s", tt.logReason, h.logs)
			}
		})
	}
}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func TestSafeReturnTo(t *testing.T) {
	tests := []struct{ in, want string }{
		{"/", "/"},
		{"/connect/abc?x=1&y=%2F", "/connect/abc?x=1&y=%2F"},
		{"/connections#top", "/connections"},
		{"", "/"},
		{"connections", "/"},
		{"//evil.com", "/"},
		{"//evil.com/path", "/"},
		{"///evil.com", "/"},
		{"https://evil", "/"},
		{"https://evil.com/connect", "/"},
		{"http:/evil.com", "/"},
		{"javascript:alert(1)", "/"},
		{"/\\evil.com", "/"},
		{"\\\\evil.com", "/"},
		{"/\t/evil.com", "/"},
		{"/\r\nSet-Cookie: x=y", "/"},
		{"/" + strings.Repeat("a", maxReturnTo), "/"},
		{"/%2F%2Fevil.com", "/%2F%2Fevil.com"}, // one encoded path segment: still this origin
	}
	for _, tt := range tests {
		if got := safeReturnTo(tt.in); got != tt.want {
			t.Errorf("safeReturnTo(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestReturnToThroughFlow: whatever a link asks to return to, the browser
// ends on this gateway.
func TestReturnToThroughFlow(t *testing.T) {
	tests := []struct{ to, want string }{
		{"/connect/xyz?u=github", "/connect/xyz?u=github"},
		{"//evil.com", "/"},
		{"https://evil", "/"},
		{"/\\evil.com", "/"},
	}
	h := newHarness(t, nil, nil)
	for _, tt := range tests {
		b := h.browser(t)
		resp, _ := b.get(t, h.app.URL+"/go?to="+url.QueryEscape(tt.to))
		if got := resp.Request.URL.String(); got != h.app.URL+tt.want {
			t.Errorf("return to %q: ended on %q, want %q", tt.to, got, h.app.URL+tt.want)
		}
	}
}

// TestRequireReturnsToLocalPaths: the path Require remembers comes from the
// request, and a request path that a browser would read as another host is
// not kept.
func TestRequireReturnsToLocalPaths(t *testing.T) {
	h := newHarness(t, nil, nil)
	tests := []struct{ target, want string }{
		{"/connect/a?b=1", "/connect/a?b=1"},
		{"//evil.com/x", "/"},
		{"https://evil.com/x?y", "/x?y"}, // absolute-form: its path, on this origin
	}
	for _, tt := range tests {
		rec := httptest.NewRecorder()
		h.s.Require(http.NotFoundHandler()).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, tt.target, nil))
		var st loginState
		for _, c := range rec.Result().Cookies() {
			if c.Name == loginName {
				if err := h.s.sealer.open(purposeLogin, c.Value, &st); err != nil {
					t.Fatal(err)
				}
			}
		}
		if st.ReturnTo != tt.want {
			t.Errorf("%q: return to %q, want %q", tt.target, st.ReturnTo, tt.want)
		}
	}
}

func TestCheckCSRF(t *testing.T) {
	h := newHarness(t, nil, nil)
	mine := h.sealSession(t, nil)
	theirs := h.sealSession(t, func(s *session) { s.ID = "sid-2"; s.Sub = "bob" })
	tokenOf := func(cookie string) string {
		r := httptest.NewRequest(http.MethodGet, h.app.URL+"/", nil)
		r.AddCookie(&http.Cookie{Name: sessionName, Value: cookie})
		return h.s.CSRFToken(r)
	}
	good := tokenOf(mine)
	if good == "" || good == tokenOf(theirs) {
		t.Fatalf("tokens %q, %q", good, tokenOf(theirs))
	}
	tests := []struct {
		name    string
		cookie  string
		form    url.Values
		query   string
		headers map[string]string
		ok      bool
	}{
		{name: "form field", cookie: mine, form: url.Values{CSRFField: {good}}, ok: true},
		{name: "header", cookie: mine, headers: map[string]string{"X-CSRF-Token": good}, ok: true},
		{name: "same-origin fetch", cookie: mine, form: url.Values{CSRFField: {good}}, headers: map[string]string{"Sec-Fetch-Site": "same-origin"}, ok: true},
		{name: "the public origin behind a proxy", cookie: mine, form: url.Values{CSRFField: {good}}, headers: map[string]string{"Origin": h.app.URL, "Host": "internal:8080"}, ok: true},
		{name: "no token", cookie: mine},
		{name: "wrong token", cookie: mine, form: url.Values{CSRFField: {good[:len(good)-1] + "x"}}},
		{name: "another session's token", cookie: theirs, form: url.Values{CSRFField: {good}}},
		{name: "no session", form: url.Values{CSRFField: {good}}},
		{name: "token in the query only", cookie: mine, query: CSRFField + "=" + good},
		{name: "cross-site", cookie: mine, form: url.Values{CSRFField: {good}}, headers: map[string]string{"Sec-Fetch-Site": "cross-site"}},
		{name: "another origin", cookie: mine, form: url.Values{CSRFField: {good}}, headers: map[string]string{"Origin": "https://evil.example"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			target := h.app.URL + "/action"
			if tt.query != "" {
				target += "?" + tt.query
			}
			r := httptest.NewRequest(http.MethodPost, target, strings.NewReader(tt.form.Encode()))
			r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			for k, v := range tt.headers {
				if k == "Host" {
					r.Host = v
					continue
				}
				r.Header.Set(k, v)
			}
			if tt.cookie != "" {
				r.AddCookie(&http.Cookie{Name: sessionName, Value: tt.cookie})
			}
			if got := h.s.CheckCSRF(r); got != tt.ok {
				t.Errorf("CheckCSRF = %v, want %v", got, tt.ok)
			}
		})
	}
}

// TestCSRFTokenChangesWithSignIn: a form from an earlier sign-in is not
// accepted after the next one.
func TestCSRFTokenChangesWithSignIn(t *testing.T) {
	h := newHarness(t, nil, nil)
	b := h.browser(t)
	b.get(t, h.app.URL+"/")
	first := h.csrfOf(t, b)
	if resp, body := b.post(t, h.app.URL+"/action", url.Values{CSRFField: {first}}, nil); resp.StatusCode != http.StatusOK || body != "done" {
		t.Fatalf("post with the token: %d %q", resp.StatusCode, body)
	}
	h.clk.Advance(time.Hour)
	b.get(t, h.app.URL+"/") // signs in again
	if h.csrfOf(t, b) == first {
		t.Fatal("a new sign-in kept the CSRF token")
	}
	if resp, _ := b.post(t, h.app.URL+"/action", url.Values{CSRFField: {first}}, nil); resp.StatusCode != http.StatusForbidden {
		t.Errorf("the old token: %s, want 403", resp.Status)
	}
}

// csrfOf is the token a page would embed for b's session.
func (h *harness) csrfOf(t *testing.T, b *browser) string {
	t.Helper()
	r := httptest.NewRequest(http.MethodGet, h.app.URL+"/", nil)
	r.AddCookie(&http.Cookie{Name: sessionName, Value: b.cookie(t, sessionName, "/")})
	return h.s.CSRFToken(r)
}

func TestSignOut(t *testing.T) {
	tests := []struct {
		name      string
		method    string
		token     bool
		origin    string
		status    int
		signedOut bool
	}{
		{name: "GET", method: http.MethodGet, token: true, status: http.StatusMethodNotAllowed},
		{name: "POST without a token", method: http.MethodPost, status: http.StatusForbidden},
		{name: "POST from another site", method: http.MethodPost, token: true, origin: "https://evil.example", status: http.StatusForbidden},
		{name: "POST with the token", method: http.MethodPost, token: true, status: http.StatusOK, signedOut: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, nil, nil)
			b := h.browser(t)
			b.get(t, h.app.URL+"/")
			form := url.Values{}
			if tt.token {
				form.Set(CSRFField, h.csrfOf(t, b))
			}
			req, _ := http.NewRequest(tt.method, h.app.URL+"/signout", strings.NewReader(form.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			if tt.origin != "" {
				req.Header.Set("Origin", tt.origin)
			}
			resp, _ := b.do(t, req)
			if resp.StatusCode != tt.status {
				t.Errorf("status %d, want %d", resp.StatusCode, tt.status)
			}
			n := h.idp.authorizations()
			b.get(t, h.app.URL+"/")
			if signedOut := h.idp.authorizations() > n; signedOut != tt.signedOut {
				t.Errorf("signed out: %v, want %v", signedOut, tt.signedOut)
			}
		})
	}
}

func TestNewRefuses(t *testing.T) {
	clk := &clock{t: time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)}
	idp := newFakeIdP(t, clk)
	tests := []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"plain http issuer", func(c *Config) { c.Issuer = "http://idp.example" }, "must use https"},
		{"relative issuer", func(c *Config) { c.Issuer = "/idp" }, "not an absolute URL"},
		{"no client id", func(c *Config) { c.ClientID = "" }, "clientId is required"},
		{"relative redirect", func(c *Config) { c.RedirectURL = "/callback" }, "redirectURL"},
		{"redirect with a fragment", func(c *Config) { c.RedirectURL = "https://gw.example/callback#x" }, "no fragment"},
		{"short key", func(c *Config) { c.CookieKey = []byte("0123456789") }, "32 bytes, not 10"},
		{"negative ttl", func(c *Config) { c.SessionTTL = -time.Second }, "negative sessionTTL"},
		{"bad cookie name", func(c *Config) { c.CookieName = "a b" }, "cookieName"},
		{"prefixed cookie without Secure", func(c *Config) { c.CookieName = "__Host-sb"; c.Secure = false }, "needs secure cookies"},
		{"issuer mismatch", func(c *Config) { c.Issuer = idp.srv.URL + "/" }, "discovering"},
		{"IdP down", func(c *Config) { idp.set(func(p *fakeIdP) { p.down = true }) }, "503"},
		{"no client authentication method in common", func(c *Config) { idp.set(func(p *fakeIdP) { p.authMethods = []string{"private_key_jwt"} }) }, "neither client_secret_basic nor client_secret_post"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Cleanup(func() { idp.set(func(p *fakeIdP) { p.down, p.authMethods = false, nil }) })
			cfg := Config{
				Issuer:       idp.srv.URL,
				ClientID:     testClientID,
				ClientSecret: testClientSecret,
				RedirectURL:  "https://gw.example/callback",
				CookieKey:    bytes.Repeat([]byte{7}, 32),
				Secure:       true,
			}
			tt.edit(&cfg)
			_, err := New(context.Background(), cfg, idp.srv.Client())
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
			if strings.Contains(err.Error(), testClientSecret) {
				t.Errorf("the error names the client secret: %v", err)
			}
		})
	}
}

func TestNewDefaults(t *testing.T) {
	tests := []struct {
		name           string
		edit           func(*Config)
		session, login string
		scopes         []string
		ttl            time.Duration
		callbackPath   string
	}{
		{"secure", func(c *Config) {}, sessionName, loginName, []string{"openid", "profile", "email"}, 8 * time.Hour, "/callback"},
		{"development", func(c *Config) { c.Secure = false }, "switchboard-session", "switchboard-session-login", []string{"openid", "profile", "email"}, 8 * time.Hour, "/callback"},
		{"named", func(c *Config) { c.CookieName = "__Host-gw"; c.SessionTTL = time.Minute }, "__Host-gw", "__Secure-gw-login", []string{"openid", "profile", "email"}, time.Minute, "/callback"},
		{"scopes without openid", func(c *Config) { c.Scopes = []string{"groups"} }, sessionName, loginName, []string{"openid", "groups"}, 8 * time.Hour, "/callback"},
		{"callback at the root", func(c *Config) { c.RedirectURL = "http://127.0.0.1:8080" }, sessionName, loginName, []string{"openid", "profile", "email"}, 8 * time.Hour, "/"},
	}
	clk := &clock{t: time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)}
	idp := newFakeIdP(t, clk)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := Config{Issuer: idp.srv.URL, ClientID: testClientID, RedirectURL: "https://gw.example/callback", CookieKey: make([]byte, 32), Secure: true}
			tt.edit(&cfg)
			s, err := New(context.Background(), cfg, idp.srv.Client())
			if err != nil {
				t.Fatal(err)
			}
			if s.cfg.CookieName != tt.session || s.loginCookie != tt.login || !slices.Equal(s.oauth.Scopes, tt.scopes) || s.cfg.SessionTTL != tt.ttl || s.CallbackPath() != tt.callbackPath {
				t.Errorf("got %q %q %q %v %q", s.cfg.CookieName, s.loginCookie, s.oauth.Scopes, s.cfg.SessionTTL, s.CallbackPath())
			}
		})
	}
}

func TestUserIs(t *testing.T) {
	alice := User{Issuer: "https://idp.example", Subject: "alice", Name: "Alice", Email: "alice@example.com"}
	tests := []struct {
		name string
		p    *auth.Principal
		want bool
	}{
		{"same issuer and subject", &auth.Principal{Issuer: "https://idp.example", Subject: "alice"}, true},
		{"another subject", &auth.Principal{Issuer: "https://idp.example", Subject: "bob"}, false},
		{"same subject at another issuer", &auth.Principal{Issuer: "https://other.example", Subject: "alice"}, false},
		{"no principal", nil, false},
	}
	for _, tt := range tests {
		if got := alice.Is(tt.p); got != tt.want {
			t.Errorf("%s: Is = %v, want %v", tt.name, got, tt.want)
		}
		if tt.p != nil && (alice.Key() == tt.p.Key()) != tt.want {
			t.Errorf("%s: Key %q vs principal %q", tt.name, alice.Key(), tt.p.Key())
		}
	}
	if (User{}).Is(&auth.Principal{}) {
		t.Error("an empty user is an empty principal")
	}
	if _, ok := UserFrom(context.Background()); ok {
		t.Error("UserFrom outside Require found a user")
	}
}

func TestSpentStates(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	var sp spentStates
	tests := []struct {
		state string
		at    time.Duration
		fresh bool
	}{
		{"a", 0, true},
		{"a", time.Minute, false},
		{"b", time.Minute, true},
		{"b", 2 * time.Minute, false},
		{"a", loginTTL, true},               // forgotten once it could no longer be accepted anyway
		{"b", loginTTL + time.Minute, true}, // expired, though not yet pruned
	}
	for _, tt := range tests {
		now := t0.Add(tt.at)
		if got := sp.spend(tt.state, now, now.Add(loginTTL)); got != tt.fresh {
			t.Errorf("spend(%q) at +%v = %v, want %v", tt.state, tt.at, got, tt.fresh)
		}
	}
}

// TestClientAuthentication: the client authenticates the way the IdP's
// discovery document offers, once per code: no second try another way.
func TestClientAuthentication(t *testing.T) {
	tests := []struct {
		name    string
		methods []string
		secret  string
		want    string
	}{
		{"unstated: client_secret_basic", nil, testClientSecret, "basic"},
		{"basic offered", []string{"client_secret_post", "client_secret_basic"}, testClientSecret, "basic"},
		{"post only", []string{"client_secret_post"}, testClientSecret, "post"},
		{"public client", []string{"none"}, "", "post"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, func(p *fakeIdP) { p.authMethods = tt.methods; p.publicClient = tt.secret == "" },
				func(c *Config) { c.ClientSecret = tt.secret })
			b := h.browser(t)
			if resp, body := b.get(t, h.app.URL+"/"); resp.StatusCode != http.StatusOK {
				t.Fatalf("%d %q", resp.StatusCode, body)
			}
			h.idp.mu.Lock()
			defer h.idp.mu.Unlock()
			if !slices.Equal(h.idp.clientAuth, []string{tt.want}) {
				t.Errorf("token requests authenticated by %q, want [%s]", h.idp.clientAuth, tt.want)
			}
		})
	}
}
