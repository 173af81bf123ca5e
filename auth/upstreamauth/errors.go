package upstreamauth

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"golang.org/x/oauth2"
)

// Errors a caller may branch on with errors.Is. Each is wrapped with the
// detail of the case (the URL tried, the value found).
var (
	// ErrInsecureURL: a URL the gateway would fetch, send a user to or send
	// a credential to is not https and not loopback.
	ErrInsecureURL = errors.New("upstreamauth: https is required")
	// ErrNoResourceMetadata: no protected-resource metadata was found at the
	// URL the challenge named, nor at the well-known URLs.
	ErrNoResourceMetadata = errors.New("upstreamauth: no protected-resource metadata")
	// ErrResourceMismatch: the protected-resource metadata is for another
	// resource than the MCP server's URL (RFC 9728 §3.3).
	ErrResourceMismatch = errors.New("upstreamauth: protected-resource metadata is for another resource")
	// ErrNoAuthorizationServer: no authorization server metadata could be
	// used.
	ErrNoAuthorizationServer = errors.New("upstreamauth: no usable authorization server metadata")
	// ErrIssuerMismatch: an authorization server's metadata names another
	// issuer than the one it was fetched for (RFC 8414 §3.3).
	ErrIssuerMismatch = errors.New("upstreamauth: authorization server metadata names another issuer")
	// ErrNoPKCE: the authorization server does not advertise PKCE S256.
	ErrNoPKCE = errors.New("upstreamauth: authorization server does not advertise PKCE S256")
	// ErrNoIdentity: no client identity is possible: no pre-registered
	// client, no Client ID Metadata Document support, no registration
	// endpoint.
	ErrNoIdentity = errors.New("upstreamauth: no client identity available")
	// ErrNoRegistration: the authorization server has no registration
	// endpoint.
	ErrNoRegistration = errors.New("upstreamauth: authorization server offers no dynamic registration")
	// ErrExpired: the pending authorization is older than the flow's MaxAge.
	ErrExpired = errors.New("upstreamauth: authorization expired")
	// ErrWrongFlow: the pending authorization was started for another
	// authorization server or resource than this flow's.
	ErrWrongFlow = errors.New("upstreamauth: authorization started for another server")
	// ErrStateMismatch: the callback's state is missing, repeated or not the
	// pending authorization's.
	ErrStateMismatch = errors.New("upstreamauth: state mismatch")
	// ErrMixUp: the callback's iss is wrong, repeated, or missing while the
	// server advertises it (RFC 9207): the response may come from another
	// authorization server.
	ErrMixUp = errors.New("upstreamauth: authorization response from an unexpected issuer")
	// ErrNoCode: the callback carries neither a code nor an error.
	ErrNoCode = errors.New("upstreamauth: no authorization code in the callback")
	// ErrNoRefreshToken: the token has no refresh token to refresh with.
	ErrNoRefreshToken = errors.New("upstreamauth: no refresh token")
	// ErrNoRevocation: the authorization server advertises no revocation
	// endpoint; nothing was sent.
	ErrNoRevocation = errors.New("upstreamauth: authorization server offers no revocation")
)

// Endpoints named by OAuthError.
const (
	// EndpointAuthorization is the authorization response, at the callback.
	EndpointAuthorization = "authorization"
	// EndpointToken is the token endpoint (code exchange and refresh).
	EndpointToken = "token"
	// EndpointRegistration is the RFC 7591 registration endpoint.
	EndpointRegistration = "registration"
	// EndpointRevocation is the RFC 7009 revocation endpoint.
	EndpointRevocation = "revocation"
)

// OAuthError is an error answered by the authorization server: an error
// parameter in the authorization response (RFC 6749 §4.1.2.1) or an error
// from the token, registration or revocation endpoint. A caller branches on
// Code: "access_denied" at the callback (the user declined), "invalid_grant"
// on Refresh (the grant is gone: connect again).
type OAuthError struct {
	// Endpoint is EndpointAuthorization, EndpointToken, EndpointRegistration
	// or EndpointRevocation.
	Endpoint string
	// Code is the server's error code ("" when it sent none, as with a bare
	// HTTP 500).
	Code string
	// Description is the server's error_description, scrubbed of the
	// request's secrets and control characters, and shortened.
	Description string
	// StatusCode is the HTTP status (0 for the authorization response).
	StatusCode int
}

// Error names the endpoint, the code, the (scrubbed) description and the
// status; never the response body, which is the server's and may echo a
// secret.
func (e *OAuthError) Error() string {
	var b strings.Builder
	b.WriteString("upstreamauth: ")
	b.WriteString(e.Endpoint)
	b.WriteString(" endpoint")
	if e.Code != "" {
		fmt.Fprintf(&b, ": %s", e.Code)
	}
	if e.Description != "" {
		fmt.Fprintf(&b, ": %q", e.Description)
	}
	if e.StatusCode != 0 {
		fmt.Fprintf(&b, " (HTTP %d)", e.StatusCode)
	}
	return b.String()
}

// maxDescription bounds the server's text kept in an OAuthError: it ends up
// in logs and pages.
const maxDescription = 300

// scrub makes the authorization server's text safe to carry: the server may
// echo a parameter it was sent ("code abc is invalid"), so each secret of the
// request is cut out; control characters go, so that the text cannot forge a
// log line.
func scrub(s string, secrets ...string) string {
	for _, sec := range secrets {
		if sec == "" {
			continue
		}
		// As sent, and as form-encoded (how it travelled).
		s = strings.ReplaceAll(s, sec, "[redacted]")
		if enc := url.QueryEscape(sec); enc != sec {
			s = strings.ReplaceAll(s, enc, "[redacted]")
		}
	}
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
	if len(s) > maxDescription {
		s = strings.ToValidUTF8(s[:maxDescription], "") + "…"
	}
	return s
}

// tokenError turns an x/oauth2 error into ours. A *oauth2.RetrieveError is
// not kept: its Error() prints the response body, which is the server's and
// may echo a secret.
func tokenError(err error, secrets ...string) error {
	var re *oauth2.RetrieveError
	if !errors.As(err, &re) {
		return fmt.Errorf("upstreamauth: token endpoint: %w", err)
	}
	oe := &OAuthError{
		Endpoint:    EndpointToken,
		Code:        scrub(re.ErrorCode, secrets...),
		Description: scrub(re.ErrorDescription, secrets...),
	}
	if re.Response != nil {
		oe.StatusCode = re.Response.StatusCode
	}
	return oe
}
