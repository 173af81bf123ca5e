package routing

// Gateway-made tasks (taskhost.go, taskwire.go) over the in-memory fake upstream and the memory task store, in a
// synctest bubble: the sync window, the task's life (working, input_required, completed, failed, cancelled) on
// both wires, the binding to the principal, and the refusals.

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/switchboard-mcp/switchboard/routing/state"
	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
	"github.com/switchboard-mcp/switchboard/upstream/protocol"
)

// jobUpstream is a legacy upstream that takes no tasks and whose calls end when the test says: fast answers at
// once, fail with a JSON-RPC error, slow when released, later asks for a name when told to and answers with it.
type jobUpstream struct {
	ft        *fakeTransport
	mu        sync.Mutex
	held      map[string][]byte // tool → the upstream id of its call in flight
	conn      *fakeConn
	cancelled []string // the requestIds the gateway cancelled
	answers   []string // the names two was given
}

func newJobUpstream() *jobUpstream {
	j := &jobUpstream{held: map[string][]byte{}}
	j.ft = newFakeTransport(func(c *fakeConn, m jsonrpc.Message) {
		switch {
		case m.Kind() == jsonrpc.KindRequest && m.MethodIs("tools/call"):
			name, _ := jsonrpc.LookupString(m.Params(), "name")
			switch name {
			case "fast":
				c.sendLocked(jsonrpc.AppendResult(nil, m.ID(), []byte(`{"content":[{"type":"text","text":"fast done"}]}`)))
			case "fail":
				c.sendLocked(jsonrpc.AppendError(nil, m.ID(), -32603, "boom", nil))
			default:
				j.mu.Lock()
				j.held[name], j.conn = clone(m.ID()), c
				j.mu.Unlock()
			}
		case m.Kind() == jsonrpc.KindNotification && m.MethodIs("notifications/cancelled"):
			id, _, _ := jsonrpc.Lookup(m.Params(), "requestId")
			j.mu.Lock()
			j.cancelled = append(j.cancelled, string(m.Params()[id:]))
			j.mu.Unlock()
		case m.Kind() == jsonrpc.KindResponse && (string(m.ID()) == `"up-a"` || string(m.ID()) == `"up-b"`):
			name, _ := jsonrpc.LookupString(m.Result(), "content", "name")
			j.mu.Lock()
			j.answers = append(j.answers, name)
			done, callID := len(j.answers) == 2, j.held["two"]
			got := strings.Join(j.answers, "+")
			j.mu.Unlock()
			if done {
				c.sendLocked(jsonrpc.AppendResult(nil, callID, []byte(`{"content":[{"type":"text","text":`+string(jsonrpc.AppendQuote(nil, got))+`}]}`)))
			}
		case m.Kind() == jsonrpc.KindResponse && string(m.ID()) == `"up-ask"`:
			name, _ := jsonrpc.LookupString(m.Result(), "content", "name")
			j.mu.Lock()
			callID := j.held["later"]
			j.mu.Unlock()
			c.sendLocked(jsonrpc.AppendResult(nil, callID, []byte(`{"content":[{"type":"text","text":`+string(jsonrpc.AppendQuote(nil, "hello "+name))+`}]}`)))
		default:
			defaultAnswer(c, m, fakeInitCaps, `[{"name":"fast","inputSchema":{"type":"object"}},{"name":"slow","inputSchema":{"type":"object"}},`+
				`{"name":"later","inputSchema":{"type":"object"}},{"name":"fail","inputSchema":{"type":"object"}},{"name":"plain","inputSchema":{"type":"object"}},`+
				`{"name":"must","inputSchema":{"type":"object"}},{"name":"two","inputSchema":{"type":"object"}}]`)
		}
	})
	return j
}

// release answers the held call of tool.
func (j *jobUpstream) release(tool, text string) {
	j.ft.mu.Lock()
	defer j.ft.mu.Unlock()
	j.mu.Lock()
	id, c := j.held[tool], j.conn
	j.mu.Unlock()
	c.sendLocked(jsonrpc.AppendResult(nil, id, []byte(`{"content":[{"type":"text","text":`+string(jsonrpc.AppendQuote(nil, text))+`}]}`)))
}

