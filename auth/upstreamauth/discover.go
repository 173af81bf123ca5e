package upstreamauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"

	"github.com/switchboard-mcp/switchboard/auth"
)

// Server is what the gateway knows of an upstream's authorization: the
// resource it asks tokens for and the authorization server that issues them.
// It holds no secret, and may be cached (it marshals to JSON) for as long as
// the metadata documents would be.
type Server struct {
	// Resource is the protected resource's identifier, from its metadata:
	// the RFC 8707 resource parameter sent to the authorization server.
	Resource string `json:"resource"`
	// ScopesSupported is the protected resource's scopes_supported, which
	// the specification's scope selection falls back on (see SelectScopes).
	ScopesSupported []string `json:"scopesSupported,omitempty"`
	// Issuer is the authorization server's issuer, as its own metadata
	// declares it: what RFC 9207's iss must equal.
	Issuer string `json:"issuer"`
	// AuthorizationEndpoint is where the user is sent to consent.
	AuthorizationEndpoint string `json:"authorizationEndpoint"`
	// TokenEndpoint exchanges codes and refresh tokens.
	TokenEndpoint string `json:"tokenEndpoint"`
	// RegistrationEndpoint is "" when the server offers no RFC 7591
	// registration.
	RegistrationEndpoint string `json:"registrationEndpoint,omitempty"`
	// RevocationEndpoint is "" when the server offers no RFC 7009
	// revocation.
	RevocationEndpoint string `json:"revocationEndpoint,omitempty"`
	// CodeChallengeMethods is code_challenge_methods_supported; Discover
	// refuses a server without "S256" in it.
	CodeChallengeMethods []string `json:"codeChallengeMethods"`
	// TokenEndpointAuthMethods is token_endpoint_auth_methods_supported
	// (nil: RFC 8414's default, client_secret_basic).
	TokenEndpointAuthMethods []string `json:"tokenEndpointAuthMethods,omitempty"`
	// IssParameterSupported is authorization_response_iss_parameter_supported
	// (RFC 9207): the callback must then carry iss.
	IssParameterSupported bool `json:"issParameterSupported,omitempty"`
	// CIMDSupported is client_id_metadata_document_supported.
	CIMDSupported bool `json:"cimdSupported,omitempty"`
	// DPoPSigningAlgs is dpop_signing_alg_values_supported (RFC 9449 §5.1):
	// the server binds tokens to a DPoP key signing with one of them.
	DPoPSigningAlgs []string `json:"dpopSigningAlgs,omitempty"`
	// ResourceDPoP is whether the protected resource takes DPoP-bound
	// tokens: its 401 had a DPoP challenge, or its metadata lists ES256 in
	// dpop_signing_alg_values_supported or requires bound tokens. A DPoP
	// token is asked for only then, so that a resource that knows only
	// Bearer keeps working behind an authorization server that offers DPoP.
	ResourceDPoP bool `json:"resourceDPoP,omitempty"`
}

// maxMetadata bounds a metadata document read: they are a few kilobytes.
const maxMetadata = 256 << 10

// wellKnownResource is RFC 9728's well-known path.
const wellKnownResource = "/.well-known/oauth-protected-resource"

