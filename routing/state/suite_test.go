package state

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// harness is one implementation under the conformance suite.
type harness struct {
	Store
	// advance moves time on by d for TTLs and limiters: a sleep in a synctest bubble (instant), miniredis's
	// FastForward and SetTime, or a real sleep against a real server. Whatever expires within d has expired
	// when it returns.
	advance func(d time.Duration)
	// awaitTail is called just before another goroutine calls Tail; the function it returns comes back once that
	// Tail waits for events, so that an Append or Close after it wakes the Tail rather than being there first.
	awaitTail func(t *testing.T) (wait func())
	// ttl is the session TTL and event-log TTL the factory gives stores: long with miniredis's time, short with
	// real time and with a bubble's (whose sleeps also run down ctxT's deadline).
	ttl time.Duration
	// approxTrim: the event log trims approximately (MAXLEN ~ in Redis: whole nodes of 100 entries).
	approxTrim bool
	// second makes another store as a second replica, or this one restarted, makes it: over the same Redis data
	// and prefix, on a client of its own; for Memory a new, empty Memory, its data being its process's. opts come
	// after the factory's own, as with the factory.
	second func(t *testing.T, opts ...Option) Store
	// shared: what this store writes, second's stores see (Redis); otherwise a restart forgets it (Memory).
	shared bool
}

// storeTest is one test of a suite, run against one store implementation.
type storeTest struct {
	name string
	fn   func(*testing.T, factory)
}

// runStoreTests runs a suite's tests in parallel, each in a synctest bubble (newStore included) when inBubble.
func runStoreTests(t *testing.T, tests []storeTest, newStore factory, inBubble bool) {
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if inBubble {
				synctest.Test(t, func(t *testing.T) { tc.fn(t, newStore) })
			} else {
				tc.fn(t, newStore)
			}
		})
	}
}

// factory makes a fresh, empty store; t.Cleanup shuts it down. opts come after the factory's own (its TTLs).
type factory func(t *testing.T, opts ...Option) *harness

// runSuite is the conformance suite every Store implementation passes. With inBubble each test runs in a
// synctest bubble, newStore included, so that the store's timers and clock are the bubble's: for stores that do
// no I/O (Memory), not for those that talk to a server.
func runSuite(t *testing.T, newStore factory, inBubble bool) {
	tests := []storeTest{
		{"SessionCRUD", testSessionCRUD},
		{"SessionTTL", testSessionTTL},
		{"SessionConcurrentUpdate", testSessionConcurrentUpdate},
		{"EventAppendAfter", testEventAppendAfter},
		{"EventTail", testEventTail},
		{"EventClose", testEventClose},
		{"EventMaxLen", testEventMaxLen},
		{"EventTTL", testEventTTL},
		{"BusFanOut", testBusFanOut},
		{"BusOverflow", testBusOverflow},
		{"BusShutdown", testBusShutdown},
		{"RateLimit", testRateLimit},
		{"Leases", testLeases},
		{"Replicas", testReplicas},
		{"Pins", testPins},
		{"PinConcurrent", testPinConcurrent},
		{"PinKeys", testPinKeys},
		{"PinRestart", testPinRestart},
		{"PinLimit", testPinLimit},
		{"PinCancelled", testPinCancelled},
	}
	runStoreTests(t, tests, newStore, inBubble)
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func sampleRecord(id string) SessionRecord {
	return SessionRecord{
		ID:               id,
		Principal:        "alice@example.com",
		ProtocolVersion:  "2025-11-25",
		Capabilities:     json.RawMessage(`{"roots":{},"sampling":{}}`),
		ClientInfo:       json.RawMessage(`{"name":"test","version":"1.0"}`),
		LogLevel:         "info",
		Subscriptions:    []string{"file:///a", "file:///b"},
		UpstreamSessions: map[string]string{"search": "up-123"},
	}
}

// sameRecord compares records but for Created/Touched, which it checks are set.
func sameRecord(t *testing.T, got, want SessionRecord) {
	t.Helper()
	if got.Created.IsZero() || got.Touched.IsZero() {
		t.Errorf("Created %v, Touched %v: want both set", got.Created, got.Touched)
	}
	got.Created, got.Touched, want.Created, want.Touched = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("record\n got %+v\nwant %+v", got, want)
	}
}

