package config

import (
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
)

const catalogYAML = `publicURL: https://mcp.example.com
auth: {issuer: https://login.example.com}
upstreams:
  - {name: github, url: https://gh.example/mcp}
  - {name: files, command: fs}
  - {name: search, command: s, prefix: s_}
endpoints:
  - name: research
    include: ["s_*", "files__read_*", "file:///docs/*", "*search*"]
    exclude: ["files__read_secret"]
  - name: triage
    include: [new_issue, "github__*"]
    policy:
      - match: {groups: [triage]}
        allow: [github]
  - name: all
overrides:
  github/create_issue:
    name: new_issue
    title: New issue
    description: Open an issue in acme's tracker
    annotations: {destructiveHint: false, x: [1, 2.5, 0x10, null]}
    arguments: {owner: "${GH_OWNER}", token: "Bearer ${TOKEN}", labels: [bug], n: 3, "on": true}
  files/prompts/summarize:
    name: summarize
    description: Summarize a file
  files/prompts:
    description: a tool named prompts
pinning:
  lockFile: ${STATE:-state}/pins.lock
  onChange: block
  stripInvisible: true
`

func TestParseCatalog(t *testing.T) {
	cfg, err := Parse("/etc/sb/c.yaml", []byte(catalogYAML), envOf(map[string]string{"GH_OWNER": "acme", "TOKEN": "s3cret"}))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	wantEndpoints := []Endpoint{
		{Name: "research", Include: []string{"s_*", "files__read_*", "file:///docs/*", "*search*"}, Exclude: []string{"files__read_secret"}, Discovery: DiscoveryList},
		{Name: "triage", Include: []string{"new_issue", "github__*"}, Policy: []PolicyRule{{Match: PolicyMatch{Groups: []string{"triage"}}, Allow: []string{"github"}}}, Discovery: DiscoveryList},
		{Name: "all", Discovery: DiscoveryList},
	}
	if !reflect.DeepEqual(cfg.Endpoints, wantEndpoints) {
		t.Errorf("Endpoints = %+v\nwant %+v", cfg.Endpoints, wantEndpoints)
	}
	raw := func(s string) json.RawMessage { return json.RawMessage(s) }
	wantOverrides := map[OverrideKey]Override{
		{Upstream: "github", Kind: OverrideTool, Name: "create_issue"}: {
			Name: "new_issue", Title: "New issue", Description: "Open an issue in acme's tracker",
			Annotations: raw(`{"destructiveHint":false,"x":[1,2.5,16,null]}`),
			Arguments:   map[string]json.RawMessage{"owner": raw(`"acme"`), "token": raw(`"Bearer s3cret"`), "labels": raw(`["bug"]`), "n": raw(`3`), "on": raw(`true`)},
		},
		{Upstream: "files", Kind: OverridePrompt, Name: "summarize"}: {Name: "summarize", Description: "Summarize a file"},
		{Upstream: "files", Kind: OverrideTool, Name: "prompts"}:     {Description: "a tool named prompts"},
	}
	if !reflect.DeepEqual(cfg.Overrides, wantOverrides) {
		t.Errorf("Overrides = %+v\nwant %+v", cfg.Overrides, wantOverrides)
	}
	if want := (Pinning{LockFile: "/etc/sb/state/pins.lock", OnChange: PinBlock, StripInvisible: true}); cfg.Pinning != want {
		t.Errorf("Pinning = %+v, want %+v", cfg.Pinning, want)
	}
	if len(cfg.Warnings) != 0 {
		t.Errorf("warnings: %v", warningLines(cfg.Warnings))
	}

	out := cfg.String()
	for _, want := range []string{
		"endpoints:\n  - name: research  # /mcp/research\n    include: [\"s_*\", \"files__read_*\", \"file:///docs/*\", \"*search*\"]\n    exclude: [\"files__read_secret\"]\n",
		"    policy:  # 1 rules, on top of the global policy\n      - name: \"policy[0]\"\n        allow: [\"github\"]\n",
		"  - name: all  # /mcp/all\n    include: []  # everything\n",
		"  \"files/prompts/summarize\":\n    name: \"summarize\"\n",
		`    arguments: {"labels": ["bug"], "n": 3, "on": true, "owner": "${GH_OWNER}", "token": "Bearer ${TOKEN}"}`,
		`    annotations: {"destructiveHint":false,"x":[1,2.5,16,null]}`,
		`pinning: {lockFile: "/etc/sb/state/pins.lock", onChange: block, stripInvisible: true}`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("String lacks\n%s\nin:\n%s", want, out)
		}
	}
	if strings.Contains(out, "s3cret") {
		t.Errorf("String shows an expanded preset:\n%s", out)
	}
	r := cfg.Redacted()
	r.Endpoints[0].Include[0] = "changed"
	if cfg.Endpoints[0].Include[0] != "s_*" || string(cfg.Overrides[OverrideKey{"github", "tool", "create_issue"}].Arguments["token"]) != `"Bearer s3cret"` {
		t.Error("Redacted shares or changes the original")
	}
	if got, want := cfg.Summary(), "3 upstreams, 3 endpoints (/mcp/research, /mcp/triage, /mcp/all), 3 overrides (1 with argument presets), pins from pins.lock (changes blocked), invisible characters stripped"; got != want {
		t.Errorf("Summary = %q, want %q", got, want)
	}

	def, err := Parse("c.yaml", []byte("upstreams: [{name: a, command: x}]\npinning: {lockFile: pins.lock}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if def.Pinning != (Pinning{LockFile: "pins.lock", OnChange: PinWarn}) || def.Endpoints != nil || def.Overrides != nil {
		t.Errorf("defaults: %+v %+v %+v", def.Pinning, def.Endpoints, def.Overrides)
	}
	if got := def.Summary(); got != "1 upstream, pins from pins.lock (changes served with a warning)" {
		t.Errorf("Summary = %q", got)
	}
	if out := def.String(); !strings.Contains(out, "pinning: {lockFile: \"pins.lock\", onChange: warn, stripInvisible: false}\n") || strings.Contains(out, "endpoints:") || strings.Contains(out, "overrides:") {
		t.Errorf("String:\n%s", out)
	}
}

