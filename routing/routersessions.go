package routing

// The router's table of client sessions: starting one (NewSession, a stateless Listener), claiming one by id
// (ClaimSession, restoring one another replica started), finding and counting them, and telling them of a person's own lists.

import (
	"context"
	"errors"
	"fmt"

	"github.com/switchboard-mcp/switchboard/routing/state"
	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
	"github.com/switchboard-mcp/switchboard/upstream/protocol"
)

// NewSession starts a client session for a client that sent initialize. The caller has negotiated version.
func (r *Router) NewSession(p SessionParams) *Session {
	s := newSession(r, p, newSessionID(), func(s *Session) era { return newLegacyClient(s) })
	r.share(s)
	r.catchUp() // before it is counted: it hears of the changes after it started, not of the start's
	r.mu.Lock()
	r.sessions[s.id] = s
	r.mu.Unlock()
	return s
}

// Session returns the live session with the id, or nil.
func (r *Router) Session(id string) *Session {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sessions[id]
}

// SessionCount reports the live client sessions.
func (r *Router) SessionCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.sessions)
}

func (r *Router) dropSession(s *Session) {
	r.mu.Lock()
	if r.sessions[s.id] == s { // a copy that lost a restore race must not drop the one that won
		delete(r.sessions, s.id)
	}
	r.mu.Unlock()
}

func (r *Router) allSessions() []*Session {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]*Session, 0, len(r.sessions))
	for _, s := range r.sessions {
		out = append(out, s)
	}
	return out
}

// Listener starts a stateless session of its own for one subscriptions/listen stream: its standalone stream
// carries the list changes and resource updates the stream asked for. The caller closes it when the stream ends.
func (r *Router) Listener(p SessionParams) *Session {
	p.ProtocolVersion = protocol.LatestLegacy
	p.LogLevel = ""
	s := newSession(r, p, newSessionID(), func(s *Session) era { return &pooledClient{s: s, listener: true} })
	r.catchUp() // as NewSession
	r.mu.Lock()
	r.sessions[s.id] = s // list changes reach it like any session; it is never stored
	r.mu.Unlock()
	return s
}

// errStoreUnavailable reports that the shared state store could not be asked: whether a session exists elsewhere
// is unknown, so the caller must not be told it does not (a client told 404 must start over).
var errStoreUnavailable = errors.New("the shared session store is unavailable")

// A Claim is a request's claim on the session its id names. A session is served only to the principal that
// started it, on the endpoint it started on: "sessions MUST NOT be used for authentication", so a session id
// presented with another principal's token, or at another endpoint, is no session for that request.
type Claim struct {
	ID, Principal, Endpoint string
	// Caller is the claimant's policy and context decoration (as NewSession's), asked only when the session is
	// restored from the store.
	Caller func(context.Context) (Allow, func(context.Context) context.Context)
	// Restored, when set, is told of a session this replica restored from the store, before it serves anything.
	Restored func(*Session)
}

// ClaimSession returns the session a claim names: the one held here, else one another replica started, restored
// from the shared store. It returns nil when there is no such session for the claimant, and an error when the
// store cannot tell.
func (r *Router) ClaimSession(ctx context.Context, c Claim) (*Session, error) {
	s := r.Session(c.ID)
	if s == nil && r.opts.Store != nil {
		var err error
		if s, err = r.restoreSession(ctx, c); err != nil {
			return nil, err
		}
	}
	if s == nil || s.params.Principal != c.Principal || s.params.Endpoint != c.Endpoint {
		return nil, nil
	}
	return s, nil
}

// restoreSession builds here a session this replica does not hold from its record in the store, if the record's
// principal and endpoint are the claim's.
func (r *Router) restoreSession(ctx context.Context, c Claim) (*Session, error) {
	id := c.ID
	ctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	rec, err := r.opts.Store.Get(ctx, id)
	if err != nil {
		if errors.Is(err, state.ErrNotFound) {
			return nil, nil
		}
		r.log.Warn("session lookup in the store failed", "err", err)
		return nil, fmt.Errorf("%w: %w", errStoreUnavailable, err)
	}
	if rec.Principal != c.Principal || rec.Endpoint != c.Endpoint {
		return nil, nil // another principal's session, or another endpoint's, is no session for this claim
	}
	var allow Allow
	var decorate func(context.Context) context.Context
	if c.Caller != nil {
		allow, decorate = c.Caller(ctx)
	}
	s := newSession(r, SessionParams{
		ProtocolVersion: rec.ProtocolVersion, Capabilities: rec.Capabilities, ClientInfo: rec.ClientInfo,
		Principal: rec.Principal, Allow: allow, Context: decorate, Endpoint: rec.Endpoint,
	}, id, func(s *Session) era { return newLegacyClient(s) })
	s.record = &sharedRecord{s: s} // it exists: this replica shares it as it is
	if i := levelIndex(rec.LogLevel); i >= 0 {
		s.logLevel = i
	}
	s.links.resumable = rec.UpstreamSessions
	cat := s.catalog()
	for _, uri := range rec.Subscriptions {
		if rt, ok := s.scope.resolveURI(cat, uri); ok {
			s.subs.add(subKey(rt), uri)
			if rt.up.cfg.Mode == Shared && rt.up.subs.add(rt.uri) {
				rt.up.subs.send(rt.uri, true)
			}
		}
	}
	r.mu.Lock()
	if other := r.sessions[id]; other != nil { // a concurrent request restored it first
		r.mu.Unlock()
		s.Close()
		return other, nil
	}
	r.sessions[id] = s
	r.mu.Unlock()
	r.log.Info("session restored from the store", "session", s.logID())
	if c.Restored != nil {
		c.Restored(s)
	}
	s.notify(notice("this session moved to another gateway replica: its HTTP upstream sessions are resumed, its stdio upstream sessions start afresh (a local server's in-memory state is not carried over)"))
	return s, nil
}

// ownListsChanged makes the person's sessions see their own lists: they use them from their next request and
// hear list_changed now.
func (r *Router) ownListsChanged(principal string, p *ownLists) {
	for _, s := range append(r.allSessions(), r.pooledSessions()...) {
		if s.params.Principal != principal {
			continue
		}
		s.person.Store(p)
		for _, k := range []listKind{kindTools, kindPrompts, kindResources} {
			s.notify(jsonrpc.AppendNotification(nil, k.changedMethod(), nil))
		}
	}
}
