package routing

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
)

func TestTemplatePattern(t *testing.T) {
	tests := []struct {
		tmpl    string
		match   []string
		noMatch []string
	}{
		// Level 1: simple string expansion stops at the path, query and fragment delimiters.
		{"file:///{path}", []string{"file:///a.txt", "file:///", "file:///a%2Fb", "file:///x,y"}, []string{"file:///a/b", "file:///a?x", "file:///a#f", "file://a"}},
		{"users/{id}/posts/{post}", []string{"users/1/posts/2", "users//posts/"}, []string{"users/1/2/posts/3", "users/1/posts/2/3", "user/1/posts/2"}},
		// Reserved and fragment expansion take anything.
		{"file:///{+path}", []string{"file:///a/b/c.txt", "file:///", "file:///a?b#c"}, []string{"file://a", "http:///a"}},
		{"doc://page{#section}", []string{"doc://page#intro", "doc://page", "doc://page#a/b"}, []string{"doc://pag"}},
		// Path segments: zero or more "/seg".
		{"/users{/id}", []string{"/users", "/users/42", "/users/a/b"}, []string{"/users42", "/user", "/users/a?b"}},
		{"/x{/a,b}/y", []string{"/x/1/2/y", "/x/y", "/x/1/y"}, []string{"/x1/y", "/xy/"}},
		// Label expansion: zero or more ".label".
		{"file{.ext}", []string{"file", "file.txt", "file.tar.gz"}, []string{"filetxt", "file/txt", "file.t/x"}},
		// Path-style parameters.
		{"/map{;x,y}", []string{"/map", "/map;x=1", "/map;x=1;y=2"}, []string{"/mapx", "/map/;x", "/map;x/y"}},
		// Form-style query and continuation.
		{"/search{?q,lang}", []string{"/search", "/search?q=go", "/search?q=go&lang=en"}, []string{"/searchq", "/search/x", "/search/?q=1"}},
		{"/search?q=x{&page}", []string{"/search?q=x", "/search?q=x&page=2"}, []string{"/search?q=y&page=2", "/search?q=x/page"}},
		{"/a{?x}{&y}", []string{"/a", "/a?x=1", "/a?x=1&y=2"}, []string{"/ab"}},
		// Literal parts are quoted: regexp metacharacters match only themselves.
		{"res://a.b/{id}", []string{"res://a.b/1"}, []string{"res://aXb/1"}},
		{"q://(x)+[y]*/{id}", []string{"q://(x)+[y]*/1"}, []string{"q://xx[y]/1"}},
		// Broken templates match literally.
		{"x{y", []string{"x{y"}, []string{"xy", "x"}},
		{"x}y", []string{"x}y"}, []string{"xy"}},
		{"x{}y", []string{"xy", "xay"}, []string{"xa/y"}},
		// Several expressions in one template.
		{"git://{repo}/blob/{+path}{?ref}", []string{"git://sb/blob/a/b.go", "git://sb/blob/a/b.go?ref=main"}, []string{"git://s/b/blob/a.go"}},
	}
	for _, tc := range tests {
		t.Run(tc.tmpl, func(t *testing.T) {
			re, err := templateRegexp(tc.tmpl)
			if err != nil {
				t.Fatalf("templateRegexp(%q): %v", tc.tmpl, err)
			}
			if re.String() != templatePattern(tc.tmpl) {
				t.Fatalf("templateRegexp and templatePattern disagree: %q vs %q", re.String(), templatePattern(tc.tmpl))
			}
			for _, u := range tc.match {
				if !re.MatchString(u) {
					t.Errorf("%q (pattern %s) does not match %q", tc.tmpl, re, u)
				}
			}
			for _, u := range tc.noMatch {
				if re.MatchString(u) {
					t.Errorf("%q (pattern %s) matches %q", tc.tmpl, re, u)
				}
			}
		})
	}
}

