package routing

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/switchboard-mcp/switchboard/upstream"
	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
	"github.com/switchboard-mcp/switchboard/upstream/protocol"
)

// plainUpstream answers the handshake and the lists, and every tools/call at once.
func plainUpstream() *fakeTransport {
	return newFakeTransport(func(c *fakeConn, m jsonrpc.Message) {
		if m.MethodIs("tools/call") {
			c.sendLocked(jsonrpc.AppendResult(nil, m.ID(), []byte(`{"content":[]}`)))
			return
		}
		defaultAnswer(c, m, fakeInitCaps, `[{"name":"add","inputSchema":{"type":"object"}}]`)
	})
}

// holdingUpstream answers the handshake and the lists, and never answers anything else.
func holdingUpstream() *fakeTransport {
	return newFakeTransport(func(c *fakeConn, m jsonrpc.Message) {
		defaultAnswer(c, m, fakeInitCaps, `[{"name":"add","inputSchema":{"type":"object"}}]`)
	})
}

// roundTrip sends one request and returns the final answer on its stream.
func roundTrip(t testing.TB, r *testRouter, s *Session, raw string) jsonrpc.Message {
	t.Helper()
	out := newStream(1, 16)
	s.HandleRequest(context.Background(), mustParse(t, raw), out)
	for {
		msg, final, ok := out.Next(r.ctx)
		if !ok {
			t.Fatalf("no answer to %s", raw)
		}
		if final {
			m, err := jsonrpc.Parse(msg)
			if err != nil {
				t.Fatalf("invalid answer %s: %v", msg, err)
			}
			return m
		}
	}
}

// TestReadyWhenUpstreamDown: "A failed upstream does not hold readiness back: it is reported in Status and
// retried" (Router.Ready), and /readyz says "An upstream that is down does not make the gateway unready". The
// only upstream cannot be reached; once its first attempt has failed (observed as the second Connect, which the
// link makes only after handling the first failure), the router must be ready. Regression test: stateChanged used
// to set tried without calling Router.readyChanged, so WaitReady and /readyz waited forever.
func TestReadyWhenUpstreamDown(t *testing.T) {
	ft := newFakeTransport(nil)
	ft.connectErr = errors.New("connection refused")
	r, err := New(Options{Logger: discardLogger()}, []UpstreamConfig{{
		Name: "down", Prefix: "down__", Mode: Shared, Transport: ft, Kind: "http",
		Backoff: upstream.Backoff{Min: time.Millisecond, Max: 2 * time.Millisecond},
	}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); r.Run(ctx) }()
	defer func() { stop(); <-done }()
	safety, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ft.waitFor(safety, t, "a second connection attempt", func() bool { return ft.connects >= 2 })

	// Between attempts the upstream reads down, during the next one connecting (the link is already retrying);
	// either way with the last attempt's error.
	st := r.Status()
	if len(st) != 1 || st[0].State != "down" && st[0].State != "connecting" || !strings.Contains(st[0].Error, "connection refused") {
		t.Errorf("Status = %+v, want the upstream down or retrying, with its error", st)
	}
	if !r.Ready() {
		t.Fatal("Ready() = false after the only upstream's first attempt failed: WaitReady and /readyz wait forever")
	}
}

