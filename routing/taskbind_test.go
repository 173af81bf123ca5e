package routing

// Tasks bound to the endpoint as well as the principal (issue 31, item 3): a task made through one endpoint is an
// unknown task at every other, for its own caller too, on both wires, for gateway-made tasks and for upstream
// tasks passed through; a refusal is audited.

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/switchboard-mcp/switchboard/routing/state"
	"github.com/switchboard-mcp/switchboard/upstream"
)

// boundEndpoints are three endpoints that all select the tasks' tools: what separates them is the binding alone.
var boundEndpoints = []Endpoint{{Name: "team", Include: []string{"jobs__*", "t__*"}}, {Name: "ops", Include: []string{"jobs__*", "t__*"}}, {Name: "fin", Include: []string{"jobs__*", "t__*"}}}

func denyAll(string, string, string) bool { return false }

// TestGatewayTasksBoundToEndpoint: alice's tasks made through /mcp/team, on both wires, are unknown to alice at
// /mcp/ops, at /mcp/fin (whose policy denies her everything) and at the whole catalog: tasks/get, tasks/result,
// tasks/list, tasks/update and tasks/cancel see or change nothing. At /mcp/team they are hers as before. A
// record without an endpoint (an older replica's) is the whole catalog's only.
func TestGatewayTasksBoundToEndpoint(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var audited []CallEvent
		r, j, store := startTasks(t, func(o *Options) {
			o.Shape.Endpoints = boundEndpoints
			o.Audit = func(e CallEvent) {
				mu.Lock()
				audited = append(audited, e)
				mu.Unlock()
			}
		})
		caps := json.RawMessage(tasksCaps)
		team := r.PooledSession(SessionParams{Principal: "alice", Endpoint: "team", Capabilities: caps})
		elsewhere := map[string]*Session{
			"ops":   r.PooledSession(SessionParams{Principal: "alice", Endpoint: "ops", Capabilities: caps}),
			"fin":   r.PooledSession(SessionParams{Principal: "alice", Endpoint: "fin", Capabilities: caps, Allow: denyAll}),
			"whole": r.PooledSession(SessionParams{Principal: "alice", Capabilities: caps}),
		}
		id := field(request(t, r, team, toolCallRaw("s", "jobs__slow", "")), "taskId")
		if id == "" {
			t.Fatal("no task made at /mcp/team")
		}
		for where, s := range elsewhere {
			if m := request(t, r, s, taskReq("g", "tasks/get", id, "")); !strings.Contains(string(m.Raw()), `"code":-32602`) {
				t.Errorf("alice at %s read the task made at team: %s", where, m.Raw())
			}
			if m := request(t, r, s, taskReq("u", "tasks/update", id, `,"inputResponses":{"k":{"action":"accept"}}`)); string(m.Result()) != `{}` {
				t.Errorf("alice's tasks/update at %s: %s, want the empty ack", where, m.Raw())
			}
			if m := request(t, r, s, taskReq("c", "tasks/cancel", id, "")); string(m.Result()) != `{}` {
				t.Errorf("alice's tasks/cancel at %s: %s, want the empty ack", where, m.Raw())
			}
		}
		if m := request(t, r, team, taskReq("g", "tasks/get", id, "")); field(m, "status") != "working" {
			t.Errorf("at team, after the requests elsewhere: %s, want the task still working", m.Raw())
		}

		legacy := func(endpoint string, allow Allow) *Session {
			return r.NewSession(SessionParams{ProtocolVersion: "2025-11-25", Principal: "alice", Endpoint: endpoint, Allow: allow, Capabilities: json.RawMessage(`{}`)})
		}
		lteam := legacy("team", nil)
		lid := field(request(t, r, lteam, toolCallRaw("l", "jobs__later", `,"task":{}`)), "task", "taskId")
		if lid == "" {
			t.Fatal("no 2025-11-25 task made at /mcp/team")
		}
		for where, s := range map[string]*Session{"ops": legacy("ops", nil), "fin": legacy("fin", denyAll), "whole": legacy("", nil)} {
			for _, method := range []string{"tasks/get", "tasks/result", "tasks/cancel"} {
				if m := request(t, r, s, taskReq("x", method, lid, "")); !strings.Contains(string(m.Raw()), `"code":-32602`) {
					t.Errorf("alice's %s at %s of the task made at team: %s", method, where, m.Raw())
				}
			}
			if m := request(t, r, s, `{"jsonrpc":"2.0","id":"l","method":"tasks/list","params":{}}`); strings.Contains(string(m.Raw()), lid) || strings.Contains(string(m.Raw()), id) {
				t.Errorf("tasks/list at %s lists the tasks made at team: %s", where, m.Raw())
			}
		}
		if m := request(t, r, lteam, `{"jsonrpc":"2.0","id":"l","method":"tasks/list","params":{}}`); !strings.Contains(string(m.Raw()), lid) {
			t.Errorf("tasks/list at team lacks its task: %s", m.Raw())
		}

		// A record an older replica wrote, without an endpoint: the whole catalog's.
		old := state.TaskRecord{ID: "older-replica-task", Principal: "alice", Upstream: "jobs", Tool: "jobs__slow", Era: "legacy",
			Status: state.TaskWorking, TTL: time.Hour}
		if err := store.CreateTask(r.ctx, old, 0); err != nil {
			t.Fatal(err)
		}
		if m := request(t, r, lteam, taskReq("o", "tasks/get", old.ID, "")); !strings.Contains(string(m.Raw()), `"code":-32602`) {
			t.Errorf("an endpoint-less record read at team: %s", m.Raw())
		}
		if m := request(t, r, legacy("", nil), taskReq("o", "tasks/get", old.ID, "")); field(m, "status") != "working" {
			t.Errorf("an endpoint-less record read at the whole catalog: %s, want it", m.Raw())
		}

		mu.Lock()
		var denied []string
		for _, e := range audited {
			if e.Outcome == "denied" && e.Principal == "alice" && e.Tool == "jobs__slow" {
				denied = append(denied, e.Method)
			}
		}
		mu.Unlock()
		for _, want := range []string{"tasks/get", "tasks/update", "tasks/cancel"} {
			if !strings.Contains(strings.Join(denied, " "), want) {
				t.Errorf("audited denials %q lack %s", denied, want)
			}
		}

		j.release("slow", "done")
		if m := request(t, r, lteam, taskReq("c", "tasks/cancel", lid, "")); field(m, "status") != "cancelled" {
			t.Errorf("alice's tasks/cancel at team: %s", m.Raw())
		}
		synctest.Wait()
	})
}

