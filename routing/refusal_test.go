package routing

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/switchboard-mcp/switchboard/routing/pin"
	"github.com/switchboard-mcp/switchboard/upstream/protocol"
)

// presetShape presets gh's create_issue "owner" and puts gh's tools behind the "gh" endpoint, search mode on "s".
func presetShape() Shape {
	return Shape{
		Overrides: map[OverrideKey]Override{
			{Upstream: "gh", Kind: "tool", Name: "create_issue"}: {Arguments: map[string]json.RawMessage{"owner": json.RawMessage(`"acme"`)}},
		},
		Endpoints: []Endpoint{
			{Name: "gh", Include: []string{"gh__*"}},
			{Name: "s", Include: []string{"gh__*"}, Search: &SearchMode{}},
		},
	}
}

// TestDuplicateMemberRefused (issue 31, item 1): a request whose params hold a member name twice in any object,
// spelled alike or escaped, is refused with -32602 before anything reads it, on every path that reaches an
// upstream, and the refusal is audited; nothing reaches the upstream. Without the check, the first "arguments"
// got the preset and the upstream kept the second: the client chose the preset's value.
func TestDuplicateMemberRefused(t *testing.T) {
	var audit callEvents
	opts := Options{Shape: presetShape(), Audit: audit.add}
	r := startRouter(t, opts,
		UpstreamConfig{Name: "gh", Prefix: "gh__", Mode: Shared, Transport: echoingUpstream(shapedTools), Kind: "stdio"})
	sessions := map[string]*Session{
		"root":    r.NewSession(SessionParams{ProtocolVersion: protocol.V20251125, Capabilities: json.RawMessage(defaultClientCaps)}),
		"gh":      r.NewSession(SessionParams{ProtocolVersion: protocol.V20251125, Endpoint: "gh"}),
		"search":  r.NewSession(SessionParams{ProtocolVersion: protocol.V20251125, Endpoint: "s"}),
		"pooled":  r.PooledSession(SessionParams{Principal: "alice", Capabilities: json.RawMessage(`{}`)}),
		"2025-03": r.NewSession(SessionParams{ProtocolVersion: "2025-03-26"}),
	}
	for _, c := range []struct {
		name, session, params, dup string
	}{
		{"arguments twice", "gh", `{"name":"gh__create_issue","arguments":{},"arguments":{"owner":"evil"}}`, "arguments"},
		{"arguments escaped", "gh", `{"name":"gh__create_issue","arguments":{},"\u0061rguments":{"owner":"evil"}}`, "arguments"},
		{"a member of arguments twice", "root", `{"name":"gh__create_issue","arguments":{"title":"a","title":"b"}}`, "title"},
		{"deep in arguments", "root", `{"name":"gh__search","arguments":{"q":{"a":[{"x":1,"\u0078":2}]}}}`, "x"},
		{"name twice", "root", `{"name":"gh__search","name":"gh__delete_repo","arguments":{}}`, "name"},
		{"_meta twice", "root", `{"name":"gh__search","arguments":{},"_meta":{"progressToken":1},"_meta":{}}`, "_meta"},
		{"call_tool's arguments", "search", `{"name":"call_tool","arguments":{"name":"gh__create_issue","arguments":{},"arguments":{"owner":"evil"}}}`, "arguments"},
		{"call_tool's name", "search", `{"name":"call_tool","arguments":{"name":"gh__search","n\u0061me":"gh__delete_repo"}}`, "name"},
		{"a task's call", "root", `{"name":"gh__create_issue","arguments":{},"arguments":{"owner":"evil"},"task":{"ttl":1000}}`, "arguments"},
		{"a 2026-07-28 request", "pooled", `{"name":"gh__create_issue","arguments":{},"arguments":{"owner":"evil"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}`, "arguments"},
		{"a 2025-03-26 session", "2025-03", `{"name":"gh__create_issue","arguments":{},"arguments":{"owner":"evil"}}`, "arguments"},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := roundTrip(t, r, sessions[c.session], `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":`+c.params+`}`)
			e := rpcErr(m)
			if e == nil || e.Code != protocol.CodeInvalidParams || !strings.Contains(e.Message, `"`+c.dup+`" twice`) {
				t.Fatalf("answered %s, want -32602 naming %q twice", m.Raw(), c.dup)
			}
			ev := audit.last(t)
			if ev.Outcome != outcomeRefused || ev.Reason != `duplicate member "`+c.dup+`"` || ev.Code != protocol.CodeInvalidParams {
				t.Errorf("audit event %+v", ev)
			}
		})
	}
	// Other methods read params too: each is refused the same way.
	for _, raw := range []string{
		`{"jsonrpc":"2.0","id":2,"method":"prompts/get","params":{"name":"x","name":"y"}}`,
		`{"jsonrpc":"2.0","id":3,"method":"resources/read","params":{"uri":"a://b","\u0075ri":"c://d"}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tasks/get","params":{"taskId":"a","taskId":"b"}}`,
		`{"jsonrpc":"2.0","id":5,"method":"completion/complete","params":{"ref":{"type":"ref/prompt","name":"a","name":"b"},"argument":{"name":"x","value":""}}}`,
	} {
		m := roundTrip(t, r, sessions["root"], raw)
		if e := rpcErr(m); e == nil || e.Code != protocol.CodeInvalidParams || !strings.Contains(e.Message, "twice") {
			t.Errorf("%s answered %s", raw, m.Raw())
		}
	}
	// Sibling objects may share names: that is not a duplicate, and the call goes through with the preset.
	m := roundTrip(t, r, sessions["gh"], `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"gh__create_issue","arguments":{"title":"t","labels":{"title":1}},"_meta":{"title":2}}}`)
	if m.Error() != nil || !strings.Contains(string(m.Result()), `\"owner\":\"acme\"`) {
		t.Fatalf("a call with names repeated in sibling objects answered %s", m.Raw())
	}
}

