package routing

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
	"github.com/switchboard-mcp/switchboard/upstream/protocol"
)

// forward is one client request on its way to an upstream: what the pipeline's stages have decided so far.
//
// The stages are forward's methods, run in one fixed order (forwardNamed, forwardURI, forwardCompletion), each
// returning false when it answered the request itself (a refusal, a task, a stand-in), which ends the pipeline.
// No stage rebuilds the request: each reads it as the client sent it and records what it changes, as an edit or a
// transform of the result, and send, the last stage, applies every edit in the one splice that makes the upstream
// message.
// Stages are methods called directly, not a list of funcs, so that a forward stays on the stack.
type forward struct {
	s    *Session
	m    jsonrpc.Message // the client's request, as it came
	out  *Stream
	kind listKind // what a tools/call or prompts/get names
	// name is what the request targets, as the client names it (a tool's or a prompt's name, a URI): the audit's
	// and the call's name; "" for requests that name nothing.
	name  string
	t     target // the catalog's entry for name (tools/call, prompts/get)
	up    *upstreamServer
	edits editList // the params edits decided so far
	// transform rewrites a successful result on its way back (see call.transform); stages wrap it.
	transform func([]byte) []byte
}

// newForward starts the pipeline for m.
func newForward(s *Session, m jsonrpc.Message, out *Stream) forward {
	return forward{s: s, m: m, out: out}
}

// edit records a params edit for send's splice.
func (f *forward) edit(e jsonrpc.ParamEdit) { f.edits.add(e) }

// editList holds a forward's edits in place while they fit, which the common call's (the name, a deleted task, a
// few presets, _meta) do. It holds no pointer into itself, so that a forward stays on the stack.
type editList struct {
	inline [8]jsonrpc.ParamEdit
	n      int
	spill  []jsonrpc.ParamEdit // every edit, once they outgrew inline
}

func (l *editList) add(e jsonrpc.ParamEdit) {
	switch {
	case l.spill != nil:
		l.spill = append(l.spill, e)
	case l.n < len(l.inline):
		l.inline[l.n] = e
		l.n++
	default:
		l.spill = append(append(make([]jsonrpc.ParamEdit, 0, 2*len(l.inline)), l.inline[:]...), e)
	}
}

// list returns the edits, in the order they were added.
func (l *editList) list() []jsonrpc.ParamEdit {
	if l.spill != nil {
		return l.spill
	}
	return l.inline[:l.n]
}

// refuse answers the request with an error the gateway decided, and writes its audit event: every refusal a stage
// makes is audited, with its reason, on every path (issue 32's invariant).
func (f *forward) refuse(code int, reason, msg string) bool {
	f.s.r.inst.refuse(f.s, f.out, f.m, f.up, f.name, code, reason, msg)
	return false
}

// forwardNamed is the pipeline of a tools/call or a prompts/get: the upstream's tool or prompt that the exposed
// name stands for, seen through the endpoint's view and the principal's policy, as pins, grants, tasks and
// presets have it.
func forwardNamed(ctx context.Context, s *Session, m jsonrpc.Message, out *Stream, k listKind) {
	f := newForward(s, m, out)
	f.kind = k
	if f.resolveName() && f.inView(ctx) && f.pinned() && f.standIn(ctx) && f.hostedTask(ctx) && f.upstreamName() &&
		f.presets() && f.taskMember() && f.results() {
		f.write(ctx)
	}
}

// what names the kind of item a tools/call or prompts/get targets, for messages.
func (f *forward) what() string {
	if f.kind == kindPrompts {
		return "prompt"
	}
	return "tool"
}

// resolveName reads the exposed name the request calls.
func (f *forward) resolveName() bool {
	name, ok := requestedName(f.s.catalog(), f.kind, f.m.Params())
	if !ok {
		return f.refuse(protocol.CodeInvalidParams, reasonMalformed, f.m.Method()+" needs params.name, a string")
	}
	f.name = name
	return true
}

