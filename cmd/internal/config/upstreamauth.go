package config

import (
	"strings"

	"gopkg.in/yaml.v3"
)

// The auth: block of an upstream: how the gateway authenticates to it. Its kinds (the gateway's own client
// credentials, token exchange, workload identity; each person's own grant, or their identity through an ID-JAG)
// share one flat block, told apart by type.

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
		urlField("issuer", "With type: id-jag, the upstream's authorization server, exactly as its metadata's issuer: the ID-JAG's audience (required).",
			func(j *IDJAG) *string { return &j.Issuer }),
		urlField("tokenURL", "With type: id-jag or workload-identity, the upstream authorization server's token endpoint, where the ID-JAG or the workload's token is presented; ${VAR} is expanded (required).",
			func(j *IDJAG) *string { return &j.TokenURL }),
		resourceField("With type: id-jag or workload-identity, the upstream's URL as the RFC 8707 resource (in the ID-JAG, or of the token asked for).", func(j *IDJAG) *string { return &j.Resource }),
		clientIDField("", func(j *IDJAG) *string { return &j.ClientID }),
		clientSecretField("", func(j *IDJAG) *string { return &j.ClientSecret }),
		scopesField("", func(j *IDJAG) *[]string { return &j.Scopes }),
	}
}

// idJAGIdPTable is how the idp: block of type: id-jag is read.
func idJAGIdPTable() []blockField[IDJAGIdP] {
	return []blockField[IDJAGIdP]{
		urlField("tokenURL", "The identity provider's token endpoint, where the RFC 8693 exchange happens; ${VAR} is expanded (required).",
			func(d *IDJAGIdP) *string { return &d.TokenURL }),
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
