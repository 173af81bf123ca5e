package state

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/alicebob/miniredis/v2"
)

// testTokens: tokens are stored, replaced, read and deleted by principal and upstream; what the store returns is
// the caller's; a second store over the same data (another replica) sees them, and a Memory made afresh does not;
// each expires after its own ttl, a replaced one after the new ttl.
func testTokens(t *testing.T, newStore factory) {
	h := newStore(t)
	ctx := ctxT(t)
	if _, err := h.GetToken(ctx, "alice", "crm"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("GetToken of an empty store: %v, want ErrNotFound", err)
	}
	put := []struct{ principal, upstream, sealed string }{
		{"alice", "crm", "alice-crm-1"},
		{"bob", "crm", "bob-crm"},
		{"alice", "erp", "alice-erp"},
		{"alice", "crm", "alice-crm-2"}, // replaces
	}
	for _, p := range put {
		sealed := []byte(p.sealed)
		if err := h.PutToken(ctx, p.principal, p.upstream, sealed, h.ttl); err != nil {
			t.Fatal(err)
		}
		sealed[0] = 'X' // the store kept its own copy
	}
	want := map[[2]string]string{
		{"alice", "crm"}: "alice-crm-2", {"bob", "crm"}: "bob-crm", {"alice", "erp"}: "alice-erp",
		{"bob", "erp"}: "", {"carol", "crm"}: "", {"alice", "crm2"}: "",
	}
	check := func(s TokenStore, what string) {
		t.Helper()
		for k, w := range want {
			got, err := s.GetToken(ctx, k[0], k[1])
			switch {
			case w == "" && !errors.Is(err, ErrNotFound):
				t.Errorf("%s: GetToken(%s, %s) = %q, %v; want ErrNotFound", what, k[0], k[1], got, err)
			case w != "" && (err != nil || string(got) != w):
				t.Errorf("%s: GetToken(%s, %s) = %q, %v; want %q", what, k[0], k[1], got, err, w)
			}
		}
	}
	check(h, "after the puts")
	got, _ := h.GetToken(ctx, "alice", "crm")
	got[0] = 'X'
	check(h, "after changing what was read")
	if h.shared {
		check(h.second(t), "the second store")
	} else if _, err := h.second(t).GetToken(ctx, "alice", "crm"); !errors.Is(err, ErrNotFound) {
		t.Errorf("GetToken on a new Memory: %v, want ErrNotFound", err)
	}

	// Each its own ttl: bob's is put again with a longer one, alice's for crm with a shorter one.
	if err := h.PutToken(ctx, "bob", "crm", []byte("bob-crm-2"), 2*h.ttl); err != nil {
		t.Fatal(err)
	}
	if err := h.PutToken(ctx, "alice", "crm", []byte("alice-crm-3"), h.ttl/2); err != nil {
		t.Fatal(err)
	}
	h.advance(h.ttl * 6 / 10)
	want[[2]string{"alice", "crm"}] = ""
	want[[2]string{"bob", "crm"}] = "bob-crm-2"
	check(h, "0.6 ttl on")
	h.advance(h.ttl * 6 / 10)
	want[[2]string{"alice", "erp"}] = ""
	check(h, "1.2 ttl on")

	// Deleted: gone for every store over the data, and deleting again, or what never was, is no error.
	if err := h.PutToken(ctx, "carol", "crm", []byte("carol-crm"), h.ttl); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := h.DeleteToken(ctx, "bob", "crm"); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.DeleteToken(ctx, "never", "crm"); err != nil {
		t.Fatalf("DeleteToken of a missing token: %v", err)
	}
	want[[2]string{"bob", "crm"}] = ""
	want[[2]string{"carol", "crm"}] = "carol-crm"
	check(h, "after DeleteToken")
	if h.shared {
		check(h.second(t), "the second store after DeleteToken")
	}

	// At the bounds.
	big := bytes.Repeat([]byte{0xff}, MaxTokenSize)
	long := strings.Repeat("p", maxIDLen)
	if err := h.PutToken(ctx, long, long, big, h.ttl); err != nil {
		t.Fatalf("PutToken at the bounds: %v", err)
	}
	if got, err := h.GetToken(ctx, long, long); err != nil || !bytes.Equal(got, big) {
		t.Fatalf("GetToken at the bounds: %d bytes, %v", len(got), err)
	}
}