// TestParseCatalogInvalid checks each error of endpoints, overrides and pinning with its position; a collision
// names the first place in its message and is reported at the second.
func TestParseCatalogInvalid(t *testing.T) {
	const ups = "upstreams:\n  - {name: github, url: https://gh.example/mcp}\n  - {name: files, command: fs}\n  - {name: search, command: s, prefix: s_}\n"
	// ups is lines 1-4; each case's own lines start at 5.
	tests := []struct {
		name string
		in   string
		want []string
	}{
		{
			name: "endpoints must be a list of mappings",
			in:   "endpoints: {name: a}\n",
			want: []string{`c.yaml:5:12: endpoints: must be a list of endpoints (each item starts with "- name:"), not a mapping`},
		},
		{
			name: "endpoint names: missing, bad, reserved, too long, duplicate",
			in: "endpoints:\n  - include: [\"*\"]\n  - name: Team A\n  - name: sse\n  - name: messages\n  - name: " + strings.Repeat("a", 33) +
				"\n  - name: ops\n  - name: ops\n  - name: -x\n",
			want: []string{
				`c.yaml:6:5: endpoints[0]: missing name; every endpoint needs one, such as name: research (it is served at /mcp/research)`,
				`c.yaml:7:11: endpoints[1].name: "Team A" must match ^[a-z0-9][a-z0-9-]{0,31}$ (lowercase letters, digits and '-', starting with a letter or digit): it is a URL path segment; try "team-a"`,
				`c.yaml:8:11: endpoints[2].name: "sse" is reserved: /mcp/sse is a path of the legacy HTTP+SSE transport; choose another name`,
				`c.yaml:9:11: endpoints[3].name: "messages" is reserved: /mcp/messages is a path of the legacy HTTP+SSE transport; choose another name`,
				`c.yaml:10:11: endpoints[4].name: "` + strings.Repeat("a", 33) + `" is 33 characters; the limit is 32`,
				`c.yaml:12:11: endpoints[6].name: duplicate endpoint name "ops"; the first is at 11:11; names must be unique`,
				`c.yaml:13:11: endpoints[7].name: "-x" must match ^[a-z0-9][a-z0-9-]{0,31}$ (lowercase letters, digits and '-', starting with a letter or digit): it is a URL path segment; try "x"`,
			},
		},
		{
			name: "unknown endpoint keys are explained",
			in:   "endpoints:\n  - name: a\n    tools: [x]\n    inclde: [\"*\"]\n",
			want: []string{
				`c.yaml:7:5: endpoints[0].tools: unknown key "tools": select items with include globs over the names clients see, such as include: ["files__*"] for every tool and prompt of upstream files`,
				`c.yaml:8:5: endpoints[0].inclde: unknown key "inclde"; did you mean "include"?`,
			},
		},
		{
			name: "malformed and empty globs, empty include",
			in:   "endpoints:\n  - name: a\n    include: [\"files__[a-\", \"\", \"x\\\\\"]\n    exclude: [\"[]\"]\n  - name: b\n    include: []\n",
			want: []string{
				`c.yaml:7:15: endpoints[0].include[0]: "files__[a-" is not a valid glob (an unclosed '[', a '\' at the end, or an empty or reversed range); the syntax is Go's path.Match: * ? [a-z] [^a-z] and \ to escape`,
				`c.yaml:7:29: endpoints[0].include[1]: glob is empty; write a name, or a pattern with * and ?, such as "files__*"`,
				`c.yaml:7:33: endpoints[0].include[2]: "x\\" is not a valid glob (an unclosed '[', a '\' at the end, or an empty or reversed range); the syntax is Go's path.Match: * ? [a-z] [^a-z] and \ to escape`,
				`c.yaml:8:15: endpoints[0].exclude[0]: "[]" is not a valid glob (an unclosed '[', a '\' at the end, or an empty or reversed range); the syntax is Go's path.Match: * ? [a-z] [^a-z] and \ to escape`,
				`c.yaml:10:14: endpoints[1].include: is an empty list, which selects nothing; list globs such as "files__*", or remove include to select everything`,
			},
		},
		{
			name: "endpoints that select nothing",
			in:   "endpoints:\n  - name: a\n    exclude: [\"*\"]\n  - name: b\n    include: [\"files__*\"]\n    exclude: [\"**\"]\n  - name: c\n    include: [\"files__*\", \"s_x\"]\n    exclude: [\"s_x\", \"files__*\"]\n",
			want: []string{
				`c.yaml:7:15: endpoints[0].exclude[0]: "*" excludes everything and there is no include, so the endpoint selects nothing; select with include and leave out with exclude`,
				`c.yaml:10:15: endpoints[1].exclude[0]: "**" excludes everything, so the endpoint selects nothing; list what to leave out, such as "files__delete_*"`,
				`c.yaml:13:14: endpoints[2].exclude: excludes every glob of include (at 12:14), so the endpoint selects nothing`,
			},
		},
		{
			name: "include globs that match no upstream",
			in:   "endpoints:\n  - name: a\n    include: [\"search*\", \"files/read_file\", \"gh_*\", \"*\", \"*search*\", \"?iles__x\", \"[fg]ithub__*\", \"file:///x/*\", \"s_[!]\"]\n",
			want: []string{
				`c.yaml:7:15: endpoints[0].include[0]: "search*" can match no tool or prompt name: clients see an upstream's items as <prefix><name>, and the prefixes are "github__" (github), "files__" (files), "s_" (search); did you mean "s_*"?`,
				`c.yaml:7:26: endpoints[0].include[1]: "files/read_file" can match no tool or prompt name: clients see an upstream's items as <prefix><name>, and the prefixes are "github__" (github), "files__" (files), "s_" (search); did you mean "files__read_file"?`,
				`c.yaml:7:45: endpoints[0].include[2]: "gh_*" can match no tool or prompt name: clients see an upstream's items as <prefix><name>, and the prefixes are "github__" (github), "files__" (files), "s_" (search); to select resources, write the URI with its scheme, such as "file:///docs/*"`,
				`c.yaml:7:113: endpoints[0].include[8]: "s_[!]" can match no tool or prompt name: clients see an upstream's items as <prefix><name>, and the prefixes are "github__" (github), "files__" (files), "s_" (search); to select resources, write the URI with its scheme, such as "file:///docs/*"`,
			},
		},
		{
			name: "endpoint policy is the policy's shape and needs auth",
			in:   "endpoints:\n  - name: a\n    policy:\n      - allow: [gihub, \"files/\"]\n        match: {groups: []}\n        deny: x\n",
			want: []string{
				`c.yaml:7:5: endpoints[0].policy: needs an auth block: rules match the claims of verified tokens, so without auth there is no one to match`,
				`c.yaml:8:17: endpoints[0].policy[0].allow[0]: no upstream is named "gihub"; did you mean "github"?`,
				`c.yaml:8:24: endpoints[0].policy[0].allow[1]: "files/" has nothing after '/'; write "files" for the whole upstream, or "files/*" for every item`,
				`c.yaml:9:25: endpoints[0].policy[0].match.groups: is an empty list, which no principal matches; remove it or list values`,
				`c.yaml:10:15: endpoints[0].policy[0].deny: must be a list of strings, not a string (write ["a", "b"])`,
			},
		},
		{
			name: "override keys",
			in: "overrides:\n  github: {name: x}\n  /create: {name: y}\n  github/: {name: z}\n  files/prompts/: {name: w}\n  files/tools/read: {name: v}\n" +
				"  files/resources/r: {name: u}\n  files/a/b: {name: t}\n  files/read_*: {name: s}\n  gihub/create: {name: r}\n",
			want: []string{
				`c.yaml:6:3: overrides.github: "github" names no item; write "<upstream>/<tool>", or "<upstream>/prompts/<prompt>" for a prompt, with the upstream's configured name and the item's name as the upstream lists it`,
				`c.yaml:7:3: overrides["/create"]: "/create" has no upstream before '/'; write "<upstream>/<tool>", or "<upstream>/prompts/<prompt>" for a prompt, with the upstream's configured name and the item's name as the upstream lists it`,
				`c.yaml:8:3: overrides["github/"]: "github/" has nothing after '/'; write "<upstream>/<tool>", or "<upstream>/prompts/<prompt>" for a prompt, with the upstream's configured name and the item's name as the upstream lists it`,
				`c.yaml:9:3: overrides["files/prompts/"]: "files/prompts/" names no prompt; write "<upstream>/<tool>", or "<upstream>/prompts/<prompt>" for a prompt, with the upstream's configured name and the item's name as the upstream lists it`,
				`c.yaml:10:3: overrides["files/tools/read"]: "files/tools/read": a tool is written without "tools/"; did you mean "files/read"?`,
				`c.yaml:11:3: overrides["files/resources/r"]: "files/resources/r": resources cannot be overridden; only tools and prompts`,
				`c.yaml:12:3: overrides["files/a/b"]: "files/a/b": tool names cannot contain '/'; write "<upstream>/<tool>", or "<upstream>/prompts/<prompt>" for a prompt, with the upstream's configured name and the item's name as the upstream lists it`,
				`c.yaml:13:3: overrides["files/read_*"]: "files/read_*": an override names one item; globs are not supported`,
				`c.yaml:14:3: overrides["gihub/create"]: no upstream is named "gihub"; the configured upstreams are github, files, search; did you mean "github"? (the key is "<upstream>/<tool>" with the upstream's configured name)`,
			},
		},
		{
			name: "override names: form, budget, another upstream's prefix, collisions",
			in: "overrides:\n  github/a: {name: \"new.issue\"}\n  github/b: {name: \"" + strings.Repeat("n", 47) + "\"}\n  github/c: {name: files__c}\n  github/d: {name: s_d}\n" +
				"  github/e: {name: same}\n  files/f: {name: same}\n  files/prompts/p: {name: same}\n  github/g: {name: github__g}\n  github/h: {name: \"\"}\n",
			want: []string{
				`c.yaml:6:20: overrides["github/a"].name: "new.issue" is not a valid tool name: clients accept only letters, digits, '_' and '-', at most 64; try "new_issue"`,
				`c.yaml:7:20: overrides["github/b"].name: "` + strings.Repeat("n", 47) + `" is 47 characters; names may have at most 46 (maxToolNameLength)`,
				`c.yaml:8:20: overrides["github/c"].name: "files__c" starts with "files__", the prefix of upstream files, so clients would take it for one of that upstream's tools; choose a name without it`,
				`c.yaml:9:20: overrides["github/d"].name: "s_d" starts with "s_", the prefix of upstream search, so clients would take it for one of that upstream's tools; choose a name without it`,
				`c.yaml:11:19: overrides["files/f"].name: "same" is also the name overrides["github/e"] gives (at 10:20); two tools cannot share a client-visible name`,
				`c.yaml:14:20: overrides["github/h"].name: is empty; remove it to keep the namespaced name`,
			},
		},
		{
			name: "override fields",
			in: "overrides:\n  github/a:\n    title: \"\"\n    description: \" \"\n    annotations: [x]\n    arguments: x\n  github/b:\n    annotations: {readOnlyHint: \"yes\", title: [t]}\n" +
				"    arguments: {\"\": 1, n: .inf, t: \"${NOPE}\"}\n    nme: x\n  files/prompts/p:\n    title: T\n    annotations: {}\n    arguments: {a: 1}\n",
			want: []string{
				`c.yaml:7:12: overrides["github/a"].title: is empty; remove it to keep the upstream's title`,
				`c.yaml:8:18: overrides["github/a"].description: is empty; remove it to keep the upstream's description`,
				`c.yaml:9:18: overrides["github/a"].annotations: must be a mapping (a JSON object), such as {readOnlyHint: true}, not a list`,
				`c.yaml:10:16: overrides["github/a"].arguments: must be a mapping of argument names to the values every call gets, such as {owner: acme}, not a string`,
				`c.yaml:12:33: overrides["github/b"].annotations.readOnlyHint: must be true or false, not a string (the MCP specification's annotation hints are booleans)`,
				`c.yaml:12:47: overrides["github/b"].annotations.title: must be a string, not a list`,
				`c.yaml:13:17: overrides["github/b"].arguments[""]: argument name is empty`,
				`c.yaml:13:27: overrides["github/b"].arguments.n: .inf is not a number JSON can hold (no infinity or NaN); quote it to pass a string`,
				`c.yaml:13:36: overrides["github/b"].arguments.t: environment variable NOPE is not set; set it, or give a default with ${NOPE:-value}`,
				`c.yaml:14:5: overrides["github/b"].nme: unknown key "nme"; did you mean "name"?`,
				`c.yaml:16:5: overrides["files/prompts/p"].title: title applies to tools only; a prompt override takes name and description`,
				`c.yaml:17:5: overrides["files/prompts/p"].annotations: annotations applies to tools only; a prompt override takes name and description`,
				`c.yaml:18:5: overrides["files/prompts/p"].arguments: arguments applies to tools only; a prompt override takes name and description`,
			},
		},
		{
			name: "overrides must be a mapping",
			in:   "overrides: [github/a]\n",
			want: []string{`c.yaml:5:12: overrides: must be a mapping of "<upstream>/<tool>" (or "<upstream>/prompts/<prompt>") to settings, not a list`},
		},
		{
			name: "pinning",
			in:   "pinning:\n  lockFile: \"\"\n  onChange: blok\n  stripInvisible: yes please\n  mode: block\n",
			want: []string{
				`c.yaml:6:13: pinning.lockFile: is empty; give the file ` + "`switchboard pin`" + ` writes, such as pins.lock, or remove the key to trust each definition on first use`,
				`c.yaml:7:13: pinning.onChange: "blok" is not a pinning action; did you mean "block"? (block or warn)`,
				`c.yaml:8:19: pinning.stripInvisible: must be true or false, not a string`,
				`c.yaml:9:3: pinning.mode: unknown key "mode": did you mean "onChange" (block or warn)?`,
			},
		},
		{
			name: "pinning values",
			in:   "pinning:\n  lockFile: /var/lib/\n  onChange: deny\n",
			want: []string{
				`c.yaml:6:13: pinning.lockFile: "/var/lib/" names a directory; give a file, such as "/var/lib/pins.lock"`,
				`c.yaml:7:13: pinning.onChange: "deny" is not a pinning action; use block (withhold a changed tool until an admin approves it) or warn (serve it, and log and audit the change)`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := Parse("c.yaml", []byte(ups+tt.in), envOf(nil))
			if err == nil {
				t.Fatalf("Parse succeeded, want errors; config:\n%s", cfg)
			}
			diffLines(t, "problems", problemLines(t, err), tt.want)
		})
	}
}

