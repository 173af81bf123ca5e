package routing

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"time"

	"github.com/switchboard-mcp/switchboard/upstream"
)

// clientLinks are the upstream sessions a client has of its own, one per per-client upstream it used: started
// on first use, closed when idle for their upstream's idle timeout and with the client (design §3). Stdio
// children are the classic leak of gateways; this is where they are counted and stopped.
//
// Its lock is its own, never held with the session's or a link's.
type clientLinks struct {
	mu sync.Mutex
	m  map[*upstreamServer]*link
	// resumable maps an upstream's name to "<protocol> <session id>": an HTTP upstream session another replica
	// recorded for this client, which the first link attaches to instead of starting afresh.
	resumable map[string]string
	closed    bool
}

// peek returns the client's link to up without marking it used.
func (cl *clientLinks) peek(up *upstreamServer) *link {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	return cl.m[up]
}

// all returns the client's links.
func (cl *clientLinks) all() []*link {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	out := make([]*link, 0, len(cl.m))
	for _, l := range cl.m {
		out = append(out, l)
	}
	return out
}

// open returns the client's link to up, starting one with hello under s's context on first use.
func (cl *clientLinks) open(s *Session, up *upstreamServer, hello upstream.ClientHello) (*link, error) {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if l := cl.m[up]; l != nil {
		l.lastUsed.Store(time.Now().UnixNano())
		return l, nil
	}
	if cl.closed {
		return nil, errSessionClosed
	}
	if up.removed.Load() {
		return nil, &removedError{Upstream: up.cfg.Name}
	}
	if n := up.cfg.MaxInstances; n > 0 && int(up.instances.Load()) >= n {
		return nil, &instanceLimitError{Upstream: up.cfg.Name, Max: n}
	}
	up.instances.Add(1)
	l := newLink(s.r, up, s, hello)
	if v, ok := cl.resumable[up.cfg.Name]; ok {
		delete(cl.resumable, up.cfg.Name)
		// Another replica may use the same upstream session: the link's random id start keeps the two apart.
		l.resumeProto, l.resumeSID, _ = strings.Cut(v, " ")
	}
	l.start(s.ctx)
	if cl.m == nil {
		cl.m = map[*upstreamServer]*link{}
	}
	cl.m[up] = l
	return l, nil
}

// resumes reports whether an upstream session recorded elsewhere is known for the upstream named name.
func (cl *clientLinks) resumes(name string) bool {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	_, ok := cl.resumable[name]
	return ok
}

// resume notes an upstream session recorded by another replica, unless the client has a link to up already.
func (cl *clientLinks) resume(up *upstreamServer, v string) {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if _, linked := cl.m[up]; linked {
		return
	}
	if cl.resumable == nil {
		cl.resumable = map[string]string{}
	}
	cl.resumable[up.cfg.Name] = v
}

// drop closes the client's link to up, if any: the upstream was removed or replaced.
func (cl *clientLinks) drop(up *upstreamServer) {
	cl.mu.Lock()
	l := cl.m[up]
	delete(cl.m, up)
	cl.mu.Unlock()
	if l != nil {
		l.close()
		up.instances.Add(-1)
	}
}

// closeIdle closes the links unused for their upstream's idle timeout, and returns their upstreams.
func (cl *clientLinks) closeIdle(now time.Time) []*upstreamServer {
	cl.mu.Lock()
	candidates := make(map[*upstreamServer]*link, len(cl.m))
	for up, l := range cl.m {
		if up.cfg.IdleTimeout > 0 {
			candidates[up] = l
		}
	}
	cl.mu.Unlock()
	var idle []*link
	for up, l := range candidates { // a link's lock is never taken under this one
		if !l.idle(now.Add(-up.cfg.IdleTimeout).UnixNano()) {
			continue
		}
		cl.mu.Lock()
		if cl.m[up] == l {
			delete(cl.m, up)
			idle = append(idle, l)
		}
		cl.mu.Unlock()
	}
	ups := make([]*upstreamServer, 0, len(idle))
	for _, l := range idle {
		l.log.Info("closing idle per-client upstream session")
		l.close()
		l.up.instances.Add(-1)
		ups = append(ups, l.up)
	}
	return ups
}

// closeAll closes every link, in parallel (a stdio child takes a while to stop), and refuses new ones.
func (cl *clientLinks) closeAll() {
	cl.mu.Lock()
	cl.closed = true
	links := cl.m
	cl.m = nil
	cl.mu.Unlock()
	var wg sync.WaitGroup
	for up, l := range links {
		wg.Go(func() {
			l.close()
			up.instances.Add(-1)
		})
	}
	wg.Wait()
}

