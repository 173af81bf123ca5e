package config

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/switchboard-mcp/switchboard/auth/vault"
)

// Defaults and limits of the auth settings.
const (
	// DefaultClockSkew is the leeway allowed on a token's exp and nbf.
	DefaultClockSkew = 30 * time.Second
	// MaxClockSkew bounds clockSkew: a larger leeway keeps expired tokens alive.
	MaxClockSkew = 5 * time.Minute
	// DefaultIntrospectionCacheTTL is how long an introspection answer is
	// reused (never past the token's own expiry).
	DefaultIntrospectionCacheTTL = 30 * time.Second
	// MaxIntrospectionCacheTTL bounds cacheTTL: a revoked token stays usable
	// for up to this long.
	MaxIntrospectionCacheTTL = 10 * time.Minute
	// FileRefPrefix marks a header value read from a file ("file:/path").
	FileRefPrefix = "file:"
)

// Auth makes the gateway an OAuth 2.1 resource server (the auth: block). A
// nil *Auth means the gateway does not authenticate clients.
type Auth struct {
	// Issuer is the authorization server's issuer URL, exactly as it appears
	// in the tokens' iss claim. https, except on a loopback host.
	Issuer string
	// Audience is the gateway's canonical MCP URL (RFC 8707 resource); tokens
	// must name it in aud. Defaulted to PublicURL + "/mcp" when left out.
	Audience string
	// Scopes are required on every request (and announced in challenges and
	// the protected-resource metadata).
	Scopes []string
	// JWKSURL overrides the jwks_uri found by discovery ("" = discover).
	JWKSURL string
	// Algorithms are the accepted JWS algorithms ("" = every asymmetric one:
	// RS*, PS*, ES*, EdDSA). HS* and none are never accepted.
	Algorithms []string
	// ClockSkew is the leeway on exp and nbf.
	ClockSkew time.Duration
	// Introspection verifies opaque (non-JWT) tokens by RFC 7662; nil = opaque
	// tokens are refused.
	Introspection *Introspection
	// ResourceName and DocumentationURL go into the protected-resource
	// metadata (resource_name, resource_documentation).
	ResourceName     string
	DocumentationURL string
	// Browser is the gateway's own browser sign-in client at Issuer (OIDC
	// code flow with PKCE), for the pages a person opens: connect links and
	// /connections. nil = no pages (user-oauth upstreams need it).
	Browser *Browser
	// TokenKeys seal upstream tokens at rest (AES-256-GCM): "id:base64,..."
	// with the sealing key first; the others still open what they sealed.
	// The browser sign-in's cookie key is derived from the first one, so
	// replicas sharing the keys share sign-ins. "" = none.
	TokenKeys string
}

// Browser is the auth.browser block: a confidential OIDC client of the
// gateway's issuer, for signing people in on the gateway's pages.
type Browser struct {
	ClientID, ClientSecret string
	// Admins says who sees the gateway's status view on /connections (the
	// same conditions as a policy rule's match); nil = no one.
	Admins *PolicyMatch
}

// Introspection configures RFC 7662 token introspection.
type Introspection struct {
	// URL is the introspection endpoint.
	URL string
	// ClientID and ClientSecret authenticate the gateway to it (HTTP Basic).
	ClientID, ClientSecret string
	// CacheTTL is how long an answer is reused, capped by the token's exp.
	CacheTTL time.Duration
}

// UpstreamAuth says how the gateway authenticates to a remote upstream
// (never with the client's token). Exactly one field is set.
type UpstreamAuth struct {
	ClientCredentials *ClientCredentials
	TokenExchange     *TokenExchange
	// UserOAuth: each person's own grant at the upstream's authorization
	// server, connected in-band (type: user-oauth).
	UserOAuth *UserOAuth
	// IDJAG: each person's identity assertion exchanged at the company's
	// identity provider for an ID-JAG, then at the upstream's authorization
	// server for their token (type: id-jag, SEP-990).
	IDJAG *IDJAG
	// WorkloadIdentity: the gateway's own token from the JWT bearer grant
	// with its platform-issued workload token (type: workload-identity).
	WorkloadIdentity *WorkloadIdentity
}

// WorkloadIdentity is auth: {type: workload-identity} (SEP-1933): the JWT in
// TokenFile (a projected Kubernetes service-account token) is the assertion
// of an RFC 7523 JWT bearer grant at TokenURL.
type WorkloadIdentity struct {
	TokenFile, TokenURL string
	// ClientID names the gateway's client there ("" = none); it has no
	// secret: the assertion is its credential.
	ClientID string
	Scopes   []string
	// Resource is the RFC 8707 resource; defaulted to the upstream's url.
	Resource string
}

// IDJAG is Enterprise-Managed Authorization (auth: {type: id-jag}): the
// caller's ID token (or the one person's, from IdP.IDTokenFile) is exchanged
// at IdP.TokenURL for an Identity Assertion JWT Authorization Grant whose
// audience is Issuer and whose resource is Resource, which the gateway
// presents at TokenURL (RFC 7523 JWT bearer grant) as ClientID.
type IDJAG struct {
	IdP IDJAGIdP
	// Issuer is the upstream's authorization server (the ID-JAG's audience).
	Issuer string
	// TokenURL is that server's token endpoint.
	TokenURL string
	// ClientID and ClientSecret are the gateway's client there.
	ClientID, ClientSecret string
	Scopes                 []string
	// Resource is the upstream's URL carried in the ID-JAG; defaulted to
	// the upstream's url.
	Resource string
}