// TestCatalogWarnings: what is legal but has no effect.
func TestCatalogWarnings(t *testing.T) {
	in := "publicURL: https://mcp.example.com\nauth: {issuer: https://login.example.com}\n" +
		"upstreams: [{name: files, command: fs}]\n" +
		"endpoints:\n  - name: a\n    exclude: [\"nothing_*\", \"ui://*\"]\n    policy: []\n" +
		"overrides:\n  files/read:\n"
	cfg, err := Parse("c.yaml", []byte(in), nil)
	if err != nil {
		t.Fatal(err)
	}
	diffLines(t, "warnings", warningLines(cfg.Warnings), []string{
		`c.yaml:6:15: endpoints[0].exclude[0]: "nothing_*" can match no tool or prompt name: clients see an upstream's items as <prefix><name>, and the prefixes are "files__" (files); to select resources, write the URI with its scheme, such as "file:///docs/*", so it has no effect`,
		`c.yaml:6:28: endpoints[0].exclude[1]: "ui://*" leaves out MCP Apps views: a tool this endpoint selects that names such a ui:// view shows without it (hosts read the view from the endpoint); exclude the tool instead, or drop this glob to serve each selected tool's view`,
		`c.yaml:7:13: endpoints[0].policy: is an empty list, which denies the endpoint to everyone; remove the key to apply only the global policy`,
		`c.yaml:9:3: overrides["files/read"]: sets nothing, so it has no effect; give name, title, description, annotations or arguments`,
	})
}

