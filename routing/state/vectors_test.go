package state

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
)

// vectorStore is the vector cache both stores provide (the VectorCache of routing/search/hybrid, which this
// package does not import).
type vectorStore interface {
	GetVectors(ctx context.Context, keys []string) (map[string][]float32, error)
	SetVectors(ctx context.Context, vecs map[string][]float32) error
}

var (
	_ vectorStore = (*Memory)(nil)
	_ vectorStore = (*Redis)(nil)
)

// TestVectors runs the vector cache's conformance cases on the suite's stores: Memory in a synctest bubble,
// miniredis, and a real redis-server.
func TestVectors(t *testing.T) {
	t.Parallel()
	t.Run("Memory", func(t *testing.T) {
		t.Parallel()
		runVectorSuite(t, newMemoryHarness, true)
	})
	t.Run("Miniredis", func(t *testing.T) {
		t.Parallel()
		runVectorSuite(t, newMiniredisHarness, false)
	})
	t.Run("RedisServer", func(t *testing.T) {
		t.Parallel()
		runVectorSuite(t, newRedisServerFactory(startRedisServer(t)), false)
	})
}

// newRedisServerFactory makes stores on srv as TestRedisServer does, each under a prefix of its own.
func newRedisServerFactory(srv *redisServer) factory {
	return func(t *testing.T, opts ...Option) *harness {
		name := fmt.Sprintf("sbvec%d", prefixSeq.Add(1))
		newRedis := func(t *testing.T, opts ...Option) *Redis {
			r := NewRedis(newNamedClient(t, srv.addr(), name), name+":", opts...)
			t.Cleanup(r.Shutdown)
			return r
		}
		return &harness{
			Store:   newRedis(t, opts...),
			ttl:     time.Second,
			advance: wallSleep,
			second:  func(t *testing.T, opts ...Option) Store { return newRedis(t, opts...) },
			shared:  true,
		}
	}
}

func runVectorSuite(t *testing.T, newStore factory, inBubble bool) {
	tests := []storeTest{
		{"RoundTrip", testVectorRoundTrip},
		{"Keys", testVectorKeys},
		{"Shared", testVectorShared},
		{"Invalid", testVectorInvalid},
		{"Cancelled", testVectorCancelled},
		{"Many", testVectorMany},
	}
	runStoreTests(t, tests, newStore, inBubble)
}

func vectors(t *testing.T, h *harness) vectorStore {
	t.Helper()
	v, ok := h.Store.(vectorStore)
	if !ok {
		t.Fatalf("%T has no GetVectors and SetVectors", h.Store)
	}
	return v
}

// sameVectors compares bit for bit, so that NaN, -0 and subnormals count.
func sameVectors(t *testing.T, got, want map[string][]float32, what string) {
	t.Helper()
	bits := func(m map[string][]float32) map[string][]uint32 {
		out := map[string][]uint32{}
		for k, v := range m {
			for _, x := range v {
				out[k] = append(out[k], math.Float32bits(x))
			}
		}
		return out
	}
	g, w := bits(got), bits(want)
	if len(g) != len(w) {
		t.Errorf("%s: %d vectors %v, want %d %v", what, len(g), got, len(w), want)
		return
	}
	for k, wv := range w {
		if gv, ok := g[k]; !ok || !slices.Equal(gv, wv) {
			t.Errorf("%s: vector %q = %v, want %v", what, k, got[k], want[k])
		}
	}
}

