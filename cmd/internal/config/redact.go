package config

import (
	"maps"
	"net/url"
	"slices"
)

// redactedValue replaces secret values in printed configurations.
const redactedValue = "<redacted>"

// Redacted returns a deep copy safe to print or log: each top-level key's
// table entry redacts its part. Header and env values become "<redacted>", as
// do every secret (a set cursorSecret, the auth, upstream auth and Redis
// secrets, the embeddings API key), passwords in URLs are masked, and command,
// args, cwd and url show the text written in the file (with its ${VAR}
// references) instead of the expanded values, which may hold secrets. The copy
// is for display only; do not run upstreams from it.
func (c *Config) Redacted() *Config {
	r := *c
	r.Warnings = slices.Clone(c.Warnings)
	r.sources, r.presetSources = nil, nil
	for _, f := range topLevelFields() {
		if f.redact != nil {
			f.redact(&r, c)
		}
	}
	return &r
}

// redactAuth copies the auth: block with its secrets redacted.
func redactAuth(dst, src *Config) {
	if src.Auth == nil {
		return
	}
	a := *src.Auth
	a.Scopes = slices.Clone(src.Auth.Scopes)
	a.Algorithms = slices.Clone(src.Auth.Algorithms)
	if src.Auth.Introspection != nil {
		in := *src.Auth.Introspection
		in.URL = redactURL(in.URL)
		in.ClientSecret = redactedValue
		a.Introspection = &in
	}
	if b := src.Auth.Browser; b != nil {
		rb := *b
		rb.ClientSecret = redactedValue
		a.Browser = &rb
	}
	if a.TokenKeys != "" {
		a.TokenKeys = redactedValue
	}
	dst.Auth = &a
}

// redactRedis copies the redis: block with its password, and one in its URL,
// redacted.
func redactRedis(dst, src *Config) {
	if src.Redis == nil {
		return
	}
	r := *src.Redis
	r.URL = redactURL(r.URL)
	if r.Password != "" {
		r.Password = redactedValue
	}
	r.SentinelAddrs, r.ClusterAddrs = slices.Clone(r.SentinelAddrs), slices.Clone(r.ClusterAddrs)
	dst.Redis = &r
}

// redactSearch copies the search: block with the embeddings API key
// redacted.
func redactSearch(dst, src *Config) {
	if em := src.Search.Embeddings; em != nil {
		e := *em
		e.URL = redactURL(e.URL)
		if e.APIKey != "" {
			e.APIKey = redactedValue
		}
		dst.Search.Embeddings = &e
	}
}

func redactEndpoints(dst, src *Config) {
	if src.Endpoints == nil {
		return
	}
	dst.Endpoints = make([]Endpoint, len(src.Endpoints))
	for i, e := range src.Endpoints {
		e.Include, e.Exclude, e.Policy, e.AlwaysList = slices.Clone(e.Include), slices.Clone(e.Exclude), clonePolicy(e.Policy), slices.Clone(e.AlwaysList)
		if e.CodeMode != nil {
			cm := *e.CodeMode
			e.CodeMode = &cm
		}
		dst.Endpoints[i] = e
	}
}

// redactOverrides copies the overrides with their presets as written: a
// value taken from ${VAR} may be a credential, and shows as its reference.
func redactOverrides(dst, src *Config) {
	if src.Overrides == nil {
		return
	}
	dst.Overrides = make(map[OverrideKey]Override, len(src.Overrides))
	for k, o := range src.Overrides {
		o.Annotations = slices.Clone(o.Annotations)
		if raw, ok := src.presetSources[k]; ok {
			o.Arguments = maps.Clone(raw)
		} else {
			o.Arguments = maps.Clone(o.Arguments)
		}
		dst.Overrides[k] = o
	}
}

// redactUpstreams copies the upstreams with their strings as written, env and
// header values and auth secrets redacted.
func redactUpstreams(dst, src *Config) {
	dst.Upstreams = make([]Upstream, len(src.Upstreams))
	for i, u := range src.Upstreams {
		ru := u
		ru.Args = slices.Clone(u.Args)
		ru.EnvPassthrough = slices.Clone(u.EnvPassthrough)
		if s, ok := src.sources[u.Name]; ok {
			ru.Command, ru.Cwd, ru.URL = s.command, s.cwd, s.url
			if s.args != nil {
				ru.Args = slices.Clone(s.args)
			}
		}
		ru.URL = redactURL(ru.URL)
		ru.Env = redactMap(u.Env)
		ru.Headers = redactMap(u.Headers)
		ru.HeaderFiles = maps.Clone(u.HeaderFiles)
		ru.Auth = redactUpstreamAuth(u.Auth)
		dst.Upstreams[i] = ru
	}
}

// clonePolicy copies rules deeply enough that the copy shares no list.
func clonePolicy(rules []PolicyRule) []PolicyRule {
	if rules == nil {
		return nil
	}
	out := make([]PolicyRule, len(rules))
	for i, r := range rules {
		r.Allow, r.Deny = slices.Clone(r.Allow), slices.Clone(r.Deny)
		r.Match.Sub, r.Match.Groups, r.Match.Scopes = slices.Clone(r.Match.Sub), slices.Clone(r.Match.Groups), slices.Clone(r.Match.Scopes)
		if r.Match.Claims != nil {
			claims := make(map[string][]any, len(r.Match.Claims))
			for k, v := range r.Match.Claims {
				claims[k] = slices.Clone(v)
			}
			r.Match.Claims = claims
		}
		out[i] = r
	}
	return out
}

func redactUpstreamAuth(ua *UpstreamAuth) *UpstreamAuth {
	if ua == nil {
		return nil
	}
	out := &UpstreamAuth{}
	if cc := ua.ClientCredentials; cc != nil {
		c := *cc
		c.ClientSecret, c.TokenURL, c.Scopes = redactedValue, redactURL(c.TokenURL), slices.Clone(cc.Scopes)
		out.ClientCredentials = &c
	}
	if te := ua.TokenExchange; te != nil {
		t := *te
		t.ClientSecret, t.TokenURL, t.Scopes = redactedValue, redactURL(t.TokenURL), slices.Clone(te.Scopes)
		out.TokenExchange = &t
	}
	if jg := ua.IDJAG; jg != nil {
		j := *jg
		j.ClientSecret, j.TokenURL, j.Scopes = redactedValue, redactURL(j.TokenURL), slices.Clone(jg.Scopes)
		j.IdP.TokenURL = redactURL(j.IdP.TokenURL)
		if j.IdP.ClientSecret != "" {
			j.IdP.ClientSecret = redactedValue
		}
		out.IDJAG = &j
	}
	if wi := ua.WorkloadIdentity; wi != nil {
		w := *wi
		w.TokenURL, w.Scopes = redactURL(w.TokenURL), slices.Clone(wi.Scopes)
		out.WorkloadIdentity = &w
	}
	if uo := ua.UserOAuth; uo != nil {
		u := *uo
		u.Scopes = slices.Clone(uo.Scopes)
		if u.ClientSecret != "" {
			u.ClientSecret = redactedValue
		}
		out.UserOAuth = &u
	}
	return out
}

func redactMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k := range m {
		out[k] = redactedValue
	}
	return out
}

// redactURL masks the password of a URL's userinfo.
func redactURL(s string) string {
	if u, err := url.Parse(s); err == nil && u.User != nil {
		return u.Redacted()
	}
	return s
}
