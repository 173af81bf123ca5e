package routing

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/switchboard-mcp/switchboard/routing/codemode"
	"github.com/switchboard-mcp/switchboard/routing/pin"
	"github.com/switchboard-mcp/switchboard/routing/state"
	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
	"github.com/switchboard-mcp/switchboard/upstream/protocol"
)

// codeRouter is TestFeaturesAgreeOnEveryPath's router with endpoint e in code mode (writes allowed, so that the
// table is about routing, not consent).
func codeRouter(t *testing.T, audit *callEvents) *testRouter {
	t.Helper()
	var all []json.RawMessage
	if err := json.Unmarshal([]byte(combinationTools), &all); err != nil {
		t.Fatal(err)
	}
	pins := map[string]string{}
	for _, raw := range all[:3] { // wipe is not pinned: new in a pinned upstream, it is withheld
		name, _ := jsonrpc.LookupString(raw, "name")
		pins[name] = mustHash(t, pin.Tool, string(raw))
	}
	return startRouter(t, Options{
		Audit:   audit.add,
		Pinning: &Pinning{Lock: pin.NewLock(map[string]pin.Locked{"gh": {Tools: pins}}), Block: true},
		Shape: Shape{
			Overrides: map[OverrideKey]Override{
				{Upstream: "gh", Kind: "tool", Name: "create_issue"}: {Arguments: map[string]json.RawMessage{"owner": json.RawMessage(`"acme"`)}},
			},
			Endpoints: []Endpoint{{Name: "e", Include: []string{"gh__*"}, Search: &SearchMode{},
				Code: &codemode.Mode{Writes: codemode.WritesAllow}}},
		},
	},
		UpstreamConfig{Name: "gh", Prefix: "gh__", Mode: Shared, Transport: echoingUpstream(combinationTools), Kind: "stdio"},
		UpstreamConfig{Name: "web", Prefix: "web__", Mode: Shared, Transport: echoingUpstream(`[{"name":"fetch","inputSchema":{"type":"object"}}]`), Kind: "stdio"})
}