// inView finds the name's target in the session's catalog, as the endpoint's view and the principal's policy let
// it see it: what it may not use does not exist for it.
func (f *forward) inView(ctx context.Context) bool {
	s, cat := f.s, f.s.catalog()
	t, ok := s.scope.named(ctx, cat, f.kind, f.name, f.m.Method())
	if ok {
		f.t, f.up = t, t.up
		return true
	}
	if f.kind == kindTools {
		// A client retrying the stand-in it was asked to connect through, once the upstream's own list replaced it.
		if up := s.r.grants.formerStandIn(f.name); up != nil && s.scope.allowsUpstream(ctx, up) {
			s.r.grants.callStandIn(ctx, s, up, f.m, f.out)
			return false
		}
	}
	msg := fmt.Sprintf("unknown %s %q: list %ss to see what is available", f.what(), f.name, f.what())
	if _, known := cat.targets(f.kind)[f.name]; known {
		replyError(f.out, f.m.ID(), protocol.CodeInvalidParams, msg) // named audited why: outside the view, or denied
		return false
	}
	return f.refuse(protocol.CodeInvalidParams, reasonUnknown, msg)
}

// pinned refuses a target whose definition drifted from its pin while pinning withholds it.
func (f *forward) pinned() bool {
	if d := f.t.withheld; d != nil {
		return f.refuse(protocol.CodeUnavailable, reasonWithheld, d.callError(f.what(), f.name))
	}
	return true
}

// standIn answers a call of a per-user upstream's stand-in tool: the person is asked to connect.
func (f *forward) standIn(ctx context.Context) bool {
	if f.kind == kindTools && f.t.name == standInTool && f.up.standingIn.Load() {
		f.s.r.grants.callStandIn(ctx, f.s, f.up, f.m, f.out)
		return false
	}
	return true
}

// hostedTask hands a tool the gateway runs as a task of its own to the task host. The task's call comes back
// through the pipeline (taskRunning), where the name and the presets are applied, once.
func (f *forward) hostedTask(ctx context.Context) bool {
	return f.kind != kindTools || !f.s.r.tasks.hostTask(ctx, f.s, f.t, f.m, f.out, f.name)
}

// upstreamName renames the call to the upstream's own name.
func (f *forward) upstreamName() bool {
	if f.t.name != f.name {
		q := f.t.quoted
		if q == nil {
			q = jsonrpc.AppendQuote(nil, f.t.name)
		}
		f.edit(jsonrpc.ParamEdit{Path: namePath, With: q})
	}
	return true
}

// presets sets the override's preset arguments, which the client may not send itself.
func (f *forward) presets() bool {
	ps := f.t.presets
	if len(ps) == 0 {
		return true
	}
	params := f.m.Params()
	as, ae, st := jsonrpc.LookupStatus(params, "arguments")
	if st == jsonrpc.Found && params[as] == '{' {
		for _, p := range ps {
			if _, _, st := jsonrpc.LookupStatus(params[as:ae], p.name); st != jsonrpc.Absent {
				return f.refuse(protocol.CodeInvalidParams, reasonPreset,
					fmt.Sprintf("argument %q of tool %q is set by the gateway and cannot be sent: remove it from the call", p.name, f.name))
			}
		}
		// Inserted first, the last name first: the order the arguments always had.
		for i := len(ps) - 1; i >= 0; i-- {
			f.edit(jsonrpc.ParamEdit{Path: ps[i].path, With: ps[i].value, Insert: true})
		}
		return true
	}
	if st == jsonrpc.Ambiguous {
		return f.refuse(protocol.CodeInvalidParams, reasonPreset, "params.arguments appears more than once: send it once")
	}
	// No arguments object (absent, null): the presets are the arguments.
	f.edit(jsonrpc.ParamEdit{Path: argumentsPath, With: presetObject(ps), Insert: true})
	return true
}

// taskMember settles a tools/call's task request for the upstream's era.
func (f *forward) taskMember() bool {
	if f.kind != kindTools {
		return true
	}
	s := f.s
	_, _, asked := jsonrpc.Lookup(f.m.Params(), "task")
	if s.era.modern() {
		// "Servers receiving requests with this parameter under the extension MUST ignore it": a legacy
		// upstream would take it for a 2025-11-25 task request.
		if asked {
			f.edit(jsonrpc.ParamEdit{Path: taskPath, Delete: true})
		}
		f.transform = s.r.tasks.exposeUpstreamTasks(s, f.up, nil)
		return true
	}
	if asked {
		transform, err := s.r.tasks.taskCall(s, f.up)
		if err != nil {
			replyError(f.out, f.m.ID(), protocol.CodeMethodNotFound, err.Error())
			return false
		}
		f.transform = transform
	}
	return true
}