// IDJAGIdP is the idp: block of type: id-jag: the company's identity
// provider, where the person's ID token is exchanged.
type IDJAGIdP struct {
	TokenURL string
	// ClientID and ClientSecret authenticate the gateway there ("" = none).
	ClientID, ClientSecret string
	// IDTokenFile holds the one person's ID token, for a gateway without an
	// auth: block ("" = each client's own token).
	IDTokenFile string
	// SubjectTokenType is the RFC 8693 type the subject token is sent as:
	// urn:ietf:params:oauth:token-type:id_token or …:access_token.
	SubjectTokenType string
}

// UserOAuth is per-user upstream OAuth (auth: {type: user-oauth}). The
// authorization server is discovered from the upstream's 401 (RFC 9728);
// the client is the pre-registered one when ClientID is set, else a Client
// ID Metadata Document or RFC 7591 registration.
type UserOAuth struct {
	Scopes []string
	// ClientID and ClientSecret name a pre-registered client ("" = none;
	// a public client has no secret).
	ClientID, ClientSecret string
	// OmitResource leaves out the RFC 8707 resource parameter
	// (resourceParameter: omit), which Entra rejects.
	OmitResource bool
}

// ClientCredentials is the OAuth client credentials grant toward an upstream.
type ClientCredentials struct {
	TokenURL, ClientID, ClientSecret string
	Scopes                           []string
	// Resource is the RFC 8707 resource indicator sent to the token
	// endpoint; defaulted to the upstream's url.
	Resource string
	// PrivateKeyFile, instead of ClientSecret, authenticates the client
	// with private_key_jwt (RFC 7523); AssertionAudience is the assertion's
	// aud ("" = TokenURL).
	PrivateKeyFile, AssertionAudience string
}

// TokenExchange is RFC 8693 token exchange per user: the client's token is
// exchanged (by the gateway, at the token endpoint) for a token for the
// upstream.
type TokenExchange struct {
	TokenURL, ClientID, ClientSecret string
	// Audience is the optional audience parameter.
	Audience string
	// Resource is the resource parameter; defaulted to the upstream's url.
	Resource string
	Scopes   []string
}

func authFields() []field { return fieldsOf(authTable("")) }

// authTable is how the auth: block's keys are read; publicURL is the
// top-level key's, which the audience is checked against.
func authTable(publicURL string) []blockField[Auth] {
	return []blockField[Auth]{
		{field: field{key: "issuer", typ: tString, doc: "The authorization server's issuer URL, exactly as in the tokens' iss; https, except on a loopback host (required)."},
			read: func(p *parser, f pair, path string, a *Auth) {
				if v, ok := p.scalar(f.val, path); ok {
					a.Issuer = v
					if msg := checkSecureURL(v, false); msg != "" {
						p.errorf(resolve(f.val), path, "%s", msg+noExpandHint(v))
					} else if u, _ := url.Parse(v); u.RawQuery != "" {
						p.errorf(resolve(f.val), path, "must not have a query")
					}
				}
			}},
		{field: field{key: "audience", typ: tString, def: "(publicURL + /mcp)", doc: "The gateway's canonical MCP URL (RFC 8707 resource), which tokens must name in aud."},
			read: func(p *parser, f pair, path string, a *Auth) {
				if v, ok := p.scalar(f.val, path); ok {
					a.Audience = v
					if msg := checkAudience(v); msg != "" {
						p.errorf(resolve(f.val), path, "%s", msg+noExpandHint(v))
					} else if publicURL != "" && !sameOrigin(v, publicURL) {
						p.warnf(resolve(f.val), path, "is not on publicURL's origin (%s); the protected-resource metadata is announced on the audience's origin", publicURL)
					}
				}
			}},
		scopesField("Scopes every request's token must carry, announced in challenges and the metadata.", func(a *Auth) *[]string { return &a.Scopes }),
		{field: field{key: "jwksURL", typ: tString, doc: "Overrides the jwks_uri found by discovery."},
			read: func(p *parser, f pair, path string, a *Auth) {
				if v, ok := p.scalar(f.val, path); ok && v != "" {
					if msg := checkSecureURL(v, false); msg != "" {
						p.errorf(resolve(f.val), path, "%s", msg)
					}
					a.JWKSURL = v
				}
			}},
		{field: field{key: "algorithms", typ: tStrings, enum: SupportedAlgorithms(), def: "(every asymmetric one)", doc: "The accepted JWS algorithms; HS* and none are never accepted."},
			read: func(p *parser, f pair, path string, a *Auth) {
				vals, _, ok := p.stringList(f.val, path, false)
				if !ok {
					return
				}
				for i, v := range vals {
					if !contains(SupportedAlgorithms(), v) {
						msg := fmt.Sprintf("%q is not an accepted algorithm; use %s", v, strings.Join(SupportedAlgorithms(), ", "))
						if strings.HasPrefix(strings.ToUpper(v), "HS") || strings.EqualFold(v, "none") {
							msg = fmt.Sprintf("%q is refused: a resource server verifies with the issuer's public keys, so only asymmetric algorithms (%s) are safe", v, strings.Join(SupportedAlgorithms(), ", "))
						}
						p.errorf(resolve(f.val).Content[i], index(path, i), "%s", msg)
						continue
					}
					a.Algorithms = append(a.Algorithms, v)
				}
			}},
		{field: field{key: "clockSkew", typ: tDuration, def: durationText(DefaultClockSkew), doc: fmt.Sprintf("The leeway on a token's exp and nbf, at most %s.", durationText(MaxClockSkew))},
			read: func(p *parser, f pair, path string, a *Auth) {
				if d, ok := p.duration(f.val, path, false); ok {
					if d > MaxClockSkew {
						p.errorf(resolve(f.val), path, "%s is too long; at most %s, or expired tokens stay accepted", d, MaxClockSkew)
					}
					a.ClockSkew = d
				}
			}},
		{field: field{key: "introspection", typ: tBlock, sub: introspectionFields, doc: "Verifies opaque (non-JWT) tokens by RFC 7662. Unset: opaque tokens are refused."},
			read: func(p *parser, f pair, path string, a *Auth) {
				a.Introspection = authSection{p}.introspection(f.val, path)
			}},
		{field: field{key: "resourceName", typ: tString, doc: "resource_name of the protected-resource metadata."},
			read: func(p *parser, f pair, path string, a *Auth) { a.ResourceName, _ = p.scalar(f.val, path) }},
		{field: field{key: "documentationURL", typ: tString, doc: "resource_documentation of the protected-resource metadata."},
			read: func(p *parser, f pair, path string, a *Auth) {
				if v, ok := p.scalar(f.val, path); ok {
					if msg := checkHTTPURL(v, false); msg != "" {
						p.errorf(resolve(f.val), path, "%s", msg)
					}
					a.DocumentationURL = v
				}
			}},
		{field: field{key: "browser", typ: tBlock, sub: browserFields,
			doc: "The gateway's own OIDC client at the issuer, for the pages a person opens (connect links, /connections); user-oauth upstreams need it."},
			read: func(p *parser, f pair, path string, a *Auth) { a.Browser = authSection{p}.browser(f.val, path) }},
		{field: field{key: "tokenKeys", typ: tString, secret: true,
			doc: "The keys that seal upstream tokens at rest, \"id:base64,...\" with the sealing key first; ${VAR} is expanded, such as \"${SWITCHBOARD_TOKEN_KEYS}\"."},
			read: func(p *parser, f pair, path string, a *Auth) {
				if v, raw, ok := p.expanded(f.val, path); ok {
					if msg := checkTokenKeys(v); msg != "" {
						if raw != v {
							msg = "(after expanding variables) " + msg
						}
						p.errorf(resolve(f.val), path, "%s", msg)
					}
					a.TokenKeys = v
				}
			}},
	}
}

