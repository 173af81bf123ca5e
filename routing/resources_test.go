package routing

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// namespacingUpstreams are three upstreams for the namespacing tests: two offer the same URI and the same template
// (mem-a and mem-b), one has a name that starts with a digit, and one URI has no scheme.
func namespacingUpstreams(mode namespacing) (a, b, d *upstreamServer) {
	a = testUpstream("mem-a", "", map[listKind][]string{
		kindResources: {`{"uri":"memory://kg","name":"graph"}`, `{"uri":"file:///a.txt"}`},
		kindTemplates: {`{"uriTemplate":"demo://t/{id}"}`, `{"uriTemplate":"a://only/{x}"}`},
	})
	b = testUpstream("mem-b", "", map[listKind][]string{
		kindResources: {`{"uri":"memory://kg","name":"graph"}`, `{"uri":"notes/today"}`},
		kindTemplates: {`{"uriTemplate":"demo://t/{id}"}`},
	})
	d = testUpstream("1files", "", map[listKind][]string{kindResources: {`{"uri":"file:///d.txt"}`}})
	a.r.opts.ResourceNamespacing = mode.String()
	return a, b, d
}

// uris returns the id members of a catalog's items of kind k.
func uris(c *catalog, k listKind) []string {
	var out []string
	for _, raw := range c.items[k] {
		var v map[string]any
		_ = json.Unmarshal(raw, &v)
		out = append(out, v[k.idField()].(string))
	}
	return out
}

// TestResourceNamespacing (issue 19, item 4): what each resourceNamespacing lists, and where each client-visible
// URI (listed, expanded from a template, named in a result) leads.
func TestResourceNamespacing(t *testing.T) {
	for _, tc := range []struct {
		mode      namespacing
		resources []string
		templates []string
		routes    map[string]string // client URI → "upstream uri"; "" when it leads nowhere
		exposed   map[string]string // "upstream uri" a result names → what the client sees
		conflicts int
	}{
		{
			mode:      namespaceAuto,
			resources: []string{"mem-a+memory://kg", "file:///a.txt", "mem-b+memory://kg", "notes/today", "file:///d.txt"},
			templates: []string{"mem-a+demo://t/{id}", "a://only/{x}", "mem-b+demo://t/{id}"},
			routes: map[string]string{
				"mem-a+memory://kg": "mem-a memory://kg", "mem-b+memory://kg": "mem-b memory://kg", "memory://kg": "",
				"file:///a.txt": "mem-a file:///a.txt", "notes/today": "mem-b notes/today", "file:///d.txt": "1files file:///d.txt",
				"mem-b+demo://t/7": "mem-b demo://t/7", "demo://t/7": "", "a://only/x": "mem-a a://only/x",
				"mem-b+memory://other":     "mem-b memory://other", // a link a result of mem-b named
				"mcp-1files+file:///d.txt": "",                     // 1files has nothing namespaced in auto mode
			},
			exposed: map[string]string{
				"mem-a memory://kg": "mem-a+memory://kg", "mem-b demo://t/9": "mem-b+demo://t/9",
				"mem-a file:///a.txt": "file:///a.txt", "1files file:///x": "file:///x",
			},
		},
		{
			mode:      namespaceAlways,
			resources: []string{"mem-a+memory://kg", "mem-a+file:///a.txt", "mem-b+memory://kg", "mem-b+notes/today", "mcp-1files+file:///d.txt"},
			templates: []string{"mem-a+demo://t/{id}", "mem-a+a://only/{x}", "mem-b+demo://t/{id}"},
			routes: map[string]string{
				"mem-b+notes/today": "mem-b notes/today", "mcp-1files+file:///d.txt": "1files file:///d.txt",
				"file:///a.txt": "", "mem-a+a://only/x": "mem-a a://only/x", "a://only/x": "",
			},
			exposed: map[string]string{"1files file:///x": "mcp-1files+file:///x", "mem-a a://only/y": "mem-a+a://only/y"},
		},
		{
			mode:      namespaceNever,
			resources: []string{"memory://kg", "file:///a.txt", "notes/today", "file:///d.txt"},
			templates: []string{"demo://t/{id}", "a://only/{x}"},
			routes: map[string]string{
				"memory://kg": "mem-a memory://kg", "demo://t/7": "mem-a demo://t/7", "mem-a+memory://kg": "",
			},
			exposed:   map[string]string{"mem-b memory://kg": "memory://kg"},
			conflicts: 2, // the resource and the template mem-b offers too: listed once
		},
	} {
		t.Run(tc.mode.String(), func(t *testing.T) {
			a, b, d := namespacingUpstreams(tc.mode)
			ups := map[string]*upstreamServer{"mem-a": a, "mem-b": b, "1files": d}
			c := buildCatalog([]*upstreamServer{a, b, d}, nil, "", nil, nil)
			if got := uris(c, kindResources); !slices.Equal(got, tc.resources) {
				t.Errorf("resources %q, want %q", got, tc.resources)
			}
			if got := uris(c, kindTemplates); !slices.Equal(got, tc.templates) {
				t.Errorf("templates %q, want %q", got, tc.templates)
			}
			for uri, want := range tc.routes {
				got := ""
				if rt, ok := c.resolveURI(uri); ok {
					got = rt.up.cfg.Name + " " + rt.uri
				}
				if got != want {
					t.Errorf("%q leads to %q, want %q", uri, got, want)
				}
			}
			for from, want := range tc.exposed {
				name, uri, _ := strings.Cut(from, " ")
				if got := c.exposeURI(ups[name], uri); got != want {
					t.Errorf("%s's %s is shown as %q, want %q", name, uri, got, want)
				}
			}
			if len(c.conflicts) != tc.conflicts {
				t.Errorf("conflicts %q, want %d", c.conflicts, tc.conflicts)
			}
			// Every listed template resolves back to its upstream's own.
			for _, tmpl := range tc.templates {
				if rt, ok := c.resolveTemplate(tmpl); !ok || rt.up.namespaced(rt.uri) != tmpl && rt.uri != tmpl {
					t.Errorf("template %q resolves to %+v", tmpl, rt)
				}
			}
		})
	}
}

