package state

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/alicebob/miniredis/v2"
)

// The issuers of the registration tests.
const (
	issuerA = "https://as.example"
	issuerB = "https://login.example/tenant-1/v2.0"
)

// testRegistrations: registrations are stored, replaced, read and deleted by upstream and issuer; what the store
// returns is the caller's; a second store over the same data (another replica) sees them, and a Memory made
// afresh does not.
func testRegistrations(t *testing.T, newStore factory) {
	h := newStore(t)
	ctx := ctxT(t)
	if _, err := h.GetRegistration(ctx, "github", issuerA); !errors.Is(err, ErrNotFound) {
		t.Fatalf("GetRegistration of an empty store: %v, want ErrNotFound", err)
	}
	put := []struct{ upstream, issuer, sealed string }{
		{"github", issuerA, "gh-a-1"},
		{"github", issuerB, "gh-b"},
		{"linear", issuerA, "li-a"},
		{"github", issuerA, "gh-a-2"}, // replaces
	}
	for _, p := range put {
		sealed := []byte(p.sealed)
		if err := h.PutRegistration(ctx, p.upstream, p.issuer, sealed); err != nil {
			t.Fatal(err)
		}
		sealed[0] = 'X' // the store kept its own copy
	}
	want := []struct{ upstream, issuer, sealed string }{
		{"github", issuerA, "gh-a-2"}, {"github", issuerB, "gh-b"}, {"linear", issuerA, "li-a"},
		{"linear", issuerB, ""}, {"jira", issuerA, ""}, {"github", issuerA + "/", ""},
	}
	check := func(s RegistrationStore, what string) {
		t.Helper()
		for _, w := range want {
			got, err := s.GetRegistration(ctx, w.upstream, w.issuer)
			switch {
			case w.sealed == "" && !errors.Is(err, ErrNotFound):
				t.Errorf("%s: GetRegistration(%s, %s) = %q, %v; want ErrNotFound", what, w.upstream, w.issuer, got, err)
			case w.sealed != "" && (err != nil || string(got) != w.sealed):
				t.Errorf("%s: GetRegistration(%s, %s) = %q, %v; want %q", what, w.upstream, w.issuer, got, err, w.sealed)
			}
		}
	}
	check(h, "after the puts")
	got, _ := h.GetRegistration(ctx, "github", issuerA)
	got[0] = 'X'
	check(h, "after changing what was read")

	if h.shared {
		check(h.second(t), "the second store")
	} else if _, err := h.second(t).GetRegistration(ctx, "github", issuerA); !errors.Is(err, ErrNotFound) {
		t.Errorf("GetRegistration on a new Memory: %v, want ErrNotFound", err)
	}

	if err := h.DeleteRegistration(ctx, "github", issuerA); err != nil {
		t.Fatal(err)
	}
	if err := h.DeleteRegistration(ctx, "github", issuerA); err != nil {
		t.Fatalf("DeleteRegistration of a missing registration: %v", err)
	}
	if err := h.DeleteRegistration(ctx, "never", issuerA); err != nil {
		t.Fatalf("DeleteRegistration of an upstream with none: %v", err)
	}
	want[0].sealed = ""
	check(h, "after DeleteRegistration")

	// At the bounds.
	big := bytes.Repeat([]byte{0xff}, MaxRegistrationSize)
	longUpstream := strings.Repeat("u", maxIDLen)
	longIssuer := "https://as.example/" + strings.Repeat("i", MaxIssuerLen-len("https://as.example/"))
	if err := h.PutRegistration(ctx, longUpstream, longIssuer, big); err != nil {
		t.Fatalf("PutRegistration at the bounds: %v", err)
	}
	if got, err := h.GetRegistration(ctx, longUpstream, longIssuer); err != nil || !bytes.Equal(got, big) {
		t.Fatalf("GetRegistration at the bounds: %d bytes, %v", len(got), err)
	}
}

// testRegistrationKeys: upstreams and issuers are opaque bytes, and registrations live apart from grants: an
// upstream's grants revoked leave its registrations, and the other way round.
func testRegistrationKeys(t *testing.T, newStore factory) {
	h := newStore(t)
	ctx := ctxT(t)
	upstreams := []string{"gh", "gh\x00", "{gh}", "gh}", "registrations:{gh}", "上游", "\xff"}
	issuers := []string{issuerA, issuerA + "/", "HTTPS://AS.EXAMPLE", "https://as.example\x00", "\xfe"}
	for _, u := range upstreams {
		for _, i := range issuers {
			if err := h.PutRegistration(ctx, u, i, []byte(u+"@"+i)); err != nil {
				t.Fatalf("PutRegistration(%q, %q): %v", u, i, err)
			}
		}
	}
	if err := h.PutGrant(ctx, "alice", "{gh}", []byte("grant")); err != nil {
		t.Fatal(err)
	}
	if _, err := h.DeleteUpstreamGrants(ctx, "{gh}"); err != nil {
		t.Fatal(err)
	}
	if err := h.DeleteRegistration(ctx, "gh}", issuerA); err != nil {
		t.Fatal(err)
	}
	for _, u := range upstreams {
		for _, i := range issuers {
			got, err := h.GetRegistration(ctx, u, i)
			if u == "gh}" && i == issuerA {
				if !errors.Is(err, ErrNotFound) {
					t.Errorf("GetRegistration(%q, %q) after its delete: %q, %v", u, i, got, err)
				}
				continue
			}
			if err != nil || string(got) != u+"@"+i {
				t.Errorf("GetRegistration(%q, %q) = %q, %v", u, i, got, err)
			}
		}
	}
	if got, err := h.GetGrant(ctx, "alice", "{gh}"); !errors.Is(err, ErrNotFound) {
		t.Errorf("GetGrant after DeleteUpstreamGrants = %q, %v; want ErrNotFound", got, err)
	}
}

