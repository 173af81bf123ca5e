package gateway

import (
	"errors"
	"io"
	"log/slog"
	"testing"
	"testing/synctest"
	"time"

	"github.com/switchboard-mcp/switchboard/routing"
	"github.com/switchboard-mcp/switchboard/routing/state"
	"github.com/switchboard-mcp/switchboard/upstream/protocol"
)

// TestFinishedStreamsExpire: a finished POST stream stays resumable for keepFinished, and one its client left and
// never came back for is forgotten as long after; either is then gone, its source closed.
func TestFinishedStreamsExpire(t *testing.T) {
	streams, err := routing.New(routing.Options{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		ss := &sessionStreams{streams: map[int64]*memoryLog{}}
		finished, left := streams.NewStream(1, 0), streams.NewStream(1, 0)
		for _, c := range []struct {
			src      *routing.Stream
			complete bool
		}{{finished, true}, {left, false}} {
			rs := ss.add(c.src)
			if err := rs.Claim(ctx, false, nil); err != nil {
				t.Fatal(err)
			}
			if _, err := rs.Append(ctx, []byte(`{"jsonrpc":"2.0","id":1,"result":{}}`)); err != nil {
				t.Fatal(err)
			}
			rs.Release(c.src, c.complete)
		}
		time.Sleep(keepFinished)
		ss.add(streams.NewStream(1, 0))
		if ss.get(1) == nil || ss.get(2) == nil {
			t.Fatalf("a stream was forgotten within %s", keepFinished)
		}
		if events, _, _ := ss.get(1).Read(ctx, eventID(1, 0), 0); len(events) != 1 {
			t.Fatalf("the finished stream replays %d events, want 1", len(events))
		}
		time.Sleep(time.Second)
		ss.add(streams.NewStream(1, 0))
		if ss.get(1) != nil || ss.get(2) != nil {
			t.Fatalf("streams are still resumable %s after they finished or were left", keepFinished+time.Second)
		}
		if !finished.Closed() || !left.Closed() {
			t.Fatal("a forgotten stream's source is not closed")
		}
	})
}

// claimLogs makes the logs of one stream as the connections of the test see them.
type claimLogs struct {
	name   string
	shared bool
	open   func(t *testing.T) func() streamLog
}

// newStreamServer is a front end over a router with no upstreams, holding one session (closed at cleanup), for
// tests in a synctest bubble: neither starts a goroutine until used.
func newStreamServer(t *testing.T, events EventLog) (*Server, *routing.Session) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	r, err := routing.New(routing.Options{Logger: quiet}, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := New(r, Options{Events: events, KeepAlive: time.Second, Logger: quiet})
	sess := r.NewSession(routing.SessionParams{ProtocolVersion: protocol.V20251125})
	t.Cleanup(sess.Close)
	return s, sess
}

func claimBackends() []claimLogs {
	return []claimLogs{
		{name: "memory", open: func(t *testing.T) func() streamLog {
			streams, err := routing.New(routing.Options{}, nil)
			if err != nil {
				t.Fatal(err)
			}
			rs := &memoryLog{id: 1, src: streams.NewStream(1, 0)}
			return func() streamLog { return rs } // one log; the claim is on it
		}},
		{name: "shared", shared: true, open: func(t *testing.T) func() streamLog {
			store := state.NewMemory()
			t.Cleanup(store.Shutdown)
			s, sess := newStreamServer(t, store)
			return func() streamLog { return &sharedLog{hub: s.hub, sess: sess, n: 7} } // one per connection
		}},
	}
}

// TestStreamClaims: the claim rules, the same on both logs: one connection writes a stream; another is refused
// (409) unless it takes the stream over, which stops the old writer; a released stream can be claimed again. On
// the shared log a claim whose holder stopped renewing it (its replica died) lapses with its lease.
func TestStreamClaims(t *testing.T) {
	for _, be := range claimBackends() {
		t.Run(be.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx := t.Context()
				conn := be.open(t)
				first, second := conn(), conn()
				stopped := false
				if err := first.Claim(ctx, false, func() { stopped = true }); err != nil {
					t.Fatalf("first claim: %v", err)
				}
				if err := second.Claim(ctx, false, func() {}); !errors.Is(err, errStreamHeld) {
					t.Fatalf("second claim while the first holds: %v, want errStreamHeld", err)
				}
				// The takeover: memory stops the old writer at once and waits for its release; the shared log
				// tells it at its next look (claimCheck).
				done := make(chan error, 1)
				go func() { done <- second.Claim(ctx, true, func() {}) }()
				synctest.Wait()
				if !be.shared {
					if !stopped {
						t.Fatal("the takeover did not stop the old writer")
					}
					first.Release(nil, false)
				}
				if err := <-done; err != nil {
					t.Fatalf("takeover: %v", err)
				}
				time.Sleep(claimCheck)
				if be.shared && first.Held(ctx) {
					t.Fatal("the old writer still holds the stream after the takeover")
				}
				second.Release(nil, false)
				third := conn()
				if err := third.Claim(ctx, false, func() {}); err != nil {
					t.Fatalf("claim after the release: %v", err)
				}
				if !be.shared {
					return
				}
				// third's replica dies: it renews nothing. Until its lease ends others are refused, then not.
				fourth := conn()
				if err := fourth.Claim(ctx, false, func() {}); !errors.Is(err, errStreamHeld) {
					t.Fatalf("claim while a live lease stands: %v, want errStreamHeld", err)
				}
				time.Sleep(third.(*sharedLog).lease())
				if err := conn().Claim(ctx, false, func() {}); err != nil {
					t.Fatalf("claim after the holder's lease lapsed: %v", err)
				}
			})
		})
	}
}

// TestSharedClaimRenewed: a holder that keeps writing renews its claim, so it outlives many leases.
func TestSharedClaimRenewed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		store := state.NewMemory()
		t.Cleanup(store.Shutdown)
		s, sess := newStreamServer(t, store)
		holder := &sharedLog{hub: s.hub, sess: sess, n: standaloneStream}
		if err := holder.Claim(ctx, false, func() {}); err != nil {
			t.Fatal(err)
		}
		for range 3 * int(holder.lease()/s.hub.keepAlive) {
			time.Sleep(s.hub.keepAlive)
			if !holder.Held(ctx) {
				t.Fatal("the holder lost its renewed claim")
			}
		}
		other := &sharedLog{hub: s.hub, sess: sess, n: standaloneStream}
		if err := other.Claim(ctx, false, func() {}); !errors.Is(err, errStreamHeld) {
			t.Fatalf("claim against a renewed lease: %v, want errStreamHeld", err)
		}
	})
}
