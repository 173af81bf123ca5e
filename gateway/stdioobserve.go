package gateway

import (
	"context"
	"strconv"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/switchboard-mcp/switchboard/routing"
	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
	"github.com/switchboard-mcp/switchboard/upstream/protocol"
)

// The stdio front end's server operations: the same MCP server span and mcp.server.operation.duration as for a
// request over HTTP (observe.go), with network.transport "pipe" and the trace continued from
// params._meta.traceparent, the only carrier a pipe has. An operation starts when its request is read and ends
// when the line that answers it is written (lineWriter calls answered), or when it is cancelled.

// maxStdioOps bounds the operations watched at once: past it a request is served unobserved.
const maxStdioOps = 1024

// stdioOps are one stdio client's operations in flight, by request id.
type stdioOps struct {
	obs *observer
	mu  sync.Mutex
	m   map[string]*stdioOp
}

// stdioOp is one request of a stdio client being served.
type stdioOp struct {
	span    trace.Span // nil when not tracing
	start   time.Time
	method  string
	name    string // the tool or prompt the request names
	version string
}

// newStdioOps returns the operations of one stdio client, or nil when the gateway neither traces nor meters.
func newStdioOps(obs *observer) *stdioOps {
	if !obs.inst.tracing && !obs.inst.metering {
		return nil
	}
	return &stdioOps{obs: obs, m: map[string]*stdioOp{}}
}

// start opens the operation of request m (version is its protocol version, "" when unknown) and returns the
// context that carries its span to the upstream legs.
func (o *stdioOps) start(ctx context.Context, m jsonrpc.Message, version string) context.Context {
	if o == nil || m.Kind() != jsonrpc.KindRequest {
		return ctx
	}
	op := &stdioOp{start: time.Now(), method: m.Method(), version: version}
	if version != protocol.Modern && !protocol.SupportedLegacy(version) {
		op.version = ""
	}
	switch op.method {
	case protocol.MethodToolsCall, protocol.MethodPromptsGet:
		op.name, _ = jsonrpc.LookupString(m.Params(), "name")
	}
	key := idKey(m.ID())
	o.mu.Lock()
	_, taken := o.m[key]
	if taken || len(o.m) >= maxStdioOps {
		o.mu.Unlock()
		return ctx // an id in flight twice is refused; past the bound, unobserved
	}
	o.m[key] = op
	o.mu.Unlock()
	obs := o.obs
	if !obs.inst.tracing {
		return ctx
	}
	if tp, ok := jsonrpc.LookupString(m.Params(), "_meta", "traceparent"); ok {
		ctx = obs.inst.propagator.Extract(ctx, propagation.MapCarrier{"traceparent": tp})
	}
	attrs := append(make([]attribute.KeyValue, 0, 8), semconv.McpMethodNameKey.String(op.method), attrPipe)
	if op.version != "" {
		attrs = append(attrs, semconv.McpProtocolVersionKey.String(op.version))
	}
	if a, ok := requestIDAttr(m.ID()); ok {
		attrs = append(attrs, a)
	}
	name, attrs := mcpSpanAttrs(m, op.method, op.name, attrs)
	var span trace.Span
	ctx, span = obs.inst.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
	o.mu.Lock()
	op.span = span
	o.mu.Unlock()
	return ctx
}

// answered ends the operation a written message answers, if any; msg may be a batch's array of answers.
func (o *stdioOps) answered(msg []byte) {
	if o == nil || len(msg) == 0 {
		return
	}
	if jsonrpc.IsBatch(msg) {
		parts, err := jsonrpc.SplitBatch(msg)
		if err != nil {
			return
		}
		for _, p := range parts {
			o.answered(p)
		}
		return
	}
	o.mu.Lock()
	empty := len(o.m) == 0
	o.mu.Unlock()
	if empty {
		return
	}
	m, err := jsonrpc.Parse(msg)
	if err != nil || m.Kind() != jsonrpc.KindResponse {
		return
	}
	op := o.take(idKey(m.ID()))
	if op == nil {
		return
	}
	var code int
	var hasCode bool
	var message, errType string
	if e := m.Error(); e != nil {
		if st, en, ok := jsonrpc.Lookup(e, "code"); ok {
			if n, ok := jsonrpc.ParseInt(e[st:en]); ok && int64(int(n)) == n {
				code, hasCode = int(n), true
			}
		}
		if !hasCode {
			errType = semconv.ErrorTypeOther.Value.AsString()
		}
		message, _ = jsonrpc.LookupString(e, "message")
	} else if op.method == protocol.MethodToolsCall && routing.ToolError(m.Result()) {
		errType = "tool_error"
	}
	o.end(op, code, hasCode, errType, message)
}

// cancelled ends the operation of a request the client cancelled (notifications/cancelled).
func (o *stdioOps) cancelled(params []byte) {
	if o == nil {
		return
	}
	st, e, ok := jsonrpc.Lookup(params, "requestId")
	if !ok {
		return
	}
	if op := o.take(idKey(params[st:e])); op != nil {
		o.end(op, 0, false, "cancelled", "")
	}
}

// closed ends every operation still open: the client went away.
func (o *stdioOps) closed() {
	if o == nil {
		return
	}
	o.mu.Lock()
	ops := o.m
	o.m = map[string]*stdioOp{}
	o.mu.Unlock()
	for _, op := range ops {
		o.end(op, 0, false, "cancelled", "")
	}
}

func (o *stdioOps) take(key string) *stdioOp {
	o.mu.Lock()
	defer o.mu.Unlock()
	op := o.m[key]
	delete(o.m, key)
	return op
}

// end records one operation: its metric and its span, classified as over HTTP.
func (o *stdioOps) end(op *stdioOp, code int, hasCode bool, errType, message string) {
	obs := o.obs
	codeIsError := hasCode && !notAnError(code)
	if obs.inst.metering {
		obs.recordOp(op.start, op.name, opKey{method: op.method, version: op.version, errType: errType, code: code, hasCode: hasCode,
			codeIsError: codeIsError, stdio: true})
	}
	o.mu.Lock()
	span := op.span
	o.mu.Unlock()
	if span == nil {
		return
	}
	if hasCode {
		span.SetAttributes(semconv.RPCResponseStatusCodeKey.String(strconv.Itoa(code)))
		if codeIsError {
			span.SetAttributes(semconv.ErrorTypeKey.String(strconv.Itoa(code)))
		}
	}
	if errType != "" {
		span.SetAttributes(semconv.ErrorTypeKey.String(errType))
	}
	if codeIsError || errType != "" {
		desc := message
		if desc == "" {
			desc = errType
		}
		span.SetStatus(codes.Error, desc)
	}
	span.End()
}
