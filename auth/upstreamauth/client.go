package upstreamauth

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// Token endpoint authentication methods (RFC 7591 §2) the flow supports.
const (
	// AuthNone is a public client: client_id in the request body, no
	// secret. PKCE protects the code.
	AuthNone = "none"
	// AuthSecretBasic sends the secret with HTTP Basic (RFC 6749 §2.3.1).
	AuthSecretBasic = "client_secret_basic"
	// AuthSecretPost sends the secret in the request body.
	AuthSecretPost = "client_secret_post"
)

// Client is the gateway's client identity at one authorization server.
// Client identifiers are the issuing server's own: "Clients MUST maintain
// separate registration state (client credentials, tokens) per
// authorization server". String and LogValue hide Secret; the JSON form
// (for keeping a registration) carries it, so store that encrypted.
type Client struct {
	// ID is the client_id: a registered one, or the URL of a Client ID
	// Metadata Document.
	ID string `json:"clientId"`
	// Secret is "" for a public client.
	Secret string `json:"clientSecret,omitempty"`
	// AuthMethod is AuthNone, AuthSecretBasic or AuthSecretPost; "" lets
	// NewFlow choose (AuthNone without a secret, else what the server
	// supports, client_secret_basic first).
	AuthMethod string `json:"authMethod,omitempty"`
	// SecretExpiresAt is when a registered secret expires (zero: never):
	// register again after it.
	SecretExpiresAt time.Time `json:"secretExpiresAt,omitzero"`
}

// String shows the client without its secret.
func (c Client) String() string {
	s := "Client{ID: " + c.ID + ", AuthMethod: " + c.AuthMethod
	if c.Secret != "" {
		s += ", Secret: [redacted]"
	}
	return s + "}"
}

// GoString is String, so that %#v hides the secret too.
func (c Client) GoString() string { return c.String() }

// LogValue shows the client without its secret in slog.
func (c Client) LogValue() slog.Value {
	return slog.GroupValue(slog.String("id", c.ID), slog.String("authMethod", c.AuthMethod), slog.Bool("secret", c.Secret != ""))
}

// Identity says which of the specification's client identities is used.
type Identity string

// The identities, in the specification's order ("Client Registration
// Approaches"): "Clients supporting all options SHOULD follow the following
// priority order: 1. Use pre-registered client information ... 2. Use Client
// ID Metadata Documents if the Authorization Server indicates if the server
// supports it ... 3. Use Dynamic Client Registration as a fallback".
const (
	// IdentityPreRegistered is the operator's configured client.
	IdentityPreRegistered Identity = "pre-registered"
	// IdentityMetadataDocument is the gateway's Client ID Metadata
	// Document, its URL the client_id.
	IdentityMetadataDocument Identity = "client-id-metadata-document"
	// IdentityDynamicRegistration is a client the gateway registers with
	// Register.
	IdentityDynamicRegistration Identity = "dynamic-registration"
)

// ChooseIdentity picks the client identity for srv, in the specification's
// order: preRegistered when it is set (non-nil with an ID); else the Client
// ID Metadata Document at cimdURL when the server advertises
// client_id_metadata_document_supported and cimdURL is set (the gateway must
// serve MetadataDocument there); else dynamic registration when the server
// has a registration endpoint, in which case the Client is zero and the
// caller calls Register (and keeps its result). It returns ErrNoIdentity
// when none is possible (the fourth way, "Prompt the user to enter the
// client information", is the operator configuring a clientId), and an error
// for a cimdURL the specification does not allow.
func ChooseIdentity(srv *Server, preRegistered *Client, cimdURL string) (Client, Identity, error) {
	if preRegistered != nil && preRegistered.ID != "" {
		return *preRegistered, IdentityPreRegistered, nil
	}
	if srv.CIMDSupported && cimdURL != "" {
		if err := checkMetadataDocumentURL(cimdURL); err != nil {
			return Client{}, "", err
		}
		return Client{ID: cimdURL, AuthMethod: AuthNone}, IdentityMetadataDocument, nil
	}
	if srv.RegistrationEndpoint != "" {
		return Client{}, IdentityDynamicRegistration, nil
	}
	why := "it supports neither Client ID Metadata Documents nor dynamic registration"
	if srv.CIMDSupported {
		why = "it supports Client ID Metadata Documents but the gateway has no public URL to serve one at, and it offers no dynamic registration"
	}
	return Client{}, "", fmt.Errorf("%w at %s: %s; configure a pre-registered clientId", ErrNoIdentity, srv.Issuer, why)
}

