package routing

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/switchboard-mcp/switchboard/routing/meter"
	"github.com/switchboard-mcp/switchboard/routing/pin"
	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
)

// Definitions the observing upstream offers.
const (
	observedTool   = `{"name":"add","description":"Adds two numbers.","inputSchema":{"type":"object"}}`
	observedTools  = `[` + observedTool + `,{"name":"fail","inputSchema":{"type":"object"}},{"name":"oops","inputSchema":{"type":"object"}},{"name":"slow","inputSchema":{"type":"object"}}]`
	observedPrompt = `{"name":"greet","description":"A greeting.","arguments":[{"name":"who"}]}`
	observedURI    = "file:///notes.txt"
)

// observedUpstream offers tools, one prompt and one resource and answers their calls: a tools/call of "fail"
// ends in a JSON-RPC error, one of "oops" in a tool error (isError), one of "slow" in nothing at all.
func observedUpstream() *fakeTransport {
	return newFakeTransport(func(c *fakeConn, m jsonrpc.Message) {
		var result string
		switch m.Method() {
		case "tools/call":
			switch name, _ := jsonrpc.LookupString(m.Params(), "name"); name {
			case "fail":
				c.sendLocked(jsonrpc.AppendError(nil, m.ID(), -32602, "no such city", nil))
				return
			case "oops":
				result = `{"content":[{"type":"text","text":"the \"isError\": true of a text is no error"}],"isError":true}`
			case "slow":
				return
			default:
				result = `{"content":[],"isError":false}`
			}
		case "prompts/get":
			result = `{"messages":[]}`
		case "resources/read":
			result = `{"contents":[{"uri":"` + observedURI + `","text":"hi"}]}`
		case "prompts/list":
			result = `{"prompts":[` + observedPrompt + `]}`
		case "resources/list":
			result = `{"resources":[{"uri":"` + observedURI + `","name":"notes"}]}`
		default:
			defaultAnswer(c, m, fakeInitCaps, observedTools)
			return
		}
		c.sendLocked(jsonrpc.AppendResult(nil, m.ID(), []byte(result)))
	})
}

// callEvents collects audit events.
type callEvents struct {
	mu     sync.Mutex
	events []CallEvent
}

func (a *callEvents) add(e CallEvent) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.events = append(a.events, e)
}

func (a *callEvents) last(t *testing.T) CallEvent {
	t.Helper()
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.events) == 0 {
		t.Fatal("no call event")
	}
	return a.events[len(a.events)-1]
}

