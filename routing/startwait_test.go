package routing

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"testing/synctest"
	"time"
)

// TestWaitStart (issue 31 item 7): a 2026-07-28 request that reads the catalog during start is held until every
// upstream has had its first try, so that the first tools/list sees every upstream that comes up; server/discover
// and subscriptions/listen are not held; the hold ends with the start-up window, counted from the start, for an
// upstream that never comes up, and with the request's context.
func TestWaitStart(t *testing.T) {
	const window = 10 * time.Second
	pooled := func(r *testRouter) *Session {
		return r.PooledSession(SessionParams{Capabilities: json.RawMessage(`{}`)})
	}
	t.Run("held until every upstream is up", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			start := time.Now()
			r := runStaggered(t, newStaggered(0, time.Second), newStaggered(1, 5*time.Second))
			for _, m := range []string{"server/discover", "subscriptions/listen"} {
				if err := r.WaitStart(r.ctx, m, window); err != nil || time.Since(start) != 0 {
					t.Errorf("%s waited %v (err %v), want no wait", m, time.Since(start), err)
				}
			}
			if err := r.WaitStart(r.ctx, "tools/list", window); err != nil {
				t.Fatal(err)
			}
			if got := time.Since(start); got < 5*time.Second || got >= window || !r.Ready() {
				t.Errorf("tools/list was held %v (ready %v), want until the slower upstream came up at 5s", got, r.Ready())
			}
			if got := toolNames(t, r, pooled(r)); !slices.Equal(got, []string{"u0__t0", "u1__t1"}) {
				t.Errorf("the first list after the hold is %v, want both upstreams", got)
			}
			before := time.Now()
			if err := r.WaitStart(r.ctx, "tools/call", window); err != nil || time.Since(before) != 0 {
				t.Errorf("a request once ready waited %v (err %v)", time.Since(before), err)
			}
		})
	})
	t.Run("bounded by the window from the start", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			start := time.Now()
			r := runStaggered(t, newStaggered(0, time.Second), newStaggered(1, -1)) // u1's dial times out at 30s
			if err := r.WaitStart(r.ctx, "tools/list", window); err != nil {
				t.Fatal(err)
			}
			if got := time.Since(start); got != window {
				t.Errorf("tools/list was held %v, want the window, %v", got, window)
			}
			if r.Ready() {
				t.Fatal("ready before u1's dial ended: the test proves nothing")
			}
			if got := toolNames(t, r, pooled(r)); !slices.Equal(got, []string{"u0__t0"}) {
				t.Errorf("after the window the list is %v, want the upstream that is up", got)
			}
			time.Sleep(2 * time.Second)
			if err := r.WaitStart(r.ctx, "prompts/list", window); err != nil || time.Since(start) != window+2*time.Second {
				t.Errorf("a request after the window waited until %v (err %v), want no wait", time.Since(start), err)
			}
		})
	})
	t.Run("ends with the request", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			r := runStaggered(t, newStaggered(0, -1))
			ctx, cancel := context.WithTimeout(r.ctx, time.Second)
			defer cancel()
			if err := r.WaitStart(ctx, "resources/read", window); !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("WaitStart returned %v, want the request's context error", err)
			}
		})
	})
}