// checkMetadataDocumentURL: "The client_id URL MUST use the "https" scheme
// and contain a path component" (Client ID Metadata Documents). No loopback
// exception: the authorization server fetches it.
func checkMetadataDocumentURL(raw string) error {
	u, err := checkURL("client ID metadata document URL", raw)
	if err != nil {
		return err
	}
	if u.Scheme != "https" {
		return fmt.Errorf("%w: client ID metadata document URL %q", ErrInsecureURL, raw)
	}
	if trimmedPath(u) == "" {
		return fmt.Errorf("upstreamauth: client ID metadata document URL %q has no path", raw)
	}
	return nil
}

// clientMetadata is the RFC 7591 client metadata, for registration and for
// the Client ID Metadata Document.
type clientMetadata struct {
	ClientID                string   `json:"client_id,omitempty"`
	ClientName              string   `json:"client_name"`
	ApplicationType         string   `json:"application_type"`
	RedirectURIs            []string `json:"redirect_uris"`
	GrantTypes              []string `json:"grant_types"`
	ResponseTypes           []string `json:"response_types"`
	TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method"`
	Scope                   string   `json:"scope,omitempty"`
}

// applicationType is the OpenID Connect Dynamic Client Registration application_type of a client with these
// redirect URIs. The 2026-07-28 authorization spec: "DCR clients MUST send an appropriate application_type
// (native for localhost redirects, web otherwise)", since an authorization server may refuse a web client a
// loopback redirect or a native one a remote redirect. A gateway that runs on a person's machine (publicURL on
// loopback) is a native client; any other is a web client.
func applicationType(redirectURIs []string) string {
	for _, u := range redirectURIs {
		if p, err := url.Parse(u); err == nil && isLoopbackHost(p.Hostname()) {
			return "native"
		}
	}
	return "web"
}

// isLoopbackHost reports whether host names this machine: localhost or a loopback address.
func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// grantTypes are the grants the gateway uses: the code, and refresh to keep
// tokens fresh without the user.
func grantTypes() []string { return []string{"authorization_code", "refresh_token"} }