// TestTimeoutErrorNamesTheTimeout: the -32001 error tells the client how long the gateway waited. Regression
// test: with a sub-second timeout the message used to read "within 0s" (time.Since(started).Round(time.Second)).
func TestTimeoutErrorNamesTheTimeout(t *testing.T) {
	ft := holdingUpstream()
	r := startRouter(t, Options{RequestTimeout: 50 * time.Millisecond},
		UpstreamConfig{Name: "fake", Prefix: "fake__", Mode: Shared, Transport: ft, Kind: "stdio"})
	s := r.session(defaultClientCaps)
	m := roundTrip(t, r, s, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"fake__add","arguments":{}}}`)
	if code, _ := m.ErrorCode(); code != protocol.CodeRequestTimeout {
		t.Fatalf("answer %s, want error %d", m.Raw(), protocol.CodeRequestTimeout)
	}
	msg := errorMessage(m.Error())
	if strings.Contains(msg, "within 0s") || !strings.Contains(msg, "50ms") {
		t.Fatalf("timeout message %q should name the 50ms limit", msg)
	}
}

// TestPerClientSessionLifecycle: a per-client upstream session is created on first use with the client's
// capabilities, counted against MaxInstances, and closed with the client session.
func TestPerClientSessionLifecycle(t *testing.T) {
	ft := plainUpstream()
	r := startRouter(t, Options{}, UpstreamConfig{Name: "fake", Prefix: "fake__", Mode: PerClient, Transport: ft, Kind: "stdio", MaxInstances: 1})
	ft.mu.Lock()
	conns := len(ft.conns)
	ft.mu.Unlock()
	if conns != 1 {
		t.Fatalf("%d connections after start, want 1 (the template session)", conns)
	}

	s1 := r.session(`{"roots":{}}`)
	if m := roundTrip(t, r, s1, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"fake__add"}}`); m.Error() != nil {
		t.Fatalf("first session's call failed: %s", m.Raw())
	}
	if got := r.Status()[0].Instances; got != 1 {
		t.Fatalf("Instances = %d, want 1", got)
	}
	// The cap answers a second client with a clear error instead of starting another upstream session.
	s2 := r.session(defaultClientCaps)
	m := roundTrip(t, r, s2, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"fake__add"}}`)
	if m.Error() == nil || !strings.Contains(errorMessage(m.Error()), "limit of 1") {
		t.Fatalf("second session beyond MaxInstances got %s", m.Raw())
	}

	// The session's own upstream session is the one whose tools/call arrived (others are template sessions
	// that list tools for capability profiles).
	ft.mu.Lock()
	var own *fakeConn
	for _, rec := range ft.log {
		if rec.msg.MethodIs("tools/call") {
			own = ft.conns[rec.conn-1] // connections are numbered from 1
			break
		}
	}
	ft.mu.Unlock()
	if own == nil {
		t.Fatal("no upstream session received the call")
	}
	s1.Close()
	ft.mu.Lock()
	closed := own.closed
	ft.mu.Unlock()
	if !closed {
		t.Fatal("the per-client upstream session is still open after the client session closed")
	}
	if got := r.Status()[0].Instances; got != 0 {
		t.Fatalf("Instances = %d after close, want 0", got)
	}
	if r.Session(s1.ID()) != nil {
		t.Fatal("closed session still registered")
	}
	select {
	case <-s1.Done():
	default:
		t.Fatal("Done not closed")
	}
	// The slot is free again.
	if m := roundTrip(t, r, s2, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"fake__add"}}`); m.Error() != nil {
		t.Fatalf("second session's call after the first closed: %s", m.Raw())
	}
}

// TestLinkIDsDiffer: two links to one upstream mint different ids, so that an upstream broadcasting its answers
// to every stream cannot complete one client's call with another's answer (each link takes only ids it minted).
func TestLinkIDsDiffer(t *testing.T) {
	r := &Router{log: slog.New(slog.DiscardHandler)}
	up := &upstreamServer{cfg: UpstreamConfig{Name: "fake"}}
	seen := map[int64]bool{}
	for range 64 {
		id := newLink(r, up, nil, upstream.ClientHello{}).pending.mint()
		if id < 1 || id > maxSafeID {
			t.Fatalf("minted id %d outside [1, 2^53)", id)
		}
		if seen[id] {
			t.Fatalf("two links minted the same first id %d", id)
		}
		seen[id] = true
	}
}

