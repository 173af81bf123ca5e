package connect

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/switchboard-mcp/switchboard/auth/browser"
	"github.com/switchboard-mcp/switchboard/auth/upstreamauth"
	"github.com/switchboard-mcp/switchboard/routing/state"
)

// TestToken: what Token gives for each state of the grant, whether it
// refreshed, and what is stored after. Inside synctest, so "expires in 30s"
// is exact.
func TestToken(t *testing.T) {
	cases := []struct {
		name  string
		setup func(e *env)
		// wantToken is the access token wanted ("" for an error).
		wantToken string
		wantErr   error
		// wantRefreshes is how many refreshes the AS saw.
		wantRefreshes int
		// wantStored is the access token stored after ("" for no grant).
		wantStored string
	}{
		{
			name: "fresh",
			setup: func(e *env) {
				e.putGrant(alice, grant{AccessToken: "at-1-secretish", RefreshToken: "rt-2-secretish", Expiry: time.Now().Add(time.Hour)})
			},
			wantToken:  "at-1-secretish",
			wantStored: "at-1-secretish",
		},
		{
			name:       "no expiry",
			setup:      func(e *env) { e.putGrant(alice, grant{AccessToken: "at-1-secretish"}) },
			wantToken:  "at-1-secretish",
			wantStored: "at-1-secretish",
		},
		{
			name: "near expiry, rotated",
			setup: func(e *env) {
				e.as.rotate = true
				e.as.addRefresh("rt-2-secretish")
				e.as.n = 10
				e.putGrant(alice, grant{AccessToken: "at-1-secretish", RefreshToken: "rt-2-secretish", Expiry: time.Now().Add(30 * time.Second), Scope: "repo"})
			},
			wantToken:     "at-12-secretish",
			wantRefreshes: 1,
			wantStored:    "at-12-secretish",
		},
		{
			name: "near expiry, no refresh token: used while it lasts",
			setup: func(e *env) {
				e.putGrant(alice, grant{AccessToken: "at-1-secretish", Expiry: time.Now().Add(30 * time.Second)})
			},
			wantToken:  "at-1-secretish",
			wantStored: "at-1-secretish",
		},
		{
			name: "expired, no refresh token",
			setup: func(e *env) {
				e.putGrant(alice, grant{AccessToken: "at-1-secretish", Expiry: time.Now().Add(-time.Second)})
			},
			wantErr:    ErrNotConnected,
			wantStored: "at-1-secretish",
		},
		{
			name: "refresh refused: invalid_grant deletes the grant",
			setup: func(e *env) {
				e.putGrant(alice, grant{AccessToken: "at-1-secretish", RefreshToken: "rt-2-secretish", Expiry: time.Now().Add(-time.Second)})
			},
			wantErr:       ErrNotConnected,
			wantRefreshes: 1,
		},
		{
			name: "refresh fails, the token still valid",
			setup: func(e *env) {
				e.as.tokenStatus = http.StatusServiceUnavailable
				e.putGrant(alice, grant{AccessToken: "at-1-secretish", RefreshToken: "rt-2-secretish", Expiry: time.Now().Add(30 * time.Second)})
			},
			wantToken:     "at-1-secretish",
			wantRefreshes: 1,
			wantStored:    "at-1-secretish",
		},
		{
			name:    "no grant",
			setup:   func(*env) {},
			wantErr: ErrNotConnected,
		},
		{
			name: "a grant that does not open (another entry's)",
			setup: func(e *env) {
				sealed, err := sealGrant(e.sealer, bob.Key(), "github", grant{AccessToken: "at-1-secretish"})
				if err != nil {
					e.t.Fatal(err)
				}
				if err := e.store.PutGrant(context.Background(), alice.Key(), "github", sealed); err != nil {
					e.t.Fatal(err)
				}
			},
			wantErr: ErrNotConnected,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t)
				tc.setup(e)
				tok, err := e.tokens.Token(context.Background(), alice.Key(), "github")
				switch {
				case !errIs(err, tc.wantErr):
					t.Fatalf("err %v, want %v", err, tc.wantErr)
				case err != nil:
					var nc *NotConnectedError
					if !errors.As(err, &nc) || nc.Upstream != "github" {
						t.Errorf("err %v, want a *NotConnectedError for github", err)
					}
				case tok.AccessToken != tc.wantToken || tok.RefreshToken != "":
					t.Errorf("token %q (with refresh token: %t), want %q", tok.AccessToken, tok.RefreshToken != "", tc.wantToken)
				}
				if n, _ := e.as.counts(); n != tc.wantRefreshes {
					t.Errorf("%d refreshes, want %d", n, tc.wantRefreshes)
				}
				g, err := e.grant(alice)
				switch {
				case tc.wantStored == "" && !errors.Is(err, state.ErrNotFound) && tc.name != "a grant that does not open (another entry's)":
					t.Errorf("a grant is stored (%v), want none", err)
				case tc.wantStored != "" && (err != nil || g.AccessToken != tc.wantStored):
					t.Errorf("stored %q (%v), want %q", g.AccessToken, err, tc.wantStored)
				}
			})
		})
	}
}

