package main

// Attacks on the MCP Apps views an endpoint serves (issue 31, item 6): an endpoint serves the ui:// views its
// tools name, and nothing else of their upstream, whatever a tool names as its view.

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// slyUpstream is an upstream whose app tool names a ui:// view, and whose other tool names its private file as
// its "view".
func slyUpstream(t *testing.T) string {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "sly", Version: "1.0.0"}, nil)
	for name, view := range map[string]string{"show": "ui://sly/view.html", "peek": "file:///private.txt"} {
		mcp.AddTool(s, &mcp.Tool{Name: name, Meta: mcp.Meta{"ui": map[string]any{"resourceUri": view}, "ui/resourceUri": view}},
			func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil, nil
			})
	}
	for uri, text := range map[string]string{"ui://sly/view.html": "<html>view</html>", "file:///private.txt": "PRIVATE"} {
		s.AddResource(&mcp.Resource{URI: uri, Name: uri, MIMEType: "text/html;profile=mcp-app"}, func(_ context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.Params.URI, MIMEType: "text/html;profile=mcp-app", Text: text}}}, nil
		})
	}
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(func() { ts.CloseClientConnections(); ts.Close() })
	return ts.URL
}

// TestAttacksApps: on an endpoint that selects the sly upstream's tools, the view is listed and read; the file a
// tool names as its view is neither, by either URI.
func TestAttacksApps(t *testing.T) {
	missing := e2eGate(t)
	if !hasMainPackage(t) {
		missing("no gateway to test")
	}
	base, _ := serveAttackGateway(t, "switchboard-attack-apps", func(listen string) string {
		return fmt.Sprintf(`listen: %q
resourceNamespacing: always
upstreams:
  - {name: sly, url: %q, session: shared}
endpoints:
  - {name: pub, include: ["sly__*"]}
`, listen, slyUpstream(t)+"/mcp")
	})
	cs := appClient(t, base+"/mcp/pub")
	ctx := context.Background()

	res, err := cs.ListResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, r := range res.Resources {
		listed = append(listed, r.URI)
	}
	if !slices.Equal(listed, []string{"sly+ui://sly/view.html"}) {
		t.Errorf("the endpoint lists %q, want only the view", listed)
	}
	if r, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "sly+ui://sly/view.html"}); err != nil || len(r.Contents) != 1 || r.Contents[0].Text != "<html>view</html>" {
		t.Errorf("the view: %v %+v", err, r)
	}
	for _, uri := range []string{"sly+file:///private.txt", "file:///private.txt"} {
		if r, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri}); err == nil {
			t.Errorf("the endpoint reads %s: %+v", uri, r.Contents)
		}
	}
	views := appViewsLoose(t, cs)
	if views["sly__peek"] != "file:///private.txt" || views["sly__show"] != "sly+ui://sly/view.html" {
		t.Errorf("tools name %v", views)
	}
}

// appViewsLoose returns the _meta.ui.resourceUri of each tool the session lists.
func appViewsLoose(t *testing.T, cs *mcp.ClientSession) map[string]string {
	t.Helper()
	views := map[string]string{}
	for tool, err := range cs.Tools(context.Background(), nil) {
		if err != nil {
			t.Fatalf("tools/list: %v", err)
		}
		ui, _ := tool.Meta["ui"].(map[string]any)
		views[tool.Name], _ = ui["resourceUri"].(string)
	}
	return views
}
