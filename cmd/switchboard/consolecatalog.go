package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/switchboard-mcp/switchboard/cmd/internal/config"
	"github.com/switchboard-mcp/switchboard/gateway/console"
	"github.com/switchboard-mcp/switchboard/routing"
	"github.com/switchboard-mcp/switchboard/routing/pin"
	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
)

// The console shows an endpoint's catalog as a client sees it: through a routing session opened on the endpoint,
// with no principal and no policy (the admin sees everything the endpoint serves), listing every page of
// tools/list, prompts/list, resources/list and resources/templates/list; and its search as a model gets it, by
// calling the endpoint's own search_tools through such a session.

const (
	// consoleListTimeout bounds one page's lists or one search.
	consoleListTimeout = 15 * time.Second
	// consoleMaxPages bounds the pages of one list: a cursor that never ends must not hold the page.
	consoleMaxPages = 200
	// wholeCatalog is the console's name for /mcp, the endpoint that serves everything.
	wholeCatalog = "/mcp"
)

// Endpoints lists /mcp, then /mcp/<name> for each configured endpoint.
func (s *consoleSource) Endpoints(context.Context) ([]string, error) {
	out := []string{wholeCatalog}
	for _, n := range s.router.EndpointNames() {
		out = append(out, wholeCatalog+"/"+n)
	}
	return out, nil
}

// endpointOf is the router's endpoint name of a console endpoint ("" for /mcp).
func (s *consoleSource) endpointOf(ep string) (string, error) {
	if ep == wholeCatalog {
		return "", nil
	}
	name, ok := strings.CutPrefix(ep, wholeCatalog+"/")
	if !ok || !s.router.HasEndpoint(name) {
		return "", console.ErrNotFound
	}
	return name, nil
}

// searchMode reports whether an endpoint is in search mode in the running config.
func (s *consoleSource) searchMode(name string) bool {
	cfg := s.running.Load()
	if name == "" {
		return cfg.Discovery.Searches()
	}
	for _, e := range cfg.Endpoints {
		if e.Name == name {
			return e.Discovery.Searches()
		}
	}
	return false
}

// session is the console's session on an endpoint.
func (s *consoleSource) session(name string) *routing.Session {
	return s.router.PooledSession(routing.SessionParams{Capabilities: json.RawMessage(`{}`), Endpoint: name})
}

