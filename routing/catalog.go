package routing

import (
	"bytes"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/switchboard-mcp/switchboard/routing/pin"
	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
)

// listKind names one of the four paginated catalog lists.
type listKind uint8

const (
	kindTools listKind = iota
	kindPrompts
	kindResources
	kindTemplates
	numKinds
)

// method is the list method of the kind.
func (k listKind) method() string {
	return [...]string{"tools/list", "prompts/list", "resources/list", "resources/templates/list"}[k]
}

// key is the result member that holds the kind's items.
func (k listKind) key() string {
	return [...]string{"tools", "prompts", "resources", "resourceTemplates"}[k]
}

// idField is the item member that identifies it.
func (k listKind) idField() string {
	return [...]string{"name", "name", "uri", "uriTemplate"}[k]
}

// capability is the server capability under which the kind is offered.
func (k listKind) capability() string {
	return [...]string{"tools", "prompts", "resources", "resources"}[k]
}

// changedMethod is the notification that announces a change of the kind.
func (k listKind) changedMethod() string {
	return [...]string{"notifications/tools/list_changed", "notifications/prompts/list_changed",
		"notifications/resources/list_changed", "notifications/resources/list_changed"}[k]
}

// item is one entry of an upstream's list: its raw JSON and its identifying name or URI.
type item struct {
	raw []byte
	id  string
	// exposed and exposedRaw are the client-facing name and the item with it spliced in (tools and prompts),
	// computed once when the list is fetched rather than on every catalog merge.
	exposed    string
	exposedRaw []byte
	// hash is the pin hash of a tool's or prompt's definition (pins.go), and hidden the invisible characters in
	// it; both computed when the list is fetched.
	hash   string
	hidden []string
	// views are the URIs of the MCP Apps views a tool names (apps.go), found when the list is fetched.
	views []string
}

// itemRef says which upstream an item comes from and its name (or URI) there.
type itemRef struct {
	up   *upstreamServer
	name string
}

// policyKind is the kind name policy rules use.
func (k listKind) policyKind() string {
	return [...]string{"tool", "prompt", "resource", "template"}[k]
}

// target is where an exposed name leads: an upstream and the name it knows the item by, and for a tool with an
// override, the argument presets every call gets.
type target struct {
	up      *upstreamServer
	name    string
	exposed string      // the name clients call it by: the index's key, kept so that a call can use it (requestedName)
	presets []presetArg // sorted by name
	// withheld is set when the item's definition drifted from its pin and Pinning.Block keeps it from clients:
	// the name routes only to the error that says so.
	withheld *Drift
	// item is the position of the listed definition in catalog.items; -1 when it is not listed.
	item int
	hash string // the pin hash of the upstream's definition (item.hash), for the audit log
	// tasks is how the gateway runs the tool as a task of its own (taskhost.go): "" when it does not.
	tasks string
	// quoted is name as a JSON string, made once with the catalog: the edit every renamed call needs.
	quoted []byte
}

// templateRoute matches concrete URIs against one upstream's resource template.
type templateRoute struct {
	up   *upstreamServer
	tmpl string         // as the upstream knows it
	re   *regexp.Regexp // what tmpl produces
	// exposed is the template as clients see it, and xre what that produces: the namespace and tmpl when ns.
	exposed string
	xre     *regexp.Regexp
	ns      bool
}

// catalog is an immutable snapshot of the merged lists of every upstream (design §5). It is rebuilt on the cold
// path whenever an upstream's lists change and swapped in atomically, so the hot path reads it without locks.
type catalog struct {
	gen       [numKinds]uint64
	items     [numKinds][][]byte  // exposed items, in the stable merged order
	refs      [numKinds][]itemRef // what each item is, for policy
	tools     map[string]target   // exposed tool name → upstream
	prompts   map[string]target   // exposed prompt name → upstream
	resources map[string]uriRoute // client-visible resource URI → upstream (listed, or a view a tool names) and its URI
	templates []templateRoute
	// What resource namespacing made of this snapshot (resources.go): the mode; the upstream URIs and templates
	// namespaced (auto mode: offered by more than one upstream, now or since); the upstreams with something
	// namespaced, and by namespace; the URIs several upstreams offer, with the names clients read them by.
	nsMode      namespacing
	nsURIs      map[string]bool
	nsTemplates map[string]bool
	nsUpstreams map[*upstreamServer]bool
	namespaces  map[string]*upstreamServer
	ambiguous   map[string][]string
	conflicts   []string
	headers     headerIndex // x-mcp-header bindings of the tools (headers.go)
	// apps maps an exposed tool name to the client-visible URIs of the MCP Apps views it names (apps.go): the
	// resources an endpoint that selects the tool serves with it.
	apps map[string][]string
	// views are the endpoints' parts of this snapshot, by endpoint name (endpoints.go); endpoints, the
	// endpoints they were computed for, so that a snapshot answers consistently across a reload.
	views     map[string]*view
	endpoints map[string]*Endpoint
	// index is the tool search index of this snapshot, when an endpoint is in search mode (discovery.go), and
	// modes what each search-mode endpoint's list depends on.
	index *toolIndex
	modes map[string]modeState
}

