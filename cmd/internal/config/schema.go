package config

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// The key lists are functions rather than package variables so nothing in
// the package is mutable.
func topLevelKeys() []string {
	return []string{"listen", "publicURL", "replicaURL", "allowedOrigins", "allowedHosts", "maxBodyBytes", "pageSize",
		"requestTimeout", "maxRequestTimeout", "sessionIdleTimeout", "cursorSecret", "log", "auth", "policy", "redis", "rateLimit",
		"maxToolNameLength", "clientHosts", "upstreams", "mcpServers", "servers"}
}

func upstreamKeys() []string {
	return []string{"name", "command", "args", "env", "envPassthrough", "cwd", "url", "headers", "session", "protocol", "prefix",
		"timeout", "maxInstances", "idleTimeout", "disabled", "auth"}
}

// upstreamHints explain keys that people bring from other tools.
func upstreamHints() map[string]string {
	transport := "the transport follows from command (a local program over stdio) or url (a remote server over HTTP); remove it"
	return map[string]string{
		"type":      transport,
		"transport": transport,
		"cmd":       "did you mean \"command\"?",
		"envFile":   "env files are not supported; list the variables under env, using ${VAR} to take them from the gateway's environment",
	}
}

// modernVersion is the protocol version of the modern era, for messages.
const modernVersion = "2026-07-28"

var (
	nameRE   = regexp.MustCompile(`^[a-z0-9-]+$`)
	prefixRE = regexp.MustCompile(`^[A-Za-z0-9_-]*$`)
)

// upstreamSource is an upstream's strings as written, before expansion.
type upstreamSource struct {
	command, cwd, url string
	args              []string
}

// upMeta remembers where an upstream's settings are, for checks that need
// the whole file (duplicates, defaults that depend on other keys).
type upMeta struct {
	path                        string
	authNode, authzHeader       *yaml.Node
	namePath                    string // path of the name: the key itself in the mcpServers form
	urlNode                     *yaml.Node
	node                        *yaml.Node
	nameNode, origName          *yaml.Node
	timeoutNode, prefixNode     *yaml.Node
	maxInstNode, idleNode       *yaml.Node
	prefixSet, maxInstSet       bool
	hasCommand, hasURL, headers bool
}

