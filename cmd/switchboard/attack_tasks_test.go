package main

// TestAttacksTasks (issue 31, items 3 and 4) runs the real binary and attacks gateway-made tasks: a task made at
// one endpoint, read, awaited, listed and cancelled from another endpoint and from the whole catalog; and results
// nobody reads, kept past the byte budget.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

func TestAttacksTasks(t *testing.T) {
	e2eGate(t)
	base, gw := serveAttackGateway(t, "switchboard-attack-tasks", func(listen string) string {
		return fmt.Sprintf(`listen: %q
cursorSecret: "tasks-attack-cursor-secret-0123456789"
tasks: {maxResultBytes: 2MiB, maxResultBytesPerPrincipal: 1MiB}
upstreams:
  - {name: alpha, url: %q, session: shared, tasks: optional}
endpoints:
  - {name: team, include: ["alpha__*"]}
  - {name: ops, include: ["alpha__*"]}
`, listen, sdkUpstream(t, "alpha")+"/mcp")
	})
	// rpc posts one request in a 2025-11-25 session at path and returns the answer.
	rpc := func(t *testing.T, path, session, body string) (result, errObj json.RawMessage) {
		t.Helper()
		_, raw := send(t, base, attack{session: true, path: path, body: body}, session)
		var m struct {
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal(lastJSON(raw), &m); err != nil {
			t.Fatalf("%s: %.300s", path, raw)
		}
		return m.Result, m.Error
	}
	at := func(path string) string { return initSessionAt(t, base+path) }
	echoTask := func(text string) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"alpha__echo","arguments":{"text":%q},"task":{}}}`, text)
	}
	taskID := func(t *testing.T, res json.RawMessage) string {
		t.Helper()
		var c struct {
			Task struct {
				TaskID string `json:"taskId"`
			} `json:"task"`
		}
		if json.Unmarshal(res, &c) != nil || c.Task.TaskID == "" {
			t.Fatalf("no task: %.300s", res)
		}
		return c.Task.TaskID
	}
	req := func(method, id string) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":%q,"params":{"taskId":%q}}`, method, id)
	}

	t.Run("a task made at one endpoint is unknown at the others", func(t *testing.T) {
		team := at("/mcp/team")
		res, _ := rpc(t, "/mcp/team", team, echoTask("team's secret"))
		id := taskID(t, res)
		for _, where := range []string{"/mcp/ops", "/mcp"} {
			s := at(where)
			for _, method := range []string{"tasks/get", "tasks/result", "tasks/cancel"} {
				res, e := rpc(t, where, s, req(method, id))
				if !strings.Contains(string(e), "-32602") || strings.Contains(string(res)+string(e), "secret") {
					t.Errorf("%s at %s: result %.200s error %.200s, want -32602", method, where, res, e)
				}
			}
			if res, _ := rpc(t, where, s, `{"jsonrpc":"2.0","id":3,"method":"tasks/list","params":{}}`); strings.Contains(string(res), id) {
				t.Errorf("tasks/list at %s lists the task made at team: %.300s", where, res)
			}
		}
		if res, e := rpc(t, "/mcp/team", team, req("tasks/result", id)); !strings.Contains(string(res), "team's secret") {
			t.Errorf("tasks/result at team: %.300s %.300s", res, e)
		}
	})

	t.Run("results nobody reads stay within the budget", func(t *testing.T) {
		s := at("/mcp/ops")
		// One after the other: the first is kept before the second ends.
		kept := taskID(t, first(rpc(t, "/mcp/ops", s, echoTask(strings.Repeat("k", 700<<10)))))
		if res, _ := rpc(t, "/mcp/ops", s, req("tasks/result", kept)); !strings.Contains(string(res), "kkkk") {
			t.Errorf("the first result, within the budget: %.200s", res)
		}
		over := taskID(t, first(rpc(t, "/mcp/ops", s, echoTask(strings.Repeat("o", 700<<10)))))
		_, e := rpc(t, "/mcp/ops", s, req("tasks/result", over))
		if !strings.Contains(string(e), "tasks.maxResultBytesPerPrincipal") || !strings.Contains(string(e), "1.0 MiB") {
			t.Errorf("the second result, past the caller's budget: %.300s, want an error naming the limit", e)
		}
	})
	if t.Failed() {
		t.Logf("gateway log:\n%s", gw.log.tail(40))
	}
}

// first is a two-valued call's first value.
func first(a, _ json.RawMessage) json.RawMessage { return a }

// initSessionAt starts a 2025-11-25 session at url and returns its id.
func initSessionAt(t *testing.T, url string) string {
	t.Helper()
	post := func(body, session string) *http.Response {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
			req.Header.Set("MCP-Protocol-Version", "2025-11-25")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	resp := post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"attacker","version":"1"}}}`, "")
	id := resp.Header.Get("Mcp-Session-Id")
	if id == "" {
		t.Fatalf("initialize at %s: HTTP %d without a session", url, resp.StatusCode)
	}
	post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, id)
	return id
}
