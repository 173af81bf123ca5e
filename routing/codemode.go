package routing

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/switchboard-mcp/switchboard/routing/codemode"
	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
	"github.com/switchboard-mcp/switchboard/upstream/protocol"
)

// Code mode (issue 35). An endpoint (or /mcp) with a code mode is in search mode and lists two more meta-tools:
// describe_tools, which renders TypeScript declarations of tools, and run_script, which runs a script in the
// engine (routing/codemode). Every tool call a script makes is a tools/call request of the caller's, made up here
// and sent through the same Session's HandleRequest (codemodecall.go): the endpoint's view, the policy, presets,
// pins, per-user grants, limits, audit (each event carrying the run's id), tracing (the legs are children of the
// run's span), cancellation and progress hold as for a direct call, by the one path there is.

// runScriptTool and describeTool are code mode's meta-tools' names.
const (
	runScriptTool = codemode.MetaTool
	describeTool  = codemode.DescribeTool
)

// codeMeta reports whether a name is one of code mode's meta-tools.
func codeMeta(name string) bool { return name == runScriptTool || name == describeTool }

// codeHost serves code mode's meta-tools and the runs in flight.
type codeHost struct {
	engine *codemode.Engine // Options.Scripts, or an in-process engine made on first use

	mu   sync.Mutex
	runs map[runKey]*scriptRun // the runs in flight, by their client's request, for cancellation
	// mine counts each principal's runs in flight: one caller cannot take every sandbox worker and the queue.
	mine map[string]int
	// waits are the runs waiting for a 2026-07-28 client's answer, by park id (codemodeinput.go).
	waits map[string]*scriptWait
}

// maxRunsPerPrincipal bounds one caller's runs in flight (running or waiting for a worker), below the engine's
// workers and queue together, so that one caller's flood leaves room for the others.
const maxRunsPerPrincipal = 8

// scriptRun is one run_script in flight.
type scriptRun struct {
	id        string // random: audit events of its calls carry it
	s         *Session
	principal string
	cancel    context.CancelFunc
	// Under codeHost.mu: the client request the run answers now (a 2026-07-28 client's retry after a question
	// replaces it; none while the question waits, codemodeinput.go), where codeHost.runs has it, whether it is
	// counted out of codeHost.mine.
	at        runAttach
	key       runKey
	attached  bool
	forgotten bool
	round     int // the questions put to a 2026-07-28 client so far
}

// runKey is a run's client request: its session's call key (a legacy client's ids are unique in its session only).
type runKey struct {
	s *Session
	k callKey
}

// runAttach is the client request a run answers: its stream, its id, its progress token (nil for none).
type runAttach struct {
	out   *Stream
	id    []byte
	token []byte
}

// scriptRunKey marks the context of a script's calls with the run's id.
type scriptRunKey struct{}

// scriptRunOf is the id of the code-mode run a request belongs to ("" for none).
func scriptRunOf(ctx context.Context) string {
	id, _ := ctx.Value(scriptRunKey{}).(string)
	return id
}

// mode is the session's code mode now (a reload may change it), or nil.
func (h *codeHost) mode(s *Session) *codemode.Mode {
	sh := s.r.shape.Load()
	if sh == nil {
		return nil
	}
	if s.params.Endpoint == "" {
		if sh.Root == nil {
			return nil // code mode is search mode's, with two meta-tools more
		}
		return sh.RootCode
	}
	if e := sh.endpoint(s.params.Endpoint); e != nil && e.Search != nil {
		return e.Code
	}
	return nil
}

// defs are the definitions of the meta-tools a session's tools/list shows besides search mode's.
func (h *codeHost) defs(s *Session) [][]byte {
	if h.mode(s) == nil {
		return nil
	}
	run := []byte(runScriptToolDef)
	if s.r.tasks.enabled() {
		// A 2025-11-25 client asks for a task only of a tool that says it may be one.
		run = jsonrpc.SetMember(run, "execution", []byte(`{"taskSupport":"optional"}`))
	}
	return [][]byte{[]byte(describeToolDef), run}
}

