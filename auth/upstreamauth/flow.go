package upstreamauth

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/switchboard-mcp/switchboard/auth"
	"golang.org/x/oauth2"
)

// DefaultMaxAge is how long a pending authorization may wait for its
// callback when FlowConfig.MaxAge is zero: long enough to sign in at two
// providers, short enough that a forgotten link is dead.
const DefaultMaxAge = 10 * time.Minute

// FlowConfig is what a Flow is built from.
type FlowConfig struct {
	// Server is the upstream's authorization, from Discover (or a cached
	// copy of it).
	Server *Server
	// Client is the identity from ChooseIdentity or Register.
	Client Client
	// RedirectURL is the gateway's callback: https, or http to a loopback
	// host ("All redirect URIs MUST be either localhost or use HTTPS").
	RedirectURL string
	// Scopes are requested as they are (see SelectScopes); none means no
	// scope parameter.
	Scopes []string
	// OmitResource leaves out the RFC 8707 resource parameter. The
	// specification has "MCP clients MUST send this parameter regardless of
	// whether authorization servers support it", so it is sent by default;
	// omitting it is for servers that refuse it (Microsoft Entra ID refuses
	// a resource sent with its v2 scopes; agentgateway #2064).
	OmitResource bool
	// HTTPClient reaches the token and revocation endpoints (nil:
	// http.DefaultClient).
	HTTPClient *http.Client
	// MaxAge is how old a Pending may be at Finish (zero: DefaultMaxAge).
	MaxAge time.Duration
	// DPoP is the key token requests prove (RFC 9449 §5) when the resource
	// takes DPoP (Server.ResourceDPoP) and the server lists ES256 in
	// dpop_signing_alg_values_supported: the tokens are then bound to it,
	// and token_type DPoP is accepted. nil: Bearer tokens only.
	DPoP *auth.DPoPKey
}

// Flow is the authorization-code grant with PKCE toward one authorization
// server, for one resource, as one client. It holds no per-user state: the
// Pending record of each authorization is the caller's to keep, so that the
// callback may land on any replica. A Flow is safe for concurrent use.
type Flow struct {
	srv          Server
	client       Client
	conf         *oauth2.Config
	omitResource bool
	http         *http.Client
	// refreshHTTP is http with the resource added to refresh requests.
	refreshHTTP *http.Client
	maxAge      time.Duration
	// dpop is whether token requests carry proofs (and DPoP tokens are taken).
	dpop bool
}

