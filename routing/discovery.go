package routing

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/switchboard-mcp/switchboard/routing/search"
	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
	"github.com/switchboard-mcp/switchboard/upstream/protocol"
)

// Tool search (issue 16). An endpoint (or the whole catalog) in search mode lists two meta-tools, search_tools
// and call_tool, plus the tools its AlwaysList selects, instead of every tool: a model handed 500 tools chooses
// badly. search_tools ranks the tools the session may see and call (routing/search, BM25F over the names and
// descriptions clients see, after overrides); call_tool, or a direct tools/call of any name the endpoint offers,
// runs one exactly as tools/call would. The index is part of the catalog snapshot: each rebuild derives it from
// the previous one (only changed tools are analysed) and swaps it in with the catalog, so a search never waits.

// The meta-tools' names: an upstream tool exposed under one of them is shadowed in search mode.
const (
	toolSearch = "search_tools"
	toolCall   = "call_tool"
)

// Search limits: the default and the most results a search returns, and the most found tools a session keeps
// for ExposeFound.
const (
	defaultSearchLimit = 10
	maxSearchLimit     = 50
	maxFoundPerSession = 200
)

// SearchMode configures search discovery for an endpoint (or the whole catalog, Shape.Root).
type SearchMode struct {
	// AlwaysList selects tools listed besides the meta-tools (path.Match globs over the names clients see).
	AlwaysList []string
	// ExposeFound adds each tool a search found to that session's tools/list, with list_changed.
	ExposeFound bool
}

// lists reports whether AlwaysList selects a tool.
func (m *SearchMode) lists(name string) bool {
	for _, g := range m.AlwaysList {
		if globMatch(g, name) {
			return true
		}
	}
	return false
}

// searchMode returns the search mode of an endpoint ("" for the whole catalog), or nil for list mode.
func (sh *Shape) searchMode(endpoint string) *SearchMode {
	if sh == nil {
		return nil
	}
	if endpoint == "" {
		return sh.Root
	}
	if e := sh.endpoint(endpoint); e != nil {
		return e.Search
	}
	return nil
}

// searching reports whether any endpoint (or the whole catalog) is in search mode: only then is an index kept.
func (sh *Shape) searching() bool {
	if sh == nil {
		return false
	}
	if sh.Root != nil {
		return true
	}
	for _, e := range sh.Endpoints {
		if e.Search != nil {
			return true
		}
	}
	return false
}

// modeState is what a search-mode session's tools/list depends on, per catalog snapshot: a hash of the mode and
// of the tools its AlwaysList selects in the view. rebuild compares it rather than the whole view, so that a
// search-mode session hears list_changed when its own list changed (or the mode did), not on every change of the
// tools it does not list.
type modeState struct {
	hash        uint64
	exposeFound bool  // its list also shows found tools, which change with the view
	listed      []int // the catalog positions of the tools its AlwaysList selects in the view, ascending
}

// searchModes computes the modeState of every endpoint (and the whole catalog, "") in search mode.
func searchModes(c *catalog, sh *Shape) map[string]modeState {
	out := map[string]modeState{}
	add := func(endpoint string, m *SearchMode) {
		h := fnv.New64a()
		for _, g := range m.AlwaysList {
			h.Write([]byte(g))
			h.Write([]byte{0})
		}
		if m.ExposeFound {
			h.Write([]byte{1})
		}
		var listed []int
		if len(m.AlwaysList) > 0 {
			for i, raw := range c.items[kindTools] {
				name, _ := jsonrpc.LookupString(raw, "name")
				if m.lists(name) && c.inView(endpoint, kindTools, name) {
					listed = append(listed, i)
					h.Write(raw)
					h.Write([]byte{0})
				}
			}
		}
		out[endpoint] = modeState{hash: h.Sum64(), exposeFound: m.ExposeFound, listed: listed}
	}
	if sh.Root != nil {
		add("", sh.Root)
	}
	for i := range sh.Endpoints {
		if e := &sh.Endpoints[i]; e.Search != nil {
			add(e.Name, e.Search)
		}
	}
	return out
}

// toolIndex is the search index of one catalog snapshot, and a fingerprint of each tool's indexed text so that
// the next snapshot re-analyses only what changed.
type toolIndex struct {
	ix    *search.Index
	print map[string]uint64
}

