package routing

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/switchboard-mcp/switchboard/upstream/protocol"
)

// searchResult is search_tools' answer.
type searchResult struct {
	Content []struct {
		Text string `json:"text"`
	} `json:"content"`
	StructuredContent struct {
		Tools []struct {
			Name        string          `json:"name"`
			Title       string          `json:"title"`
			Description string          `json:"description"`
			InputSchema json.RawMessage `json:"inputSchema"`
			Score       float64         `json:"score"`
			Reason      string          `json:"reason"`
		} `json:"tools"`
	} `json:"structuredContent"`
}

func searchFor(t *testing.T, r *testRouter, s *Session, query string, limit int) searchResult {
	t.Helper()
	q, _ := json.Marshal(query)
	m := roundTrip(t, r, s, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"search_tools","arguments":{"query":`+string(q)+`,"limit":`+strconv.Itoa(limit)+`}}}`)
	var res searchResult
	if m.Error() != nil || json.Unmarshal(m.Result(), &res) != nil {
		t.Fatalf("search_tools %q answered %s", query, m.Raw())
	}
	return res
}

func (r searchResult) names() []string {
	var out []string
	for _, tool := range r.StructuredContent.Tools {
		out = append(out, tool.Name)
	}
	return out
}

// TestSearchMode: an endpoint in search mode lists the meta-tools and its AlwaysList; search_tools finds tools by
// the words clients see (after renames and description overrides), never one the session may not call;
// call_tool and a direct call run the tool as tools/call would; ExposeFound lists what was found, with
// list_changed; bad arguments get -32602.
func TestSearchMode(t *testing.T) {
	sh := Shape{
		Overrides: map[OverrideKey]Override{
			{Upstream: "gh", Kind: "tool", Name: "search"}: {Name: "find_code", Description: "Find code in the repositories by keyword"},
		},
		Endpoints: []Endpoint{
			{Name: "s", Include: []string{"gh__*", "find_code", "web__*"}, Search: &SearchMode{AlwaysList: []string{"web__*"}, ExposeFound: true}},
			{Name: "list", Include: []string{"gh__*"}},
		},
	}
	r := shapedRouter(t, sh)
	deny := func(upstream, kind, name string) bool { return name != "delete_repo" }
	s := r.NewSession(SessionParams{ProtocolVersion: protocol.V20251125, Endpoint: "s", Allow: deny})

	if got := names(listAll(t, r, s)); !slices.Equal(got, []string{"search_tools", "call_tool", "web__fetch"}) {
		t.Fatalf("tools/list in search mode: %v", got)
	}
	if got := names(listAll(t, r, r.NewSession(SessionParams{ProtocolVersion: protocol.V20251125, Endpoint: "list"}))); slices.Contains(got, "search_tools") {
		t.Errorf("an endpoint in list mode lists %v", got)
	}

	if m := roundTrip(t, r, s, `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"search_tools","arguments":{"query":"issue","limit":5.0}}}`); m.Error() != nil {
		t.Errorf("limit 5.0, an integer in JSON Schema: %s", m.Raw())
	}
	res := searchFor(t, r, s, "create an issue", 5)
	if got := res.names(); len(got) == 0 || got[0] != "gh__create_issue" {
		t.Errorf("create an issue found %v", got)
	}
	top := res.StructuredContent.Tools[0]
	if top.Description != "Create an issue" || !strings.Contains(string(top.InputSchema), `"owner"`) || top.Score <= 0 || !strings.Contains(top.Reason, "issue") {
		t.Errorf("the result carries %+v", top)
	}
	if text := res.Content[0].Text; !strings.Contains(text, "gh__create_issue") || !strings.Contains(text, "owner*") || !strings.Contains(text, "matched: ") {
		t.Errorf("the text rendering is %q", text)
	}
	if got := searchFor(t, r, s, "find code repositories keyword", 5).names(); len(got) == 0 || got[0] != "find_code" {
		t.Errorf("the renamed tool is not found by its new name and description: %v", got)
	}
	if got := searchFor(t, r, s, "delete repo", 50).names(); slices.Contains(got, "gh__delete_repo") {
		t.Errorf("a denied tool was found: %v", got)
	}
	if !heard(s.Standalone(), "notifications/tools/list_changed") {
		t.Error("ExposeFound: no list_changed after a search found new tools")
	}
	if got := names(listAll(t, r, s)); !slices.Contains(got, "gh__create_issue") || !slices.Contains(got, "find_code") || slices.Contains(got, "gh__delete_repo") {
		t.Errorf("ExposeFound: the list after the searches is %v", got)
	}

	call := roundTrip(t, r, s, `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"call_tool","arguments":{"name":"find_code","arguments":{"q":"x"}},"_meta":{"progressToken":"p1"}}}`)
	if text := string(call.Result()); !strings.Contains(text, `\"name\":\"search\"`) || !strings.Contains(text, `\"q\":\"x\"`) || !strings.Contains(text, `progressToken`) {
		t.Errorf("call_tool of the renamed tool reached the upstream as %s", call.Raw())
	}
	direct := roundTrip(t, r, s, `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"gh__create_issue","arguments":{"owner":"o","title":"t"}}}`)
	if direct.Error() != nil {
		t.Errorf("a direct call of a searchable tool: %s", direct.Raw())
	}
	for _, tc := range []struct{ name, params string }{
		{"no query", `{"name":"search_tools","arguments":{}}`},
		{"blank query", `{"name":"search_tools","arguments":{"query":"  "}}`},
		{"limit 0", `{"name":"search_tools","arguments":{"query":"x","limit":0}}`},
		{"limit 51", `{"name":"search_tools","arguments":{"query":"x","limit":51}}`},
		{"limit 2.5", `{"name":"search_tools","arguments":{"query":"x","limit":2.5}}`},
		{"query not a string", `{"name":"search_tools","arguments":{"query":3}}`},
		{"call_tool without a name", `{"name":"call_tool","arguments":{}}`},
		{"call_tool of itself", `{"name":"call_tool","arguments":{"name":"call_tool"}}`},
		{"call_tool with array arguments", `{"name":"call_tool","arguments":{"name":"find_code","arguments":[1]}}`},
		{"call_tool of a denied tool", `{"name":"call_tool","arguments":{"name":"gh__delete_repo"}}`},
	} {
		m := roundTrip(t, r, s, `{"jsonrpc":"2.0","id":10,"method":"tools/call","params":`+tc.params+`}`)
		if e := rpcErr(m); e == nil || e.Code != protocol.CodeInvalidParams {
			t.Errorf("%s: %s, want -32602", tc.name, m.Raw())
		}
	}
}

