package auth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

// Workload identity (SEP-1933): the gateway proves who it is with a JWT its platform issues it (a Kubernetes
// projected service-account token, a cloud's workload identity token), presented in the RFC 7523 JWT bearer grant,
// instead of a stored client secret. The platform rotates the file; the gateway reads it again when it changes.

// WorkloadIdentityConfig configures a workload-identity upstream credential.
type WorkloadIdentityConfig struct {
	// TokenFile holds the workload's JWT (the assertion). It is read at start and again, at most once a second,
	// when it changes.
	TokenFile string
	// TokenURL is the upstream authorization server's token endpoint.
	TokenURL string
	// ClientID names the gateway's client there when the server wants one (sent as a form parameter, with no
	// secret); "" for none.
	ClientID string
	Scopes   []string
	// Resource is the RFC 8707 resource indicator (the upstream's URL).
	Resource string
}

// ErrWorkloadRefused is what a refusal by the authorization server is (errors.Is): the assertion is expired, meant
// for another audience, or the workload is not allowed the grant or the scopes.
var ErrWorkloadRefused = errors.New("auth: workload identity refused")

// NewWorkloadIdentitySource returns the gateway's own token from the JWT bearer grant with the workload's token as
// the assertion, reused until 60 seconds before it expires. A refusal is not retried by the source: the next
// request asks again, with the file as it is then. The token file is read now; a missing or empty file is an
// error. ctx only carries client (nil = default); its cancellation is ignored.
func NewWorkloadIdentitySource(ctx context.Context, cfg WorkloadIdentityConfig, client *http.Client) (*ClientCredentialsSource, error) {
	fv := &fileValue{header: "the workload token file", path: cfg.TokenFile}
	if err := fv.load(); err != nil {
		return nil, err
	}
	ctx = context.WithoutCancel(ctx)
	if client != nil {
		ctx = context.WithValue(ctx, oauth2.HTTPClient, client)
	}
	ts := &jwtBearerSource{ctx: ctx, cfg: cfg, assertion: fv}
	return &ClientCredentialsSource{ts: oauth2.ReuseTokenSourceWithExpiry(nil, ts, earlyRefresh)}, nil
}

// jwtBearerSource fetches a token with the JWT bearer grant and the file's current assertion.
type jwtBearerSource struct {
	ctx       context.Context
	cfg       WorkloadIdentityConfig
	assertion *fileValue
}

func (s *jwtBearerSource) Token() (*oauth2.Token, error) {
	// x/oauth2's client credentials request lets grant_type be replaced; the client authenticates by its id
	// alone (token_endpoint_auth_method none), as the assertion is its credential.
	params := url.Values{"grant_type": {grantJWTBearer}, "assertion": {s.assertion.get()}}
	tok, err := paramsGrant(s.ctx, s.cfg.ClientID, s.cfg.TokenURL, s.cfg.Resource, s.cfg.Scopes, params)
	if err == nil {
		return tok, nil
	}
	// The server's answer may echo what it was sent: keep only its error code.
	if code, ok := refusalCode(err); ok {
		return nil, &RefusedError{Kind: ErrWorkloadRefused, Party: "the authorization server", Code: code}
	}
	return nil, fmt.Errorf("auth: workload identity: %s", strings.ReplaceAll(err.Error(), s.assertion.get(), "<assertion>"))
}

// paramsGrant asks a token endpoint for a token with x/oauth2's client credentials request, the client named in
// the body and its credential (an assertion) among params; resource, when set, is sent too (RFC 8707).
func paramsGrant(ctx context.Context, clientID, tokenURL, resource string, scopes []string, params url.Values) (*oauth2.Token, error) {
	if resource != "" {
		params.Set("resource", resource)
	}
	return (&clientcredentials.Config{ClientID: clientID, TokenURL: tokenURL, Scopes: scopes,
		EndpointParams: params, AuthStyle: oauth2.AuthStyleInParams}).Token(ctx)
}

// refusalCode is the OAuth error code of a token endpoint's refusal (x/oauth2's RetrieveError), sanitized, or its
// HTTP status when it gave none: the only part of the answer kept, since the rest may echo what it was sent.
func refusalCode(err error) (string, bool) {
	var re *oauth2.RetrieveError
	if !errors.As(err, &re) {
		return "", false
	}
	code := sanitize(re.ErrorCode, 64)
	if code == "" && re.Response != nil {
		code = re.Response.Status
	}
	return code, true
}
