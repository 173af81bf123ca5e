package routing

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchboard-mcp/switchboard/upstream"
	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
	"github.com/switchboard-mcp/switchboard/upstream/protocol"
)

// SessionParams is what a client declared in initialize, after negotiation.
type SessionParams struct {
	ProtocolVersion string
	Capabilities    json.RawMessage
	ClientInfo      json.RawMessage
	// Principal is the authenticated subject the session is bound to ("" without auth).
	Principal string
	// Allow, when set, is the principal's policy: whether it may see and use an upstream's item (kind "tool",
	// "prompt", "resource" or "template"; name as the upstream knows it). What it may not use is neither listed
	// nor reachable (design §8). Routing declares it; auth implements it.
	Allow Allow
	// Context, when set, decorates the session's context, from which its upstream sessions' contexts derive:
	// the principal travels that way to upstream credentials that depend on it.
	Context func(context.Context) context.Context
	// Stateless marks a session the gateway keeps for clients of the 2026-07-28 era, which have none of their
	// own (modern.go): it is never stored or listed, its server→client requests become input_required results,
	// and it hears no notification that is not related to a request.
	Stateless bool
	// LogLevel is the level a stateless session's requests asked for ("" for none: no log messages at all).
	LogLevel string
}

// Allow is a policy decision: may the session see and use this item of this upstream?
type Allow func(upstream, kind, name string) bool

// clientCaps are the client capabilities routing acts on.
type clientCaps struct {
	Roots       *struct{} `json:"roots"`
	Sampling    *struct{} `json:"sampling"`
	Elicitation *struct {
		Form *struct{} `json:"form"`
		URL  *struct{} `json:"url"`
	} `json:"elicitation"`
}

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

// Session is one client session of the legacy era (design §3): created by initialize, bound to a principal,
// holding its per-client upstream sessions, its calls in flight and its standalone stream.
type Session struct {
	r          *Router
	id         string
	params     SessionParams
	caps       clientCaps
	standalone *Stream
	profile    string // capability profile: which catalog view the session sees (profile.go)
	ctx        context.Context
	cancel     context.CancelFunc
	lastUsed   atomic.Int64
	streams    atomic.Int32
	// storeTouched is when the shared record's TTL was last refreshed (unix ns).
	storeTouched atomic.Int64
	// unshared: the store failed when the session started; the janitor writes its record later (shareLate).
	unshared atomic.Bool

	// workers are the goroutines the session starts for its calls (bridge.go); Close waits for them.
	workers sync.WaitGroup

	mu           sync.Mutex
	links        map[*Upstream]*link
	calls        map[string]*call
	serverReqs   map[int64]*serverReq
	nextServerID int64
	logLevel     int                  // index into logLevels; -1 when the client set none
	subs         map[string]*Upstream // resource subscriptions: URI → upstream
	seenURIs     map[string]*Upstream // URIs that upstreams' results named, for reads (bounded)
	tasks        map[string]bool      // exposed ids of the tasks this session created
	resumable    map[string]string    // upstream name → "<protocol> <session id>" recorded by another replica
	closed       bool

	listener bool   // a stateless session serving one subscriptions/listen stream (modern.go)
	poolKey  string // where the router's pool of stateless sessions keeps it
	minted   atomic.Int64
}

func newSession(r *Router, p SessionParams) *Session {
	var idb [16]byte
	rand.Read(idb[:])
	return newSessionWithID(r, p, hex.EncodeToString(idb[:]))
}

func newSessionWithID(r *Router, p SessionParams, id string) *Session {
	s := &Session{
		r: r, id: id, params: p,
		standalone: r.NewStream(-1, 1024),
		links:      map[*Upstream]*link{},
		calls:      map[string]*call{},
		serverReqs: map[int64]*serverReq{},
		subs:       map[string]*Upstream{},
		seenURIs:   map[string]*Upstream{},
		tasks:      map[string]bool{},
		logLevel:   levelIndex(p.LogLevel),
	}
	_ = json.Unmarshal(p.Capabilities, &s.caps)
	s.profile = r.useProfile(capsProfile(s.caps))
	ctx := r.ctx
	if p.Context != nil {
		ctx = p.Context(ctx)
	}
	s.ctx, s.cancel = context.WithCancel(ctx)
	if r.opts.Store != nil {
		// Copies of a session on several replicas share the client's streams: their server→client request ids
		// must not collide, so each copy counts from its own random start.
		s.nextServerID = randomBelow(1 << 50)
	}
	s.storeTouched.Store(time.Now().UnixNano()) // the record is written fresh
	s.touch()
	return s
}