// runScript sends run_script with code on s and returns its answer.
func runScript(t *testing.T, r *testRouter, s *Session, code, meta string) jsonrpc.Message {
	t.Helper()
	return roundTrip(t, r, s, fmt.Sprintf(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"run_script","arguments":{"code":%s}%s}}`,
		jsonrpc.AppendQuote(nil, code), meta))
}

// scriptValue is the value a run_script answer returned, or the test fails.
func scriptValue(t *testing.T, m jsonrpc.Message) map[string]any {
	t.Helper()
	var res struct {
		IsError           bool `json:"isError"`
		StructuredContent struct {
			Value map[string]any `json:"value"`
		} `json:"structuredContent"`
	}
	if err := json.Unmarshal(m.Result(), &res); err != nil || res.IsError || m.Error() != nil {
		t.Fatalf("run_script answered %s", m.Raw())
	}
	return res.StructuredContent.Value
}

// TestScriptCallsAgreeWithDirectCalls (issue 35, item 3): a call from a script is the caller's own tools/call. On
// each session kind a direct call takes, the endpoint's view, the policy and a pin leave the tool out of the
// script's tools (calling it throws, nothing reaches an upstream, and the audit has the refusal with the run's
// id); a preset the
// script sends is refused and audited once, carrying the run's id; a preset is applied and a plain call forwarded,
// their audit events carrying the run's id too, as does the run's own event.
func TestScriptCallsAgreeWithDirectCalls(t *testing.T) {
	var audit callEvents
	r := codeRouter(t, &audit)
	deny := func(up, kind, name string) bool { return name != "delete_repo" }
	paths := []struct {
		name string
		s    *Session
		meta string
	}{
		{"2025-11-25", r.NewSession(SessionParams{ProtocolVersion: protocol.V20251125, Endpoint: "e", Allow: deny, Principal: "alice"}), ""},
		{"2025-03-26", r.NewSession(SessionParams{ProtocolVersion: "2025-03-26", Endpoint: "e", Allow: deny, Principal: "alice"}), ""},
		{"2026-07-28", r.PooledSession(SessionParams{Principal: "alice", Endpoint: "e", Allow: deny, Capabilities: json.RawMessage(`{}`)}),
			`,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`},
	}
	cases := []struct {
		feature, tool, args string
		thrown              string // a fragment of what the script caught; "" for a call that succeeds
		reason              string // the audit event's reason for a refusal; "" for none
		upstreamSees        string // for a call that succeeds: a fragment of the params the upstream received
	}{
		{"endpoint view", "web__fetch", `{}`, "has no member", reasonScriptName, ""},
		{"policy", "gh__delete_repo", `{}`, "has no member", reasonScriptName, ""},
		{"pin", "gh__wipe", `{}`, "has no member", reasonScriptName, ""},
		{"preset sent", "gh__create_issue", `{"owner":"evil"}`, "owner", reasonPreset, ""},
		{"preset applied", "gh__create_issue", `{"title":"t"}`, "", "", `\"owner\":\"acme\"`},
		{"plain", "gh__search", `{"q":"x"}`, "", "", `\"q\":\"x\"`},
	}
	for _, p := range paths {
		for _, c := range cases {
			t.Run(p.name+"/"+c.feature, func(t *testing.T) {
				audit.reset()
				code := fmt.Sprintf(`try { const r = await tools[%q](%s); return {ok: JSON.stringify(r)} } catch (e) { return {thrown: String(e.message)} }`, c.tool, c.args)
				v := scriptValue(t, runScript(t, r, p.s, code, p.meta))
				if c.thrown != "" {
					if got, _ := v["thrown"].(string); !strings.Contains(got, c.thrown) {
						t.Fatalf("the script got %v, want a thrown error with %q", v, c.thrown)
					}
				} else if got, _ := v["ok"].(string); !strings.Contains(got, c.upstreamSees) {
					t.Fatalf("the script got %v, want the upstream's result with %s", v, c.upstreamSees)
				}
				var run string
				var refusals, forwarded []CallEvent
				for _, e := range audit.all() {
					switch {
					case e.Tool == runScriptTool:
						run = e.Script
					case e.Outcome == outcomeRefused || e.Outcome == outcomeDenied:
						refusals = append(refusals, e)
					default:
						forwarded = append(forwarded, e)
					}
				}
				if run == "" {
					t.Fatalf("no audit event of the run with its id: %+v", audit.all())
				}
				for _, e := range append(refusals, forwarded...) {
					if e.Script != run || e.Principal != "alice" || e.Endpoint != "e" {
						t.Errorf("event %+v: want script %q, principal alice, endpoint e", e, run)
					}
				}
				switch {
				case c.reason != "" && (len(refusals) != 1 || refusals[0].Reason != c.reason):
					t.Errorf("refusals audited %+v, want one with reason %q", refusals, c.reason)
				case c.reason == "" && len(refusals) != 0:
					t.Errorf("refusals audited %+v, want none", refusals)
				}
				if want := c.upstreamSees != ""; (len(forwarded) == 1) != want || (!want && len(forwarded) != 0) {
					t.Errorf("forwarded calls audited %+v, want %v", forwarded, want)
				}
			})
		}
	}
}

