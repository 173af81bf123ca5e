package config

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// topLevel is what the top-level fields share while one file is read: the
// configuration being built, and the nodes that checks involving several keys
// point at.
type topLevel struct {
	o   *object
	cfg *Config
	// budgetNode is maxToolNameLength's value, hostNodes the clientHosts
	// items: warnNameBudget points at one of them.
	budgetNode *yaml.Node
	hostNodes  []*yaml.Node
	// policyKey is the policy key (nil when the file has none) and
	// policyLists its allow and deny lists, checked once the upstreams are
	// known.
	policyKey   *yaml.Node
	policyLists []*yaml.Node
	// endpoints and overrides are where each endpoint's and override's
	// settings are, checked once the upstreams are known.
	endpoints []*endpointMeta
	overrides []*overrideMeta
	// discovery is where /mcp's discovery settings are; embeddingsKey and
	// searchTimeoutKey are search's keys (nil when unset).
	discovery                       discoveryMeta
	embeddingsKey, searchTimeoutKey *yaml.Node
	// serverCardKey is the serverCard key (nil when the file has none or turns it off), serverCardPrimitives
	// its primitives key.
	serverCardKey, serverCardPrimitives *yaml.Node
}

// topField is one top-level key: what it is (field), how it is read, and how
// String and Redacted show it.
type topField struct {
	field
	// decode reads the key's value; it is called only when the key is set to
	// something other than null (nil: the key is read after the table, as
	// the upstreams are).
	decode func(p *parser, key string, f pair, t *topLevel)
	// after, when set, runs next whether or not the key is set: a check that
	// involves this key and earlier ones.
	after func(p *parser, t *topLevel)
	// print writes the key's lines of String from a redacted copy (nil: String
	// leaves the key out); show orders them, which follows the reading of the
	// summary rather than the table: the server's settings, then auth, policy,
	// upstreams and the catalog.
	print func(c *Config, w *lineWriter)
	show  int
	// redact makes dst's value of the key (a copy of src's) safe to print and
	// shared with nothing of src's (nil: the copy is both already).
	redact func(dst, src *Config)
}

// topLevelFields lists the top-level keys in the order they are read, which
// is also the order of the reference and of the suggestions for unknown keys.
// The order matters: a field may use what an earlier one set (auth derives
// its audience from publicURL, redis needs cursorSecret), and problems at one
// position are reported in this order. The upstreams are read after the
// table: they need every other setting.
func topLevelFields() []topField {
	return slices.Concat(serverFields(), accessFields(), catalogFields(), upstreamForms())
}

