package routing

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"slices"
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

// statelessPool holds the stateless sessions by key.
type statelessPool struct {
	mu sync.Mutex
	m  map[string]*Session
}

// StatelessSession returns the session that serves 2026-07-28 requests of p's principal with p's capabilities and
// log level, starting one when there is none. Principal, Allow and Context are as for NewSession.
func (r *Router) StatelessSession(p SessionParams) *Session {
	p.Stateless = true
	// Toward legacy upstreams the gateway speaks the newest legacy version on the client's behalf.
	p.ProtocolVersion = protocol.LatestLegacy
	if levelIndex(p.LogLevel) < 0 {
		p.LogLevel = ""
	}
	p.Capabilities = canonicalJSON(p.Capabilities)
	// The key is a hash: the pool's map must not keep a second copy of every capabilities object.
	sum := sha256.Sum256([]byte(p.Principal + "\x00" + string(p.Capabilities) + "\x00" + p.LogLevel))
	key := string(sum[:])
	r.pool.mu.Lock()
	defer r.pool.mu.Unlock()
	if r.pool.m == nil {
		r.pool.m = map[string]*Session{}
	}
	if s := r.pool.m[key]; s != nil {
		s.touch()
		return s
	}
	mine := 0
	for _, s := range r.pool.m {
		if s.params.Principal == p.Principal {
			mine++
		}
	}
	switch {
	case mine >= maxStatelessPerPrincipal:
		r.evictIdle(func(s *Session) bool { return s.params.Principal == p.Principal })
	case len(r.pool.m) >= maxStatelessSessions:
		r.evictIdle(func(*Session) bool { return true })
	}
	s := newSession(r, p)
	s.poolKey = key
	r.pool.m[key] = s
	return s
}

// evictIdle closes the least recently used idle pooled session that which selects; r.pool.mu is held.
func (r *Router) evictIdle(which func(*Session) bool) {
	var oldest *Session
	for _, s := range r.pool.m {
		if which(s) && s.InFlight() == 0 && !r.parks.holds(s) && (oldest == nil || s.lastUsed.Load() < oldest.lastUsed.Load()) {
			oldest = s
		}
	}
	if oldest != nil {
		delete(r.pool.m, oldest.poolKey)
		go oldest.Close() // owned by the pool; closing stops children, which takes a while
	}
}

// Listener starts a stateless session of its own for one subscriptions/listen stream: its standalone stream
// carries the list changes and resource updates the stream asked for. The caller closes it when the stream ends.
func (r *Router) Listener(p SessionParams) *Session {
	p.Stateless = true
	p.ProtocolVersion = protocol.LatestLegacy
	p.LogLevel = ""
	s := newSession(r, p)
	s.listener = true
	r.mu.Lock()
	r.sessions[s.id] = s // list changes reach it like any session; it is never stored
	r.mu.Unlock()
	return s
}

// unpool forgets a closing stateless session.
func (r *Router) unpool(s *Session) {
	r.pool.mu.Lock()
	if r.pool.m[s.poolKey] == s {
		delete(r.pool.m, s.poolKey)
	}
	r.pool.mu.Unlock()
}

// statelessSessions lists the pooled sessions.
func (r *Router) statelessSessions() []*Session {
	r.pool.mu.Lock()
	defer r.pool.mu.Unlock()
	out := make([]*Session, 0, len(r.pool.m))
	for _, s := range r.pool.m {
		out = append(out, s)
	}
	return out
}

// expireStateless closes pooled sessions idle for the session idle timeout.
func (r *Router) expireStateless(now time.Time) {
	cutoff := now.Add(-r.opts.SessionIdleTimeout).UnixNano()
	for _, s := range r.statelessSessions() {
		if s.lastUsed.Load() < cutoff && s.InFlight() == 0 && !r.parks.holds(s) {
			s.Close()
			continue
		}
		s.closeIdleLinks(now)
	}
}

// MintID returns a request id unique within the session, for a front end whose clients' own ids may collide
// (stateless clients sharing one session).
func (s *Session) MintID() []byte {
	b := append(make([]byte, 0, 24), `"sb-`...)
	return append(jsonrpc.AppendInt(b, s.minted.Add(1)), '"')
}

// Stateless reports whether the session serves clients of the 2026-07-28 era.
func (s *Session) Stateless() bool { return s.params.Stateless }

// Cancel ends one of the session's requests in flight, as the client's notifications/cancelled would: for a
// stateless client, closing the request's stream is its cancellation.
func (s *Session) Cancel(id []byte, reason string) {
	s.cancelCall(cancelledParams(id, reason))
}

// stateless reports whether the upstream speaks the 2026-07-28 era.
func (up *Upstream) stateless() bool {
	up.mu.Lock()
	defer up.mu.Unlock()
	return up.hello != nil && up.hello.ProtocolVersion >= protocol.Modern
}

// legacyLinks reports whether legacy clients of this stateless upstream get per-client legacy sessions rather
// than the shared stateless link: for a stdio upstream that speaks both eras, as an SDK-built server does. Its
// tools may well send server→client requests, which its SDK refuses in the stateless era; over a legacy session
// they work, as they would for the client directly. (Over HTTP, a server that lists both eras is a stateless one,
// whose legacy sessions could carry no server→client requests at all: there the stateless link and the
// input_required bridge serve legacy clients better.)
func (up *Upstream) legacyLinks() bool {
	if up.cfg.Mode != PerClient || up.cfg.Kind != "stdio" || up.cfg.Protocol == "modern" {
		return false
	}
	up.mu.Lock()
	defer up.mu.Unlock()
	return up.hello != nil && up.hello.Stateless() && slices.Contains(up.hello.SupportedVersions, protocol.LatestLegacy)
}