// TestScriptCallerIsTheCaller: were the engine fooled into calling a name outside the script's tools, the call is
// still the caller's tools/call, refused by the same rules and audited with the run's id; a meta-tool is refused.
func TestScriptCallerIsTheCaller(t *testing.T) {
	var audit callEvents
	r := codeRouter(t, &audit)
	deny := func(up, kind, name string) bool { return name != "delete_repo" }
	s := r.NewSession(SessionParams{ProtocolVersion: protocol.V20251125, Endpoint: "e", Allow: deny, Principal: "alice"})
	c := &scriptCaller{h: &r.code, s: s, run: &scriptRun{id: "feedfeed", s: s, at: runAttach{out: newStream(-1, 16)}}}
	ctx := context.WithValue(r.ctx, scriptRunKey{}, "feedfeed")
	for _, tc := range []struct{ name, reason, outcome string }{
		{"gh__delete_repo", "policy", outcomeDenied},
		{"web__fetch", reasonOutsideView, outcomeRefused},
		{"run_script", "a script called a meta-tool", outcomeRefused},
		{"describe_tools", "a script called a meta-tool", outcomeRefused},
	} {
		audit.reset()
		if _, err := c.Call(ctx, tc.name, json.RawMessage(`{}`)); err == nil {
			t.Errorf("%s: called", tc.name)
		}
		evs := audit.all()
		if len(evs) != 1 || evs[0].Reason != tc.reason || evs[0].Outcome != tc.outcome || evs[0].Script != "feedfeed" {
			t.Errorf("%s: audited %+v, want one %s (%s) with the run's id", tc.name, evs, tc.outcome, tc.reason)
		}
	}
	if _, err := c.Call(ctx, "gh__search", json.RawMessage(`{}`)); err != nil {
		t.Errorf("gh__search: %v", err)
	}
}

// TestCodeModeLists: an endpoint in code mode lists search mode's meta-tools and its own two; describe_tools
// declares only what the caller may call.
func TestCodeModeLists(t *testing.T) {
	var audit callEvents
	r := codeRouter(t, &audit)
	deny := func(up, kind, name string) bool { return name != "delete_repo" }
	s := r.NewSession(SessionParams{ProtocolVersion: protocol.V20251125, Endpoint: "e", Allow: deny, Principal: "alice"})
	var names []string
	for _, raw := range listAll(t, r, s) {
		n, _ := jsonrpc.LookupString(raw, "name")
		names = append(names, n)
	}
	if got := strings.Join(names, ","); got != "search_tools,call_tool,describe_tools,run_script" {
		t.Errorf("tools/list: %s", got)
	}
	m := roundTrip(t, r, s, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"describe_tools","arguments":{"names":["gh__search","gh__delete_repo","web__fetch"]}}}`)
	var res struct {
		Content []struct{ Text string } `json:"content"`
	}
	_ = json.Unmarshal(m.Result(), &res)
	text := ""
	if len(res.Content) == 1 {
		text = res.Content[0].Text
	}
	if !strings.Contains(text, "gh__search(") || strings.Contains(text, "gh__delete_repo(") || strings.Contains(text, "web__fetch(") ||
		!strings.Contains(text, "Unknown tools (search_tools finds names): gh__delete_repo, web__fetch") {
		t.Errorf("describe_tools: %s", m.Raw())
	}
}

// TestCodeModeSearch: search_tools in code mode answers with the TypeScript declarations of its hits (what a
// script needs: no describe_tools turn between), only of tools the caller may call, as the endpoint exposes them
// (the preset owner is not an argument), and with the structured
// content search_tools' outputSchema promises.
func TestCodeModeSearch(t *testing.T) {
	r := codeRouter(t, &callEvents{})
	deny := func(up, kind, name string) bool { return name != "delete_repo" }
	s := r.NewSession(SessionParams{ProtocolVersion: protocol.V20251125, Endpoint: "e", Allow: deny, Principal: "alice"})
	for _, tc := range []struct {
		query      string
		want, not  []string
		structured []string
	}{
		{"create issue", []string{"declare const tools", "/** Create an issue */", "gh__create_issue(args?: {title?: string}): Promise<Content[]>;"}, []string{"delete", "web__", "owner"}, []string{"gh__create_issue"}},
		{"delete repository", []string{"No tool matches"}, []string{"declare"}, nil},
	} {
		m := roundTrip(t, r, s, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search_tools","arguments":{"query":`+string(jsonrpc.AppendQuote(nil, tc.query))+`,"limit":1}}}`)
		var res struct {
			Content           []struct{ Text string } `json:"content"`
			StructuredContent struct {
				Tools []struct {
					Name        string          `json:"name"`
					InputSchema json.RawMessage `json:"inputSchema"`
					Score       *float64        `json:"score"`
				} `json:"tools"`
			} `json:"structuredContent"`
		}
		if err := json.Unmarshal(m.Result(), &res); err != nil || len(res.Content) != 1 {
			t.Fatalf("%q: %s", tc.query, m.Raw())
		}
		text := res.Content[0].Text
		for _, w := range tc.want {
			if !strings.Contains(text, w) {
				t.Errorf("%q: no %q in\n%s", tc.query, w, text)
			}
		}
		for _, w := range tc.not {
			if strings.Contains(text, w) {
				t.Errorf("%q: %q in\n%s", tc.query, w, text)
			}
		}
		var names []string
		for _, h := range res.StructuredContent.Tools {
			if len(h.InputSchema) == 0 || h.InputSchema[0] != '{' || h.Score == nil {
				t.Errorf("%q: a hit without inputSchema or score: %s", tc.query, m.Raw())
			}
			names = append(names, h.Name)
		}
		if !slices.Equal(names, tc.structured) {
			t.Errorf("%q: structured hits %v, want %v", tc.query, names, tc.structured)
		}
	}
	for _, tc := range []struct{ name, args string }{
		{"no query", `{}`}, {"limit 0", `{"query":"x","limit":0}`}, {"limit 2.5", `{"query":"x","limit":2.5}`}, {"query not a string", `{"query":3}`},
	} {
		m := roundTrip(t, r, s, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"search_tools","arguments":`+tc.args+`}}`)
		if e := rpcErr(m); e == nil || e.Code != protocol.CodeInvalidParams {
			t.Errorf("%s: %s, want -32602", tc.name, m.Raw())
		}
	}

	// With exposeFound, what a search found is listed, with list_changed, as in search mode.
	exposing := shapedRouter(t, Shape{Endpoints: []Endpoint{{Name: "x", Include: []string{"gh__*"}, Search: &SearchMode{ExposeFound: true}, Code: &codemode.Mode{}}}})
	xs := exposing.NewSession(SessionParams{ProtocolVersion: protocol.V20251125, Endpoint: "x"})
	roundTrip(t, exposing, xs, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"search_tools","arguments":{"query":"create issue","limit":1}}}`)
	if !heard(xs.Standalone(), "notifications/tools/list_changed") {
		t.Error("exposeFound: no list_changed after a search found a tool")
	}
	if got := names(listAll(t, exposing, xs)); !slices.Equal(got, []string{"search_tools", "call_tool", "describe_tools", "run_script", "gh__create_issue"}) {
		t.Errorf("exposeFound: the list after the search is %v", got)
	}
}

