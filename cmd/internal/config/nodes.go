package config

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// parser walks the node tree, converting values and collecting problems. It
// lives for one Parse call.
type parser struct {
	*reporter
	env func(string) (string, bool)
}

// The sections of the file each read their part with the parser's value
// readers: their own types keep the parser small.
type (
	// authSection reads the auth: block and an upstream's auth:.
	authSection struct{ *parser }
	// policySection reads policy rules, the top level's and an endpoint's.
	policySection struct{ *parser }
	// upstreamSection reads the upstreams, in either form.
	upstreamSection struct{ *parser }
	// catalogSection reads the endpoints and overrides.
	catalogSection struct{ *parser }
	// searchSection reads the discovery settings and the search: block.
	searchSection struct{ *parser }
)

// pos formats a node's position for messages that point at a second place.
func pos(n *yaml.Node) string { return fmt.Sprintf("%d:%d", n.Line, n.Column) }

var simpleKeyRE = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// join appends a key to a path, quoting keys that would be ambiguous.
func join(path, key string) string {
	if !simpleKeyRE.MatchString(key) {
		return path + "[" + strconv.Quote(key) + "]"
	}
	if path == "" {
		return key
	}
	return path + "." + key
}

func index(path string, i int) string { return fmt.Sprintf("%s[%d]", path, i) }

func resolve(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool {
	n = resolve(n)
	return n == nil || n.Kind == 0 || (n.Kind == yaml.ScalarNode && n.Tag == "!!null")
}

func kindName(n *yaml.Node) string {
	n = resolve(n)
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.Tag {
		case "!!int", "!!float":
			return "a number"
		case "!!bool":
			return "a boolean"
		case "!!null":
			return "empty"
		}
		return "a string"
	}
	return "empty"
}

// pair is one key and value of a mapping.
type pair struct{ key, val *yaml.Node }

// object is a mapping whose keys were checked against a schema.
type object struct {
	path   string
	node   *yaml.Node
	fields map[string]pair
}

func (o *object) get(key string) (pair, bool) {
	f, ok := o.fields[key]
	return f, ok && !isNull(f.val)
}

// keySpec describes the keys a mapping accepts.
type keySpec struct {
	known []string
	// hints explain keys that are wrong in a known way (from other tools).
	hints map[string]string
	// lenient reports unknown keys as warnings: used for the mcpServers
	// form, whose files also belong to other applications.
	lenient bool
}

// object checks that n is a mapping with only known keys. YAML merge keys
// (<<: *anchor) are honoured; duplicate keys are errors that name both places.
func (p *parser) object(n *yaml.Node, path string, spec keySpec) (*object, bool) {
	o := &object{path: path, node: n, fields: map[string]pair{}}
	if isNull(n) {
		return o, true
	}
	n = resolve(n)
	if n.Kind != yaml.MappingNode {
		p.errorf(n, path, "must be a mapping of keys to values, not %s", kindName(n))
		return o, false
	}
	for _, f := range p.pairs(n, path) {
		key := f.key.Value
		if !contains(spec.known, key) {
			msg := "unknown key " + strconv.Quote(key)
			if h, ok := spec.hints[key]; ok {
				msg += ": " + h
			} else if s := suggest(key, spec.known); s != "" {
				msg += fmt.Sprintf("; did you mean %q?", s)
			} else {
				msg += "; valid keys are " + strings.Join(spec.known, ", ")
			}
			if spec.lenient {
				p.warnf(f.key, join(path, key), "%s (ignored)", msg)
			} else {
				p.errorf(f.key, join(path, key), "%s", msg)
			}
			continue
		}
		o.fields[key] = f
	}
	return o, true
}