// buildCatalog merges the upstreams' lists in configuration order. prev supplies the generations, which advance
// only for the kinds whose content changed, so that cursors over an unchanged list stay valid.
//
// profile selects the view: for a per-client upstream, the lists its template session of that capability
// profile sees (see profile.go), when it has them; "" (or a profile with no lists yet) uses the default
// template's.
//
// shape applies the admin's overrides to the items and computes each endpoint's view; nil applies none. pins
// judges tools and prompts against their pins (pins.go); nil judges nothing.
func buildCatalog(ups []*upstreamServer, prev *catalog, profile string, shape *Shape, pins *pinRun) *catalog {
	return buildCatalogOf(ups, prev, func(up *upstreamServer) [numKinds][]item { return up.listsFor(profile) }, shape, pins)
}

// buildCatalogOf is buildCatalog with each upstream's lists given by listsOf. It runs the catalog's stages in
// order: merge (each upstream's items, with the overrides, pins and resource namespaces applied to each), the
// apps' views, the search index, the endpoints' views, search modes, and the lists' generations.
func buildCatalogOf(ups []*upstreamServer, prev *catalog, listsOf func(*upstreamServer) [numKinds][]item, shape *Shape, pins *pinRun) *catalog {
	b := newCatalogBuild(ups, prev, listsOf, shape, pins)
	for ui, up := range ups {
		b.merge(up, b.all[ui])
	}
	c := b.c
	c.linkViews(b.naming, b.appTools) // before the index and the views: both read the definitions it rewrites
	searchIndex(c, prev, shape)
	endpointViews(c, shape)
	if shape.searching() {
		c.modes = searchModes(c, shape) // after the views: it asks them
	}
	generations(c, prev)
	return c
}

// catalogBuild is one build's state while the upstreams' items are merged: the catalog so far, how resources are
// named, who owns each exposed name, and the tools that name an app's view.
type catalogBuild struct {
	c         *catalog
	shape     *Shape
	pins      *pinRun
	all       [][numKinds][]item // each upstream's lists, in ups' order
	naming    uriNaming
	owner     map[string]string          // kind and exposed name → the upstream that has it
	tmplOwner map[string]*upstreamServer // exposed template → its upstream
	appTools  []appTool
}

// newCatalogBuild takes each upstream's lists and decides how resource URIs are named (nameURIs).
func newCatalogBuild(ups []*upstreamServer, prev *catalog, listsOf func(*upstreamServer) [numKinds][]item, shape *Shape, pins *pinRun) *catalogBuild {
	b := &catalogBuild{
		c: &catalog{
			tools:     map[string]target{},
			prompts:   map[string]target{},
			resources: map[string]uriRoute{},
		},
		shape: shape, pins: pins,
		all:       make([][numKinds][]item, len(ups)),
		owner:     map[string]string{},
		tmplOwner: map[string]*upstreamServer{},
	}
	for i, up := range ups {
		b.all[i] = listsOf(up)
	}
	mode := namespaceAuto
	if len(ups) > 0 {
		mode, _ = parseNamespacing(ups[0].r.opts.ResourceNamespacing) // New checked it
	}
	b.naming = nameURIs(mode, ups, b.all, prev)
	b.c.nsMode, b.c.nsURIs, b.c.nsTemplates = mode, b.naming.uris, b.naming.templates
	return b
}

