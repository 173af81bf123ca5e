package gateway

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/semconv/v1.40.0/mcpconv"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/switchboard-mcp/switchboard/routing"
	"github.com/switchboard-mcp/switchboard/routing/meter"
	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
	"github.com/switchboard-mcp/switchboard/upstream/protocol"
)

// The gateway's front end is an MCP server, and records what the OpenTelemetry semantic conventions for MCP
// (docs/gen-ai/mcp.md of open-telemetry/semantic-conventions-genai) define for one: a SERVER span per client
// message, mcp.server.operation.duration and mcp.server.session.duration. Its legs to the upstreams are MCP
// client spans and mcp.client.* metrics, recorded by routing.

// observer records the front end's operations in its instruments; it reads the catalog (Offers) to name tools in
// metrics, and the sessions to time the ones an initialize started.
type observer struct {
	inst     instruments
	offer    Offering
	sessions Sessions
}

// instruments are the front end's metrics and tracer (design §10).
type instruments struct {
	tracing    bool // a real tracer provider: spans are worth their lookups
	metering   bool // a real meter provider: the attributes of the MCP metrics are worth working out
	tracer     trace.Tracer
	propagator propagation.TextMapPropagator
	// The per-message metrics, aggregated by package meter when the provider has a meter.Set (switchboard
	// serve's does): requests is switchboard.requests, serverOp mcp.server.operation.duration, serverSession
	// mcp.server.session.duration.
	requests      *meter.Counter[requestKey]
	serverOp      *meter.Histogram[opKey]
	serverSession *meter.Histogram[sessionKey]
	authFail      metric.Int64Counter
}

func newInstruments(o Options) (instruments, error) {
	tp, mp, prop := o.Tracer, o.Meter, o.Propagator
	_, noopTracer := tp.(tracenoop.TracerProvider)
	_, noopMeter := mp.(metricnoop.MeterProvider)
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
	in := instruments{tracing: tracing, metering: o.Meter != nil && !noopMeter,
		tracer: tp.Tracer("github.com/switchboard-mcp/switchboard/gateway"), propagator: prop}
	const scope = "github.com/switchboard-mcp/switchboard/gateway"
	m := mp.Meter(scope)
	var err error
	if in.requests, err = meter.NewCounter[requestKey](mp, meter.Desc{Scope: scope, Name: "switchboard.requests",
		Description: "Client messages handled, by MCP method (or notification/response), transport and HTTP status."}); err != nil {
		return in, err
	}
	op := mcpconv.ServerOperationDuration{}
	if in.serverOp, err = meter.NewHistogram[opKey](mp, meter.Desc{Scope: scope, Name: op.Name(), Unit: op.Unit(),
		Description: op.Description()}, routing.OperationBuckets); err != nil {
		return in, err
	}
	sess := mcpconv.ServerSessionDuration{}
	if in.serverSession, err = meter.NewHistogram[sessionKey](mp, meter.Desc{Scope: scope, Name: sess.Name(), Unit: sess.Unit(),
		Description: sess.Description()}, routing.OperationBuckets); err != nil {
		return in, err
	}
	if in.authFail, err = m.Int64Counter("switchboard.auth.failures",
		metric.WithDescription("Requests refused by authentication or authorization, by reason.")); err != nil {
		return in, err
	}
	return in, nil
}

// Every message the front end serves over HTTP is "tcp" and "http" (the conventions' "Recording MCP transport":
// streamable HTTP and HTTP with SSE alike).
var (
	attrTCP  = semconv.NetworkTransportKey.String("tcp")
	attrPipe = semconv.NetworkTransportKey.String("pipe")
	attrHTTP = semconv.NetworkProtocolNameKey.String("http")
)

// httpVersion is network.protocol.version of a request: "1.1", "2", "1.0".
func httpVersion(r *http.Request) string {
	switch {
	case r.ProtoMajor == 2:
		return "2"
	case r.ProtoMajor == 1 && r.ProtoMinor == 1:
		return "1.1"
	case r.ProtoMajor == 1 && r.ProtoMinor == 0:
		return "1.0"
	case r.ProtoMajor == 3:
		return "3"
	}
	return ""
}

