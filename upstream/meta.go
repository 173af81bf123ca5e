package upstream

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
	"github.com/switchboard-mcp/switchboard/upstream/protocol"
)

const (
	defaultClientCapabilities = `{}`
	defaultClientInfo         = `{"name":"switchboard","version":"dev"}`
)

// requestMeta is what every request to a modern upstream carries in
// params._meta, since there is no initialize to declare it once: the
// protocol version and the client's capabilities (both required on every
// request) and its identity (SHOULD).
type requestMeta struct {
	caps []byte // compact ClientCapabilities JSON
	info []byte // compact Implementation JSON
}

// newRequestMeta takes the gateway's own capabilities and identity from the
// hello, with the same defaults as initialize.
func newRequestMeta(h ClientHello) (*requestMeta, error) {
	caps, info := []byte(h.Capabilities), []byte(h.ClientInfo)
	if len(caps) == 0 {
		caps = []byte(defaultClientCapabilities)
	}
	if len(info) == 0 {
		info = []byte(defaultClientInfo)
	}
	for _, v := range []struct {
		name string
		raw  []byte
	}{{"capabilities", caps}, {"clientInfo", info}} {
		if !json.Valid(v.raw) || bytes.TrimSpace(v.raw)[0] != '{' {
			return nil, fmt.Errorf("%s is not a JSON object", v.name)
		}
	}
	// Compact: stdio frames one message per line.
	return &requestMeta{caps: jsonrpc.Compact(nil, caps), info: jsonrpc.Compact(nil, info)}, nil
}

// discoverParams are the params of our server/discover probe.
func (rm *requestMeta) discoverParams() []byte {
	b := []byte(`{"_meta":{`)
	b = rm.appendMembers(b, true, true, true)
	return append(b, "}}"...)
}

// appendMembers appends the chosen _meta members, comma-separated.
func (rm *requestMeta) appendMembers(b []byte, version, caps, info bool) []byte {
	sep := false
	add := func(key string, v []byte) {
		if sep {
			b = append(b, ',')
		}
		sep = true
		b = jsonrpc.AppendQuote(b, key)
		b = append(b, ':')
		b = append(b, v...)
	}
	if version {
		add(protocol.MetaProtocolVersion, []byte(`"`+protocol.Modern+`"`))
	}
	if caps {
		add(protocol.MetaClientCapabilities, rm.caps)
	}
	if info {
		add(protocol.MetaClientInfo, rm.info)
	}
	return b
}

// errBadMeta is wrapped by inject's errors: the request cannot be sent as a
// modern request.
var errBadMeta = errors.New("cannot add the request _meta")

