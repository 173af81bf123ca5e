package auth

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
)

// JSON-RPC error codes of the bodies of 401/403/503 answers. JSON-RPC
// reserves -32000..-32099 for implementations; the gateway uses one
// vocabulary across its packages, so that a code means one thing whichever
// layer answers:
//
//   - -32000 unavailable: try again later
//   - -32001 request timeout (the MCP SDKs' RequestTimeout): never an auth answer
//   - -32002 resource not found (legacy)
//   - -32003 forbidden
//   - -32004 unauthorized
//   - -32020..-32022 the codes of the 2026-07-28 specification
//   - -32042 URL elicitation required
//
// Unauthorized used to be -32001, which clashed with the request timeout.
const (
	// CodeUnauthorized answers a missing, invalid or expired token (HTTP 401).
	CodeUnauthorized = -32004
	// CodeForbidden answers a valid token that lacks a scope (HTTP 403).
	CodeForbidden = -32003
	// CodeUnavailable answers when the authorization server cannot be reached
	// (HTTP 503): the client may retry.
	CodeUnavailable = -32000
)

// Challenge answers a failed Authenticate (or any error from this package):
//
//   - ErrNoToken: 401, WWW-Authenticate: Bearer resource_metadata="…", scope="…"
//   - *InsufficientScopeError: 403, Bearer error="insufficient_scope", scope="…" (the scopes to request)
//   - *UnavailableError: 503 with Retry-After, no challenge
//   - anything else (*InvalidTokenError…): 401, Bearer error="invalid_token"
//
// The body is a JSON-RPC error with id null. Neither header nor body says
// anything about the token, its claims or the session beyond the error code.
func (rs *ResourceServer) Challenge(w http.ResponseWriter, err error) {
	var scopeErr *InsufficientScopeError
	switch {
	case errors.Is(err, ErrNoToken):
		rs.writeChallenge(w, "", rs.cfg.Scopes, "")
		writeRPCError(w, http.StatusUnauthorized, CodeUnauthorized, "Unauthorized: a bearer token is required")
	case errors.As(err, &scopeErr):
		rs.writeChallenge(w, "insufficient_scope", scopeErr.Scopes, "The access token lacks a required scope.")
		writeRPCError(w, http.StatusForbidden, CodeForbidden, "Forbidden: insufficient scope")
	case errors.Is(err, ErrUnavailable):
		w.Header().Set("Retry-After", "5")
		writeRPCError(w, http.StatusServiceUnavailable, CodeUnavailable, "The authorization server is unavailable; retry later")
	default:
		rs.writeChallenge(w, "invalid_token", rs.cfg.Scopes, "The access token is invalid or expired.")
		writeRPCError(w, http.StatusUnauthorized, CodeUnauthorized, "Unauthorized: invalid token")
	}
}

// ChallengeHeader returns the WWW-Authenticate value Challenge sends for
// this status's error code ("" = none, "invalid_token",
// "insufficient_scope") and scopes.
func (rs *ResourceServer) ChallengeHeader(code string, scopes []string, description string) string {
	var b strings.Builder
	b.WriteString("Bearer ")
	sep := ""
	param := func(k, v string) {
		b.WriteString(sep)
		b.WriteString(k)
		b.WriteString(`="`)
		b.WriteString(quoteValue(v))
		b.WriteString(`"`)
		sep = ", "
	}
	if code != "" {
		param("error", code)
	}
	param("resource_metadata", rs.cfg.ResourceMetadataURL)
	if len(scopes) > 0 {
		param("scope", strings.Join(scopes, " "))
	}
	if description != "" {
		param("error_description", description)
	}
	return b.String()
}

func (rs *ResourceServer) writeChallenge(w http.ResponseWriter, code string, scopes []string, desc string) {
	w.Header().Set("WWW-Authenticate", rs.ChallengeHeader(code, scopes, desc))
}