// testUpstream is an Upstream with fixed lists, for the cold-path catalog functions.
func testUpstream(name, prefix string, lists map[listKind][]string) *upstreamServer {
	up := &upstreamServer{cfg: UpstreamConfig{Name: name, Prefix: prefix}, r: &Router{}}
	for k, raws := range lists {
		for _, raw := range raws {
			var v map[string]any
			if err := json.Unmarshal([]byte(raw), &v); err != nil {
				panic(fmt.Sprintf("bad test item %s: %v", raw, err))
			}
			id, _ := v[k.idField()].(string)
			up.lists[k] = append(up.lists[k], item{raw: []byte(raw), id: id})
		}
	}
	return up
}

func itemStrings(c *catalog, k listKind) []string {
	var out []string
	for _, it := range c.items[k] {
		out = append(out, string(it))
	}
	return out
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestBuildCatalogMergeAndPrefix(t *testing.T) {
	fs := testUpstream("fs", "fs__", map[listKind][]string{
		kindTools: {
			`{"name":"read","description":"reads","inputSchema":{"type":"object","properties":{"name":{"type":"string"}}}}`,
			`{"title":"Write","name":"write","inputSchema":{"type":"object"},"annotations":{"name":"keep me"}}`,
			`{"name":"a.b","inputSchema":{}}`,
		},
		kindPrompts:   {`{"name":"summarise","arguments":[{"name":"text"}]}`},
		kindResources: {`{"uri":"file:///a","name":"a"}`},
		kindTemplates: {`{"uriTemplate":"file:///{+path}","name":"files"}`},
	})
	web := testUpstream("web", "", map[listKind][]string{
		kindTools:     {`{"name":"search","inputSchema":{"type":"object"}}`},
		kindResources: {`{"uri":"https://x/1","name":"x"}`},
		kindTemplates: {`{"uriTemplate":"https://x/{id}","name":"xs"}`},
	})
	c := buildCatalog([]*upstreamServer{fs, web}, nil, "", nil, nil)

	wantTools := []string{
		// The name member is spliced; everything else, nested "name" members included, is byte-identical.
		`{"name":"fs__read","description":"reads","inputSchema":{"type":"object","properties":{"name":{"type":"string"}}}}`,
		`{"title":"Write","name":"fs__write","inputSchema":{"type":"object"},"annotations":{"name":"keep me"}}`,
		`{"name":"` + exposedName("fs__", "a.b", defaultMaxToolNameLength) + `","inputSchema":{}}`,
		`{"name":"search","inputSchema":{"type":"object"}}`, // prefix "": unchanged, the same bytes
	}
	if got := itemStrings(c, kindTools); !equalStrings(got, wantTools) {
		t.Errorf("tools:\n got %q\nwant %q", got, wantTools)
	}
	if got, want := itemStrings(c, kindPrompts), []string{`{"name":"fs__summarise","arguments":[{"name":"text"}]}`}; !equalStrings(got, want) {
		t.Errorf("prompts: got %q, want %q", got, want)
	}
	if got, want := itemStrings(c, kindResources), []string{`{"uri":"file:///a","name":"a"}`, `{"uri":"https://x/1","name":"x"}`}; !equalStrings(got, want) {
		t.Errorf("resources pass unchanged: got %q, want %q", got, want)
	}
	if got := len(c.items[kindTemplates]); got != 2 {
		t.Errorf("templates: %d, want 2", got)
	}
	for exposed, want := range map[string]target{
		"fs__read": {up: fs, name: "read"}, "fs__write": {up: fs, name: "write"}, exposedName("fs__", "a.b", defaultMaxToolNameLength): {up: fs, name: "a.b"}, "search": {up: web, name: "search"},
	} {
		if got, ok := c.tools[exposed]; !ok || got.up != want.up || got.name != want.name {
			t.Errorf("tools[%q] = %v, %v; want %s/%s", exposed, got, ok, want.up.cfg.Name, want.name)
		}
	}
	if got, ok := c.prompts["fs__summarise"]; !ok || got.up != fs || got.name != "summarise" {
		t.Errorf("prompts[fs__summarise] = %v, %v", got, ok)
	}
	for uri, want := range map[string]*upstreamServer{"file:///a": fs, "https://x/1": web, "file:///b/c": fs, "https://x/2": web, "ftp://nope": nil} {
		if got := c.resourceUpstream(uri); got != want {
			t.Errorf("resourceUpstream(%q) = %v, want %v", uri, got, want)
		}
	}
	if got := c.templateUpstream("https://x/{id}"); got != web {
		t.Errorf("templateUpstream = %v, want web", got)
	}
	if got := c.templateUpstream("https://y/{id}"); got != nil {
		t.Errorf("templateUpstream of an unknown template = %v, want nil", got.cfg.Name)
	}
	if len(c.conflicts) != 0 {
		t.Errorf("unexpected conflicts: %q", c.conflicts)
	}
	for _, raw := range c.items[kindTools] {
		if !json.Valid(raw) {
			t.Errorf("exposed item is not valid JSON: %s", raw)
		}
	}
}

// TestTemplateUpstreamExact: completion/complete with a ref/resource names a template by its exact uriTemplate
// (catalog.go: "by its exact uriTemplate"). Two upstreams whose templates differ only in variable names (or in
// operators that compile to the same pattern) must each get their own completions.
func TestTemplateUpstreamExact(t *testing.T) {
	a := testUpstream("a", "", map[listKind][]string{kindTemplates: {`{"uriTemplate":"repo://{owner}","name":"owners"}`, `{"uriTemplate":"doc://{+path}","name":"docs"}`}})
	b := testUpstream("b", "", map[listKind][]string{kindTemplates: {`{"uriTemplate":"repo://{name}","name":"names"}`, `{"uriTemplate":"doc://{#path}","name":"frags"}`}})
	c := buildCatalog([]*upstreamServer{a, b}, nil, "", nil, nil)
	for tmpl, want := range map[string]*upstreamServer{
		"repo://{owner}": a,
		"repo://{name}":  b,
		"doc://{+path}":  a,
		"doc://{#path}":  b,
		"repo://{other}": nil, // offered by nobody
	} {
		got := c.templateUpstream(tmpl)
		if got != want {
			name := func(u *upstreamServer) string {
				if u == nil {
					return "<none>"
				}
				return u.cfg.Name
			}
			t.Errorf("templateUpstream(%q) = %s, want %s", tmpl, name(got), name(want))
		}
	}
}

func TestBuildCatalogCollisions(t *testing.T) {
	a := testUpstream("a", "", map[listKind][]string{
		kindTools:     {`{"name":"search","v":"a"}`, `{"name":"only_a"}`},
		kindPrompts:   {`{"name":"search"}`}, // prompts and tools are separate namespaces
		kindResources: {`{"uri":"mem://shared","v":"a"}`},
	})
	b := testUpstream("b", "", map[listKind][]string{
		kindTools:     {`{"name":"search","v":"b"}`, `{"name":"only_b"}`},
		kindPrompts:   {`{"name":"search","v":"b"}`},
		kindResources: {`{"uri":"mem://shared","v":"b"}`, `{"uri":"mem://b"}`},
	})
	// Different prefixes that expose the same name collide too.
	c1 := testUpstream("c1", "x_", map[listKind][]string{kindTools: {`{"name":"_y"}`}})
	c2 := testUpstream("c2", "x__", map[listKind][]string{kindTools: {`{"name":"y"}`}})
	a.r.opts.ResourceNamespacing = "never" // the first upstream's router decides: here, URIs as they are
	c := buildCatalog([]*upstreamServer{a, b, c1, c2}, nil, "", nil, nil)

	if got, want := itemStrings(c, kindTools), []string{`{"name":"search","v":"a"}`, `{"name":"only_a"}`, `{"name":"only_b"}`, `{"name":"x__y"}`}; !equalStrings(got, want) {
		t.Errorf("tools: got %q, want %q", got, want)
	}
	if got := c.tools["search"]; got.up != a {
		t.Errorf("search routes to %s: the first upstream must keep it, never be shadowed", got.up.cfg.Name)
	}
	if got := c.tools["x__y"]; got.up != c1 || got.name != "_y" {
		t.Errorf("x__y routes to %s/%s, want c1/_y", got.up.cfg.Name, got.name)
	}
	if got, want := itemStrings(c, kindPrompts), []string{`{"name":"search"}`}; !equalStrings(got, want) {
		t.Errorf("prompts: got %q, want %q", got, want)
	}
	if got, want := itemStrings(c, kindResources), []string{`{"uri":"mem://shared","v":"a"}`, `{"uri":"mem://b"}`}; !equalStrings(got, want) {
		t.Errorf("resources: got %q, want %q", got, want)
	}
	if c.resources["mem://shared"].up != a || c.resources["mem://b"].up != b {
		t.Errorf("resource routing wrong: %v", c.resources)
	}
	if len(c.conflicts) != 4 {
		t.Fatalf("conflicts = %d, want 4 (tool, prompt, resource, prefixed tool):\n%s", len(c.conflicts), strings.Join(c.conflicts, "\n"))
	}
	for i, want := range [][]string{
		{`tool "search"`, `"b"`, `"a"`},
		{`prompt "search"`, `"b"`, `"a"`},
		{`resource "mem://shared"`, `"b"`, `"a"`},
		{`tool "x__y"`, `"c2"`, `"c1"`},
	} {
		for _, w := range want {
			if !strings.Contains(c.conflicts[i], w) {
				t.Errorf("conflict %d %q does not mention %s", i, c.conflicts[i], w)
			}
		}
	}
}

func TestBuildCatalogGenerations(t *testing.T) {
	a := testUpstream("a", "a__", map[listKind][]string{
		kindTools:   {`{"name":"t1"}`},
		kindPrompts: {`{"name":"p1"}`},
	})
	c1 := buildCatalog([]*upstreamServer{a}, nil, "", nil, nil)
	for k := listKind(0); k < numKinds; k++ {
		if c1.gen[k] != 1 {
			t.Fatalf("first generation of %s = %d, want 1", k.key(), c1.gen[k])
		}
	}
	// Unchanged lists: no generation moves, so cursors stay valid.
	c2 := buildCatalog([]*upstreamServer{a}, c1, "", nil, nil)
	if c2.gen != c1.gen {
		t.Fatalf("rebuild without change moved generations: %v → %v", c1.gen, c2.gen)
	}
	// Change tools only.
	a.lists[kindTools] = append(a.lists[kindTools], item{raw: []byte(`{"name":"t2"}`), id: "t2"})
	c3 := buildCatalog([]*upstreamServer{a}, c2, "", nil, nil)
	if want := [numKinds]uint64{2, 1, 1, 1}; c3.gen != want {
		t.Fatalf("generations after a tools change = %v, want %v", c3.gen, want)
	}
	// A change of an item's bytes (same name) is a change.
	a.lists[kindPrompts][0].raw = []byte(`{"name":"p1","description":"new"}`)
	c4 := buildCatalog([]*upstreamServer{a}, c3, "", nil, nil)
	if want := [numKinds]uint64{2, 2, 1, 1}; c4.gen != want {
		t.Fatalf("generations after a prompts change = %v, want %v", c4.gen, want)
	}
	// An upstream dropping out changes its kinds.
	c5 := buildCatalog(nil, c4, "", nil, nil)
	if want := [numKinds]uint64{3, 3, 1, 1}; c5.gen != want {
		t.Fatalf("generations after the upstream dropped out = %v, want %v", c5.gen, want)
	}
}

// pageResult is a page as a client decodes it.
type pageResult struct {
	Tools      []json.RawMessage `json:"tools"`
	NextCursor *string           `json:"nextCursor"`
}

func toolsCatalog(n int) *catalog {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf(`{"name":"t%05d","inputSchema":{"type":"object"}}`, i)
	}
	return buildCatalog([]*upstreamServer{testUpstream("u", "u__", map[listKind][]string{kindTools: names})}, nil, "", nil, nil)
}