// TestNamespacingSticky: in auto mode a URI stays namespaced while any upstream offers it, so that one of two
// upstreams going down (or restarting) renames nothing; once nobody offers it, it is forgotten.
func TestNamespacingSticky(t *testing.T) {
	a, b, _ := namespacingUpstreams(namespaceAuto)
	c := buildCatalog([]*upstreamServer{a, b}, nil, "", nil, nil)
	bLists := b.lists
	for _, step := range []struct {
		what    string
		change  func()
		visible []string
	}{
		{"mem-b down", func() { b.lists = [numKinds][]item{} }, []string{"mem-a+memory://kg", "file:///a.txt"}},
		{"mem-b back", func() { b.lists = bLists }, []string{"mem-a+memory://kg", "file:///a.txt", "mem-b+memory://kg", "notes/today"}},
		{"both down", func() { a.lists, b.lists = [numKinds][]item{}, [numKinds][]item{} }, nil},
		{"mem-a alone again", func() { a, _, _ = namespacingUpstreams(namespaceAuto) }, []string{"memory://kg", "file:///a.txt"}},
	} {
		step.change()
		c = buildCatalog([]*upstreamServer{a, b}, c, "", nil, nil)
		if got := uris(c, kindResources); !slices.Equal(got, step.visible) {
			t.Errorf("%s: resources %q, want %q", step.what, got, step.visible)
		}
	}
}

// TestRewriteURIs: resource URIs are rewritten where results name resources (links, embedded resources, read
// contents), byte for byte elsewhere, and nowhere else (text, structured content).
func TestRewriteURIs(t *testing.T) {
	ns := func(u string) string { return "x+" + u }
	for _, tc := range []struct {
		name   string
		places uriPlaces
		in     string
		want   string
	}{
		{"tool result", toolURIs,
			`{"content":[{"type":"text","text":"memory://kg"},{"type":"resource_link","uri":"memory://kg","name":"g"}, {"type":"resource","resource":{"uri":"file:///a","text":"\"uri\""}}],"structuredContent":{"uri":"memory://kg"}}`,
			`{"content":[{"type":"text","text":"memory://kg"},{"type":"resource_link","uri":"x+memory://kg","name":"g"}, {"type":"resource","resource":{"uri":"x+file:///a","text":"\"uri\""}}],"structuredContent":{"uri":"memory://kg"}}`},
		{"read result", readURIs,
			`{ "contents" : [ {"uri":"a:\u002fb","text":"t"} , {"uri":"c:d","blob":"AA=="} ] }`,
			`{ "contents" : [ {"uri":"x+a:/b","text":"t"} , {"uri":"x+c:d","blob":"AA=="} ] }`},
		{"prompt result", promptURIs,
			`{"messages":[{"role":"user","content":{"type":"resource","resource":{"uri":"m://1","text":""}}},{"role":"user","content":{"type":"resource_link","uri":"m://2","name":"n"}}]}`,
			`{"messages":[{"role":"user","content":{"type":"resource","resource":{"uri":"x+m://1","text":""}}},{"role":"user","content":{"type":"resource_link","uri":"x+m://2","name":"n"}}]}`},
		{"nothing to rewrite", toolURIs, `{"content":[{"type":"text","text":"hi"}]}`, `{"content":[{"type":"text","text":"hi"}]}`},
		{"malformed", toolURIs, `{"content":[{"uri":1},`, `{"content":[{"uri":1},`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := string(rewriteURIs([]byte(tc.in), tc.places, ns)); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

// TestParseNamespacing: the config's values, and the namespace of upstream names.
func TestParseNamespacing(t *testing.T) {
	for in, want := range map[string]namespacing{"": namespaceAuto, "auto": namespaceAuto, "always": namespaceAlways, "never": namespaceNever} {
		if got, err := parseNamespacing(in); err != nil || got != want {
			t.Errorf("parseNamespacing(%q) = %v, %v", in, got, err)
		}
	}
	if _, err := parseNamespacing("sometimes"); err == nil {
		t.Error("parseNamespacing accepted sometimes")
	}
	for name, want := range map[string]string{"memory": "memory", "mem-2": "mem-2", "1password": "mcp-1password"} {
		if got := namespaceOf(name); got != want {
			t.Errorf("namespaceOf(%q) = %q, want %q", name, got, want)
		}
	}
}