// handle answers a tools/call of a code-mode meta-tool, reporting whether it did.
func (h *codeHost) handle(ctx context.Context, s *Session, m jsonrpc.Message, out *Stream) bool {
	mode := h.mode(s)
	if mode == nil {
		return false // no code mode here: not even a meta-tool's name is read
	}
	name, _ := jsonrpc.LookupString(m.Params(), "name")
	if name == toolSearch && scriptRunOf(ctx) == "" {
		h.search(ctx, s, m, out)
		return true
	}
	if !codeMeta(name) {
		return false // an upstream's tool of that name, in list mode
	}
	if run := scriptRunOf(ctx); run != "" {
		// The engine never offers the meta-tools to a script; this holds even if it did.
		s.r.inst.auditRefusalBy(run, s, nil, m.Method(), name, outcomeRefused, "a script called a meta-tool", protocol.CodeInvalidParams)
		replyError(out, m.ID(), protocol.CodeInvalidParams, fmt.Sprintf("a script cannot call %s: code mode does not nest", name))
		return true
	}
	if name == describeTool {
		h.describe(ctx, s, m, out)
		return true
	}
	// A long script becomes a task for a client that takes tasks, like any long tool: the task host sends the
	// call back through the session, marked as its own, and it runs here then.
	if s.r.tasks.hostTask(ctx, s, target{tasks: taskOptional}, m, out, runScriptTool) {
		return true
	}
	h.start(ctx, s, m, out, mode)
	return true
}

// scriptTools are the tools a session may call from a script: those of its endpoint's view its policy allows
// and no pin withholds, but the meta-tools. A run needs their names and whether each is read-only, read without
// decoding the definitions: a run over a catalog of hundreds of tools must not pay for their schemas.
func (h *codeHost) scriptTools(ctx context.Context, s *Session) []codemode.Tool {
	c := s.catalog()
	var out []codemode.Tool
	for _, raw := range c.items[kindTools] {
		name, _ := jsonrpc.LookupString(raw, "name")
		if name == "" || name == toolSearch || name == toolCall || codeMeta(name) || !s.r.embed.mayCall(ctx, s, c, name) {
			continue
		}
		st, e, ok := jsonrpc.Lookup(raw, "annotations", "readOnlyHint")
		out = append(out, codemode.Tool{Name: name, ReadOnly: ok && string(raw[st:e]) == "true"})
	}
	return out
}

// describe answers describe_tools: TypeScript declarations of the named tools the session may call; names it
// may not call are reported as unknown, like names nobody offers.
func (h *codeHost) describe(ctx context.Context, s *Session, m jsonrpc.Message, out *Stream) {
	var args struct {
		Names []string `json:"names"`
	}
	if raw := member(m.Params(), "arguments"); len(raw) > 0 {
		if err := json.Unmarshal(raw, &args); err != nil {
			replyError(out, m.ID(), protocol.CodeInvalidParams, "describe_tools: arguments must be {names: [string]}: "+err.Error())
			return
		}
	}
	if len(args.Names) == 0 || len(args.Names) > maxSearchLimit {
		replyError(out, m.ID(), protocol.CodeInvalidParams, fmt.Sprintf("describe_tools needs names: 1 to %d tool names, as search_tools gave them", maxSearchLimit))
		return
	}
	c := s.catalog()
	var tools []codemode.Tool
	var unknown []string
	for _, name := range args.Names {
		raw := c.toolItem(name)
		if raw == nil || codeMeta(name) || name == toolSearch || name == toolCall || !s.r.embed.mayCall(ctx, s, c, name) {
			unknown = append(unknown, name)
			continue
		}
		if t, err := codemode.ParseTool(raw); err == nil {
			tools = append(tools, t)
		}
	}
	text := codemode.Describe(tools)
	if len(unknown) > 0 {
		text += "\n// Unknown tools (search_tools finds names): " + strings.Join(unknown, ", ") + "\n"
	}
	b := append([]byte(nil), `{"content":[{"type":"text","text":`...)
	b = jsonrpc.AppendQuote(b, text)
	reply(out, m.ID(), append(b, `}]}`...))
}

