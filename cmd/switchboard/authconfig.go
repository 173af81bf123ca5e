package main

import (
	"github.com/switchboard-mcp/switchboard/auth"
	"github.com/switchboard-mcp/switchboard/cmd/internal/config"
	"github.com/switchboard-mcp/switchboard/gateway"
)

// The auth package takes its own option types and knows nothing of the config file: the translation from the
// file's types lives here, with the binary that reads the file.

// resourceConfig converts the validated auth block. ok is false when the configuration has no auth block (the
// gateway does not authenticate).
func resourceConfig(c *config.Config) (rc auth.ResourceConfig, ok bool) {
	a := c.Auth
	if a == nil {
		return auth.ResourceConfig{}, false
	}
	rc = auth.ResourceConfig{
		Issuer:           a.Issuer,
		Audience:         a.Audience,
		Scopes:           a.Scopes,
		JWKSURL:          a.JWKSURL,
		Algorithms:       a.Algorithms,
		ClockSkew:        a.ClockSkew,
		ResourceName:     a.ResourceName,
		DocumentationURL: a.DocumentationURL,
	}
	if in := a.Introspection; in != nil {
		rc.Introspection = &auth.IntrospectionConfig{URL: in.URL, ClientID: in.ClientID, ClientSecret: in.ClientSecret, CacheTTL: in.CacheTTL}
	}
	return rc, true
}

// policyRules converts the policy: list. nil stays nil (no policy: everything is allowed) and an empty list stays
// empty (everything is denied), as auth.NewPolicy tells the two apart.
func policyRules(rules []config.PolicyRule) []auth.PolicyRule {
	if rules == nil {
		return nil
	}
	out := make([]auth.PolicyRule, 0, len(rules))
	for _, r := range rules {
		m := r.Match
		out = append(out, auth.PolicyRule{
			Name:  r.Name,
			Match: auth.PolicyMatch{Sub: m.Sub, Groups: m.Groups, Scopes: m.Scopes, Claims: m.Claims},
			Allow: r.Allow,
			Deny:  r.Deny,
		})
	}
	return out
}

// credentialOptions converts an upstream's static headers, header files and auth block.
func credentialOptions(u config.Upstream) auth.CredentialOptions {
	o := auth.CredentialOptions{Upstream: u.Name, Headers: u.Headers, HeaderFiles: u.HeaderFiles}
	if a := u.Auth; a != nil && a.ClientCredentials != nil {
		c := a.ClientCredentials
		o.ClientCredentials = &auth.ClientCredentialsConfig{
			TokenURL: c.TokenURL, ClientID: c.ClientID, ClientSecret: c.ClientSecret, Scopes: c.Scopes, Resource: c.Resource,
			KeyFile: c.PrivateKeyFile, AssertionAudience: c.AssertionAudience,
		}
	} else if a != nil && a.TokenExchange != nil {
		t := a.TokenExchange
		o.TokenExchange = &auth.TokenExchangeConfig{
			TokenURL: t.TokenURL, ClientID: t.ClientID, ClientSecret: t.ClientSecret,
			Audience: t.Audience, Resource: t.Resource, Scopes: t.Scopes,
		}
	} else if a != nil && a.IDJAG != nil {
		j := a.IDJAG
		o.IDJAG = &auth.IDJAGConfig{
			IdPTokenURL: j.IdP.TokenURL, IdPClientID: j.IdP.ClientID, IdPClientSecret: j.IdP.ClientSecret,
			SubjectTokenFile: j.IdP.IDTokenFile, SubjectTokenType: j.IdP.SubjectTokenType, Audience: j.Issuer, Resource: j.Resource,
			TokenURL: j.TokenURL, ClientID: j.ClientID, ClientSecret: j.ClientSecret, Scopes: j.Scopes,
		}
	} else if a != nil && a.WorkloadIdentity != nil {
		w := a.WorkloadIdentity
		o.WorkloadIdentity = &auth.WorkloadIdentityConfig{
			TokenFile: w.TokenFile, TokenURL: w.TokenURL, ClientID: w.ClientID, Scopes: w.Scopes, Resource: w.Resource,
		}
	}
	return o
}

// auth implements what the gateway declares; auth imports nothing of ours, so the check lives here.
var _ gateway.Authenticator = (*auth.ResourceServer)(nil)
