package routing

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
	"github.com/switchboard-mcp/switchboard/upstream/protocol"
)

// Tasks (2025-11-25, experimental). Task ids are minted by each upstream, so two upstreams can hand out the
// same one: the gateway exposes "<upstream>:<id>" (an upstream name never holds ':'), translates it back on
// tasks/get, tasks/result and tasks/cancel, and, where the session reaches the upstream through a session other
// clients share (a shared upstream, or a stateless one), lets it see only the tasks it created ("tasks MUST be
// bound to" the requestor's context). A session is opened at one endpoint and bound to its principal, so its
// tasks are bound to both; through its own upstream session, the upstream knows no other client's.

func exposeTask(up *upstreamServer) func(string) string {
	return func(id string) string { return up.cfg.Name + ":" + id }
}

// taskTarget resolves an exposed task id to its upstream and the upstream's own id.
func (h *taskHost) taskTarget(exposed string) (*upstreamServer, string, bool) {
	name, id, ok := strings.Cut(exposed, ":")
	if !ok {
		return nil, "", false
	}
	up := h.core.upstream(name)
	return up, id, up != nil
}

// taskCall prepares a task-augmented tools/call: refused with -32601 where the upstream has no task support
// (the spec's answer for a tool that does not take tasks), otherwise its CreateTaskResult is translated.
func (h *taskHost) taskCall(s *Session, up *upstreamServer) (func([]byte) []byte, error) {
	if !up.supportsTaskCalls() {
		return nil, fmt.Errorf("upstream %q does not support task-augmented tools/call", up.cfg.Name)
	}
	expose := exposeTask(up)
	return func(res []byte) []byte {
		if id, ok := jsonrpc.LookupString(res, "task", "taskId"); ok {
			s.tasks.add(expose(id))
		}
		res = editString(res, expose, "task", "taskId")
		return editString(res, expose, "_meta", protocol.MetaRelatedTask, "taskId")
	}, nil
}

// taskSet is the exposed ids of the tasks a session created, bounded: through an upstream session other clients
// share, a session may use only its own.
type taskSet struct {
	mu  sync.Mutex
	ids map[string]bool
}

func (t *taskSet) add(id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ids == nil || len(t.ids) >= maxTasksPerSession {
		t.ids = map[string]bool{} // bounded: the oldest ownership records go first, all at once
	}
	t.ids[id] = true
}

func (t *taskSet) has(id string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.ids[id]
}

const maxTasksPerSession = 10000

// taskRequest routes tasks/get, tasks/result and tasks/cancel by the task id.
func (h *taskHost) taskRequest(ctx context.Context, s *Session, m jsonrpc.Message, out *Stream) {
	exposed, _ := jsonrpc.LookupString(m.Params(), "taskId")
	if s.r.tasks.enabled() && gatewayTaskID(exposed) {
		s.r.tasks.legacyTaskRequest(ctx, s, m, out, exposed)
		return
	}
	up, id, ok := s.r.tasks.taskTarget(exposed)
	if !ok || !s.scope.allowsUpstream(ctx, up) || (s.links.usesMain(s, up) && !s.tasks.has(exposed)) {
		replyError(out, m.ID(), protocol.CodeInvalidParams, fmt.Sprintf("unknown task %q", exposed))
		return
	}
	transform := func(res []byte) []byte {
		expose := exposeTask(up)
		res = editString(res, expose, "taskId")
		return editString(res, expose, "_meta", protocol.MetaRelatedTask, "taskId")
	}
	if m.MethodIs("tasks/result") {
		// The task's result is a tool's: its resources are named as the client sees them, and older clients get
		// it in their revision's shape, as for the tools/call it stands for.
		transform = resultTransform(s.params.ProtocolVersion, s.catalog().uriTransform(up, toolURIs, transform))
	}
	s.forwardWith(ctx, up, m, out, "", transform, jsonrpc.ParamEdit{Path: []string{"taskId"}, With: jsonrpc.AppendQuote(nil, id)})
}

// listTasks merges tasks/list across the upstreams this session has tasks with; through an upstream session other
// clients share, only the session's own tasks are listed. The merged list is returned in one page.
func (h *taskHost) listTasks(ctx context.Context, s *Session, m jsonrpc.Message, out *Stream) {
	ctx, cancel := context.WithTimeout(ctx, s.r.opts.RequestTimeout)
	defer cancel()
	defer context.AfterFunc(s.ctx, cancel)() // the session's end stops it too
	b := []byte(`{"tasks":[`)
	n := 0
	for _, t := range s.r.tasks.gatewayTasksPage(ctx, s) {
		if n > 0 {
			b = append(b, ',')
		}
		b = append(b, t...)
		n++
	}
	for _, up := range s.r.upstreams() {
		shared := s.links.usesMain(s, up)
		l := up.main
		if !shared {
			l = s.links.peek(up)
		}
		if l == nil || !up.supportsTaskCalls() || !s.scope.allowsUpstream(ctx, up) {
			continue
		}
		cursor := ""
		for range maxPages {
			var params []byte
			if cursor != "" {
				params = append(append([]byte(`{"cursor":`), jsonrpc.AppendQuote(nil, cursor)...), '}')
			}
			res, err := l.request(ctx, "tasks/list", params)
			if err != nil {
				s.r.log.Debug("tasks/list failed", "upstream", up.cfg.Name, "err", err)
				break
			}
			var page struct {
				Tasks      []json.RawMessage `json:"tasks"`
				NextCursor string            `json:"nextCursor"`
			}
			if json.Unmarshal(res, &page) != nil {
				break
			}
			for _, t := range page.Tasks {
				id, _ := jsonrpc.LookupString(t, "taskId")
				exposed := exposeTask(up)(id)
				if shared && !s.tasks.has(exposed) {
					continue
				}
				if n > 0 {
					b = append(b, ',')
				}
				b = append(b, editString(jsonrpc.Compact(nil, t), exposeTask(up), "taskId")...)
				n++
			}
			if page.NextCursor == "" || page.NextCursor == cursor {
				break
			}
			cursor = page.NextCursor
		}
	}
	reply(out, m.ID(), append(b, "]}"...))
}
