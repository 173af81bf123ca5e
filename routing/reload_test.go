package routing

// Hot reload and the operator's controls (Reconfigure, DrainUpstream, RestartUpstream), over the in-memory fake
// upstreams of fake_upstream_test.go. No assertion depends on timing: every wait is for an event, bounded by the
// router's safety deadline.

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-mcp/switchboard/upstream"
	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
)

// ask sends one request and returns its final answer, or an error when the stream ends without one. It is safe
// to use from goroutines other than the test's.
func ask(ctx context.Context, s *Session, raw string) (jsonrpc.Message, error) {
	m, err := jsonrpc.Parse([]byte(raw))
	if err != nil {
		return jsonrpc.Message{}, err
	}
	out := newStream(1, 16)
	s.HandleRequest(context.Background(), m, out)
	for {
		msg, final, ok := out.Next(ctx)
		if !ok {
			return jsonrpc.Message{}, fmt.Errorf("no answer to %s", raw)
		}
		if final {
			return jsonrpc.Parse(msg)
		}
	}
}

func callTool(id int, tool string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":{}}}`, id, tool)
}

// toolNames lists the catalog's tools as a session sees them (one page is enough here).
func toolNames(t *testing.T, r *testRouter, s *Session) []string {
	t.Helper()
	m := roundTrip(t, r, s, `{"jsonrpc":"2.0","id":"list","method":"tools/list"}`)
	var res struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(m.Result(), &res); err != nil {
		t.Fatalf("tools/list answered %s: %v", m.Raw(), err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	return names
}

// pollInterval paces the few polls below; it is never part of an assertion.
const pollInterval = 5 * time.Millisecond

// waitTools polls the catalog until cond holds for its tool names; each poll follows a catalog change, and the
// wait is bounded by the safety deadline.
func waitTools(t *testing.T, r *testRouter, s *Session, what string, cond func([]string) bool) []string {
	t.Helper()
	for {
		names := toolNames(t, r, s)
		if cond(names) {
			return names
		}
		select {
		case <-r.ctx.Done():
			t.Fatalf("gave up waiting for %s; tools %v", what, names)
		default:
		}
		// Wait for the next catalog event (a list_changed on this session's standalone stream) or a short poll.
		nctx, cancel := context.WithTimeout(r.ctx, pollInterval)
		s.Standalone().Next(nctx)
		cancel()
	}
}

// waitNotice waits until the session's standalone stream carries a message with the method.
func waitNotice(t *testing.T, r *testRouter, s *Session, method string) {
	t.Helper()
	for {
		msg, _, ok := s.Standalone().Next(r.ctx)
		if !ok {
			t.Fatalf("no %s on the standalone stream", method)
		}
		if m, err := jsonrpc.Parse(msg); err == nil && m.MethodIs(method) {
			return
		}
	}
}

func drainNotices(s *Session) {
	for {
		if _, _, ok := s.Standalone().TryNext(); !ok {
			return
		}
	}
}

func connects(ft *fakeTransport) int {
	ft.mu.Lock()
	defer ft.mu.Unlock()
	return ft.connects
}

// waitCall waits until the fake upstream has received n tools/call requests.
func waitCall(t *testing.T, r *testRouter, ft *fakeTransport, n int) {
	t.Helper()
	ft.waitFor(r.ctx, t, "the upstream to receive the call", func() bool {
		k := 0
		for _, rec := range ft.log {
			if rec.msg.MethodIs("tools/call") {
				k++
			}
		}
		return k >= n
	})
}

// TestReconfigureAddRemoveWhileCalling: clients calling an untouched upstream in a loop see no failure while
// another upstream is removed and a third added; the added one's tools appear (sessions hear list_changed), the
// removed one's disappear, and a call in flight on the removed one fails with an error naming it. An unchanged
// fingerprint keeps the upstream (no reconnect); a changed one replaces it.
func TestReconfigureAddRemoveWhileCalling(t *testing.T) {
	keep, gone := plainUpstream(), holdingUpstream()
	keepCfg := UpstreamConfig{Name: "keep", Prefix: "keep__", Mode: Shared, Transport: keep, Kind: "stdio", Fingerprint: "keep-1"}
	goneCfg := UpstreamConfig{Name: "gone", Prefix: "gone__", Mode: PerClient, Transport: gone, Kind: "stdio", Fingerprint: "gone-1"}
	r := startRouter(t, Options{}, keepCfg, goneCfg)
	watcher := r.session(defaultClientCaps)
	waitTools(t, r, watcher, "both upstreams' tools", func(n []string) bool {
		return slices.Contains(n, "keep__add") && slices.Contains(n, "gone__add")
	})
	keepConnects := connects(keep)

	// Clients calling the untouched upstream in a loop.
	var ok, failed atomic.Int64
	var firstFailure atomic.Value
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 4 {
		s := r.session(defaultClientCaps)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				m, err := ask(r.ctx, s, callTool(w*1_000_000+i, "keep__add"))
				if err == nil && m.Error() != nil {
					err = fmt.Errorf("%s", m.Raw())
				}
				if err != nil {
					failed.Add(1)
					firstFailure.CompareAndSwap(nil, err.Error())
					continue
				}
				ok.Add(1)
			}
		}()
	}
	waitCount := func(n int64) {
		t.Helper()
		for ok.Load() < n {
			select {
			case <-r.ctx.Done():
				t.Fatalf("the calling loop stalled at %d calls", ok.Load())
			default:
			}
			nctx, cancel := context.WithTimeout(r.ctx, pollInterval)
			<-nctx.Done()
			cancel()
		}
	}
	waitCount(20)

	// A call in flight on the upstream about to be removed.
	caller := r.session(defaultClientCaps)
	inflight := make(chan jsonrpc.Message, 1)
	go func() {
		m, err := ask(r.ctx, caller, callTool(7, "gone__add"))
		if err != nil {
			m, _ = jsonrpc.Parse(jsonrpc.AppendError(nil, []byte("7"), -1, err.Error(), nil))
		}
		inflight <- m
	}()
	waitCall(t, r, gone, 1)
	drainNotices(watcher)

	added := plainUpstream()
	res, err := r.Reconfigure([]UpstreamConfig{
		keepCfg,
		{Name: "added", Prefix: "added__", Mode: Shared, Transport: added, Kind: "http", Fingerprint: "added-1"},
	})
	if err != nil {
		t.Fatalf("Reconfigure: %v", err)
	}
	if !slices.Equal(res.Added, []string{"added"}) || !slices.Equal(res.Removed, []string{"gone"}) ||
		!slices.Equal(res.Kept, []string{"keep"}) || len(res.Replaced) != 0 {
		t.Errorf("ReloadResult = %+v, want added [added], removed [gone], kept [keep]", res)
	}

	m := <-inflight
	if m.Error() == nil || !strings.Contains(errorMessage(m.Error()), `"gone"`) {
		t.Errorf("the call in flight on the removed upstream answered %s; want an error naming upstream \"gone\"", m.Raw())
	}

	waitNotice(t, r, watcher, "notifications/tools/list_changed")
	names := waitTools(t, r, watcher, "the added upstream's tools", func(n []string) bool { return slices.Contains(n, "added__add") })
	if slices.Contains(names, "gone__add") {
		t.Errorf("tools after removing upstream gone: %v; gone__add is still listed", names)
	}
	if !slices.Contains(names, "keep__add") {
		t.Errorf("tools after the reload: %v; keep__add is missing", names)
	}
	if m := roundTrip(t, r, watcher, callTool(8, "added__add")); m.Error() != nil {
		t.Errorf("calling the added upstream: %s", m.Raw())
	}
	if m := roundTrip(t, r, watcher, callTool(9, "gone__add")); m.Error() == nil {
		t.Errorf("calling the removed upstream succeeded: %s", m.Raw())
	}

	before := ok.Load()
	waitCount(before + 20) // the loop goes on after the reload
	close(stop)
	wg.Wait()
	if n := failed.Load(); n != 0 {
		t.Errorf("%d of %d calls to the untouched upstream failed during the reload; first: %v", n, n+ok.Load(), firstFailure.Load())
	}
	if c := connects(keep); c != keepConnects {
		t.Errorf("the untouched upstream (same fingerprint) reconnected: %d connections, was %d", c, keepConnects)
	}
	gone.mu.Lock()
	for _, c := range gone.conns {
		if !c.closed {
			t.Errorf("the removed upstream's connection %d is still open", c.n)
		}
	}
	gone.mu.Unlock()

	// A changed fingerprint replaces the upstream: a new connection, and it keeps working.
	keepCfg.Fingerprint = "keep-2"
	res, err = r.Reconfigure([]UpstreamConfig{keepCfg})
	if err != nil {
		t.Fatalf("Reconfigure: %v", err)
	}
	if !slices.Equal(res.Replaced, []string{"keep"}) || !slices.Equal(res.Removed, []string{"added"}) {
		t.Errorf("ReloadResult = %+v, want replaced [keep], removed [added]", res)
	}
	keep.waitFor(r.ctx, t, "the replaced upstream to reconnect", func() bool { return keep.connects > keepConnects })
	waitTools(t, r, watcher, "the replaced upstream's tools", func(n []string) bool {
		return slices.Equal(n, []string{"keep__add"})
	})
	if m := roundTrip(t, r, watcher, callTool(10, "keep__add")); m.Error() != nil {
		t.Errorf("calling the replaced upstream: %s", m.Raw())
	}
}