// NewFlow checks cfg and builds the flow. It refuses a server without PKCE
// S256 (ErrNoPKCE), URLs that are neither https nor loopback
// (ErrInsecureURL), a client without an ID, and an AuthMethod it does not
// support or that needs a secret it lacks.
func NewFlow(cfg FlowConfig) (*Flow, error) {
	srv := cfg.Server
	if srv == nil {
		return nil, errors.New("upstreamauth: flow: no server")
	}
	if srv.Issuer == "" {
		return nil, errors.New("upstreamauth: flow: the server has no issuer")
	}
	if !slices.Contains(srv.CodeChallengeMethods, "S256") {
		return nil, fmt.Errorf("%w: %s", ErrNoPKCE, srv.Issuer)
	}
	for _, u := range []struct{ what, url string }{
		{"authorization_endpoint", srv.AuthorizationEndpoint},
		{"token_endpoint", srv.TokenEndpoint},
		{"redirect URL", cfg.RedirectURL},
	} {
		if _, err := checkURL(u.what, u.url); err != nil {
			return nil, err
		}
	}
	if srv.RevocationEndpoint != "" {
		if _, err := checkURL("revocation_endpoint", srv.RevocationEndpoint); err != nil {
			return nil, err
		}
	}
	if srv.Resource == "" && !cfg.OmitResource {
		return nil, errors.New("upstreamauth: flow: the server has no resource to send")
	}
	if cfg.Client.ID == "" {
		return nil, errors.New("upstreamauth: flow: no client_id")
	}
	client := cfg.Client
	method, err := authMethod(client, srv.TokenEndpointAuthMethods)
	if err != nil {
		return nil, err
	}
	client.AuthMethod = method
	style := oauth2.AuthStyleInHeader
	if method != AuthSecretBasic {
		// A public client sends its client_id in the body (RFC 6749 §3.2.1),
		// client_secret_post its secret too.
		style = oauth2.AuthStyleInParams
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}
	dpop := cfg.DPoP != nil && srv.ResourceDPoP && slices.Contains(srv.DPoPSigningAlgs, auth.DPoPAlg)
	if dpop {
		hc = &http.Client{
			Transport:     &auth.DPoPTransport{Base: hc.Transport, Key: cfg.DPoP, TokenURL: srv.TokenEndpoint},
			CheckRedirect: hc.CheckRedirect,
			Jar:           hc.Jar,
			Timeout:       hc.Timeout,
		}
	}
	maxAge := cfg.MaxAge
	if maxAge <= 0 {
		maxAge = DefaultMaxAge
	}
	f := &Flow{
		srv:    *srv,
		client: client,
		conf: &oauth2.Config{
			ClientID:     client.ID,
			ClientSecret: client.Secret,
			Endpoint: oauth2.Endpoint{
				AuthURL:   srv.AuthorizationEndpoint,
				TokenURL:  srv.TokenEndpoint,
				AuthStyle: style,
			},
			RedirectURL: cfg.RedirectURL,
			Scopes:      slices.Clone(cfg.Scopes),
		},
		omitResource: cfg.OmitResource,
		http:         hc,
		refreshHTTP:  hc,
		maxAge:       maxAge,
		dpop:         dpop,
	}
	if !cfg.OmitResource {
		tokenURL, _ := url.Parse(srv.TokenEndpoint) // checked above
		base := hc.Transport
		if base == nil {
			base = http.DefaultTransport
		}
		f.refreshHTTP = &http.Client{
			Transport:     resourceOnRefresh{base: base, tokenURL: tokenURL.String(), resource: srv.Resource},
			CheckRedirect: hc.CheckRedirect,
			Jar:           hc.Jar,
			Timeout:       hc.Timeout,
		}
	}
	return f, nil
}

// Issuer is the issuer of the flow's authorization server: what a grant it
// made is bound to.
func (f *Flow) Issuer() string { return f.srv.Issuer }

// authMethod resolves the client's token endpoint authentication.
func authMethod(c Client, supported []string) (string, error) {
	m := c.AuthMethod
	switch {
	case m == "" && c.Secret == "":
		return AuthNone, nil
	case m == "":
		// RFC 8414 §2: token_endpoint_auth_methods_supported "If omitted,
		// the default is "client_secret_basic"".
		if len(supported) == 0 || slices.Contains(supported, AuthSecretBasic) || !slices.Contains(supported, AuthSecretPost) {
			return AuthSecretBasic, nil
		}
		return AuthSecretPost, nil
	case !validAuthMethod(m):
		return "", fmt.Errorf("upstreamauth: flow: unsupported token endpoint auth method %q", m)
	case m == AuthNone && c.Secret != "":
		return "", errors.New("upstreamauth: flow: a client secret with auth method none")
	case m != AuthNone && c.Secret == "":
		return "", fmt.Errorf("upstreamauth: flow: auth method %s without a client secret", m)
	}
	return m, nil
}

// Pending is one authorization in progress: what Start made and Finish
// needs. The caller keeps it under State, single-use (deleted when the
// callback is handled, whatever the outcome) and bound to the principal and
// the upstream it was made for, since the callback may reach another
// replica. Verifier is a secret: keep the record encrypted, or in a store
// only the gateway reads. String and LogValue hide it.
type Pending struct {
	// State is the state parameter: 130 random bits.
	State string `json:"state"`
	// Verifier is the PKCE code verifier.
	Verifier string `json:"verifier"`
	// Issuer and Resource are the flow's, so that Finish refuses a record
	// made for another server.
	Issuer   string `json:"issuer"`
	Resource string `json:"resource"`
	// CreatedAt bounds the record's life (FlowConfig.MaxAge).
	CreatedAt time.Time `json:"createdAt"`
}