// TestRefusalsAudited (issue 31, item 9): every request the gateway refuses instead of forwarding writes one
// audit event with its reason: a preset argument sent, a tool outside the endpoint, a tool withheld by pinning,
// a name nobody offers, a policy denial, a resource outside the endpoint.
func TestRefusalsAudited(t *testing.T) {
	var audit callEvents
	r := startRouter(t, Options{Shape: presetShape(), Audit: audit.add},
		UpstreamConfig{Name: "gh", Prefix: "gh__", Mode: Shared, Transport: echoingUpstream(shapedTools), Kind: "stdio"},
		UpstreamConfig{Name: "web", Prefix: "web__", Mode: Shared, Transport: echoingUpstream(`[{"name":"fetch","inputSchema":{"type":"object"}}]`), Kind: "stdio"})
	gh := r.NewSession(SessionParams{ProtocolVersion: protocol.V20251125, Endpoint: "gh",
		Allow: func(up, kind, name string) bool { return name != "delete_repo" }})
	for _, c := range []struct {
		name, params          string
		outcome, reason, tool string
		upstream              string
	}{
		{"preset sent", `{"name":"gh__create_issue","arguments":{"owner":"evil"}}`, outcomeRefused, reasonPreset, "gh__create_issue", "gh"},
		{"preset sent in another case", `{"name":"gh__create_issue","arguments":{"Owner":"evil"}}`, outcomeRefused, reasonPreset, "gh__create_issue", "gh"},
		{"outside the endpoint", `{"name":"web__fetch","arguments":{}}`, outcomeRefused, reasonOutsideView, "web__fetch", "web"},
		{"unknown", `{"name":"nobody__offers","arguments":{}}`, outcomeRefused, reasonUnknown, "nobody__offers", ""},
		{"policy", `{"name":"gh__delete_repo","arguments":{}}`, outcomeDenied, "policy", "gh__delete_repo", "gh"},
	} {
		t.Run(c.name, func(t *testing.T) {
			audit.reset()
			m := roundTrip(t, r, gh, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":`+c.params+`}`)
			if m.Error() == nil {
				t.Fatalf("answered %s, want a refusal", m.Raw())
			}
			evs := audit.all()
			if len(evs) != 1 {
				t.Fatalf("%d audit events %+v, want one", len(evs), evs)
			}
			if e := evs[0]; e.Outcome != c.outcome || e.Reason != c.reason || e.Tool != c.tool || e.Upstream != c.upstream || e.Method != "tools/call" || e.Endpoint != "gh" {
				t.Errorf("audit event %+v, want outcome %q reason %q tool %q upstream %q, endpoint gh", e, c.outcome, c.reason, c.tool, c.upstream)
			}
		})
	}
}

func (a *callEvents) reset() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.events = nil
}

func (a *callEvents) all() []CallEvent {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]CallEvent(nil), a.events...)
}

// TestWithheldRefusalAudited: a call of a tool that pinning withholds is audited as refused, with the reason and
// the code the client got.
func TestWithheldRefusalAudited(t *testing.T) {
	var audit callEvents
	tools := `[{"name":"read","description":"Reads a file.","inputSchema":{"type":"object"}},{"name":"wipe","description":"Deletes everything.","inputSchema":{"type":"object"}}]`
	var all []json.RawMessage
	_ = json.Unmarshal([]byte(tools), &all)
	lock := pin.NewLock(map[string]pin.Locked{"fs": {Tools: map[string]string{"read": mustHash(t, pin.Tool, string(all[0]))}}})
	r := startRouter(t, Options{Audit: audit.add, Pinning: &Pinning{Lock: lock, Block: true}},
		UpstreamConfig{Name: "fs", Prefix: "fs__", Mode: Shared, Transport: echoingUpstream(tools), Kind: "stdio"})
	m := roundTrip(t, r, r.session(defaultClientCaps), `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"fs__wipe","arguments":{}}}`)
	e := rpcErr(m)
	if e == nil || e.Code != protocol.CodeUnavailable {
		t.Fatalf("answered %s", m.Raw())
	}
	if ev := audit.last(t); ev.Outcome != outcomeRefused || ev.Reason != reasonWithheld || ev.Upstream != "fs" || ev.Code != protocol.CodeUnavailable {
		t.Errorf("audit event %+v", ev)
	}
}
