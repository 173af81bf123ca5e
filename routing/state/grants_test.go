package state

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// runGrantSuite is the conformance suite of GrantStore, RegistrationStore and TokenStore, on the harnesses of runSuite (suite_test.go).
func runGrantSuite(t *testing.T, newStore factory, inBubble bool) {
	tests := []storeTest{
		{"ConnectOnce", testConnectOnce},
		{"ConnectConcurrentTake", testConnectConcurrentTake},
		{"ConnectTTL", testConnectTTL},
		{"Grants", testGrants},
		{"GrantKeys", testGrantKeys},
		{"GrantsShared", testGrantsShared},
		{"LockExclusive", testLockExclusive},
		{"LockTTL", testLockTTL},
		{"UpstreamList", testUpstreamList},
		{"ConnectLimit", testConnectLimit},
		{"GrantLimits", testGrantLimits},
		{"GrantInvalid", testGrantInvalid},
		{"GrantCancelled", testGrantCancelled},
		{"Registrations", testRegistrations},
		{"RegistrationKeys", testRegistrationKeys},
		{"RegistrationLimit", testRegistrationLimit},
		{"RegistrationInvalid", testRegistrationInvalid},
		{"Tokens", testTokens},
		{"TokenKeys", testTokenKeys},
		{"TokenInvalid", testTokenInvalid},
	}
	runStoreTests(t, tests, newStore, inBubble)
}

func TestGrantsMemory(t *testing.T) {
	t.Parallel()
	runGrantSuite(t, newMemoryHarness, true)
}

func TestGrantsMiniredis(t *testing.T) {
	t.Parallel()
	runGrantSuite(t, newMiniredisHarness, false)
}

// TestGrantsRedisServer runs the suite against a real redis-server, as TestRedisServer does: each test under its
// own prefix, with short TTLs and real time.
func TestGrantsRedisServer(t *testing.T) {
	t.Parallel()
	srv := startRedisServer(t)
	runGrantSuite(t, func(t *testing.T, opts ...Option) *harness {
		const ttl = time.Second
		prefix := fmt.Sprintf("sbgrants%d:", prefixSeq.Add(1))
		newRedis := func(t *testing.T, opts ...Option) *Redis {
			opts = append([]Option{WithSessionTTL(ttl), WithEventLog(0, ttl)}, opts...)
			r := NewRedis(newClient(t, srv.addr()), prefix, opts...)
			t.Cleanup(r.Shutdown)
			return r
		}
		return &harness{
			Store:   newRedis(t, opts...),
			ttl:     ttl,
			advance: wallSleep,
			second:  func(t *testing.T, opts ...Option) Store { return newRedis(t, opts...) },
			shared:  true,
		}
	}, false)
}

func sampleConnect(principal, upstream string) ConnectRecord {
	return ConnectRecord{
		Principal:     principal,
		Upstream:      upstream,
		Session:       "session-1",
		ElicitationID: "elicit-1",
		Pending:       []byte("sealed state and verifier \x00\xff"),
	}
}

// sameConnect compares records but for Created, which it checks is set (when want's is zero) or kept.
func sameConnect(t *testing.T, got, want ConnectRecord, what string) {
	t.Helper()
	switch {
	case want.Created.IsZero() && got.Created.IsZero():
		t.Errorf("%s: Created not set", what)
	case !want.Created.IsZero() && !got.Created.Equal(want.Created):
		t.Errorf("%s: Created %v, want %v", what, got.Created, want.Created)
	}
	got.Created, want.Created = time.Time{}, time.Time{}
	if got.Principal != want.Principal || got.Upstream != want.Upstream || got.Session != want.Session ||
		got.ElicitationID != want.ElicitationID || !bytes.Equal(got.Pending, want.Pending) {
		t.Errorf("%s: record\n got %+v\nwant %+v", what, got, want)
	}
}

// testConnectOnce: a connect record is taken once; its id is taken until then, and free after.
func testConnectOnce(t *testing.T, newStore factory) {
	h := newStore(t)
	ctx := ctxT(t)
	rec := sampleConnect("alice", "github")
	stored := rec.Clone()
	if err := h.PutConnect(ctx, "c1", rec, h.ttl); err != nil {
		t.Fatal(err)
	}
	rec.Pending[0] = 'X' // the store kept its own copy
	if err := h.PutConnect(ctx, "c1", sampleConnect("mallory", "github"), h.ttl); !errors.Is(err, ErrExists) {
		t.Fatalf("PutConnect of a live id: %v, want ErrExists", err)
	}
	created := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	withCreated := sampleConnect("bob", "linear")
	withCreated.Created = created
	withCreated.Session, withCreated.ElicitationID, withCreated.Pending = "", "", nil
	if err := h.PutConnect(ctx, "c2", withCreated, h.ttl); err != nil {
		t.Fatal(err)
	}

	got, err := h.TakeConnect(ctx, "c1")
	if err != nil {
		t.Fatal(err)
	}
	sameConnect(t, got, stored, "TakeConnect")
	for _, id := range []string{"c1", "never"} {
		if _, err := h.TakeConnect(ctx, id); !errors.Is(err, ErrNotFound) {
			t.Errorf("TakeConnect(%s) again or never put: %v, want ErrNotFound", id, err)
		}
	}
	got, err = h.TakeConnect(ctx, "c2")
	if err != nil {
		t.Fatal(err)
	}
	sameConnect(t, got, withCreated, "TakeConnect of a record with Created and nothing optional")
	// Taken, an id is free: PutConnect of it stores a new record (ids are random: a caller never does this).
	if err := h.PutConnect(ctx, "c1", sampleConnect("carol", "jira"), h.ttl); err != nil {
		t.Fatalf("PutConnect of a taken id: %v", err)
	}
	if got, err := h.TakeConnect(ctx, "c1"); err != nil || got.Principal != "carol" {
		t.Fatalf("TakeConnect of the new record: %+v, %v", got, err)
	}
}