// TestRefreshShortLived: a token is refreshed in the last quarter of its
// lifetime, at most a minute before it expires, so that a server issuing
// tokens for under a minute does not see a refresh before every request.
func TestRefreshShortLived(t *testing.T) {
	cases := []struct {
		name          string
		life, elapsed time.Duration
		wantRefreshes int
	}{
		{"30s token, fresh", 30 * time.Second, 0, 0},
		{"30s token, 22s old", 30 * time.Second, 22 * time.Second, 0},
		{"30s token, 23s old", 30 * time.Second, 23 * time.Second, 1},
		{"2s token, 1s old", 2 * time.Second, time.Second, 0},
		{"2s token, 1.6s old", 2 * time.Second, 1600 * time.Millisecond, 1},
		{"1h token, 58m old", time.Hour, 58 * time.Minute, 0},
		{"1h token, 59m01s old", time.Hour, 59*time.Minute + time.Second, 1},
		{"unknown lifetime, 30s left", 0, 0, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t)
				e.as.addRefresh("rt-2-secretish")
				g := grant{AccessToken: "at-1-secretish", RefreshToken: "rt-2-secretish", Obtained: time.Now(), Expiry: time.Now().Add(tc.life)}
				if tc.life == 0 {
					g.Obtained, g.Expiry = time.Time{}, time.Now().Add(30*time.Second)
				}
				e.putGrant(alice, g)
				time.Sleep(tc.elapsed)
				if _, err := e.tokens.Token(context.Background(), alice.Key(), "github"); err != nil {
					t.Fatal(err)
				}
				if n, _ := e.as.counts(); n != tc.wantRefreshes {
					t.Errorf("%d refreshes, want %d", n, tc.wantRefreshes)
				}
			})
		})
	}
	// The reported case: the server issues 30 s tokens; requests in a
	// burst, and every 5 s after, refresh once each time the token enters
	// its last quarter, not on every request.
	t.Run("30s tokens, a request every 5s", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e := newEnv(t)
			e.as.expiresIn = 30
			e.as.addRefresh("rt-2-secretish")
			e.putGrant(alice, grant{AccessToken: "at-1-secretish", RefreshToken: "rt-2-secretish", Obtained: time.Now(), Expiry: time.Now().Add(30 * time.Second)})
			for range 4 {
				if _, err := e.tokens.Token(context.Background(), alice.Key(), "github"); err != nil {
					t.Fatal(err)
				}
			}
			if n, _ := e.as.counts(); n != 0 {
				t.Fatalf("%d refreshes for a burst on a fresh 30s token, want 0", n)
			}
			for range 12 { // 60 s: the token is refreshed at 25 s and 50 s
				time.Sleep(5 * time.Second)
				if _, err := e.tokens.Token(context.Background(), alice.Key(), "github"); err != nil {
					t.Fatal(err)
				}
			}
			if n, _ := e.as.counts(); n != 2 {
				t.Errorf("%d refreshes in 60s of 30s tokens, want 2", n)
			}
		})
	})
}