func introspectionFields() []field { return fieldsOf(introspectionTable()) }

func introspectionTable() []blockField[Introspection] {
	return []blockField[Introspection]{
		{field: field{key: "url", typ: tString, doc: "The RFC 7662 introspection endpoint; ${VAR} is expanded (required)."},
			read: func(p *parser, f pair, path string, in *Introspection) {
				if v, raw, ok := p.expanded(f.val, path); ok {
					if msg := checkSecureURL(v, raw != v); msg != "" {
						p.errorf(resolve(f.val), path, "%s", msg)
					}
					in.URL = v
				}
			}},
		clientIDField("The gateway's client at the endpoint (HTTP Basic); ${VAR} is expanded (required).", func(in *Introspection) *string { return &in.ClientID }),
		clientSecretField("Its secret, such as \"${CLIENT_SECRET}\" (required).", func(in *Introspection) *string { return &in.ClientSecret }),
		{field: field{key: "cacheTTL", typ: tDuration, def: durationText(DefaultIntrospectionCacheTTL),
			doc: fmt.Sprintf("How long an answer is reused, capped by the token's exp, at most %s.", durationText(MaxIntrospectionCacheTTL))},
			read: func(p *parser, f pair, path string, in *Introspection) {
				if d, ok := p.duration(f.val, path, false); ok {
					if d > MaxIntrospectionCacheTTL {
						p.errorf(resolve(f.val), path, "%s is too long; at most %s, since a revoked token stays accepted while cached", d, MaxIntrospectionCacheTTL)
					}
					in.CacheTTL = d
				}
			}},
	}
}

func browserFields() []field { return fieldsOf(browserTable()) }

func browserTable() []blockField[Browser] {
	return []blockField[Browser]{
		clientIDField("The confidential client's id at the issuer; ${VAR} is expanded (required).", func(b *Browser) *string { return &b.ClientID }),
		clientSecretField("Its secret, such as \"${BROWSER_CLIENT_SECRET}\" (required).", func(b *Browser) *string { return &b.ClientSecret }),
		{field: field{key: "admins", typ: tBlock, sub: func() []field { return pick(policyMatchFields(), "sub") },
			doc: "Who sees the gateway's status view on /connections, by the subject they sign in as. Unset: no one."},
			read: func(p *parser, f pair, path string, b *Browser) {
				m := policySection{p}.policyMatch(f.val, path)
				if len(m.Groups) > 0 || len(m.Scopes) > 0 || len(m.Claims) > 0 {
					// A signed-in browser is known by its ID token's issuer and subject, not by an access token's claims.
					p.errorf(resolve(f.val), path, "matches sub only: the pages know a browser by the subject it signed in as")
				}
				b.Admins = &m
			}},
	}
}

