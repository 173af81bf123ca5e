package state

import (
	"errors"
	"strconv"
	"testing"
	"testing/synctest"
	"time"
)

// newMemoryHarness makes a Memory inside the calling test's synctest bubble (runSuite's inBubble): its clock is
// the bubble's, so advance is a plain time.Sleep that costs nothing and moves time exactly by d, TTLs and Tail's
// block timer alike; and a Tail waiting for events is durably blocked, which synctest.Wait sees.
func newMemoryHarness(t *testing.T, opts ...Option) *harness {
	const ttl = time.Second // as against real Redis: fake time also runs down ctxT's deadline
	newMemory := func(t *testing.T, opts ...Option) *Memory {
		m := NewMemory(append([]Option{WithSessionTTL(ttl), WithEventLog(0, ttl)}, opts...)...)
		t.Cleanup(m.Shutdown)
		return m
	}
	return &harness{
		Store:     newMemory(t, opts...),
		advance:   time.Sleep, // the bubble's clock: the memory suites run in synctest
		ttl:       ttl,
		awaitTail: func(*testing.T) func() { return synctest.Wait },
		// A second Memory shares nothing with the first: it is what a restart leaves, an empty store.
		second: func(t *testing.T, opts ...Option) Store { return newMemory(t, opts...) },
	}
}

func TestMemory(t *testing.T) {
	t.Parallel()
	runSuite(t, newMemoryHarness, true)
}

// TestMemorySweeps checks that expired entries do not pile up in a Memory that is only written to.
func TestMemorySweeps(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		m := NewMemory(WithSessionTTL(time.Minute), WithEventLog(0, time.Minute))
		ctx := t.Context()
		for i := range 100 {
			id := string(rune('a'+i%26)) + time.Duration(i).String()
			if err := m.Create(ctx, SessionRecord{ID: id}); err != nil {
				t.Fatal(err)
			}
			if _, err := m.Append(ctx, id, 1, []byte("x")); err != nil {
				t.Fatal(err)
			}
			if _, _, err := m.Allow(ctx, id, 10, 1); err != nil {
				t.Fatal(err)
			}
			if _, _, err := m.Acquire(ctx, id, 1, time.Second); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(2 * time.Minute) // the bubble's clock: instant
		if err := m.Create(ctx, SessionRecord{ID: "last"}); err != nil {
			t.Fatal(err)
		}
		if _, err := m.Append(ctx, "last", 1, []byte("x")); err != nil {
			t.Fatal(err)
		}
		if _, _, err := m.Allow(ctx, "last", 10, 1); err != nil {
			t.Fatal(err)
		}
		m.memSessions.mu.Lock()
		sessions := len(m.sessions)
		m.memSessions.mu.Unlock()
		m.memEventLog.mu.Lock()
		logs := len(m.logs)
		m.memEventLog.mu.Unlock()
		m.memLimiter.mu.Lock()
		buckets, leases := len(m.buckets), len(m.leases)
		m.memLimiter.mu.Unlock()
		if sessions != 1 || logs != 1 || buckets != 1 || leases != 0 {
			t.Errorf("after the sweep: %d sessions, %d logs, %d buckets, %d lease sets; want 1, 1, 1, 0",
				sessions, logs, buckets, leases)
		}
	})
}

// TestMemoryMaxPins checks that a Memory keeps MaxPins pins, and refuses the next one with ErrFull.
func TestMemoryMaxPins(t *testing.T) {
	t.Parallel()
	m := NewMemory()
	defer m.Shutdown()
	ctx := t.Context()
	for i := range MaxPins {
		if _, err := m.PinIfAbsent(ctx, strconv.Itoa(i), "h"); err != nil {
			t.Fatalf("pin %d: %v", i+1, err)
		}
	}
	if _, err := m.PinIfAbsent(ctx, "one more", "h"); !errors.Is(err, ErrFull) {
		t.Fatalf("pin %d: %v, want ErrFull", MaxPins+1, err)
	}
	if err := m.SetPin(ctx, "one more", "h"); !errors.Is(err, ErrFull) {
		t.Fatalf("SetPin of pin %d: %v, want ErrFull", MaxPins+1, err)
	}
	if pins, err := m.Pins(ctx); err != nil || len(pins) != MaxPins {
		t.Fatalf("Pins: %d, %v; want %d", len(pins), err, MaxPins)
	}
}

func TestEventIDs(t *testing.T) {
	t.Parallel()
	id := FormatEventID(3, "1700000000000-5")
	if id != "3_1700000000000-5" {
		t.Fatalf("FormatEventID = %q", id)
	}
	stream, pos, ok := ParseEventID(id)
	if !ok || stream != 3 || pos != "1700000000000-5" {
		t.Fatalf("ParseEventID(%q) = %d, %q, %v", id, stream, pos, ok)
	}
	for _, bad := range []string{"", "3", "3_", "3_17", "x_1-0", "-1_1-0", "3_1-x", "3_a-0", "3-1_0"} {
		if _, _, ok := ParseEventID(bad); ok {
			t.Errorf("ParseEventID(%q) accepted", bad)
		}
	}
	p := position{ms: 5, seq: ^uint64(0)}
	if n := p.next(); n != (position{ms: 6}) {
		t.Errorf("next of %v = %v", p, n)
	}
}
