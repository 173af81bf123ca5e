package routing

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-mcp/switchboard/upstream"
	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
)

// fakeInitCaps are the capabilities the fake upstream declares unless a test says otherwise.
const fakeInitCaps = `{"tools":{"listChanged":true},"prompts":{},"resources":{"subscribe":true},"logging":{}}`

// fakeTransport is an in-memory upstream.Transport. Every connection it makes shares one handler (the script),
// and every message the gateway writes, on any connection, is recorded in order.
type fakeTransport struct {
	mu         sync.Mutex
	changed    chan struct{} // closed and replaced on every event, for waiters
	conns      []*fakeConn
	connects   int
	connectErr error
	log        []fakeRecord
	armed      bool // for scripts that should only run once a test's steps begin
	// handle answers one message the gateway wrote; it runs with mu held and replies with c.sendLocked.
	handle func(c *fakeConn, m jsonrpc.Message)
	// stall, when set before the transport is used, names the messages the connection does not take: their
	// Write waits for its context, as a stdio pipe nobody reads would.
	stall func(m jsonrpc.Message) bool
}

type fakeRecord struct {
	conn int
	msg  jsonrpc.Message
}

func newFakeTransport(handle func(*fakeConn, jsonrpc.Message)) *fakeTransport {
	return &fakeTransport{changed: make(chan struct{}), handle: handle}
}

// eventLocked wakes every waiter; mu is held.
func (t *fakeTransport) eventLocked() {
	close(t.changed)
	t.changed = make(chan struct{})
}

func (t *fakeTransport) Connect(ctx context.Context) (upstream.Connection, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.connects++
	t.eventLocked()
	if t.connectErr != nil {
		return nil, t.connectErr
	}
	c := &fakeConn{t: t, n: len(t.conns) + 1, wake: make(chan struct{}, 1)}
	t.conns = append(t.conns, c)
	return c, nil
}

// waitFor blocks until cond (called with mu held) holds; ctx is only a safety net against a hung test.
func (t *fakeTransport) waitFor(ctx context.Context, tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	for {
		t.mu.Lock()
		ok, ch := cond(), t.changed
		t.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-ch:
		case <-ctx.Done():
			tb.Fatalf("gave up waiting for %s", what)
		}
	}
}

// inject sends a message from the upstream on its newest connection.
func (t *fakeTransport) inject(raw []byte) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.conns[len(t.conns)-1].sendLocked(raw)
}

// fakeConn is one upstream session of the fake.
type fakeConn struct {
	t      *fakeTransport
	n      int
	q      []fakeItem // guarded by t.mu
	wake   chan struct{}
	closed bool
	broken error
}

type fakeItem struct {
	in  upstream.Incoming
	err error
}

func (c *fakeConn) signal() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// sendLocked queues a message from the upstream to the gateway; t.mu is held.
func (c *fakeConn) sendLocked(raw []byte) { c.sendRelatedLocked(raw, nil) }

// sendRelatedLocked queues a message as if it arrived on the HTTP response stream of the request with id related.
func (c *fakeConn) sendRelatedLocked(raw, related []byte) {
	m, err := jsonrpc.Parse(append([]byte(nil), raw...))
	if err != nil {
		panic(fmt.Sprintf("fake upstream: script sends an invalid message %s: %v", raw, err))
	}
	c.q = append(c.q, fakeItem{in: upstream.Incoming{Msg: m, Related: related}})
	c.signal()
}

// breakLocked makes Read fail with err once the messages queued before it are read; t.mu is held.
func (c *fakeConn) breakLocked(err error) {
	c.q = append(c.q, fakeItem{err: err})
	c.signal()
}

func (c *fakeConn) Read(ctx context.Context) (upstream.Incoming, error) {
	for {
		c.t.mu.Lock()
		if len(c.q) > 0 {
			it := c.q[0]
			c.q[0] = fakeItem{}
			c.q = c.q[1:]
			if it.err != nil {
				c.broken = it.err
			}
			c.t.mu.Unlock()
			return it.in, it.err
		}
		closed, broken := c.closed, c.broken
		c.t.mu.Unlock()
		if broken != nil {
			return upstream.Incoming{}, broken
		}
		if closed {
			return upstream.Incoming{}, fmt.Errorf("fake: closed: %w", io.EOF)
		}
		select {
		case <-c.wake:
		case <-ctx.Done():
			return upstream.Incoming{}, ctx.Err()
		}
	}
}