// TestCatalogProblems: every mistake of a file with the three blocks is reported in one pass, against
// testdata/catalog.golden (go test -update rewrites it).
func TestCatalogProblems(t *testing.T) {
	data, err := os.ReadFile("testdata/catalog.yaml")
	if err != nil {
		t.Fatal(err)
	}
	_, err = Parse("catalog.yaml", data, envOf(nil))
	var ps *Problems
	if !errors.As(err, &ps) {
		t.Fatalf("Parse error = %v, want *Problems", err)
	}
	got := "errors:\n" + ps.Error() + "\nwarnings:\n" + strings.Join(warningLines(ps.Warnings), "\n") + "\n"
	golden := "testdata/catalog.golden"
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	diffLines(t, "catalog.yaml", strings.Split(got, "\n"), strings.Split(string(want), "\n"))
}

// TestNameScope: a name glob is refused only when no name an upstream or override can produce matches it.
func TestNameScope(t *testing.T) {
	cfg := &Config{MaxToolNameLength: 46, Upstreams: []Upstream{{Name: "files", Prefix: "files__"}, {Name: "s", Prefix: "s_"}},
		Overrides: map[OverrideKey]Override{{"files", "tool", "x"}: {Name: "new_issue"}}}
	s := newNameScope(cfg)
	for g, want := range map[string]bool{
		"*": true, "**": true, "*search*": true, "files__*": true, "files__read_file": true, "files*": true, "f*": true,
		"?iles__x": true, "[fg]iles__*": true, "[^a]iles__*": true, "files\\_\\_x": true, "s_?": true, "s*_x": true,
		"new_issue": true, "new_*": true, "*issue": true,
		"files__": false, "s_": false, "files": false, "x*": false, "files_*x.y": false, "files__[.]": false,
		"[a-e]iles__*": false, "files/read": false, "new_issue_2": false, "s_[!]": false,
	} {
		if got := s.canMatch(g); got != want {
			t.Errorf("canMatch(%q) = %v, want %v", g, got, want)
		}
	}
	// A name longer than the budget is cut, its prefix with it: what survives is the first budget-9 characters.
	long := &Config{MaxToolNameLength: 12, Upstreams: []Upstream{{Name: "long", Prefix: "abcdefghijkl__"}}}
	ls := newNameScope(long)
	for g, want := range map[string]bool{"abc*": true, "abcdefghijkl__*": true, "abcdefghijklmn*": true, "abd*": false} {
		if got := ls.canMatch(g); got != want {
			t.Errorf("budget 12: canMatch(%q) = %v, want %v", g, got, want)
		}
	}
	// An empty prefix exposes names as the upstream lists them: any strict name may come.
	open := newNameScope(&Config{MaxToolNameLength: 46, Upstreams: []Upstream{{Name: "a", Prefix: ""}}})
	if !open.canMatch("anything_*") || open.canMatch("a.b") {
		t.Error("empty prefix: want every strict name and no other")
	}
}

