package gateway_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/switchboard-mcp/switchboard/gateway"

	"github.com/switchboard-mcp/switchboard/routing"
	"github.com/switchboard-mcp/switchboard/upstream"
)

// TestListCacheHints (issue 31, item 17): a 2026-07-28 list says how long it stays fresh (listCacheTTL) and who
// may share it: "public" when it is what everyone at the endpoint sees, "private" when the caller shaped it (a
// policy, search mode), never fresh for longer than the upstream's own list says. What is not a list keeps
// ttlMs 0.
func TestListCacheHints(t *testing.T) {
	policy := func(ctx context.Context) gateway.Identity {
		id := headerIdentity(ctx)
		id.Allow = func(string, string, string) bool { return true }
		return id
	}
	type want struct {
		ttl   int64
		scope string
	}
	for _, tc := range []struct {
		name  string
		ropts routing.Options
		gopts gateway.Options
		lists want // tools/list, prompts/list, resources/list, resources/templates/list
		tools *want
		// modern: the upstream speaks 2026-07-28, its lists carrying ttlMs upTTL; else it is a legacy one.
		modern bool
		upTTL  int
	}{
		{name: "a modern upstream's ttlMs caps it", gopts: gateway.Options{ListCacheTTL: 45 * time.Second}, modern: true, upTTL: 5000, lists: want{45000, "public"}, tools: &want{5000, "public"}},
		{name: "a modern upstream's ttlMs 0", gopts: gateway.Options{ListCacheTTL: 45 * time.Second}, modern: true, upTTL: 0, lists: want{45000, "public"}, tools: &want{0, "public"}},
		{name: "a modern upstream's ttlMs over listCacheTTL", gopts: gateway.Options{ListCacheTTL: 45 * time.Second}, modern: true, upTTL: 600000, lists: want{45000, "public"}},
		{name: "no auth", gopts: gateway.Options{ListCacheTTL: 45 * time.Second}, lists: want{45000, "public"}},
		{name: "listCacheTTL 0", lists: want{0, "public"}},
		{name: "auth, no policy", gopts: gateway.Options{ListCacheTTL: 45 * time.Second, Auth: headerAuth{}, Identify: headerIdentity}, lists: want{45000, "public"}},
		{name: "auth, a policy", gopts: gateway.Options{ListCacheTTL: 45 * time.Second, Auth: headerAuth{}, Identify: policy}, lists: want{45000, "private"}},
		{name: "search mode", ropts: routing.Options{Shape: routing.Shape{Root: &routing.SearchMode{}}}, gopts: gateway.Options{ListCacheTTL: 45 * time.Second},
			lists: want{45000, "public"}, tools: &want{45000, "private"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := startGateway(t, tc.ropts, tc.gopts, cacheUpstream(t, tc.modern, tc.upTTL))
			c := h.raw(t)
			user := map[string]string{"X-Test-User": "alice"}
			for _, method := range []string{"tools/list", "prompts/list", "resources/list", "resources/templates/list", "server/discover"} {
				w := tc.lists
				switch {
				case method == "server/discover" && tc.gopts.Auth != nil:
					w = want{0, "private"} // as before: the gateway's own, not a list
				case method == "server/discover":
					w = want{0, "public"}
				case method == "tools/list" && tc.tools != nil:
					w = *tc.tools
				}
				r := modernDo(t, c, modernBody(t, 1, method, nil, `{}`), user)
				if r.status != http.StatusOK {
					t.Fatalf("%s: HTTP %d: %s", method, r.status, r.body)
				}
				obj := checkModernResult(t, r.final(t).Result, true, w.scope)
				if method == "tools/list" && tc.ropts.Shape.Root == nil && !strings.Contains(string(obj["tools"]), `"alpha__echo"`) {
					t.Errorf("tools/list lacks alpha__echo: %s", obj["tools"])
				}
				var ttl int64
				if err := json.Unmarshal(obj["ttlMs"], &ttl); err != nil || ttl != w.ttl {
					t.Errorf("%s: ttlMs %s, want %d", method, obj["ttlMs"], w.ttl)
				}
			}
		})
	}
}

// cacheUpstream is an HTTP upstream with one tool, whose lists carry ttlMs when it is modern.
func cacheUpstream(t *testing.T, modern bool, ttlMs int) routing.UpstreamConfig {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "alpha", Version: "1"}, &mcp.ServerOptions{
		SetCacheable: func(_ context.Context, _ mcp.Request, c *mcp.Cacheable) { c.TTLMs = ttlMs },
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "echo"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{}, nil, nil
	})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: modern}))
	t.Cleanup(func() { ts.CloseClientConnections(); ts.Close() })
	protocol := upstream.ProtocolLegacy
	if modern {
		protocol = upstream.ProtocolModern
	}
	tr, err := upstream.NewTransport(upstream.Spec{Name: "alpha", URL: ts.URL, Protocol: protocol, Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	return routing.UpstreamConfig{Name: "alpha", Prefix: "alpha__", Mode: routing.Shared, Transport: tr, Kind: "http", Protocol: protocol}
}
