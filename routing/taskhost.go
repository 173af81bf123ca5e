package routing

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchboard-mcp/switchboard/routing/state"
	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
	"github.com/switchboard-mcp/switchboard/upstream/protocol"
)

// Gateway-made tasks (issue 19, item 3). A tool whose upstream does not take tasks can still be run as one: the
// admin marks it (an upstream's tasks:, or a tool's taskSupport override), and a client that can handle a task
// gets one. The gateway runs the ordinary call on a pooled session of the caller, detached from the client's
// request, and keeps the task's status and result in the task store, so that any replica answers for it, the
// call outlives the client's connection, and the task lives for its TTL.
//
// Two wires reach the same record:
//   - a 2026-07-28 client that declares the tasks extension (io.modelcontextprotocol/tasks, SEP-2663) in its
//     request: "the server alone decides whether to create a task". The gateway lets the call run for a short
//     sync window first: a call that ends, or asks for input (an MRTR round), within it is answered at once; one
//     that is still running becomes a task. tasks/get, tasks/update and tasks/cancel follow it.
//   - a 2025-11-25 client that sends params.task on a tool listed with execution.taskSupport: the task is made
//     at once, as it asked. tasks/get, tasks/result, tasks/list and tasks/cancel follow it.
//
// The replica that accepted the call owns it: it alone holds the upstream call. tasks/update and tasks/cancel
// write to the record on any replica and wake the owner (at once when local, over the bus otherwise; the owner
// also polls, so a lost message only delays).

// taskStore keeps gateway-made tasks, shared by every replica; routing/state implements it.
type taskStore interface {
	CreateTask(ctx context.Context, rec state.TaskRecord, limit int) error
	GetTask(ctx context.Context, id string) (state.TaskRecord, error)
	UpdateTask(ctx context.Context, id string, fn func(*state.TaskRecord) error) error
	ListTasks(ctx context.Context, principal string) ([]state.TaskRecord, error)
}

// TaskOptions configure gateway-made tasks. With no Store there are none.
type TaskOptions struct {
	Store taskStore
	// TTL is how long a task and its result are kept (zero: 1h); a 2025-11-25 client may ask for less.
	TTL time.Duration
	// PollInterval is the polling interval suggested to clients (zero: 1s).
	PollInterval time.Duration
	// SyncWindow is how long a 2026-07-28 client's call runs before it becomes a task (zero: 500ms; negative:
	// none, a task at once).
	SyncWindow time.Duration
	// MaxRunning bounds the tasks this replica runs at once (zero: 64); past it an optional tool runs as an
	// ordinary call and a required one is refused.
	MaxRunning int
	// MaxPerPrincipal bounds one caller's live tasks across replicas (zero: 100).
	MaxPerPrincipal int
	// MaxResultBytes bounds the bytes of the results (and errors) this replica's tasks keep, in all (zero:
	// 64 MiB); MaxResultBytesPerPrincipal bounds one caller's (zero: 16 MiB; at most MaxResultBytes). See
	// taskbudget.go.
	MaxResultBytes             int64
	MaxResultBytesPerPrincipal int64
}

// Task support of a tool, as execution.taskSupport says it.
const (
	taskForbidden = "forbidden"
	taskOptional  = "optional"
	taskRequired  = "required"
)

// ExtensionTasks is the tasks extension's identifier.
const ExtensionTasks = "io.modelcontextprotocol/tasks"

// taskHost runs this replica's gateway-made tasks. It sees the router through taskCore and a few fields.
type taskHost struct {
	core     taskCore
	opts     TaskOptions
	bus      replicaBus      // nil: this replica alone (tasks are polled)
	registry replicaRegistry // nil: a dead replica's tasks end with their TTL
	parks    *parkTable      // calls of tasks waiting for a client's input
	inst     *instruments
	log      *slog.Logger
	// ctx is the router's lifetime: a task outlives the request that started it.
	ctx  context.Context
	self string // this replica, as task records name their owner
	mu   sync.Mutex
	runs map[string]*taskRun
	n    int // runs reserved (running, or deciding within their sync window)
	wg   sync.WaitGroup
	seq  atomic.Int64
	// results accounts the bytes this replica's finished tasks keep (taskbudget.go).
	results resultLedger
}