// serverFields are the server's own settings.
func serverFields() []topField {
	return []topField{
		{field: field{key: "listen", typ: tString, def: DefaultListen,
			doc: "The host:port the gateway listens on (/mcp, /healthz, /readyz); \":8080\" is every interface, which needs auth."},
			decode: readListen, show: 1, print: func(c *Config, w *lineWriter) { w.line("listen: %s", c.Listen) }},
		{field: field{key: "publicURL", typ: tString,
			doc: "The gateway's canonical external URL, such as https://mcp.example.com: the OAuth audience's base, and an accepted origin and host."},
			decode: readPublicURL, show: 3, print: printIfSet("publicURL", func(c *Config) string { return c.PublicURL }),
			redact: func(dst, src *Config) { dst.PublicURL = redactURL(src.PublicURL) }},
		{field: field{key: "replicaURL", typ: tString,
			doc: "This replica's MCP endpoint as the other replicas reach it, such as http://${POD_IP}:8080/mcp; ${VAR} is expanded."},
			decode: readReplicaURL, show: 2, print: printIfSet("replicaURL", func(c *Config) string { return c.ReplicaURL })},
		{field: field{key: "allowedOrigins", typ: tStrings,
			doc: "The browser Origin values accepted (scheme://host[:port]); unset: loopback origins on a loopback listen, and publicURL's origin."},
			decode: lowercaseList(func(c *Config) *[]string { return &c.AllowedOrigins }, checkOrigin), show: 4, print: (*Config).writeOrigins,
			redact: func(dst, src *Config) { dst.AllowedOrigins = slices.Clone(src.AllowedOrigins) }},
		{field: field{key: "allowedHosts", typ: tStrings,
			doc: "The Host header values accepted (a host, or host:port); unset: localhost and publicURL's host on a loopback listen, else any."},
			decode: lowercaseList(func(c *Config) *[]string { return &c.AllowedHosts }, checkHost), show: 5, print: (*Config).writeHosts,
			redact: func(dst, src *Config) { dst.AllowedHosts = slices.Clone(src.AllowedHosts) }},
		{field: field{key: "maxBodyBytes", typ: tSize, def: sizeText(DefaultMaxBodyBytes),
			doc: "The largest request body, in bytes or with a unit (KB, MB, GB, KiB, MiB, GiB)."},
			decode: readMaxBodyBytes, show: 6, print: func(c *Config, w *lineWriter) { w.line("maxBodyBytes: %d", c.MaxBodyBytes) }},
		{field: field{key: "pageSize", typ: tInt, min: 1, max: MaxPageSize, def: fmt.Sprint(DefaultPageSize),
			doc: fmt.Sprintf("Items per page of tools/list and the other lists, 1 to %d.", MaxPageSize)},
			decode: readPageSize, show: 7, print: func(c *Config, w *lineWriter) { w.line("pageSize: %d", c.PageSize) }},
		{field: field{key: "requestTimeout", typ: tDuration, def: durationText(DefaultRequestTimeout),
			doc: "The default timeout of a request to an upstream; progress notifications reset it."},
			decode: durationInto(func(c *Config) *time.Duration { return &c.RequestTimeout }), show: 9,
			print: func(c *Config, w *lineWriter) { w.line("requestTimeout: %s", c.RequestTimeout) }},
		{field: field{key: "maxRequestTimeout", typ: tDuration, def: durationText(DefaultMaxRequestTimeout),
			doc: "The cap on a request, even one that keeps reporting progress."},
			decode: durationInto(func(c *Config) *time.Duration { return &c.MaxRequestTimeout }), show: 10,
			print: func(c *Config, w *lineWriter) { w.line("maxRequestTimeout: %s", c.MaxRequestTimeout) }},
		{field: field{key: "sessionIdleTimeout", typ: tDuration, def: durationText(DefaultSessionIdleTimeout),
			doc: "A client session unused this long ends."},
			decode: durationInto(func(c *Config) *time.Duration { return &c.SessionIdleTimeout }), after: checkRequestTimeouts, show: 11,
			print: func(c *Config, w *lineWriter) { w.line("sessionIdleTimeout: %s", c.SessionIdleTimeout) }},
		{field: field{key: "listCacheTTL", typ: tDuration, def: durationText(DefaultListCacheTTL),
			doc: fmt.Sprintf("How long a 2026-07-28 client may keep a list (ttlMs), at most %s; 0 makes lists immediately stale.", durationText(MaxListCacheTTL))},
			decode: readListCacheTTL, show: 12, print: func(c *Config, w *lineWriter) { w.line("listCacheTTL: %s", c.ListCacheTTL) }},
		{field: field{key: "cursorSecret", typ: tString, secret: true,
			doc: fmt.Sprintf("The HMAC key of pagination cursors, at least %d bytes, shared by every replica; ${VAR} is expanded. Unset: a random key at start (one replica only).", MinCursorSecretBytes)},
			decode: readCursorSecret, show: 13, print: (*Config).writeCursorSecret,
			redact: func(dst, src *Config) {
				if dst.cursorSecretLen = len(src.CursorSecret); dst.cursorSecretLen > 0 {
					dst.CursorSecret = []byte(redactedValue)
				}
			}},
		{field: field{key: "log", typ: tBlock, sub: logFields, doc: "The gateway's own log output."},
			decode: func(p *parser, key string, f pair, t *topLevel) {
				readBlock(p, f.val, key, nil, logTable(), &t.cfg.Log)
			}, show: 14,
			print: func(c *Config, w *lineWriter) {
				w.line("log: {level: %s, format: %s}", strings.ToLower(c.Log.Level.String()), c.Log.Format)
			}},
		{field: field{key: "console", typ: tBlock, sub: consoleFields, doc: "The admin console in the browser at /console (docs/console.md). Unset: off."},
			decode: readConsole, show: 14, print: (*Config).writeConsole},
	}
}

