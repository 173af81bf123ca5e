package routing

import (
	"context"
	"testing"
)

type popped struct {
	msg   string
	final bool
}

// drain reads a stream until it reports its end; the stream must already hold everything.
func drain(t *testing.T, s *Stream) []popped {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // the stream must end on its own; a cancelled ctx only stops a wait
	var out []popped
	for {
		msg, final, ok := s.Next(ctx)
		if !ok {
			return out
		}
		out = append(out, popped{string(msg), final})
	}
}

func samePopped(a, b []popped) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestStreamFinals(t *testing.T) {
	s := newStream(2, 8)
	if got := s.Pending(); got != 2 {
		t.Fatalf("Pending = %d, want 2", got)
	}
	s.Push([]byte("n1"), ClassNotice)
	s.Push([]byte("f1"), ClassFinal)
	if got := s.Pending(); got != 1 {
		t.Fatalf("Pending with one final queued = %d, want 1", got)
	}
	s.Push([]byte("r1"), classRequest)
	s.Push([]byte("f2"), ClassFinal)
	s.Push([]byte("n-after"), ClassNotice) // queued after the last final: still delivered before the end
	want := []popped{{"n1", false}, {"f1", true}, {"r1", false}, {"f2", true}, {"n-after", false}}
	if got := drain(t, s); !samePopped(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if got := s.Pending(); got != 0 {
		t.Fatalf("Pending after the end = %d", got)
	}
	// Complete, not closed: a straggler is still accepted and visible to TryNext (the caller decides).
	if s.Closed() {
		t.Fatal("a completed stream reports Closed")
	}
}

func TestStreamAbandon(t *testing.T) {
	s := newStream(2, 8)
	s.Push([]byte("p"), ClassNotice)
	s.Abandon() // one call cancelled
	s.Push([]byte("f"), ClassFinal)
	if got := drain(t, s); !samePopped(got, []popped{{"p", false}, {"f", true}}) {
		t.Fatalf("got %v", got)
	}

	s = newStream(1, 8)
	s.Push([]byte("p"), ClassNotice)
	s.Abandon()
	if got := drain(t, s); !samePopped(got, []popped{{"p", false}}) {
		t.Fatalf("queued messages before an abandon must still be read: got %v", got)
	}

	// Abandon on a standalone stream changes nothing.
	s = newStream(-1, 8)
	s.Abandon()
	if got := s.Pending(); got != -1 {
		t.Fatalf("standalone Pending after Abandon = %d, want -1", got)
	}
	// More abandons than calls never go negative.
	s = newStream(1, 8)
	s.Abandon()
	s.Abandon()
	if got := s.Pending(); got != 0 {
		t.Fatalf("Pending = %d, want 0", got)
	}
}

func TestStreamClose(t *testing.T) {
	s := newStream(-1, 8)
	s.Push([]byte("a"), ClassNotice)
	s.Push([]byte("b"), classRequest)
	s.Close()
	if !s.Closed() {
		t.Fatal("Closed = false after Close")
	}
	for _, c := range []msgClass{ClassNotice, classRequest, ClassFinal} {
		if s.Push([]byte("late"), c) {
			t.Errorf("Push(class %d) accepted on a closed stream", c)
		}
	}
	if got := s.Dropped(); got != 0 {
		t.Errorf("pushes refused by a closed stream counted as dropped: %d", got)
	}
	if got := drain(t, s); !samePopped(got, []popped{{"a", false}, {"b", false}}) {
		t.Fatalf("closed stream must drain what it holds: got %v", got)
	}
	s.Close() // idempotent
}

func TestStreamBound(t *testing.T) {
	s := newStream(3, 2)
	if !s.Push([]byte("n1"), ClassNotice) || !s.Push([]byte("r1"), classRequest) {
		t.Fatal("pushes below the bound refused")
	}
	if s.Push([]byte("n2"), ClassNotice) {
		t.Fatal("notice accepted beyond the bound")
	}
	if s.Push([]byte("n3"), ClassNotice) {
		t.Fatal("notice accepted beyond the bound")
	}
	if s.Push([]byte("r2"), classRequest) {
		t.Fatal("request accepted beyond the bound")
	}
	if got := s.Dropped(); got != 2 {
		t.Fatalf("Dropped = %d, want 2 (notices only; a refused request is not a drop)", got)
	}
	for _, f := range []string{"f1", "f2", "f3"} {
		if !s.Push([]byte(f), ClassFinal) {
			t.Fatalf("final %s refused on a full stream", f)
		}
	}
	// Finals do not count against the bound: after one notice is read, one more fits.
	if msg, _, ok := s.TryNext(); !ok || string(msg) != "n1" {
		t.Fatalf("TryNext = %q, %v", msg, ok)
	}
	if !s.Push([]byte("n4"), ClassNotice) {
		t.Fatal("notice refused after room was made")
	}
	if s.Push([]byte("n5"), ClassNotice) {
		t.Fatal("bound not enforced again")
	}
	want := []popped{{"r1", false}, {"f1", true}, {"f2", true}, {"f3", true}, {"n4", false}}
	if got := drain(t, s); !samePopped(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if got := newStream(1, 0).max; got != 256 {
		t.Fatalf("default bound = %d, want 256", got)
	}
}

func TestStreamTryNext(t *testing.T) {
	s := newStream(1, 4)
	if _, _, ok := s.TryNext(); ok {
		t.Fatal("TryNext on an empty stream reported a message")
	}
	s.Push([]byte("f"), ClassFinal)
	if msg, final, ok := s.TryNext(); !ok || !final || string(msg) != "f" {
		t.Fatalf("TryNext = %q, %v, %v", msg, final, ok)
	}
	if got := s.Pending(); got != 0 {
		t.Fatalf("Pending = %d after the final was taken by TryNext", got)
	}
}

func TestStreamNextWaits(t *testing.T) {
	// Next blocks until a push from another goroutine.
	s := newStream(1, 4)
	got := make(chan popped)
	go func() {
		msg, final, ok := s.Next(context.Background())
		if !ok {
			got <- popped{"<end>", false}
			return
		}
		got <- popped{string(msg), final}
	}()
	s.Push([]byte("f"), ClassFinal)
	if p := <-got; p != (popped{"f", true}) {
		t.Fatalf("Next = %v", p)
	}

	// Next unblocks on Abandon, Close and ctx cancellation.
	for name, end := range map[string]func(*Stream, context.CancelFunc){
		"abandon": func(s *Stream, _ context.CancelFunc) { s.Abandon() },
		"close":   func(s *Stream, _ context.CancelFunc) { s.Close() },
		"cancel":  func(_ *Stream, cancel context.CancelFunc) { cancel() },
	} {
		t.Run(name, func(t *testing.T) {
			s := newStream(1, 4)
			if name == "close" {
				s = newStream(-1, 4)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan bool)
			go func() {
				_, _, ok := s.Next(ctx)
				done <- ok
			}()
			end(s, cancel)
			if ok := <-done; ok {
				t.Fatal("Next reported a message")
			}
		})
	}

	// A cancelled ctx still yields what is queued.
	s = newStream(-1, 4)
	s.Push([]byte("n"), ClassNotice)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if msg, _, ok := s.Next(ctx); !ok || string(msg) != "n" {
		t.Fatalf("Next with a cancelled ctx and a queued message = %q, %v", msg, ok)
	}
	if _, _, ok := s.Next(ctx); ok {
		t.Fatal("Next with a cancelled ctx and nothing queued reported a message")
	}
}

// TestStreamConcurrent pushes from several goroutines while one reads; run with -race.
func TestStreamConcurrent(t *testing.T) {
	const writers, each = 4, 200
	s := newStream(writers*each, 16)
	for w := 0; w < writers; w++ {
		go func() {
			for i := 0; i < each; i++ {
				s.Push([]byte("n"), ClassNotice)
				s.Push([]byte("f"), ClassFinal)
			}
		}()
	}
	finals := 0
	for {
		_, final, ok := s.Next(context.Background())
		if !ok {
			break
		}
		if final {
			finals++
		}
	}
	if finals != writers*each {
		t.Fatalf("finals = %d, want %d", finals, writers*each)
	}
}