// testTokenKeys: principals and upstreams are opaque bytes, and no pair spells another's key, even where joining
// them would (an upstream ending in what a principal starts with); tokens live apart from grants.
func testTokenKeys(t *testing.T, newStore factory) {
	h := newStore(t)
	ctx := ctxT(t)
	principals := []string{"a", "b}:c", "c", "}:c", "iss|sub", "上", "\x00", "\xff"}
	upstreams := []string{"a", "a}:b", "{a}", "a}", "tokens:{a}", "\xfe"}
	for _, p := range principals {
		for _, u := range upstreams {
			if err := h.PutToken(ctx, p, u, []byte(p+"@"+u), h.ttl); err != nil {
				t.Fatalf("PutToken(%q, %q): %v", p, u, err)
			}
		}
	}
	if err := h.PutGrant(ctx, "a", "a", []byte("grant")); err != nil {
		t.Fatal(err)
	}
	if _, err := h.DeleteUpstreamGrants(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	for _, p := range principals {
		for _, u := range upstreams {
			if got, err := h.GetToken(ctx, p, u); err != nil || string(got) != p+"@"+u {
				t.Errorf("GetToken(%q, %q) = %q, %v", p, u, got, err)
			}
		}
	}
}

// testTokenInvalid: malformed arguments are refused with ErrInvalid before anything is stored.
func testTokenInvalid(t *testing.T, newStore factory) {
	h := newStore(t)
	ctx := ctxT(t)
	long := strings.Repeat("u", maxIDLen+1)
	ops := []struct {
		name string
		op   func() error
	}{
		{"PutToken without principal", func() error { return h.PutToken(ctx, "", "crm", []byte("s"), h.ttl) }},
		{"PutToken without upstream", func() error { return h.PutToken(ctx, "alice", "", []byte("s"), h.ttl) }},
		{"PutToken of a long principal", func() error { return h.PutToken(ctx, long, "crm", []byte("s"), h.ttl) }},
		{"PutToken of a long upstream", func() error { return h.PutToken(ctx, "alice", long, []byte("s"), h.ttl) }},
		{"PutToken of nothing", func() error { return h.PutToken(ctx, "alice", "crm", nil, h.ttl) }},
		{"PutToken of a big token", func() error {
			return h.PutToken(ctx, "alice", "crm", make([]byte, MaxTokenSize+1), h.ttl)
		}},
		{"PutToken without ttl", func() error { return h.PutToken(ctx, "alice", "crm", []byte("s"), 0) }},
		{"PutToken of a negative ttl", func() error { return h.PutToken(ctx, "alice", "crm", []byte("s"), -time.Second) }},
		{"GetToken without principal", func() error { _, err := h.GetToken(ctx, "", "crm"); return err }},
		{"GetToken of a long upstream", func() error { _, err := h.GetToken(ctx, "alice", long); return err }},
		{"DeleteToken without upstream", func() error { return h.DeleteToken(ctx, "alice", "") }},
		{"DeleteToken of a long principal", func() error { return h.DeleteToken(ctx, long, "crm") }},
	}
	for _, tc := range ops {
		if err := tc.op(); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", tc.name, err)
		}
	}
	if _, err := h.GetToken(ctx, "alice", "crm"); !errors.Is(err, ErrNotFound) {
		t.Errorf("GetToken after refused puts: %v, want ErrNotFound", err)
	}
}

// TestMemoryTokenLimit: a Memory keeps at most MaxTokens live tokens: past them a new one is refused with ErrFull
// while one there can be replaced, and once they expire a new one sweeps them away.
func TestMemoryTokenLimit(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		m := NewMemory()
		defer m.Shutdown()
		ctx := t.Context()
		for i := range MaxTokens {
			if err := m.PutToken(ctx, fmt.Sprint(i), "crm", []byte("s"), time.Minute); err != nil {
				t.Fatalf("token %d: %v", i+1, err)
			}
		}
		if err := m.PutToken(ctx, "new", "crm", []byte("s"), time.Hour); !errors.Is(err, ErrFull) {
			t.Fatalf("PutToken past MaxTokens: %v, want ErrFull", err)
		}
		if err := m.PutToken(ctx, "0", "crm", []byte("again"), time.Hour); err != nil {
			t.Fatalf("PutToken replacing one at the limit: %v", err)
		}
		time.Sleep(time.Minute)
		if err := m.PutToken(ctx, "new", "crm", []byte("s"), time.Hour); err != nil {
			t.Fatalf("PutToken once the others expired: %v", err)
		}
		if n := len(m.memTokens.tokens); n != 2 {
			t.Errorf("%d tokens kept after the sweep; want 2 (0, replaced, and new)", n)
		}
	})
}

// TestRedisTokenKeys checks the key layout the package documentation promises for tokens: with the prefix, the
// upstream's hash tag (its grants' slot), the hex SHA-256 of the principal, a TTL of the one given, and the sealed
// value as given.
func TestRedisTokenKeys(t *testing.T) {
	t.Parallel()
	mr := miniredis.RunT(t)
	ctx := t.Context()
	for _, prefix := range []string{"", "tenant-a:"} {
		r := NewRedis(newClient(t, mr.Addr()), prefix)
		want := prefix
		if want == "" {
			want = DefaultPrefix
		}
		if err := r.PutToken(ctx, "https://idp.example|alice", "crm", []byte("sealed"), time.Hour); err != nil {
			t.Fatal(err)
		}
		key := want + "tokens:{crm}:8844f38bbb223c85782d86fb1620b14b563ee3d8fc15e4fb78c3e8f2e1f41806" // sha256sum of the principal
		switch keys := mr.Keys(); {
		case len(keys) != 1 || keys[0] != key:
			t.Errorf("prefix %q: keys %q; want just %s", prefix, keys, key)
		case mr.TTL(key) != time.Hour:
			t.Errorf("key %s has a TTL of %v; want 1h", key, mr.TTL(key))
		case hashTag(key) != "crm" || hashTag(key) != hashTag(r.grantsKey("crm")):
			t.Errorf("key %s hashes by %q, its grants by %q; want crm for both", key, hashTag(key), hashTag(r.grantsKey("crm")))
		}
		if got, _ := mr.Get(key); got != "sealed" {
			t.Errorf("key %s holds %q", key, got)
		}
		mr.FlushAll()
		r.Shutdown()
	}
}
