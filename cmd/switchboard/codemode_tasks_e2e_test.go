package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// TestE2ECodeModeTaskConsentReplicas (issue 35): a script that became a task on replica A asks for consent
// through its task, and the person answers on replica B. Two real gateways on one redis-server, 2026-07-28
// requests: run_script on A turns into a task; B's tasks/get shows it input_required with the consent
// question; B's tasks/update answers it; A's run goes on, its write reaches the upstream, and B's tasks/get reads
// the task completed with the run's result.
func TestE2ECodeModeTaskConsentReplicas(t *testing.T) {
	e2eGate(t)
	redisAddr := startRedisServer(t)
	tmp := t.TempDir()
	bin := buildBinary(t, tmp)
	body := fmt.Sprintf(`cursorSecret: "codemode-tasks-e2e-cursor-secret-0123456789"
redis: {url: "redis://%s"}
tasks: {syncWindow: 300ms, pollInterval: 200ms}
upstreams:
  - {name: alpha, url: %q, session: shared}
endpoints:
  - name: code
    include: ["alpha__*"]
    discovery: code
    codeMode: {writes: ask}
`, redisAddr, sdkUpstream(t, "alpha")+"/mcp")
	a := startReplica(t, bin, tmp, "replica-a", body)
	b := startReplica(t, bin, tmp, "replica-b", body)
	ctx, cancel := context.WithTimeout(context.Background(), opsWait)
	defer cancel()
	caps := func() map[string]any {
		return map[string]any{"elicitation": map[string]any{}, "extensions": map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}}
	}
	var created struct {
		ResultType string `json:"resultType"`
		TaskID     string `json:"taskId"`
	}
	code := `await new Promise(r => setTimeout(r, 1000)); return (await tools.alpha__echo({text: "consented"}))[0].text`
	raw := modernRequest(t, ctx, a.base+"/mcp/code", "tools/call", map[string]any{"name": "run_script", "arguments": map[string]any{"code": code}}, caps())
	if err := json.Unmarshal(raw, &created); err != nil || created.ResultType != "task" || created.TaskID == "" {
		t.Fatalf("run_script on replica A answered %s, want a task", raw)
	}
	// get polls the task on replica B, as a client does, until it has the status want.
	get := func(want string) string {
		t.Helper()
		var last string
		eventually(t, a.p, "task status "+want+" on replica B", func() bool {
			raw := modernRequest(t, ctx, b.base+"/mcp/code", "tasks/get", map[string]any{"taskId": created.TaskID}, caps())
			var rec struct {
				Status string `json:"status"`
			}
			last = string(raw)
			return json.Unmarshal(raw, &rec) == nil && rec.Status == want
		})
		return last
	}
	asked := get("input_required")
	if !strings.Contains(asked, `"consent"`) || !strings.Contains(asked, "alpha__echo") {
		t.Fatalf("the task asks %s, want the consent question about alpha__echo", asked)
	}
	update := map[string]any{"taskId": created.TaskID, "inputResponses": map[string]any{
		"consent": map[string]any{"action": "accept", "content": map[string]any{"decision": "allow once"}}}}
	modernRequest(t, ctx, b.base+"/mcp/code", "tasks/update", update, caps()) // an error fails the test
	if done := get("completed"); !strings.Contains(done, "alpha: consented") {
		t.Errorf("the completed task is %s, want the write's result", done)
	}
}
