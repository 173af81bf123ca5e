package gateway_test

// Operations (issue 5) through the real front end: traces (server span per client request, client span per
// upstream leg, W3C trace context continued from the client and passed to upstreams in headers and
// params._meta), the Prometheus exposition at /metrics, and graceful shutdown with Server.Serve on a real
// listener. Clients are the official Go SDK's or raw net/http; upstreams are the Go SDK's. Every wait is for an
// event, bounded by guard; nothing asserts on elapsed time.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/switchboard-mcp/switchboard/gateway"
	"github.com/switchboard-mcp/switchboard/gateway/telemetry"
	"github.com/switchboard-mcp/switchboard/routing"
	"github.com/switchboard-mcp/switchboard/upstream"
	"github.com/switchboard-mcp/switchboard/upstream/protocol"
)

// ---------------------------------------------------------------------------------------------------------------
// Fixtures.

// newTelemetry builds the providers the binary builds, with spans kept in memory.
func newTelemetry(t *testing.T) (*telemetry.Providers, *tracetest.InMemoryExporter) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tel, err := telemetry.New(context.Background(), telemetry.Options{ServiceName: "switchboard-test", ServiceVersion: "test", SpanExporter: exp})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tel.Shutdown(context.Background()) })
	return tel, exp
}

func instrumented(tel *telemetry.Providers) (routing.Options, gateway.Options) {
	return routing.Options{Tracer: tel.Tracer, Meter: tel.Meter, Propagator: tel.Propagator},
		gateway.Options{Tracer: tel.Tracer, Meter: tel.Meter, Propagator: tel.Propagator, Metrics: tel.Metrics}
}

// gates let a test hold a tool call inside the (in-process) upstream until it says so.
var gates = struct {
	sync.Mutex
	m map[string]*gate
}{m: map[string]*gate{}}

type gate struct {
	entered chan struct{}
	release chan struct{}
}

// gateSeq keeps tags unique across runs of a test (-count), since gates are never reused.
var gateSeq atomic.Int64

// newGate returns a fresh gate and its tag.
func newGate(prefix string) (*gate, string) {
	tag := fmt.Sprintf("%s-%d", prefix, gateSeq.Add(1))
	return gateFor(tag), tag
}

func gateFor(tag string) *gate {
	gates.Lock()
	defer gates.Unlock()
	g := gates.m[tag]
	if g == nil {
		g = &gate{entered: make(chan struct{}), release: make(chan struct{})}
		gates.m[tag] = g
	}
	return g
}

// waitEntered waits until the call holding the gate has reached the upstream.
func (g *gate) waitEntered(t *testing.T) {
	t.Helper()
	select {
	case <-g.entered:
	case <-time.After(guard):
		t.Fatal("the held call never reached the upstream")
	}
}

// seenRequest is one HTTP request an upstream received.
type seenRequest struct {
	traceparent string
	method      string
	tool        string
	metaTP      string // params._meta.traceparent
}

// opsServer is an in-process streamable HTTP upstream (the SDK test server plus a held tool and a failing one)
// that records the requests it receives.
type opsServer struct {
	*httpServer
	mu   sync.Mutex
	seen []seenRequest
}

func (o *opsServer) requests() []seenRequest {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]seenRequest(nil), o.seen...)
}

