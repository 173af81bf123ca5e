package config

import (
	"net/url"
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

// topField is how one top-level key is read.
type topField struct {
	key string
	// decode reads the key's value; it is called only when the key is set to
	// something other than null.
	decode func(p *parser, key string, f pair, t *topLevel)
	// after, when set, runs next whether or not the key is set: a check that
	// involves this key and earlier ones.
	after func(p *parser, t *topLevel)
}

// topLevelFields lists the top-level keys in the order they are read. The
// order matters: a field may use what an earlier one set (auth derives its
// audience from publicURL, redis needs cursorSecret), and problems at one
// position are reported in this order. The upstreams come last, outside the
// table: they need every other setting. topLevelKeys keeps the order in which
// unknown keys are matched for a suggestion.
func topLevelFields() []topField {
	return []topField{
		{key: "listen", decode: readListen},
		{key: "publicURL", decode: readPublicURL},
		{key: "replicaURL", decode: readReplicaURL},
		{key: "allowedOrigins", decode: lowercaseList(func(c *Config) *[]string { return &c.AllowedOrigins }, checkOrigin)},
		{key: "allowedHosts", decode: lowercaseList(func(c *Config) *[]string { return &c.AllowedHosts }, checkHost)},
		{key: "maxBodyBytes", decode: readMaxBodyBytes},
		{key: "pageSize", decode: readPageSize},
		{key: "requestTimeout", decode: durationInto(func(c *Config) *time.Duration { return &c.RequestTimeout })},
		{key: "maxRequestTimeout", decode: durationInto(func(c *Config) *time.Duration { return &c.MaxRequestTimeout })},
		{key: "sessionIdleTimeout", decode: durationInto(func(c *Config) *time.Duration { return &c.SessionIdleTimeout }),
			after: checkRequestTimeouts},
		{key: "listCacheTTL", decode: readListCacheTTL},
		{key: "cursorSecret", decode: readCursorSecret},
		{key: "log", decode: func(p *parser, _ string, f pair, t *topLevel) { readLogConfig(p, f.val, &t.cfg.Log) }},
		{key: "auth", decode: func(p *parser, _ string, f pair, t *topLevel) { authSection{p}.authConfig(f.val, t.cfg) }},
		{key: "rateLimit", decode: func(p *parser, _ string, f pair, t *topLevel) { readRateLimitConfig(p, f.val, t.cfg) }},
		{key: "maxToolNameLength", decode: func(p *parser, _ string, f pair, t *topLevel) {
			readMaxToolNameLength(p, f.val, t.cfg)
			t.budgetNode = resolve(f.val)
		}},
		{key: "clientHosts", decode: func(p *parser, _ string, f pair, t *topLevel) { t.hostNodes = readClientHosts(p, f.val, t.cfg) },
			after: func(p *parser, t *topLevel) { warnNameBudget(p, t.cfg, t.budgetNode, t.hostNodes) }},
		{key: "resourceNamespacing", decode: readResourceNamespacing},
		{key: "redis", decode: readRedis},
		{key: "policy", decode: func(p *parser, _ string, f pair, t *topLevel) {
			t.policyKey = f.key
			t.policyLists = policySection{p}.policy(f.val, t.cfg)
		}},
		{key: "endpoints", decode: func(p *parser, key string, f pair, t *topLevel) { catalogSection{p}.endpoints(key, f, t) }},
		{key: "overrides", decode: func(p *parser, key string, f pair, t *topLevel) { catalogSection{p}.overrides(key, f, t) }},
		{key: "pinning", decode: readPinning},
		{key: "discovery", decode: topDiscovery},
		{key: "alwaysList", decode: topDiscovery},
		{key: "exposeFound", decode: topDiscovery},
		{key: "search", decode: func(p *parser, key string, f pair, t *topLevel) { searchSection{p}.search(key, f, t) }},
		{key: "serverCard", decode: readServerCard, after: checkServerCard},
		{key: "tasks", decode: readTasks},
	}
}

// config reads the whole file.
func (p *parser) config(doc *yaml.Node) *Config {
	cfg := Default()
	root, importForm := documentRoot(doc)
	o, ok := p.object(root, "", keySpec{known: topLevelKeys(), lenient: importForm})
	if !ok {
		return cfg
	}
	t := &topLevel{o: o, cfg: cfg}
	for _, fs := range topLevelFields() {
		if f, ok := o.get(fs.key); ok {
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
