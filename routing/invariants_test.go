package routing

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-mcp/switchboard/routing/pin"
	"github.com/switchboard-mcp/switchboard/routing/state"
	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
	"github.com/switchboard-mcp/switchboard/upstream/protocol"
)

// The invariants of issue 32, item 3, held by the pipeline for every feature and every path. TestInvariants runs
// each against each stage that decides and each path a request takes into routing: a 2025-11-25 session, a
// 2025-03-26 one (whose batches the front ends split into these same requests), a pooled 2026-07-28 session,
// call_tool in search mode, and a gateway-made task. The token's resource is the gateway's (gateway tests).

// invariantUpstream is a full fake server: tools (one with an MCP Apps view), a prompt, resources (readme, offered
// by both upstreams, so namespaced), a template, completion and subscriptions. It records every request it gets.
type invariantUpstream struct {
	name string
	mu   sync.Mutex
	got  []string // methods and params it received, in order
}

const invariantPrompt = `{"name":"greet","arguments":[{"name":"who"}]}`

const invariantCaps = `{"tools":{},"prompts":{},"resources":{"subscribe":true},"completions":{}}`

func (u *invariantUpstream) tools() string {
	view := `"_meta":{"ui":{"resourceUri":"ui://app/view.html"}}`
	if u.name == "gh" {
		return `[{"name":"create_issue","inputSchema":{"type":"object","properties":{"owner":{"type":"string"},"title":{"type":"string"}}}},
			{"name":"search","inputSchema":{"type":"object"}},
			{"name":"delete_repo","inputSchema":{"type":"object"}},
			{"name":"show","inputSchema":{"type":"object"},` + view + `},
			{"name":"wipe","inputSchema":{"type":"object"}}]`
	}
	return `[{"name":"fetch","inputSchema":{"type":"object"},` + view + `}]`
}

func (u *invariantUpstream) received() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.got...)
}

func (u *invariantUpstream) transport() *fakeTransport {
	return newFakeTransport(func(c *fakeConn, m jsonrpc.Message) {
		if m.Kind() != jsonrpc.KindRequest {
			return
		}
		var result string
		switch m.Method() {
		case "initialize":
			result = `{"protocolVersion":"2025-11-25","capabilities":` + invariantCaps + `,"serverInfo":{"name":"` + u.name + `","version":"1"}}`
		case "tools/list":
			result = `{"tools":` + u.tools() + `}`
		case "prompts/list":
			result = `{"prompts":[` + invariantPrompt + `]}`
		case "resources/list":
			result = `{"resources":[{"uri":"file:///readme","name":"readme"},{"uri":"ui://app/view.html","name":"view","mimeType":"text/html;profile=mcp-app"}]}`
		case "resources/templates/list":
			result = `{"resourceTemplates":[{"uriTemplate":"file:///{path}","name":"files"}]}`
		default:
			u.mu.Lock()
			u.got = append(u.got, m.Method()+" "+string(m.Params()))
			u.mu.Unlock()
			switch m.Method() {
			case "tools/call":
				// The answer names a resource and the tool's view by the upstream's own URIs.
				result = `{"content":[{"type":"text","text":` + string(jsonrpc.AppendQuote(nil, string(m.Params()))) +
					`},{"type":"resource_link","uri":"file:///readme","name":"readme"}],"_meta":{"ui":{"resourceUri":"ui://app/view.html"}}}`
			case "resources/read":
				uri, _ := jsonrpc.LookupString(m.Params(), "uri")
				result = `{"contents":[{"uri":` + string(jsonrpc.AppendQuote(nil, uri)) + `,"text":"from ` + u.name + `"}]}`
			case "prompts/get":
				result = `{"messages":[{"role":"user","content":{"type":"resource_link","uri":"file:///readme","name":"readme"}}]}`
			case "completion/complete":
				result = `{"completion":{"values":["a"]}}`
			default:
				result = `{}`
			}
		}
		c.sendLocked(jsonrpc.AppendResult(nil, m.ID(), []byte(result)))
	})
}