// TestFirstCallHasRoots: a per-client upstream that limits itself to the client's roots asks roots/list once
// initialized; the client's first call, which starts that upstream, must not reach it before the answer has
// (server-filesystem refused such a call: "Access denied … outside allowed directories").
func TestFirstCallHasRoots(t *testing.T) {
	rooted := map[*fakeConn]bool{}
	tr := newFakeTransport(func(c *fakeConn, m jsonrpc.Message) {
		switch {
		case m.Kind() == jsonrpc.KindNotification && m.MethodIs("notifications/initialized"):
			c.sendLocked([]byte(`{"jsonrpc":"2.0","id":"roots-1","method":"roots/list"}`))
		case m.Kind() == jsonrpc.KindResponse && string(m.ID()) == `"roots-1"` && m.Error() == nil:
			rooted[c] = true
		case m.MethodIs("tools/call"):
			text := "denied: outside allowed directories"
			if rooted[c] {
				text = "ok"
			}
			c.sendLocked(jsonrpc.AppendResult(nil, m.ID(), []byte(`{"content":[{"type":"text","text":"`+text+`"}]}`)))
		default:
			defaultAnswer(c, m, fakeInitCaps, `[{"name":"read","inputSchema":{"type":"object"}}]`)
		}
	})
	r := startRouter(t, Options{}, UpstreamConfig{Name: "fs", Prefix: "fs__", Mode: PerClient, Transport: tr, Kind: "stdio"})
	s := r.session(`{"roots":{}}`)
	// The client: it answers roots/list on its standalone stream, slowly: not before the call has reached the
	// upstream, or half a second has passed without it doing so (as it must not, now).
	callSeen := func() bool {
		tr.mu.Lock()
		defer tr.mu.Unlock()
		for _, rec := range tr.log {
			if rec.msg.MethodIs("tools/call") {
				return true
			}
		}
		return false
	}
	answered := make(chan struct{})
	go func() {
		defer close(answered)
		for {
			msg, _, ok := s.Standalone().Next(r.ctx)
			if !ok {
				return
			}
			if m, err := jsonrpc.Parse(msg); err == nil && m.Kind() == jsonrpc.KindRequest && m.MethodIs("roots/list") {
				patience := time.NewTimer(500 * time.Millisecond)
				for !callSeen() {
					tr.mu.Lock()
					changed := tr.changed
					tr.mu.Unlock()
					select {
					case <-changed:
						continue
					case <-patience.C:
					}
					break
				}
				patience.Stop()
				s.HandleResponse(mustParse(t, `{"jsonrpc":"2.0","id":`+string(m.ID())+`,"result":{"roots":[{"uri":"file:///data"}]}}`))
				return
			}
		}
	}()
	defer func() { s.Close(); <-answered }()
	out := r.NewStream(4, 0)
	s.HandleRequest(r.ctx, mustParse(t, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"fs__read","arguments":{}}}`), out)
	msg, _, ok := out.Next(r.ctx)
	if !ok || !strings.Contains(string(msg), `"ok"`) {
		t.Fatalf("first call answered %s, want it to run after the upstream had the client's roots", msg)
	}
}

// TestRequestedName: a tool's name routes however the client spells the JSON string; sent plainly it comes back
// as the catalog's own string (no copy made per call); a name nobody offers and a name that is not a string
// get errors that say so.
func TestRequestedName(t *testing.T) {
	ft := holdingUpstream()
	ft.handle = func(c *fakeConn, m jsonrpc.Message) {
		if m.MethodIs(protocol.MethodToolsCall) {
			c.sendLocked(jsonrpc.AppendResult(nil, m.ID(), m.Params()))
			return
		}
		defaultAnswer(c, m, fakeInitCaps, `[{"name":"add","inputSchema":{"type":"object"}}]`)
	}
	r := startRouter(t, Options{}, UpstreamConfig{Name: "fake", Prefix: "fake__", Mode: Shared, Transport: ft, Kind: "stdio"})
	s := r.session(defaultClientCaps)
	cat := s.catalog()
	for _, tt := range []struct {
		name     string // params.name as sent
		want     string // the name requestedName reads ("" with ok false: none)
		interned bool   // the catalog's own string
		code     int    // the call's error code, 0 for routed
	}{
		{`"fake__add"`, "fake__add", true, 0},
		{`"fake__\u0061dd"`, "fake__add", false, 0},
		{`"fake__sub"`, "fake__sub", false, protocol.CodeInvalidParams},
		{`"fake__\u00e9"`, "fake__é", false, protocol.CodeInvalidParams},
		{`7`, "", false, protocol.CodeInvalidParams},
	} {
		params := []byte(`{"name":` + tt.name + `}`)
		got, ok := requestedName(cat, kindTools, params)
		if got != tt.want || ok != (tt.want != "") {
			t.Errorf("requestedName(%s) = %q, %v; want %q", tt.name, got, ok, tt.want)
		}
		if isCatalogs := ok && unsafe.StringData(got) == unsafe.StringData(cat.tools["fake__add"].exposed); isCatalogs != tt.interned {
			t.Errorf("requestedName(%s): the catalog's own string %v, want %v", tt.name, isCatalogs, tt.interned)
		}
		m := roundTrip(t, r, s, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":`+string(params)+`}`)
		if code, _ := m.ErrorCode(); code != tt.code {
			t.Errorf("tools/call %s: %s, want code %d", tt.name, m.Raw(), tt.code)
		} else if tt.code == 0 {
			// Forwarded under the upstream's own name, whatever the client's spelling.
			if name, _ := jsonrpc.LookupString(m.Result(), "name"); name != "add" {
				t.Errorf("tools/call %s reached the upstream as %s", tt.name, m.Result())
			}
		}
	}
}