// askNow makes the held call of later ask the client for a name.
func (j *jobUpstream) askNow() {
	j.ft.mu.Lock()
	defer j.ft.mu.Unlock()
	j.mu.Lock()
	id, c := j.held["later"], j.conn
	j.mu.Unlock()
	c.sendRelatedLocked([]byte(`{"jsonrpc":"2.0","id":"up-ask","method":"elicitation/create","params":{"message":"name?","requestedSchema":{"type":"object"}}}`), id)
}

// askTwo makes the held call of two ask for two names at once.
func (j *jobUpstream) askTwo() {
	j.ft.mu.Lock()
	defer j.ft.mu.Unlock()
	j.mu.Lock()
	id, c := j.held["two"], j.conn
	j.mu.Unlock()
	for _, k := range []string{"a", "b"} {
		c.sendRelatedLocked([]byte(`{"jsonrpc":"2.0","id":"up-`+k+`","method":"elicitation/create","params":{"message":"name `+k+`?","requestedSchema":{"type":"object"}}}`), id)
	}
}

const tasksCaps = `{"elicitation":{},"extensions":{"io.modelcontextprotocol/tasks":{}}}`

// startTasks runs a router whose upstream "jobs" takes no tasks and is marked tasks: optional; its tool "plain"
// is forbidden and "must" required.
// edit, when given, changes the router's options first.
func startTasks(t *testing.T, edit ...func(*Options)) (*testRouter, *jobUpstream, *state.Memory) {
	t.Helper()
	j := newJobUpstream()
	store := state.NewMemory()
	opts := Options{
		Tasks: TaskOptions{Store: store, SyncWindow: 100 * time.Millisecond, PollInterval: 50 * time.Millisecond},
		Shape: Shape{Overrides: map[OverrideKey]Override{
			{Upstream: "jobs", Kind: "tool", Name: "plain"}: {TaskSupport: taskForbidden},
			{Upstream: "jobs", Kind: "tool", Name: "must"}:  {TaskSupport: taskRequired},
			// A preset is set once, when the task's call is routed, not again on its way back through callNamed.
			{Upstream: "jobs", Kind: "tool", Name: "slow"}: {Arguments: map[string]json.RawMessage{"mode": json.RawMessage(`"batch"`)}},
		}},
	}
	for _, e := range edit {
		e(&opts)
	}
	r := startRouter(t, opts, UpstreamConfig{Name: "jobs", Prefix: "jobs__", Mode: Shared, Transport: j.ft, Kind: "stdio", Tasks: taskOptional})
	return r, j, store
}

// request sends raw through s and returns the final answer; it fails the test when none comes.
func request(t *testing.T, r *testRouter, s *Session, raw string) jsonrpc.Message {
	t.Helper()
	m, err := ask(r.ctx, s, raw)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func toolCallRaw(id, tool, extra string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"method":"tools/call","params":{"name":%q,"arguments":{}%s}}`, id, tool, extra)
}

func taskReq(id, method, taskID, extra string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"method":%q,"params":{"taskId":%q%s}}`, id, method, taskID, extra)
}

// legacyTaskResult sends a 2025-11-25 tasks/result for task id and returns its answer, answering each request
// for input that comes on its stream with answer's result; each must be related to the task.
func legacyTaskResult(t *testing.T, r *testRouter, s *Session, id string, answer func(jsonrpc.Message) string) jsonrpc.Message {
	t.Helper()
	out := newStream(1, 16)
	s.HandleRequest(r.ctx, mustParse(t, taskReq("result", "tasks/result", id, "")), out)
	for {
		msg, final, ok := out.Next(r.ctx)
		if !ok {
			t.Fatal("tasks/result ended without an answer")
		}
		m := mustParse(t, string(msg))
		if final {
			return m
		}
		if m.MethodIs("elicitation/create") {
			if related, _ := jsonrpc.LookupString(m.Params(), "_meta", protocol.MetaRelatedTask, "taskId"); related != id {
				t.Errorf("the request %s is not related to task %s", msg, id)
			}
			s.HandleResponse(mustParse(t, `{"jsonrpc":"2.0","id":`+string(m.ID())+`,"result":`+answer(m)+`}`))
		}
	}
}

