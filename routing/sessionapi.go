package routing

import (
	"context"
	"time"

	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
)

// What the gateway asks of a session (gateway/seam.go's session, and the front ends' calls): its identity, its
// streams, its end, and the few facts of its requests a front end needs (its list caching, its parameter headers).

// ID is the session id, for the Mcp-Session-Id header: 128 random bits.
func (s *Session) ID() string { return s.id }

// ProtocolVersion is the version negotiated with the client.
func (s *Session) ProtocolVersion() string { return s.params.ProtocolVersion }

// Endpoint is the catalog endpoint the session was opened on ("" for the whole catalog).
func (s *Session) Endpoint() string { return s.params.Endpoint }

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

// Modern reports whether the session serves clients of the modern (2026-07-28) era.
func (s *Session) Modern() bool { return s.era.modern() }

// HandleResponse relays the client's answer to a server→client request back to the upstream that asked.
func (s *Session) HandleResponse(m jsonrpc.Message) {
	s.touch()
	s.era.answer(m)
}

// InFlight reports how many of the client's requests are with upstreams now.
func (s *Session) InFlight() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.calls)
}

// Cancel ends the request with the id whose answer goes to out, as the client's notifications/cancelled would:
// for a modern client, closing the request's stream is its cancellation.
func (s *Session) Cancel(out *Stream, id []byte, reason string) {
	s.cancelCall(out, cancelledParams(id, reason))
}

// Close ends the session: its per-client upstream sessions are closed (stdio children stopped) and its streams
// end.
func (s *Session) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	s.mu.Unlock()
	s.r.dropSession(s)
	s.era.closing()
	s.subs.release()
	s.cancel()
	s.links.closeAll()
	s.workers.Wait()
	s.standalone.Close()
}

// End ends the session at its client's request, on every replica: the record goes, and the other replicas
// close their copy.
func (s *Session) End() {
	s.record.remove()
	s.Close()
}

// WhenClosed runs f once the session has ended (closed, expired, or the router stopped), on a goroutine of its
// own; the front end records the session's duration with it.
func (s *Session) WhenClosed(f func()) { context.AfterFunc(s.ctx, f) }

// Subscribe subscribes a listener session to a resource's updates, reporting whether an upstream honours it.
func (s *Session) Subscribe(ctx context.Context, uri string) bool {
	params := append(append([]byte(`{"uri":`), jsonrpc.AppendQuote(nil, uri)...), '}')
	m, err := jsonrpc.Parse(jsonrpc.AppendRequest(nil, []byte(`"subscribe"`), "resources/subscribe", params))
	if err != nil {
		return false
	}
	out := s.r.NewStream(1, 0)
	s.subs.handle(ctx, s, m, out, true)
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

// ListCache reports, for a list request (tools/list, prompts/list, resources/list, resources/templates/list) of
// the session made with ctx, whether its answer is shaped by the caller (private) and the shortest ttlMs the
// upstreams' own lists of that kind carried (capped false when none carried one; then nothing caps it here).
//
// A list is the caller's when a policy judges the request (a policy may have rules per person), when the
// session sees lists of its own (a person's per-user upstreams, persons.go; its own upstream sessions' lists,
// children.go), or, for tools/list, in search mode. Otherwise it is what everyone at the session's endpoint is
// shown: the shared catalog (of the session's capability profile) through the endpoint's view.
func (s *Session) ListCache(ctx context.Context, method string) (private bool, upstreamTTL time.Duration, capped bool) {
	k, ok := listKindOf(method)
	if !ok {
		return true, 0, true // not a list: nothing said here makes it shareable
	}
	private = *s.scope.policy(ctx) != nil || s.catalog() != s.sharedCatalog() || k == kindTools && s.r.embed.searchMode(s) != nil
	for _, up := range s.r.upstreams() {
		if v := up.listTTL[k].Load(); v > 0 && (!capped || time.Duration(v-1)*time.Millisecond < upstreamTTL) {
			upstreamTTL, capped = time.Duration(v-1)*time.Millisecond, true
		}
	}
	return private, upstreamTTL, capped
}

// ParamHeaders returns the x-mcp-header bindings of a tool as the session's catalog exposes it.
func (s *Session) ParamHeaders(tool string) []ParamHeader { return s.catalog().paramHeaders(tool) }
