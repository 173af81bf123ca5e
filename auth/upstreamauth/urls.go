package upstreamauth

import (
	"github.com/switchboard-mcp/switchboard/auth"

	"fmt"
	"net"
	"net/url"
	"strings"
)

// checkURL parses raw and refuses what may not carry the grant: a relative
// URL, userinfo, a fragment, a scheme other than https. Plain http is let
// through for loopback hosts only, for tests and local development: the
// specification has "All authorization server endpoints MUST be served over
// HTTPS" (Communication Security).
func checkURL(what, raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		// url.Error quotes the input; say less, in case it held userinfo.
		return nil, fmt.Errorf("upstreamauth: %s: not a URL", what)
	}
	switch {
	case u.User != nil:
		return nil, fmt.Errorf("upstreamauth: %s %s: a URL with userinfo is refused", what, u.Redacted())
	case !u.IsAbs() || u.Host == "":
		return nil, fmt.Errorf("upstreamauth: %s %q: not an absolute URL", what, raw)
	case u.Fragment != "" || strings.HasSuffix(raw, "#"):
		return nil, fmt.Errorf("upstreamauth: %s %q: a URL with a fragment is refused", what, raw)
	case u.Scheme == "https":
	case u.Scheme == "http" && auth.IsLoopback(u.Hostname()):
	default:
		return nil, fmt.Errorf("%w: %s %q", ErrInsecureURL, what, raw)
	}
	return u, nil
}

// origin is scheme://host[:port], the port dropped when it is the scheme's
// default, the host lowercased: the form two URLs are compared in.
func origin(u *url.URL) string {
	host, port := strings.ToLower(u.Hostname()), u.Port()
	if (u.Scheme == "https" && port == "443") || (u.Scheme == "http" && port == "80") {
		port = ""
	}
	if port != "" {
		return u.Scheme + "://" + net.JoinHostPort(host, port)
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	return u.Scheme + "://" + host
}

// trimmedPath is the escaped path without its trailing "/": the
// specification asks clients to accept both forms ("implementations SHOULD
// consistently use the form without the trailing slash").
func trimmedPath(u *url.URL) string {
	return strings.TrimSuffix(u.EscapedPath(), "/")
}

// resourceCovers reports whether a protected-resource metadata's resource
// may stand for the MCP server at mcp. RFC 9728 §3.3 asks for the resource
// to be "identical to the URL that the client used to make the request to
// the resource server"; that excludes the common deployment whose metadata
// names the origin (https://mcp.example.com) for an endpoint at /mcp, and
// draft-mcguinness-oauth-rfc9728bis relaxes it to "any URI that shares the
// same TLS origin (scheme, host, and port) as the requested URL and whose
// path is a prefix of the request URL path", which is also what the MCP
// TypeScript SDK accepts. So: same origin, the path equal or a parent on a
// segment boundary, and no query unless it is the same.
func resourceCovers(resource, mcp *url.URL) bool {
	if origin(resource) != origin(mcp) {
		return false
	}
	if resource.RawQuery != "" && resource.RawQuery != mcp.RawQuery {
		return false
	}
	rp, mp := trimmedPath(resource), trimmedPath(mcp)
	if resource.RawQuery != "" && rp != mp {
		return false
	}
	return rp == mp || strings.HasPrefix(mp, rp+"/")
}

// sameIssuer compares an issuer as named by the protected-resource metadata
// with the one the authorization server's metadata declares. RFC 8414 §3.3
// has them "identical"; a trailing "/" is the one difference tolerated,
// because resource servers list their authorization server in both forms and
// it names the same server. The issuer kept is the server's own, which RFC
// 9207's iss must then equal exactly.
func sameIssuer(named, declared string) bool {
	return strings.TrimSuffix(named, "/") == strings.TrimSuffix(declared, "/")
}
