package config

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// Endpoint is one item of the endpoints: list (issue 15): a named part of
// the catalog, served at /mcp/<name> (and /mcp/<name>/sse for legacy
// clients), selected by globs over the names clients see.
type Endpoint struct {
	// Name is ^[a-z0-9][a-z0-9-]{0,31}$, unique, and not one of
	// ReservedEndpointNames.
	Name string
	// Include selects: globs in path.Match syntax over client-visible names
	// (namespaced or overridden tool and prompt names, resource URIs and
	// resource templates). Nil means everything; the file cannot give an
	// empty list.
	Include []string
	// Exclude removes from what Include selected; same syntax.
	Exclude []string
	// Policy holds rules applied on top of the global policy, in file order,
	// exactly like Config.Policy: nil means no rules of its own; a non-nil
	// empty list denies the endpoint to everyone.
	Policy []PolicyRule
	// Discovery is how the endpoint shows its tools: DiscoveryList (the
	// default; also when unset), DiscoverySearch or DiscoveryCode. The top level's
	// (Config.Discovery) is /mcp's and is not inherited.
	Discovery Discovery
	// AlwaysList are globs (Include's syntax) over client-visible tool names:
	// in search mode, tools/list shows the endpoint's tools they match besides
	// the meta-tools (nil when unset).
	AlwaysList []string
	// ExposeFound, in search mode, adds each tool search_tools finds to that
	// session's tools/list (and sends list_changed).
	ExposeFound bool
	// CodeMode is the codeMode: block (nil when unset: DefaultCodeMode
	// applies with discovery: code).
	CodeMode *CodeMode
}

// MaxEndpointNameLen is the longest endpoint name.
const MaxEndpointNameLen = 32

// ReservedEndpointNames are the names an endpoint may not take: the paths
// of the legacy HTTP+SSE transport under /mcp/.
func ReservedEndpointNames() []string { return []string{"sse", "message", "messages"} }

var endpointNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,31}$`)

func endpointFields() []field { return fieldsOf(endpointTable()) }

// endpointBuild is one endpoint being read: the endpoint, where its settings
// are, and the names the earlier endpoints took.
type endpointBuild struct {
	e    Endpoint
	m    *endpointMeta
	seen map[string]*yaml.Node
}

// endpointTable is how an endpoint's keys are read.
func endpointTable() []blockField[endpointBuild] {
	table := []blockField[endpointBuild]{
		{field: field{key: "name", typ: tString, doc: "Serves the endpoint at /mcp/<name>: ^[a-z0-9][a-z0-9-]{0,31}$, unique, not sse, message or messages (required)."},
			read: func(p *parser, f pair, path string, b *endpointBuild) {
				v, ok := p.scalar(f.val, path)
				if !ok {
					return
				}
				b.m.nameNode = resolve(f.val)
				b.e.Name = v
				if msg := checkEndpointName(v); msg != "" {
					p.errorf(b.m.nameNode, path, "%s", msg)
				} else if first, dup := b.seen[v]; dup {
					p.errorf(b.m.nameNode, path, "duplicate endpoint name %q; the first is at %s; names must be unique", v, pos(first))
				} else {
					b.seen[v] = b.m.nameNode
				}
			}},
		{field: field{key: "include", typ: tStrings, doc: "Globs over the names clients see (tools, prompts, resource URIs) that the endpoint serves. Unset: everything."},
			read: func(p *parser, f pair, path string, b *endpointBuild) {
				b.m.includeSet, b.m.includeNode = true, resolve(f.val)
				b.e.Include, b.m.badInclude = p.globList(f.val, path)
				if b.e.Include != nil && len(b.e.Include) == 0 {
					p.errorf(b.m.includeNode, path, "is an empty list, which selects nothing; list globs such as \"files__*\", or remove include to select everything")
				}
			}},
		{field: field{key: "exclude", typ: tStrings, doc: "Globs that remove from what include selected."},
			read: func(p *parser, f pair, path string, b *endpointBuild) {
				b.m.excluded, b.m.excludeNode = true, resolve(f.val)
				b.e.Exclude, b.m.badExcl = p.globList(f.val, path)
			}},
		{field: field{key: "policy", typ: tBlockList, sub: policyRuleFields, doc: "Rules on top of the global policy, as the top level's; needs auth."},
			read: func(p *parser, f pair, path string, b *endpointBuild) {
				b.m.policyKey = f.key
				if rules, lists, ok := (policySection{p}).policyRules(f.val, path); ok {
					b.e.Policy, b.m.policyLists = rules, lists
					if len(rules) == 0 && len(resolve(f.val).Content) == 0 {
						p.warnf(resolve(f.val), path, "is an empty list, which denies the endpoint to everyone; remove the key to apply only the global policy")
					}
				}
			}},
	}
	for _, d := range discoveryFields("the endpoint's") {
		table = append(table, blockField[endpointBuild]{field: d, read: func(p *parser, f pair, path string, b *endpointBuild) {
			searchSection{p}.discoveryField(d.key, f, path, discoveryDst{&b.e.Discovery, &b.e.AlwaysList, &b.e.ExposeFound, &b.e.CodeMode}, &b.m.discovery)
		}})
	}
	return table
}

func endpointHints() map[string]string {
	sel := "select items with include globs over the names clients see, such as include: [\"files__*\"] for every tool and prompt of upstream files"
	return map[string]string{
		"tools":     sel,
		"prompts":   sel,
		"upstreams": sel,
		"servers":   sel,
		"path":      "an endpoint is served at /mcp/<name>; remove path",
		"allow":     "who may use the endpoint goes under policy, in rules like the top-level policy's (- match: ..., allow: [...])",
		"deny":      "who may use the endpoint goes under policy, in rules like the top-level policy's (- match: ..., deny: [...])",
		"mode":      "did you mean \"discovery\" (list, search or code)?",
		"search":    "an endpoint in search mode says discovery: search; the search: block (embeddings, timeout) is top-level and shared by every endpoint",
	}
}

// endpointMeta is where one endpoint's settings are, for the checks that need
// the upstreams and overrides.
type endpointMeta struct {
	path                 string
	node                 *yaml.Node
	nameNode             *yaml.Node
	includeNode          *yaml.Node // the include list (nil if unset)
	excludeNode          *yaml.Node
	policyKey            *yaml.Node
	policyLists          []*yaml.Node
	badInclude, badExcl  bool // a glob was malformed: skip the checks that need them all
	includeSet, excluded bool
	discovery            discoveryMeta
}

// endpoints reads the endpoints: list; checkEndpoints checks it against the
// upstreams and overrides.
func (p catalogSection) endpoints(key string, f pair, t *topLevel) {
	n := resolve(f.val)
	if n.Kind != yaml.SequenceNode {
		p.errorf(n, key, "must be a list of endpoints (each item starts with \"- name:\"), not %s", kindName(n))
		return
	}
	t.cfg.Endpoints = []Endpoint{}
	seen := map[string]*yaml.Node{}
	for i, item := range n.Content {
		path := index(key, i)
		b := &endpointBuild{e: Endpoint{Discovery: DiscoveryList}, seen: seen,
			m: &endpointMeta{path: path, node: resolve(item), discovery: discoveryMeta{path: path}}}
		o, ok := readBlock(p.parser, item, path, endpointHints(), endpointTable(), b)
		if !ok {
			continue
		}
		if _, ok := o.get("name"); !ok {
			p.errorf(b.m.node, path, "missing name; every endpoint needs one, such as name: research (it is served at /mcp/research)")
		}
		e, m := b.e, b.m
		t.cfg.Endpoints = append(t.cfg.Endpoints, e)
		t.endpoints = append(t.endpoints, m)
	}
}

// checkEndpointName returns why an endpoint name is invalid, or "".
func checkEndpointName(v string) string {
	switch {
	case v == "":
		return "is empty; use lowercase letters, digits and '-', such as \"research\""
	case len(v) > MaxEndpointNameLen:
		return fmt.Sprintf("%q is %d characters; the limit is %d", v, len(v), MaxEndpointNameLen)
	case contains(ReservedEndpointNames(), v):
		return fmt.Sprintf("%q is reserved: /mcp/%s is a path of the legacy HTTP+SSE transport; choose another name", v, v)
	case !endpointNameRE.MatchString(v):
		msg := fmt.Sprintf("%q must match ^[a-z0-9][a-z0-9-]{0,31}$ (lowercase letters, digits and '-', starting with a letter or digit): it is a URL path segment", v)
		if s := strings.Trim(normaliseName(v), "-"); s != "" && len(s) <= MaxEndpointNameLen && !contains(ReservedEndpointNames(), s) {
			msg += fmt.Sprintf("; try %q", s)
		}
		return msg
	}
	return ""
}

// checkGlob returns why g is not a glob the catalog can use, or "". The
// catalog matches with path.Match after turning '/' into a byte names never
// hold (so that '*' crosses the slashes of a URI); either form failing is
// a malformed glob, which would silently match nothing.
func checkGlob(g string) string {
	if g == "" {
		return "glob is empty; write a name, or a pattern with * and ?, such as \"files__*\""
	}
	_, err1 := path.Match(g, "")
	_, err2 := path.Match(strings.ReplaceAll(g, "/", "\x00"), "")
	if err1 != nil || err2 != nil {
		return fmt.Sprintf("%q is not a valid glob (an unclosed '[', a '\\' at the end, or an empty or reversed range); the syntax is Go's path.Match: * ? [a-z] [^a-z] and \\ to escape", g)
	}
	return ""
}

// isResourceGlob reports whether a glob is meant for resources: it has the
// ':' of a URI scheme, which no tool or prompt name can hold (client-visible
// names are ^[A-Za-z0-9_-]+$).
func isResourceGlob(g string) bool { return strings.Contains(g, ":") }

// allStars reports whether a glob matches every name (and every URI: the
// catalog's '*' crosses slashes).
func allStars(g string) bool { return g != "" && strings.Trim(g, "*") == "" }

// nameScope is what a name glob can match: the client-visible tool and prompt
// names the configured upstreams and overrides can produce.
type nameScope struct {
	// prefixes are the upstreams' effective prefixes: every name an upstream
	// exposes is one of them followed by one or more characters of
	// [A-Za-z0-9_-], its own name or a shortened one.
	prefixes []string
	// names are the names overrides give.
	names []string
}

// newNameScope collects the name space of cfg. A name longer than the budget
// is cut and ends in '_' and eight hex digits, which may cut the prefix too:
// the prefix kept is the part that always survives.
func newNameScope(cfg *Config) nameScope {
	var s nameScope
	keep := max(cfg.MaxToolNameLength-9, 0)
	for _, u := range cfg.Upstreams {
		pre := u.Prefix
		if len(pre) > keep {
			pre = pre[:keep]
		}
		if !contains(s.prefixes, pre) {
			s.prefixes = append(s.prefixes, pre)
		}
	}
	for _, o := range cfg.Overrides {
		if strictNameRE.MatchString(o.Name) && !contains(s.names, o.Name) {
			s.names = append(s.names, o.Name)
		}
	}
	slices.Sort(s.names)
	return s
}

// canMatch reports whether a name glob can match a name of the scope. It is
// exact for the names overrides give, and for an upstream's names it asks
// whether some prefix+[A-Za-z0-9_-]+ string matches (the upstream's tools are
// unknown until it runs): it never refuses a glob that a name could match.
func (s nameScope) canMatch(g string) bool {
	for _, n := range s.names {
		if ok, _ := path.Match(g, n); ok {
			return true
		}
	}
	toks := globTokens(g)
	for _, pre := range s.prefixes {
		if globAcceptsPrefix(toks, pre) {
			return true
		}
	}
	return false
}

// globTok is one element of a glob: a run of '*', or a pattern of one
// character (a literal, an escaped literal, '?' or a class) that path.Match
// tests against a single character.
type globTok struct {
	star bool
	one  string
}

// globTokens splits a valid glob into its elements, as path.Match reads it.
func globTokens(g string) []globTok {
	var toks []globTok
	for i := 0; i < len(g); {
		switch g[i] {
		case '*':
			for i < len(g) && g[i] == '*' {
				i++
			}
			toks = append(toks, globTok{star: true})
			continue
		case '\\':
			toks = append(toks, globTok{one: g[i:min(i+2, len(g))]})
			i += 2
			continue
		case '[':
			j := i + 1
			if j < len(g) && g[j] == '^' {
				j++
			}
			n := 0
			for j < len(g) && (g[j] != ']' || n == 0) {
				if g[j] == '\\' {
					j++
				}
				j++
				n++
			}
			toks = append(toks, globTok{one: g[i:min(j+1, len(g))]})
			i = j + 1
			continue
		}
		toks = append(toks, globTok{one: g[i : i+1]})
		i++
	}
	return toks
}

// strictChars are the characters of client-visible names.
const strictChars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-"

// globAcceptsPrefix reports whether the glob's tokens match some string that
// is pre followed by one or more characters of strictChars. It runs the glob
// as an automaton: its states are the token positions.
func globAcceptsPrefix(toks []globTok, pre string) bool {
	one := func(t globTok, c byte) bool {
		ok, _ := path.Match(t.one, string(c))
		return ok
	}
	closure := func(set map[int]bool) map[int]bool {
		for i := 0; i < len(toks); i++ { // stars are crossed left to right, so one pass suffices
			if set[i] && toks[i].star {
				set[i+1] = true
			}
		}
		return set
	}
	cur := closure(map[int]bool{0: true})
	for k := 0; k < len(pre) && len(cur) > 0; k++ {
		next := map[int]bool{}
		for i := range cur {
			switch {
			case i == len(toks):
			case toks[i].star:
				next[i] = true
			case one(toks[i], pre[k]):
				next[i+1] = true
			}
		}
		cur = closure(next)
	}
	// From the states reached, the end must be reachable reading at least one
	// strict character: search over (state, read anything yet).
	type st struct {
		i    int
		read bool
	}
	var todo []st
	seen := map[st]bool{}
	push := func(s st) {
		if !seen[s] {
			seen[s] = true
			todo = append(todo, s)
		}
	}
	for i := range cur {
		push(st{i, false})
	}
	for len(todo) > 0 {
		s := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		if s.i == len(toks) {
			if s.read {
				return true
			}
			continue
		}
		t := toks[s.i]
		if t.star {
			push(st{s.i + 1, s.read})
			push(st{s.i, true})
			continue
		}
		for k := 0; k < len(strictChars); k++ {
			if one(t, strictChars[k]) {
				push(st{s.i + 1, true})
				break
			}
		}
	}
	return false
}

// checkEndpoints checks the endpoints against the upstreams and overrides,
// once all are known: an endpoint must be able to select something.
func (p catalogSection) checkEndpoints(cfg *Config, t *topLevel) {
	scope := newNameScope(cfg)
	for i, e := range cfg.Endpoints {
		m := t.endpoints[i]
		if e.Policy != nil {
			if cfg.Auth == nil {
				p.errorf(m.policyKey, join(m.path, "policy"), "needs an auth block: rules match the claims of verified tokens, so without auth there is no one to match")
			}
			policySection(p).checkPolicyPatterns(cfg, join(m.path, "policy"), e.Policy, m.policyLists)
		}
		if m.badInclude || m.badExcl {
			continue
		}
		for j, g := range e.Exclude {
			if allStars(g) {
				msg := "excludes everything, so the endpoint selects nothing; list what to leave out, such as \"files__delete_*\""
				if !m.includeSet {
					msg = "excludes everything and there is no include, so the endpoint selects nothing; select with include and leave out with exclude"
				}
				p.errorf(m.excludeNode.Content[j], index(join(m.path, "exclude"), j), "%q %s", g, msg)
				continue
			}
			if !isResourceGlob(g) && !scope.canMatch(g) && len(cfg.Upstreams) > 0 {
				p.warnf(m.excludeNode.Content[j], index(join(m.path, "exclude"), j), "%q %s, so it has no effect", g, scope.noMatch(cfg, g))
			}
			// The endpoint serves the MCP Apps views (ui://) of the tools it selects, unless an exclude names them.
			if strings.Contains(strings.ToLower(g), "ui://") {
				p.warnf(m.excludeNode.Content[j], index(join(m.path, "exclude"), j), "%q leaves out MCP Apps views: a tool this endpoint selects that names such a ui:// view shows without it (hosts read the view from the endpoint); exclude the tool instead, or drop this glob to serve each selected tool's view", g)
			}
		}
		if len(e.Include) == 0 {
			continue
		}
		dead := 0
		for j, g := range e.Include {
			if isResourceGlob(g) || scope.canMatch(g) {
				continue
			}
			dead++
			p.errorf(m.includeNode.Content[j], index(join(m.path, "include"), j), "%q %s", g, scope.noMatch(cfg, g))
		}
		if dead == 0 && len(e.Exclude) > 0 && !slices.ContainsFunc(e.Include, func(g string) bool { return !contains(e.Exclude, g) }) {
			p.errorf(m.excludeNode, join(m.path, "exclude"), "excludes every glob of include (at %s), so the endpoint selects nothing", pos(m.includeNode))
		}
	}
}

// noMatch explains why a name glob matches nothing.
func (s nameScope) noMatch(cfg *Config, g string) string {
	if len(cfg.Upstreams) == 0 {
		return "can match no tool or prompt: no upstreams are configured"
	}
	var pres []string
	for _, u := range cfg.Upstreams {
		pres = append(pres, fmt.Sprintf("%q (%s)", u.Prefix, u.Name))
	}
	msg := "can match no tool or prompt name: clients see an upstream's items as <prefix><name>, and the prefixes are " + strings.Join(pres, ", ")
	if len(s.names) > 0 {
		msg += "; overrides give the names " + list(s.names)
	}
	for _, u := range cfg.Upstreams {
		if rest, ok := strings.CutPrefix(g, u.Name); ok && u.Prefix != "" {
			if try := u.Prefix + strings.TrimLeft(rest, "_-/"); try != g && s.canMatch(try) {
				return msg + fmt.Sprintf("; did you mean %q?", try)
			}
		}
	}
	switch {
	case strings.Contains(g, "/"):
		up, item, _ := strings.Cut(g, "/")
		pre := up + "__"
		for _, u := range cfg.Upstreams {
			if u.Name == up {
				pre = u.Prefix
			}
		}
		msg += fmt.Sprintf(" (names have no '/': the \"<upstream>/<item>\" form is policy's; did you mean %q?)", pre+item)
	default:
		msg += "; to select resources, write the URI with its scheme, such as \"file:///docs/*\""
	}
	return msg
}