func (p *parser) config(doc *yaml.Node) *Config {
	cfg := Default()
	root := doc
	if root.Kind == yaml.DocumentNode && len(root.Content) > 0 {
		root = root.Content[0]
	}
	if root.Kind == yaml.DocumentNode || root.Kind == 0 {
		root = &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null"}
	}
	importForm := false
	if r := resolve(root); r.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(r.Content); i += 2 {
			if k := r.Content[i].Value; k == "mcpServers" || k == "servers" {
				importForm = true
			}
		}
	}
	o, ok := p.object(root, "", keySpec{known: topLevelKeys(), lenient: importForm})
	if !ok {
		return cfg
	}

	if f, ok := o.get("listen"); ok {
		if v, ok := p.scalar(f.val, "listen"); ok {
			if msg := checkListen(v); msg != "" {
				p.errorf(resolve(f.val), "listen", "%s", msg+noExpandHint(v))
			}
			cfg.Listen = v
		}
	}
	if f, ok := o.get("publicURL"); ok {
		if v, ok := p.scalar(f.val, "publicURL"); ok {
			if msg := checkHTTPURL(v, false); msg != "" {
				p.errorf(resolve(f.val), "publicURL", "%s", msg+noExpandHint(v))
			} else if u, _ := url.Parse(v); u.RawQuery != "" || u.Fragment != "" {
				p.errorf(resolve(f.val), "publicURL", "must not have a query or fragment; it is the gateway's canonical URL, such as \"https://mcp.example.com\"")
			}
			cfg.PublicURL = v
		}
	}
	if f, ok := o.get("replicaURL"); ok {
		// ${VAR} is expanded: the address is the pod's own, known only at run time (Kubernetes' status.podIP).
		if v, _, ok := p.expanded(f.val, "replicaURL"); ok && v != "" {
			if msg := checkHTTPURL(v, false); msg != "" {
				p.errorf(resolve(f.val), "replicaURL", "%s", msg)
			}
			cfg.ReplicaURL = v
		}
	}
	if f, ok := o.get("allowedOrigins"); ok {
		if vals, _, ok := p.stringList(f.val, "allowedOrigins", false); ok {
			for i, v := range vals {
				if msg := checkOrigin(v); msg != "" {
					p.errorf(resolve(f.val).Content[i], index("allowedOrigins", i), "%s", msg)
				}
				cfg.AllowedOrigins = append(cfg.AllowedOrigins, strings.ToLower(v))
			}
		}
	}
	if f, ok := o.get("allowedHosts"); ok {
		if vals, _, ok := p.stringList(f.val, "allowedHosts", false); ok {
			for i, v := range vals {
				if msg := checkHost(v); msg != "" {
					p.errorf(resolve(f.val).Content[i], index("allowedHosts", i), "%s", msg)
				}
				cfg.AllowedHosts = append(cfg.AllowedHosts, strings.ToLower(v))
			}
		}
	}
	if f, ok := o.get("maxBodyBytes"); ok {
		if v, ok := p.size(f.val, "maxBodyBytes"); ok {
			cfg.MaxBodyBytes = v
		}
	}
	if f, ok := o.get("pageSize"); ok {
		if v, ok := p.integer(f.val, "pageSize"); ok {
			if v < 1 || v > MaxPageSize {
				p.errorf(resolve(f.val), "pageSize", "%d is out of range; it must be between 1 and %d", v, MaxPageSize)
			} else {
				cfg.PageSize = int(v)
			}
		}
	}
	for _, d := range []struct {
		key string
		dst *time.Duration
	}{
		{"requestTimeout", &cfg.RequestTimeout},
		{"maxRequestTimeout", &cfg.MaxRequestTimeout},
		{"sessionIdleTimeout", &cfg.SessionIdleTimeout},
	} {
		if f, ok := o.get(d.key); ok {
			if v, ok := p.duration(f.val, d.key, false); ok {
				*d.dst = v
			}
		}
	}
	if cfg.RequestTimeout > cfg.MaxRequestTimeout {
		f, ok := o.get("requestTimeout")
		key := "requestTimeout"
		if !ok {
			f, key = o.fields["maxRequestTimeout"], "maxRequestTimeout"
		}
		p.errorf(resolve(f.val), key, "requestTimeout (%s) is longer than maxRequestTimeout (%s); raise maxRequestTimeout or lower requestTimeout",
			cfg.RequestTimeout, cfg.MaxRequestTimeout)
	}
	if f, ok := o.get("cursorSecret"); ok {
		if v, raw, ok := p.expanded(f.val, "cursorSecret"); ok && v != "" {
			if len(v) < MinCursorSecretBytes {
				via := ""
				if raw != v {
					via = " (after expanding " + raw + ")"
				}
				p.errorf(resolve(f.val), "cursorSecret", "is %d bytes%s; it must be at least %d bytes (generate one with: openssl rand -hex 32), or be left out to generate a key at start",
					len(v), via, MinCursorSecretBytes)
			}
			cfg.CursorSecret = []byte(v)
		}
	}
	if f, ok := o.get("log"); ok {
		p.logConfig(f.val, &cfg.Log)
	}
	if f, ok := o.get("auth"); ok {
		p.authConfig(f.val, cfg)
	}
	if f, ok := o.get("rateLimit"); ok {
		p.rateLimitConfig(f.val, cfg)
	}
	var budgetNode *yaml.Node
	if f, ok := o.get("maxToolNameLength"); ok {
		p.maxToolNameLength(f.val, cfg)
		budgetNode = resolve(f.val)
	}
	var hostNodes []*yaml.Node
	if f, ok := o.get("clientHosts"); ok {
		hostNodes = p.clientHosts(f.val, cfg)
	}
	p.warnNameBudget(cfg, budgetNode, hostNodes)
	if f, ok := o.get("redis"); ok {
		p.redisConfig(f.val, cfg)
		if cfg.CursorSecret == nil {
			p.errorf(f.key, "redis", "several replicas need one cursorSecret (at least %d bytes, e.g. \"${SWITCHBOARD_CURSOR_SECRET}\"), or each rejects the others' pagination cursors", MinCursorSecretBytes)
		}
	}
	var policyLists []*yaml.Node
	policyField, hasPolicy := o.get("policy")
	if hasPolicy {
		policyLists = p.policy(policyField.val, cfg)
	}

	var metas []*upMeta
	up, hasUp := o.fields["upstreams"]
	for _, key := range []string{"mcpServers", "servers"} {
		f, ok := o.fields[key]
		if !ok {
			continue
		}
		if hasUp {
			p.errorf(f.key, key, "upstreams is already set at %s; use either upstreams or %s, not both (move these servers into upstreams)", pos(up.key), key)
			continue
		}
		if other, ok := o.fields["mcpServers"]; key == "servers" && ok {
			p.errorf(f.key, key, "mcpServers is already set at %s; use one of mcpServers and servers", pos(other.key))
			continue
		}
		metas = append(metas, p.importServers(f.val, key, cfg)...)
	}
	if hasUp && !isNull(up.val) {
		n := resolve(up.val)
		if n.Kind != yaml.SequenceNode {
			p.errorf(n, "upstreams", "must be a list of upstreams (each item starts with \"- name:\"), not %s", kindName(n))
		} else {
			for i, item := range n.Content {
				if m := p.upstream(item, index("upstreams", i), cfg); m != nil {
					metas = append(metas, m)
				}
			}
		}
	}
	p.checkUpstreams(cfg, metas)
	if hasPolicy {
		p.checkPolicy(cfg, policyLists, policyField.key)
	}
	return cfg
}