// opKey identifies the attribute set of one mcp.server.operation.duration measurement. Its values are bounded:
// methods the gateway knows (else _OTHER), tool and prompt names the catalog lists, supported protocol versions.
type opKey struct {
	method, tool, prompt, version, httpVersion string
	errType                                    string // error.type when it is not the JSON-RPC code
	code                                       int    // rpc.response.status_code, when hasCode
	hasCode                                    bool
	codeIsError                                bool // the code classifies as an error: error.type is the code
	stdio                                      bool // served over the stdio front end: network.transport pipe
}

func (k opKey) Attrs() []attribute.KeyValue {
	a := []attribute.KeyValue{semconv.McpMethodNameKey.String(k.method)}
	if k.stdio {
		a = append(a, attrPipe)
	} else {
		a = append(a, attrTCP, attrHTTP)
	}
	if k.httpVersion != "" {
		a = append(a, semconv.NetworkProtocolVersionKey.String(k.httpVersion))
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
		a = append(a, semconv.RPCResponseStatusCodeKey.String(code))
		if k.codeIsError {
			a = append(a, semconv.ErrorTypeKey.String(code))
		}
	}
	if k.errType != "" {
		a = append(a, semconv.ErrorTypeKey.String(k.errType))
	}
	return a
}

// sessionKey identifies the attribute set of one mcp.server.session.duration measurement.
type sessionKey struct{ version, httpVersion string }

func (k sessionKey) Attrs() []attribute.KeyValue {
	a := []attribute.KeyValue{attrTCP, attrHTTP}
	if k.httpVersion != "" {
		a = append(a, semconv.NetworkProtocolVersionKey.String(k.httpVersion))
	}
	if k.version != "" {
		a = append(a, semconv.McpProtocolVersionKey.String(k.version))
	}
	return a
}

// metricMethod is mcp.method.name in metrics: the methods and notifications a client sends that the gateway
// knows; anything else is _OTHER, so that clients cannot mint values.
func metricMethod(method string) string {
	switch method {
	case "initialize", "ping", "tools/list", "tools/call", "prompts/list", "prompts/get", "resources/list",
		"resources/read", "resources/templates/list", "resources/subscribe", "resources/unsubscribe",
		"completion/complete", "logging/setLevel", "tasks/get", "tasks/result", "tasks/list", "tasks/cancel", "tasks/update",
		"server/discover", "subscriptions/listen", "notifications/initialized", "notifications/cancelled",
		"notifications/progress", "notifications/roots/list_changed", "notifications/tasks/status":
		return method
	}
	return "_OTHER"
}

// notAnError are the JSON-RPC codes the conventions tell a server not to count as errors: "the caller sent a
// request the receiver could not serve" (-32700, -32600, -32601, -32602, and -32002 resource not found).
func notAnError(code int) bool {
	switch code {
	case protocol.CodeParseError, protocol.CodeInvalidRequest, protocol.CodeMethodNotFound, protocol.CodeInvalidParams,
		protocol.CodeResourceNotFound:
		return true
	}
	return false
}

// serverOp is one client message the front end serves: its MCP server span and its measurement of
// mcp.server.operation.duration. The answer is read off the response as it is written (statusWriter).
type serverOp struct {
	obs     *observer
	r       *http.Request
	w       *statusWriter
	span    trace.Span // nil when not tracing
	start   time.Time
	method  string
	name    string // the tool or prompt the request names, as the client gave it
	version string // mcp.protocol.version
	skip    bool   // a response of the client's: no operation of the server's
}

