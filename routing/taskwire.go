package routing

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/switchboard-mcp/switchboard/routing/state"
	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
	"github.com/switchboard-mcp/switchboard/upstream/protocol"
)

// The wire shapes of a gateway-made task, and the tasks/* requests that read and change one. A 2026-07-28 client
// sees SEP-2663's flat Result & Task (ttlMs, pollIntervalMs, the result inlined by tasks/get, no tasks/result
// or tasks/list); a 2025-11-25 client sees that revision's Task (ttl, pollInterval) and its five methods.

// createTaskResult is the answer to a tools/call that became a task.
func createTaskResult(rec state.TaskRecord, modern bool) []byte {
	if modern {
		b := []byte(`{"resultType":"task",`)
		return append(appendTaskFields(b, rec, true), '}')
	}
	b := []byte(`{"task":{`)
	return append(appendTaskFields(b, rec, false), "}}"...)
}

// appendTaskFields appends the Task members of rec (no braces).
func appendTaskFields(b []byte, rec state.TaskRecord, modern bool) []byte {
	b = append(jsonrpc.AppendQuote(append(b, `"taskId":`...), rec.ID), `,"status":`...)
	b = jsonrpc.AppendQuote(b, rec.Status)
	if rec.StatusMessage != "" {
		b = jsonrpc.AppendQuote(append(b, `,"statusMessage":`...), rec.StatusMessage)
	}
	b = jsonrpc.AppendQuote(append(b, `,"createdAt":`...), rec.Created.UTC().Format(time.RFC3339Nano))
	b = jsonrpc.AppendQuote(append(b, `,"lastUpdatedAt":`...), rec.Updated.UTC().Format(time.RFC3339Nano))
	ttl, poll := `,"ttl":`, `,"pollInterval":`
	if modern {
		ttl, poll = `,"ttlMs":`, `,"pollIntervalMs":`
	}
	b = jsonrpc.AppendInt(append(b, ttl...), rec.TTL.Milliseconds())
	if rec.PollInterval > 0 {
		b = jsonrpc.AppendInt(append(b, poll...), rec.PollInterval.Milliseconds())
	}
	return b
}

// detailedTask is tasks/get's answer to a 2026-07-28 client: the task with its status's payload inlined.
func detailedTask(rec state.TaskRecord) []byte {
	// "The resultType field MUST be set to complete" on tasks/get: said here, since inputRequests alone would
	// make the front end take it for an InputRequiredResult.
	b := appendTaskFields([]byte(`{"resultType":"complete",`), rec, true)
	switch {
	case rec.Status == state.TaskCompleted && len(rec.Result) > 0:
		b = append(append(b, `,"result":`...), rec.Result...)
	case rec.Status == state.TaskFailed && len(rec.Error) > 0:
		b = append(append(b, `,"error":`...), rec.Error...)
	case rec.Status == state.TaskInputRequired && len(rec.InputRequests) > 0:
		b = append(append(b, `,"inputRequests":`...), rec.InputRequests...)
	}
	return append(b, '}')
}

// gatewayTaskID reports whether a task id may be one the gateway made: an upstream's task is exposed as
// "<upstream>:<id>" (tasks.go), which a gateway-made id (base64url) never contains.
func gatewayTaskID(id string) bool { return id != "" && !strings.Contains(id, ":") && len(id) <= 256 }

// holds reports whether a task is bound to the session's caller where the session is: the same principal, through
// the same endpoint. An endpoint is a resource of its own (a token is accepted there for its resource or the
// whole gateway's), with its own view and policy, so a task made through /mcp/team is nobody's at /mcp/ops, nor
// at /mcp/fin, nor at the whole catalog, even for its own caller. A record an older replica wrote has no
// endpoint: it is the whole catalog's, unknown at every endpoint.
func (h *taskHost) holds(s *Session, rec state.TaskRecord) bool {
	return rec.Principal == s.params.Principal && rec.Endpoint == s.params.Endpoint
}

// refusedTask audits a request for a task that exists but is bound elsewhere: the caller is told it is unknown.
func (h *taskHost) refusedTask(s *Session, rec state.TaskRecord, method string) {
	if up := s.r.upstream(rec.Upstream); up != nil {
		s.r.inst.auditDenied(s, up, method, rec.Tool)
	}
}

