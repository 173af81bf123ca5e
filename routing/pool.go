package routing

import (
	"context"
	"crypto/sha256"
	"fmt"
	"sync"
	"time"

	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
	"github.com/switchboard-mcp/switchboard/upstream/protocol"
)

// The 2026-07-28 era is stateless: a client carries its protocol version, capabilities and log level in every
// request's _meta instead of a session (design §6). The gateway still needs something session-shaped to hold the
// per-client upstream sessions of legacy upstreams (a stdio child per client) and the calls in flight, so it keeps
// one stateless Session per (principal, capabilities, log level), shared by every request that carries the same
// triple and closed when idle. Such a session is never stored, never named to the client and hears only what
// relates to a request.

// maxStatelessSessions bounds the pool: a client that invents capability objects must not make the gateway
// start children without end. Past it, the least recently used idle session is closed.
const maxStatelessSessions = 256

// maxStatelessPerPrincipal bounds one principal's share of the pool: past it, that principal's least recently
// used idle session is closed, never another principal's. So one caller inventing capability objects cannot
// evict the others' sessions (and their per-client children). The front end bounds a capabilities object's
// size (16 KiB), so the pool keeps at most 256 of them.
const maxStatelessPerPrincipal = 16

// modernPool holds the stateless sessions of 2026-07-28 clients by key: it starts them, evicts the idle ones
// past its bounds, and closes those idle past the session idle timeout.
type modernPool struct {
	// spawn starts a session of the router's with the era newEra makes (newSession).
	spawn func(p SessionParams, newEra func(*Session) era) *Session
	parks *parkTable      // a session with a parked call is not idle
	idle  time.Duration   // Options.SessionIdleTimeout
	gone  *sync.WaitGroup // evicted sessions being closed; Run waits for them

	mu sync.Mutex
	m  map[string]*Session
}

// PooledSession returns the session that serves 2026-07-28 requests of p's principal with p's capabilities and
// log level, starting one when there is none. Principal, Allow and Context are as for NewSession.
func (pl *modernPool) PooledSession(p SessionParams) *Session {
	// Toward legacy upstreams the gateway speaks the newest legacy version on the client's behalf.
	p.ProtocolVersion = protocol.LatestLegacy
	if levelIndex(p.LogLevel) < 0 {
		p.LogLevel = ""
	}
	p.Capabilities = canonicalJSON(p.Capabilities)
	// The key is a hash: the pool's map must not keep a second copy of every capabilities object.
	sum := sha256.Sum256([]byte(p.Principal + "\x00" + string(p.Capabilities) + "\x00" + p.LogLevel + "\x00" + p.Endpoint))
	key := string(sum[:])
	pl.mu.Lock()
	defer pl.mu.Unlock()
	if pl.m == nil {
		pl.m = map[string]*Session{}
	}
	if s := pl.m[key]; s != nil {
		// The session applies the policy its latest request brought, not its first's: the caller's claims may
		// have changed with a new token (a request that carries its own, WithAllow, is judged by that).
		s.scope.allowNow.Store(&p.Allow)
		s.touch()
		return s
	}
	mine := 0
	for _, s := range pl.m {
		if s.params.Principal == p.Principal {
			mine++
		}
	}
	switch {
	case mine >= maxStatelessPerPrincipal:
		pl.evictIdle(func(s *Session) bool { return s.params.Principal == p.Principal })
	case len(pl.m) >= maxStatelessSessions:
		pl.evictIdle(func(*Session) bool { return true })
	}
	s := pl.spawn(p, func(s *Session) era { return &pooledClient{s: s, key: key} })
	pl.m[key] = s
	return s
}

// evictIdle closes the least recently used idle pooled session that which selects; pl.mu is held.
func (pl *modernPool) evictIdle(which func(*Session) bool) {
	var oldest *Session
	for _, s := range pl.m {
		if which(s) && s.InFlight() == 0 && !pl.parks.holds(s) && (oldest == nil || s.lastUsed.Load() < oldest.lastUsed.Load()) {
			oldest = s
		}
	}
	if oldest != nil {
		delete(pl.m, oldest.era.(*pooledClient).key)
		pl.gone.Go(oldest.Close) // closing stops children, which takes a while; Run waits for it
	}
}