// String shows the pending authorization without its verifier.
func (p Pending) String() string {
	return fmt.Sprintf("Pending{State: %s, Issuer: %s, Resource: %s, CreatedAt: %s, Verifier: [redacted]}",
		p.State, p.Issuer, p.Resource, p.CreatedAt.Format(time.RFC3339))
}

// GoString is String, so that %#v hides the verifier too.
func (p Pending) GoString() string { return p.String() }

// LogValue shows the pending authorization without its verifier in slog.
func (p Pending) LogValue() slog.Value {
	return slog.GroupValue(slog.String("issuer", p.Issuer), slog.String("resource", p.Resource), slog.Time("createdAt", p.CreatedAt))
}

// Start begins an authorization: a fresh state and PKCE verifier, and the
// authorization server's URL to send the user to, with response_type code,
// client_id, redirect_uri, scope, state, code_challenge (S256) and, unless
// omitted, resource. "MCP clients MUST implement PKCE ... MUST use the S256
// code challenge method"; the state is checked at Finish, as "MCP clients
// SHOULD use and verify state parameters in the authorization code flow and
// discard any results that do not include or have a mismatch with the
// original state". extra scopes are asked for beside the flow's own: a
// step-up's (SEP-2350), the union of the granted scopes and those the
// upstream's insufficient_scope challenge named.
func (f *Flow) Start(extra ...string) (Pending, string) {
	p := Pending{
		State:     rand.Text(),
		Verifier:  oauth2.GenerateVerifier(),
		Issuer:    f.srv.Issuer,
		Resource:  f.srv.Resource,
		CreatedAt: time.Now().Round(0),
	}
	opts := []oauth2.AuthCodeOption{oauth2.S256ChallengeOption(p.Verifier)}
	if len(extra) > 0 {
		scopes := slices.Clone(f.conf.Scopes)
		for _, s := range extra {
			if s != "" && !slices.Contains(scopes, s) {
				scopes = append(scopes, s)
			}
		}
		opts = append(opts, oauth2.SetAuthURLParam("scope", strings.Join(scopes, " ")))
	}
	if !f.omitResource {
		// "The resource parameter MUST be included in both authorization
		// requests and token requests" (Resource Parameter Implementation).
		opts = append(opts, oauth2.SetAuthURLParam("resource", f.srv.Resource))
	}
	return p, f.conf.AuthCodeURL(p.State, opts...)
}

// Finish completes the authorization from the callback's query: it checks,
// in order, that p is this flow's (ErrWrongFlow) and not older than MaxAge
// (ErrExpired), that the state is p's (ErrStateMismatch, compared in
// constant time), that iss is the issuer's per RFC 9207 (ErrMixUp), that
// the server sent no error (an *OAuthError with its code), and that there is
// one code (ErrNoCode); then it exchanges the code with the verifier and the
// resource. A token endpoint refusal is an *OAuthError ("invalid_grant" for
// a code used twice). The caller must have deleted p from its store before
// calling, so that a replayed callback finds nothing.
func (f *Flow) Finish(ctx context.Context, p Pending, callback url.Values) (*oauth2.Token, error) {
	if p.Issuer != f.srv.Issuer || p.Resource != f.srv.Resource {
		return nil, fmt.Errorf("%w: started for %s (%s), finishing at %s (%s)", ErrWrongFlow, p.Issuer, p.Resource, f.srv.Issuer, f.srv.Resource)
	}
	if p.CreatedAt.IsZero() || time.Since(p.CreatedAt) > f.maxAge {
		return nil, fmt.Errorf("%w: started %s ago, the limit is %s", ErrExpired, time.Since(p.CreatedAt).Round(time.Second), f.maxAge)
	}
	state, ok := single(callback, "state")
	if !ok || p.State == "" || subtle.ConstantTimeCompare([]byte(state), []byte(p.State)) != 1 {
		return nil, ErrStateMismatch
	}
	if err := f.checkIss(callback["iss"]); err != nil {
		return nil, err
	}
	secrets := []string{p.Verifier, f.client.Secret}
	if code := callback.Get("code"); code != "" {
		secrets = append(secrets, code)
	}
	if e := callback.Get("error"); e != "" {
		// RFC 6749 §4.1.2.1. Checked after iss: RFC 9207 §2.4 has clients
		// check iss in error responses too, and "not assume that the error
		// originates from the intended authorization server" otherwise.
		return nil, &OAuthError{
			Endpoint:    EndpointAuthorization,
			Code:        scrub(e, secrets...),
			Description: scrub(callback.Get("error_description"), secrets...),
		}
	}
	code, ok := single(callback, "code")
	if !ok || code == "" {
		return nil, ErrNoCode
	}
	opts := []oauth2.AuthCodeOption{oauth2.VerifierOption(p.Verifier)}
	if !f.omitResource {
		opts = append(opts, oauth2.SetAuthURLParam("resource", f.srv.Resource))
	}
	tok, err := f.conf.Exchange(context.WithValue(ctx, oauth2.HTTPClient, f.http), code, opts...)
	if err != nil {
		return nil, tokenError(err, secrets...)
	}
	if err := f.checkTokenType(tok); err != nil {
		return nil, err
	}
	return tok, nil
}

