package auth

import (
	"fmt"
	"strings"
)

// Kinds of item a policy decides on.
const (
	KindUpstream = "upstream"
	KindTool     = "tool"
	KindPrompt   = "prompt"
	KindResource = "resource"
	KindTemplate = "template"
	// KindInstance asks about a concrete resource URI that an allowed template produces: it is allowed unless a
	// deny pattern names it. Without it an allowed template would open a URI a deny names ("deny wins").
	KindInstance = "instance"
)

// Policy decides which upstreams and items a principal may see and call.
//
// A nil *Policy (no policy configured) allows everything. Otherwise the
// default is deny: an item is allowed when a rule that applies to the
// principal allows it and no rule that applies denies it (deny wins,
// whatever the rules' order).
type Policy struct {
	rules []rule
}

// PolicyRule is one access rule. It applies to a principal when every
// condition of Match holds; it then allows and denies upstreams and items
// by pattern. Deny wins over allow, whatever the rules' order.
type PolicyRule struct {
	// Name labels the rule in logs and in Explain ("" = "policy[i]").
	Name string
	// Match holds the conditions; an empty Match applies to every principal,
	// a nil one included.
	Match PolicyMatch
	// Allow and Deny are patterns "<upstream>" (the whole upstream) or
	// "<upstream>/<item>", where both parts may use * and ?.
	Allow, Deny []string
}

// PolicyMatch is the condition part of a PolicyRule. Every non-empty field
// must hold; within one field, any listed value is enough. String values
// may use the * and ? wildcards.
type PolicyMatch struct {
	// Sub lists accepted subjects (the sub claim).
	Sub []string
	// Groups lists groups; the principal must be in one of them.
	Groups []string
	// Scopes lists scopes; the token must carry one of them.
	Scopes []string
	// Claims maps a claim name (a dotted path reaches nested claims, such as
	// realm_access.roles) to accepted values: string, bool or float64. A
	// claim holding a list matches when one of its elements does. Values of
	// other types never match.
	Claims map[string][]any
}

type rule struct {
	name        string
	match       PolicyMatch
	empty       bool // match has no condition
	allow, deny []pattern
}

// pattern is "<upstream glob>" or "<upstream glob>/<item glob>".
type pattern struct {
	up, item string
	whole    bool // no item part: the whole upstream
}

// NewPolicy compiles the rules. nil rules = no policy (NewPolicy returns a
// nil *Policy, which allows everything); an empty non-nil list denies
// everything.
func NewPolicy(rules []PolicyRule) (*Policy, error) {
	if rules == nil {
		return nil, nil
	}
	p := &Policy{rules: make([]rule, 0, len(rules))}
	for i, r := range rules {
		cr := rule{name: r.Name, match: r.Match}
		if cr.name == "" {
			cr.name = fmt.Sprintf("policy[%d]", i)
		}
		m := r.Match
		cr.empty = len(m.Sub) == 0 && len(m.Groups) == 0 && len(m.Scopes) == 0 && len(m.Claims) == 0
		for _, s := range r.Allow {
			pt, err := parsePattern(s)
			if err != nil {
				return nil, fmt.Errorf("%s: allow: %w", cr.name, err)
			}
			cr.allow = append(cr.allow, pt)
		}
		for _, s := range r.Deny {
			pt, err := parsePattern(s)
			if err != nil {
				return nil, fmt.Errorf("%s: deny: %w", cr.name, err)
			}
			cr.deny = append(cr.deny, pt)
		}
		p.rules = append(p.rules, cr)
	}
	return p, nil
}

func parsePattern(s string) (pattern, error) {
	up, item, hasItem := strings.Cut(s, "/")
	if up == "" || (hasItem && item == "") {
		return pattern{}, fmt.Errorf("pattern %q: want \"<upstream>\" or \"<upstream>/<item>\"", s)
	}
	return pattern{up: up, item: item, whole: !hasItem}, nil
}

// Allows reports whether pr may see and call the item. kind is
// KindUpstream (name is ignored: may pr use anything of this upstream?) or
// the kind of an item, with name the item's upstream-side name (tools,
// prompts) or URI (resources, templates). A nil pr (stdio, no auth) is
// matched only by rules without conditions.
func (p *Policy) Allows(pr *Principal, upstream, kind, name string) bool {
	ok, _ := p.Explain(pr, upstream, kind, name)
	return ok
}