// opsUpstream configures such an upstream. Like the binary (cmd/switchboard's injectTraceContext), the transport
// sends the upstream leg's trace context in headers.
func opsUpstream(t *testing.T, name string, mode routing.SessionMode, timeout time.Duration) (routing.UpstreamConfig, *opsServer) {
	t.Helper()
	srv := newUpstreamServer(name, "", false)
	mcp.AddTool(srv, &mcp.Tool{Name: "hold", Description: "waits for the test to release it"}, func(ctx context.Context, req *mcp.CallToolRequest, in tagIn) (*mcp.CallToolResult, any, error) {
		g := gateFor(in.Tag)
		select {
		case <-g.entered:
		default:
			close(g.entered)
		}
		select {
		case <-g.release:
			return text("released " + in.Tag), nil, nil
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
	})
	srv.AddTool(&mcp.Tool{Name: "fail", Description: "answers with a protocol error", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return nil, errors.New("fail always fails")
		})
	o := &opsServer{httpServer: &httpServer{srv: srv}}
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if ss, ok := req.GetSession().(*mcp.ServerSession); ok {
				o.httpServer.mu.Lock()
				if len(o.sessions) == 0 || o.sessions[len(o.sessions)-1] != ss {
					o.sessions = append(o.sessions, ss)
				}
				o.httpServer.mu.Unlock()
			}
			return next(ctx, method, req)
		}
	})
	inner := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	o.ts = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			var m struct {
				Method string `json:"method"`
				Params struct {
					Name string `json:"name"`
					Meta struct {
						Traceparent string `json:"traceparent"`
					} `json:"_meta"`
				} `json:"params"`
			}
			if json.Unmarshal(body, &m) == nil && m.Method != "" {
				o.mu.Lock()
				o.seen = append(o.seen, seenRequest{traceparent: r.Header.Get("traceparent"), method: m.Method, tool: m.Params.Name, metaTP: m.Params.Meta.Traceparent})
				o.mu.Unlock()
			}
		}
		inner.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		o.ts.CloseClientConnections()
		o.ts.Close()
	})
	tr, err := upstream.NewTransport(upstream.Spec{Name: name, URL: o.ts.URL, Logger: testLogger(),
		RequestHeaders: func(ctx context.Context, h http.Header) error {
			propagation.TraceContext{}.Inject(ctx, propagation.HeaderCarrier(h))
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	return routing.UpstreamConfig{Name: name, Prefix: name + "__", Mode: mode, Transport: tr, Kind: "http", Timeout: timeout,
		Backoff: upstream.Backoff{Min: 20 * time.Millisecond, Max: 200 * time.Millisecond}}, o
}

// teeStdioUpstream is stdioUpstream with everything the gateway writes to the child copied to a file, so the test
// can read what a stdio upstream receives.
func teeStdioUpstream(t *testing.T, name string) (routing.UpstreamConfig, string) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "stdin.jsonl")
	tr, err := upstream.NewTransport(upstream.Spec{
		Name:          name,
		Command:       "/bin/sh",
		Args:          []string{"-c", `tee -a "$0" | exec "$1" '-test.run=^$'`, file, os.Args[0]},
		Env:           map[string]string{envServer: name},
		ShutdownGrace: 2 * time.Second,
		Logger:        testLogger(),
	})
	if err != nil {
		t.Fatal(err)
	}
	return routing.UpstreamConfig{Name: name, Prefix: name + "__", Mode: routing.Shared, Transport: tr, Kind: "stdio",
		Backoff: upstream.Backoff{Min: 20 * time.Millisecond, Max: 200 * time.Millisecond}}, file
}

func attr(s tracetest.SpanStub, key string) (string, bool) {
	for _, kv := range s.Attributes {
		if string(kv.Key) == key {
			return kv.Value.String(), true
		}
	}
	return "", false
}

// waitSpan waits for an ended span with the name and kind whose trace satisfies match (nil: any).
func waitSpan(t *testing.T, exp *tracetest.InMemoryExporter, name string, kind trace.SpanKind, match func(tracetest.SpanStub) bool) tracetest.SpanStub {
	t.Helper()
	var found tracetest.SpanStub
	waitFor(t, fmt.Sprintf("a %s span %q", kind, name), func() bool {
		for _, s := range exp.GetSpans() {
			if s.Name == name && s.SpanKind == kind && (match == nil || match(s)) {
				found = s
				return true
			}
		}
		return false
	})
	return found
}