// Catalog lists what an endpoint serves.
func (s *consoleSource) Catalog(ctx context.Context, ep string) (console.Catalog, error) {
	name, err := s.endpointOf(ep)
	if err != nil {
		return console.Catalog{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, consoleListTimeout)
	defer cancel()
	sess := s.session(name)
	cat := console.Catalog{Endpoint: ep, Search: s.searchMode(name)}
	drift := map[routing.OverrideKey]routing.Drift{}
	for _, d := range s.router.Drifts() {
		drift[routing.OverrideKey{Upstream: d.Upstream, Kind: d.Kind, Name: d.Name}] = d
	}
	listed, _ := s.router.Definitions()
	for _, l := range []struct{ method, key, kind string }{
		{"tools/list", "tools", "tool"}, {"prompts/list", "prompts", "prompt"},
		{"resources/list", "resources", "resource"}, {"resources/templates/list", "resourceTemplates", "template"},
	} {
		items, err := s.listAll(ctx, sess, l.method, l.key)
		if err != nil {
			return console.Catalog{}, err
		}
		for _, raw := range items {
			cat.Items = append(cat.Items, s.catalogItem(l.kind, raw, listed, drift))
		}
	}
	return cat, nil
}

// catalogItem describes one listed item: where it comes from, the override applied, its pin and task support.
func (s *consoleSource) catalogItem(kind string, raw json.RawMessage, listed map[string]pin.Locked, drift map[routing.OverrideKey]routing.Drift) console.CatalogItem {
	var it struct {
		Name, URI, URITemplate, Description string
		Execution                           struct{ TaskSupport string }
	}
	_ = json.Unmarshal(raw, &it)
	item := console.CatalogItem{Kind: kind, Exposed: it.Name, Description: it.Description}
	switch kind {
	case "resource":
		item.Exposed = it.URI
	case "template":
		item.Exposed = it.URITemplate
	case "tool":
		item.Task = cmp.Or(it.Execution.TaskSupport, "forbidden")
	}
	if kind != "tool" && kind != "prompt" {
		return item
	}
	item.Upstream, item.Original, item.Override = originOf(s.running.Load(), listed, kind, it.Name)
	if item.Upstream == "" {
		return item // the gateway's own, such as search_tools
	}
	if item.Override == "" { // an overridden item's listing is not the upstream's definition
		s.defs.put(upstreamDefinition(kind, item.Original, raw))
	}
	item.Pin = "pinned"
	if d, ok := drift[routing.OverrideKey{Upstream: item.Upstream, Kind: kind, Name: item.Original}]; ok {
		item.Pin = "changed"
		if d.Pinned == "" {
			item.Pin = "new"
		}
	}
	return item
}

// originOf finds the upstream and its own name of an exposed tool or prompt, and the override applied: the
// override that names it, else the upstream item whose default exposed name it is. "" for the gateway's own
// items, and for a name shortened past recognition. listed is the router's Definitions.
func originOf(cfg *config.Config, listed map[string]pin.Locked, kind, exposed string) (upstream, original, override string) {
	for k, o := range cfg.Overrides {
		if k.Kind != kind {
			continue
		}
		if o.Name == exposed || (o.Name == "" && prefixed(cfg, k.Upstream, k.Name) == exposed) {
			return k.Upstream, k.Name, overrideLabel(k, o)
		}
	}
	for up, l := range listed {
		names := l.Tools
		if kind == "prompt" {
			names = l.Prompts
		}
		for name := range names {
			if prefixed(cfg, up, name) == exposed {
				return up, name, ""
			}
		}
	}
	return "", "", ""
}

// prefixed is an upstream item's default exposed name.
func prefixed(cfg *config.Config, upstream, name string) string {
	for _, u := range cfg.Upstreams {
		if u.Name == upstream {
			return u.Prefix + name // the prefix has its separator ("everything__")
		}
	}
	return name
}

// upstreamDefinition is a listed definition as its upstream names it, which its pin hashes; "" hash when it has
// none.
func upstreamDefinition(kind, original string, raw json.RawMessage) (hash string, def []byte) {
	def = jsonrpc.SetMember(slices.Clone(raw), "name", jsonrpc.AppendQuote(nil, original))
	h, err := pin.Hash(pin.Kind(kind), def)
	if err != nil {
		return "", nil
	}
	return h, def
}

// overrideLabel says what an override changes, as the catalog shows it.
func overrideLabel(k config.OverrideKey, o config.Override) string {
	var what []string
	if o.Name != "" {
		what = append(what, "renamed")
	}
	if o.Description != "" || o.Title != "" {
		what = append(what, "described")
	}
	if len(o.Arguments) > 0 {
		names := make([]string, 0, len(o.Arguments))
		for n := range o.Arguments {
			names = append(names, n)
		}
		slices.Sort(names)
		what = append(what, "preset "+strings.Join(names, ", "))
	}
	if o.TaskSupport != "" {
		what = append(what, "tasks "+string(o.TaskSupport))
	}
	label := k.Upstream + "/" + k.Name
	if len(what) > 0 {
		label += " (" + strings.Join(what, "; ") + ")"
	}
	return label
}

// Search calls the endpoint's search_tools with query, as a model would, and gives its answer.
func (s *consoleSource) Search(ctx context.Context, ep, query string) (console.SearchResult, error) {
	name, err := s.endpointOf(ep)
	if err != nil {
		return console.SearchResult{}, err
	}
	res := console.SearchResult{Query: query}
	if !s.searchMode(name) {
		return res, nil // no search tool there: the model lists the tools instead
	}
	ctx, cancel := context.WithTimeout(ctx, consoleListTimeout)
	defer cancel()
	args, err := json.Marshal(map[string]any{"name": "search_tools", "arguments": map[string]string{"query": query}})
	if err != nil {
		return res, err
	}
	result, err := s.ask(ctx, s.session(name), "tools/call", args)
	if err != nil {
		return res, err
	}
	var answer struct {
		Content []struct{ Type, Text string }
		// StructuredContent is the search tool's outputSchema.
		StructuredContent struct {
			Tools []struct {
				Name, Description string
				Score             float64
			}
		}
		IsError bool
	}
	if err := json.Unmarshal(result, &answer); err != nil {
		return res, fmt.Errorf("search_tools: %w", err)
	}
	var text []string
	for _, c := range answer.Content {
		if c.Type == "text" {
			text = append(text, c.Text)
		}
	}
	res.Text = strings.Join(text, "\n")
	if answer.IsError {
		return res, fmt.Errorf("search_tools: %s", res.Text)
	}
	for _, t := range answer.StructuredContent.Tools {
		res.Hits = append(res.Hits, console.SearchHit{Exposed: t.Name, Score: t.Score, Description: t.Description})
	}
	return res, nil
}

// listAll asks sess for every page of a list.
func (s *consoleSource) listAll(ctx context.Context, sess *routing.Session, method, key string) ([]json.RawMessage, error) {
	var items []json.RawMessage
	cursor := ""
	for range consoleMaxPages {
		params := []byte(`{}`)
		if cursor != "" {
			params = append(append([]byte(`{"cursor":`), jsonrpc.AppendQuote(nil, cursor)...), '}')
		}
		result, err := s.ask(ctx, sess, method, params)
		if err != nil {
			return nil, err
		}
		var page map[string]json.RawMessage
		if err := json.Unmarshal(result, &page); err != nil {
			return nil, fmt.Errorf("%s: %w", method, err)
		}
		var got []json.RawMessage
		if err := json.Unmarshal(page[key], &got); err != nil {
			return nil, fmt.Errorf("%s: result.%s: %w", method, key, err)
		}
		items = append(items, got...)
		cursor = ""
		if next, ok := page["nextCursor"]; ok {
			_ = json.Unmarshal(next, &cursor)
		}
		if cursor == "" {
			return items, nil
		}
	}
	return nil, fmt.Errorf("%s: more than %d pages", method, consoleMaxPages)
}

// ask sends one request through sess and returns its result.
func (s *consoleSource) ask(ctx context.Context, sess *routing.Session, method string, params []byte) (json.RawMessage, error) {
	m, err := jsonrpc.Parse(jsonrpc.AppendRequest(nil, []byte(`"console"`), method, params))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	out := s.router.NewStream(1, 0)
	defer out.Close()
	sess.HandleRequest(ctx, m, out)
	for {
		msg, final, ok := out.Next(ctx)
		if !ok {
			return nil, fmt.Errorf("%s: no answer: %w", method, context.Cause(ctx))
		}
		if !final {
			continue
		}
		var answer struct {
			Result json.RawMessage
			Error  *struct {
				Code    int
				Message string
			}
		}
		if err := json.Unmarshal(msg, &answer); err != nil {
			return nil, fmt.Errorf("%s: %w", method, err)
		}
		if answer.Error != nil {
			if answer.Error.Code == -32601 {
				return json.RawMessage(`{}`), nil // an endpoint without this list: nothing to list
			}
			return nil, fmt.Errorf("%s: %s", method, answer.Error.Message)
		}
		return answer.Result, nil
	}
}

// Pins lists the definitions that differ from their pins. The seen definition's text is known when it is served
// (onChange: warn) and the console lists it now; the pinned one's when the console listed it before it changed
// (the pins themselves keep only hashes).
func (s *consoleSource) Pins(ctx context.Context) ([]console.PinDrift, error) {
	drifts := s.router.Drifts()
	if len(drifts) > 0 {
		s.listForDefinitions(ctx)
	}
	out := make([]console.PinDrift, 0, len(drifts))
	for _, d := range drifts {
		out = append(out, console.PinDrift{
			Ref:     console.PinRef{Upstream: d.Upstream, Kind: d.Kind, Name: d.Name, Seen: d.Seen},
			Exposed: d.Exposed, Pinned: d.Pinned, Withheld: d.Withheld,
			PinnedText: s.defs.text(d.Pinned), SeenText: s.defs.text(d.Seen),
		})
	}
	return out, nil
}

// listForDefinitions lists /mcp's tools and prompts, so that the definitions served now are known by hash.
func (s *consoleSource) listForDefinitions(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, consoleListTimeout)
	defer cancel()
	sess := s.session("")
	listed, _ := s.router.Definitions()
	for _, l := range []struct{ method, key, kind string }{{"tools/list", "tools", "tool"}, {"prompts/list", "prompts", "prompt"}} {
		items, err := s.listAll(ctx, sess, l.method, l.key)
		if err != nil {
			s.log.Warn("console: listing the definitions", "err", err)
			return
		}
		cfg := s.running.Load()
		for _, raw := range items {
			var it struct{ Name string }
			_ = json.Unmarshal(raw, &it)
			if up, original, override := originOf(cfg, listed, l.kind, it.Name); up != "" && override == "" {
				s.defs.put(upstreamDefinition(l.kind, original, raw))
			}
		}
	}
}