// TestCallEventDefinitionHash: the audit event of a tools/call and of a prompts/get carries the pin hash of the
// definition the catalog has for the item called (the hash pinning knows, pin.Hash of the upstream's
// definition, not of the renamed one clients see); a resources/read carries none. A call the policy denies
// carries the hash too.
func TestCallEventDefinitionHash(t *testing.T) {
	var audit callEvents
	r := startRouter(t, Options{Audit: audit.add}, UpstreamConfig{Name: "math", Prefix: "m__", Mode: Shared, Transport: observedUpstream(), Kind: "stdio"})
	s := r.session(defaultClientCaps)
	toolHash, promptHash := mustHash(t, pin.Tool, observedTool), mustHash(t, pin.Prompt, observedPrompt)

	roundTrip(t, r, s, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"m__add","arguments":{}}}`)
	if e := audit.last(t); e.Method != "tools/call" || e.Tool != "m__add" || e.DefinitionHash != toolHash {
		t.Fatalf("tools/call event %+v, want the hash %s", e, toolHash)
	}
	roundTrip(t, r, s, `{"jsonrpc":"2.0","id":2,"method":"prompts/get","params":{"name":"m__greet"}}`)
	if e := audit.last(t); e.Method != "prompts/get" || e.DefinitionHash != promptHash {
		t.Fatalf("prompts/get event %+v, want the hash %s", e, promptHash)
	}
	roundTrip(t, r, s, `{"jsonrpc":"2.0","id":3,"method":"resources/read","params":{"uri":"`+observedURI+`"}}`)
	if e := audit.last(t); e.Method != "resources/read" || e.DefinitionHash != "" {
		t.Fatalf("resources/read event %+v, want no hash", e)
	}

	denied := r.NewSession(SessionParams{ProtocolVersion: "2025-11-25", Capabilities: []byte(defaultClientCaps),
		Allow: func(up, kind, name string) bool { return kind != "tool" }})
	roundTrip(t, r, denied, `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"m__add","arguments":{}}}`)
	if e := audit.last(t); e.Outcome != "denied" || e.DefinitionHash != toolHash {
		t.Fatalf("denied event %+v, want the hash %s", e, toolHash)
	}
}

// observed is a router recording spans in memory and metrics to a manual reader.
type observed struct {
	*testRouter
	spans  *tracetest.InMemoryExporter
	reader *sdkmetric.ManualReader
}

func startObserved(t *testing.T, ups ...UpstreamConfig) *observed {
	t.Helper()
	spans := tracetest.NewInMemoryExporter()
	// Metrics through a meter.Set, as switchboard serve records them (meter's TestSameAsSDK: the SDK's own
	// instruments give the same).
	set := meter.NewSet()
	reader := sdkmetric.NewManualReader(sdkmetric.WithProducer(set))
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	sdkMP := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	mp := set.Provider(sdkMP)
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()); _ = sdkMP.Shutdown(context.Background()) })
	r := startRouter(t, Options{Tracer: tp, Meter: mp, RequestTimeout: time.Minute}, ups...)
	return &observed{testRouter: r, spans: spans, reader: reader}
}

// span returns the one ended span of that name.
func (o *observed) span(t *testing.T, name string) tracetest.SpanStub {
	t.Helper()
	var found []tracetest.SpanStub
	for _, s := range o.spans.GetSpans() {
		if s.Name == name {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d spans named %q, want 1; all: %v", len(found), name, spanNames(o.spans.GetSpans()))
	}
	return found[0]
}

func spanNames(ss tracetest.SpanStubs) []string {
	var names []string
	for _, s := range ss {
		names = append(names, s.Name)
	}
	return names
}

// collect collects the metrics and returns the named one; ok is false when it has no data yet.
func (o *observed) collect(t *testing.T, name string) (metricdata.Metrics, bool) {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := o.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name == name {
				return m, true
			}
		}
	}
	return metricdata.Metrics{}, false
}

// histogram collects the metrics and returns the named histogram's data points.
func (o *observed) histogram(t *testing.T, name string) (metricdata.Metrics, []metricdata.HistogramDataPoint[float64]) {
	t.Helper()
	m, ok := o.collect(t, name)
	if !ok {
		return metricdata.Metrics{}, nil
	}
	h, ok := m.Data.(metricdata.Histogram[float64])
	if !ok {
		t.Fatalf("%s is a %T, want a histogram", name, m.Data)
	}
	return m, h.DataPoints
}

// attrsOf renders an attribute list as a map of strings.
func attrsOf(kvs []attribute.KeyValue) map[string]string {
	m := map[string]string{}
	for _, kv := range kvs {
		m[string(kv.Key)] = kv.Value.String()
	}
	return m
}

// upstreamID is the id the upstream received with the request of that method and name.
func upstreamID(t *testing.T, ft *fakeTransport, method, name string) string {
	t.Helper()
	ft.mu.Lock()
	defer ft.mu.Unlock()
	for _, rec := range ft.log {
		if rec.msg.Method() != method {
			continue
		}
		if n, _ := jsonrpc.LookupString(rec.msg.Params(), "name"); n == name || method == "resources/read" {
			return string(rec.msg.ID())
		}
	}
	t.Fatalf("the upstream got no %s %s", method, name)
	return ""
}

// TestClientTelemetryConventions: every upstream leg is an MCP client span and a measurement of
// mcp.client.operation.duration as the OpenTelemetry semantic conventions for MCP define them
// (open-telemetry/semantic-conventions-genai docs/gen-ai/mcp.md): a tools/call, a prompts/get and a
// resources/read, a JSON-RPC error, a tool error, and a timeout; and an upstream session's end is a measurement of
// mcp.client.session.duration, with error.type when the connection was lost.
func TestClientTelemetryConventions(t *testing.T) {
	ft := observedUpstream()
	httpUp := observedUpstream()
	o := startObserved(t,
		UpstreamConfig{Name: "math", Prefix: "m__", Mode: Shared, Transport: ft, Kind: "stdio"},
		UpstreamConfig{Name: "web", Prefix: "w__", Mode: PerClient, Transport: httpUp, Kind: "http", Timeout: 50 * time.Millisecond})
	s := o.session(defaultClientCaps)

	roundTrip(t, o.testRouter, s, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"m__add","arguments":{}}}`)
	roundTrip(t, o.testRouter, s, `{"jsonrpc":"2.0","id":2,"method":"prompts/get","params":{"name":"m__greet"}}`)
	// Both upstreams offer the resource, so each one's is namespaced (resourceNamespacing: auto).
	if m := roundTrip(t, o.testRouter, s, `{"jsonrpc":"2.0","id":3,"method":"resources/read","params":{"uri":"math+`+observedURI+`"}}`); m.Error() != nil {
		t.Fatalf("resources/read answered %s", m.Raw())
	}
	if m := roundTrip(t, o.testRouter, s, `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"m__fail","arguments":{}}}`); m.Error() == nil {
		t.Fatalf("m__fail answered %s", m.Raw())
	}
	roundTrip(t, o.testRouter, s, `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"w__oops","arguments":{}}}`)
	roundTrip(t, o.testRouter, s, `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"w__slow","arguments":{}}}`)

	base := map[string]string{"network.transport": "pipe", "mcp.protocol.version": "2025-11-25", "switchboard.upstream": "math"}
	with := func(m map[string]string, kv ...string) map[string]string {
		out := maps.Clone(m)
		for i := 0; i < len(kv); i += 2 {
			out[kv[i]] = kv[i+1]
		}
		return out
	}
	web := map[string]string{"network.transport": "tcp", "network.protocol.name": "http", "mcp.protocol.version": "2025-11-25", "switchboard.upstream": "web"}
	cases := []struct {
		span    string
		spanAll map[string]string // every attribute of the span but switchboard.outcome, with jsonrpc.request.id filled in below
		id      [2]string         // the method and name the upstream received, for jsonrpc.request.id
		tr      *fakeTransport
		status  codes.Code
		desc    string
		metric  map[string]string // the attributes of its mcp.client.operation.duration point
	}{
		{
			span:    "tools/call m__add",
			spanAll: with(base, "mcp.method.name", "tools/call", "gen_ai.operation.name", "execute_tool", "gen_ai.tool.name", "m__add"),
			id:      [2]string{"tools/call", "add"}, tr: ft,
			metric: with(base, "mcp.method.name", "tools/call", "gen_ai.operation.name", "execute_tool", "gen_ai.tool.name", "m__add"),
		},
		{
			span:    "prompts/get m__greet",
			spanAll: with(base, "mcp.method.name", "prompts/get", "gen_ai.prompt.name", "m__greet"),
			id:      [2]string{"prompts/get", "greet"}, tr: ft,
			metric: with(base, "mcp.method.name", "prompts/get", "gen_ai.prompt.name", "m__greet"),
		},
		{
			span:    "resources/read",
			spanAll: with(base, "mcp.method.name", "resources/read", "mcp.resource.uri", "math+"+observedURI), // as the client named it
			id:      [2]string{"resources/read", ""}, tr: ft,
			metric: with(base, "mcp.method.name", "resources/read"), // mcp.resource.uri is opt-in on metrics
		},
		{
			span: "tools/call m__fail",
			spanAll: with(base, "mcp.method.name", "tools/call", "gen_ai.operation.name", "execute_tool", "gen_ai.tool.name", "m__fail",
				"error.type", "-32602", "rpc.response.status_code", "-32602"),
			id: [2]string{"tools/call", "fail"}, tr: ft, status: codes.Error, desc: "no such city",
			metric: with(base, "mcp.method.name", "tools/call", "gen_ai.operation.name", "execute_tool", "gen_ai.tool.name", "m__fail",
				"error.type", "-32602", "rpc.response.status_code", "-32602"),
		},
		{
			span:    "tools/call w__oops",
			spanAll: with(web, "mcp.method.name", "tools/call", "gen_ai.operation.name", "execute_tool", "gen_ai.tool.name", "w__oops", "error.type", "tool_error"),
			id:      [2]string{"tools/call", "oops"}, tr: httpUp, status: codes.Error, desc: "tool_error",
			metric: with(web, "mcp.method.name", "tools/call", "gen_ai.operation.name", "execute_tool", "gen_ai.tool.name", "w__oops", "error.type", "tool_error"),
		},
		{
			span:    "tools/call w__slow",
			spanAll: with(web, "mcp.method.name", "tools/call", "gen_ai.operation.name", "execute_tool", "gen_ai.tool.name", "w__slow", "error.type", "timeout"),
			id:      [2]string{"tools/call", "slow"}, tr: httpUp, status: codes.Error, desc: "timeout",
			metric: with(web, "mcp.method.name", "tools/call", "gen_ai.operation.name", "execute_tool", "gen_ai.tool.name", "w__slow", "error.type", "timeout"),
		},
	}
	m, points := o.histogram(t, "mcp.client.operation.duration")
	if m.Unit != "s" || m.Description == "" {
		t.Errorf("mcp.client.operation.duration: unit %q, description %q", m.Unit, m.Description)
	}
	for _, tc := range cases {
		sp := o.span(t, tc.span)
		if sp.SpanKind != trace.SpanKindClient {
			t.Errorf("%s: kind %v, want client", tc.span, sp.SpanKind)
		}
		got := attrsOf(sp.Attributes)
		delete(got, "switchboard.outcome")
		want := with(tc.spanAll, "jsonrpc.request.id", upstreamID(t, tc.tr, tc.id[0], tc.id[1]))
		if !maps.Equal(got, want) {
			t.Errorf("%s: attributes\n%v\nwant\n%v", tc.span, got, want)
		}
		if sp.Status.Code != tc.status || sp.Status.Description != tc.desc {
			t.Errorf("%s: status %v %q, want %v %q", tc.span, sp.Status.Code, sp.Status.Description, tc.status, tc.desc)
		}
		found := false
		for _, p := range points {
			if maps.Equal(attrsOf(p.Attributes.ToSlice()), tc.metric) {
				found = true
				if p.Count != 1 || !slices.Equal(p.Bounds, OperationBuckets) {
					t.Errorf("%s: %d measurements with bounds %v", tc.span, p.Count, p.Bounds)
				}
			}
		}
		if !found {
			var all []map[string]string
			for _, p := range points {
				all = append(all, attrsOf(p.Attributes.ToSlice()))
			}
			t.Errorf("%s: no mcp.client.operation.duration point with %v; points: %v", tc.span, tc.metric, all)
		}
	}
	if len(points) != len(cases) {
		t.Errorf("%d mcp.client.operation.duration points, want %d", len(points), len(cases))
	}

	// Upstream sessions: the per-client one ends with its client session, the shared one with a lost connection.
	s.Close()
	ft.mu.Lock()
	ft.conns[0].breakLocked(errors.New("the child exited"))
	ft.mu.Unlock()
	ft.waitFor(o.ctx, t, "a reconnect", func() bool { return ft.connects >= 2 })
	webSession := with(web)
	delete(webSession, "mcp.method.name")
	wantSessions := []map[string]string{
		{"network.transport": "pipe", "mcp.protocol.version": "2025-11-25", "switchboard.upstream": "math", "error.type": "connection_lost"},
		webSession, // closed by the gateway: no error.type
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		sm, points := o.histogram(t, "mcp.client.session.duration")
		var got []map[string]string
		for _, p := range points {
			got = append(got, attrsOf(p.Attributes.ToSlice()))
		}
		ok := len(got) == len(wantSessions)
		for _, w := range wantSessions {
			ok = ok && slices.ContainsFunc(got, func(g map[string]string) bool { return maps.Equal(g, w) })
		}
		if ok {
			if sm.Unit != "s" || !slices.Equal(points[0].Bounds, OperationBuckets) {
				t.Errorf("mcp.client.session.duration: unit %q, bounds %v", sm.Unit, points[0].Bounds)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("mcp.client.session.duration points %v, want %v", got, wantSessions)
		}
	}
}