func wantAttrs(t *testing.T, s tracetest.SpanStub, want map[string]string) {
	t.Helper()
	for k, v := range want {
		if got, ok := attr(s, k); !ok || got != v {
			t.Errorf("span %q (%s): attribute %s = %q (present %v), want %q; attributes %v", s.Name, s.SpanKind, k, got, ok, v, s.Attributes)
		}
	}
}

func parseTraceparent(t *testing.T, tp string) (trace.TraceID, trace.SpanID) {
	t.Helper()
	sc := trace.SpanContextFromContext(propagation.TraceContext{}.Extract(context.Background(), propagation.MapCarrier{"traceparent": tp}))
	if !sc.IsValid() {
		t.Fatalf("invalid traceparent %q", tp)
	}
	return sc.TraceID(), sc.SpanID()
}

// ---------------------------------------------------------------------------------------------------------------
// Tracing.

// TestTracingThroughGateway: a tools/call through the gateway makes a server span for the client request and a
// client span for the upstream leg, its child, with the method, tool, upstream and outcome; an incoming
// traceparent is continued; the HTTP upstream gets the leg's trace context in the traceparent header and in
// params._meta.traceparent, and a stdio upstream in params._meta.traceparent.
func TestTracingThroughGateway(t *testing.T) {
	tel, exp := newTelemetry(t)
	ropts, gopts := instrumented(tel)
	webCfg, web := opsUpstream(t, "web", routing.Shared, 0)
	localCfg, stdin := teeStdioUpstream(t, "local")
	h := startGateway(t, ropts, gopts, webCfg, localCfg)

	cs := h.connect(t, "tracer", nil)
	if got := call(t, cs, "web__echo", map[string]any{"text": "traced"}); got != "traced" {
		t.Fatalf("echo answered %q", got)
	}
	server := waitSpan(t, exp, "tools/call web__echo", trace.SpanKindServer, nil)
	leg := waitSpan(t, exp, "tools/call web__echo", trace.SpanKindClient, func(s tracetest.SpanStub) bool {
		return s.SpanContext.TraceID() == server.SpanContext.TraceID()
	})
	wantAttrs(t, server, map[string]string{"mcp.method.name": "tools/call", "gen_ai.tool.name": "web__echo"})
	wantAttrs(t, leg, map[string]string{"mcp.method.name": "tools/call", "gen_ai.tool.name": "web__echo",
		"switchboard.upstream": "web", "switchboard.outcome": "ok"})
	if leg.Parent.SpanID() != server.SpanContext.SpanID() {
		t.Errorf("the upstream leg's parent is %s, want the request span %s", leg.Parent.SpanID(), server.SpanContext.SpanID())
	}
	if _, ok := attr(server, "mcp.session.id"); !ok {
		t.Errorf("the request span has no mcp.session.id: %v", server.Attributes)
	}

	// What the HTTP upstream received: the leg's context, in the header and in _meta.
	var got *seenRequest
	for _, r := range web.requests() {
		if r.method == "tools/call" && r.tool == "echo" {
			got = &r
		}
	}
	if got == nil {
		t.Fatal("the HTTP upstream never received the tools/call")
	}
	for what, tp := range map[string]string{"traceparent header": got.traceparent, "params._meta.traceparent": got.metaTP} {
		if tp == "" {
			t.Errorf("the HTTP upstream's tools/call has no %s", what)
			continue
		}
		tid, sid := parseTraceparent(t, tp)
		if tid != leg.SpanContext.TraceID() || sid != leg.SpanContext.SpanID() {
			t.Errorf("the HTTP upstream's %s %s is not the leg's span %s/%s", what, tp, leg.SpanContext.TraceID(), leg.SpanContext.SpanID())
		}
	}

	// An incoming traceparent header is continued.
	const clientTrace, clientSpan = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	raw := h.raw(t)
	raw.initialize("2025-11-25")
	r := raw.do(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"web__echo","arguments":{"text":"continued"}}}`,
		map[string]string{"traceparent": "00-" + clientTrace + "-" + clientSpan + "-01"})
	if f := r.final(t); f.Error != nil {
		t.Fatalf("call with traceparent: %s", r.body)
	}
	cont := waitSpan(t, exp, "tools/call web__echo", trace.SpanKindServer, func(s tracetest.SpanStub) bool {
		return s.SpanContext.TraceID().String() == clientTrace
	})
	if cont.Parent.SpanID().String() != clientSpan || !cont.Parent.IsRemote() {
		t.Errorf("the request span's parent is %s (remote %v), want the client's span %s", cont.Parent.SpanID(), cont.Parent.IsRemote(), clientSpan)
	}
	contLeg := waitSpan(t, exp, "tools/call web__echo", trace.SpanKindClient, func(s tracetest.SpanStub) bool {
		return s.SpanContext.TraceID().String() == clientTrace
	})
	if contLeg.Parent.SpanID() != cont.SpanContext.SpanID() {
		t.Errorf("the continued leg's parent is %s, want %s", contLeg.Parent.SpanID(), cont.SpanContext.SpanID())
	}
	found := false
	for _, rq := range web.requests() {
		if rq.method == "tools/call" && strings.Contains(rq.traceparent, clientTrace) && strings.Contains(rq.metaTP, clientTrace) {
			found = true
		}
	}
	if !found {
		t.Errorf("the HTTP upstream never received the client's trace %s in both header and _meta: %+v", clientTrace, web.requests())
	}

	// A JSON-RPC error from the upstream: outcome "error", span status error.
	if _, err := cs.CallTool(ctxGuard(t), &mcp.CallToolParams{Name: "web__fail", Arguments: map[string]any{}}); err == nil {
		t.Error("web__fail succeeded")
	}
	failLeg := waitSpan(t, exp, "tools/call web__fail", trace.SpanKindClient, nil)
	wantAttrs(t, failLeg, map[string]string{"switchboard.outcome": "error", "switchboard.upstream": "web"})
	if failLeg.Status.Code.String() != "Error" {
		t.Errorf("the failed leg's status is %v, want Error", failLeg.Status)
	}

	// A stdio upstream gets the leg's context in params._meta.traceparent.
	if got := call(t, cs, "local__echo", map[string]any{"text": "stdio"}); got != "stdio" {
		t.Fatalf("local echo answered %q", got)
	}
	stdioLeg := waitSpan(t, exp, "tools/call local__echo", trace.SpanKindClient, nil)
	wantAttrs(t, stdioLeg, map[string]string{"switchboard.upstream": "local", "switchboard.outcome": "ok"})
	b, err := os.ReadFile(stdin)
	if err != nil {
		t.Fatal(err)
	}
	var metaTP string
	for line := range strings.SplitSeq(string(b), "\n") {
		var m struct {
			Method string `json:"method"`
			Params struct {
				Name string `json:"name"`
				Meta struct {
					Traceparent string `json:"traceparent"`
				} `json:"_meta"`
			} `json:"params"`
		}
		if json.Unmarshal([]byte(line), &m) == nil && m.Method == "tools/call" && m.Params.Name == "echo" {
			metaTP = m.Params.Meta.Traceparent
		}
	}
	if metaTP == "" {
		t.Fatalf("the stdio upstream's tools/call carried no params._meta.traceparent:\n%s", b)
	}
	if tid, sid := parseTraceparent(t, metaTP); tid != stdioLeg.SpanContext.TraceID() || sid != stdioLeg.SpanContext.SpanID() {
		t.Errorf("the stdio upstream's _meta.traceparent %s is not the leg's span", metaTP)
	}
}

// ---------------------------------------------------------------------------------------------------------------
// Metrics.

// sample is one line of the Prometheus text exposition.
type sample struct {
	name   string
	labels map[string]string
	value  float64
}

var labelRE = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"`)