// MetadataDocument is the Client ID Metadata Document the gateway serves at
// clientID (its own URL, under the gateway's public URL), as JSON. "The
// metadata document MUST include at least the following properties:
// client_id, client_name, redirect_uris" and "Clients MUST ensure the
// client_id value in the metadata matches the document URL exactly". It
// declares a public client (token_endpoint_auth_method "none"), as the
// specification's example does: a document anyone can read cannot carry a
// secret.
func MetadataDocument(clientID, name string, redirectURIs []string) []byte {
	body, _ := json.MarshalIndent(clientMetadata{
		ClientID:                clientID,
		ClientName:              name,
		ApplicationType:         applicationType(redirectURIs),
		RedirectURIs:            nonNil(redirectURIs),
		GrantTypes:              grantTypes(),
		ResponseTypes:           []string{"code"},
		TokenEndpointAuthMethod: AuthNone,
	}, "", "  ")
	return append(body, '\n')
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// Registration is what the gateway registers itself as (RFC 7591).
type Registration struct {
	// Name is the client_name the user sees on the consent page.
	Name string
	// RedirectURIs are the gateway's callback URLs.
	RedirectURIs []string
	// Scopes, when set, are registered as the client's scope.
	Scopes []string
	// AuthMethod is the token endpoint authentication requested; "" is
	// AuthNone (a public client, which every MCP authorization server
	// accepts, and which leaves no secret to keep).
	AuthMethod string
}

// maxRegistration bounds a registration response.
const maxRegistration = 64 << 10

// Register registers the gateway at srv's registration endpoint (RFC 7591
// §3) and returns the client the server issued, which the caller keeps (the
// server may not register the same client twice). client nil means
// http.DefaultClient; ctx bounds the request. It returns ErrNoRegistration
// when the server has no registration endpoint, and an *OAuthError for the
// server's refusal (invalid_redirect_uri, invalid_client_metadata…).
func Register(ctx context.Context, client *http.Client, srv *Server, reg Registration) (Client, error) {
	if client == nil {
		client = http.DefaultClient
	}
	if srv.RegistrationEndpoint == "" {
		return Client{}, fmt.Errorf("%w at %s", ErrNoRegistration, srv.Issuer)
	}
	endpoint, err := checkURL("registration_endpoint", srv.RegistrationEndpoint)
	if err != nil {
		return Client{}, err
	}
	method := reg.AuthMethod
	if method == "" {
		method = AuthNone
	}
	if !validAuthMethod(method) {
		return Client{}, fmt.Errorf("upstreamauth: registration: unsupported token_endpoint_auth_method %q", method)
	}
	body, err := json.Marshal(clientMetadata{
		ClientName:              reg.Name,
		ApplicationType:         applicationType(reg.RedirectURIs),
		RedirectURIs:            nonNil(reg.RedirectURIs),
		GrantTypes:              grantTypes(),
		ResponseTypes:           []string{"code"},
		TokenEndpointAuthMethod: method,
		Scope:                   strings.Join(reg.Scopes, " "),
	})
	if err != nil {
		return Client{}, fmt.Errorf("upstreamauth: registration: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint.String(), bytes.NewReader(body))
	if err != nil {
		return Client{}, fmt.Errorf("upstreamauth: registration: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return Client{}, fmt.Errorf("upstreamauth: registration: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	raw, err := readLimited(resp.Body, maxRegistration)
	if err != nil {
		return Client{}, fmt.Errorf("upstreamauth: registration at %s: %w", srv.RegistrationEndpoint, err)
	}
	// RFC 7591 §3.2.1: "HTTP 201 Created"; 200 is accepted from servers that
	// answer so.
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
		return Client{}, responseError(EndpointRegistration, resp.StatusCode, raw)
	}
	var out struct {
		ClientID                string `json:"client_id"`
		ClientSecret            string `json:"client_secret"`
		ClientSecretExpiresAt   int64  `json:"client_secret_expires_at"`
		TokenEndpointAuthMethod string `json:"token_endpoint_auth_method"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return Client{}, fmt.Errorf("upstreamauth: registration at %s: %w", srv.RegistrationEndpoint, err)
	}
	if out.ClientID == "" {
		return Client{}, fmt.Errorf("upstreamauth: registration at %s: no client_id in the response", srv.RegistrationEndpoint)
	}
	c := Client{ID: out.ClientID, Secret: out.ClientSecret, AuthMethod: out.TokenEndpointAuthMethod}
	if c.AuthMethod == "" {
		// RFC 7591 §2: "If unspecified or omitted, the default is
		// "client_secret_basic""; without a secret that cannot be, so the
		// server registered a public client.
		c.AuthMethod = AuthSecretBasic
		if c.Secret == "" {
			c.AuthMethod = AuthNone
		}
	}
	if !validAuthMethod(c.AuthMethod) {
		return Client{}, fmt.Errorf("upstreamauth: registration at %s: the server chose token_endpoint_auth_method %q, which the gateway does not support", srv.RegistrationEndpoint, c.AuthMethod)
	}
	if c.AuthMethod != AuthNone && c.Secret == "" {
		return Client{}, fmt.Errorf("upstreamauth: registration at %s: %s without a client_secret", srv.RegistrationEndpoint, c.AuthMethod)
	}
	// RFC 7591 §3.2.1: client_secret_expires_at is seconds since the epoch,
	// "or 0 if it will not expire".
	if out.ClientSecretExpiresAt > 0 {
		c.SecretExpiresAt = time.Unix(out.ClientSecretExpiresAt, 0).UTC()
	}
	return c, nil
}

func validAuthMethod(m string) bool {
	return m == AuthNone || m == AuthSecretBasic || m == AuthSecretPost
}

// responseError reads an RFC 6749 §5.2 error body (also RFC 7591 §3.2.2's
// and RFC 7009 §2.2.1's) into an *OAuthError.
func responseError(endpoint string, status int, body []byte, secrets ...string) *OAuthError {
	var e struct {
		Error            string `json:"error"`
		ErrorDescription string `json:"error_description"`
	}
	_ = json.Unmarshal(body, &e) // a body that is not JSON leaves the status alone
	return &OAuthError{
		Endpoint:    endpoint,
		Code:        scrub(e.Error, secrets...),
		Description: scrub(e.ErrorDescription, secrets...),
		StatusCode:  status,
	}
}

// SelectScopes is the scope to request. The operator's configured scopes
// come first; the challenge's are added, since "Clients MUST treat the
// scopes provided in the challenge as authoritative for satisfying the
// current request"; with neither, the specification's fallback: "use all
// scopes defined in scopes_supported from the Protected Resource Metadata
// document, omitting the scope parameter if scopes_supported is undefined"
// (Scope Selection Strategy).
func SelectScopes(configured []string, ch Challenge, srv *Server) []string {
	var out []string
	for _, s := range slices.Concat(configured, ch.Scopes) {
		if s != "" && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	if len(out) > 0 || srv == nil {
		return out
	}
	return slices.Clone(srv.ScopesSupported)
}