// results translates the answer back: the URIs it names, and its shape for older protocol versions.
func (f *forward) results() bool {
	places := toolURIs
	if f.kind == kindPrompts {
		places = promptURIs
	}
	f.transform = resultTransform(f.s.params.ProtocolVersion, f.s.catalog().uriTransform(f.up, places, f.transform))
	return true
}

// forwardURI is the pipeline of a resources/read: the resource the URI names, in the endpoint's view and the
// principal's policy, read by its upstream's own URI and answered in the client's.
func forwardURI(ctx context.Context, s *Session, m jsonrpc.Message, out *Stream) {
	f := newForward(s, m, out)
	if f.resolveURI(ctx) {
		f.write(ctx)
	}
}

// resolveURI routes resources/read by the resource URI (design §5).
func (f *forward) resolveURI(ctx context.Context) bool {
	s, m := f.s, f.m
	uri, ok := jsonrpc.LookupString(m.Params(), "uri")
	if !ok {
		return f.refuse(protocol.CodeInvalidParams, reasonMalformed, m.Method()+" needs params.uri, a string")
	}
	f.name = uri
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
		s.scope.noResource(f.out, m.ID(), cat, uri)
		return false
	}
	f.up = rt.up
	if rt.uri != uri {
		f.edit(jsonrpc.ParamEdit{Path: uriPath, With: jsonrpc.AppendQuote(nil, rt.uri)})
	}
	if rt.uri != uri || cat.rewritesURIs(rt.up) {
		// The contents name the resource as its upstream knows it; the client asked by its own name.
		f.transform = func(res []byte) []byte {
			return rewriteURIs(res, readURIs, func(u string) string {
				if u == rt.uri {
					return uri
				}
				return cat.exposeURI(rt.up, u)
			})
		}
	}
	return true
}

// forwardCompletion is the pipeline of a completion/complete: routed by its reference, a prompt name or a
// resource template URI, in the endpoint's view and the principal's policy.
func forwardCompletion(ctx context.Context, s *Session, m jsonrpc.Message, out *Stream) {
	f := newForward(s, m, out)
	if f.resolveRef(ctx) {
		f.write(ctx)
	}
}

// resolveRef finds the upstream a completion's reference belongs to and renames the reference to its own.
func (f *forward) resolveRef(ctx context.Context) bool {
	s, m := f.s, f.m
	params := m.Params()
	typ, _ := jsonrpc.LookupString(params, "ref", "type")
	cat := s.catalog()
	switch typ {
	case "ref/prompt":
		name, _ := jsonrpc.LookupString(params, "ref", "name")
		f.name = name
		t, ok := s.scope.named(ctx, cat, kindPrompts, name, m.Method())
		if !ok {
			replyError(f.out, m.ID(), protocol.CodeInvalidParams, fmt.Sprintf("unknown prompt %q", name))
			return false
		}
		f.up = t.up
		if d := t.withheld; d != nil {
			return f.refuse(protocol.CodeUnavailable, reasonWithheld, d.callError("prompt", name))
		}
		if t.name != name {
			f.edit(jsonrpc.ParamEdit{Path: refNamePath, With: jsonrpc.AppendQuote(nil, t.name)})
		}
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
			replyError(f.out, m.ID(), protocol.CodeInvalidParams, msg)
			return false
		}
		f.up = rt.up
		if rt.uri != uri {
			f.edit(jsonrpc.ParamEdit{Path: refURIPath, With: jsonrpc.AppendQuote(nil, rt.uri)})
		}
	default:
		return f.refuse(protocol.CodeInvalidParams, reasonMalformed, `completion/complete needs params.ref of type "ref/prompt" or "ref/resource"`)
	}
	return true
}

// Paths of the members the pipeline edits, shared by every request, never written.
var (
	namePath      = []string{"name"}
	argumentsPath = []string{"arguments"}
	taskPath      = []string{"task"}
	uriPath       = []string{"uri"}
	refNamePath   = []string{"ref", "name"}
	refURIPath    = []string{"ref", "uri"}
	metaPath      = []string{"_meta"}
	// the members of a retry that answered the gateway's own request to connect
	inputResponsesPath = []string{"inputResponses"}
	requestStatePath   = []string{"requestState"}
	tokenPath          = []string{"_meta", "progressToken"}
)

// presetArg is one preset argument of an override, compact, with its path in a tools/call's params.
type presetArg struct {
	name  string
	path  []string // "arguments", name
	value []byte
}

