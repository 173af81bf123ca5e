package routing

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-mcp/switchboard/routing/pin"
	"github.com/switchboard-mcp/switchboard/routing/state"
	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
	"github.com/switchboard-mcp/switchboard/upstream/protocol"
)

// combinationTools are gh's tools in TestFeaturesAgreeOnEveryPath: create_issue has a preset, delete_repo is
// denied by the policy, wipe is new in a pinned upstream (withheld), search is plain.
const combinationTools = `[
	{"name":"create_issue","description":"Create an issue","inputSchema":{"type":"object","properties":{"owner":{"type":"string"},"title":{"type":"string"}}}},
	{"name":"search","description":"Search code","inputSchema":{"type":"object"}},
	{"name":"delete_repo","description":"Delete a repository","inputSchema":{"type":"object"}},
	{"name":"wipe","description":"Wipe everything","inputSchema":{"type":"object"}}
]`

// TestFeaturesAgreeOnEveryPath (issue 31, "keep it found"): every feature that decides whether and how a call
// reaches its upstream (the endpoint's view, the policy, a preset, a pin, the member-uniqueness rule) decides
// the same on every path a tools/call takes into routing: a 2025-11-25 session, a 2025-03-26 one (whose batches
// the front end splits into these same requests), a pooled 2026-07-28 session, call_tool in search mode, and a
// gateway-made task. A refusal is never forwarded and is audited once, with its reason; an allowed call reaches
// the upstream with the preset set.
func TestFeaturesAgreeOnEveryPath(t *testing.T) {
	var all []json.RawMessage
	if err := json.Unmarshal([]byte(combinationTools), &all); err != nil {
		t.Fatal(err)
	}
	pins := map[string]string{}
	for _, raw := range all[:3] { // wipe is not pinned: new in a pinned upstream, it is withheld
		name, _ := jsonrpc.LookupString(raw, "name")
		pins[name] = mustHash(t, pin.Tool, string(raw))
	}
	var audit callEvents
	r := startRouter(t, Options{
		Audit:   audit.add,
		Pinning: &Pinning{Lock: pin.NewLock(map[string]pin.Locked{"gh": {Tools: pins}}), Block: true},
		Tasks:   TaskOptions{Store: state.NewMemory(), SyncWindow: time.Minute, PollInterval: time.Second},
		Shape: Shape{
			Overrides: map[OverrideKey]Override{
				{Upstream: "gh", Kind: "tool", Name: "create_issue"}: {Arguments: map[string]json.RawMessage{"owner": json.RawMessage(`"acme"`)}},
			},
			Endpoints: []Endpoint{{Name: "e", Include: []string{"gh__*"}, Search: &SearchMode{}}},
		},
	},
		UpstreamConfig{Name: "gh", Prefix: "gh__", Mode: Shared, Transport: echoingUpstream(combinationTools), Kind: "stdio", Tasks: taskOptional},
		UpstreamConfig{Name: "web", Prefix: "web__", Mode: Shared, Transport: echoingUpstream(`[{"name":"fetch","inputSchema":{"type":"object"}}]`), Kind: "stdio"})
	deny := func(up, kind, name string) bool { return name != "delete_repo" }
	legacy := r.NewSession(SessionParams{ProtocolVersion: protocol.V20251125, Endpoint: "e", Allow: deny, Principal: "alice"})
	old := r.NewSession(SessionParams{ProtocolVersion: "2025-03-26", Endpoint: "e", Allow: deny, Principal: "alice"})
	pooled := r.PooledSession(SessionParams{Principal: "alice", Endpoint: "e", Allow: deny, Capabilities: json.RawMessage(`{}`)})

	// Each path turns a tool name and the raw arguments object into the request it sends.
	type path struct {
		name string
		s    *Session
		req  func(tool, args string) string
	}
	call := func(extra string) func(tool, args string) string {
		return func(tool, args string) string {
			return fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":%q,"arguments":%s%s}}`, tool, args, extra)
		}
	}
	paths := []path{
		{"2025-11-25 tools/call", legacy, call("")},
		{"2025-03-26 tools/call", old, call("")},
		{"2026-07-28 tools/call", pooled, call(`,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`)},
		{"call_tool", legacy, func(tool, args string) string {
			return fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"call_tool","arguments":{"name":%q,"arguments":%s}}}`, tool, args)
		}},
		{"task", legacy, call(`,"task":{"ttl":60000}`)},
	}
	cases := []struct {
		feature, tool, args string
		code                int    // 0: the call reaches the upstream
		reason              string // the audit event's reason for a refusal
		upstreamSees        string // for a call that reaches it: a fragment of the params the upstream received
	}{
		{"endpoint view", "web__fetch", `{}`, protocol.CodeInvalidParams, reasonOutsideView, ""},
		{"policy", "gh__delete_repo", `{}`, protocol.CodeInvalidParams, "policy", ""},
		{"pin", "gh__wipe", `{}`, protocol.CodeUnavailable, reasonWithheld, ""},
		{"preset sent", "gh__create_issue", `{"owner":"evil"}`, protocol.CodeInvalidParams, reasonPreset, ""},
		{"preset sent twice", "gh__create_issue", `{"title":"t","\u0074itle":"u"}`, protocol.CodeInvalidParams, `duplicate member "title"`, ""},
		{"preset applied", "gh__create_issue", `{"title":"t"}`, 0, "", `\"owner\":\"acme\"`},
		{"plain", "gh__search", `{"q":"x"}`, 0, "", `\"q\":\"x\"`},
	}
	for _, p := range paths {
		for _, c := range cases {
			t.Run(p.name+"/"+c.feature, func(t *testing.T) {
				audit.reset()
				m := finalAnswer(t, r, p.s, p.req(c.tool, c.args))
				if c.code == 0 {
					if m.Error() != nil || !strings.Contains(string(m.Result()), c.upstreamSees) {
						t.Fatalf("answered %s, want the upstream's result with %s", m.Raw(), c.upstreamSees)
					}
					return
				}
				if e := rpcErr(m); e == nil || e.Code != c.code {
					t.Fatalf("answered %s, want error %d", m.Raw(), c.code)
				}
				var refusals []CallEvent
				for _, e := range audit.all() {
					if e.Outcome == outcomeRefused || e.Outcome == outcomeDenied {
						refusals = append(refusals, e)
					}
				}
				if len(refusals) != 1 || refusals[0].Reason != c.reason {
					t.Errorf("refusals audited %+v, want one with reason %q", refusals, c.reason)
				}
			})
		}
	}
}

// finalAnswer sends raw and returns its answer; a task's CreateTaskResult is followed to its tasks/result.
func finalAnswer(t *testing.T, r *testRouter, s *Session, raw string) jsonrpc.Message {
	t.Helper()
	m := roundTrip(t, r, s, raw)
	if id, ok := jsonrpc.LookupString(m.Result(), "task", "taskId"); ok {
		return roundTrip(t, r, s, `{"jsonrpc":"2.0","id":2,"method":"tasks/result","params":{"taskId":`+string(jsonrpc.AppendQuote(nil, id))+`}}`)
	}
	return m
}