// startOp opens the server span of one client message, continuing the client's trace from the traceparent
// header or, failing that, from params._meta.traceparent, and makes w note the message's answer.
func (o *observer) startOp(r *http.Request, w *statusWriter, m jsonrpc.Message, start time.Time) (context.Context, serverOp) {
	op := serverOp{obs: o, r: r, w: w, start: start, method: m.Method(), skip: m.Kind() == jsonrpc.KindResponse}
	if op.skip || !o.inst.tracing && !o.inst.metering {
		return r.Context(), op
	}
	if m.Kind() == jsonrpc.KindRequest {
		w.watch = m.ID()
		w.tool = op.method == protocol.MethodToolsCall
	}
	switch op.method {
	case protocol.MethodToolsCall, protocol.MethodPromptsGet:
		op.name, _ = jsonrpc.LookupString(m.Params(), "name")
	}
	op.version = requestVersion(r, m)
	if !o.inst.tracing {
		return r.Context(), op
	}
	ctx := o.inst.propagator.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
	if !trace.SpanContextFromContext(ctx).IsValid() {
		if tp, ok := jsonrpc.LookupString(m.Params(), "_meta", "traceparent"); ok {
			ctx = o.inst.propagator.Extract(ctx, propagation.MapCarrier{"traceparent": tp})
		}
	}
	// The span's name and attributes are worked out only when the sampler keeps it: an unsampled span is only a
	// trace context for the legs to pass on.
	ctx, op.span = o.inst.tracer.Start(ctx, op.method, trace.WithSpanKind(trace.SpanKindServer))
	if !op.span.IsRecording() {
		op.span = nil
		return ctx, op
	}
	w.messages = true
	name, attrs := serverSpanAttrs(r, m, op)
	op.span.SetName(name)
	op.span.SetAttributes(attrs...)
	return ctx, op
}

// serverSpanAttrs are the name and attributes of a client message's server span.
func serverSpanAttrs(r *http.Request, m jsonrpc.Message, op serverOp) (string, []attribute.KeyValue) {
	attrs := make([]attribute.KeyValue, 0, 14)
	attrs = append(attrs, semconv.McpMethodNameKey.String(op.method), attrTCP, attrHTTP)
	if v := httpVersion(r); v != "" {
		attrs = append(attrs, semconv.NetworkProtocolVersionKey.String(v))
	}
	if op.version != "" {
		attrs = append(attrs, semconv.McpProtocolVersionKey.String(op.version))
	}
	if a, ok := requestIDAttr(m.ID()); ok {
		attrs = append(attrs, a)
	}
	// mcp.session.id: the Mcp-Session-Id header, which a 2026-07-28 client has none of; only its first 8
	// characters, as in the logs (the id is a bearer of the session's state).
	if sid := r.Header.Get(protocol.HeaderSessionID); len(sid) >= 8 {
		attrs = append(attrs, semconv.McpSessionIDKey.String(sid[:8]))
	}
	if host, port, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		attrs = append(attrs, semconv.ClientAddressKey.String(host))
		if p, err := strconv.Atoi(port); err == nil {
			attrs = append(attrs, semconv.ClientPortKey.Int(p))
		}
	}
	return mcpSpanAttrs(m, op.method, op.name, attrs)
}

// mcpSpanAttrs adds the attributes of the request itself to a server span's and names the span:
// "{mcp.method.name} {target}", the target being the tool or the prompt.
func mcpSpanAttrs(m jsonrpc.Message, method, target string, attrs []attribute.KeyValue) (string, []attribute.KeyValue) {
	name := method
	switch method {
	case protocol.MethodToolsCall:
		attrs = append(attrs, semconv.GenAIOperationNameExecuteTool)
		if target != "" {
			name += " " + target
			attrs = append(attrs, semconv.GenAIToolNameKey.String(target))
		}
	case protocol.MethodPromptsGet:
		if target != "" {
			name += " " + target
			attrs = append(attrs, semconv.GenAIPromptNameKey.String(target))
		}
	case protocol.MethodResourcesRead, protocol.MethodResourcesSubscribe, protocol.MethodResourcesUnsubscribe:
		if uri, ok := jsonrpc.LookupString(m.Params(), "uri"); ok {
			attrs = append(attrs, semconv.McpResourceURIKey.String(uri)) // not in the span name: high cardinality
		}
	}
	return name, attrs
}

// requestIDAttr is jsonrpc.request.id: "a string representation of the id property", a string id without its
// quotes; ok is false for a notification or a null id.
func requestIDAttr(id []byte) (attribute.KeyValue, bool) {
	if id == nil || string(id) == "null" {
		return attribute.KeyValue{}, false
	}
	sid := string(id)
	if id[0] == '"' {
		if u, err := jsonrpc.Unquote(id); err == nil {
			sid = u
		}
	}
	return semconv.JSONRPCRequestIDKey.String(sid), true
}

