package gateway_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/switchboard-mcp/switchboard/gateway"
	"github.com/switchboard-mcp/switchboard/routing"
	"github.com/switchboard-mcp/switchboard/routing/state"
)

// TestInitializeTasksCapability (issue 31, item 15): a gateway that makes tasks announces the tasks capability
// in initialize to 2025-11-25 clients only, the revision that introduced it; 2024-11-05, 2025-03-26 and
// 2025-06-18 clients are told of the rest, unchanged.
func TestInitializeTasksCapability(t *testing.T) {
	markers := markerSink(t)
	up, _ := httpUpstream(t, "alpha", routing.Shared, markers)
	up.Tasks = "optional"
	h := startGateway(t, routing.Options{Tasks: routing.TaskOptions{Store: state.NewMemory(), SyncWindow: 50 * time.Millisecond}}, gateway.Options{}, up)
	for _, tc := range []struct {
		version   string
		wantTasks bool
	}{
		{"2024-11-05", false},
		{"2025-03-26", false},
		{"2025-06-18", false},
		{"2025-11-25", true},
	} {
		t.Run(tc.version, func(t *testing.T) {
			c := h.raw(t)
			r := c.do(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"`+tc.version+
				`","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`, nil)
			var res struct {
				ProtocolVersion string                     `json:"protocolVersion"`
				Capabilities    map[string]json.RawMessage `json:"capabilities"`
			}
			if err := json.Unmarshal(r.final(t).Result, &res); err != nil || res.ProtocolVersion != tc.version {
				t.Fatalf("initialize answered %s (%v)", r.body, err)
			}
			if _, ok := res.Capabilities["tasks"]; ok != tc.wantTasks {
				t.Errorf("capabilities %s: tasks announced %t, want %t", r.body, ok, tc.wantTasks)
			}
			if res.Capabilities["tools"] == nil || res.Capabilities["resources"] == nil {
				t.Errorf("capabilities %s: want tools and resources kept", r.body)
			}
		})
	}
}
