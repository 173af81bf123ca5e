package gateway

import (
	"net/http"
	"path"
	"strings"

	"github.com/go-chi/chi/v5"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/switchboard-mcp/switchboard/upstream/protocol"
)

// guards are the HTTP checks in front of the endpoints: Host and Origin against DNS rebinding, CORS for browser
// clients, the authenticator of the MCP endpoints (and of each endpoint's own resource), and the endpoint a path
// names.
type guards struct {
	allowOrigin func(origin string) bool
	allowHost   func(host string) bool
	auth        Authenticator
	authFor     func(endpoint string) Authenticator
	authFail    metric.Int64Counter // switchboard.auth.failures
	offer       Offering            // which endpoints exist
}

// checkOrigin guards against DNS rebinding. The spec: "Servers MUST validate the Origin header on all incoming
// connections" and, since 2025-11-25, "If the Origin header is present and invalid, servers MUST respond with
// HTTP 403 Forbidden". The Host header is checked too, because a rebinding page's requests carry the attacker's
// host name.
func (g *guards) checkOrigin(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if o := r.Header.Get("Origin"); o != "" && g.allowOrigin != nil && !g.allowOrigin(o) {
			writeError(w, http.StatusForbidden, nil, protocol.CodeInvalidRequest, "Origin "+quote(o)+" is not allowed; add it to allowedOrigins")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// checkHost refuses requests whose Host header is not allowed.
func (g *guards) checkHost(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if g.allowHost != nil && !g.allowHost(r.Host) {
			writeError(w, http.StatusForbidden, nil, protocol.CodeInvalidRequest, "Host "+quote(r.Host)+" is not allowed; add it to allowedHosts")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// cors lets browser clients of allowed origins use the MCP endpoints: it answers their preflights (OPTIONS with
// Access-Control-Request-Method, sent without credentials, so before the auth guard) and marks the answers they
// may read, exposing the headers an MCP client needs (the session id, the negotiated version, and the challenge of
// a 401). checkOrigin has already refused every other origin. Without an AllowOrigin policy no origin is granted:
// accepting requests from any origin is not the same as letting any page read their answers.
func (g *guards) cors(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o := r.Header.Get("Origin")
		if o == "" || g.allowOrigin == nil {
			next.ServeHTTP(w, r)
			return
		}
		h := w.Header()
		h.Set("Access-Control-Allow-Origin", o)
		h.Add("Vary", "Origin")
		h.Set("Access-Control-Expose-Headers", "Mcp-Session-Id, MCP-Protocol-Version, WWW-Authenticate")
		if r.Method != http.MethodOptions || r.Header.Get("Access-Control-Request-Method") == "" {
			next.ServeHTTP(w, r)
			return
		}
		h.Set("Access-Control-Allow-Methods", "GET, POST, DELETE")
		if allowed := corsHeaders(r.Header.Values("Access-Control-Request-Headers")); allowed != "" {
			h.Set("Access-Control-Allow-Headers", allowed)
		}
		h.Set("Access-Control-Max-Age", "600")
		w.WriteHeader(http.StatusNoContent)
	})
}

// guard wraps the MCP endpoints with the authenticator, counting what it refuses.
func (g *guards) guard(next http.Handler) http.Handler {
	if g.auth == nil {
		return next
	}
	return g.counted(g.auth.Middleware(next))
}

// guardEndpoint is guard for /mcp/{endpoint}: the endpoint is a resource of its own (RFC 9728), with its own
// audience and metadata, so its challenges point clients there.
func (g *guards) guardEndpoint(next http.Handler) http.Handler {
	if g.auth == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a := g.endpointAuth(chi.URLParam(r, "endpoint"))
		if a == nil {
			writeError(w, http.StatusNotFound, nil, protocol.CodeInvalidRequest, "no such endpoint: use /mcp for the whole catalog")
			return
		}
		g.counted(a.Middleware(next)).ServeHTTP(w, r)
	})
}