// TestRefreshRotatedStored: after a rotating refresh the stored grant holds
// the new refresh token (the old one is dead at the AS) and the scope kept.
func TestRefreshRotatedStored(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		e.as.rotate = true
		e.as.addRefresh("rt-2-secretish")
		e.putGrant(alice, grant{AccessToken: "at-1-secretish", RefreshToken: "rt-2-secretish", Expiry: time.Now().Add(30 * time.Second), Scope: "repo"})
		if _, err := e.tokens.Token(context.Background(), alice.Key(), "github"); err != nil {
			t.Fatal(err)
		}
		g, err := e.grant(alice)
		if err != nil {
			t.Fatal(err)
		}
		if g.RefreshToken == "rt-2-secretish" || !secretish.MatchString(g.RefreshToken) || g.Scope != "repo" || time.Until(g.Expiry) != time.Hour {
			t.Errorf("stored: rotated %t, scope %q, expires in %v", g.RefreshToken != "rt-2-secretish", g.Scope, time.Until(g.Expiry))
		}
	})
}

// TestRefreshSingleFlight: two replicas (two Tokens, one store) need the
// same refresh at once; one refreshes, the other waits for its result, and
// both get the rotated token. The AS holds the refresh until both callers
// are blocked, so the overlap is certain.
func TestRefreshSingleFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		e.as.rotate = true
		e.as.refreshGate = make(chan struct{})
		e.as.addRefresh("rt-2-secretish")
		e.putGrant(alice, grant{AccessToken: "at-1-secretish", RefreshToken: "rt-2-secretish", Expiry: time.Now().Add(30 * time.Second)})
		replicas := []*Tokens{e.tokens, e.newTokens(nil)}
		got := make([]string, len(replicas))
		var wg sync.WaitGroup
		for i, tk := range replicas {
			wg.Go(func() {
				tok, err := tk.Token(context.Background(), alice.Key(), "github")
				if err != nil {
					t.Errorf("replica %d: %v", i, err)
					return
				}
				got[i] = tok.AccessToken
			})
		}
		synctest.Wait() // one in the refresh, the other waiting
		if n, _ := e.as.counts(); n != 1 {
			t.Errorf("%d refreshes in flight, want 1", n)
		}
		close(e.as.refreshGate)
		wg.Wait()
		if n, _ := e.as.counts(); n != 1 {
			t.Errorf("%d refreshes, want 1", n)
		}
		if got[0] == "" || got[0] == "at-1-secretish" || got[0] != got[1] {
			t.Errorf("replicas got different or stale tokens (equal: %t)", got[0] == got[1])
		}
		if g, err := e.grant(alice); err != nil || g.AccessToken != got[0] {
			t.Errorf("stored grant is not the refreshed one (%v)", err)
		}
	})
}

// TestRefreshWaitBounded: a lock held by a replica that never finishes
// (crashed before its lock lapses) makes a caller give up after MaxWaits,
// with the current token while it lasts, else an error; the waits are the
// injected ones.
func TestRefreshWaitBounded(t *testing.T) {
	cases := []struct {
		name    string
		expiry  time.Duration
		wantErr bool
	}{
		{"still valid", 30 * time.Second, false},
		{"expired", -time.Second, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.putGrant(alice, grant{AccessToken: "at-1-secretish", RefreshToken: "rt-2-secretish", Expiry: time.Now().Add(tc.expiry)})
			unlock, ok, err := e.store.TryLock(context.Background(), lockKey(alice.Key(), "github"), time.Hour)
			if err != nil || !ok {
				t.Fatal(ok, err)
			}
			defer unlock()
			waits := 0
			tk, err := NewTokens(TokensConfig{Store: e.store, Flows: e.flows, Sealer: e.sealer, MaxWaits: 3, Logger: e.tokens.log,
				Wait: func(context.Context) error { waits++; return nil }})
			if err != nil {
				t.Fatal(err)
			}
			tok, err := tk.Token(context.Background(), alice.Key(), "github")
			if (err != nil) != tc.wantErr || (err == nil && tok.AccessToken != "at-1-secretish") {
				t.Errorf("Token: %v", err)
			}
			if errors.Is(err, ErrNotConnected) {
				t.Errorf("a busy lock is not a lost grant: %v", err)
			}
			if waits != 3 {
				t.Errorf("%d waits, want 3", waits)
			}
			if n, _ := e.as.counts(); n != 0 {
				t.Errorf("%d refreshes while another replica held the lock", n)
			}
		})
	}
}

