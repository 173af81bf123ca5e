package routing

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
)

// Resource namespacing (issue 19, item 4). Two upstreams may offer the same URI (two memory servers both offer
// memory://knowledge-graph; server-everything over stdio and over HTTP offer the same demo:// documents and
// templates). The client-visible URI then carries the upstream, "<namespace>+<uri>" as Envoy AI Gateway writes
// it (memory+file:///x: the namespace joins the URI's scheme, so a URI stays a URI), and the gateway maps it back
// wherever a URI travels: reads, subscriptions and their updates, templates, completion references, the
// resource links and embedded resources of results, and the MCP Apps views tools name (apps.go).

// namespacing says when resource URIs carry their upstream's namespace.
type namespacing uint8

const (
	// namespaceAuto namespaces a URI (or a template) that more than one upstream offers, every offer of it alike,
	// and keeps it namespaced while any upstream still offers it (an upstream that restarts renames nothing).
	// The others pass unchanged.
	namespaceAuto namespacing = iota
	// namespaceAlways namespaces every upstream's URIs.
	namespaceAlways
	// namespaceNever passes URIs unchanged: a URI several upstreams offer is listed once and read from the first
	// (the conflict is logged).
	namespaceNever
)

// String names the setting as the config file does.
func (n namespacing) String() string {
	return [...]string{"auto", "always", "never"}[n]
}

// parseNamespacing reads Options.ResourceNamespacing, the config file's resourceNamespacing ("" is auto).
func parseNamespacing(s string) (namespacing, error) {
	switch s {
	case "", "auto":
		return namespaceAuto, nil
	case "always":
		return namespaceAlways, nil
	case "never":
		return namespaceNever, nil
	}
	return 0, fmt.Errorf("resourceNamespacing %q: use auto, always or never", s)
}

// namespaceOf is the namespace an upstream's URIs carry: its name, which the config keeps to [a-z0-9-]; one that
// starts with a digit gets "mcp-" before it, since a URI scheme starts with a letter (RFC 3986 §3.1).
func namespaceOf(name string) string {
	if name == "" || name[0] < 'a' || name[0] > 'z' {
		return "mcp-" + name
	}
	return name
}

// uriRoute is where a client-visible URI leads: the upstream and the URI it knows.
type uriRoute struct {
	up  *upstreamServer
	uri string
}

// uriNaming is what a catalog build decides of resource URIs before merging: which are namespaced.
type uriNaming struct {
	mode      namespacing
	uris      map[string]bool // upstream URIs namespaced (auto)
	templates map[string]bool // uriTemplates namespaced (auto)
}

// nameURIs decides, for one build, which resource URIs and templates are namespaced: in auto mode, those offered
// by more than one upstream now, and those prev namespaced that some upstream still offers (so that one of two
// upstreams going down, or restarting, renames nothing for the clients).
func nameURIs(mode namespacing, ups []*upstreamServer, lists [][numKinds][]item, prev *catalog) uriNaming {
	n := uriNaming{mode: mode}
	if mode != namespaceAuto {
		return n
	}
	count := func(k listKind, sticky map[string]bool) map[string]bool {
		owner := map[string]*upstreamServer{}
		var out map[string]bool
		offer := func(up *upstreamServer, id string) {
			first, seen := owner[id]
			switch {
			case !seen:
				owner[id] = up
				if sticky[id] {
					out = setTrue(out, id)
				}
			case first != up:
				out = setTrue(out, id)
			}
		}
		for i, up := range ups {
			for _, it := range lists[i][k] {
				offer(up, it.id)
			}
			if k != kindResources {
				continue
			}
			// The views its tools name are resources it offers, listed or not (toolViews).
			for _, it := range lists[i][kindTools] {
				for _, uri := range it.views {
					offer(up, uri)
				}
			}
		}
		return out
	}
	var stickyURIs, stickyTemplates map[string]bool
	if prev != nil {
		stickyURIs, stickyTemplates = prev.nsURIs, prev.nsTemplates
	}
	n.uris, n.templates = count(kindResources, stickyURIs), count(kindTemplates, stickyTemplates)
	return n
}