// TestReconfigureRejectsBadSet: a list the router cannot apply (a duplicate name) is refused whole and the running
// upstreams stay.
func TestReconfigureRejectsBadSet(t *testing.T) {
	ft := plainUpstream()
	cfg := UpstreamConfig{Name: "keep", Prefix: "keep__", Mode: Shared, Transport: ft, Kind: "stdio", Fingerprint: "1"}
	r := startRouter(t, Options{}, cfg)
	if _, err := r.Reconfigure([]UpstreamConfig{cfg, cfg}); err == nil || !strings.Contains(err.Error(), "keep") {
		t.Fatalf("Reconfigure with a duplicate = %v, want an error naming it", err)
	}
	s := r.session(defaultClientCaps)
	if m := roundTrip(t, r, s, callTool(1, "keep__add")); m.Error() != nil {
		t.Fatalf("the running upstream stopped working after a rejected reload: %s", m.Raw())
	}
}

// TestDrainUpstream: a drained upstream leaves the catalog (sessions hear list_changed) and new calls to it are
// refused with an error naming it, while a call already in flight finishes; undrained, it comes back.
func TestDrainUpstream(t *testing.T) {
	var release atomic.Bool
	var held []*heldCall
	var heldMu sync.Mutex
	ft := newFakeTransport(func(c *fakeConn, m jsonrpc.Message) {
		if m.MethodIs("tools/call") {
			if release.Load() {
				c.sendLocked(jsonrpc.AppendResult(nil, m.ID(), []byte(`{"content":[]}`)))
				return
			}
			heldMu.Lock()
			held = append(held, &heldCall{c: c, id: clone(m.ID())})
			heldMu.Unlock()
			return
		}
		defaultAnswer(c, m, fakeInitCaps, `[{"name":"add","inputSchema":{"type":"object"}}]`)
	})
	other := plainUpstream()
	// The prefix differs from the name, so that an error naming the upstream is told apart from one naming the tool.
	r := startRouter(t, Options{},
		UpstreamConfig{Name: "maint", Prefix: "m__", Mode: Shared, Transport: ft, Kind: "http"},
		UpstreamConfig{Name: "other", Prefix: "o__", Mode: Shared, Transport: other, Kind: "http"})
	s := r.session(defaultClientCaps)
	waitTools(t, r, s, "both upstreams' tools", func(n []string) bool { return len(n) == 2 })

	// A call in flight when the drain begins.
	inflight := make(chan jsonrpc.Message, 1)
	go func() {
		m, err := ask(r.ctx, s, callTool(1, "m__add"))
		if err != nil {
			m, _ = jsonrpc.Parse(jsonrpc.AppendError(nil, []byte("1"), -1, err.Error(), nil))
		}
		inflight <- m
	}()
	waitCall(t, r, ft, 1)
	drainNotices(s)

	if err := r.DrainUpstream("maint", true); err != nil {
		t.Fatal(err)
	}
	waitNotice(t, r, s, "notifications/tools/list_changed")
	if names := toolNames(t, r, s); !slices.Equal(names, []string{"o__add"}) {
		t.Errorf("tools while maint is drained: %v, want [o__add]", names)
	}
	if st := r.Status(); !st[0].Drained {
		t.Errorf("Status()[0] = %+v, want drained", st[0])
	}

	m := roundTrip(t, r, s, callTool(2, "m__add"))
	if m.Error() == nil {
		t.Errorf("a call to a drained upstream succeeded: %s", m.Raw())
	} else if msg := errorMessage(m.Error()); !strings.Contains(msg, `"maint"`) || !strings.Contains(msg, "drain") {
		t.Errorf("a call to a drained upstream was refused with %q; want an error naming upstream \"maint\" and saying it is drained", msg)
	}

	// The call in flight finishes.
	heldMu.Lock()
	h := held[0]
	heldMu.Unlock()
	ft.mu.Lock()
	h.c.sendLocked(jsonrpc.AppendResult(nil, h.id, []byte(`{"content":[{"type":"text","text":"finished"}]}`)))
	ft.mu.Unlock()
	if m := <-inflight; m.Error() != nil || !strings.Contains(string(m.Result()), "finished") {
		t.Errorf("the call in flight when the drain began answered %s; want its result", m.Raw())
	}

	release.Store(true)
	drainNotices(s)
	if err := r.DrainUpstream("maint", false); err != nil {
		t.Fatal(err)
	}
	waitNotice(t, r, s, "notifications/tools/list_changed")
	if names := toolNames(t, r, s); !slices.Contains(names, "m__add") {
		t.Errorf("tools after undrain: %v, want m__add back", names)
	}
	if m := roundTrip(t, r, s, callTool(3, "m__add")); m.Error() != nil {
		t.Errorf("a call after undrain failed: %s", m.Raw())
	}
	if err := r.DrainUpstream("nosuch", true); err == nil || !strings.Contains(err.Error(), "nosuch") {
		t.Errorf("DrainUpstream(nosuch) = %v, want an error naming it", err)
	}
}

