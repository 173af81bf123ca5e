package routing

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/upstream"
)

// onlyTools is a policy that lets a principal see and call the named tools of every upstream, and nothing else
// but the upstreams themselves.
func onlyTools(names ...string) Allow {
	return func(_, kind, name string) bool {
		return kind == "upstream" || kind == "tool" && slices.Contains(names, name)
	}
}

// listWith is listAll with a request that carries its own policy (WithAllow).
func listWith(t *testing.T, r *testRouter, s *Session, allow Allow) []string {
	t.Helper()
	out := newStream(1, 16)
	s.HandleRequest(WithAllow(context.Background(), allow), mustParse(t, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`), out)
	msg, _, ok := out.Next(r.ctx)
	if !ok {
		t.Fatal("no answer to tools/list")
	}
	var page struct{ Tools []json.RawMessage }
	if err := json.Unmarshal(mustParse(t, string(msg)).Result(), &page); err != nil {
		t.Fatalf("tools/list answered %s", msg)
	}
	return names(page.Tools)
}

// TestPooledSessionPolicy (issue 19, item 6): a pooled 2026-07-28 session applies the policy of the request in
// hand, not that of the request that started it: the latest request's, or the request's own when it carries one
// (WithAllow), while other requests of the same session keep theirs; and a policy reload is followed as by a
// legacy session (the policy reads the policies in force at each check).
func TestPooledSessionPolicy(t *testing.T) {
	r := startRouter(t, Options{}, UpstreamConfig{Name: "gh", Prefix: "gh__", Mode: Shared, Transport: echoingUpstream(shapedTools), Kind: "stdio"})
	params := func(allow Allow) SessionParams {
		return SessionParams{Principal: "iss|ann", Capabilities: json.RawMessage(`{}`), Allow: allow}
	}
	// A reloadable policy, as cmd's: each check reads the policies in force.
	var reloadable atomic.Pointer[Allow]
	first := onlyTools("search")
	reloadable.Store(&first)
	viaReload := Allow(func(up, kind, name string) bool { return (*reloadable.Load())(up, kind, name) })

	s := r.PooledSession(params(viaReload))
	for _, step := range []struct {
		what   string
		allow  Allow // the request's SessionParams.Allow; nil: the step reloads instead
		reload Allow
		want   []string
		call   string // a tool the step's policy lets it call
		denied string // one it does not
	}{
		{"the first request's policy", viaReload, nil, []string{"gh__search"}, "gh__search", "gh__create_issue"},
		{"a reload, same request policy", nil, onlyTools("search", "delete_repo"), []string{"gh__search", "gh__delete_repo"}, "gh__delete_repo", "gh__create_issue"},
		{"a later request with other claims", onlyTools("create_issue"), nil, []string{"gh__create_issue"}, "gh__create_issue", "gh__search"},
		{"no policy at all (auth off)", func(string, string, string) bool { return true }, nil, []string{"gh__create_issue", "gh__search", "gh__delete_repo"}, "gh__delete_repo", ""},
	} {
		if step.reload != nil {
			reloadable.Store(&step.reload)
		} else if got := r.PooledSession(params(step.allow)); got != s {
			t.Fatalf("%s: another pooled session for the same principal and capabilities", step.what)
		}
		if got := names(listAll(t, r, s)); !slices.Equal(got, step.want) {
			t.Errorf("%s: lists %v, want %v", step.what, got, step.want)
		}
		if m := roundTrip(t, r, s, callTool(1, step.call)); m.Error() != nil {
			t.Errorf("%s: %s refused: %s", step.what, step.call, m.Raw())
		}
		if step.denied != "" {
			if m := roundTrip(t, r, s, callTool(2, step.denied)); m.Error() == nil {
				t.Errorf("%s: %s allowed", step.what, step.denied)
			}
		}
	}

	// Two callers of one pooled session, each request with its own policy: neither sees the other's tools.
	r.PooledSession(params(onlyTools("delete_repo"))) // the session's latest is a third one
	if got := listWith(t, r, s, onlyTools("search")); !slices.Equal(got, []string{"gh__search"}) {
		t.Errorf("a request with its own policy lists %v", got)
	}
	if got := listWith(t, r, s, onlyTools("create_issue")); !slices.Equal(got, []string{"gh__create_issue"}) {
		t.Errorf("another request with its own policy lists %v", got)
	}
	out := newStream(1, 16)
	s.HandleRequest(WithAllow(context.Background(), onlyTools("search")), mustParse(t, callTool(3, "gh__delete_repo")), out)
	if msg, _, _ := out.Next(r.ctx); mustParse(t, string(msg)).Error() == nil {
		t.Errorf("a request whose own policy denies delete_repo called it: %s", msg)
	}
}

// TestRediscover (issue 19, item 6): a stateless upstream's server/discover is fetched again when its ttlMs runs
// out, so the gateway follows what the upstream says of itself: here a prompts capability it gains after
// starting, whose list joins the catalog (sessions hear list_changed).
func TestRediscover(t *testing.T) {
	var mu sync.Mutex
	discovers := 0
	discovered := make(chan int, 16)
	srv := mcp.NewServer(&mcp.Implementation{Name: "modern", Version: "1"}, &mcp.ServerOptions{
		SetCacheable: func(_ context.Context, req mcp.Request, c *mcp.Cacheable) {
			if _, ok := req.GetParams().(*mcp.DiscoverParams); !ok {
				return
			}
			c.TTLMs = 1 // the gateway's floor (minRediscover) applies
			mu.Lock()
			discovers++
			n := discovers
			mu.Unlock()
			discovered <- n
		},
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "echo", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, *mcp.CallToolRequest, any) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echo"}}}, nil, nil
	})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(ts.Close)
	tr, err := upstream.NewTransport(upstream.Spec{Name: "modern", URL: ts.URL, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	r := startRouter(t, Options{}, UpstreamConfig{Name: "modern", Prefix: "m__", Mode: Shared, Transport: tr, Kind: "http"})
	up := r.upstream("modern")
	if !up.modern() {
		t.Fatal("the upstream was not taken for a stateless one")
	}
	if _, ok := up.capability("prompts"); ok {
		t.Fatal("prompts offered before the upstream had any")
	}
	s := r.session(`{}`)
	next := func() int {
		t.Helper()
		select {
		case n := <-discovered:
			return n
		case <-r.ctx.Done():
			t.Fatal("server/discover was not fetched again")
			return 0
		}
	}
	if next() != 1 {
		t.Fatal("the first discover was not the probe")
	}

	// The upstream gains a prompt (and so the capability) after the gateway discovered it.
	srv.AddPrompt(&mcp.Prompt{Name: "greet"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "hi"}}}}, nil
	})
	if n := next(); n != 2 {
		t.Fatalf("discover %d, want the second", n)
	}
	waitNotice(t, r, s, "notifications/prompts/list_changed")
	m := roundTrip(t, r, s, `{"jsonrpc":"2.0","id":1,"method":"prompts/list"}`)
	if !strings.Contains(string(m.Result()), `"m__greet"`) {
		t.Errorf("prompts/list after the rediscovery: %s", m.Raw())
	}
	if next() != 3 { // and on: each answer's ttlMs starts the next wait
		t.Error("the discover was not fetched again after the second answer's ttlMs")
	}
}