// clientIDField is the clientId of an OAuth client block, with ${VAR}
// expansion; requireClient reports it missing.
func clientIDField[T any](doc string, dst func(*T) *string) blockField[T] {
	return blockField[T]{field: field{key: "clientId", typ: tString, doc: doc},
		read: func(p *parser, f pair, path string, v *T) {
			id, _, _ := p.expanded(f.val, path)
			if id == "" {
				p.errorf(resolve(f.val), path, "is empty")
			}
			*dst(v) = id
		}}
}

// clientSecretField is the clientSecret of an OAuth client block, with
// ${VAR} expansion; requireClient reports it missing.
func clientSecretField[T any](doc string, dst func(*T) *string) blockField[T] {
	return blockField[T]{field: field{key: "clientSecret", typ: tString, secret: true, doc: doc},
		read: func(p *parser, f pair, path string, v *T) {
			secret, _, _ := p.expanded(f.val, path)
			if secret == "" {
				p.errorf(resolve(f.val), path, "is empty (check the variable it comes from)")
			}
			*dst(v) = secret
		}}
}

// tokenURLField is the tokenURL of an upstream credential block, with ${VAR}
// expansion; required.
func tokenURLField[T any](dst func(*T) *string) blockField[T] {
	return blockField[T]{field: field{key: "tokenURL", typ: tString, doc: "The token endpoint; ${VAR} is expanded (required)."},
		read: func(p *parser, f pair, path string, v *T) {
			u, raw, ok := p.expanded(f.val, path)
			if ok {
				if msg := checkSecureURL(u, raw != u); msg != "" {
					p.errorf(resolve(f.val), path, "%s", msg)
				}
			}
			*dst(v) = u
		}}
}

// scopesField is a list of OAuth scope tokens.
func scopesField[T any](doc string, dst func(*T) *[]string) blockField[T] {
	return blockField[T]{field: field{key: "scopes", typ: tStrings, doc: doc},
		read: func(p *parser, f pair, path string, v *T) { *dst(v) = authSection{p}.scopeList(f.val, path) }}
}

// resourceField is the RFC 8707 resource of an upstream credential block.
func resourceField[T any](doc string, dst func(*T) *string) blockField[T] {
	return blockField[T]{field: field{key: "resource", typ: tString, def: "(the upstream's url)", doc: doc},
		read: func(p *parser, f pair, path string, v *T) { *dst(v) = authSection{p}.resourceURL(f.val, path) }}
}

// requireClient reports the missing keys of an OAuth client block, in order:
// missing names those that must be set besides clientId and clientSecret,
// each with its message.
func requireClient(p *parser, o *object, path string, missing ...string) {
	for i := 0; i+1 < len(missing); i += 2 {
		if _, ok := o.get(missing[i]); !ok {
			p.errorf(resolve(o.node), path, "%s", missing[i+1])
		}
	}
	if _, ok := o.get("clientId"); !ok {
		p.errorf(resolve(o.node), path, "missing clientId")
	}
	if _, ok := o.get("clientSecret"); !ok {
		p.errorf(resolve(o.node), path, "missing clientSecret; take it from the environment, such as clientSecret: \"${CLIENT_SECRET}\"")
	}
}

// upstreamAuthFields are the keys of an upstream's auth: block: type:
// user-oauth and its settings, or one of the gateway's own credentials.
func upstreamAuthFields() []field {
	return append([]field{
		{key: "clientCredentials", typ: tBlock, sub: clientCredentialsFields, doc: "The gateway's own OAuth client credentials grant toward the upstream."},
		{key: "tokenExchange", typ: tBlock, sub: tokenExchangeFields, doc: "RFC 8693 token exchange: each client's token is exchanged for one for the upstream."},
		{key: "type", typ: tString, enum: []string{"user-oauth", "id-jag", "workload-identity"}, doc: "user-oauth: each person's own grant at the upstream's authorization server, connected in-band. id-jag: each person's identity assertion exchanged at the company's identity provider for an ID-JAG, then for their token at the upstream's authorization server, with no browser step (SEP-990). workload-identity: the gateway's own token, from the JWT bearer grant with its platform-issued workload token, such as a projected Kubernetes service-account token (SEP-1933)."},
	}, append(append(fieldsOf(userOAuthTable()), fieldsOf(idJAGTable()[:4])...), fieldsOf(workloadTable()[:1])...)...)
}

// workloadTable is how the keys of type: workload-identity are read; its first is its own, the others it shares
// with type: id-jag and user-oauth (whose tables document them).
func workloadTable() []blockField[WorkloadIdentity] {
	return []blockField[WorkloadIdentity]{
		{field: field{key: "tokenFile", typ: tString, doc: "With type: workload-identity, the file holding the workload's JWT, such as a projected service-account token; reread when it changes (required)."},
			read: func(p *parser, f pair, path string, w *WorkloadIdentity) {
				w.TokenFile, _, _ = p.expanded(f.val, path)
				if strings.TrimSpace(w.TokenFile) == "" {
					p.errorf(resolve(f.val), path, "is empty; name the file that holds the workload token")
				}
			}},
		tokenURLField(func(w *WorkloadIdentity) *string { return &w.TokenURL }),
		resourceField("", func(w *WorkloadIdentity) *string { return &w.Resource }),
		clientIDField("", func(w *WorkloadIdentity) *string { return &w.ClientID }),
		scopesField("", func(w *WorkloadIdentity) *[]string { return &w.Scopes }),
	}
}

