package gateway_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/redis/go-redis/v9"

	"github.com/switchboard-mcp/switchboard/gateway"
	"github.com/switchboard-mcp/switchboard/routing"
	"github.com/switchboard-mcp/switchboard/routing/state"
	"github.com/switchboard-mcp/switchboard/upstream"
)

// realRedis starts a redis-server on a free loopback port for the test; it skips without one unless
// SWITCHBOARD_E2E=require (CI), where a missing peer is a failure.
func realRedis(t *testing.T) string { return startRedis(t).addr }

// redisProc is a redis-server the test can stop and start again on the same port.
type redisProc struct {
	t    *testing.T
	bin  string
	addr string
	port int
	dir  string
	cmd  *exec.Cmd
	// exited is closed once cmd has exited (its Wait returned).
	exited <-chan struct{}
}

func startRedis(t *testing.T) *redisProc {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("SWITCHBOARD_E2E") == "require" {
			t.Fatal("redis-server not found on PATH (SWITCHBOARD_E2E=require); .ci/setup installs it")
		}
		t.Skip("redis-server not found on PATH; .ci/setup installs it")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &redisProc{t: t, bin: bin, port: l.Addr().(*net.TCPAddr).Port, dir: t.TempDir()}
	l.Close()
	p.addr = "127.0.0.1:" + strconv.Itoa(p.port)
	t.Cleanup(p.stop) // before start: a server that never gets ready is still killed
	p.start()
	return p
}