// merge adds an upstream's items to the catalog. A drained upstream leaves the lists but keeps its names
// routable, so that a call to it gets an error that says it is drained rather than that it does not exist.
func (b *catalogBuild) merge(up *upstreamServer, lists [numKinds][]item) {
	c := b.c
	drained := up.drained.Load()
	for k := listKind(0); k < numKinds; k++ {
		for _, it := range lists[k] {
			raw, hide, ok := it.raw, drained, true
			name := "" // a tool's or prompt's exposed name
			switch k {
			case kindTools, kindPrompts:
				raw, name, hide, ok = b.named(up, k, &it, hide)
			case kindResources:
				raw, ok = b.resource(up, it)
			case kindTemplates:
				raw, ok = b.template(up, it)
			}
			if !ok || hide {
				continue
			}
			if k == kindTools && len(it.views) > 0 {
				b.appTools = append(b.appTools, appTool{pos: len(c.items[k]), up: up, name: name, views: it.views})
			}
			c.items[k] = append(c.items[k], raw)
			c.refs[k] = append(c.refs[k], itemRef{up: up, name: it.id})
		}
	}
}

// named adds a tool or prompt under its exposed name (the upstream's, prefixed, or an override's), unless another
// upstream has that name (ok false). Its pin is checked: a withheld definition is routable, to say why, but not
// listed (hide). raw is the definition as listed: the override applied, the gateway's task support, invisible
// characters stripped when the pin policy says so.
func (b *catalogBuild) named(up *upstreamServer, k listKind, it *item, hide bool) (raw []byte, exposed string, hidden, ok bool) {
	c, pins := b.c, b.pins
	raw, exposed = it.raw, it.exposed
	if exposed == "" {
		exposed = exposedName(up.cfg.Prefix, it.id, up.r.opts.nameBudget())
	}
	ov := b.shape.override(up, k, it.id)
	if ov != nil && ov.Name != "" {
		exposed = ov.Name
	}
	key := k.key() + "\x00" + exposed
	if prevOwner, dup := b.owner[key]; dup {
		c.conflicts = append(c.conflicts, fmt.Sprintf("%s %q of upstream %q collides with upstream %q; it is not exposed (set a prefix to tell them apart)",
			strings.TrimSuffix(k.key(), "s"), exposed, up.cfg.Name, prevOwner))
		return nil, "", hide, false
	}
	b.owner[key] = up.cfg.Name
	var withheld *Drift
	if pins.check(up, k, it, exposed) {
		d := pins.drift[pinKey{up: up.cfg.Name, kind: pinKind(k), name: it.id}]
		withheld, hide = &d, true
	}
	switch {
	case ov != nil:
		raw = ov.apply(it.raw, exposed)
	case it.exposedRaw != nil:
		raw = it.exposedRaw
	case exposed != it.id:
		raw = replaceMember(it.raw, "name", exposed)
	}
	ts := ""
	if k == kindTools {
		if ts = up.gatewayTasks(ov, it.raw); ts == taskOptional || ts == taskRequired {
			raw = jsonrpc.SetMember(raw, "execution", mergeObjects(member(raw, "execution"), []byte(`{"taskSupport":"`+ts+`"}`)))
		}
	}
	if len(it.hidden) > 0 && pins != nil && pins.pol.StripInvisible {
		raw = pin.StripText(raw)
	}
	t := target{up: up, name: it.id, exposed: exposed, withheld: withheld, item: -1, hash: it.hash, tasks: ts}
	if exposed != it.id {
		t.quoted = jsonrpc.AppendQuote(nil, it.id)
	}
	if !hide {
		t.item = len(c.items[k])
	}
	if ov != nil && k == kindTools {
		t.presets = compactPresets(ov.Arguments)
	}
	c.targets(k)[exposed] = t
	return raw, exposed, hide, true
}

// resource adds a resource under its URI, namespaced when the naming says so; ok is false when another upstream
// has the URI it would be exposed by, or the namespace is taken.
func (b *catalogBuild) resource(up *upstreamServer, it item) (raw []byte, ok bool) {
	c := b.c
	raw, exposed := it.raw, it.id
	if b.naming.resource(it.id) {
		if !c.claimNamespace(up) {
			return nil, false
		}
		exposed = up.namespaced(it.id)
		raw = replaceMember(it.raw, "uri", exposed)
		c.noteAlternative(it.id, exposed)
	}
	if other, dup := c.resources[exposed]; dup {
		c.conflicts = append(c.conflicts, fmt.Sprintf("resource %q of upstream %q is also offered by upstream %q; reads go to %q (set resourceNamespacing: auto or always to tell them apart)",
			exposed, up.cfg.Name, other.up.cfg.Name, other.up.cfg.Name))
		return nil, false
	}
	c.resources[exposed] = uriRoute{up, it.id}
	return raw, true
}

