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

func authFields() []field {
	return []field{
		{key: "issuer", typ: tString, doc: "The authorization server's issuer URL, exactly as in the tokens' iss; https, except on a loopback host (required)."},
		{key: "audience", typ: tString, def: "(publicURL + /mcp)", doc: "The gateway's canonical MCP URL (RFC 8707 resource), which tokens must name in aud."},
		{key: "scopes", typ: tStrings, doc: "Scopes every request's token must carry, announced in challenges and the metadata."},
		{key: "jwksURL", typ: tString, doc: "Overrides the jwks_uri found by discovery."},
		{key: "algorithms", typ: tStrings, enum: SupportedAlgorithms(), def: "(every asymmetric one)", doc: "The accepted JWS algorithms; HS* and none are never accepted."},
		{key: "clockSkew", typ: tDuration, def: durationText(DefaultClockSkew), doc: fmt.Sprintf("The leeway on a token's exp and nbf, at most %s.", durationText(MaxClockSkew))},
		{key: "introspection", typ: tBlock, sub: introspectionFields, doc: "Verifies opaque (non-JWT) tokens by RFC 7662. Unset: opaque tokens are refused."},
		{key: "resourceName", typ: tString, doc: "resource_name of the protected-resource metadata."},
		{key: "documentationURL", typ: tString, doc: "resource_documentation of the protected-resource metadata."},
		{key: "browser", typ: tBlock, sub: browserFields,
			doc: "The gateway's own OIDC client at the issuer, for the pages a person opens (connect links, /connections); user-oauth upstreams need it."},
		{key: "tokenKeys", typ: tString, secret: true,
			doc: "The keys that seal upstream tokens at rest, \"id:base64,...\" with the sealing key first; ${VAR} is expanded, such as \"${SWITCHBOARD_TOKEN_KEYS}\"."},
	}
}

func introspectionFields() []field {
	return []field{
		{key: "url", typ: tString, doc: "The RFC 7662 introspection endpoint; ${VAR} is expanded (required)."},
		{key: "clientId", typ: tString, doc: "The gateway's client at the endpoint (HTTP Basic); ${VAR} is expanded (required)."},
		{key: "clientSecret", typ: tString, secret: true, doc: "Its secret, such as \"${CLIENT_SECRET}\" (required)."},
		{key: "cacheTTL", typ: tDuration, def: durationText(DefaultIntrospectionCacheTTL),
			doc: fmt.Sprintf("How long an answer is reused, capped by the token's exp, at most %s.", durationText(MaxIntrospectionCacheTTL))},
	}
}

func browserFields() []field {
	return []field{
		{key: "clientId", typ: tString, doc: "The confidential client's id at the issuer; ${VAR} is expanded (required)."},
		{key: "clientSecret", typ: tString, secret: true, doc: "Its secret, such as \"${BROWSER_CLIENT_SECRET}\" (required)."},
		{key: "admins", typ: tBlock, sub: func() []field { return pick(policyMatchFields(), "sub") },
			doc: "Who sees the gateway's status view on /connections, by the subject they sign in as. Unset: no one."},
	}
}

// upstreamAuthFields are the keys of an upstream's auth: block: type:
// user-oauth and its settings, or one of the gateway's own credentials.
func upstreamAuthFields() []field {
	return []field{
		{key: "clientCredentials", typ: tBlock, sub: clientCredentialsFields, doc: "The gateway's own OAuth client credentials grant toward the upstream."},
		{key: "tokenExchange", typ: tBlock, sub: tokenExchangeFields, doc: "RFC 8693 token exchange: each client's token is exchanged for one for the upstream."},
		{key: "type", typ: tString, enum: []string{"user-oauth"}, doc: "user-oauth: each person's own grant at the upstream's authorization server, connected in-band."},
		{key: "scopes", typ: tStrings, doc: "With type: user-oauth, the scopes asked for."},
		{key: "clientId", typ: tString, doc: "With type: user-oauth, a pre-registered client (unset: the gateway registers itself)."},
		{key: "clientSecret", typ: tString, secret: true, doc: "With type: user-oauth, the pre-registered client's secret (a public client has none)."},
		{key: "resourceParameter", typ: tString, def: "send", enum: []string{"send", "omit"},
			doc: "With type: user-oauth, omit leaves out the RFC 8707 resource parameter, for servers that reject it (Entra ID)."},
	}
}

