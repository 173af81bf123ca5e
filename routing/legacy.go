package routing

import (
	"context"
	"time"

	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
	"github.com/switchboard-mcp/switchboard/upstream/protocol"
)

// legacyClient is the era of a legacy client's session (design §3): made by initialize, named by its
// Mcp-Session-Id, recorded for the other replicas when there is a store, and reachable by server→client
// requests, which it carries to the client on the related call's stream or the standalone one under ids of its
// own.
type legacyClient struct {
	s *Session
	// serverReqs are the upstreams' requests the client has not answered yet, by the gateway's id (guarded by
	// the session's mu, as is nextServerID).
	serverReqs   map[int64]*serverReq
	nextServerID int64
}

var _ era = (*legacyClient)(nil)

// addServerReq registers a request the gateway sends the client and returns the id it goes under.
func (lc *legacyClient) addServerReq(r *serverReq) int64 {
	lc.s.mu.Lock()
	defer lc.s.mu.Unlock()
	lc.nextServerID++
	lc.serverReqs[lc.nextServerID] = r
	return lc.nextServerID
}

// forgetServerReq drops a request the client will not answer now.
func (lc *legacyClient) forgetServerReq(gid int64) {
	lc.s.mu.Lock()
	defer lc.s.mu.Unlock()
	delete(lc.serverReqs, gid)
}

func newLegacyClient(s *Session) *legacyClient {
	lc := &legacyClient{s: s, serverReqs: map[int64]*serverReq{}}
	if s.r.opts.Store != nil {
		// Copies of a session on several replicas share the client's streams: their server→client request ids
		// must not collide, so each copy counts from its own random start.
		lc.nextServerID = randomBelow(1 << 50)
	}
	return lc
}

func (lc *legacyClient) modern() bool { return false }

// preempt: a legacy session dispatches every request.
func (lc *legacyClient) preempt(context.Context, jsonrpc.Message, *Stream) bool { return false }

// hearsUnrelated: the standalone stream carries what relates to no request.
func (lc *legacyClient) hearsUnrelated() bool { return true }

func (lc *legacyClient) closing() {}

// serverReq is a server→client request in flight: which upstream asked, under which id.
type serverReq struct {
	link *link
	upID []byte
	out  *Stream
	// answer, when set, receives the client's response instead of an upstream: the gateway asked on behalf of a
	// stateless upstream's input_required result (bridge.go).
	answer chan jsonrpc.Message
	roots  bool // a roots/list: its answer releases the link's first calls (awaitRoots)
}

// serverRequest relays an upstream's request (sampling, elicitation, roots) to this client under a
// gateway id, on the stream of the request it relates to when there is one (design §4).
func (lc *legacyClient) serverRequest(l *link, m jsonrpc.Message, rel *call) {
	s := lc.s
	out := s.standalone
	if rel != nil && rel.session == s && !rel.out.Closed() {
		out = rel.out
	}
	roots := m.MethodIs("roots/list")
	if roots {
		l.rootsAskedOnce.Do(func() { close(l.rootsAsked) })
	}
	gid := lc.addServerReq(&serverReq{link: l, upID: clone(m.ID()), out: out, roots: roots})
	msg := m.AppendWithID(nil, jsonrpc.AppendInt(nil, gid))
	if _, _, ok := jsonrpc.Lookup(m.Params(), "_meta", protocol.MetaRelatedTask); ok {
		msg = editString(msg, exposeTask(l.up), "params", "_meta", protocol.MetaRelatedTask, "taskId")
	}
	if m.MethodIs("elicitation/create") {
		if eid, ok := jsonrpc.LookupString(m.Params(), "elicitationId"); ok {
			s.r.elicits.note(l, eid, s)
		}
	}
	if !out.Push(msg, classRequest) && (out == s.standalone || !s.standalone.Push(msg, classRequest)) {
		s.mu.Lock()
		delete(lc.serverReqs, gid)
		s.mu.Unlock()
		l.respond(jsonrpc.AppendError(nil, m.ID(), protocol.CodeInternalError, "the client is not reading its stream", nil))
	}
}

