package gateway

import (
	"net/http"
	"strings"

	"github.com/switchboard-mcp/switchboard/upstream/protocol"
)

// checkOrigin guards against DNS rebinding. The spec: "Servers MUST validate the Origin header on all incoming
// connections" and, since 2025-11-25, "If the Origin header is present and invalid, servers MUST respond with
// HTTP 403 Forbidden". The Host header is checked too, because a rebinding page's requests carry the attacker's
// host name.
func (s *Server) checkOrigin(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if o := r.Header.Get("Origin"); o != "" && s.opts.AllowOrigin != nil && !s.opts.AllowOrigin(o) {
			writeError(w, http.StatusForbidden, nil, protocol.CodeInvalidRequest, "Origin "+quote(o)+" is not allowed; add it to allowedOrigins")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// checkHost refuses requests whose Host header is not allowed.
func (s *Server) checkHost(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.opts.AllowHost != nil && !s.opts.AllowHost(r.Host) {
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
func (s *Server) cors(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o := r.Header.Get("Origin")
		if o == "" || s.opts.AllowOrigin == nil {
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
