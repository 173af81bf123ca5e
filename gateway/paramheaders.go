package gateway

import (
	"encoding/base64"
	"net/http"
	"strings"

	"github.com/switchboard-mcp/switchboard/routing"
)

// Tools of 2026-07-28 may mark parameters with x-mcp-header in their inputSchema: "clients MUST mirror those
// values into Mcp-Param-{Name} headers", and a server that processes the body must check them (SEP-2243). The
// front end checks what its modern clients send; routing mirrors the arguments for the modern upstreams.

// checkParamHeaders verifies a client's Mcp-Param-* headers against the arguments of its tools/call: each bound
// argument that is present must be mirrored, exactly, and none that is absent. It returns a message for a
// -32020 HeaderMismatch, or "".
//
// Presence is the header's, not its value's: an empty-string argument is mirrored as a header with an empty
// value (a valid field value, RFC 9110 §5.5), which http.Header.Get cannot tell from no header at all. A header
// sent twice is refused: which copy an intermediary routes on is anyone's guess.
func checkParamHeaders(h http.Header, params []byte, bindings []routing.ParamHeader) string {
	for _, b := range bindings {
		vals := h.Values(b.Header)
		v, present, ok := routing.ParamArgument(params, b.Path)
		switch {
		case len(vals) > 1:
			return b.Header + " is sent more than once"
		case !present && len(vals) == 1:
			return b.Header + " is set but the argument " + strings.Join(b.Path, ".") + " is absent"
		case !present:
			continue
		case !ok:
			return "the argument " + strings.Join(b.Path, ".") + " mirrored in " + b.Header + " must be a string, integer or boolean"
		case len(vals) == 0:
			return "the argument " + strings.Join(b.Path, ".") + " must be mirrored in the " + b.Header + " header"
		}
		got := vals[0]
		decoded, ok := unencodeHeader(got)
		if !ok {
			return b.Header + " is not valid =?base64?…?= encoding"
		}
		if decoded != v {
			return b.Header + " does not match the argument " + strings.Join(b.Path, ".")
		}
	}
	return ""
}

// unencodeHeader undoes the spec's encoding of values that are not header-safe: "=?base64?…?=".
func unencodeHeader(v string) (string, bool) {
	inner, ok := strings.CutPrefix(v, "=?base64?")
	if !ok {
		return v, true
	}
	inner, ok = strings.CutSuffix(inner, "?=")
	if !ok {
		return v, true
	}
	b, err := base64.StdEncoding.DecodeString(inner)
	if err != nil {
		return "", false
	}
	return string(b), true
}