// search answers search_tools in code mode: the best matches, as in search mode, given as the TypeScript
// declarations a script calls them by (their descriptions cut to the first sentence; describe_tools gives the
// rest). The model can write its script from the answer: no describe_tools turn between. The structured
// content is what search_tools' outputSchema promises (names, inputSchemas, scores), without the text again.
func (h *codeHost) search(ctx context.Context, s *Session, m jsonrpc.Message, out *Stream) {
	c, query, hits, ok := s.r.embed.rankFor(ctx, s, m, out, codeMeta)
	if !ok {
		return
	}
	tools := make([]codemode.Tool, 0, len(hits))
	names := make([]string, 0, len(hits))
	sc := append([]byte(nil), `{"tools":[`...)
	for _, hit := range hits {
		raw := c.toolItem(hit.Name)
		t, err := codemode.ParseTool(raw)
		if err != nil {
			continue
		}
		if len(names) > 0 {
			sc = append(sc, ',')
		}
		tools, names = append(tools, t), append(names, hit.Name)
		schema := member(raw, "inputSchema")
		if len(schema) == 0 || schema[0] != '{' {
			schema = []byte(`{"type":"object"}`) // the outputSchema promises an object
		}
		sc = append(sc, `{"name":`...)
		sc = jsonrpc.AppendQuote(sc, hit.Name)
		sc = append(append(sc, `,"inputSchema":`...), schema...)
		sc = append(sc, `,"score":`...)
		sc = strconv.AppendFloat(sc, float64(int64(hit.Score*1000+0.5))/1000, 'f', -1, 64)
		sc = append(sc, '}')
	}
	text := fmt.Sprintf("No tool matches %q. Try other words, or fewer of them.", query)
	if len(tools) > 0 {
		text = fmt.Sprintf("%d tool(s) for %q, best first, as run_script calls them (describe_tools gives their full descriptions):\n", len(tools), query) + codemode.Brief(tools)
	}
	b := append([]byte(nil), `{"content":[{"type":"text","text":`...)
	b = jsonrpc.AppendQuote(b, text)
	b = append(append(b, `}],"structuredContent":`...), sc...)
	reply(out, m.ID(), append(b, `]}}`...))
	if mode := s.r.embed.searchMode(s); mode != nil && s.r.embed.exposesFound(s, mode) && s.found.add(names) {
		s.notify(jsonrpc.AppendNotification(nil, kindTools.changedMethod(), nil))
	}
}

// start begins a run_script on a goroutine of the session: HandleRequest never waits for a run.
func (h *codeHost) start(ctx context.Context, s *Session, m jsonrpc.Message, out *Stream, mode *codemode.Mode) {
	var args struct {
		Code string `json:"code"`
	}
	if raw := member(m.Params(), "arguments"); len(raw) > 0 {
		if err := json.Unmarshal(raw, &args); err != nil {
			replyError(out, m.ID(), protocol.CodeInvalidParams, "run_script: arguments must be {code: string}: "+err.Error())
			return
		}
	}
	if strings.TrimSpace(args.Code) == "" {
		replyError(out, m.ID(), protocol.CodeInvalidParams, "run_script needs code: a JavaScript or TypeScript script calling await tools.NAME(args); describe_tools gives their types")
		return
	}
	var idb [8]byte
	rand.Read(idb[:])
	run := &scriptRun{id: hex.EncodeToString(idb[:]), s: s}
	// The run ends with the client's cancellation (cancel), or the session's end; it is not the request's
	// context's to end (HandleRequest detached it).
	rctx, cancel := context.WithCancel(context.WithValue(ctx, scriptRunKey{}, run.id))
	stop := context.AfterFunc(s.ctx, cancel)
	run.cancel = cancel
	key := runKey{s, s.callKey(out, m.ID())}
	run.principal = s.params.Principal
	run.at = runAttach{out: out, id: clone(m.ID())}
	if st, e, ok := jsonrpc.Lookup(m.Params(), "_meta", "progressToken"); ok {
		run.at.token = clone(m.Params()[st:e])
	}
	h.mu.Lock()
	if h.runs == nil {
		h.runs, h.mine = map[runKey]*scriptRun{}, map[string]int{}
	}
	if _, dup := h.runs[key]; dup {
		h.mu.Unlock()
		stop()
		cancel()
		replyError(out, m.ID(), protocol.CodeInvalidRequest, fmt.Sprintf("request id %s is already in use by a request in flight", m.ID()))
		return
	}
	if h.mine[run.principal] >= maxRunsPerPrincipal {
		h.mu.Unlock()
		stop()
		cancel()
		reply(out, m.ID(), scriptFailure(codemode.Result{}, fmt.Errorf("%d scripts of yours are running or waiting already, the most one caller may have; wait for one to end", maxRunsPerPrincipal)))
		return
	}
	h.runs[key] = run
	run.key, run.attached = key, true
	h.mine[run.principal]++
	h.mu.Unlock()
	started := s.goWork(func() {
		defer stop()
		defer cancel()
		defer h.forget(run)
		h.script(rctx, run, mode, args.Code)
	})
	if !started {
		h.forget(run)
		stop()
		cancel()
		replyError(out, m.ID(), protocol.CodeInvalidRequest, "the session has ended")
	}
}