// scrape reads /metrics and returns its samples and the names declared in TYPE lines, with their types.
func scrape(t *testing.T, base string) ([]sample, map[string]string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctxGuard(t), http.MethodGet, base+"/metrics", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: HTTP %d", resp.StatusCode)
	}
	var samples []sample
	types := map[string]string{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, "# TYPE "); ok {
			if f := strings.Fields(rest); len(f) == 2 {
				types[f[0]] = f[1]
			}
			continue
		}
		if line == "" || line[0] == '#' {
			continue
		}
		s := sample{labels: map[string]string{}}
		var valuePart string
		if i := strings.IndexByte(line, '{'); i >= 0 {
			j := strings.LastIndexByte(line, '}')
			s.name = line[:i]
			for _, m := range labelRE.FindAllStringSubmatch(line[i+1:j], -1) {
				s.labels[m[1]] = m[2]
			}
			valuePart = strings.TrimSpace(line[j+1:])
		} else {
			f := strings.Fields(line)
			s.name, valuePart = f[0], f[1]
		}
		s.value, _ = strconv.ParseFloat(strings.Fields(valuePart)[0], 64)
		samples = append(samples, s)
	}
	return samples, types
}

// find returns the value of the sample with the name whose labels include want.
func find(samples []sample, name string, want map[string]string) (float64, bool) {
	for _, s := range samples {
		if s.name != name {
			continue
		}
		match := true
		for k, v := range want {
			if s.labels[k] != v {
				match = false
				break
			}
		}
		if match {
			return s.value, true
		}
	}
	return 0, false
}