func setTrue(m map[string]bool, k string) map[string]bool {
	if m == nil {
		m = map[string]bool{}
	}
	m[k] = true
	return m
}

// resource reports whether up's resource URI is namespaced in this build.
func (n uriNaming) resource(uri string) bool {
	return n.mode == namespaceAlways || n.uris[uri]
}

// template reports whether up's uriTemplate is namespaced in this build.
func (n uriNaming) template(tmpl string) bool {
	return n.mode == namespaceAlways || n.templates[tmpl]
}

// exposeURI is the client-visible form of a URI up named (in a result, a notification): namespaced when every
// URI is, when it is one several upstreams offer, or when one of up's namespaced templates produces it.
func (c *catalog) exposeURI(up *upstreamServer, uri string) string {
	if c.nsMode == namespaceNever || c.nsMode == namespaceAuto && !c.nsUpstreams[up] {
		return uri
	}
	if c.nsMode == namespaceAlways || c.nsURIs[uri] {
		return up.namespaced(uri)
	}
	for _, t := range c.templates {
		if t.up == up && t.ns && t.re.MatchString(uri) {
			return up.namespaced(uri)
		}
	}
	return uri
}

// rewritesURIs reports whether some URI of up is client-visible under another name: results of up then have
// theirs rewritten.
func (c *catalog) rewritesURIs(up *upstreamServer) bool {
	return c.nsMode == namespaceAlways || c.nsMode == namespaceAuto && c.nsUpstreams[up]
}

// resolveURI finds where a client-visible URI leads: a listed resource, a URI one of the listed templates
// produces (namespaced or not), or, for a namespaced upstream, any "<namespace>+<uri>" (a link a result named).
func (c *catalog) resolveURI(uri string) (uriRoute, bool) {
	if rt, ok := c.resources[uri]; ok {
		return rt, true
	}
	for _, t := range c.templates {
		if t.xre.MatchString(uri) {
			if t.ns {
				return uriRoute{t.up, strings.TrimPrefix(uri, t.up.namespace()+"+")}, true
			}
			return uriRoute{t.up, uri}, true
		}
	}
	if ns, rest, ok := strings.Cut(uri, "+"); ok && c.namespaces != nil {
		if up := c.namespaces[ns]; up != nil {
			return uriRoute{up, rest}, true
		}
	}
	return uriRoute{}, false
}

// resolveTemplate finds the upstream that offers a client-visible uriTemplate, and the template as it knows it.
func (c *catalog) resolveTemplate(tmpl string) (uriRoute, bool) {
	for _, t := range c.templates {
		if t.exposed == tmpl {
			return uriRoute{t.up, t.tmpl}, true
		}
	}
	return uriRoute{}, false
}

// exposedTemplateRegexp matches the client-visible URIs of a namespaced template: the namespace, then what the
// upstream's template matches.
func exposedTemplateRegexp(ns, tmpl string) (*regexp.Regexp, error) {
	return regexp.Compile("^" + regexp.QuoteMeta(ns+"+") + strings.TrimPrefix(templatePattern(tmpl), "^"))
}

// Where results name resource URIs: the array member of the result, and the paths of a URI within each of its
// elements (resource links and embedded resources).
var (
	toolURIs   = uriPlaces{"content", [][]string{{"uri"}, {"resource", "uri"}}}
	promptURIs = uriPlaces{"messages", [][]string{{"content", "uri"}, {"content", "resource", "uri"}}}
	readURIs   = uriPlaces{"contents", [][]string{{"uri"}}}
)

// uriPlaces are where a kind of result names resource URIs.
type uriPlaces struct {
	array string
	paths [][]string
}

