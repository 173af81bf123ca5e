package auth

import "github.com/switchboard-mcp/switchboard/gateway/config"

// ResourceConfigFrom converts the validated auth block. ok is false when
// the configuration has no auth block (the gateway does not authenticate).
func ResourceConfigFrom(c *config.Config) (rc ResourceConfig, ok bool) {
	a := c.Auth
	if a == nil {
		return ResourceConfig{}, false
	}
	rc = ResourceConfig{
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
		rc.Introspection = &IntrospectionConfig{URL: in.URL, ClientID: in.ClientID, ClientSecret: in.ClientSecret, CacheTTL: in.CacheTTL}
	}
	return rc, true
}
