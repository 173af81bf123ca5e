package routing

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/switchboard-mcp/switchboard/routing/state"
	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
	"github.com/switchboard-mcp/switchboard/upstream/protocol"
)

// Resource subscriptions. A per-client upstream session belongs to one client, so its subscriptions pass
// through. A shared upstream session serves everyone: the gateway subscribes once per URI, counts the sessions
// that want it, unsubscribes when the last one leaves, and delivers notifications/resources/updated only to the
// sessions subscribed to that URI.

// subKey names a subscription: the upstream and the URI it knows; a session's subs map it to the URI the client
// subscribed by, which its updates carry back.
type subKey struct {
	up  *upstreamServer
	uri string
}

// subscriptions are one session's resource subscriptions, by subKey, each with the URI the client named.
type subscriptions struct {
	mu sync.Mutex
	m  map[subKey]string
}

// handle handles resources/subscribe and resources/unsubscribe.
func (ss *subscriptions) handle(ctx context.Context, s *Session, m jsonrpc.Message, out *Stream, on bool) {
	uri, ok := jsonrpc.LookupString(m.Params(), "uri")
	if !ok {
		replyError(out, m.ID(), protocol.CodeInvalidParams, m.Method()+" needs params.uri")
		return
	}
	// A subscription is found by the name the client gave it, whatever the catalog calls the resource now.
	key, had := ss.find(uri)
	if !had {
		cat := s.catalog()
		rt, ok := s.scope.resolveURI(cat, uri)
		if !ok || !cat.inViewURI(s.params.Endpoint, uri) || !s.scope.allowsURI(ctx, rt.up, rt.uri) {
			s.scope.noResource(out, m.ID(), cat, uri)
			return
		}
		key = subKey(rt)
	}
	up := key.up
	if _, ok := up.capability("resources"); !ok || !up.subs.can() {
		replyError(out, m.ID(), protocol.CodeMethodNotFound, fmt.Sprintf("upstream %q does not support resource subscriptions", up.cfg.Name))
		return
	}
	// The check and the change happen under one lock, so that concurrent requests of one session count once.
	ss.mu.Lock()
	_, had = ss.m[key]
	changed := on != had
	if changed && on {
		ss.m[key] = uri
	} else if changed {
		delete(ss.m, key)
	}
	ss.mu.Unlock()
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
		if on && up.subs.add(key.uri) || !on && up.subs.drop(key.uri) {
			up.subs.relisten()
		}
		reply(out, m.ID(), []byte("{}"))
		return
	}
	if up.cfg.Mode == Shared {
		if on && !up.subs.add(key.uri) || !on && !up.subs.drop(key.uri) {
			reply(out, m.ID(), []byte("{}")) // the shared session's subscription stays as it is for the others
			return
		}
	}
	var edits []jsonrpc.ParamEdit
	if key.uri != uri {
		edits = append(edits, jsonrpc.ParamEdit{Path: []string{"uri"}, With: jsonrpc.AppendQuote(nil, key.uri)})
	}
	s.forwardWith(ctx, up, m, out, uri, nil, edits...)
}

// find finds the session's subscription the client named uri.
func (ss *subscriptions) find(uri string) (subKey, bool) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	for k, named := range ss.m {
		if named == uri {
			return k, true
		}
	}
	return subKey{}, false
}

// named returns the URI the session subscribed to up's uri by, if it did.
func (ss *subscriptions) named(up *upstreamServer, uri string) (string, bool) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	named, ok := ss.m[subKey{up, uri}]
	return named, ok
}

// release releases a closing session's subscriptions on shared upstreams.
func (ss *subscriptions) release() {
	ss.mu.Lock()
	subs := ss.m
	ss.m = map[subKey]string{}
	ss.mu.Unlock()
	for k := range subs {
		switch up := k.up; {
		case up.modern():
			if up.subs.drop(k.uri) {
				up.subs.relisten()
			}
		case up.cfg.Mode == Shared && up.subs.drop(k.uri):
			up.subs.send(k.uri, false)
		}
	}
}

// restoreOn restores the session's subscriptions on a fresh per-client upstream session.
func (ss *subscriptions) restoreOn(l *link) {
	ss.mu.Lock()
	var uris []string
	for k := range ss.m {
		if k.up == l.up {
			uris = append(uris, k.uri)
		}
	}
	ss.mu.Unlock()
	for _, uri := range uris {
		sendSubOn(l, uri, true)
	}
}

// add records a subscription restored from the session's shared record.
func (ss *subscriptions) add(key subKey, uri string) {
	ss.mu.Lock()
	ss.m[key] = uri
	ss.mu.Unlock()
}

// dropUpstream forgets the subscriptions on an upstream that is going away.
func (ss *subscriptions) dropUpstream(up *upstreamServer) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	for k := range ss.m {
		if k.up == up {
			delete(ss.m, k)
		}
	}
}

// uris are the URIs the client subscribed by, for the session's record.
func (ss *subscriptions) uris() []string {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	uris := make([]string, 0, len(ss.m))
	for _, uri := range ss.m {
		uris = append(uris, uri)
	}
	return uris
}

// sharedSubs are the resource subscriptions an upstream holds for its clients on its main session: counted per
// URI on a shared upstream (subscribed once, unsubscribed when the last session leaves), one listen request on a
// stateless one (listen.go). Its fields are guarded by the upstream's mu.
type sharedSubs struct {
	up    *upstreamServer
	count map[string]int // the sessions subscribed to each URI through the shared session
	// listen ends the subscriptions/listen that carries a stateless upstream's resource updates (listen.go).
	listen context.CancelFunc
}

// can reports whether the upstream declared resources.subscribe.
func (ss *sharedSubs) can() bool {
	ss.up.mu.Lock()
	defer ss.up.mu.Unlock()
	return ss.up.subscribe
}

// add counts one more session subscribed to uri; it reports whether it is the first.
func (ss *sharedSubs) add(uri string) bool {
	ss.up.mu.Lock()
	defer ss.up.mu.Unlock()
	if ss.count == nil {
		ss.count = map[string]int{}
	}
	ss.count[uri]++
	return ss.count[uri] == 1
}

// drop counts one session less; it reports whether it was the last.
func (ss *sharedSubs) drop(uri string) bool {
	ss.up.mu.Lock()
	defer ss.up.mu.Unlock()
	if ss.count[uri] == 0 {
		return false
	}
	ss.count[uri]--
	if ss.count[uri] == 0 {
		delete(ss.count, uri)
		return true
	}
	return false
}

// restore restores the counted subscriptions after the shared session was re-established.
func (ss *sharedSubs) restore() {
	ss.up.mu.Lock()
	uris := make([]string, 0, len(ss.count))
	for uri := range ss.count {
		uris = append(uris, uri)
	}
	ss.up.mu.Unlock()
	for _, uri := range uris {
		ss.send(uri, true)
	}
}

// send (un)subscribes the shared session to uri in the background.
func (ss *sharedSubs) send(uri string, on bool) { sendSubOn(ss.up.main, uri, on) }

// sendSubOn (un)subscribes the upstream session l to uri in the background.
func sendSubOn(l *link, uri string, on bool) {
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
