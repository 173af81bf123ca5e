package config

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
)

// Kinds of item an override applies to: the words the policy uses.
const (
	OverrideTool   = "tool"
	OverridePrompt = "prompt"
)

// OverrideKey names the item an override applies to: the upstream's
// configured name, the kind (OverrideTool or OverridePrompt) and the item's
// name as the upstream lists it. The file writes it "<upstream>/<tool>" or
// "<upstream>/prompts/<prompt>".
type OverrideKey struct {
	Upstream, Kind, Name string
}

// Override changes how clients see one tool or prompt of an upstream (the
// overrides: map, issue 15). Unset fields keep the upstream's own. Its fields
// are those of routing.Override, in the same order, so one converts to the
// other.
type Override struct {
	// Name is the client-visible name ("" keeps the namespaced default):
	// ^[A-Za-z0-9_-]{1,64}$, within maxToolNameLength, unique among the
	// overrides of its kind, and not starting with another upstream's prefix.
	Name string
	// Title is the tool's title (tools only).
	Title string
	// Description replaces the item's description.
	Description string
	// Annotations is a JSON object merged over the tool's own annotations
	// (tools only; nil = none).
	Annotations json.RawMessage
	// Arguments are presets (tools only): argument name to its JSON value,
	// with ${VAR} expanded in strings. Each is removed from the inputSchema
	// clients see and set on every call.
	Arguments map[string]json.RawMessage
	// TaskSupport (tools only) is how the gateway runs the tool as a task of
	// its own when its upstream takes no tasks: forbidden, optional or
	// required ("" follows the upstream's tasks:).
	TaskSupport string
}

func overrideFields() []field { return fieldsOf(overrideTable()) }

// overrideBuild is one override being read: the override, its presets as
// written, and where its settings are.
type overrideBuild struct {
	Override
	raw map[string]json.RawMessage
	m   *overrideMeta
}

// overrideTable is how an override's keys are read.
func overrideTable() []blockField[overrideBuild] {
	text := func(key, doc string, dst func(*overrideBuild) *string) blockField[overrideBuild] {
		return blockField[overrideBuild]{field: field{key: key, typ: tString, doc: doc},
			read: func(p *parser, f pair, path string, b *overrideBuild) {
				if v, ok := p.scalar(f.val, path); ok {
					if strings.TrimSpace(v) == "" {
						p.errorf(resolve(f.val), path, "is empty; remove it to keep the upstream's %s", key)
					}
					*dst(b) = v
				}
			}}
	}
	return []blockField[overrideBuild]{
		{field: field{key: "name", typ: tString, doc: "The name clients see, ^[A-Za-z0-9_-]{1,64}$ within maxToolNameLength (unset: the namespaced name)."},
			read: func(p *parser, f pair, path string, b *overrideBuild) {
				b.m.nameNode = resolve(f.val)
				b.Name, _ = p.scalar(f.val, path)
			}},
		text("title", "The tool's title (tools only).", func(b *overrideBuild) *string { return &b.Title }),
		text("description", "Replaces the item's description.", func(b *overrideBuild) *string { return &b.Description }),
		{field: field{key: "annotations", typ: tObject, doc: "Merged over the tool's own annotations, such as {readOnlyHint: true} (tools only)."},
			read: func(p *parser, f pair, path string, b *overrideBuild) {
				b.Annotations = catalogSection{p}.annotations(f.val, path)
			}},
		{field: field{key: "arguments", typ: tObject, doc: "Presets (tools only): argument name to the value every call gets, hidden from the inputSchema; ${VAR} is expanded in strings."},
			read: func(p *parser, f pair, path string, b *overrideBuild) {
				b.Arguments, b.raw = catalogSection{p}.presets(f.val, path)
			}},
		{field: field{key: "taskSupport", typ: tString, enum: []string{TaskForbidden, TaskOptional, TaskRequired},
			doc: "How the gateway runs the tool as a task of its own when its upstream takes none (tools only; unset: the upstream's tasks:)."},
			read: func(p *parser, f pair, path string, b *overrideBuild) {
				b.TaskSupport, _ = p.oneOf(f, path, "task support", []string{TaskForbidden, TaskOptional, TaskRequired},
					"forbidden (never a task), optional (a task when the client can take one and the call is slow) or required (only as a task)", "forbidden, optional or required")
			}},
	}
}

// strictNameRE is the tool-name form the big clients enforce.
var strictNameRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// overrideMeta is where one override's settings are.
type overrideMeta struct {
	key      OverrideKey
	path     string
	keyNode  *yaml.Node
	nameNode *yaml.Node
	ok       bool // the key parsed
}