func TestCatalogPage(t *testing.T) {
	for _, tc := range []struct {
		items, size int
		wantPages   int
	}{
		{0, 3, 1},
		{5, 1, 5},
		{5, 2, 3},
		{6, 2, 3}, // exact multiple: no empty last page
		{6, 3, 2},
		{5, 5, 1},
		{5, 100, 1},
	} {
		t.Run(fmt.Sprintf("items=%d/size=%d", tc.items, tc.size), func(t *testing.T) {
			c := toolsCatalog(tc.items)
			var all []string
			cursor, pages := "", 0
			for {
				raw, err := c.page(kindTools, cursor, tc.size, testCodec, nil, "")
				if err != nil {
					t.Fatalf("page %d: %v", pages+1, err)
				}
				pages++
				var p pageResult
				if err := json.Unmarshal(raw, &p); err != nil {
					t.Fatalf("page %d is not JSON: %v\n%s", pages, err, raw)
				}
				if p.Tools == nil {
					t.Fatalf("page %d has no tools array: %s", pages, raw)
				}
				if len(p.Tools) > tc.size {
					t.Fatalf("page %d has %d items, more than %d", pages, len(p.Tools), tc.size)
				}
				for _, it := range p.Tools {
					all = append(all, string(it))
				}
				if p.NextCursor == nil {
					if strings.Contains(string(raw), "nextCursor") {
						t.Fatalf("last page mentions nextCursor: %s", raw)
					}
					break
				}
				if *p.NextCursor == "" {
					t.Fatalf("empty nextCursor on page %d", pages)
				}
				if pages > tc.items+1 {
					t.Fatal("pagination does not end")
				}
				cursor = *p.NextCursor
			}
			if pages != tc.wantPages {
				t.Errorf("%d pages, want %d", pages, tc.wantPages)
			}
			if want := itemStrings(c, kindTools); !equalStrings(all, want) && !(len(all) == 0 && len(want) == 0) {
				t.Errorf("pages joined:\n got %q\nwant %q", all, want)
			}
		})
	}
}