// hangingUpstream answers tools/call of echo at once and never answers hang; it reports each hang call it
// receives and each cancellation.
func hangingUpstream(calls, cancels chan<- string) *fakeTransport {
	const tools = `[{"name":"echo","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true}},{"name":"hang","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true}}]`
	return newFakeTransport(func(c *fakeConn, m jsonrpc.Message) {
		switch {
		case m.MethodIs("tools/call"):
			if name, _ := jsonrpc.LookupString(m.Params(), "name"); name == "hang" {
				calls <- string(m.ID())
				return
			}
			c.sendLocked(jsonrpc.AppendResult(nil, m.ID(), []byte(`{"content":[{"type":"text","text":"echoed"}],"structuredContent":{"ok":true}}`)))
		case m.MethodIs("notifications/cancelled"):
			id, _, _ := jsonrpc.Lookup(m.Params(), "requestId")
			cancels <- string(m.Params()[id:])
		default:
			defaultAnswer(c, m, fakeInitCaps, tools)
		}
	})
}

// TestScriptRunTracedCancelledAndProgress: a run is one span with a child span per call its script makes;
// the script's progress reaches the client under run_script's progress token; cancelling run_script cancels the
// call its script is waiting for, upstream, and run_script gets no answer.
func TestScriptRunTracedCancelledAndProgress(t *testing.T) {
	calls, cancels := make(chan string, 4), make(chan string, 4)
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	r := startRouter(t, Options{Tracer: tp, Shape: Shape{Root: &SearchMode{}, RootCode: &codemode.Mode{}}},
		UpstreamConfig{Name: "h", Prefix: "h__", Mode: Shared, Transport: hangingUpstream(calls, cancels), Kind: "stdio"})
	s := r.NewSession(SessionParams{ProtocolVersion: protocol.V20251125})

	v := scriptValue(t, runScript(t, r, s, `const [a, b] = await Promise.all([tools.h__echo({}), tools.h__echo({})]); return {a: a.ok && b.ok}`, ""))
	if v["a"] != true {
		t.Errorf("the script returned %v", v)
	}
	var run tracetest.SpanStub
	var legs []tracetest.SpanStub
	for _, sp := range spans.GetSpans() {
		switch sp.Name {
		case "tools/call run_script":
			run = sp
		case "tools/call h__echo":
			legs = append(legs, sp)
		}
	}
	if !run.SpanContext.IsValid() || len(legs) != 2 {
		t.Fatalf("spans %v, want the run's and two legs", spanNames(spans.GetSpans()))
	}
	for _, l := range legs {
		if l.Parent.SpanID() != run.SpanContext.SpanID() || l.SpanContext.TraceID() != run.SpanContext.TraceID() {
			t.Errorf("leg %s is not a child of the run's span", l.Name)
		}
	}

	out := newStream(1, 16)
	s.HandleRequest(context.Background(), mustParse(t, `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"run_script","arguments":{"code":"progress(1, 2, \"half\"); return 1"},"_meta":{"progressToken":"p"}}}`), out)
	msg, final, ok := out.Next(r.ctx)
	if !ok || final || !strings.Contains(string(msg), `"method":"notifications/progress","params":{"progressToken":"p","progress":1,"total":2,"message":"half"}`) {
		t.Errorf("first message %s (final %v), want the script's progress", msg, final)
	}
	if _, final, ok := out.Next(r.ctx); !ok || !final {
		t.Error("no answer after the progress")
	}

	out = newStream(1, 16)
	s.HandleRequest(context.Background(), mustParse(t, `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"run_script","arguments":{"code":"await tools.h__hang({})"}}}`), out)
	var upID string
	select {
	case upID = <-calls:
	case <-r.ctx.Done():
		t.Fatal("the script's call never reached the upstream")
	}
	// Another session's request of the same id is its own: it runs, and its cancellation is not this run's.
	other := r.NewSession(SessionParams{ProtocolVersion: protocol.V20251125})
	if v := scriptValue(t, roundTrip(t, r, other, `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"run_script","arguments":{"code":"return {n: 2}"}}}`)); v["n"] != float64(2) {
		t.Errorf("another session's run answered %v", v)
	}
	other.HandleNotification(mustParse(t, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":9}}`))
	r.code.mu.Lock()
	_, running := r.code.runs[runKey{s, s.callKey(out, []byte("9"))}]
	r.code.mu.Unlock()
	if !running {
		t.Fatal("another session's cancellation of the same id ended the run")
	}
	s.HandleNotification(mustParse(t, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":9}}`))
	select {
	case got := <-cancels:
		if !strings.HasPrefix(got, upID) {
			t.Errorf("the upstream was told to cancel %s, want its call %s", got, upID)
		}
	case <-r.ctx.Done():
		t.Fatal("the upstream was not told to cancel the script's call")
	}
	if msg, _, ok := out.Next(r.ctx); ok {
		t.Errorf("a cancelled run_script answered %s", msg)
	}
}

// TestScriptRunAsTask (issue 35, item 6): run_script is a tool that may be a task: a 2025-11-25 client that asks
// for one gets it, and its result is the run's; a 2026-07-28 client that takes tasks gets a quick run's answer at
// once and a task for a run past the sync window, which completes with the run's result.
func TestScriptRunAsTask(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := startRouter(t, Options{
			Tasks: TaskOptions{Store: state.NewMemory(), SyncWindow: 100 * time.Millisecond, PollInterval: 50 * time.Millisecond},
			Shape: Shape{Endpoints: []Endpoint{{Name: "e", Search: &SearchMode{}, Code: &codemode.Mode{Writes: codemode.WritesAllow}}}},
		}, UpstreamConfig{Name: "gh", Prefix: "gh__", Mode: Shared, Transport: echoingUpstream(combinationTools), Kind: "stdio"})
		legacy := r.NewSession(SessionParams{ProtocolVersion: protocol.V20251125, Endpoint: "e", Capabilities: json.RawMessage(`{}`)})
		for _, raw := range listAll(t, r, legacy) {
			if name, _ := jsonrpc.LookupString(raw, "name"); name == runScriptTool {
				if ts, _ := jsonrpc.LookupString(raw, "execution", "taskSupport"); ts != taskOptional {
					t.Errorf("run_script is listed as %s", raw)
				}
			}
		}
		slow := `await new Promise(r => setTimeout(r, 1000)); return (await tools.gh__search({q: "x"}))[0].text`
		m := finalAnswer(t, r, legacy, fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"run_script","arguments":{"code":%s},"task":{"ttl":60000}}}`,
			jsonrpc.AppendQuote(nil, slow)))
		if ToolError(m.Result()) || !strings.Contains(string(m.Result()), `\"q\":\"x\"`) {
			t.Errorf("the task's result: %s", m.Raw())
		}

		modern := r.PooledSession(SessionParams{Principal: "alice", Endpoint: "e", Capabilities: json.RawMessage(tasksCaps)})
		call := func(id, code string) string {
			return fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"method":"tools/call","params":{"name":"run_script","arguments":{"code":%s}}}`, id, jsonrpc.AppendQuote(nil, code))
		}
		if m := request(t, r, modern, call("f", "return 1")); strings.Contains(string(m.Raw()), "taskId") || !strings.Contains(string(m.Result()), `"value":1`) {
			t.Errorf("a quick run answered %s, want its result", m.Raw())
		}
		created := request(t, r, modern, call("s", slow))
		id := field(created, "taskId")
		if field(created, "resultType") != "task" || id == "" {
			t.Fatalf("a slow run answered %s, want a task", created.Raw())
		}
		synctest.Wait()
		time.Sleep(2 * time.Second) // fake time, in the bubble: the script's timer fires
		synctest.Wait()
		done := request(t, r, modern, taskReq("g", "tasks/get", id, ""))
		if field(done, "status") != "completed" || !strings.Contains(string(done.Raw()), `\\\"q\\\":\\\"x\\\"`) {
			t.Errorf("tasks/get after the run: %s", done.Raw())
		}
	})
}