// buildIndex derives the catalog's index from the previous snapshot's: tools whose listed definition (or their
// upstream's instructions) changed are analysed again, those gone are removed.
func buildIndex(c *catalog, prev *catalog) *toolIndex {
	var base *toolIndex
	if prev != nil {
		base = prev.index
	}
	next := &toolIndex{print: make(map[string]uint64, len(c.items[kindTools]))}
	instructions := map[*upstreamServer]string{}
	var upsert []search.Doc
	for i, raw := range c.items[kindTools] {
		ref := c.refs[kindTools][i]
		ins, ok := instructions[ref.up]
		if !ok {
			ins = ref.up.instructions()
			instructions[ref.up] = ins
		}
		h := fnv.New64a()
		h.Write(raw)
		h.Write([]byte{0})
		h.Write([]byte(ref.up.cfg.Name))
		h.Write([]byte{0})
		h.Write([]byte(ins))
		name, _ := jsonrpc.LookupString(raw, "name")
		next.print[name] = h.Sum64()
		if base != nil && base.print[name] == next.print[name] {
			continue
		}
		upsert = append(upsert, searchDoc(raw, ref.up.cfg.Name, ins))
	}
	var removed []string
	if base != nil {
		for name := range base.print {
			if _, ok := next.print[name]; !ok {
				removed = append(removed, name)
			}
		}
		next.ix = base.ix.With(upsert, removed)
	} else {
		next.ix = search.Build(upsert)
	}
	return next
}

// searchDoc is what the index knows of a tool: the fields clients see, its parameters, its upstream.
func searchDoc(raw []byte, upstream, instructions string) search.Doc {
	var t struct {
		Name        string `json:"name"`
		Title       string `json:"title"`
		Description string `json:"description"`
		InputSchema struct {
			Properties map[string]struct {
				Description string `json:"description"`
			} `json:"properties"`
		} `json:"inputSchema"`
		Annotations struct {
			Title string `json:"title"`
		} `json:"annotations"`
	}
	_ = json.Unmarshal(raw, &t) // an odd schema indexes what it can
	d := search.Doc{Name: t.Name, Title: t.Title, Description: t.Description, Upstream: upstream, Instructions: instructions}
	if d.Title == "" {
		d.Title = t.Annotations.Title
	}
	for name, p := range t.InputSchema.Properties {
		d.Params = append(d.Params, search.Param{Name: name, Description: p.Description})
	}
	sort.Slice(d.Params, func(i, j int) bool { return d.Params[i].Name < d.Params[j].Name })
	return d
}

// found is what a session's searches found, for ExposeFound: listed with the meta-tools from then on.
type found struct {
	mu    sync.Mutex
	names map[string]bool
	order []string
}

// add records names; it reports whether any was new. Past maxFoundPerSession the oldest are forgotten.
func (f *found) add(names []string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.names == nil {
		f.names = map[string]bool{}
	}
	added := false
	for _, n := range names {
		if f.names[n] {
			continue
		}
		f.names[n], added = true, true
		f.order = append(f.order, n)
	}
	for len(f.order) > maxFoundPerSession {
		delete(f.names, f.order[0])
		f.order = f.order[1:]
	}
	return added
}

// statsCache keeps a session's search statistics (search.Stats: what it may see, counted) for one catalog
// snapshot and policy: computing them asks the policy about every tool, once per snapshot rather than once per
// search. A reload that changes the policies also rebuilds the catalog, so the statistics follow; a pooled
// session's requests, each judged by its own caller's policy, count their own.
type statsCache struct {
	mu  sync.Mutex
	cat *catalog
	pol *Allow // the policy they were counted under (Session.policy)
	st  *search.Stats
}

func (sc *statsCache) get(c *catalog, pol *Allow, allow func(string) bool) *search.Stats {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.cat != c || sc.pol != pol {
		sc.cat, sc.pol, sc.st = c, pol, c.index.ix.Stats(allow)
	}
	return sc.st
}

// list returns the found names, oldest first.
func (f *found) list() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.order)
}

// exposesFound reports whether the session lists what its searches found. A 2026-07-28 client has no session:
// its requests share a pooled one (per principal, and for anonymous clients per capabilities), which hears no
// notifications, so found tools would leak between clients and never be announced; such clients call what they
// found by name or with call_tool.
func (e *embeddings) exposesFound(s *Session, mode *SearchMode) bool {
	return mode.ExposeFound && !s.era.modern()
}