func TestCatalogPageCursorErrors(t *testing.T) {
	a := testUpstream("a", "a__", map[listKind][]string{
		kindTools:   {`{"name":"t1"}`, `{"name":"t2"}`, `{"name":"t3"}`},
		kindPrompts: {`{"name":"p1"}`, `{"name":"p2"}`, `{"name":"p3"}`},
	})
	c1 := buildCatalog([]*upstreamServer{a}, nil, "", nil, nil)
	next := func(c *catalog, k listKind, cursor string) string {
		t.Helper()
		raw, err := c.page(k, cursor, 1, testCodec, nil, "")
		if err != nil {
			t.Fatal(err)
		}
		var p struct {
			NextCursor string `json:"nextCursor"`
		}
		if err := json.Unmarshal(raw, &p); err != nil {
			t.Fatal(err)
		}
		return p.NextCursor
	}
	toolCursor := next(c1, kindTools, "")
	promptCursor := next(c1, kindPrompts, "")

	// A rebuild that does not touch tools keeps tool cursors valid.
	a.lists[kindPrompts] = a.lists[kindPrompts][:2]
	c2 := buildCatalog([]*upstreamServer{a}, c1, "", nil, nil)
	if _, err := c2.page(kindTools, toolCursor, 1, testCodec, nil, ""); err != nil {
		t.Errorf("tool cursor rejected after a prompts-only change: %v", err)
	}
	if _, err := c2.page(kindPrompts, promptCursor, 1, testCodec, nil, ""); !errors.Is(err, errBadCursor) {
		t.Errorf("stale prompt cursor: err = %v, want errBadCursor", err)
	}
	if _, err := c2.page(kindPrompts, toolCursor, 1, testCodec, nil, ""); !errors.Is(err, errBadCursor) {
		t.Errorf("tool cursor used for prompts: err = %v, want errBadCursor", err)
	}
	if _, err := c2.page(kindTools, "not-a-cursor", 1, testCodec, nil, ""); !errors.Is(err, errBadCursor) {
		t.Errorf("garbage cursor: err = %v, want errBadCursor", err)
	}
	// A signed offset past the end (impossible to mint by paging, possible with a leaked key) is refused.
	if _, err := c2.page(kindTools, testCodec.encode(kindTools, c2.gen[kindTools], 4, ""), 1, testCodec, nil, ""); !errors.Is(err, errBadCursor) {
		t.Errorf("offset past the end: err = %v, want errBadCursor", err)
	}
	// The tools change: the old cursor is stale.
	a.lists[kindTools] = a.lists[kindTools][:2]
	c3 := buildCatalog([]*upstreamServer{a}, c2, "", nil, nil)
	if _, err := c3.page(kindTools, toolCursor, 1, testCodec, nil, ""); !errors.Is(err, errBadCursor) {
		t.Errorf("stale tool cursor: err = %v, want errBadCursor", err)
	}
}

