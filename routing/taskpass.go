package routing

import (
	"context"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"

	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
	"github.com/switchboard-mcp/switchboard/upstream/protocol"
)

// Tasks of 2026-07-28 upstreams that offer the tasks extension themselves (issue 19, item 2). The upstream runs
// the task and mints its id; the gateway routes tasks/get, tasks/update and tasks/cancel back to it. Two upstreams
// may mint the same id, and an id must not let one caller reach another's task ("when an auth context exists,
// tasks MUST be bound to it"), so the client sees the upstream's id sealed: "sbtp1." and, under the key the
// replicas share (as for requestState), the upstream's name and its id, authenticated together with the
// caller's principal and the endpoint it called through (and so the resource its token was accepted for there).
// Any replica opens it, no store is consulted, and it does not open for another principal, nor for the same one
// at another endpoint: there it is an unknown task. (An id sealed before the endpoint was bound does not open
// either: its task is unknown from then on.)

const upstreamTaskPrefix = "sbtp1."

// isUpstreamTask reports whether a task id is an upstream's task as the gateway exposes it.
func isUpstreamTask(id string) bool { return strings.HasPrefix(id, upstreamTaskPrefix) }

// upstreamTasks reports whether some upstream offers the tasks extension.
func (h *taskHost) upstreamTasks() bool {
	for _, up := range h.core.upstreams() {
		if up.offersTasks() {
			return true
		}
	}
	return false
}

// taskBinding is what a sealed task id is bound to: the principal (any bytes, so its length first) and the
// endpoint.
func taskBinding(principal, endpoint string) []byte {
	b := strconv.AppendInt([]byte(upstreamTaskPrefix), int64(len(principal)), 10)
	return append(append(append(b, ':'), principal...), endpoint...)
}

// sealUpstreamTask exposes an upstream's task id to principal at endpoint.
func (t *parkTable) sealUpstreamTask(principal, endpoint, upstream, id string) string {
	sealed := t.stateAEAD.Seal(nil, []byte(upstream+"\x00"+id), taskBinding(principal, endpoint))
	return upstreamTaskPrefix + base64.RawURLEncoding.EncodeToString(sealed)
}

// openUpstreamTask returns the upstream and the upstream's id of an exposed task id, if principal holds it at
// endpoint.
func (t *parkTable) openUpstreamTask(principal, endpoint, exposed string) (upstream, id string, ok bool) {
	sealed, err := base64.RawURLEncoding.Strict().DecodeString(strings.TrimPrefix(exposed, upstreamTaskPrefix))
	if err != nil {
		return "", "", false
	}
	raw, err := t.stateAEAD.Open(sealed, taskBinding(principal, endpoint))
	if err != nil {
		return "", "", false
	}
	upstream, id, ok = strings.Cut(string(raw), "\x00")
	return upstream, id, ok
}

// exposeUpstreamTasks returns the transform of a modern client's tools/call to an upstream that offers tasks: a
// CreateTaskResult's id is sealed for the caller. nil when the call cannot become the upstream's task.
func (h *taskHost) exposeUpstreamTasks(s *Session, up *upstreamServer, next func([]byte) []byte) func([]byte) []byte {
	if !s.era.modern() || !s.r.tasks.declaresTasks(s) || !up.offersTasks() {
		return next
	}
	return func(res []byte) []byte {
		if rt, _ := jsonrpc.LookupString(res, "resultType"); rt == "task" {
			if id, ok := jsonrpc.LookupString(res, "taskId"); ok {
				res = jsonrpc.SetMember(res, "taskId", jsonrpc.AppendQuote(nil, s.r.sealUpstreamTask(s.params.Principal, s.params.Endpoint, up.cfg.Name, id)))
			}
		}
		if next != nil {
			return next(res)
		}
		return res
	}
}

// upstreamTaskRequest routes tasks/get, tasks/update or tasks/cancel of an upstream's task to that upstream, with
// its own id, and shows the answer with the exposed one.
func (h *taskHost) upstreamTaskRequest(ctx context.Context, s *Session, m jsonrpc.Message, out *Stream, exposed string) {
	name, id, ok := s.r.openUpstreamTask(s.params.Principal, s.params.Endpoint, exposed)
	up := s.r.upstream(name)
	if !ok || up == nil || !s.scope.allowsUpstream(ctx, up) {
		if m.MethodIs("tasks/get") {
			unknownTask(out, m.ID(), exposed)
			return
		}
		reply(out, m.ID(), []byte(`{}`)) // acknowledged, as for any id
		return
	}
	s.forwardWith(ctx, up, m, out, "", func(res []byte) []byte {
		if _, _, ok := jsonrpc.Lookup(res, "taskId"); ok {
			res = jsonrpc.SetMember(res, "taskId", jsonrpc.AppendQuote(nil, exposed))
		}
		return res
	}, jsonrpc.ParamEdit{Path: []string{"taskId"}, With: jsonrpc.AppendQuote(nil, id)})
}

// taskMethodError is the answer to a tasks method a 2026-07-28 client may not use.
func taskMethodError(out *Stream, m jsonrpc.Message) {
	replyError(out, m.ID(), protocol.CodeMethodNotFound, fmt.Sprintf("method %q does not exist in protocol version %s with the %s extension", m.Method(), protocol.Modern, ExtensionTasks))
}
