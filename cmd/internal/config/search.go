package config

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Discovery is how an endpoint, or /mcp, shows its tools (issue 16).
type Discovery string

const (
	// DiscoveryList lists every tool the endpoint serves in tools/list (the
	// default).
	DiscoveryList Discovery = "list"
	// DiscoverySearch lists the two meta-tools (search_tools and call_tool)
	// and the tools alwaysList matches; the others are found with
	// search_tools and run with call_tool or tools/call.
	DiscoverySearch Discovery = "search"
	// DiscoveryCode is search mode with code mode's meta-tools besides
	// (issue 35): describe_tools, and run_script, which runs a script that
	// calls tools (codeMode: says how).
	DiscoveryCode Discovery = "code"
)

// Searches reports whether the mode lists search mode's meta-tools: search
// and code.
func (d Discovery) Searches() bool { return d == DiscoverySearch || d == DiscoveryCode }

// Names of the meta-tools of search and code mode. No override may give them.
const (
	SearchToolsName   = "search_tools"
	CallToolName      = "call_tool"
	DescribeToolsName = "describe_tools"
	RunScriptName     = "run_script"
)

// MetaToolNames are the names of the meta-tools of search and code mode.
func MetaToolNames() []string {
	return []string{SearchToolsName, CallToolName, DescribeToolsName, RunScriptName}
}

// Defaults and limits of the search: block.
const (
	// DefaultSearchTimeout bounds one request to the embeddings provider.
	DefaultSearchTimeout = 2 * time.Second
	// MinSearchTimeout and MaxSearchTimeout bound search.timeout.
	MinSearchTimeout = 100 * time.Millisecond
	MaxSearchTimeout = 30 * time.Second
)

// Search is the search: block: how the tool-search index of search mode
// ranks. The zero block (with Timeout defaulted) ranks with BM25 alone.
type Search struct {
	// Embeddings, when set, makes search hybrid: the provider's ranking is
	// fused with BM25's. Nil: BM25 only, no network.
	Embeddings *Embeddings
	// Timeout bounds one request to the embeddings provider; past it, that
	// search falls back to BM25. Defaulted to DefaultSearchTimeout; between
	// MinSearchTimeout and MaxSearchTimeout.
	Timeout time.Duration
}

// Embeddings names an OpenAI-compatible embeddings API (search.embeddings).
type Embeddings struct {
	// URL is an absolute http(s) URL: an OpenAI-compatible API's base, such
	// as https://api.openai.com/v1 (requests go to its /embeddings), or the
	// embeddings endpoint itself (a path ending in /embeddings).
	URL string
	// Model is the model's name, sent in each request. Never empty.
	Model string
	// APIKeyEnv is the name of the environment variable holding the API key
	// ("" = requests carry no key).
	APIKeyEnv string
	// APIKey is that variable's value, read at load (Parse fails when the
	// variable is unset or empty). Redacted and String never show it.
	APIKey string
}

// discoveryFields are an endpoint's discovery keys (whose is "the
// endpoint's"); the top level's, /mcp's, are in its own table.
func discoveryFields(whose string) []field {
	return []field{
		{key: "discovery", typ: tString, def: string(DiscoveryList), enum: enumOf(DiscoveryList, DiscoverySearch, DiscoveryCode),
			doc: "How " + whose + " tools show: list (every tool), search (the meta-tools search_tools and call_tool, and alwaysList's tools) or code (search, plus describe_tools and run_script: scripts that call tools)."},
		{key: "alwaysList", typ: tStrings, doc: "In search mode, globs over tool names that " + whose + " tools/list shows besides the meta-tools."},
		{key: "exposeFound", typ: tBool, def: "false", doc: "In search mode, adds each tool search_tools finds to that session's tools/list."},
		{key: "codeMode", typ: tBlock, sub: codeModeFields, doc: "With discovery: code, how " + whose + " scripts run: consent to writes, and their limits. Unset: the defaults."},
	}
}

func searchFields() []field { return fieldsOf(searchTable()) }