// testConnectConcurrentTake: of callers racing to take one id, on two stores (two replicas) where the data is
// shared, exactly one gets the record and every other ErrNotFound: a replayed link fails.
func testConnectConcurrentTake(t *testing.T, newStore factory) {
	h := newStore(t)
	ctx := ctxT(t)
	stores := []GrantStore{h}
	if h.shared {
		stores = append(stores, h.second(t))
	}
	const ids, callers = 4, 16
	for i := range ids {
		rec := sampleConnect(fmt.Sprintf("p%d", i), "github")
		if err := h.PutConnect(ctx, fmt.Sprintf("c%d", i), rec, time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	var taken [ids]atomic.Int32
	errs := make(chan error, ids*callers)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for c := range callers {
		wg.Go(func() {
			<-start
			s := stores[c%len(stores)]
			for i := range ids {
				rec, err := s.TakeConnect(ctx, fmt.Sprintf("c%d", i))
				switch {
				case err == nil:
					taken[i].Add(1)
					if rec.Principal != fmt.Sprintf("p%d", i) {
						errs <- fmt.Errorf("c%d: took the record of %s", i, rec.Principal)
					}
				case !errors.Is(err, ErrNotFound):
					errs <- err
				}
			}
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for i := range ids {
		if n := taken[i].Load(); n != 1 {
			t.Errorf("c%d taken %d times, want once", i, n)
		}
	}
}

// testConnectTTL: a record is gone its ttl after PutConnect, and its id is free again.
func testConnectTTL(t *testing.T, newStore factory) {
	h := newStore(t)
	ctx := ctxT(t)
	if err := h.PutConnect(ctx, "old", sampleConnect("alice", "github"), h.ttl); err != nil {
		t.Fatal(err)
	}
	h.advance(h.ttl * 6 / 10)
	if err := h.PutConnect(ctx, "new", sampleConnect("bob", "github"), h.ttl); err != nil {
		t.Fatal(err)
	}
	h.advance(h.ttl * 6 / 10) // 1.2 ttl since "old", 0.6 since "new"
	if _, err := h.TakeConnect(ctx, "old"); !errors.Is(err, ErrNotFound) {
		t.Errorf("TakeConnect of an expired record: %v, want ErrNotFound", err)
	}
	if got, err := h.TakeConnect(ctx, "new"); err != nil || got.Principal != "bob" {
		t.Errorf("TakeConnect of a record 0.6 ttl old: %+v, %v", got, err)
	}
	if err := h.PutConnect(ctx, "old", sampleConnect("carol", "github"), h.ttl); err != nil {
		t.Errorf("PutConnect over an expired record: %v", err)
	}
}

// sameGrants checks that principal's grants in s are exactly want.
func sameGrants(t *testing.T, s GrantStore, principal string, want map[string]string, what string) {
	t.Helper()
	got, err := s.Grants(ctxT(t), principal)
	if err != nil {
		t.Fatalf("%s: Grants(%q): %v", what, principal, err)
	}
	if got == nil {
		t.Errorf("%s: Grants(%q) = nil, want a map", what, principal)
	}
	if !maps.EqualFunc(got, want, func(g []byte, w string) bool { return string(g) == w }) {
		t.Errorf("%s: Grants(%q) = %q, want %q", what, principal, got, want)
	}
}

// testGrants: grants are stored, replaced, read, listed by principal and deleted one by one or by upstream; what
// the store returns is the caller's.
func testGrants(t *testing.T, newStore factory) {
	h := newStore(t)
	ctx := ctxT(t)
	sameGrants(t, h, "alice", map[string]string{}, "empty store")
	put := []struct{ principal, upstream, sealed string }{
		{"alice", "github", "a-gh-1"},
		{"alice", "linear", "a-li"},
		{"bob", "github", "b-gh"},
		{"bob", "jira", "b-ji"},
		{"alice", "github", "a-gh-2"}, // replaces
	}
	for _, p := range put {
		sealed := []byte(p.sealed)
		if err := h.PutGrant(ctx, p.principal, p.upstream, sealed); err != nil {
			t.Fatal(err)
		}
		sealed[0] = 'X' // the store kept its own copy
	}
	for _, tc := range []struct{ principal, upstream, want string }{
		{"alice", "github", "a-gh-2"}, {"alice", "linear", "a-li"}, {"bob", "github", "b-gh"}, {"bob", "jira", "b-ji"},
	} {
		got, err := h.GetGrant(ctx, tc.principal, tc.upstream)
		if err != nil || string(got) != tc.want {
			t.Errorf("GetGrant(%s, %s) = %q, %v; want %q", tc.principal, tc.upstream, got, err, tc.want)
		}
	}
	for _, tc := range []struct{ principal, upstream string }{{"alice", "jira"}, {"carol", "github"}, {"bob", "nope"}} {
		if _, err := h.GetGrant(ctx, tc.principal, tc.upstream); !errors.Is(err, ErrNotFound) {
			t.Errorf("GetGrant(%s, %s) of no grant: %v, want ErrNotFound", tc.principal, tc.upstream, err)
		}
	}
	sameGrants(t, h, "alice", map[string]string{"github": "a-gh-2", "linear": "a-li"}, "alice")
	sameGrants(t, h, "bob", map[string]string{"github": "b-gh", "jira": "b-ji"}, "bob")
	sameGrants(t, h, "carol", map[string]string{}, "a principal with no grants")
	for upstream, want := range map[string]map[string]string{"github": {"alice": "a-gh-2", "bob": "b-gh"}, "nope": {}} {
		got, err := h.UpstreamGrants(ctx, upstream)
		if err != nil || len(got) != len(want) {
			t.Errorf("UpstreamGrants(%s) = %q, %v; want %q", upstream, got, err, want)
		}
		for p, v := range want {
			if string(got[p]) != v {
				t.Errorf("UpstreamGrants(%s)[%s] = %q, want %q", upstream, p, got[p], v)
			}
		}
	}

	// What GetGrant and Grants return is the caller's.
	got, _ := h.GetGrant(ctx, "alice", "github")
	got[0] = 'X'
	all, _ := h.Grants(ctx, "alice")
	all["linear"][0] = 'X'
	sameGrants(t, h, "alice", map[string]string{"github": "a-gh-2", "linear": "a-li"}, "after changing what was read")

	// A disconnect.
	if err := h.DeleteGrant(ctx, "alice", "linear"); err != nil {
		t.Fatal(err)
	}
	if err := h.DeleteGrant(ctx, "alice", "linear"); err != nil {
		t.Fatalf("DeleteGrant of a missing grant: %v", err)
	}
	if _, err := h.GetGrant(ctx, "alice", "linear"); !errors.Is(err, ErrNotFound) {
		t.Errorf("GetGrant after DeleteGrant: %v, want ErrNotFound", err)
	}
	sameGrants(t, h, "alice", map[string]string{"github": "a-gh-2"}, "after DeleteGrant")

	// An admin revokes an upstream: every principal's grant for it, and only those.
	if n, err := h.DeleteUpstreamGrants(ctx, "github"); err != nil || n != 2 {
		t.Fatalf("DeleteUpstreamGrants(github) = %d, %v; want 2", n, err)
	}
	if n, err := h.DeleteUpstreamGrants(ctx, "github"); err != nil || n != 0 {
		t.Fatalf("DeleteUpstreamGrants(github) again = %d, %v; want 0", n, err)
	}
	if n, err := h.DeleteUpstreamGrants(ctx, "linear"); err != nil || n != 0 {
		t.Fatalf("DeleteUpstreamGrants of an upstream whose grants were deleted = %d, %v; want 0", n, err)
	}
	sameGrants(t, h, "alice", map[string]string{}, "alice after revoking github")
	sameGrants(t, h, "bob", map[string]string{"jira": "b-ji"}, "bob after revoking github")
	// And connecting again works.
	if err := h.PutGrant(ctx, "alice", "github", []byte("a-gh-3")); err != nil {
		t.Fatal(err)
	}
	sameGrants(t, h, "alice", map[string]string{"github": "a-gh-3"}, "alice connected again")

	// At the bounds.
	big := bytes.Repeat([]byte{0xff}, MaxGrantSize)
	long := strings.Repeat("p", maxIDLen)
	if err := h.PutGrant(ctx, long, long, big); err != nil {
		t.Fatalf("PutGrant at the bounds: %v", err)
	}
	if got, err := h.GetGrant(ctx, long, long); err != nil || !bytes.Equal(got, big) {
		t.Fatalf("GetGrant at the bounds: %d bytes, %v", len(got), err)
	}
}

// testGrantKeys: principals and upstreams are opaque bytes: NULs, braces (a Redis hash tag's), colons, invalid
// UTF-8 come back exactly, and names that differ in one byte are different.
func testGrantKeys(t *testing.T, newStore factory) {
	h := newStore(t)
	ctx := ctxT(t)
	upstreams := []string{
		"gh", "gh\x00", "{gh}", "gh}", "{", "}{", "grants:{gh}", "{grant-upstreams}", "上游", "\xff\xfe",
	}
	principals := []string{"alice", "alice\x00", "{alice}", "ALICE", "a:b", "\xff"}
	for _, u := range upstreams {
		for _, p := range principals {
			if err := h.PutGrant(ctx, p, u, []byte(p+"@"+u)); err != nil {
				t.Fatalf("PutGrant(%q, %q): %v", p, u, err)
			}
		}
	}
	for _, p := range principals {
		want := map[string]string{}
		for _, u := range upstreams {
			want[u] = p + "@" + u
		}
		sameGrants(t, h, p, want, "odd names")
	}
	if n, err := h.DeleteUpstreamGrants(ctx, "{gh}"); err != nil || n != len(principals) {
		t.Fatalf("DeleteUpstreamGrants({gh}) = %d, %v; want %d", n, err, len(principals))
	}
	if got, err := h.GetGrant(ctx, "alice", "gh}"); err != nil || string(got) != "alice@gh}" {
		t.Errorf("GetGrant of gh} after revoking {gh}: %q, %v", got, err)
	}
	// Connect ids and lock keys are opaque as well.
	for _, id := range []string{"c", "c\x00", "{connects}", "{c}:x", "\xff"} {
		if err := h.PutConnect(ctx, id, sampleConnect("alice", "{gh}"), time.Minute); err != nil {
			t.Fatalf("PutConnect(%q): %v", id, err)
		}
	}
	for _, id := range []string{"c", "c\x00", "{connects}", "{c}:x", "\xff"} {
		if rec, err := h.TakeConnect(ctx, id); err != nil || rec.Upstream != "{gh}" {
			t.Errorf("TakeConnect(%q): %+v, %v", id, rec, err)
		}
	}
	for _, key := range []string{"k", "k\x00", "{k}", "\xff"} {
		if _, ok, err := h.TryLock(ctx, key, time.Minute); err != nil || !ok {
			t.Errorf("TryLock(%q) = %v, %v; want the lock", key, ok, err)
		}
	}
}

// testGrantsShared: a second store over the same data (another replica, or this one restarted) sees the grants,
// connect records, locks and lists, and its changes are seen here; a Memory made afresh has none of them: what a
// memory store forgets at a restart.
func testGrantsShared(t *testing.T, newStore factory) {
	h := newStore(t)
	ctx := ctxT(t)
	if err := h.PutGrant(ctx, "alice", "github", []byte("sealed")); err != nil {
		t.Fatal(err)
	}
	if err := h.PutConnect(ctx, "c1", sampleConnect("alice", "github"), time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := h.PutUpstreamList(ctx, "github", []byte(`[{"name":"search"}]`), time.Minute); err != nil {
		t.Fatal(err)
	}
	unlock, ok, err := h.TryLock(ctx, "refresh:alice:github", time.Minute)
	if err != nil || !ok {
		t.Fatalf("TryLock = %v, %v", ok, err)
	}
	defer unlock()
	other := h.second(t)
	if !h.shared {
		sameGrants(t, other, "alice", map[string]string{}, "a new Memory")
		if _, err := other.TakeConnect(ctx, "c1"); !errors.Is(err, ErrNotFound) {
			t.Errorf("TakeConnect on a new Memory: %v, want ErrNotFound", err)
		}
		if _, err := other.GetUpstreamList(ctx, "github"); !errors.Is(err, ErrNotFound) {
			t.Errorf("GetUpstreamList on a new Memory: %v, want ErrNotFound", err)
		}
		return
	}
	if got, err := other.GetGrant(ctx, "alice", "github"); err != nil || string(got) != "sealed" {
		t.Errorf("GetGrant on the second store: %q, %v", got, err)
	}
	sameGrants(t, other, "alice", map[string]string{"github": "sealed"}, "the second store")
	if rec, err := other.TakeConnect(ctx, "c1"); err != nil || rec.Principal != "alice" {
		t.Errorf("TakeConnect on the second store: %+v, %v", rec, err)
	}
	if _, err := h.TakeConnect(ctx, "c1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("TakeConnect here of what the second store took: %v, want ErrNotFound", err)
	}
	if got, err := other.GetUpstreamList(ctx, "github"); err != nil || string(got) != `[{"name":"search"}]` {
		t.Errorf("GetUpstreamList on the second store: %q, %v", got, err)
	}
	if _, ok, err := other.TryLock(ctx, "refresh:alice:github", time.Minute); err != nil || ok {
		t.Errorf("TryLock on the second store of a lock held here = %v, %v; want false", ok, err)
	}
	// And the other way.
	if n, err := other.DeleteUpstreamGrants(ctx, "github"); err != nil || n != 1 {
		t.Errorf("DeleteUpstreamGrants on the second store = %d, %v; want 1", n, err)
	}
	sameGrants(t, h, "alice", map[string]string{}, "here, after the second store revoked github")
}

// testLockExclusive: of callers racing for a lock, on two stores where the data is shared, exactly one gets it: a
// refresh racing on two replicas happens once. Unlocked, it can be taken again; unlocking twice is harmless.
func testLockExclusive(t *testing.T, newStore factory) {
	h := newStore(t)
	ctx := ctxT(t)
	stores := []GrantStore{h}
	if h.shared {
		stores = append(stores, h.second(t))
	}
	const callers = 16
	var won atomic.Int32
	unlocks := make(chan func(), callers)
	errs := make(chan error, callers)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for c := range callers {
		wg.Go(func() {
			<-start
			unlock, ok, err := stores[c%len(stores)].TryLock(ctx, "refresh:alice:github", time.Minute)
			switch {
			case err != nil:
				errs <- err
			case ok:
				won.Add(1)
				unlocks <- unlock
			case unlock != nil:
				errs <- errors.New("TryLock refused, with an unlock function")
			}
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	close(unlocks)
	for err := range errs {
		t.Error(err)
	}
	if n := won.Load(); n != 1 {
		t.Fatalf("%d callers got the lock, want 1", n)
	}
	if _, ok, err := h.TryLock(ctx, "refresh:bob:github", time.Minute); err != nil || !ok {
		t.Errorf("TryLock of another key = %v, %v; want the lock", ok, err)
	}
	unlock := <-unlocks
	unlock()
	unlock()
	last := stores[len(stores)-1]
	again, ok, err := last.TryLock(ctx, "refresh:alice:github", time.Minute)
	if err != nil || !ok {
		t.Fatalf("TryLock after unlock = %v, %v; want the lock", ok, err)
	}
	unlock() // the first holder's again: harmless, the new holder keeps the lock
	if _, ok, err := h.TryLock(ctx, "refresh:alice:github", time.Minute); err != nil || ok {
		t.Errorf("TryLock while the new holder has it = %v, %v; want false", ok, err)
	}
	again()
}

// testLockTTL: a lock nobody unlocks lapses after its ttl; the lapsed holder's unlock does not release the lock of
// whoever took it next.
func testLockTTL(t *testing.T, newStore factory) {
	h := newStore(t)
	ctx := ctxT(t)
	stale, ok, err := h.TryLock(ctx, "k", h.ttl)
	if err != nil || !ok {
		t.Fatalf("TryLock = %v, %v", ok, err)
	}
	h.advance(h.ttl * 6 / 10)
	if _, ok, err := h.TryLock(ctx, "k", h.ttl); err != nil || ok {
		t.Fatalf("TryLock 0.6 ttl into a lock = %v, %v; want false", ok, err)
	}
	h.advance(h.ttl * 6 / 10)
	unlock, ok, err := h.TryLock(ctx, "k", h.ttl)
	if err != nil || !ok {
		t.Fatalf("TryLock 1.2 ttl after a lock nobody unlocked = %v, %v; want the lock", ok, err)
	}
	stale()
	if _, ok, err := h.TryLock(ctx, "k", h.ttl); err != nil || ok {
		t.Errorf("TryLock after the lapsed holder's unlock = %v, %v; want false: the new holder has it", ok, err)
	}
	unlock()
	if _, ok, err := h.TryLock(ctx, "k", h.ttl); err != nil || !ok {
		t.Errorf("TryLock after the holder's unlock = %v, %v; want the lock", ok, err)
	}
}

// testUpstreamList: a list is cached, replaced and read back, up to MaxUpstreamListSize, until its ttl lapses.
func testUpstreamList(t *testing.T, newStore factory) {
	h := newStore(t)
	ctx := ctxT(t)
	if _, err := h.GetUpstreamList(ctx, "github"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("GetUpstreamList of nothing: %v, want ErrNotFound", err)
	}
	list := []byte(`[{"name":"search_issues"}]`)
	if err := h.PutUpstreamList(ctx, "github", list, h.ttl); err != nil {
		t.Fatal(err)
	}
	list[0] = 'X'
	got, err := h.GetUpstreamList(ctx, "github")
	if err != nil || string(got) != `[{"name":"search_issues"}]` {
		t.Fatalf("GetUpstreamList = %q, %v", got, err)
	}
	got[0] = 'X'
	if again, _ := h.GetUpstreamList(ctx, "github"); string(again) != `[{"name":"search_issues"}]` {
		t.Errorf("GetUpstreamList after changing what it returned = %q", again)
	}
	big := bytes.Repeat([]byte("t"), MaxUpstreamListSize)
	if err := h.PutUpstreamList(ctx, "linear", big, h.ttl); err != nil {
		t.Fatalf("PutUpstreamList at the bound: %v", err)
	}
	if got, err := h.GetUpstreamList(ctx, "linear"); err != nil || !bytes.Equal(got, big) {
		t.Fatalf("GetUpstreamList at the bound: %d bytes, %v", len(got), err)
	}
	h.advance(h.ttl * 6 / 10)
	if err := h.PutUpstreamList(ctx, "github", []byte(`[]`), h.ttl); err != nil { // replaces, and restarts the ttl
		t.Fatal(err)
	}
	h.advance(h.ttl * 6 / 10)
	if _, err := h.GetUpstreamList(ctx, "linear"); !errors.Is(err, ErrNotFound) {
		t.Errorf("GetUpstreamList 1.2 ttl after it was put: %v, want ErrNotFound", err)
	}
	if got, err := h.GetUpstreamList(ctx, "github"); err != nil || string(got) != `[]` {
		t.Errorf("GetUpstreamList 0.6 ttl after it was replaced = %q, %v", got, err)
	}
}

// testConnectLimit: with MaxConnects records live, a new one is refused with ErrFull, on every store over the
// data; taking one makes room.
func testConnectLimit(t *testing.T, newStore factory) {
	h := newStore(t)
	ctx := ctxT(t)
	s := patient(t, h.Store)
	fillConnects(t, s, MaxConnects-1)
	if err := s.PutConnect(ctx, "last", sampleConnect("alice", "github"), time.Minute); err != nil {
		t.Fatalf("connect %d of %d: %v", MaxConnects, MaxConnects, err)
	}
	other := s
	if h.shared {
		other = patient(t, h.second(t))
	}
	if err := other.PutConnect(ctx, "over", sampleConnect("bob", "github"), time.Minute); !errors.Is(err, ErrFull) {
		t.Fatalf("PutConnect past MaxConnects: %v, want ErrFull", err)
	}
	if err := other.PutConnect(ctx, "last", sampleConnect("bob", "github"), time.Minute); !errors.Is(err, ErrExists) {
		t.Errorf("PutConnect of a live id at the limit: %v, want ErrExists", err)
	}
	if _, err := s.TakeConnect(ctx, "last"); err != nil {
		t.Fatal(err)
	}
	if err := other.PutConnect(ctx, "over", sampleConnect("bob", "github"), time.Minute); err != nil {
		t.Fatalf("PutConnect after a take made room: %v", err)
	}
}

// testGrantLimits: past MaxGrantsPerUpstream principals, a new principal's grant for the upstream is refused with
// ErrFull, while those there can be replaced and deleting one makes room; past MaxUpstreams upstreams with grants
// a new upstream is refused, until DeleteUpstreamGrants frees one. A Memory also caches at most MaxUpstreams lists.
func testGrantLimits(t *testing.T, newStore factory) {
	h := newStore(t)
	ctx := ctxT(t)
	var other GrantStore = h
	if h.shared {
		other = h.second(t)
	}
	fillGrants(t, h.Store, "big", MaxGrantsPerUpstream)
	if err := other.PutGrant(ctx, "newcomer", "big", []byte("s")); !errors.Is(err, ErrFull) {
		t.Fatalf("PutGrant past MaxGrantsPerUpstream: %v, want ErrFull", err)
	}
	if err := other.PutGrant(ctx, "p0", "big", []byte("refreshed")); err != nil {
		t.Fatalf("PutGrant replacing a grant at the limit: %v", err)
	}
	if err := other.PutGrant(ctx, "newcomer", "small", []byte("s")); err != nil {
		t.Fatalf("PutGrant for another upstream: %v", err)
	}
	if err := h.DeleteGrant(ctx, "p1", "big"); err != nil {
		t.Fatal(err)
	}
	if err := other.PutGrant(ctx, "newcomer", "big", []byte("s")); err != nil {
		t.Fatalf("PutGrant after a delete made room: %v", err)
	}

	fillUpstreams(t, h.Store, MaxUpstreams-2) // with "big" and "small"
	if err := other.PutGrant(ctx, "alice", "one-more", []byte("s")); !errors.Is(err, ErrFull) {
		t.Fatalf("PutGrant of upstream %d: %v, want ErrFull", MaxUpstreams+1, err)
	}
	if err := other.PutGrant(ctx, "alice", "u0", []byte("s")); err != nil {
		t.Fatalf("PutGrant for an upstream there, at the limit: %v", err)
	}
	// Deleting an upstream's last grant keeps its place; DeleteUpstreamGrants frees it.
	if err := h.DeleteGrant(ctx, "newcomer", "small"); err != nil {
		t.Fatal(err)
	}
	if err := other.PutGrant(ctx, "alice", "one-more", []byte("s")); !errors.Is(err, ErrFull) {
		t.Fatalf("PutGrant of a new upstream after a DeleteGrant: %v, want ErrFull", err)
	}
	if _, err := h.DeleteUpstreamGrants(ctx, "small"); err != nil {
		t.Fatal(err)
	}
	if err := other.PutGrant(ctx, "alice", "one-more", []byte("s")); err != nil {
		t.Fatalf("PutGrant after DeleteUpstreamGrants made room: %v", err)
	}
	if got, err := h.GetGrant(ctx, "alice", "one-more"); err != nil || string(got) != "s" {
		t.Errorf("GetGrant of the grant that found room: %q, %v", got, err)
	}

	if _, ok := h.Store.(*Memory); ok {
		for i := range MaxUpstreams {
			if err := h.PutUpstreamList(ctx, fmt.Sprintf("u%d", i), []byte("[]"), h.ttl); err != nil {
				t.Fatalf("list %d: %v", i+1, err)
			}
		}
		if err := h.PutUpstreamList(ctx, "one-more", []byte("[]"), time.Minute); !errors.Is(err, ErrFull) {
			t.Fatalf("PutUpstreamList past MaxUpstreams: %v, want ErrFull", err)
		}
		if err := h.PutUpstreamList(ctx, "u0", []byte("[1]"), h.ttl); err != nil {
			t.Fatalf("PutUpstreamList replacing a list at the limit: %v", err)
		}
		h.advance(h.ttl) // expired lists make room
		if err := h.PutUpstreamList(ctx, "one-more", []byte("[]"), time.Minute); err != nil {
			t.Fatalf("PutUpstreamList once the others expired: %v", err)
		}
	}
}

// testGrantInvalid: malformed arguments are refused with ErrInvalid before anything is stored.
func testGrantInvalid(t *testing.T, newStore factory) {
	h := newStore(t)
	ctx := ctxT(t)
	long := strings.Repeat("x", maxIDLen+1)
	rec := sampleConnect("alice", "github")
	with := func(f func(*ConnectRecord)) ConnectRecord { r := rec.Clone(); f(&r); return r }
	ops := []struct {
		name string
		op   func() error
	}{
		{"PutConnect without id", func() error { return h.PutConnect(ctx, "", rec, time.Minute) }},
		{"PutConnect of a long id", func() error { return h.PutConnect(ctx, long, rec, time.Minute) }},
		{"PutConnect without principal", func() error {
			return h.PutConnect(ctx, "c", with(func(r *ConnectRecord) { r.Principal = "" }), time.Minute)
		}},
		{"PutConnect without upstream", func() error {
			return h.PutConnect(ctx, "c", with(func(r *ConnectRecord) { r.Upstream = "" }), time.Minute)
		}},
		{"PutConnect of a long session", func() error {
			return h.PutConnect(ctx, "c", with(func(r *ConnectRecord) { r.Session = long }), time.Minute)
		}},
		{"PutConnect of a long elicitation id", func() error {
			return h.PutConnect(ctx, "c", with(func(r *ConnectRecord) { r.ElicitationID = long }), time.Minute)
		}},
		{"PutConnect of a long pending", func() error {
			big := with(func(r *ConnectRecord) { r.Pending = make([]byte, MaxConnectPending+1) })
			return h.PutConnect(ctx, "c", big, time.Minute)
		}},
		{"PutConnect with ttl 0", func() error { return h.PutConnect(ctx, "c", rec, 0) }},
		{"PutConnect with ttl past MaxConnectTTL", func() error {
			return h.PutConnect(ctx, "c", rec, MaxConnectTTL+time.Millisecond)
		}},
		{"TakeConnect without id", func() error { _, err := h.TakeConnect(ctx, ""); return err }},
		{"PutGrant without principal", func() error { return h.PutGrant(ctx, "", "github", []byte("s")) }},
		{"PutGrant without upstream", func() error { return h.PutGrant(ctx, "alice", "", []byte("s")) }},
		{"PutGrant of a long upstream", func() error { return h.PutGrant(ctx, "alice", long, []byte("s")) }},
		{"PutGrant of nothing", func() error { return h.PutGrant(ctx, "alice", "github", nil) }},
		{"PutGrant of a big grant", func() error { return h.PutGrant(ctx, "alice", "github", make([]byte, MaxGrantSize+1)) }},
		{"GetGrant without principal", func() error { _, err := h.GetGrant(ctx, "", "github"); return err }},
		{"GetGrant of a long principal", func() error { _, err := h.GetGrant(ctx, long, "github"); return err }},
		{"DeleteGrant without upstream", func() error { return h.DeleteGrant(ctx, "alice", "") }},
		{"DeleteUpstreamGrants without upstream", func() error { _, err := h.DeleteUpstreamGrants(ctx, ""); return err }},
		{"Grants without principal", func() error { _, err := h.Grants(ctx, ""); return err }},
		{"UpstreamGrants without upstream", func() error { _, err := h.UpstreamGrants(ctx, ""); return err }},
		{"TryLock without key", func() error { _, _, err := h.TryLock(ctx, "", time.Minute); return err }},
		{"TryLock of a long key", func() error { _, _, err := h.TryLock(ctx, long, time.Minute); return err }},
		{"TryLock with ttl 0", func() error { _, _, err := h.TryLock(ctx, "k", 0); return err }},
		{"PutUpstreamList without upstream", func() error { return h.PutUpstreamList(ctx, "", []byte("[]"), time.Minute) }},
		{"PutUpstreamList of nothing", func() error { return h.PutUpstreamList(ctx, "github", nil, time.Minute) }},
		{"PutUpstreamList of a big list", func() error {
			return h.PutUpstreamList(ctx, "github", make([]byte, MaxUpstreamListSize+1), time.Minute)
		}},
		{"PutUpstreamList with ttl 0", func() error { return h.PutUpstreamList(ctx, "github", []byte("[]"), 0) }},
		{"GetUpstreamList without upstream", func() error { _, err := h.GetUpstreamList(ctx, ""); return err }},
	}
	for _, tc := range ops {
		if err := tc.op(); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", tc.name, err)
		}
	}
	// Nothing was stored.
	if _, err := h.TakeConnect(ctx, "c"); !errors.Is(err, ErrNotFound) {
		t.Errorf("TakeConnect after refused puts: %v, want ErrNotFound", err)
	}
	sameGrants(t, h, "alice", map[string]string{}, "after refused puts")
	if _, err := h.GetUpstreamList(ctx, "github"); !errors.Is(err, ErrNotFound) {
		t.Errorf("GetUpstreamList after refused puts: %v, want ErrNotFound", err)
	}
}

// testGrantCancelled: with a cancelled context every GrantStore method fails with an error wrapping ctx.Err().
func testGrantCancelled(t *testing.T, newStore factory) {
	h := newStore(t)
	ctx, cancel := context.WithCancel(ctxT(t))
	cancel()
	for name, op := range grantOps(h.Store) {
		if err := op(ctx); !errors.Is(err, context.Canceled) {
			t.Errorf("%s with a cancelled context: %v, want context.Canceled", name, err)
		}
	}
}

// grantOps calls every GrantStore and RegistrationStore method once, with valid arguments, for the tests of
// failures.
func grantOps(s Store) map[string]func(context.Context) error {
	return map[string]func(context.Context) error{
		"PutConnect": func(ctx context.Context) error {
			return s.PutConnect(ctx, "c", sampleConnect("alice", "github"), time.Minute)
		},
		"TakeConnect": func(ctx context.Context) error { _, err := s.TakeConnect(ctx, "c"); return err },
		"PutGrant":    func(ctx context.Context) error { return s.PutGrant(ctx, "alice", "github", []byte("s")) },
		"GetGrant":    func(ctx context.Context) error { _, err := s.GetGrant(ctx, "alice", "github"); return err },
		"DeleteGrant": func(ctx context.Context) error { return s.DeleteGrant(ctx, "alice", "github") },
		"DeleteUpstreamGrants": func(ctx context.Context) error {
			_, err := s.DeleteUpstreamGrants(ctx, "github")
			return err
		},
		"Grants":  func(ctx context.Context) error { _, err := s.Grants(ctx, "alice"); return err },
		"TryLock": func(ctx context.Context) error { _, _, err := s.TryLock(ctx, "k", time.Minute); return err },
		"PutUpstreamList": func(ctx context.Context) error {
			return s.PutUpstreamList(ctx, "github", []byte("[]"), time.Minute)
		},
		"GetUpstreamList": func(ctx context.Context) error { _, err := s.GetUpstreamList(ctx, "github"); return err },
		"PutRegistration": func(ctx context.Context) error {
			return s.PutRegistration(ctx, "github", "https://as.example", []byte("s"))
		},
		"GetRegistration": func(ctx context.Context) error {
			_, err := s.GetRegistration(ctx, "github", "https://as.example")
			return err
		},
		"DeleteRegistration": func(ctx context.Context) error {
			return s.DeleteRegistration(ctx, "github", "https://as.example")
		},
		"PutToken":    func(ctx context.Context) error { return s.PutToken(ctx, "alice", "crm", []byte("s"), time.Minute) },
		"GetToken":    func(ctx context.Context) error { _, err := s.GetToken(ctx, "alice", "crm"); return err },
		"DeleteToken": func(ctx context.Context) error { return s.DeleteToken(ctx, "alice", "crm") },
	}
}

// patient returns s, or for a Redis a store over the same server and prefix whose client waits up to a minute for
// a reply and never retries. miniredis sorts a whole sorted set for ZREMRANGEBYSCORE: with MaxConnects members,
// under -race on a busy machine, that can outlast newClient's second, and a TakeConnect retried after a timeout
// finds nothing (its first run took the record).
func patient(t *testing.T, s Store) Store {
	t.Helper()
	r, ok := s.(*Redis)
	if !ok {
		return s
	}
	c, ok := r.c.(*redis.Client)
	if !ok {
		t.Fatalf("patient: a %T", r.c)
	}
	pc := redis.NewClient(&redis.Options{
		Addr: c.Options().Addr, ReadTimeout: time.Minute, WriteTimeout: time.Minute, MaxRetries: -1,
	})
	t.Cleanup(func() { _ = pc.Close() })
	p := NewRedis(pc, r.prefix)
	t.Cleanup(p.Shutdown)
	return p
}

// TestRedisPutConnectRetry: a PutConnect that go-redis retries after a timeout, whose first run stored the record,
// succeeds; another call with the id is refused.
func TestRedisPutConnectRetry(t *testing.T) {
	t.Parallel()
	mr := miniredis.RunT(t)
	ctx := t.Context()
	r := NewRedis(newClient(t, mr.Addr()), "")
	defer r.Shutdown()
	keys := []string{r.connectKey("c"), r.connectsKey()}
	for _, tc := range []struct {
		nonce string
		want  int
	}{{"call-1", 1}, {"call-1", 1}, {"call-2", -1}} {
		rec := `{"principal":"alice","upstream":"gh"}`
		n, err := putConnect.Run(ctx, r.c, keys, "c", rec, 60_000, MaxConnects, tc.nonce).Int()
		if err != nil || n != tc.want {
			t.Errorf("putConnect of call %s = %d, %v; want %d", tc.nonce, n, err, tc.want)
		}
	}
	if rec, err := r.TakeConnect(ctx, "c"); err != nil || rec.Principal != "alice" {
		t.Errorf("TakeConnect = %+v, %v", rec, err)
	}
	if ids, _ := mr.ZMembers(r.connectsKey()); len(ids) != 0 { // an error: no key, as the last id left
		t.Errorf("index after the take: %q, want empty", ids)
	}
}

// fillChunk is how many members one command of a fill writes.
const fillChunk = 10_000

// fillConnects makes n connect records live (ids "fill<i>", for an hour): through the API in a Memory, and for
// Redis by writing the index of live ids directly, in a few commands, as only it counts against MaxConnects.
func fillConnects(t *testing.T, s Store, n int) {
	t.Helper()
	ctx := ctxT(t)
	switch s := s.(type) {
	case *Memory:
		for i := range n {
			if err := s.PutConnect(ctx, fmt.Sprintf("fill%d", i), sampleConnect("alice", "github"), time.Hour); err != nil {
				t.Fatalf("connect %d: %v", i+1, err)
			}
		}
	case *Redis:
		now, err := s.c.Time(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		expires := float64(now.Add(time.Hour).UnixMilli())
		for start := 0; start < n; start += fillChunk {
			members := make([]redis.Z, 0, fillChunk)
			for i := start; i < min(start+fillChunk, n); i++ {
				members = append(members, redis.Z{Score: expires, Member: fmt.Sprintf("fill%d", i)})
			}
			if err := s.c.ZAdd(ctx, s.connectsKey(), members...).Err(); err != nil {
				t.Fatal(err)
			}
		}
	default:
		t.Fatalf("fillConnects: a %T", s)
	}
}

// fillGrants stores grants of principals "p<i>" for upstream.
func fillGrants(t *testing.T, s Store, upstream string, n int) {
	t.Helper()
	ctx := ctxT(t)
	switch s := s.(type) {
	case *Memory:
		for i := range n {
			if err := s.PutGrant(ctx, fmt.Sprintf("p%d", i), upstream, []byte("s")); err != nil {
				t.Fatalf("grant %d: %v", i+1, err)
			}
		}
	case *Redis:
		for start := 0; start < n; start += fillChunk {
			fields := make([]any, 0, 2*fillChunk)
			for i := start; i < min(start+fillChunk, n); i++ {
				fields = append(fields, fmt.Sprintf("p%d", i), "s")
			}
			if err := s.c.HSet(ctx, s.grantsKey(upstream), fields...).Err(); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.c.SAdd(ctx, s.grantUpstreamsKey(), upstream).Err(); err != nil {
			t.Fatal(err)
		}
	default:
		t.Fatalf("fillGrants: a %T", s)
	}
}

// fillUpstreams stores a grant of principal "p" for each of upstreams "u<i>".
func fillUpstreams(t *testing.T, s Store, n int) {
	t.Helper()
	ctx := ctxT(t)
	switch s := s.(type) {
	case *Memory:
		for i := range n {
			if err := s.PutGrant(ctx, "p", fmt.Sprintf("u%d", i), []byte("s")); err != nil {
				t.Fatalf("upstream %d: %v", i+1, err)
			}
		}
	case *Redis:
		// In pipelines of a few hundred: the test client's read timeout (a second) covers one pipeline's replies,
		// and ten thousand of them from miniredis on a loaded machine took longer.
		const chunk = 500
		for start := 0; start < n; start += chunk {
			pipe := s.c.Pipeline()
			var names []any
			for i := start; i < min(start+chunk, n); i++ {
				names = append(names, fmt.Sprintf("u%d", i))
				pipe.HSet(ctx, s.grantsKey(fmt.Sprintf("u%d", i)), "p", "s")
			}
			pipe.SAdd(ctx, s.grantUpstreamsKey(), names...)
			if _, err := pipe.Exec(ctx); err != nil {
				t.Fatal(err)
			}
		}
	default:
		t.Fatalf("fillUpstreams: a %T", s)
	}
}

// hashTag is the part of a Redis key that Cluster hashes: what is between the first "{" and the next "}", when
// that is not empty; the whole key otherwise.
func hashTag(key string) string {
	_, rest, ok := strings.Cut(key, "{")
	if !ok {
		return key
	}
	tag, _, ok := strings.Cut(rest, "}")
	if !ok || tag == "" {
		return key
	}
	return tag
}

// TestRedisGrantKeys checks the key layout of the grant tables that the package documentation promises, with
// the prefix, their TTLs, and their hash tags: the keys a script touches share one.
func TestRedisGrantKeys(t *testing.T) {
	t.Parallel()
	mr := miniredis.RunT(t)
	ctx := t.Context()
	for _, prefix := range []string{"", "tenant-a:"} {
		r := NewRedis(newClient(t, mr.Addr()), prefix)
		want := prefix
		if want == "" {
			want = DefaultPrefix
		}
		if err := r.PutConnect(ctx, "c1", sampleConnect("alice", "gh"), time.Minute); err != nil {
			t.Fatal(err)
		}
		if err := r.PutGrant(ctx, "alice", "gh", []byte("sealed")); err != nil {
			t.Fatal(err)
		}
		if _, _, err := r.TryLock(ctx, "refresh", time.Minute); err != nil {
			t.Fatal(err)
		}
		if err := r.PutUpstreamList(ctx, "gh", []byte("[]"), time.Minute); err != nil {
			t.Fatal(err)
		}
		for _, k := range []struct {
			key     string
			expires bool
			tag     string
		}{
			{"{connects}:c1", true, "connects"},
			{"{connects}", true, "connects"},
			{"grants:{gh}", false, "gh"},
			{"{grant-upstreams}", false, "grant-upstreams"},
			{"lock:{refresh}", true, "refresh"},
			{"upstreamlist:{gh}", true, "gh"},
		} {
			key := want + k.key
			if !mr.Exists(key) {
				t.Errorf("prefix %q: no key %s; keys: %q", prefix, key, mr.Keys())
				continue
			}
			if ttl := mr.TTL(key); (ttl > 0) != k.expires {
				t.Errorf("key %s has a TTL of %v; want one: %v", key, ttl, k.expires)
			}
			if tag := hashTag(key); tag != k.tag {
				t.Errorf("key %s hashes by %q, want %q", key, tag, k.tag)
			}
		}
		if v := mr.HGet(want+"grants:{gh}", "alice"); v != "sealed" {
			t.Errorf("field alice of %sgrants:{gh} = %q", want, v)
		}
		if ok, _ := mr.SIsMember(want+"{grant-upstreams}", "gh"); !ok {
			t.Errorf("gh is not in %s{grant-upstreams}", want)
		}
		r.Shutdown()
	}
	// A connect id with braces keeps the record in the {connects} slot.
	r := NewRedis(newClient(t, mr.Addr()), "")
	defer r.Shutdown()
	if tag := hashTag(r.connectKey("{x}")); tag != "connects" {
		t.Errorf("the record of connect {x} hashes by %q", tag)
	}
	for _, k := range mr.Keys() {
		if !strings.HasPrefix(k, DefaultPrefix) && !strings.HasPrefix(k, "tenant-a:") {
			t.Errorf("key %q outside the prefixes", k)
		}
	}
}

// TestRedisGrantScriptReload checks the EVAL fallback of each grant script when the server lost its scripts.
func TestRedisGrantScriptReload(t *testing.T) {
	t.Parallel()
	mr := miniredis.RunT(t)
	ctx := t.Context()
	c := newClient(t, mr.Addr())
	r := NewRedis(c, "")
	defer r.Shutdown()
	flush := func() {
		t.Helper()
		if err := c.ScriptFlush(ctx).Err(); err != nil {
			t.Fatal(err)
		}
	}
	// Each script is loaded once, then flushed, then run again.
	for range 2 {
		flush()
		if err := r.PutConnect(ctx, "c", sampleConnect("alice", "gh"), time.Minute); err != nil {
			t.Fatalf("PutConnect after SCRIPT FLUSH: %v", err)
		}
		flush()
		if _, err := r.TakeConnect(ctx, "c"); err != nil {
			t.Fatalf("TakeConnect after SCRIPT FLUSH: %v", err)
		}
		flush()
		if err := r.PutGrant(ctx, "alice", "gh", []byte("s")); err != nil {
			t.Fatalf("PutGrant after SCRIPT FLUSH: %v", err)
		}
		flush()
		if n, err := r.DeleteUpstreamGrants(ctx, "gh"); err != nil || n != 1 {
			t.Fatalf("DeleteUpstreamGrants after SCRIPT FLUSH: %d, %v", n, err)
		}
		unlock, ok, err := r.TryLock(ctx, "k", time.Minute)
		if err != nil || !ok {
			t.Fatalf("TryLock: %v, %v", ok, err)
		}
		flush()
		unlock()
		if _, ok, err := r.TryLock(ctx, "k", time.Minute); err != nil || !ok {
			t.Fatalf("TryLock after an unlock after SCRIPT FLUSH = %v, %v; want the lock", ok, err)
		}
		if err := r.c.Del(ctx, r.lockKey("k")).Err(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestGrantsMiniredisDown: errors while miniredis is down, the grants again after it is back, same client.
func TestGrantsMiniredisDown(t *testing.T) {
	t.Parallel()
	mr := miniredis.RunT(t)
	ctx := t.Context()
	r := NewRedis(newClient(t, mr.Addr()), "")
	t.Cleanup(r.Shutdown)
	if err := r.PutGrant(ctx, "alice", "gh", []byte("s")); err != nil {
		t.Fatal(err)
	}
	mr.Close()
	checkUnavailable(t, r) // the GrantStore methods among the rest
	if err := mr.Restart(); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "Ping after restart", func() bool { return r.Ping(ctx) == nil })
	if got, err := r.GetGrant(ctx, "alice", "gh"); err != nil || string(got) != "s" {
		t.Fatalf("GetGrant after restart: %q, %v", got, err)
	}
}

// TestGrantsRedisServerDown: errors while redis-server is stopped, service again (scripts reloaded) once it is
// started again on the same port, with the same client.
func TestGrantsRedisServerDown(t *testing.T) {
	t.Parallel()
	srv := startRedisServer(t)
	ctx := t.Context()
	r := NewRedis(newClient(t, srv.addr()), "")
	t.Cleanup(r.Shutdown)
	if err := r.PutGrant(ctx, "alice", "gh", []byte("s")); err != nil { // loads its scripts
		t.Fatal(err)
	}
	srv.stop()
	checkUnavailable(t, r) // the GrantStore methods among the rest
	if err := srv.start(); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "Ping after the restart", func() bool { return r.Ping(ctx) == nil })
	for name, op := range grantOps(r) {
		if err := op(ctx); err != nil && !errors.Is(err, ErrNotFound) {
			t.Errorf("%s after the restart: %v", name, err)
		}
	}
}

// TestMemoryGrantSweeps checks that expired connect records, locks and lists do not pile up in a Memory that is
// only written to.
func TestMemoryGrantSweeps(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		m := NewMemory()
		defer m.Shutdown()
		ctx := t.Context()
		for i := range 100 {
			id := fmt.Sprintf("x%d", i)
			if err := m.PutConnect(ctx, id, sampleConnect("alice", "gh"), time.Second); err != nil {
				t.Fatal(err)
			}
			if _, _, err := m.TryLock(ctx, id, time.Second); err != nil {
				t.Fatal(err)
			}
			if err := m.PutUpstreamList(ctx, id, []byte("[]"), time.Second); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(2 * grantSweepEvery) // the bubble's clock: instant
		if err := m.PutConnect(ctx, "last", sampleConnect("alice", "gh"), time.Second); err != nil {
			t.Fatal(err)
		}
		if _, _, err := m.TryLock(ctx, "last", time.Second); err != nil {
			t.Fatal(err)
		}
		if err := m.PutUpstreamList(ctx, "last", []byte("[]"), time.Second); err != nil {
			t.Fatal(err)
		}
		g := m.memGrants
		g.mu.Lock()
		connects, locks, lists := len(g.connects), len(g.locks), len(g.lists)
		g.mu.Unlock()
		if connects != 1 || locks != 1 || lists != 1 {
			t.Errorf("after the sweep: %d connects, %d locks, %d lists; want 1, 1, 1", connects, locks, lists)
		}
	})
}
