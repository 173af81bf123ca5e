package routing

import (
	"bytes"
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/semconv/v1.40.0/mcpconv"

	"github.com/switchboard-mcp/switchboard/routing/meter"
	"github.com/switchboard-mcp/switchboard/upstream"
	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
	"github.com/switchboard-mcp/switchboard/upstream/protocol"
)

// Outcomes of a forwarded request, as recorded in the audit log and spans (switchboard.outcome).
const (
	outcomeOK        = "ok"
	outcomeError     = "error"     // the upstream answered with a JSON-RPC error
	outcomeTimeout   = "timeout"   // the gateway's per-request timeout fired
	outcomeCancelled = "cancelled" // the client cancelled
	outcomeFailed    = "failed"    // the upstream connection failed or the request could not be sent
)

// Values of the OpenTelemetry semantic conventions for MCP (docs/gen-ai/mcp.md of
// open-telemetry/semantic-conventions-genai) that the router records.
const (
	// errToolError is error.type for a tools/call whose result has isError: true ("this attribute SHOULD be set
	// to tool_error").
	errToolError = "tool_error"
	// errConnectionLost is error.type of an upstream session that ended because its connection was lost (the
	// stdio child exited, the HTTP session failed), not because the gateway closed it.
	errConnectionLost = "connection_lost"
)

// OperationBuckets are the bucket boundaries the conventions advise for mcp.{client,server}.operation.duration
// and mcp.{client,server}.session.duration: "[ 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300 ]".
var OperationBuckets = []float64{0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300}

// attrUpstream names the upstream a leg or upstream session went to: the conventions have no attribute for a
// gateway's upstream, and server.address says nothing for a stdio one.
const attrUpstream = attribute.Key("switchboard.upstream")

// instruments are the router's metrics and tracer (design §10).
type instruments struct {
	tracer     trace.Tracer
	propagator propagation.TextMapPropagator
	tracing    bool
	// metering: a real meter provider, so that the attributes of the MCP metrics are worth working out.
	metering bool

	// clientOp is mcp.client.operation.duration, clientSession mcp.client.session.duration: the gateway is the
	// MCP client of its upstreams.
	clientOp      *meter.Histogram[legKey]
	clientSession *meter.Histogram[upSessionKey]
	dropped       metric.Int64Counter
	// definitionChanges counts drift found (pins.go), by upstream, kind and action.
	definitionChanges metric.Int64Counter

	// audit receives one event per forwarded call (Options.Audit); nil: none.
	audit func(CallEvent)
}

func newInstruments(r *Router, o Options) (instruments, error) {
	tp, mp, prop := o.Tracer, o.Meter, o.Propagator
	_, noopTracer := tp.(tracenoop.TracerProvider)
	_, noopMeter := mp.(metricnoop.MeterProvider)
	in := instruments{tracing: tp != nil && !noopTracer, metering: mp != nil && !noopMeter, audit: o.Audit}
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
	const scope = "github.com/switchboard-mcp/switchboard/routing"
	m := mp.Meter(scope)
	var err error
	// The per-call histograms are aggregated by package meter when the provider has a meter.Set (switchboard
	// serve's does): the SDK's Record costs several times more (BenchmarkRecord).
	op := mcpconv.ClientOperationDuration{}
	if in.clientOp, err = meter.NewHistogram[legKey](mp, meter.Desc{Scope: scope, Name: op.Name(), Unit: op.Unit(),
		Description: op.Description()}, OperationBuckets); err != nil {
		return in, err
	}
	sess := mcpconv.ClientSessionDuration{}
	if in.clientSession, err = meter.NewHistogram[upSessionKey](mp, meter.Desc{Scope: scope, Name: sess.Name(), Unit: sess.Unit(),
		Description: sess.Description()}, OperationBuckets); err != nil {
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
	// Observed when collected, from counts the calls keep anyway: an up-down counter took two metric updates a
	// call, each a lookup of its attribute set and an aggregation, and cold in a process serving one call at a time.
	inflight, err := m.Int64ObservableUpDownCounter("switchboard.upstream.inflight",
		metric.WithDescription("Requests in flight at upstreams."))
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
		r.inflight.each(func(name string, n int64) {
			o.ObserveInt64(inflight, n, metric.WithAttributes(attribute.String("upstream", name)))
		})
		return nil
	}, sessions, up, restarts, instances, inflight)
	return in, err
}

// inflightCounts are the requests in flight at each upstream, by name (switchboard.upstream.inflight). Kept by
// name, not by Upstream, so that a reload's replacement and its predecessor's calls still draining count as one,
// and a removed upstream reads 0 once they have.
type inflightCounts struct {
	mu     sync.Mutex
	byName map[string]*atomic.Int64
}