// searchTable is how the search: block's keys are read.
func searchTable() []blockField[Search] {
	return []blockField[Search]{
		{field: field{key: "embeddings", typ: tBlock, sub: embeddingsFields, doc: "An OpenAI-compatible embeddings API: search is then hybrid, BM25 fused with the embeddings' ranking."},
			read: func(p *parser, f pair, path string, s *Search) {
				s.Embeddings = searchSection{p}.embeddings(f.val, path)
			}},
		{field: field{key: "timeout", typ: tDuration, def: durationText(DefaultSearchTimeout),
			doc: fmt.Sprintf("Bounds one request to the embeddings API (%s to %s); past it, that search falls back to BM25.", durationText(MinSearchTimeout), durationText(MaxSearchTimeout))},
			read: func(p *parser, f pair, path string, s *Search) {
				if d, ok := p.duration(f.val, path, false); ok {
					if d < MinSearchTimeout || d > MaxSearchTimeout {
						p.errorf(resolve(f.val), path, "%s is out of range; it must be between %s and %s", d, MinSearchTimeout, MaxSearchTimeout)
					} else {
						s.Timeout = d
					}
				}
			}},
	}
}

func embeddingsFields() []field { return fieldsOf(embeddingsTable()) }

// embeddingsBuild is search.embeddings being read, with where its url and
// apiKeyEnv are (nil when unset or unusable).
type embeddingsBuild struct {
	Embeddings
	urlNode, keyNode *yaml.Node
}

// embeddingsTable is how search.embeddings' keys are read.
func embeddingsTable() []blockField[embeddingsBuild] {
	return []blockField[embeddingsBuild]{
		{field: field{key: "url", typ: tString, doc: "An OpenAI-compatible API's base, such as https://api.openai.com/v1, or its .../embeddings endpoint (required)."},
			read: func(p *parser, f pair, path string, e *embeddingsBuild) {
				if v, ok := p.scalar(f.val, path); ok {
					e.urlNode = resolve(f.val)
					if msg := checkHTTPURLLike(v, false, "https://api.openai.com/v1"); msg != "" {
						p.errorf(e.urlNode, path, "%s", msg+noExpandHint(v))
					} else {
						e.URL = v
					}
				}
			}},
		{field: field{key: "model", typ: tString, doc: "The embedding model's name, such as text-embedding-3-small (required)."},
			read: func(p *parser, f pair, path string, e *embeddingsBuild) {
				if v, ok := p.scalar(f.val, path); ok {
					if strings.TrimSpace(v) == "" {
						p.errorf(resolve(f.val), path, "is empty; give the embedding model's name, such as text-embedding-3-small")
					}
					e.Model = v
				}
			}},
		{field: field{key: "apiKeyEnv", typ: tString, doc: "The name of the environment variable holding the API key, never the key. Unset: no key is sent."},
			read: func(p *parser, f pair, path string, e *embeddingsBuild) {
				if v, ok := p.scalar(f.val, path); ok {
					e.keyNode = resolve(f.val)
					e.APIKeyEnv, e.APIKey = searchSection{p}.apiKeyEnv(e.keyNode, path, v)
				}
			}},
	}
}

// discoveryMeta is where the discovery settings of one endpoint, or of /mcp,
// are.
type discoveryMeta struct {
	path      string     // the endpoint's path, or "" for the top level
	modeNode  *yaml.Node // discovery's value (nil if unset)
	modeBad   bool       // discovery was set to something invalid
	alwaysKey *yaml.Node // the alwaysList key (nil if unset)
	exposeKey *yaml.Node // the exposeFound key (nil if unset)
	codeKey   *yaml.Node // the codeMode key (nil if unset)
}

// discoveryDst are the fields the discovery settings go into.
type discoveryDst struct {
	mode   *Discovery
	always *[]string
	expose *bool
	code   **CodeMode
}