// forget ends a run's bookkeeping: it answers no request any more, and no longer counts as its caller's.
func (h *codeHost) forget(run *scriptRun) {
	h.mu.Lock()
	h.detachLocked(run)
	if !run.forgotten {
		run.forgotten = true
		if h.mine[run.principal]--; h.mine[run.principal] <= 0 {
			delete(h.mine, run.principal)
		}
	}
	h.mu.Unlock()
}

// current is the request a run answers now; its out is nil while none is attached.
func (h *codeHost) current(run *scriptRun) runAttach {
	h.mu.Lock()
	defer h.mu.Unlock()
	return run.at
}

// detachLocked leaves a run without a request to answer; mu is held.
func (h *codeHost) detachLocked(run *scriptRun) {
	if run.attached && h.runs[run.key] == run {
		delete(h.runs, run.key)
	}
	run.attached, run.at = false, runAttach{}
}

// cancel ends the run a client's cancellation names, reporting whether there was one: its calls are cancelled
// with it, and its request gets no answer.
func (h *codeHost) cancel(s *Session, k callKey) bool {
	h.mu.Lock()
	run := h.runs[runKey{s, k}]
	delete(h.runs, runKey{s, k}) // still counted in mine until its goroutine forgets it
	if run != nil {
		run.attached = false // its request is still the one to abandon
	}
	h.mu.Unlock()
	if run == nil {
		return false
	}
	run.cancel()
	return true
}

var _ component = (*codeHost)(nil)

// run closes the engine when the router stops: its idle workers end; busy ones end with their runs, which the
// sessions' end cancels.
func (h *codeHost) run(ctx context.Context) {
	<-ctx.Done()
	h.mu.Lock()
	e := h.engine
	h.mu.Unlock()
	if e != nil {
		_ = e.Close()
	}
}

// scripts returns the engine, made in process on first use when the router was given none.
func (h *codeHost) scripts() *codemode.Engine {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.engine == nil {
		h.engine = codemode.NewEngine(codemode.Options{})
	}
	return h.engine
}

// script runs one script to its end and answers the client.
func (h *codeHost) script(ctx context.Context, run *scriptRun, mode *codemode.Mode, code string) {
	s := run.s
	began := time.Now()
	var span trace.Span
	if s.r.inst.tracing {
		ctx, span = s.r.inst.tracer.Start(ctx, "tools/call "+runScriptTool, trace.WithSpanKind(trace.SpanKindInternal),
			trace.WithAttributes(attribute.String("switchboard.script.run", run.id)))
	}
	res, err := h.scripts().Run(ctx, codemode.Run{
		Code:     code,
		Tools:    h.scriptTools(ctx, s),
		Caller:   &scriptCaller{h: h, s: s, run: run},
		Approver: &scriptConsent{h: h, s: s, run: run, writes: mode.Writes},
		Progress: func(n, total float64, msg string) { progressNote(h.current(run), n, total, msg) },
		// A name outside the set fails in the sandbox; the audit hears it as the refusal it is.
		Refused: func(name string) {
			s.r.inst.auditRefusalBy(run.id, s, nil, protocol.MethodToolsCall, name, outcomeRefused, reasonScriptName, protocol.CodeInvalidParams)
		},
		Limits: mode.Limits,
	})
	// The run is recorded and forgotten before it is answered: the client's next request may reuse the id.
	outcome, answer := outcomeOK, []byte(nil)
	switch {
	case ctx.Err() != nil: // cancelled by the client, or the session ended
		outcome = outcomeCancelled
	case err != nil:
		outcome, answer = outcomeError, scriptFailure(res, err)
	default:
		answer = scriptResult(res)
	}
	if span != nil {
		span.SetAttributes(attribute.String("switchboard.outcome", outcome), attribute.Int("switchboard.script.calls", res.Calls))
		if err != nil {
			span.SetStatus(codes.Error, err.Error())
		}
		span.End()
	}
	if s.r.opts.Audit != nil {
		s.r.opts.Audit(CallEvent{Session: s.logID(), Principal: s.params.Principal, Endpoint: s.params.Endpoint,
			Method: protocol.MethodToolsCall, Tool: runScriptTool, Outcome: outcome, Duration: time.Since(began), Script: run.id})
	}
	at := h.current(run)
	h.forget(run)
	switch {
	case at.out == nil: // the run waited for an answer that did not come: no request is left to answer
	case answer == nil:
		at.out.Abandon()
	default:
		reply(at.out, at.id, answer)
	}
}

