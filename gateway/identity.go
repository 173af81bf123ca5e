package gateway

import (
	"context"
	"net/http"

	"github.com/switchboard-mcp/switchboard/routing"
)

// Authenticator guards the MCP endpoints: an OAuth resource server (auth.ResourceServer) verifies every request
// and answers 401/403 itself; what passes carries its principal in the request context.
type Authenticator interface {
	Middleware(next http.Handler) http.Handler
	// MetadataHandler serves the protected-resource metadata (RFC 9728) at MetadataPath, the only path whose
	// well-known suffix matches the resource identifier the document names.
	MetadataHandler() http.Handler
	MetadataPath() string
}

// Identity is what the front end needs to know of the caller of a request.
type Identity struct {
	// Key binds sessions: a session is only ever served to the identity that created it ("" without auth).
	Key string
	// Allow is the caller's policy (nil: everything).
	Allow routing.Allow
	// Context decorates the session's context with the caller, for upstream credentials that need it.
	Context func(context.Context) context.Context
}

// callers tells who the caller of a request is (Options.Identify, Options.Key).
type callers struct {
	identifyFn func(context.Context) Identity
	keyFn      func(context.Context) string
}

// identify returns the identity of a request's caller.
func (c callers) identify(ctx context.Context) Identity {
	if c.identifyFn == nil {
		return Identity{}
	}
	return c.identifyFn(ctx)
}

// claim is a request's claim on the session id: routing serves it only to its own principal, at its own
// endpoint. The caller's policy is asked only if the session must be restored (identify evaluates the policy;
// key alone is cheap).
func (c callers) claim(r *http.Request, id string) routing.Claim {
	ctx := r.Context()
	return routing.Claim{ID: id, Principal: c.key(ctx), Endpoint: EndpointFrom(ctx)}
}

// policy is the caller's policy and context decoration, for a session restored on its behalf.
func (c callers) policy(ctx context.Context) (routing.Allow, func(context.Context) context.Context) {
	who := c.identify(ctx)
	return who.Allow, who.Context
}

// key is the caller's identity key alone: cheaper than identify, which also evaluates the policy.
func (c callers) key(ctx context.Context) string {
	if c.keyFn != nil {
		return c.keyFn(ctx)
	}
	return c.identify(ctx).Key
}
