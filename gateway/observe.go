package gateway

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
)

// instruments are the front end's metrics and tracer (design §10).
type instruments struct {
	tracing    bool // a real tracer provider: spans are worth their lookups
	tracer     trace.Tracer
	propagator propagation.TextMapPropagator
	requests   metric.Int64Counter
	duration   metric.Float64Histogram
	authFail   metric.Int64Counter
}

func newInstruments(o Options) (instruments, error) {
	tp, mp, prop := o.Tracer, o.Meter, o.Propagator
	_, noopTracer := tp.(tracenoop.TracerProvider)
	tracing := tp != nil && !noopTracer
	if tp == nil {
		tp = tracenoop.NewTracerProvider()
	}
	if mp == nil {
		mp = metricnoop.NewMeterProvider()
	}
	if prop == nil {
		prop = propagation.TraceContext{}
	}
	in := instruments{tracing: tracing, tracer: tp.Tracer("github.com/switchboard-mcp/switchboard/gateway"), propagator: prop}
	m := mp.Meter("github.com/switchboard-mcp/switchboard/gateway")
	var err error
	if in.requests, err = m.Int64Counter("switchboard.requests",
		metric.WithDescription("Client messages handled, by MCP method (or notification/response), transport and HTTP status.")); err != nil {
		return in, err
	}
	if in.duration, err = m.Float64Histogram("switchboard.request.duration", metric.WithUnit("s"),
		metric.WithDescription("Time to answer a client message, by MCP method and HTTP status; for streams, until the stream ends."),
		metric.WithExplicitBucketBoundaries(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300)); err != nil {
		return in, err
	}
	if in.authFail, err = m.Int64Counter("switchboard.auth.failures",
		metric.WithDescription("Requests refused by authentication or authorization, by reason.")); err != nil {
		return in, err
	}
	return in, nil
}

// startRequest opens the server span of one client message, continuing the client's trace from the
// traceparent header or, failing that, from params._meta.traceparent.
func (s *Server) startRequest(r *http.Request, m jsonrpc.Message, sessionID string) (context.Context, trace.Span) {
	if !s.inst.tracing {
		return r.Context(), trace.SpanFromContext(r.Context()) // a no-op span: nothing to look up
	}
	ctx := s.inst.propagator.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
	if !trace.SpanContextFromContext(ctx).IsValid() {
		if tp, ok := jsonrpc.LookupString(m.Params(), "_meta", "traceparent"); ok {
			ctx = s.inst.propagator.Extract(ctx, propagation.MapCarrier{"traceparent": tp})
		}
	}
	method := m.Method()
	name := method
	attrs := []attribute.KeyValue{attribute.String("mcp.method.name", method)}
	if method == "tools/call" {
		if tool, ok := jsonrpc.LookupString(m.Params(), "name"); ok {
			name += " " + tool
			attrs = append(attrs, attribute.String("gen_ai.tool.name", tool))
		}
	}
	if sessionID != "" && len(sessionID) >= 8 {
		attrs = append(attrs, attribute.String("mcp.session.id", sessionID[:8]))
	}
	return s.inst.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
}

// record counts one handled message.
func (s *Server) record(method, transport string, status int, start time.Time) {
	attrs := metric.WithAttributes(attribute.String("method", method), attribute.String("transport", transport), attribute.String("status", strconv.Itoa(status)))
	s.inst.requests.Add(context.Background(), 1, attrs)
	s.inst.duration.Record(context.Background(), time.Since(start).Seconds(), attrs)
}

func endSpan(span trace.Span, status int) {
	span.SetAttributes(attribute.Int("http.response.status_code", status))
	if status >= 400 {
		span.SetStatus(codes.Error, http.StatusText(status))
	}
	span.End()
}

// statusWriter remembers the status a handler wrote; Unwrap keeps http.ResponseController (flushes, write
// deadlines) working through it.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
