package routing

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
	"github.com/switchboard-mcp/switchboard/upstream/protocol"
)

// shapedTools are the tools of the upstreams in these tests.
const shapedTools = `[
	{"name":"create_issue","description":"Create an issue","inputSchema":{"type":"object","properties":{"owner":{"type":"string"},"repo":{"type":"string"},"title":{"type":"string"}},"required":["owner","title"]},"annotations":{"readOnlyHint":false,"openWorldHint":true}},
	{"name":"search","inputSchema":{"type":"object"}},
	{"name":"delete_repo","inputSchema":{"type":"object"}}
]`

// echoingUpstream answers every tools/call with its own params, so a test sees what the upstream received.
func echoingUpstream(tools string) *fakeTransport {
	return newFakeTransport(func(c *fakeConn, m jsonrpc.Message) {
		if m.MethodIs("tools/call") {
			c.sendLocked(jsonrpc.AppendResult(nil, m.ID(), []byte(`{"content":[{"type":"text","text":`+string(jsonrpc.AppendQuote(nil, string(m.Params())))+`}]}`)))
			return
		}
		defaultAnswer(c, m, fakeInitCaps, tools)
	})
}

func shapedRouter(t *testing.T, sh Shape) *testRouter {
	t.Helper()
	return startRouter(t, Options{Shape: sh, PageSize: 2},
		UpstreamConfig{Name: "gh", Prefix: "gh__", Mode: Shared, Transport: echoingUpstream(shapedTools), Kind: "stdio"},
		UpstreamConfig{Name: "web", Prefix: "web__", Mode: Shared, Transport: echoingUpstream(`[{"name":"fetch","inputSchema":{"type":"object"}}]`), Kind: "stdio"})
}

// listAll pages through tools/list and returns the items.
func listAll(t *testing.T, r *testRouter, s *Session) []json.RawMessage {
	t.Helper()
	var all []json.RawMessage
	cursor := ""
	for i := 0; ; i++ {
		params := `{}`
		if cursor != "" {
			params = `{"cursor":"` + cursor + `"}`
		}
		m := roundTrip(t, r, s, `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":`+params+`}`)
		var page struct {
			Tools      []json.RawMessage `json:"tools"`
			NextCursor string            `json:"nextCursor"`
		}
		if err := json.Unmarshal(m.Result(), &page); err != nil {
			t.Fatalf("tools/list answered %s", m.Raw())
		}
		all = append(all, page.Tools...)
		if cursor = page.NextCursor; cursor == "" || i > 10 {
			return all
		}
	}
}

func names(items []json.RawMessage) []string {
	var out []string
	for _, it := range items {
		n, _ := jsonrpc.LookupString(it, "name")
		out = append(out, n)
	}
	return out
}

