package routing

// Tasks of a 2026-07-28 upstream that offers the tasks extension (taskpass.go): the upstream's task id reaches
// the client sealed for the caller, tasks/* go back to the upstream with its own id, and another principal's
// copy of the id is an unknown task.

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/switchboard-mcp/switchboard/upstream"
	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
)

// taskServer is a stateless upstream that runs every call of its tool "job" as its own task "up-1".
type taskServer struct {
	mu   sync.Mutex
	seen []string // method and taskId of each tasks/* request, and whether a tools/call declared the extension
}

func (ts *taskServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	m, err := jsonrpc.Parse(body)
	if err != nil || m.Kind() != jsonrpc.KindRequest {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	var result string
	switch m.Method() {
	case "server/discover":
		result = `{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{},"extensions":{"io.modelcontextprotocol/tasks":{}}},"serverInfo":{"name":"tasker","version":"1"},"ttlMs":60000,"cacheScope":"public"}`
	case "tools/list":
		result = `{"resultType":"complete","tools":[{"name":"job","inputSchema":{"type":"object"}}],"ttlMs":0,"cacheScope":"public"}`
	case "tools/call":
		_, _, declared := jsonrpc.Lookup(m.Params(), "_meta", "io.modelcontextprotocol/clientCapabilities", "extensions", ExtensionTasks)
		ts.mu.Lock()
		ts.seen = append(ts.seen, "tools/call declared="+map[bool]string{true: "yes", false: "no"}[declared])
		ts.mu.Unlock()
		if !declared {
			result = `{"resultType":"complete","content":[{"type":"text","text":"sync"}]}`
			break
		}
		result = `{"resultType":"task","taskId":"up-1","status":"working","createdAt":"2026-11-26T00:00:00Z","lastUpdatedAt":"2026-11-26T00:00:00Z","ttlMs":60000}`
	case "tasks/get", "tasks/cancel", "tasks/update":
		id, _ := jsonrpc.LookupString(m.Params(), "taskId")
		ts.mu.Lock()
		ts.seen = append(ts.seen, m.Method()+" "+id)
		ts.mu.Unlock()
		result = `{"resultType":"complete"}`
		if m.MethodIs("tasks/get") {
			result = `{"resultType":"complete","taskId":"up-1","status":"completed","createdAt":"2026-11-26T00:00:00Z","lastUpdatedAt":"2026-11-26T00:00:01Z","ttlMs":60000,"result":{"content":[{"type":"text","text":"done"}]}}`
		}
	default:
		result = `{"resultType":"complete"}`
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(jsonrpc.AppendResult(nil, m.ID(), []byte(result)))
}

// TestUpstreamTasks (issue 19, item 2).
func TestUpstreamTasks(t *testing.T) {
	ts := &taskServer{}
	srv := httptest.NewServer(ts)
	t.Cleanup(srv.Close)
	tr, err := upstream.NewTransport(upstream.Spec{Name: "tasker", URL: srv.URL, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	r := startRouter(t, Options{}, UpstreamConfig{Name: "tasker", Prefix: "t__", Mode: Shared, Transport: tr, Kind: "http"})
	if !r.OffersTasks() {
		t.Fatal("the gateway does not offer the tasks extension although its upstream does")
	}
	alice := r.PooledSession(SessionParams{Principal: "alice", Capabilities: json.RawMessage(tasksCaps)})
	bob := r.PooledSession(SessionParams{Principal: "bob", Capabilities: json.RawMessage(tasksCaps)})
	plain := r.PooledSession(SessionParams{Principal: "alice", Capabilities: json.RawMessage(`{}`)})

	if m := request(t, r, plain, toolCallRaw("p", "t__job", "")); !strings.Contains(string(m.Raw()), `"text":"sync"`) {
		t.Errorf("a client without the extension got %s", m.Raw())
	}
	created := request(t, r, alice, toolCallRaw("c", "t__job", ""))
	id := field(created, "taskId")
	if field(created, "resultType") != "task" || !isUpstreamTask(id) || strings.Contains(id, "up-1") {
		t.Fatalf("CreateTaskResult %s, want the upstream's task under a sealed id", created.Raw())
	}
	got := request(t, r, alice, taskReq("g", "tasks/get", id, ""))
	if field(got, "taskId") != id || field(got, "status") != "completed" || !strings.Contains(string(got.Raw()), `"text":"done"`) {
		t.Errorf("tasks/get answered %s, want the upstream's task under the exposed id", got.Raw())
	}
	if m := request(t, r, alice, taskReq("x", "tasks/cancel", id, "")); m.Error() != nil {
		t.Errorf("tasks/cancel: %s", m.Raw())
	}
	if m := request(t, r, bob, taskReq("b", "tasks/get", id, "")); !strings.Contains(string(m.Raw()), `"code":-32602`) {
		t.Errorf("bob read alice's task: %s", m.Raw())
	}
	if m := request(t, r, bob, taskReq("b2", "tasks/cancel", id, "")); m.Error() != nil || string(m.Result()) != `{}` {
		t.Errorf("bob's tasks/cancel: %s", m.Raw())
	}
	forged := upstreamTaskPrefix + strings.Repeat("A", 60)
	if m := request(t, r, alice, taskReq("f", "tasks/get", forged, "")); !strings.Contains(string(m.Raw()), `"code":-32602`) {
		t.Errorf("a forged id: %s", m.Raw())
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	want := []string{"tools/call declared=no", "tools/call declared=yes", "tasks/get up-1", "tasks/cancel up-1"}
	if strings.Join(ts.seen, "|") != strings.Join(want, "|") {
		t.Errorf("the upstream saw %q, want %q (bob's requests never reach it)", ts.seen, want)
	}
}
