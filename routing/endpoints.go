package routing

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"path"
	"strings"

	"github.com/switchboard-mcp/switchboard/routing/codemode"
	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
)

// Endpoint is a named part of the catalog, served at its own path (issue 15): a team's tools, not all 500. It
// selects by globs over the names clients see: namespaced (or overridden) tool and prompt names, resource URIs
// and resource templates. Who may use it is the front end's business (its policy composes into the session's
// Allow); routing only narrows what the session sees and may call.
type Endpoint struct {
	Name string
	// Include selects; none means everything. Exclude then removes. Both use path.Match syntax.
	Include, Exclude []string
	// Search, when set, puts the endpoint in search mode (discovery.go); nil lists every tool.
	Search *SearchMode
	// Code, with Search, puts the endpoint in code mode (codemode.go): describe_tools and run_script too.
	Code *codemode.Mode
}

// selects reports whether the endpoint's globs select a client-visible name or URI.
func (e *Endpoint) selects(name string) bool {
	in := len(e.Include) == 0
	for _, g := range e.Include {
		if globMatch(g, name) {
			in = true
			break
		}
	}
	return in && !e.excludes(name)
}

// excludes reports whether one of the endpoint's exclude globs names a client-visible name or URI.
func (e *Endpoint) excludes(name string) bool {
	for _, g := range e.Exclude {
		if globMatch(g, name) {
			return true
		}
	}
	return false
}

// globMatch is path.Match where '*' also crosses '/': resource URIs have slashes that a glob like
// "file:///docs/*" means to cover. A malformed pattern matches nothing (the config refuses them at load).
func globMatch(pattern, name string) bool {
	ok, err := path.Match(strings.ReplaceAll(pattern, "/", "\x00"), strings.ReplaceAll(name, "/", "\x00"))
	return err == nil && ok
}

// checkEndpoint reports a malformed glob of an endpoint, for the config loader and the admin API.
func checkEndpoint(e Endpoint) error {
	globs := append(append([]string(nil), e.Include...), e.Exclude...)
	if e.Search != nil {
		globs = append(globs, e.Search.AlwaysList...)
	}
	for _, g := range globs {
		if _, err := path.Match(g, ""); err != nil {
			return fmt.Errorf("endpoint %q: glob %q: %w", e.Name, g, err)
		}
	}
	return nil
}

// view is an endpoint's part of one catalog snapshot, computed when the catalog is built so that pages and
// lookups cost a slice index or a map probe, whatever the globs.
type view struct {
	// index holds the catalog's indices of the selected items, ascending: a page walks it from the cursor's
	// offset, so a sparse view costs what a page of the whole catalog does.
	index [numKinds][]int
	names [numKinds]map[string]bool // the selected exposed names (tools, prompts), URIs and templates
	hash  [numKinds]uint64          // of the selected items: what the endpoint's clients would see change
}

// newView selects an endpoint's part of a catalog.
//
// The MCP Apps views its tools name (catalog.apps) come with them, listed or not, unless its exclude globs name
// them: a host reads a tool's view from the endpoint it called the tool on, and an endpoint that selects
// "apps__*" means the apps, views included. Other resources of the tool's upstream stay out.
func newView(e *Endpoint, c *catalog) *view {
	v := &view{}
	var views map[string]bool // the views of the selected tools
	for k := listKind(0); k < numKinds; k++ {
		v.names[k] = map[string]bool{}
		h := fnv.New64a()
		for i, raw := range c.items[k] {
			id, _ := jsonrpc.LookupString(raw, k.idField())
			if !e.selects(id) && !(k == kindResources && views[id] && !e.excludes(id)) {
				continue
			}
			v.index[k] = append(v.index[k], i)
			v.names[k][id] = true
			h.Write(raw)
			h.Write([]byte{0})
			if k == kindTools {
				for _, uri := range c.apps[id] {
					views = setTrue(views, uri)
				}
			}
		}
		v.hash[k] = h.Sum64()
	}
	for uri := range views {
		if !e.excludes(uri) {
			v.names[kindResources][uri] = true // unlisted views too: allowsURI lets them be read
		}
	}
	// Routed names that the lists do not show (a drained upstream's) are selected by the globs alone.
	for name := range c.tools {
		if e.selects(name) {
			v.names[kindTools][name] = true
		}
	}
	for name := range c.prompts {
		if e.selects(name) {
			v.names[kindPrompts][name] = true
		}
	}
	return v
}

// allowsURI reports whether a resource URI is in the view: listed, selected by the globs itself, or produced by
// a template the view shows.
func (v *view) allowsURI(c *catalog, e *Endpoint, uri string) bool {
	if v.names[kindResources][uri] || e.selects(uri) {
		return true
	}
	for _, t := range c.templates {
		if v.names[kindTemplates][t.exposed] && t.xre.MatchString(uri) {
			return true
		}
	}
	return false
}

// Shape is what the admin configures of the catalog beyond the upstreams: overrides and endpoints. It reloads
// without touching upstreams or sessions (Router.SetShape).
type Shape struct {
	Overrides map[OverrideKey]Override
	Endpoints []Endpoint
	// Root, when set, puts the whole catalog (/mcp) in search mode.
	Root *SearchMode
	// RootCode, with Root, puts the whole catalog in code mode.
	RootCode *codemode.Mode
}

// endpoint returns the endpoint named name, or nil.
func (sh *Shape) endpoint(name string) *Endpoint {
	if sh == nil || name == "" {
		return nil
	}
	for i := range sh.Endpoints {
		if sh.Endpoints[i].Name == name {
			return &sh.Endpoints[i]
		}
	}
	return nil
}

// override returns the override of an item, or nil.
func (sh *Shape) override(up *upstreamServer, k listKind, id string) *Override {
	if sh == nil || len(sh.Overrides) == 0 || k > kindPrompts {
		return nil
	}
	o, ok := sh.Overrides[OverrideKey{Upstream: up.cfg.Name, Kind: k.policyKind(), Name: id}]
	if !ok {
		return nil
	}
	return &o
}

// compactPresets returns the presets with their values compacted, as they are spliced into calls.
func compactPresets(in map[string]json.RawMessage) []presetArg {
	if len(in) == 0 {
		return nil
	}
	out := make([]presetArg, 0, len(in))
	for _, k := range sortedKeys(in) {
		out = append(out, presetArg{name: k, path: []string{"arguments", k}, value: jsonrpc.Compact(nil, in[k])})
	}
	return out
}
