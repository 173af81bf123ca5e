package routing

import (
	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
)

// setMember returns obj with member key set to the raw JSON value v (see jsonrpc.SetMember).
func setMember(obj []byte, key string, v []byte) []byte { return jsonrpc.SetMember(obj, key, v) }

// editString rewrites the string at path inside obj with f; obj is returned unchanged when the path is absent
// or not a string.
func editString(obj []byte, f func(string) string, path ...string) []byte {
	s, e, ok := jsonrpc.Lookup(obj, path...)
	if !ok {
		return obj
	}
	v, err := jsonrpc.Unquote(obj[s:e])
	if err != nil {
		return obj
	}
	return jsonrpc.Splice(nil, obj, jsonrpc.Edit{Start: s, End: e, With: jsonrpc.AppendQuote(nil, f(v))})
}
