package auth

import (
	"net/url"
	"slices"
	"strings"
)

// maxEndpoints bounds the endpoints' servers ForEndpoint keeps. Endpoints are
// a small configured set; past the bound ForEndpoint still answers, with a
// server it builds for the call (see ForEndpoint).
const maxEndpoints = 1024

// ForEndpoint returns the resource server of the endpoint named name (served
// at /mcp/<name>): the same issuer, keys, introspection and caches as rs
// (shared, not copied: one discovery and one JWKS fetch serve all), but its own
// resource identifier, rs's audience with "/"+name appended to its path
// (https://gw.example/mcp → https://gw.example/mcp/team); its own RFC 9728
// metadata (Metadata().Resource is that identifier, MetadataPath() is
// /.well-known/oauth-protected-resource/mcp/team, RFC 9728 §3.1); and a
// challenge whose resource_metadata points there.
//
// The metadata URL: when rs announces the §3.1 URL of its audience (the
// default, or the same path configured explicitly, at any origin), the
// endpoint's is that URL with "/"+name appended to its path; when rs's
// ResourceMetadataURL was configured to any other URL (a document hosted
// elsewhere), the endpoint's is MetadataURL of the endpoint's resource, which
// the gateway serves at MetadataPath.
//
// Its Authenticate accepts a token whose aud names the endpoint's resource or
// rs's audience, and refuses one for another endpoint (acceptsAudience).
// Scopes, resource name and documentation are rs's.
//
// The last segment of MetadataPath is name, so that a server can serve the
// metadata of every name an endpoint could have from the path alone: the
// gateway does, for configured endpoints and others alike, so that an
// unauthenticated caller cannot tell them apart (as the challenge of
// /mcp/<name> does not).
//
// ForEndpoint returns nil when name is not an endpoint name
// (^[a-z0-9][a-z0-9-]{0,31}$, what the configuration accepts), so that a name
// can never inject into a path or URL; when rs is nil; and when rs is itself
// an endpoint's server (endpoints do not nest).
//
// It is cheap and safe for concurrent use: the server of a name is built once
// and the same one is returned to every later call (a lock-free map read).
// At most 1024 are kept; past that, each call for a new name builds a correct
// server that is not kept (a warning is logged once), so nothing is refused
// and memory stays bounded.
func (rs *ResourceServer) ForEndpoint(name string) *ResourceServer {
	if rs == nil || rs.endpoint != "" || !validEndpointName(name) {
		return nil
	}
	if e, ok := rs.endpoints.Load(name); ok {
		return e.(*ResourceServer)
	}
	rs.endpointsMu.Lock()
	defer rs.endpointsMu.Unlock()
	if e, ok := rs.endpoints.Load(name); ok {
		return e.(*ResourceServer)
	}
	e := rs.newEndpoint(name)
	if rs.nEndpoints >= rs.endpointLimit {
		if !rs.endpointsSpill {
			rs.endpointsSpill = true
			rs.log.Warn("auth: more endpoints than the resource server keeps; the servers of the others are rebuilt on every call", "limit", rs.endpointLimit, "endpoint", name)
		}
		return e
	}
	rs.endpoints.Store(name, e)
	rs.nEndpoints++
	return e
}

// newEndpoint builds the server of endpoint name (valid) of the gateway's
// server rs.
func (rs *ResourceServer) newEndpoint(name string) *ResourceServer {
	cfg := rs.cfg
	cfg.Audience = appendPath(rs.cfg.Audience, name)
	cfg.ResourceMetadataURL = MetadataURL(cfg.Audience)
	if sameMetadataPath(rs.cfg.ResourceMetadataURL, MetadataURL(rs.cfg.Audience)) {
		cfg.ResourceMetadataURL = appendPath(rs.cfg.ResourceMetadataURL, name)
	}
	return &ResourceServer{
		shared:   rs.shared,
		cfg:      cfg,
		accepted: []string{cfg.Audience, rs.cfg.Audience},
		endpoint: name,
	}
}

// acceptsAudience decides whether a token whose aud claim is aud may be used
// at this resource.
//
// The MCP authorization specification (2025-11-25, "Token Handling"): "MCP
// servers MUST validate that access tokens were issued specifically for them
// as the intended audience, according to RFC 8707 Section 2." … "MCP servers
// MUST only accept tokens that are valid for use with their own resources."
// And for clients ("Resource Parameter Implementation"): the resource
// parameter "MUST identify the MCP server that the client intends to use the
// token with" and "MUST use the canonical URI of the MCP server"; "MCP
// clients SHOULD provide the most specific URI that they can".
//
// So a token is accepted when aud contains, exactly (RFC 8707: a trailing
// slash or another case is another resource), one of:
//
//   - this resource's identifier: at an endpoint, https://gw.example/mcp/team,
//     what an RFC 8707 client asks its authorization server for when it
//     connects to the endpoint's URL;
//   - at an endpoint, also the gateway's own audience (https://gw.example/mcp):
//     every endpoint is a part of the gateway's resource, and clients and
//     identity providers that know only the gateway (an audience mapper with
//     one value) get tokens for it.
//
// Nothing else: a token minted for another endpoint's resource only is
// refused here, and one minted for an endpoint's resource only is refused at
// the gateway's own /mcp, the wider resource it was not issued for. Other
// values in aud are ignored (a token may name several resources, RFC 8707
// §2). The refusal is a 401 invalid_token.
func (rs *ResourceServer) acceptsAudience(aud []string) error {
	for _, a := range rs.accepted {
		if slices.Contains(aud, a) {
			return nil
		}
	}
	return invalid("audience %q names none of %q", aud, rs.accepted)
}

// validEndpointName reports whether name has the configuration's form of an
// endpoint name, ^[a-z0-9][a-z0-9-]{0,31}$, without a regexp.
func validEndpointName(name string) bool {
	if len(name) == 0 || len(name) > 32 || name[0] == '-' {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// appendPath appends "/"+seg to the path of the absolute URL u (before a
// query; u has no fragment), dropping a trailing slash first:
// https://gw.example/mcp and https://gw.example/mcp/ both give
// https://gw.example/mcp/seg. seg is a valid endpoint name, which needs no
// escaping.
func appendPath(u, seg string) string {
	base, query, hasQuery := strings.Cut(u, "?")
	out := strings.TrimSuffix(base, "/") + "/" + seg
	if hasQuery {
		out += "?" + query
	}
	return out
}

// sameMetadataPath reports whether the announced metadata URL has the path of
// want, the §3.1 URL of the audience (its origin may differ: a public host in
// front of the gateway).
func sameMetadataPath(announced, want string) bool {
	a, err := url.Parse(announced)
	if err != nil {
		return false
	}
	w, err := url.Parse(want)
	if err != nil {
		return false
	}
	return a.EscapedPath() == w.EscapedPath() && a.RawQuery == "" && a.Fragment == ""
}
