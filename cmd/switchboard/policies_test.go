package main

import (
	"testing"

	"github.com/switchboard-mcp/switchboard/auth"
	"github.com/switchboard-mcp/switchboard/cmd/internal/config"
)

// TestPoliciesReload: a session's Allow, made before a reload, decides by the policies in force at each check;
// an endpoint's own rules narrow the global ones there and nowhere else.
func TestPoliciesReload(t *testing.T) {
	support := &auth.Principal{Issuer: "i", Subject: "ann", Groups: []string{"support"}}
	before := &config.Config{
		Policy: []config.PolicyRule{{Match: config.PolicyMatch{Groups: []string{"support"}}, Allow: []string{"github", "linear"}}},
		Endpoints: []config.Endpoint{{Name: "triage", Policy: []config.PolicyRule{
			{Match: config.PolicyMatch{Groups: []string{"support"}}, Allow: []string{"github"}},
		}}},
	}
	after := &config.Config{
		Policy:    []config.PolicyRule{{Match: config.PolicyMatch{Groups: []string{"support"}}, Allow: []string{"linear"}}},
		Endpoints: before.Endpoints,
	}
	var pols policies
	set, err := newPolicySet(before)
	if err != nil {
		t.Fatal(err)
	}
	pols.cur.Store(set)
	whole, triage := pols.allow(support, ""), pols.allow(support, "triage")
	for _, c := range []struct {
		name           string
		allow          func(string, string, string) bool
		github, linear bool
	}{
		{"/mcp before", whole, true, true},
		{"/mcp/triage before", triage, true, false},
	} {
		if g, l := c.allow("github", "tool", "x"), c.allow("linear", "tool", "x"); g != c.github || l != c.linear {
			t.Errorf("%s: github %v linear %v, want %v %v", c.name, g, l, c.github, c.linear)
		}
	}
	set, err = newPolicySet(after)
	if err != nil {
		t.Fatal(err)
	}
	pols.cur.Store(set)
	if whole("github", "tool", "x") || !whole("linear", "tool", "x") {
		t.Error("/mcp: the session still decides by the old policy after the reload")
	}
	if triage("github", "tool", "x") || triage("linear", "tool", "x") {
		t.Error("/mcp/triage: the endpoint's rules and the new global policy together allow nothing, yet something passed")
	}
}