// testVectorRoundTrip: vectors come back exactly (special values included), missing keys are left out, SetVectors
// replaces, and what either side holds is its own.
func testVectorRoundTrip(t *testing.T, newStore factory) {
	s := vectors(t, newStore(t))
	ctx := ctxT(t)
	got, err := s.GetVectors(ctx, []string{"m:a", "m:b"})
	if err != nil || len(got) != 0 {
		t.Fatalf("GetVectors on an empty store = %v, %v", got, err)
	}
	if got, err := s.GetVectors(ctx, nil); err != nil || len(got) != 0 {
		t.Fatalf("GetVectors of no keys = %v, %v", got, err)
	}
	if err := s.SetVectors(ctx, nil); err != nil {
		t.Fatalf("SetVectors of nothing: %v", err)
	}
	nan := math.Float32frombits(0x7fc00001)
	in := map[string][]float32{
		"m:a": {0.25, -1, 3.5},
		"m:b": {float32(math.Copysign(0, -1)), math.SmallestNonzeroFloat32, math.MaxFloat32, nan, float32(math.Inf(-1))},
		"m:c": {1},
	}
	if err := s.SetVectors(ctx, in); err != nil {
		t.Fatal(err)
	}
	want := map[string][]float32{"m:a": {0.25, -1, 3.5}, "m:b": slices.Clone(in["m:b"])}
	in["m:a"][0] = 99 // the store kept its own copy
	got, err = s.GetVectors(ctx, []string{"m:a", "m:b", "m:missing", "m:a"})
	if err != nil {
		t.Fatal(err)
	}
	sameVectors(t, got, want, "after SetVectors")
	got["m:a"][1] = 42 // and what it returns is the caller's
	again, err := s.GetVectors(ctx, []string{"m:a", "m:c"})
	if err != nil {
		t.Fatal(err)
	}
	sameVectors(t, again, map[string][]float32{"m:a": {0.25, -1, 3.5}, "m:c": {1}}, "after changing a result")

	// Another vector under a key replaces it, another length too.
	if err := s.SetVectors(ctx, map[string][]float32{"m:a": {7, 8}}); err != nil {
		t.Fatal(err)
	}
	got, err = s.GetVectors(ctx, []string{"m:a", "m:b"})
	if err != nil {
		t.Fatal(err)
	}
	want["m:a"] = []float32{7, 8}
	sameVectors(t, got, want, "after replacing")
}

// testVectorKeys: keys are opaque bytes, and keys that differ in one byte are different vectors.
func testVectorKeys(t *testing.T, newStore factory) {
	s := vectors(t, newStore(t))
	ctx := ctxT(t)
	want := map[string][]float32{}
	keys := []string{
		"text-embedding-3-small:0123abcd", "text-embedding-3-small:0123abcd\x00", "\x00", "模型:摘要",
		"m:\xff\xfe", "{pins}", "m:{x}", "m:UPPER", "m:upper", "m:" + strings.Repeat("x", 4094),
	}
	for i, k := range keys {
		want[k] = []float32{float32(i), float32(-i)}
	}
	if err := s.SetVectors(ctx, want); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetVectors(ctx, keys)
	if err != nil {
		t.Fatal(err)
	}
	sameVectors(t, got, want, "odd keys")
}

// testVectorShared: another store over the same Redis (a replica, or this one restarted) finds the vectors; a new
// Memory has none.
func testVectorShared(t *testing.T, newStore factory) {
	h := newStore(t)
	ctx := ctxT(t)
	want := map[string][]float32{"m:a": {1, 2, 3}}
	if err := vectors(t, h).SetVectors(ctx, want); err != nil {
		t.Fatal(err)
	}
	other, ok := h.second(t).(vectorStore)
	if !ok {
		t.Fatal("the second store has no vectors")
	}
	got, err := other.GetVectors(ctx, []string{"m:a"})
	if err != nil {
		t.Fatal(err)
	}
	if !h.shared {
		want = nil
	}
	sameVectors(t, got, want, "on the second store")
}

