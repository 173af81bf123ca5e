package routing

import (
	"bytes"

	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
)

// setMember returns obj with member key set to the raw JSON value v: replaced where it exists, inserted first
// where it does not. The rest of the object is kept byte for byte.
func setMember(obj []byte, key string, v []byte) []byte {
	if s, e, ok := jsonrpc.Lookup(obj, key); ok {
		return jsonrpc.Splice(nil, obj, jsonrpc.Edit{Start: s, End: e, With: v})
	}
	open := bytes.IndexByte(obj, '{')
	if open < 0 {
		return obj
	}
	member := jsonrpc.AppendQuote(nil, key)
	member = append(append(member, ':'), v...)
	rest := bytes.TrimLeft(obj[open+1:], " \t\r\n")
	if len(rest) > 0 && rest[0] != '}' {
		member = append(member, ',')
	}
	return jsonrpc.Splice(nil, obj, jsonrpc.Edit{Start: open + 1, End: open + 1, With: member})
}

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