// field reads a string member of a result.
func field(m jsonrpc.Message, path ...string) string {
	v, _ := jsonrpc.LookupString(m.Result(), path...)
	return v
}

// TestGatewayTasksModern: a 2026-07-28 client that declares the extension gets a task for a slow call of a
// tool marked optional, and an immediate answer for a fast one; the task is read, answered, completed, failed
// and cancelled through tasks/get, tasks/update and tasks/cancel, and nobody else can see or touch it.
func TestGatewayTasksModern(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, j, _ := startTasks(t)
		alice := r.PooledSession(SessionParams{Principal: "alice", Capabilities: json.RawMessage(tasksCaps)})
		bob := r.PooledSession(SessionParams{Principal: "bob", Capabilities: json.RawMessage(tasksCaps)})
		plainClient := r.PooledSession(SessionParams{Principal: "alice", Capabilities: json.RawMessage(`{}`)})

		// The catalog says which tools take tasks.
		list := request(t, r, alice, `{"jsonrpc":"2.0","id":"l","method":"tools/list"}`)
		var tools struct {
			Tools []struct {
				Name      string `json:"name"`
				Execution *struct {
					TaskSupport string `json:"taskSupport"`
				} `json:"execution"`
			} `json:"tools"`
		}
		if err := json.Unmarshal(list.Result(), &tools); err != nil {
			t.Fatal(err)
		}
		support := map[string]string{}
		for _, tl := range tools.Tools {
			if tl.Execution != nil {
				support[tl.Name] = tl.Execution.TaskSupport
			}
		}
		if support["jobs__slow"] != "optional" || support["jobs__must"] != "required" || support["jobs__plain"] != "" {
			t.Errorf("tools/list says task support %v, want slow optional, must required, plain none", support)
		}

		// Fast: answered within the window, no task.
		if m := request(t, r, alice, toolCallRaw("f", "jobs__fast", "")); field(m, "content", "0", "text") != "" || !strings.Contains(string(m.Raw()), "fast done") || strings.Contains(string(m.Raw()), "taskId") {
			t.Errorf("fast call answered %s, want its result", m.Raw())
		}

		// Slow: a task once the window passes.
		created := request(t, r, alice, toolCallRaw("s", "jobs__slow", ""))
		id := field(created, "taskId")
		if field(created, "resultType") != "task" || id == "" || field(created, "status") != "working" ||
			!strings.Contains(string(created.Raw()), `"ttlMs":3600000`) || !strings.Contains(string(created.Raw()), `"pollIntervalMs":50`) {
			t.Fatalf("slow call answered %s, want a CreateTaskResult", created.Raw())
		}
		if m := request(t, r, alice, taskReq("g1", "tasks/get", id, "")); field(m, "status") != "working" || strings.Contains(string(m.Result()), `"result"`) {
			t.Errorf("tasks/get while working: %s", m.Raw())
		}
		// Bound to alice: bob cannot read or cancel it.
		if m := request(t, r, bob, taskReq("b1", "tasks/get", id, "")); !strings.Contains(string(m.Raw()), `"code":-32602`) {
			t.Errorf("bob read alice's task: %s", m.Raw())
		}
		if m := request(t, r, bob, taskReq("b2", "tasks/cancel", id, "")); string(m.Result()) != `{}` {
			t.Errorf("bob's tasks/cancel answered %s, want the empty ack", m.Raw())
		}
		// Without the extension: -32021.
		if m := request(t, r, plainClient, taskReq("p1", "tasks/get", id, "")); !strings.Contains(string(m.Raw()), `"code":-32021`) {
			t.Errorf("tasks/get without the extension: %s", m.Raw())
		}
		j.release("slow", "slow done")
		synctest.Wait()
		done := request(t, r, alice, taskReq("g2", "tasks/get", id, ""))
		if field(done, "status") != "completed" || !strings.Contains(string(done.Raw()), `"result":{"content":[{"type":"text","text":"slow done"}]}`) {
			t.Errorf("tasks/get after the call ended: %s", done.Raw())
		}

		// A tool error is a completed task; a JSON-RPC error a failed one. fail answers at once: within the window.
		if m := request(t, r, alice, toolCallRaw("x", "jobs__fail", "")); !strings.Contains(string(m.Raw()), `"code":-32603`) {
			t.Errorf("fail answered %s, want its error at once", m.Raw())
		}

		// Required: refused without the extension, a task with it even when fast.
		if m := request(t, r, plainClient, toolCallRaw("m0", "jobs__must", "")); !strings.Contains(string(m.Raw()), `"code":-32021`) ||
			!strings.Contains(string(m.Raw()), `"requiredCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}`) {
			t.Errorf("a required tool without the extension: %s", m.Raw())
		}
		// Forbidden: never a task.
		plainDone := make(chan jsonrpc.Message, 1)
		go func() { plainDone <- request(t, r, alice, toolCallRaw("p", "jobs__plain", "")) }()
		time.Sleep(time.Second)
		synctest.Wait()
		j.release("plain", "plain done")
		if m := <-plainDone; !strings.Contains(string(m.Raw()), "plain done") {
			t.Errorf("a forbidden tool answered %s", m.Raw())
		}
		// Without the extension, an optional tool waits for its answer.
		waitDone := make(chan jsonrpc.Message, 1)
		go func() { waitDone <- request(t, r, plainClient, toolCallRaw("w", "jobs__slow", "")) }()
		time.Sleep(time.Second)
		synctest.Wait()
		j.release("slow", "waited")
		if m := <-waitDone; !strings.Contains(string(m.Raw()), "waited") {
			t.Errorf("a client without the extension got %s", m.Raw())
		}

		// Input: the task asks, the client answers with tasks/update.
		asking := request(t, r, alice, toolCallRaw("a", "jobs__later", ""))
		aid := field(asking, "taskId")
		j.askNow()
		settle()
		got := request(t, r, alice, taskReq("g3", "tasks/get", aid, ""))
		var ir struct {
			Status        string                     `json:"status"`
			InputRequests map[string]json.RawMessage `json:"inputRequests"`
		}
		if err := json.Unmarshal(got.Result(), &ir); err != nil || ir.Status != "input_required" || len(ir.InputRequests) != 1 {
			t.Fatalf("tasks/get while the call asks: %s", got.Raw())
		}
		var key string
		for k := range ir.InputRequests {
			key = k
		}
		if m := request(t, r, bob, taskReq("b3", "tasks/update", aid, `,"inputResponses":{"`+key+`":{"action":"accept","content":{"name":"Mallory"}}}`)); string(m.Result()) != `{}` {
			t.Errorf("bob's tasks/update: %s", m.Raw())
		}
		if m := request(t, r, alice, taskReq("u1", "tasks/update", aid, `,"inputResponses":{"`+key+`":{"action":"accept","content":{"name":"Ada"}},"unknown-key":{}}`)); string(m.Result()) != `{}` {
			t.Errorf("tasks/update: %s", m.Raw())
		}
		settle()
		if m := request(t, r, alice, taskReq("g4", "tasks/get", aid, "")); field(m, "status") != "completed" || !strings.Contains(string(m.Raw()), "hello Ada") {
			t.Errorf("tasks/get after the answer: %s", m.Raw())
		}

		// A partial answer: the task stays input_required with the request still unanswered, then completes.
		two := request(t, r, alice, toolCallRaw("t2", "jobs__two", ""))
		tid := field(two, "taskId")
		j.askTwo()
		settle()
		var both struct {
			Status        string                     `json:"status"`
			InputRequests map[string]json.RawMessage `json:"inputRequests"`
		}
		if err := json.Unmarshal(request(t, r, alice, taskReq("g7", "tasks/get", tid, "")).Result(), &both); err != nil || both.Status != "input_required" || len(both.InputRequests) != 2 {
			t.Fatalf("tasks/get of a task asking twice: %+v", both)
		}
		var keys []string
		for k := range both.InputRequests {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		request(t, r, alice, taskReq("u2", "tasks/update", tid, `,"inputResponses":{"`+keys[0]+`":{"action":"accept","content":{"name":"Ada"}}}`))
		synctest.Wait() // the owner has taken the answer and sent it on; the upstream has not asked again yet
		var one struct {
			Status        string                     `json:"status"`
			InputRequests map[string]json.RawMessage `json:"inputRequests"`
		}
		if err := json.Unmarshal(request(t, r, alice, taskReq("g8", "tasks/get", tid, "")).Result(), &one); err != nil || one.Status != "input_required" || len(one.InputRequests) != 1 || one.InputRequests[keys[1]] == nil {
			t.Fatalf("tasks/get after a partial answer: %+v, want input_required with %s alone", one, keys[1])
		}
		request(t, r, alice, taskReq("u3", "tasks/update", tid, `,"inputResponses":{"`+keys[1]+`":{"action":"accept","content":{"name":"Grace"}}}`))
		settle()
		if m := request(t, r, alice, taskReq("g9", "tasks/get", tid, "")); field(m, "status") != "completed" || !strings.Contains(string(m.Raw()), "Ada+Grace") {
			t.Errorf("tasks/get after both answers: %s", m.Raw())
		}

		// Cancel: the upstream hears of it, and the task stays cancelled.
		cancelled := request(t, r, alice, toolCallRaw("c", "jobs__slow", ""))
		cid := field(cancelled, "taskId")
		if m := request(t, r, alice, taskReq("c1", "tasks/cancel", cid, "")); string(m.Result()) != `{}` {
			t.Errorf("tasks/cancel: %s", m.Raw())
		}
		synctest.Wait()
		if m := request(t, r, alice, taskReq("g5", "tasks/get", cid, "")); field(m, "status") != "cancelled" {
			t.Errorf("tasks/get after cancel: %s", m.Raw())
		}
		j.mu.Lock()
		heard := len(j.cancelled)
		j.mu.Unlock()
		if heard != 1 {
			t.Errorf("the upstream heard %d cancellations, want 1", heard)
		}
		if m := request(t, r, alice, taskReq("c2", "tasks/cancel", cid, "")); string(m.Result()) != `{}` {
			t.Errorf("tasks/cancel of an ended task: %s", m.Raw())
		}
		// Removed methods and unknown tasks.
		for _, raw := range []string{taskReq("r1", "tasks/result", cid, ""), `{"jsonrpc":"2.0","id":"r2","method":"tasks/list","params":{}}`} {
			if m := request(t, r, alice, raw); !strings.Contains(string(m.Raw()), `"code":-32601`) {
				t.Errorf("%s answered %s, want -32601", raw, m.Raw())
			}
		}
		if m := request(t, r, alice, taskReq("g6", "tasks/get", "no-such-task", "")); !strings.Contains(string(m.Raw()), `"code":-32602`) {
			t.Errorf("an unknown task: %s", m.Raw())
		}
	})
}

