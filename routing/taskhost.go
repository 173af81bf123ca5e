package routing

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
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

// TaskStore keeps gateway-made tasks, shared by every replica; routing/state implements it.
type TaskStore interface {
	CreateTask(ctx context.Context, rec state.TaskRecord, limit int) error
	GetTask(ctx context.Context, id string) (state.TaskRecord, error)
	UpdateTask(ctx context.Context, id string, fn func(*state.TaskRecord) error) error
	ListTasks(ctx context.Context, principal string) ([]state.TaskRecord, error)
}

// TaskOptions configure gateway-made tasks. With no Store there are none.
type TaskOptions struct {
	Store TaskStore
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

// TaskSupportValid reports whether v is a taskSupport value ("" means unset).
func TaskSupportValid(v string) bool {
	return v == "" || v == taskForbidden || v == taskOptional || v == taskRequired
}

// ExtensionTasks is the tasks extension's identifier.
const ExtensionTasks = "io.modelcontextprotocol/tasks"

// taskHost runs this replica's gateway-made tasks.
type taskHost struct {
	r    *Router
	self string // this replica, as task records name their owner
	mu   sync.Mutex
	runs map[string]*taskRun
	n    int // runs reserved (running, or deciding within their sync window)
	wg   sync.WaitGroup
	seq  atomic.Int64
	// results accounts the bytes this replica's finished tasks keep (taskbudget.go).
	results resultLedger
}

// taskRun is one task this replica runs.
type taskRun struct {
	id   string
	wake chan struct{} // a tasks/update or tasks/cancel came; capacity 1
}

func (h *taskHost) enabled() bool { return h.r.opts.Tasks.Store != nil }

func (h *taskHost) store() TaskStore { return h.r.opts.Tasks.Store }

func (h *taskHost) ttl() time.Duration { return orDefault(h.r.opts.Tasks.TTL, time.Hour) }

func (h *taskHost) poll() time.Duration { return orDefault(h.r.opts.Tasks.PollInterval, time.Second) }

func (h *taskHost) window() time.Duration {
	w := h.r.opts.Tasks.SyncWindow
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
	if h.n >= defaultMaxRunning(h.r.opts.Tasks.MaxRunning) {
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
	if n := h.r.opts.Tasks.MaxPerPrincipal; n > 0 {
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
	rctx := context.WithValue(WithAllow(context.WithoutCancel(ctx), *s.policy(ctx)), taskRunKey{}, true)
	job := &taskJob{h: h, s: rs, ctx: rctx, id: callID, tool: name, up: t.up.cfg.Name, principal: s.params.Principal,
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
	t, ok := s.named(ctx, s.catalog(), kindTools, name, "")
	if !ok || t.tasks == "" || t.tasks == taskForbidden || !h.reserve() {
		return false
	}
	rctx := context.WithValue(WithAllow(context.WithoutCancel(ctx), *s.policy(ctx)), taskRunKey{}, true)
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

// taskJob is one call the task host runs: first within the client's request (the sync window), then, once it is
// a task, on its own.
type taskJob struct {
	h         *taskHost
	s         *Session // the pooled session the call runs on
	ctx       context.Context
	id        []byte // the id of the call as sent through s
	tool, up  string
	principal string
	endpoint  string // the endpoint the client called through: the task is bound to it too
	creator   string // the client's session
	modern    bool
	ttl       time.Duration
	call      jsonrpc.Message // the request, for retries with inputResponses

	taskID string
	run    *taskRun
	out    *Stream // where the current round's answer comes
	// waiting: the call asked for input (an input_required answer) and waits for tasks/update; state is that
	// answer's requestState ("" when it had none), the gateway's own when a legacy upstream's call is parked.
	waiting bool
	state   string
	asked   json.RawMessage
	// lastNote throttles progress writes to the store.
	lastNote time.Time
}

// start sends the call (begin) and answers the client: at once if it ends, or asks for input, within window;
// otherwise with a new task, which then runs on its own. It returns at once: the task host's goroutine waits.
func (j *taskJob) start(out *Stream, clientID []byte, window time.Duration, begin func(context.Context, *Stream)) {
	j.out = j.h.r.NewStream(1, 256)
	j.h.wg.Go(func() { j.serve(out, clientID, window, begin) })
}

// serve is start's goroutine.
func (j *taskJob) serve(out *Stream, clientID []byte, window time.Duration, begin func(context.Context, *Stream)) {
	h := j.h
	if window <= 0 {
		// A legacy client asked for a task: it exists before the call starts.
		if !j.create(out, clientID) {
			h.release()
			return
		}
		begin(j.ctx, j.out)
		j.follow()
		return
	}
	begin(j.ctx, j.out)
	deadline := time.NewTimer(window)
	defer deadline.Stop()
	// A client that gives up within the window (a closed stream) cancels the call, as for any call of its.
	gone := time.NewTicker(max(window/8, 10*time.Millisecond))
	defer gone.Stop()
	for {
		select {
		case <-j.out.wake:
		case <-gone.C:
			if out.Closed() {
				h.release()
				j.s.Cancel(j.out, j.id, "the client closed the request's stream")
				return
			}
			continue
		case <-h.r.ctx.Done():
			h.release()
			j.s.Cancel(j.out, j.id, "the gateway is shutting down")
			out.Abandon()
			return
		case <-deadline.C:
			if j.create(out, clientID) {
				j.follow()
				return
			}
			// Not held (the caller's tasks are at their limit, the store is down): the call goes on as an
			// ordinary one, and the client waits for it.
			h.release()
			relayAll(h.r.ctx, j.out, out, clientID)
			return
		}
		for {
			msg, final, ok := j.out.TryNext()
			if !ok {
				break
			}
			if final {
				h.release()
				out.Push(rewriteID(msg, clientID), ClassFinal)
				return
			}
			out.Push(msg, ClassNotice)
		}
		if j.out.Pending() == 0 {
			h.release()
			out.Abandon()
			return
		}
	}
}

// relayAll passes the rest of a call's messages to the client's stream.
func relayAll(ctx context.Context, from, to *Stream, clientID []byte) {
	for {
		msg, final, ok := from.Next(ctx)
		if !ok {
			to.Abandon()
			return
		}
		if final {
			to.Push(rewriteID(msg, clientID), ClassFinal)
			return
		}
		to.Push(msg, ClassNotice)
	}
}

// create stores the task and answers the client with it. It reports false, having answered nothing, when the
// task could not be stored; for a legacy client, which asked for a task, it has then answered with the error.
func (j *taskJob) create(out *Stream, clientID []byte) bool {
	h := j.h
	now := time.Now().UTC()
	era := "legacy"
	if j.modern {
		era = "modern"
	}
	rec := state.TaskRecord{
		ID: newTaskID(), Principal: j.principal, Endpoint: j.endpoint, Session: j.creator, Upstream: j.up, Tool: j.tool, Owner: h.self, Era: era,
		Status: state.TaskWorking, Created: now, Updated: now, TTL: j.ttl, PollInterval: h.poll(),
	}
	if why := h.spent(j.principal, now); why != "" {
		// Its result could not be kept: no task. A 2026-07-28 call goes on as an ordinary one.
		h.r.log.Info("no task: the kept results' budget is spent", "tool", j.tool)
		if !j.modern {
			replyError(out, clientID, protocol.CodeUnavailable, why)
		}
		return false
	}
	ctx, cancel := context.WithTimeout(h.r.ctx, 5*time.Second)
	defer cancel()
	if err := h.store().CreateTask(ctx, rec, h.maxPerPrincipal()); err != nil {
		h.r.log.Warn("cannot hold a task", "tool", j.tool, "err", err)
		if !j.modern {
			msg := "the gateway cannot hold a task now: " + err.Error()
			if errors.Is(err, state.ErrFull) {
				msg = fmt.Sprintf("you hold %d tasks, the most this gateway keeps per caller; wait for some to end", h.maxPerPrincipal())
			}
			replyError(out, clientID, protocol.CodeUnavailable, msg)
		}
		return false
	}
	j.taskID = rec.ID
	j.run = &taskRun{id: rec.ID, wake: make(chan struct{}, 1)}
	h.mu.Lock()
	if h.runs == nil {
		h.runs = map[string]*taskRun{}
	}
	h.runs[rec.ID] = j.run
	h.mu.Unlock()
	out.Push(jsonrpc.AppendResult(nil, clientID, createTaskResult(rec, j.modern)), ClassFinal)
	return true
}

// follow runs the task to its end: it takes the call's answers, records them, and acts on tasks/update and
// tasks/cancel.
func (j *taskJob) follow() {
	h := j.h
	defer func() {
		h.mu.Lock()
		delete(h.runs, j.taskID)
		h.mu.Unlock()
		h.release()
	}()
	tick := time.NewTicker(h.checkEvery())
	defer tick.Stop()
	for {
		select {
		case <-h.r.ctx.Done():
			j.stop()
			j.finish(func(rec *state.TaskRecord) {
				rec.Status, rec.StatusMessage = state.TaskFailed, "the gateway replica running this task shut down"
				rec.Error = errorObject(protocol.CodeInternalError, "the gateway replica running this task shut down before it ended")
			})
			return
		case <-j.out.wake:
			if j.drain() {
				return
			}
		case <-j.run.wake:
			if j.check() {
				return
			}
		case <-tick.C:
			if j.check() {
				return
			}
		}
	}
}

// checkEvery is how often a running task looks at its record: often without a bus to wake it.
func (h *taskHost) checkEvery() time.Duration {
	if h.r.opts.Bus == nil {
		return time.Second
	}
	return 5 * time.Second
}

// drain takes what the call sent; it reports whether the task ended.
func (j *taskJob) drain() bool {
	for {
		msg, final, ok := j.out.TryNext()
		if !ok {
			break
		}
		if !final {
			j.noted(msg)
			continue
		}
		m, err := jsonrpc.Parse(msg)
		if err != nil {
			return j.finish(func(rec *state.TaskRecord) {
				rec.Status, rec.Error = state.TaskFailed, errorObject(protocol.CodeInternalError, "switchboard: malformed answer")
			})
		}
		if e := m.Error(); e != nil {
			return j.finish(func(rec *state.TaskRecord) {
				rec.Status, rec.Error = state.TaskFailed, clone(e)
				rec.StatusMessage = errorMessage(e)
			})
		}
		res := m.Result()
		if isInputRequired(res) {
			j.waiting, j.asked, j.state = true, nil, ""
			if st, e, ok := jsonrpc.Lookup(res, "inputRequests"); ok {
				j.asked = clone(res[st:e])
			}
			j.state, _ = jsonrpc.LookupString(res, "requestState")
			asked := j.asked
			var early bool
			j.update(func(rec *state.TaskRecord) {
				// Answers that came while the previous round was on its way keep, for the requests asked again.
				rec.InputResponses = onlyKeys(rec.InputResponses, asked)
				rec.Status, rec.InputRequests = state.TaskInputRequired, asked
				rec.StatusMessage = "waiting for the client's input (tasks/update)"
				early = rec.InputResponses != nil
			})
			if early {
				select {
				case j.run.wake <- struct{}{}:
				default:
				}
			}
			return false
		}
		// Not cloned: the store keeps a copy of its own (Memory clones what it is given, Redis encodes it), and the
		// message is not used again; one copy of a large result fewer on its way.
		result := jsonrpc.DeleteMembers(res, "resultType")
		return j.finish(func(rec *state.TaskRecord) {
			rec.Status, rec.Result, rec.StatusMessage = state.TaskCompleted, result, ""
		})
	}
	if !j.waiting && j.out.Pending() == 0 {
		// The call ended with no answer: it was cancelled. (A round that asked for input has had its answer, and
		// waits for tasks/update, not for this stream.)
		return j.finish(func(rec *state.TaskRecord) {
			if !state.TaskTerminal(rec.Status) {
				rec.Status, rec.StatusMessage = state.TaskCancelled, "the call was cancelled"
			}
		})
	}
	return false
}

// noted records a progress notification of the call as the task's status message, at most once a second: the
// conventions have no progress field on a task, and tasks/get is how a client sees it.
func (j *taskJob) noted(msg []byte) {
	m, err := jsonrpc.Parse(msg)
	if err != nil || !m.MethodIs("notifications/progress") || time.Since(j.lastNote) < time.Second {
		return
	}
	j.lastNote = time.Now()
	p := m.Params()
	note, _ := jsonrpc.LookupString(p, "message")
	if note == "" {
		var v struct {
			Progress float64  `json:"progress"`
			Total    *float64 `json:"total"`
		}
		if json.Unmarshal(p, &v) != nil {
			return
		}
		note = "progress " + strconv.FormatFloat(v.Progress, 'f', -1, 64)
		if v.Total != nil {
			note += " of " + strconv.FormatFloat(*v.Total, 'f', -1, 64)
		}
	}
	j.update(func(rec *state.TaskRecord) {
		if rec.Status == state.TaskWorking {
			rec.StatusMessage = note
		}
	})
}

// check reads the record for what other requests left there: a cancellation, or input responses. It reports
// whether the task ended.
func (j *taskJob) check() bool {
	ctx, cancel := context.WithTimeout(j.h.r.ctx, 5*time.Second)
	defer cancel()
	var responses json.RawMessage
	var cancelled bool
	err := j.h.store().UpdateTask(ctx, j.taskID, func(rec *state.TaskRecord) error {
		cancelled = rec.CancelRequested
		responses = nil
		if !cancelled && rec.Status == state.TaskInputRequired && len(rec.InputResponses) > 0 && j.waiting {
			responses, rec.InputResponses = rec.InputResponses, nil
			// A partial answer leaves the task input_required with the requests still unanswered: "a server MAY
			// accept a partial set of responses; in that case the task remains in input_required until the
			// remaining responses arrive". Only a full one sets it working while the call goes on.
			rec.InputRequests = withoutKeys(rec.InputRequests, responses)
			if rec.InputRequests == nil {
				rec.Status, rec.StatusMessage = state.TaskWorking, ""
			}
			rec.Updated = time.Now().UTC()
		}
		return nil
	})
	if errors.Is(err, state.ErrNotFound) {
		cancelled = true // expired: nobody can ask for it any more
	} else if err != nil {
		return false
	}
	if cancelled {
		j.stop()
		return j.finish(func(rec *state.TaskRecord) {
			if !state.TaskTerminal(rec.Status) {
				rec.Status = state.TaskCancelled
			}
		})
	}
	if responses != nil {
		j.retry(responses)
	}
	return false
}

// stop cancels the call upstream: a running round through its session, a parked one through its park.
func (j *taskJob) stop() {
	if j.waiting {
		if !j.s.r.OwnsState(j.state) {
			return // the upstream asked (a 2026-07-28 upstream): its call has ended, nothing runs
		}
		j.s.r.tasks.cancelParked(j.state, bindHash(j.s.params.Principal, j.call.Method(), requestName(j.call)), "the task was cancelled")
		return
	}
	j.s.Cancel(j.out, j.id, "the task was cancelled")
}

// retry sends the call again with the client's answers: the parked call resumes (mrtr.go).
func (j *taskJob) retry(responses json.RawMessage) {
	params := jsonrpc.SetMember(jsonrpc.DeleteMembers(j.call.Params(), "inputResponses", "requestState"), "inputResponses", responses)
	if j.state != "" {
		params = jsonrpc.SetMember(params, "requestState", jsonrpc.AppendQuote(nil, j.state))
	}
	j.id = []byte(`"task-` + strconv.FormatInt(j.h.seq.Add(1), 10) + `"`)
	m, err := jsonrpc.Parse(jsonrpc.AppendRequest(nil, j.id, j.call.Method(), params))
	if err != nil {
		return
	}
	j.waiting, j.state, j.asked = false, "", nil
	j.out = j.h.r.NewStream(1, 256)
	j.s.HandleRequest(j.ctx, m, j.out)
}

// update writes to the record while the task runs.
func (j *taskJob) update(fn func(*state.TaskRecord)) {
	ctx, cancel := context.WithTimeout(j.h.r.ctx, 5*time.Second)
	defer cancel()
	err := j.h.store().UpdateTask(ctx, j.taskID, func(rec *state.TaskRecord) error {
		if state.TaskTerminal(rec.Status) {
			return errTaskEnded
		}
		fn(rec)
		rec.Updated = time.Now().UTC()
		return nil
	})
	if err != nil && !errors.Is(err, errTaskEnded) {
		j.h.r.log.Warn("cannot record a task's progress", "task", j.taskID[:8], "err", err)
	}
}

var errTaskEnded = errors.New("the task has ended")

// finish records the task's end (unless it ended already: a cancellation wins over a late answer) and reports
// true. A result too large to hold, or past the kept results' budget (taskbudget.go), fails the task with an
// error that says so.
func (j *taskJob) finish(fn func(*state.TaskRecord)) bool {
	h := j.h
	ctx, cancel := context.WithTimeout(context.WithoutCancel(h.r.ctx), 5*time.Second)
	defer cancel()
	write := func(fn func(*state.TaskRecord)) error {
		err := h.store().UpdateTask(ctx, j.taskID, func(rec *state.TaskRecord) error {
			if state.TaskTerminal(rec.Status) {
				return errTaskEnded
			}
			fn(rec)
			rec.InputRequests, rec.InputResponses = nil, nil
			rec.Updated = time.Now().UTC()
			// Counted before it is written (again on a retry: the task's count is replaced, not added to).
			now := time.Now()
			return h.keep(rec.ID, rec.Principal, int64(len(rec.Result)+len(rec.Error)), rec.Created.Add(rec.TTL), now)
		})
		if err != nil {
			h.unkeep(j.taskID)
		}
		return err
	}
	err := write(fn)
	var over *errResultBudget
	if errors.As(err, &over) {
		h.r.log.Info("a task's result is not kept: past the budget", "task", j.taskID[:8], "tool", j.tool, "err", err)
		msg := over.Error()
		err = write(func(rec *state.TaskRecord) {
			rec.Status, rec.Result, rec.StatusMessage = state.TaskFailed, nil, msg
			rec.Error = errorObject(protocol.CodeInternalError, msg)
		})
	}
	if errors.Is(err, state.ErrInvalid) {
		err = write(func(rec *state.TaskRecord) {
			rec.Status, rec.Result = state.TaskFailed, nil
			rec.StatusMessage = "the result is larger than the gateway holds for a task"
			rec.Error = errorObject(protocol.CodeInternalError, fmt.Sprintf("the tool's result is larger than the %d MiB the gateway holds for a task", state.MaxTaskSize>>20))
		})
	}
	if err != nil && !errors.Is(err, errTaskEnded) {
		j.h.r.log.Warn("cannot record a task's end", "task", j.taskID[:8], "err", err)
	}
	return true
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
	if h.r.opts.Bus != nil && rec.Owner != "" && rec.Owner != h.self {
		if err := h.r.opts.Bus.Publish(ctx, tasksChannel(rec.Owner), []byte(rec.ID)); err != nil {
			h.r.log.Debug("cannot wake a task's replica; it polls", "err", err)
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
	h.r.follow(ctx, tasksChannel(h.self), func(b []byte) {
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
	p, err := h.r.parkTable.find(st, bind)
	if err != nil {
		return
	}
	p.mu.Lock()
	cur := p.cur
	p.mu.Unlock()
	if cur != nil && cur.link.takeIf(cur) {
		h.r.inst.endLeg(cur, outcomeCancelled)
		cur.link.sendCancel(cur.upID, reason)
	}
	p.finished()
	p.forget()
}

// gatewayTasks is how the gateway runs a tool of up (item, as the upstream lists it) as a task of its own: ""
// when it does not, because nobody asked, or the upstream takes tasks for it itself (they pass through): a
// 2026-07-28 upstream that offers the extension decides per call, a 2025-11-25 one per tool.
func (up *Upstream) gatewayTasks(ov *Override, item []byte) string {
	ts := up.cfg.Tasks
	if ov != nil && ov.TaskSupport != "" {
		ts = ov.TaskSupport
	}
	if ts == "" || up.r == nil || !up.r.tasks.enabled() || up.offersTasks() {
		return ""
	}
	if native, _ := jsonrpc.LookupString(item, "execution", "taskSupport"); (native == taskOptional || native == taskRequired) && up.supportsTaskCalls() {
		return ""
	}
	return ts
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
