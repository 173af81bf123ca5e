package main

import (
	"fmt"
	"sync/atomic"

	"github.com/switchboard-mcp/switchboard/auth"
	"github.com/switchboard-mcp/switchboard/cmd/internal/config"
	"github.com/switchboard-mcp/switchboard/routing"
)

// policySet is the global policy and each endpoint's own, built from one config file.
type policySet struct {
	global    *auth.Policy
	endpoints map[string]*auth.Policy
}

// newPolicySet builds the policies of a config; an error names the rules that cannot be built.
func newPolicySet(cfg *config.Config) (*policySet, error) {
	global, err := auth.NewPolicy(policyRules(cfg.Policy))
	if err != nil {
		return nil, err
	}
	ps := &policySet{global: global, endpoints: map[string]*auth.Policy{}}
	for _, e := range cfg.Endpoints {
		if e.Policy == nil {
			continue
		}
		p, err := auth.NewPolicy(policyRules(e.Policy))
		if err != nil {
			return nil, fmt.Errorf("endpoint %q: %w", e.Name, err)
		}
		ps.endpoints[e.Name] = p
	}
	return ps, nil
}

// policies are the running policies. A reload swaps them whole, and every session's Allow reads the current
// ones: a policy change applies to the sessions already open, not only to new ones.
type policies struct{ cur atomic.Pointer[policySet] }

// allow is the policy decision for a principal on an endpoint ("" for /mcp): what both the global policy and the
// endpoint's own allow. The principal's grants are evaluated once per policy set, not per check.
func (ps *policies) allow(p *auth.Principal, endpoint string) routing.Allow {
	type grants struct {
		set  *policySet
		both routing.Allow
	}
	var cached atomic.Pointer[grants]
	return func(upstream, kind, name string) bool {
		set := ps.cur.Load()
		g := cached.Load()
		if g == nil || g.set != set {
			g = &grants{set: set, both: bothAllow(set.global.For(p), set.endpoints[endpoint].For(p))}
			cached.Store(g)
		}
		return g.both == nil || g.both(upstream, kind, name)
	}
}
