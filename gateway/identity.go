package gateway

import (
	"context"
	"net/http"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/go-chi/chi/v5"
	"github.com/switchboard-mcp/switchboard/routing"
	"github.com/switchboard-mcp/switchboard/upstream/protocol"
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
	return s.counted(s.opts.Auth.Middleware(next))
}

// guardEndpoint is guard for /mcp/{endpoint}: the endpoint is a resource of its own (RFC 9728), with its own
// audience and metadata, so its challenges point clients there.
func (s *Server) guardEndpoint(next http.Handler) http.Handler {
	if s.opts.Auth == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a := s.endpointAuth(chi.URLParam(r, "endpoint"))
		if a == nil {
			writeError(w, http.StatusNotFound, nil, protocol.CodeInvalidRequest, "no such endpoint: use /mcp for the whole catalog")
			return
		}
		s.counted(a.Middleware(next)).ServeHTTP(w, r)
	})
}

// endpointAuth is the authenticator of an endpoint's resource; nil for a name no endpoint could have.
func (s *Server) endpointAuth(name string) Authenticator {
	if s.opts.AuthFor == nil {
		return s.opts.Auth
	}
	return s.opts.AuthFor(name)
}

// counted counts the authenticator's refusals in switchboard.auth.failures.
func (s *Server) counted(guarded http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := &statusWriter{ResponseWriter: w}
		guarded.ServeHTTP(sw, r)
		if sw.status == http.StatusUnauthorized || sw.status == http.StatusForbidden || sw.status == http.StatusServiceUnavailable {
			reason := map[int]string{401: "unauthenticated", 403: "insufficient_scope", 503: "idp_unavailable"}[sw.status]
			s.inst.authFail.Add(r.Context(), 1, metric.WithAttributes(attribute.String("reason", reason)))
		}
	})
}
