package routing

import (
	"slices"
	"strings"
	"testing"

	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
)

// appTool is the tool of the ext-apps basic example servers, as they list it: the view named both ways.
const appToolDef = `{"name":"get-time","description":"Returns the current server time.","inputSchema":{"type":"object"},"_meta":{"ui":{"resourceUri":"ui://get-time/mcp-app.html"},"ui/resourceUri":"ui://get-time/mcp-app.html"}}`

// appUpstream is an upstream offering the basic example app: its tool, its view (listed unless unlisted) and
// another resource, with the items made as a fetched list makes them (newItem: the pin hash, the views).
func appUpstream(tb testing.TB, name string, mode namespacing, unlisted bool) *upstreamServer {
	tb.Helper()
	res := []string{`{"uri":"file:///notes.txt","name":"notes"}`}
	if !unlisted {
		res = append(res, `{"uri":"ui://get-time/mcp-app.html","name":"view","mimeType":"text/html;profile=mcp-app"}`)
	}
	up := testUpstream(name, name+"__", map[listKind][]string{kindResources: res})
	up.r.opts.ResourceNamespacing = mode.String()
	it, ok := up.newItem(kindTools, []byte(appToolDef))
	if !ok {
		tb.Fatal("the app tool makes no item")
	}
	up.lists[kindTools] = []item{it}
	return up
}

// servedViews returns the view URIs the catalog serves in tool name's definition, both members.
func servedViews(tb testing.TB, c *catalog, name string) [2]string {
	tb.Helper()
	t, ok := c.tools[name]
	if !ok || t.item < 0 {
		tb.Fatalf("tool %q is not listed", name)
	}
	raw := c.items[kindTools][t.item]
	a, _ := jsonrpc.LookupString(raw, "_meta", "ui", "resourceUri")
	b, _ := jsonrpc.LookupString(raw, "_meta", "ui/resourceUri")
	return [2]string{a, b}
}

// TestAppViewsNamespaced (issue 31, item 6): a tool's MCP Apps view is named, in the definition served, by the
// URI the catalog serves the view under, and that URI reads the view from the tool's own upstream, in every
// namespacing mode, listed or not; the pin hash stays the upstream definition's.
func TestAppViewsNamespaced(t *testing.T) {
	const view = "ui://get-time/mcp-app.html"
	for _, tc := range []struct {
		name     string
		mode     namespacing
		two      bool // a second upstream offers the same app
		unlisted bool // the view is not in resources/list ("Servers MAY omit UI-only resources")
		want     map[string]string
	}{
		{"auto, one app", namespaceAuto, false, false, map[string]string{"apps1__get-time": view}},
		{"auto, the same app twice", namespaceAuto, true, false, map[string]string{"apps1__get-time": "apps1+" + view, "apps2__get-time": "apps2+" + view}},
		{"auto, the same unlisted app twice", namespaceAuto, true, true, map[string]string{"apps1__get-time": "apps1+" + view, "apps2__get-time": "apps2+" + view}},
		{"always", namespaceAlways, false, false, map[string]string{"apps1__get-time": "apps1+" + view}},
		{"always, unlisted", namespaceAlways, false, true, map[string]string{"apps1__get-time": "apps1+" + view}},
		{"never, the same app twice", namespaceNever, true, false, map[string]string{"apps1__get-time": view, "apps2__get-time": view}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ups := []*upstreamServer{appUpstream(t, "apps1", tc.mode, tc.unlisted)}
			if tc.two {
				ups = append(ups, appUpstream(t, "apps2", tc.mode, tc.unlisted))
			}
			c := buildCatalog(ups, nil, "", nil, nil)
			for i, up := range ups {
				name := up.cfg.Name + "__get-time"
				want := tc.want[name]
				if got := servedViews(t, c, name); got != [2]string{want, want} {
					t.Errorf("%s names its view %q, want %q", name, got, want)
				}
				rt, ok := c.resolveURI(want)
				if tc.mode == namespaceNever && i > 0 {
					up = ups[0] // listed once: reads go to the first, and the conflict says so
				}
				if !ok || rt.up != up || rt.uri != view {
					t.Errorf("%s's view %q leads to %+v, %v", name, want, rt, ok)
				}
				if tr := c.tools[name]; tr.hash == "" || tr.hash != up.lists[kindTools][0].hash {
					t.Errorf("%s's pin hash %q is not its upstream's definition's", name, tr.hash)
				}
			}
			if tc.two && tc.mode != namespaceNever {
				if msg := c.ambiguity(view); msg == "" {
					t.Errorf("reading %q by its upstream URI does not say which to read", view)
				}
			}
			if tc.mode == namespaceNever && len(c.conflicts) == 0 {
				t.Error("the same view of two upstreams, not namespaced, is not reported")
			}
		})
	}
}