// overrides reads the overrides: map; checkOverrides checks it against the
// upstreams.
func (p catalogSection) overrides(key string, f pair, t *topLevel) {
	n := resolve(f.val)
	if n.Kind != yaml.MappingNode {
		p.errorf(n, key, "must be a mapping of \"<upstream>/<tool>\" (or \"<upstream>/prompts/<prompt>\") to settings, not %s", kindName(n))
		return
	}
	t.cfg.Overrides = map[OverrideKey]Override{}
	for _, pr := range p.pairs(n, key) {
		path := join(key, pr.key.Value)
		m := &overrideMeta{path: path, keyNode: pr.key}
		k, msg := parseOverrideKey(pr.key.Value)
		if msg != "" {
			p.errorf(pr.key, path, "%s", msg)
		} else {
			m.key, m.ok = k, true
		}
		b := &overrideBuild{m: m}
		o, ok := readBlock(p.parser, pr.val, path, nil, overrideTable(), b)
		if !ok {
			continue
		}
		ov, raw := b.Override, b.raw
		if m.ok && k.Kind == OverridePrompt {
			for _, tk := range []string{"title", "annotations", "arguments", "taskSupport"} {
				if f, ok := o.fields[tk]; ok {
					p.errorf(f.key, join(path, tk), "%s applies to tools only; a prompt override takes name and description", tk)
				}
			}
		}
		if len(o.fields) == 0 {
			p.warnf(pr.key, path, "sets nothing, so it has no effect; give name, title, description, annotations or arguments")
		}
		if !m.ok {
			continue
		}
		t.cfg.Overrides[k] = ov
		if raw != nil {
			if t.cfg.presetSources == nil {
				t.cfg.presetSources = map[OverrideKey]map[string]json.RawMessage{}
			}
			t.cfg.presetSources[k] = raw
		}
		t.overrides = append(t.overrides, m)
	}
}

// parseOverrideKey splits "<upstream>/<tool>" or "<upstream>/prompts/<prompt>",
// or says why it cannot.
func parseOverrideKey(s string) (OverrideKey, string) {
	const want = "write \"<upstream>/<tool>\", or \"<upstream>/prompts/<prompt>\" for a prompt, with the upstream's configured name and the item's name as the upstream lists it"
	up, rest, ok := strings.Cut(s, "/")
	switch {
	case !ok:
		return OverrideKey{}, fmt.Sprintf("%q names no item; %s", s, want)
	case up == "":
		return OverrideKey{}, fmt.Sprintf("%q has no upstream before '/'; %s", s, want)
	case rest == "":
		return OverrideKey{}, fmt.Sprintf("%q has nothing after '/'; %s", s, want)
	}
	k := OverrideKey{Upstream: up, Kind: OverrideTool, Name: rest}
	if name, ok := strings.CutPrefix(rest, "prompts/"); ok {
		if name == "" {
			return OverrideKey{}, fmt.Sprintf("%q names no prompt; %s", s, want)
		}
		k.Kind, k.Name = OverridePrompt, name
	} else if first, item, ok := strings.Cut(rest, "/"); ok {
		msg := fmt.Sprintf("%q: tool names cannot contain '/'; %s", s, want)
		switch first {
		case "tools":
			msg = fmt.Sprintf("%q: a tool is written without \"tools/\"; did you mean %q?", s, up+"/"+item)
		case "resources":
			msg = fmt.Sprintf("%q: resources cannot be overridden; only tools and prompts", s)
		}
		return OverrideKey{}, msg
	}
	if strings.ContainsAny(k.Name, "*?[") {
		return OverrideKey{}, fmt.Sprintf("%q: an override names one item; globs are not supported", s)
	}
	return k, ""
}

// toolHints are the annotations the MCP specification defines as booleans.
func toolHints() []string {
	return []string{"readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"}
}

// annotations reads a tool's annotations: any JSON object, whose hints the
// specification defines must be booleans and title a string.
func (p catalogSection) annotations(n *yaml.Node, path string) json.RawMessage {
	n = resolve(n)
	if n.Kind != yaml.MappingNode {
		p.errorf(n, path, "must be a mapping (a JSON object), such as {readOnlyHint: true}, not %s", kindName(n))
		return nil
	}
	val, _, ok := p.jsonValue(n, path, false, 0)
	if !ok {
		return nil
	}
	good := true
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], resolve(n.Content[i+1])
		switch {
		case contains(toolHints(), k.Value) && (v.Kind != yaml.ScalarNode || v.Tag != "!!bool"):
			p.errorf(v, join(path, k.Value), "must be true or false, not %s (the MCP specification's annotation hints are booleans)", kindName(v))
			good = false
		case k.Value == "title" && (v.Kind != yaml.ScalarNode || v.Tag == "!!null"):
			p.errorf(v, join(path, k.Value), "must be a string, not %s", kindName(v))
			good = false
		}
	}
	if !good {
		return nil
	}
	return val
}