// searchMode is the session's search mode now (a reload may change it), or nil.
func (e *embeddings) searchMode(s *Session) *SearchMode {
	return s.r.shape.Load().searchMode(s.params.Endpoint)
}

// mayCall reports whether the session may see and call a tool of the catalog: in its endpoint's view, allowed
// by its policy, and not withheld.
func (e *embeddings) mayCall(ctx context.Context, s *Session, c *catalog, name string) bool {
	t, ok := s.scope.named(ctx, c, kindTools, name, "")
	return ok && t.withheld == nil
}

// listSearch answers tools/list in search mode: the meta-tools, then the tools AlwaysList selects and (with
// ExposeFound) those the session's searches found, in catalog order, paginated like any list.
func (e *embeddings) listSearch(ctx context.Context, s *Session, m jsonrpc.Message, out *Stream, mode *SearchMode) {
	c := s.catalog()
	// The AlwaysList's tools are found once per catalog snapshot (searchModes); the found ones by name. Only
	// those are looked at here, not the whole catalog.
	listed, ok := c.modes[s.params.Endpoint]
	if !ok { // a reload switched the mode and the snapshot with it is not swapped in yet
		listed = searchModes(c, &Shape{Root: mode})[""]
	}
	at := slices.Clone(listed.listed)
	if s.r.embed.exposesFound(s, mode) {
		for _, name := range s.found.list() {
			if t, ok := c.tools[name]; ok && t.item >= 0 {
				at = append(at, t.item)
			}
		}
		slices.Sort(at)
		at = slices.Compact(at)
	}
	items := [][]byte{[]byte(searchToolDef), []byte(callToolDef)}
	items = append(items, s.r.code.defs(s)...) // code mode's meta-tools (codemode.go)
	for _, i := range at {
		raw := c.items[kindTools][i]
		name, _ := jsonrpc.LookupString(raw, "name")
		if name != toolSearch && name != toolCall && !codeMeta(name) && s.r.embed.mayCall(ctx, s, c, name) {
			items = append(items, raw)
		}
	}
	// Offsets here count this synthetic list, not catalog positions: the cursor is bound to the search mode too, so
	// a list-mode cursor of the same endpoint (from before a reload switched modes) is refused, not misread.
	scope := s.params.Endpoint + "\x00search"
	off := 0
	if cursor, _ := jsonrpc.LookupString(m.Params(), "cursor"); cursor != "" {
		var err error
		if off, err = s.r.cursors.decode(cursor, kindTools, c.gen[kindTools], scope); err != nil || off > len(items) {
			replyError(out, m.ID(), protocol.CodeInvalidParams, errBadCursor.Error())
			return
		}
	}
	end := min(len(items), off+s.r.opts.PageSize)
	b := append([]byte(nil), `{"tools":[`...)
	for i, it := range items[off:end] {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, it...)
	}
	b = append(b, ']')
	if end < len(items) {
		b = append(b, `,"nextCursor":`...)
		b = jsonrpc.AppendQuote(b, s.r.cursors.encode(kindTools, c.gen[kindTools], end, scope))
	}
	if s.era.modern() {
		b = append(b, `,"cacheScope":"private"`...) // a search-mode list is never a cache entry to share (issue 16)
	}
	reply(out, m.ID(), append(b, '}'))
}

// searchArgs are search_tools' arguments.
type searchArgs struct {
	Query string   `json:"query"`
	Limit *float64 `json:"limit"` // JSON Schema's integer includes 5.0
}

// searchTools answers search_tools: the best matches among the tools the session may call, as structured
// content (declared by the tool's outputSchema) and as text for clients that ignore it.
func (e *embeddings) searchTools(ctx context.Context, s *Session, m jsonrpc.Message, out *Stream, mode *SearchMode) {
	c, query, hits, ok := e.rankFor(ctx, s, m, out, nil)
	if !ok {
		return
	}
	b := append([]byte(nil), `{"content":[{"type":"text","text":`...)
	b = jsonrpc.AppendQuote(b, renderHits(c, query, hits))
	b = append(b, `}],"structuredContent":{"tools":[`...)
	names := make([]string, 0, len(hits))
	for i, h := range hits {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendHit(b, c, h)
		names = append(names, h.Name)
	}
	b = append(b, `]}}`...)
	reply(out, m.ID(), b)
	if s.r.embed.exposesFound(s, mode) && s.found.add(names) {
		s.notify(jsonrpc.AppendNotification(nil, kindTools.changedMethod(), nil))
	}
}