func clientCredentialsFields() []field {
	return []field{
		{key: "tokenURL", typ: tString, doc: "The token endpoint; ${VAR} is expanded (required)."},
		{key: "clientId", typ: tString, doc: "The gateway's client; ${VAR} is expanded (required)."},
		{key: "clientSecret", typ: tString, secret: true, doc: "Its secret, such as \"${CLIENT_SECRET}\" (required)."},
		{key: "scopes", typ: tStrings, doc: "The scopes asked for."},
		{key: "resource", typ: tString, def: "(the upstream's url)", doc: "The RFC 8707 resource indicator."},
	}
}

func tokenExchangeFields() []field {
	return []field{
		{key: "tokenURL", typ: tString, doc: "The token endpoint; ${VAR} is expanded (required)."},
		{key: "clientId", typ: tString, doc: "The gateway's client; ${VAR} is expanded (required)."},
		{key: "clientSecret", typ: tString, secret: true, doc: "Its secret, such as \"${CLIENT_SECRET}\" (required)."},
		{key: "audience", typ: tString, doc: "The optional audience parameter."},
		{key: "resource", typ: tString, def: "(the upstream's url)", doc: "The resource parameter."},
		{key: "scopes", typ: tStrings, doc: "The scopes asked for."},
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

func (p authSection) authConfig(n *yaml.Node, cfg *Config) {
	o, ok := p.object(n, "auth", keySpec{known: keys(authFields())})
	if !ok {
		return
	}
	a := &Auth{ClockSkew: DefaultClockSkew}
	cfg.Auth = a
	f, ok := o.get("issuer")
	if !ok {
		p.errorf(resolve(o.node), "auth", "missing issuer; give the authorization server's issuer URL, such as https://login.example.com/realms/eng")
	} else if v, ok := p.scalar(f.val, "auth.issuer"); ok {
		a.Issuer = v
		if msg := checkSecureURL(v, false); msg != "" {
			p.errorf(resolve(f.val), "auth.issuer", "%s", msg+noExpandHint(v))
		} else if u, _ := url.Parse(v); u.RawQuery != "" {
			p.errorf(resolve(f.val), "auth.issuer", "must not have a query")
		}
	}
	if f, ok := o.get("audience"); ok {
		if v, ok := p.scalar(f.val, "auth.audience"); ok {
			a.Audience = v
			if msg := checkAudience(v); msg != "" {
				p.errorf(resolve(f.val), "auth.audience", "%s", msg+noExpandHint(v))
			} else if cfg.PublicURL != "" && !sameOrigin(v, cfg.PublicURL) {
				p.warnf(resolve(f.val), "auth.audience", "is not on publicURL's origin (%s); the protected-resource metadata is announced on the audience's origin", cfg.PublicURL)
			}
		}
	} else if cfg.PublicURL != "" {
		a.Audience = strings.TrimSuffix(cfg.PublicURL, "/") + "/mcp"
		if msg := checkAudience(a.Audience); msg != "" {
			p.errorf(resolve(o.node), "auth", "the audience defaults to publicURL + \"/mcp\" (%s), which %s; set auth.audience", a.Audience, msg)
		}
	} else {
		p.errorf(resolve(o.node), "auth", "needs audience (the gateway's canonical MCP URL, such as https://mcp.example.com/mcp), or publicURL to derive it from")
	}
	if f, ok := o.get("scopes"); ok {
		a.Scopes = p.scopeList(f.val, "auth.scopes")
	}
	if f, ok := o.get("jwksURL"); ok {
		if v, ok := p.scalar(f.val, "auth.jwksURL"); ok && v != "" {
			if msg := checkSecureURL(v, false); msg != "" {
				p.errorf(resolve(f.val), "auth.jwksURL", "%s", msg)
			}
			a.JWKSURL = v
		}
	}
	if f, ok := o.get("algorithms"); ok {
		if vals, _, ok := p.stringList(f.val, "auth.algorithms", false); ok {
			for i, v := range vals {
				if !contains(SupportedAlgorithms(), v) {
					msg := fmt.Sprintf("%q is not an accepted algorithm; use %s", v, strings.Join(SupportedAlgorithms(), ", "))
					if strings.HasPrefix(strings.ToUpper(v), "HS") || strings.EqualFold(v, "none") {
						msg = fmt.Sprintf("%q is refused: a resource server verifies with the issuer's public keys, so only asymmetric algorithms (%s) are safe", v, strings.Join(SupportedAlgorithms(), ", "))
					}
					p.errorf(resolve(f.val).Content[i], index("auth.algorithms", i), "%s", msg)
					continue
				}
				a.Algorithms = append(a.Algorithms, v)
			}
		}
	}
	if f, ok := o.get("clockSkew"); ok {
		if d, ok := p.duration(f.val, "auth.clockSkew", false); ok {
			if d > MaxClockSkew {
				p.errorf(resolve(f.val), "auth.clockSkew", "%s is too long; at most %s, or expired tokens stay accepted", d, MaxClockSkew)
			}
			a.ClockSkew = d
		}
	}
	if f, ok := o.get("introspection"); ok {
		a.Introspection = p.introspection(f.val)
	}
	if f, ok := o.get("resourceName"); ok {
		a.ResourceName, _ = p.scalar(f.val, "auth.resourceName")
	}
	if f, ok := o.get("documentationURL"); ok {
		if v, ok := p.scalar(f.val, "auth.documentationURL"); ok {
			if msg := checkHTTPURL(v, false); msg != "" {
				p.errorf(resolve(f.val), "auth.documentationURL", "%s", msg)
			}
			a.DocumentationURL = v
		}
	}
	if f, ok := o.get("browser"); ok {
		a.Browser = p.browser(f.val)
	}
	if f, ok := o.get("tokenKeys"); ok {
		if v, raw, ok := p.expanded(f.val, "auth.tokenKeys"); ok {
			if msg := checkTokenKeys(v); msg != "" {
				if raw != v {
					msg = "(after expanding variables) " + msg
				}
				p.errorf(resolve(f.val), "auth.tokenKeys", "%s", msg)
			}
			a.TokenKeys = v
		}
	}
}

func (p authSection) browser(n *yaml.Node) *Browser {
	const path = "auth.browser"
	o, ok := p.object(n, path, keySpec{known: keys(browserFields())})
	if !ok {
		return nil
	}
	b := &Browser{}
	b.ClientID, b.ClientSecret = p.clientCreds(o, path)
	if f, ok := o.get("admins"); ok {
		m := policySection(p).policyMatch(f.val, join(path, "admins"))
		if len(m.Groups) > 0 || len(m.Scopes) > 0 || len(m.Claims) > 0 {
			// A signed-in browser is known by its ID token's issuer and subject, not by an access token's claims.
			p.errorf(resolve(f.val), join(path, "admins"), "matches sub only: the pages know a browser by the subject it signed in as")
		}
		b.Admins = &m
	}
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

func (p authSection) introspection(n *yaml.Node) *Introspection {
	const path = "auth.introspection"
	o, ok := p.object(n, path, keySpec{known: keys(introspectionFields())})
	if !ok {
		return nil
	}
	in := &Introspection{CacheTTL: DefaultIntrospectionCacheTTL}
	if f, ok := o.get("url"); ok {
		if v, raw, ok := p.expanded(f.val, join(path, "url")); ok {
			if msg := checkSecureURL(v, raw != v); msg != "" {
				p.errorf(resolve(f.val), join(path, "url"), "%s", msg)
			}
			in.URL = v
		}
	} else {
		p.errorf(resolve(o.node), path, "missing url; give the RFC 7662 introspection endpoint")
	}
	in.ClientID, in.ClientSecret = p.clientCreds(o, path)
	if f, ok := o.get("cacheTTL"); ok {
		if d, ok := p.duration(f.val, join(path, "cacheTTL"), false); ok {
			if d > MaxIntrospectionCacheTTL {
				p.errorf(resolve(f.val), join(path, "cacheTTL"), "%s is too long; at most %s, since a revoked token stays accepted while cached", d, MaxIntrospectionCacheTTL)
			}
			in.CacheTTL = d
		}
	}
	return in
}

// clientCreds reads the required clientId and clientSecret of an OAuth
// client block, with ${VAR} expansion.
func (p authSection) clientCreds(o *object, path string) (id, secret string) {
	if f, ok := o.get("clientId"); ok {
		id, _, _ = p.expanded(f.val, join(path, "clientId"))
		if id == "" {
			p.errorf(resolve(f.val), join(path, "clientId"), "is empty")
		}
	} else {
		p.errorf(resolve(o.node), path, "missing clientId")
	}
	if f, ok := o.get("clientSecret"); ok {
		secret, _, _ = p.expanded(f.val, join(path, "clientSecret"))
		if secret == "" {
			p.errorf(resolve(f.val), join(path, "clientSecret"), "is empty (check the variable it comes from)")
		}
	} else {
		p.errorf(resolve(o.node), path, "missing clientSecret; take it from the environment, such as clientSecret: \"${CLIENT_SECRET}\"")
	}
	return id, secret
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
		if t != "user-oauth" {
			p.errorf(resolve(f.val), join(path, "type"), "%q is not a kind of upstream auth; type takes user-oauth (each person's own grant), and the gateway's own credentials are written as clientCredentials: or tokenExchange: without type", t)
			return nil
		}
		for _, k := range []string{"clientCredentials", "tokenExchange"} {
			if g, ok := o.get(k); ok {
				p.errorf(g.key, join(path, k), "does not go with type: user-oauth; choose one kind of credential")
				return nil
			}
		}
		ua.UserOAuth = p.userOAuth(o, path)
		return ua
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
		o2, ok := p.object(cc.val, ccPath, keySpec{known: keys(clientCredentialsFields())})
		if !ok {
			return nil
		}
		c := &ClientCredentials{Resource: upstreamURL}
		c.TokenURL = p.tokenURL(o2, ccPath)
		c.ClientID, c.ClientSecret = p.clientCreds(o2, ccPath)
		if f, ok := o2.get("scopes"); ok {
			c.Scopes = p.scopeList(f.val, join(ccPath, "scopes"))
		}
		if f, ok := o2.get("resource"); ok {
			c.Resource = p.resourceURL(f.val, join(ccPath, "resource"))
		}
		ua.ClientCredentials = c
		return ua
	}
	tePath := join(path, "tokenExchange")
	o2, ok := p.object(te.val, tePath, keySpec{known: keys(tokenExchangeFields())})
	if !ok {
		return nil
	}
	t := &TokenExchange{Resource: upstreamURL}
	t.TokenURL = p.tokenURL(o2, tePath)
	t.ClientID, t.ClientSecret = p.clientCreds(o2, tePath)
	if f, ok := o2.get("audience"); ok {
		t.Audience, _, _ = p.expanded(f.val, join(tePath, "audience"))
	}
	if f, ok := o2.get("resource"); ok {
		t.Resource = p.resourceURL(f.val, join(tePath, "resource"))
	}
	if f, ok := o2.get("scopes"); ok {
		t.Scopes = p.scopeList(f.val, join(tePath, "scopes"))
	}
	ua.TokenExchange = t
	return ua
}

// userOAuth reads the settings of type: user-oauth.
func (p authSection) userOAuth(o *object, path string) *UserOAuth {
	u := &UserOAuth{}
	if f, ok := o.get("scopes"); ok {
		u.Scopes = p.scopeList(f.val, join(path, "scopes"))
	}
	if f, ok := o.get("clientId"); ok {
		u.ClientID, _, _ = p.expanded(f.val, join(path, "clientId"))
		if u.ClientID == "" {
			p.errorf(resolve(f.val), join(path, "clientId"), "is empty; remove it to let the gateway register itself")
		}
	}
	if f, ok := o.get("clientSecret"); ok {
		u.ClientSecret, _, _ = p.expanded(f.val, join(path, "clientSecret"))
		switch {
		case u.ClientSecret == "":
			p.errorf(resolve(f.val), join(path, "clientSecret"), "is empty (check the variable it comes from)")
		case u.ClientID == "":
			p.errorf(f.key, join(path, "clientSecret"), "needs clientId: the secret belongs to a pre-registered client")
		}
	}
	if f, ok := o.get("resourceParameter"); ok {
		v, _ := p.scalar(f.val, join(path, "resourceParameter"))
		switch v {
		case "send":
		case "omit":
			u.OmitResource = true
		default:
			p.errorf(resolve(f.val), join(path, "resourceParameter"), "%q is not send or omit (omit for authorization servers that reject RFC 8707 resource, such as Entra ID)", v)
		}
	}
	return u
}

func (p authSection) tokenURL(o *object, path string) string {
	f, ok := o.get("tokenURL")
	if !ok {
		p.errorf(resolve(o.node), path, "missing tokenURL; give the authorization server's token endpoint")
		return ""
	}
	v, raw, ok := p.expanded(f.val, join(path, "tokenURL"))
	if ok {
		if msg := checkSecureURL(v, raw != v); msg != "" {
			p.errorf(resolve(f.val), join(path, "tokenURL"), "%s", msg)
		}
	}
	return v
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
