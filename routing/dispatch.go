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

// namePath is the path of the name a tools/call or prompts/get names: shared by every call's edit, never written.
var namePath = []string{"name"}

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
				replyError(out, id, protocol.CodeInvalidParams, why)
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
		s.callNamed(ctx, m, out, kindTools)
	case "prompts/get":
		s.callNamed(ctx, m, out, kindPrompts)
	case "resources/read":
		s.callURI(ctx, m, out)
	case "resources/subscribe":
		s.subs.handle(ctx, s, m, out, true)
	case "resources/unsubscribe":
		s.subs.handle(ctx, s, m, out, false)
	case "completion/complete":
		s.completion(ctx, m, out)
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

// callNamed routes tools/call and prompts/get by the exposed name, translated back to the upstream's own.
func (s *Session) callNamed(ctx context.Context, m jsonrpc.Message, out *Stream, k listKind) {
	cat := s.catalog()
	name, ok := requestedName(cat, k, m.Params())
	if !ok {
		replyError(out, m.ID(), protocol.CodeInvalidParams, m.Method()+" needs params.name")
		return
	}
	what := "tool"
	if k == kindPrompts {
		what = "prompt"
	}
	t, ok := s.scope.named(ctx, cat, k, name, m.Method())
	if !ok && k == kindTools {
		// A client retrying the stand-in it was asked to connect through, once the upstream's own list replaced it.
		if up := s.r.grants.formerStandIn(name); up != nil && s.scope.allowsUpstream(ctx, up) {
			s.r.grants.callStandIn(ctx, s, up, m, out)
			return
		}
	}
	if !ok {
		// What a principal may not use does not exist for it: the same answer as for a name nobody offers.
		msg := fmt.Sprintf("unknown %s %q: list %ss to see what is available", what, name, what)
		if _, known := cat.targets(k)[name]; known {
			replyError(out, m.ID(), protocol.CodeInvalidParams, msg) // named audited why
		} else {
			s.r.inst.refuse(s, out, m, nil, name, protocol.CodeInvalidParams, reasonUnknown, msg)
		}
		return
	}
	if d := t.withheld; d != nil {
		s.r.inst.refuse(s, out, m, t.up, name, protocol.CodeUnavailable, reasonWithheld, d.callError(what, name))
		return
	}
	if k == kindTools && t.name == standInTool && t.up.standingIn.Load() {
		s.r.grants.callStandIn(ctx, s, t.up, m, out)
		return
	}
	// A task's call comes back through here (taskRunning): the name and the presets are applied then, once.
	if k == kindTools && s.r.tasks.hostTask(ctx, s, t, m, out, name) {
		return
	}
	edits := make([]jsonrpc.ParamEdit, 0, 2) // the name, then _meta or the progress token: on the stack
	if t.name != name {
		q := t.quoted
		if q == nil {
			q = jsonrpc.AppendQuote(nil, t.name)
		}
		edits = append(edits, jsonrpc.ParamEdit{Path: namePath, With: q})
	}
	if len(t.presets) > 0 {
		var why string
		if m, why = withPresets(m, name, t.presets); why != "" {
			s.r.inst.refuse(s, out, m, t.up, name, protocol.CodeInvalidParams, reasonPreset, why)
			return
		}
	}
	var transform func([]byte) []byte
	if k == kindTools && s.era.modern() {
		// "Servers receiving requests with this parameter under the extension MUST ignore it": a legacy
		// upstream would take it for a 2025-11-25 task request.
		if _, _, ok := jsonrpc.Lookup(m.Params(), "task"); ok {
			if m2, err := jsonrpc.Parse(jsonrpc.AppendRequest(nil, m.ID(), m.Method(), jsonrpc.DeleteMembers(m.Params(), "task"))); err == nil {
				m = m2
			}
		}
		transform = s.r.tasks.exposeUpstreamTasks(s, t.up, nil)
	} else if k == kindTools {
		if _, _, ok := jsonrpc.Lookup(m.Params(), "task"); ok {
			var err error
			if transform, err = s.r.tasks.taskCall(s, t.up); err != nil {
				replyError(out, m.ID(), protocol.CodeMethodNotFound, err.Error())
				return
			}
		}
	}
	places := toolURIs
	if k == kindPrompts {
		places = promptURIs
	}
	s.forwardWith(ctx, t.up, m, out, name, resultTransform(s.params.ProtocolVersion, cat.uriTransform(t.up, places, transform)), edits...)
}

