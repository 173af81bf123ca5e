package state

import (
	"context"
	"errors"
	"maps"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/alicebob/miniredis/v2/server"
	"github.com/redis/go-redis/v9"
)

// TestMain quiets go-redis's own log, which reports every failed dial of the tests that stop Redis.
func TestMain(m *testing.M) {
	redis.SetLogger(quietLogger{})
	os.Exit(m.Run())
}

type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

// newClient makes a client that fails fast when Redis is down, as the gateway's should.
func newClient(t *testing.T, addr string) redis.UniversalClient { return newNamedClient(t, addr, "") }

// newNamedClient is newClient whose connections carry name (CLIENT SETNAME), to find them in CLIENT LIST.
func newNamedClient(t *testing.T, addr, name string) redis.UniversalClient {
	c := redis.NewUniversalClient(&redis.UniversalOptions{
		Addrs:                 []string{addr},
		ClientName:            name,
		DialTimeout:           500 * time.Millisecond,
		ReadTimeout:           time.Second,
		WriteTimeout:          time.Second,
		MaxRetries:            1,
		DialerRetries:         1,
		ContextTimeoutEnabled: true,
	})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// eventually polls cond until it holds, for at most d. It is for conditions of another process (a server coming
// back, a client blocked in it) that nothing signals.
func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", d, what)
		}
		wallSleep(10 * time.Millisecond)
	}
}

// wallSleep waits on the real clock, the package's one wall-clock sleep: a real redis-server expires keys on its
// own clock, which no synctest bubble moves, and eventually waits for another process.
func wallSleep(d time.Duration) { time.Sleep(d) }

// newMiniredisHarness runs the store against miniredis, whose clock (TIME, stream ids) is pinned and moved,
// together with its TTLs, by advance.
//
// awaitTail waits for miniredis to be handed the Tail's XREAD (a hook run before each command). miniredis shows
// no "blocked" state, so there remains a window between the hook and the XREAD parking itself in which an
// Append from the test could come first; it is a few instructions against the Append's round trip, and when it
// happens the Tail finds the event at once: the test still passes, it just did not test the wake-up that run.
func newMiniredisHarness(t *testing.T, opts ...Option) *harness {
	mr := miniredis.RunT(t)
	var mu sync.Mutex
	var xread chan struct{} // closed at the next XREAD; under mu
	mr.Server().SetPreHook(func(_ *server.Peer, cmd string, _ ...string) bool {
		if cmd == "XREAD" {
			mu.Lock()
			if xread != nil {
				close(xread)
				xread = nil
			}
			mu.Unlock()
		}
		return false // and run it
	})
	now := time.Now()
	mr.SetTime(now)
	const ttl = time.Minute
	newRedis := func(t *testing.T, opts ...Option) *Redis {
		r := NewRedis(newClient(t, mr.Addr()), "", append([]Option{WithSessionTTL(ttl), WithEventLog(0, ttl)}, opts...)...)
		t.Cleanup(r.Shutdown)
		return r
	}
	return &harness{
		Store:  newRedis(t, opts...),
		ttl:    ttl,
		second: func(t *testing.T, opts ...Option) Store { return newRedis(t, opts...) },
		shared: true,
		advance: func(d time.Duration) {
			mu.Lock()
			defer mu.Unlock()
			now = now.Add(d)
			mr.SetTime(now)
			mr.FastForward(d)
		},
		awaitTail: func(t *testing.T) func() {
			ch := make(chan struct{})
			mu.Lock()
			xread = ch
			mu.Unlock()
			return func() {
				t.Helper()
				select {
				case <-ch:
				case <-time.After(5 * time.Second):
					t.Fatal("no XREAD reached miniredis within 5s")
				}
			}
		},
	}
}

func TestRedisMiniredis(t *testing.T) {
	t.Parallel()
	runSuite(t, newMiniredisHarness, false)
}

// TestRedisKeys checks the key layout the package documentation promises, and the prefix.
func TestRedisKeys(t *testing.T) {
	t.Parallel()
	mr := miniredis.RunT(t)
	ctx := t.Context()
	for _, tc := range []struct{ prefix, want string }{{"", "switchboard:"}, {"tenant-a:", "tenant-a:"}} {
		r := NewRedis(newClient(t, mr.Addr()), tc.prefix)
		if err := r.Create(ctx, SessionRecord{ID: "abc"}); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Append(ctx, "abc", 2, []byte("x")); err != nil {
			t.Fatal(err)
		}
		if _, _, err := r.Allow(ctx, "alice", 1, 1); err != nil {
			t.Fatal(err)
		}
		if _, _, err := r.Acquire(ctx, "alice", 1, time.Minute); err != nil {
			t.Fatal(err)
		}
		for _, key := range []string{"session:{abc}", "events:{abc}:2", "rate:{alice}", "lease:{alice}"} {
			if !mr.Exists(tc.want + key) {
				t.Errorf("prefix %q: no key %s%s; keys: %v", tc.prefix, tc.want, key, mr.Keys())
			}
			if ttl := mr.TTL(tc.want + key); ttl <= 0 {
				t.Errorf("key %s%s has no TTL", tc.want, key)
			}
		}
		// Pins are one hash, with no expiry.
		if _, err := r.PinIfAbsent(ctx, "up\x00tool\x00t", "h"); err != nil {
			t.Fatal(err)
		}
		if !mr.Exists(tc.want + "{pins}") {
			t.Errorf("prefix %q: no key %s{pins}; keys: %v", tc.prefix, tc.want, mr.Keys())
		}
		if ttl := mr.TTL(tc.want + "{pins}"); ttl != 0 {
			t.Errorf("key %s{pins} has a TTL of %v, want none", tc.want, ttl)
		}
		if v := mr.HGet(tc.want+"{pins}", "up\x00tool\x00t"); v != "h" {
			t.Errorf("field of the pin in %s{pins} = %q, want %q", tc.want, v, "h")
		}
		r.Shutdown()
	}
	if ttl := mr.TTL("switchboard:session:{abc}"); ttl != DefaultSessionTTL {
		t.Errorf("session TTL %v, want %v", ttl, DefaultSessionTTL)
	}
	for _, k := range mr.Keys() {
		if !strings.HasPrefix(k, "switchboard:") && !strings.HasPrefix(k, "tenant-a:") {
			t.Errorf("key %q outside the prefixes", k)
		}
	}
}