// TestDisconnect: the refresh and access tokens are revoked when the AS
// offers revocation, and the grant is deleted either way.
func TestDisconnect(t *testing.T) {
	cases := []struct {
		name        string
		revocation  bool
		grant       *grant
		wantRevoked []string // token_type_hint of each revocation
	}{
		{"with revocation", true, &grant{AccessToken: "at-1-secretish", RefreshToken: "rt-2-secretish", Expiry: time.Now().Add(time.Hour)}, []string{upstreamauth.HintRefreshToken, upstreamauth.HintAccessToken}},
		{"expired access token", true, &grant{AccessToken: "at-1-secretish", RefreshToken: "rt-2-secretish", Expiry: time.Now().Add(-time.Hour)}, []string{upstreamauth.HintRefreshToken}},
		{"without revocation", false, &grant{AccessToken: "at-1-secretish", RefreshToken: "rt-2-secretish"}, nil},
		{"not connected", true, nil, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.flows["github"] = newFlow(t, e.as, tc.revocation)
			e.as.addRefresh("rt-2-secretish")
			if tc.grant != nil {
				e.putGrant(alice, *tc.grant)
			}
			if err := e.tokens.Disconnect(context.Background(), alice.Key(), "github"); err != nil {
				t.Fatal(err)
			}
			_, revoked := e.as.counts()
			if len(revoked) != len(tc.wantRevoked) {
				t.Fatalf("%d revocations, want %d", len(revoked), len(tc.wantRevoked))
			}
			for i, form := range revoked {
				want := "rt-2-secretish"
				if tc.wantRevoked[i] == upstreamauth.HintAccessToken {
					want = "at-1-secretish"
				}
				if form.Get("token_type_hint") != tc.wantRevoked[i] || form.Get("token") != want {
					t.Errorf("revocation %d: hint %q, the right token: %t", i, form.Get("token_type_hint"), form.Get("token") == want)
				}
			}
			if _, err := e.grant(alice); !errors.Is(err, state.ErrNotFound) {
				t.Errorf("grant still stored: %v", err)
			}
			if _, err := e.tokens.Token(context.Background(), alice.Key(), "github"); !errors.Is(err, ErrNotConnected) {
				t.Errorf("Token after Disconnect: %v", err)
			}
		})
	}
}

// TestLinks: what a link is and what NewLinks refuses.
func TestLinks(t *testing.T) {
	e := newEnv(t)
	p := e.link(alice)
	if id := p[len(Prefix):]; !validLinkID(id) || len(id) != 43 {
		t.Errorf("link id of length %d", len(id))
	}
	for _, bad := range []struct {
		url string
		ttl time.Duration
	}{
		{"http://gateway.example", 0},
		{"https://gateway.example?x=1", 0},
		{"https://gateway.example", MaxLinkTTL + time.Second},
		{"gateway.example", 0},
	} {
		if _, err := NewLinks(e.store, bad.url, bad.ttl); err == nil {
			t.Errorf("NewLinks(%q, %v) accepted", bad.url, bad.ttl)
		}
	}
	if _, err := e.links.New(context.Background(), "a\x00b", "github", "", ""); err == nil {
		t.Error("a principal with NUL accepted")
	}
}

// failingStore is a Store whose grant reads fail, as Redis's do when it is
// down.
type failingStore struct{ *state.Memory }