// TestUpstreamTasksBoundToEndpoint: an upstream's task passed through, sealed for alice at /mcp/team, does not
// open for alice at /mcp/ops or at the whole catalog; the upstream never hears of those requests.
func TestUpstreamTasksBoundToEndpoint(t *testing.T) {
	ts := &taskServer{}
	srv := httptest.NewServer(ts)
	t.Cleanup(srv.Close)
	tr, err := upstream.NewTransport(upstream.Spec{Name: "tasker", URL: srv.URL, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	r := startRouter(t, Options{Shape: Shape{Endpoints: boundEndpoints}}, UpstreamConfig{Name: "tasker", Prefix: "t__", Mode: Shared, Transport: tr, Kind: "http"})
	caps := json.RawMessage(tasksCaps)
	team := r.PooledSession(SessionParams{Principal: "alice", Endpoint: "team", Capabilities: caps})
	id := field(request(t, r, team, toolCallRaw("c", "t__job", "")), "taskId")
	if !isUpstreamTask(id) {
		t.Fatalf("no upstream task made at team: %q", id)
	}
	for _, where := range []string{"ops", ""} {
		s := r.PooledSession(SessionParams{Principal: "alice", Endpoint: where, Capabilities: caps})
		if m := request(t, r, s, taskReq("g", "tasks/get", id, "")); !strings.Contains(string(m.Raw()), `"code":-32602`) {
			t.Errorf("alice at %q read the upstream task made at team: %s", where, m.Raw())
		}
		if m := request(t, r, s, taskReq("x", "tasks/cancel", id, "")); string(m.Result()) != `{}` {
			t.Errorf("alice's tasks/cancel at %q: %s", where, m.Raw())
		}
	}
	if m := request(t, r, team, taskReq("g", "tasks/get", id, "")); field(m, "status") != "completed" {
		t.Errorf("at team: %s", m.Raw())
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	want := []string{"tools/call declared=yes", "tasks/get up-1"}
	if strings.Join(ts.seen, "|") != strings.Join(want, "|") {
		t.Errorf("the upstream saw %q, want %q", ts.seen, want)
	}
}