// template adds a resource template, namespaced when the naming says so; ok is false when it does not parse,
// another upstream has the template it would be exposed as, or the namespace is taken.
func (b *catalogBuild) template(up *upstreamServer, it item) (raw []byte, ok bool) {
	c := b.c
	re, err := templateRegexp(it.id)
	if err != nil {
		return nil, false
	}
	raw = it.raw
	t := templateRoute{up: up, tmpl: it.id, re: re, exposed: it.id, xre: re}
	if b.naming.template(it.id) {
		if !c.claimNamespace(up) {
			return nil, false
		}
		xre, err := exposedTemplateRegexp(up.namespace(), it.id)
		if err != nil {
			return nil, false
		}
		t.exposed, t.xre, t.ns = up.namespaced(it.id), xre, true
		raw = replaceMember(it.raw, "uriTemplate", t.exposed)
	}
	if other, dup := b.tmplOwner[t.exposed]; dup {
		c.conflicts = append(c.conflicts, fmt.Sprintf("resource template %q of upstream %q is also offered by upstream %q; it is listed once, and its completions and URIs go to %q (set resourceNamespacing: auto or always to tell them apart)",
			t.exposed, up.cfg.Name, other.cfg.Name, other.cfg.Name))
		return nil, false
	}
	b.tmplOwner[t.exposed] = up
	c.templates = append(c.templates, t)
	return raw, true
}

// searchIndex builds the catalog's search index when some endpoint searches (derived from prev's), and reports the
// tools that have a meta-tool's name.
func searchIndex(c *catalog, prev *catalog, shape *Shape) {
	if !shape.searching() {
		return
	}
	c.index = buildIndex(c, prev)
	for _, name := range []string{toolSearch, toolCall} {
		if t, ok := c.tools[name]; ok {
			c.conflicts = append(c.conflicts, fmt.Sprintf("tool %q of upstream %q has the name of a meta-tool; endpoints in search mode serve theirs (rename it with an override)", name, t.up.cfg.Name))
		}
	}
}

// endpointViews computes each configured endpoint's view of the catalog.
func endpointViews(c *catalog, shape *Shape) {
	if shape == nil || len(shape.Endpoints) == 0 {
		return
	}
	c.views, c.endpoints = map[string]*view{}, map[string]*Endpoint{}
	for i := range shape.Endpoints {
		e := &shape.Endpoints[i]
		c.endpoints[e.Name], c.views[e.Name] = e, newView(e, c)
	}
}

// generations advances each kind's generation past prev's when its items changed, so that cursors over an
// unchanged list stay valid.
func generations(c *catalog, prev *catalog) {
	for k := listKind(0); k < numKinds; k++ {
		if prev == nil {
			c.gen[k] = 1
			continue
		}
		c.gen[k] = prev.gen[k]
		if !sameItems(prev.items[k], c.items[k]) {
			c.gen[k]++
		}
	}
}

