package routing

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
	"github.com/switchboard-mcp/switchboard/upstream/protocol"
)

// Outcomes of a forwarded request, as recorded in metrics and spans.
const (
	outcomeOK        = "ok"
	outcomeError     = "error"     // the upstream answered with a JSON-RPC error
	outcomeTimeout   = "timeout"   // the gateway's per-request timeout fired
	outcomeCancelled = "cancelled" // the client cancelled
	outcomeFailed    = "failed"    // the upstream connection failed or the request could not be sent
)

// instruments are the router's metrics and tracer (design §10).
type instruments struct {
	tracer     trace.Tracer
	propagator propagation.TextMapPropagator
	tracing    bool

	requests metric.Int64Counter
	duration metric.Float64Histogram
	inflight metric.Int64UpDownCounter
	dropped  metric.Int64Counter
	// definitionChanges counts drift found (pins.go), by upstream, kind and action.
	definitionChanges metric.Int64Counter
}

func newInstruments(r *Router, o Options) (instruments, error) {
	tp, mp, prop := o.Tracer, o.Meter, o.Propagator
	_, noopTracer := tp.(tracenoop.TracerProvider)
	in := instruments{tracing: tp != nil && !noopTracer}
	if tp == nil {
		tp = tracenoop.NewTracerProvider()
	}
	if mp == nil {
		mp = metricnoop.NewMeterProvider()
	}
	if prop == nil {
		prop = propagation.TraceContext{}
	}
	in.tracer, in.propagator = tp.Tracer("github.com/switchboard-mcp/switchboard/routing"), prop
	m := mp.Meter("github.com/switchboard-mcp/switchboard/routing")
	var err error
	if in.requests, err = m.Int64Counter("switchboard.upstream.requests",
		metric.WithDescription("Requests forwarded to upstreams, by upstream, method and outcome.")); err != nil {
		return in, err
	}
	if in.duration, err = m.Float64Histogram("switchboard.upstream.request.duration", metric.WithUnit("s"),
		metric.WithDescription("Time from forwarding a request to its answer, by upstream, method and outcome."),
		metric.WithExplicitBucketBoundaries(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300)); err != nil {
		return in, err
	}
	if in.inflight, err = m.Int64UpDownCounter("switchboard.upstream.inflight",
		metric.WithDescription("Requests in flight at upstreams.")); err != nil {
		return in, err
	}
	if in.definitionChanges, err = m.Int64Counter("switchboard.definition.changes",
		metric.WithDescription("Tool and prompt definitions found to differ from their pins, by upstream, kind and action (withheld or served).")); err != nil {
		return in, err
	}
	if in.dropped, err = m.Int64Counter("switchboard.stream.dropped",
		metric.WithDescription("Notifications dropped because a client did not read its stream fast enough.")); err != nil {
		return in, err
	}
	sessions, err := m.Int64ObservableGauge("switchboard.sessions", metric.WithDescription("Live client sessions."))
	if err != nil {
		return in, err
	}
	up, err := m.Int64ObservableGauge("switchboard.upstream.up",
		metric.WithDescription("1 when the upstream's main session is connected, 0 otherwise."))
	if err != nil {
		return in, err
	}
	restarts, err := m.Int64ObservableCounter("switchboard.upstream.restarts",
		metric.WithDescription("Times the upstream's main session was re-established after it was lost."))
	if err != nil {
		return in, err
	}
	instances, err := m.Int64ObservableGauge("switchboard.upstream.instances",
		metric.WithDescription("Live per-client upstream sessions (stdio children, for stdio upstreams)."))
	if err != nil {
		return in, err
	}
	_, err = m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		o.ObserveInt64(sessions, int64(r.SessionCount()))
		for _, u := range r.upstreams() {
			st := u.status()
			attrs := metric.WithAttributes(attribute.String("upstream", st.Name))
			v := int64(0)
			if st.State == linkReady.String() {
				v = 1
			}
			o.ObserveInt64(up, v, attrs)
			o.ObserveInt64(restarts, int64(st.Restarts), attrs)
			o.ObserveInt64(instances, int64(st.Instances), attrs)
		}
		return nil
	}, sessions, up, restarts, instances)
	return in, err
}