// ID is the session id, for the Mcp-Session-Id header: 128 random bits.
func (s *Session) ID() string { return s.id }

// ProtocolVersion is the version negotiated with the client.
func (s *Session) ProtocolVersion() string { return s.params.ProtocolVersion }

// Principal is the subject the session is bound to.
func (s *Session) Principal() string { return s.params.Principal }

// Standalone is the session's stream for messages unrelated to any request (the GET stream).
func (s *Session) Standalone() *Stream { return s.standalone }

// Done is closed when the session ends.
func (s *Session) Done() <-chan struct{} { return s.ctx.Done() }

// StreamOpened and StreamClosed count the client's open streams: a session with an open stream is not idle.
func (s *Session) StreamOpened() { s.streams.Add(1); s.touch() }

// StreamClosed is the counterpart of StreamOpened.
func (s *Session) StreamClosed() { s.streams.Add(-1); s.touch() }

func (s *Session) touch() {
	s.lastUsed.Store(time.Now().UnixNano())
	s.storeTouch()
}

// logID is a short, non-secret form of the id for logs: the session id is a bearer of state and stays out of logs.
func (s *Session) logID() string { return s.id[:8] }

// Close ends the session: its per-client upstream sessions are closed (stdio children stopped) and its streams
// end.
func (s *Session) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	links := s.links
	s.links = map[*Upstream]*link{}
	s.mu.Unlock()
	s.r.dropSession(s)
	if s.params.Stateless && !s.listener {
		s.r.unpool(s)
	}
	s.dropSubscriptions()
	s.cancel()
	var wg sync.WaitGroup
	for up, l := range links {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l.close()
			up.instances.Add(-1)
		}()
	}
	wg.Wait()
	s.workers.Wait()
	s.standalone.Close()
}

// goWork runs f on a goroutine that Close waits for, reporting false (and running nothing) once the session is
// closed.
func (s *Session) goWork(f func()) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.workers.Go(f)
	return true
}

// closeIdleLinks closes the per-client upstream sessions unused for their upstream's idle timeout: stdio children
// are the classic leak of gateways, and a client that went quiet should not keep one alive (design §3).
func (s *Session) closeIdleLinks(now time.Time) {
	s.mu.Lock()
	links := make(map[*Upstream]*link, len(s.links))
	for up, l := range s.links {
		if up.cfg.IdleTimeout > 0 {
			links[up] = l
		}
	}
	s.mu.Unlock()
	var idle []*link
	for up, l := range links { // a link's lock is never taken under the session's
		if !l.idle(now.Add(-up.cfg.IdleTimeout).UnixNano()) {
			continue
		}
		s.mu.Lock()
		if s.links[up] == l {
			delete(s.links, up)
			idle = append(idle, l)
		}
		s.mu.Unlock()
	}
	for _, l := range idle {
		l.log.Info("closing idle per-client upstream session")
		l.close()
		l.up.instances.Add(-1)
	}
}

// notify queues a notification on the standalone stream; dropped when the client does not keep up. A stateless
// session has no standalone stream unless it serves a subscriptions/listen request.
func (s *Session) notify(msg []byte) {
	if s.params.Stateless && !s.listener {
		return
	}
	s.standalone.Push(msg, ClassNotice)
}