// presetObject is the arguments object of a call that sent none: the presets alone, in the order a call's
// arguments get them.
func presetObject(ps []presetArg) []byte {
	b := []byte{'{'}
	for i := len(ps) - 1; i >= 0; i-- {
		b = append(jsonrpc.AppendQuote(b, ps[i].name), ':')
		b = append(b, ps[i].value...)
		if i > 0 {
			b = append(b, ',')
		}
	}
	return append(b, '}')
}

// write is the pipeline's last stage: the upstream is open to calls and the person has a grant for it, then send.
func (f *forward) write(ctx context.Context) {
	if f.available() && f.granted(ctx) {
		f.send(ctx)
	}
}

// available refuses a call of an upstream drained for maintenance.
func (f *forward) available() bool {
	if f.up.drained.Load() {
		replyError(f.out, f.m.ID(), protocol.CodeInternalError, fmt.Sprintf("upstream %q is drained for maintenance; retry later", f.up.cfg.Name))
		return false
	}
	return true
}

// granted holds a call of a per-user upstream to the person's grant: the client is asked to connect without one.
func (f *forward) granted(ctx context.Context) bool {
	if !f.up.perUser() {
		return true
	}
	retried, ok := f.s.r.grants.checkGrant(ctx, f.s, f.up, f.m, f.out)
	if retried {
		// The retry answered the gateway's own request to connect: the upstream never asked for input.
		f.edit(jsonrpc.ParamEdit{Path: inputResponsesPath, Delete: true})
		f.edit(jsonrpc.ParamEdit{Path: requestStatePath, Delete: true})
	}
	return ok
}

// credentialRefused answers a request whose upstream session could not open because a credential source refused
// this person (an identity provider that will not issue an ID-JAG for them, say): retrying will not help, so the
// answer says what to do, as a tool error a model can pass on; the refusal is audited and shown in the
// upstream's status.
func (f *forward) credentialRefused(refused publicReasoner) {
	up := f.up
	up.noteRefusal(f.s.params.Principal, refused.PublicReason())
	text := fmt.Sprintf("upstream %q refused access for you: %s. Ask an administrator for access; retrying will not help until then.", up.cfg.Name, refused.PublicReason())
	f.s.r.inst.auditRefusal(f.s, up, f.m.Method(), f.name, outcomeRefused, reasonCredential, 0)
	f.s.r.grants.replyNotConnected(f.s, f.out, f.m, up.cfg.Name, text)
}

// linkReady waits, within wait, for l to be connected and brought up to the client's state (its log level),
// answering the request itself when l cannot connect.
func (f *forward) linkReady(l *link, wait *lazyTimeout) bool {
	if !l.isReady() {
		if _, err := l.ready(wait.ctx()); err != nil {
			var refused publicReasoner
			if errors.As(err, &refused) {
				f.credentialRefused(refused)
				return false
			}
			replyError(f.out, f.m.ID(), protocol.CodeInternalError, err.Error()+"; retry later")
			return false
		}
	}
	select { // a fresh upstream session is first brought up to the client's state (log level)
	case <-l.prepared():
	default:
		select {
		case <-l.prepared():
		case <-wait.ctx().Done():
		}
	}
	return true
}