// findTask returns the caller's task: a task bound to another principal or another endpoint, an expired one and
// one that never existed are the same unknown task (-32602), so an id says nothing about anybody else's work.
func (h *taskHost) findTask(ctx context.Context, s *Session, id, method string) (state.TaskRecord, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	rec, err := h.store().GetTask(ctx, id)
	if err == nil && !s.r.tasks.holds(s, rec) {
		s.r.tasks.refusedTask(s, rec, method)
		err = state.ErrNotFound
	}
	if err == nil && !state.TaskTerminal(rec.Status) {
		rec = h.orphaned(ctx, rec)
	}
	return rec, err
}

// orphaned fails a task whose replica is gone: nobody else can finish its call. Only replicas that register
// their address can be told dead; others' tasks end with their TTL.
func (h *taskHost) orphaned(ctx context.Context, rec state.TaskRecord) state.TaskRecord {
	reg := h.registry
	if reg == nil || rec.Owner == h.self || !strings.Contains(rec.Owner, "://") {
		return rec
	}
	if alive, err := reg.ReplicaRegistered(ctx, rec.Owner); err != nil || alive {
		return rec
	}
	_ = h.store().UpdateTask(ctx, rec.ID, func(r *state.TaskRecord) error {
		if state.TaskTerminal(r.Status) {
			return errTaskEnded
		}
		r.Status, r.StatusMessage = state.TaskFailed, "the gateway replica running this task is gone"
		r.Error = errorObject(protocol.CodeInternalError, "the gateway replica running this task stopped before it ended; call the tool again")
		r.Updated = time.Now().UTC()
		rec = *r
		return nil
	})
	return rec
}

// unknownTask answers a task id the caller has no task under.
func unknownTask(out *Stream, id []byte, taskID string) {
	replyError(out, id, protocol.CodeInvalidParams, fmt.Sprintf("unknown task %q: it never existed, expired, or is not yours", taskID))
}

// modernTaskRequest serves tasks/get, tasks/update and tasks/cancel for a 2026-07-28 client: "For requests that
// do not carry the extension, the server MUST reject tasks/get, tasks/update and tasks/cancel" with -32021.
func (h *taskHost) modernTaskRequest(ctx context.Context, s *Session, m jsonrpc.Message, out *Stream) {
	id := m.ID()
	if !s.r.tasks.enabled() && !s.r.tasks.upstreamTasks() {
		replyError(out, id, protocol.CodeMethodNotFound, fmt.Sprintf("method %q: this gateway runs no tasks", m.Method()))
		return
	}
	if !s.r.tasks.declaresTasks(s) {
		missingTasksError(out, id, m.Method())
		return
	}
	taskID, ok := jsonrpc.LookupString(m.Params(), "taskId")
	if !ok || taskID == "" {
		replyError(out, id, protocol.CodeInvalidParams, m.Method()+" needs params.taskId")
		return
	}
	if isUpstreamTask(taskID) {
		s.r.tasks.upstreamTaskRequest(ctx, s, m, out, taskID)
		return
	}
	if !s.r.tasks.enabled() || !gatewayTaskID(taskID) {
		if m.MethodIs("tasks/get") {
			unknownTask(out, id, taskID)
		} else {
			reply(out, id, []byte(`{}`)) // "MUST acknowledge … even if the task ID does not represent a valid task"
		}
		return
	}
	switch m.Method() {
	case "tasks/get":
		rec, err := s.r.tasks.findTask(ctx, s, taskID, m.Method())
		if err != nil {
			s.r.tasks.taskStoreError(s, out, id, taskID, err)
			return
		}
		reply(out, id, detailedTask(rec))
	case "tasks/update":
		var responses map[string]json.RawMessage
		if st, e, ok := jsonrpc.Lookup(m.Params(), "inputResponses"); !ok || json.Unmarshal(m.Params()[st:e], &responses) != nil {
			replyError(out, id, protocol.CodeInvalidParams, "tasks/update needs params.inputResponses, an object mapping inputRequests keys to results")
			return
		}
		s.r.tasks.answerTask(ctx, s, taskID, responses)
		reply(out, id, []byte(`{}`))
	case "tasks/cancel":
		s.r.tasks.cancelTask(ctx, s, taskID)
		reply(out, id, []byte(`{}`))
	}
}

// taskStoreError answers a failed read of a task.
func (h *taskHost) taskStoreError(s *Session, out *Stream, id []byte, taskID string, err error) {
	if errors.Is(err, state.ErrNotFound) {
		unknownTask(out, id, taskID)
		return
	}
	s.r.log.Warn("cannot read a task", "err", err)
	replyError(out, id, protocol.CodeInternalError, "the gateway cannot read its tasks now; try again")
}

