package routing

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
	"github.com/switchboard-mcp/switchboard/upstream/protocol"
)

// The other bridge of design §6: a stateless (2026-07-28) upstream never sends requests; it answers a call with
// an InputRequiredResult instead. A legacy client knows nothing of those, so the gateway asks it the way a legacy
// server would (sampling/createMessage, elicitation/create, roots/list on the call's stream), collects the answers,
// and retries the call upstream "with a new JSON-RPC id, adding inputResponses and echoing requestState exactly".
// The client sees one call.

// maxBridgeRounds bounds the rounds of input one call may ask for: an upstream that asks forever must not hold a
// call forever.
const maxBridgeRounds = 16

// outcomeInput ends an upstream leg that asked for the client's input; the call goes on in a new leg.
const outcomeInput = "input_required"

// multiRound reports whether a method may answer with input_required ("tools/call, prompts/get, or
// resources/read").
func multiRound(method string) bool {
	switch method {
	case "tools/call", "prompts/get", "resources/read":
		return true
	}
	return false
}

// isInputRequired reports whether a result asks for the client's input. Every result of a 2026-07-28 upstream is
// asked, so the common answer, a plain "complete", makes no string.
func isInputRequired(result []byte) bool {
	s, e, ok := jsonrpc.Lookup(result, "resultType")
	if !ok {
		return false
	}
	if b, plain := jsonrpc.PlainString(result[s:e]); plain {
		return string(b) == "input_required"
	}
	v, err := jsonrpc.Unquote(result[s:e])
	return err == nil && v == "input_required"
}

// bridgeAsk is one request for input the gateway put to the client on a stateless upstream's behalf.
type bridgeAsk struct {
	key string // the upstream's key in inputRequests
	gid int64  // the gateway's id of the request to the client
	ch  chan jsonrpc.Message
}

// bridgeInput answers a stateless upstream's input_required result for a legacy client: it asks the client, then
// retries the call upstream with the answers. It runs on its own goroutine; the call has been taken off its link,
// so nothing else completes it meanwhile.
func (lc *legacyClient) bridgeInput(c *call, result []byte) {
	s := lc.s
	s.r.inst.endLeg(c, outcomeInput)
	fail := func(code int, msg string) {
		c.code = code
		s.removeCall(c)
		c.out.Push(jsonrpc.AppendError(nil, c.clientID, code, msg, nil), ClassFinal)
	}
	if c.bridge.rounds >= maxBridgeRounds {
		fail(protocol.CodeInternalError, fmt.Sprintf("upstream %q asked for input %d times in one call; switchboard gave up", c.link.up.cfg.Name, c.bridge.rounds))
		return
	}
	var ir struct {
		InputRequests map[string]struct {
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		} `json:"inputRequests"`
		RequestState *string `json:"requestState"`
	}
	if err := json.Unmarshal(result, &ir); err != nil {
		fail(protocol.CodeInternalError, fmt.Sprintf("upstream %q answered input_required that cannot be read: %v", c.link.up.cfg.Name, err))
		return
	}
	ctx, cancel := context.WithTimeout(s.ctx, c.link.up.timeout())
	defer cancel()
	cancelled := make(chan struct{})
	s.mu.Lock()
	if s.calls[c.key] != c {
		s.mu.Unlock()
		c.out.Abandon() // cancelled by the client while its upstream was answering
		return
	}
	c.bridge.asking = cancelled
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		if c.bridge.asking == cancelled {
			c.bridge.asking = nil
		}
		s.mu.Unlock()
	}()
	answers := map[string]json.RawMessage{}
	var asked []bridgeAsk
	for _, key := range sortedKeys(ir.InputRequests) {
		req := ir.InputRequests[key]
		msg := jsonrpc.AppendRequest(nil, []byte("0"), req.Method, orEmpty(req.Params))
		m, err := jsonrpc.Parse(msg)
		if err != nil || !m.MethodIs("sampling/createMessage") && !m.MethodIs("elicitation/create") && !m.MethodIs("roots/list") {
			fail(protocol.CodeInternalError, fmt.Sprintf("upstream %q asked for input of an unknown kind (%q)", c.link.up.cfg.Name, req.Method))
			return
		}
		if why := s.caps.refuses(m); why != "" {
			fail(-32021, fmt.Sprintf("upstream %q needs input this client cannot give: %s", c.link.up.cfg.Name, why))
			return
		}
		p := bridgeAsk{key: key, ch: make(chan jsonrpc.Message, 1)}
		p.gid = lc.addServerReq(&serverReq{out: c.out, answer: p.ch})
		asked = append(asked, p)
		if !c.out.Push(m.AppendWithID(nil, jsonrpc.AppendInt(nil, p.gid)), classRequest) {
			fail(protocol.CodeInternalError, "the client is not reading its stream")
			lc.forgetAsks(asked)
			return
		}
	}
	for _, p := range asked {
		select {
		case m := <-p.ch:
			if e := m.Error(); e != nil {
				code, _ := m.ErrorCode()
				fail(code, "the client refused the upstream's request for input: "+errorMessage(e))
				lc.forgetAsks(asked)
				return
			}
			answers[p.key] = json.RawMessage(clone(m.Result()))
		case <-cancelled:
			lc.forgetAsks(asked)
			for _, q := range asked { // the client's own requests stop too, as they would for a legacy server's
				p := cancelledParams(jsonrpc.AppendInt(nil, q.gid), "the call was cancelled")
				msg := jsonrpc.AppendNotification(nil, "notifications/cancelled", p)
				// On the standalone stream as well: a client that cancelled may have stopped reading the call's.
				c.out.Push(msg, ClassNotice)
				s.notify(clone(msg))
			}
			c.out.Abandon()
			return
		case <-ctx.Done():
			lc.forgetAsks(asked)
			if s.ctx.Err() != nil {
				return // the session ended: nobody is waiting
			}
			fail(protocol.CodeRequestTimeout, fmt.Sprintf("the client did not answer upstream %q's request for input within %s", c.link.up.cfg.Name, c.link.up.timeout()))
			return
		}
	}
	if err := lc.retryWithInput(c, answers, ir.RequestState); err != nil {
		fail(protocol.CodeInternalError, err.Error())
	}
}