// idJAGTable is how the keys of type: id-jag are read; its first four are its own, the others it shares with
// type: user-oauth (whose table documents them).
func idJAGTable() []blockField[IDJAG] {
	return []blockField[IDJAG]{
		{field: field{key: "idp", typ: tBlock, sub: func() []field { return fieldsOf(idJAGIdPTable()) },
			doc: "With type: id-jag, the company's identity provider, where each person's ID token is exchanged for an ID-JAG (required)."},
			read: func(p *parser, f pair, path string, j *IDJAG) {
				o, ok := readBlock(p, f.val, path, nil, idJAGIdPTable(), &j.IdP)
				if !ok {
					return
				}
				if _, ok := o.get("tokenURL"); !ok {
					p.errorf(resolve(o.node), path, "missing tokenURL; give the identity provider's token endpoint, such as https://acme.okta.com/oauth2/v1/token")
				}
				if j.IdP.ClientSecret != "" && j.IdP.ClientID == "" {
					p.errorf(resolve(o.node), path, "has clientSecret without clientId")
				}
			}},
		{field: field{key: "issuer", typ: tString, doc: "With type: id-jag, the upstream's authorization server, exactly as its metadata's issuer: the ID-JAG's audience (required)."},
			read: func(p *parser, f pair, path string, j *IDJAG) {
				v, raw, ok := p.expanded(f.val, path)
				if ok {
					if msg := checkSecureURL(v, raw != v); msg != "" {
						p.errorf(resolve(f.val), path, "%s", msg)
					}
				}
				j.Issuer = v
			}},
		withDoc(tokenURLField(func(j *IDJAG) *string { return &j.TokenURL }),
			"With type: id-jag or workload-identity, the upstream authorization server's token endpoint, where the ID-JAG or the workload's token is presented; ${VAR} is expanded (required)."),
		resourceField("With type: id-jag or workload-identity, the upstream's URL as the RFC 8707 resource (in the ID-JAG, or of the token asked for).", func(j *IDJAG) *string { return &j.Resource }),
		clientIDField("", func(j *IDJAG) *string { return &j.ClientID }),
		clientSecretField("", func(j *IDJAG) *string { return &j.ClientSecret }),
		scopesField("", func(j *IDJAG) *[]string { return &j.Scopes }),
	}
}

// withDoc is bf with another doc string.
func withDoc[T any](bf blockField[T], doc string) blockField[T] {
	bf.doc = doc
	return bf
}

// idJAGIdPTable is how the idp: block of type: id-jag is read.
func idJAGIdPTable() []blockField[IDJAGIdP] {
	return []blockField[IDJAGIdP]{
		{field: field{key: "tokenURL", typ: tString, doc: "The identity provider's token endpoint, where the RFC 8693 exchange happens; ${VAR} is expanded (required)."},
			read: func(p *parser, f pair, path string, d *IDJAGIdP) {
				v, raw, ok := p.expanded(f.val, path)
				if ok {
					if msg := checkSecureURL(v, raw != v); msg != "" {
						p.errorf(resolve(f.val), path, "%s", msg)
					}
				}
				d.TokenURL = v
			}},
		clientIDField("The gateway's client at the identity provider; unset: none (an IdP that takes the exchange without client authentication).", func(d *IDJAGIdP) *string { return &d.ClientID }),
		clientSecretField("Its secret, such as \"${IDP_CLIENT_SECRET}\".", func(d *IDJAGIdP) *string { return &d.ClientSecret }),
		{field: field{key: "subjectTokenType", typ: tString, def: "id_token", enum: []string{"id_token", "access_token"},
			doc: "What the exchanged token is, as the identity provider is told (subject_token_type): id_token (SEP-990), or access_token for a provider that takes the access tokens clients bring the gateway."},
			read: func(p *parser, f pair, path string, d *IDJAGIdP) {
				v, _ := p.scalar(f.val, path)
				switch v {
				case "id_token", "access_token":
					d.SubjectTokenType = "urn:ietf:params:oauth:token-type:" + v
				default:
					p.errorf(resolve(f.val), path, "%q is not id_token or access_token", v)
				}
			}},
		{field: field{key: "idTokenFile", typ: tString,
			doc: "A file holding the ID token of the one person a gateway without an auth: block serves (kept fresh by their SSO helper; reread when it changes). Unset: each client's own token is exchanged."},
			read: func(p *parser, f pair, path string, d *IDJAGIdP) {
				d.IDTokenFile, _, _ = p.expanded(f.val, path)
				if strings.TrimSpace(d.IDTokenFile) == "" {
					p.errorf(resolve(f.val), path, "is empty; name the file that holds the ID token")
				}
			}},
	}
}

