package config

import (
	"os"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestCodeMode: discovery: code with a codeMode: block, per endpoint and for /mcp; unset keys take the
// defaults, and discovery: code without a block takes them all.
func TestCodeMode(t *testing.T) {
	in := "upstreams: [{name: files, command: fs}]\ndiscovery: code\n" +
		"endpoints:\n  - name: a\n    discovery: code\n    codeMode: {writes: allow, wallTime: 2m, maxCalls: 500, maxOutput: 1MiB}\n" +
		"  - name: b\n    discovery: code\n"
	cfg, err := Parse("c.yaml", []byte(in), envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Discovery != DiscoveryCode || cfg.CodeMode != nil || !cfg.Discovery.Searches() {
		t.Errorf("/mcp: discovery %q, codeMode %+v", cfg.Discovery, cfg.CodeMode)
	}
	want := DefaultCodeMode()
	want.Writes, want.WallTime, want.MaxCalls, want.MaxOutput = WritesAllow, 2*time.Minute, 500, 1<<20
	if a := cfg.Endpoints[0].CodeMode; a == nil || *a != want {
		t.Errorf("endpoint a: %+v, want %+v", a, want)
	}
	if b := cfg.Endpoints[1]; b.Discovery != DiscoveryCode || b.CodeMode != nil {
		t.Errorf("endpoint b: %+v", b)
	}
	if s := cfg.String(); !strings.Contains(s, "codeMode: {writes: allow, wallTime: 2m,") || !strings.Contains(s, "discovery: code") {
		t.Errorf("String:\n%s", s)
	}
	if len(cfg.Warnings) != 0 {
		t.Errorf("warnings: %v", warningLines(cfg.Warnings))
	}
}

// TestCodeModeInvalid: a wrong codeMode: is refused at its file:line:col, with what to write instead; one without
// discovery: code is a warning.
func TestCodeModeInvalid(t *testing.T) {
	const ups = "upstreams: [{name: files, command: fs}]\n"
	cfg, err := Parse("c.yaml", []byte(ups+"discovery: code\ncodeMode:\n  writes: sometimes\n  wallTime: 1h\n  maxConcurrent: 0\n  maxOutput: 10\n  consent: ask\n"), envOf(nil))
	if err == nil {
		t.Fatalf("Parse succeeded; config:\n%s", cfg)
	}
	diffLines(t, "problems", problemLines(t, err), []string{
		`c.yaml:4:11: codeMode.writes: "sometimes" is not a writes rule; use ask (the user is asked), allow (scripts write without asking) or deny (scripts only read)`,
		`c.yaml:5:13: codeMode.wallTime: must be between 1s and 10m0s, not 1h0m0s`,
		`c.yaml:6:18: codeMode.maxConcurrent: must be between 1 and 64, not 0`,
		`c.yaml:7:14: codeMode.maxOutput: must be between 1KiB and 16MiB, not 10 bytes`,
		`c.yaml:8:3: codeMode.consent: unknown key "consent": did you mean "writes" (ask, allow or deny)?`,
	})
	cfg, err = Parse("c.yaml", []byte(ups+"codeMode: {writes: deny}\nendpoints:\n  - name: a\n    discovery: search\n    codeMode: {writes: allow}\n"), envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	diffLines(t, "warnings", warningLines(cfg.Warnings), []string{
		`c.yaml:2:1: codeMode: has effect only with discovery: code; the top-level codeMode applies to /mcp only (an endpoint takes its own); set discovery: code at the top level, or remove codeMode`,
		`c.yaml:6:5: endpoints[0].codeMode: has effect only with discovery: code (discovery is search at 5:16); set discovery: code on this endpoint, or remove codeMode`,
	})
}

// TestCodeModeDocExample: the configuration docs/code-mode.md shows parses, without warnings, to what it says.
func TestCodeModeDocExample(t *testing.T) {
	doc, err := os.ReadFile("../../../docs/code-mode.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)```yaml\n(endpoints:.*?)```").FindSubmatch(doc)
	if m == nil {
		t.Fatal("docs/code-mode.md has no endpoints example")
	}
	cfg, err := Parse("code-mode.md", append([]byte("upstreams: [{name: memory, command: mem}, {name: fs, command: fs}]\n"), m[1]...), envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Warnings) != 0 {
		t.Errorf("warnings: %v", warningLines(cfg.Warnings))
	}
	if e := cfg.Endpoints[0]; e.Discovery != DiscoveryCode || e.CodeMode == nil || *e.CodeMode != DefaultCodeMode() {
		t.Errorf("the example's endpoint: %+v, want code mode with the defaults it spells out", e)
	}
}