// TestOverrideShape keeps Override's fields in routing.Override's order and types, so the caller
// converts with routing.Override(o). (The config package does not import routing; this checks the shape.)
func TestOverrideShape(t *testing.T) {
	type routingOverride struct {
		Name        string
		Title       string
		Description string
		Annotations json.RawMessage
		Arguments   map[string]json.RawMessage
		TaskSupport string
	}
	_ = routingOverride(Override{})
	type routingKey struct{ Upstream, Kind, Name string }
	_ = routingKey(OverrideKey{})
}

// TestCatalogJSONValues: annotations and presets become JSON whatever the file's spelling, once, and a YAML alias
// bomb is refused rather than expanded.
func TestCatalogJSONValues(t *testing.T) {
	in := `{"upstreams": [{"name": "gh", "url": "https://gh.example/mcp"}],
  "overrides": {"gh/create": {"annotations": {"readOnlyHint": true, "n": 1e400, "big": 123456789012345678901234567890},
    "arguments": {"n": 1.50, "s": "$${X}", "o": {"a": [true, null]}}}}}`
	cfg, err := Parse("c.json", []byte(in), nil)
	if err != nil {
		t.Fatal(err)
	}
	ov := cfg.Overrides[OverrideKey{"gh", OverrideTool, "create"}]
	if got := string(ov.Annotations); got != `{"big":123456789012345678901234567890,"n":1e400,"readOnlyHint":true}` {
		t.Errorf("annotations = %s", got)
	}
	for k, want := range map[string]string{"n": `1.50`, "s": `"${X}"`, "o": `{"a":[true,null]}`} {
		if got := string(ov.Arguments[k]); got != want {
			t.Errorf("arguments.%s = %s, want %s", k, got, want)
		}
	}
	if _, err := Parse("c.yaml", []byte("upstreams: [{name: a, command: x}]\noverrides:\n  a/t:\n    arguments: {n: 0x1F, m: 1_000, f: +1.5}\n"), nil); err != nil {
		t.Errorf("YAML numbers: %v", err)
	}

	_, err = Parse("c.yaml", []byte("upstreams: [{name: a, command: x}]\noverrides:\n  a/t:\n    annotations: {x: 1, x: 2}\n"), nil)
	diffLines(t, "duplicate", problemLines(t, err), []string{`c.yaml:4:25: overrides["a/t"].annotations.x: duplicate key "x"; it is already set at 4:19`})

	bomb := "upstreams: [{name: a, command: x}]\nx0: &a0 [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]\n"
	for i := 1; i < 8; i++ {
		bomb += "x" + string(rune('0'+i)) + ": &a" + string(rune('0'+i)) + " [" + strings.Repeat("*a"+string(rune('0'+i-1))+", ", 9) + "*a" + string(rune('0'+i-1)) + "]\n"
	}
	bomb = strings.NewReplacer("x0:", "overrides:\n  a/t:\n    arguments:\n      x0:").Replace(bomb)
	bomb = strings.ReplaceAll(bomb, "\nx", "\n      x")
	_, err = Parse("c.yaml", []byte(bomb), nil)
	if err == nil || !strings.Contains(err.Error(), "is too large: more than 10000 values") {
		t.Errorf("alias bomb: %v", err)
	}
}