func (c *fakeConn) Write(ctx context.Context, given jsonrpc.Message) error {
	if c.t.stall != nil && c.t.stall(given) {
		<-ctx.Done()
		return fmt.Errorf("fake: the write was not taken: %w", ctx.Err())
	}
	c.t.mu.Lock()
	defer c.t.mu.Unlock()
	if c.closed || c.broken != nil {
		return errors.New("fake: write on a closed connection")
	}
	msg := given.Raw()
	m, err := jsonrpc.Parse(append([]byte(nil), msg...))
	if err != nil {
		return fmt.Errorf("fake: the gateway wrote an invalid message %s: %w", msg, err)
	}
	// The gateway hands over the message parsed (often by splicing, not by Parse): it must read as its bytes do.
	if given.Kind() != m.Kind() || string(given.ID()) != string(m.ID()) || given.Method() != m.Method() ||
		string(given.Params()) != string(m.Params()) || string(given.Result()) != string(m.Result()) || string(given.Error()) != string(m.Error()) {
		return fmt.Errorf("fake: the gateway wrote %s parsed as something else (id %s, method %q, params %s)", msg, given.ID(), given.Method(), given.Params())
	}
	c.t.log = append(c.t.log, fakeRecord{conn: c.n, msg: m})
	c.t.eventLocked()
	if c.t.handle != nil {
		c.t.handle(c, m)
	}
	return nil
}

func (c *fakeConn) Close() error {
	c.t.mu.Lock()
	defer c.t.mu.Unlock()
	c.closed = true
	c.signal()
	c.t.eventLocked()
	return nil
}

// defaultAnswer answers the handshake and the list methods as a plain server would: initialize with caps, the
// lists with tools (a JSON array) and empty lists of the rest. It reports whether it answered.
func defaultAnswer(c *fakeConn, m jsonrpc.Message, caps, tools string) bool {
	if m.Kind() != jsonrpc.KindRequest {
		return m.Kind() == jsonrpc.KindNotification && m.MethodIs("notifications/initialized")
	}
	var result string
	switch m.Method() {
	case "initialize":
		result = `{"protocolVersion":"2025-11-25","capabilities":` + caps + `,"serverInfo":{"name":"fake","version":"1.0.0"}}`
	case "tools/list":
		result = `{"tools":` + tools + `}`
	case "prompts/list":
		result = `{"prompts":[]}`
	case "resources/list":
		result = `{"resources":[]}`
	case "resources/templates/list":
		result = `{"resourceTemplates":[]}`
	default:
		return false
	}
	c.sendLocked(jsonrpc.AppendResult(nil, m.ID(), []byte(result)))
	return true
}

// testRouter is a Router running over fake upstreams until the test ends.
type testRouter struct {
	*Router
	ctx context.Context // the safety deadline for waits
}

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// startRouter builds a router with routing.New, runs it, waits until it is ready and stops it at the end of the
// test.
func startRouter(tb testing.TB, opts Options, ups ...UpstreamConfig) *testRouter {
	tb.Helper()
	if opts.Logger == nil {
		opts.Logger = discardLogger()
	}
	if opts.Version == "" {
		opts.Version = "test"
	}
	if opts.CursorSecret == nil {
		opts.CursorSecret = []byte("exchange-test-key")
	}
	for i := range ups {
		if ups[i].Backoff == (upstream.Backoff{}) {
			ups[i].Backoff = upstream.Backoff{Min: time.Millisecond, Max: 2 * time.Millisecond}
		}
	}
	r, err := New(opts, ups)
	if err != nil {
		tb.Fatal(err)
	}
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); r.Run(runCtx) }()
	safety, cancelSafety := context.WithTimeout(context.Background(), 20*time.Second)
	tb.Cleanup(func() {
		stop()
		<-done
		cancelSafety()
	})
	// Readiness takes one listing (about 50ms of debounce); the bound only keeps a broken start from hanging.
	readyCtx, cancelReady := context.WithTimeout(safety, 10*time.Second)
	defer cancelReady()
	if err := r.WaitReady(readyCtx); err != nil {
		// The Status shows how far the upstream got (see TestRouterStartup for a start-up race that ended here).
		tb.Fatalf("router not ready: %v; status %+v", err, r.Status())
	}
	return &testRouter{Router: r, ctx: safety}
}

// defaultClientCaps are what the test sessions declare unless a case says otherwise.
const defaultClientCaps = `{"sampling":{},"roots":{}}`

func (r *testRouter) session(caps string) *Session {
	return r.NewSession(SessionParams{ProtocolVersion: "2025-11-25", Capabilities: json.RawMessage(caps)})
}

func mustParse(tb testing.TB, raw string) jsonrpc.Message {
	tb.Helper()
	m, err := jsonrpc.Parse([]byte(raw))
	if err != nil {
		tb.Fatalf("bad test message %s: %v", raw, err)
	}
	return m
}
