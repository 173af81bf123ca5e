package routing

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/switchboard-mcp/switchboard/routing/state"
	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
	"github.com/switchboard-mcp/switchboard/upstream/protocol"
)

// Resource subscriptions. A per-client upstream session belongs to one client, so its subscriptions pass
// through. A shared upstream session serves everyone: the gateway subscribes once per URI, counts the sessions
// that want it, unsubscribes when the last one leaves, and delivers notifications/resources/updated only to the
// sessions subscribed to that URI.

// subscribe handles resources/subscribe and resources/unsubscribe.
func (s *Session) subscribe(ctx context.Context, m jsonrpc.Message, out *Stream, on bool) {
	uri, ok := jsonrpc.LookupString(m.Params(), "uri")
	if !ok {
		replyError(out, m.ID(), protocol.CodeInvalidParams, m.Method()+" needs params.uri")
		return
	}
	s.mu.Lock()
	up, had := s.subs[uri]
	s.mu.Unlock()
	if !had {
		if up = s.resourceUpstream(uri); up == nil || !s.catalog().inViewURI(s.params.Endpoint, uri) || !s.allowsURI(ctx, up, uri) {
			notFound(out, m.ID(), uri)
			return
		}
	}
	if _, ok := up.capability("resources"); !ok || !up.canSubscribe() {
		replyError(out, m.ID(), protocol.CodeMethodNotFound, fmt.Sprintf("upstream %q does not support resource subscriptions", up.cfg.Name))
		return
	}
	// The check and the change happen under one lock, so that concurrent requests of one session count once.
	s.mu.Lock()
	_, had = s.subs[uri]
	changed := on != had
	if changed && on {
		s.subs[uri] = up
	} else if changed {
		delete(s.subs, uri)
	}
	s.mu.Unlock()
	if !changed {
		reply(out, m.ID(), []byte("{}")) // already so: both are idempotent
		return
	}
	s.record.update(func(rec *state.SessionRecord) {
		rec.Subscriptions = slices.DeleteFunc(rec.Subscriptions, func(u string) bool { return u == uri })
		if on {
			rec.Subscriptions = append(rec.Subscriptions, uri)
		}
	})
	if up.modern() {
		// No resources/subscribe in 2026-07-28: the upstream's resource listen is widened or narrowed instead.
		if on && up.addSub(uri) || !on && up.dropSub(uri) {
			up.relisten()
		}
		reply(out, m.ID(), []byte("{}"))
		return
	}
	if up.cfg.Mode == Shared {
		if on && !up.addSub(uri) || !on && !up.dropSub(uri) {
			reply(out, m.ID(), []byte("{}")) // the shared session's subscription stays as it is for the others
			return
		}
	}
	s.forwardWith(ctx, up, m, out, uri, nil)
}

// subscribed reports whether the session wants updates of uri from up.
func (s *Session) subscribed(up *Upstream, uri string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.subs[uri] == up
}

// dropSubscriptions releases a closing session's subscriptions on shared upstreams.
func (s *Session) dropSubscriptions() {
	s.mu.Lock()
	subs := s.subs
	s.subs = map[string]*Upstream{}
	s.mu.Unlock()
	for uri, up := range subs {
		switch {
		case up.modern():
			if up.dropSub(uri) {
				up.relisten()
			}
		case up.cfg.Mode == Shared && up.dropSub(uri):
			up.sendSub(uri, false)
		}
	}
}

// resubscribe restores the session's subscriptions on a fresh per-client upstream session.
func (s *Session) resubscribe(l *link) {
	s.mu.Lock()
	var uris []string
	for uri, up := range s.subs {
		if up == l.up {
			uris = append(uris, uri)
		}
	}
	s.mu.Unlock()
	for _, uri := range uris {
		l.up.sendSubOn(l, uri, true)
	}
}

// canSubscribe reports whether the upstream declared resources.subscribe.
func (up *Upstream) canSubscribe() bool {
	up.mu.Lock()
	defer up.mu.Unlock()
	return up.subscribe
}

// addSub counts one more session subscribed to uri; it reports whether it is the first.
func (up *Upstream) addSub(uri string) bool {
	up.mu.Lock()
	defer up.mu.Unlock()
	up.subs[uri]++
	return up.subs[uri] == 1
}

// dropSub counts one session less; it reports whether it was the last.
func (up *Upstream) dropSub(uri string) bool {
	up.mu.Lock()
	defer up.mu.Unlock()
	if up.subs[uri] == 0 {
		return false
	}
	up.subs[uri]--
	if up.subs[uri] == 0 {
		delete(up.subs, uri)
		return true
	}
	return false
}

// resubscribeShared restores the counted subscriptions after the shared session was re-established.
func (up *Upstream) resubscribeShared() {
	up.mu.Lock()
	uris := make([]string, 0, len(up.subs))
	for uri := range up.subs {
		uris = append(uris, uri)
	}
	up.mu.Unlock()
	for _, uri := range uris {
		up.sendSub(uri, true)
	}
}

// sendSub (un)subscribes the shared session to uri in the background.
func (up *Upstream) sendSub(uri string, on bool) { up.sendSubOn(up.main, uri, on) }

func (up *Upstream) sendSubOn(l *link, uri string, on bool) {
	method := "resources/unsubscribe"
	if on {
		method = "resources/subscribe"
	}
	params := append(append([]byte(`{"uri":`), jsonrpc.AppendQuote(nil, uri)...), '}')
	l.goWork(func() { // bounded by the link's context and a timeout
		ctx, cancel := context.WithTimeout(l.ctx, 30*time.Second)
		defer cancel()
		if _, err := l.request(ctx, method, params); err != nil {
			l.log.Debug(method+" failed", "uri", uri, "err", err)
		}
	})
}

// updated delivers notifications/resources/updated to the sessions subscribed to its URI.
func (l *link) updated(m jsonrpc.Message) {
	uri, ok := jsonrpc.LookupString(m.Params(), "uri")
	if !ok {
		return
	}
	if l.owner != nil {
		if l.owner.subscribed(l.up, uri) {
			l.owner.notify(clone(m.Raw()))
		}
		return
	}
	if l.up.template() && !l.up.modern() {
		return // a stateless upstream's template link is every client's link
	}
	l.r.eachSession(func(s *Session) {
		if s.subscribed(l.up, uri) {
			s.notify(clone(m.Raw()))
		}
	})
}

func notFound(out *Stream, id []byte, uri string) {
	notFoundCode(out, id, uri, protocol.CodeResourceNotFound)
}

// notFoundCode is notFound with the code of the client's era: 2026-07-28 retired -32002 for -32602.
func notFoundCode(out *Stream, id []byte, uri string, code int) {
	out.Push(jsonrpc.AppendError(nil, id, code, fmt.Sprintf("resource %q not found on any upstream", uri),
		append(append([]byte(`{"uri":`), jsonrpc.AppendQuote(nil, uri)...), '}')), ClassFinal)
}