// TestAppViewsEndpoint (issue 31, item 6): an endpoint that selects an app's tool serves the view the tool names
// (listed in its resources/list when the upstream lists it, readable either way) and no other resource of that
// upstream; an exclude glob that names the view keeps it out.
func TestAppViewsEndpoint(t *testing.T) {
	for _, tc := range []struct {
		name     string
		mode     namespacing
		two      bool
		unlisted bool
		exclude  []string
		view     string // what the endpoint serves; "" when nothing
		listed   bool
	}{
		{"auto", namespaceAuto, false, false, nil, "ui://get-time/mcp-app.html", true},
		{"auto, two apps", namespaceAuto, true, false, nil, "apps1+ui://get-time/mcp-app.html", true},
		{"always, unlisted", namespaceAlways, false, true, nil, "apps1+ui://get-time/mcp-app.html", false},
		{"excluded", namespaceAuto, false, false, []string{"ui://*"}, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ups := []*upstreamServer{appUpstream(t, "apps1", tc.mode, tc.unlisted)}
			if tc.two {
				ups = append(ups, appUpstream(t, "apps2", tc.mode, tc.unlisted))
			}
			sh := &Shape{Endpoints: []Endpoint{{Name: "apps", Include: []string{"apps1__*"}, Exclude: tc.exclude}}}
			c := buildCatalog(ups, nil, "", sh, nil)
			var listed []string
			for _, i := range c.views["apps"].index[kindResources] {
				id, _ := jsonrpc.LookupString(c.items[kindResources][i], "uri")
				listed = append(listed, id)
			}
			var want []string
			if tc.listed {
				want = []string{tc.view}
			}
			if !slices.Equal(listed, want) {
				t.Errorf("the endpoint lists %q, want %q", listed, want)
			}
			for _, uri := range []string{"ui://get-time/mcp-app.html", "apps1+ui://get-time/mcp-app.html", "apps2+ui://get-time/mcp-app.html"} {
				if got := c.inViewURI("apps", uri); got != (uri == tc.view) {
					t.Errorf("the endpoint serves %q: %v", uri, got)
				}
			}
			for _, other := range []string{"file:///notes.txt", "apps1+file:///notes.txt"} {
				if c.inViewURI("apps", other) {
					t.Errorf("the endpoint serves %q, another resource of the app's upstream", other)
				}
			}
		})
	}
}

// TestRewriteViews: every place a definition or a result names its view is rewritten, escaped spellings
// included, byte for byte elsewhere; an ambiguous (twice-written) member is left as it is.
func TestRewriteViews(t *testing.T) {
	ns := func(u string) string { return "x+" + u }
	for _, tc := range []struct{ name, in, want string }{
		{"both members", appToolDef,
			`{"name":"get-time","description":"Returns the current server time.","inputSchema":{"type":"object"},"_meta":{"ui":{"resourceUri":"x+ui://get-time/mcp-app.html"},"ui/resourceUri":"x+ui://get-time/mcp-app.html"}}`},
		{"openai and escaped", `{ "_meta" : {"openai/outputTemplate":"ui://w","\u0075i":{"resourceUri":"ui:\/\/v","visibility":["app"]}}, "x":"ui://v"}`,
			`{ "_meta" : {"openai/outputTemplate":"x+ui://w","\u0075i":{"resourceUri":"x+ui://v","visibility":["app"]}}, "x":"ui://v"}`},
		{"a result", `{"content":[],"_meta":{"ui":{"resourceUri":"ui://v"}}}`, `{"content":[],"_meta":{"ui":{"resourceUri":"x+ui://v"}}}`},
		{"twice", `{"_meta":{"ui":{"resourceUri":"ui://a","resourceUri":"ui://b"}}}`, `{"_meta":{"ui":{"resourceUri":"ui://a","resourceUri":"ui://b"}}}`},
		{"none", `{"name":"t","_meta":{"ui":{}}}`, `{"name":"t","_meta":{"ui":{}}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := string(rewriteViews([]byte(tc.in), ns)); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
	if got := toolViews([]byte(appToolDef)); !slices.Equal(got, []string{"ui://get-time/mcp-app.html"}) {
		t.Errorf("toolViews = %q", got)
	}
}

// TestAppViewsOnlyUI: only ui:// URIs are views. A tool that names another resource as its view (an upstream
// trying to reach past an endpoint's globs) opens nothing and is served as it is.
func TestAppViewsOnlyUI(t *testing.T) {
	const def = `{"name":"peek","inputSchema":{"type":"object"},"_meta":{"ui":{"resourceUri":"file:///notes.txt"},"openai/outputTemplate":"UI://get-time/mcp-app.html"}}`
	if got := toolViews([]byte(def)); !slices.Equal(got, []string{"UI://get-time/mcp-app.html"}) {
		t.Errorf("toolViews = %q, want only the ui:// one", got)
	}
	up := appUpstream(t, "apps1", namespaceAlways, false)
	it, _ := up.newItem(kindTools, []byte(def))
	up.lists[kindTools] = append(up.lists[kindTools], it)
	c := buildCatalog([]*upstreamServer{up}, nil, "", &Shape{Endpoints: []Endpoint{{Name: "e", Include: []string{"apps1__peek"}}}}, nil)
	if s, _ := jsonrpc.LookupString(c.toolItem("apps1__peek"), "_meta", "ui", "resourceUri"); s != "file:///notes.txt" {
		t.Errorf("a non-view link is rewritten: %q", s)
	}
	if c.inViewURI("e", "apps1+file:///notes.txt") {
		t.Error("the endpoint serves the resource a tool named as its view")
	}
}

// TestAppViewsServed: the definitions search mode serves (toolItem: alwaysList, exposeFound, the hits' fields)
// are the rewritten ones; a tools/call result that names the view in its _meta gets the client's URI too.
func TestAppViewsServed(t *testing.T) {
	a, b := appUpstream(t, "apps1", namespaceAuto, false), appUpstream(t, "apps2", namespaceAuto, false)
	c := buildCatalog([]*upstreamServer{a, b}, nil, "", nil, nil)
	if s, _ := jsonrpc.LookupString(c.toolItem("apps2__get-time"), "_meta", "ui/resourceUri"); s != "apps2+ui://get-time/mcp-app.html" {
		t.Errorf("search mode serves apps2__get-time naming %q", s)
	}
	res := `{"content":[{"type":"text","text":"12:00"}],"_meta":{"ui":{"resourceUri":"ui://get-time/mcp-app.html"}}}`
	got := string(c.uriTransform(b, toolURIs, nil)([]byte(res)))
	if want := strings.Replace(res, `"ui://`, `"apps2+ui://`, 1); got != want {
		t.Errorf("result\n got %s\nwant %s", got, want)
	}
}
