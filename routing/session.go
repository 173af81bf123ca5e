package routing

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

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
	// Endpoint is the endpoint the session was opened on ("" for the whole catalog): it sees and may call only
	// what the endpoint selects (endpoints.go).
	Endpoint string
	// LogLevel is the level a stateless session's requests asked for ("" for none: no log messages at all).
	LogLevel string
}

// clientCaps are the client capabilities routing acts on.
type clientCaps struct {
	Roots       *struct{} `json:"roots"`
	Sampling    *struct{} `json:"sampling"`
	Elicitation *struct {
		Form *struct{} `json:"form"`
		URL  *struct{} `json:"url"`
	} `json:"elicitation"`
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
	era        era           // what differs with the clients' era: legacyClient or pooledClient
	record     *sharedRecord // the session's record for other replicas; nil when not shared (replicas.go)

	// workers are the goroutines the session starts for its calls (bridge.go); Close waits for them.
	workers sync.WaitGroup

	links clientLinks   // the client's own upstream sessions (per-client upstreams)
	subs  subscriptions // its resource subscriptions (subscribe.go)
	tasks taskSet       // the tasks the client created
	found found         // tools the session's searches found, for SearchMode.ExposeFound (discovery.go)
	// person, when set, holds the principal's own lists of per-user upstreams (persons.go).
	person atomic.Pointer[ownLists]
	// children holds the lists the session's own upstream sessions announced, where they differ from its
	// catalog's (children.go).
	children ownLists
	stats    statsCache // its search statistics for the current catalog (discovery.go)

	scope scope // what its requests may address (scope.go)

	mu       sync.Mutex
	calls    map[callKey]*call
	logLevel int // index into logLevels; -1 when the client set none
	closed   bool
}

// newSessionID returns a fresh session id: 128 random bits.
func newSessionID() string {
	var idb [16]byte
	rand.Read(idb[:])
	return hex.EncodeToString(idb[:])
}

// newSession returns a session of the era mkEra makes.
func newSession(r *Router, p SessionParams, id string, mkEra func(*Session) era) *Session {
	s := &Session{
		r: r, id: id, params: p,
		standalone: r.NewStream(-1, 1024),
		calls:      map[callKey]*call{},
		logLevel:   levelIndex(p.LogLevel),
	}
	s.scope = scope{s: s, seen: map[string]uriRoute{}}
	s.subs.m = map[subKey]string{}
	_ = json.Unmarshal(p.Capabilities, &s.caps)
	s.profile = r.profiles.useProfile(capsProfile(s.caps))
	ctx := r.ctx
	if p.Context != nil {
		ctx = p.Context(ctx)
	}
	s.ctx, s.cancel = context.WithCancel(ctx)
	if p.Principal != "" {
		if own := r.persons.get(p.Principal, false); own != nil {
			s.person.Store(own)
		}
	}
	s.era = mkEra(s)
	s.touch()
	return s
}

func (s *Session) touch() {
	s.lastUsed.Store(time.Now().UnixNano())
	s.record.touch()
}

// logID is a short, non-secret form of the id for logs: the session id is a bearer of state and stays out of logs.
func (s *Session) logID() string { return s.id[:8] }

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

// notify queues a notification on the standalone stream; dropped when the client does not keep up. A stateless
// session has no standalone stream unless it serves a subscriptions/listen request.
func (s *Session) notify(msg []byte) {
	if !s.era.hearsUnrelated() {
		return
	}
	s.standalone.Push(msg, ClassNotice)
}