func (p *parser) logConfig(n *yaml.Node, lc *LogConfig) {
	o, ok := p.object(n, "log", keySpec{known: []string{"level", "format"}})
	if !ok {
		return
	}
	if f, ok := o.get("level"); ok {
		if v, ok := p.scalar(f.val, "log.level"); ok {
			levels := map[string]slog.Level{"debug": slog.LevelDebug, "info": slog.LevelInfo, "warn": slog.LevelWarn,
				"warning": slog.LevelWarn, "error": slog.LevelError}
			if l, ok := levels[strings.ToLower(v)]; ok {
				lc.Level = l
			} else {
				p.errorf(resolve(f.val), "log.level", "%q is not a log level; use debug, info, warn or error", v)
			}
		}
	}
	if f, ok := o.get("format"); ok {
		if v, ok := p.scalar(f.val, "log.format"); ok {
			if v == "text" || v == "json" {
				lc.Format = v
			} else {
				p.errorf(resolve(f.val), "log.format", "%q is not a log format; use text or json", v)
			}
		}
	}
}

// upstream reads one item of the upstreams list.
func (p *parser) upstream(n *yaml.Node, path string, cfg *Config) *upMeta {
	o, ok := p.object(n, path, keySpec{known: upstreamKeys(), hints: upstreamHints()})
	if !ok {
		return nil
	}
	m := &upMeta{path: path, namePath: join(path, "name"), node: resolve(n)}
	var u Upstream
	f, ok := o.get("name")
	if !ok {
		p.errorf(m.node, path, "missing name; every upstream needs one, such as name: files")
	} else if v, ok := p.scalar(f.val, join(path, "name")); ok {
		m.nameNode = resolve(f.val)
		u.Name = v
		if msg := checkName(v); msg != "" {
			p.errorf(m.nameNode, join(path, "name"), "%s", msg)
		}
	}
	src := p.upstreamFields(o, &u, m, false)
	p.addUpstream(cfg, u, src)
	return m
}