// modern reports whether the link's current connection speaks the stateless era.
func (l *link) modern() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.conn != nil && l.conn.Server.Stateless()
}

// adaptMeta makes a request's _meta speak the upstream's era. A legacy upstream learnt the client's version,
// capabilities and level in initialize; the stateless era's keys would only mislead it (some servers decide per
// request, from _meta, which era they serve). A stateless upstream needs them on every request: a legacy client's
// capabilities and level come from its session.
func (s *Session) adaptMeta(l *link, m jsonrpc.Message) jsonrpc.Message {
	params := m.Params()
	if params == nil {
		params = []byte(`{}`)
	}
	st, e, hasMeta := jsonrpc.Lookup(params, "_meta")
	var out []byte
	if l.modern() {
		meta := []byte(`{}`)
		if hasMeta {
			meta = params[st:e]
		}
		edited := meta
		if v, ok := jsonrpc.LookupString(meta, protocol.MetaProtocolVersion); !ok || v != protocol.Modern {
			edited = jsonrpc.SetMember(edited, protocol.MetaProtocolVersion, []byte(`"`+protocol.Modern+`"`))
		}
		if _, _, ok := jsonrpc.Lookup(meta, protocol.MetaClientCapabilities); !ok {
			caps := s.params.Capabilities
			if len(caps) == 0 {
				caps = json.RawMessage(`{}`)
			}
			edited = jsonrpc.SetMember(edited, protocol.MetaClientCapabilities, caps)
		}
		if _, _, ok := jsonrpc.Lookup(meta, protocol.MetaClientInfo); !ok && len(s.params.ClientInfo) > 0 {
			edited = jsonrpc.SetMember(edited, protocol.MetaClientInfo, s.params.ClientInfo)
		}
		s.mu.Lock()
		level := s.logLevel
		s.mu.Unlock()
		if _, _, ok := jsonrpc.Lookup(meta, protocol.MetaLogLevel); !ok && level >= 0 {
			edited = jsonrpc.SetMember(edited, protocol.MetaLogLevel, []byte(`"`+logLevels[level]+`"`))
		}
		if hasMeta && len(edited) == len(meta) && &edited[0] == &meta[0] {
			return m // a stateless client's own request, already complete: the common case costs no copy
		}
		out = jsonrpc.SetMember(params, "_meta", edited)
	} else {
		if !hasMeta {
			return m
		}
		meta := jsonrpc.DeleteMembers(params[st:e], protocol.MetaProtocolVersion, protocol.MetaClientCapabilities, protocol.MetaClientInfo, protocol.MetaLogLevel)
		if len(meta) == e-st && &meta[0] == &params[st] {
			return m
		}
		if string(meta) == "{}" {
			out = jsonrpc.DeleteMembers(params, "_meta")
		} else {
			out = jsonrpc.SetMember(params, "_meta", meta)
		}
	}
	msg, err := jsonrpc.Parse(jsonrpc.AppendRequest(nil, m.ID(), m.Method(), out))
	if err != nil {
		return m
	}
	return msg
}

// canonicalJSON re-encodes a JSON value with sorted keys and no spaces, so equal capability objects make equal
// pool keys; invalid or empty input becomes {}.
func canonicalJSON(raw json.RawMessage) json.RawMessage {
	var v any
	if len(bytes.TrimSpace(raw)) == 0 || json.Unmarshal(raw, &v) != nil {
		return json.RawMessage(`{}`)
	}
	if _, ok := v.(map[string]any); !ok {
		return json.RawMessage(`{}`)
	}
	out, err := json.Marshal(v)
	if err != nil {
		return json.RawMessage(`{}`)
	}
	return out
}

// sortedKeys returns a map's keys in order, for deterministic output.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// statelessRequest handles what differs for a stateless session's request, reporting whether it did: the methods
// 2026-07-28 removed, and the retries of parked calls.
func (s *Session) statelessRequest(ctx context.Context, m jsonrpc.Message, out *Stream) bool {
	switch m.Method() {
	case "initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe",
		"tasks/list", "tasks/result", "tasks/get", "tasks/cancel":
		replyError(out, m.ID(), protocol.CodeMethodNotFound, fmt.Sprintf("method %q does not exist in protocol version %s", m.Method(), protocol.Modern))
		return true
	case "tools/call", "prompts/get", "resources/read":
		if state, ok := jsonrpc.LookupString(m.Params(), "requestState"); ok && IsGatewayState(state) {
			s.resume(ctx, m, out, state)
			return true
		}
	}
	return false
}

// Subscribe subscribes a listener session to a resource's updates, reporting whether an upstream honours it.
func (s *Session) Subscribe(ctx context.Context, uri string) bool {
	params := append(append([]byte(`{"uri":`), jsonrpc.AppendQuote(nil, uri)...), '}')
	m, err := jsonrpc.Parse(jsonrpc.AppendRequest(nil, s.MintID(), "resources/subscribe", params))
	if err != nil {
		return false
	}
	out := s.r.NewStream(1, 0)
	s.subscribe(ctx, m, out, true)
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for {
		msg, final, ok := out.Next(ctx)
		if !ok {
			return false
		}
		if final {
			answer, err := jsonrpc.Parse(msg)
			return err == nil && answer.Result() != nil
		}
	}
}
