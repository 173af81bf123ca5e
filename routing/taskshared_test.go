package routing

// 2025-11-25 tasks of an upstream reached through a session other clients share (issue 31, item 3): a per-client
// upstream that speaks 2026-07-28 serves every client through its one stateless session, so a session may use only
// the tasks it created there, as on a shared upstream.

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/switchboard-mcp/switchboard/upstream"
	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
)

// legacyTaskServer is a stateless 2026-07-28 upstream that also takes 2025-11-25 task-augmented calls: every call
// with params.task becomes its task "up-1".
func legacyTaskServer(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	m, err := jsonrpc.Parse(body)
	if err != nil || m.Kind() != jsonrpc.KindRequest {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	task := `"taskId":"up-1","status":"working","createdAt":"2026-11-26T00:00:00Z","lastUpdatedAt":"2026-11-26T00:00:00Z","ttl":60000`
	var result string
	switch m.Method() {
	case "server/discover":
		result = `{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{},"tasks":{"requests":{"tools":{"call":{}}}}},"serverInfo":{"name":"legacytasks","version":"1"},"ttlMs":60000,"cacheScope":"public"}`
	case "tools/list":
		result = `{"resultType":"complete","tools":[{"name":"job","inputSchema":{"type":"object"},"execution":{"taskSupport":"optional"}}],"ttlMs":0,"cacheScope":"public"}`
	case "tools/call":
		result = `{"resultType":"complete","task":{` + task + `}}`
	case "tasks/get":
		result = `{"resultType":"complete",` + task + `}`
	default:
		result = `{"resultType":"complete"}`
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(jsonrpc.AppendResult(nil, m.ID(), []byte(result)))
}

func TestLegacyTasksOnASharedUpstreamSession(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(legacyTaskServer))
	t.Cleanup(srv.Close)
	tr, err := upstream.NewTransport(upstream.Spec{Name: "lt", URL: srv.URL, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	r := startRouter(t, Options{}, UpstreamConfig{Name: "lt", Prefix: "lt__", Mode: PerClient, Transport: tr, Kind: "http"})
	legacy := func() *Session {
		return r.NewSession(SessionParams{ProtocolVersion: "2025-11-25", Principal: "alice", Capabilities: json.RawMessage(`{}`)})
	}
	maker, other := legacy(), legacy()
	created := request(t, r, maker, toolCallRaw("c", "lt__job", `,"task":{}`))
	id := field(created, "task", "taskId")
	if id != "lt:up-1" {
		t.Fatalf("a task call answered %s, want the upstream's task lt:up-1", created.Raw())
	}
	if m := request(t, r, maker, taskReq("g", "tasks/get", id, "")); field(m, "status") != "working" {
		t.Errorf("tasks/get by the session that made it: %s", m.Raw())
	}
	if m := request(t, r, other, taskReq("g", "tasks/get", id, "")); !strings.Contains(string(m.Raw()), `"code":-32602`) {
		t.Errorf("tasks/get by another session through the shared upstream session: %s, want -32602", m.Raw())
	}
}
