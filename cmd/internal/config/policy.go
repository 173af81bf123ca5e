package config

import (
	"fmt"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// PolicyRule is one item of the policy: list. A rule applies to a principal
// when every condition of Match holds; it then allows and denies upstreams
// and items by pattern. See docs/auth.md.
type PolicyRule struct {
	// Name labels the rule in logs ("" = "policy[i]").
	Name string
	// Match holds the conditions; an empty Match applies to every principal.
	Match PolicyMatch
	// Allow and Deny are patterns "<upstream>" (the whole upstream) or
	// "<upstream>/<item>", where both parts may use * and ?. Deny wins.
	Allow, Deny []string
}

// PolicyMatch is the condition part of a rule. Every non-empty field must
// hold; within one field, any listed value is enough. String values may use
// the * and ? wildcards.
type PolicyMatch struct {
	// Sub lists accepted subjects (the sub claim).
	Sub []string
	// Groups lists groups; the principal must be in one of them.
	Groups []string
	// Scopes lists scopes; the token must carry one of them.
	Scopes []string
	// Claims maps a claim name (a dotted path reaches nested claims, such as
	// realm_access.roles) to accepted values: string, bool or float64. A claim
	// holding a list matches when one of its elements does.
	Claims map[string][]any
}

func policyRuleFields() []field { return fieldsOf(policyRuleTable()) }

// ruleBuild is one policy rule being read, with the nodes of its allow and
// deny lists in order, for checkPolicyPatterns.
type ruleBuild struct {
	PolicyRule
	lists []*yaml.Node
}

// policyRuleTable is how a policy rule's keys are read.
func policyRuleTable() []blockField[ruleBuild] {
	patterns := func(key, doc string, dst func(*ruleBuild) *[]string) blockField[ruleBuild] {
		return blockField[ruleBuild]{field: field{key: key, typ: tStrings, doc: doc},
			read: func(p *parser, f pair, path string, r *ruleBuild) {
				if vals, _, ok := p.stringList(f.val, path, false); ok {
					*dst(r) = vals
					r.lists = append(r.lists, resolve(f.val))
				}
			}}
	}
	return []blockField[ruleBuild]{
		{field: field{key: "name", typ: tString, def: "(policy[i])", doc: "Labels the rule in logs."},
			read: func(p *parser, f pair, path string, r *ruleBuild) { r.Name, _ = p.scalar(f.val, path) }},
		{field: field{key: "match", typ: tBlock, sub: policyMatchFields, doc: "The conditions, all of which must hold. Unset: every principal."},
			read: func(p *parser, f pair, path string, r *ruleBuild) {
				r.Match = policySection{p}.policyMatch(f.val, path)
			}},
		patterns("allow", "Patterns \"<upstream>\" or \"<upstream>/<item>\", with * and ?, the rule allows.", func(r *ruleBuild) *[]string { return &r.Allow }),
		patterns("deny", "Patterns the rule denies; deny wins.", func(r *ruleBuild) *[]string { return &r.Deny }),
	}
}

func policyMatchFields() []field { return fieldsOf(policyMatchTable()) }

// policyMatchTable is how a rule's match: block is read.
func policyMatchTable() []blockField[PolicyMatch] {
	values := func(key, doc string, dst func(*PolicyMatch) *[]string) blockField[PolicyMatch] {
		return blockField[PolicyMatch]{field: field{key: key, typ: tStrings, doc: doc},
			read: func(p *parser, f pair, path string, m *PolicyMatch) {
				if vals, _, ok := p.stringList(f.val, path, false); ok {
					if len(vals) == 0 {
						p.errorf(resolve(f.val), path, "is an empty list, which no principal matches; remove it or list values")
					}
					*dst(m) = vals
				}
			}}
	}
	return []blockField[PolicyMatch]{
		values("sub", "Accepted subjects (the sub claim); * and ? match.", func(m *PolicyMatch) *[]string { return &m.Sub }),
		values("groups", "Groups; the principal must be in one of them.", func(m *PolicyMatch) *[]string { return &m.Groups }),
		values("scopes", "Scopes; the token must carry one of them.", func(m *PolicyMatch) *[]string { return &m.Scopes }),
		{field: field{key: "claims", typ: tClaims, doc: "A claim name (dotted for nested claims) to a value or a list of accepted values: string, number or boolean."},
			read: func(p *parser, f pair, path string, m *PolicyMatch) { m.Claims = policySection{p}.claims(f.val, path) }},
	}
}

// policy reads the policy: list. Patterns are checked against the upstream
// names afterwards, by checkPolicy.
func (p policySection) policy(n *yaml.Node, cfg *Config) []*yaml.Node {
	rules, nodes, ok := p.policyRules(n, "policy")
	if ok {
		cfg.Policy = rules
		if len(rules) == 0 && len(resolve(n).Content) == 0 {
			p.warnf(resolve(n), "policy", "is an empty list, which denies every upstream to everyone; remove the key to allow all")
		}
	}
	return nodes
}

// policyRules reads a list of policy rules at path: the top-level policy and
// an endpoint's. It returns the rules (non-nil when n is a list) and the
// allow and deny lists' nodes in order, for checkPolicyPatterns.
func (p policySection) policyRules(n *yaml.Node, path string) ([]PolicyRule, []*yaml.Node, bool) {
	n = resolve(n)
	if n.Kind != yaml.SequenceNode {
		p.errorf(n, path, "must be a list of rules (each item starts with \"- match:\" or \"- name:\"), not %s", kindName(n))
		return nil, nil, false
	}
	rules := []PolicyRule{}
	var nodes []*yaml.Node
	for i, item := range n.Content {
		path := index(path, i)
		var r ruleBuild
		if _, ok := readBlock(p.parser, item, path, nil, policyRuleTable(), &r); !ok {
			continue
		}
		nodes = append(nodes, r.lists...)
		if len(r.Allow) == 0 && len(r.Deny) == 0 {
			p.warnf(resolve(item), path, "has neither allow nor deny, so it has no effect")
		}
		rules = append(rules, r.PolicyRule)
	}
	return rules, nodes, true
}

func (p policySection) policyMatch(n *yaml.Node, path string) PolicyMatch {
	var m PolicyMatch
	readBlock(p.parser, n, path, nil, policyMatchTable(), &m)
	return m
}

// claims reads a match's claims: a claim name to a value, or a list of them.
// It returns nil when n is no mapping.
func (p policySection) claims(n *yaml.Node, cpath string) map[string][]any {
	cn := resolve(n)
	if cn.Kind != yaml.MappingNode {
		p.errorf(cn, cpath, "must be a mapping of claim names to values, not %s", kindName(cn))
		return nil
	}
	claims := map[string][]any{}
	for _, pr := range p.pairs(cn, cpath) {
		kp := join(cpath, pr.key.Value)
		if pr.key.Value == "" {
			p.errorf(pr.key, kp, "claim name is empty")
			continue
		}
		v := resolve(pr.val)
		var items []*yaml.Node
		if v.Kind == yaml.SequenceNode {
			items = v.Content
			if len(items) == 0 {
				p.errorf(v, kp, "is an empty list, which no principal matches")
			}
		} else {
			items = []*yaml.Node{v}
		}
		var vals []any
		for _, it := range items {
			if x, ok := p.claimValue(resolve(it), kp); ok {
				vals = append(vals, x)
			}
		}
		claims[pr.key.Value] = vals
	}
	return claims
}

// claimValue converts a scalar to the type a JSON claim would have.
func (p policySection) claimValue(n *yaml.Node, path string) (any, bool) {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		p.errorf(n, path, "must be a string, number or boolean, not %s", kindName(n))
		return nil, false
	}
	switch n.Tag {
	case "!!bool":
		b, err := strconv.ParseBool(strings.ToLower(n.Value))
		return b, err == nil
	case "!!int", "!!float":
		f, err := strconv.ParseFloat(n.Value, 64)
		if err != nil {
			if i, err2 := strconv.ParseInt(n.Value, 0, 64); err2 == nil {
				return float64(i), true
			}
			p.errorf(n, path, "%s is not a number", n.Value)
			return nil, false
		}
		return f, true
	}
	return n.Value, true
}