// rewriteURIs returns res with every URI at places rewritten by expose: one pass over the array's elements
// and one splice. It returns res itself when nothing changes (most results name no resource at all).
func rewriteURIs(res []byte, places uriPlaces, expose func(string) string) []byte {
	st, e, ok := jsonrpc.Lookup(res, places.array)
	if !ok || !bytes.Contains(res[st:e], []byte(`"uri"`)) {
		return res
	}
	var edits []jsonrpc.Edit
	dec := json.NewDecoder(bytes.NewReader(res[st:e]))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
		return res
	}
	for dec.More() {
		var elem json.RawMessage
		if err := dec.Decode(&elem); err != nil {
			return res
		}
		at := st + int(dec.InputOffset()) - len(elem)
		for _, path := range places.paths {
			vs, ve, ok := jsonrpc.Lookup(elem, path...)
			if !ok {
				continue
			}
			uri, err := jsonrpc.Unquote(elem[vs:ve])
			if err != nil {
				continue
			}
			if x := expose(uri); x != uri {
				edits = append(edits, jsonrpc.Edit{Start: at + vs, End: at + ve, With: jsonrpc.AppendQuote(nil, x)})
			}
		}
	}
	if _, err := dec.Token(); err != nil && err != io.EOF {
		return res
	}
	if len(edits) == 0 {
		return res
	}
	n := len(res)
	for _, ed := range edits {
		n += len(ed.With) - (ed.End - ed.Start)
	}
	return jsonrpc.Splice(make([]byte, 0, n), res, edits...)
}

// uriTransform returns the transform that shows the client the URIs a result of up names (places) as the
// catalog exposes them, around inner; inner itself when up's URIs are all shown as they are.
func (c *catalog) uriTransform(up *upstreamServer, places uriPlaces, inner func([]byte) []byte) func([]byte) []byte {
	if !c.rewritesURIs(up) {
		return inner
	}
	return func(res []byte) []byte {
		expose := func(uri string) string { return c.exposeURI(up, uri) }
		res = rewriteURIs(res, places, expose)
		if places.array == toolURIs.array && mayNameView(res) {
			res = rewriteViews(res, expose) // a result's _meta naming the tool's view (apps.go)
		}
		if inner != nil {
			res = inner(res)
		}
		return res
	}
}

// claimNamespace records that up has namespaced URIs in this snapshot, reporting false (and the conflict) when
// another upstream's namespace is the same (a name with a leading digit, "1x", and one "mcp-1x").
func (c *catalog) claimNamespace(up *upstreamServer) bool {
	ns := up.namespace()
	if other := c.namespaces[ns]; other != nil && other != up {
		c.conflicts = append(c.conflicts, fmt.Sprintf("upstreams %q and %q have the same resource namespace %q; the resources of %q that would need it are not exposed (rename one)",
			other.cfg.Name, up.cfg.Name, ns, up.cfg.Name))
		return false
	}
	if c.namespaces == nil {
		c.namespaces, c.nsUpstreams = map[string]*upstreamServer{}, map[*upstreamServer]bool{}
	}
	c.namespaces[ns], c.nsUpstreams[up] = up, true
	return true
}

// noteAlternative records that an upstream's URI is listed as exposed, for the error that answers the URI itself.
func (c *catalog) noteAlternative(uri, exposed string) {
	if c.ambiguous == nil {
		c.ambiguous = map[string][]string{}
	}
	c.ambiguous[uri] = append(c.ambiguous[uri], exposed)
}

// ambiguity explains why a URI that some upstream offers does not resolve as it is: the catalog lists it only
// namespaced. "" when uri is not one.
func (c *catalog) ambiguity(uri string) string {
	alts := c.ambiguous[uri]
	if len(alts) == 0 && c.nsUpstreams != nil {
		for _, t := range c.templates {
			if t.ns && t.re.MatchString(uri) {
				alts = append(alts, t.up.namespaced(uri))
			}
		}
	}
	switch len(alts) {
	case 0:
		return ""
	case 1:
		return fmt.Sprintf("resource %q is listed as %s: read it by that URI", uri, alts[0])
	default:
		return fmt.Sprintf("resource %q is offered by more than one upstream; name the one you mean: %s", uri, strings.Join(alts, ", "))
	}
}