// unpool forgets a closing pooled session.
func (pl *modernPool) unpool(s *Session, key string) {
	pl.mu.Lock()
	if pl.m[key] == s {
		delete(pl.m, key)
	}
	pl.mu.Unlock()
}

// pooledSessions lists the pooled sessions.
func (pl *modernPool) pooledSessions() []*Session {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	out := make([]*Session, 0, len(pl.m))
	for _, s := range pl.m {
		out = append(out, s)
	}
	return out
}

// expirePooled closes pooled sessions idle for the session idle timeout.
func (pl *modernPool) expirePooled(now time.Time) {
	cutoff := now.Add(-pl.idle).UnixNano()
	for _, s := range pl.pooledSessions() {
		if s.lastUsed.Load() < cutoff && s.InFlight() == 0 && !pl.parks.holds(s) {
			s.Close()
			continue
		}
		for _, up := range s.links.closeIdle(now) {
			s.links.childGone(s, up)
		}
	}
}

// pooledClient is the era of a session in the pool of modern clients: many clients' stateless requests that
// share a principal, capabilities and log level (or one subscriptions/listen stream: a listener).
type pooledClient struct {
	s        *Session
	key      string // where the router's pool keeps it ("" for a listener, which is not pooled)
	listener bool   // serves one subscriptions/listen stream, on its standalone stream
}

var _ era = (*pooledClient)(nil)

func (pc *pooledClient) modern() bool { return true }

// hearsUnrelated: only a listener has a stream for what relates to no request.
func (pc *pooledClient) hearsUnrelated() bool { return pc.listener }

// serverRequest parks the upstream's request: a modern client is asked through an input_required result
// (mrtr.go).
func (pc *pooledClient) serverRequest(l *link, m jsonrpc.Message, rel *call) {
	pc.s.r.parkTable.park(pc.s, l, m, rel)
}

// serverRequestCancelled withdraws the request from its park: it waits there, not on a stream.
func (pc *pooledClient) serverRequestCancelled(l *link, m jsonrpc.Message) {
	if st, e, ok := jsonrpc.Lookup(m.Params(), "requestId"); ok {
		pc.s.r.parkTable.withdraw(pc.s, l, m.Params()[st:e])
	}
}

// linkLost: a parked request of a lost link fails with its call.
func (pc *pooledClient) linkLost(*link) {}

// answer: a modern client is never sent a request, so a response from it answers nothing.
func (pc *pooledClient) answer(jsonrpc.Message) {}

func (pc *pooledClient) closing() {
	if !pc.listener {
		pc.s.r.unpool(pc.s, pc.key)
	}
}

// preempt handles what differs for a modern request, reporting whether it did: the methods 2026-07-28 removed,
// and the retries of parked calls.
func (pc *pooledClient) preempt(ctx context.Context, m jsonrpc.Message, out *Stream) bool {
	switch m.Method() {
	case "initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe":
		replyError(out, m.ID(), protocol.CodeMethodNotFound, fmt.Sprintf("method %q does not exist in protocol version %s", m.Method(), protocol.Modern))
		return true
	case "tasks/list", "tasks/result":
		// "tasks/result is removed … Servers MUST reject the method with -32601"; so is tasks/list.
		taskMethodError(out, m)
		return true
	case "tasks/get", "tasks/update", "tasks/cancel":
		pc.s.r.tasks.modernTaskRequest(ctx, pc.s, m, out)
		return true
	case "tools/call", "prompts/get", "resources/read":
		if state, ok := jsonrpc.LookupString(m.Params(), "requestState"); ok && pc.s.r.OwnsState(state) {
			if m.MethodIs("tools/call") && pc.s.r.code.resume(pc.s, m, out, state) { // code mode's question (codemodeinput.go)
				return true
			}
			if m.MethodIs("tools/call") && pc.hostTaskRetry(ctx, m, out, state) {
				return true
			}
			pc.resume(ctx, m, out, state)
			return true
		}
	}
	return false
}