// discoveryField reads key, one of discoveryKeys, at path: for an endpoint,
// or for /mcp at the top level.
func (p searchSection) discoveryField(key string, f pair, path string, d discoveryDst, m *discoveryMeta) {
	switch key {
	case "discovery":
		m.modeNode = resolve(f.val)
		v, ok := p.oneOf(f, path, "discovery mode", []string{string(DiscoveryList), string(DiscoverySearch), string(DiscoveryCode)},
			"list (tools/list shows every tool), search (tools/list shows the meta-tools search_tools and call_tool, and the tools alwaysList matches) or code (search, plus describe_tools and run_script)",
			"list, search or code")
		if !ok {
			m.modeBad = true
			return
		}
		*d.mode = Discovery(v)
	case "alwaysList":
		m.alwaysKey = f.key
		vals, _ := p.globList(f.val, path)
		*d.always = vals
		for i, g := range vals {
			if isResourceGlob(g) && checkGlob(g) == "" {
				p.warnf(resolve(f.val).Content[i], index(path, i), "%q can match no tool: alwaysList selects tools by the names clients see, which have no ':'", g)
			}
		}
	case "exposeFound":
		m.exposeKey = f.key
		*d.expose, _ = p.boolean(f.val, path)
	case "codeMode":
		m.codeKey = f.key
		*d.code = p.codeModeBlock(f, path)
	}
}

// topDiscovery reads discovery, alwaysList or exposeFound at the top level:
// the settings of /mcp.
func topDiscovery(p *parser, key string, f pair, t *topLevel) {
	c := t.cfg
	searchSection{p}.discoveryField(key, f, key, discoveryDst{&c.Discovery, &c.AlwaysList, &c.ExposeFound, &c.CodeMode}, &t.discovery)
}

// search reads the search: block.
func (p searchSection) search(key string, f pair, t *topLevel) {
	perEndpoint := "is set per endpoint, or at the top level for /mcp, not under search"
	o, ok := readBlock(p.parser, f.val, key, map[string]string{
		"url":         "the embeddings API goes under embeddings, such as embeddings: {url: https://api.openai.com/v1, model: text-embedding-3-small}",
		"model":       "the embeddings model goes under embeddings, such as embeddings: {url: https://api.openai.com/v1, model: text-embedding-3-small}",
		"discovery":   perEndpoint,
		"alwaysList":  perEndpoint,
		"exposeFound": perEndpoint,
		"codeMode":    perEndpoint,
	}, searchTable(), &t.cfg.Search)
	if !ok {
		return
	}
	if f, ok := o.get("embeddings"); ok {
		t.embeddingsKey = f.key
	}
	if f, ok := o.get("timeout"); ok {
		t.searchTimeoutKey = f.key
	}
}

// embeddings reads search.embeddings. It returns a block even when a key is
// wrong, so later checks know it was set.
func (p searchSection) embeddings(n *yaml.Node, path string) *Embeddings {
	keyHint := "the key itself never goes in the file: put it in an environment variable and give the variable's name, such as apiKeyEnv: OPENAI_API_KEY"
	urlHint := "did you mean \"url\" (an OpenAI-compatible base such as https://api.openai.com/v1, or the full .../embeddings URL)?"
	var e embeddingsBuild
	o, ok := readBlock(p.parser, n, path, map[string]string{
		"apiKey": keyHint, "key": keyHint, "token": keyHint,
		"baseURL": urlHint, "baseUrl": urlHint, "endpoint": urlHint,
	}, embeddingsTable(), &e)
	if !ok {
		return &e.Embeddings
	}
	if _, ok := o.get("url"); !ok {
		p.errorf(resolve(n), path, "missing url: the OpenAI-compatible embeddings API, such as https://api.openai.com/v1 (or its full .../embeddings URL)")
	}
	if _, ok := o.get("model"); !ok {
		p.errorf(resolve(n), path, "missing model: the embedding model's name, such as text-embedding-3-small")
	}
	if e.keyNode != nil && e.URL != "" && strings.HasPrefix(strings.ToLower(e.URL), "http://") {
		if u, err := url.Parse(e.URL); err == nil && !isLoopbackHost(u.Hostname()) {
			p.warnf(e.urlNode, join(path, "url"), "the API key is sent over plain http to a non-loopback host, unencrypted; use https")
		}
	}
	return &e.Embeddings
}