// checkPolicy checks every pattern against the upstreams, once all are known.
func (p policySection) checkPolicy(cfg *Config, lists []*yaml.Node, policyKey *yaml.Node) {
	if cfg.Policy == nil {
		return
	}
	if cfg.Auth == nil {
		p.errorf(policyKey, "policy", "needs an auth block: rules match the claims of verified tokens, so without auth there is no one to match")
	}
	p.checkPolicyPatterns(cfg, "policy", cfg.Policy, lists)
}

// checkPolicyPatterns checks the allow and deny patterns of rules (read at
// path by policyRules, which returned lists) against the upstream names.
func (p policySection) checkPolicyPatterns(cfg *Config, path string, rules []PolicyRule, lists []*yaml.Node) {
	names := map[string]bool{}
	for _, u := range cfg.Upstreams {
		names[u.Name] = true
	}
	li := 0
	for i, r := range rules {
		for _, k := range []struct {
			key  string
			vals []string
		}{{"allow", r.Allow}, {"deny", r.Deny}} {
			if k.vals == nil {
				continue
			}
			node := lists[li]
			li++
			for j, pat := range k.vals {
				if msg := checkPattern(pat, names); msg != "" {
					p.errorf(node.Content[j], index(join(index(path, i), k.key), j), "%s", msg)
				}
			}
		}
	}
}

// checkPattern returns why a policy pattern is invalid, or "".
func checkPattern(pat string, names map[string]bool) string {
	up, item, hasItem := strings.Cut(pat, "/")
	switch {
	case pat == "":
		return "pattern is empty; write \"<upstream>\" or \"<upstream>/<tool glob>\""
	case up == "":
		return fmt.Sprintf("%q has no upstream before '/'; write \"<upstream>/<item>\" (use \"*/<item>\" for every upstream)", pat)
	case hasItem && item == "":
		return fmt.Sprintf("%q has nothing after '/'; write %q for the whole upstream, or %q for every item", pat, up, up+"/*")
	}
	for _, r := range up {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '*' || r == '?') {
			return fmt.Sprintf("upstream part %q may only contain upstream-name characters (a-z, 0-9, '-') and the wildcards * and ?", up)
		}
	}
	if !strings.ContainsAny(up, "*?") && !names[up] {
		msg := fmt.Sprintf("no upstream is named %q", up)
		known := make([]string, 0, len(names))
		for n := range names {
			known = append(known, n)
		}
		if s := suggest(up, known); s != "" {
			msg += fmt.Sprintf("; did you mean %q?", s)
		}
		return msg
	}
	return ""
}