// TestLogConflicts: a conflict is logged once when it appears and once when it is resolved, not on every rebuild.
func TestLogConflicts(t *testing.T) {
	a, b := `tool "x" of upstream "a" collides`, `tool "y" of upstream "b" collides`
	for _, tc := range []struct {
		name       string
		prev, next []string
		want       []string // "LEVEL detail" lines
	}{
		{"first catalog", nil, []string{a}, []string{"WARN " + a}},
		{"unchanged rebuild", []string{a}, []string{a}, nil},
		{"one more", []string{a}, []string{a, b}, []string{"WARN " + b}},
		{"resolved", []string{a, b}, []string{b}, []string{"INFO " + a}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			log := slog.New(recordHandler(func(r slog.Record) {
				r.Attrs(func(at slog.Attr) bool {
					if at.Key == "detail" {
						got = append(got, r.Level.String()+" "+at.Value.String())
					}
					return true
				})
			}))
			var prev *catalog
			if tc.prev != nil {
				prev = &catalog{conflicts: tc.prev}
			}
			logConflicts(log, prev, &catalog{conflicts: tc.next})
			if !slices.Equal(got, tc.want) {
				t.Errorf("logged %q, want %q", got, tc.want)
			}
		})
	}
}

// recordHandler is a slog.Handler that hands every record to fn.
type recordHandler func(slog.Record)