// TestScriptConsentInputRequired (issue 35, item 4): a 2026-07-28 client is asked for consent as any multi
// round-trip request asks: run_script answers input_required with the question and a sealed requestState; the
// retry with the answer gets the run's result (fifty parallel writes, one question), or, declined, the script's
// own handling of the thrown error. A state serves one retry, and only its own caller.
func TestScriptConsentInputRequired(t *testing.T) {
	var audit callEvents
	r := startRouter(t, Options{Audit: audit.add,
		Shape: Shape{Endpoints: []Endpoint{{Name: "e", Search: &SearchMode{}, Code: &codemode.Mode{Writes: codemode.WritesAsk}}}}},
		UpstreamConfig{Name: "gh", Prefix: "gh__", Mode: Shared, Transport: echoingUpstream(combinationTools), Kind: "stdio"})
	caps := json.RawMessage(`{"elicitation":{}}`)
	alice := r.PooledSession(SessionParams{Principal: "alice", Endpoint: "e", Capabilities: caps})
	bob := r.PooledSession(SessionParams{Principal: "bob", Endpoint: "e", Capabilities: caps})
	call := func(id, code, extra string) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"method":"tools/call","params":{"name":"run_script","arguments":{"code":%s}%s}}`, id, jsonrpc.AppendQuote(nil, code), extra)
	}
	retry := func(id, state, action, decision string) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"method":"tools/call","params":{"name":"run_script","arguments":{"code":"ignored"},"requestState":%q,`+
			`"inputResponses":{"consent":{"action":%q,"content":{"decision":%q}}}}}`, id, state, action, decision)
	}
	asked := func(m jsonrpc.Message) string {
		t.Helper()
		msg, _ := jsonrpc.LookupString(m.Result(), "inputRequests", "consent", "params", "message")
		state := field(m, "requestState")
		if field(m, "resultType") != "input_required" || !strings.Contains(msg, "gh__create_issue") || state == "" {
			t.Fatalf("answered %s, want the consent question", m.Raw())
		}
		return state
	}
	fifty := `const r = await Promise.all(Array.from({length: 50}, (_, i) => tools.gh__create_issue({title: "t" + i}))); return r.length`
	state := asked(request(t, r, alice, call("a", fifty, "")))
	if m := request(t, r, bob, retry("x", state, "accept", "allow for the rest of this run")); rpcErr(m) == nil {
		t.Errorf("bob's retry with alice's state answered %s", m.Raw())
	}
	m := request(t, r, alice, retry("b", state, "accept", "allow for the rest of this run"))
	if !strings.Contains(string(m.Result()), `"value":50`) {
		t.Errorf("the retry answered %s, want the run's result", m.Raw())
	}
	if m := request(t, r, alice, retry("c", state, "accept", "allow once")); rpcErr(m) == nil || !strings.Contains(rpcErr(m).Message, "no longer waiting") {
		t.Errorf("a second retry with the same state answered %s", m.Raw())
	}
	state = asked(request(t, r, alice, call("d", `try { await tools.gh__create_issue({title: "no"}); return "written" } catch (e) { return e.message }`, "")))
	if m := request(t, r, alice, retry("e", state, "decline", "")); !strings.Contains(string(m.Result()), "gh__create_issue is a write and it was declined") {
		t.Errorf("a declined write answered %s", m.Raw())
	}
	forwarded := 0
	for _, e := range audit.all() {
		if e.Tool == "gh__create_issue" && e.Outcome == outcomeOK {
			forwarded++
		}
	}
	if forwarded != 50 {
		t.Errorf("%d writes reached the upstream, want 50", forwarded)
	}
}