// taskCore is what the task host needs of the router: the upstreams a task calls, streams for its calls, and the
// bus's channel that wakes a task.
type taskCore interface {
	upstream(name string) *upstreamServer
	upstreams() []*upstreamServer
	NewStream(finals, maxQueued int) *Stream
	follow(ctx context.Context, channel string, handle func([]byte))
}

var _ taskCore = (*Router)(nil)

// taskRun is one task this replica runs.
type taskRun struct {
	id   string
	wake chan struct{} // a tasks/update or tasks/cancel came; capacity 1
}

func (h *taskHost) enabled() bool { return h.opts.Store != nil }

func (h *taskHost) store() taskStore { return h.opts.Store }

func (h *taskHost) ttl() time.Duration { return orDefault(h.opts.TTL, time.Hour) }

func (h *taskHost) poll() time.Duration { return orDefault(h.opts.PollInterval, time.Second) }

func (h *taskHost) window() time.Duration {
	w := h.opts.SyncWindow
	switch {
	case w < 0:
		return 0
	case w == 0:
		return 500 * time.Millisecond
	}
	return w
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// reserve takes one of the replica's task slots.
func (h *taskHost) reserve() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.n >= defaultMaxRunning(h.opts.MaxRunning) {
		return false
	}
	h.n++
	return true
}

func defaultMaxRunning(n int) int {
	if n <= 0 {
		return 64
	}
	return n
}

func (h *taskHost) release() {
	h.mu.Lock()
	h.n--
	h.mu.Unlock()
}

func (h *taskHost) maxPerPrincipal() int {
	if n := h.opts.MaxPerPrincipal; n > 0 {
		return n
	}
	return 100
}