// quoteValue keeps a quoted-string parameter valid: scopes and URLs are
// checked at configuration, this is a last line of defence.
func quoteValue(v string) string {
	return strings.Map(func(r rune) rune {
		if r == '"' || r == '\\' || r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, v)
}

func writeRPCError(w http.ResponseWriter, status, code int, msg string) {
	body, _ := json.Marshal(map[string]any{
		"jsonrpc": "2.0",
		"id":      nil,
		"error":   map[string]any{"code": code, "message": msg},
	})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// Metadata is the RFC 9728 protected-resource metadata document.
type Metadata struct {
	Resource               string   `json:"resource"`
	AuthorizationServers   []string `json:"authorization_servers"`
	ScopesSupported        []string `json:"scopes_supported,omitempty"`
	BearerMethodsSupported []string `json:"bearer_methods_supported"`
	ResourceSigningAlgs    []string `json:"resource_signing_alg_values_supported,omitempty"`
	ResourceName           string   `json:"resource_name,omitempty"`
	ResourceDocumentation  string   `json:"resource_documentation,omitempty"`
}

// Metadata returns the protected-resource metadata document.
func (rs *ResourceServer) Metadata() Metadata {
	return Metadata{
		Resource:               rs.cfg.Audience,
		AuthorizationServers:   []string{rs.cfg.Issuer},
		ScopesSupported:        append([]string(nil), rs.cfg.Scopes...),
		BearerMethodsSupported: []string{"header"},
		ResourceName:           rs.cfg.ResourceName,
		ResourceDocumentation:  rs.cfg.DocumentationURL,
	}
}

// MetadataPath is the path at which the metadata is served: that of the URL
// announced in WWW-Authenticate, the well-known path suffixed with the
// resource's own path (RFC 9728 §3.1). Only there: "the resource value
// returned MUST be identical to the protected resource's resource identifier
// value into which the well-known URI path suffix was inserted to create the
// URL used to retrieve the metadata" (§3.3), so the root document of a
// resource at /mcp would fail a strict client's check.
//
// When the announced URL is not a well-known path (a document hosted
// elsewhere), the gateway serves its own at the path built from the
// audience.
func (rs *ResourceServer) MetadataPath() string {
	for _, announced := range []string{rs.cfg.ResourceMetadataURL, MetadataURL(rs.cfg.Audience)} {
		if u, err := url.Parse(announced); err == nil && (u.Path == wellKnownResource || strings.HasPrefix(u.Path, wellKnownResource+"/")) {
			return u.Path
		}
	}
	return wellKnownResource
}

// wellKnownResource is RFC 9728's well-known path, before the resource's own.
const wellKnownResource = "/.well-known/oauth-protected-resource"

// MetadataHandler serves the metadata on GET and HEAD (405 otherwise),
// with CORS open (it is public, and browser-based clients fetch it). Mount
// it, without authentication, at MetadataPath.
func (rs *ResourceServer) MetadataHandler() http.Handler {
	body, _ := json.MarshalIndent(rs.Metadata(), "", "  ")
	body = append(body, '\n')
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Access-Control-Allow-Origin", "*")
		switch r.Method {
		case http.MethodGet, http.MethodHead:
		case http.MethodOptions:
			h.Set("Access-Control-Allow-Methods", "GET, HEAD, OPTIONS")
			h.Set("Access-Control-Allow-Headers", "MCP-Protocol-Version")
			w.WriteHeader(http.StatusNoContent)
			return
		default:
			h.Set("Allow", "GET, HEAD, OPTIONS")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		h.Set("Content-Type", "application/json")
		h.Set("Cache-Control", "public, max-age=300")
		w.WriteHeader(http.StatusOK)
		if r.Method == http.MethodGet {
			_, _ = w.Write(body)
		}
	})
}

// Middleware authenticates every request: on success the principal is in
// the request's context (PrincipalFrom); on failure Challenge answers and
// next is not called. CORS preflights (OPTIONS) pass unauthenticated.
func (rs *ResourceServer) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodOptions {
			next.ServeHTTP(w, r)
			return
		}
		p, err := rs.Authenticate(r)
		if err != nil {
			if !errors.Is(err, ErrNoToken) {
				rs.log.Info("auth: request refused", "err", err, "remote", r.RemoteAddr)
			}
			rs.Challenge(w, err)
			return
		}
		next.ServeHTTP(w, r.WithContext(WithPrincipal(r.Context(), p)))
	})
}
