package routing

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
	"github.com/switchboard-mcp/switchboard/upstream/protocol"
)

// The time-driven parts of routing, on synctest's clock: each test runs in a bubble where time moves only when
// every goroutine waits, so a 30-second timeout takes no time and fires at exactly 30 seconds.

// final returns the final answer waiting on out, or nil when there is none yet; earlier messages are dropped.
func finalNow(t *testing.T, out *Stream) *jsonrpc.Message {
	t.Helper()
	for {
		msg, final, ok := out.TryNext()
		if !ok {
			return nil
		}
		if final {
			m := mustParse(t, string(msg))
			return &m
		}
	}
}

// TestCallTimerOnTheClock: a call times out after its upstream's timeout, progress restarts the timer, and the
// hard maximum holds whatever progress comes (spec: "MAY reset the timer when progress arrives, but SHOULD
// still enforce a hard maximum"). The upstream is told to stop.
func TestCallTimerOnTheClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ft := holdingUpstream()
		r := startRouter(t, Options{RequestTimeout: 30 * time.Second, MaxRequestTimeout: 50 * time.Second},
			UpstreamConfig{Name: "fake", Prefix: "fake__", Mode: Shared, Transport: ft, Kind: "stdio"})
		s := r.session(defaultClientCaps)
		start := time.Now()
		out := newStream(1, 16)
		s.HandleRequest(context.Background(), mustParse(t, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"fake__add","_meta":{"progressToken":"p"}}}`), out)
		synctest.Wait()
		upID := lastCallID(t, ft)

		time.Sleep(29 * time.Second)
		synctest.Wait()
		if m := finalNow(t, out); m != nil {
			t.Fatalf("answered after 29s of a 30s timeout: %s", m.Raw())
		}
		// Progress at 29s: the timer restarts, but only up to the 50s maximum.
		ft.inject(fmt.Appendf(nil, `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":%s,"progress":1}}`, upID))
		synctest.Wait()
		time.Sleep(21*time.Second - time.Millisecond)
		synctest.Wait()
		if m := finalNow(t, out); m != nil {
			t.Fatalf("answered before the 50s maximum: %s", m.Raw())
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		m := finalNow(t, out)
		if m == nil {
			t.Fatal("no answer at the 50s maximum")
		}
		if code, _ := m.ErrorCode(); code != protocol.CodeRequestTimeout || time.Since(start) != 50*time.Second {
			t.Errorf("at %s: %s, want error %d at 50s", time.Since(start), m.Raw(), protocol.CodeRequestTimeout)
		}
		if !cancelSent(ft, upID) {
			t.Error("the upstream was not told to stop the call")
		}
	})
}

// TestStalledWriteEnds: an upstream that does not take a request (a stdio child that stopped reading) holds the
// write only until the call ends: at its timeout, when the client has its timeout error, or at the client's
// cancel, when the upstream is told. Either way the request's handler is free then, not left waiting on the write.
func TestStalledWriteEnds(t *testing.T) {
	for _, tc := range []struct {
		name  string
		at    time.Duration // when the call ends
		end   func(t *testing.T, s *Session)
		check func(t *testing.T, ft *fakeTransport, out *Stream)
	}{
		{
			name: "timed out", at: 30 * time.Second,
			end: func(*testing.T, *Session) {},
			check: func(t *testing.T, _ *fakeTransport, out *Stream) {
				m := finalNow(t, out)
				if m == nil {
					t.Fatal("no answer at the 30s timeout")
				}
				if code, _ := m.ErrorCode(); code != protocol.CodeRequestTimeout {
					t.Errorf("answer %s, want error %d", m.Raw(), protocol.CodeRequestTimeout)
				}
			},
		},
		{
			name: "cancelled", at: time.Second,
			end: func(t *testing.T, s *Session) {
				s.HandleNotification(mustParse(t, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`))
			},
			check: func(t *testing.T, ft *fakeTransport, _ *Stream) {
				ft.mu.Lock()
				defer ft.mu.Unlock()
				if !slices.ContainsFunc(ft.log, func(rec fakeRecord) bool { return rec.msg.MethodIs("notifications/cancelled") }) {
					t.Error("the upstream was not told of the cancel")
				}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ft := holdingUpstream()
				ft.stall = func(m jsonrpc.Message) bool { return m.MethodIs(protocol.MethodToolsCall) }
				r := startRouter(t, Options{RequestTimeout: 30 * time.Second},
					UpstreamConfig{Name: "fake", Prefix: "fake__", Mode: Shared, Transport: ft, Kind: "stdio"})
				s := r.session(defaultClientCaps)
				start := time.Now()
				out := newStream(1, 16)
				handled := make(chan time.Duration, 1)
				go func() {
					s.HandleRequest(context.Background(), mustParse(t, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"fake__add"}}`), out)
					handled <- time.Since(start)
				}()
				synctest.Wait()
				select {
				case <-handled:
					t.Fatal("HandleRequest returned while the upstream had not taken the request")
				default:
				}
				time.Sleep(tc.at)
				tc.end(t, s)
				synctest.Wait()
				select {
				case d := <-handled:
					if d != tc.at {
						t.Errorf("the write gave up after %s, want %s", d, tc.at)
					}
				default:
					t.Fatal("the write still holds the request's handler after the call ended")
				}
				tc.check(t, ft, out)
			})
		})
	}
}

