package gateway

import (
	"net/http"
	"strings"

	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
)

// checkOrigin guards against DNS rebinding. The spec: "Servers MUST validate the Origin header on all incoming
// connections" and, since 2025-11-25, "If the Origin header is present and invalid, servers MUST respond with
// HTTP 403 Forbidden". The Host header is checked too, because a rebinding page's requests carry the attacker's
// host name.
func (s *Server) checkOrigin(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if o := r.Header.Get("Origin"); o != "" && s.opts.AllowOrigin != nil && !s.opts.AllowOrigin(o) {
			writeError(w, http.StatusForbidden, nil, jsonrpc.CodeInvalidRequest, "Origin "+quote(o)+" is not allowed; add it to allowedOrigins")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// checkHost refuses requests whose Host header is not allowed.
func (s *Server) checkHost(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.opts.AllowHost != nil && !s.opts.AllowHost(r.Host) {
			writeError(w, http.StatusForbidden, nil, jsonrpc.CodeInvalidRequest, "Host "+quote(r.Host)+" is not allowed; add it to allowedHosts")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// quote shows a client-supplied value in an error message, bounded and printable.
func quote(s string) string {
	if len(s) > 200 {
		s = s[:200]
	}
	return `"` + strings.ToValidUTF8(s, "?") + `"`
}
