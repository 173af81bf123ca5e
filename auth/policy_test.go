package auth

import "testing"

func TestPolicy(t *testing.T) {
	rules := []PolicyRule{
		{
			Name:  "engineers",
			Match: PolicyMatch{Groups: []string{"eng"}, Claims: map[string][]any{"email_verified": {true}}},
			Allow: []string{"files/*", "search/search_*"},
			Deny:  []string{"files/delete_*"},
		},
		{
			Name:  "admins",
			Match: PolicyMatch{Claims: map[string][]any{"realm_access.roles": {"admin"}}},
			Allow: []string{"*"},
		},
		{
			Name:  "no-secrets-for-anyone",
			Deny:  []string{"vault"},
			Allow: []string{"docs"},
		},
		{
			Name:  "readers",
			Match: PolicyMatch{Scopes: []string{"files:read"}, Sub: []string{"svc-*"}},
			Allow: []string{"files/read_*", "files/file:///public/*"},
		},
		{
			Name:  "namespaced claim, number",
			Match: PolicyMatch{Claims: map[string][]any{"https://example.com/tier": {float64(2)}}},
			Allow: []string{"search"},
		},
	}
	p, err := NewPolicy(rules)
	if err != nil {
		t.Fatal(err)
	}
	eng := NewPrincipal(map[string]any{"sub": "alice", "groups": []any{"eng", "ops"}, "email_verified": true})
	engUnverified := NewPrincipal(map[string]any{"sub": "eve", "groups": []any{"eng"}, "email_verified": "true"})
	admin := NewPrincipal(map[string]any{"sub": "root", "realm_access": map[string]any{"roles": []any{"user", "admin"}}})
	svc := NewPrincipal(map[string]any{"sub": "svc-indexer", "scope": "files:read"})
	tier2 := NewPrincipal(map[string]any{"sub": "t", "https://example.com/tier": float64(2)})

	tests := []struct {
		name                 string
		pr                   *Principal
		upstream, kind, item string
		want                 bool
		rule                 string
	}{
		{"engineer reads a file", eng, "files", KindTool, "read_file", true, "engineers"},
		{"engineer denied delete", eng, "files", KindTool, "delete_file", false, "engineers"},
		{"engineer sees files upstream", eng, "files", KindUpstream, "", true, "engineers"},
		{"engineer searches", eng, "search", KindTool, "search_web", true, "engineers"},
		{"engineer other search tool", eng, "search", KindTool, "admin_reindex", false, ""},
		{"engineer sees search upstream", eng, "search", KindUpstream, "", true, "engineers"},
		{"engineer docs via empty match", eng, "docs", KindPrompt, "anything", true, "no-secrets-for-anyone"},
		{"engineer no vault", eng, "vault", KindUpstream, "", false, "no-secrets-for-anyone"},
		{"unverified email is a string, not true", engUnverified, "files", KindTool, "read_file", false, ""},
		{"admin everything", admin, "search", KindTool, "admin_reindex", true, "admins"},
		{"admin still no vault (deny wins)", admin, "vault", KindTool, "get_secret", false, "no-secrets-for-anyone"},
		{"admin may not delete? only engineers rule denies, not applied", admin, "files", KindTool, "delete_file", true, "admins"},
		{"service reads", svc, "files", KindTool, "read_multiple", true, "readers"},
		{"service resource glob spans slashes", svc, "files", KindResource, "file:///public/a/b.txt", true, "readers"},
		{"service private resource", svc, "files", KindResource, "file:///private/x", false, ""},
		{"service no write", svc, "files", KindTool, "write_file", false, ""},
		{"namespaced numeric claim", tier2, "search", KindTool, "x", true, "namespaced claim, number"},
		{"nil principal gets only unconditional rules", nil, "docs", KindTool, "x", true, "no-secrets-for-anyone"},
		{"nil principal default deny", nil, "files", KindTool, "read_file", false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, rule := p.Explain(tt.pr, tt.upstream, tt.kind, tt.item)
			if got != tt.want || rule != tt.rule {
				t.Errorf("Explain = %v %q, want %v %q", got, rule, tt.want, tt.rule)
			}
			if p.Allows(tt.pr, tt.upstream, tt.kind, tt.item) != got || p.For(tt.pr).Allows(tt.upstream, tt.kind, tt.item) != got {
				t.Error("Allows, For().Allows and Explain disagree")
			}
		})
	}
}

func TestPolicyDefaults(t *testing.T) {
	var none *Policy
	if p, err := NewPolicy(nil); err != nil || p != nil {
		t.Fatalf("NewPolicy(nil) = %v, %v", p, err)
	}
	if !none.Allows(nil, "files", KindTool, "x") || !none.For(nil).Allows("files", KindUpstream, "") {
		t.Error("no policy must allow all")
	}
	empty, _ := NewPolicy([]PolicyRule{})
	if empty.Allows(NewPrincipal(map[string]any{"sub": "a"}), "files", KindUpstream, "") {
		t.Error("empty policy must deny")
	}
	// A deny of every item hides the upstream too.
	p, _ := NewPolicy([]PolicyRule{{Allow: []string{"*"}, Deny: []string{"files/*"}}})
	if p.Allows(nil, "files", KindUpstream, "") || !p.Allows(nil, "search", KindUpstream, "") {
		t.Error("deny files/* must hide files")
	}
	// An instance of an allowed template: allowed unless a deny names it, in any rule.
	p, _ = NewPolicy([]PolicyRule{{Allow: []string{"ev"}}, {Deny: []string{"ev/demo://resource/dynamic/text/1"}}})
	if p.Allows(nil, "ev", KindInstance, "demo://resource/dynamic/text/1") || !p.Allows(nil, "ev", KindInstance, "demo://resource/dynamic/text/2") {
		t.Error("a deny on one URI must hold against the allowed template that produces it")
	}
	if _, err := NewPolicy([]PolicyRule{{Allow: []string{"files/"}}}); err == nil {
		t.Error("bad pattern accepted")
	}
}

func TestGlob(t *testing.T) {
	for _, tt := range []struct {
		p, s string
		want bool
	}{
		{"*", "", true}, {"*", "a/b", true}, {"a*", "abc", true}, {"a*c", "abxc", true}, {"a*c", "abxd", false},
		{"?", "é", true}, {"a?c", "abc", true}, {"a?c", "ac", false}, {"search_*", "search_web", true},
		{"*_*", "a_b", true}, {"a**b", "ab", true}, {"exact", "exact", true}, {"exact", "exactly", false},
		{"*x", "xxxx", true}, {"[a]", "[a]", true}, {"a*b*c", "aXbYbZc", true},
	} {
		if got := glob(tt.p, tt.s); got != tt.want {
			t.Errorf("glob(%q, %q) = %v", tt.p, tt.s, got)
		}
	}
}