type heldCall struct {
	c  *fakeConn
	id []byte
}

// TestRestartUpstream: after RestartUpstream the next call works, for shared and per-client upstreams, and every
// restart is counted in Status.
func TestRestartUpstream(t *testing.T) {
	for _, mode := range []SessionMode{Shared, PerClient} {
		t.Run(mode.String(), func(t *testing.T) {
			ft := plainUpstream()
			r := startRouter(t, Options{}, UpstreamConfig{Name: "svc", Prefix: "svc__", Mode: mode, Transport: ft, Kind: "stdio"})
			s := r.session(defaultClientCaps)
			if m := roundTrip(t, r, s, callTool(0, "svc__add")); m.Error() != nil {
				t.Fatalf("first call: %s", m.Raw())
			}
			for i := 1; i <= 5; i++ {
				if err := r.RestartUpstream("svc"); err != nil {
					t.Fatal(err)
				}
				if m := roundTrip(t, r, s, callTool(i, "svc__add")); m.Error() != nil {
					t.Fatalf("restart %d: the next call failed: %s", i, m.Raw())
				}
				waitStatus(t, r, fmt.Sprintf("restart %d counted", i), func(st UpstreamStatus) bool {
					return st.Restarts >= i && st.State == "ready"
				})
			}
			if err := r.RestartUpstream("nosuch"); err == nil || !strings.Contains(err.Error(), "nosuch") {
				t.Errorf("RestartUpstream(nosuch) = %v, want an error naming it", err)
			}
		})
	}
}