// requestVersion is mcp.protocol.version of a client message: the MCP-Protocol-Version header, or the version an
// initialize asks for; only versions the gateway speaks, so that clients cannot mint values.
func requestVersion(r *http.Request, m jsonrpc.Message) string {
	v := r.Header.Get(protocol.HeaderProtocolVersion)
	if v == "" && m.MethodIs("initialize") {
		v, _ = jsonrpc.LookupString(m.Params(), "protocolVersion")
	}
	if v == protocol.Modern || protocol.SupportedLegacy(v) {
		return v
	}
	return ""
}

// end records the served message: the span's end and the metrics.
func (op serverOp) end() {
	if op.skip {
		return
	}
	o, w := op.obs, op.w
	// error.type: the JSON-RPC code of an error answer that classifies as an error for a server, tool_error for a
	// tool result with isError, cancelled when the client went away or cancelled before an answer.
	var errType string
	codeIsError := w.hasCode && !notAnError(w.code)
	switch {
	case w.errored && !w.hasCode:
		errType = semconv.ErrorTypeOther.Value.AsString() // an error without an integer code
	case w.toolError:
		errType = "tool_error"
	case w.watch != nil && !w.answered:
		if op.r.Context().Err() != nil || w.status < 400 {
			errType = "cancelled"
		} else {
			errType = strconv.Itoa(w.status) // refused at the HTTP level without a JSON-RPC error
		}
	}
	if o.inst.metering {
		o.recordOp(op.start, op.name, opKey{method: op.method, version: op.version, httpVersion: httpVersion(op.r),
			errType: errType, code: w.code, hasCode: w.hasCode, codeIsError: codeIsError})
		if op.method == "initialize" && w.answered && !w.errored {
			o.observeSession(op)
		}
	}
	if op.span == nil {
		return
	}
	op.span.SetAttributes(attribute.Int("http.response.status_code", w.status))
	if w.hasCode {
		op.span.SetAttributes(semconv.RPCResponseStatusCodeKey.String(strconv.Itoa(w.code)))
		if codeIsError {
			op.span.SetAttributes(semconv.ErrorTypeKey.String(strconv.Itoa(w.code)))
		}
	}
	if errType != "" {
		op.span.SetAttributes(semconv.ErrorTypeKey.String(errType))
	}
	if codeIsError || errType != "" {
		// "The status description SHOULD match the JSONRPCError.message if the message is available."
		desc := w.message
		if desc == "" {
			desc = errType
		}
		op.span.SetStatus(codes.Error, desc)
	}
	op.span.End()
}

// recordOp records one served message in mcp.server.operation.duration: k with its method made bounded, and the
// tool or prompt named only when the catalog lists it (names clients mint do not belong in metrics).
func (o *observer) recordOp(start time.Time, name string, k opKey) {
	method := k.method
	k.method = metricMethod(method)
	switch {
	case name == "":
	case method == protocol.MethodToolsCall && o.offer.Offers(false, name):
		k.tool = name
	case method == protocol.MethodPromptsGet && o.offer.Offers(true, name):
		k.prompt = name
	}
	o.inst.serverOp.Record(k, time.Since(start))
}

// observeSession records the session an initialize started in mcp.server.session.duration when it ends (on this
// replica: a session shared with others ends here when it is deleted or expires here).
func (o *observer) observeSession(op serverOp) {
	sess := o.sessions.Session(op.w.Header().Get(protocol.HeaderSessionID))
	if sess == nil {
		return
	}
	k := sessionKey{version: sess.ProtocolVersion(), httpVersion: httpVersion(op.r)}
	start := op.start
	sess.WhenClosed(func() {
		o.inst.serverSession.Record(k, time.Since(start))
	})
}

// record counts one handled message.
func (o *observer) record(method, transport string, status int, _ time.Time) {
	o.inst.requests.Add(requestKey{method, transport, status}, 1)
}

// requestKey identifies the attribute set of one switchboard_requests_total count: bounded values (methodLabel's
// methods, the transports, HTTP statuses).
type requestKey struct {
	method, transport string
	status            int
}