// of returns the count of the upstream with the name, made on first use.
func (c *inflightCounts) of(name string) *atomic.Int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.byName[name]
	if n == nil {
		if c.byName == nil {
			c.byName = map[string]*atomic.Int64{}
		}
		n = new(atomic.Int64)
		c.byName[name] = n
	}
	return n
}

// each calls f with every upstream's count.
func (c *inflightCounts) each(f func(name string, n int64)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for name, n := range c.byName {
		f(name, n.Load())
	}
}

// transportOf is network.transport and network.protocol.name of an upstream: "This attribute SHOULD be set to tcp
// or quic if the transport protocol is HTTP. It SHOULD be set to pipe if the transport is stdio."
func transportOf(kind string) (transport, protocolName string) {
	if kind == "stdio" {
		return "pipe", ""
	}
	return "tcp", "http"
}

// legKey identifies the attribute set of one upstream leg's mcp.client.operation.duration.
type legKey struct {
	upstream, kind string
	method         string
	tool, prompt   string // the exposed names (bounded by the catalog)
	version        string // mcp.protocol.version negotiated with the upstream
	errType        string // error.type for a failure that is not a JSON-RPC error
	code           int    // the upstream's JSON-RPC error code, when hasCode
	hasCode        bool
}

func (k legKey) Attrs() []attribute.KeyValue {
	transport, protoName := transportOf(k.kind)
	a := []attribute.KeyValue{semconv.McpMethodNameKey.String(k.method), attrUpstream.String(k.upstream),
		semconv.NetworkTransportKey.String(transport)}
	if protoName != "" {
		a = append(a, semconv.NetworkProtocolNameKey.String(protoName))
	}
	if k.version != "" {
		a = append(a, semconv.McpProtocolVersionKey.String(k.version))
	}
	if k.method == protocol.MethodToolsCall {
		a = append(a, semconv.GenAIOperationNameExecuteTool)
	}
	if k.tool != "" {
		a = append(a, semconv.GenAIToolNameKey.String(k.tool))
	}
	if k.prompt != "" {
		a = append(a, semconv.GenAIPromptNameKey.String(k.prompt))
	}
	if k.hasCode {
		code := strconv.Itoa(k.code)
		a = append(a, semconv.ErrorTypeKey.String(code), semconv.RPCResponseStatusCodeKey.String(code))
	} else if k.errType != "" {
		a = append(a, semconv.ErrorTypeKey.String(k.errType))
	}
	return a
}

// upSessionKey identifies the attribute set of one upstream session's mcp.client.session.duration.
type upSessionKey struct {
	upstream, kind, version, errType string
}

func (k upSessionKey) Attrs() []attribute.KeyValue {
	transport, protoName := transportOf(k.kind)
	a := []attribute.KeyValue{attrUpstream.String(k.upstream), semconv.NetworkTransportKey.String(transport)}
	if protoName != "" {
		a = append(a, semconv.NetworkProtocolNameKey.String(protoName))
	}
	if k.version != "" {
		a = append(a, semconv.McpProtocolVersionKey.String(k.version))
	}
	if k.errType != "" {
		a = append(a, semconv.ErrorTypeKey.String(k.errType))
	}
	return a
}

// prompt is the prompt a prompts/get names (its exposed name); "" for other methods.
func (c *call) prompt() string {
	if c.method != protocol.MethodPromptsGet {
		return ""
	}
	return c.name
}

// resourceURI is mcp.resource.uri of a leg: "a URI of the resource provided in the following requests or
// notifications: resources/read, resources/subscribe, resources/unsubscribe".
func (c *call) resourceURI() string {
	switch c.method {
	case protocol.MethodResourcesRead, protocol.MethodResourcesSubscribe, protocol.MethodResourcesUnsubscribe:
		return c.name
	}
	return ""
}

// startLeg opens the MCP client span of one upstream leg and counts it in flight. It returns the context to
// write with (it carries the span, which the HTTP transport turns into a traceparent header) and the traceparent
// to put in the message's _meta, empty when nothing is traced.
func (in *instruments) startLeg(ctx context.Context, c *call) (context.Context, string) {
	c.link.up.inflight.Add(1)
	if !in.tracing {
		return ctx, ""
	}
	// The span is named "{mcp.method.name} {target}", the target being the tool or the prompt. Its name and
	// attributes are worked out only when the sampler keeps it: an unsampled span is only a trace context to pass
	// on.
	ctx, c.span = in.tracer.Start(ctx, c.method, trace.WithSpanKind(trace.SpanKindClient))
	if c.span.IsRecording() {
		if tool := c.tool(); tool != "" {
			c.span.SetName(c.method + " " + tool)
		} else if p := c.prompt(); p != "" {
			c.span.SetName(c.method + " " + p)
		}
		c.span.SetAttributes(in.legAttrs(c)...)
	}
	carrier := propagation.MapCarrier{}
	in.propagator.Inject(ctx, carrier)
	if !c.span.IsRecording() {
		c.span = nil // nothing to end: the leg's context still carries the trace on
	}
	return ctx, carrier["traceparent"]
}