// accessFields say who may use what, and how much.
func accessFields() []topField {
	return []topField{
		{field: field{key: "auth", typ: tBlock, sub: authFields,
			doc: "Makes the gateway an OAuth 2.1 resource server: clients send a token of this issuer. Unset: clients are not authenticated."},
			decode: func(p *parser, _ string, f pair, t *topLevel) { authSection{p}.authConfig(f.val, t.cfg) }, show: 15,
			print: (*Config).writeAuth, redact: redactAuth},
		{field: field{key: "policy", typ: tBlockList, sub: policyRuleFields,
			doc: "Who may use which upstreams and items, as rules in order (deny wins, default deny). Unset: everyone may use everything; needs auth."},
			decode: func(p *parser, _ string, f pair, t *topLevel) {
				t.policyKey = f.key
				t.policyLists = policySection{p}.policy(f.val, t.cfg)
			}, show: 16, print: (*Config).writePolicy,
			redact: func(dst, src *Config) { dst.Policy = clonePolicy(src.Policy) }},
		{field: field{key: "redis", typ: tBlock, sub: redisFields,
			doc: "Shared state, so several replicas serve the same sessions (needs cursorSecret). Unset: one replica, state in memory."},
			decode: readRedis, redact: redactRedis},
		{field: field{key: "rateLimit", typ: tBlock, sub: rateLimitFields,
			doc: "Limits what one principal (without auth, one client address) may ask, across replicas with redis. Unset: no limit."},
			decode: func(p *parser, _ string, f pair, t *topLevel) { readRateLimitConfig(p, f.val, t.cfg) },
			redact: func(dst, src *Config) {
				if src.RateLimit != nil {
					rl := *src.RateLimit
					dst.RateLimit = &rl
				}
			}},
	}
}