// Discover finds the authorization server of the MCP server at mcpURL, from
// the challenge of its 401 (ch may be empty), as the specification's
// "Authorization Server Discovery" has it:
//
//  1. the protected-resource metadata, at ch.ResourceMetadata when the
//     challenge names it, else at the path-suffixed and then the root
//     well-known URL; its resource must be the MCP server's (see
//     resourceCovers);
//  2. for each of its authorization_servers in turn, until one is usable,
//     the RFC 8414 or OpenID Connect metadata at the URLs the specification
//     orders; its issuer must be the one listed, and it must advertise PKCE
//     S256.
//
// client nil means http.DefaultClient. ctx bounds every request. Every URL
// must be https, or http to a loopback host. The errors name the URLs tried
// and wrap ErrNoResourceMetadata, ErrResourceMismatch,
// ErrNoAuthorizationServer, ErrIssuerMismatch, ErrNoPKCE or ErrInsecureURL.
func Discover(ctx context.Context, client *http.Client, mcpURL string, ch Challenge) (*Server, error) {
	if client == nil {
		client = http.DefaultClient
	}
	mcp, err := checkURL("MCP server URL", mcpURL)
	if err != nil {
		return nil, err
	}
	prm, from, err := fetchResourceMetadata(ctx, client, mcp, ch.ResourceMetadata)
	if err != nil {
		return nil, err
	}
	if len(prm.AuthorizationServers) == 0 {
		return nil, fmt.Errorf("%w: the protected-resource metadata at %s lists no authorization_servers", ErrNoAuthorizationServer, from)
	}
	// RFC 9728 §7.6 leaves the choice among several servers to the client:
	// the first usable one, in the order listed.
	var errs []error
	for _, issuer := range prm.AuthorizationServers {
		srv, err := fetchServerMetadata(ctx, client, issuer)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		srv.Resource = prm.Resource
		srv.ScopesSupported = prm.ScopesSupported
		srv.ResourceDPoP = ch.DPoP || prm.DPoPBoundRequired || slices.Contains(prm.DPoPSigningAlgs, auth.DPoPAlg)
		return srv, nil
	}
	return nil, errors.Join(errs...)
}

type resourceMetadata struct {
	Resource             string   `json:"resource"`
	AuthorizationServers []string `json:"authorization_servers"`
	ScopesSupported      []string `json:"scopes_supported"`
	// RFC 9728 §2's DPoP parameters: either says the resource takes DPoP.
	DPoPSigningAlgs   []string `json:"dpop_signing_alg_values_supported"`
	DPoPBoundRequired bool     `json:"dpop_bound_access_tokens_required"`
}

// fetchResourceMetadata returns the protected-resource metadata and the URL
// it came from.
func fetchResourceMetadata(ctx context.Context, client *http.Client, mcp *url.URL, announced string) (*resourceMetadata, string, error) {
	// "MCP clients MUST support both discovery mechanisms and use the
	// resource metadata URL from the parsed WWW-Authenticate headers when
	// present; otherwise, they MUST fall back to constructing and requesting
	// the well-known URIs in the order listed above" (Protected Resource
	// Metadata Discovery Requirements): the path-suffixed one, then the root.
	// A URL the server named is not second-guessed by probing others.
	var candidates []string
	if announced != "" {
		candidates = []string{announced}
	} else {
		candidates = resourceMetadataURLs(mcp)
	}
	var errs []error
	for _, c := range candidates {
		var prm resourceMetadata
		err := getJSON(ctx, client, "protected-resource metadata", c, &prm)
		if notFound(err) {
			errs = append(errs, err)
			continue
		}
		if err != nil {
			return nil, "", err
		}
		if prm.Resource == "" {
			return nil, "", fmt.Errorf("%w: the protected-resource metadata at %s has no resource", ErrResourceMismatch, c)
		}
		res, err := checkURL("protected resource", prm.Resource)
		if err != nil {
			return nil, "", fmt.Errorf("the protected-resource metadata at %s: %w", c, err)
		}
		// RFC 9728 §3.3: "If these values are not identical, the data
		// contained in the response MUST NOT be used." (relaxed to a parent
		// path of the same origin, see resourceCovers).
		if !resourceCovers(res, mcp) {
			return nil, "", fmt.Errorf("%w: the metadata at %s is for %q, not %q", ErrResourceMismatch, c, prm.Resource, mcp.String())
		}
		return &prm, c, nil
	}
	return nil, "", fmt.Errorf("%w for %s: %w", ErrNoResourceMetadata, mcp.String(), errors.Join(errs...))
}