func sameItems(a, b [][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

// replaceMember returns obj with the string member key set to v (a splice: the rest of the item is kept byte
// for byte).
func replaceMember(obj []byte, key, v string) []byte {
	start, end, ok := jsonrpc.Lookup(obj, key)
	if !ok {
		return obj
	}
	return jsonrpc.Splice(nil, obj, jsonrpc.Edit{Start: start, End: end, With: jsonrpc.AppendQuote(nil, v)})
}

// page renders one page of a list: the items from the cursor's offset and, when more remain, a nextCursor.
// allow, when set, hides what the principal may not see; offsets count every item, so a cursor stays valid for
// as long as the catalog generation does, whatever the policy hides.
//
// endpoint narrows the page to an endpoint's view ("" for the whole catalog); its cursors are its own: one
// endpoint's cursor is refused on another.
func (c *catalog) page(k listKind, cursor string, size int, codec cursorCodec, allow Allow, endpoint string) ([]byte, error) {
	// The positions a page walks: every item, or the endpoint's selection. Offsets are catalog positions either
	// way, so a cursor means the same item whatever the view.
	var index []int
	if endpoint != "" {
		v := c.views[endpoint]
		if v == nil {
			return []byte(`{"` + k.key() + `":[]}`), nil // an endpoint a reload removed: nothing left to see
		}
		index = v.index[k]
	}
	off := 0
	if cursor != "" {
		var err error
		if off, err = codec.decode(cursor, k, c.gen[k], endpoint); err != nil {
			return nil, err
		}
	}
	items := c.items[k]
	if off > len(items) {
		return nil, errBadCursor
	}
	n, from := len(items), off
	at := func(j int) int { return j }
	if endpoint != "" {
		n, from = len(index), sort.SearchInts(index, off)
		at = func(j int) int { return index[j] }
	}
	visible := func(i int) bool {
		return allow == nil || allow(c.refs[k][i].up.cfg.Name, k.policyKind(), c.refs[k][i].name)
	}
	b := make([]byte, 0, 256)
	b = append(b, `{"`...)
	b = append(b, k.key()...)
	b = append(b, `":[`...)
	shown, j := 0, from
	for ; j < n && shown < size; j++ {
		i := at(j)
		if !visible(i) {
			continue
		}
		if shown > 0 {
			b = append(b, ',')
		}
		b = append(b, items[i]...)
		shown++
	}
	b = append(b, ']')
	more := false
	for m := j; m < n && !more; m++ {
		more = visible(at(m))
	}
	if more {
		b = append(b, `,"nextCursor":"`...)
		b = append(b, codec.encode(k, c.gen[k], at(j), endpoint)...)
		b = append(b, '"')
	}
	return append(b, '}'), nil
}

// targets is the index of the callable kind k (tools or prompts) by exposed name.
func (c *catalog) targets(k listKind) map[string]target {
	if k == kindPrompts {
		return c.prompts
	}
	return c.tools
}

// inView reports whether an endpoint's view shows an exposed tool or prompt name ("" shows everything).
func (c *catalog) inView(endpoint string, k listKind, name string) bool {
	if endpoint == "" {
		return true
	}
	v := c.views[endpoint]
	return v != nil && v.names[k][name]
}

// inViewURI reports whether an endpoint's view shows a resource URI or template ("" shows everything).
func (c *catalog) inViewURI(endpoint, uri string) bool {
	if endpoint == "" {
		return true
	}
	v, e := c.views[endpoint], c.endpoints[endpoint]
	return v != nil && (v.names[kindTemplates][uri] || v.allowsURI(c, e, uri))
}

// resourceUpstream finds the upstream that serves a client-visible resource URI (resolveURI).
func (c *catalog) resourceUpstream(uri string) *upstreamServer {
	rt, _ := c.resolveURI(uri)
	return rt.up
}

// templateUpstream finds the upstream that offers a client-visible resource template.
func (c *catalog) templateUpstream(tmpl string) *upstreamServer {
	rt, _ := c.resolveTemplate(tmpl)
	return rt.up
}

// templateRegexp turns an RFC 6570 URI template into a regexp that matches the URIs it can expand to. Simple
// and reserved expansions match one or many path characters; the query and fragment operators match their whole
// tail. It is a router, not a validator: it errs on the side of matching.
func templateRegexp(tmpl string) (*regexp.Regexp, error) {
	return regexp.Compile(templatePattern(tmpl))
}

func templatePattern(tmpl string) string {
	var b strings.Builder
	b.WriteString("^")
	for {
		open := strings.IndexByte(tmpl, '{')
		if open < 0 {
			b.WriteString(regexp.QuoteMeta(tmpl))
			break
		}
		b.WriteString(regexp.QuoteMeta(tmpl[:open]))
		end := strings.IndexByte(tmpl[open:], '}')
		if end < 0 {
			b.WriteString(regexp.QuoteMeta(tmpl[open:]))
			break
		}
		expr := tmpl[open+1 : open+end]
		tmpl = tmpl[open+end+1:]
		op := byte(0)
		if expr != "" {
			op = expr[0]
		}
		switch op {
		case '+', '#':
			b.WriteString(".*")
		case '/':
			b.WriteString("(?:/[^/?#]*)*")
		case '.':
			b.WriteString(`(?:\.[^/?#.]*)*`)
		case ';':
			b.WriteString("(?:;[^/?#]*)*")
		case '?', '&':
			b.WriteString(`(?:[?&].*)?`)
		default:
			b.WriteString("[^/?#]*")
		}
	}
	b.WriteString("$")
	return b.String()
}
