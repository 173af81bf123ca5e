package connect

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/switchboard-mcp/switchboard/auth/upstreamauth"
	"github.com/switchboard-mcp/switchboard/routing/state"
)

// TestConnect is the happy path: the link, the signed-in user matching, the
// authorization server, the callback; the grant is stored sealed, the
// session notified once, and Tokens gives the token.
func TestConnect(t *testing.T) {
	e := newEnv(t)
	w := e.get(e.link(alice), "alice")
	if got := w.Header().Get("Referrer-Policy"); got != "no-referrer" {
		t.Errorf("Referrer-Policy %q", got)
	}
	if got := w.Header().Get("Cache-Control"); got != "no-store" {
		t.Errorf("Cache-Control %q", got)
	}
	auth, _ := url.Parse(w.Header().Get("Location"))
	if q := auth.Query(); q.Get("code_challenge_method") != "S256" || q.Get("resource") != mcpResource || q.Get("redirect_uri") != CallbackURL(publicURL) {
		t.Errorf("authorization request %v", q)
	}
	cb := e.authorize(w)
	w = e.get(cb, "alice")
	if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), "Connected to github. You can close this tab and return to your client.") {
		t.Fatalf("callback: HTTP %d: %s", w.Code, w.Body)
	}
	g, err := e.grant(alice)
	if err != nil {
		t.Fatalf("grant: %v", err)
	}
	if g.Issuer != asIssuer {
		t.Errorf("the grant is bound to issuer %q, want %q", g.Issuer, asIssuer)
	}
	if !secretish.MatchString(g.AccessToken) || !secretish.MatchString(g.RefreshToken) || g.Scope != "repo" || g.Expiry.IsZero() {
		t.Errorf("grant: scope %q, expiry %v, tokens issued by the fake: %t", g.Scope, g.Expiry, secretish.MatchString(g.AccessToken))
	}
	calls := e.notes.calls()
	want := state.ConnectRecord{Principal: alice.Key(), Upstream: "github", Session: "session-1", ElicitationID: "elicitation-1"}
	if len(calls) != 1 {
		t.Fatalf("notified %d times, want once", len(calls))
	}
	calls[0].Created = time.Time{}
	if calls[0].Pending != nil || calls[0].Principal != want.Principal || calls[0].Upstream != want.Upstream ||
		calls[0].Session != want.Session || calls[0].ElicitationID != want.ElicitationID {
		t.Errorf("notified with %+v, want %+v", calls[0], want)
	}
	tok, err := e.tokens.Token(context.Background(), alice.Key(), "github")
	if err != nil || tok.AccessToken != g.AccessToken || tok.RefreshToken != "" {
		t.Errorf("Token: %v (refresh token handed out: %t)", err, tok != nil && tok.RefreshToken != "")
	}
	// The callback replayed finds nothing.
	if w := e.get(cb, "alice"); w.Code != http.StatusBadRequest {
		t.Errorf("replayed callback: HTTP %d", w.Code)
	}
	if n := len(e.notes.calls()); n != 1 {
		t.Errorf("notified %d times after a replay", n)
	}
}