// legAttrs are the attributes of a leg's client span.
func (in *instruments) legAttrs(c *call) []attribute.KeyValue {
	version, sid, modern := c.link.handshake()
	transport, protoName := transportOf(c.link.up.cfg.Kind)
	attrs := make([]attribute.KeyValue, 0, 12)
	attrs = append(attrs,
		semconv.McpMethodNameKey.String(c.method),
		semconv.JSONRPCRequestIDKey.String(strconv.FormatInt(c.upID, 10)),
		semconv.NetworkTransportKey.String(transport),
		attrUpstream.String(c.link.up.cfg.Name),
	)
	if protoName != "" {
		attrs = append(attrs, semconv.NetworkProtocolNameKey.String(protoName))
	}
	if version != "" {
		attrs = append(attrs, semconv.McpProtocolVersionKey.String(version))
	}
	// mcp.session.id is the upstream's Mcp-Session-Id, which "MUST NOT be set for a 2026-07-28-and-later
	// session"; like the gateway's own session ids, only its first 8 characters are recorded.
	if sid != "" && !modern {
		attrs = append(attrs, semconv.McpSessionIDKey.String(sid[:min(8, len(sid))]))
	}
	if c.method == protocol.MethodToolsCall {
		attrs = append(attrs, semconv.GenAIOperationNameExecuteTool) // "SHOULD NOT be set otherwise"
	}
	if tool := c.tool(); tool != "" {
		attrs = append(attrs, semconv.GenAIToolNameKey.String(tool))
	}
	if p := c.prompt(); p != "" {
		attrs = append(attrs, semconv.GenAIPromptNameKey.String(p))
	}
	if uri := c.resourceURI(); uri != "" {
		attrs = append(attrs, semconv.McpResourceURIKey.String(uri)) // not in the span name: high cardinality
	}
	return attrs
}

// endLeg records a finished upstream leg that got no answer of the upstream's (or whose answer is not at hand):
// metrics, audit, and the span's end.
func (in *instruments) endLeg(c *call, outcome string) {
	in.endLegAnswered(c, outcome, jsonrpc.Message{})
}

// endLegAnswered records a finished upstream leg; answer is the upstream's response, when the leg ended in one.
func (in *instruments) endLegAnswered(c *call, outcome string, answer jsonrpc.Message) {
	if c.timer != nil {
		c.timer.Stop()
	}
	if c.stopWrite != nil {
		c.stopWrite() // a leg ended by a cancel, a timeout or a lost connection no longer waits to be written
	}
	elapsed := time.Since(c.started)
	up := c.link.up
	// error.type: the JSON-RPC error code of an error answer ("All JSON-RPC error codes SHOULD be considered
	// errors" on the client side), tool_error for a tool result with isError, or what befell the leg.
	var errType string
	code, hasCode := 0, false
	switch outcome {
	case outcomeOK:
		// Only worth a look at the result when something records it.
		if c.method == protocol.MethodToolsCall && (in.metering || c.span != nil) && ToolError(answer.Result()) {
			errType = errToolError
		}
	case outcomeError:
		if code, hasCode = answer.ErrorCode(); !hasCode {
			errType = semconv.ErrorTypeOther.Value.AsString() // an error without an integer code
		}
	case outcomeTimeout, outcomeCancelled, outcomeFailed:
		errType = outcome
	}
	if in.metering {
		k := legKey{upstream: up.cfg.Name, kind: up.cfg.Kind, method: c.method, tool: c.tool(), prompt: c.prompt(),
			version: c.link.version(), errType: errType, code: code, hasCode: hasCode}
		in.clientOp.Record(k, elapsed)
	}
	up.inflight.Add(-1)
	if in.audit != nil {
		in.audit(CallEvent{
			Session: c.session.logID(), Principal: c.session.params.Principal, Endpoint: c.session.params.Endpoint, Upstream: up.cfg.Name,
			Method: c.method, Tool: c.tool(), Outcome: outcome, Code: c.code, Duration: elapsed,
			DefinitionHash: c.session.r.inst.definitionHash(c.session, up, c.method, c.name), Script: c.script,
		})
	}
	if c.span != nil {
		c.span.SetAttributes(attribute.String("switchboard.outcome", outcome))
		switch {
		case hasCode:
			s := strconv.Itoa(code)
			c.span.SetAttributes(semconv.ErrorTypeKey.String(s), semconv.RPCResponseStatusCodeKey.String(s))
		case errType != "":
			c.span.SetAttributes(semconv.ErrorTypeKey.String(errType))
		}
		if hasCode || errType != "" {
			// "The status description SHOULD match the JSONRPCError.message if the message is available."
			desc, ok := jsonrpc.LookupString(answer.Error(), "message")
			if !ok {
				desc = errType
			}
			c.span.SetStatus(codes.Error, desc)
		}
		c.span.End()
	}
}

