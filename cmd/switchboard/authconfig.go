package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"github.com/switchboard-mcp/switchboard/auth"
	"github.com/switchboard-mcp/switchboard/auth/vault"
	"github.com/switchboard-mcp/switchboard/cmd/internal/config"
	"github.com/switchboard-mcp/switchboard/gateway"
	"github.com/switchboard-mcp/switchboard/routing/state"
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

// sharedTokens is where id-jag upstreams keep each person's token so that every replica uses it: the shared store,
// sealed with auth.tokenKeys as user-oauth grants are. It is made whether or not an upstream is of type id-jag yet,
// so that one a reload adds shares too. nil (each upstream's memory, per replica and until a reload) without Redis,
// or without auth.tokenKeys, since nothing may be stored unsealed: said in the log when an id-jag upstream is there.
func sharedTokens(cfg *config.Config, store *state.Redis, log *slog.Logger) (*auth.SharedTokens, error) {
	if store == nil {
		return nil, nil
	}
	if cfg.Auth == nil || cfg.Auth.TokenKeys == "" {
		if hasIDJAG(cfg) {
			log.Warn("id-jag upstreams keep their tokens per replica: set auth.tokenKeys to share them, sealed, through Redis")
		}
		return nil, nil
	}
	keys, err := vault.ParseKeys(cfg.Auth.TokenKeys)
	if err != nil {
		return nil, fmt.Errorf("auth.tokenKeys: %w", err)
	}
	defer clear(keys)
	keyring, err := vault.NewKeyring(strings.TrimSpace(strings.Split(cfg.Auth.TokenKeys, ":")[0]), keys)
	if err != nil {
		return nil, fmt.Errorf("auth.tokenKeys: %w", err)
	}
	return &auth.SharedTokens{Store: store, Sealer: keyring}, nil
}

// sharedTokens is ps.tokens; nil for a nil ps (the stdio front end, which has no callers).
func (ps *principals) sharedTokens() *auth.SharedTokens {
	if ps == nil {
		return nil
	}
	return ps.tokens
}

// credentialClient is the HTTP client of an id-jag upstream: the upstream transport's usual pooling, and, when the
// upstream refuses a person's token before it expires, that token forgotten by every replica and the request sent
// once more after a new exchange (auth.RetryOn401), for the person credentialHeaders sent it for. nil for every
// other upstream: the transport's own client.
func credentialClient(u config.Upstream, src auth.CredentialSource, latest *principals) *http.Client {
	if src == nil || u.Auth == nil || u.Auth.IDJAG == nil {
		return nil
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns = 0
	tr.MaxIdleConnsPerHost = 1024
	return &http.Client{Transport: &auth.RetryOn401{Base: tr, Source: src,
		Principal: func(ctx context.Context) *auth.Principal { return latest.freshest(auth.PrincipalFrom(ctx)) }}}
}

// hasIDJAG reports whether an enabled upstream is of type id-jag.
func hasIDJAG(cfg *config.Config) bool {
	for _, u := range cfg.Upstreams {
		if !u.Disabled && u.URL != "" && u.Auth != nil && u.Auth.IDJAG != nil {
			return true
		}
	}
	return false
}

// auth and routing/state implement what the gateway and auth declare; auth imports nothing of ours, so the checks
// live here.
var (
	_ gateway.Authenticator = (*auth.ResourceServer)(nil)
	_ auth.TokenStore       = (*state.Redis)(nil)
	_ auth.Sealer           = (*vault.Keyring)(nil)
)