// TestScriptTaskAsks (issue 35): a run that became a task asks for consent through its task, in both eras. A
// 2025-11-25 client finds the question on its tasks/result stream, related to the task, and its answer lets the
// write through; a 2026-07-28 client sees the task input_required with the question (tasks/get) and answers with
// tasks/update. A task cancelled while its run waits ends the run: its write never reaches the upstream.
func TestScriptTaskAsks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var audit callEvents
		r := startRouter(t, Options{Audit: audit.add,
			Tasks: TaskOptions{Store: state.NewMemory(), SyncWindow: 100 * time.Millisecond, PollInterval: 50 * time.Millisecond},
			Shape: Shape{Endpoints: []Endpoint{{Name: "e", Search: &SearchMode{}, Code: &codemode.Mode{Writes: codemode.WritesAsk}}}},
		}, UpstreamConfig{Name: "gh", Prefix: "gh__", Mode: Shared, Transport: echoingUpstream(combinationTools), Kind: "stdio"})
		script := func(title string) string {
			return fmt.Sprintf(`await new Promise(r => setTimeout(r, 1000)); try { await tools.gh__create_issue({title: %q}); return "written" } catch (e) { return e.message }`, title)
		}
		call := func(id, code, extra string) string {
			return fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"method":"tools/call","params":{"name":"run_script","arguments":{"code":%s}%s}}`, id, jsonrpc.AppendQuote(nil, code), extra)
		}
		writes := func() int {
			n := 0
			for _, e := range audit.all() {
				if e.Tool == "gh__create_issue" && e.Outcome == outcomeOK {
					n++
				}
			}
			return n
		}

		// 2025-11-25: the question on the tasks/result stream.
		legacy := r.NewSession(SessionParams{ProtocolVersion: protocol.V20251125, Principal: "alice", Endpoint: "e", Capabilities: json.RawMessage(`{"elicitation":{}}`)})
		id := field(request(t, r, legacy, call("l", script("legacy"), `,"task":{"ttl":60000}`)), "task", "taskId")
		if id == "" {
			t.Fatal("a 2025-11-25 task call answered no task")
		}
		asked := 0
		final := legacyTaskResult(t, r, legacy, id, func(m jsonrpc.Message) string {
			asked++
			if text, _ := jsonrpc.LookupString(m.Params(), "message"); !strings.Contains(text, "gh__create_issue") || asked > 1 {
				t.Errorf("question %d: %s, want one about gh__create_issue", asked, m.Raw())
			}
			return `{"action":"accept","content":{"decision":"allow once"}}`
		})
		if !strings.Contains(string(final.Result()), "written") || writes() != 1 {
			t.Errorf("tasks/result after consent: %s; %d writes", final.Raw(), writes())
		}

		// 2026-07-28: the question in the task, the answer by tasks/update.
		modern := r.PooledSession(SessionParams{Principal: "bob", Endpoint: "e", Capabilities: json.RawMessage(tasksCaps)})
		created := request(t, r, modern, call("m", script("modern"), ""))
		mid := field(created, "taskId")
		if field(created, "resultType") != "task" || mid == "" {
			t.Fatalf("a slow run answered %s, want a task", created.Raw())
		}
		synctest.Wait()
		time.Sleep(2 * time.Second) // fake time, in the bubble: the script's timer fires, and it asks
		synctest.Wait()
		got := request(t, r, modern, taskReq("g", "tasks/get", mid, ""))
		if field(got, "status") != "input_required" || !strings.Contains(string(got.Raw()), "gh__create_issue") {
			t.Fatalf("tasks/get while the run asks: %s", got.Raw())
		}
		if m := request(t, r, modern, taskReq("u", "tasks/update", mid, `,"inputResponses":{"consent":{"action":"accept","content":{"decision":"allow once"}}}`)); string(m.Result()) != `{}` {
			t.Errorf("tasks/update: %s", m.Raw())
		}
		synctest.Wait()
		time.Sleep(time.Second)
		synctest.Wait()
		if done := request(t, r, modern, taskReq("g2", "tasks/get", mid, "")); field(done, "status") != "completed" || !strings.Contains(string(done.Raw()), "written") {
			t.Errorf("tasks/get after the answer: %s", done.Raw())
		}

		// Cancelled while it waits: the run ends, and nothing is written.
		before := writes()
		cid := field(request(t, r, modern, call("c", script("cancelled"), "")), "taskId")
		synctest.Wait()
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if m := request(t, r, modern, taskReq("gc", "tasks/get", cid, "")); field(m, "status") != "input_required" {
			t.Fatalf("tasks/get before the cancel: %s", m.Raw())
		}
		request(t, r, modern, taskReq("x", "tasks/cancel", cid, ""))
		synctest.Wait()
		time.Sleep(time.Second)
		synctest.Wait()
		if m := request(t, r, modern, taskReq("gx", "tasks/get", cid, "")); field(m, "status") != "cancelled" {
			t.Errorf("tasks/get after the cancel: %s", m.Raw())
		}
		r.code.mu.Lock()
		left := len(r.code.mine)
		r.code.mu.Unlock()
		if left != 0 || writes() != before {
			t.Errorf("after the cancel: runs left for %d callers, %d writes more", left, writes()-before)
		}
	})
}