// catalogFields shape the catalog clients see.
func catalogFields() []topField {
	return []topField{
		{field: field{key: "maxToolNameLength", typ: tInt, min: MinToolNameLength, max: MaxToolNameLength, def: fmt.Sprint(DefaultMaxToolNameLength),
			doc: fmt.Sprintf("The longest tool or prompt name shown (%d to %d); longer names are shortened with a hash.", MinToolNameLength, MaxToolNameLength)},
			decode: func(p *parser, _ string, f pair, t *topLevel) {
				readMaxToolNameLength(p, f.val, t.cfg)
				t.budgetNode = resolve(f.val)
			}},
		{field: field{key: "clientHosts", typ: tBlockList, sub: clientHostFields, def: "(Claude Code's)",
			doc: "The client hosts whose tool-name limits check and /readyz verify the names against."},
			decode: func(p *parser, _ string, f pair, t *topLevel) { t.hostNodes = readClientHosts(p, f.val, t.cfg) },
			after:  func(p *parser, t *topLevel) { warnNameBudget(p, t.cfg, t.budgetNode, t.hostNodes) },
			redact: func(dst, src *Config) { dst.ClientHosts = slices.Clone(src.ClientHosts) }},
		{field: field{key: "resourceNamespacing", typ: tString, def: string(NamespacingAuto),
			enum: enumOf(NamespacingAuto, NamespacingAlways, NamespacingNever),
			doc:  "When resource URIs carry their upstream's name (<upstream>+<uri>): auto (a URI two upstreams offer), always or never."},
			decode: readResourceNamespacing, show: 8,
			print: func(c *Config, w *lineWriter) { w.line("resourceNamespacing: %s", c.ResourceNamespacing) }},
		{field: field{key: "endpoints", typ: tBlockList, sub: endpointFields,
			doc: "Named parts of the catalog, each served at /mcp/<name>. Unset: /mcp serves everything."},
			decode: func(p *parser, key string, f pair, t *topLevel) { catalogSection{p}.endpoints(key, f, t) },
			show:   18, print: (*Config).writeEndpoints, redact: redactEndpoints},
		{field: field{key: "overrides", typ: tBlockMap, sub: overrideFields,
			doc: "How clients see single tools and prompts, keyed \"<upstream>/<tool>\" or \"<upstream>/prompts/<prompt>\"."},
			decode: func(p *parser, key string, f pair, t *topLevel) { catalogSection{p}.overrides(key, f, t) },
			show:   19, print: (*Config).writeOverrides, redact: redactOverrides},
		{field: field{key: "pinning", typ: tBlock, sub: pinningFields,
			doc: "The pins of tool definitions. Unset: each definition is trusted on first use, and a change is served with a warning."},
			decode: readPinning, show: 20, print: (*Config).writePinning},
		{field: field{key: "discovery", typ: tString, def: string(DiscoveryList), enum: enumOf(DiscoveryList, DiscoverySearch, DiscoveryCode),
			doc: "How /mcp shows its tools: list (every tool), search (the meta-tools search_tools and call_tool, and alwaysList's tools) or code (search, plus describe_tools and run_script: scripts that call tools)."},
			decode: topDiscovery, show: 21, print: (*Config).writeDiscovery},
		{field: field{key: "alwaysList", typ: tStrings,
			doc: "In search mode, globs over tool names that /mcp's tools/list shows besides the meta-tools."},
			decode: topDiscovery, show: 22, print: func(c *Config, w *lineWriter) {
				if c.AlwaysList != nil {
					w.line("alwaysList: %s", list(c.AlwaysList))
				}
			}, redact: func(dst, src *Config) { dst.AlwaysList = slices.Clone(src.AlwaysList) }},
		{field: field{key: "exposeFound", typ: tBool, def: "false",
			doc: "In search mode, adds each tool search_tools finds to that session's tools/list of /mcp."},
			decode: topDiscovery, show: 23, print: func(c *Config, w *lineWriter) {
				if c.ExposeFound {
					w.line("exposeFound: true")
				}
			}},
		{field: field{key: "codeMode", typ: tBlock, sub: codeModeFields,
			doc: "With discovery: code, how /mcp's scripts run: consent to writes, and their limits. Unset: the defaults."},
			decode: topDiscovery, show: 24, print: func(c *Config, w *lineWriter) {
				if cm := c.CodeMode; cm != nil {
					w.line("codeMode: %s", cm.text())
				}
			}, redact: func(dst, src *Config) {
				if src.CodeMode != nil {
					cm := *src.CodeMode
					dst.CodeMode = &cm
				}
			}},
		{field: field{key: "search", typ: tBlock, sub: searchFields,
			doc: "How the tool-search index of search mode ranks. Unset: BM25 alone, no network."},
			decode: func(p *parser, key string, f pair, t *topLevel) { searchSection{p}.search(key, f, t) },
			show:   25, print: (*Config).writeSearch, redact: redactSearch},
		{field: field{key: "serverCard", typ: tBoolOrBlock, sub: serverCardFields,
			doc: "Serves the server cards (experimental, SEP-2127) at /.well-known/mcp/server-card[/<endpoint>]; true for the defaults."},
			decode: readServerCard, after: checkServerCard, show: 26, print: (*Config).writeServerCard,
			redact: func(dst, src *Config) {
				if src.ServerCard != nil {
					sc := *src.ServerCard
					dst.ServerCard = &sc
				}
			}},
		{field: field{key: "tasks", typ: tBlock, sub: tasksFields,
			doc: "How the gateway holds the tasks it makes for tools whose upstreams take none."},
			decode: readTasks, show: 27, print: (*Config).writeTasks},
	}
}

// upstreamForms are the upstreams, in the main form and the two imported ones.
func upstreamForms() []topField {
	return []topField{
		{field: field{key: "upstreams", typ: tBlockList, sub: upstreamDocs,
			doc: "The MCP servers behind the gateway: each a local program (command) or a remote server (url)."},
			show: 17, print: (*Config).writeUpstreams, redact: redactUpstreams},
		{field: field{key: "mcpServers", typ: tBlockMap, sub: importFields,
			doc: "The upstreams in Claude Desktop's and Cursor's form, keyed by server name; instead of upstreams."}},
		{field: field{key: "servers", typ: tBlockMap, sub: importFields,
			doc: "The upstreams in VS Code's form (mcp.json), keyed by server name; instead of upstreams."}},
	}
}