// resourceMetadataURLs are the well-known URLs of RFC 9728 §3.1 for the
// resource at mcp: "/.well-known/oauth-protected-resource" inserted between
// the host and the path and query, when there is a path or query, then the
// root document.
func resourceMetadataURLs(mcp *url.URL) []string {
	base := mcp.Scheme + "://" + mcp.Host + wellKnownResource
	p := mcp.EscapedPath()
	if p == "/" {
		p = ""
	}
	var urls []string
	if p != "" || mcp.RawQuery != "" {
		suffixed := base + p
		if mcp.RawQuery != "" {
			suffixed += "?" + mcp.RawQuery
		}
		urls = append(urls, suffixed)
	}
	return append(urls, base)
}

// authorizationServerMetadata holds the RFC 8414 (and OpenID Connect
// Discovery) fields the flow uses.
type authorizationServerMetadata struct {
	Issuer                            string   `json:"issuer"`
	AuthorizationEndpoint             string   `json:"authorization_endpoint"`
	TokenEndpoint                     string   `json:"token_endpoint"`
	RegistrationEndpoint              string   `json:"registration_endpoint"`
	RevocationEndpoint                string   `json:"revocation_endpoint"`
	CodeChallengeMethodsSupported     []string `json:"code_challenge_methods_supported"`
	TokenEndpointAuthMethodsSupported []string `json:"token_endpoint_auth_methods_supported"`
	IssParameterSupported             bool     `json:"authorization_response_iss_parameter_supported"`
	CIMDSupported                     bool     `json:"client_id_metadata_document_supported"`
	DPoPSigningAlgValuesSupported     []string `json:"dpop_signing_alg_values_supported"`
}

// fetchServerMetadata tries the metadata URLs of issuer in order; a 4xx
// answer moves on to the next, anything else stops.
func fetchServerMetadata(ctx context.Context, client *http.Client, issuer string) (*Server, error) {
	iu, err := checkURL("authorization server", issuer)
	if err != nil {
		return nil, err
	}
	if iu.RawQuery != "" {
		// RFC 8414 §2: the issuer is a URL "that uses the "https" scheme and
		// has no query or fragment components".
		return nil, fmt.Errorf("%w: issuer %q has a query", ErrNoAuthorizationServer, issuer)
	}
	var errs []error
	for _, c := range serverMetadataURLs(iu) {
		var m authorizationServerMetadata
		err := getJSON(ctx, client, "authorization server metadata", c, &m)
		if notFound(err) {
			errs = append(errs, err)
			continue
		}
		if err != nil {
			return nil, err
		}
		return m.server(issuer, c)
	}
	return nil, fmt.Errorf("%w for %s: %w", ErrNoAuthorizationServer, issuer, errors.Join(errs...))
}

// serverMetadataURLs are the URLs the specification orders ("Authorization
// Server Metadata Discovery"). For an issuer with a path (e.g.
// https://auth.example.com/tenant1), "clients MUST try endpoints in the
// following priority order": RFC 8414 with path insertion, OpenID Connect
// with path insertion, OpenID Connect with the path appended. Without a path:
// RFC 8414, then OpenID Connect. RFC 8414 §3.1: "any terminating "/" MUST be
// removed before inserting "/.well-known/"".
func serverMetadataURLs(issuer *url.URL) []string {
	host := issuer.Scheme + "://" + issuer.Host
	p := trimmedPath(issuer)
	if p == "" {
		return []string{
			host + "/.well-known/oauth-authorization-server",
			host + "/.well-known/openid-configuration",
		}
	}
	return []string{
		host + "/.well-known/oauth-authorization-server" + p,
		host + "/.well-known/openid-configuration" + p,
		host + p + "/.well-known/openid-configuration",
	}
}

