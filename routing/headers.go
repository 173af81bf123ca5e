package routing

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/switchboard-mcp/switchboard/upstream"
	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
	"github.com/switchboard-mcp/switchboard/upstream/protocol"
)

// Tools of 2026-07-28 may mark parameters with x-mcp-header in their inputSchema: "clients MUST mirror those
// values into Mcp-Param-{Name} headers", and a server that processes the body must check them (SEP-2243). The
// gateway is that server for its clients, and that client for its stateless upstreams.

// ParamHeader binds a tool argument (a path into arguments) to the header that mirrors it.
type ParamHeader struct {
	Path   []string
	Header string // the full header name, Mcp-Param-{Name}
}

// headerIndex holds a catalog's parameter-header bindings per exposed tool name, computed on first use.
type headerIndex struct {
	once  sync.Once
	tools map[string][]ParamHeader
}

// paramHeaders returns the bindings of an exposed tool in this catalog.
func (c *catalog) paramHeaders(tool string) []ParamHeader {
	c.headers.once.Do(func() {
		c.headers.tools = map[string][]ParamHeader{}
		for _, raw := range c.items[kindTools] {
			name, _ := jsonrpc.LookupString(raw, "name")
			st, e, ok := jsonrpc.Lookup(raw, "inputSchema")
			if !ok {
				continue
			}
			if b := schemaHeaders(raw[st:e]); len(b) > 0 {
				c.headers.tools[name] = b
			}
		}
	})
	return c.headers.tools[tool]
}

// ParamHeaders returns the x-mcp-header bindings of a tool as the session's catalog exposes it.
func (s *Session) ParamHeaders(tool string) []ParamHeader { return s.catalog().paramHeaders(tool) }

type schemaProp struct {
	XMCPHeader json.RawMessage       `json:"x-mcp-header"`
	Properties map[string]schemaProp `json:"properties"`
}

// schemaHeaders collects the x-mcp-header annotations of an inputSchema, nested properties included.
func schemaHeaders(schema []byte) []ParamHeader {
	var root schemaProp
	if json.Unmarshal(schema, &root) != nil {
		return nil
	}
	var out []ParamHeader
	var walk func(props map[string]schemaProp, prefix []string)
	walk = func(props map[string]schemaProp, prefix []string) {
		for _, k := range sortedKeys(props) {
			p := props[k]
			path := append(append([]string(nil), prefix...), k)
			var h string
			if json.Unmarshal(p.XMCPHeader, &h) == nil && h != "" {
				out = append(out, ParamHeader{Path: path, Header: http.CanonicalHeaderKey(protocol.HeaderParamPrefix + h)})
			}
			walk(p.Properties, path)
		}
	}
	walk(root.Properties, nil)
	return out
}

// argumentValue finds the primitive at path in a tools/call's arguments and renders it as a header carries it;
// present is false when it is absent or null, ok false when it is not a primitive.
func argumentValue(params []byte, path []string) (v string, present, ok bool) {
	st, e, found := jsonrpc.Lookup(params, append([]string{"arguments"}, path...)...)
	if !found || string(params[st:e]) == "null" {
		return "", false, true
	}
	var x any
	if json.Unmarshal(params[st:e], &x) != nil {
		return "", true, false
	}
	switch t := x.(type) {
	case string:
		return t, true, true
	case bool:
		return strconv.FormatBool(t), true, true
	case float64:
		if t != math.Trunc(t) || math.Abs(t) > 1<<53-1 {
			return "", true, false
		}
		return strconv.FormatInt(int64(t), 10), true, true
	}
	return "", true, false
}

// CheckParamHeaders verifies a client's Mcp-Param-* headers against the arguments of its tools/call: each bound
// argument that is present must be mirrored, exactly, and none that is absent. It returns a message for a
// -32020 HeaderMismatch, or "".
func CheckParamHeaders(h http.Header, params []byte, bindings []ParamHeader) string {
	for _, b := range bindings {
		got := h.Get(b.Header)
		v, present, ok := argumentValue(params, b.Path)
		switch {
		case !present && got != "":
			return b.Header + " is set but the argument " + strings.Join(b.Path, ".") + " is absent"
		case !present:
			continue
		case !ok:
			return "the argument " + strings.Join(b.Path, ".") + " mirrored in " + b.Header + " must be a string, integer or boolean"
		case got == "":
			return "the argument " + strings.Join(b.Path, ".") + " must be mirrored in the " + b.Header + " header"
		}
		decoded, ok := DecodeHeaderValue(got)
		if !ok {
			return b.Header + " is not valid =?base64?…?= encoding"
		}
		if decoded != v {
			return b.Header + " does not match the argument " + strings.Join(b.Path, ".")
		}
	}
	return ""
}

// ParamHeaderValues renders the headers a client must send for a tools/call (the gateway sends them to stateless
// upstreams on behalf of clients that do not: legacy ones).
func ParamHeaderValues(params []byte, bindings []ParamHeader) http.Header {
	var h http.Header
	for _, b := range bindings {
		v, present, ok := argumentValue(params, b.Path)
		if !present || !ok {
			continue
		}
		if h == nil {
			h = http.Header{}
		}
		h.Set(b.Header, EncodeHeaderValue(v))
	}
	return h
}

// paramHeaders puts the Mcp-Param-* headers of a tools/call to a stateless upstream in the context of its
// write: the gateway mirrors the marked arguments as every 2026-07-28 client must, whichever era its own client
// speaks.
func (s *Session) paramHeaders(ctx context.Context, l *link, c *call, params []byte) context.Context {
	if c.method != "tools/call" || c.tool() == "" || !l.modern() {
		return ctx
	}
	return upstream.WithParamHeaders(ctx, ParamHeaderValues(params, s.catalog().paramHeaders(c.tool())))
}

// DecodeHeaderValue undoes the spec's encoding of values that are not header-safe: "=?base64?…?=".
func DecodeHeaderValue(v string) (string, bool) {
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

// EncodeHeaderValue encodes a value for a header: as is when it is printable ASCII without surrounding
// whitespace, else "=?base64?…?=".
func EncodeHeaderValue(v string) string {
	safe := v == "" || v[0] != ' ' && v[0] != '\t' && v[len(v)-1] != ' ' && v[len(v)-1] != '\t'
	for i := 0; safe && i < len(v); i++ {
		if v[i] < 0x20 || v[i] > 0x7e {
			safe = false
		}
	}
	if safe {
		return v
	}
	return "=?base64?" + base64.StdEncoding.EncodeToString([]byte(v)) + "?="
}
