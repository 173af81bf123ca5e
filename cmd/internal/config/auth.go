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
		urlField("url", "The RFC 7662 introspection endpoint; ${VAR} is expanded (required).", func(in *Introspection) *string { return &in.URL }),
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
	return urlField("tokenURL", "The token endpoint; ${VAR} is expanded (required).", dst)
}

// urlField is a URL the gateway sends credentials to, with ${VAR} expansion: it must be https (or loopback).
func urlField[T any](key, doc string, dst func(*T) *string) blockField[T] {
	return blockField[T]{field: field{key: key, typ: tString, doc: doc},
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
