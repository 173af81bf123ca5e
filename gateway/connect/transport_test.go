package connect

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
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
