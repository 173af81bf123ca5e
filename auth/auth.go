// Package auth makes the gateway an OAuth 2.1 resource server and decides
// what each caller may use.
//
//   - ResourceServer verifies bearer tokens (JWTs against the issuer's JWKS
//     with go-oidc, opaque tokens by RFC 7662 introspection), writes RFC 6750
//     challenges and serves RFC 9728 protected-resource metadata.
//   - Policy maps a Principal's claims to the upstreams and items it may see
//     and call.
//   - CredentialSource gives the headers the gateway sends to an upstream: its
//     own credentials, never the client's token.
//   - Auditor logs one structured event per call.
//
// The bodies of refused requests are JSON-RPC errors with the gateway's
// codes: CodeUnauthorized (-32004), CodeForbidden (-32003) and
// CodeUnavailable (-32000); -32001 is the request timeout, never an auth
// answer.
//
// The package imports nothing of the project. It takes its own option types
// (ResourceConfig, PolicyRule, CredentialOptions), and cmd/switchboard
// translates the config file into them, so the file format can change
// without touching authentication. Routing never imports this package
// either: it declares the small interface it needs, and cmd wires the two.
// See docs/auth.md.
package auth

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"
)

// Principal is a verified caller.
type Principal struct {
	// Subject is the sub claim.
	Subject string
	// Issuer is the iss claim (the configured issuer for introspected tokens
	// that do not name one).
	Issuer string
	// Scopes are the granted scopes (scope claim, space-separated, or scp).
	Scopes []string
	// Groups is the groups claim (a list, or one string).
	Groups []string
	// Claims holds every claim, for policy. Do not log it whole.
	Claims map[string]any
	// Expiry is when the token expires.
	Expiry time.Time

	// token is the raw access token. Only token exchange reads it; it is never
	// logged, printed or forwarded.
	token string
}

// Key is the stable identity a session is bound to: issuer "|" subject.
func (p *Principal) Key() string {
	if p == nil {
		return ""
	}
	return p.Issuer + "|" + p.Subject
}

// HasScope reports whether the token carries scope s.
func (p *Principal) HasScope(s string) bool { return p != nil && slices.Contains(p.Scopes, s) }

// String identifies the principal without its token or claims, so that a
// Principal printed with %v or %+v leaks nothing.
func (p Principal) String() string { return "principal(" + p.Issuer + "|" + p.Subject + ")" }

// GoString is String, for %#v.
func (p Principal) GoString() string { return p.String() }

// LogValue logs the identity only (slog.LogValuer).
func (p Principal) LogValue() slog.Value {
	return slog.GroupValue(slog.String("sub", p.Subject), slog.String("iss", p.Issuer))
}

// NewPrincipal builds a Principal from verified claims, for callers that
// authenticate by other means (and for tests of code that takes a
// Principal). It carries no token, so token exchange refuses it.
func NewPrincipal(claims map[string]any) *Principal {
	return principalFromClaims(claims, "", "")
}

func principalFromClaims(claims map[string]any, token, defaultIssuer string) *Principal {
	p := &Principal{Claims: claims, token: token}
	p.Subject, _ = claims["sub"].(string)
	p.Issuer, _ = claims["iss"].(string)
	if p.Issuer == "" {
		p.Issuer = defaultIssuer
	}
	p.Scopes = scopesOf(claims)
	p.Groups = stringsOf(claims["groups"])
	if exp, ok := numeric(claims["exp"]); ok {
		p.Expiry = time.Unix(int64(exp), 0)
	}
	return p
}

// scopesOf reads the scope claim (RFC 8693/9068: space-separated) or scp (a
// list, or a string, as some providers send).
func scopesOf(claims map[string]any) []string {
	if s, ok := claims["scope"].(string); ok {
		return strings.Fields(s)
	}
	switch v := claims["scp"].(type) {
	case string:
		return strings.Fields(v)
	default:
		return stringsOf(v)
	}
}

func stringsOf(v any) []string {
	switch v := v.(type) {
	case string:
		return []string{v}
	case []string:
		return v
	case []any:
		out := make([]string, 0, len(v))
		for _, x := range v {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

func numeric(v any) (float64, bool) {
	switch v := v.(type) {
	case float64:
		return v, true
	case int64:
		return float64(v), true
	case int:
		return float64(v), true
	}
	return 0, false
}

// ErrNoToken means the request carried no bearer token: the answer is a 401
// challenge without an error code (RFC 6750 §3.1).
var ErrNoToken = errors.New("auth: no bearer token")

// ErrInvalidToken matches every *InvalidTokenError with errors.Is.
var ErrInvalidToken = errors.New("auth: invalid token")

// ErrInsufficientScope matches every *InsufficientScopeError with errors.Is.
var ErrInsufficientScope = errors.New("auth: insufficient scope")

// ErrUnavailable matches every *UnavailableError with errors.Is.
var ErrUnavailable = errors.New("auth: authorization server unavailable")

// InvalidTokenError is a token that was presented and rejected: bad
// signature, wrong issuer or audience, expired, inactive... Reason is for the
// gateway's logs only; clients get a generic message.
type InvalidTokenError struct {
	Reason string
}

// Error says why the token was refused.
func (e *InvalidTokenError) Error() string { return "auth: invalid token: " + e.Reason }

// Is makes errors.Is(err, ErrInvalidToken) true.
func (e *InvalidTokenError) Is(target error) bool { return target == ErrInvalidToken }

func invalid(format string, args ...any) error {
	return &InvalidTokenError{Reason: fmt.Sprintf(format, args...)}
}

// InsufficientScopeError is a valid token that lacks scopes: a 403 with
// error="insufficient_scope" and the scopes to ask for (step-up).
type InsufficientScopeError struct {
	// Scopes are the scopes the client should request: every scope the
	// operation needs, including those it already has (MCP: so a step-up
	// does not lose them).
	Scopes []string
	// Missing are the ones the token lacks.
	Missing []string
}

// Error names the missing scopes.
func (e *InsufficientScopeError) Error() string {
	return "auth: insufficient scope: missing " + strings.Join(e.Missing, " ")
}

// Is makes errors.Is(err, ErrInsufficientScope) true.
func (e *InsufficientScopeError) Is(target error) bool { return target == ErrInsufficientScope }

// RequireScopes returns nil if p has every scope, else an
// *InsufficientScopeError naming them; for per-operation step-up checks.
func RequireScopes(p *Principal, scopes ...string) error {
	var missing []string
	for _, s := range scopes {
		if !p.HasScope(s) {
			missing = append(missing, s)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return &InsufficientScopeError{Scopes: slices.Clone(scopes), Missing: missing}
}

// UnavailableError means the token could not be checked because the
// authorization server (discovery, JWKS or introspection) did not answer:
// 503, the client may retry.
type UnavailableError struct {
	Err error
}

// Error says what could not be reached.
func (e *UnavailableError) Error() string {
	return "auth: authorization server unavailable: " + e.Err.Error()
}

// Unwrap returns the cause.
func (e *UnavailableError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrUnavailable) true.
func (e *UnavailableError) Is(target error) bool { return target == ErrUnavailable }

type principalKey struct{}

// WithPrincipal returns ctx carrying p.
func WithPrincipal(ctx context.Context, p *Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// PrincipalFrom returns the principal stored by WithPrincipal (or the
// Middleware), or nil.
func PrincipalFrom(ctx context.Context) *Principal {
	p, _ := ctx.Value(principalKey{}).(*Principal)
	return p
}