// testRegistrationLimit: past MaxRegistrationsPerUpstream issuers, a new issuer's registration for the upstream is
// refused with ErrFull (on every store over the data), while those there can be replaced, another upstream is not
// affected, and deleting one makes room.
func testRegistrationLimit(t *testing.T, newStore factory) {
	h := newStore(t)
	ctx := ctxT(t)
	var other RegistrationStore = h
	if h.shared {
		other = h.second(t)
	}
	for i := range MaxRegistrationsPerUpstream {
		if err := h.PutRegistration(ctx, "github", fmt.Sprintf("https://as%d.example", i), []byte("s")); err != nil {
			t.Fatalf("registration %d: %v", i+1, err)
		}
	}
	if err := other.PutRegistration(ctx, "github", "https://new.example", []byte("s")); !errors.Is(err, ErrFull) {
		t.Fatalf("PutRegistration past MaxRegistrationsPerUpstream: %v, want ErrFull", err)
	}
	if err := other.PutRegistration(ctx, "github", "https://as0.example", []byte("again")); err != nil {
		t.Fatalf("PutRegistration replacing one at the limit: %v", err)
	}
	if err := other.PutRegistration(ctx, "linear", "https://new.example", []byte("s")); err != nil {
		t.Fatalf("PutRegistration for another upstream: %v", err)
	}
	if err := h.DeleteRegistration(ctx, "github", "https://as1.example"); err != nil {
		t.Fatal(err)
	}
	if err := other.PutRegistration(ctx, "github", "https://new.example", []byte("s")); err != nil {
		t.Fatalf("PutRegistration after a delete made room: %v", err)
	}
	if got, err := h.GetRegistration(ctx, "github", "https://as0.example"); err != nil || string(got) != "again" {
		t.Errorf("GetRegistration of the one replaced at the limit: %q, %v", got, err)
	}
}

// testRegistrationInvalid: malformed arguments are refused with ErrInvalid before anything is stored.
func testRegistrationInvalid(t *testing.T, newStore factory) {
	h := newStore(t)
	ctx := ctxT(t)
	longUpstream := strings.Repeat("u", maxIDLen+1)
	longIssuer := "https://as.example/" + strings.Repeat("i", MaxIssuerLen)
	ops := []struct {
		name string
		op   func() error
	}{
		{"PutRegistration without upstream", func() error { return h.PutRegistration(ctx, "", issuerA, []byte("s")) }},
		{"PutRegistration of a long upstream", func() error {
			return h.PutRegistration(ctx, longUpstream, issuerA, []byte("s"))
		}},
		{"PutRegistration without issuer", func() error { return h.PutRegistration(ctx, "github", "", []byte("s")) }},
		{"PutRegistration of a long issuer", func() error {
			return h.PutRegistration(ctx, "github", longIssuer, []byte("s"))
		}},
		{"PutRegistration of nothing", func() error { return h.PutRegistration(ctx, "github", issuerA, nil) }},
		{"PutRegistration of a big registration", func() error {
			return h.PutRegistration(ctx, "github", issuerA, make([]byte, MaxRegistrationSize+1))
		}},
		{"GetRegistration without upstream", func() error { _, err := h.GetRegistration(ctx, "", issuerA); return err }},
		{"GetRegistration of a long issuer", func() error {
			_, err := h.GetRegistration(ctx, "github", longIssuer)
			return err
		}},
		{"DeleteRegistration without issuer", func() error { return h.DeleteRegistration(ctx, "github", "") }},
		{"DeleteRegistration of a long upstream", func() error {
			return h.DeleteRegistration(ctx, longUpstream, issuerA)
		}},
	}
	for _, tc := range ops {
		if err := tc.op(); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", tc.name, err)
		}
	}
	if _, err := h.GetRegistration(ctx, "github", issuerA); !errors.Is(err, ErrNotFound) {
		t.Errorf("GetRegistration after refused puts: %v, want ErrNotFound", err)
	}
}

// TestRedisRegistrationKeys checks the key layout the package documentation promises for registrations: with the
// prefix, no TTL, the upstream's hash tag (its grants' slot), the issuer as the field.
func TestRedisRegistrationKeys(t *testing.T) {
	t.Parallel()
	mr := miniredis.RunT(t)
	ctx := t.Context()
	for _, prefix := range []string{"", "tenant-a:"} {
		r := NewRedis(newClient(t, mr.Addr()), prefix)
		want := prefix
		if want == "" {
			want = DefaultPrefix
		}
		if err := r.PutRegistration(ctx, "gh", issuerA, []byte("sealed")); err != nil {
			t.Fatal(err)
		}
		key := want + "registrations:{gh}"
		switch {
		case !mr.Exists(key):
			t.Errorf("prefix %q: no key %s; keys: %q", prefix, key, mr.Keys())
		case mr.TTL(key) > 0:
			t.Errorf("key %s has a TTL of %v; want none", key, mr.TTL(key))
		case hashTag(key) != "gh" || hashTag(key) != hashTag(r.grantsKey("gh")):
			t.Errorf("key %s hashes by %q, its grants by %q; want gh for both", key, hashTag(key), hashTag(r.grantsKey("gh")))
		case mr.HGet(key, issuerA) != "sealed":
			t.Errorf("field %s of %s = %q", issuerA, key, mr.HGet(key, issuerA))
		}
		if err := r.DeleteRegistration(ctx, "gh", issuerA); err != nil {
			t.Fatal(err)
		}
		if mr.Exists(key) {
			t.Errorf("key %s left after its last registration was deleted", key)
		}
		r.Shutdown()
	}
}