// presets reads a tool's argument presets: argument name to any JSON value,
// with ${VAR} expanded in strings. raw holds the values as written.
func (p catalogSection) presets(n *yaml.Node, path string) (vals, raw map[string]json.RawMessage) {
	n = resolve(n)
	if n.Kind != yaml.MappingNode {
		p.errorf(n, path, "must be a mapping of argument names to the values every call gets, such as {owner: acme}, not %s", kindName(n))
		return nil, nil
	}
	vals, raw = map[string]json.RawMessage{}, map[string]json.RawMessage{}
	for _, f := range p.pairs(n, path) {
		kp := join(path, f.key.Value)
		if f.key.Value == "" {
			p.errorf(f.key, kp, "argument name is empty")
			continue
		}
		if v, r, ok := p.jsonValue(f.val, kp, true, 0); ok {
			vals[f.key.Value], raw[f.key.Value] = v, r
		}
	}
	if len(vals) == 0 {
		return nil, nil
	}
	return vals, raw
}

// checkOverrides checks the overrides against the upstreams once all are
// known: the upstream exists, and the names given are valid and distinct.
func (p catalogSection) checkOverrides(cfg *Config, t *topLevel) {
	ups := map[string]*Upstream{}
	var names []string
	for i := range cfg.Upstreams {
		ups[cfg.Upstreams[i].Name] = &cfg.Upstreams[i]
		names = append(names, cfg.Upstreams[i].Name)
	}
	taken := map[string]*overrideMeta{} // kind + "\x00" + name
	for _, m := range t.overrides {
		k := m.key
		up := ups[k.Upstream]
		if up == nil {
			msg := fmt.Sprintf("no upstream is named %q; ", k.Upstream)
			if len(names) == 0 {
				msg += "no upstreams are configured"
			} else {
				msg += "the configured upstreams are " + strings.Join(names, ", ")
				if s := suggest(k.Upstream, names); s != "" {
					msg += fmt.Sprintf("; did you mean %q?", s)
				}
			}
			p.errorf(m.keyNode, m.path, "%s (the key is \"<upstream>/<tool>\" with the upstream's configured name)", msg)
		}
		name := cfg.Overrides[k].Name
		if m.nameNode == nil || name == "" && m.nameNode.Tag != "!!str" {
			continue
		}
		np := join(m.path, "name")
		if msg := checkOverrideName(name, cfg, up); msg != "" {
			p.errorf(m.nameNode, np, "%s", msg)
			continue
		}
		if k.Kind == OverrideTool && contains(MetaToolNames(), name) {
			msg := fmt.Sprintf("%q is reserved: search and code mode (discovery: search or code) serve their meta-tools search_tools, call_tool, describe_tools and run_script under these names, and a tool renamed so would collide with one; choose another name", name)
			if at := t.searchModeAt(); at != nil {
				msg += fmt.Sprintf(" (discovery: %s is set at %s)", at.Value, pos(at))
			}
			p.errorf(m.nameNode, np, "%s", msg)
			continue
		}
		if first, dup := taken[k.Kind+"\x00"+name]; dup {
			p.errorf(m.nameNode, np, "%q is also the name %s gives (at %s); two %ss cannot share a client-visible name", name, first.path, pos(first.nameNode), k.Kind)
			continue
		}
		taken[k.Kind+"\x00"+name] = m
	}
}

// checkOverrideName returns why an override's name is invalid, or "". up is
// the override's upstream (nil if unknown).
func checkOverrideName(v string, cfg *Config, up *Upstream) string {
	if !strictNameRE.MatchString(v) {
		if v == "" {
			return "is empty; remove it to keep the namespaced name"
		}
		msg := fmt.Sprintf("%q is not a valid tool name: clients accept only letters, digits, '_' and '-', at most 64", v)
		s := strings.Map(func(r rune) rune {
			if r < 0x80 && strictByte(byte(r)) {
				return r
			}
			return '_'
		}, v)
		if len(s) <= cfg.MaxToolNameLength && strictNameRE.MatchString(s) {
			msg += fmt.Sprintf("; try %q", s)
		}
		return msg
	}
	if len(v) > cfg.MaxToolNameLength {
		return fmt.Sprintf("%q is %d characters; names may have at most %d (maxToolNameLength)", v, len(v), cfg.MaxToolNameLength)
	}
	own := ""
	if up != nil {
		own = up.Prefix
	}
	others := make([]*Upstream, 0, len(cfg.Upstreams))
	for i := range cfg.Upstreams {
		others = append(others, &cfg.Upstreams[i])
	}
	sort.SliceStable(others, func(i, j int) bool { return len(others[i].Prefix) > len(others[j].Prefix) })
	for _, o := range others {
		if o == up || o.Prefix == "" || !strings.HasPrefix(v, o.Prefix) {
			continue
		}
		if own != "" && len(own) >= len(o.Prefix) && strings.HasPrefix(v, own) {
			break
		}
		return fmt.Sprintf("%q starts with %q, the prefix of upstream %s, so clients would take it for one of that upstream's tools; choose a name without it", v, o.Prefix, o.Name)
	}
	return ""
}

func strictByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// String is the key as the file writes it: "<upstream>/<tool>" or
// "<upstream>/prompts/<prompt>".
func (k OverrideKey) String() string {
	if k.Kind == OverridePrompt {
		return k.Upstream + "/prompts/" + k.Name
	}
	return k.Upstream + "/" + k.Name
}
