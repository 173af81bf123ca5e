package routing

import (
	"encoding/json"
	"slices"
	"sort"

	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
)

// Override changes how clients see one tool or prompt of an upstream: the admin's name, title, description and
// annotations, and argument presets the model cannot change (issue 15). The upstream is never told: the gateway
// translates on the way in and out, as it does for namespaced names.
type Override struct {
	// Name is the client-visible name; "" keeps the namespaced default.
	Name        string
	Title       string
	Description string
	// Annotations is a JSON object merged over the tool's own annotations, member by member.
	Annotations json.RawMessage
	// Arguments are presets: each is removed from the inputSchema clients see and set on every call. A client
	// that sends one anyway is refused (-32602): the model must not be able to change it.
	Arguments map[string]json.RawMessage
	// TaskSupport, for a tool of an upstream that takes no tasks, is how the gateway runs it as a task of its own
	// ("forbidden", "optional" or "required"); "" follows the upstream's UpstreamConfig.Tasks.
	TaskSupport string
}

// OverrideKey names the item an override applies to: the upstream's configured name, the kind ("tool" or
// "prompt") and the item's name as the upstream lists it.
type OverrideKey struct {
	Upstream, Kind, Name string
}

// apply returns item (an upstream's tool or prompt, compact JSON) as the override shows it, under exposed. Each
// change is a splice: the rest of the item is kept byte for byte.
func (o *Override) apply(item []byte, exposed string) []byte {
	out := jsonrpc.SetMember(item, "name", jsonrpc.AppendQuote(nil, exposed))
	if o.Title != "" {
		out = jsonrpc.SetMember(out, "title", jsonrpc.AppendQuote(nil, o.Title))
	}
	if o.Description != "" {
		out = jsonrpc.SetMember(out, "description", jsonrpc.AppendQuote(nil, o.Description))
	}
	if len(o.Annotations) > 0 {
		out = jsonrpc.SetMember(out, "annotations", mergeObjects(member(out, "annotations"), o.Annotations))
	}
	if len(o.Arguments) > 0 {
		if s, e, ok := jsonrpc.Lookup(out, "inputSchema"); ok {
			out = jsonrpc.SetMember(out, "inputSchema", withoutArguments(out[s:e], o.presetNames()))
		}
	}
	return out
}

// presetNames returns the preset arguments' names, sorted.
func (o *Override) presetNames() []string {
	names := make([]string, 0, len(o.Arguments))
	for k := range o.Arguments {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// member returns the raw value of obj's member key, or nil.
func member(obj []byte, key string) []byte {
	if s, e, ok := jsonrpc.Lookup(obj, key); ok {
		return obj[s:e]
	}
	return nil
}

// mergeObjects sets every member of over in base (an object; anything else counts as {}).
func mergeObjects(base, over []byte) []byte {
	if len(base) == 0 || base[0] != '{' {
		base = []byte(`{}`)
	}
	var members map[string]json.RawMessage
	if json.Unmarshal(over, &members) != nil {
		return base
	}
	keys := make([]string, 0, len(members))
	for k := range members {
		keys = append(keys, k)
	}
	sort.Strings(keys) // a stable result, so that an unchanged catalog stays byte-equal across rebuilds
	for _, k := range keys {
		base = jsonrpc.SetMember(base, k, jsonrpc.Compact(nil, members[k]))
	}
	return base
}

// withoutArguments removes preset arguments from an inputSchema: from its properties and its required list.
func withoutArguments(schema []byte, names []string) []byte {
	if s, e, ok := jsonrpc.Lookup(schema, "properties"); ok {
		schema = jsonrpc.SetMember(schema, "properties", jsonrpc.DeleteMembers(schema[s:e], names...))
	}
	if s, e, ok := jsonrpc.Lookup(schema, "required"); ok {
		var required []string
		if json.Unmarshal(schema[s:e], &required) == nil {
			kept := slices.DeleteFunc(required, func(r string) bool { return slices.Contains(names, r) })
			if b, err := json.Marshal(kept); err == nil {
				schema = jsonrpc.SetMember(schema, "required", b)
			}
		}
	}
	return schema
}