// TestGatewayTasksLegacy: a 2025-11-25 client that sends params.task gets a task at once (the 2025-11-25
// shape), reads it with tasks/get, waits for its result with tasks/result, lists it, and cannot cancel it once
// it ended; a required tool called without params.task is refused with -32601.
func TestGatewayTasksLegacy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, j, _ := startTasks(t)
		s := r.NewSession(SessionParams{ProtocolVersion: "2025-11-25", Principal: "alice", Capabilities: json.RawMessage(`{"elicitation":{}}`)})
		init := string(r.Capabilities())
		if !strings.Contains(init, `"tasks":{"list":{},"cancel":{},"requests":{"tools":{"call":{}}}}`) {
			t.Errorf("capabilities %s do not offer tasks", init)
		}
		created := request(t, r, s, toolCallRaw("s", "jobs__slow", `,"task":{"ttl":60000}`))
		id := field(created, "task", "taskId")
		if id == "" || field(created, "task", "status") != "working" || !strings.Contains(string(created.Raw()), `"ttl":60000`) {
			t.Fatalf("a task call answered %s, want a 2025-11-25 CreateTaskResult", created.Raw())
		}
		if m := request(t, r, s, taskReq("g", "tasks/get", id, "")); field(m, "status") != "working" || field(m, "taskId") != id {
			t.Errorf("tasks/get: %s", m.Raw())
		}
		if m := request(t, r, s, `{"jsonrpc":"2.0","id":"l","method":"tasks/list","params":{}}`); !strings.Contains(string(m.Raw()), id) {
			t.Errorf("tasks/list %s lacks the task", m.Raw())
		}
		result := make(chan jsonrpc.Message, 1)
		go func() { result <- request(t, r, s, taskReq("res", "tasks/result", id, "")) }()
		time.Sleep(time.Second)
		synctest.Wait()
		select {
		case m := <-result:
			t.Fatalf("tasks/result answered %s before the task ended", m.Raw())
		default:
		}
		j.release("slow", "legacy done")
		m := <-result
		if !strings.Contains(string(m.Raw()), `"text":"legacy done"`) || !strings.Contains(string(m.Raw()), `"io.modelcontextprotocol/related-task":{"taskId":"`+id+`"}`) {
			t.Errorf("tasks/result: %s", m.Raw())
		}
		if m := request(t, r, s, taskReq("c", "tasks/cancel", id, "")); !strings.Contains(string(m.Raw()), `"code":-32602`) {
			t.Errorf("tasks/cancel of a completed task: %s", m.Raw())
		}
		if m := request(t, r, s, toolCallRaw("m", "jobs__must", "")); !strings.Contains(string(m.Raw()), `"code":-32601`) {
			t.Errorf("a required tool without params.task: %s", m.Raw())
		}
		// Input: an input_required task's requests reach the client on its tasks/result stream.
		asking := request(t, r, s, toolCallRaw("a", "jobs__later", `,"task":{}`))
		aid := field(asking, "task", "taskId")
		synctest.Wait()
		j.askNow()
		settle()
		if m := request(t, r, s, taskReq("ga", "tasks/get", aid, "")); field(m, "status") != "input_required" {
			t.Errorf("tasks/get while the call asks: %s", m.Raw())
		}
		final := legacyTaskResult(t, r, s, aid, func(jsonrpc.Message) string { return `{"action":"accept","content":{"name":"Grace"}}` })
		if !strings.Contains(string(final.Raw()), "hello Grace") {
			t.Errorf("tasks/result of the task that asked: %s", final.Raw())
		}

		// The task outlives the client's session: it runs on a pooled session of the same caller.
		created = request(t, r, s, toolCallRaw("s2", "jobs__slow", `,"task":{}`))
		id2 := field(created, "task", "taskId")
		s.Close()
		synctest.Wait()
		j.release("slow", "after the client left")
		synctest.Wait()
		s2 := r.NewSession(SessionParams{ProtocolVersion: "2025-11-25", Principal: "alice", Capabilities: json.RawMessage(`{}`)})
		if m := request(t, r, s2, taskReq("g2", "tasks/result", id2, "")); !strings.Contains(string(m.Raw()), "after the client left") {
			t.Errorf("the task's result from a new session: %s", m.Raw())
		}
		other := r.NewSession(SessionParams{ProtocolVersion: "2025-11-25", Principal: "bob", Capabilities: json.RawMessage(`{}`)})
		if m := request(t, r, other, taskReq("g3", "tasks/get", id2, "")); !strings.Contains(string(m.Raw()), `"code":-32602`) {
			t.Errorf("bob read alice's task: %s", m.Raw())
		}
	})
}
