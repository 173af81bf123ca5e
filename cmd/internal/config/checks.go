package config

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
)

// ListenProblem says why v is not an address the gateway can listen on ("" when it is), as the listen key's
// check does: for a --listen flag that overrides it.
func ListenProblem(v string) string { return checkListen(v) }

func checkListen(v string) string {
	const want = "; write host:port, such as \"127.0.0.1:8080\", or \":8080\" for every interface"
	_, port, err := net.SplitHostPort(v)
	if err != nil {
		return fmt.Sprintf("%q is not host:port%s", v, want)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return fmt.Sprintf("port %q is not a number from 0 to 65535%s", port, want)
	}
	return ""
}

// checkHTTPURL returns why v is not an absolute http(s) URL. When the value
// came from ${VAR} expansion, the message leaves the value out: it may hold
// credentials.
func checkHTTPURL(v string, expanded bool) string {
	return checkHTTPURLLike(v, expanded, "https://search.internal/mcp")
}

// checkHTTPURLLike is checkHTTPURL with another example in its messages.
func checkHTTPURLLike(v string, expanded bool, example string) string {
	want := "an absolute http:// or https:// URL, such as " + strconv.Quote(example)
	u, err := url.Parse(v)
	if err != nil {
		if expanded {
			return "is not a valid URL after expanding variables; it must be " + want
		}
		var ue *url.Error
		detail := err.Error()
		if errors.As(err, &ue) {
			detail = ue.Err.Error()
		}
		return fmt.Sprintf("is not a valid URL (%s); it must be %s", detail, want)
	}
	switch {
	case u.Scheme == "":
		return "has no scheme; it must be " + want
	case !strings.EqualFold(u.Scheme, "http") && !strings.EqualFold(u.Scheme, "https"):
		return fmt.Sprintf("has scheme %q; it must be %s", u.Scheme, want)
	case u.Host == "":
		return "has no host; it must be " + want
	}
	return ""
}

// checkOrigin checks an Origin value: scheme://host[:port], exactly as a
// browser sends it.
func checkOrigin(v string) string {
	if v == "*" || v == "null" {
		return fmt.Sprintf("%q is not allowed: accepting any origin would let any web page drive the gateway through a browser; list each origin, such as \"https://app.example.com\"", v)
	}
	u, err := url.Parse(v)
	if err != nil || u.Scheme == "" || u.Host == "" || u.User != nil {
		return fmt.Sprintf("%q is not an origin; write scheme://host[:port], such as \"https://app.example.com\"", v)
	}
	if u.Path != "" || u.RawQuery != "" || u.Fragment != "" {
		return fmt.Sprintf("%q has a path; an origin is only scheme://host[:port] (write %q)", v, u.Scheme+"://"+u.Host)
	}
	return ""
}

// checkHost checks a Host header value: a host name or IP, with an optional
// port; IPv6 addresses in brackets.
func checkHost(v string) string {
	name, port := v, ""
	if h, pt, err := net.SplitHostPort(v); err == nil {
		name, port = h, pt
	} else {
		name = strings.TrimSuffix(strings.TrimPrefix(v, "["), "]")
	}
	bad := name == "" || strings.ContainsAny(name, "/ *@")
	if port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			bad = true
		}
	}
	if strings.Contains(name, ":") && net.ParseIP(name) == nil {
		bad = true
	}
	if bad {
		return fmt.Sprintf("%q is not a host; write a name or address with an optional port, such as \"mcp.example.com\" or \"[::1]:8080\" (no scheme, path or wildcard)", v)
	}
	return ""
}

func checkEnvName(k string) string {
	if k == "" || strings.ContainsAny(k, "=\x00") {
		return fmt.Sprintf("%q is not a valid environment variable name (no '=' and not empty)", k)
	}
	return ""
}

// checkEnvPattern checks one envPassthrough entry: a variable name, or a prefix ending in '*'. A bare "*" would
// hand the gateway's whole environment, secrets included, to the child.
func checkEnvPattern(k string) string {
	name, prefix := strings.CutSuffix(k, "*")
	switch {
	case prefix && name == "":
		return `"*" would pass the gateway's whole environment, its secrets included, to the child; name the variables (a prefix such as "AWS_*" is allowed)`
	case strings.Contains(name, "*"):
		return fmt.Sprintf("%q: '*' may only end a prefix, as in \"AWS_*\"", k)
	}
	return checkEnvName(name)
}

// checkHeaderName refuses names HTTP does not allow and headers the gateway
// sets itself, which a static value would break.
func checkHeaderName(k string) string {
	if k == "" {
		return "header name is empty"
	}
	for _, r := range k {
		if r > 0x7e || r <= 0x20 || strings.ContainsRune("\"(),/:;<=>?@[\\]{}", r) {
			return fmt.Sprintf("%q is not a valid HTTP header name (letters, digits and - are safe)", k)
		}
	}
	switch strings.ToLower(k) {
	case "host", "content-length", "content-type", "connection", "transfer-encoding", "accept",
		"mcp-session-id", "mcp-protocol-version", "last-event-id":
		return fmt.Sprintf("%s is set by the gateway for each request and cannot be configured", k)
	}
	return ""
}

// noExpandHint explains a ${ in a key that is not expanded.
func noExpandHint(v string) string {
	if strings.Contains(v, "${") {
		return " (${VAR} is only expanded in upstream settings, cursorSecret, replicaURL and auth.introspection's url, clientId and clientSecret)"
	}
	return ""
}