func (p *parser) addUpstream(cfg *Config, u Upstream, src upstreamSource) {
	cfg.Upstreams = append(cfg.Upstreams, u)
	if cfg.sources == nil {
		cfg.sources = map[string]upstreamSource{}
	}
	cfg.sources[u.Name] = src
}

// upstreamFields reads the keys shared by the upstreams list and the
// mcpServers form. imported relaxes timeouts to accept bare seconds.
func (p *parser) upstreamFields(o *object, u *Upstream, m *upMeta, imported bool) upstreamSource {
	var src upstreamSource
	path := o.path
	var cmdNode, urlNode *yaml.Node
	if f, ok := o.get("command"); ok {
		cmdNode = resolve(f.val)
		m.hasCommand = true
		if v, raw, ok := p.expanded(f.val, join(path, "command")); ok {
			if strings.TrimSpace(v) == "" {
				p.errorf(cmdNode, join(path, "command"), "is empty; give the program to run, such as npx")
			}
			u.Command, src.command = v, raw
		}
	}
	if f, ok := o.get("url"); ok {
		urlNode = resolve(f.val)
		m.hasURL, m.urlNode = true, urlNode
		if v, raw, ok := p.expanded(f.val, join(path, "url")); ok {
			if msg := checkHTTPURL(v, raw != v); msg != "" {
				p.errorf(urlNode, join(path, "url"), "%s", msg)
			}
			u.URL, src.url = v, raw
		}
	}
	switch {
	case cmdNode != nil && urlNode != nil:
		p.errorf(urlNode, join(path, "url"), "command (at %s) and url are both set; an upstream is either a local program (command) or a remote server (url), so remove one", pos(cmdNode))
	case cmdNode == nil && urlNode == nil:
		p.errorf(m.node, path, "needs command (a local program, run over stdio) or url (a remote MCP server over HTTP)")
	}
	if f, ok := o.get("args"); ok {
		if cmdNode == nil && urlNode != nil {
			p.errorf(f.key, join(path, "args"), "args only applies to a command (stdio) upstream; remove it")
		}
		u.Args, src.args, _ = p.stringList(f.val, join(path, "args"), true)
	}
	if f, ok := o.get("env"); ok {
		if cmdNode == nil && urlNode != nil {
			p.errorf(f.key, join(path, "env"), "env only applies to a command (stdio) upstream; for a remote server use headers")
		}
		u.Env = p.stringMap(f.val, join(path, "env"), checkEnvName)
	}
	if f, ok := o.get("envPassthrough"); ok {
		if cmdNode == nil && urlNode != nil {
			p.errorf(f.key, join(path, "envPassthrough"), "envPassthrough only applies to a command (stdio) upstream; remove it")
		}
		names, _, _ := p.stringList(f.val, join(path, "envPassthrough"), false)
		for i, k := range names {
			if msg := checkEnvPattern(k); msg != "" {
				p.errorf(resolve(f.val).Content[i], index(join(path, "envPassthrough"), i), "%s", msg)
			}
		}
		u.EnvPassthrough = names
	}
	if f, ok := o.get("cwd"); ok {
		if cmdNode == nil && urlNode != nil {
			p.errorf(f.key, join(path, "cwd"), "cwd only applies to a command (stdio) upstream; remove it")
		}
		u.Cwd, src.cwd, _ = p.expanded(f.val, join(path, "cwd"))
	}
	if f, ok := o.get("headers"); ok {
		if urlNode == nil && cmdNode != nil {
			p.errorf(f.key, join(path, "headers"), "headers only apply to a url (HTTP) upstream; for a command use env")
		}
		m.headers = true
		// Header names are case-insensitive: two spellings of one name would
		// silently merge into one header, so refuse them.
		seen := map[string]string{}
		u.Headers = p.stringMap(f.val, join(path, "headers"), func(k string) string {
			if msg := checkHeaderName(k); msg != "" {
				return msg
			}
			if prev, dup := seen[strings.ToLower(k)]; dup {
				return fmt.Sprintf("%s is the same header as %s (header names ignore case); keep one", k, prev)
			}
			seen[strings.ToLower(k)] = k
			return ""
		})
		for k, v := range u.Headers {
			if strings.ContainsAny(v, "\r\n\x00") {
				p.errorf(resolve(f.val), join(join(path, "headers"), k), "value contains a line break or NUL, which HTTP does not allow (check the variable it comes from)")
			}
			if strings.EqualFold(k, "Authorization") {
				m.authzHeader = resolve(f.val)
			}
			if ref, ok := strings.CutPrefix(v, FileRefPrefix); ok {
				if strings.TrimSpace(ref) == "" {
					p.errorf(resolve(f.val), join(join(path, "headers"), k), "file: names no file; write file:/path/to/secret")
				}
				if u.HeaderFiles == nil {
					u.HeaderFiles = map[string]string{}
				}
				u.HeaderFiles[k] = ref
				delete(u.Headers, k)
			}
		}
		if len(u.Headers) == 0 {
			u.Headers = nil
		}
	}
	if f, ok := o.get("session"); ok {
		if v, ok := p.scalar(f.val, join(path, "session")); ok {
			switch SessionMode(v) {
			case SessionPerClient, SessionShared:
				u.Session = SessionMode(v)
			default:
				msg := fmt.Sprintf("%q is not a session mode; use per-client (each client gets its own upstream session) or shared (one session for all clients)", v)
				if s := suggest(v, []string{"per-client", "shared"}); s != "" {
					msg = fmt.Sprintf("%q is not a session mode; did you mean %q? (per-client or shared)", v, s)
				}
				p.errorf(resolve(f.val), join(path, "session"), "%s", msg)
			}
		}
	}
	if f, ok := o.get("protocol"); ok {
		if v, ok := p.scalar(f.val, join(path, "protocol")); ok {
			switch ProtocolMode(v) {
			case ProtocolAuto, ProtocolLegacy, ProtocolModern:
				u.Protocol = ProtocolMode(v)
			default:
				msg := fmt.Sprintf("%q is not a protocol mode; use auto (detect the upstream's era), legacy (initialize and sessions) or modern (stateless %s)", v, modernVersion)
				if s := suggest(v, []string{"auto", "legacy", "modern"}); s != "" {
					msg = fmt.Sprintf("%q is not a protocol mode; did you mean %q? (auto, legacy or modern)", v, s)
				}
				p.errorf(resolve(f.val), join(path, "protocol"), "%s", msg)
			}
		}
	}
	if f, ok := o.fields["prefix"]; ok {
		m.prefixSet, m.prefixNode = true, resolve(f.val)
		if isNull(f.val) {
			p.errorf(resolve(f.val), join(path, "prefix"), "has no value; write prefix: \"\" to keep tool names unchanged, or remove the key for the default \"<name>__\"")
		} else if v, ok := p.scalar(f.val, join(path, "prefix")); ok {
			switch {
			case !prefixRE.MatchString(v):
				p.errorf(m.prefixNode, join(path, "prefix"), "%q may only contain letters, digits, '_' and '-', because clients reject other characters in tool names", v)
			case len(v) > MaxPrefixLen:
				p.errorf(m.prefixNode, join(path, "prefix"), "%q is %d characters; the limit is %d, to leave room in 64-character tool names", v, len(v), MaxPrefixLen)
			}
			u.Prefix = v
		}
	}
	if f, ok := o.get("timeout"); ok {
		m.timeoutNode = resolve(f.val)
		u.Timeout, _ = p.duration(f.val, join(path, "timeout"), imported)
	}
	if f, ok := o.get("maxInstances"); ok {
		m.maxInstNode, m.maxInstSet = resolve(f.val), true
		if v, ok := p.integer(f.val, join(path, "maxInstances")); ok {
			if v < 0 || v > 1<<20 {
				p.errorf(m.maxInstNode, join(path, "maxInstances"), "%d is out of range; use 0 for no cap, or a positive number of live child processes", v)
			} else {
				u.MaxInstances = int(v)
			}
		}
	}
	if f, ok := o.get("idleTimeout"); ok {
		m.idleNode = resolve(f.val)
		u.IdleTimeout, _ = p.duration(f.val, join(path, "idleTimeout"), imported)
	}
	if f, ok := o.get("disabled"); ok {
		u.Disabled, _ = p.boolean(f.val, join(path, "disabled"))
	}
	if f, ok := o.get("auth"); ok {
		m.authNode = f.key
		if urlNode == nil && cmdNode != nil {
			p.errorf(f.key, join(path, "auth"), "auth only applies to a url (HTTP) upstream; a local program gets its credentials from env")
		} else {
			u.Auth = p.upstreamAuth(f.val, join(path, "auth"), u.URL)
			if u.Auth != nil && m.authzHeader != nil {
				p.errorf(f.key, join(path, "auth"), "headers (at %s) already set Authorization, which auth would replace; keep one", pos(m.authzHeader))
			}
		}
	}
	return src
}

