package main

// TestE2EGatewayTasks (issue 19, item 3): tasks the gateway makes and holds for a slow tool whose upstream takes
// none, across two replicas on one redis-server, through the real binary, server-everything over stdio and the
// TypeScript SDK client (testdata/e2e/gateway-tasks.mjs):
//
//   - a 2025-11-25 client starts trigger-long-running-operation as a task on replica A and disconnects while it
//     runs; a second client on replica B reads the task, lists it, and gets the tool's own result;
//   - 2026-07-28 requests (the tasks extension declared per request) get a task from A, read it on B until it is
//     completed with the result inlined, and cancel another one on B, which A then reports cancelled.
//
// Gating and peers as TestE2E (e2eGate, SWITCHBOARD_E2E=require).

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
)

func TestE2EGatewayTasks(t *testing.T) {
	missing := e2eGate(t)
	root := repoRoot(t)
	node, everythingJS, _ := nodePeers(t, root, missing)
	redisAddr := startRedisServer(t)
	tmp := t.TempDir()
	bin := buildBinary(t, tmp)
	body := fmt.Sprintf(`cursorSecret: "tasks-e2e-test-cursor-secret-0123456789"
redis: {url: "redis://%s"}
tasks: {syncWindow: 300ms, pollInterval: 200ms}
upstreams:
  - {name: everything, command: %q, args: [%q, stdio], session: shared, tasks: optional}
`, redisAddr, node, everythingJS)
	a := startReplica(t, bin, tmp, "replica-a", body)
	b := startReplica(t, bin, tmp, "replica-b", body)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	scripts := filepath.Join(root, "cmd", "switchboard", "testdata", "e2e")
	onA := &nodeScripts{ctx: ctx, node: node, dir: scripts, gw: a.p}
	onB := &nodeScripts{ctx: ctx, node: node, dir: scripts, gw: b.p}

	t.Run("legacy client leaves, another replica answers", func(t *testing.T) {
		started := onA.run(t, "gateway-tasks.mjs", "--phase", "start", "--url", a.base+"/mcp")
		var id string
		if err := json.Unmarshal(started["taskId"], &id); err != nil || id == "" {
			t.Fatalf("no task id in %s", started["taskId"])
		}
		onB.run(t, "gateway-tasks.mjs", "--phase", "finish", "--url", b.base+"/mcp", "--task", id)
	})
	t.Run("2026-07-28 requests across replicas", func(t *testing.T) {
		onA.run(t, "gateway-tasks.mjs", "--phase", "modern", "--url", a.base+"/mcp", "--other", b.base+"/mcp")
	})
}