// Approve accepts one changed definition, as the admin API's approve does (writing the lock file).
func (s *consoleSource) Approve(ctx context.Context, by string, ref console.PinRef) error {
	res, err := s.router.ApprovePins(ctx, routing.PinFilter{Upstream: ref.Upstream, Kind: ref.Kind, Name: ref.Name, Seen: ref.Seen})
	var stale *routing.StaleApprovalError
	switch {
	case errors.Is(err, routing.ErrNoDrift):
		return console.ErrNotFound
	case errors.As(err, &stale):
		return console.ErrStale
	case err != nil:
		return err
	}
	s.logApproval(by, res)
	return nil
}

// ApproveAll accepts every changed definition.
func (s *consoleSource) ApproveAll(ctx context.Context, by string) (int, error) {
	res, err := s.router.ApprovePins(ctx, routing.PinFilter{})
	if errors.Is(err, routing.ErrNoDrift) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	s.logApproval(by, res)
	return len(res.Approved), nil
}

// logApproval logs a lock file that could not be written (the console logs the approval itself).
func (s *consoleSource) logApproval(by string, res routing.Approval) {
	if res.LockError != "" {
		s.log.Error("console: the approval holds, but the lock file was not written", "by", by, "lockFile", res.LockFile, "err", res.LockError)
	}
}

// definitionCache keeps definitions the console saw listed, indented, by their pin hash: the pins page shows the
// pinned definition beside the seen one when it knows it. It is bounded; when full it starts over.
type definitionCache struct {
	mu   sync.Mutex
	defs map[string]string
}

// maxCachedDefinitions bounds the definitions kept.
const maxCachedDefinitions = 4096

func newDefinitionCache() *definitionCache { return &definitionCache{defs: map[string]string{}} }

func (c *definitionCache) put(hash string, def []byte) {
	if hash == "" {
		return
	}
	var b bytes.Buffer
	if err := json.Indent(&b, def, "", "  "); err != nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.defs[hash]; !ok && len(c.defs) >= maxCachedDefinitions {
		clear(c.defs)
	}
	c.defs[hash] = b.String()
}

// text is the definition of hash, "" when unknown.
func (c *definitionCache) text(hash string) string {
	if hash == "" {
		return ""
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.defs[hash]
}