// GetGrant implements Store.
func (failingStore) GetGrant(context.Context, string, string) ([]byte, error) {
	return nil, fmt.Errorf("%w: get grant: connection refused", state.ErrUnavailable)
}

// TestConnected: whether a grant counts as connected, from one store read
// and without a refresh.
func TestConnected(t *testing.T) {
	cases := []struct {
		name    string
		setup   func(e *env) Store // the store to read (nil: e.store)
		want    bool
		wantErr error
	}{
		{"fresh", func(e *env) Store {
			e.putGrant(alice, grant{AccessToken: "at-1-secretish", Expiry: time.Now().Add(time.Hour)})
			return nil
		}, true, nil},
		{"expired, refreshable", func(e *env) Store {
			e.putGrant(alice, grant{AccessToken: "at-1-secretish", RefreshToken: "rt-2-secretish", Expiry: time.Now().Add(-time.Hour)})
			return nil
		}, true, nil},
		{"expiring, not refreshable", func(e *env) Store {
			e.putGrant(alice, grant{AccessToken: "at-1-secretish", Expiry: time.Now().Add(30 * time.Second)})
			return nil
		}, true, nil},
		{"expired, not refreshable", func(e *env) Store {
			e.putGrant(alice, grant{AccessToken: "at-1-secretish", Expiry: time.Now().Add(-time.Second)})
			return nil
		}, false, nil},
		{"no grant", func(*env) Store { return nil }, false, nil},
		{"a grant that does not open", func(e *env) Store {
			sealed, _ := sealGrant(e.sealer, bob.Key(), "github", grant{AccessToken: "at-1-secretish"})
			_ = e.store.PutGrant(context.Background(), alice.Key(), "github", sealed)
			return nil
		}, false, nil},
		{"the store is down", func(e *env) Store { return failingStore{e.store} }, false, state.ErrUnavailable},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t)
				tk := e.tokens
				if s := tc.setup(e); s != nil {
					var err error
					if tk, err = NewTokens(TokensConfig{Store: s, Flows: e.flows, Sealer: e.sealer, Logger: e.tokens.log}); err != nil {
						t.Fatal(err)
					}
				}
				got, err := tk.Connected(context.Background(), alice.Key(), "github")
				if got != tc.want || !errIs(err, tc.wantErr) {
					t.Errorf("Connected = %t, %v; want %t, %v", got, err, tc.want, tc.wantErr)
				}
				if n, _ := e.as.counts(); n != 0 {
					t.Errorf("%d refreshes", n)
				}
			})
		})
	}
}