// TestRefusals: every way a link or a callback is refused, the status and
// the page, and that nothing was connected.
func TestRefusals(t *testing.T) {
	cases := []struct {
		name string
		// do runs the scenario and returns the final answer.
		do         func(e *env) (status int, body string)
		wantStatus int
		wantText   string
		// after checks the store once done (nil: nothing to check).
		after func(t *testing.T, e *env)
	}{
		{
			name: "link reused",
			do: func(e *env) (int, string) {
				p := e.link(alice)
				e.get(p, "alice")
				w := e.get(p, "alice")
				return w.Code, w.Body.String()
			},
			wantStatus: http.StatusGone,
			wantText:   "already used or has expired. Ask your client to try the call again",
		},
		{
			name: "link opened by another account",
			do: func(e *env) (int, string) {
				p := e.link(alice)
				w := e.get(p, "bob")
				if again := e.get(p, "alice"); again.Code != http.StatusGone {
					e.t.Errorf("alice after bob: HTTP %d, want the link consumed", again.Code)
				}
				return w.Code, w.Body.String()
			},
			wantStatus: http.StatusForbidden,
			wantText:   "This link belongs to another account",
			after: func(t *testing.T, e *env) {
				if !strings.Contains(e.logs.String(), "linkSub=alice") || !strings.Contains(e.logs.String(), "browserSub=bob") {
					t.Errorf("no audit line naming both subjects:\n%s", e.logs)
				}
			},
		},
		{
			name: "link without a signed-in user",
			do: func(e *env) (int, string) {
				w := e.get(e.link(alice), "")
				return w.Code, w.Body.String()
			},
			wantStatus: http.StatusUnauthorized,
			wantText:   "Sign in",
		},
		{
			name: "malformed link",
			do: func(e *env) (int, string) {
				w := e.get(Prefix+"state:abc", "alice")
				return w.Code, w.Body.String()
			},
			wantStatus: http.StatusNotFound,
			wantText:   "There is no such link",
		},
		{
			name: "callback with an unknown state",
			do: func(e *env) (int, string) {
				w := e.get(CallbackPath+"?state=NOPE&code=code-1-secretish&iss="+url.QueryEscape(asIssuer), "alice")
				return w.Code, w.Body.String()
			},
			wantStatus: http.StatusBadRequest,
			wantText:   "expired or was already used",
		},
		{
			name: "callback without a state",
			do: func(e *env) (int, string) {
				w := e.get(CallbackPath+"?code=code-1-secretish", "alice")
				return w.Code, w.Body.String()
			},
			wantStatus: http.StatusBadRequest,
			wantText:   "expired or was already used",
		},
		{
			name: "callback by another account",
			do: func(e *env) (int, string) {
				cb := e.authorize(e.get(e.link(alice), "alice"))
				w := e.get(cb, "bob")
				if again := e.get(cb, "alice"); again.Code != http.StatusBadRequest {
					e.t.Errorf("alice after bob: HTTP %d, want the state consumed", again.Code)
				}
				return w.Code, w.Body.String()
			},
			wantStatus: http.StatusForbidden,
			wantText:   "This link belongs to another account",
		},
		{
			name: "mix-up: iss of another server",
			do: func(e *env) (int, string) {
				e.as.iss = "http://127.0.0.1:6666"
				w := e.get(e.authorize(e.get(e.link(alice), "alice")), "alice")
				return w.Code, w.Body.String()
			},
			wantStatus: http.StatusBadRequest,
			wantText:   "did not come from this upstream",
		},
		{
			name: "mix-up: iss missing though advertised",
			do: func(e *env) (int, string) {
				e.as.iss = "-"
				w := e.get(e.authorize(e.get(e.link(alice), "alice")), "alice")
				return w.Code, w.Body.String()
			},
			wantStatus: http.StatusBadRequest,
			wantText:   "did not come from this upstream",
		},
		{
			name: "the user declines",
			do: func(e *env) (int, string) {
				e.as.denyWith = "access_denied"
				w := e.get(e.authorize(e.get(e.link(alice), "alice")), "alice")
				return w.Code, w.Body.String()
			},
			wantStatus: http.StatusBadRequest,
			wantText:   "did not grant access. Ask your client to try the call again if you want to connect. (The server said: access_denied.)",
		},
		{
			name: "the authorization server fails at the callback",
			do: func(e *env) (int, string) {
				e.as.denyWith = "temporarily_unavailable"
				w := e.get(e.authorize(e.get(e.link(alice), "alice")), "alice")
				return w.Code, w.Body.String()
			},
			wantStatus: http.StatusBadGateway,
			wantText:   "failed to complete the connection",
		},
		{
			name: "the token endpoint fails and echoes the code",
			do: func(e *env) (int, string) {
				e.as.tokenStatus = http.StatusInternalServerError
				w := e.get(e.authorize(e.get(e.link(alice), "alice")), "alice")
				return w.Code, w.Body.String()
			},
			wantStatus: http.StatusBadGateway,
			wantText:   "failed to complete the connection",
		},
		{
			name: "the code is refused (invalid_grant, echoed)",
			do: func(e *env) (int, string) {
				cb := e.authorize(e.get(e.link(alice), "alice"))
				u, _ := url.Parse(cb)
				q := u.Query()
				q.Set("code", "code-999-secretish")
				w := e.get(CallbackPath+"?"+q.Encode(), "alice")
				return w.Code, w.Body.String()
			},
			wantStatus: http.StatusBadRequest,
			wantText:   "(The server said: invalid_grant.)",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			status, body := tc.do(e)
			if status != tc.wantStatus || !strings.Contains(body, tc.wantText) {
				t.Errorf("HTTP %d, want %d; page:\n%s\nwant it to say %q", status, tc.wantStatus, body, tc.wantText)
			}
			if _, err := e.grant(alice); !errors.Is(err, state.ErrNotFound) {
				t.Errorf("a grant was stored: %v", err)
			}
			if n := len(e.notes.calls()); n != 0 {
				t.Errorf("notified %d times", n)
			}
			if tc.after != nil {
				tc.after(t, e)
			}
		})
	}
}