func (s *Session) removeCall(c *call) {
	s.mu.Lock()
	if s.calls[c.key] == c {
		delete(s.calls, c.key)
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

// forwardWith sends a client's request to an upstream without a pipeline of its own (a subscription, a task
// request): name is the client-visible name it targets ("" for none; see call.name), transform rewrites its
// successful result (see call.transform), edits change its params.
func (s *Session) forwardWith(ctx context.Context, up *upstreamServer, m jsonrpc.Message, out *Stream, name string, transform func([]byte) []byte, edits ...jsonrpc.ParamEdit) {
	f := newForward(s, m, out)
	f.up, f.name, f.transform = up, name, transform
	for _, e := range edits {
		f.edit(e)
	}
	f.write(ctx)
}

// lazyTimeout is a context bounded by d, made on first use.
type lazyTimeout struct {
	parent context.Context
	d      time.Duration
	c      context.Context
	cancel context.CancelFunc
}

func (w *lazyTimeout) ctx() context.Context {
	if w.c == nil {
		w.c, w.cancel = context.WithTimeout(w.parent, w.d)
	}
	return w.c
}

func (w *lazyTimeout) stop() {
	if w.cancel != nil {
		w.cancel()
	}
}

// expire ends a call the upstream did not finish in time: the upstream is told to stop, the client gets an
// error it can act on.
func (c *call) expire() {
	if !c.link.pending.takeIf(c) {
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

// cancelCall handles the client's cancellation of one of its requests: notifications/cancelled, or for a
// modern client the request's closed stream (out).
func (s *Session) cancelCall(out *Stream, params []byte) {
	st, e, ok := jsonrpc.Lookup(params, "requestId")
	if !ok {
		return
	}
	k := s.callKey(out, params[st:e])
	if s.r.code.cancel(s, k) { // code mode: a run_script (codemode.go)
		return
	}
	s.mu.Lock()
	c := s.calls[k]
	delete(s.calls, k)
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
		s.record.relayCancel(params) // the call may run on another replica (handleRelayed never relays again)
	}
	if c == nil || !c.link.pending.takeIf(c) {
		return // unknown, finished, or crossing its response: ignored, as the spec allows
	}
	s.r.inst.endLeg(c, outcomeCancelled)
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

// refuses says why a server→client request cannot go to this client: only clients that declared the
// capability get one (design §4).
func (caps *clientCaps) refuses(m jsonrpc.Message) string {
	switch m.Method() {
	case "sampling/createMessage":
		if caps.Sampling == nil {
			return "the client did not declare the sampling capability"
		}
	case "roots/list":
		if caps.Roots == nil {
			return "the client did not declare the roots capability"
		}
	case "elicitation/create":
		e := caps.Elicitation
		if e == nil {
			return "the client did not declare the elicitation capability"
		}
		if st, en, ok := jsonrpc.Lookup(m.Params(), "mode"); ok && string(m.Params()[st:en]) == `"url"` && e.URL == nil {
			return "the client did not declare URL-mode elicitation"
		}
	}
	return ""
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
		return !s.era.modern()
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

// callKey is how a session finds a client's call: by its id, and for a modern pool entry, which serves many
// clients whose ids may collide, by the stream the answer goes to as well (one stream per request).
type callKey struct {
	out *Stream
	id  string
}

func (s *Session) callKey(out *Stream, id []byte) callKey {
	if !s.era.modern() {
		out = nil // a legacy client's ids are unique in its session, and its cancellations name only the id
	}
	return callKey{out, string(id)}
}

// catalog returns the catalog this session sees: its profile's, with the person's own lists (persons.go) and
// the session's children's (children.go) where it has them.
func (s *Session) catalog() *catalog {
	c := s.sharedCatalog()
	person := s.person.Load()
	if person != nil {
		c = person.catalogFor(s.r, c, s.profile, nil)
	}
	if s.children.live.Load() {
		c = s.children.catalogFor(s.r, c, s.profile, person)
	}
	return c
}

// sharedCatalog is the catalog of the session's profile, before the person's own lists.
func (s *Session) sharedCatalog() *catalog {
	s.r.catchUp()
	if s.profile != "" {
		if p := s.r.profiles.profileCatalog(s.profile); p != nil {
			if c := p.Load(); c != nil {
				return c
			}
		}
	}
	return s.r.cat.Load()
}

// dropUpstream closes the session's per-client session of an upstream that is going away, and forgets its
// subscriptions there.
func (s *Session) dropUpstream(up *upstreamServer) {
	s.subs.dropUpstream(up)
	s.links.drop(up)
	s.children.drop(up) // the catalog's rebuild tells the client
}
