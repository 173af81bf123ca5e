package connect

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-mcp/switchboard/auth/upstreamauth"
)

// TestRetryOn401: a person's request refused with 401 is sent again, once, with the refreshed token and the same
// body; a request with no person, or refused again, is not retried; a grant that cannot be refreshed gives the 401
// back.
func TestRetryOn401(t *testing.T) {
	e := newEnv(t)
	e.as.rotate = true
	e.as.addRefresh("rt-2-secretish")
	e.putGrant(alice, grant{AccessToken: "at-1-secretish", RefreshToken: "rt-2-secretish", Expiry: time.Now().Add(time.Hour)})
	e.putGrant(bob, grant{AccessToken: "at-b-secretish", Expiry: time.Now().Add(time.Hour)})
	var mu sync.Mutex
	var seen []string // token and body of each request the upstream got
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		mu.Lock()
		seen = append(seen, tok+" "+string(b))
		mu.Unlock()
		if strings.HasPrefix(tok, "at-1") || strings.HasPrefix(tok, "at-b") || r.Header.Get("X-Always") != "" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(up.Close)
	type who struct{}
	client := &http.Client{Transport: &RetryOn401{
		Base: http.DefaultTransport, Tokens: e.tokens, Upstream: "github", Logger: e.tokens.log,
		Principal: func(ctx context.Context) string { s, _ := ctx.Value(who{}).(string); return s },
	}}
	do := func(principal, token string, always bool) int {
		t.Helper()
		seen = nil
		ctx := context.WithValue(context.Background(), who{}, principal)
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, up.URL, strings.NewReader(`{"m":1}`))
		req.Header.Set("Authorization", "Bearer "+token)
		if always {
			req.Header.Set("X-Always", "1")
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := do(alice.Key(), "at-1-secretish", false); code != 200 || len(seen) != 2 || strings.HasPrefix(seen[1], "at-1") || !strings.HasSuffix(seen[1], `{"m":1}`) {
		t.Errorf("alice's refused token: HTTP %d, upstream saw %d requests (second with the same body: %t)", code, len(seen), len(seen) == 2 && strings.HasSuffix(seen[1], `{"m":1}`))
	}
	if g, err := e.grant(alice); err != nil || g.AccessToken == "at-1-secretish" {
		t.Errorf("alice's grant was not refreshed (%v)", err)
	}
	if code := do("", "at-1-secretish", false); code != 401 || len(seen) != 1 {
		t.Errorf("no person: HTTP %d after %d requests, want one 401", code, len(seen))
	}
	if code := do(bob.Key(), "at-b-secretish", false); code != 401 || len(seen) != 1 {
		t.Errorf("bob's grant cannot be refreshed: HTTP %d after %d requests, want one 401", code, len(seen))
	}
	if _, err := e.grant(bob); err == nil {
		t.Error("bob's refused grant that cannot be refreshed is still stored")
	}
	g, _ := e.grant(alice)
	if code := do(alice.Key(), g.AccessToken, true); code != 401 || len(seen) != 2 {
		t.Errorf("refused again: HTTP %d after %d requests, want 401 after two", code, len(seen))
	}
}

// TestStepUp (SEP-2350): a person's request refused with 403 insufficient_scope is not retried, and marks the
// grant: it is no longer used (Connected false, Token ErrNotConnected), the next connection asks for the granted
// and the required scopes together, and the grant that answers it carries the count, so that an upstream that
// keeps refusing is asked for at most maxStepUps step-ups in a row. A 403 of another kind marks nothing.
func TestStepUp(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	var requests int
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests++
		if r.Header.Get("X-Plain") != "" {
			w.WriteHeader(http.StatusForbidden)
			return
		}
		w.Header().Set("WWW-Authenticate", `Bearer error="insufficient_scope", scope="repo admin", resource_metadata="https://x/.well-known/oauth-protected-resource"`)
		w.WriteHeader(http.StatusForbidden)
	}))
	t.Cleanup(up.Close)
	client := &http.Client{Transport: &RetryOn401{
		Base: http.DefaultTransport, Tokens: e.tokens, Upstream: "github", Logger: e.tokens.log,
		Principal: func(context.Context) string { return alice.Key() },
	}}
	do := func(token string, plain bool) int {
		t.Helper()
		requests = 0
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, up.URL, strings.NewReader(`{}`))
		req.Header.Set("Authorization", "Bearer "+token)
		if plain {
			req.Header.Set("X-Plain", "1")
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	e.putGrant(alice, grant{AccessToken: "at-1-secretish", Scope: "repo", Expiry: time.Now().Add(time.Hour)})
	if code := do("at-1-secretish", true); code != 403 {
		t.Fatalf("plain 403: HTTP %d", code)
	}
	if ok, _ := e.tokens.Connected(ctx, alice.Key(), "github"); !ok {
		t.Fatal("a 403 without insufficient_scope marked the grant")
	}
	if code := do("at-1-secretish", false); code != 403 || requests != 1 {
		t.Fatalf("insufficient_scope: HTTP %d after %d requests, want one 403", code, requests)
	}
	if ok, _ := e.tokens.Connected(ctx, alice.Key(), "github"); ok {
		t.Error("a grant marked for a step-up is still connected")
	}
	if _, err := e.tokens.Token(ctx, alice.Key(), "github"); !errIs(err, ErrNotConnected) {
		t.Errorf("Token of a grant marked for a step-up: %v, want ErrNotConnected", err)
	}
	for attempt := 1; ; attempt++ {
		w := e.get(e.link(alice), "alice")
		auth, _ := url.Parse(w.Header().Get("Location"))
		if got := auth.Query().Get("scope"); got != "repo admin" {
			t.Errorf("step-up %d: the authorization asks for scope %q, want the granted and the required: \"repo admin\"", attempt, got)
		}
		if w := e.get(e.authorize(w), "alice"); w.Code != http.StatusOK {
			t.Fatalf("step-up %d: callback HTTP %d", attempt, w.Code)
		}
		g, err := e.grant(alice)
		if err != nil || len(g.StepUp) != 0 || g.StepUps != attempt {
			t.Fatalf("step-up %d: the new grant %v, step-up %v, count %d", attempt, err, g.StepUp, g.StepUps)
		}
		// The fake AS grants "repo" only: the upstream refuses again.
		do(g.AccessToken, false)
		if ok, _ := e.tokens.Connected(ctx, alice.Key(), "github"); ok {
			if attempt != maxStepUps {
				t.Fatalf("the retry limit came after %d step-ups, want %d", attempt, maxStepUps)
			}
			break
		}
		if attempt >= maxStepUps {
			t.Fatalf("step-up %d: the person is asked again past the limit", attempt+1)
		}
	}
	// The scopes granted already: asking again cannot help.
	e.putGrant(alice, grant{AccessToken: "at-2-secretish", Scope: "repo admin", Expiry: time.Now().Add(time.Hour)})
	if ok, err := e.tokens.StepUp(ctx, alice.Key(), "github", "at-2-secretish", []string{"admin"}); ok || err != nil {
		t.Errorf("StepUp for scopes already granted: %t, %v", ok, err)
	}
	// Another token than the stored one was refused: a newer grant is not marked.
	if ok, err := e.tokens.StepUp(ctx, alice.Key(), "github", "at-old-secretish", []string{"x"}); ok || err != nil {
		t.Errorf("StepUp for a token no longer stored: %t, %v", ok, err)
	}
}