// invariantPath is one way a request reaches routing.
type invariantPath struct {
	name string
	s    *Session
	// call makes a tools/call of tool with the raw arguments object (or, where args is "", none at all).
	call func(tool, args string) string
	// req makes any other request: the 2026-07-28 path adds its per-request _meta.
	req func(method, params string) string
}

// invariantRouter starts the router of TestInvariants: gh's tools behind endpoint "a" (and "s", in search mode),
// a preset on create_issue, delete_repo denied to everyone but the policy-free sessions, wipe withheld by pinning,
// gh's tools run as gateway tasks when asked.
func invariantRouter(t *testing.T, audit *callEvents) (*testRouter, *invariantUpstream, *invariantUpstream) {
	gh, web := &invariantUpstream{name: "gh"}, &invariantUpstream{name: "web"}
	var defs []json.RawMessage
	if err := json.Unmarshal([]byte(gh.tools()), &defs); err != nil {
		t.Fatal(err)
	}
	pins := map[string]string{}
	for _, raw := range defs[:4] { // wipe is not pinned: new in a pinned upstream, it is withheld
		name, _ := jsonrpc.LookupString(raw, "name")
		pins[name] = mustHash(t, pin.Tool, string(jsonrpc.Compact(nil, raw)))
	}
	r := startRouter(t, Options{
		Audit:   audit.add,
		Pinning: &Pinning{Lock: pin.NewLock(map[string]pin.Locked{"gh": {Tools: pins, Prompts: map[string]string{"greet": mustHash(t, pin.Prompt, invariantPrompt)}}}), Block: true},
		Tasks:   TaskOptions{Store: state.NewMemory(), SyncWindow: time.Minute, PollInterval: time.Second},
		Shape: Shape{
			Overrides: map[OverrideKey]Override{
				{Upstream: "gh", Kind: "tool", Name: "create_issue"}: {Arguments: map[string]json.RawMessage{"owner": json.RawMessage(`"acme"`)}},
			},
			Endpoints: []Endpoint{
				{Name: "a", Include: []string{"gh__*", "gh+*"}},
				{Name: "s", Include: []string{"gh__*", "gh+*"}, Search: &SearchMode{}},
			},
		},
	},
		UpstreamConfig{Name: "gh", Prefix: "gh__", Mode: Shared, Transport: gh.transport(), Kind: "stdio", Tasks: taskOptional},
		UpstreamConfig{Name: "web", Prefix: "web__", Mode: Shared, Transport: web.transport(), Kind: "stdio"})
	return r, gh, web
}

// invariantPaths are the paths into routing, each as principal at endpoint under the policy allow.
func invariantPaths(r *testRouter, principal, endpoint string, allow Allow) []invariantPath {
	plain := func(extra string) func(tool, args string) string {
		return func(tool, args string) string {
			a := ""
			if args != "" {
				a = `,"arguments":` + args
			}
			return fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":%q%s%s}}`, tool, a, extra)
		}
	}
	req := func(extra string) func(method, params string) string {
		return func(method, params string) string {
			if extra != "" {
				params = strings.TrimSuffix(params, "}") + extra + "}"
				if strings.HasPrefix(params, "{,") {
					params = "{" + params[2:]
				}
			}
			return fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":%q,"params":%s}`, method, params)
		}
	}
	modernMeta := `,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	legacy := r.NewSession(SessionParams{ProtocolVersion: protocol.V20251125, Endpoint: endpoint, Allow: allow, Principal: principal, Capabilities: json.RawMessage(`{}`)})
	search := endpoint
	if endpoint == "a" {
		search = "s"
	}
	paths := []invariantPath{
		{"2025-11-25", legacy, plain(""), req("")},
		{"2025-03-26", r.NewSession(SessionParams{ProtocolVersion: "2025-03-26", Endpoint: endpoint, Allow: allow, Principal: principal}), plain(""), req("")},
		{"2026-07-28", r.PooledSession(SessionParams{Principal: principal, Endpoint: endpoint, Allow: allow, Capabilities: json.RawMessage(`{}`)}), plain(modernMeta), req(modernMeta)},
		{"task", legacy, plain(`,"task":{"ttl":60000}`), req("")},
	}
	if search != "" {
		s := r.NewSession(SessionParams{ProtocolVersion: protocol.V20251125, Endpoint: search, Allow: allow, Principal: principal})
		paths = append(paths, invariantPath{"call_tool", s, func(tool, args string) string {
			if args == "" {
				args = "{}"
			}
			return fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"call_tool","arguments":{"name":%q,"arguments":%s}}}`, tool, args)
		}, req("")})
	}
	return paths
}