// userOAuthTable is how the keys of type: user-oauth are read.
func userOAuthTable() []blockField[UserOAuth] {
	return []blockField[UserOAuth]{
		scopesField("With type: user-oauth, id-jag or workload-identity, the scopes asked for.", func(u *UserOAuth) *[]string { return &u.Scopes }),
		{field: field{key: "clientId", typ: tString, doc: "With type: user-oauth, a pre-registered client (unset: the gateway registers itself). With type: id-jag, the gateway's client at the upstream's authorization server (required). With type: workload-identity, the client the grant names, if the server wants one (no secret)."},
			read: func(p *parser, f pair, path string, u *UserOAuth) {
				u.ClientID, _, _ = p.expanded(f.val, path)
				if u.ClientID == "" {
					p.errorf(resolve(f.val), path, "is empty; remove it to let the gateway register itself")
				}
			}},
		{field: field{key: "clientSecret", typ: tString, secret: true, doc: "With type: user-oauth, the pre-registered client's secret (a public client has none). With type: id-jag, the secret of the gateway's client there (required)."},
			read: func(p *parser, f pair, path string, u *UserOAuth) {
				u.ClientSecret, _, _ = p.expanded(f.val, path)
				switch {
				case u.ClientSecret == "":
					p.errorf(resolve(f.val), path, "is empty (check the variable it comes from)")
				case u.ClientID == "":
					p.errorf(f.key, path, "needs clientId: the secret belongs to a pre-registered client")
				}
			}},
		{field: field{key: "resourceParameter", typ: tString, def: "send", enum: []string{"send", "omit"},
			doc: "With type: user-oauth, omit leaves out the RFC 8707 resource parameter, for servers that reject it (Entra ID)."},
			read: func(p *parser, f pair, path string, u *UserOAuth) {
				v, _ := p.scalar(f.val, path)
				switch v {
				case "send":
				case "omit":
					u.OmitResource = true
				default:
					p.errorf(resolve(f.val), path, "%q is not send or omit (omit for authorization servers that reject RFC 8707 resource, such as Entra ID)", v)
				}
			}},
	}
}

func clientCredentialsFields() []field { return fieldsOf(clientCredentialsTable()) }

func clientCredentialsTable() []blockField[ClientCredentials] {
	return []blockField[ClientCredentials]{
		tokenURLField(func(c *ClientCredentials) *string { return &c.TokenURL }),
		clientIDField("The gateway's client; ${VAR} is expanded (required).", func(c *ClientCredentials) *string { return &c.ClientID }),
		clientSecretField("Its secret, such as \"${CLIENT_SECRET}\" (required, unless privateKeyFile is set).", func(c *ClientCredentials) *string { return &c.ClientSecret }),
		{field: field{key: "privateKeyFile", typ: tString,
			doc: "Instead of clientSecret, a PEM private key (EC, RSA or Ed25519) that signs a fresh client assertion for each token request (private_key_jwt, RFC 7523); the authorization server holds the public key."},
			read: func(p *parser, f pair, path string, c *ClientCredentials) {
				c.PrivateKeyFile, _, _ = p.expanded(f.val, path)
				if strings.TrimSpace(c.PrivateKeyFile) == "" {
					p.errorf(resolve(f.val), path, "is empty; name the PEM file of the client's private key")
				}
			}},
		{field: field{key: "assertionAudience", typ: tString, def: "(tokenURL)",
			doc: "With privateKeyFile, the client assertion's aud: the authorization server's issuer where it wants that."},
			read: func(p *parser, f pair, path string, c *ClientCredentials) {
				v, raw, ok := p.expanded(f.val, path)
				if ok {
					if msg := checkHTTPURL(v, raw != v); msg != "" {
						p.errorf(resolve(f.val), path, "%s", msg)
					}
				}
				c.AssertionAudience = v
			}},
		scopesField("The scopes asked for.", func(c *ClientCredentials) *[]string { return &c.Scopes }),
		resourceField("The RFC 8707 resource indicator.", func(c *ClientCredentials) *string { return &c.Resource }),
	}
}

func tokenExchangeFields() []field { return fieldsOf(tokenExchangeTable()) }

func tokenExchangeTable() []blockField[TokenExchange] {
	return []blockField[TokenExchange]{
		tokenURLField(func(t *TokenExchange) *string { return &t.TokenURL }),
		clientIDField("The gateway's client; ${VAR} is expanded (required).", func(t *TokenExchange) *string { return &t.ClientID }),
		clientSecretField("Its secret, such as \"${CLIENT_SECRET}\" (required).", func(t *TokenExchange) *string { return &t.ClientSecret }),
		{field: field{key: "audience", typ: tString, doc: "The optional audience parameter; ${VAR} is expanded."},
			read: func(p *parser, f pair, path string, t *TokenExchange) { t.Audience, _, _ = p.expanded(f.val, path) }},
		resourceField("The resource parameter.", func(t *TokenExchange) *string { return &t.Resource }),
		scopesField("The scopes asked for.", func(t *TokenExchange) *[]string { return &t.Scopes }),
	}
}

// SupportedAlgorithms are the JWS algorithms auth.algorithms accepts.
func SupportedAlgorithms() []string {
	return []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}
}

// NoAuthOnNetwork reports whether serving on listen would expose the gateway
// to the network without authentication: no auth block and a listen address
// that is not loopback. The gateway then refuses to start unless told
// --insecure-no-auth.
func (c *Config) NoAuthOnNetwork(listen string) bool {
	return c.Auth == nil && !IsLoopback(listen)
}

// checkSecureURL returns why v is not an https URL (http only on a loopback
// host) usable as an OAuth endpoint or issuer.
func checkSecureURL(v string, expanded bool) string {
	if msg := checkHTTPURL(v, expanded); msg != "" {
		return msg
	}
	u, _ := url.Parse(v)
	switch {
	case strings.EqualFold(u.Scheme, "http") && !isLoopbackHost(u.Hostname()):
		return "must use https; http is accepted only on a loopback host (localhost, 127.0.0.1, ::1), for development"
	case u.User != nil:
		return "must not contain a user or password"
	case u.Fragment != "":
		return "must not have a fragment"
	}
	return ""
}