// checkUpstreams applies defaults that depend on other keys, and the checks
// that need every upstream: unique names, overlapping prefixes.
func (p *parser) checkUpstreams(cfg *Config, metas []*upMeta) {
	names := map[string]*upMeta{}
	prefixes := map[string]*upMeta{}
	enabled := 0
	for i := range cfg.Upstreams {
		u, m := &cfg.Upstreams[i], metas[i]
		if first, dup := names[u.Name]; dup && u.Name != "" {
			where := "the first is at " + pos(first.nameNode)
			if m.origName != nil {
				where = fmt.Sprintf("%q (at %s) and %q both become %q", first.origName.Value, pos(first.origName), m.origName.Value, u.Name)
			}
			p.errorf(m.nameNode, m.namePath, "duplicate upstream name %q; %s; names must be unique", u.Name, where)
		} else {
			names[u.Name] = m
		}
		if u.Session == "" {
			u.Session = SessionPerClient
		}
		if u.Protocol == "" {
			u.Protocol = ProtocolAuto
		}
		if !m.prefixSet {
			u.Prefix = u.Name + "__"
			if len(u.Prefix) > MaxPrefixLen {
				p.warnf(m.nameNode, m.namePath, "the default tool prefix %q is %d characters and leaves little room in 64-character tool names (long names get shortened with a hash); set a shorter prefix", u.Prefix, len(u.Prefix))
			}
		}
		if first, dup := prefixes[u.Prefix]; dup {
			at := first.path
			if first.prefixNode != nil {
				at += " at " + pos(first.prefixNode)
			}
			p.warnf(m.prefixNode, join(m.path, "prefix"), "prefix %q is also used by %s; tools with the same name collide, and the later one is skipped", u.Prefix, at)
		} else {
			prefixes[u.Prefix] = m
		}
		if u.Timeout == 0 {
			u.Timeout = cfg.RequestTimeout
		} else if u.Timeout > cfg.MaxRequestTimeout {
			p.errorf(m.timeoutNode, join(m.path, "timeout"), "%s is longer than maxRequestTimeout (%s), which caps every request; raise maxRequestTimeout or lower this", u.Timeout, cfg.MaxRequestTimeout)
		}
		if u.IdleTimeout == 0 {
			u.IdleTimeout = DefaultIdleTimeout
		}
		if !m.maxInstSet {
			u.MaxInstances = DefaultMaxInstances
		}
		stdioPerClient := m.hasCommand && !m.hasURL && u.Session == SessionPerClient
		if m.maxInstSet && !stdioPerClient && m.hasCommand != m.hasURL {
			p.warnf(m.maxInstNode, join(m.path, "maxInstances"), "has no effect: it caps the child processes of a per-client stdio upstream, and this one is %s", describeUpstream(m, u))
		}
		if m.idleNode != nil && u.Session == SessionShared {
			p.warnf(m.idleNode, join(m.path, "idleTimeout"), "has no effect on a shared upstream, whose one session stays open")
		}
		if m.headers && strings.HasPrefix(strings.ToLower(u.URL), "http://") {
			if pu, err := url.Parse(u.URL); err == nil && !isLoopbackHost(pu.Hostname()) {
				p.warnf(m.urlNode, join(m.path, "url"), "headers are sent over plain http to a non-loopback host, unencrypted; use https if they carry credentials")
			}
		}
		if !u.Disabled {
			enabled++
		}
	}
	switch {
	case len(cfg.Upstreams) == 0:
		p.warnf(nil, "upstreams", "no upstreams are configured; the gateway will serve an empty catalog")
	case enabled == 0:
		p.warnf(nil, "upstreams", "every upstream is disabled; the gateway will serve an empty catalog")
	}
}