// refusals returns the audit events of refusals.
func refusals(a *callEvents) []CallEvent {
	var out []CallEvent
	for _, e := range a.all() {
		if e.Outcome == outcomeRefused || e.Outcome == outcomeDenied {
			out = append(out, e)
		}
	}
	return out
}

func TestInvariants(t *testing.T) {
	var audit callEvents
	r, gh, web := invariantRouter(t, &audit)
	deny := func(up, kind, name string) bool { return name != "delete_repo" }
	paths := invariantPaths(r, "alice", "a", deny)
	forwarded := func() int { return len(gh.received()) + len(web.received()) }

	// 1. No object the gateway reads or edits has a member name twice (after unescaping); 2. every refusal writes
	// one audit event with its reason. Each stage that refuses, on each path: nothing reaches an upstream.
	t.Run("refusals", func(t *testing.T) {
		stages := []struct {
			stage, tool, args string
			code              int
			reason            string
		}{
			{"members once: arguments twice", "gh__create_issue", `{},"arguments":{"owner":"evil"}`, protocol.CodeInvalidParams, `duplicate member "arguments"`},
			{"members once: escaped twin", "gh__search", `{"q":1,"\u0071":2}`, protocol.CodeInvalidParams, `duplicate member "q"`},
			{"inView: unknown", "nobody__offers", `{}`, protocol.CodeInvalidParams, reasonUnknown},
			{"inView: outside the endpoint", "web__fetch", `{}`, protocol.CodeInvalidParams, reasonOutsideView},
			{"inView: policy", "gh__delete_repo", `{}`, protocol.CodeInvalidParams, "policy"},
			{"pinned: withheld", "gh__wipe", `{}`, protocol.CodeUnavailable, reasonWithheld},
			{"presets: sent", "gh__create_issue", `{"owner":"evil"}`, protocol.CodeInvalidParams, reasonPreset},
			{"presets: sent in another case", "gh__create_issue", `{"Owner":"evil"}`, protocol.CodeInvalidParams, reasonPreset},
		}
		for _, p := range paths {
			for _, c := range stages {
				t.Run(p.name+"/"+c.stage, func(t *testing.T) {
					audit.reset()
					before := forwarded()
					m := finalAnswer(t, r, p.s, p.call(c.tool, c.args))
					if e := rpcErr(m); e == nil || e.Code != c.code {
						t.Fatalf("answered %s, want error %d", m.Raw(), c.code)
					}
					if evs := refusals(&audit); len(evs) != 1 || evs[0].Reason != c.reason || evs[0].Endpoint == "" {
						t.Errorf("refusals audited %+v, want one with reason %q and the endpoint", evs, c.reason)
					}
					if n := forwarded(); n != before {
						t.Errorf("the upstreams got %d requests", n-before)
					}
				})
			}
		}
		// call_tool's own refusal: a wrapper that names no tool.
		audit.reset()
		if m := roundTrip(t, r, paths[len(paths)-1].s, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"call_tool","arguments":{"arguments":{}}}}`); m.Error() == nil {
			t.Errorf("call_tool without a name answered %s", m.Raw())
		}
		if evs := refusals(&audit); len(evs) != 1 || evs[0].Reason != reasonMalformed || evs[0].Tool != toolCall {
			t.Errorf("call_tool without a name: refusals audited %+v, want one, malformed", evs)
		}
		// Requests that name nothing a stage can read are refused and audited too.
		for _, c := range []struct{ name, method, params, reason string }{
			{"resolveName: no name", "tools/call", `{"arguments":{}}`, reasonMalformed},
			{"resolveName: prompt without a name", "prompts/get", `{}`, reasonMalformed},
			{"resolveURI: no uri", "resources/read", `{}`, reasonMalformed},
			{"resolveURI: outside the endpoint", "resources/read", `{"uri":"web+file:///readme"}`, reasonOutsideView},
			{"resolveRef: no ref", "completion/complete", `{"argument":{"name":"x","value":""}}`, reasonMalformed},
			{"members once: a prompt's name", "prompts/get", `{"name":"gh__greet","n\u0061me":"web__greet"}`, `duplicate member "name"`},
			{"members once: a URI", "resources/read", `{"uri":"gh+file:///readme","\u0075ri":"web+file:///readme"}`, `duplicate member "uri"`},
		} {
			for _, p := range paths[:3] {
				t.Run(p.name+"/"+c.name, func(t *testing.T) {
					audit.reset()
					before := forwarded()
					m := roundTrip(t, r, p.s, p.req(c.method, c.params))
					if m.Error() == nil {
						t.Fatalf("answered %s, want a refusal", m.Raw())
					}
					if evs := refusals(&audit); len(evs) != 1 || evs[0].Reason != c.reason {
						t.Errorf("refusals audited %+v, want one with reason %q", evs, c.reason)
					}
					if n := forwarded(); n != before {
						t.Errorf("the upstreams got %d requests", n-before)
					}
				})
			}
		}
	})

	// 3. Everything addressed by id or URI is scoped by the endpoint's view and the principal: what another
	// endpoint offers, or another person made, answers as unknown and never reaches its upstream.
	t.Run("scoped", func(t *testing.T) {
		whole := r.NewSession(SessionParams{ProtocolVersion: protocol.V20251125, Principal: "alice", Capabilities: json.RawMessage(`{}`)})
		taskID, _ := jsonrpc.LookupString(roundTrip(t, r, whole, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"gh__search","arguments":{},"task":{"ttl":60000}}}`).Result(), "task", "taskId")
		if taskID == "" {
			t.Fatal("no task made on the whole catalog")
		}
		// Its call reaches gh in the background: wait for its result, so that nothing reaches an upstream while the
		// rows below count what does.
		if m := roundTrip(t, r, whole, `{"jsonrpc":"2.0","id":2,"method":"tasks/result","params":{"taskId":`+string(jsonrpc.AppendQuote(nil, taskID))+`}}`); m.Error() != nil {
			t.Fatalf("the task's result: %s", m.Raw())
		}
		bob := r.NewSession(SessionParams{ProtocolVersion: protocol.V20251125, Principal: "bob", Capabilities: json.RawMessage(`{}`)})
		for _, c := range []struct{ name, method, params string }{
			{"another endpoint's resource", "resources/read", `{"uri":"web+file:///readme"}`},
			{"another endpoint's app view", "resources/read", `{"uri":"web+ui://app/view.html"}`},
			{"another endpoint's subscription", "resources/subscribe", `{"uri":"web+file:///readme"}`},
			{"another endpoint's template", "completion/complete", `{"ref":{"type":"ref/resource","uri":"web+file:///{path}"},"argument":{"name":"path","value":""}}`},
			{"another endpoint's prompt", "completion/complete", `{"ref":{"type":"ref/prompt","name":"web__greet"},"argument":{"name":"who","value":""}}`},
			{"another endpoint's prompt, got", "prompts/get", `{"name":"web__greet"}`},
			{"another endpoint's task", "tasks/get", `{"taskId":` + string(jsonrpc.AppendQuote(nil, taskID)) + `}`},
		} {
			for _, p := range paths {
				if p.name == "2026-07-28" && (c.method == "resources/subscribe" || c.method == "tasks/get") {
					continue // 2026-07-28 has no subscribe; its tasks/get is the task extension's, bound in TestGatewayTasksBoundToEndpoint
				}
				t.Run(p.name+"/"+c.name, func(t *testing.T) {
					before := forwarded()
					if m := roundTrip(t, r, p.s, p.req(c.method, c.params)); m.Error() == nil {
						t.Errorf("answered %s, want it unknown here", m.Raw())
					}
					if n := forwarded(); n != before {
						t.Errorf("the upstreams got %d requests", n-before)
					}
				})
			}
		}
		if m := roundTrip(t, r, bob, `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":`+string(jsonrpc.AppendQuote(nil, taskID))+`}}`); m.Error() == nil {
			t.Errorf("bob read alice's task: %s", m.Raw())
		}
		if m := roundTrip(t, r, whole, `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":`+string(jsonrpc.AppendQuote(nil, taskID))+`}}`); m.Error() != nil {
			t.Errorf("alice cannot read her own task where she made it: %s", m.Raw())
		}
	})

	// 4. Every URI reference the gateway serves follows the rewriting of the thing it names: the view a tool's
	// definition and its result name, the resource a result links to, the contents read; and each served URI reads.
	t.Run("URIs follow", func(t *testing.T) {
		for _, p := range paths {
			t.Run(p.name, func(t *testing.T) {
				m := finalAnswer(t, r, p.s, p.call("gh__show", `{}`))
				res := m.Result()
				if m.Error() != nil {
					t.Fatalf("gh__show answered %s", m.Raw())
				}
				served := map[string]string{
					"the result's resource link": linkURI(res),
				}
				served["the result's view"], _ = jsonrpc.LookupString(res, "_meta", "ui", "resourceUri")
				for what, uri := range served {
					if !strings.HasPrefix(uri, "gh+") {
						t.Errorf("%s is %q, want gh's namespaced URI (%s)", what, uri, res)
						continue
					}
					read := roundTrip(t, r, p.s, p.req("resources/read", `{"uri":`+string(jsonrpc.AppendQuote(nil, uri))+`}`))
					if got, _ := jsonrpc.LookupString(firstContent(read.Result()), "uri"); got != uri {
						t.Errorf("reading %s (%s) answered %s, want its contents under the same URI", what, uri, read.Raw())
					}
				}
			})
		}
		list := roundTrip(t, r, paths[0].s, `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`)
		if !strings.Contains(string(list.Result()), `"resourceUri":"gh+ui://app/view.html"`) {
			t.Errorf("tools/list does not name gh__show's view as served: %s", list.Result())
		}
		prompt := roundTrip(t, r, paths[0].s, `{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":"gh__greet"}}`)
		if !strings.Contains(string(prompt.Result()), `"uri":"gh+file:///readme"`) {
			t.Errorf("prompts/get links the readme by the upstream's URI: %s", prompt.Raw())
		}
	})
}

// linkURI is the URI of a tool result's resource_link, or of the text a 2025-03-26 client gets for one.
func linkURI(res []byte) string {
	var r struct {
		Content []struct{ Type, URI, Text string }
	}
	_ = json.Unmarshal(res, &r)
	for _, c := range r.Content {
		if c.Type == "resource_link" {
			return c.URI
		}
		if _, rest, ok := strings.Cut(c.Text, "Resource: readme <"); ok {
			return strings.TrimSuffix(rest, ">")
		}
	}
	return ""
}

// firstContent is the first of a read's contents.
func firstContent(res []byte) []byte {
	var r struct{ Contents []json.RawMessage }
	if json.Unmarshal(res, &r) != nil || len(r.Contents) == 0 {
		return nil
	}
	return r.Contents[0]
}