// TestRefreshRejected: what Refresh gives after the upstream refused a
// token, whether it refreshed, and what is stored after.
func TestRefreshRejected(t *testing.T) {
	cases := []struct {
		name     string
		setup    func(e *env)
		rejected string
		// wantToken is the access token wanted ("" for an error); wantErr
		// what the error is, when there is one that matters.
		wantToken     string
		wantErr       error
		wantRefreshes int
		// wantStored is the access token stored after ("" for no grant).
		wantStored string
	}{
		{
			name: "the stored token differs: someone refreshed already",
			setup: func(e *env) {
				e.putGrant(alice, grant{AccessToken: "at-5-secretish", RefreshToken: "rt-2-secretish", Expiry: time.Now().Add(time.Hour)})
			},
			rejected:   "at-1-secretish",
			wantToken:  "at-5-secretish",
			wantStored: "at-5-secretish",
		},
		{
			name: "the rejected token, refreshable",
			setup: func(e *env) {
				e.as.rotate = true
				e.as.addRefresh("rt-2-secretish")
				e.as.n = 10
				e.putGrant(alice, grant{AccessToken: "at-1-secretish", RefreshToken: "rt-2-secretish", Expiry: time.Now().Add(time.Hour)})
			},
			rejected:      "at-1-secretish",
			wantToken:     "at-12-secretish",
			wantRefreshes: 1,
			wantStored:    "at-12-secretish",
		},
		{
			name: "the rejected token, not refreshable: deleted",
			setup: func(e *env) {
				e.putGrant(alice, grant{AccessToken: "at-1-secretish", Expiry: time.Now().Add(time.Hour)})
			},
			rejected: "at-1-secretish",
			wantErr:  ErrNotConnected,
		},
		{
			name: "the rejected token, refresh refused (invalid_grant): deleted",
			setup: func(e *env) {
				e.putGrant(alice, grant{AccessToken: "at-1-secretish", RefreshToken: "rt-2-secretish", Expiry: time.Now().Add(time.Hour)})
			},
			rejected:      "at-1-secretish",
			wantErr:       ErrNotConnected,
			wantRefreshes: 1,
		},
		{
			name: "the rejected token, the authorization server fails: kept, not returned",
			setup: func(e *env) {
				e.as.tokenStatus = http.StatusServiceUnavailable
				e.putGrant(alice, grant{AccessToken: "at-1-secretish", RefreshToken: "rt-2-secretish", Expiry: time.Now().Add(time.Hour)})
			},
			rejected:      "at-1-secretish",
			wantRefreshes: 1,
			wantStored:    "at-1-secretish",
		},
		{
			name:     "no grant",
			setup:    func(*env) {},
			rejected: "at-1-secretish",
			wantErr:  ErrNotConnected,
		},
		{
			name: "no rejected token",
			setup: func(e *env) {
				e.putGrant(alice, grant{AccessToken: "at-1-secretish", Expiry: time.Now().Add(time.Hour)})
			},
			wantStored: "at-1-secretish",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t)
				tc.setup(e)
				tok, err := e.tokens.Refresh(context.Background(), alice.Key(), "github", tc.rejected)
				switch {
				case tc.wantToken == "" && err == nil:
					t.Fatalf("token %q, want an error", tok.AccessToken)
				case tc.wantToken == "" && tc.wantErr == nil && errors.Is(err, ErrNotConnected):
					t.Errorf("err %v: a failure is not a lost grant", err)
				case tc.wantToken == "" && !errIs(err, tc.wantErr) && tc.wantErr != nil:
					t.Errorf("err %v, want %v", err, tc.wantErr)
				case tc.wantToken != "" && (err != nil || tok.AccessToken != tc.wantToken || tok.RefreshToken != ""):
					t.Errorf("Refresh = %v, %v; want %q without its refresh token", tok, err, tc.wantToken)
				}
				if n, _ := e.as.counts(); n != tc.wantRefreshes {
					t.Errorf("%d refreshes, want %d", n, tc.wantRefreshes)
				}
				g, err := e.grant(alice)
				switch {
				case tc.wantStored == "" && !errors.Is(err, state.ErrNotFound):
					t.Errorf("a grant is stored (%v), want none", err)
				case tc.wantStored != "" && (err != nil || g.AccessToken != tc.wantStored):
					t.Errorf("stored %q (%v), want %q", g.AccessToken, err, tc.wantStored)
				}
			})
		})
	}
}

// TestRefreshRejectedSingleFlight: two replicas get a 401 for the same
// token at once; one refreshes, the other waits and gets its result. The
// AS holds the refresh until both callers are blocked.
func TestRefreshRejectedSingleFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		e.as.rotate = true
		e.as.refreshGate = make(chan struct{})
		e.as.addRefresh("rt-2-secretish")
		e.putGrant(alice, grant{AccessToken: "at-1-secretish", RefreshToken: "rt-2-secretish", Expiry: time.Now().Add(time.Hour)})
		replicas := []*Tokens{e.tokens, e.newTokens(nil)}
		got := make([]string, len(replicas))
		var wg sync.WaitGroup
		for i, tk := range replicas {
			wg.Go(func() {
				tok, err := tk.Refresh(context.Background(), alice.Key(), "github", "at-1-secretish")
				if err != nil {
					t.Errorf("replica %d: %v", i, err)
					return
				}
				got[i] = tok.AccessToken
			})
		}
		synctest.Wait()
		if n, _ := e.as.counts(); n != 1 {
			t.Errorf("%d refreshes in flight, want 1", n)
		}
		close(e.as.refreshGate)
		wg.Wait()
		if n, _ := e.as.counts(); n != 1 {
			t.Errorf("%d refreshes, want 1", n)
		}
		if got[0] == "" || got[0] == "at-1-secretish" || got[0] != got[1] {
			t.Errorf("replicas got different or rejected tokens (equal: %t)", got[0] == got[1])
		}
		if g, err := e.grant(alice); err != nil || g.AccessToken != got[0] {
			t.Errorf("stored grant is not the refreshed one (%v)", err)
		}
	})
}

