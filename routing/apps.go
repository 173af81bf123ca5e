package routing

import (
	"bytes"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
)

// MCP Apps (the io.modelcontextprotocol/ui extension) link a tool to its view, a ui:// resource the host reads
// with resources/read. The link is a URI reference in the tool's _meta, and the gateway must serve it as it
// serves the resource: when two upstreams offer the same app, or resourceNamespacing is always, the view is
// "<namespace>+ui://…" and so must be the URI its tools name, or the host reads a URI that is ambiguous or
// unknown. The spec also lets a view go unlisted: "Servers MAY omit UI-only resources from resources/list", so a
// view counts as a resource its upstream offers, listed or not: for naming (nameURIs), for reads (linkViews
// routes it), and for the endpoints that select its tools (newView serves it with them).

// viewPaths are where a tool definition, or a tools/call result, names its view: the extension's
// _meta.ui.resourceUri, the flat _meta["ui/resourceUri"] that older servers (and the ext-apps SDK, alongside)
// write, and the _meta["openai/outputTemplate"] of OpenAI's Apps SDK, which hosts read the same way.
var viewPaths = [][]string{{"_meta", "ui", "resourceUri"}, {"_meta", "ui/resourceUri"}, {"_meta", "openai/outputTemplate"}}

// toolViews returns the distinct view URIs a tool definition names, nil when none (most tools). Only ui:// URIs
// are views ("URI MUST start with ui://", and hosts ignore any other): a tool naming file:///etc/x as its view
// must not open that resource on an endpoint that selects the tool.
func toolViews(raw []byte) []string {
	if !bytes.Contains(raw, []byte("_meta")) && !bytes.Contains(raw, []byte(`\u`)) {
		return nil // no _meta, however spelled
	}
	var views []string
	for _, p := range viewPaths {
		if uri, ok := jsonrpc.LookupString(raw, p...); ok && isView(uri) && !slices.Contains(views, uri) {
			views = append(views, uri)
		}
	}
	return views
}

// isView reports whether a URI is an MCP Apps view: its scheme is ui (schemes are case-insensitive, RFC 3986
// §3.1), and something follows.
func isView(uri string) bool {
	return len(uri) > len("ui://") && strings.EqualFold(uri[:len("ui://")], "ui://")
}

// rewriteViews returns obj (a tool definition or a tools/call result) with each view URI it names replaced by
// expose's: one splice, obj itself when nothing changes.
func rewriteViews(obj []byte, expose func(string) string) []byte {
	var edits []jsonrpc.Edit
	for _, p := range viewPaths {
		s, e, ok := jsonrpc.Lookup(obj, p...)
		if !ok {
			continue
		}
		uri, err := jsonrpc.Unquote(obj[s:e])
		if err != nil || !isView(uri) {
			continue
		}
		if x := expose(uri); x != uri {
			edits = append(edits, jsonrpc.Edit{Start: s, End: e, With: jsonrpc.AppendQuote(nil, x)})
		}
	}
	if len(edits) == 0 {
		return obj
	}
	sort.Slice(edits, func(i, j int) bool { return edits[i].Start < edits[j].Start })
	return jsonrpc.Splice(nil, obj, edits...)
}

// mayNameView is a cheap test for a result whose _meta may name a view (some servers repeat the tool's link in
// its result): most results do not, and are not scanned.
func mayNameView(res []byte) bool {
	return bytes.Contains(res, []byte("resourceUri")) || bytes.Contains(res, []byte("outputTemplate"))
}

// appTool is a listed tool that names views: its position in the catalog's tools, its upstream and exposed name,
// and the views as its upstream names them.
type appTool struct {
	pos   int
	up    *upstreamServer
	name  string
	views []string
}

// linkViews makes the views the listed tools name readable by the URIs clients will see, and rewrites each tool's
// links to those URIs: once per snapshot, spliced into the definitions served (tools/list, search mode). The
// pin hash stays the upstream's definition's (item.hash, taken when the list was fetched). It runs after the
// resources are merged, so a view that is also listed takes the listed resource's route and name.
func (c *catalog) linkViews(naming uriNaming, tools []appTool) {
	conflicted := map[uriRoute]bool{}
	for _, t := range tools {
		exposed := make(map[string]string, len(t.views))
		for _, uri := range t.views {
			x, ok := c.routeView(naming, t.up, uri)
			if !ok {
				if rt := (uriRoute{t.up, uri}); !conflicted[rt] && x != "" {
					conflicted[rt] = true
					other := c.resources[x].up
					c.conflicts = append(c.conflicts, fmt.Sprintf("view %q of upstream %q is also offered by upstream %q; reads go to %q (set resourceNamespacing: auto or always to tell them apart)",
						uri, t.up.cfg.Name, other.cfg.Name, other.cfg.Name))
				}
				continue
			}
			exposed[uri] = x
			if c.apps == nil {
				c.apps = map[string][]string{}
			}
			c.apps[t.name] = append(c.apps[t.name], x)
		}
		c.items[kindTools][t.pos] = rewriteViews(c.items[kindTools][t.pos], func(uri string) string {
			if x, ok := exposed[uri]; ok {
				return x
			}
			return uri
		})
	}
}

// routeView returns the client-visible URI of a view up's tool names, routing it when the lists did not (an
// unlisted view); false when that URI leads elsewhere (another upstream offers it, and URIs are not namespaced),
// or "" and false when up's namespace is taken.
func (c *catalog) routeView(naming uriNaming, up *upstreamServer, uri string) (string, bool) {
	x := uri
	if naming.resource(uri) {
		if !c.claimNamespace(up) {
			return "", false
		}
		x = up.namespaced(uri)
	}
	if rt, ok := c.resources[x]; ok {
		return x, rt == uriRoute{up, uri}
	}
	c.resources[x] = uriRoute{up, uri}
	if x != uri {
		c.noteAlternative(uri, x)
	}
	return x, true
}
