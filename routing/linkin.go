package routing

import (
	"context"
	"fmt"
	"time"

	"github.com/switchboard-mcp/switchboard/upstream"
	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
	"github.com/switchboard-mcp/switchboard/upstream/protocol"
)

// What comes in on a link besides answers to its own requests: the reader's routing (route), the upstream's
// server→client requests, and its notifications, each taken where it belongs (the sessions that asked, the
// catalog, the tasks, the subscribers).

// route dispatches one message from the upstream.
func (l *link) route(in upstream.Incoming) {
	m := in.Msg
	switch m.Kind() {
	case jsonrpc.KindResponse:
		id, ok := jsonrpc.ParseInt(m.ID())
		if !ok {
			l.log.Debug("response with an id the gateway did not mint; dropped")
			return
		}
		p := l.pending.take(id)
		if p == nil {
			return // cancelled or timed out: the late response is dropped (design §4)
		}
		p.answered(m)
	case jsonrpc.KindRequest:
		l.serverRequest(m, in.Related)
	case jsonrpc.KindNotification:
		l.notification(m, in.Related)
	}
}

// serverRequest routes a request the upstream sends to the client (design §4).
func (l *link) serverRequest(m jsonrpc.Message, related []byte) {
	if m.MethodIs("ping") {
		l.respond(jsonrpc.AppendResult(nil, m.ID(), []byte("{}")))
		return
	}
	var rel *call
	if id, ok := jsonrpc.ParseInt(related); ok {
		rel = l.pending.peek(id)
	}
	if rel == nil {
		// No stream association (stdio, the GET stream): a request that arrives while exactly one client request
		// is in flight belongs to it, as it would on a direct connection.
		rel = l.pending.soleCaller()
	}
	s := l.owner
	if s == nil && rel != nil {
		s = rel.session
	}
	if m.MethodIs("roots/list") {
		l.up.asksRoots.Store(true) // its per-client sessions' first calls wait for the client's roots (awaitRoots)
	}
	if s == nil && l.up.template() && m.MethodIs("roots/list") {
		// A template session lists tools for everyone and works in no one's roots.
		l.respond(jsonrpc.AppendResult(nil, m.ID(), []byte(`{"roots":[]}`)))
		return
	}
	if s == nil {
		l.respond(jsonrpc.AppendError(nil, m.ID(), protocol.CodeInvalidRequest,
			fmt.Sprintf("switchboard cannot tell which client %s is for: this upstream is shared by several sessions; configure it with session: per-client", m.Method()), nil))
		return
	}
	if why := s.caps.refuses(m); why != "" {
		l.respond(jsonrpc.AppendError(nil, m.ID(), protocol.CodeMethodNotFound, why, nil))
		return
	}
	s.era.serverRequest(l, m, rel)
}

// respond sends a response to the upstream; best effort.
func (l *link) respond(msg []byte) {
	ctx, cancel := context.WithTimeout(l.ctx, 5*time.Second)
	defer cancel()
	if err := l.writeBuilt(ctx, msg); err != nil {
		l.log.Debug("reply not delivered", "err", err)
	}
}

// notification routes a notification from the upstream.
func (l *link) notification(m jsonrpc.Message, related []byte) {
	if related != nil && l.modern() {
		// A stateless upstream speaks only on request streams: one whose request the gateway has given up
		// (cancelled, replaced, timed out) has nothing left to say to anyone.
		if id, ok := jsonrpc.ParseInt(related); !ok || l.pending.peek(id) == nil {
			return
		}
	}
	params := m.Params()
	switch m.Method() {
	case "notifications/progress":
		s, e, ok := jsonrpc.Lookup(params, "progressToken")
		if !ok {
			return
		}
		id, ok := jsonrpc.ParseInt(params[s:e])
		if !ok {
			return
		}
		c := l.pending.peek(id)
		if c == nil || c.token == nil {
			return // late progress after the response is not forwarded (design §4)
		}
		c.progressed()
		msg := m.AppendWith(nil, nil, jsonrpc.ParamEdit{Path: []string{"progressToken"}, With: c.token})
		c.out.Push(msg, ClassNotice)
	case "notifications/cancelled":
		if l.owner != nil {
			l.owner.era.serverRequestCancelled(l, m)
			return
		}
		for _, s := range l.r.allSessions() {
			s.era.serverRequestCancelled(l, m)
		}
		if st, e, ok := jsonrpc.Lookup(m.Params(), "requestId"); ok {
			l.r.parkTable.withdraw(nil, l, m.Params()[st:e]) // stateless sessions are not in the list above
		}
	case "notifications/tools/list_changed":
		l.listChanged(kindTools)
	case "notifications/prompts/list_changed":
		l.listChanged(kindPrompts)
	case "notifications/resources/list_changed":
		l.listChanged(kindResources, kindTemplates)
	case "notifications/resources/updated":
		l.updated(m)
	case "notifications/tasks/status":
		l.taskStatus(m)
	case "notifications/elicitation/complete":
		l.elicitationComplete(m)
	case "notifications/message":
		l.forwardLog(m, related)
	case "notifications/subscriptions/acknowledged":
		// The answer to the main link's own subscriptions/listen (upstreams.go): nobody else's business.
	default:
		l.forwardNotice(m, related, func(*Session) bool { return true })
	}
}