func testSessionCRUD(t *testing.T, newStore factory) {
	h := newStore(t)
	ctx := ctxT(t)
	rec := sampleRecord("s1")
	if err := h.Create(ctx, rec); err != nil {
		t.Fatal(err)
	}
	if err := h.Create(ctx, sampleRecord("s1")); !errors.Is(err, ErrExists) {
		t.Fatalf("Create of an existing id: %v, want ErrExists", err)
	}
	got, err := h.Get(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	sameRecord(t, got, rec)

	// What Get returns is the caller's: changing it changes nothing stored.
	got.Subscriptions[0] = "changed"
	got.UpstreamSessions["search"] = "changed"
	again, _ := h.Get(ctx, "s1")
	sameRecord(t, again, rec)

	if _, err := h.Get(ctx, "nope"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get of a missing id: %v, want ErrNotFound", err)
	}
	if err := h.Touch(ctx, "nope"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Touch of a missing id: %v, want ErrNotFound", err)
	}
	if err := h.Update(ctx, "nope", func(*SessionRecord) error { return nil }); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Update of a missing id: %v, want ErrNotFound", err)
	}

	err = h.Update(ctx, "s1", func(r *SessionRecord) error {
		r.LogLevel = "debug"
		r.Subscriptions = append(r.Subscriptions, "file:///c")
		r.UpstreamSessions["files"] = "up-456"
		r.ID = "ignored"
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := rec.Clone()
	want.LogLevel = "debug"
	want.Subscriptions = append(want.Subscriptions, "file:///c")
	want.UpstreamSessions["files"] = "up-456"
	got, _ = h.Get(ctx, "s1")
	sameRecord(t, got, want)
	if !got.Created.Equal(again.Created) {
		t.Errorf("Created changed from %v to %v", again.Created, got.Created)
	}

	// A callback's error is returned as is and nothing is written.
	boom := errors.New("boom")
	err = h.Update(ctx, "s1", func(r *SessionRecord) error { r.LogLevel = "error"; return boom })
	if err != boom {
		t.Fatalf("Update returned %v, want the callback's error", err)
	}
	got, _ = h.Get(ctx, "s1")
	sameRecord(t, got, want)

	before := got.Touched
	if err := h.Touch(ctx, "s1"); err != nil {
		t.Fatal(err)
	}
	got, _ = h.Get(ctx, "s1")
	if got.Touched.Before(before) {
		t.Errorf("Touched went back from %v to %v", before, got.Touched)
	}
	sameRecord(t, got, want)

	if err := h.Delete(ctx, "s1"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Get(ctx, "s1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get after Delete: %v, want ErrNotFound", err)
	}
	if err := h.Delete(ctx, "s1"); err != nil {
		t.Fatalf("Delete of a missing id: %v", err)
	}
	if err := h.Create(ctx, sampleRecord("s1")); err != nil {
		t.Fatalf("Create after Delete: %v", err)
	}

	if err := h.Create(ctx, SessionRecord{}); !errors.Is(err, ErrInvalid) {
		t.Errorf("Create without id: %v, want ErrInvalid", err)
	}
	if _, err := h.Get(ctx, ""); !errors.Is(err, ErrInvalid) {
		t.Errorf("Get without id: %v, want ErrInvalid", err)
	}
	if err := h.Ping(ctx); err != nil {
		t.Errorf("Ping: %v", err)
	}
}

func testSessionTTL(t *testing.T, newStore factory) {
	h := newStore(t)
	ctx := ctxT(t)
	for _, id := range []string{"kept", "idle", "updated"} {
		if err := h.Create(ctx, sampleRecord(id)); err != nil {
			t.Fatal(err)
		}
	}
	h.advance(h.ttl * 6 / 10)
	if err := h.Touch(ctx, "kept"); err != nil {
		t.Fatal(err)
	}
	if err := h.Update(ctx, "updated", func(r *SessionRecord) error { r.LogLevel = "debug"; return nil }); err != nil {
		t.Fatal(err)
	}
	h.advance(h.ttl * 6 / 10) // 1.2 TTL since Create, 0.6 since the Touch and the Update
	for _, id := range []string{"kept", "updated"} {
		if _, err := h.Get(ctx, id); err != nil {
			t.Errorf("Get(%s) a 0.6 TTL after its last use: %v", id, err)
		}
	}
	if _, err := h.Get(ctx, "idle"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get of a record idle for 1.2 TTL: %v, want ErrNotFound", err)
	}
	if err := h.Touch(ctx, "idle"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Touch of an expired record: %v, want ErrNotFound", err)
	}
	h.advance(h.ttl * 6 / 10)
	if _, err := h.Get(ctx, "kept"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get of a record touched 1.2 TTL ago: %v, want ErrNotFound", err)
	}
	if err := h.Create(ctx, sampleRecord("idle")); err != nil {
		t.Errorf("Create over an expired record: %v", err)
	}
}

func testSessionConcurrentUpdate(t *testing.T, newStore factory) {
	h := newStore(t)
	ctx := ctxT(t)
	if err := h.Create(ctx, SessionRecord{ID: "busy", UpstreamSessions: map[string]string{}}); err != nil {
		t.Fatal(err)
	}
	const workers, each = 16, 15
	var wg sync.WaitGroup
	errs := make(chan error, workers*each)
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				err := h.Update(ctx, "busy", func(r *SessionRecord) error {
					n, _ := strconv.Atoi(r.UpstreamSessions["count"])
					if r.UpstreamSessions == nil {
						r.UpstreamSessions = map[string]string{}
					}
					r.UpstreamSessions["count"] = strconv.Itoa(n + 1)
					r.Subscriptions = append(r.Subscriptions, fmt.Sprintf("w%d-%d", w, i))
					return nil
				})
				if err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	rec, err := h.Get(ctx, "busy")
	if err != nil {
		t.Fatal(err)
	}
	if got := rec.UpstreamSessions["count"]; got != strconv.Itoa(workers*each) {
		t.Errorf("count = %s, want %d: updates were lost", got, workers*each)
	}
	seen := map[string]bool{}
	for _, s := range rec.Subscriptions {
		seen[s] = true
	}
	if len(rec.Subscriptions) != workers*each || len(seen) != workers*each {
		t.Errorf("%d subscriptions (%d distinct), want %d", len(rec.Subscriptions), len(seen), workers*each)
	}
}

func eventData(evs []Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = string(e.Data)
	}
	return out
}

func testEventAppendAfter(t *testing.T, newStore factory) {
	h := newStore(t)
	ctx := ctxT(t)
	var ids []string
	for i := range 3 {
		id, err := h.Append(ctx, "s1", 7, []byte("m"+strconv.Itoa(i)))
		if err != nil {
			t.Fatal(err)
		}
		stream, _, ok := ParseEventID(id)
		if !ok || stream != 7 {
			t.Fatalf("event id %q: stream %d, ok %v; want stream 7", id, stream, ok)
		}
		ids = append(ids, id)
	}
	if ids[0] == ids[1] || ids[1] == ids[2] {
		t.Fatalf("ids not distinct: %v", ids)
	}
	// Other streams and sessions are separate logs.
	if _, err := h.Append(ctx, "s1", 8, []byte("other stream")); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Append(ctx, "s2", 7, []byte("other session")); err != nil {
		t.Fatal(err)
	}

	all, err := h.After(ctx, "s1", 7, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := eventData(all); !reflect.DeepEqual(got, []string{"m0", "m1", "m2"}) {
		t.Fatalf("After(\"\") = %v", got)
	}
	for i, e := range all {
		if e.ID != ids[i] {
			t.Errorf("event %d id %q, Append returned %q", i, e.ID, ids[i])
		}
	}
	rest, err := h.After(ctx, "s1", 7, ids[0], 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := eventData(rest); !reflect.DeepEqual(got, []string{"m1", "m2"}) {
		t.Errorf("After(first) = %v", got)
	}
	one, _ := h.After(ctx, "s1", 7, ids[0], 1)
	if got := eventData(one); !reflect.DeepEqual(got, []string{"m1"}) {
		t.Errorf("After(first, max 1) = %v", got)
	}
	none, err := h.After(ctx, "s1", 7, ids[2], 0)
	if err != nil || len(none) != 0 {
		t.Errorf("After(last) = %v, %v; want nothing", eventData(none), err)
	}
	empty, err := h.After(ctx, "nobody", 1, "", 0)
	if err != nil || len(empty) != 0 {
		t.Errorf("After on a missing log = %v, %v; want nothing", eventData(empty), err)
	}
	if _, err := h.After(ctx, "s1", 8, ids[0], 0); !errors.Is(err, ErrInvalid) {
		t.Errorf("After with another stream's id: %v, want ErrInvalid", err)
	}
	if _, err := h.After(ctx, "s1", 7, "garbage", 0); !errors.Is(err, ErrInvalid) {
		t.Errorf("After with a malformed id: %v, want ErrInvalid", err)
	}
	if _, err := h.Append(ctx, "s1", -1, nil); !errors.Is(err, ErrInvalid) {
		t.Errorf("Append to stream -1: %v, want ErrInvalid", err)
	}
}

type tailResult struct {
	evs []Event
	err error
	at  time.Duration
}

// tailAsync calls Tail in another goroutine and returns once that Tail waits for events (harness.awaitTail).
func tailAsync(t *testing.T, h *harness, ctx context.Context, session string, stream int64, after string, block time.Duration) <-chan tailResult {
	t.Helper()
	out := make(chan tailResult, 1)
	waiting := h.awaitTail(t)
	start := time.Now()
	go func() {
		evs, err := h.Tail(ctx, session, stream, after, block)
		out <- tailResult{evs, err, time.Since(start)}
	}()
	waiting()
	return out
}

func testEventTail(t *testing.T, newStore factory) {
	h := newStore(t)
	ctx := ctxT(t)
	first, err := h.Append(ctx, "s1", 1, []byte("m0"))
	if err != nil {
		t.Fatal(err)
	}
	// Something already after afterID: at once, even with a long block.
	evs, err := h.Tail(ctx, "s1", 1, "", 10*time.Second)
	if err != nil || !reflect.DeepEqual(eventData(evs), []string{"m0"}) {
		t.Fatalf("Tail from the start = %v, %v", eventData(evs), err)
	}
	// Nothing and no block: at once, nothing.
	evs, err = h.Tail(ctx, "s1", 1, first, 0)
	if err != nil || len(evs) != 0 {
		t.Fatalf("Tail without block = %v, %v", eventData(evs), err)
	}
	// Nothing within the block: nil, nil after it.
	start := time.Now()
	evs, err = h.Tail(ctx, "s1", 1, first, 200*time.Millisecond)
	if took := time.Since(start); err != nil || len(evs) != 0 || took < 150*time.Millisecond || took > 3*time.Second {
		t.Fatalf("Tail with nothing new = %v, %v after %v; want nothing after about 200ms", eventData(evs), err, took)
	}
	// A context deadline shorter than the block cuts the wait, without an error.
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	evs, err = h.Tail(short, "s1", 1, first, time.Minute)
	cancel()
	if err != nil || len(evs) != 0 {
		t.Fatalf("Tail until the context's deadline = %v, %v", eventData(evs), err)
	}
	// An Append wakes a waiting Tail.
	res := tailAsync(t, h, ctx, "s1", 1, first, 10*time.Second)
	second, err := h.Append(ctx, "s1", 1, []byte("m1"))
	if err != nil {
		t.Fatal(err)
	}
	r := <-res
	if r.err != nil || !reflect.DeepEqual(eventData(r.evs), []string{"m1"}) || r.evs[0].ID != second {
		t.Fatalf("Tail woken by Append = %v, %v", r.evs, r.err)
	}
	if r.at > 5*time.Second {
		t.Errorf("Tail woke %v after the Append", r.at)
	}
	// Tail of a log that does not exist yet waits for its first event.
	res = tailAsync(t, h, ctx, "s1", 2, "", 10*time.Second)
	if _, err := h.Append(ctx, "s1", 2, []byte("new log")); err != nil {
		t.Fatal(err)
	}
	if r := <-res; r.err != nil || !reflect.DeepEqual(eventData(r.evs), []string{"new log"}) {
		t.Fatalf("Tail of a new log = %v, %v", eventData(r.evs), r.err)
	}
}

func testEventClose(t *testing.T, newStore factory) {
	h := newStore(t)
	ctx := ctxT(t)
	id0, _ := h.Append(ctx, "s1", 3, []byte("m0"))
	id1, _ := h.Append(ctx, "s1", 3, []byte("m1"))

	res := tailAsync(t, h, ctx, "s1", 3, id1, 10*time.Second)
	if err := h.Close(ctx, "s1", 3); err != nil {
		t.Fatal(err)
	}
	if r := <-res; !errors.Is(r.err, ErrClosed) || len(r.evs) != 0 || r.at > 5*time.Second {
		t.Fatalf("waiting Tail at Close = %v, %v after %v; want ErrClosed", eventData(r.evs), r.err, r.at)
	}
	if err := h.Close(ctx, "s1", 3); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := h.Append(ctx, "s1", 3, []byte("late")); !errors.Is(err, ErrClosed) {
		t.Fatalf("Append after Close: %v, want ErrClosed", err)
	}
	// A tailer behind gets the rest first, then ErrClosed, without waiting.
	evs, err := h.Tail(ctx, "s1", 3, id0, 10*time.Second)
	if err != nil || !reflect.DeepEqual(eventData(evs), []string{"m1"}) {
		t.Fatalf("Tail behind a closed stream = %v, %v", eventData(evs), err)
	}
	start := time.Now()
	if _, err := h.Tail(ctx, "s1", 3, evs[0].ID, 10*time.Second); !errors.Is(err, ErrClosed) || time.Since(start) > 5*time.Second {
		t.Fatalf("Tail at the end of a closed stream: %v after %v, want ErrClosed at once", err, time.Since(start))
	}
	// The log stays readable.
	all, err := h.After(ctx, "s1", 3, "", 0)
	if err != nil || !reflect.DeepEqual(eventData(all), []string{"m0", "m1"}) {
		t.Fatalf("After on a closed stream = %v, %v", eventData(all), err)
	}
	// Closing a stream with no log yet makes it closed too.
	if err := h.Close(ctx, "s1", 4); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Tail(ctx, "s1", 4, "", time.Second); !errors.Is(err, ErrClosed) {
		t.Fatalf("Tail of an empty closed stream: %v, want ErrClosed", err)
	}
}

func testEventMaxLen(t *testing.T, newStore factory) {
	const maxLen, n = 10, 350
	h := newStore(t, WithEventLog(maxLen, 0))
	ctx := ctxT(t)
	var last string
	for i := range n {
		id, err := h.Append(ctx, "s1", 1, []byte(strconv.Itoa(i)))
		if err != nil {
			t.Fatal(err)
		}
		last = id
	}
	evs, err := h.After(ctx, "s1", 1, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	limit := maxLen
	if h.approxTrim {
		limit = maxLen + 100 // MAXLEN ~ trims whole nodes (stream-node-max-entries)
	}
	if len(evs) < maxLen || len(evs) > limit {
		t.Fatalf("%d events kept of %d, want %d..%d", len(evs), n, maxLen, limit)
	}
	// What is kept is the newest, in order.
	for i, e := range evs {
		if want := strconv.Itoa(n - len(evs) + i); string(e.Data) != want {
			t.Fatalf("kept event %d is %q, want %q", i, e.Data, want)
		}
	}
	if evs[len(evs)-1].ID != last {
		t.Errorf("last kept id %s, Append returned %s", evs[len(evs)-1].ID, last)
	}
	// Resuming from a trimmed id gets what is left.
	old, err := h.After(ctx, "s1", 1, FormatEventID(1, "1-0"), 0)
	if err != nil || len(old) != len(evs) {
		t.Errorf("After a trimmed id: %d events, %v; want the %d kept", len(old), err, len(evs))
	}
}

func testEventTTL(t *testing.T, newStore factory) {
	h := newStore(t)
	ctx := ctxT(t)
	if _, err := h.Append(ctx, "s1", 1, []byte("old")); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Append(ctx, "s1", 2, []byte("old")); err != nil {
		t.Fatal(err)
	}
	h.advance(h.ttl * 6 / 10)
	if _, err := h.Append(ctx, "s1", 2, []byte("new")); err != nil { // refreshes stream 2's TTL
		t.Fatal(err)
	}
	h.advance(h.ttl * 6 / 10)
	if evs, err := h.After(ctx, "s1", 1, "", 0); err != nil || len(evs) != 0 {
		t.Errorf("stream 1, appended to 1.2 TTL ago: %v, %v; want nothing", eventData(evs), err)
	}
	evs, err := h.After(ctx, "s1", 2, "", 0)
	if err != nil || !reflect.DeepEqual(eventData(evs), []string{"old", "new"}) {
		t.Errorf("stream 2, appended to 0.6 TTL ago: %v, %v", eventData(evs), err)
	}
}

// recv waits for one message.
func recv(t *testing.T, ch <-chan []byte, what string) []byte {
	t.Helper()
	select {
	case m, ok := <-ch:
		if !ok {
			t.Fatalf("%s: channel closed", what)
		}
		return m
	case <-time.After(5 * time.Second):
		t.Fatalf("%s: nothing within 5s", what)
	}
	return nil
}

// quiet checks that nothing is pending for ch, a subscription to channel: it publishes a marker on channel, which
// must be the next message. A bus delivers a subscriber's messages in the order they were published (the suite
// relies on it throughout), so a message wrongly delivered before the marker arrives before it.
func quiet(t *testing.T, h *harness, ch <-chan []byte, channel, what string) {
	t.Helper()
	const marker = "quiet-marker"
	if err := h.Publish(t.Context(), channel, []byte(marker)); err != nil {
		t.Fatal(err)
	}
	if m := recv(t, ch, what); string(m) != marker {
		t.Fatalf("%s: got %q, want nothing", what, m)
	}
}

func testBusFanOut(t *testing.T, newStore factory) {
	h := newStore(t)
	ctx := ctxT(t)
	a1, cancel1, err := h.Subscribe(ctx, "session:a")
	if err != nil {
		t.Fatal(err)
	}
	a2, cancel2, err := h.Subscribe(ctx, "session:a")
	if err != nil {
		t.Fatal(err)
	}
	defer cancel2()
	b, cancelB, err := h.Subscribe(ctx, "replica:b")
	if err != nil {
		t.Fatal(err)
	}
	defer cancelB()

	if err := h.Publish(ctx, "session:a", []byte("hello")); err != nil {
		t.Fatal(err)
	}
	if m := recv(t, a1, "first subscriber"); string(m) != "hello" {
		t.Errorf("first subscriber got %q", m)
	}
	if m := recv(t, a2, "second subscriber"); string(m) != "hello" {
		t.Errorf("second subscriber got %q", m)
	}
	quiet(t, h, b, "replica:b", "subscriber of another channel")

	cancel1()
	cancel1() // harmless
	if _, ok := <-a1; ok {
		t.Fatal("channel still open after cancel")
	}
	if err := h.Publish(ctx, "session:a", []byte("again")); err != nil {
		t.Fatal(err)
	}
	if m := recv(t, a2, "remaining subscriber"); string(m) != "again" {
		t.Errorf("remaining subscriber got %q", m)
	}
	if err := h.Publish(ctx, "replica:b", []byte("inbox")); err != nil {
		t.Fatal(err)
	}
	if m := recv(t, b, "replica inbox"); string(m) != "inbox" {
		t.Errorf("inbox got %q", m)
	}

	// Unsubscribing everyone and subscribing again works.
	cancel2()
	a3, cancel3, err := h.Subscribe(ctx, "session:a")
	if err != nil {
		t.Fatal(err)
	}
	defer cancel3()
	if err := h.Publish(ctx, "session:a", []byte("back")); err != nil {
		t.Fatal(err)
	}
	if m := recv(t, a3, "new subscriber"); string(m) != "back" {
		t.Errorf("new subscriber got %q", m)
	}
	if h.Dropped() != 0 {
		t.Errorf("Dropped = %d, want 0", h.Dropped())
	}
}

func testBusOverflow(t *testing.T, newStore factory) {
	const buffer, n = 4, 60
	h := newStore(t, WithBusBuffer(buffer))
	ctx := ctxT(t)
	slow, cancelSlow, err := h.Subscribe(ctx, "session:x")
	if err != nil {
		t.Fatal(err)
	}
	defer cancelSlow()
	fast, cancelFast, err := h.Subscribe(ctx, "session:x")
	if err != nil {
		t.Fatal(err)
	}
	defer cancelFast()
	barrier, cancelBarrier, err := h.Subscribe(ctx, "session:barrier")
	if err != nil {
		t.Fatal(err)
	}
	defer cancelBarrier()

	// The fast subscriber gets every message although the slow one's buffer is full: the slow one never
	// holds up delivery.
	for i := range n {
		if err := h.Publish(ctx, "session:x", []byte(strconv.Itoa(i))); err != nil {
			t.Fatal(err)
		}
		if m := recv(t, fast, "fast subscriber"); string(m) != strconv.Itoa(i) {
			t.Fatalf("fast subscriber's message %d is %s", i, m)
		}
	}
	// The last message's drop for the slow subscriber may be counted just after the fast one received it (Redis
	// delivers on the bus's reader goroutine). A message on another channel, published after, is delivered after
	// the delivery of every earlier one is done, drops counted: once it is received the count is final.
	if err := h.Publish(ctx, "session:barrier", []byte("barrier")); err != nil {
		t.Fatal(err)
	}
	recv(t, barrier, "barrier subscriber")
	if d := h.Dropped(); d != n-buffer {
		t.Errorf("Dropped = %d, want %d", d, n-buffer)
	}
	for i := range buffer {
		if m := recv(t, slow, "slow subscriber"); string(m) != strconv.Itoa(i) {
			t.Errorf("slow subscriber's message %d is %s", i, m)
		}
	}
	quiet(t, h, slow, "session:x", "slow subscriber after its buffer")
}

func testBusShutdown(t *testing.T, newStore factory) {
	h := newStore(t)
	ctx := ctxT(t)
	ch, cancel, err := h.Subscribe(ctx, "session:z")
	if err != nil {
		t.Fatal(err)
	}
	h.Shutdown()
	select {
	case _, ok := <-ch:
		if ok {
			t.Fatal("message after Shutdown")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("channel not closed by Shutdown")
	}
	cancel() // harmless after Shutdown
	if _, _, err := h.Subscribe(ctx, "session:z"); err == nil {
		t.Error("Subscribe after Shutdown succeeded")
	}
}

func testRateLimit(t *testing.T, newStore factory) {
	h := newStore(t)
	ctx := ctxT(t)
	const rate, burst = 5.0, 3 // a token every 200ms
	for i := range burst {
		ok, _, err := h.Allow(ctx, "alice", rate, burst)
		if err != nil || !ok {
			t.Fatalf("call %d of the burst: %v, %v", i, ok, err)
		}
	}
	ok, retry, err := h.Allow(ctx, "alice", rate, burst)
	if err != nil || ok {
		t.Fatalf("call after the burst: ok %v, %v; want refused", ok, err)
	}
	if retry <= 0 || retry > 210*time.Millisecond {
		t.Fatalf("retryAfter %v, want (0, 200ms]", retry)
	}
	// Another key has its own bucket.
	if ok, _, err := h.Allow(ctx, "bob", rate, burst); err != nil || !ok {
		t.Fatalf("another key: %v, %v", ok, err)
	}
	// After retryAfter there is a token again, and one only.
	h.advance(retry + 20*time.Millisecond)
	if ok, _, err := h.Allow(ctx, "alice", rate, burst); err != nil || !ok {
		t.Fatalf("after retryAfter: %v, %v", ok, err)
	}
	if ok, _, err := h.Allow(ctx, "alice", rate, burst); err != nil || ok {
		t.Fatalf("second call after one refill: ok %v, %v; want refused", ok, err)
	}
	// A long pause fills the bucket up to burst, no more: a second is 5 tokens' worth.
	h.advance(time.Second)
	n := 0
	for {
		ok, _, err := h.Allow(ctx, "alice", rate, burst)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		n++
		if n > 10 {
			break
		}
	}
	if n != burst {
		t.Errorf("%d calls allowed after a long pause, want the burst (%d)", n, burst)
	}
	for _, bad := range []struct {
		rate  float64
		burst int
	}{{0, 1}, {-1, 1}, {1, 0}} {
		if _, _, err := h.Allow(ctx, "alice", bad.rate, bad.burst); !errors.Is(err, ErrInvalid) {
			t.Errorf("Allow(rate %v, burst %d): %v, want ErrInvalid", bad.rate, bad.burst, err)
		}
	}
}

func testLeases(t *testing.T, newStore factory) {
	h := newStore(t)
	ctx := ctxT(t)
	const ttl = 500 * time.Millisecond
	acquire := func(what string, want bool) func() {
		t.Helper()
		release, ok, err := h.Acquire(ctx, "alice", 2, ttl)
		if err != nil || ok != want || (release != nil) != want {
			t.Fatalf("%s: ok %v (release %v), %v; want %v", what, ok, release != nil, err, want)
		}
		return release
	}
	r1 := acquire("first lease", true)
	acquire("second lease (leaked: never released)", true)
	acquire("third lease, over the limit", false)
	if _, ok, err := h.Acquire(ctx, "bob", 2, ttl); err != nil || !ok {
		t.Fatalf("another key: %v, %v", ok, err)
	}
	r1()
	r1() // harmless
	r3 := acquire("a lease after a release", true)
	acquire("over the limit again", false)
	r3()
	r4 := acquire("a lease after a release", true)
	defer r4()
	// The leaked lease lapses after its ttl.
	h.advance(ttl + 100*time.Millisecond)
	release, ok, err := h.Acquire(ctx, "alice", 2, ttl)
	if err != nil || !ok {
		t.Fatalf("after the leaked lease's ttl: %v, %v; want a lease", ok, err)
	}
	release()
	if _, _, err := h.Acquire(ctx, "alice", 0, ttl); !errors.Is(err, ErrInvalid) {
		t.Errorf("Acquire with limit 0: %v, want ErrInvalid", err)
	}
}

// testReplicas: a registration vouches for exactly its URL, until its TTL lapses; registering again extends it.
func testReplicas(t *testing.T, newStore factory) {
	h := newStore(t)
	ctx := ctxT(t)
	const a, b = "http://10.0.0.1:8080/mcp", "http://10.0.0.2:8080/mcp"
	for _, bad := range []struct {
		url string
		ttl time.Duration
	}{{"", h.ttl}, {a, 0}} {
		if err := h.RegisterReplica(ctx, bad.url, bad.ttl); err == nil {
			t.Errorf("RegisterReplica(%q, %v) = nil, want an error", bad.url, bad.ttl)
		}
	}
	if err := h.RegisterReplica(ctx, a, h.ttl); err != nil {
		t.Fatal(err)
	}
	if err := h.RegisterReplica(ctx, b, h.ttl); err != nil {
		t.Fatal(err)
	}
	if live, err := h.Replicas(ctx); err != nil || len(live) != 2 || live[0].URL != a || live[1].URL != b {
		t.Errorf("Replicas = %+v, %v; want a and b", live, err)
	}
	for url, want := range map[string]bool{a: true, b: true, "http://evil.example/mcp": false, a + "/": false} {
		if got, err := h.ReplicaRegistered(ctx, url); err != nil || got != want {
			t.Errorf("ReplicaRegistered(%q) = %v, %v; want %v", url, got, err, want)
		}
	}
	h.advance(h.ttl * 6 / 10)
	if err := h.RegisterReplica(ctx, a, h.ttl); err != nil { // a keeps its registration alive; b does not
		t.Fatal(err)
	}
	h.advance(h.ttl * 6 / 10)
	if ok, err := h.ReplicaRegistered(ctx, b); err != nil || ok {
		t.Errorf("b, registered 1.2 TTL ago: ReplicaRegistered = %v, %v; want false", ok, err)
	}
	if ok, err := h.ReplicaRegistered(ctx, a); err != nil || !ok {
		t.Errorf("a, registered again 0.6 TTL ago: ReplicaRegistered = %v, %v; want true", ok, err)
	}
	// Replicas lists the live ones only.
	live, err := h.Replicas(ctx)
	if err != nil || len(live) != 1 || live[0].URL != a || live[0].Registered.IsZero() {
		t.Errorf("Replicas = %+v, %v; want a alone, with when it registered", live, err)
	}
}

// samePins checks that s holds exactly want.
func samePins(t *testing.T, s PinStore, want map[string]string, what string) {
	t.Helper()
	got, err := s.Pins(ctxT(t))
	if err != nil {
		t.Fatalf("%s: Pins: %v", what, err)
	}
	if !maps.Equal(got, want) {
		t.Errorf("%s: Pins = %q, want %q", what, got, want)
	}
}

// testPins: the first pin of a key is kept against other hashes, SetPin replaces it, and after DeletePin the key
// is pinned anew; Pins lists what is there and is the caller's to change.
func testPins(t *testing.T, newStore factory) {
	h := newStore(t)
	ctx := ctxT(t)
	samePins(t, h, nil, "empty store")
	const tool, prompt = "search\x00tool\x00query", "search\x00prompt\x00summarize"
	if got, err := h.PinIfAbsent(ctx, tool, "sha256:aaaa"); err != nil || got != "sha256:aaaa" {
		t.Fatalf("first PinIfAbsent = %q, %v; want its own hash", got, err)
	}
	if got, err := h.PinIfAbsent(ctx, tool, "sha256:bbbb"); err != nil || got != "sha256:aaaa" {
		t.Fatalf("PinIfAbsent with another hash = %q, %v; want the first pin", got, err)
	}
	if got, err := h.PinIfAbsent(ctx, tool, "sha256:aaaa"); err != nil || got != "sha256:aaaa" {
		t.Fatalf("PinIfAbsent with the same hash = %q, %v", got, err)
	}
	if got, err := h.PinIfAbsent(ctx, prompt, "sha256:cccc"); err != nil || got != "sha256:cccc" {
		t.Fatalf("PinIfAbsent of another key = %q, %v", got, err)
	}
	samePins(t, h, map[string]string{tool: "sha256:aaaa", prompt: "sha256:cccc"}, "two pins")

	// An approval replaces the pin; PinIfAbsent keeps the new one.
	if err := h.SetPin(ctx, tool, "sha256:bbbb"); err != nil {
		t.Fatal(err)
	}
	if got, err := h.PinIfAbsent(ctx, tool, "sha256:aaaa"); err != nil || got != "sha256:bbbb" {
		t.Fatalf("PinIfAbsent after SetPin = %q, %v; want the approved hash", got, err)
	}
	// SetPin of a key with no pin pins it.
	const fresh = "files\x00tool\x00read"
	if err := h.SetPin(ctx, fresh, "sha256:dddd"); err != nil {
		t.Fatal(err)
	}
	samePins(t, h, map[string]string{tool: "sha256:bbbb", prompt: "sha256:cccc", fresh: "sha256:dddd"}, "after SetPin")

	// What Pins returns is the caller's.
	got, err := h.Pins(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got[tool] = "changed"
	delete(got, prompt)
	samePins(t, h, map[string]string{tool: "sha256:bbbb", prompt: "sha256:cccc", fresh: "sha256:dddd"},
		"after changing a listing")

	// Deleted, a key is pinned anew by the next definition seen.
	if err := h.DeletePin(ctx, tool); err != nil {
		t.Fatal(err)
	}
	if err := h.DeletePin(ctx, tool); err != nil {
		t.Fatalf("DeletePin of a missing pin: %v", err)
	}
	samePins(t, h, map[string]string{prompt: "sha256:cccc", fresh: "sha256:dddd"}, "after DeletePin")
	if got, err := h.PinIfAbsent(ctx, tool, "sha256:eeee"); err != nil || got != "sha256:eeee" {
		t.Fatalf("PinIfAbsent after DeletePin = %q, %v; want the new hash", got, err)
	}

	long := strings.Repeat("k", 4097)
	for _, bad := range []struct{ key, hash string }{{"", "h"}, {"k", ""}, {long, "h"}, {"k", long[:513]}} {
		if _, err := h.PinIfAbsent(ctx, bad.key, bad.hash); !errors.Is(err, ErrInvalid) {
			t.Errorf("PinIfAbsent(key of %d bytes, hash of %d): %v, want ErrInvalid", len(bad.key), len(bad.hash), err)
		}
		if err := h.SetPin(ctx, bad.key, bad.hash); !errors.Is(err, ErrInvalid) {
			t.Errorf("SetPin(key of %d bytes, hash of %d): %v, want ErrInvalid", len(bad.key), len(bad.hash), err)
		}
	}
	for _, bad := range []string{"", long} {
		if err := h.DeletePin(ctx, bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("DeletePin(key of %d bytes): %v, want ErrInvalid", len(bad), err)
		}
	}
	if got, err := h.PinIfAbsent(ctx, long[:4096], long[:512]); err != nil || got != long[:512] {
		t.Errorf("PinIfAbsent at the bounds = %d bytes, %v", len(got), err)
	}
}

// testPinConcurrent: callers that race to pin keys with different hashes, on two stores (two replicas) where the
// data is shared, all get the same pin back for a key, and it is the one stored.
func testPinConcurrent(t *testing.T, newStore factory) {
	h := newStore(t)
	ctx := ctxT(t)
	stores := []PinStore{h}
	if h.shared {
		stores = append(stores, h.second(t))
	}
	const keys, callers = 8, 16
	got := make([][]string, keys)
	for k := range got {
		got[k] = make([]string, callers)
	}
	errs := make(chan error, keys*callers)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for c := range callers {
		wg.Go(func() {
			<-start
			s := stores[c%len(stores)]
			for k := range keys {
				pin, err := s.PinIfAbsent(ctx, fmt.Sprintf("up\x00tool\x00t%d", k), fmt.Sprintf("hash-of-caller-%d", c))
				if err != nil {
					errs <- err
				}
				got[k][c] = pin
			}
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	pins, err := h.Pins(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(pins) != keys {
		t.Fatalf("%d pins, want %d: %q", len(pins), keys, pins)
	}
	for k := range keys {
		key := fmt.Sprintf("up\x00tool\x00t%d", k)
		if !strings.HasPrefix(pins[key], "hash-of-caller-") {
			t.Errorf("key %q pinned to %q, none of the callers' hashes", key, pins[key])
		}
		for c, pin := range got[k] {
			if pin != pins[key] {
				t.Errorf("key %q: caller %d got %q, the pin is %q", key, c, pin, pins[key])
			}
		}
	}
}

// testPinKeys: keys and hashes are opaque bytes: NULs, any Unicode, invalid UTF-8 and braces (a Redis hash tag's)
// come back exactly, and keys that differ in one byte are different pins.
func testPinKeys(t *testing.T, newStore factory) {
	h := newStore(t)
	ctx := ctxT(t)
	want := map[string]string{
		"up\x00tool\x00search":                      "sha256:01",
		"up\x00tool\x00search\x00":                  "sha256:02",
		"\x00":                                      "sha256:03",
		"up\x00tool\x00søg":                         "sha256:04",
		"上游\x00prompt\x00摘要":                        "sha256:05",
		"up\x00tool\x00🔍 find":                      "sha256:06",
		"up\x00tool\x00ex\u202eec\u200b":            "sha256:07", // bidirectional override, zero-width space
		"up\x00tool\x00\xff\xfe":                    "sha256:08", // not UTF-8
		"{pins}\x00tool\x00{x}":                     "sha256:09",
		"up\x00tool\x00UPPER":                       "sha256:10",
		"up\x00tool\x00upper":                       "sha256:11",
		"up\x00tool\x00hash with NUL and ünï":       "sha256:\x00\xffé",
		"up\x00tool\x00" + strings.Repeat("x", 600): "sha256:12",
	}
	for k, v := range want {
		if got, err := h.PinIfAbsent(ctx, k, v); err != nil || got != v {
			t.Fatalf("PinIfAbsent(%q) = %q, %v; want %q", k, got, err, v)
		}
	}
	samePins(t, h, want, "odd keys")
	for k, v := range want {
		if got, err := h.PinIfAbsent(ctx, k, "other"); err != nil || got != v {
			t.Errorf("PinIfAbsent(%q) again = %q, %v; want %q", k, got, err, v)
		}
	}
	if err := h.DeletePin(ctx, "up\x00tool\x00search"); err != nil {
		t.Fatal(err)
	}
	delete(want, "up\x00tool\x00search")
	samePins(t, h, want, "after deleting one of two keys that differ by a trailing NUL")
}

// testPinRestart: a store made afresh over the same data (this one restarted, or another replica) sees the pins
// with Redis, and they see each other's changes; a Memory made afresh has none, and trusts the first definition it
// sees again: what a memory store forgets at a restart.
func testPinRestart(t *testing.T, newStore factory) {
	h := newStore(t)
	ctx := ctxT(t)
	want := map[string]string{"up\x00tool\x00a": "sha256:aa", "up\x00prompt\x00b": "sha256:bb"}
	for k, v := range want {
		if _, err := h.PinIfAbsent(ctx, k, v); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.SetPin(ctx, "up\x00tool\x00a", "sha256:approved"); err != nil {
		t.Fatal(err)
	}
	want["up\x00tool\x00a"] = "sha256:approved"
	restarted := h.second(t)
	const key = "up\x00tool\x00a"
	if !h.shared {
		samePins(t, restarted, nil, "a new Memory")
		if got, err := restarted.PinIfAbsent(ctx, key, "sha256:changed"); err != nil || got != "sha256:changed" {
			t.Errorf("PinIfAbsent on a new Memory = %q, %v; want the definition seen first again", got, err)
		}
		return
	}
	samePins(t, restarted, want, "a store restarted over the same data")
	if got, err := restarted.PinIfAbsent(ctx, key, "sha256:changed"); err != nil || got != "sha256:approved" {
		t.Errorf("PinIfAbsent after a restart = %q, %v; want the approved pin", got, err)
	}
	// And the other way: what the restarted store changes, the first one sees.
	if err := restarted.DeletePin(ctx, "up\x00prompt\x00b"); err != nil {
		t.Fatal(err)
	}
	delete(want, "up\x00prompt\x00b")
	samePins(t, h, want, "the first store, after the restarted one deleted a pin")
}

// withMaxPins lowers MaxPins for a test.
func withMaxPins(n int) Option { return func(o *options) { o.maxPins = n } }

// testPinLimit: past the maximum new keys are refused with ErrFull, by PinIfAbsent and SetPin alike; pins already
// there can still be read and replaced, and deleting one makes room. Stores over the same data count together.
func testPinLimit(t *testing.T, newStore factory) {
	const limit = 3
	h := newStore(t, withMaxPins(limit))
	ctx := ctxT(t)
	want := map[string]string{}
	for i := range limit {
		k := fmt.Sprintf("up\x00tool\x00t%d", i)
		if _, err := h.PinIfAbsent(ctx, k, "h"); err != nil {
			t.Fatalf("pin %d of %d: %v", i+1, limit, err)
		}
		want[k] = "h"
	}
	var other PinStore = h
	if h.shared {
		other = h.second(t, withMaxPins(limit))
	}
	if got, err := other.PinIfAbsent(ctx, "up\x00tool\x00extra", "h"); !errors.Is(err, ErrFull) || got != "" {
		t.Fatalf("PinIfAbsent past the limit = %q, %v; want ErrFull", got, err)
	}
	if err := other.SetPin(ctx, "up\x00tool\x00extra", "h"); !errors.Is(err, ErrFull) {
		t.Fatalf("SetPin of a new key past the limit: %v, want ErrFull", err)
	}
	if got, err := h.PinIfAbsent(ctx, "up\x00tool\x00t0", "other"); err != nil || got != "h" {
		t.Fatalf("PinIfAbsent of a pinned key at the limit = %q, %v", got, err)
	}
	if err := h.SetPin(ctx, "up\x00tool\x00t0", "approved"); err != nil {
		t.Fatalf("SetPin of a pinned key at the limit: %v", err)
	}
	want["up\x00tool\x00t0"] = "approved"
	samePins(t, h, want, "at the limit")
	if err := h.DeletePin(ctx, "up\x00tool\x00t1"); err != nil {
		t.Fatal(err)
	}
	if got, err := other.PinIfAbsent(ctx, "up\x00tool\x00extra", "h"); err != nil || got != "h" {
		t.Fatalf("PinIfAbsent after a delete made room = %q, %v", got, err)
	}
}

// testPinCancelled: with a cancelled context every PinStore method fails with an error wrapping ctx.Err().
func testPinCancelled(t *testing.T, newStore factory) {
	h := newStore(t)
	ctx, cancel := context.WithCancel(ctxT(t))
	cancel()
	ops := map[string]func() error{
		"PinIfAbsent": func() error { _, err := h.PinIfAbsent(ctx, "k", "h"); return err },
		"SetPin":      func() error { return h.SetPin(ctx, "k", "h") },
		"DeletePin":   func() error { return h.DeletePin(ctx, "k") },
		"Pins":        func() error { _, err := h.Pins(ctx); return err },
	}
	for name, op := range ops {
		if err := op(); !errors.Is(err, context.Canceled) {
			t.Errorf("%s with a cancelled context: %v, want context.Canceled", name, err)
		}
	}
}