// Explain is Allows, also naming the rule that decided ("" when no rule
// did: no policy, or default deny).
func (p *Policy) Explain(pr *Principal, upstream, kind, name string) (bool, string) {
	return p.For(pr).Explain(upstream, kind, name)
}

// For returns the policy as it applies to one principal: the rules whose
// conditions hold, evaluated once. Use it to filter a catalog.
func (p *Policy) For(pr *Principal) *Grant {
	if p == nil {
		return nil
	}
	g := &Grant{}
	for i := range p.rules {
		if p.rules[i].applies(pr) {
			g.rules = append(g.rules, &p.rules[i])
		}
	}
	return g
}

// Grant is a Policy applied to one principal. A nil *Grant allows
// everything. It satisfies an interface such as
//
//	interface{ Allows(upstream, kind, name string) bool }
//
// which routing can declare without importing this package.
type Grant struct {
	rules []*rule
}

// Allows is Policy.Allows for the grant's principal.
func (g *Grant) Allows(upstream, kind, name string) bool {
	ok, _ := g.Explain(upstream, kind, name)
	return ok
}

// Explain is Allows, naming the deciding rule.
func (g *Grant) Explain(upstream, kind, name string) (bool, string) {
	if g == nil {
		return true, ""
	}
	whole := kind == KindUpstream
	for _, r := range g.rules {
		for _, d := range r.deny {
			if !glob(d.up, upstream) {
				continue
			}
			if d.whole || (whole && d.item == "*") || (!whole && glob(d.item, name)) {
				return false, r.name
			}
		}
	}
	if kind == KindInstance {
		return true, "" // not denied; the template it is an instance of was allowed
	}
	for _, r := range g.rules {
		for _, a := range r.allow {
			if glob(a.up, upstream) && (a.whole || whole || glob(a.item, name)) {
				return true, r.name
			}
		}
	}
	return false, ""
}

func (r *rule) applies(pr *Principal) bool {
	if r.empty {
		return true
	}
	if pr == nil {
		return false
	}
	m := r.match
	if len(m.Sub) > 0 && !anyGlob(m.Sub, []string{pr.Subject}) {
		return false
	}
	if len(m.Groups) > 0 && !anyGlob(m.Groups, pr.Groups) {
		return false
	}
	if len(m.Scopes) > 0 && !anyGlob(m.Scopes, pr.Scopes) {
		return false
	}
	for name, want := range m.Claims {
		v, ok := claimAt(pr.Claims, name)
		if !ok || !claimMatches(v, want) {
			return false
		}
	}
	return true
}

func anyGlob(patterns, values []string) bool {
	for _, p := range patterns {
		for _, v := range values {
			if glob(p, v) {
				return true
			}
		}
	}
	return false
}

// claimAt finds a claim by its name, or else by a dotted path into nested
// objects (realm_access.roles). The name is tried first because namespaced
// claims such as "https://example.com/roles" contain dots.
func claimAt(claims map[string]any, name string) (any, bool) {
	if v, ok := claims[name]; ok {
		return v, true
	}
	cur := any(claims)
	for _, part := range strings.Split(name, ".") {
		obj, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = obj[part]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// claimMatches reports whether a claim value (or, for a list, one of its
// elements) equals one of want: strings by glob, booleans and numbers
// exactly. Types never convert: true does not match "true".
func claimMatches(v any, want []any) bool {
	if list, ok := v.([]any); ok {
		for _, x := range list {
			if claimMatches(x, want) {
				return true
			}
		}
		return false
	}
	for _, w := range want {
		switch w := w.(type) {
		case string:
			if s, ok := v.(string); ok && glob(w, s) {
				return true
			}
		case bool:
			if b, ok := v.(bool); ok && b == w {
				return true
			}
		case float64:
			if f, ok := numeric(v); ok && f == w {
				return true
			}
		}
	}
	return false
}

// glob matches s against a pattern where * is any run of characters
// (including '/') and ? is one character; everything else is literal.
func glob(pattern, s string) bool {
	px, sx := 0, 0
	starP, starS := -1, 0
	pr, sr := []rune(pattern), []rune(s)
	for sx < len(sr) {
		switch {
		case px < len(pr) && pr[px] == '*':
			starP, starS = px, sx
			px++
		case px < len(pr) && (pr[px] == '?' || pr[px] == sr[sx]):
			px++
			sx++
		case starP >= 0:
			starS++
			px, sx = starP+1, starS
		default:
			return false
		}
	}
	for px < len(pr) && pr[px] == '*' {
		px++
	}
	return px == len(pr)
}