func describeUpstream(m *upMeta, u *Upstream) string {
	if m.hasURL {
		return "a url (HTTP) upstream"
	}
	return "a " + string(u.Session) + " upstream"
}

// checkName returns why an upstream name is invalid, or "".
func checkName(v string) string {
	switch {
	case v == "":
		return "is empty; use lowercase letters, digits and '-', such as \"files\""
	case len(v) > MaxNameLen:
		return fmt.Sprintf("is %d characters; the limit is %d", len(v), MaxNameLen)
	case !nameRE.MatchString(v):
		msg := fmt.Sprintf("%q must match [a-z0-9-]+ (lowercase letters, digits and '-')", v)
		if s := normaliseName(v); s != "" {
			msg += fmt.Sprintf("; try %q", s)
		}
		return msg
	}
	return ""
}

// normaliseName turns a client's server name ("My Files") into a valid
// upstream name ("my-files"): lowercase, each run of other characters becomes
// one '-', trimmed, at most MaxNameLen characters. "" if nothing is left.
func normaliseName(s string) string {
	if nameRE.MatchString(s) && len(s) <= MaxNameLen {
		return s
	}
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = false
			b.WriteRune(r)
		} else {
			dash = true
		}
	}
	out := b.String()
	if len(out) > MaxNameLen {
		out = strings.TrimRight(out[:MaxNameLen], "-")
	}
	return out
}

