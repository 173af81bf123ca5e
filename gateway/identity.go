package gateway

import (
	"context"
	"net/http"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

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

// identify returns the identity of a request's caller.
func (s *Server) identify(ctx context.Context) Identity {
	if s.opts.Identify == nil {
		return Identity{}
	}
	return s.opts.Identify(ctx)
}

// owns reports whether the caller of a request may use a session: "sessions MUST NOT be used for
// authentication"; a session id presented with another principal's token is, for that principal, no session.
func (s *Server) owns(r *http.Request, sess *routing.Session) bool {
	return s.key(r.Context()) == sess.Principal()
}

// key is the caller's identity key alone: cheaper than identify, which also evaluates the policy.
func (s *Server) key(ctx context.Context) string {
	if s.opts.Key != nil {
		return s.opts.Key(ctx)
	}
	return s.identify(ctx).Key
}

// guard wraps the MCP endpoints with the authenticator, counting what it refuses.
func (s *Server) guard(next http.Handler) http.Handler {
	if s.opts.Auth == nil {
		return next
	}
	guarded := s.opts.Auth.Middleware(next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := &statusWriter{ResponseWriter: w}
		guarded.ServeHTTP(sw, r)
		if sw.status == http.StatusUnauthorized || sw.status == http.StatusForbidden || sw.status == http.StatusServiceUnavailable {
			reason := map[int]string{401: "unauthenticated", 403: "insufficient_scope", 503: "idp_unavailable"}[sw.status]
			s.inst.authFail.Add(r.Context(), 1, metric.WithAttributes(attribute.String("reason", reason)))
		}
	})
}
