package routing

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/switchboard-mcp/switchboard/routing/state"
	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
	"github.com/switchboard-mcp/switchboard/upstream/protocol"
)

// HandleRequest answers or forwards one client request; the answer, and anything related to it that comes
// first (progress, server→client requests), is pushed to out. It returns once the request is answered locally or
// handed to an upstream; it never waits for an upstream's answer. ctx is the client's request: its values (the
// trace span) follow the request upstream, its cancellation does not (a legacy client's disconnect is not a
// cancel; a modern client's closed stream is, through Cancel).
func (s *Session) HandleRequest(ctx context.Context, m jsonrpc.Message, out *Stream) {
	ctx = context.WithoutCancel(ctx)
	s.touch()
	id := m.ID()
	if dup, ok := m.DuplicateMember(); ok {
		// Checked before anything reads params: call_tool's wrapped call, presets, names, URIs and task ids are
		// all read from them, and an upstream would act on the member the gateway did not check.
		name, _ := jsonrpc.LookupString(m.Params(), "name") // "" when the name is what appears twice
		s.r.inst.refuse(s, out, m, nil, name, protocol.CodeInvalidParams, "duplicate member "+strconv.Quote(dup),
			fmt.Sprintf("params holds the member %q twice in one object (after unescaping): send each member once", dup))
		return
	}
	if m.MethodIs(protocol.MethodToolsCall) && s.r.embed.searchMode(s) != nil {
		if name, _ := jsonrpc.LookupString(m.Params(), "name"); name == toolCall {
			var why string
			if m, why = unwrapCallTool(m); why != "" {
				s.r.inst.refuse(s, out, m, nil, toolCall, protocol.CodeInvalidParams, reasonMalformed, why)
				return
			}
		}
	}
	if s.era.preempt(ctx, m, out) {
		return
	}
	switch m.Method() {
	case "ping":
		reply(out, id, []byte("{}"))
	case "initialize":
		replyError(out, id, protocol.CodeInvalidRequest, "the session is already initialized; start a new session to initialize again")
	case "tools/list":
		if mode := s.r.embed.searchMode(s); mode != nil {
			s.r.embed.listSearch(ctx, s, m, out, mode)
			return
		}
		s.list(ctx, m, out, kindTools)
	case "prompts/list":
		s.list(ctx, m, out, kindPrompts)
	case "resources/list":
		s.list(ctx, m, out, kindResources)
	case "resources/templates/list":
		s.list(ctx, m, out, kindTemplates)
	case "tools/call":
		if s.r.code.handle(ctx, s, m, out) { // code mode's meta-tools (codemode.go)
			return
		}
		if mode := s.r.embed.searchMode(s); mode != nil {
			if name, _ := jsonrpc.LookupString(m.Params(), "name"); name == toolSearch {
				s.r.embed.searchTools(ctx, s, m, out, mode)
				return
			}
		}
		forwardNamed(ctx, s, m, out, kindTools)
	case "prompts/get":
		forwardNamed(ctx, s, m, out, kindPrompts)
	case "resources/read":
		forwardURI(ctx, s, m, out)
	case "resources/subscribe":
		s.subs.handle(ctx, s, m, out, true)
	case "resources/unsubscribe":
		s.subs.handle(ctx, s, m, out, false)
	case "completion/complete":
		forwardCompletion(ctx, s, m, out)
	case "logging/setLevel":
		s.setLevel(ctx, m, out)
	case "tasks/get", "tasks/result", "tasks/cancel":
		s.r.tasks.taskRequest(ctx, s, m, out)
	case "tasks/list":
		s.r.tasks.listTasks(ctx, s, m, out)
	default:
		replyError(out, id, protocol.CodeMethodNotFound, fmt.Sprintf("method %q is not supported by this gateway", m.Method()))
	}
}

// HandleNotification acts on one client notification.
func (s *Session) HandleNotification(m jsonrpc.Message) {
	s.touch()
	if dup, ok := m.DuplicateMember(); ok {
		s.r.inst.auditRefusal(s, nil, m.Method(), "", outcomeRefused, "duplicate member "+strconv.Quote(dup), 0)
		return // a notification has no answer to carry the refusal
	}
	switch m.Method() {
	case "notifications/cancelled":
		s.cancelCall(nil, m.Params())
	case "notifications/initialized":
		s.goWork(func() { s.links.warm(s) }) // its per-client upstream sessions that ask for roots, ahead of the first call
	case "notifications/roots/list_changed":
		// Roots belong to the client: every per-client upstream session hears of the change.
		for _, l := range s.links.all() {
			l.respond(clone(m.Raw()))
		}
	}
}

func (s *Session) list(ctx context.Context, m jsonrpc.Message, out *Stream, k listKind) {
	cursor, _ := jsonrpc.LookupString(m.Params(), "cursor")
	page, err := s.catalog().page(k, cursor, s.r.opts.PageSize, s.r.cursors, *s.scope.policy(ctx), s.params.Endpoint)
	if err != nil {
		replyError(out, m.ID(), protocol.CodeInvalidParams, err.Error())
		return
	}
	reply(out, m.ID(), page)
}

// requestedName is params.name of a tools/call or prompts/get. A name of cat's, sent without escapes, comes back
// as the catalog's own string: the common call makes none.
func requestedName(cat *catalog, k listKind, params []byte) (string, bool) {
	st, e, ok := jsonrpc.Lookup(params, "name")
	if !ok {
		return "", false
	}
	if b, ok := jsonrpc.PlainString(params[st:e]); ok {
		if t, ok := cat.targets(k)[string(b)]; ok {
			return t.exposed, true
		}
	}
	name, err := jsonrpc.Unquote(params[st:e])
	return name, err == nil
}

// setLevel records the client's log level and passes it to its upstream sessions that log (design §4: fan-out
// where the session mode allows; a shared upstream's level is not one client's to set).
func (s *Session) setLevel(ctx context.Context, m jsonrpc.Message, out *Stream) {
	level, _ := jsonrpc.LookupString(m.Params(), "level")
	i := levelIndex(level)
	if i < 0 {
		replyError(out, m.ID(), protocol.CodeInvalidParams, fmt.Sprintf("invalid log level %q: use one of debug, info, notice, warning, error, critical, alert, emergency", level))
		return
	}
	s.record.update(func(rec *state.SessionRecord) { rec.LogLevel = level })
	s.mu.Lock()
	s.logLevel = i
	s.mu.Unlock()
	links := s.links.all()
	id, params := clone(m.ID()), clone(m.Params())
	// The client's own upstream sessions hear the level before the answer goes out, so that what the client
	// sends next is logged at it; the handler does not wait for them (HandleRequest never waits upstream).
	applied := s.goWork(func() {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		defer context.AfterFunc(s.ctx, cancel)() // the session's end stops it too
		var errs []error
		for _, l := range links {
			if _, ok := l.up.capability("logging"); !ok {
				continue
			}
			if _, err := l.request(ctx, "logging/setLevel", params); err != nil {
				errs = append(errs, err)
			}
		}
		if err := errors.Join(errs...); err != nil {
			s.r.log.Debug("setLevel not applied everywhere", "session", s.logID(), "err", err)
		}
		reply(out, id, []byte("{}"))
	})
	if !applied {
		replyError(out, id, protocol.CodeInvalidRequest, "the session has ended")
	}
}

// soleProvider returns the only upstream that declared a capability, or nil.
func (set *upstreamSet) soleProvider(capability string) *upstreamServer {
	var found *upstreamServer
	for _, up := range set.list {
		if _, ok := up.capability(capability); ok {
			if found != nil {
				return nil
			}
			found = up
		}
	}
	return found
}