// BenchmarkToolsCallObserved is BenchmarkToolsCallRoundTrip's plain case with real providers: metrics recorded
// (what production always does), and spans too. sdk records the metrics with the SDK's instruments, meter
// through a meter.Set (as switchboard serve does); none records nothing, the floor both are measured against.
func BenchmarkToolsCallObserved(b *testing.B) {
	for _, c := range []struct {
		name                    string
		tracing, inSet, noMeter bool
	}{{"none", false, false, true}, {"metrics-sdk", false, false, false}, {"metrics-meter", false, true, false}, {"metrics+traces-meter", true, true, false}} {
		tracing := c.tracing
		b.Run(c.name, func(b *testing.B) {
			prev := slog.Default()
			slog.SetDefault(discardLogger())
			b.Cleanup(func() { slog.SetDefault(prev) })
			set := meter.NewSet()
			var mp metric.MeterProvider = sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader(sdkmetric.WithProducer(set))))
			if c.inSet {
				mp = set.Provider(mp)
			}
			opts := Options{Meter: mp}
			if c.noMeter {
				opts.Meter = nil
			}
			if tracing {
				tp := sdktrace.NewTracerProvider() // spans are made and dropped: no exporter
				opts.Tracer = tp
			}
			ft := plainUpstream()
			r := startRouter(b, opts, UpstreamConfig{Name: "fake", Prefix: "fake__", Mode: Shared, Transport: ft, Kind: "stdio"})
			s := r.session(defaultClientCaps)
			m := mustParse(b, `{"jsonrpc":"2.0","id":"req-12345","method":"tools/call","params":{"name":"fake__add","arguments":{"a":1,"b":2}}}`)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				out := newStream(1, 8)
				s.HandleRequest(context.Background(), m, out)
				if _, final, ok := out.Next(r.ctx); !ok || !final {
					b.Fatal("no final answer")
				}
			}
			b.StopTimer()
			ft.mu.Lock()
			ft.log = nil
			ft.mu.Unlock()
		})
	}
}

