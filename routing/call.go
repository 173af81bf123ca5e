package routing

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
	"github.com/switchboard-mcp/switchboard/upstream/protocol"
)

// pending is a request waiting in a link's table under the upstream id the gateway minted for it: a client's
// call, or one of the gateway's own requests. Whoever takes it from the table owns its completion, which makes
// the response, a cancellation, a timeout and a lost connection race safely: exactly one of them wins.
type pending interface {
	// answered delivers the upstream's response.
	answered(m jsonrpc.Message)
	// failed ends the request with an error of the gateway's own.
	failed(outcome string, code int, message string)
	// what names the request in error messages: its method.
	what() string
}

var (
	_ pending = (*call)(nil)
	_ pending = (*ownRequest)(nil)
)

// call is a client's request in flight on a link: where the answer goes and how to translate it back.
//
// A call has two optional roles. A modern client's call whose legacy upstream asks for input is parked
// (park, mrtr.go): while the client is away a copy of it, detached from any client request, waits for the
// retry. A legacy client's call to a modern upstream is bridged (bridge, bridge.go): the upstream's
// input_required result is turned into server→client requests, and the call is sent again with the answers.
type call struct {
	link   *link
	upID   int64
	method string

	session  *Session
	clientID []byte  // the client's id, byte for byte
	key      callKey // where the session's table keeps it
	token    []byte  // the client's progress token, nil if none
	out      *Stream
	timer    *time.Timer
	// stopWrite ends the context of the request's write upstream: endLeg calls it, so a write the upstream does
	// not take gives up when the call ends (timed out, cancelled, disconnected). Set before timer and before the
	// call is in its link's table; nil for calls forwardWith did not write.
	stopWrite context.CancelFunc
	started   time.Time
	// inline holds clientID, token and the upstream id when they fit.
	inline struct {
		client [16]byte
		token  [16]byte
		up     [20]byte
	}
	// name is the client-visible name the request targets (a tool's or a prompt's name, a resource's URI), or ""
	// for requests that name nothing.
	name string
	// transform, when set, rewrites a successful result before it goes to the client: cold-path translations
	// (task ids, older protocol versions) that most calls never need.
	transform func(result []byte) []byte
	span      trace.Span // the upstream leg's client span; nil when not tracing
	code      int        // the JSON-RPC error code it ended with, for the audit log
	script    string     // code mode: the run whose script made the call, for the audit log (codemode.go)

	park   *park    // the multi round-trip the call serves a modern client through, once one started (mrtr.go)
	bridge *bridged // set for a legacy client's call of a modern upstream that may ask for input (bridge.go)
}

// bridged is the role of a legacy client's call to a modern upstream: the gateway answers the upstream's
// input_required by asking the client, then retries the request with the answers (bridge.go).
type bridged struct {
	client *legacyClient   // who is asked
	req    jsonrpc.Message // the request as sent upstream, to retry
	rounds int             // input rounds so far
	// asking, while the gateway asks the client, is closed by the client's cancellation (guarded by the
	// session's mu).
	asking chan struct{}
}

// ownRequest is one of the gateway's own requests (a list, a subscription), waited for by link.request.
type ownRequest struct {
	upID   int64
	method string
	answer chan jsonrpc.Message // buffered: one response
}

// next returns a copy of c for the call's next stage (parked, or retried with the client's input). It shares
// nothing that would keep c alive: its ids and token in its own buffers, and no write of c's to stop.
func (c *call) next() *call {
	n := new(call)
	*n = *c
	n.stopWrite = nil
	n.clientID = append(n.inline.client[:0], c.clientID...)
	if c.token != nil {
		n.token = append(n.inline.token[:0], c.token...)
	}
	return n
}

// tool is the tool a tools/call names, for spans and the audit log; "" for other methods.
func (c *call) tool() string {
	if c.method != protocol.MethodToolsCall {
		return ""
	}
	return c.name
}

// detached reports whether the call is a parked copy that no client request waits on: its answer goes to the
// park's buffer until the client retries.
func (c *call) detached() bool { return c.park != nil && c.out == c.park.buf }

func (c *call) what() string { return c.method }

// answered delivers the upstream's response to the client, translated back.
func (c *call) answered(m jsonrpc.Message) {
	if c.bridge != nil && isInputRequired(m.Result()) {
		res := m.Result()
		if !c.session.goWork(func() { c.bridge.client.bridgeInput(c, res) }) {
			c.out.Abandon() // the session ended: nobody waits for the answer
		}
		return
	}
	outcome := outcomeOK
	if m.Error() != nil {
		outcome = outcomeError
		c.code, _ = m.ErrorCode()
	}
	s := c.session
	s.r.inst.endLegAnswered(c, outcome, m)
	s.removeCall(c)
	if c.park != nil {
		c.park.finished()
	}
	res := m.Result()
	if res != nil && (c.method == protocol.MethodToolsCall || c.method == protocol.MethodPromptsGet) && mayNameResources(res) {
		s.scope.noteURIs(c.link.up, res)
	}
	if res != nil && !s.era.modern() && c.link.modern() {
		if res = legacyResult(res); c.transform != nil {
			res = c.transform(res)
		}
		c.out.Push(jsonrpc.AppendResult(nil, c.clientID, res), ClassFinal)
		return
	}
	if c.transform != nil && res != nil {
		c.out.Push(jsonrpc.AppendResult(nil, c.clientID, c.transform(res)), ClassFinal)
		return
	}
	c.out.Push(m.AppendWithID(make([]byte, 0, len(m.Raw())+len(c.clientID)), c.clientID), ClassFinal)
}

// failed answers the client with an error of the gateway's own.
func (c *call) failed(outcome string, code int, message string) {
	c.code = code
	c.session.r.inst.endLeg(c, outcome)
	c.session.removeCall(c)
	if c.park != nil {
		c.park.finished()
	}
	c.out.Push(jsonrpc.AppendError(nil, c.clientID, code, message, nil), ClassFinal)
}

// progressed resets the call's timeout on progress, within the hard maximum (spec: "MAY reset the timer when
// progress arrives, but SHOULD still enforce a hard maximum").
func (c *call) progressed() {
	if c.timer == nil {
		return
	}
	left := c.session.r.opts.MaxRequestTimeout - time.Since(c.started)
	if left <= 0 {
		return
	}
	c.timer.Reset(min(c.link.up.timeout(), left))
}

func (o *ownRequest) what() string { return o.method }

func (o *ownRequest) answered(m jsonrpc.Message) { o.answer <- m }

func (o *ownRequest) failed(_ string, code int, message string) {
	raw := jsonrpc.AppendError(nil, jsonrpc.AppendInt(nil, o.upID), code, message, nil)
	if m, err := jsonrpc.Parse(raw); err == nil {
		o.answer <- m
	}
}