// TestGatherWindowOnTheClock: a legacy upstream's requests for input during a modern client's call are gathered
// while they keep coming within gatherQuiet of each other, and answered as one input_required round; the round
// closes at gatherWindow after the first at the latest, so a server that never stops asking cannot hold it.
func TestGatherWindowOnTheClock(t *testing.T) {
	for _, c := range []struct {
		name   string
		gap    time.Duration // between the upstream's requests
		n      int           // requests sent
		lo, hi int           // how many of them the first round must hold
	}{
		{"two close together", gatherQuiet / 2, 2, 2, 2},
		{"one then a pause", 2 * gatherQuiet, 2, 1, 1},
		// The window closes between gatherWindow-gatherQuiet and gatherWindow after the first request.
		{"a server that never stops", gatherQuiet / 2, 100, int((gatherWindow - gatherQuiet) / (gatherQuiet / 2)), int(gatherWindow/(gatherQuiet/2)) + 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ft := holdingUpstream()
				r := startRouter(t, Options{}, UpstreamConfig{Name: "fake", Prefix: "fake__", Mode: Shared, Transport: ft, Kind: "stdio"})
				s := r.PooledSession(SessionParams{Capabilities: json.RawMessage(`{"elicitation":{}}`)})
				out := newStream(1, 16)
				s.HandleRequest(context.Background(), mustParse(t, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"fake__add"}}`), out)
				synctest.Wait()
				var m *jsonrpc.Message
				for i := range c.n {
					ft.inject(fmt.Appendf(nil, `{"jsonrpc":"2.0","id":"ask-%d","method":"elicitation/create","params":{"message":"?","requestedSchema":{"type":"object"}}}`, i))
					synctest.Wait()
					if m = finalNow(t, out); m != nil {
						break
					}
					time.Sleep(c.gap)
				}
				if m == nil {
					time.Sleep(gatherWindow)
					synctest.Wait()
					m = finalNow(t, out)
				}
				if m == nil {
					t.Fatal("no input_required round")
				}
				var res struct {
					ResultType    string                     `json:"resultType"`
					InputRequests map[string]json.RawMessage `json:"inputRequests"`
				}
				if err := json.Unmarshal(m.Result(), &res); err != nil || res.ResultType != "input_required" {
					t.Fatalf("answer %s, want an input_required result", m.Raw())
				}
				if n := len(res.InputRequests); n < c.lo || n > c.hi {
					t.Errorf("the round holds %d requests, want %d to %d", n, c.lo, c.hi)
				}
			})
		})
	}
}

// TestIdleSessionsExpireOnTheClock: a session unused for the idle timeout is closed by the janitor, and one in
// use is not.
func TestIdleSessionsExpireOnTheClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := startRouter(t, Options{SessionIdleTimeout: time.Minute},
			UpstreamConfig{Name: "fake", Prefix: "fake__", Mode: Shared, Transport: plainUpstream(), Kind: "stdio"})
		idle, busy := r.session(defaultClientCaps), r.session(defaultClientCaps)
		for range 4 {
			time.Sleep(30 * time.Second)
			roundTrip(t, r, busy, `{"jsonrpc":"2.0","id":1,"method":"ping"}`)
		}
		synctest.Wait()
		if r.Session(idle.ID()) != nil {
			t.Error("a session idle for 2 minutes (timeout 1 minute) is still there")
		}
		select {
		case <-idle.Done():
		default:
			t.Error("the idle session was not closed")
		}
		if r.Session(busy.ID()) == nil {
			t.Error("a session used every 30 seconds was closed")
		}
	})
}

// lastCallID returns the upstream id of the last tools/call the fake upstream received.
func lastCallID(t *testing.T, ft *fakeTransport) []byte {
	t.Helper()
	ft.mu.Lock()
	defer ft.mu.Unlock()
	for i := len(ft.log) - 1; i >= 0; i-- {
		if m := ft.log[i].msg; m.MethodIs("tools/call") {
			return m.ID()
		}
	}
	t.Fatal("the upstream received no tools/call")
	return nil
}

// cancelSent reports whether the fake upstream received notifications/cancelled for the upstream id.
func cancelSent(ft *fakeTransport, upID []byte) bool {
	ft.mu.Lock()
	defer ft.mu.Unlock()
	for _, rec := range ft.log {
		if rec.msg.MethodIs("notifications/cancelled") && strings.Contains(string(rec.msg.Params()), `"requestId":`+string(upID)) {
			return true
		}
	}
	return false
}