// start runs redis-server and returns once the server logs that it accepts connections: the server's own signal
// that it listens, in place of a ping loop. A server that exits first (its port taken, say) fails the test with
// its log; guard bounds the wait.
func (p *redisProc) start() {
	p.t.Helper()
	out := &redisLog{ready: make(chan struct{})}
	p.cmd = exec.Command(p.bin, "--port", strconv.Itoa(p.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", p.dir)
	p.cmd.Stdout, p.cmd.Stderr = out, out
	if err := p.cmd.Start(); err != nil {
		p.t.Fatal(err)
	}
	exited := make(chan struct{})
	p.exited = exited
	go func() {
		defer close(exited)
		_ = p.cmd.Wait()
	}()
	timer := time.NewTimer(guard)
	defer timer.Stop()
	select {
	case <-out.ready:
	case <-exited:
		p.cmd = nil
		p.t.Fatalf("redis-server exited before it accepted connections:\n%s", out)
	case <-timer.C:
		p.t.Fatalf("redis-server did not log %q within %s:\n%s", redisReady, guard, out)
	}
}

func (p *redisProc) stop() {
	if p.cmd != nil {
		_ = p.cmd.Process.Kill()
		<-p.exited
		p.cmd = nil
	}
}

// redisReady is what redis-server logs once it listens (7.0: "… Ready to accept connections"; 7.2 adds " tcp").
const redisReady = "Ready to accept connections"

// redisLog collects a redis-server's log and closes ready when the server logs redisReady.
type redisLog struct {
	mu    sync.Mutex
	b     bytes.Buffer
	ready chan struct{}
	seen  bool
}

func (l *redisLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b.Write(p)
	if !l.seen && bytes.Contains(l.b.Bytes(), []byte(redisReady)) {
		l.seen = true
		close(l.ready)
	}
	return len(p), nil
}

func (l *redisLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestReplicasShareSessions runs two gateway replicas on one real Redis: a session initialized on A is served
// by B (its per-client upstream session is started there), cursors minted by A are accepted by B, the client is
// told on B that its session moved, and a DELETE on B ends the session on A as well.
func TestReplicasShareSessions(t *testing.T) {
	addr := realRedis(t)
	secret := []byte(strings.Repeat("k", 32))
	replica := func(name string) *harness {
		client := redis.NewClient(&redis.Options{Addr: addr, DialTimeout: time.Second, MaxRetries: 1, ContextTimeoutEnabled: true})
		store := state.NewRedis(client, "test:", state.WithSessionTTL(time.Minute))
		t.Cleanup(func() { store.Shutdown(); client.Close() })
		return startGateway(t,
			routing.Options{CursorSecret: secret, PageSize: 1, Store: store, Bus: store},
			gateway.Options{Ready: store.Ping},
			stdioUpstream(t, "alpha", routing.PerClient, markerSink(t)))
	}
	a, b := replica("a"), replica("b")

	ca := a.raw(t)
	init := ca.do(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`, nil)
	sid := init.header.Get("Mcp-Session-Id")
	if init.status != http.StatusOK || sid == "" {
		t.Fatalf("initialize on A: %d %s", init.status, init.body)
	}
	ca.session, ca.version = sid, "2025-11-25"
	page := ca.do(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, nil).final(t)
	var cursor struct {
		NextCursor string `json:"nextCursor"`
	}
	if page.Error != nil || decodeJSON(page.Result, &cursor) != nil || cursor.NextCursor == "" {
		t.Fatalf("tools/list on A: %+v", page)
	}

	cb := b.raw(t)
	cb.session, cb.version = sid, "2025-11-25"
	call := cb.do(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"alpha__echo","arguments":{"text":"on B"}}}`, nil)
	if m := call.final(t); m.Error != nil || !strings.Contains(string(m.Result), "on B") {
		t.Fatalf("a call on B for A's session: HTTP %d %s", call.status, call.body)
	}
	next := cb.do(`{"jsonrpc":"2.0","id":4,"method":"tools/list","params":{"cursor":"`+cursor.NextCursor+`"}}`, nil).final(t)
	if next.Error != nil {
		t.Fatalf("A's cursor on B: %+v", next.Error)
	}
	if b.r.Session(sid) == nil {
		t.Fatal("B does not hold the session after serving it")
	}

	// DELETE on B ends it everywhere: A drops its copy (through the bus) and answers 404.
	req, _ := http.NewRequestWithContext(ctxGuard(t), http.MethodDelete, b.url, nil)
	req.Header.Set("Mcp-Session-Id", sid)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE on B: %v %v", resp, err)
	}
	resp.Body.Close()
	waitFor(t, "A to drop the ended session", func() bool { return a.r.Session(sid) == nil })
	if got := ca.do(`{"jsonrpc":"2.0","id":5,"method":"ping"}`, nil); got.status != http.StatusNotFound {
		t.Fatalf("A after DELETE on B: HTTP %d %s, want 404", got.status, got.body)
	}
	if got := cb.do(`{"jsonrpc":"2.0","id":6,"method":"ping"}`, nil); got.status != http.StatusNotFound {
		t.Fatalf("B after DELETE: HTTP %d %s, want 404", got.status, got.body)
	}
}

// TestReplicasRelayCancel: a client's cancellation posted to replica B reaches the call running on replica A
// (relayed through the bus), and the upstream stops working on it.
func TestReplicasRelayCancel(t *testing.T) {
	addr := realRedis(t)
	secret := []byte(strings.Repeat("k", 32))
	markers := markerSink(t)
	replica := func() *harness {
		client := redis.NewClient(&redis.Options{Addr: addr, DialTimeout: time.Second, MaxRetries: 1, ContextTimeoutEnabled: true})
		store := state.NewRedis(client, "test:")
		t.Cleanup(func() { store.Shutdown(); client.Close() })
		return startGateway(t, routing.Options{CursorSecret: secret, Store: store, Bus: store}, gateway.Options{},
			stdioUpstream(t, "alpha", routing.PerClient, markers))
	}
	a, b := replica(), replica()
	ca := a.raw(t)
	init := ca.do(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`, nil)
	ca.session, ca.version = init.header.Get("Mcp-Session-Id"), "2025-11-25"
	done := postAsync(ca, `{"jsonrpc":"2.0","id":"slow-1","method":"tools/call","params":{"name":"alpha__slow","arguments":{"tag":"relay"}}}`)
	waitFor(t, "the call to be in flight on A", func() bool {
		s := a.r.Session(ca.session)
		return s != nil && s.InFlight() == 1
	})
	cb := b.raw(t)
	cb.session, cb.version = ca.session, "2025-11-25"
	if got := cb.do(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"slow-1","reason":"changed my mind"}}`, nil); got.status != http.StatusAccepted {
		t.Fatalf("cancel on B: HTTP %d %s", got.status, got.body)
	}
	waitMarker(t, markers, "cancel-relay")
	<-done // the cancelled call's stream ends without an answer
}

// TestReplicaUnknownSession: a session id that no replica ever issued is still a 404 with a store.
func TestReplicaUnknownSession(t *testing.T) {
	addr := realRedis(t)
	client := redis.NewClient(&redis.Options{Addr: addr})
	store := state.NewRedis(client, "test:")
	t.Cleanup(func() { store.Shutdown(); client.Close() })
	h := startGateway(t, routing.Options{Store: store, Bus: store}, gateway.Options{Ready: store.Ping},
		stdioUpstream(t, "alpha", routing.Shared, markerSink(t)))
	c := h.raw(t)
	c.session = "0123456789abcdef0123456789abcdef"
	if got := c.do(`{"jsonrpc":"2.0","id":1,"method":"ping"}`, nil); got.status != http.StatusNotFound {
		t.Fatalf("unknown session: HTTP %d %s", got.status, got.body)
	}
	resp, err := http.Get(h.ts.URL + "/readyz")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("/readyz with Redis up: %v %v", resp, err)
	}
	resp.Body.Close()
}

func decodeJSON(raw []byte, v any) error { return json.Unmarshal(raw, v) }

// TestRateLimits: a principal's requests beyond the bucket get HTTP 429 with Retry-After and a JSON-RPC error
// carrying retryAfterMs, on one replica (memory) and across two (Redis, one bucket for both); calls beyond the
// concurrency bound are refused while one is in flight.
func TestRateLimits(t *testing.T) {
	markers := markerSink(t)
	limited := func(t *testing.T, got rawResp) {
		t.Helper()
		m := decodeMsg(t, got.body)
		if got.status != http.StatusTooManyRequests || got.header.Get("Retry-After") == "" || m.Error == nil || m.Error.Code != -32000 ||
			!strings.Contains(string(m.Error.Data), "retryAfterMs") {
			t.Fatalf("want 429 + Retry-After + -32000 with retryAfterMs; got HTTP %d %s", got.status, got.body)
		}
	}
	initialize := func(h *harness) *rawClient {
		c := h.raw(t)
		init := c.do(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`, nil)
		c.session, c.version = init.header.Get("Mcp-Session-Id"), "2025-11-25"
		return c
	}
	t.Run("rate, one replica", func(t *testing.T) {
		mem := state.NewMemory()
		t.Cleanup(mem.Shutdown)
		h := startGateway(t, routing.Options{}, gateway.Options{Limits: gateway.Limits{Limiter: mem, RequestsPerSecond: 0.01, Burst: 2}},
			stdioUpstream(t, "alpha", routing.Shared, markers))
		c := initialize(h) // the first request of the burst
		if got := c.do(`{"jsonrpc":"2.0","id":2,"method":"ping"}`, nil); got.status != http.StatusOK {
			t.Fatalf("second request, within the burst: HTTP %d %s", got.status, got.body)
		}
		limited(t, c.do(`{"jsonrpc":"2.0","id":3,"method":"ping"}`, nil))
	})
	t.Run("rate, two replicas share the bucket", func(t *testing.T) {
		addr := realRedis(t)
		replica := func() *harness {
			client := redis.NewClient(&redis.Options{Addr: addr})
			store := state.NewRedis(client, "rl:")
			t.Cleanup(func() { store.Shutdown(); client.Close() })
			return startGateway(t, routing.Options{CursorSecret: []byte(strings.Repeat("k", 32)), Store: store, Bus: store},
				gateway.Options{Limits: gateway.Limits{Limiter: store, RequestsPerSecond: 0.01, Burst: 2}},
				stdioUpstream(t, "alpha", routing.Shared, markers))
		}
		a, b := replica(), replica()
		ca := initialize(a) // the first request, on A
		cb := b.raw(t)
		cb.session, cb.version = ca.session, ca.version
		if got := cb.do(`{"jsonrpc":"2.0","id":3,"method":"ping"}`, nil); got.status != http.StatusOK {
			t.Fatalf("second request, on B: HTTP %d %s", got.status, got.body)
		}
		limited(t, ca.do(`{"jsonrpc":"2.0","id":4,"method":"ping"}`, nil))
	})
	t.Run("concurrent calls", func(t *testing.T) {
		mem := state.NewMemory()
		t.Cleanup(mem.Shutdown)
		h := startGateway(t, routing.Options{}, gateway.Options{Limits: gateway.Limits{Limiter: mem, ConcurrentCalls: 1, CallTTL: time.Minute}},
			stdioUpstream(t, "alpha", routing.Shared, markers))
		c := initialize(h)
		held := postAsync(c, `{"jsonrpc":"2.0","id":"hold","method":"tools/call","params":{"name":"alpha__slow","arguments":{"tag":"held","ms":3000}}}`)
		defer func() { <-held }()
		waitFor(t, "the first call to be in flight", func() bool {
			s := h.r.Session(c.session)
			return s != nil && s.InFlight() == 1
		})
		limited(t, c.do(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"alpha__echo","arguments":{"text":"x"}}}`, nil))
		if got := c.do(`{"jsonrpc":"2.0","id":5,"method":"ping"}`, nil); got.status != http.StatusOK {
			t.Fatalf("a ping is not a call and is not bounded: HTTP %d %s", got.status, got.body)
		}
	}) // A 2025-03-26 batch: each request in it counts as if it came alone; the refused ones get their own error in
	// the batch's answer, the others run. Before, a batch was admitted whole and unlimited.
	batchCodes := func(t *testing.T, got rawResp) map[string]int {
		t.Helper()
		var arr []struct {
			ID    json.RawMessage `json:"id"`
			Error *struct {
				Code int `json:"code"`
			} `json:"error"`
		}
		if got.status != http.StatusOK || json.Unmarshal(got.body, &arr) != nil {
			t.Fatalf("batch: HTTP %d %s, want 200 and an array", got.status, got.body)
		}
		codes := map[string]int{}
		for _, a := range arr {
			codes[string(a.ID)] = 0
			if a.Error != nil {
				codes[string(a.ID)] = a.Error.Code
			}
		}
		return codes
	}
	batchOf := func(n int, call string) string {
		parts := make([]string, n)
		for i := range parts {
			parts[i] = fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,%s}`, i+10, call)
		}
		return "[" + strings.Join(parts, ",") + "]"
	}
	t.Run("batch: each request counts against the rate", func(t *testing.T) {
		mem := state.NewMemory()
		t.Cleanup(mem.Shutdown)
		h := startGateway(t, routing.Options{}, gateway.Options{Limits: gateway.Limits{Limiter: mem, RequestsPerSecond: 0.01, Burst: 3}},
			stdioUpstream(t, "alpha", routing.Shared, markers))
		c := h.raw(t)
		c.initialize("2025-03-26") // one of the burst of 3
		codes := batchCodes(t, c.do(batchOf(5, `"method":"tools/call","params":{"name":"alpha__echo","arguments":{"text":"x"}}`), nil))
		if want := map[string]int{"10": 0, "11": 0, "12": -32000, "13": -32000, "14": -32000}; !maps.Equal(codes, want) {
			t.Errorf("batch answers (id → code) = %v, want %v", codes, want)
		}
	})
	t.Run("batch: calls count against the bound on calls in flight", func(t *testing.T) {
		mem := state.NewMemory()
		t.Cleanup(mem.Shutdown)
		h := startGateway(t, routing.Options{}, gateway.Options{Limits: gateway.Limits{Limiter: mem, ConcurrentCalls: 1, CallTTL: time.Minute}},
			stdioUpstream(t, "alpha", routing.Shared, markers))
		c := h.raw(t)
		c.initialize("2025-03-26")
		codes := batchCodes(t, c.do(batchOf(3, `"method":"tools/call","params":{"name":"alpha__echo","arguments":{"text":"x"}}`), nil))
		if want := map[string]int{"10": 0, "11": -32000, "12": -32000}; !maps.Equal(codes, want) {
			t.Errorf("batch answers (id → code) = %v, want %v", codes, want)
		}
		if got := c.do(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"alpha__echo","arguments":{"text":"x"}}}`, nil); got.status != http.StatusOK {
			t.Errorf("a call after the batch ended (its lease released): HTTP %d %s", got.status, got.body)
		}
	})
	t.Run("legacy HTTP+SSE: requests count against the rate", func(t *testing.T) {
		mem := state.NewMemory()
		t.Cleanup(mem.Shutdown)
		h := startGateway(t, routing.Options{}, gateway.Options{Limits: gateway.Limits{Limiter: mem, RequestsPerSecond: 0.01, Burst: 1}},
			stdioUpstream(t, "alpha", routing.Shared, markers))
		req, _ := http.NewRequestWithContext(ctxGuard(t), http.MethodGet, strings.TrimSuffix(h.url, "/mcp")+"/sse", nil)
		req.Header.Set("Accept", "text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET /sse: %v %v", resp, err)
		}
		defer resp.Body.Close()
		endpoint := ""
		sc := bufio.NewScanner(resp.Body)
		for endpoint == "" && sc.Scan() {
			if line, ok := strings.CutPrefix(sc.Text(), "data:"); ok {
				endpoint = strings.TrimSpace(line)
			}
		}
		post := func(body string) rawResp {
			req, _ := http.NewRequestWithContext(ctxGuard(t), http.MethodPost, strings.TrimSuffix(h.url, "/mcp")+endpoint, strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			return rawResp{status: resp.StatusCode, header: resp.Header, body: b}
		}
		if got := post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`); got.status != http.StatusAccepted {
			t.Fatalf("initialize, within the burst: HTTP %d %s", got.status, got.body)
		}
		limited(t, post(`{"jsonrpc":"2.0","id":2,"method":"ping"}`))
	})
	t.Run("batch: fan-out is bounded", func(t *testing.T) {
		h := startGateway(t, routing.Options{}, gateway.Options{}, stdioUpstream(t, "alpha", routing.Shared, markers))
		c := h.raw(t)
		c.initialize("2025-03-26")
		got := c.do(batchOf(101, `"method":"ping"`), nil)
		if m := decodeMsg(t, got.body); got.status != http.StatusBadRequest || m.Error == nil || m.Error.Code != -32600 || !strings.Contains(m.Error.Message, "at most 100") {
			t.Errorf("a batch of 101: HTTP %d %s, want 400 and -32600 naming the limit", got.status, got.body)
		}
		if got := c.do(batchOf(100, `"method":"ping"`), nil); got.status != http.StatusOK {
			t.Errorf("a batch of 100: HTTP %d %s", got.status, got.body)
		}
	})
}

// TestReplicasShareStreams: with the shared event log, a POST stream that drops mid-call on replica A is resumed
// with GET and Last-Event-ID on replica B, which delivers the rest, answer included; and a standalone GET stream
// on B carries a message produced on A (A's notice that the session moved there).
func TestReplicasShareStreams(t *testing.T) {
	addr := realRedis(t)
	secret := []byte(strings.Repeat("k", 32))
	markers := markerSink(t)
	replica := func() *harness {
		client := redis.NewClient(&redis.Options{Addr: addr, DialTimeout: time.Second, MaxRetries: 1, ContextTimeoutEnabled: true})
		store := state.NewRedis(client, "streams:")
		t.Cleanup(func() { store.Shutdown(); client.Close() })
		return startGateway(t, routing.Options{CursorSecret: secret, Store: store, Bus: store},
			gateway.Options{Events: store}, stdioUpstream(t, "alpha", routing.PerClient, markers))
	}
	a, b := replica(), replica()
	cb := b.raw(t)
	init := cb.do(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`, nil)
	cb.session, cb.version = init.header.Get("Mcp-Session-Id"), "2025-11-25"

	// A POST on A whose stream the client drops after the first event (the progress notification).
	req, _ := http.NewRequestWithContext(ctxGuard(t), http.MethodPost, a.url, strings.NewReader(
		`{"jsonrpc":"2.0","id":"slow-2","method":"tools/call","params":{"name":"alpha__slow","arguments":{"tag":"resume","ms":1500},"_meta":{"progressToken":"p"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream, application/json")
	req.Header.Set("Mcp-Session-Id", cb.session)
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("POST on A: %v %v", resp, err)
	}
	lastID := ""
	buf := make([]byte, 0, 4096)
	chunk := make([]byte, 1024)
	for !strings.Contains(string(buf), `"progress"`) {
		n, err := resp.Body.Read(chunk)
		buf = append(buf, chunk[:n]...)
		if err != nil {
			t.Fatalf("reading A's stream: %v (%s)", err, buf)
		}
	}
	for _, line := range strings.Split(string(buf), "\n") {
		if id, ok := strings.CutPrefix(line, "id: "); ok {
			lastID = id
		}
	}
	resp.Body.Close() // the connection drops mid-call
	if lastID == "" {
		t.Fatalf("no event id on A's stream: %s", buf)
	}

	// Resume on B.
	get, _ := http.NewRequestWithContext(ctxGuard(t), http.MethodGet, b.url, nil)
	get.Header.Set("Accept", "text/event-stream")
	get.Header.Set("Mcp-Session-Id", cb.session)
	get.Header.Set("Last-Event-ID", lastID)
	gresp, err := http.DefaultClient.Do(get)
	if err != nil || gresp.StatusCode != http.StatusOK {
		t.Fatalf("GET with Last-Event-ID on B: %v %v", gresp, err)
	}
	rest, _ := io.ReadAll(gresp.Body) // the stream ends once the answer is delivered
	gresp.Body.Close()
	if !strings.Contains(string(rest), `"id":"slow-2"`) || !strings.Contains(string(rest), "slow done resume") {
		t.Fatalf("resumed stream on B lacks the answer:\n%s", rest)
	}
	if strings.Contains(string(rest), `"progress":1`) {
		t.Fatalf("resumed stream on B replays what the client had seen:\n%s", rest)
	}

	// The standalone stream, read on B, carries A's notice (A restored the session to serve the POST).
	sget, _ := http.NewRequestWithContext(ctxGuard(t), http.MethodGet, b.url, nil)
	sget.Header.Set("Accept", "text/event-stream")
	sget.Header.Set("Mcp-Session-Id", cb.session)
	sresp, err := http.DefaultClient.Do(sget)
	if err != nil || sresp.StatusCode != http.StatusOK {
		t.Fatalf("standalone GET on B: %v %v", sresp, err)
	}
	defer sresp.Body.Close()
	got := make([]byte, 0, 4096)
	for !strings.Contains(string(got), "moved to another gateway replica") {
		n, err := sresp.Body.Read(chunk)
		got = append(got, chunk[:n]...)
		if err != nil {
			t.Fatalf("standalone stream on B ended without A's notice: %v\n%s", err, got)
		}
	}
}

// TestReplicaRedisRestart: while Redis is down a replica keeps serving the sessions it holds and reports not
// ready; when Redis is back it is ready again without a restart, and new sessions are shared again.
func TestReplicaRedisRestart(t *testing.T) {
	rp := startRedis(t)
	secret := []byte(strings.Repeat("k", 32))
	replica := func() *harness {
		client := redis.NewClient(&redis.Options{Addr: rp.addr, DialTimeout: 300 * time.Millisecond, DialerRetries: 1, MaxRetries: 1, ContextTimeoutEnabled: true})
		store := state.NewRedis(client, "restart:")
		t.Cleanup(func() { store.Shutdown(); client.Close() })
		return startGateway(t, routing.Options{CursorSecret: secret, Store: store, Bus: store},
			gateway.Options{Ready: store.Ping, Events: store}, stdioUpstream(t, "alpha", routing.Shared, markerSink(t)))
	}
	a, b := replica(), replica()
	ready := func(h *harness) int {
		resp, err := http.Get(h.ts.URL + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	ca := a.raw(t)
	init := ca.do(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`, nil)
	ca.session, ca.version = init.header.Get("Mcp-Session-Id"), "2025-11-25"

	rp.stop()
	if got := ca.do(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"alpha__echo","arguments":{"text":"still here"}}}`, nil).final(t); got.Error != nil {
		t.Fatalf("a held session's call while Redis is down: %+v", got.Error)
	}
	if code := ready(a); code != http.StatusServiceUnavailable {
		t.Fatalf("/readyz while Redis is down = %d, want 503", code)
	}
	// The standalone stream of the held session still carries what A produces (served from A's local stream).
	get, _ := http.NewRequestWithContext(ctxGuard(t), http.MethodGet, a.url, nil)
	get.Header.Set("Accept", "text/event-stream")
	get.Header.Set("Mcp-Session-Id", ca.session)
	sresp, err := http.DefaultClient.Do(get)
	if err != nil || sresp.StatusCode != http.StatusOK {
		t.Fatalf("GET on A while Redis is down: %v %v", sresp, err)
	}
	if err := a.r.DrainUpstream("alpha", true); err != nil { // announces tools/list_changed to the session
		t.Fatal(err)
	}
	var seen []byte
	chunk := make([]byte, 1024)
	for !strings.Contains(string(seen), "notifications/tools/list_changed") {
		n, err := sresp.Body.Read(chunk)
		seen = append(seen, chunk[:n]...)
		if err != nil {
			t.Fatalf("A's stream while Redis is down ended without the list change: %v\n%s", err, seen)
		}
	}
	sresp.Body.Close()
	_ = a.r.DrainUpstream("alpha", false)

	rp.start()
	waitFor(t, "readiness after Redis returns", func() bool { return ready(a) == http.StatusOK && ready(b) == http.StatusOK })
	cb := b.raw(t)
	init = cb.do(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`, nil)
	cb.session, cb.version = init.header.Get("Mcp-Session-Id"), "2025-11-25"
	ca2 := a.raw(t)
	ca2.session, ca2.version = cb.session, cb.version
	if got := ca2.do(`{"jsonrpc":"2.0","id":2,"method":"ping"}`, nil); got.status != http.StatusOK {
		t.Fatalf("a session made on B after Redis returned, used on A: HTTP %d %s", got.status, got.body)
	}
}