// TestSearchCursorsAreTheMode's: a search-mode list's cursor counts its own synthetic list, so after a reload
// switches the endpoint to list mode it is refused rather than read as a catalog position, and the other way round.
func TestSearchCursorsAreTheMode(t *testing.T) {
	search := Shape{Endpoints: []Endpoint{{Name: "s", Search: &SearchMode{AlwaysList: []string{"*"}}}}}
	list := Shape{Endpoints: []Endpoint{{Name: "s"}}}
	r := shapedRouter(t, search) // PageSize 2: every list takes pages
	s := r.NewSession(SessionParams{ProtocolVersion: protocol.V20251125, Endpoint: "s"})
	cursorOf := func() string {
		m := roundTrip(t, r, s, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
		var page struct{ NextCursor string }
		if json.Unmarshal(m.Result(), &page) != nil || page.NextCursor == "" {
			t.Fatalf("no cursor in %s", m.Raw())
		}
		return page.NextCursor
	}
	for _, step := range []struct{ from, to Shape }{{search, list}, {list, search}} {
		if err := r.SetShape(step.from); err != nil {
			t.Fatal(err)
		}
		cursor := cursorOf()
		if err := r.SetShape(step.to); err != nil {
			t.Fatal(err)
		}
		m := roundTrip(t, r, s, `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"cursor":"`+cursor+`"}}`)
		if e := rpcErr(m); e == nil || e.Code != protocol.CodeInvalidParams {
			t.Errorf("a cursor of the other mode answered %s", m.Raw())
		}
	}
}

// TestSearchModeListChanged: a session hears list_changed when its own list changes: when a reload switches its
// endpoint between list and search mode, when the AlwaysList changes; not when a tool it does not list changes.
func TestSearchModeListChanged(t *testing.T) {
	ep := func(m *SearchMode, ov map[OverrideKey]Override) Shape {
		return Shape{Overrides: ov, Endpoints: []Endpoint{{Name: "s", Search: m}}}
	}
	rename := map[OverrideKey]Override{{Upstream: "gh", Kind: "tool", Name: "delete_repo"}: {Description: "now described"}}
	r := shapedRouter(t, ep(nil, nil))
	s := r.NewSession(SessionParams{ProtocolVersion: protocol.V20251125, Endpoint: "s"})
	for _, step := range []struct {
		what  string
		shape Shape
		heard bool
	}{
		{"list to search", ep(&SearchMode{}, nil), true},
		{"the same again", ep(&SearchMode{}, nil), false},
		{"an unlisted tool changes", ep(&SearchMode{}, rename), false},
		{"alwaysList added", ep(&SearchMode{AlwaysList: []string{"web__*"}}, rename), true},
		{"a listed tool changes", ep(&SearchMode{AlwaysList: []string{"web__*", "gh__delete_repo"}}, nil), true},
		{"exposeFound turned on", ep(&SearchMode{AlwaysList: []string{"web__*", "gh__delete_repo"}, ExposeFound: true}, nil), true},
		{"search to list", ep(nil, nil), true},
	} {
		drainNotices(s)
		if err := r.SetShape(step.shape); err != nil {
			t.Fatal(err)
		}
		if got := heard(s.Standalone(), "notifications/tools/list_changed"); got != step.heard {
			t.Errorf("%s: heard list_changed %v, want %v", step.what, got, step.heard)
		}
	}
}

// TestSearchIndexFollowsTheCatalog: the index is derived from each catalog snapshot, so a tool an upstream adds
// is found after its list_changed, and one it removes is not.
func TestSearchIndexFollowsTheCatalog(t *testing.T) {
	up := newMutableUpstream(`[{"name":"read_file","description":"Read a file from disk","inputSchema":{"type":"object"}}]`)
	// The new tool is in the AlwaysList, so the session's own list changes and it hears list_changed.
	r := startRouter(t, Options{Shape: Shape{Root: &SearchMode{AlwaysList: []string{"fs__write_*"}}}},
		UpstreamConfig{Name: "fs", Prefix: "fs__", Mode: Shared, Transport: up.fakeTransport, Kind: "stdio"})
	s := r.session(defaultClientCaps)
	if got := searchFor(t, r, s, "read a file", 10).names(); !slices.Equal(got, []string{"fs__read_file"}) {
		t.Fatalf("before the change: %v", got)
	}
	up.change(`[{"name":"write_file","description":"Write a file to disk","inputSchema":{"type":"object"}}]`)
	waitNotice(t, r, s, "notifications/tools/list_changed")
	if got := searchFor(t, r, s, "write a file", 10).names(); !slices.Equal(got, []string{"fs__write_file"}) {
		t.Errorf("after the change, write a file: %v", got)
	}
	if got := searchFor(t, r, s, "read", 10).names(); slices.Contains(got, "fs__read_file") {
		t.Errorf("a removed tool is still found: %v", got)
	}
}

// synonymEmbedder is a fake embedding provider: a text's vector counts its words by meaning, so "folder" and
// "directory" are one dimension, as a real model would place them near each other. failQuery makes every query
// fail, as a provider that is down does.
type synonymEmbedder struct {
	failQuery bool
}

func (e *synonymEmbedder) vector(text string) []float32 {
	dims := map[string]int{"folder": 0, "directory": 0, "make": 1, "create": 1, "file": 2, "read": 3, "new": 1}
	v := make([]float32, 4)
	for _, w := range strings.Fields(strings.NewReplacer("_", " ", ":", " ", "\n", " ", ".", " ").Replace(strings.ToLower(text))) {
		if d, ok := dims[w]; ok {
			v[d]++
		}
	}
	return v
}

func (e *synonymEmbedder) Vectors(_ context.Context, docs map[string]string) (map[string][]float32, error) {
	out := map[string][]float32{}
	for k, text := range docs {
		out[k] = e.vector(text)
	}
	return out, nil
}

func (e *synonymEmbedder) Query(_ context.Context, text string) ([]float32, error) {
	if e.failQuery {
		return nil, errors.New("provider down")
	}
	return e.vector(text), nil
}

// TestHybridSearch: with an embedding provider, a query finds a tool by meaning that its words miss ("make a
// folder" finds create_directory); when the provider fails, search answers with BM25 alone, never an error.
func TestHybridSearch(t *testing.T) {
	tools := `[{"name":"create_directory","description":"Create a new directory","inputSchema":{"type":"object"}},{"name":"read_file","description":"Read a file","inputSchema":{"type":"object"}},{"name":"make_coffee","description":"Brew coffee","inputSchema":{"type":"object"}}]`
	for _, tc := range []struct {
		name  string
		emb   Embedder
		found bool
	}{
		{"bm25 alone", nil, false},
		{"hybrid", &synonymEmbedder{}, true},
		{"provider down", &synonymEmbedder{failQuery: true}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := startRouter(t, Options{Embedder: tc.emb, Shape: Shape{Root: &SearchMode{}}},
					UpstreamConfig{Name: "fs", Prefix: "fs__", Mode: Shared, Transport: echoingUpstream(tools), Kind: "stdio"})
				synctest.Wait() // the vectors of the first catalog are computed
				s := r.session(defaultClientCaps)
				got := searchFor(t, r, s, "folder", 3).names()
				if slices.Contains(got, "fs__create_directory") != tc.found {
					t.Errorf("folder found %v", got)
				}
				if got := searchFor(t, r, s, "read a file", 3).names(); len(got) == 0 || got[0] != "fs__read_file" {
					t.Errorf("read a file found %v", got)
				}
				if got := searchFor(t, r, s, "folder", 3).names(); slices.Contains(got, "fs__make_coffee") {
					t.Errorf("a tool unrelated by words and by meaning was found: %v", got)
				}
			})
		})
	}
}