// pairs returns a mapping's entries with merge keys expanded: own keys win
// over merged ones, and earlier merge sources over later ones, as YAML says.
func (p *parser) pairs(n *yaml.Node, path string) []pair {
	var own, merged []pair
	seen := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.Tag == "!!merge" {
			src := resolve(v)
			srcs := []*yaml.Node{src}
			if src.Kind == yaml.SequenceNode {
				srcs = src.Content
			}
			for _, s := range srcs {
				if s = resolve(s); s.Kind != yaml.MappingNode {
					p.errorf(s, path, "the merge key << needs a mapping or a list of mappings, not %s", kindName(s))
					continue
				}
				merged = append(merged, p.pairs(s, path)...)
			}
			continue
		}
		if k.Kind != yaml.ScalarNode {
			p.errorf(k, path, "keys must be plain strings, not %s", kindName(k))
			continue
		}
		if first, dup := seen[k.Value]; dup {
			p.errorf(k, join(path, k.Value), "duplicate key %q; it is already set at %s", k.Value, pos(first))
			continue
		}
		seen[k.Value] = k
		own = append(own, pair{k, v})
	}
	for _, f := range merged {
		if _, ok := seen[f.key.Value]; !ok {
			seen[f.key.Value] = f.key
			own = append(own, f)
		}
	}
	return own
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// suggest returns the known key closest to key, if it is close enough to be
// a likely typo: case, '-' and '_' are ignored, then at most two edits (one
// for short keys, where two edits reach unrelated words).
func suggest(key string, known []string) string {
	norm := func(s string) string {
		return strings.NewReplacer("-", "", "_", "").Replace(strings.ToLower(s))
	}
	nk := norm(key)
	limit := 2
	if len(nk) <= 4 {
		limit = 1
	}
	best, bestD := "", limit+1
	for _, k := range known {
		if d := editDistance(nk, norm(k)); d < bestD {
			best, bestD = k, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

// scalar returns the text of a scalar value. Numbers and booleans are
// accepted as text (args: [--port, 8080] means "8080").
func (p *parser) scalar(n *yaml.Node, path string) (string, bool) {
	n = resolve(n)
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		p.errorf(n, path, "must be a string, not %s", kindName(n))
		return "", false
	}
	return n.Value, true
}

// expanded returns a scalar with ${VAR} references expanded.
func (p *parser) expanded(n *yaml.Node, path string) (val, raw string, ok bool) {
	raw, ok = p.scalar(n, path)
	if !ok {
		return "", "", false
	}
	val, errs := expand(raw, p.env)
	for _, e := range errs {
		p.errorf(resolve(n), path, "%s", e)
	}
	return val, raw, len(errs) == 0
}

func (p *parser) stringList(n *yaml.Node, path string, expandVars bool) (vals, raws []string, ok bool) {
	n = resolve(n)
	if n.Kind != yaml.SequenceNode {
		p.errorf(n, path, "must be a list of strings, not %s (write [\"a\", \"b\"])", kindName(n))
		return nil, nil, false
	}
	ok = true
	vals, raws = []string{}, []string{}
	for i, item := range n.Content {
		var v, r string
		var good bool
		if expandVars {
			v, r, good = p.expanded(item, index(path, i))
		} else {
			v, good = p.scalar(item, index(path, i))
			r = v
		}
		ok = ok && good
		vals, raws = append(vals, v), append(raws, r)
	}
	return vals, raws, ok
}

// stringMap reads a mapping of strings, expanding values; keys are checked
// by validKey, which returns a message for a bad key.
func (p *parser) stringMap(n *yaml.Node, path string, validKey func(string) string) map[string]string {
	n = resolve(n)
	if n.Kind != yaml.MappingNode {
		p.errorf(n, path, "must be a mapping of names to values, not %s", kindName(n))
		return nil
	}
	m := map[string]string{}
	for _, f := range p.pairs(n, path) {
		kp := join(path, f.key.Value)
		if msg := validKey(f.key.Value); msg != "" {
			p.errorf(f.key, kp, "%s", msg)
			continue
		}
		if isNull(f.val) {
			p.errorf(resolve(f.val), kp, "has no value; write \"\" for an empty value")
			continue
		}
		if v, _, ok := p.expanded(f.val, kp); ok {
			m[f.key.Value] = v
		}
	}
	return m
}

func (p *parser) integer(n *yaml.Node, path string) (int64, bool) {
	n = resolve(n)
	if n.Kind == yaml.ScalarNode && n.Tag == "!!int" {
		if v, err := strconv.ParseInt(n.Value, 0, 64); err == nil {
			return v, true
		}
		p.errorf(n, path, "%s is too large", n.Value)
		return 0, false
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!str" {
		if _, err := strconv.Atoi(n.Value); err == nil {
			p.errorf(n, path, "must be a number, not a string (write %s without quotes)", n.Value)
			return 0, false
		}
	}
	p.errorf(n, path, "must be a whole number, not %s", kindName(n))
	return 0, false
}

func (p *parser) boolean(n *yaml.Node, path string) (bool, bool) {
	n = resolve(n)
	if n.Kind == yaml.ScalarNode && n.Tag == "!!bool" {
		v, err := strconv.ParseBool(strings.ToLower(n.Value))
		return v, err == nil
	}
	p.errorf(n, path, "must be true or false, not %s", kindName(n))
	return false, false
}

// duration reads a positive Go duration such as "60s" or "1m30s". With
// seconds set, a bare number counts as seconds (the mcpServers files of some
// clients write timeouts that way); otherwise it is refused as ambiguous.
func (p *parser) duration(n *yaml.Node, path string, seconds bool) (time.Duration, bool) {
	n = resolve(n)
	if n.Kind == yaml.ScalarNode && n.Tag == "!!int" {
		if v, err := strconv.ParseInt(n.Value, 10, 32); seconds && err == nil && v > 0 {
			return time.Duration(v) * time.Second, true
		}
		p.errorf(n, path, "%s has no unit; write a duration such as \"%ss\" (units: ms, s, m, h)", n.Value, n.Value)
		return 0, false
	}
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		p.errorf(n, path, "must be a duration such as \"60s\" or \"10m\", not %s", kindName(n))
		return 0, false
	}
	d, err := time.ParseDuration(strings.TrimSpace(n.Value))
	if err != nil {
		p.errorf(n, path, "%q is not a duration; write a number with a unit, such as \"60s\", \"10m\" or \"1h30m\"", n.Value)
		return 0, false
	}
	if d <= 0 {
		p.errorf(n, path, "must be greater than zero, not %q", n.Value)
		return 0, false
	}
	return d, true
}

var sizeRE = regexp.MustCompile(`^\s*([0-9]+)\s*([A-Za-z]*)\s*$`)

// size reads a byte count: an integer, or a string with a unit. Both the
// binary (KiB) and decimal (KB) units are accepted because both are common;
// bare K/M/G are refused since their base is ambiguous.
func (p *parser) size(n *yaml.Node, path string) (int64, bool) {
	n = resolve(n)
	const hint = "write a number of bytes or a size such as \"4MiB\" (units: B, KB, MB, GB, KiB, MiB, GiB)"
	if n.Kind == yaml.ScalarNode && n.Tag == "!!int" {
		v, err := strconv.ParseInt(n.Value, 0, 64)
		if err != nil || v <= 0 {
			p.errorf(n, path, "must be greater than zero; %s", hint)
			return 0, false
		}
		return v, true
	}
	m := sizeRE.FindStringSubmatch(n.Value)
	if n.Kind != yaml.ScalarNode || n.Tag != "!!str" || m == nil {
		p.errorf(n, path, "%s is not a size; %s", describe(n), hint)
		return 0, false
	}
	units := map[string]int64{"": 1, "b": 1, "kb": 1e3, "mb": 1e6, "gb": 1e9, "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30}
	mult, ok := units[strings.ToLower(m[2])]
	if !ok {
		p.errorf(n, path, "unknown unit %q; %s", m[2], hint)
		return 0, false
	}
	v, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil || v > (1<<62)/mult {
		p.errorf(n, path, "%q is too large", n.Value)
		return 0, false
	}
	if v == 0 {
		p.errorf(n, path, "must be greater than zero; %s", hint)
		return 0, false
	}
	return v * mult, true
}

// describe names a scalar for a message: its text when it is a string the
// user wrote literally, else its kind.
func describe(n *yaml.Node) string {
	if n.Kind == yaml.ScalarNode && n.Tag != "!!null" {
		return strconv.Quote(n.Value)
	}
	return kindName(n)
}

// oneOf reads a scalar that must be one of valid. A wrong value is refused
// with the choices explained (use), or with the closest choice when it looks
// like a typo (the choices named in short).
func (p *parser) oneOf(f pair, path, what string, valid []string, use, short string) (string, bool) {
	v, ok := p.scalar(f.val, path)
	if !ok {
		return "", false
	}
	if contains(valid, v) {
		return v, true
	}
	msg := fmt.Sprintf("%q is not a %s; use %s", v, what, use)
	if s := suggest(v, valid); s != "" {
		msg = fmt.Sprintf("%q is not a %s; did you mean %q? (%s)", v, what, s, short)
	}
	p.errorf(resolve(f.val), path, "%s", msg)
	return "", false
}

// jsonValue converts a YAML value to JSON. With expandVars, ${VAR} is
// expanded in strings, and raw is the value as written. Numbers keep their
// text when it is JSON already; YAML's other spellings (0x1F, 1_000) are
// converted; infinities and NaN, which JSON lacks, are refused.
func (p *parser) jsonValue(n *yaml.Node, path string, expandVars bool, depth int) (val, raw json.RawMessage, ok bool) {
	budget := maxJSONNodes
	v, r, ok := p.jsonTree(n, path, expandVars, depth, &budget)
	if !ok {
		return nil, nil, false
	}
	val, err1 := json.Marshal(v)
	raw, err2 := json.Marshal(r)
	if err1 != nil || err2 != nil {
		p.errorf(resolve(n), path, "cannot be written as JSON")
		return nil, nil, false
	}
	return val, raw, true
}

func (p *parser) jsonTree(n *yaml.Node, path string, expandVars bool, depth int, budget *int) (val, raw any, ok bool) {
	n = resolve(n)
	*budget--
	switch {
	case *budget < 0:
		if *budget == -1 {
			p.errorf(n, path, "is too large: more than %d values once YAML aliases are expanded", maxJSONNodes)
		}
		return nil, nil, false
	case depth > maxJSONDepth:
		p.errorf(n, path, "is nested more than %d levels deep", maxJSONDepth)
		return nil, nil, false
	}
	switch n.Kind {
	case yaml.MappingNode:
		vm, rm := map[string]any{}, map[string]any{}
		ok = true
		for _, f := range p.pairs(n, path) {
			v, r, good := p.jsonTree(f.val, join(path, f.key.Value), expandVars, depth+1, budget)
			vm[f.key.Value], rm[f.key.Value] = v, r
			ok = ok && good
		}
		return vm, rm, ok
	case yaml.SequenceNode:
		vs, rs := []any{}, []any{}
		ok = true
		for i, it := range n.Content {
			v, r, good := p.jsonTree(it, index(path, i), expandVars, depth+1, budget)
			vs, rs = append(vs, v), append(rs, r)
			ok = ok && good
		}
		return vs, rs, ok
	case yaml.ScalarNode:
	default:
		return nil, nil, true
	}
	switch n.Tag {
	case "!!null":
		return nil, nil, true
	case "!!bool":
		b, err := strconv.ParseBool(strings.ToLower(n.Value))
		return b, b, err == nil
	case "!!int", "!!float":
		if num, ok := jsonNumber(n.Value, n.Tag); ok {
			return num, num, true
		}
		p.errorf(n, path, "%s is not a number JSON can hold (no infinity or NaN); quote it to pass a string", n.Value)
		return nil, nil, false
	}
	if !expandVars {
		return n.Value, n.Value, true
	}
	v, _, ok := p.expanded(n, path)
	return v, n.Value, ok
}

// jsonNumber returns a YAML number as a JSON number.
func jsonNumber(s, tag string) (json.Number, bool) {
	if m := jsonNumberRE.FindString(s); m == s {
		return json.Number(s), true
	}
	if tag == "!!int" {
		if i, err := strconv.ParseInt(s, 0, 64); err == nil {
			return json.Number(strconv.FormatInt(i, 10)), true
		}
		if u, err := strconv.ParseUint(s, 0, 64); err == nil {
			return json.Number(strconv.FormatUint(u, 10)), true
		}
	}
	f, err := strconv.ParseFloat(strings.ReplaceAll(s, "_", ""), 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return "", false
	}
	return json.Number(strconv.FormatFloat(f, 'g', -1, 64)), true
}

// globList reads a list of globs. bad reports a malformed one (each gets its
// error); vals is non-nil when n is a list.
func (p *parser) globList(n *yaml.Node, path string) (vals []string, bad bool) {
	vals, _, ok := p.stringList(n, path, false)
	if !ok {
		return vals, true
	}
	for i, g := range vals {
		if msg := checkGlob(g); msg != "" {
			p.errorf(resolve(n).Content[i], index(path, i), "%s", msg)
			bad = true
		}
	}
	return vals, bad
}

// maxJSONDepth bounds the nesting of a JSON value in the file, and
// maxJSONNodes its size once YAML aliases are expanded (an alias of an alias
// of a list grows exponentially).
const (
	maxJSONDepth = 32
	maxJSONNodes = 10000
)