// newTaskID is 256 random bits: the id is the task's only handle, so it must not be guessable.
func newTaskID() string {
	var b [32]byte
	rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// taskRunKey marks a request the task host itself sends through a session: it must not become a task again.
type taskRunKey struct{}

func taskRunning(ctx context.Context) bool { return ctx.Value(taskRunKey{}) != nil }

// declaresTasks reports whether the session's client declared the tasks extension (a 2026-07-28 client does so
// per request, and a pooled session is keyed by the capabilities).
func (h *taskHost) declaresTasks(s *Session) bool {
	_, _, ok := jsonrpc.Lookup(s.params.Capabilities, "extensions", ExtensionTasks)
	return ok
}

// missingTasksError is -32021 naming the extension a required-task tool needs (SEP-2575 "Missing Required
// Capabilities").
func missingTasksError(out *Stream, id []byte, what string) {
	data := []byte(`{"requiredCapabilities":{"extensions":{"` + ExtensionTasks + `":{}}}}`)
	out.Push(jsonrpc.AppendError(nil, id, protocol.CodeMissingCapability,
		fmt.Sprintf("%s needs the %s extension: declare it in the request's client capabilities", what, ExtensionTasks), data), ClassFinal)
}

// hostTask decides whether a tools/call of t becomes a gateway-made task, and if so starts it, reporting
// whether it answered the request. The call is sent again through a session, marked taskRunning, so that it is
// routed (renamed, its presets set, its _meta adapted) as any call is.
func (h *taskHost) hostTask(ctx context.Context, s *Session, t target, m jsonrpc.Message, out *Stream, name string) bool {
	if t.tasks == "" || t.tasks == taskForbidden || !h.enabled() || taskRunning(ctx) {
		return false
	}
	modern := s.era.modern()
	var ttl time.Duration
	if modern {
		if !s.r.tasks.declaresTasks(s) {
			if t.tasks == taskRequired {
				missingTasksError(out, m.ID(), fmt.Sprintf("tool %q runs only as a task: it", name))
				return true
			}
			return false
		}
	} else {
		st, e, asked := jsonrpc.Lookup(m.Params(), "task")
		if !asked {
			if t.tasks == taskRequired {
				// "For a tool with taskSupport required, a non-task call MUST return -32601."
				replyError(out, m.ID(), protocol.CodeMethodNotFound, fmt.Sprintf("tool %q runs only as a task: call it with params.task", name))
				return true
			}
			return false
		}
		task := m.Params()[st:e]
		if ts, te, ok := jsonrpc.Lookup(task, "ttl"); ok {
			if n, ok := jsonrpc.ParseInt(task[ts:te]); ok && n > 0 {
				ttl = time.Duration(n) * time.Millisecond
			}
		}
	}
	if !h.reserve() {
		if t.tasks == taskRequired {
			replyError(out, m.ID(), protocol.CodeUnavailable, fmt.Sprintf("tool %q runs only as a task, and this gateway runs as many tasks as it may; try again later", name))
			return true
		}
		return false // an optional tool runs as an ordinary call
	}
	params := jsonrpc.DeleteMembers(m.Params(), "task")
	rs := s.r.tasks.taskSession(s)
	callID := []byte(`"task-` + strconv.FormatInt(h.seq.Add(1), 10) + `"`)
	call, err := jsonrpc.Parse(jsonrpc.AppendRequest(nil, callID, m.Method(), params))
	if err != nil {
		h.release()
		replyError(out, m.ID(), protocol.CodeInvalidParams, "malformed params")
		return true
	}
	rctx := context.WithValue(WithAllow(context.WithoutCancel(ctx), *s.scope.policy(ctx)), taskRunKey{}, true)
	up := "" // code mode's run_script runs on no upstream (codemode.go)
	if t.up != nil {
		up = t.up.cfg.Name
	}
	job := &taskJob{h: h, s: rs, ctx: rctx, id: callID, tool: name, up: up, principal: s.params.Principal,
		endpoint: s.params.Endpoint, creator: s.id, modern: modern, ttl: h.capTTL(ttl), call: call}
	window := time.Duration(0)
	if modern {
		window = h.window()
	}
	job.start(out, m.ID(), window, func(ctx context.Context, o *Stream) { rs.HandleRequest(ctx, call, o) })
	return true
}

// hostTaskRetry is hostTask for a 2026-07-28 client's retry of a call that asked for input (MRTR): a tool that
// takes tasks may become one on a later round. It reports whether it answered.
func (pc *pooledClient) hostTaskRetry(ctx context.Context, m jsonrpc.Message, out *Stream, state string) bool {
	s := pc.s
	h := &s.r.tasks
	if !h.enabled() || taskRunning(ctx) || !s.r.tasks.declaresTasks(s) {
		return false
	}
	name, _ := jsonrpc.LookupString(m.Params(), "name")
	t, ok := s.scope.named(ctx, s.catalog(), kindTools, name, "")
	if !ok || t.tasks == "" || t.tasks == taskForbidden || !h.reserve() {
		return false
	}
	rctx := context.WithValue(WithAllow(context.WithoutCancel(ctx), *s.scope.policy(ctx)), taskRunKey{}, true)
	job := &taskJob{h: h, s: s, ctx: rctx, id: clone(m.ID()), tool: name, up: t.up.cfg.Name, principal: s.params.Principal,
		endpoint: s.params.Endpoint, creator: s.id, modern: true, ttl: h.ttl(), call: m}
	job.start(out, m.ID(), h.window(), func(ctx context.Context, o *Stream) { pc.resume(ctx, m, o, state) })
	return true
}

// capTTL is the TTL of a new task: what the client asked for, within the configured one.
func (h *taskHost) capTTL(asked time.Duration) time.Duration {
	t := h.ttl()
	if asked > 0 && asked < t {
		t = max(asked, time.Second)
	}
	return min(t, state.MaxTaskTTL)
}

// taskSession is the session a task's call runs on: a 2026-07-28 client's pooled session is already detached
// from any connection; a legacy client's own session ends with its connection, so its task runs on the pooled
// session of the same caller and capabilities instead.
func (h *taskHost) taskSession(s *Session) *Session {
	if s.era.modern() {
		return s
	}
	p := s.params
	p.LogLevel = ""
	return s.r.PooledSession(p)
}

// errorObject is a JSON-RPC error object.
func errorObject(code int, message string) json.RawMessage {
	b := append(jsonrpc.AppendInt([]byte(`{"code":`), int64(code)), `,"message":`...)
	return append(jsonrpc.AppendQuote(b, message), '}')
}

// wakeOwner tells the replica running a task that its record changed.
func (h *taskHost) wakeOwner(ctx context.Context, rec state.TaskRecord) {
	h.mu.Lock()
	run := h.runs[rec.ID]
	h.mu.Unlock()
	if run != nil {
		select {
		case run.wake <- struct{}{}:
		default:
		}
		return
	}
	if h.bus != nil && rec.Owner != "" && rec.Owner != h.self {
		if err := h.bus.Publish(ctx, tasksChannel(rec.Owner), []byte(rec.ID)); err != nil {
			h.log.Debug("cannot wake a task's replica; it polls", "err", err)
		}
	}
}

// tasksChannel is where a replica hears of changes to the tasks it runs.
func tasksChannel(owner string) string { return "switchboard:tasks:" + owner }

// run wakes this replica's tasks when another replica changed their records, until ctx ends.
func (h *taskHost) run(ctx context.Context) {
	if !h.enabled() {
		return
	}
	h.core.follow(ctx, tasksChannel(h.self), func(b []byte) {
		h.mu.Lock()
		run := h.runs[string(b)]
		h.mu.Unlock()
		if run != nil {
			select {
			case run.wake <- struct{}{}:
			default:
			}
		}
	})
}

// cancelParked stops a parked call: the upstream is told, and its requests for input are answered with an error.
func (h *taskHost) cancelParked(st, bind, reason string) {
	p, err := h.parks.find(st, bind)
	if err != nil {
		return
	}
	p.mu.Lock()
	cur := p.cur
	p.mu.Unlock()
	if cur != nil && cur.link.pending.takeIf(cur) {
		h.inst.endLeg(cur, outcomeCancelled)
		cur.link.sendCancel(cur.upID, reason)
	}
	p.finished()
	p.forget()
}

// withoutKeys returns the object obj without the members whose keys are in drop's, or nil when none is left.
func withoutKeys(obj, drop json.RawMessage) json.RawMessage { return filterKeys(obj, drop, false) }

// onlyKeys returns the object obj with only the members whose keys are in keep's, or nil when none is left.
func onlyKeys(obj, keep json.RawMessage) json.RawMessage { return filterKeys(obj, keep, true) }

// filterKeys keeps (keep) or drops the members of obj whose keys ref has. A ref that is not an object keeps
// nothing, or drops nothing.
func filterKeys(obj, ref json.RawMessage, keep bool) json.RawMessage {
	var o, r map[string]json.RawMessage
	if json.Unmarshal(obj, &o) != nil {
		return nil
	}
	if json.Unmarshal(ref, &r) != nil && keep {
		return nil
	}
	for k := range o {
		if _, in := r[k]; in != keep {
			delete(o, k)
		}
	}
	if len(o) == 0 {
		return nil
	}
	b, err := json.Marshal(o)
	if err != nil {
		return nil
	}
	return b
}

// checkEvery is how often a running task looks at its record: often without a bus to wake it.
func (h *taskHost) checkEvery() time.Duration {
	if h.bus == nil {
		return time.Second
	}
	return 5 * time.Second
}