// inject appends the request m to dst with its params._meta made fit for a
// modern upstream, editing bytes in place (the rest of the message is kept
// as sent):
//
//   - protocolVersion is set to protocol.Modern, overwriting whatever
//     was there: it must agree with the MCP-Protocol-Version header ("The
//     header value MUST match the io.modelcontextprotocol/protocolVersion
//     field carried in the request body's _meta"), and the gateway speaks
//     only that version upstream.
//   - clientCapabilities and clientInfo are added from the hello only when
//     absent: for a forwarded call the router puts the end client's own
//     there, which is what the upstream must see.
//
// A params or _meta that is not an object, or a key that appears twice (the
// upstream could read the copy we did not edit), is an error.
func (rm *requestMeta) inject(dst []byte, m jsonrpc.Message) ([]byte, error) {
	// One scan of params for _meta, one of _meta for its three members: the message is parsed already.
	raw := m.Raw()
	ps, pe, ok := m.ParamsSpan()
	switch {
	case !ok:
		end := bytes.LastIndexByte(raw, '}')
		add := append([]byte(`,"params":{"_meta":{`), rm.appendMembers(nil, true, true, true)...)
		add = append(add, "}}"...)
		return jsonrpc.Splice(dst, raw, jsonrpc.Edit{Start: end, End: end, With: add}), nil
	case raw[ps] != '{':
		return nil, fmt.Errorf("%w: params is not an object", errBadMeta)
	}
	params := raw[ps:pe]
	ms, me, st := jsonrpc.LookupStatus(params, "_meta")
	switch {
	case st == jsonrpc.Absent:
		add := append([]byte(`"_meta":{`), rm.appendMembers(nil, true, true, true)...)
		add = append(add, '}')
		if !emptyObject(params) {
			add = append(add, ',')
		}
		return jsonrpc.Splice(dst, raw, jsonrpc.Edit{Start: ps + 1, End: ps + 1, With: add}), nil
	case st == jsonrpc.Ambiguous:
		return nil, fmt.Errorf("%w: params._meta appears twice", errBadMeta)
	case st != jsonrpc.Found || params[ms] != '{':
		return nil, fmt.Errorf("%w: params._meta is not an object", errBadMeta)
	}
	meta := params[ms:me]
	ms += ps
	found, ok := jsonrpc.LookupMembers(meta, protocol.MetaProtocolVersion, protocol.MetaClientCapabilities, protocol.MetaClientInfo)
	if !ok {
		return nil, fmt.Errorf("%w: params._meta has a member twice", errBadMeta)
	}
	var (
		edits [2]jsonrpc.Edit
		n     int
	)
	if pv := found[0]; pv.Found {
		if v := meta[pv.Start:pv.End]; !bytes.Equal(v, []byte(`"`+protocol.Modern+`"`)) {
			edits[1] = jsonrpc.Edit{Start: ms + pv.Start, End: ms + pv.End, With: []byte(`"` + protocol.Modern + `"`)}
			n = 1
		}
	}
	addPV, addCaps, addI := !found[0].Found, !found[1].Found, !found[2].Found
	list := edits[1:][:n]
	if addPV || addCaps || addI {
		add := rm.appendMembers(nil, addPV, addCaps, addI)
		if !emptyObject(meta) {
			add = append(add, ',')
		}
		// The insertion goes right after '{', before any replacement inside.
		edits[0] = jsonrpc.Edit{Start: ms + 1, End: ms + 1, With: add}
		list = edits[:1+n]
	}
	return jsonrpc.Splice(dst, raw, list...), nil
}

// emptyObject reports whether obj (a valid JSON object) has no members.
func emptyObject(obj []byte) bool {
	return len(bytes.TrimSpace(obj[1:len(obj)-1])) == 0
}

// Streamable HTTP request metadata headers (2026-07-28).
const (
	headerMethod = "Mcp-Method"
	headerName   = "Mcp-Name"

	base64Prefix = "=?base64?"
	base64Suffix = "?="
)

// nameParam returns the params member that Mcp-Name mirrors for method, if
// any: "Mcp-Name | params.name or params.uri | tools/call, resources/read,
// prompts/get requests".
func nameParam(method string) string {
	switch method {
	case "tools/call", "prompts/get":
		return "name"
	case "resources/read":
		return "uri"
	}
	return ""
}

// headerSafe encodes a value for Mcp-Name: "When a value cannot be safely
// represented as a plain ASCII header value (e.g., it contains non-ASCII
// characters, control characters, or has leading/trailing whitespace),
// clients MUST use Base64 encoding of the UTF-8 representation" as
// =?base64?…?=, and "clients MUST also Base64-encode any plain-ASCII value
// that matches the sentinel pattern".
func headerSafe(v string) string {
	if needsBase64(v) {
		return base64Prefix + base64.StdEncoding.EncodeToString([]byte(v)) + base64Suffix
	}
	return v
}

func needsBase64(v string) bool {
	if v == "" {
		return false
	}
	if first, last := v[0], v[len(v)-1]; first == ' ' || first == '\t' || last == ' ' || last == '\t' {
		return true
	}
	for i := 0; i < len(v); i++ {
		// Visible ASCII and space only; tab and every other control
		// character, DEL and non-ASCII bytes are encoded.
		if c := v[i]; c < 0x20 || c > 0x7e {
			return true
		}
	}
	return len(v) >= len(base64Prefix)+len(base64Suffix) &&
		v[:len(base64Prefix)] == base64Prefix && v[len(v)-len(base64Suffix):] == base64Suffix
}