// waitMetric scrapes until the sample exists and satisfies ok. Metrics have no change signal: it polls (see
// poll), bounded by guard.
func waitMetric(t *testing.T, base, name string, labels map[string]string, ok func(float64) bool) {
	t.Helper()
	var last []sample
	if poll(func() bool {
		last, _ = scrape(t, base)
		v, found := find(last, name, labels)
		return found && ok(v)
	}) {
		return
	}
	var lines []string
	for _, s := range last {
		if strings.HasPrefix(s.name, "switchboard_") {
			lines = append(lines, fmt.Sprintf("%s%v %g", s.name, s.labels, s.value))
		}
	}
	t.Fatalf("gave up waiting for %s%v after %s; switchboard samples:\n%s", name, labels, guard, strings.Join(lines, "\n"))
}

func atLeast(n float64) func(float64) bool { return func(v float64) bool { return v >= n } }

// TestMetricsExposition: after real calls, /metrics carries every documented metric with its labels: requests by
// method, transport and status; mcp.server.operation.duration; mcp.client.operation.duration of the upstream legs,
// with error.type for an error, a timeout and a cancellation and none for a success; in-flight requests; sessions;
// upstream up; restarts; dropped notifications; and the Go and process collectors.
func TestMetricsExposition(t *testing.T) {
	tel, _ := newTelemetry(t)
	ropts, gopts := instrumented(tel)
	webCfg, web := opsUpstream(t, "web", routing.Shared, 0)
	tightCfg, _ := opsUpstream(t, "tight", routing.Shared, 50*time.Millisecond)
	h := startGateway(t, ropts, gopts, webCfg, tightCfg)
	base := h.ts.URL

	cs := h.connect(t, "metrics", nil)
	if got := call(t, cs, "web__echo", map[string]any{"text": "hi"}); got != "hi" {
		t.Fatalf("echo answered %q", got)
	}
	if _, err := cs.CallTool(ctxGuard(t), &mcp.CallToolParams{Name: "web__fail", Arguments: map[string]any{}}); err == nil {
		t.Error("web__fail succeeded")
	}
	// The tight upstream's 50ms timeout fires on a call that is never released.
	_, err := cs.CallTool(ctxGuard(t), &mcp.CallToolParams{Name: "tight__hold", Arguments: map[string]any{"tag": fmt.Sprintf("metrics-timeout-%d", gateSeq.Add(1))}})
	if err == nil || wireError(t, err).Code != protocol.CodeRequestTimeout {
		t.Errorf("tight__hold answered %v, want error %d", err, protocol.CodeRequestTimeout)
	}

	// A call in flight shows in switchboard_upstream_inflight; the client cancels it.
	raw := h.raw(t)
	raw.initialize("2025-11-25")
	g, tag := newGate("metrics-cancel")
	post := postAsync(raw, `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"web__hold","arguments":{"tag":"`+tag+`"}}}`)
	g.waitEntered(t)
	samples, _ := scrape(t, base)
	if v, ok := find(samples, "switchboard_upstream_inflight", map[string]string{"upstream": "web"}); !ok || v != 1 {
		t.Errorf("switchboard_upstream_inflight{upstream=web} = %v (present %v) with one call in flight, want 1", v, ok)
	}
	if r := raw.do(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5,"reason":"test"}}`, nil); r.status != http.StatusAccepted {
		t.Fatalf("cancel: HTTP %d", r.status)
	}
	if r := <-post; r.err != nil || bytes.Contains(r.body, []byte(`"result"`)) {
		t.Errorf("the cancelled call's POST ended with %q, %v; want no answer", r.body, r.err)
	}
	waitMetric(t, base, "mcp_client_operation_duration_seconds_count", map[string]string{"switchboard_upstream": "web", "mcp_method_name": "tools/call", "error_type": "cancelled"}, atLeast(1))
	waitMetric(t, base, "switchboard_upstream_inflight", map[string]string{"upstream": "web"}, func(v float64) bool { return v == 0 })

	// A client that does not read: a session with no GET stream, while the shared upstream broadcasts more logs
	// than its standalone queue holds.
	idle := h.raw(t)
	idle.initialize("2025-11-25")
	ss := web.lastSession()
	if ss == nil {
		t.Fatal("no upstream session")
	}
	if err := sendLogs(ctxGuard(t), ss, 1500, 16); err != nil {
		t.Fatalf("sending logs: %v", err)
	}
	waitMetric(t, base, "switchboard_stream_dropped_total", nil, atLeast(1))

	if err := h.r.RestartUpstream("web"); err != nil {
		t.Fatal(err)
	}
	waitMetric(t, base, "switchboard_upstream_restarts_total", map[string]string{"upstream": "web"}, atLeast(1))
	waitMetric(t, base, "switchboard_upstream_up", map[string]string{"upstream": "web"}, func(v float64) bool { return v == 1 })

	samples, types := scrape(t, base)
	for _, c := range []struct {
		name   string
		labels map[string]string
	}{
		{"switchboard_requests_total", map[string]string{"method": "tools/call", "transport": "streamable-http", "status": "200"}},
		{"switchboard_requests_total", map[string]string{"method": "initialize", "transport": "streamable-http", "status": "200"}},
		{"switchboard_requests_total", map[string]string{"method": "notification", "transport": "streamable-http", "status": "202"}},
		{"mcp_server_operation_duration_seconds_bucket", map[string]string{"mcp_method_name": "tools/call", "gen_ai_tool_name": "web__echo", "le": "+Inf"}},
		{"mcp_server_operation_duration_seconds_count", map[string]string{"mcp_method_name": "tools/call", "gen_ai_operation_name": "execute_tool", "network_transport": "tcp"}},
		{"mcp_server_operation_duration_seconds_sum", map[string]string{"mcp_method_name": "initialize", "mcp_protocol_version": "2025-11-25"}},
		{"mcp_client_operation_duration_seconds_count", map[string]string{"switchboard_upstream": "web", "gen_ai_tool_name": "web__echo", "error_type": ""}},
		{"mcp_client_operation_duration_seconds_count", map[string]string{"switchboard_upstream": "web", "gen_ai_tool_name": "web__fail", "rpc_response_status_code": "0", "error_type": "0"}},
		{"mcp_client_operation_duration_seconds_count", map[string]string{"switchboard_upstream": "tight", "mcp_method_name": "tools/call", "error_type": "timeout"}},
		{"mcp_client_operation_duration_seconds_count", map[string]string{"switchboard_upstream": "web", "mcp_method_name": "tools/call", "error_type": "cancelled"}},
		{"mcp_client_operation_duration_seconds_bucket", map[string]string{"switchboard_upstream": "web", "network_transport": "tcp", "le": "300"}},
		{"switchboard_upstream_inflight", map[string]string{"upstream": "web"}},
		{"switchboard_sessions", nil},
		{"switchboard_upstream_up", map[string]string{"upstream": "tight"}},
		{"switchboard_upstream_restarts_total", map[string]string{"upstream": "tight"}},
		{"switchboard_upstream_instances", map[string]string{"upstream": "web"}},
		{"switchboard_stream_dropped_total", nil},
		{"go_goroutines", nil},
		{"process_cpu_seconds_total", nil},
		{"process_resident_memory_bytes", nil},
	} {
		if _, ok := find(samples, c.name, c.labels); !ok {
			t.Errorf("/metrics has no %s%v", c.name, c.labels)
		}
	}
	if v, _ := find(samples, "switchboard_sessions", nil); v < 3 {
		t.Errorf("switchboard_sessions = %v, want at least the 3 sessions open", v)
	}
	if v, _ := find(samples, "switchboard_upstream_restarts_total", map[string]string{"upstream": "tight"}); v != 0 {
		t.Errorf("switchboard_upstream_restarts_total{upstream=tight} = %v, want 0", v)
	}
	for name, typ := range map[string]string{
		"switchboard_requests_total":            "counter",
		"mcp_server_operation_duration_seconds": "histogram",
		"mcp_client_operation_duration_seconds": "histogram",
		"switchboard_upstream_inflight":         "gauge",
		"switchboard_sessions":                  "gauge",
		"switchboard_upstream_up":               "gauge",
		"switchboard_upstream_restarts_total":   "counter",
		"switchboard_upstream_instances":        "gauge",
		"switchboard_stream_dropped_total":      "counter",
	} {
		if types[name] != typ {
			t.Errorf("# TYPE %s is %q, want %q", name, types[name], typ)
		}
	}
	// Label values clients could mint never become series: an unknown method is "other".
	for _, s := range samples {
		if s.name == "switchboard_requests_total" && strings.Contains(s.labels["method"], "/") && !strings.Contains("tools/call tools/list initialize", s.labels["method"]) {
			t.Logf("method label %q", s.labels["method"])
		}
	}
}

// ---------------------------------------------------------------------------------------------------------------
// Graceful shutdown.

// serving runs a router and Server.Serve on a real listener until the test cancels it.
type serving struct {
	base   string
	stop   context.CancelFunc
	served chan error
}

func startServing(t *testing.T, grace time.Duration, ups ...routing.UpstreamConfig) *serving {
	t.Helper()
	r, err := routing.New(routing.Options{Logger: testLogger()}, ups)
	if err != nil {
		t.Fatal(err)
	}
	rctx, stopRouter := context.WithCancel(context.Background())
	routerDone := make(chan struct{})
	go func() { defer close(routerDone); r.Run(rctx) }()
	t.Cleanup(func() { stopRouter(); <-routerDone })
	wctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	if err := r.WaitReady(wctx); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := gateway.New(r, gateway.Options{Logger: testLogger()})
	ctx, stop := context.WithCancel(context.Background())
	s := &serving{base: "http://" + ln.Addr().String(), stop: stop, served: make(chan error, 1)}
	go func() { s.served <- srv.Serve(ctx, ln, grace) }()
	t.Cleanup(stop)
	return s
}

func (s *serving) waitServed(t *testing.T) error {
	t.Helper()
	select {
	case err := <-s.served:
		return err
	case <-time.After(guard):
		t.Fatal("Serve did not return after shutdown began")
		return nil
	}
}

// postAsync sends a POST on its own connection and delivers the outcome.
type postResult struct {
	body []byte
	err  error
}

func postAsync(c *rawClient, body string) <-chan postResult {
	res := make(chan postResult, 1)
	req, _ := http.NewRequest(http.MethodPost, c.url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", c.session)
	req.Header.Set("Mcp-Protocol-Version", c.version)
	hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: guard}
	go func() {
		resp, err := hc.Do(req)
		if err != nil {
			res <- postResult{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		res <- postResult{body: b, err: err}
	}()
	return res
}

// TestGracefulShutdown: when shutdown begins, the open GET stream ends at once with a retry hint (while a call is
// still in flight), new connections are refused, and the call in flight completes and its client gets the
// answer; then Serve returns.
func TestGracefulShutdown(t *testing.T) {
	up, _ := opsUpstream(t, "web", routing.Shared, 0)
	s := startServing(t, guard, up)
	c := &rawClient{t: t, url: s.base + "/mcp", hc: &http.Client{}}
	c.initialize("2025-11-25")

	// The open GET stream, read raw so the retry field is seen.
	req, _ := http.NewRequestWithContext(ctxGuard(t), http.MethodGet, c.url, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", c.session)
	req.Header.Set("Mcp-Protocol-Version", c.version)
	resp, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}).Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET: %v %v", resp, err)
	}
	getDone := make(chan []byte, 1)
	go func() { b, _ := io.ReadAll(resp.Body); resp.Body.Close(); getDone <- b }()

	g, tag := newGate("shutdown-finishes")
	answer := postAsync(c, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"web__hold","arguments":{"tag":"`+tag+`"}}}`)
	g.waitEntered(t)

	s.stop() // shutdown begins
	var streamed []byte
	select {
	case streamed = <-getDone:
	case <-time.After(guard):
		t.Fatal("the GET stream did not end when shutdown began")
	}
	if !bytes.HasSuffix(streamed, []byte("retry: 1000\n\n")) {
		t.Errorf("the GET stream ended with %q, want a retry hint last", streamed)
	}
	select {
	case r := <-answer:
		t.Fatalf("the call in flight ended before it was released: %s %v", r.body, r.err)
	default:
	}
	if conn, err := net.Dial("tcp", strings.TrimPrefix(s.base, "http://")); err == nil {
		conn.Close()
		t.Error("a new connection was accepted after shutdown began")
	}

	close(g.release)
	r := <-answer
	if r.err != nil || !bytes.Contains(r.body, []byte("released "+tag)) {
		t.Fatalf("the call in flight at shutdown got %q, %v; want its answer", r.body, r.err)
	}
	if err := s.waitServed(t); err != nil {
		t.Errorf("Serve returned %v, want nil", err)
	}
}

// TestShutdownGraceExpires: a call that cannot finish within the grace period has its connection closed (the
// client sees the connection end, not a hang) and Serve returns.
func TestShutdownGraceExpires(t *testing.T) {
	up, _ := opsUpstream(t, "web", routing.Shared, 0)
	s := startServing(t, 100*time.Millisecond, up)
	c := &rawClient{t: t, url: s.base + "/mcp", hc: &http.Client{}}
	c.initialize("2025-11-25")
	g, tag := newGate("shutdown-stuck")
	t.Cleanup(func() { close(g.release) })
	answer := postAsync(c, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"web__hold","arguments":{"tag":"`+tag+`"}}}`)
	g.waitEntered(t)

	s.stop()
	if err := s.waitServed(t); err != nil {
		t.Errorf("Serve returned %v, want nil after closing what was left", err)
	}
	select {
	case r := <-answer:
		if r.err == nil {
			t.Errorf("the stuck call got an answer %q, want its connection closed", r.body)
		} else {
			t.Logf("the stuck call's client saw: %v", r.err)
		}
	case <-time.After(guard):
		t.Fatal("the stuck call's client was left hanging after Serve returned")
	}
}