// forgetAsks drops the server→client requests of a bridge round that ended early.
func (lc *legacyClient) forgetAsks(asked []bridgeAsk) {
	s := lc.s
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range asked {
		delete(lc.serverReqs, p.gid)
	}
}

// retryWithInput sends the call again with the client's answers, as a new upstream leg under a new id.
func (lc *legacyClient) retryWithInput(c *call, answers map[string]json.RawMessage, state *string) error {
	s := lc.s
	orig := c.bridge.req
	if orig.Kind() != jsonrpc.KindRequest {
		return errors.New("switchboard: the call cannot be retried: its request was not kept")
	}
	responses, err := json.Marshal(answers)
	if err != nil {
		return fmt.Errorf("switchboard: encoding the client's answers: %w", err)
	}
	params := setMember(orEmpty(orig.Params()), "inputResponses", responses)
	if state != nil {
		params = setMember(params, "requestState", jsonrpc.AppendQuote(nil, *state))
	} else {
		params = jsonrpc.DeleteMembers(params, "requestState")
	}
	n := c.next()
	n.upID = c.link.pending.mint()
	n.started = time.Now()
	req, err := jsonrpc.Parse(jsonrpc.AppendRequest(nil, jsonrpc.AppendInt(nil, n.upID), c.method, params))
	if err != nil {
		return fmt.Errorf("switchboard: the call cannot be retried: %w", err)
	}
	n.bridge = &bridged{
		req:    req,
		rounds: c.bridge.rounds + 1,
		client: c.bridge.client,
	}
	// As forwardWith's: the retry's write ends with the call (endLeg), not on a timer of its own.
	wctx, stopWrite := context.WithCancel(s.ctx)
	defer stopWrite()
	n.stopWrite = stopWrite
	n.timer = time.AfterFunc(c.link.up.timeout(), n.expire)
	s.mu.Lock()
	if s.calls[c.key] != c {
		s.mu.Unlock()
		n.timer.Stop()
		return nil // cancelled by the client meanwhile: nothing to send, nobody to answer
	}
	s.calls[c.key] = n
	s.mu.Unlock()
	ctx, _ := s.r.inst.startLeg(wctx, n)
	mirrored := n.paramValues(c.link, params)
	if !c.link.add(n.upID, n) {
		s.r.inst.endLeg(n, outcomeFailed)
		s.removeCall(n)
		return errors.New("upstream " + c.link.up.cfg.Name + " disconnected while the client was answering; retry the request")
	}
	if err := c.link.writeRequest(ctx, n.bridge.req, mirrored); err != nil && c.link.pending.takeIf(n) {
		n.failed(outcomeFailed, protocol.CodeInternalError, fmt.Sprintf("upstream %q: sending %s failed: %v", c.link.up.cfg.Name, c.method, err))
	}
	return nil
}