// TestStatus: what the connections page learns of a grant.
func TestStatus(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		ctx := context.Background()
		if _, err := e.tokens.Status(ctx, alice.Key(), "github"); !errors.Is(err, ErrNotConnected) {
			t.Errorf("Status of no grant: %v, want ErrNotConnected", err)
		}
		obtained, expiry := time.Now().Add(-time.Minute), time.Now().Add(time.Hour)
		for _, tc := range []struct {
			g    grant
			want GrantStatus
		}{
			{grant{AccessToken: "at-1-secretish", RefreshToken: "rt-2-secretish", Scope: "repo read:org", Expiry: expiry, Obtained: obtained},
				GrantStatus{Scopes: []string{"repo", "read:org"}, Expiry: expiry, Obtained: obtained, Refreshable: true}},
			{grant{AccessToken: "at-1-secretish", Obtained: obtained}, GrantStatus{Obtained: obtained}},
		} {
			e.putGrant(alice, tc.g)
			got, err := e.tokens.Status(ctx, alice.Key(), "github")
			if err != nil || !slices.Equal(got.Scopes, tc.want.Scopes) || !got.Expiry.Equal(tc.want.Expiry) ||
				!got.Obtained.Equal(tc.want.Obtained) || got.Refreshable != tc.want.Refreshable {
				t.Errorf("Status = %+v, %v; want %+v", got, err, tc.want)
			}
		}
	})
}

// TestRevokeUpstream: every grant of the upstream is deleted, and revoked
// at the AS when the AS offers revocation.
func TestRevokeUpstream(t *testing.T) {
	carol, dave := browser.User{Issuer: idpIssuer, Subject: "carol"}, browser.User{Issuer: idpIssuer, Subject: "dave"}
	cases := []struct {
		name       string
		revocation bool
		// wantRevoked are the tokens revoked, in any order.
		wantRevoked []string
		wantLog     string
	}{
		{"with revocation", true,
			[]string{"rt-a-secretish", "at-a-secretish", "rt-b-secretish", "at-c-secretish"}, "revoked=3 failed=0 unreadable=1 of=4"},
		{"without revocation", false, nil, "offers no revocation"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.flows["github"] = newFlow(t, e.as, tc.revocation)
			tk, err := NewTokens(TokensConfig{Store: e.store, Flows: e.flows, Sealer: e.sealer, Logger: e.tokens.log})
			if err != nil {
				t.Fatal(err)
			}
			e.putGrant(alice, grant{AccessToken: "at-a-secretish", RefreshToken: "rt-a-secretish", Expiry: time.Now().Add(time.Hour)})
			e.putGrant(bob, grant{AccessToken: "at-b-secretish", RefreshToken: "rt-b-secretish", Expiry: time.Now().Add(-time.Hour)})
			e.putGrant(carol, grant{AccessToken: "at-c-secretish"})
			sealed, _ := sealGrant(e.sealer, alice.Key(), "github", grant{AccessToken: "at-d-secretish"})
			ctx := context.Background()
			if err := e.store.PutGrant(ctx, dave.Key(), "github", sealed); err != nil { // does not open
				t.Fatal(err)
			}
			if err := e.store.PutGrant(ctx, alice.Key(), "linear", []byte("another upstream's")); err != nil {
				t.Fatal(err)
			}
			n, err := tk.RevokeUpstream(ctx, "github")
			if err != nil || n != 4 {
				t.Fatalf("RevokeUpstream = %d, %v; want 4", n, err)
			}
			_, revoked := e.as.counts()
			var got []string
			for _, f := range revoked {
				got = append(got, f.Get("token"))
			}
			slices.Sort(got)
			want := slices.Sorted(slices.Values(tc.wantRevoked))
			if !slices.Equal(got, want) {
				t.Errorf("revoked %d tokens, want %d (the right ones: %t)", len(got), len(want), slices.Equal(got, want))
			}
			for _, u := range []browser.User{alice, bob, carol, dave} {
				if _, err := e.store.GetGrant(ctx, u.Key(), "github"); !errors.Is(err, state.ErrNotFound) {
					t.Errorf("%s's grant still stored: %v", u.Subject, err)
				}
			}
			if b, err := e.store.GetGrant(ctx, alice.Key(), "linear"); err != nil || string(b) != "another upstream's" {
				t.Errorf("another upstream's grant: %q, %v", b, err)
			}
			if !strings.Contains(e.logs.String(), tc.wantLog) {
				t.Errorf("logs do not say %q:\n%s", tc.wantLog, e.logs)
			}
		})
	}
}