func checkListen(v string) string {
	const want = "; write host:port, such as \"127.0.0.1:8080\", or \":8080\" for every interface"
	_, port, err := net.SplitHostPort(v)
	if err != nil {
		return fmt.Sprintf("%q is not host:port%s", v, want)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return fmt.Sprintf("port %q is not a number from 0 to 65535%s", port, want)
	}
	return ""
}

// checkHTTPURL returns why v is not an absolute http(s) URL. When the value
// came from ${VAR} expansion, the message leaves the value out: it may hold
// credentials.
func checkHTTPURL(v string, expanded bool) string {
	const want = "an absolute http:// or https:// URL, such as \"https://search.internal/mcp\""
	u, err := url.Parse(v)
	if err != nil {
		if expanded {
			return "is not a valid URL after expanding variables; it must be " + want
		}
		var ue *url.Error
		detail := err.Error()
		if errors.As(err, &ue) {
			detail = ue.Err.Error()
		}
		return fmt.Sprintf("is not a valid URL (%s); it must be %s", detail, want)
	}
	switch {
	case u.Scheme == "":
		return "has no scheme; it must be " + want
	case !strings.EqualFold(u.Scheme, "http") && !strings.EqualFold(u.Scheme, "https"):
		return fmt.Sprintf("has scheme %q; it must be %s", u.Scheme, want)
	case u.Host == "":
		return "has no host; it must be " + want
	}
	return ""
}