func waitStatus(t *testing.T, r *testRouter, what string, cond func(UpstreamStatus) bool) {
	t.Helper()
	for {
		st := r.Status()[0]
		if cond(st) {
			return
		}
		select {
		case <-r.ctx.Done():
			t.Fatalf("gave up waiting for %s; status %+v", what, st)
		default:
		}
		nctx, cancel := context.WithTimeout(r.ctx, pollInterval)
		<-nctx.Done()
		cancel()
	}
}

// heldTransport wraps the fake so that, once armed, a connection closed by the gateway is not noticed by the
// link's reader until the test releases it: the window in which RestartUpstream has closed the connection but the
// reader has not yet seen it, held open so that the test is deterministic.
type heldTransport struct {
	*fakeTransport
	armed   atomic.Bool
	release chan struct{}
}

func (t *heldTransport) Connect(ctx context.Context) (upstream.Connection, error) {
	c, err := t.fakeTransport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &heldConn{Connection: c, t: t}, nil
}

type heldConn struct {
	upstream.Connection
	t      *heldTransport
	closed atomic.Bool
}

func (c *heldConn) Close() error {
	c.closed.Store(true)
	return c.Connection.Close()
}

func (c *heldConn) Read(ctx context.Context) (upstream.Incoming, error) {
	in, err := c.Connection.Read(ctx)
	if err != nil && c.closed.Load() && c.t.armed.Load() {
		select {
		case <-c.t.release:
		case <-ctx.Done():
		}
	}
	return in, err
}