// TestEndpointViews: each endpoint sees and may call exactly what its globs select, pages with cursors of its
// own, and the whole catalog stays as it was without an endpoint.
func TestEndpointViews(t *testing.T) {
	r := shapedRouter(t, Shape{Endpoints: []Endpoint{
		{Name: "triage", Include: []string{"gh__*"}, Exclude: []string{"gh__delete_*"}},
		{Name: "research", Include: []string{"web__*", "gh__search"}},
	}})
	for _, c := range []struct {
		endpoint string
		want     []string
	}{
		{"", []string{"gh__create_issue", "gh__search", "gh__delete_repo", "web__fetch"}},
		{"triage", []string{"gh__create_issue", "gh__search"}},
		{"research", []string{"gh__search", "web__fetch"}},
	} {
		s := r.NewSession(SessionParams{ProtocolVersion: protocol.V20251125, Capabilities: json.RawMessage(`{}`), Endpoint: c.endpoint})
		if got := names(listAll(t, r, s)); !slices.Equal(got, c.want) {
			t.Errorf("endpoint %q lists %v, want %v", c.endpoint, got, c.want)
		}
		for _, tool := range []string{"gh__create_issue", "gh__search", "gh__delete_repo", "web__fetch"} {
			m := roundTrip(t, r, s, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"`+tool+`","arguments":{"owner":"x","title":"t"}}}`)
			listed := slices.Contains(c.want, tool)
			if listed != (m.Error() == nil) {
				t.Errorf("endpoint %q: calling %s answered %s (listed: %v)", c.endpoint, tool, m.Raw(), listed)
			}
			if !listed && !strings.Contains(string(m.Error()), "unknown tool") {
				t.Errorf("endpoint %q: %s is refused as %s, want the unknown-tool answer", c.endpoint, tool, m.Error())
			}
		}
	}
}

// TestEndpointCursorsAreTheirOwn: with a page smaller than the view, the next page's cursor works on its own
// endpoint and nowhere else, not even on one with the same globs, nor on the whole catalog.
func TestEndpointCursorsAreTheirOwn(t *testing.T) {
	r := shapedRouter(t, Shape{Endpoints: []Endpoint{{Name: "all-gh", Include: []string{"gh__*"}}, {Name: "other", Include: []string{"gh__*"}}}})
	s := r.NewSession(SessionParams{ProtocolVersion: protocol.V20251125, Endpoint: "all-gh"})
	if got := names(listAll(t, r, s)); !slices.Equal(got, []string{"gh__create_issue", "gh__search", "gh__delete_repo"}) {
		t.Fatalf("all-gh lists %v", got)
	}
	first := roundTrip(t, r, s, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	cursor, _ := jsonrpc.LookupString(first.Result(), "nextCursor")
	other := r.NewSession(SessionParams{ProtocolVersion: protocol.V20251125, Endpoint: "other"})
	m := roundTrip(t, r, other, `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":"`+cursor+`"}}`)
	if code, _ := m.ErrorCode(); code != protocol.CodeInvalidParams {
		t.Errorf("a cursor of all-gh on other answered %s, want -32602 (the same globs are still another endpoint)", m.Raw())
	}
	whole := r.session(`{}`)
	m = roundTrip(t, r, whole, `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":"`+cursor+`"}}`)
	if code, _ := m.ErrorCode(); code != protocol.CodeInvalidParams {
		t.Errorf("a cursor of all-gh on the whole catalog answered %s, want -32602", m.Raw())
	}
}

// TestOverrides: a renamed tool with a sharper description, merged annotations and a preset: clients see the
// admin's tool without the preset argument, its call reaches the upstream under the upstream's own name with
// the preset set, and a client that sends the preset is refused naming it.
func TestOverrides(t *testing.T) {
	r := shapedRouter(t, Shape{Overrides: map[OverrideKey]Override{
		{Upstream: "gh", Kind: "tool", Name: "create_issue"}: {
			Name: "file_bug", Description: "File a bug in the acme tracker",
			Annotations: json.RawMessage(`{"openWorldHint":false,"title":"File a bug"}`),
			Arguments:   map[string]json.RawMessage{"owner": json.RawMessage(` "acme" `)},
		},
	}})
	s := r.session(`{}`)
	var tool json.RawMessage
	for _, it := range listAll(t, r, s) {
		if n, _ := jsonrpc.LookupString(it, "name"); n == "file_bug" {
			tool = it
		}
		if n, _ := jsonrpc.LookupString(it, "name"); n == "gh__create_issue" {
			t.Errorf("the overridden tool is still listed under its default name: %s", it)
		}
	}
	if tool == nil {
		t.Fatal("file_bug is not listed")
	}
	var def struct {
		Description string
		InputSchema struct {
			Properties map[string]any
			Required   []string
		}
		Annotations map[string]any
	}
	if err := json.Unmarshal(tool, &def); err != nil {
		t.Fatal(err)
	}
	if def.Description != "File a bug in the acme tracker" {
		t.Errorf("description %q", def.Description)
	}
	if _, ok := def.InputSchema.Properties["owner"]; ok || slices.Contains(def.InputSchema.Required, "owner") {
		t.Errorf("the preset argument is still in the schema: %s", tool)
	}
	if _, ok := def.InputSchema.Properties["repo"]; !ok || !slices.Contains(def.InputSchema.Required, "title") {
		t.Errorf("the other arguments were lost: %s", tool)
	}
	if def.Annotations["openWorldHint"] != false || def.Annotations["readOnlyHint"] != false || def.Annotations["title"] != "File a bug" {
		t.Errorf("annotations not merged: %v", def.Annotations)
	}

	m := roundTrip(t, r, s, `{"jsonrpc":"2.0","id":"c1","method":"tools/call","params":{"name":"file_bug","arguments":{"title":"crash"}}}`)
	var res struct {
		Content []struct{ Text string }
	}
	if err := json.Unmarshal(m.Result(), &res); err != nil || len(res.Content) != 1 {
		t.Fatalf("call answered %s", m.Raw())
	}
	if got := res.Content[0].Text; got != `{"name":"create_issue","arguments":{"owner":"acme","title":"crash"}}` {
		t.Errorf("the upstream received %s", got)
	}
	if string(m.ID()) != `"c1"` {
		t.Errorf("the answer's id is %s", m.ID())
	}
	for _, args := range []string{`{"title":"x","owner":"evil"}`, `{"owner":null}`} {
		m = roundTrip(t, r, s, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"file_bug","arguments":`+args+`}}`)
		if code, _ := m.ErrorCode(); code != protocol.CodeInvalidParams || !strings.Contains(string(m.Error()), `\"owner\"`) {
			t.Errorf("sending the preset (%s) answered %s, want -32602 naming owner", args, m.Raw())
		}
	}
	m = roundTrip(t, r, s, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"gh__create_issue","arguments":{}}}`)
	if m.Error() == nil {
		t.Errorf("the default name of an overridden tool still routes: %s", m.Raw())
	}
}

// TestSetShape: a reload of the shape changes what a live session sees; it hears list_changed only when its own
// view changed, and keeps its session.
func TestSetShape(t *testing.T) {
	r := shapedRouter(t, Shape{Endpoints: []Endpoint{{Name: "a", Include: []string{"gh__search"}}, {Name: "b", Include: []string{"web__*"}}}})
	a := r.NewSession(SessionParams{ProtocolVersion: protocol.V20251125, Endpoint: "a"})
	b := r.NewSession(SessionParams{ProtocolVersion: protocol.V20251125, Endpoint: "b"})
	if err := r.SetShape(Shape{Endpoints: []Endpoint{{Name: "a", Include: []string{"gh__search", "gh__create_issue"}}, {Name: "b", Include: []string{"web__*"}}}}); err != nil {
		t.Fatal(err)
	}
	if got := names(listAll(t, r, a)); !slices.Equal(got, []string{"gh__create_issue", "gh__search"}) {
		t.Errorf("after the reload a lists %v", got)
	}
	if !heard(a.Standalone(), "notifications/tools/list_changed") {
		t.Error("a did not hear list_changed after its view changed")
	}
	if heard(b.Standalone(), "notifications/tools/list_changed") {
		t.Error("b heard list_changed although its view did not change")
	}
	if r.Session(a.ID()) == nil {
		t.Error("the reload ended a's session")
	}
	if err := r.SetShape(Shape{Endpoints: []Endpoint{{Name: "x", Include: []string{"[bad"}}}}); err == nil {
		t.Error("a malformed glob was accepted")
	}
}

// heard drains what is queued on a stream and reports whether it holds the method.
func heard(s *Stream, method string) bool {
	found := false
	for {
		msg, _, ok := s.TryNext()
		if !ok {
			return found
		}
		found = found || strings.Contains(string(msg), `"`+method+`"`)
	}
}
