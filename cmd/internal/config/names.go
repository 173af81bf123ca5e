package config

import (
	"gopkg.in/yaml.v3"
)

// ClientHost is a client host's rule for tool names: it shows a tool as Prefix+name and rejects names longer than
// MaxLength.
type ClientHost struct {
	Name      string
	Prefix    string
	MaxLength int
}

const (
	// DefaultMaxToolNameLength fits Claude Code under the server name "switchboard": it names a tool
	// mcp__switchboard__<tool>, and its API rejects names over 64 characters.
	DefaultMaxToolNameLength = 64 - len("mcp__switchboard__")
	// MinToolNameLength leaves room for a shortened name's hash suffix.
	MinToolNameLength = 12
	// MaxToolNameLength is the limit of the strict tool-name form the big clients enforce.
	MaxToolNameLength = 64
)

// DefaultClientHosts are the hosts checked when clientHosts is not set.
func DefaultClientHosts() []ClientHost {
	return []ClientHost{{Name: "Claude Code", Prefix: "mcp__switchboard__", MaxLength: 64}}
}

func clientHostFields() []field { return fieldsOf(clientHostTable()) }

// clientHostTable is how a clientHosts item's keys are read.
func clientHostTable() []blockField[ClientHost] {
	return []blockField[ClientHost]{
		{field: field{key: "name", typ: tString, doc: "The host's name, for messages (default: its prefix)."},
			read: func(p *parser, f pair, path string, h *ClientHost) { h.Name, _ = p.scalar(f.val, path) }},
		{field: field{key: "prefix", typ: tString, doc: "What the host puts before a tool's name, such as mcp__switchboard__."},
			read: func(p *parser, f pair, path string, h *ClientHost) { h.Prefix, _ = p.scalar(f.val, path) }},
		{field: field{key: "maxLength", typ: tInt, doc: "The longest tool name the host accepts, its prefix included (required)."},
			read: func(p *parser, f pair, path string, h *ClientHost) {
				if v, ok := p.integer(f.val, path); ok {
					if v < 1 {
						p.errorf(resolve(f.val), path, "must be at least 1")
					}
					h.MaxLength = int(v)
				}
			}},
	}
}

// readMaxToolNameLength reads maxToolNameLength.
func readMaxToolNameLength(p *parser, n *yaml.Node, cfg *Config) {
	v, ok := p.integer(n, "maxToolNameLength")
	if !ok {
		return
	}
	if v < MinToolNameLength || v > MaxToolNameLength {
		p.errorf(resolve(n), "maxToolNameLength", "%d is out of range; it must be between %d and %d", v, MinToolNameLength, MaxToolNameLength)
		return
	}
	cfg.MaxToolNameLength = int(v)
}

// readClientHosts reads clientHosts: a list of {name, prefix, maxLength}. It returns each host's node.
func readClientHosts(p *parser, n *yaml.Node, cfg *Config) (nodes []*yaml.Node) {
	n = resolve(n)
	if n.Kind != yaml.SequenceNode {
		p.errorf(n, "clientHosts", "must be a list of {name, prefix, maxLength}, not %s", kindName(n))
		return nil
	}
	cfg.ClientHosts = []ClientHost{}
	for i, item := range n.Content {
		path := index("clientHosts", i)
		h := ClientHost{}
		o, ok := readBlock(p, item, path, nil, clientHostTable(), &h)
		if !ok {
			continue
		}
		if _, ok := o.get("maxLength"); !ok {
			p.errorf(resolve(item), path, "needs maxLength: the longest tool name the host accepts, its prefix included")
			continue
		}
		if h.Name == "" {
			h.Name = h.Prefix
		}
		cfg.ClientHosts = append(cfg.ClientHosts, h)
		nodes = append(nodes, resolve(item))
	}
	return nodes
}

// warnNameBudget warns about the stated hosts that would reject names the budget allows, at the budget's line
// when the file sets it, else at the host's.
func warnNameBudget(p *parser, cfg *Config, budget *yaml.Node, hosts []*yaml.Node) {
	for i, h := range cfg.ClientHosts {
		if n := len(h.Prefix) + cfg.MaxToolNameLength; n > h.MaxLength {
			at, path := budget, "maxToolNameLength"
			if at == nil && i < len(hosts) {
				at, path = hosts[i], index("clientHosts", i)
			}
			p.warnf(at, path, "%s shows tools as %q+name and rejects names over %d characters, but names may be %d long (%d with the prefix); lower maxToolNameLength to %d",
				h.Name, h.Prefix, h.MaxLength, cfg.MaxToolNameLength, n, max(h.MaxLength-len(h.Prefix), MinToolNameLength))
		}
	}
}

// ResourceNamespacing says when resource URIs carry their upstream's name.
type ResourceNamespacing string

const (
	// NamespacingAuto namespaces a URI (or resource template) that more than one upstream offers, as
	// "<upstream>+<uri>", and passes the others unchanged; a URI once namespaced stays so while any upstream
	// offers it.
	NamespacingAuto ResourceNamespacing = "auto"
	// NamespacingAlways namespaces every upstream's URIs.
	NamespacingAlways ResourceNamespacing = "always"
	// NamespacingNever passes URIs unchanged: a URI several upstreams offer is listed once and read from the
	// first.
	NamespacingNever ResourceNamespacing = "never"
)

// readResourceNamespacing reads resourceNamespacing.
func readResourceNamespacing(p *parser, key string, f pair, t *topLevel) {
	valid := []string{string(NamespacingAuto), string(NamespacingAlways), string(NamespacingNever)}
	if v, ok := p.oneOf(f, key, "namespacing mode", valid,
		"auto (namespace URIs two upstreams offer), always or never", "auto, always or never"); ok {
		t.cfg.ResourceNamespacing = ResourceNamespacing(v)
	}
}