// TestRestartNextCallWaits: a call made right after RestartUpstream returns waits for the new upstream session; it
// is not written to the connection the restart just closed (which failed it with "sending tools/call failed").
// The reader's noticing of the closed connection is held back until the call has either failed or is seen
// waiting (the upstream no longer reported ready), so the outcome does not depend on scheduling.
func TestRestartNextCallWaits(t *testing.T) {
	ht := &heldTransport{fakeTransport: plainUpstream(), release: make(chan struct{})}
	r := startRouter(t, Options{}, UpstreamConfig{Name: "svc", Prefix: "svc__", Mode: Shared, Transport: ht, Kind: "stdio"})
	s := r.session(defaultClientCaps)
	if m := roundTrip(t, r, s, callTool(0, "svc__add")); m.Error() != nil {
		t.Fatalf("first call: %s", m.Raw())
	}
	ht.armed.Store(true)
	if err := r.RestartUpstream("svc"); err != nil {
		t.Fatal(err)
	}
	answer := make(chan jsonrpc.Message, 1)
	go func() {
		m, err := ask(r.ctx, s, callTool(1, "svc__add"))
		if err != nil {
			m, _ = jsonrpc.Parse(jsonrpc.AppendError(nil, []byte("1"), -1, err.Error(), nil))
		}
		answer <- m
	}()
	var m jsonrpc.Message
	got := false
	waitStatus(t, r, "the call to fail or the upstream to leave ready", func(st UpstreamStatus) bool {
		select {
		case m = <-answer:
			got = true
			return true
		default:
		}
		return st.State != "ready"
	})
	close(ht.release)
	if !got {
		m = <-answer
	}
	if m.Error() != nil {
		t.Fatalf("the call right after RestartUpstream failed: %s", m.Raw())
	}
}