// answer relays the client's answer to a server→client request back to the upstream that asked.
func (lc *legacyClient) answer(m jsonrpc.Message) {
	s := lc.s
	gid, ok := jsonrpc.ParseInt(m.ID())
	if !ok {
		return
	}
	s.mu.Lock()
	req := lc.serverReqs[gid]
	delete(lc.serverReqs, gid)
	s.mu.Unlock()
	if req == nil {
		s.record.relay(m.Raw()) // the upstream that asked may be held by another replica
		return
	}
	if req.answer != nil {
		req.answer <- m // buffered for exactly this one answer
		return
	}
	ctx, cancel := context.WithTimeout(s.ctx, 10*time.Second)
	defer cancel()
	_, out := m.AppendMessage(nil, req.upID)
	if err := req.link.write(ctx, out); err != nil {
		req.link.log.Debug("client response not delivered", "err", err)
	}
	if req.roots {
		req.link.rootsAnsweredOnce.Do(func() { close(req.link.rootsAnswered) })
	}
}

// serverRequestCancelled relays an upstream's cancellation of its own request to the client.
func (lc *legacyClient) serverRequestCancelled(l *link, m jsonrpc.Message) {
	s := lc.s
	params := m.Params()
	st, e, ok := jsonrpc.Lookup(params, "requestId")
	if !ok {
		return
	}
	s.mu.Lock()
	var gid int64
	var req *serverReq
	for id, r := range lc.serverReqs {
		if r.link == l && string(r.upID) == string(params[st:e]) {
			gid, req = id, r
			delete(lc.serverReqs, id)
			break
		}
	}
	s.mu.Unlock()
	if req == nil {
		return
	}
	req.out.Push(m.AppendWith(nil, nil, jsonrpc.ParamEdit{Path: []string{"requestId"}, With: jsonrpc.AppendInt(nil, gid)}), ClassNotice)
}

// linkLost tells the client that the upstream's requests it holds are void: the upstream is gone.
func (lc *legacyClient) linkLost(l *link) {
	s := lc.s
	s.mu.Lock()
	var lost []int64
	var outs []*Stream
	for id, r := range lc.serverReqs {
		if r.link == l {
			lost, outs = append(lost, id), append(outs, r.out)
			delete(lc.serverReqs, id)
		}
	}
	s.mu.Unlock()
	for i, id := range lost {
		p := cancelledParams(jsonrpc.AppendInt(nil, id), "upstream disconnected")
		outs[i].Push(jsonrpc.AppendNotification(nil, "notifications/cancelled", p), ClassNotice)
	}
}

// handleRelayed acts on a message relayed from another replica, without relaying it again.
func (lc *legacyClient) handleRelayed(m jsonrpc.Message) {
	s := lc.s
	switch m.Kind() {
	case jsonrpc.KindResponse:
		gid, ok := jsonrpc.ParseInt(m.ID())
		if !ok {
			return
		}
		s.mu.Lock()
		req := lc.serverReqs[gid]
		delete(lc.serverReqs, gid)
		s.mu.Unlock()
		if req != nil {
			ctx, cancel := context.WithTimeout(s.ctx, 10*time.Second)
			defer cancel()
			_, out := m.AppendMessage(nil, req.upID)
			_ = req.link.write(ctx, out)
		}
	case jsonrpc.KindNotification:
		if m.MethodIs("notifications/cancelled") {
			st, e, ok := jsonrpc.Lookup(m.Params(), "requestId")
			if !ok {
				return
			}
			s.mu.Lock()
			c := s.calls[s.callKey(nil, m.Params()[st:e])]
			s.mu.Unlock()
			if c != nil {
				s.cancelCall(nil, m.Params())
			}
		}
	}
}