// testVectorInvalid: bad keys and vectors are refused with ErrInvalid, and a SetVectors with one bad entry
// stores none of them.
func testVectorInvalid(t *testing.T, newStore factory) {
	s := vectors(t, newStore(t))
	ctx := ctxT(t)
	long := strings.Repeat("k", 4097)
	for _, keys := range [][]string{{""}, {"m:a", long}} {
		if _, err := s.GetVectors(ctx, keys); !errors.Is(err, ErrInvalid) {
			t.Errorf("GetVectors(keys of %d bytes): %v, want ErrInvalid", len(keys[len(keys)-1]), err)
		}
	}
	for name, bad := range map[string]map[string][]float32{
		"empty key":      {"": {1}},
		"long key":       {long: {1}},
		"empty vector":   {"m:b": {}},
		"nil vector":     {"m:b": nil},
		"too many dims":  {"m:b": make([]float32, MaxVectorDims+1)},
		"one bad of two": {"m:ok": {1}, "m:b": nil},
	} {
		if err := s.SetVectors(ctx, bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("SetVectors(%s): %v, want ErrInvalid", name, err)
		}
	}
	if got, err := s.GetVectors(ctx, []string{"m:ok", "m:b"}); err != nil || len(got) != 0 {
		t.Errorf("after refused SetVectors: %v, %v; want nothing stored", got, err)
	}
	edge := map[string][]float32{strings.Repeat("k", 4096): make([]float32, MaxVectorDims)}
	if err := s.SetVectors(ctx, edge); err != nil {
		t.Fatalf("SetVectors at the bounds: %v", err)
	}
	got, err := s.GetVectors(ctx, []string{strings.Repeat("k", 4096)})
	if err != nil {
		t.Fatal(err)
	}
	sameVectors(t, got, edge, "at the bounds")
}

// testVectorCancelled: with a cancelled context both methods fail with an error wrapping ctx.Err().
func testVectorCancelled(t *testing.T, newStore factory) {
	s := vectors(t, newStore(t))
	ctx, cancel := context.WithCancel(ctxT(t))
	cancel()
	if _, err := s.GetVectors(ctx, []string{"m:a"}); !errors.Is(err, context.Canceled) {
		t.Errorf("GetVectors with a cancelled context: %v, want context.Canceled", err)
	}
	if err := s.SetVectors(ctx, map[string][]float32{"m:a": {1}}); !errors.Is(err, context.Canceled) {
		t.Errorf("SetVectors with a cancelled context: %v, want context.Canceled", err)
	}
}

// testVectorMany: more vectors than one pipeline carries, in one call each way.
func testVectorMany(t *testing.T, newStore factory) {
	s := vectors(t, newStore(t))
	ctx := ctxT(t)
	const n = 3*vectorChunk + 7
	want := make(map[string][]float32, n)
	keys := make([]string, 0, n+1)
	for i := range n {
		k := fmt.Sprintf("m:%04d", i)
		want[k] = []float32{float32(i), 0.5, -float32(i)}
		keys = append(keys, k)
	}
	if err := s.SetVectors(ctx, want); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetVectors(ctx, append(keys, "m:absent"))
	if err != nil {
		t.Fatal(err)
	}
	sameVectors(t, got, want, fmt.Sprintf("%d vectors", n))
}