func (k requestKey) Attrs() []attribute.KeyValue {
	return []attribute.KeyValue{attribute.String("method", k.method), attribute.String("transport", k.transport), attribute.String("status", strconv.Itoa(k.status))}
}

// statusWriter remembers the status a handler wrote; Unwrap keeps http.ResponseController (flushes, write
// deadlines) working through it. When watch is set it also reads the answer to that request id off the
// response as it is written (a JSON body, or an event of the SSE stream): its JSON-RPC error code and, for a
// tool call, whether the result says isError.
type statusWriter struct {
	http.ResponseWriter
	status int

	watch     []byte // the id of the request whose answer to note; nil for none
	tool      bool   // the request is a tools/call: note isError
	messages  bool   // note the error message too (for the span's status)
	answered  bool   // the answer was written
	code      int    // its JSON-RPC error code, when hasCode
	hasCode   bool   // the answer is an error with an integer code
	errored   bool   // the answer is an error
	message   string // its error message, when messages is set
	toolError bool   // its result says isError: true
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
	if w.watch != nil && !w.answered {
		w.note(b)
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// canonical is how every response the gateway writes begins (jsonrpc.AppendResult, AppendError).
var canonical = []byte(`{"jsonrpc":"2.0","id":`)

// note looks for the watched request's answer in one write: a JSON body, or one SSE event.
func (w *statusWriter) note(b []byte) {
	msg := b
	if len(b) > 0 && b[0] != '{' {
		msg = sseData(b)
	}
	if len(msg) == 0 {
		return
	}
	var result, errObj []byte
	rest, ok := bytes.CutPrefix(msg, canonical)
	switch {
	case ok && bytes.HasPrefix(rest, w.watch):
		rest = rest[len(w.watch):]
	case ok && bytes.HasPrefix(rest, []byte(`null,"error":`)):
		rest = rest[len("null"):] // an error about the message itself, before its id was read
	default:
		ok = false
	}
	if ok {
		// The common case, told from its prefix: no scan of the result.
		rest = bytes.TrimRight(rest, " \t\r\n")
		switch {
		case bytes.HasPrefix(rest, []byte(`,"result":`)):
			result = rest[len(`,"result":`) : len(rest)-1]
		case bytes.HasPrefix(rest, []byte(`,"error":`)):
			errObj = rest[len(`,"error":`) : len(rest)-1]
		default:
			return // another message whose id begins alike, or a request of the server's with the same id
		}
	} else {
		if bytes.HasPrefix(msg, []byte(`{"jsonrpc":"2.0","method":`)) {
			return // a notification or a request of the gateway's
		}
		m, err := jsonrpc.Parse(msg)
		if err != nil || m.Kind() != jsonrpc.KindResponse {
			return
		}
		if id := m.ID(); !bytes.Equal(id, w.watch) && !(string(id) == "null" && m.Error() != nil) {
			return
		}
		result, errObj = m.Result(), m.Error()
	}
	w.answered = true
	if errObj != nil {
		w.errored = true
		if s, e, ok := jsonrpc.Lookup(errObj, "code"); ok {
			if n, ok := jsonrpc.ParseInt(errObj[s:e]); ok && int64(int(n)) == n {
				w.code, w.hasCode = int(n), true
			}
		}
		if w.messages {
			w.message, _ = jsonrpc.LookupString(errObj, "message")
		}
		return
	}
	if w.tool {
		w.toolError = routing.ToolError(result)
	}
}

// sseData is the data of one SSE event, when it is on one line (as the gateway writes JSON-RPC messages).
func sseData(ev []byte) []byte {
	i := bytes.Index(ev, []byte("data: "))
	if i < 0 || i > 0 && ev[i-1] != '\n' {
		return nil
	}
	data := ev[i+len("data: "):]
	j := bytes.IndexByte(data, '\n')
	if j < 0 {
		return nil
	}
	if bytes.HasPrefix(data[j+1:], []byte("data")) {
		return nil // a message over several lines: not one the gateway wrote
	}
	return bytes.TrimSuffix(data[:j], []byte("\r"))
}