// rankFor is search_tools in both modes up to the answer: it reads the arguments (answering bad ones itself: ok
// is false) and ranks the tools of the session's catalog that the session may call, the meta-tools aside
// (search_tools and call_tool, and those meta says are).
func (e *embeddings) rankFor(ctx context.Context, s *Session, m jsonrpc.Message, out *Stream, meta func(string) bool) (c *catalog, query string, hits []search.Hit, ok bool) {
	var args searchArgs
	if raw := member(m.Params(), "arguments"); len(raw) > 0 {
		if err := json.Unmarshal(raw, &args); err != nil {
			replyError(out, m.ID(), protocol.CodeInvalidParams, "search_tools: arguments must be {query: string, limit: integer 1-50}: "+err.Error())
			return nil, "", nil, false
		}
	}
	limit := defaultSearchLimit
	if args.Limit != nil {
		if l := *args.Limit; l != math.Trunc(l) || l < 1 || l > maxSearchLimit {
			replyError(out, m.ID(), protocol.CodeInvalidParams, fmt.Sprintf("search_tools: limit %g is not an integer from 1 to %d (default %d)", l, maxSearchLimit, defaultSearchLimit))
			return nil, "", nil, false
		}
		limit = int(*args.Limit)
	}
	if strings.TrimSpace(args.Query) == "" {
		replyError(out, m.ID(), protocol.CodeInvalidParams, "search_tools needs a query: describe the task in words, such as \"create a GitHub issue\"")
		return nil, "", nil, false
	}
	c = s.catalog()
	if c.index != nil {
		allow := func(name string) bool {
			return name != toolSearch && name != toolCall && (meta == nil || !meta(name)) && e.mayCall(ctx, s, c, name)
		}
		hits = e.rank(ctx, c, s.stats.get(c, s.scope.policy(ctx), allow), args.Query, limit, allow)
	}
	return c, args.Query, hits, true
}

// toolItem returns a catalog tool's listed definition.
func (c *catalog) toolItem(name string) []byte {
	if t, ok := c.tools[name]; ok && t.item >= 0 && t.item < len(c.items[kindTools]) {
		return c.items[kindTools][t.item]
	}
	return nil
}

// appendHit appends one result: the tool's name, title, description and inputSchema as listed, and its score.
func appendHit(b []byte, c *catalog, h search.Hit) []byte {
	raw := c.toolItem(h.Name)
	b = append(b, `{"name":`...)
	b = jsonrpc.AppendQuote(b, h.Name)
	for _, k := range []string{"title", "description"} {
		if v, ok := jsonrpc.LookupString(raw, k); ok && v != "" {
			b = append(b, `,"`+k+`":`...)
			b = jsonrpc.AppendQuote(b, v)
		}
	}
	schema := member(raw, "inputSchema")
	if len(schema) == 0 || schema[0] != '{' {
		schema = []byte(`{"type":"object"}`) // the outputSchema promises an object: an upstream's null must not break it
	}
	b = append(b, `,"inputSchema":`...)
	b = append(b, schema...)
	b = append(b, `,"score":`...)
	b = strconv.AppendFloat(b, float64(int64(h.Score*1000+0.5))/1000, 'f', -1, 64)
	if h.Reason != "" { // which of the query's words matched where: the model can judge a result, or ask again
		b = append(b, `,"reason":`...)
		b = jsonrpc.AppendQuote(b, h.Reason)
	}
	return append(b, '}')
}

// renderHits is the text form of a search's results: a name, one line of description and the parameters of
// each (required ones marked), for clients that show text and ignore structured content.
func renderHits(c *catalog, query string, hits []search.Hit) string {
	if len(hits) == 0 {
		return fmt.Sprintf("No tool matches %q. Try other words, or fewer of them.", query)
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "%d tool(s) for %q, best first. Call one with call_tool {name, arguments}, or directly by its name.\n", len(hits), query)
	for i, h := range hits {
		raw := c.toolItem(h.Name)
		desc, _ := jsonrpc.LookupString(raw, "description")
		desc, _, _ = strings.Cut(strings.TrimSpace(desc), "\n")
		if r := []rune(strings.TrimSpace(desc)); len(r) > 160 {
			desc = string(r[:157]) + "..." // by characters: a byte cut would split CJK text
		}
		fmt.Fprintf(&sb, "\n%d. %s", i+1, h.Name)
		if desc != "" {
			sb.WriteString(": " + desc)
		}
		if params := paramList(raw); params != "" {
			sb.WriteString("\n   parameters: " + params)
		}
		if h.Reason != "" {
			sb.WriteString("\n   matched: " + h.Reason)
		}
	}
	return sb.String()
}

