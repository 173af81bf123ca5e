package config

import (
	"cmp"
	"fmt"
	"slices"

	"gopkg.in/yaml.v3"
)

// importFields are the per-server keys of the mcpServers (Claude Desktop,
// Cursor) and servers (VS Code) forms, plus the gateway's own upstream keys so
// such a file can say session: shared (or protocol: legacy) without being
// rewritten. Timeouts there also take a number of seconds.
func importFields() []field {
	up := upstreamDocs()
	return slices.Concat(pick(up, "command", "args", "env", "envPassthrough", "cwd", "url", "headers"),
		[]field{{key: "type", typ: tString, enum: []string{"stdio", "http", "sse", "streamable-http", "streamableHttp"},
			doc: "The client's transport type; the gateway needs none, and refuses one that contradicts command or url."}},
		pick(up, "disabled", "session", "protocol", "prefix", "timeout", "maxInstances", "idleTimeout"))
}

func importHints() map[string]string {
	return map[string]string{
		"envFile": "env files are not supported; list the variables under env, using ${VAR} to take them from the gateway's environment",
	}
}

// importServers converts a mcpServers or servers mapping to upstreams,
// sorted by name so the order does not depend on the file's key order.
func (p upstreamSection) importServers(n *yaml.Node, key string, cfg *Config) []*upMeta {
	if isNull(n) {
		return nil
	}
	n = resolve(n)
	if n.Kind != yaml.MappingNode {
		p.errorf(n, key, "must be a mapping of server names to their settings, not %s", kindName(n))
		return nil
	}
	entries := p.pairs(n, key)
	slices.SortStableFunc(entries, func(a, b pair) int {
		return cmp.Or(cmp.Compare(normaliseName(a.key.Value), normaliseName(b.key.Value)), cmp.Compare(a.key.Value, b.key.Value))
	})
	var metas []*upMeta
	for _, e := range entries {
		orig := e.key.Value
		path := join(key, orig)
		name := normaliseName(orig)
		switch {
		case name == "":
			p.errorf(e.key, path, "server name %q has no letters or digits to make an upstream name from; rename it using a-z, 0-9 and '-'", orig)
		case name != orig:
			p.warnf(e.key, path, "server name %q is used as upstream name %q (upstream names are lowercase letters, digits and '-'); its tools get that name as prefix unless prefix is set", orig, name)
		}
		o, ok := p.object(e.val, path, keySpec{known: keys(importFields()), hints: importHints(), lenient: true})
		if !ok {
			continue
		}
		m := &upMeta{path: path, namePath: path, node: resolve(e.val), nameNode: e.key, origName: e.key}
		if isNull(e.val) {
			m.node = e.key
		}
		u := Upstream{Name: name}
		src := p.upstreamFields(o, &u, m, true)
		if f, ok := o.get("type"); ok {
			if v, ok := p.scalar(f.val, join(path, "type")); ok {
				p.checkType(resolve(f.val), join(path, "type"), v, m)
			}
		}
		p.addUpstream(cfg, u, src)
		metas = append(metas, m)
	}
	return metas
}

// checkType checks a client's "type" against what the entry configures. The
// gateway needs no type (command means stdio, url means HTTP, and the HTTP
// era is detected), but a contradiction is likely a mistake.
func (p upstreamSection) checkType(n *yaml.Node, path, v string, m *upMeta) {
	switch v {
	case "stdio":
		if m.hasURL && !m.hasCommand {
			p.errorf(n, path, "type is \"stdio\" but url is set; a stdio server needs command (or set type to \"http\")")
		}
	case "http", "sse", "streamable-http", "streamableHttp":
		if m.hasCommand && !m.hasURL {
			p.errorf(n, path, "type is %q but command is set; an HTTP server needs url (or set type to \"stdio\")", v)
		}
	default:
		p.errorf(n, path, "%s", fmt.Sprintf("%q is not a transport type; use stdio, http, sse or streamable-http (or leave type out)", v))
	}
}

// upstreams reads the upstreams list, or the mcpServers or servers mapping
// (one of them), and returns where each upstream's settings are.
func (p upstreamSection) upstreams(o *object, cfg *Config) []*upMeta {
	var metas []*upMeta
	up, hasUp := o.fields["upstreams"]
	for _, key := range []string{"mcpServers", "servers"} {
		f, ok := o.fields[key]
		if !ok {
			continue
		}
		if hasUp {
			p.errorf(f.key, key, "upstreams is already set at %s; use either upstreams or %s, not both (move these servers into upstreams)", pos(up.key), key)
			continue
		}
		if other, ok := o.fields["mcpServers"]; key == "servers" && ok {
			p.errorf(f.key, key, "mcpServers is already set at %s; use one of mcpServers and servers", pos(other.key))
			continue
		}
		metas = append(metas, p.importServers(f.val, key, cfg)...)
	}
	if !hasUp || isNull(up.val) {
		return metas
	}
	n := resolve(up.val)
	if n.Kind != yaml.SequenceNode {
		p.errorf(n, "upstreams", "must be a list of upstreams (each item starts with \"- name:\"), not %s", kindName(n))
		return metas
	}
	for i, item := range n.Content {
		if m := p.upstream(item, index("upstreams", i), cfg); m != nil {
			metas = append(metas, m)
		}
	}
	return metas
}