// topFields returns the top-level table's fields.
func topFields() []field {
	tf := topLevelFields()
	out := make([]field, len(tf))
	for i, f := range tf {
		out[i] = f.field
	}
	return out
}

// printIfSet prints a string key's line when it is set.
func printIfSet(key string, get func(*Config) string) func(*Config, *lineWriter) {
	return func(c *Config, w *lineWriter) {
		if v := get(c); v != "" {
			w.line("%s: %s", key, v)
		}
	}
}

// config reads the whole file.
func (p *parser) config(doc *yaml.Node) *Config {
	cfg := Default()
	root, importForm := documentRoot(doc)
	fields := topLevelFields()
	o, ok := p.object(root, "", keySpec{known: keys(topFields()), lenient: importForm})
	if !ok {
		return cfg
	}
	t := &topLevel{o: o, cfg: cfg}
	for _, fs := range fields {
		if f, ok := o.get(fs.key); ok && fs.decode != nil {
			fs.decode(p, fs.key, f, t)
		}
		if fs.after != nil {
			fs.after(p, t)
		}
	}
	ups := upstreamSection{p}
	ups.checkUpstreams(cfg, ups.upstreams(o, cfg))
	if t.policyKey != nil {
		policySection{p}.checkPolicy(cfg, t.policyLists, t.policyKey)
	}
	cat := catalogSection{p}
	cat.checkOverrides(cfg, t)
	cat.checkEndpoints(cfg, t)
	searchSection{p}.checkSearch(cfg, t)
	return cfg
}

// documentRoot returns the document's top node (null for an empty file) and
// whether it is in the mcpServers form, whose unknown keys are only warned
// about: such files also belong to other applications.
func documentRoot(doc *yaml.Node) (root *yaml.Node, importForm bool) {
	root = doc
	if root.Kind == yaml.DocumentNode && len(root.Content) > 0 {
		root = root.Content[0]
	}
	if root.Kind == yaml.DocumentNode || root.Kind == 0 {
		root = &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null"}
	}
	if r := resolve(root); r.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(r.Content); i += 2 {
			if k := r.Content[i].Value; k == "mcpServers" || k == "servers" {
				importForm = true
			}
		}
	}
	return root, importForm
}

func readListen(p *parser, key string, f pair, t *topLevel) {
	if v, ok := p.scalar(f.val, key); ok {
		if msg := checkListen(v); msg != "" {
			p.errorf(resolve(f.val), key, "%s", msg+noExpandHint(v))
		}
		t.cfg.Listen = v
	}
}

func readPublicURL(p *parser, key string, f pair, t *topLevel) {
	v, ok := p.scalar(f.val, key)
	if !ok {
		return
	}
	if msg := checkHTTPURL(v, false); msg != "" {
		p.errorf(resolve(f.val), key, "%s", msg+noExpandHint(v))
	} else if u, _ := url.Parse(v); u.RawQuery != "" || u.Fragment != "" {
		p.errorf(resolve(f.val), key, "must not have a query or fragment; it is the gateway's canonical URL, such as \"https://mcp.example.com\"")
	}
	t.cfg.PublicURL = v
}

// readReplicaURL expands ${VAR}: the address is the pod's own, known only at run
// time (Kubernetes' status.podIP).
func readReplicaURL(p *parser, key string, f pair, t *topLevel) {
	if v, _, ok := p.expanded(f.val, key); ok && v != "" {
		if msg := checkHTTPURL(v, false); msg != "" {
			p.errorf(resolve(f.val), key, "%s", msg)
		}
		t.cfg.ReplicaURL = v
	}
}