// TestCallToolParked: a 2026-07-28 client's call_tool of a tool whose legacy upstream asks for input gets the
// InputRequiredResult, and its retry (call_tool again, with requestState and inputResponses) resumes the parked
// call: call_tool is unwrapped before the retry is matched, so the call is found under the tool's own name.
func TestCallToolParked(t *testing.T) {
	a := newAskUpstream()
	r := startRouter(t, Options{Shape: Shape{Root: &SearchMode{}}}, UpstreamConfig{Name: "fake", Prefix: "fake__", Mode: PerClient, Transport: a.ft, Kind: "stdio"})
	s := r.PooledSession(SessionParams{Principal: "alice", Capabilities: json.RawMessage(`{"elicitation":{}}`)})
	first, err := ask(r.ctx, s, `{"jsonrpc":"2.0","id":"c1","method":"tools/call","params":{"name":"call_tool","arguments":{"name":"fake__ask","arguments":{}}}}`)
	if err != nil {
		t.Fatal(err)
	}
	key, _, state := inputRequired(t, first)
	final, err := ask(r.ctx, s, `{"jsonrpc":"2.0","id":"c2","method":"tools/call","params":{"name":"call_tool","arguments":{"name":"fake__ask","arguments":{}},"inputResponses":{"`+key+`":{"action":"accept","content":{"name":"Ada"}}},"requestState":"`+state+`"}}`)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"jsonrpc":"2.0","id":"c2","result":{"content":[{"type":"text","text":"Ada"}]}}`; string(final.Raw()) != want {
		t.Errorf("the retry through call_tool answered %s, want %s", final.Raw(), want)
	}
}
