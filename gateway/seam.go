package gateway

import (
	"context"
	"encoding/json"
	"time"

	"github.com/switchboard-mcp/switchboard/routing"
	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
)

// The gateway–routing seam: everything the front end asks of the router, in four small interfaces, so that a
// reader sees what crosses the wall. routing.Router implements all four; each component of the Server holds only
// the ones it uses. The front ends then hand each message to its *routing.Session (HandleRequest,
// HandleNotification, HandleResponse) and end it (End, Close); the streams see a session through session.

// Sessions is the request path: what the front ends need to open, find or resume a session, and a Stream to
// hand a message's answers to.
type Sessions interface {
	// NewSession starts a legacy session (an initialize) with p; it lives until ended, closed or idle.
	NewSession(p routing.SessionParams) *routing.Session
	// Session returns the session with the id held on this replica, or nil.
	Session(id string) *routing.Session
	// ClaimSession is the session a request names, held here or loaded from the shared store if another
	// replica made it, when it is the claimant's: nil, nil when there is none; an error when the store cannot tell.
	ClaimSession(ctx context.Context, c routing.Claim) (*routing.Session, error)
	// PooledSession is the shared session that serves 2026-07-28 requests with p's capabilities and caller.
	PooledSession(p routing.SessionParams) *routing.Session
	// Listener is a session of its own for one subscriptions/listen stream; the caller closes it.
	Listener(p routing.SessionParams) *routing.Session
	// NewStream is a Stream for a request's answers: finals answers end it, maxQueued bounds the rest (0: the
	// router's default).
	NewStream(finals, maxQueued int) *routing.Stream
	// WaitReady waits until every upstream was tried once, or ctx ends.
	WaitReady(ctx context.Context) error
	// WaitStart holds a request of method during start, for at most window, until the catalog is whole.
	WaitStart(ctx context.Context, method string, window time.Duration) error
}

// Offering is what the gateway says of itself to clients: in initialize, server/discover, the server cards and
// the metrics' tool names.
type Offering interface {
	// ServerInfo is the serverInfo object; Capabilities the merged capabilities; Instructions the instructions.
	ServerInfo() json.RawMessage
	Capabilities() json.RawMessage
	Instructions() string
	// OffersTasks reports whether any task support is on (the gateway's own or an upstream's).
	OffersTasks() bool
	// Offers reports whether the catalog lists the prompt (prompt true) or the tool of that name.
	Offers(prompt bool, name string) bool
	// HasEndpoint reports whether an endpoint of that name is configured now.
	HasEndpoint(name string) bool
}

// Operator is what the admin API and the health endpoints read and change.
type Operator interface {
	// Ready reports whether start is over; Status, SessionCount, Conflicts, Drifts and RejectedNames describe the
	// upstreams, the sessions held here, the names two upstreams claim, the definitions changed against their pins
	// and the names a stated host would reject.
	Ready() bool
	Status() []routing.UpstreamStatus
	SessionCount() int
	Conflicts() []string
	Drifts() []routing.Drift
	RejectedNames() []routing.RejectedName
	// ApprovePins accepts the changed definitions f selects.
	ApprovePins(ctx context.Context, f routing.PinFilter) (routing.Approval, error)
	// RestartUpstream restarts an upstream; DrainUpstream stops (on) or resumes sending it new calls. Both answer
	// a *routing.UnknownUpstreamError for a name not configured.
	RestartUpstream(name string) error
	DrainUpstream(name string, on bool) error
}

// replicas is what the front end needs of the other replicas: where a stream's producer or a parked call lives.
type replicas interface {
	// Replica is this replica's own URL ("" alone).
	Replica() string
	// ReplicaGone reports whether the replica at url is known to be gone ("" is never gone).
	ReplicaGone(ctx context.Context, url string) bool
	// OwnsState reports whether a requestState is one this gateway sealed; StateOwner opens it and returns the
	// URL of the replica holding its parked call ("" for this one, or nobody).
	OwnsState(state string) bool
	StateOwner(ctx context.Context, principal string, m jsonrpc.Message, state string) (string, error)
}

// session is what the streams (streamHub, its logs and registry) ask of a session: the front ends hand them the
// *routing.Session that Sessions returned.
type session interface {
	// ID is the session's id (its Mcp-Session-Id); ProtocolVersion the version it negotiated.
	ID() string
	ProtocolVersion() string
	// Standalone is the Stream of the messages that relate to no request.
	Standalone() *routing.Stream
	// Done is closed when the session ends.
	Done() <-chan struct{}
	// StreamOpened and StreamClosed count a client stream, which keeps the session from going idle.
	StreamOpened()
	StreamClosed()
}

var (
	_ Sessions = (*routing.Router)(nil)
	_ Offering = (*routing.Router)(nil)
	_ Operator = (*routing.Router)(nil)
	_ replicas = (*routing.Router)(nil)
	_ session  = (*routing.Session)(nil)
)
