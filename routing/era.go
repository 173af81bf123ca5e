package routing

import (
	"context"

	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
)

// era is the part of a Session that differs with its clients' protocol era. Everything else (dispatch, policy,
// the calls in flight, the client's own upstream sessions) is the same in both.
//
// A legacy client's session (legacyClient, legacy.go) is made by initialize, named by Mcp-Session-Id and
// carries server→client requests to its one client. A modern pool entry (pooledClient, pool.go) serves every
// stateless request that shares a principal, capabilities and log level: there is no one client to ask, so an
// upstream's request for input becomes an input_required result (mrtr.go).
type era interface {
	// modern reports whether the clients speak the modern era.
	modern() bool
	// preempt handles a request before dispatch, reporting whether it did: what the era removed or handles
	// itself (a modern retry of a parked call).
	preempt(ctx context.Context, m jsonrpc.Message, out *Stream) bool
	// hearsUnrelated reports whether messages unrelated to any request reach the client (a standalone stream).
	hearsUnrelated() bool
	// serverRequest routes an upstream's request for the client; rel is the call it relates to, nil if unknown.
	// The client has declared the capability it needs.
	serverRequest(l *link, m jsonrpc.Message, rel *call)
	// serverRequestCancelled acts on an upstream's cancellation of one of its own requests.
	serverRequestCancelled(l *link, m jsonrpc.Message)
	// linkLost voids what the client holds of a link that lost its connection.
	linkLost(l *link)
	// answer takes the client's response to a server→client request.
	answer(m jsonrpc.Message)
	// closing is told that the session is closing.
	closing()
}