// callURI routes resources/read by the resource URI (design §5).
func (s *Session) callURI(ctx context.Context, m jsonrpc.Message, out *Stream) {
	uri, ok := jsonrpc.LookupString(m.Params(), "uri")
	if !ok {
		replyError(out, m.ID(), protocol.CodeInvalidParams, m.Method()+" needs params.uri")
		return
	}
	cat := s.catalog()
	rt, ok := s.scope.resolveURI(cat, uri)
	if ok && !cat.inViewURI(s.params.Endpoint, uri) {
		s.r.inst.auditRefusal(s, rt.up, m.Method(), uri, outcomeRefused, reasonOutsideView, 0)
		ok = false // another endpoint's: unknown here
	}
	if ok && !s.scope.allowsURI(ctx, rt.up, rt.uri) {
		s.r.inst.auditDenied(s, rt.up, m.Method(), uri)
		ok = false
	}
	if !ok {
		s.scope.noResource(out, m.ID(), cat, uri)
		return
	}
	var edits []jsonrpc.ParamEdit
	if rt.uri != uri {
		edits = append(edits, jsonrpc.ParamEdit{Path: []string{"uri"}, With: jsonrpc.AppendQuote(nil, rt.uri)})
	}
	var transform func([]byte) []byte
	if rt.uri != uri || cat.rewritesURIs(rt.up) {
		// The contents name the resource as its upstream knows it; the client asked by its own name.
		transform = func(res []byte) []byte {
			return rewriteURIs(res, readURIs, func(u string) string {
				if u == rt.uri {
					return uri
				}
				return cat.exposeURI(rt.up, u)
			})
		}
	}
	s.forwardWith(ctx, rt.up, m, out, uri, transform, edits...)
}

// completion routes completion/completion by its reference: a prompt name or a resource template URI.
func (s *Session) completion(ctx context.Context, m jsonrpc.Message, out *Stream) {
	params := m.Params()
	typ, _ := jsonrpc.LookupString(params, "ref", "type")
	cat := s.catalog()
	switch typ {
	case "ref/prompt":
		name, _ := jsonrpc.LookupString(params, "ref", "name")
		t, ok := s.scope.named(ctx, cat, kindPrompts, name, m.Method())
		if !ok {
			replyError(out, m.ID(), protocol.CodeInvalidParams, fmt.Sprintf("unknown prompt %q", name))
			return
		}
		if d := t.withheld; d != nil {
			s.r.inst.refuse(s, out, m, t.up, name, protocol.CodeUnavailable, reasonWithheld, d.callError("prompt", name))
			return
		}
		var edits []jsonrpc.ParamEdit
		if t.name != name {
			edits = append(edits, jsonrpc.ParamEdit{Path: []string{"ref", "name"}, With: jsonrpc.AppendQuote(nil, t.name)})
		}
		s.forwardWith(ctx, t.up, m, out, "", nil, edits...)
	case "ref/resource":
		uri, _ := jsonrpc.LookupString(params, "ref", "uri")
		rt, ok := cat.resolveTemplate(uri)
		if !ok {
			rt, ok = cat.resolveURI(uri)
		}
		if !ok || !cat.inViewURI(s.params.Endpoint, uri) || !(s.scope.allows(ctx, rt.up, kindTemplates, rt.uri) || s.scope.allowsURI(ctx, rt.up, rt.uri)) {
			msg := cat.ambiguity(uri)
			if msg == "" {
				msg = fmt.Sprintf("no upstream offers resource template %q", uri)
			}
			replyError(out, m.ID(), protocol.CodeInvalidParams, msg)
			return
		}
		var edits []jsonrpc.ParamEdit
		if rt.uri != uri {
			edits = append(edits, jsonrpc.ParamEdit{Path: []string{"ref", "uri"}, With: jsonrpc.AppendQuote(nil, rt.uri)})
		}
		s.forwardWith(ctx, rt.up, m, out, "", nil, edits...)
	default:
		replyError(out, m.ID(), protocol.CodeInvalidParams, `completion/complete needs params.ref of type "ref/prompt" or "ref/resource"`)
	}
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
