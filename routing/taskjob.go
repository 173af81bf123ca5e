package routing

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/switchboard-mcp/switchboard/routing/state"
	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
	"github.com/switchboard-mcp/switchboard/upstream/protocol"
)

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
	j.out = j.h.core.NewStream(1, 256)
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
		case <-h.ctx.Done():
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
			relayAll(h.ctx, j.out, out, clientID)
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
		h.log.Info("no task: the kept results' budget is spent", "tool", j.tool)
		if !j.modern {
			replyError(out, clientID, protocol.CodeUnavailable, why)
		}
		return false
	}
	ctx, cancel := context.WithTimeout(h.ctx, 5*time.Second)
	defer cancel()
	if err := h.store().CreateTask(ctx, rec, h.maxPerPrincipal()); err != nil {
		h.log.Warn("cannot hold a task", "tool", j.tool, "err", err)
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
		case <-h.ctx.Done():
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
	ctx, cancel := context.WithTimeout(j.h.ctx, 5*time.Second)
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
		if j.s.r.code.abandonWait(j.s, j.state) {
			return // a script waiting for consent (codemodeinput.go): its run ends
		}
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
	j.out = j.h.core.NewStream(1, 256)
	j.s.HandleRequest(j.ctx, m, j.out)
}

// update writes to the record while the task runs.
func (j *taskJob) update(fn func(*state.TaskRecord)) {
	ctx, cancel := context.WithTimeout(j.h.ctx, 5*time.Second)
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
		j.h.log.Warn("cannot record a task's progress", "task", j.taskID[:8], "err", err)
	}
}

var errTaskEnded = errors.New("the task has ended")

// finish records the task's end (unless it ended already: a cancellation wins over a late answer) and reports
// true. A result too large to hold, or past the kept results' budget (taskbudget.go), fails the task with an
// error that says so.
func (j *taskJob) finish(fn func(*state.TaskRecord)) bool {
	h := j.h
	ctx, cancel := context.WithTimeout(context.WithoutCancel(h.ctx), 5*time.Second)
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
		h.log.Info("a task's result is not kept: past the budget", "task", j.taskID[:8], "tool", j.tool, "err", err)
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
		j.h.log.Warn("cannot record a task's end", "task", j.taskID[:8], "err", err)
	}
	return true
}