// startLeg opens the client span of one upstream leg and counts it in flight. It returns the context to write
// with (it carries the span, which the HTTP transport turns into a traceparent header) and the traceparent to
// put in the message's _meta, empty when nothing is traced.
func (r *Router) startLeg(ctx context.Context, c *call) (context.Context, string) {
	r.inst.inflight.Add(ctx, 1, metric.WithAttributes(attribute.String("upstream", c.link.up.cfg.Name)))
	if !r.inst.tracing {
		return ctx, ""
	}
	attrs := []attribute.KeyValue{
		attribute.String("mcp.method.name", c.method),
		attribute.String("switchboard.upstream", c.link.up.cfg.Name),
		attribute.String("mcp.session.id", c.session.logID()),
	}
	if c.tool() != "" {
		attrs = append(attrs, attribute.String("gen_ai.tool.name", c.tool()))
	}
	name := c.method
	if c.tool() != "" {
		name += " " + c.tool()
	}
	ctx, c.span = r.inst.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	carrier := propagation.MapCarrier{}
	r.inst.propagator.Inject(ctx, carrier)
	return ctx, carrier["traceparent"]
}

// endLeg records a finished upstream leg: metrics, and the span's end.
func (r *Router) endLeg(c *call, outcome string) {
	if c.timer != nil {
		c.timer.Stop()
	}
	attrs := metric.WithAttributes(attribute.String("upstream", c.link.up.cfg.Name), attribute.String("method", c.method), attribute.String("outcome", outcome))
	ctx := context.Background()
	r.inst.requests.Add(ctx, 1, attrs)
	r.inst.duration.Record(ctx, time.Since(c.started).Seconds(), attrs)
	r.inst.inflight.Add(ctx, -1, metric.WithAttributes(attribute.String("upstream", c.link.up.cfg.Name)))
	if r.opts.Audit != nil {
		r.opts.Audit(CallEvent{
			Session: c.session.logID(), Principal: c.session.params.Principal, Upstream: c.link.up.cfg.Name,
			Method: c.method, Tool: c.tool(), Outcome: outcome, Code: c.code, Duration: time.Since(c.started),
			DefinitionHash: c.session.definitionHash(c.link.up, c.method, c.name),
		})
	}
	if c.span != nil {
		c.span.SetAttributes(attribute.String("switchboard.outcome", outcome))
		if outcome != outcomeOK {
			c.span.SetStatus(codes.Error, outcome)
		}
		c.span.End()
	}
}

// auditDenied records a request the policy refused: it is answered as if the item did not exist, but the audit
// log says what happened.
func (s *Session) auditDenied(up *Upstream, method, name string) {
	if s.r.opts.Audit != nil {
		s.r.opts.Audit(CallEvent{Session: s.logID(), Principal: s.params.Principal, Upstream: up.cfg.Name,
			Method: method, Tool: name, Outcome: "denied", DefinitionHash: s.definitionHash(up, method, name)})
	}
}

// definitionHash is the pin hash of the tool (tools/call) or prompt (prompts/get) a request of the session names
// by its exposed name, as the session's catalog has it; "" for other methods, or when the catalog no longer
// routes the name to that upstream.
func (s *Session) definitionHash(up *Upstream, method, exposed string) string {
	var index map[string]target
	switch method {
	case protocol.MethodToolsCall:
		index = s.catalog().tools
	case protocol.MethodPromptsGet:
		index = s.catalog().prompts
	default:
		return ""
	}
	if t, ok := index[exposed]; ok && t.up != nil && t.up.cfg.Name == up.cfg.Name {
		return t.hash
	}
	return ""
}

// withTraceparent puts the leg's traceparent in the request's params._meta, where every upstream (stdio ones
// too) can continue the trace; the 2026-07-28 schema reserves the key for exactly this.
func withTraceparent(m jsonrpc.Message, tp string) (jsonrpc.Message, error) {
	params := m.Params()
	if params == nil || tp == "" {
		return m, nil
	}
	v := jsonrpc.AppendQuote(nil, tp)
	if s, e, ok := jsonrpc.Lookup(params, "_meta"); ok {
		params = jsonrpc.Splice(nil, params, jsonrpc.Edit{Start: s, End: e, With: setMember(params[s:e], "traceparent", v)})
	} else {
		params = setMember(params, "_meta", append(append([]byte(`{"traceparent":`), v...), '}'))
	}
	return jsonrpc.Parse(jsonrpc.AppendRequest(nil, m.ID(), m.Method(), params))
}