func (h recordHandler) Enabled(context.Context, slog.Level) bool      { return true }
func (h recordHandler) Handle(_ context.Context, r slog.Record) error { h(r); return nil }
func (h recordHandler) WithAttrs([]slog.Attr) slog.Handler            { return h }
func (h recordHandler) WithGroup(string) slog.Handler                 { return h }

// TestLegacyResult: a 2026-07-28 upstream's result reaches a legacy client without the fields only that era has.
func TestLegacyResult(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"content":[],"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"s"}}}`, `{"content":[]}`},
		{`{"resultType":"complete","content":[],"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"s"},"keep":1}}`, `{"content":[],"_meta":{"keep":1}}`},
		{`{"contents":[],"ttlMs":0,"cacheScope":"private"}`, `{"contents":[]}`},
		{`{"content":[],"_meta":{"keep":1}}`, `{"content":[],"_meta":{"keep":1}}`},
		{`{"content":[]}`, `{"content":[]}`},
		{`{"_meta":{"io.modelcontextprotocol/serverInfo":{}},"content":[],"_meta":{"io.modelcontextprotocol/serverInfo":{},"a":1}}`, `{"content":[],"_meta":{"a":1}}`},
	} {
		if got := string(legacyResult([]byte(tc.in))); got != tc.want {
			t.Errorf("legacyResult(%s) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

// BenchmarkLegacyResult: a 2026-07-28 tool result, as the SDKs send it, made a legacy one.
func BenchmarkLegacyResult(b *testing.B) {
	res := []byte(`{"content":[{"type":"text","text":"hello from switchboard-bench, a result of a typical size"}],"structuredContent":{"text":"hello from switchboard-bench, a result of a typical size"},"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"bench","version":"1.0.0"}}}`)
	b.ReportAllocs()
	for b.Loop() {
		legacyResult(res)
	}
}
