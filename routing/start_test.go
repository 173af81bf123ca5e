package routing

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/switchboard-mcp/switchboard/upstream"
	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
)

// staggeredUpstream is a fake upstream that connects after a delay on synctest's clock (never, when the delay is
// negative: its dials time out), and lists one tool of its own until setTools changes its list.
type staggeredUpstream struct {
	*fakeTransport
	delay time.Duration
	tools string // guarded by fakeTransport.mu
}

func newStaggered(i int, delay time.Duration) *staggeredUpstream {
	u := &staggeredUpstream{delay: delay, tools: fmt.Sprintf(`[{"name":"t%d","inputSchema":{"type":"object"}}]`, i)}
	u.fakeTransport = newFakeTransport(func(c *fakeConn, m jsonrpc.Message) { defaultAnswer(c, m, fakeInitCaps, u.tools) })
	return u
}

func (u *staggeredUpstream) Connect(ctx context.Context) (upstream.Connection, error) {
	wait := make(<-chan time.Time) // never
	if u.delay >= 0 {
		wait = time.After(u.delay)
	}
	select {
	case <-wait:
		return u.fakeTransport.Connect(ctx)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// setTools changes the upstream's list and announces it.
func (u *staggeredUpstream) setTools(tools string) {
	u.mu.Lock()
	u.tools = tools
	u.mu.Unlock()
	u.inject([]byte(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`))
}

// runStaggered runs a router over the upstreams, named u0, u1, … in order, without waiting for it to be ready,
// and stops it at the end of the test. Its ctx outlasts the dial timeout on synctest's clock.
func runStaggered(t *testing.T, ups ...*staggeredUpstream) *testRouter {
	t.Helper()
	cfgs := make([]UpstreamConfig, len(ups))
	for i, u := range ups {
		cfgs[i] = UpstreamConfig{
			Name: fmt.Sprintf("u%d", i), Prefix: fmt.Sprintf("u%d__", i), Mode: Shared, Transport: u, Kind: "http",
			Backoff: upstream.Backoff{Min: time.Millisecond, Max: 2 * time.Millisecond}, Fingerprint: fmt.Sprintf("u%d", i),
		}
	}
	r, err := New(Options{Logger: discardLogger(), Version: "test", CursorSecret: []byte("start-test-key")}, cfgs)
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); r.Run(runCtx) }()
	safety, cancelSafety := context.WithTimeout(context.Background(), time.Hour)
	t.Cleanup(func() {
		stop()
		<-done
		cancelSafety()
	})
	return &testRouter{Router: r, ctx: safety}
}

// TestCatalogMergedOnceAtStart (issue 20): upstreams that come up one after another during start are merged into
// the catalog once, when the last one has listed, not once each (each merge over all the upstreams so far); a
// change after start is merged at once, and a session hears it.
func TestCatalogMergedOnceAtStart(t *testing.T) {
	for _, n := range []int{1, 10, 100} {
		t.Run(fmt.Sprintf("%d upstreams", n), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ups := make([]*staggeredUpstream, n)
				for i := range ups {
					ups[i] = newStaggered(i, time.Duration(i)*100*time.Millisecond) // within the dial timeout
				}
				r := runStaggered(t, ups...)
				if err := r.WaitReady(r.ctx); err != nil {
					t.Fatalf("not ready: %v; status %+v", err, r.Status())
				}
				if got := r.merges.Load(); got != 1 {
					t.Errorf("the catalog was merged %d times during start, want once", got)
				}
				s := r.session(`{}`)
				if got := names(listAll(t, r, s)); len(got) != n {
					t.Fatalf("the first catalog lists %d tools, want %d: %v", len(got), n, got)
				}

				ups[0].setTools(`[{"name":"t0","inputSchema":{"type":"object"}},{"name":"extra","inputSchema":{"type":"object"}}]`)
				settle()
				if got := r.merges.Load(); got != 2 {
					t.Errorf("after a change after start: %d merges, want 2", got)
				}
				if !heardNow(s.Standalone(), "notifications/tools/list_changed") {
					t.Error("the session did not hear of a change after start")
				}
				if got := names(listAll(t, r, s)); !slices.Contains(got, "u0__extra") || len(got) != n+1 {
					t.Errorf("after the change the session sees %v", got)
				}
			})
		})
	}
}

// TestCatalogBeforeReady: a client that lists before the router is ready (its initialize waited in vain for
// readiness) sees the upstreams that are up, as it did when every upstream's lists were merged as they came;
// a legacy session hears of one that comes up afterwards, and of nothing it already saw; a pooled session hears
// nothing and sees it at its next list. An upstream that never comes up makes the router ready when its dial
// times out, as before.
func TestCatalogBeforeReady(t *testing.T) {
	for _, c := range []struct {
		name    string
		session func(*testRouter) *Session
		hears   bool  // that the third upstream came up
		merges  int64 // until ready: one per list read or change a session could see, none for the rest
	}{
		{"legacy", func(r *testRouter) *Session { return r.session(`{}`) }, true, 2},
		{"pooled", func(r *testRouter) *Session {
			return r.PooledSession(SessionParams{Capabilities: json.RawMessage(`{}`)})
		}, false, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := runStaggered(t, newStaggered(0, time.Second), newStaggered(1, 2*time.Second),
					newStaggered(2, 20*time.Second), newStaggered(3, -1))
				time.Sleep(10 * time.Second)
				synctest.Wait()
				if r.Ready() || r.merges.Load() != 0 {
					t.Fatalf("at 10s: ready %v, %d merges; want not ready and none", r.Ready(), r.merges.Load())
				}
				s := c.session(r)
				if got := toolNames(t, r, s); !slices.Equal(got, []string{"u0__t0", "u1__t1"}) {
					t.Errorf("at 10s the session sees %v, want the two upstreams that are up", got)
				}
				if heardNow(s.Standalone(), "notifications/tools/list_changed") {
					t.Error("the session heard list_changed of a catalog it never saw")
				}

				time.Sleep(15 * time.Second) // the third upstream is up, the fourth still dialling
				synctest.Wait()
				if r.Ready() {
					t.Fatal("ready at 25s, before the fourth upstream's first dial ended")
				}
				if got := heardNow(s.Standalone(), "notifications/tools/list_changed"); got != c.hears {
					t.Errorf("heard that the third upstream came up: %v, want %v", got, c.hears)
				}
				if got := toolNames(t, r, s); !slices.Equal(got, []string{"u0__t0", "u1__t1", "u2__t2"}) {
					t.Errorf("at 25s the session sees %v", got)
				}

				time.Sleep(10 * time.Second) // the fourth's dial timed out
				synctest.Wait()
				if !r.Ready() {
					t.Fatalf("not ready at 35s; status %+v", r.Status())
				}
				if got := r.merges.Load(); got != c.merges {
					t.Errorf("%d merges until ready, want %d", got, c.merges)
				}
				if heardNow(s.Standalone(), "notifications/tools/list_changed") {
					t.Error("the session heard list_changed at ready, though nothing it sees changed")
				}
			})
		})
	}
}

// heldPins is a pin store whose first read of every pin waits until released, holding the start's merge (which
// reads them under buildMu) while the test reads the catalog.
type heldPins struct {
	reading chan struct{} // closed when the first read starts
	release chan struct{}
	once    sync.Once
}

func (p *heldPins) PinIfAbsent(_ context.Context, _, hash string) (string, error) { return hash, nil }
func (p *heldPins) SetPin(context.Context, string, string) error                  { return nil }
func (p *heldPins) Pins(ctx context.Context) (map[string]string, error) {
	p.once.Do(func() { close(p.reading) })
	select {
	case <-p.release:
		return map[string]string{}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// TestCatalogDuringStartMerge: the start's one merge runs while the router still counts as starting, so that a
// client that reads the catalog meanwhile catches up (catchUp waits for the merge on buildMu) instead of being
// answered from the catalog of before the start, which is empty; once it is done, a list sees the upstream.
func TestCatalogDuringStartMerge(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &heldPins{reading: make(chan struct{}), release: make(chan struct{})}
		u := newStaggered(0, time.Second)
		r, err := New(Options{Logger: discardLogger(), Version: "test", CursorSecret: []byte("start-test-key"), Pinning: &Pinning{Store: store}},
			[]UpstreamConfig{{Name: "u0", Prefix: "u0__", Mode: Shared, Transport: u, Kind: "http",
				Backoff: upstream.Backoff{Min: time.Millisecond, Max: 2 * time.Millisecond}}})
		if err != nil {
			t.Fatal(err)
		}
		runCtx, stop := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); r.Run(runCtx) }()
		defer func() { stop(); <-done }()

		<-store.reading // the start's merge holds buildMu, reading the pins
		if !r.starting.Load() {
			t.Error("the start's merge runs after the router stopped counting as starting: a list meanwhile would not wait for it")
		}
		close(store.release)
		tr := &testRouter{Router: r, ctx: runCtx}
		if err := tr.WaitReady(runCtx); err != nil {
			t.Fatal(err)
		}
		if r.starting.Load() {
			t.Error("still starting once ready")
		}
		s := tr.PooledSession(SessionParams{Capabilities: json.RawMessage(`{}`)})
		if got := toolNames(t, tr, s); !slices.Equal(got, []string{"u0__t0"}) {
			t.Errorf("after the start's merge a list sees %v", got)
		}
	})
}

// TestReloadDuringStartReady: a reload during start that removes the only upstream yet to have its first try
// makes the router ready (and merges the catalog), instead of leaving it starting until something else happens.
func TestReloadDuringStartReady(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		up, never := newStaggered(0, time.Second), newStaggered(1, -1)
		r := runStaggered(t, up, never)
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if r.Ready() {
			t.Fatal("ready while an upstream is still dialling")
		}
		cfgs := []UpstreamConfig{{Name: "u0", Prefix: "u0__", Mode: Shared, Transport: up, Kind: "http",
			Backoff: upstream.Backoff{Min: time.Millisecond, Max: 2 * time.Millisecond}, Fingerprint: "u0"}} // kept
		if _, err := r.Reconfigure(cfgs); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if !r.Ready() || r.starting.Load() {
			t.Fatalf("after the reload removed the upstream still dialling: ready %v, starting %v", r.Ready(), r.starting.Load())
		}
		s := r.PooledSession(SessionParams{Capabilities: json.RawMessage(`{}`)})
		if got := toolNames(t, r, s); !slices.Equal(got, []string{"u0__t0"}) {
			t.Errorf("after the reload a list sees %v", got)
		}
	})
}