// checkIss applies RFC 9207 §2.4 to the callback's iss values. "Clients
// that support this specification MUST extract the value of the iss
// parameter from authorization responses they receive if the parameter is
// present" and "compare the result to the issuer identifier of the
// authorization server where the authorization request was sent to. This
// comparison MUST use simple string comparison"; "If the value does not
// match the expected issuer identifier, clients MUST reject the
// authorization response". A server advertising
// authorization_response_iss_parameter_supported always sends it, so its
// absence then is a response from elsewhere: refused too. Without the
// advertisement, an absent iss is accepted (the server predates RFC 9207).
func (f *Flow) checkIss(iss []string) error {
	switch len(iss) {
	case 0:
		if f.srv.IssParameterSupported {
			return fmt.Errorf("%w: %s advertises iss and the response has none", ErrMixUp, f.srv.Issuer)
		}
		return nil
	case 1:
		if iss[0] != f.srv.Issuer {
			return fmt.Errorf("%w: iss %q, expected %q", ErrMixUp, scrub(iss[0]), f.srv.Issuer)
		}
		return nil
	default:
		return fmt.Errorf("%w: iss repeated", ErrMixUp)
	}
}

// single is the parameter's one value: RFC 6749 §3.1, "Request and response
// parameters MUST NOT be included more than once".
func single(v url.Values, key string) (string, bool) {
	vals := v[key]
	if len(vals) != 1 {
		return "", false
	}
	return vals[0], true
}

// checkTokenType refuses a token the gateway cannot present: a Bearer
// token always, a DPoP one (RFC 9449 §5) when the token request carried a
// proof, anything else never.
func (f *Flow) checkTokenType(tok *oauth2.Token) error {
	switch {
	case tok.TokenType == "" || strings.EqualFold(tok.TokenType, "bearer"):
		return nil
	case f.dpop && strings.EqualFold(tok.TokenType, "dpop"):
		tok.TokenType = "DPoP" // the Authorization scheme, as RFC 9449 §7.1 spells it
		return nil
	}
	return fmt.Errorf("upstreamauth: token endpoint: token_type %q is not Bearer", scrub(tok.TokenType))
}