// authConfig reads the auth: block: its keys from the table, then what a
// missing key means.
func (p authSection) authConfig(n *yaml.Node, cfg *Config) {
	a := &Auth{ClockSkew: DefaultClockSkew}
	o, ok := readBlock(p.parser, n, "auth", nil, authTable(cfg.PublicURL), a)
	if !ok {
		return
	}
	cfg.Auth = a
	if _, ok := o.get("issuer"); !ok {
		p.errorf(resolve(o.node), "auth", "missing issuer; give the authorization server's issuer URL, such as https://login.example.com/realms/eng")
	}
	if _, ok := o.get("audience"); ok {
		return
	}
	if cfg.PublicURL != "" {
		a.Audience = strings.TrimSuffix(cfg.PublicURL, "/") + "/mcp"
		if msg := checkAudience(a.Audience); msg != "" {
			p.errorf(resolve(o.node), "auth", "the audience defaults to publicURL + \"/mcp\" (%s), which %s; set auth.audience", a.Audience, msg)
		}
	} else {
		p.errorf(resolve(o.node), "auth", "needs audience (the gateway's canonical MCP URL, such as https://mcp.example.com/mcp), or publicURL to derive it from")
	}
}

// browser reads auth.browser at path.
func (p authSection) browser(n *yaml.Node, path string) *Browser {
	b := &Browser{}
	o, ok := readBlock(p.parser, n, path, nil, browserTable(), b)
	if !ok {
		return nil
	}
	requireClient(p.parser, o, path)
	return b
}

// checkTokenKeys checks auth.tokenKeys as the vault reads them; its errors never repeat key material.
func checkTokenKeys(v string) string {
	if _, err := vault.ParseKeys(v); err != nil {
		return strings.TrimPrefix(err.Error(), "vault: ") + "; write \"k1:<base64 of 32 random bytes>\", newest first, such as \"${SWITCHBOARD_TOKEN_KEYS}\""
	}
	return ""
}

func checkAudience(v string) string {
	if msg := checkHTTPURL(v, false); msg != "" {
		return msg
	}
	u, _ := url.Parse(v)
	switch {
	case u.Fragment != "" || u.RawQuery != "":
		return "must not have a query or fragment; it is the gateway's canonical URL, such as \"https://mcp.example.com/mcp\""
	case u.Scheme != strings.ToLower(u.Scheme) || u.Host != strings.ToLower(u.Host):
		return "must have a lowercase scheme and host (the canonical form of RFC 8707), as clients send it in resource"
	case u.User != nil:
		return "must not contain a user or password"
	}
	return ""
}

func sameOrigin(a, b string) bool {
	ua, err1 := url.Parse(a)
	ub, err2 := url.Parse(b)
	return err1 == nil && err2 == nil && strings.EqualFold(ua.Scheme, ub.Scheme) && strings.EqualFold(ua.Host, ub.Host)
}

// scopeList reads a list of OAuth scope tokens (RFC 6749 §3.3).
func (p authSection) scopeList(n *yaml.Node, path string) []string {
	vals, _, ok := p.stringList(n, path, false)
	if !ok {
		return nil
	}
	for i, v := range vals {
		if msg := checkScope(v); msg != "" {
			p.errorf(resolve(n).Content[i], index(path, i), "%s", msg)
		}
	}
	return vals
}

func checkScope(v string) string {
	if v == "" {
		return "an empty scope is not allowed"
	}
	for _, r := range v {
		if r < 0x21 || r > 0x7e || r == '"' || r == '\\' {
			return fmt.Sprintf("%q is not a scope: scopes are printable ASCII without spaces, quotes or backslashes", v)
		}
	}
	return ""
}

// introspection reads auth.introspection at path.
func (p authSection) introspection(n *yaml.Node, path string) *Introspection {
	in := &Introspection{CacheTTL: DefaultIntrospectionCacheTTL}
	o, ok := readBlock(p.parser, n, path, nil, introspectionTable(), in)
	if !ok {
		return nil
	}
	requireClient(p.parser, o, path, "url", "missing url; give the RFC 7662 introspection endpoint")
	return in
}

