package gateway_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/switchboard-mcp/switchboard/gateway"
	"github.com/switchboard-mcp/switchboard/routing"
	"github.com/switchboard-mcp/switchboard/routing/state"
)

// taskBody is a 2026-07-28 request whose client declares the tasks extension (or not).
func taskBody(id, method, params string, tasks bool) string {
	caps := `{}`
	if tasks {
		caps = `{"extensions":{"io.modelcontextprotocol/tasks":{}}}`
	}
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + caps +
		`,"io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"}}`
	if params != "" {
		params += ","
	}
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"method":%q,"params":{%s%s}}`, id, method, params, meta)
}

// TestModernTasks (issue 19, items 2 and 3) over HTTP: server/discover offers the tasks extension; a slow call of a
// tool marked optional becomes a task; tasks/get, tasks/update and tasks/cancel carry Mcp-Name: <taskId> (SEP-2663:
// -32020 and HTTP 400 when it is missing or differs); without the extension they are -32021 (HTTP 400); tasks/result
// and tasks/list are gone (-32601, HTTP 404); a cancelled task reads cancelled, and every answer is resultType
// complete except the CreateTaskResult.
func TestModernTasks(t *testing.T) {
	markers := markerSink(t)
	up, _ := httpUpstream(t, "alpha", routing.Shared, markers)
	up.Tasks = "optional"
	h := startGateway(t, routing.Options{Tasks: routing.TaskOptions{Store: state.NewMemory(), SyncWindow: 50 * time.Millisecond}}, gateway.Options{}, up)
	c := h.raw(t)

	disc := modernDo(t, c, taskBody("d", "server/discover", "", false), nil).final(t)
	var caps struct {
		Capabilities struct {
			Extensions map[string]json.RawMessage `json:"extensions"`
			Tasks      json.RawMessage            `json:"tasks"`
		} `json:"capabilities"`
	}
	if err := json.Unmarshal(disc.Result, &caps); err != nil || caps.Capabilities.Extensions[routing.ExtensionTasks] == nil || caps.Capabilities.Tasks != nil {
		t.Fatalf("server/discover %s: want the tasks extension and no legacy tasks capability", disc.Result)
	}

	r := modernDo(t, c, taskBody("c", "tools/call", `"name":"alpha__slow","arguments":{"tag":"t1"}`, true), nil)
	created := r.final(t)
	var task struct {
		ResultType string `json:"resultType"`
		TaskID     string `json:"taskId"`
		Status     string `json:"status"`
	}
	if r.status != http.StatusOK || json.Unmarshal(created.Result, &task) != nil || task.ResultType != "task" || task.TaskID == "" || task.Status != "working" {
		t.Fatalf("a slow call answered HTTP %d %s, want a CreateTaskResult", r.status, r.body)
	}
	id := task.TaskID
	get := taskBody("g", "tasks/get", fmt.Sprintf(`"taskId":%q`, id), true)
	for _, tc := range []struct {
		name   string
		body   string
		edit   map[string]string
		status int
		code   int
		want   string // the status tasks/get reads
	}{
		{name: "tasks/get", body: get, edit: map[string]string{"Mcp-Name": id}, status: 200, want: "working"},
		{name: "tasks/get, Mcp-Name missing", body: get, status: 400, code: -32020},
		{name: "tasks/get, Mcp-Name another task", body: get, edit: map[string]string{"Mcp-Name": "other"}, status: 400, code: -32020},
		{name: "tasks/get without the extension", body: taskBody("g", "tasks/get", fmt.Sprintf(`"taskId":%q`, id), false), edit: map[string]string{"Mcp-Name": id}, status: 400, code: -32021},
		{name: "tasks/result is removed", body: taskBody("r", "tasks/result", fmt.Sprintf(`"taskId":%q`, id), true), status: 404, code: -32601},
		{name: "tasks/list is removed", body: taskBody("l", "tasks/list", "", true), status: 404, code: -32601},
		{name: "tasks/update of a working task", body: taskBody("u", "tasks/update", fmt.Sprintf(`"taskId":%q,"inputResponses":{}`, id), true), edit: map[string]string{"Mcp-Name": id}, status: 200},
		{name: "tasks/cancel", body: taskBody("x", "tasks/cancel", fmt.Sprintf(`"taskId":%q`, id), true), edit: map[string]string{"Mcp-Name": id}, status: 200},
		{name: "tasks/get after cancel", body: get, edit: map[string]string{"Mcp-Name": id}, status: 200, want: "cancelled"},
		{name: "tasks/get of an unknown task", body: taskBody("n", "tasks/get", `"taskId":"nope"`, true), edit: map[string]string{"Mcp-Name": "nope"}, status: 400, code: -32602},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "tasks/get after cancel" {
				// The replica running the task stops the upstream call: the upstream hears the cancellation.
				waitMarker(t, markers, "cancel-t1")
			}
			r := modernDo(t, c, tc.body, tc.edit)
			if r.status != tc.status {
				t.Fatalf("HTTP %d, want %d: %s", r.status, tc.status, r.body)
			}
			m := r.final(t)
			if tc.code != 0 {
				if m.Error == nil || m.Error.Code != tc.code {
					t.Fatalf("answer %s, want error %d", r.body, tc.code)
				}
				return
			}
			var res struct {
				ResultType string `json:"resultType"`
				Status     string `json:"status"`
			}
			if m.Error != nil || json.Unmarshal(m.Result, &res) != nil || res.ResultType != "complete" || res.Status != tc.want {
				t.Fatalf("answer %s, want resultType complete and status %q", r.body, tc.want)
			}
		})
	}
}

// TestModernTasksBoundToEndpoint (issue 31, item 3) over HTTP: a task made through /mcp/team is an unknown task
// (-32602, as for an id that never existed) at /mcp/ops and at /mcp, and its tasks/cancel there changes nothing.
func TestModernTasksBoundToEndpoint(t *testing.T) {
	markers := markerSink(t)
	up, _ := httpUpstream(t, "alpha", routing.Shared, markers)
	up.Tasks = "optional"
	endpoints := []routing.Endpoint{{Name: "team", Include: []string{"alpha__*"}}, {Name: "ops", Include: []string{"alpha__*"}}}
	h := startGateway(t, routing.Options{Tasks: routing.TaskOptions{Store: state.NewMemory(), SyncWindow: 50 * time.Millisecond},
		Shape: routing.Shape{Endpoints: endpoints}}, gateway.Options{}, up)
	at := func(path string) *rawClient { return &rawClient{t: t, url: h.url + path, hc: &http.Client{}} }
	team := at("/team")
	created := modernDo(t, team, taskBody("c", "tools/call", `"name":"alpha__slow","arguments":{"tag":"bound"}`, true), nil).final(t)
	var task struct {
		TaskID string `json:"taskId"`
	}
	if json.Unmarshal(created.Result, &task) != nil || task.TaskID == "" {
		t.Fatalf("no task at /mcp/team: %s", created.Result)
	}
	id := task.TaskID
	named := map[string]string{"Mcp-Name": id}
	for _, where := range []string{"/ops", ""} {
		c := at(where)
		r := modernDo(t, c, taskBody("g", "tasks/get", fmt.Sprintf(`"taskId":%q`, id), true), named)
		if m := r.final(t); r.status != http.StatusBadRequest || m.Error == nil || m.Error.Code != -32602 {
			t.Errorf("tasks/get at /mcp%s: HTTP %d %s, want 400 and -32602", where, r.status, r.body)
		}
		if r := modernDo(t, c, taskBody("x", "tasks/cancel", fmt.Sprintf(`"taskId":%q`, id), true), named); r.status != http.StatusOK {
			t.Errorf("tasks/cancel at /mcp%s: HTTP %d %s", where, r.status, r.body)
		}
	}
	r := modernDo(t, team, taskBody("g", "tasks/get", fmt.Sprintf(`"taskId":%q`, id), true), named)
	var got struct {
		Status string `json:"status"`
	}
	if m := r.final(t); m.Error != nil || json.Unmarshal(m.Result, &got) != nil || got.Status != "working" {
		t.Errorf("tasks/get at /mcp/team after the requests elsewhere: %s, want it still working", r.body)
	}
	modernDo(t, team, taskBody("x", "tasks/cancel", fmt.Sprintf(`"taskId":%q`, id), true), named)
	waitMarker(t, markers, "cancel-bound") // the upstream's call has ended: its server can close
}