// TestReplicasResumeUpstreamSession: a per-client HTTP upstream session started on replica A is resumed by
// replica B from the id A recorded, not started anew: the upstream serves B's call in the same session.
func TestReplicasResumeUpstreamSession(t *testing.T) {
	addr := realRedis(t)
	secret := []byte(strings.Repeat("k", 32))
	up, srv := httpUpstream(t, "web", routing.PerClient, markerSink(t))
	replica := func(cfg routing.UpstreamConfig) *harness {
		client := redis.NewClient(&redis.Options{Addr: addr, DialTimeout: time.Second, MaxRetries: 1, ContextTimeoutEnabled: true})
		store := state.NewRedis(client, "resume:")
		t.Cleanup(func() { store.Shutdown(); client.Close() })
		return startGateway(t, routing.Options{CursorSecret: secret, Store: store, Bus: store}, gateway.Options{Events: store}, cfg)
	}
	a := replica(up)
	trB, err := upstream.NewTransport(upstream.Spec{Name: "web", URL: srv.ts.URL, Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	upB := up
	upB.Transport = trB
	b := replica(upB)

	ca := a.raw(t)
	init := ca.do(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`, nil)
	ca.session, ca.version = init.header.Get("Mcp-Session-Id"), "2025-11-25"
	if got := ca.do(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"web__echo","arguments":{"text":"on A"}}}`, nil).final(t); got.Error != nil {
		t.Fatalf("call on A: %+v", got.Error)
	}
	first := srv.lastSession()
	// The record of A's upstream session is written in the background: wait until the store has it.
	probeClient := redis.NewClient(&redis.Options{Addr: addr})
	probe := state.NewRedis(probeClient, "resume:")
	t.Cleanup(func() { probe.Shutdown(); probeClient.Close() })
	waitFor(t, "A's upstream session in the session record", func() bool {
		rec, err := probe.Get(context.Background(), ca.session)
		return err == nil && rec.UpstreamSessions["web"] != ""
	})
	cb := b.raw(t)
	cb.session, cb.version = ca.session, ca.version
	if got := cb.do(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"web__echo","arguments":{"text":"on B"}}}`, nil).final(t); got.Error != nil {
		t.Fatalf("call on B: %+v", got.Error)
	}
	if srv.lastSession() != first {
		t.Fatal("B started a new upstream session instead of resuming A's")
	}
}

// TestThreeReplicas: a session initialized on A, its standalone GET stream open on C, and a call posted to B:
// the call is served on B, and C's stream carries what B produced for the session (B's notice that it took the
// session over).
func TestThreeReplicas(t *testing.T) {
	addr := realRedis(t)
	secret := []byte(strings.Repeat("k", 32))
	markers := markerSink(t)
	replica := func() *harness {
		client := redis.NewClient(&redis.Options{Addr: addr, DialTimeout: time.Second, MaxRetries: 1, ContextTimeoutEnabled: true})
		store := state.NewRedis(client, "three:")
		t.Cleanup(func() { store.Shutdown(); client.Close() })
		return startGateway(t, routing.Options{CursorSecret: secret, Store: store, Bus: store},
			gateway.Options{Events: store, KeepAlive: time.Second}, stdioUpstream(t, "alpha", routing.PerClient, markers))
	}
	a, b, c := replica(), replica(), replica()
	ca := a.raw(t)
	init := ca.do(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`, nil)
	sid := init.header.Get("Mcp-Session-Id")

	get, _ := http.NewRequestWithContext(ctxGuard(t), http.MethodGet, c.url, nil)
	get.Header.Set("Accept", "text/event-stream")
	get.Header.Set("Mcp-Session-Id", sid)
	sresp, err := http.DefaultClient.Do(get)
	if err != nil || sresp.StatusCode != http.StatusOK {
		t.Fatalf("GET on C: %v %v", sresp, err)
	}
	defer sresp.Body.Close()

	cb := b.raw(t)
	cb.session, cb.version = sid, "2025-11-25"
	if got := cb.do(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"alpha__echo","arguments":{"text":"via B"}}}`, nil).final(t); got.Error != nil || !strings.Contains(string(got.Result), "via B") {
		t.Fatalf("call on B: %+v %s", got.Error, got.Result)
	}
	var seen []byte
	chunk := make([]byte, 1024)
	for strings.Count(string(seen), "moved to another gateway replica") < 2 { // C's own notice, then B's
		n, err := sresp.Body.Read(chunk)
		seen = append(seen, chunk[:n]...)
		if err != nil {
			t.Fatalf("C's stream ended before B's notice: %v\n%s", err, seen)
		}
	}
}

// TestReplicasShareLateUpstreamSession: replica B restores a client's session before replica A has opened the
// client's per-client HTTP upstream session; when B then needs that upstream, it resumes the session A recorded
// instead of opening a second one, so the client sees one upstream state whichever replica serves it.
func TestReplicasShareLateUpstreamSession(t *testing.T) {
	addr := realRedis(t)
	secret := []byte(strings.Repeat("k", 32))
	cfgA, up := httpUpstream(t, "alpha", routing.PerClient, markerSink(t))
	trB, err := upstream.NewTransport(upstream.Spec{Name: "alpha", URL: up.ts.URL, Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	cfgB := cfgA
	cfgB.Transport = trB
	replica := func(cfg routing.UpstreamConfig) *harness {
		client := redis.NewClient(&redis.Options{Addr: addr})
		store := state.NewRedis(client, "late:")
		t.Cleanup(func() { store.Shutdown(); client.Close() })
		return startGateway(t, routing.Options{CursorSecret: secret, Store: store, Bus: store}, gateway.Options{}, cfg)
	}
	a, b := replica(cfgA), replica(cfgB)
	sessions := func() int {
		up.mu.Lock()
		defer up.mu.Unlock()
		distinct := map[*mcp.ServerSession]bool{}
		for _, s := range up.sessions {
			distinct[s] = true
		}
		return len(distinct)
	}
	ca := a.raw(t)
	ca.initialize("2025-11-25")
	cb := b.raw(t)
	cb.session, cb.version = ca.session, ca.version
	if got := cb.do(`{"jsonrpc":"2.0","id":2,"method":"ping"}`, nil); got.status != http.StatusOK { // B restores the session now
		t.Fatalf("ping on B: HTTP %d %s", got.status, got.body)
	}
	before := sessions() // the two replicas' catalog sessions
	call := `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"alpha__echo","arguments":{"text":"x"}}}`
	if got := ca.do(call, nil); got.status != http.StatusOK || !strings.Contains(string(got.body), `"x"`) {
		t.Fatalf("call on A: HTTP %d %s", got.status, got.body)
	}
	// A records its upstream session in the background; once it is there, B must use it.
	reader := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { reader.Close() })
	records := state.NewRedis(reader, "late:")
	t.Cleanup(records.Shutdown)
	waitFor(t, "A's upstream session in the record", func() bool {
		rec, err := records.Get(ctxGuard(t), ca.session)
		return err == nil && rec.UpstreamSessions["alpha"] != ""
	})
	if got := cb.do(strings.Replace(call, `"id":3`, `"id":4`, 1), nil); got.status != http.StatusOK || !strings.Contains(string(got.body), `"x"`) {
		t.Fatalf("call on B: HTTP %d %s", got.status, got.body)
	}
	if n := sessions() - before; n != 1 {
		t.Errorf("the client has %d upstream sessions across the replicas, want 1", n)
	}
}

// TestResumeOfAGoneReplicasStream: a client resumes, on replica B, a POST stream whose producer no longer has a
// registration (it was killed): B answers the stream's request with an error the client can act on at once,
// instead of keep-alives until the log expires. (A here never registers, which is what B sees of a dead one.)
func TestResumeOfAGoneReplicasStream(t *testing.T) {
	addr := realRedis(t)
	secret := []byte(strings.Repeat("k", 32))
	markers := markerSink(t)
	replica := func(url string, register bool) *harness {
		client := redis.NewClient(&redis.Options{Addr: addr, DialTimeout: time.Second, MaxRetries: 1, ContextTimeoutEnabled: true})
		store := state.NewRedis(client, "gone:")
		t.Cleanup(func() { store.Shutdown(); client.Close() })
		opts := routing.Options{CursorSecret: secret, Store: store, Bus: store, Replica: url}
		if register {
			opts.Replicas = store
		}
		return startGateway(t, opts, gateway.Options{Events: store}, stdioUpstream(t, "alpha", routing.PerClient, markers))
	}
	a, b := replica("http://replica-a.invalid/mcp", false), replica("http://replica-b.invalid/mcp", true)
	ca := a.raw(t)
	ca.initialize("2025-11-25")
	lastID := dropStream(t, a.url, ca.session, `{"jsonrpc":"2.0","id":"slow-9","method":"tools/call","params":{"name":"alpha__slow","arguments":{"tag":"gone","ms":3000},"_meta":{"progressToken":"p"}}}`, "id: ")
	rest := resumeStream(t, b.url, ca.session, lastID) // ends at once, with the error
	if !strings.Contains(rest, `"id":"slow-9","error"`) || !strings.Contains(rest, "send the request again") {
		t.Fatalf("resumed stream of a gone replica: %s, want an error answering slow-9", rest)
	}
}

// TestStreamsStayResumableWhileTheLogIsDown: with Redis down, a POST's SSE stream still gives its events ids
// (this replica keeps them), and a client whose connection drops resumes it here with Last-Event-ID.
func TestStreamsStayResumableWhileTheLogIsDown(t *testing.T) {
	rp := startRedis(t)
	client := redis.NewClient(&redis.Options{Addr: rp.addr, DialTimeout: 300 * time.Millisecond, DialerRetries: 1, MaxRetries: 1, ContextTimeoutEnabled: true})
	store := state.NewRedis(client, "down:")
	t.Cleanup(func() { store.Shutdown(); client.Close() })
	h := startGateway(t, routing.Options{CursorSecret: []byte(strings.Repeat("k", 32)), Store: store, Bus: store},
		gateway.Options{Events: store}, stdioUpstream(t, "alpha", routing.Shared, markerSink(t)))
	c := h.raw(t)
	c.initialize("2025-11-25")
	rp.stop()
	lastID := dropStream(t, h.url, c.session, `{"jsonrpc":"2.0","id":"slow-5","method":"tools/call","params":{"name":"alpha__slow","arguments":{"tag":"down","ms":1500},"_meta":{"progressToken":"p"}}}`, `"progress"`)
	if lastID == "" {
		t.Fatal("the stream's events carry no id while Redis is down")
	}
	rest := resumeStream(t, h.url, c.session, lastID)
	if !strings.Contains(rest, `"id":"slow-5"`) || !strings.Contains(rest, "slow done down") {
		t.Fatalf("the resumed stream lacks the answer:\n%s", rest)
	}
}

// dropStream POSTs a request that answers with an SSE stream, reads it until a line containing until, and drops
// the connection (the call goes on); it returns the last event id it saw ("" for none).
func dropStream(t *testing.T, url, session, body, until string) string {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctxGuard(t), http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream, application/json")
	req.Header.Set("Mcp-Session-Id", session)
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("POST %s: %v %v", url, resp, err)
	}
	defer resp.Body.Close() // the connection drops mid-call
	lastID := ""
	for sc := bufio.NewScanner(resp.Body); sc.Scan(); {
		if id, ok := strings.CutPrefix(sc.Text(), "id: "); ok {
			lastID = id
		}
		if strings.Contains(sc.Text(), until) {
			break
		}
	}
	return lastID
}

// resumeStream GETs a stream from after lastID and reads it to its end.
func resumeStream(t *testing.T, url, session, lastID string) string {
	t.Helper()
	get, _ := http.NewRequestWithContext(ctxGuard(t), http.MethodGet, url, nil)
	get.Header.Set("Accept", "text/event-stream")
	get.Header.Set("Mcp-Session-Id", session)
	get.Header.Set("Last-Event-ID", lastID)
	resp, err := http.DefaultClient.Do(get)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s with Last-Event-ID: %v %v", url, resp, err)
	}
	defer resp.Body.Close()
	rest, _ := io.ReadAll(resp.Body)
	return string(rest)
}
