package connect

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/switchboard-mcp/switchboard/routing/state"
)

// TestRefreshSingleFlightRedis: two replicas, each with its own Redis client to one server (miniredis), need the
// same refresh at once; the store's lock lets one refresh while the other waits, and both get the rotated token,
// which is the one stored. The AS holds the refresh until the second replica is known to wait.
func TestRefreshSingleFlightRedis(t *testing.T) {
	e := newEnv(t)
	mr := miniredis.RunT(t)
	newStore := func() *state.Redis {
		c := redis.NewClient(&redis.Options{Addr: mr.Addr()})
		s := state.NewRedis(c, "sb:")
		t.Cleanup(func() { s.Shutdown(); _ = c.Close() })
		return s
	}
	e.as.rotate = true
	e.as.refreshGate = make(chan struct{})
	e.as.addRefresh("rt-2-secretish")
	stores := []*state.Redis{newStore(), newStore()}
	sealed, err := sealGrant(e.sealer, alice.Key(), "github", grant{AccessToken: "at-1-secretish", RefreshToken: "rt-2-secretish", Expiry: time.Now().Add(30 * time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := stores[0].PutGrant(ctx, alice.Key(), "github", sealed); err != nil {
		t.Fatal(err)
	}
	waiting := make(chan struct{}, 1)
	newTokens := func(s *state.Redis, wait func(context.Context) error) *Tokens {
		tk, err := NewTokens(TokensConfig{Store: s, Flows: e.flows, Sealer: e.sealer, Wait: wait,
			Logger: slog.New(slog.NewTextHandler(e.logs, nil))})
		if err != nil {
			t.Fatal(err)
		}
		return tk
	}
	first := newTokens(stores[0], func(context.Context) error { t.Error("the first replica waited"); return nil })
	second := newTokens(stores[1], func(ctx context.Context) error {
		select { // the lock is held: tell the test once, then wait as timerWait would
		case waiting <- struct{}{}:
		default:
		}
		timer := time.NewTimer(10 * time.Millisecond)
		defer timer.Stop()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-timer.C:
			return nil
		}
	})
	got := make([]string, 2)
	var wg sync.WaitGroup
	wg.Go(func() {
		tok, err := first.Token(ctx, alice.Key(), "github")
		if err != nil {
			t.Errorf("first replica: %v", err)
			return
		}
		got[0] = tok.AccessToken
	})
	<-e.as.refreshing // the first replica holds the lock and is in the refresh
	wg.Go(func() {
		tok, err := second.Token(ctx, alice.Key(), "github")
		if err != nil {
			t.Errorf("second replica: %v", err)
			return
		}
		got[1] = tok.AccessToken
	})
	<-waiting
	close(e.as.refreshGate)
	wg.Wait()
	if n, _ := e.as.counts(); n != 1 {
		t.Errorf("%d refreshes, want 1", n)
	}
	if got[0] == "" || got[0] == "at-1-secretish" || got[0] != got[1] {
		t.Errorf("replicas got different or stale tokens (equal: %t)", got[0] == got[1])
	}
	b, err := stores[1].GetGrant(ctx, alice.Key(), "github")
	if err != nil {
		t.Fatal(err)
	}
	g, ok := e.tokens.open(alice.Key(), "github", b)
	if !ok || g.AccessToken != got[0] {
		t.Errorf("the stored grant is not the refreshed one")
	}
}