// checkOrigin checks an Origin value: scheme://host[:port], exactly as a
// browser sends it.
func checkOrigin(v string) string {
	if v == "*" || v == "null" {
		return fmt.Sprintf("%q is not allowed: accepting any origin would let any web page drive the gateway through a browser; list each origin, such as \"https://app.example.com\"", v)
	}
	u, err := url.Parse(v)
	if err != nil || u.Scheme == "" || u.Host == "" || u.User != nil {
		return fmt.Sprintf("%q is not an origin; write scheme://host[:port], such as \"https://app.example.com\"", v)
	}
	if u.Path != "" || u.RawQuery != "" || u.Fragment != "" {
		return fmt.Sprintf("%q has a path; an origin is only scheme://host[:port] (write %q)", v, u.Scheme+"://"+u.Host)
	}
	return ""
}

// checkHost checks a Host header value: a host name or IP, with an optional
// port; IPv6 addresses in brackets.
func checkHost(v string) string {
	name, port := v, ""
	if h, pt, err := net.SplitHostPort(v); err == nil {
		name, port = h, pt
	} else {
		name = strings.TrimSuffix(strings.TrimPrefix(v, "["), "]")
	}
	bad := name == "" || strings.ContainsAny(name, "/ *@")
	if port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			bad = true
		}
	}
	if strings.Contains(name, ":") && net.ParseIP(name) == nil {
		bad = true
	}
	if bad {
		return fmt.Sprintf("%q is not a host; write a name or address with an optional port, such as \"mcp.example.com\" or \"[::1]:8080\" (no scheme, path or wildcard)", v)
	}
	return ""
}

func checkEnvName(k string) string {
	if k == "" || strings.ContainsAny(k, "=\x00") {
		return fmt.Sprintf("%q is not a valid environment variable name (no '=' and not empty)", k)
	}
	return ""
}

// checkEnvPattern checks one envPassthrough entry: a variable name, or a prefix ending in '*'. A bare "*" would
// hand the gateway's whole environment, secrets included, to the child.
func checkEnvPattern(k string) string {
	name, prefix := strings.CutSuffix(k, "*")
	switch {
	case prefix && name == "":
		return `"*" would pass the gateway's whole environment, its secrets included, to the child; name the variables (a prefix such as "AWS_*" is allowed)`
	case strings.Contains(name, "*"):
		return fmt.Sprintf("%q: '*' may only end a prefix, as in \"AWS_*\"", k)
	}
	return checkEnvName(name)
}

// checkHeaderName refuses names HTTP does not allow and headers the gateway
// sets itself, which a static value would break.
func checkHeaderName(k string) string {
	if k == "" {
		return "header name is empty"
	}
	for _, r := range k {
		if r > 0x7e || r <= 0x20 || strings.ContainsRune("\"(),/:;<=>?@[\\]{}", r) {
			return fmt.Sprintf("%q is not a valid HTTP header name (letters, digits and - are safe)", k)
		}
	}
	switch strings.ToLower(k) {
	case "host", "content-length", "content-type", "connection", "transfer-encoding", "accept",
		"mcp-session-id", "mcp-protocol-version", "last-event-id":
		return fmt.Sprintf("%s is set by the gateway for each request and cannot be configured", k)
	}
	return ""
}

// noExpandHint explains a ${ in a key that is not expanded.
func noExpandHint(v string) string {
	if strings.Contains(v, "${") {
		return " (${VAR} is only expanded in upstream settings, cursorSecret, replicaURL and auth.introspection's url, clientId and clientSecret)"
	}
	return ""
}