// send makes the upstream message (the upstream's era, the progress token and the trace, and the one splice that
// applies every edit the stages recorded to the client's message) and writes it on the client's link.
func (f *forward) send(ctx context.Context) {
	s, up, m, out := f.s, f.up, f.m, f.out
	id := m.ID()
	l, err := s.links.linkFor(s, up)
	if err != nil {
		replyError(out, id, protocol.CodeInternalError, err.Error())
		return
	}
	// The request's _meta speaks the upstream's era (modern.go): worked out here, applied in the one splice below.
	var me metaEdit
	if s.era.modern() || l.modern() {
		me = s.upstreamMeta(l, m.Params())
	} else if st, e, ok := jsonrpc.Lookup(m.Params(), "_meta"); ok {
		me = metaEdit{meta: m.Params()[st:e], present: true}
	}
	// Waiting for the link is bounded by the upstream's timeout. Most calls find it ready and prepared: the
	// bounded context, a timer and its channel, is made only for a wait.
	wait := lazyTimeout{parent: s.ctx, d: up.timeout()}
	defer wait.stop()
	if !f.linkReady(l, &wait) {
		return
	}
	c := &call{
		link: l, upID: l.pending.mint(), method: m.Method(), session: s,
		out: out, started: time.Now(), name: f.name, transform: f.transform,
	}
	if s.r.code.mode(s) != nil {
		c.script = scriptRunOf(ctx) // a script's call (codemode.go): read only where scripts run
	}
	// The ids and the token live in the call's own buffers while they fit, which most do: no allocation each.
	c.clientID = append(c.inline.client[:0], id...)
	upID := jsonrpc.AppendInt(c.inline.up[:0], c.upID)
	if params := m.Params(); params != nil {
		switch st, e, status := jsonrpc.LookupStatus(params, "_meta", "progressToken"); status {
		case jsonrpc.Found:
			c.token = append(c.inline.token[:0], params[st:e]...)
		case jsonrpc.Ambiguous:
			// A duplicated or case-variant token would reach the upstream unrewritten, in the gateway's own token
			// space, where it could name another client's call.
			replyError(out, id, protocol.CodeInvalidParams, "params._meta.progressToken appears more than once (or in two spellings); send it once")
			return
		}
	}
	s.mu.Lock()
	c.key = s.callKey(out, c.clientID)
	if _, dup := s.calls[c.key]; dup {
		s.mu.Unlock()
		replyError(out, id, protocol.CodeInvalidRequest, fmt.Sprintf("request id %s is already in use by a request in flight", id))
		return
	}
	s.calls[c.key] = c
	s.mu.Unlock()
	ctx, traceparent := s.r.inst.startLeg(ctx, c)
	// The write ends with the call: its timeout, the client's cancel or the connection's loss stop it (endLeg), so
	// it needs no timer of its own.
	ctx, c.stopWrite = context.WithCancel(ctx)
	defer c.stopWrite()
	// The timer is set before the call is published in the pending table, so every reader of c.timer (they all
	// take the call from the table first) sees it.
	c.timer = time.AfterFunc(up.timeout(), c.expire)
	if traceparent != "" {
		// In params._meta too, where every upstream (stdio ones too) can continue the trace: the 2026-07-28
		// schema reserves the key for exactly this.
		me = me.set("traceparent", jsonrpc.AppendQuote(nil, traceparent))
	}
	// One splice builds the upstream message: the id, every stage's edits, and _meta whole when it changed (its
	// progress token in it; inserted when params had none; deleted when the upstream's era leaves it empty), else
	// the token alone. Only a _meta for a request without params rebuilds the message first.
	switch {
	case me.changed:
		if c.token != nil {
			me = me.set("progressToken", upID)
		}
		switch {
		case me.meta == nil:
			f.edit(jsonrpc.ParamEdit{Path: metaPath, Delete: true})
		case m.Params() != nil:
			f.edit(jsonrpc.ParamEdit{Path: metaPath, With: me.meta, Insert: true})
		default:
			if rm, err := jsonrpc.Parse(jsonrpc.AppendRequest(nil, m.ID(), m.Method(), me.params(m.Params()))); err == nil {
				m = rm
			}
		}
	case c.token != nil:
		f.edit(jsonrpc.ParamEdit{Path: tokenPath, With: upID})
	}
	_, msg := m.AppendMessage(make([]byte, 0, len(m.Raw())+len(me.meta)+32), upID, f.edits.list()...)
	// The Mcp-Param headers mirror the arguments as the upstream gets them: presets included.
	mirrored := c.paramValues(l, msg.Params())
	if lc, ok := s.era.(*legacyClient); ok && l.modern() && multiRound(c.method) {
		c.bridge = &bridged{client: lc, req: msg} // kept to retry it with the client's answers if the upstream asks for input
	}
	for tries := 0; !l.add(c.upID, c); tries++ {
		// The connection went away since ready (a restart, a crash): wait for the next one, a few times at most.
		if _, err := l.ready(wait.ctx()); err != nil || tries == 3 {
			s.r.inst.endLeg(c, outcomeFailed)
			s.removeCall(c)
			replyError(out, id, protocol.CodeInternalError, fmt.Sprintf("upstream %q disconnected; retry the request", up.cfg.Name))
			return
		}
	}
	if err := l.writeRequest(ctx, msg, mirrored); err != nil {
		if l.pending.takeIf(c) {
			c.failed(outcomeFailed, protocol.CodeInternalError, fmt.Sprintf("upstream %q: sending %s failed: %v", up.cfg.Name, c.method, err))
		}
	}
}
