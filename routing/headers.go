package routing

import (
	"encoding/json"
	"math"
	"net/textproto"
	"strconv"
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
				out = append(out, ParamHeader{Path: path, Header: textproto.CanonicalMIMEHeaderKey(protocol.HeaderParamPrefix + h)})
			}
			walk(p.Properties, path)
		}
	}
	walk(root.Properties, nil)
	return out
}

// ParamArgument finds the primitive at path in a tools/call's params.arguments and renders it as a header
// carries it (before the header encoding); present is false when it is absent or null, ok false when it is not
// a string, an integer or a boolean.
func ParamArgument(params []byte, path []string) (v string, present, ok bool) {
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

// paramValues are the arguments of a tools/call to a modern upstream that its schema wants mirrored in
// Mcp-Param-* headers: the gateway mirrors them as every 2026-07-28 client must, whichever era its own client
// speaks.
func (c *call) paramValues(l *link, params []byte) []upstream.Param {
	if c.method != protocol.MethodToolsCall || c.tool() == "" || !l.modern() {
		return nil
	}
	var out []upstream.Param
	for _, b := range c.session.catalog().paramHeaders(c.tool()) {
		if v, present, ok := ParamArgument(params, b.Path); present && ok {
			out = append(out, upstream.Param{Header: b.Header, Value: v})
		}
	}
	return out
}