// lowercaseList reads a list of strings, each checked by check, into the
// field dst returns, lowercased (origins and hosts compare without case).
func lowercaseList(dst func(*Config) *[]string, check func(string) string) func(*parser, string, pair, *topLevel) {
	return func(p *parser, key string, f pair, t *topLevel) {
		vals, _, ok := p.stringList(f.val, key, false)
		if !ok {
			return
		}
		out := dst(t.cfg)
		for i, v := range vals {
			if msg := check(v); msg != "" {
				p.errorf(resolve(f.val).Content[i], index(key, i), "%s", msg)
			}
			*out = append(*out, strings.ToLower(v))
		}
	}
}

func readMaxBodyBytes(p *parser, key string, f pair, t *topLevel) {
	if v, ok := p.size(f.val, key); ok {
		t.cfg.MaxBodyBytes = v
	}
}

func readPageSize(p *parser, key string, f pair, t *topLevel) {
	v, ok := p.integer(f.val, key)
	switch {
	case !ok:
	case v < 1 || v > MaxPageSize:
		p.errorf(resolve(f.val), key, "%d is out of range; it must be between 1 and %d", v, MaxPageSize)
	default:
		t.cfg.PageSize = int(v)
	}
}

// readListCacheTTL reads listCacheTTL: a duration up to MaxListCacheTTL, where 0
// (with or without a unit) turns list caching off.
func readListCacheTTL(p *parser, key string, f pair, t *topLevel) {
	n := resolve(f.val)
	if n.Kind == yaml.ScalarNode && n.Tag != "!!null" {
		if d, err := time.ParseDuration(strings.TrimSpace(n.Value)); err == nil && d == 0 {
			t.cfg.ListCacheTTL = 0 // "0", "0s": off
			return
		}
	}
	v, ok := p.duration(f.val, key, false)
	switch {
	case !ok:
	case v > MaxListCacheTTL:
		p.errorf(n, key, "%s is longer than %s; lists change, and a client should ask again at least daily", v, MaxListCacheTTL)
	default:
		t.cfg.ListCacheTTL = v
	}
}

// durationInto reads a duration into the field dst returns.
func durationInto(dst func(*Config) *time.Duration) func(*parser, string, pair, *topLevel) {
	return func(p *parser, key string, f pair, t *topLevel) {
		if v, ok := p.duration(f.val, key, false); ok {
			*dst(t.cfg) = v
		}
	}
}

// checkRequestTimeouts refuses a default timeout longer than the cap, at the
// key that set it (requestTimeout if the file sets it).
func checkRequestTimeouts(p *parser, t *topLevel) {
	cfg := t.cfg
	if cfg.RequestTimeout <= cfg.MaxRequestTimeout {
		return
	}
	f, ok := t.o.get("requestTimeout")
	key := "requestTimeout"
	if !ok {
		f, key = t.o.fields["maxRequestTimeout"], "maxRequestTimeout"
	}
	p.errorf(resolve(f.val), key, "requestTimeout (%s) is longer than maxRequestTimeout (%s); raise maxRequestTimeout or lower requestTimeout",
		cfg.RequestTimeout, cfg.MaxRequestTimeout)
}

func readCursorSecret(p *parser, key string, f pair, t *topLevel) {
	v, raw, ok := p.expanded(f.val, key)
	if !ok || v == "" {
		return
	}
	if len(v) < MinCursorSecretBytes {
		via := ""
		if raw != v {
			via = " (after expanding " + raw + ")"
		}
		p.errorf(resolve(f.val), key, "is %d bytes%s; it must be at least %d bytes (generate one with: openssl rand -hex 32), or be left out to generate a key at start",
			len(v), via, MinCursorSecretBytes)
	}
	t.cfg.CursorSecret = []byte(v)
}

// readRedis reads the redis block; several replicas need one cursorSecret, read
// before it.
func readRedis(p *parser, key string, f pair, t *topLevel) {
	readRedisConfig(p, f.val, t.cfg)
	if t.cfg.CursorSecret == nil {
		p.errorf(f.key, key, "several replicas need one cursorSecret (at least %d bytes, e.g. \"${SWITCHBOARD_CURSOR_SECRET}\"), or each rejects the others' pagination cursors", MinCursorSecretBytes)
	}
}