// TestMemoryVectorsLRU: past its bound a Memory drops the least recently used vectors, a read counting as a use.
func TestMemoryVectorsLRU(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	m := NewMemory()
	m.vectors.max = 3
	set := func(keys ...string) {
		t.Helper()
		for _, k := range keys {
			if err := m.SetVectors(ctx, map[string][]float32{k: {1}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	have := func(want ...string) {
		t.Helper()
		got, err := m.GetVectors(ctx, []string{"a", "b", "c", "d", "e"})
		if err != nil {
			t.Fatal(err)
		}
		if ks := slices.Sorted(maps.Keys(got)); !slices.Equal(ks, want) {
			t.Fatalf("vectors %v, want %v", ks, want)
		}
	}
	set("a", "b", "c")                                          // most recent first: c b a
	if _, err := m.GetVectors(ctx, []string{"a"}); err != nil { // a c b
		t.Fatal(err)
	}
	set("d") // d a c: b dropped
	if n := m.vectors.held().Len(); n != 3 {
		t.Fatalf("%d vectors held, want 3", n)
	}
	set("c") // c d a: replacing is a use, and drops nothing
	set("e") // e c d: a dropped
	have("c", "d", "e")
	if got := m.vectors.held().Keys(); len(got) != 3 {
		t.Fatalf("recency list of %d, want 3", len(got))
	}
}

// TestRedisVectorKeys checks the layout the documentation of vectors.go promises on miniredis: one string key per
// vector under the prefix, float32 little-endian, a TTL of VectorTTL restarted by each read, gone after it; a value
// that is not a vector counts as missing.
func TestRedisVectorKeys(t *testing.T) {
	t.Parallel()
	mr := miniredis.RunT(t)
	ctx := t.Context()
	for _, prefix := range []string{"", "tenant-a:"} {
		want := prefix
		if want == "" {
			want = DefaultPrefix
		}
		r := NewRedis(newClient(t, mr.Addr()), prefix)
		t.Cleanup(r.Shutdown)
		if err := r.SetVectors(ctx, map[string][]float32{"m:k": {1, -2}}); err != nil {
			t.Fatal(err)
		}
		key := want + "vector:m:k"
		if got, err := mr.Get(key); err != nil || got != "\x00\x00\x80\x3f\x00\x00\x00\xc0" {
			t.Errorf("%s = %q, %v; want 1 and -2 as float32 little-endian", key, got, err)
		}
		if ttl := mr.TTL(key); ttl != VectorTTL {
			t.Errorf("TTL of %s = %v, want %v", key, ttl, VectorTTL)
		}
		mr.FastForward(VectorTTL - time.Hour)
		if got, err := r.GetVectors(ctx, []string{"m:k"}); err != nil || len(got["m:k"]) != 2 {
			t.Fatalf("GetVectors before the TTL = %v, %v", got, err)
		}
		if ttl := mr.TTL(key); ttl != VectorTTL {
			t.Errorf("TTL of %s after a read = %v, want it restarted at %v", key, ttl, VectorTTL)
		}
		mr.FastForward(VectorTTL)
		if got, err := r.GetVectors(ctx, []string{"m:k"}); err != nil || len(got) != 0 {
			t.Errorf("GetVectors after the TTL = %v, %v; want none", got, err)
		}
	}
	for _, k := range mr.Keys() {
		if !strings.HasPrefix(k, DefaultPrefix) && !strings.HasPrefix(k, "tenant-a:") {
			t.Errorf("key %q outside the prefixes", k)
		}
	}

	r := NewRedis(newClient(t, mr.Addr()), "")
	t.Cleanup(r.Shutdown)
	for _, bad := range []string{"", "abc", strings.Repeat("\x00", 4*MaxVectorDims+4)} {
		if err := mr.Set(DefaultPrefix+"vector:m:bad", bad); err != nil {
			t.Fatal(err)
		}
		if got, err := r.GetVectors(ctx, []string{"m:bad"}); err != nil || len(got) != 0 {
			t.Errorf("GetVectors of a stored %d bytes = %v, %v; want a miss", len(bad), got, err)
		}
	}
	// Another type under the key is an error of Redis's (WRONGTYPE), reported as such.
	mr.HSet(DefaultPrefix+"vector:m:hash", "f", "v")
	if _, err := r.GetVectors(ctx, []string{"m:hash"}); !errors.Is(err, ErrUnavailable) {
		t.Errorf("GetVectors of a hash: %v, want ErrUnavailable", err)
	}
}

// TestRedisVectorsDown: with Redis down both methods fail with ErrUnavailable, and work again once it is back.
func TestRedisVectorsDown(t *testing.T) {
	t.Parallel()
	mr := miniredis.RunT(t)
	ctx := t.Context()
	r := NewRedis(newClient(t, mr.Addr()), "")
	t.Cleanup(r.Shutdown)
	if err := r.SetVectors(ctx, map[string][]float32{"m:a": {1}}); err != nil {
		t.Fatal(err)
	}
	mr.Close()
	if _, err := r.GetVectors(ctx, []string{"m:a"}); !errors.Is(err, ErrUnavailable) {
		t.Errorf("GetVectors with Redis down: %v, want ErrUnavailable", err)
	}
	if err := r.SetVectors(ctx, map[string][]float32{"m:a": {1}}); !errors.Is(err, ErrUnavailable) {
		t.Errorf("SetVectors with Redis down: %v, want ErrUnavailable", err)
	}
	if err := mr.Restart(); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "Ping after restart", func() bool { return r.Ping(ctx) == nil })
	if got, err := r.GetVectors(ctx, []string{"m:a"}); err != nil || len(got) != 1 {
		t.Errorf("GetVectors after restart = %v, %v", got, err)
	}
}