// Refresh renews tok with its refresh token, now, whatever tok's expiry
// (the caller decides when: before expiry, or once on an upstream 401). It
// reports whether the server rotated the refresh token: then the returned
// token's RefreshToken is the new one and the old one is dead, so the
// caller must store the result before using it. Without rotation the
// returned token keeps tok's refresh token. The resource is sent unless
// omitted. It returns ErrNoRefreshToken when tok has none, and an
// *OAuthError for the server's refusal ("invalid_grant": the grant is gone,
// connect again).
func (f *Flow) Refresh(ctx context.Context, tok *oauth2.Token) (*oauth2.Token, bool, error) {
	if tok == nil || tok.RefreshToken == "" {
		return nil, false, ErrNoRefreshToken
	}
	// A token with only the refresh token is never Valid, so the source
	// refreshes at once; x/oauth2 keeps the old refresh token when the
	// response has none.
	src := f.conf.TokenSource(context.WithValue(ctx, oauth2.HTTPClient, f.refreshHTTP), &oauth2.Token{RefreshToken: tok.RefreshToken})
	nt, err := src.Token()
	if err != nil {
		return nil, false, tokenError(err, tok.RefreshToken, tok.AccessToken, f.client.Secret)
	}
	if err := f.checkTokenType(nt); err != nil {
		return nil, false, err
	}
	return nt, nt.RefreshToken != tok.RefreshToken, nil
}

// resourceOnRefresh adds the resource to refresh requests at the token
// endpoint. x/oauth2 refreshes with grant_type and refresh_token alone, and
// the specification has the resource "included in both authorization
// requests and token requests"; RFC 8707 §2.2 allows it on a refresh.
type resourceOnRefresh struct {
	base     http.RoundTripper
	tokenURL string
	resource string
}

// RoundTrip implements http.RoundTripper.
func (t resourceOnRefresh) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method != http.MethodPost || r.URL.String() != t.tokenURL || r.Body == nil {
		return t.base.RoundTrip(r)
	}
	body, err := io.ReadAll(r.Body)
	_ = r.Body.Close()
	if err != nil {
		return nil, err
	}
	if form, err := url.ParseQuery(string(body)); err == nil && form.Get("grant_type") == "refresh_token" && !form.Has("resource") {
		form.Set("resource", t.resource)
		body = []byte(form.Encode())
	}
	r2 := r.Clone(r.Context())
	r2.Body = io.NopCloser(bytes.NewReader(body))
	r2.ContentLength = int64(len(body))
	r2.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	return t.base.RoundTrip(r2)
}

// Token type hints for Revoke (RFC 7009 §2.1).
const (
	// HintAccessToken says the token is an access token.
	HintAccessToken = "access_token"
	// HintRefreshToken says the token is a refresh token.
	HintRefreshToken = "refresh_token"
)

// maxRevocation bounds a revocation error body.
const maxRevocation = 64 << 10

// Revoke asks the authorization server to revoke token (RFC 7009 §2.1),
// with hint ("" or HintAccessToken or HintRefreshToken). Revoking the
// refresh token revokes the grant at servers that tie the two. It sends
// nothing and returns ErrNoRevocation when the server advertises no
// revocation endpoint: the caller then only forgets the tokens. A refusal
// is an *OAuthError (a 503 may be retried).
func (f *Flow) Revoke(ctx context.Context, token, hint string) error {
	if f.srv.RevocationEndpoint == "" {
		return fmt.Errorf("%w at %s", ErrNoRevocation, f.srv.Issuer)
	}
	form := url.Values{"token": {token}}
	if hint != "" {
		form.Set("token_type_hint", hint)
	}
	switch f.client.AuthMethod {
	case AuthNone:
		form.Set("client_id", f.client.ID)
	case AuthSecretPost:
		form.Set("client_id", f.client.ID)
		form.Set("client_secret", f.client.Secret)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, f.srv.RevocationEndpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return fmt.Errorf("upstreamauth: revocation: %w", err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	if f.client.AuthMethod == AuthSecretBasic {
		// RFC 6749 §2.3.1: both form-encoded before Basic.
		req.SetBasicAuth(url.QueryEscape(f.client.ID), url.QueryEscape(f.client.Secret))
	}
	resp, err := f.http.Do(req)
	if err != nil {
		return fmt.Errorf("upstreamauth: revocation: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	// RFC 7009 §2.2: "The authorization server responds with HTTP status
	// code 200 if the token has been revoked successfully or if the client
	// submitted an invalid token."
	if resp.StatusCode == http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxRevocation))
		return nil
	}
	body, _ := readLimited(resp.Body, maxRevocation)
	return responseError(EndpointRevocation, resp.StatusCode, body, token, f.client.Secret)
}