// snapshot returns a copy of the client's links by upstream.
func (cl *clientLinks) snapshot() map[*upstreamServer]*link {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	out := make(map[*upstreamServer]*link, len(cl.m))
	for up, l := range cl.m {
		out[up] = l
	}
	return out
}

// warm starts, once the client has said it is initialized, its own sessions of the per-client upstreams known to
// ask for roots (their catalog session asked, or a client's did), when the client declared roots and its view
// shows one of their tools: such a server applies the roots it is given asynchronously (server-filesystem
// resolves every root on the disk first), and a first call made as it starts would find them missing. Started
// now, the session has the roots long before a client's first call in general; awaitRoots covers one that
// calls at once. Upstreams the client cannot use get no process of its own.
func (cl *clientLinks) warm(s *Session) {
	if s.caps.Roots == nil || s.era.modern() {
		return
	}
	var ups []*upstreamServer
	for _, up := range s.r.upstreams() {
		if up.template() && up.asksRoots.Load() && !up.perUser() && !up.removed.Load() && s.links.peek(up) == nil {
			ups = append(ups, up)
		}
	}
	if len(ups) == 0 {
		return
	}
	cat := s.catalog()
	ctx := context.Background() // the session's own policy: no request's
	for _, up := range ups {
		shown := false
		for name, t := range cat.tools {
			if t.up == up && t.withheld == nil && cat.inView(s.params.Endpoint, kindTools, name) && s.scope.allows(ctx, up, kindTools, t.name) {
				shown = true
				break
			}
		}
		if !shown {
			continue
		}
		if _, err := s.links.linkFor(s, up); err != nil {
			s.r.log.Debug("per-client upstream session not started ahead of use", "upstream", up.cfg.Name, "err", err)
		}
	}
}

// usesMain reports whether the session reaches up through the upstream's main session, shared by every client,
// rather than through one of its own. A stateless upstream keeps nothing per client: every request carries the
// client's capabilities.
func (cl *clientLinks) usesMain(s *Session, up *upstreamServer) bool {
	return up.cfg.Mode == Shared || up.modern() && (s.era.modern() || !up.legacyLinks())
}

// linkFor returns the upstream session that serves this client for up, starting a per-client one on first use.
func (cl *clientLinks) linkFor(s *Session, up *upstreamServer) (*link, error) {
	if cl.usesMain(s, up) {
		return up.main, nil
	}
	if l := cl.peek(up); l != nil {
		// The common call: its link is open. The hello for a new one is not made.
		l.lastUsed.Store(time.Now().UnixNano())
		return l, nil
	}
	if up.cfg.Kind == "http" {
		s.record.latestUpstreamSession(up) // a store read, outside any lock, only when a link is to be made
	}
	caps := s.params.Capabilities
	if len(caps) == 0 {
		caps = json.RawMessage(`{}`)
	}
	return cl.open(s, up, upstream.ClientHello{
		ProtocolVersion: s.params.ProtocolVersion,
		Capabilities:    caps,
		ClientInfo:      s.r.clientInfo(),
		Legacy:          up.modern(), // a legacy client's own session of an upstream that speaks both eras
	})
}

// connected brings a fresh per-client upstream session up to the client's state.
func (cl *clientLinks) connected(s *Session, l *link) {
	if s.children.has(l.up) {
		l.listChanged(kindTools, kindPrompts, kindResources, kindTemplates) // a new child: are its lists still its own?
	}
	if l.up.perUser() {
		l.goWork(func() { s.r.grants.cacheLists(s, l) }) // the person's own view, for the catalog of those not connected yet
	}
	prep := l.prepared()
	s.record.recordUpstreamSession(l)
	s.subs.restoreOn(l)
	s.mu.Lock()
	level := s.logLevel
	s.mu.Unlock()
	_, logs := l.up.capability("logging")
	setLevel := level >= 0 && logs
	waitRoots := s.caps.Roots != nil && !s.era.modern()
	if !setLevel && !waitRoots {
		l.setUp(prep)
		return
	}
	// The reader runs once connected returns, so what the calls wait for is awaited here, in the background;
	// calls wait on prep meanwhile (bounded by their own timeout).
	started := l.goWork(func() { // bounded by the link's context, the request timeout and rootsAnswerWait
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
	})
	if !started {
		l.setUp(prep) // the link closed: its calls fail, none may wait
	}
}