// answerTask adds the client's input responses to its task, keeping only answers to requests still outstanding
// ("a server SHOULD ignore any inputResponses mapped to a key that is not currently outstanding"), and wakes the
// replica that runs it.
func (h *taskHost) answerTask(ctx context.Context, s *Session, taskID string, responses map[string]json.RawMessage) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var rec, refused state.TaskRecord
	err := h.store().UpdateTask(ctx, taskID, func(r *state.TaskRecord) error {
		if !s.r.tasks.holds(s, *r) {
			refused = *r
			return state.ErrNotFound
		}
		if r.Status != state.TaskInputRequired {
			return errTaskEnded
		}
		var asked, have map[string]json.RawMessage
		_ = json.Unmarshal(r.InputRequests, &asked)
		_ = json.Unmarshal(r.InputResponses, &have)
		if have == nil {
			have = map[string]json.RawMessage{}
		}
		for k, v := range responses {
			if _, ok := asked[k]; ok && firstByte(v) == '{' {
				have[k] = v
			}
		}
		if len(have) == 0 {
			return errTaskEnded
		}
		b, err := json.Marshal(have)
		if err != nil {
			return err
		}
		r.InputResponses = b
		rec = *r
		return nil
	})
	if err == nil {
		h.wakeOwner(ctx, rec)
	} else if refused.ID != "" {
		s.r.tasks.refusedTask(s, refused, "tasks/update")
	}
}

// cancelTask records the caller's cancellation of its task and wakes the replica that runs it, which stops the
// call. The task is cancelled from now on: a late answer does not change that.
func (h *taskHost) cancelTask(ctx context.Context, s *Session, taskID string) (state.TaskRecord, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var rec, refused state.TaskRecord
	err := h.store().UpdateTask(ctx, taskID, func(r *state.TaskRecord) error {
		if !s.r.tasks.holds(s, *r) {
			refused = *r
			return state.ErrNotFound
		}
		if state.TaskTerminal(r.Status) {
			rec = *r
			return errTaskEnded
		}
		r.CancelRequested = true
		r.Status, r.StatusMessage = state.TaskCancelled, "cancelled by the client"
		r.InputRequests, r.InputResponses = nil, nil
		r.Updated = time.Now().UTC()
		rec = *r
		return nil
	})
	if err == nil {
		h.wakeOwner(ctx, rec)
	} else if refused.ID != "" {
		s.r.tasks.refusedTask(s, refused, "tasks/cancel")
	}
	return rec, err
}

// legacyTaskRequest serves a 2025-11-25 client's tasks/get, tasks/result and tasks/cancel of a gateway-made task.
func (h *taskHost) legacyTaskRequest(ctx context.Context, s *Session, m jsonrpc.Message, out *Stream, taskID string) {
	id := m.ID()
	switch m.Method() {
	case "tasks/get":
		rec, err := s.r.tasks.findTask(ctx, s, taskID, m.Method())
		if err != nil {
			s.r.tasks.taskStoreError(s, out, id, taskID, err)
			return
		}
		reply(out, id, append(appendTaskFields([]byte{'{'}, rec, false), '}'))
	case "tasks/cancel":
		rec, err := s.r.tasks.cancelTask(ctx, s, taskID)
		switch {
		case errors.Is(err, errTaskEnded):
			// "-32602 if the task is already terminal"
			replyError(out, id, protocol.CodeInvalidParams, fmt.Sprintf("task %q has already ended (%s)", taskID, rec.Status))
		case err != nil:
			s.r.tasks.taskStoreError(s, out, id, taskID, err)
		default:
			reply(out, id, append(appendTaskFields([]byte{'{'}, rec, false), '}'))
		}
	case "tasks/result":
		if !s.goWork(func() { s.r.tasks.awaitTaskResult(ctx, s, id, out, taskID) }) {
			out.Abandon()
		}
	}
}