// progressNote sends the script's progress to the client, when its request asked for progress.
func progressNote(at runAttach, n, total float64, msg string) {
	if at.token == nil || at.out == nil {
		return
	}
	out := at.out
	b := append([]byte(`{"progressToken":`), at.token...)
	b = append(b, `,"progress":`...)
	b = strconv.AppendFloat(b, n, 'g', -1, 64)
	if total > 0 {
		b = append(b, `,"total":`...)
		b = strconv.AppendFloat(b, total, 'g', -1, 64)
	}
	if msg != "" {
		b = append(b, `,"message":`...)
		b = jsonrpc.AppendQuote(b, msg)
	}
	out.Push(jsonrpc.AppendNotification(nil, "notifications/progress", append(b, '}')), ClassNotice)
}

// scriptResult is run_script's result: what the script printed, then what it returned, as text; both as
// structuredContent.
func scriptResult(res codemode.Result) []byte {
	text := res.Output
	if len(res.Value) > 0 {
		if text != "" && !strings.HasSuffix(text, "\n") {
			text += "\n"
		}
		text += "=> " + string(res.Value)
	}
	if text == "" {
		text = "(the script printed and returned nothing)"
	}
	b := append([]byte(nil), `{"content":[{"type":"text","text":`...)
	b = jsonrpc.AppendQuote(b, text)
	b = append(b, `}],"structuredContent":{"output":`...)
	b = jsonrpc.AppendQuote(b, res.Output)
	if len(res.Value) > 0 {
		b = append(b, `,"value":`...)
		b = append(b, res.Value...)
	}
	b = append(b, `,"calls":`...)
	b = strconv.AppendInt(b, int64(res.Calls), 10)
	if res.Truncated > 0 {
		b = append(b, `,"truncated":`...)
		b = strconv.AppendInt(b, int64(res.Truncated), 10)
	}
	return append(b, `}}`...)
}

// scriptFailure is run_script's result for a run that failed: a tool error the model can read and act on, with
// what the script printed before it failed.
func scriptFailure(res codemode.Result, err error) []byte {
	text := err.Error()
	if res.Output != "" {
		text += "\n\nThe script printed before it failed:\n" + res.Output
	}
	b := append([]byte(nil), `{"content":[{"type":"text","text":`...)
	b = jsonrpc.AppendQuote(b, text)
	return append(b, `}],"isError":true}`...)
}

// Definitions of code mode's meta-tools.
const (
	describeToolDef  = `{"name":"describe_tools","title":"Describe tools","description":"TypeScript declarations of tools, by name, with their full descriptions (search_tools gives them with the first sentence).","inputSchema":{"type":"object","properties":{"names":{"type":"array","items":{"type":"string"},"minItems":1,"maxItems":50}},"required":["names"]},"annotations":{"readOnlyHint":true,"openWorldHint":false}}`
	runScriptToolDef = `{"name":"run_script","title":"Run a script","description":"Runs a JavaScript or TypeScript script that calls tools: one run instead of many tool calls, and only what it prints and returns comes back. The script is the body of an async function: await tools.NAME(args) calls a tool as search_tools declares it (a tool error throws); console.log prints; return gives the value; progress(n, total, message) reports progress. No network, files or clock. Tools that are not read-only ask the user first.","inputSchema":{"type":"object","properties":{"code":{"type":"string"}},"required":["code"]},"outputSchema":{"type":"object","properties":{"output":{"type":"string"},"value":{},"calls":{"type":"integer"},"truncated":{"type":"integer"}},"required":["output","calls"]},"annotations":{"readOnlyHint":false,"openWorldHint":true}}`
)