// server validates the metadata fetched from url for the issuer named by
// the protected resource.
func (m *authorizationServerMetadata) server(named, from string) (*Server, error) {
	if !sameIssuer(named, m.Issuer) {
		// RFC 8414 §3.3: "If these values are not identical, the data
		// contained in the response MUST NOT be used."
		return nil, fmt.Errorf("%w: the metadata at %s names %q, not %q", ErrIssuerMismatch, from, m.Issuer, named)
	}
	for _, e := range []struct {
		what, url string
		required  bool
	}{
		{"authorization_endpoint", m.AuthorizationEndpoint, true},
		{"token_endpoint", m.TokenEndpoint, true},
		{"registration_endpoint", m.RegistrationEndpoint, false},
		{"revocation_endpoint", m.RevocationEndpoint, false},
	} {
		if e.url == "" && !e.required {
			continue
		}
		if e.url == "" {
			return nil, fmt.Errorf("%w: the metadata at %s has no %s", ErrNoAuthorizationServer, from, e.what)
		}
		if _, err := checkURL(e.what, e.url); err != nil {
			return nil, fmt.Errorf("the metadata at %s: %w", from, err)
		}
	}
	// "If code_challenge_methods_supported is absent, the authorization
	// server does not support PKCE and MCP clients MUST refuse to proceed",
	// and for OpenID Connect Discovery "If the field is absent, MCP clients
	// MUST refuse to proceed" (Authorization Code Protection); and "MCP
	// clients MUST use the S256 code challenge method".
	if !slices.Contains(m.CodeChallengeMethodsSupported, "S256") {
		return nil, fmt.Errorf("%w: the metadata at %s lists code_challenge_methods_supported %q", ErrNoPKCE, from, m.CodeChallengeMethodsSupported)
	}
	return &Server{
		Issuer:                   m.Issuer,
		AuthorizationEndpoint:    m.AuthorizationEndpoint,
		TokenEndpoint:            m.TokenEndpoint,
		RegistrationEndpoint:     m.RegistrationEndpoint,
		RevocationEndpoint:       m.RevocationEndpoint,
		CodeChallengeMethods:     m.CodeChallengeMethodsSupported,
		TokenEndpointAuthMethods: m.TokenEndpointAuthMethodsSupported,
		IssParameterSupported:    m.IssParameterSupported,
		CIMDSupported:            m.CIMDSupported,
		DPoPSigningAlgs:          m.DPoPSigningAlgValuesSupported,
	}, nil
}

// statusError is a metadata URL's non-200 answer.
type statusError struct {
	url  string
	code int
}

func (e *statusError) Error() string {
	return fmt.Sprintf("upstreamauth: GET %s: HTTP %d", e.url, e.code)
}

// notFound reports whether err is a 4xx answer, after which discovery tries
// the next URL: the document is not there. A 5xx or a network error stops
// it, since the document may be there and the server failing.
func notFound(err error) bool {
	var se *statusError
	return errors.As(err, &se) && se.code >= 400 && se.code < 500
}

// getJSON fetches raw into dst, bounded by maxMetadata.
func getJSON(ctx context.Context, client *http.Client, what, raw string, dst any) error {
	u, err := checkURL(what, raw)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return fmt.Errorf("upstreamauth: %s: %w", what, err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("upstreamauth: %s: %w", what, err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.Request != nil && resp.Request.URL != nil && resp.Request.URL.String() != u.String() {
		// A redirect may not lead the discovery to plain http.
		if _, err := checkURL(what+" (redirected from "+raw+")", resp.Request.URL.String()); err != nil {
			return err
		}
	}
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxMetadata))
		return &statusError{url: raw, code: resp.StatusCode}
	}
	body, err := readLimited(resp.Body, maxMetadata)
	if err != nil {
		return fmt.Errorf("upstreamauth: %s %s: %w", what, raw, err)
	}
	if err := json.Unmarshal(body, dst); err != nil {
		return fmt.Errorf("upstreamauth: %s %s: %w", what, raw, err)
	}
	return nil
}

// readLimited reads r whole, refusing more than limit bytes.
func readLimited(r io.Reader, limit int64) ([]byte, error) {
	body, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(body)) > limit {
		return nil, fmt.Errorf("response larger than %d bytes", limit)
	}
	return body, nil
}