// awaitTaskResult answers tasks/result once the task has ended ("blocks until the task is terminal, then
// returns exactly the original result or error"), within the hard request timeout.
func (h *taskHost) awaitTaskResult(ctx context.Context, s *Session, id []byte, out *Stream, taskID string) {
	wait, cancel := context.WithTimeout(s.ctx, s.r.opts.MaxRequestTimeout)
	defer cancel()
	every := min(h.poll(), time.Second)
	asked := map[string]bool{} // the input requests put to the client on this stream
	for {
		rec, err := s.r.tasks.findTask(wait, s, taskID, "tasks/result")
		if err != nil {
			s.r.tasks.taskStoreError(s, out, id, taskID, err)
			return
		}
		if rec.Status == state.TaskInputRequired {
			// 2025-11-25: the requests of an input_required task reach the client on its tasks/result stream.
			if lc, ok := s.era.(*legacyClient); ok {
				if why := lc.askForTask(wait, out, rec, asked); why != "" {
					replyError(out, id, protocol.CodeInternalError, why)
					return
				}
			}
		}
		if state.TaskTerminal(rec.Status) {
			related := []byte(`{"` + protocol.MetaRelatedTask + `":{"taskId":` + string(jsonrpc.AppendQuote(nil, rec.ID)) + `}}`)
			switch rec.Status {
			case state.TaskCompleted:
				reply(out, id, jsonrpc.SetMember(rec.Result, "_meta", mergeObjects(member(rec.Result, "_meta"), related)))
			case state.TaskFailed:
				var e struct {
					Code    int             `json:"code"`
					Message string          `json:"message"`
					Data    json.RawMessage `json:"data"`
				}
				_ = json.Unmarshal(rec.Error, &e)
				out.Push(jsonrpc.AppendError(nil, id, e.Code, e.Message, e.Data), ClassFinal)
			default:
				replyError(out, id, protocol.CodeInvalidRequest, fmt.Sprintf("task %q was cancelled", taskID))
			}
			return
		}
		t := time.NewTimer(every)
		select {
		case <-wait.Done():
			t.Stop()
			replyError(out, id, protocol.CodeRequestTimeout, fmt.Sprintf("task %q has not ended yet; ask again with tasks/result or tasks/get", taskID))
			return
		case <-t.C:
		}
	}
}

// gatewayTasksPage is the caller's gateway-made tasks for tasks/list (2025-11-25): a task is bound to its caller
// and its endpoint, so a caller's list is its own tasks made where the session is.
func (h *taskHost) gatewayTasksPage(ctx context.Context, s *Session) [][]byte {
	if !h.enabled() {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	recs, err := h.store().ListTasks(ctx, s.params.Principal)
	if err != nil {
		s.r.log.Debug("cannot list tasks", "err", err)
		return nil
	}
	out := make([][]byte, 0, len(recs))
	for _, rec := range recs {
		if rec.UpstreamTask != "" || !s.r.tasks.holds(s, rec) || (s.params.Principal == "" && rec.Session != s.id) {
			continue
		}
		out = append(out, append(appendTaskFields([]byte{'{'}, rec, false), '}'))
	}
	return out
}

// askForTask puts the task's input requests not asked yet to the client, as requests related to the task, and
// adds its answers to the task. It returns why it could not, or "".
func (lc *legacyClient) askForTask(ctx context.Context, out *Stream, rec state.TaskRecord, asked map[string]bool) string {
	s := lc.s
	var reqs map[string]struct {
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if json.Unmarshal(rec.InputRequests, &reqs) != nil {
		return "the task's input requests cannot be read"
	}
	related := []byte(`{"` + protocol.MetaRelatedTask + `":{"taskId":` + string(jsonrpc.AppendQuote(nil, rec.ID)) + `}}`)
	answers := map[string]json.RawMessage{}
	for _, key := range sortedKeys(reqs) {
		if asked[key] {
			continue
		}
		asked[key] = true
		req := reqs[key]
		params := orEmpty(req.Params)
		params = jsonrpc.SetMember(params, "_meta", mergeObjects(member(params, "_meta"), related))
		m, err := jsonrpc.Parse(jsonrpc.AppendRequest(nil, []byte("0"), req.Method, params))
		if err != nil {
			return "the task's input request cannot be sent"
		}
		if why := s.caps.refuses(m); why != "" {
			return fmt.Sprintf("the task needs input this client cannot give: %s", why)
		}
		ch := make(chan jsonrpc.Message, 1)
		gid := lc.addServerReq(&serverReq{out: out, answer: ch})
		forget := func() { lc.forgetServerReq(gid) }
		if !out.Push(m.AppendWithID(nil, jsonrpc.AppendInt(nil, gid)), classRequest) {
			forget()
			return "the client is not reading its stream"
		}
		select {
		case a := <-ch:
			if e := a.Error(); e != nil {
				return "the client refused the task's request for input: " + errorMessage(e)
			}
			answers[key] = json.RawMessage(clone(a.Result()))
		case <-ctx.Done():
			forget()
			return "the client did not answer the task's request for input in time"
		}
	}
	if len(answers) > 0 {
		s.r.tasks.answerTask(ctx, s, rec.ID, answers)
	}
	return ""
}