// endpointAuth is the authenticator of an endpoint's resource; nil for a name no endpoint could have.
func (g *guards) endpointAuth(name string) Authenticator {
	if g.authFor == nil {
		return g.auth
	}
	return g.authFor(name)
}

// counted counts the authenticator's refusals in switchboard.auth.failures.
func (g *guards) counted(guarded http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := &statusWriter{ResponseWriter: w}
		guarded.ServeHTTP(sw, r)
		if sw.status == http.StatusUnauthorized || sw.status == http.StatusForbidden || sw.status == http.StatusServiceUnavailable {
			reason := map[int]string{401: "unauthenticated", 403: "insufficient_scope", 503: "idp_unavailable"}[sw.status]
			g.authFail.Add(r.Context(), 1, metric.WithAttributes(attribute.String("reason", reason)))
		}
	})
}

// atEndpoint puts the {endpoint} of the path in the request's context, answering 404 for one that is not
// configured (now: a reload may remove it).
func (g *guards) atEndpoint(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := chi.URLParam(r, "endpoint")
		if !g.offer.HasEndpoint(name) {
			writeError(w, http.StatusNotFound, nil, protocol.CodeInvalidRequest, "no endpoint named "+name+" is configured: use /mcp for the whole catalog")
			return
		}
		next.ServeHTTP(w, r.WithContext(WithEndpoint(r.Context(), name)))
	})
}

// routeMetadata serves the protected-resource metadata when the endpoints are authenticated. RFC 9728: the
// metadata of the resource, at the well-known path suffixed with the resource's own path, and nowhere else (a
// document must name the resource its URL was built from).
func (g *guards) routeMetadata(mux chi.Router) {
	if g.auth == nil {
		return
	}
	md := g.auth.MetadataHandler()
	mux.Method(http.MethodGet, g.auth.MetadataPath(), md)
	mux.Method(http.MethodHead, g.auth.MetadataPath(), md)
	mux.Method(http.MethodOptions, g.auth.MetadataPath(), md)
	// Each endpoint's metadata, at the well-known path suffixed with the endpoint's own resource path (the path's
	// last segment is the name). Served for every name an endpoint could have, configured or not, naming the
	// resource its path names: as /mcp/<name> challenges before it says whether the endpoint exists, its metadata
	// must not say it either (the challenge's resource_metadata points here).
	if g.authFor == nil {
		return
	}
	emd := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if a := g.authFor(path.Base(r.URL.Path)); a != nil && a.MetadataPath() == r.URL.Path {
			a.MetadataHandler().ServeHTTP(w, r)
			return
		}
		http.NotFound(w, r)
	})
	for _, m := range []string{http.MethodGet, http.MethodHead, http.MethodOptions} {
		mux.Method(m, "/.well-known/oauth-protected-resource/*", emd)
	}
}

// corsHeaders returns the requested headers a browser client may send: those of MCP and its transports (and the
// Mcp-Param-* family a tool's x-mcp-header arguments use), never others.
func corsHeaders(requested []string) string {
	var ok []string
	for _, line := range requested {
		for _, name := range strings.Split(line, ",") {
			name = strings.TrimSpace(name)
			switch strings.ToLower(name) {
			case "authorization", "content-type", "accept", "mcp-session-id", "mcp-protocol-version", "mcp-method",
				"mcp-name", "last-event-id", "traceparent", "tracestate":
				ok = append(ok, name)
			default:
				if len(name) > len("mcp-param-") && strings.EqualFold(name[:len("mcp-param-")], "mcp-param-") {
					ok = append(ok, name)
				}
			}
		}
	}
	return strings.Join(ok, ", ")
}

// quote shows a client-supplied value in an error message, bounded and printable.
func quote(s string) string {
	if len(s) > 200 {
		s = s[:200]
	}
	return `"` + strings.ToValidUTF8(s, "?") + `"`
}