// paramList names a tool's parameters, sorted, required ones with a trailing '*'.
func paramList(raw []byte) string {
	var t struct {
		InputSchema struct {
			Properties map[string]json.RawMessage `json:"properties"`
			Required   []string                   `json:"required"`
		} `json:"inputSchema"`
	}
	if json.Unmarshal(raw, &t) != nil {
		return ""
	}
	names := make([]string, 0, len(t.InputSchema.Properties))
	for n := range t.InputSchema.Properties {
		names = append(names, n)
	}
	sort.Strings(names)
	req := map[string]bool{}
	for _, r := range t.InputSchema.Required {
		req[r] = true
	}
	for i, n := range names {
		if req[n] {
			names[i] = n + "*"
		}
	}
	return strings.Join(names, ", ")
}

// unwrapCallTool turns a call_tool request into the tools/call it names: the same id (so cancellation and the
// answer match) and the same params but name and arguments (so _meta's progress token, a task, and a 2026-07-28
// retry's requestState stay), which then runs exactly as a direct call, with policy, presets and audit under the
// real name. It runs before anything else sees the request, so that a retry of a call parked for the client's
// input finds the call under the name it was parked with. why is the -32602 message for a malformed one.
func unwrapCallTool(m jsonrpc.Message) (call jsonrpc.Message, why string) {
	args := member(m.Params(), "arguments")
	name, ok := jsonrpc.LookupString(args, "name")
	if !ok || name == "" {
		return m, "call_tool needs arguments {name: the tool's name as search_tools gave it, arguments: {...}}"
	}
	if name == toolSearch || name == toolCall {
		return m, fmt.Sprintf("call_tool cannot call %s: call it directly", name)
	}
	inner := member(args, "arguments")
	if len(inner) == 0 || string(inner) == "null" {
		inner = []byte(`{}`)
	} else if inner[0] != '{' {
		return m, "call_tool: arguments.arguments must be an object of the tool's arguments"
	}
	// One splice, no second parse: the name and the arguments are hoisted out of the wrapper, the rest of params
	// (its _meta, a task) kept.
	_, call = m.AppendMessage(make([]byte, 0, len(m.Raw())), nil,
		jsonrpc.ParamEdit{Path: namePath, With: jsonrpc.AppendQuote(nil, name)}, jsonrpc.ParamEdit{Path: argumentsPath, With: inner})
	if call.Raw() == nil {
		return m, "call_tool: the call cannot be unwrapped"
	}
	return call, ""
}

// Definitions of the meta-tools. They state no count of tools: what a principal may not use leaves no trace.
const (
	searchToolDef = `{"name":"search_tools","title":"Search tools","description":"Finds the tools for a task among all the tools this server offers (only a few are listed). Describe the capability you need in a few words, not the whole request: for \"what's the latest news about the elections in Brazil?\" ask for \"web search news\". Each result gives a tool's name, description, inputSchema and the words it matched; call it with call_tool, or directly by its name.","inputSchema":{"type":"object","properties":{"query":{"type":"string","description":"The capability needed, in a few words (\"create github issue\", \"stock price\")."},"limit":{"type":"integer","minimum":1,"maximum":50,"default":10,"description":"How many tools to return, best first."}},"required":["query"]},"outputSchema":{"type":"object","properties":{"tools":{"type":"array","items":{"type":"object","properties":{"name":{"type":"string"},"title":{"type":"string"},"description":{"type":"string"},"inputSchema":{"type":"object"},"score":{"type":"number"},"reason":{"type":"string","description":"Which of the query's words matched which of the tool's fields."}},"required":["name","inputSchema","score"]}}},"required":["tools"]},"annotations":{"title":"Search tools","readOnlyHint":true,"openWorldHint":false}}`
	callToolDef   = `{"name":"call_tool","title":"Call a tool","description":"Calls a tool that search_tools found, by its name, with its arguments (as its inputSchema describes them).","inputSchema":{"type":"object","properties":{"name":{"type":"string","description":"The tool's name, as search_tools gave it."},"arguments":{"type":"object","description":"The tool's arguments."}},"required":["name"]}}`
)