// upstreamAuth reads an upstream's auth block. hasAuthzHeader is the
// position of a static Authorization header, which the block would replace.
func (p authSection) upstreamAuth(n *yaml.Node, path, upstreamURL string) *UpstreamAuth {
	o, ok := p.object(n, path, keySpec{known: keys(upstreamAuthFields())})
	if !ok {
		return nil
	}
	ua := &UpstreamAuth{}
	if f, ok := o.get("type"); ok {
		t, _ := p.scalar(f.val, join(path, "type"))
		if t != "user-oauth" && t != "id-jag" && t != "workload-identity" {
			p.errorf(resolve(f.val), join(path, "type"), "%q is not a kind of upstream auth; type takes user-oauth (each person's own grant), id-jag (each person's identity assertion, exchanged) or workload-identity (the gateway's platform-issued token), and the gateway's other credentials are written as clientCredentials: or tokenExchange: without type", t)
			return nil
		}
		for _, k := range []string{"clientCredentials", "tokenExchange"} {
			if g, ok := o.get(k); ok {
				p.errorf(g.key, join(path, k), "does not go with type: %s; choose one kind of credential", t)
				return nil
			}
		}
		switch t {
		case "id-jag":
			return p.idJAG(o, path, upstreamURL)
		case "workload-identity":
			return p.workload(o, path, upstreamURL)
		}
		for _, k := range []string{"idp", "issuer", "tokenURL", "resource", "tokenFile"} {
			if g, ok := o.get(k); ok {
				p.errorf(g.key, join(path, k), "belongs to type: id-jag or workload-identity, not user-oauth")
				return nil
			}
		}
		ua.UserOAuth = &UserOAuth{}
		readFields(p.parser, o, path, userOAuthTable(), ua.UserOAuth)
		return ua
	}
	for _, k := range []string{"idp", "issuer", "tokenURL", "resource", "tokenFile"} {
		if g, ok := o.get(k); ok {
			p.errorf(g.key, join(path, k), "belongs to type: id-jag or workload-identity (or inside clientCredentials: or tokenExchange:); add the type or move it")
			return nil
		}
	}
	for _, k := range []string{"scopes", "clientId", "clientSecret", "resourceParameter"} {
		if g, ok := o.get(k); ok {
			p.errorf(g.key, join(path, k), "belongs to type: user-oauth (or inside clientCredentials: or tokenExchange:); add type: user-oauth or move it")
			return nil
		}
	}
	cc, hasCC := o.get("clientCredentials")
	te, hasTE := o.get("tokenExchange")
	switch {
	case hasCC && hasTE:
		p.errorf(te.key, join(path, "tokenExchange"), "clientCredentials (at %s) and tokenExchange are both set; choose exactly one kind of credential", pos(cc.key))
		return nil
	case !hasCC && !hasTE:
		p.errorf(resolve(o.node), path, "needs exactly one of clientCredentials or tokenExchange")
		return nil
	}
	if hasCC {
		ccPath := join(path, "clientCredentials")
		c := &ClientCredentials{Resource: upstreamURL}
		o2, ok := readBlock(p.parser, cc.val, ccPath, nil, clientCredentialsTable(), c)
		if !ok {
			return nil
		}
		key, hasKey := o2.get("privateKeyFile")
		secret, hasSecret := o2.get("clientSecret")
		switch {
		case hasKey && hasSecret:
			p.errorf(secret.key, join(ccPath, "clientSecret"), "and privateKeyFile (at %s) are both set; the client authenticates with one", pos(key.key))
		case hasKey:
			// private_key_jwt: the key replaces the secret.
			for _, k := range []string{"tokenURL", "clientId"} {
				if _, ok := o2.get(k); !ok {
					p.errorf(resolve(o2.node), ccPath, "missing %s", k)
				}
			}
		default:
			requireClient(p.parser, o2, ccPath, "tokenURL", "missing tokenURL; give the authorization server's token endpoint")
			if g, ok := o2.get("assertionAudience"); ok {
				p.errorf(g.key, join(ccPath, "assertionAudience"), "goes with privateKeyFile")
			}
		}
		ua.ClientCredentials = c
		return ua
	}
	tePath := join(path, "tokenExchange")
	t := &TokenExchange{Resource: upstreamURL}
	o2, ok := readBlock(p.parser, te.val, tePath, nil, tokenExchangeTable(), t)
	if !ok {
		return nil
	}
	requireClient(p.parser, o2, tePath, "tokenURL", "missing tokenURL; give the authorization server's token endpoint")
	ua.TokenExchange = t
	return ua
}

// idJAG reads the keys of type: id-jag in the upstream auth block o at path.
func (p authSection) idJAG(o *object, path, upstreamURL string) *UpstreamAuth {
	for _, k := range []string{"resourceParameter", "tokenFile"} {
		if g, ok := o.get(k); ok {
			p.errorf(g.key, join(path, k), "does not go with type: id-jag")
			return nil
		}
	}
	j := &IDJAG{Resource: upstreamURL}
	readFields(p.parser, o, path, idJAGTable(), j)
	requireClient(p.parser, o, path,
		"idp", "type: id-jag needs idp: {tokenURL: ...}, the identity provider where each person's ID token is exchanged",
		"issuer", "type: id-jag needs issuer, the upstream's authorization server as its metadata names it (the ID-JAG's audience)",
		"tokenURL", "type: id-jag needs tokenURL, the upstream authorization server's token endpoint")
	return &UpstreamAuth{IDJAG: j}
}

// workload reads the keys of type: workload-identity in the upstream auth block o at path.
func (p authSection) workload(o *object, path, upstreamURL string) *UpstreamAuth {
	for _, k := range []string{"resourceParameter", "idp", "issuer", "clientSecret"} {
		if g, ok := o.get(k); ok {
			p.errorf(g.key, join(path, k), "does not go with type: workload-identity (the workload's token is its credential)")
			return nil
		}
	}
	w := &WorkloadIdentity{Resource: upstreamURL}
	readFields(p.parser, o, path, workloadTable(), w)
	for _, k := range []string{"tokenFile", "tokenURL"} {
		if _, ok := o.get(k); !ok {
			p.errorf(resolve(o.node), path, "type: workload-identity needs %s", k)
		}
	}
	return &UpstreamAuth{WorkloadIdentity: w}
}

func (p authSection) resourceURL(n *yaml.Node, path string) string {
	v, raw, ok := p.expanded(n, path)
	if ok {
		if msg := checkHTTPURL(v, raw != v); msg != "" {
			p.errorf(resolve(n), path, "%s", msg)
		} else if u, _ := url.Parse(v); u.Fragment != "" {
			p.errorf(resolve(n), path, "must not have a fragment (RFC 8707)")
		}
	}
	return v
}