// forwardLog passes an upstream's log message on, with the upstream named in logger so that a client reading
// the merged log of many servers knows where each line comes from, filtered by each session's level.
func (l *link) forwardLog(m jsonrpc.Message, related []byte) {
	params := m.Params()
	name := l.up.cfg.Name
	if lg, ok := jsonrpc.LookupString(params, "logger"); ok && lg != "" {
		name += "/" + lg
	}
	params = setMember(params, "logger", jsonrpc.AppendQuote(nil, name))
	msg, err := jsonrpc.Parse(jsonrpc.AppendNotification(nil, "notifications/message", params))
	if err != nil {
		return
	}
	l.forwardNotice(msg, related, func(s *Session) bool { return s.wantsLog(params) })
}

// forwardNotice passes a notification on to the client it concerns: the call it relates to, the session that
// owns the link, or, on a shared link with no association, every session.
func (l *link) forwardNotice(m jsonrpc.Message, related []byte, want func(*Session) bool) {
	var c *call
	if id, ok := jsonrpc.ParseInt(related); ok {
		c = l.pending.peek(id)
	}
	if c == nil || c.session == nil {
		// No stream association (stdio, or the GET stream): a notification that arrives while exactly one client
		// request is in flight belongs with that request, as it would on a direct connection.
		c = l.pending.soleCaller()
	}
	if c != nil && c.session != nil && !c.out.Closed() {
		if want(c.session) {
			c.out.Push(clone(m.Raw()), ClassNotice)
		}
		return
	}
	if l.owner != nil {
		if want(l.owner) {
			l.owner.notify(clone(m.Raw()))
		}
		return
	}
	if l.up.template() {
		return // the template session serves the catalog only; its per-client twins speak to the clients
	}
	for _, s := range l.r.allSessions() {
		if s.scope.allowsUpstream(context.Background(), l.up) && want(s) { // no request: the session's own policy
			s.notify(clone(m.Raw()))
		}
	}
}

// updated delivers notifications/resources/updated to the sessions subscribed to its URI.
func (l *link) updated(m jsonrpc.Message) {
	uri, ok := jsonrpc.LookupString(m.Params(), "uri")
	if !ok {
		return
	}
	deliver := func(s *Session) {
		named, ok := s.subs.named(l.up, uri)
		switch {
		case !ok:
		case named == uri:
			s.notify(clone(m.Raw()))
		default: // the client subscribed by the namespaced name: its update says that one
			s.notify(m.AppendWith(nil, nil, jsonrpc.ParamEdit{Path: []string{"uri"}, With: jsonrpc.AppendQuote(nil, named)}))
		}
	}
	if l.owner != nil {
		deliver(l.owner)
		return
	}
	if l.up.template() && !l.up.modern() {
		return // a stateless upstream's template link is every client's link
	}
	for _, s := range l.r.allSessions() {
		deliver(s)
	}
}

// taskStatus delivers notifications/tasks/status to the session the task belongs to.
func (l *link) taskStatus(m jsonrpc.Message) {
	id, ok := jsonrpc.LookupString(m.Params(), "taskId")
	if !ok {
		return
	}
	exposed := exposeTask(l.up)(id)
	msg := editString(editString(clone(m.Raw()), exposeTask(l.up), "params", "taskId"), exposeTask(l.up), "params", "_meta", protocol.MetaRelatedTask, "taskId")
	if l.owner != nil {
		l.owner.notify(msg)
		return
	}
	if l.up.template() {
		return
	}
	for _, s := range l.r.allSessions() {
		if s.tasks.has(exposed) {
			s.notify(msg)
		}
	}
}

// elicitationComplete routes notifications/elicitation/complete by its elicitationId.
func (l *link) elicitationComplete(m jsonrpc.Message) {
	id, _ := jsonrpc.LookupString(m.Params(), "elicitationId")
	e := &l.r.elicits
	e.mu.Lock()
	rec, ok := e.m[elicitationKey{l, id}]
	delete(e.m, elicitationKey{l, id})
	e.mu.Unlock()
	switch {
	case ok:
		rec.s.notify(clone(m.Raw()))
	case l.owner != nil:
		l.owner.notify(clone(m.Raw()))
	}
}

// listChanged acts on an upstream's list_changed on l: a client's own upstream session refetches for that client
// (a person's per-user session for the person, connect.go), any other link refreshes the upstream's lists for
// the catalog.
func (l *link) listChanged(kinds ...listKind) {
	s := l.owner
	if s == nil {
		l.up.invalidate(kinds...)
		return
	}
	l.mu.Lock()
	for _, k := range kinds {
		l.relist[k] = true
	}
	busy := l.relisting
	l.relisting = true
	l.mu.Unlock()
	if busy {
		return // the running relister takes these too
	}
	if !l.goWork(func() { s.links.relistChild(s, l) }) {
		l.mu.Lock()
		l.relisting = false
		l.mu.Unlock()
	}
}