// apiKeyEnv checks apiKeyEnv's value v, the name of an environment variable,
// and reads the variable. Messages never quote v unless it is a valid name:
// a key pasted in by mistake must not reach a log.
func (p searchSection) apiKeyEnv(n *yaml.Node, path, v string) (name, key string) {
	if ref := envRefName(v); ref != "" {
		p.errorf(n, path, "names the variable, not a reference to it: write apiKeyEnv: %s", ref)
		return "", ""
	}
	if !validVarName(v) {
		p.errorf(n, path, "is not an environment variable name (letters, digits and _, not starting with a digit); give the name of the variable that holds the key, such as OPENAI_API_KEY, never the key itself")
		return "", ""
	}
	val, set := p.env(v)
	switch {
	case !set:
		p.errorf(n, path, "$%s is not set; set it to the provider's API key, or remove apiKeyEnv to send the requests without a key", v)
	case val == "":
		p.errorf(n, path, "$%s is empty; set it to the provider's API key, or remove apiKeyEnv to send the requests without a key", v)
	}
	return v, val
}

// envRefName returns NAME when v is a reference to a variable (${NAME},
// ${env:NAME} or $NAME), else "".
func envRefName(v string) string {
	s, ok := strings.CutPrefix(v, "$")
	if !ok {
		return ""
	}
	if inner, ok := strings.CutPrefix(s, "{"); ok {
		if s, ok = strings.CutSuffix(inner, "}"); !ok {
			return ""
		}
		s = strings.TrimPrefix(s, "env:")
	}
	if !validVarName(s) {
		return ""
	}
	return s
}

// checkSearch checks what involves the discovery settings of /mcp and of the
// endpoints together with the search: block, once every key is read.
func (p searchSection) checkSearch(cfg *Config, t *topLevel) {
	p.checkDiscovery(&t.discovery, cfg.Discovery, cfg.ExposeFound,
		"the top-level keys apply to /mcp only (an endpoint takes its own); set discovery: search at the top level")
	p.checkCodeMode(&t.discovery, cfg.Discovery, "the top-level codeMode applies to /mcp only (an endpoint takes its own); set discovery: code at the top level")
	searched, unsure := cfg.Discovery.Searches(), t.discovery.modeBad
	for i, e := range cfg.Endpoints {
		m := &t.endpoints[i].discovery
		p.checkDiscovery(m, e.Discovery, e.ExposeFound, "set discovery: search on this endpoint")
		p.checkCodeMode(m, e.Discovery, "set discovery: code on this endpoint")
		searched = searched || e.Discovery.Searches()
		unsure = unsure || m.modeBad
	}
	if t.embeddingsKey != nil && !searched && !unsure {
		p.warnf(t.embeddingsKey, "search.embeddings", "has effect only with discovery: search or code, which neither /mcp nor any endpoint uses; set discovery: search where clients should search for tools, or remove search.embeddings")
	}
	if t.searchTimeoutKey != nil && cfg.Search.Embeddings == nil {
		p.warnf(t.searchTimeoutKey, "search.timeout", "bounds the requests to the embeddings provider, and search.embeddings is not set, so it has no effect")
	}
}

// checkDiscovery warns about alwaysList and exposeFound where they have no
// effect: without discovery: search. fix says how to give them one.
func (p searchSection) checkDiscovery(m *discoveryMeta, mode Discovery, expose bool, fix string) {
	if mode.Searches() || m.modeBad {
		return
	}
	why := "has effect only with discovery: search or code"
	if m.modeNode != nil {
		why += fmt.Sprintf(" (discovery is %s at %s)", mode, pos(m.modeNode))
	}
	if m.alwaysKey != nil {
		p.warnf(m.alwaysKey, join(m.path, "alwaysList"), "%s; %s, or remove alwaysList", why, fix)
	}
	if m.exposeKey != nil && expose {
		p.warnf(m.exposeKey, join(m.path, "exposeFound"), "%s; %s, or remove exposeFound", why, fix)
	}
}

// searchModeAt returns where discovery: search is first set (nil if nowhere),
// for messages about the meta-tools' names.
func (t *topLevel) searchModeAt() *yaml.Node {
	if t.cfg.Discovery.Searches() {
		return t.discovery.modeNode
	}
	for i, e := range t.cfg.Endpoints {
		if e.Discovery.Searches() && i < len(t.endpoints) {
			return t.endpoints[i].discovery.modeNode
		}
	}
	return nil
}