// movesFunc is a ServerMoves over a function.
type movesFunc func(upstream string, ch upstreamauth.Challenge) bool

func (f movesFunc) Moved(_ context.Context, upstream string, ch upstreamauth.Challenge) bool {
	return f(upstream, ch)
}

// TestRetryOn401AsksMoves: a person's 401 asks whether the authorization server moved, with the challenge, before
// the refresh (which then finds the new server's flow); a request without a person does not.
func TestRetryOn401AsksMoves(t *testing.T) {
	e := newEnv(t)
	e.putGrant(alice, grant{AccessToken: "at-1-secretish", Expiry: time.Now().Add(time.Hour)})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="https://up.example/.well-known/oauth-protected-resource"`)
		w.WriteHeader(http.StatusUnauthorized)
	}))
	t.Cleanup(up.Close)
	var asked []string
	rt := &RetryOn401{
		Base: http.DefaultTransport, Tokens: e.tokens, Upstream: "github", Logger: e.tokens.log,
		Principal: func(ctx context.Context) string { s, _ := ctx.Value(principalKey{}).(string); return s },
		Moves: movesFunc(func(upstream string, ch upstreamauth.Challenge) bool {
			asked = append(asked, upstream+" "+ch.ResourceMetadata)
			return false
		}),
	}
	for _, p := range []string{"", alice.Key()} {
		req, _ := http.NewRequestWithContext(context.WithValue(context.Background(), principalKey{}, p), http.MethodGet, up.URL, nil)
		req.Header.Set("Authorization", "Bearer at-1-secretish")
		resp, err := (&http.Client{Transport: rt}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if len(asked) != 1 || asked[0] != "github https://up.example/.well-known/oauth-protected-resource" {
		t.Errorf("Moved asked %q, want once, for alice's 401, with the challenge", asked)
	}
}

type principalKey struct{}

// TestRetryOn401DPoP: a refused DPoP-bound token (RFC 9449 §7.1) is refreshed and the request sent again, like a
// Bearer one, with the scheme of the token the refresh returned; a Basic credential is not the person's token.
func TestRetryOn401DPoP(t *testing.T) {
	for _, tc := range []struct {
		name, scheme string
		wantRetry    bool
	}{
		{name: "DPoP", scheme: "DPoP", wantRetry: true},
		{name: "Bearer", scheme: "Bearer", wantRetry: true},
		{name: "Basic", scheme: "Basic"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.as.rotate = true
			e.as.addRefresh("rt-2-secretish")
			e.putGrant(alice, grant{AccessToken: "at-1-secretish", TokenType: tc.scheme, RefreshToken: "rt-2-secretish", Expiry: time.Now().Add(time.Hour)})
			var mu sync.Mutex
			var seen []string
			up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				seen = append(seen, r.Header.Get("Authorization"))
				mu.Unlock()
				if strings.HasSuffix(r.Header.Get("Authorization"), "at-1-secretish") {
					w.WriteHeader(http.StatusUnauthorized)
				}
			}))
			t.Cleanup(up.Close)
			client := &http.Client{Transport: &RetryOn401{
				Base: http.DefaultTransport, Tokens: e.tokens, Upstream: "github", Logger: e.tokens.log,
				Principal: func(context.Context) string { return alice.Key() },
			}}
			req, _ := http.NewRequest(http.MethodPost, up.URL, strings.NewReader(`{}`))
			req.Header.Set("Authorization", tc.scheme+" at-1-secretish")
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			mu.Lock()
			defer mu.Unlock()
			if got := len(seen) == 2; got != tc.wantRetry {
				t.Fatalf("upstream saw %q; want a retry: %t", seen, tc.wantRetry)
			}
			if tc.wantRetry && (resp.StatusCode != 200 || !strings.HasPrefix(seen[1], "Bearer at-")) {
				t.Errorf("retry: HTTP %d with %q; want 200 with the refreshed Bearer token", resp.StatusCode, seen[1])
			}
		})
	}
}