// BenchmarkToolError measures the isError check of a tools/call result that says false, as every result of
// some SDKs does.
func BenchmarkToolError(b *testing.B) {
	res := []byte(`{"content":[{"type":"text","text":"` + strings.Repeat("x", 2048) + `"}],"isError":false}`)
	b.SetBytes(int64(len(res)))
	for i := 0; i < b.N; i++ {
		if ToolError(res) {
			b.Fatal("a tool error")
		}
	}
}

// inflightNow collects switchboard.upstream.inflight and returns it by upstream.
func (o *observed) inflightNow(t *testing.T) map[string]int64 {
	t.Helper()
	got := map[string]int64{}
	m, ok := o.collect(t, "switchboard.upstream.inflight")
	if !ok {
		return got
	}
	sum, ok := m.Data.(metricdata.Sum[int64])
	if !ok || sum.IsMonotonic {
		t.Fatalf("switchboard.upstream.inflight is a %T (monotonic %v), want a non-monotonic sum", m.Data, sum.IsMonotonic)
	}
	for _, dp := range sum.DataPoints {
		name, _ := dp.Attributes.Value("upstream")
		got[name.AsString()] = dp.Value
	}
	return got
}

// TestInflightAcrossReload: switchboard.upstream.inflight counts an upstream's calls by its name, so a reload that
// replaces the upstream counts any call still on the old one with those on the new, and a removed upstream reads 0
// once its calls are answered (as the up-down counter it replaced did).
func TestInflightAcrossReload(t *testing.T) {
	ft := holdingUpstream()
	cfg := UpstreamConfig{Name: "fake", Prefix: "fake__", Mode: Shared, Transport: ft, Kind: "stdio", Fingerprint: "1"}
	o := startObserved(t, cfg)
	s := o.session(defaultClientCaps)
	call := func(id int) *Stream {
		out := newStream(1, 16)
		s.HandleRequest(context.Background(), mustParse(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"fake__add"}}`, id)), out)
		return out
	}
	first := call(1)
	if got := o.inflightNow(t); got["fake"] != 1 {
		t.Fatalf("in flight %v with one call held, want fake=1", got)
	}
	cfg.Fingerprint = "2" // a changed config: a new Upstream under the same name
	if _, err := o.Reconfigure([]UpstreamConfig{cfg}); err != nil {
		t.Fatal(err)
	}
	waitTools(t, o.testRouter, s, "the replaced upstream's tools", func(n []string) bool { return slices.Equal(n, []string{"fake__add"}) })
	second := call(2)
	// The first call is still on the old upstream or was failed by its replacement; either way it is counted
	// until it has ended, and only once.
	got := o.inflightNow(t)
	ended := finalNow(t, first) != nil
	if got["fake"] != 2 && !(ended && got["fake"] == 1) {
		t.Fatalf("in flight %v after the reload (first call ended: %v)", got, ended)
	}
	open := []*Stream{second}
	if !ended {
		open = append(open, first)
	}
	if _, err := o.Reconfigure(nil); err != nil {
		t.Fatal(err)
	}
	// A call's leg ends (and its count with it) before its answer is pushed.
	for _, out := range open {
		for final := false; !final; {
			var ok bool
			if _, final, ok = out.Next(o.ctx); !ok {
				t.Fatal("a call of the removed upstream got no answer")
			}
		}
	}
	if n, present := o.inflightNow(t)["fake"]; !present || n != 0 {
		t.Fatalf("in flight fake=%d (present %v) after the upstream was removed and its calls answered, want 0", n, present)
	}
}

// TestUnsampledLeg: a leg the sampler drops records no span, yet its upstream still gets the trace context, not
// sampled (flags 00), so that the upstream keeps the caller's decision; its metrics are recorded all the same.
func TestUnsampledLeg(t *testing.T) {
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans), sdktrace.WithSampler(sdktrace.NeverSample()))
	set := meter.NewSet()
	reader := sdkmetric.NewManualReader(sdkmetric.WithProducer(set))
	sdkMP := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()); _ = sdkMP.Shutdown(context.Background()) })
	ft := observedUpstream()
	r := startRouter(t, Options{Tracer: tp, Meter: set.Provider(sdkMP), RequestTimeout: time.Minute},
		UpstreamConfig{Name: "math", Prefix: "m__", Mode: Shared, Transport: ft, Kind: "stdio"})
	o := &observed{testRouter: r, spans: spans, reader: reader}
	roundTrip(t, r, r.session(defaultClientCaps), `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"m__add","arguments":{}}}`)

	if got := spans.GetSpans(); len(got) != 0 {
		t.Errorf("spans recorded: %v", spanNames(got))
	}
	ft.mu.Lock()
	var tp00 string
	for _, rec := range ft.log {
		if rec.msg.Method() == "tools/call" {
			tp00, _ = jsonrpc.LookupString(rec.msg.Params(), "_meta", "traceparent")
		}
	}
	ft.mu.Unlock()
	if len(tp00) != 55 || !strings.HasSuffix(tp00, "-00") {
		t.Errorf("the upstream got traceparent %q, want one not sampled (-00)", tp00)
	}
	if _, points := o.histogram(t, "mcp.client.operation.duration"); len(points) != 1 || points[0].Count != 1 {
		t.Errorf("mcp.client.operation.duration points %v, want one of one call", points)
	}
}