// ToolError reports whether a tools/call result says isError: true (error.type "tool_error"). Most results do
// not mention it, or say false: a search of the bytes rules them out without scanning the result as JSON, which
// only a result that may say true gets (the member must be the result's own, not one nested in its content).
func ToolError(res []byte) bool {
	key := []byte(`"isError"`)
	for i := 0; ; {
		j := bytes.Index(res[i:], key)
		if j < 0 {
			return false
		}
		i += j + len(key)
		rest := bytes.TrimLeft(res[i:], " \t\r\n")
		if len(rest) > 0 && rest[0] == ':' && bytes.HasPrefix(bytes.TrimLeft(rest[1:], " \t\r\n"), []byte("true")) {
			break
		}
	}
	s, e, ok := jsonrpc.Lookup(res, "isError")
	return ok && string(res[s:e]) == "true"
}

// upstreamSessionEnded records mcp.client.session.duration of one upstream session (a connection of the link,
// from its handshake to its end). A stateless (2026-07-28) upstream has no session, and nothing is recorded.
func (in *instruments) upstreamSessionEnded(l *link, conn *upstream.Conn, since time.Time) {
	if !in.metering || conn.Server.Modern() {
		return
	}
	k := upSessionKey{upstream: l.up.cfg.Name, kind: l.up.cfg.Kind, version: conn.Server.ProtocolVersion}
	if l.ctx.Err() == nil {
		k.errType = errConnectionLost // the gateway did not close it
	}
	in.clientSession.Record(k, time.Since(since))
}

// auditDenied records a request the policy refused: it is answered as if the item did not exist, but the audit
// log says what happened.
func (in *instruments) auditDenied(s *Session, up *upstreamServer, method, name string) {
	s.r.inst.auditRefusal(s, up, method, name, outcomeDenied, "policy", 0)
}

// Outcomes of requests the gateway refused itself (CallEvent.Outcome): denied by the policy, refused by another
// rule (CallEvent.Reason says which).
const (
	outcomeDenied  = "denied"
	outcomeRefused = "refused"
)

// Reasons of refusals (CallEvent.Reason) that are not the policy's.
const (
	reasonOutsideView = "outside the endpoint"
	reasonUnknown     = "unknown"
	reasonMalformed   = "malformed request"
	reasonCredential  = "credential refused"
	reasonPreset      = "preset argument sent"
	reasonWithheld    = "definition withheld"
	// reasonScriptName: a code-mode script asked its tools for a name outside them, which fails in the sandbox.
	reasonScriptName = "a script named a tool it may not call"
)

// auditRefusal records a request the gateway answered with a refusal instead of forwarding: every refusal is an
// audit event, with the rule that made it (reason) and the code the client got (0 when it was answered as if the
// item did not exist). up is nil when no upstream was chosen.
func (in *instruments) auditRefusal(s *Session, up *upstreamServer, method, name, outcome, reason string, code int) {
	in.auditRefusalBy("", s, up, method, name, outcome, reason, code)
}

// auditRefusalBy is auditRefusal of a request a code-mode script made: script is its run's id (codemode.go).
func (in *instruments) auditRefusalBy(script string, s *Session, up *upstreamServer, method, name, outcome, reason string, code int) {
	if s.r.opts.Audit == nil {
		return
	}
	e := CallEvent{Session: s.logID(), Principal: s.params.Principal, Endpoint: s.params.Endpoint, Method: method, Tool: name, Outcome: outcome,
		Reason: reason, Code: code, Script: script}
	if up != nil {
		e.Upstream = up.cfg.Name
		e.DefinitionHash = s.r.inst.definitionHash(s, up, method, name)
	}
	s.r.opts.Audit(e)
}

// refuse answers a request with an error and audits the refusal (see auditRefusal).
func (in *instruments) refuse(s *Session, out *Stream, m jsonrpc.Message, up *upstreamServer, name string, code int, reason, msg string) {
	s.r.inst.auditRefusalBy(out.script, s, up, m.Method(), name, outcomeRefused, reason, code)
	replyError(out, m.ID(), code, msg)
}

// definitionHash is the pin hash of the tool (tools/call) or prompt (prompts/get) a request of the session names
// by its exposed name, as the session's catalog has it; "" for other methods, or when the catalog no longer
// routes the name to that upstream.
func (in *instruments) definitionHash(s *Session, up *upstreamServer, method, exposed string) string {
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