// linkFor returns the upstream session that serves this client for up, starting a per-client one on first use.
func (s *Session) linkFor(up *Upstream) (*link, error) {
	if up.cfg.Mode == Shared || up.stateless() && (s.params.Stateless || !up.legacyLinks()) {
		// A stateless upstream keeps nothing per client: every request carries the client's capabilities.
		return up.main, nil
	}
	if s.r.opts.Store != nil && up.cfg.Kind == "http" {
		s.mu.Lock()
		linked := s.links[up] != nil
		s.mu.Unlock()
		if !linked {
			s.latestUpstreamSession(up) // a store read, outside the lock, only when a link is to be made
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if l := s.links[up]; l != nil {
		l.lastUsed.Store(time.Now().UnixNano()) // in use: not idle, whatever the janitor is about to decide
		return l, nil
	}
	if s.closed {
		return nil, fmt.Errorf("session closed")
	}
	if up.removed.Load() {
		return nil, fmt.Errorf("upstream %q was removed from the configuration", up.cfg.Name)
	}
	if n := up.cfg.MaxInstances; n > 0 && int(up.instances.Load()) >= n {
		return nil, fmt.Errorf("upstream %q has reached its limit of %d per-client sessions; try again later or raise maxInstances", up.cfg.Name, n)
	}
	up.instances.Add(1)
	caps := s.params.Capabilities
	if len(caps) == 0 {
		caps = json.RawMessage(`{}`)
	}
	l := newLink(s.r, up, s, upstream.ClientHello{
		ProtocolVersion: s.params.ProtocolVersion,
		Capabilities:    caps,
		ClientInfo:      s.r.clientInfo(),
		Legacy:          up.stateless(), // a legacy client's own session of an upstream that speaks both eras
	})
	if v, ok := s.resumable[up.cfg.Name]; ok {
		delete(s.resumable, up.cfg.Name)
		// Another replica may use the same upstream session: the link's random id start keeps the two apart.
		l.resumeProto, l.resumeSID, _ = strings.Cut(v, " ")
	}
	l.start(s.ctx)
	s.links[up] = l
	return l, nil
}

// linkConnected brings a fresh per-client upstream session up to the client's state.
func (s *Session) linkConnected(l *link) {
	prep := l.prepared()
	s.recordUpstreamSession(l)
	s.resubscribe(l)
	s.mu.Lock()
	level := s.logLevel
	s.mu.Unlock()
	_, logs := l.up.capability("logging")
	setLevel := level >= 0 && logs
	waitRoots := s.caps.Roots != nil && !s.params.Stateless
	if !setLevel && !waitRoots {
		l.setUp(prep)
		return
	}
	// The reader runs once connected returns, so what the calls wait for is awaited here, in the background;
	// calls wait on prep meanwhile (bounded by their own timeout).
	go func() { // owned by the link: bounded by its context, the request timeout and rootsGrace
		defer l.setUp(prep)
		ctx, cancel := context.WithTimeout(l.ctx, l.up.timeout())
		defer cancel()
		if setLevel {
			params := append(append([]byte(`{"level":"`), logLevels[level]...), `"}`...)
			if _, err := l.request(ctx, "logging/setLevel", params); err != nil {
				l.log.Debug("setLevel not applied", "err", err)
			}
		}
		if waitRoots {
			l.awaitRoots(ctx)
		}
	}()
}

// awaitRoots holds a fresh per-client upstream session's first calls until it has the client's roots: a server
// that limits itself to them (server-filesystem) asks with roots/list once initialized, and a call that arrives
// before the answer is refused ("Access denied … outside allowed directories"). Only servers known to ask (their
// catalog session asked, or a client's did) are waited for, so the others' first calls cost nothing; the waits
// for the request and for the client's answer are bounded (the request may sit on a standalone stream the client
// never opened).
func (l *link) awaitRoots(ctx context.Context) {
	if !l.up.asksRoots.Load() {
		return
	}
	wait := time.NewTimer(rootsAnswerWait)
	defer wait.Stop()
	select {
	case <-l.rootsAsked:
	case <-wait.C:
		return
	case <-ctx.Done():
		return
	}
	select {
	case <-l.rootsAnswered:
	case <-wait.C:
		l.log.Debug("the client did not answer roots/list in time; calls go ahead")
	case <-ctx.Done():
	}
}

// rootsAnswerWait bounds how long first calls wait for the upstream's roots/list and the client's answer.
const rootsAnswerWait = 2 * time.Second

func (s *Session) removeCall(c *call) {
	s.mu.Lock()
	if s.calls[string(c.clientID)] == c {
		delete(s.calls, string(c.clientID))
	}
	s.mu.Unlock()
}

// reply answers a client request from the gateway itself.
func reply(out *Stream, id, result []byte) {
	out.Push(jsonrpc.AppendResult(nil, id, result), ClassFinal)
}

// replyError answers a client request with an error.
func replyError(out *Stream, id []byte, code int, msg string) {
	out.Push(jsonrpc.AppendError(nil, id, code, msg, nil), ClassFinal)
}

// forward sends a client request to an upstream with a fresh id (and progress token), and registers it so the
// response, progress and cancellation find their way back (design §4).
func (s *Session) forward(ctx context.Context, up *Upstream, m jsonrpc.Message, out *Stream, edits ...jsonrpc.ParamEdit) {
	s.forwardWith(ctx, up, m, out, nil, edits...)
}

// forwardWith is forward with a transform of the successful result (see call.transform).
func (s *Session) forwardWith(ctx context.Context, up *Upstream, m jsonrpc.Message, out *Stream, transform func([]byte) []byte, edits ...jsonrpc.ParamEdit) {
	id := m.ID()
	if up.drained.Load() {
		replyError(out, id, protocol.CodeInternalError, fmt.Sprintf("upstream %q is drained for maintenance; retry later", up.cfg.Name))
		return
	}
	l, err := s.linkFor(up)
	if err != nil {
		replyError(out, id, protocol.CodeInternalError, err.Error())
		return
	}
	if s.params.Stateless || l.modern() {
		m = s.adaptMeta(l, m) // the request's _meta speaks the upstream's era (modern.go)
	}
	rctx, cancel := context.WithTimeout(s.ctx, up.timeout())
	defer cancel()
	if _, err := l.ready(rctx); err != nil {
		replyError(out, id, protocol.CodeInternalError, err.Error()+"; retry later")
		return
	}
	select { // a fresh upstream session is first brought up to the client's state (log level)
	case <-l.prepared():
	case <-rctx.Done():
	}
	c := &call{
		link: l, upID: l.mint(), method: m.Method(), session: s,
		clientID: clone(id), out: out, started: time.Now(), name: requestName(m), transform: transform,
	}
	var idBuf [20]byte
	upID := jsonrpc.AppendInt(idBuf[:0], c.upID)
	if params := m.Params(); params != nil {
		switch st, e, status := jsonrpc.LookupStatus(params, "_meta", "progressToken"); status {
		case jsonrpc.Found:
			c.token = clone(params[st:e])
			edits = append(edits, jsonrpc.ParamEdit{Path: []string{"_meta", "progressToken"}, With: upID})
		case jsonrpc.Ambiguous:
			// A duplicated or case-variant token would reach the upstream unrewritten, in the gateway's own token
			// space, where it could name another client's call.
			replyError(out, id, protocol.CodeInvalidParams, "params._meta.progressToken appears more than once (or in two spellings); send it once")
			return
		}
	}
	s.mu.Lock()
	if _, dup := s.calls[string(c.clientID)]; dup {
		s.mu.Unlock()
		replyError(out, id, protocol.CodeInvalidRequest, fmt.Sprintf("request id %s is already in use by a request in flight", id))
		return
	}
	s.calls[string(c.clientID)] = c
	s.mu.Unlock()
	// The timer is set before the call is published in the pending table, so every reader of c.timer (they all
	// take the call from the table first) sees it.
	c.timer = time.AfterFunc(up.timeout(), func() { s.timeout(c) })
	ctx, traceparent := s.r.startLeg(ctx, c)
	ctx = s.paramHeaders(ctx, l, c, m.Params())
	if traceparent != "" {
		if tm, err := withTraceparent(m, traceparent); err == nil {
			m = tm
		}
	}
	msg := m.AppendWith(make([]byte, 0, len(m.Raw())+32), upID, edits...)
	if !s.params.Stateless && l.modern() && multiRound(c.method) {
		c.bridge = &bridged{req: msg} // kept to retry it with the client's answers if the upstream asks for input
	}
	for tries := 0; !l.add(c.upID, c); tries++ {
		// The connection went away since ready (a restart, a crash): wait for the next one, a few times at most.
		if _, err := l.ready(rctx); err != nil || tries == 3 {
			s.r.endLeg(c, outcomeFailed)
			s.removeCall(c)
			replyError(out, id, protocol.CodeInternalError, fmt.Sprintf("upstream %q disconnected; retry the request", up.cfg.Name))
			return
		}
	}
	wctx, cancelWrite := context.WithTimeout(ctx, up.timeout())
	defer cancelWrite()
	if err := l.write(wctx, msg); err != nil {
		if l.takeIf(c) {
			c.failed(outcomeFailed, protocol.CodeInternalError, fmt.Sprintf("upstream %q: sending %s failed: %v", up.cfg.Name, c.method, err))
		}
	}
}

// timeout ends a call the upstream did not finish in time: the upstream is told to stop, the client gets an
// error it can act on.
func (s *Session) timeout(c *call) {
	if !c.link.takeIf(c) {
		return
	}
	what := c.method
	if c.name != "" {
		what += " " + c.name
	}
	if c.detached() {
		c.link.sendCancel(c.upID, "switchboard: the client did not come back with the input asked for")
		c.failed(outcomeTimeout, protocol.CodeRequestTimeout, fmt.Sprintf("the client did not retry %s with the input upstream %q asked for within %s; the call was cancelled",
			what, c.link.up.cfg.Name, parkTTL))
		return
	}
	c.link.sendCancel(c.upID, "switchboard: request timed out")
	c.failed(outcomeTimeout, protocol.CodeRequestTimeout, fmt.Sprintf("upstream %q did not finish %s within its timeout of %s (after %s in all); the request was cancelled",
		c.link.up.cfg.Name, what, c.link.up.timeout(), time.Since(c.started).Round(time.Millisecond)))
}

// cancelCall handles the client's notifications/cancelled for one of its requests.
func (s *Session) cancelCall(params []byte) {
	st, e, ok := jsonrpc.Lookup(params, "requestId")
	if !ok {
		return
	}
	s.mu.Lock()
	c := s.calls[string(params[st:e])]
	delete(s.calls, string(params[st:e]))
	var asking chan struct{}
	if c != nil && c.bridge != nil {
		asking, c.bridge.asking = c.bridge.asking, nil
	}
	s.mu.Unlock()
	if asking != nil {
		close(asking) // the gateway is asking the client on a stateless upstream's behalf (bridge.go): stop
		return
	}
	if c == nil {
		s.relayCancel(params) // the call may run on another replica (handleRelayed never relays again)
	}
	if c == nil || !c.link.takeIf(c) {
		return // unknown, finished, or crossing its response: ignored, as the spec allows
	}
	s.r.endLeg(c, outcomeCancelled)
	if c.park != nil {
		c.park.finished()
	}
	reason := "cancelled by the client"
	if rs, re, ok := jsonrpc.Lookup(params, "reason"); ok {
		if r, err := jsonrpc.Unquote(params[rs:re]); err == nil {
			reason = r
		}
	}
	c.link.sendCancel(c.upID, reason)
	c.out.Abandon()
}

// forwardServerRequest relays an upstream's request (sampling, elicitation, roots) to this client under a
// gateway id, on the stream of the request it relates to when there is one (design §4).
func (s *Session) forwardServerRequest(l *link, m jsonrpc.Message, rel *call) {
	if why := s.refuses(m); why != "" {
		l.respond(jsonrpc.AppendError(nil, m.ID(), protocol.CodeMethodNotFound, why, nil))
		return
	}
	if s.params.Stateless {
		s.r.park(s, l, m, rel) // a 2026-07-28 client is asked through an input_required result (modern.go)
		return
	}
	out := s.standalone
	if rel != nil && rel.session == s && !rel.out.Closed() {
		out = rel.out
	}
	roots := m.MethodIs("roots/list")
	if roots {
		l.rootsAskedOnce.Do(func() { close(l.rootsAsked) })
	}
	s.mu.Lock()
	s.nextServerID++
	gid := s.nextServerID
	s.serverReqs[gid] = &serverReq{link: l, upID: clone(m.ID()), out: out, roots: roots}
	s.mu.Unlock()
	msg := m.AppendWithID(nil, jsonrpc.AppendInt(nil, gid))
	if _, _, ok := jsonrpc.Lookup(m.Params(), "_meta", protocol.MetaRelatedTask); ok {
		msg = editString(msg, exposeTask(l.up), "params", "_meta", protocol.MetaRelatedTask, "taskId")
	}
	if m.MethodIs("elicitation/create") {
		if eid, ok := jsonrpc.LookupString(m.Params(), "elicitationId"); ok {
			s.r.noteElicitation(l, eid, s)
		}
	}
	if !out.Push(msg, ClassRequest) && (out == s.standalone || !s.standalone.Push(msg, ClassRequest)) {
		s.mu.Lock()
		delete(s.serverReqs, gid)
		s.mu.Unlock()
		l.respond(jsonrpc.AppendError(nil, m.ID(), protocol.CodeInternalError, "the client is not reading its stream", nil))
	}
}

// refuses says why a server→client request cannot go to this client: only clients that declared the
// capability get one (design §4).
func (s *Session) refuses(m jsonrpc.Message) string {
	switch m.Method() {
	case "sampling/createMessage":
		if s.caps.Sampling == nil {
			return "the client did not declare the sampling capability"
		}
	case "roots/list":
		if s.caps.Roots == nil {
			return "the client did not declare the roots capability"
		}
	case "elicitation/create":
		e := s.caps.Elicitation
		if e == nil {
			return "the client did not declare the elicitation capability"
		}
		if st, en, ok := jsonrpc.Lookup(m.Params(), "mode"); ok && string(m.Params()[st:en]) == `"url"` && e.URL == nil {
			return "the client did not declare URL-mode elicitation"
		}
	}
	return ""
}

// HandleResponse relays the client's answer to a server→client request back to the upstream that asked.
func (s *Session) HandleResponse(m jsonrpc.Message) {
	s.touch()
	gid, ok := jsonrpc.ParseInt(m.ID())
	if !ok {
		return
	}
	s.mu.Lock()
	req := s.serverReqs[gid]
	delete(s.serverReqs, gid)
	s.mu.Unlock()
	if req == nil {
		s.relay(m) // the upstream that asked may be held by another replica
		return
	}
	if req.answer != nil {
		req.answer <- m // buffered for exactly this one answer
		return
	}
	ctx, cancel := context.WithTimeout(s.ctx, 10*time.Second)
	defer cancel()
	if err := req.link.write(ctx, m.AppendWithID(nil, req.upID)); err != nil {
		req.link.log.Debug("client response not delivered", "err", err)
	}
	if req.roots {
		req.link.rootsAnsweredOnce.Do(func() { close(req.link.rootsAnswered) })
	}
}

// serverRequestCancelled relays an upstream's cancellation of its own request to the client.
func (s *Session) serverRequestCancelled(l *link, m jsonrpc.Message) {
	params := m.Params()
	st, e, ok := jsonrpc.Lookup(params, "requestId")
	if !ok {
		return
	}
	if s.params.Stateless {
		s.r.parks.withdraw(s, l, params[st:e]) // the request waits in a park, not on a stream
		return
	}
	s.mu.Lock()
	var gid int64
	var req *serverReq
	for id, r := range s.serverReqs {
		if r.link == l && string(r.upID) == string(params[st:e]) {
			gid, req = id, r
			delete(s.serverReqs, id)
			break
		}
	}
	s.mu.Unlock()
	if req == nil {
		return
	}
	req.out.Push(m.AppendWith(nil, nil, jsonrpc.ParamEdit{Path: []string{"requestId"}, With: jsonrpc.AppendInt(nil, gid)}), ClassNotice)
}

// serverRequestsLost tells the client that the upstream's requests it holds are void: the upstream is gone.
func (s *Session) serverRequestsLost(l *link) {
	s.mu.Lock()
	var lost []int64
	var outs []*Stream
	for id, r := range s.serverReqs {
		if r.link == l {
			lost, outs = append(lost, id), append(outs, r.out)
			delete(s.serverReqs, id)
		}
	}
	s.mu.Unlock()
	for i, id := range lost {
		p := cancelledParams(jsonrpc.AppendInt(nil, id), "upstream disconnected")
		outs[i].Push(jsonrpc.AppendNotification(nil, "notifications/cancelled", p), ClassNotice)
	}
}

// logLevels are the RFC 5424 levels of MCP logging, least severe first.
var logLevels = [...]string{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

func levelIndex(v string) int {
	for i, l := range logLevels {
		if l == v {
			return i
		}
	}
	return -1
}

// wantsLog filters notifications/message by the level the client set.
func (s *Session) wantsLog(params []byte) bool {
	s.mu.Lock()
	min := s.logLevel
	s.mu.Unlock()
	if min < 0 {
		// "No notifications/message for requests that didn't set _meta.../logLevel" (2026-07-28).
		return !s.params.Stateless
	}
	st, e, ok := jsonrpc.Lookup(params, "level")
	if !ok {
		return true
	}
	lv, err := jsonrpc.Unquote(params[st:e])
	if err != nil {
		return true
	}
	return levelIndex(lv) >= min
}

// randomBelow returns a random number in [0, n).
func randomBelow(n int64) int64 {
	var b [8]byte
	rand.Read(b[:])
	return int64(binary.BigEndian.Uint64(b[:]) % uint64(n))
}

// InFlight reports how many of the client's requests are with upstreams now.
func (s *Session) InFlight() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.calls)
}