// TestRedisScriptReload checks the EVAL fallback when the server lost its scripts (a restart, a failover).
func TestRedisScriptReload(t *testing.T) {
	t.Parallel()
	mr := miniredis.RunT(t)
	ctx := t.Context()
	c := newClient(t, mr.Addr())
	r := NewRedis(c, "")
	if ok, _, err := r.Allow(ctx, "k", 10, 5); err != nil || !ok {
		t.Fatalf("Allow: %v, %v", ok, err)
	}
	if err := c.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if ok, _, err := r.Allow(ctx, "k", 10, 5); err != nil || !ok {
		t.Fatalf("Allow after SCRIPT FLUSH: %v, %v", ok, err)
	}
	if err := r.Create(ctx, SessionRecord{ID: "s"}); err != nil {
		t.Fatalf("Create after SCRIPT FLUSH: %v", err)
	}
	if got, err := r.PinIfAbsent(ctx, "k", "h"); err != nil || got != "h" {
		t.Fatalf("PinIfAbsent after SCRIPT FLUSH: %q, %v", got, err)
	}
	if err := c.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if err := r.SetPin(ctx, "k", "h2"); err != nil {
		t.Fatalf("SetPin after SCRIPT FLUSH: %v", err)
	}
}

// checkUnavailable runs every operation against a store whose Redis is down: each must fail, quickly, with an
// error wrapping ErrUnavailable.
func checkUnavailable(t *testing.T, r *Redis) {
	t.Helper()
	ops := map[string]func(context.Context) error{
		"Ping":   r.Ping,
		"Create": func(ctx context.Context) error { return r.Create(ctx, SessionRecord{ID: "down"}) },
		"Get":    func(ctx context.Context) error { _, err := r.Get(ctx, "s"); return err },
		"Update": func(ctx context.Context) error {
			return r.Update(ctx, "s", func(*SessionRecord) error { return nil })
		},
		"Touch":  func(ctx context.Context) error { return r.Touch(ctx, "s") },
		"Delete": func(ctx context.Context) error { return r.Delete(ctx, "s") },
		"Append": func(ctx context.Context) error { _, err := r.Append(ctx, "s", 1, []byte("x")); return err },
		"After":  func(ctx context.Context) error { _, err := r.After(ctx, "s", 1, "", 0); return err },
		"Tail": func(ctx context.Context) error {
			_, err := r.Tail(ctx, "s", 1, "", time.Second)
			return err
		},
		"Close":   func(ctx context.Context) error { return r.Close(ctx, "s", 1) },
		"Publish": func(ctx context.Context) error { return r.Publish(ctx, "session:s", []byte("x")) },
		"Subscribe": func(ctx context.Context) error {
			_, cancel, err := r.Subscribe(ctx, "session:down")
			if err == nil {
				cancel()
			}
			return err
		},
		"Allow":   func(ctx context.Context) error { _, _, err := r.Allow(ctx, "k", 1, 1); return err },
		"Acquire": func(ctx context.Context) error { _, _, err := r.Acquire(ctx, "k", 1, time.Second); return err },
		"RegisterReplica": func(ctx context.Context) error {
			return r.RegisterReplica(ctx, "http://10.0.0.1/mcp", time.Second)
		},
		"ReplicaRegistered": func(ctx context.Context) error {
			_, err := r.ReplicaRegistered(ctx, "http://10.0.0.1/mcp")
			return err
		},
		"PinIfAbsent": func(ctx context.Context) error { _, err := r.PinIfAbsent(ctx, "k", "h"); return err },
		"SetPin":      func(ctx context.Context) error { return r.SetPin(ctx, "k", "h") },
		"DeletePin":   func(ctx context.Context) error { return r.DeletePin(ctx, "k") },
		"Pins":        func(ctx context.Context) error { _, err := r.Pins(ctx); return err },
	}
	maps.Copy(ops, grantOps(r))
	for name, op := range ops {
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		start := time.Now()
		err := op(ctx)
		cancel()
		if !errors.Is(err, ErrUnavailable) {
			t.Errorf("%s with Redis down: %v, want ErrUnavailable", name, err)
		}
		if took := time.Since(start); took > 3*time.Second {
			t.Errorf("%s with Redis down took %v", name, took)
		}
	}
}

// TestRedisMiniredisDown stops and restarts miniredis under a store: errors while it is down, service again after,
// with the same client.
func TestRedisMiniredisDown(t *testing.T) {
	t.Parallel()
	mr := miniredis.RunT(t)
	ctx := t.Context()
	r := NewRedis(newClient(t, mr.Addr()), "")
	t.Cleanup(r.Shutdown)
	if err := r.Create(ctx, SessionRecord{ID: "s"}); err != nil {
		t.Fatal(err)
	}
	mr.Close()
	checkUnavailable(t, r)
	if err := mr.Restart(); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "Ping after restart", func() bool { return r.Ping(ctx) == nil })
	if _, err := r.Get(ctx, "s"); err != nil {
		t.Fatalf("Get after restart: %v", err)
	}
}