// TestRevokeUpstreamBounded: revocations run a few at a time, after the
// grants are already deleted.
func TestRevokeUpstreamBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		e.as.revokeGate = make(chan struct{})
		const grants = 3 * revokeConcurrency
		var principals []string
		for i := range grants {
			u := browser.User{Issuer: idpIssuer, Subject: fmt.Sprintf("user%d", i)}
			principals = append(principals, u.Key())
			e.putGrant(u, grant{AccessToken: fmt.Sprintf("at-%d-secretish", i), RefreshToken: fmt.Sprintf("rt-%d-secretish", i)})
		}
		tk, err := NewTokens(TokensConfig{Store: e.store, Flows: e.flows, Sealer: e.sealer, Logger: e.tokens.log})
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan int)
		go func() {
			n, err := tk.RevokeUpstream(context.Background(), "github")
			if err != nil {
				t.Error(err)
			}
			done <- n
		}()
		synctest.Wait()
		for _, p := range principals {
			if _, err := e.store.GetGrant(context.Background(), p, "github"); !errors.Is(err, state.ErrNotFound) {
				t.Fatalf("a grant is still stored while revocations run: %v", err)
			}
		}
		close(e.as.revokeGate)
		if n := <-done; n != grants {
			t.Errorf("RevokeUpstream = %d, want %d", n, grants)
		}
		e.as.mu.Lock()
		most, total := e.as.maxRevoking, len(e.as.revoked)
		e.as.mu.Unlock()
		if most != revokeConcurrency || total != 2*grants {
			t.Errorf("%d revocations at most in flight, %d in all; want %d, %d", most, total, revokeConcurrency, 2*grants)
		}
	})
}

// TestRevokeJWTAccessToken: a server that cannot revoke its (JWT) access tokens answers unsupported_token_type;
// the disconnect revoked the refresh token, and nothing is reported as failed.
func TestRevokeJWTAccessToken(t *testing.T) {
	e := newEnv(t)
	e.as.jwtAccess = true
	e.flows["github"] = newFlow(t, e.as, true)
	e.as.addRefresh("rt-2-secretish")
	e.putGrant(alice, grant{AccessToken: "at-1-secretish", RefreshToken: "rt-2-secretish", Expiry: time.Now().Add(time.Hour)})
	if err := e.tokens.Disconnect(context.Background(), alice.Key(), "github"); err != nil {
		t.Fatal(err)
	}
	if _, revoked := e.as.counts(); len(revoked) != 1 || revoked[0].Get("token_type_hint") != upstreamauth.HintRefreshToken {
		t.Errorf("revoked %v, want the refresh token", revoked)
	}
	if strings.Contains(e.logs.String(), "level=WARN") {
		t.Errorf("a JWT access token the server cannot revoke was reported:\n%s", e.logs)
	}
}
