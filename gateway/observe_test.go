package gateway_test

import (
	"context"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/switchboard-mcp/switchboard/gateway"
	"github.com/switchboard-mcp/switchboard/routing"
	"github.com/switchboard-mcp/switchboard/routing/meter"
	"github.com/switchboard-mcp/switchboard/upstream/protocol"
)

// kvMap renders attributes as strings by key.
func kvMap(kvs []attribute.KeyValue) map[string]string {
	m := map[string]string{}
	for _, kv := range kvs {
		m[string(kv.Key)] = kv.Value.String()
	}
	return m
}

// opPoints collects the reader's metrics and returns the attributes of each data point of a histogram, and the
// histogram.
func opPoints(t *testing.T, reader *sdkmetric.ManualReader, name string) (metricdata.Metrics, []map[string]string, []metricdata.HistogramDataPoint[float64]) {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != name {
				continue
			}
			h, ok := m.Data.(metricdata.Histogram[float64])
			if !ok {
				t.Fatalf("%s is a %T, want a histogram", name, m.Data)
			}
			var attrs []map[string]string
			for _, p := range h.DataPoints {
				attrs = append(attrs, kvMap(p.Attributes.ToSlice()))
			}
			return m, attrs, h.DataPoints
		}
	}
	return metricdata.Metrics{}, nil, nil
}