// TestExpired: a link past its ttl, and a callback past the flow's max age,
// are refused; synctest's clock moves the time.
func TestExpired(t *testing.T) {
	cases := []struct {
		name       string
		do         func(e *env) int
		wantStatus int
	}{
		{"link", func(e *env) int {
			p := e.link(alice)
			time.Sleep(MaxLinkTTL + time.Second) // the bubble's clock: each case runs in synctest.Test below
			return e.get(p, "alice").Code
		}, http.StatusGone},
		{"link just in time", func(e *env) int {
			p := e.link(alice)
			time.Sleep(MaxLinkTTL - time.Second) // the bubble's clock: each case runs in synctest.Test below
			return e.get(p, "alice").Code
		}, http.StatusFound},
		{"callback", func(e *env) int {
			cb := e.authorize(e.get(e.link(alice), "alice"))
			time.Sleep(11 * time.Minute) // the bubble's clock: each case runs in synctest.Test below
			return e.get(cb, "alice").Code
		}, http.StatusBadRequest},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t)
				if got := tc.do(e); got != tc.wantStatus {
					t.Errorf("HTTP %d, want %d", got, tc.wantStatus)
				}
			})
		})
	}
}

// TestMetadataDocument: the Client ID Metadata Document, served when
// configured, public and cacheable; 404 when not.
func TestMetadataDocument(t *testing.T) {
	e := newEnv(t)
	w := e.get(MetadataDocumentPath, "")
	if w.Code != http.StatusOK || w.Header().Get("Content-Type") != "application/json" || !strings.HasPrefix(w.Header().Get("Cache-Control"), "public") {
		t.Fatalf("HTTP %d, headers %v", w.Code, w.Header())
	}
	var doc struct {
		ClientID     string   `json:"client_id"`
		RedirectURIs []string `json:"redirect_uris"`
		AuthMethod   string   `json:"token_endpoint_auth_method"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.ClientID != publicURL+MetadataDocumentPath || len(doc.RedirectURIs) != 1 || doc.RedirectURIs[0] != publicURL+CallbackPath || doc.AuthMethod != "none" {
		t.Errorf("document %+v", doc)
	}

	h, err := NewHandler(HandlerConfig{Store: e.store, Flows: e.flows, Sealer: e.sealer, Notifier: e.notes})
	if err != nil {
		t.Fatal(err)
	}
	rec := httptestGet(h, MetadataDocumentPath)
	if rec != http.StatusNotFound {
		t.Errorf("unconfigured: HTTP %d, want 404", rec)
	}
}

// httptestGet serves GET target with h and returns the status.
func httptestGet(h http.Handler, target string) int {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, target, nil))
	return w.Code
}

// TestDefaultUserIsBrowserSignIn: without a User function, the handler
// reads browser.UserFrom, which is empty outside Require: 401.
func TestDefaultUserIsBrowserSignIn(t *testing.T) {
	e := newEnv(t)
	h, err := NewHandler(HandlerConfig{Store: e.store, Flows: e.flows, Sealer: e.sealer, Notifier: e.notes})
	if err != nil {
		t.Fatal(err)
	}
	for _, target := range []string{e.link(alice), CallbackPath + "?state=x"} {
		if got := httptestGet(h, target); got != http.StatusUnauthorized {
			t.Errorf("%s: HTTP %d, want 401", strings.SplitN(target, "/", 3)[1], got)
		}
	}
}

// brokenFlows knows every upstream and cannot give a flow for any: an
// authorization server that is down.
type brokenFlows struct{}

// Flow implements Flows.
func (brokenFlows) Flow(context.Context, string) (*upstreamauth.Flow, error) {
	return nil, errors.New("the authorization server answered HTTP 503")
}

// TestStart: the connections page's button connects the signed-in user
// through the same flow as a link, with no session to notify; what it
// refuses.
func TestStart(t *testing.T) {
	t.Run("connects", func(t *testing.T) {
		e := newEnv(t)
		w := e.get(StartPath+"github", "alice")
		if w.Code != http.StatusFound || w.Header().Get("Cache-Control") != "no-store" || w.Header().Get("Referrer-Policy") != "no-referrer" {
			t.Fatalf("start: HTTP %d, headers %v", w.Code, w.Header())
		}
		auth, _ := url.Parse(w.Header().Get("Location"))
		if q := auth.Query(); q.Get("client_id") != "switchboard" || q.Get("resource") != mcpResource || q.Get("redirect_uri") != CallbackURL(publicURL) {
			t.Errorf("authorization request %v", q)
		}
		cb := e.authorize(w)
		if w := e.get(cb, "bob"); w.Code != http.StatusForbidden {
			t.Fatalf("bob at alice's callback: HTTP %d, want 403", w.Code)
		}
		// bob spent it: alice starts again.
		w = e.get(e.authorize(e.get(StartPath+"github", "alice")), "alice")
		if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), "Connected to github") {
			t.Fatalf("callback: HTTP %d: %s", w.Code, w.Body)
		}
		if _, err := e.grant(alice); err != nil {
			t.Errorf("alice's grant: %v", err)
		}
		if _, err := e.grant(bob); !errors.Is(err, state.ErrNotFound) {
			t.Errorf("bob's grant: %v, want none", err)
		}
		calls := e.notes.calls()
		if len(calls) != 1 || calls[0].Principal != alice.Key() || calls[0].Upstream != "github" || calls[0].Session != "" || calls[0].ElicitationID != "" {
			t.Errorf("notified %+v, want once for alice's github, without a session", calls)
		}
	})

	cases := []struct {
		name       string
		target     string
		user       string
		edit       func(e *env) // nil: none
		wantStatus int
		wantText   string
	}{
		{"not signed in", StartPath + "github", "", nil, http.StatusUnauthorized, msgSignIn},
		{"an unknown upstream, not echoed", StartPath + url.PathEscape("<b>gitlab</b>"), "alice", nil, http.StatusNotFound, msgNoUpstream},
		{"no links configured", StartPath + "github", "alice", func(e *env) { e.h.links = nil }, http.StatusNotFound, msgNoUpstream},
		{"the authorization server is down", StartPath + "github", "alice", func(e *env) { e.h.flows = brokenFlows{} }, http.StatusBadGateway, "cannot reach the authorization server"},
		{"too many links", StartPath + "github", "alice", func(e *env) {
			e.links.SetLimit(func(context.Context, string) (bool, error) { return false, nil })
		}, http.StatusTooManyRequests, "Wait a minute"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			if tc.edit != nil {
				tc.edit(e)
			}
			w := e.get(tc.target, tc.user)
			if w.Code != tc.wantStatus || !strings.Contains(w.Body.String(), tc.wantText) || strings.Contains(w.Body.String(), "gitlab") {
				t.Errorf("HTTP %d, want %d; page:\n%s", w.Code, tc.wantStatus, w.Body)
			}
			if _, err := e.grant(alice); !errors.Is(err, state.ErrNotFound) {
				t.Errorf("a grant was stored: %v", err)
			}
		})
	}
}

// TestStartURL: StartURL escapes the upstream's name, and the handler reads
// it back.
func TestStartURL(t *testing.T) {
	if got, want := StartURL("https://gw.example/", "git hub/x"), "https://gw.example/connect/start/git%20hub%2Fx"; got != want {
		t.Errorf("StartURL = %q, want %q", got, want)
	}
	e := newEnv(t)
	e.flows["git hub/x"] = e.flows["github"]
	u, _ := url.Parse(StartURL(publicURL, "git hub/x"))
	if w := e.get(u.RequestURI(), "alice"); w.Code != http.StatusFound {
		t.Errorf("start of %q: HTTP %d: %s", "git hub/x", w.Code, w.Body)
	}
}

// TestLinkLimit: Links ask the limit with the principal before each link, refuse with ErrTooManyLinks when it
// says no, refuse too when it fails, and store nothing either way.
func TestLinkLimit(t *testing.T) {
	e := newEnv(t)
	var asked []string
	allow, fail := true, error(nil)
	e.links.SetLimit(func(_ context.Context, principal string) (bool, error) {
		asked = append(asked, principal)
		return allow, fail
	})
	ctx := context.Background()
	if _, err := e.links.New(ctx, alice.Key(), "github", "", ""); err != nil {
		t.Fatalf("a link within the limit: %v", err)
	}
	allow = false
	if _, err := e.links.New(ctx, alice.Key(), "github", "", ""); !errors.Is(err, ErrTooManyLinks) {
		t.Errorf("past the limit: %v, want ErrTooManyLinks", err)
	}
	allow, fail = true, errors.New("the store is down")
	if _, err := e.links.New(ctx, bob.Key(), "github", "", ""); err == nil || errors.Is(err, ErrTooManyLinks) {
		t.Errorf("a failing limit: %v", err)
	}
	if want := []string{alice.Key(), alice.Key(), bob.Key()}; strings.Join(asked, ",") != strings.Join(want, ",") {
		t.Errorf("asked for %v, want %v", asked, want)
	}
}
