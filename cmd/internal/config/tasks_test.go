package config

import (
	"strings"
	"testing"
	"time"
)

// TestParseTasks: the tasks: block with its defaults, an upstream's tasks: and a tool's taskSupport override, and
// what String prints of them.
func TestParseTasks(t *testing.T) {
	const ups = "upstreams: [{name: a, command: x, tasks: optional}, {name: b, command: y}]\n"
	for _, tc := range []struct {
		name  string
		in    string
		want  Tasks
		upA   string
		tool  string // a/slow's taskSupport
		print []string
	}{
		{name: "defaults", in: ups, want: DefaultTasks(), upA: TaskOptional, print: []string{"tasks: optional"}},
		{name: "forbidden is none", in: "upstreams: [{name: a, command: x, tasks: forbidden}]\n", want: DefaultTasks()},
		{
			name: "every key",
			in:   ups + "tasks: {ttl: 10m, pollInterval: 250ms, syncWindow: 100ms, maxRunning: 8, maxPerPrincipal: 3}\n",
			want: Tasks{TTL: 10 * time.Minute, PollInterval: 250 * time.Millisecond, SyncWindow: 100 * time.Millisecond, MaxRunning: 8, MaxPerPrincipal: 3,
				MaxResultBytes: 64 << 20, MaxResultBytesPerPrincipal: 16 << 20},
			upA:   TaskOptional,
			print: []string{"tasks: {ttl: 10m0s, pollInterval: 250ms, syncWindow: 100ms, maxRunning: 8, maxPerPrincipal: 3, maxResultBytes: 67108864, maxResultBytesPerPrincipal: 16777216}"},
		},
		{
			name: "result budgets",
			in:   ups + "tasks: {maxResultBytes: 128MiB, maxResultBytesPerPrincipal: 8388608}\n",
			want: func() Tasks {
				tk := DefaultTasks()
				tk.MaxResultBytes, tk.MaxResultBytesPerPrincipal = 128<<20, 8<<20
				return tk
			}(),
			upA:   TaskOptional,
			print: []string{"maxResultBytes: 134217728, maxResultBytesPerPrincipal: 8388608}"},
		},
		{
			name: "a replica's budget below the caller's default",
			in:   ups + "tasks: {maxResultBytes: 8MiB}\n",
			want: func() Tasks {
				tk := DefaultTasks()
				tk.MaxResultBytes, tk.MaxResultBytesPerPrincipal = 8<<20, 8<<20
				return tk
			}(),
			upA: TaskOptional,
		},
		{
			name: "a tool override",
			in:   ups + "overrides: {a/slow: {taskSupport: required}, b/fast: {taskSupport: forbidden}}\n",
			want: DefaultTasks(), upA: TaskOptional, tool: TaskRequired,
			print: []string{"taskSupport: required", "taskSupport: forbidden"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Parse("c.yaml", []byte(tc.in), envOf(nil))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if cfg.Tasks != tc.want {
				t.Errorf("Tasks = %+v, want %+v", cfg.Tasks, tc.want)
			}
			if cfg.Upstreams[0].Tasks != tc.upA {
				t.Errorf("upstream a: tasks %q, want %q", cfg.Upstreams[0].Tasks, tc.upA)
			}
			if got := cfg.Overrides[OverrideKey{Upstream: "a", Kind: OverrideTool, Name: "slow"}].TaskSupport; got != tc.tool {
				t.Errorf("a/slow: taskSupport %q, want %q", got, tc.tool)
			}
			for _, p := range tc.print {
				if !strings.Contains(cfg.String(), p) {
					t.Errorf("String lacks %q:\n%s", p, cfg.String())
				}
			}
		})
	}
}

// TestParseTasksInvalid: each wrong value is refused with a message that says what would do.
func TestParseTasksInvalid(t *testing.T) {
	const ups = "upstreams: [{name: a, command: x}]\n"
	for _, tc := range []struct{ name, in, want string }{
		{"upstream value", "upstreams: [{name: a, command: x, tasks: always}]\n", `tasks: "always" is not a task support`},
		{"override value", ups + "overrides: {a/t: {taskSupport: yes}}\n", `taskSupport: "yes" is not a task support`},
		{"override of a prompt", ups + "overrides: {a/prompts/p: {taskSupport: optional}}\n", "taskSupport applies to tools only"},
		{"ttl too long", ups + "tasks: {ttl: 720h}\n", "tasks.ttl: must be between 1s and 168h0m0s"},
		{"ttl zero", ups + "tasks: {ttl: 0s}\n", "tasks.ttl: must be greater than zero"},
		{"poll too short", ups + "tasks: {pollInterval: 1ms}\n", "tasks.pollInterval: must be between"},
		{"window too long", ups + "tasks: {syncWindow: 2m}\n", "tasks.syncWindow: must be between"},
		{"max running", ups + "tasks: {maxRunning: 0}\n", "tasks.maxRunning: must be between 1 and 100000"},
		{"stray key", ups + "tasks: {enabled: true}\n", "tasks are made for the tools"},
		{"result budget too small", ups + "tasks: {maxResultBytes: 1KiB}\n", "tasks.maxResultBytes: must be between 1MiB and 64GiB"},
		{"result budget not a size", ups + "tasks: {maxResultBytesPerPrincipal: lots}\n", `tasks.maxResultBytesPerPrincipal: "lots" is not a size`},
		{"caller's budget past the replica's", ups + "tasks: {maxResultBytes: 8MiB, maxResultBytesPerPrincipal: 10MiB}\n", "tasks.maxResultBytesPerPrincipal: must be at most tasks.maxResultBytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("c.yaml", []byte(tc.in), envOf(nil))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Parse: %v, want an error containing %q", err, tc.want)
			}
		})
	}
}