// TestServerTelemetryConventions: every message a client POSTs is an MCP server span and a measurement of
// mcp.server.operation.duration as the OpenTelemetry semantic conventions for MCP define them
// (open-telemetry/semantic-conventions-genai docs/gen-ai/mcp.md), for a legacy session's tools/call, prompts/get
// and resources/read, an upstream's JSON-RPC error (error.type; answered as JSON and on an SSE stream), a tool error (tool_error), an unknown tool (an
// error code that is the caller's fault: rpc.response.status_code without error.type, and no tool name in the
// metric) and a 2026-07-28 client's stateless call (no session); the session's end is a measurement of
// mcp.server.session.duration. The upstream leg is the server span's child.
func TestServerTelemetryConventions(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	// Metrics through a meter.Set, as switchboard serve records them (meter's TestSameAsSDK: the SDK's own
	// instruments give the same).
	set := meter.NewSet()
	reader := sdkmetric.NewManualReader(sdkmetric.WithProducer(set))
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	sdkMP := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	mp := set.Provider(sdkMP)
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()); _ = sdkMP.Shutdown(context.Background()) })
	prop := propagation.TraceContext{}
	up := startAuthUpstream(t, "files", []string{"echo", "fail", "iserror"}, []string{"file:///notes.txt"}, []string{"greet"})
	h := startGateway(t, routing.Options{Tracer: tp, Meter: mp, Propagator: prop},
		gateway.Options{Tracer: tp, Meter: mp, Propagator: prop}, routingUpstream(t, testUpstream{Name: "files", URL: up.url}))

	c := h.raw(t)
	c.initialize("2025-11-25")
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"files__echo","arguments":{"text":"hi"}}}`,
		`{"jsonrpc":"2.0","id":"p-1","method":"prompts/get","params":{"name":"files__greet"}}`,
		`{"jsonrpc":"2.0","id":9,"method":"resources/read","params":{"uri":"file:///notes.txt"}}`,
		`{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"files__fail","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"files__iserror","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"nope","arguments":{}}}`,
	} {
		if r := c.do(body, nil); r.status != http.StatusOK {
			t.Fatalf("%s: HTTP %d %s", body, r.status, r.body)
		}
	}
	// The same error, answered on an SSE stream.
	sse := c.do(`{"jsonrpc":"2.0","id":14,"method":"tools/call","params":{"name":"files__fail","arguments":{}}}`,
		map[string]string{"Accept": "text/event-stream, application/json"})
	if !strings.HasPrefix(sse.header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("the answer came as %q, want an SSE stream", sse.header.Get("Content-Type"))
	}
	modern := h.raw(t)
	body := modernBody(t, 13, "tools/call", map[string]any{"name": "files__echo", "arguments": map[string]any{"text": "hi"}}, `{}`)
	if r := modernDo(t, modern, body, nil); r.status != http.StatusOK {
		t.Fatalf("2026-07-28 tools/call: HTTP %d %s", r.status, r.body)
	}

	legacy := map[string]string{"network.transport": "tcp", "network.protocol.name": "http", "network.protocol.version": "1.1",
		"mcp.protocol.version": "2025-11-25"}
	plus := func(m map[string]string, kv ...string) map[string]string {
		out := maps.Clone(m)
		for i := 0; i < len(kv); i += 2 {
			out[kv[i]] = kv[i+1]
		}
		return out
	}
	tool := func(name string, kv ...string) map[string]string {
		return plus(legacy, append([]string{"mcp.method.name", "tools/call", "gen_ai.operation.name", "execute_tool", "gen_ai.tool.name", name}, kv...)...)
	}
	cases := []struct {
		span   string
		id     string
		attrs  map[string]string // of the span, but for client.*, mcp.session.id and http.response.status_code
		status codes.Code
		desc   string
		metric map[string]string
		noLeg  bool
		modern bool
	}{
		{span: "tools/call files__echo", id: "7", attrs: tool("files__echo"), metric: tool("files__echo")},
		{span: "prompts/get files__greet", id: "p-1", attrs: plus(legacy, "mcp.method.name", "prompts/get", "gen_ai.prompt.name", "files__greet"),
			metric: plus(legacy, "mcp.method.name", "prompts/get", "gen_ai.prompt.name", "files__greet")},
		{span: "resources/read", id: "9", attrs: plus(legacy, "mcp.method.name", "resources/read", "mcp.resource.uri", "file:///notes.txt"),
			metric: plus(legacy, "mcp.method.name", "resources/read")},
		{span: "tools/call files__fail", id: "10", attrs: tool("files__fail", "error.type", "-32050", "rpc.response.status_code", "-32050"),
			status: codes.Error, desc: "upstream failure", metric: tool("files__fail", "error.type", "-32050", "rpc.response.status_code", "-32050")},
		{span: "tools/call files__fail", id: "14", attrs: tool("files__fail", "error.type", "-32050", "rpc.response.status_code", "-32050"),
			status: codes.Error, desc: "upstream failure", metric: tool("files__fail", "error.type", "-32050", "rpc.response.status_code", "-32050")},
		{span: "tools/call files__iserror", id: "11", attrs: tool("files__iserror", "error.type", "tool_error"),
			status: codes.Error, desc: "tool_error", metric: tool("files__iserror", "error.type", "tool_error")},
		{span: "tools/call nope", id: "12", attrs: tool("nope", "rpc.response.status_code", "-32602"), noLeg: true,
			metric: plus(legacy, "mcp.method.name", "tools/call", "gen_ai.operation.name", "execute_tool", "rpc.response.status_code", "-32602")},
		{span: "tools/call files__echo", id: "13", modern: true,
			attrs: map[string]string{"network.transport": "tcp", "network.protocol.name": "http", "network.protocol.version": "1.1",
				"mcp.protocol.version": protocol.Modern, "mcp.method.name": "tools/call", "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "files__echo"},
			metric: map[string]string{"network.transport": "tcp", "network.protocol.name": "http", "network.protocol.version": "1.1",
				"mcp.protocol.version": protocol.Modern, "mcp.method.name": "tools/call", "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "files__echo"}},
	}
	m, points, data := opPoints(t, reader, "mcp.server.operation.duration")
	if m.Unit != "s" || m.Description == "" {
		t.Errorf("mcp.server.operation.duration: unit %q, description %q", m.Unit, m.Description)
	}
	for _, tc := range cases {
		var sp tracetest.SpanStub
		for _, s := range exp.GetSpans() {
			if s.Name == tc.span && s.SpanKind == trace.SpanKindServer && kvMap(s.Attributes)["jsonrpc.request.id"] == tc.id {
				sp = s
			}
		}
		if sp.Name == "" {
			t.Errorf("no server span %q with jsonrpc.request.id %s", tc.span, tc.id)
			continue
		}
		got := kvMap(sp.Attributes)
		if got["http.response.status_code"] != "200" || got["client.address"] == "" || got["client.port"] == "" {
			t.Errorf("%s: http.response.status_code %q, client.address %q, client.port %q", tc.span, got["http.response.status_code"], got["client.address"], got["client.port"])
		}
		sid, hasSID := got["mcp.session.id"]
		if tc.modern == hasSID || hasSID && sid != c.session[:8] {
			t.Errorf("%s: mcp.session.id %q (present %v); a 2026-07-28 request has none, a session's has its first 8 characters", tc.span, sid, hasSID)
		}
		for _, k := range []string{"http.response.status_code", "client.address", "client.port", "mcp.session.id", "jsonrpc.request.id"} {
			delete(got, k)
		}
		if !maps.Equal(got, tc.attrs) {
			t.Errorf("%s (id %s): attributes\n%v\nwant\n%v", tc.span, tc.id, got, tc.attrs)
		}
		if sp.Status.Code != tc.status || sp.Status.Description != tc.desc {
			t.Errorf("%s: status %v %q, want %v %q", tc.span, sp.Status.Code, sp.Status.Description, tc.status, tc.desc)
		}
		legs := 0
		for _, s := range exp.GetSpans() {
			if s.SpanKind == trace.SpanKindClient && s.Parent.SpanID() == sp.SpanContext.SpanID() {
				legs++
			}
		}
		if want := map[bool]int{false: 1, true: 0}[tc.noLeg]; legs != want {
			t.Errorf("%s: %d upstream legs are its children, want %d", tc.span, legs, want)
		}
		i := slices.IndexFunc(points, func(p map[string]string) bool { return maps.Equal(p, tc.metric) })
		if i < 0 {
			t.Errorf("%s: no mcp.server.operation.duration point with %v; points %v", tc.span, tc.metric, points)
		} else if !slices.Equal(data[i].Bounds, routing.OperationBuckets) {
			t.Errorf("%s: bounds %v", tc.span, data[i].Bounds)
		}
	}
	for _, p := range points {
		for k, v := range p {
			if k == "jsonrpc.request.id" || k == "mcp.session.id" || k == "mcp.resource.uri" || strings.Contains(v, "nope") {
				t.Errorf("a metric point carries %s=%q: ids, URIs and names clients mint do not belong in metrics", k, v)
			}
		}
	}
	if !slices.ContainsFunc(points, func(p map[string]string) bool {
		return maps.Equal(p, plus(legacy, "mcp.method.name", "initialize"))
	}) || !slices.ContainsFunc(points, func(p map[string]string) bool {
		return maps.Equal(p, plus(legacy, "mcp.method.name", "notifications/initialized"))
	}) {
		t.Errorf("no points for initialize and notifications/initialized: %v", points)
	}

	// The session ends: mcp.server.session.duration.
	req, _ := http.NewRequestWithContext(ctxGuard(t), http.MethodDelete, h.url, nil)
	req.Header.Set("Mcp-Session-Id", c.session)
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	want := map[string]string{"network.transport": "tcp", "network.protocol.name": "http", "network.protocol.version": "1.1", "mcp.protocol.version": "2025-11-25"}
	for deadline := time.Now().Add(guard); ; time.Sleep(10 * time.Millisecond) {
		sm, sessions, data := opPoints(t, reader, "mcp.server.session.duration")
		if len(sessions) == 1 && maps.Equal(sessions[0], want) && data[0].Count == 1 {
			if sm.Unit != "s" || !slices.Equal(data[0].Bounds, routing.OperationBuckets) || data[0].Sum <= 0 {
				t.Errorf("mcp.server.session.duration: unit %q, bounds %v, sum %v", sm.Unit, data[0].Bounds, data[0].Sum)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("mcp.server.session.duration points %v, want one with %v", sessions, want)
		}
	}
}

// TestStdioTelemetryConventions (issue 19, item 7): the stdio front end's requests get the same MCP server spans
// and mcp.server.operation.duration as HTTP's, with network.transport "pipe" and no HTTP attributes, in both
// eras; the trace continues from params._meta.traceparent, and the upstream leg is the span's child.
func TestStdioTelemetryConventions(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	// Metrics through a meter.Set, as switchboard serve records them (meter's TestSameAsSDK: the SDK's own
	// instruments give the same).
	set := meter.NewSet()
	reader := sdkmetric.NewManualReader(sdkmetric.WithProducer(set))
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	sdkMP := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	mp := set.Provider(sdkMP)
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()); _ = sdkMP.Shutdown(context.Background()) })
	prop := propagation.TraceContext{}
	up := startAuthUpstream(t, "files", []string{"echo", "fail"}, nil, nil)
	h := startGateway(t, routing.Options{Tracer: tp, Meter: mp, Propagator: prop}, gateway.Options{},
		routingUpstream(t, testUpstream{Name: "files", URL: up.url}))
	c := startStdioWith(t, h.r, gateway.Options{Tracer: tp, Meter: mp, Propagator: prop})

	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	c.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	c.answer(`1`)
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	c.send(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"files__echo","arguments":{"text":"hi"},"_meta":{"traceparent":"00-` + traceID + `-00f067aa0ba902b7-01"}}}`)
	c.answer(`7`)
	c.send(`{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"files__fail","arguments":{}}}`)
	c.answer(`10`)
	c.send(modernBodyLine(t, "m-1", "tools/call", map[string]any{"name": "files__echo", "arguments": map[string]any{"text": "hi"}}))
	c.answer(`"m-1"`)

	pipe := func(version string, kv ...string) map[string]string {
		m := map[string]string{"network.transport": "pipe", "mcp.protocol.version": version}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	tool := func(version, name string, kv ...string) map[string]string {
		return pipe(version, append([]string{"mcp.method.name", "tools/call", "gen_ai.operation.name", "execute_tool", "gen_ai.tool.name", name}, kv...)...)
	}
	_, points, _ := opPoints(t, reader, "mcp.server.operation.duration")
	for _, tc := range []struct {
		id     string
		attrs  map[string]string
		status codes.Code
		trace  string
	}{
		{id: "7", attrs: tool("2025-11-25", "files__echo"), trace: traceID},
		{id: "10", attrs: tool("2025-11-25", "files__fail", "error.type", "-32050", "rpc.response.status_code", "-32050"), status: codes.Error},
		{id: "m-1", attrs: tool(protocol.Modern, "files__echo")},
	} {
		var sp tracetest.SpanStub
		for _, s := range exp.GetSpans() {
			if s.SpanKind == trace.SpanKindServer && kvMap(s.Attributes)["jsonrpc.request.id"] == tc.id {
				sp = s
			}
		}
		if sp.Name == "" {
			t.Errorf("no server span for request %s", tc.id)
			continue
		}
		got := kvMap(sp.Attributes)
		delete(got, "jsonrpc.request.id")
		if !maps.Equal(got, tc.attrs) || sp.Status.Code != tc.status {
			t.Errorf("request %s: span %q attributes\n%v\nwant\n%v (status %v, want %v)", tc.id, sp.Name, got, tc.attrs, sp.Status.Code, tc.status)
		}
		if tc.trace != "" && sp.SpanContext.TraceID().String() != tc.trace {
			t.Errorf("request %s: trace %s, want the client's %s from _meta.traceparent", tc.id, sp.SpanContext.TraceID(), tc.trace)
		}
		legs := 0
		for _, s := range exp.GetSpans() {
			if s.SpanKind == trace.SpanKindClient && s.Parent.SpanID() == sp.SpanContext.SpanID() {
				legs++
			}
		}
		if legs != 1 {
			t.Errorf("request %s: %d upstream legs are its children, want 1", tc.id, legs)
		}
		if !slices.ContainsFunc(points, func(p map[string]string) bool { return maps.Equal(p, tc.attrs) }) {
			t.Errorf("request %s: no mcp.server.operation.duration point with %v; points %v", tc.id, tc.attrs, points)
		}
	}
}
