package main

import (
	"testing"

	"github.com/switchboard-mcp/switchboard/cmd/internal/config"
)

// TestTasksOf: the gateway holds tasks when a tool may be one: an upstream's tasks, a tool's taskSupport other
// than forbidden, or an endpoint (or /mcp) in code mode, whose run_script may run long.
func TestTasksOf(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  config.Config
		want bool
	}{
		{"nothing asks", config.Config{Upstreams: []config.Upstream{{Name: "a"}}}, false},
		{"an upstream's tasks", config.Config{Upstreams: []config.Upstream{{Name: "a", Tasks: config.TaskOptional}}}, true},
		{"a tool's override", config.Config{Overrides: map[config.OverrideKey]config.Override{{Upstream: "a", Kind: "tool", Name: "t"}: {TaskSupport: config.TaskRequired}}}, true},
		{"a forbidding override", config.Config{Overrides: map[config.OverrideKey]config.Override{{Upstream: "a", Kind: "tool", Name: "t"}: {TaskSupport: config.TaskForbidden}}}, false},
		{"an endpoint in code mode", config.Config{Endpoints: []config.Endpoint{{Name: "e", Discovery: config.DiscoverySearch}, {Name: "c", Discovery: config.DiscoveryCode}}}, true},
		{"an endpoint in search mode", config.Config{Endpoints: []config.Endpoint{{Name: "e", Discovery: config.DiscoverySearch}}}, false},
		{"/mcp in code mode", config.Config{Discovery: config.DiscoveryCode}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tasksOf(&tc.cfg, nil).Store != nil; got != tc.want {
				t.Errorf("tasks held: %v, want %v", got, tc.want)
			}
		})
	}
}
