package config

import (
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"
)

// upstreamBuild is one upstream being read: the upstream, where its settings
// are, and its strings as written.
type upstreamBuild struct {
	path string
	u    *Upstream
	m    *upMeta
	src  upstreamSource
	// imported is the mcpServers form: timeouts accept bare seconds.
	imported bool
	// cmdNode and urlNode are the values of command and url (nil if unset).
	cmdNode, urlNode *yaml.Node
}

// upstreamKind is the kind of upstream a key applies to.
type upstreamKind int

const (
	anyUpstream   upstreamKind = iota
	stdioUpstream              // a command: the key is misplaced on an upstream with only a url
	httpUpstream               // a url: the key is misplaced on an upstream with only a command
)

// misplaced reports whether a key for kind k does not apply to this upstream.
// An upstream with both or neither of command and url has its own error.
func (b *upstreamBuild) misplaced(k upstreamKind) bool {
	switch k {
	case stdioUpstream:
		return b.cmdNode == nil && b.urlNode != nil
	case httpUpstream:
		return b.urlNode == nil && b.cmdNode != nil
	}
	return false
}

// upstreamField is how one key of an upstream is read.
type upstreamField struct {
	key string
	// nullOK reads the key even when its value is null (prefix gives null its
	// own message).
	nullOK bool
	// only is the kind of upstream the key applies to; elsewhere the key gets
	// the error wrongKind, at the key.
	only      upstreamKind
	wrongKind string
	// skipWrongKind leaves a misplaced key unread (its value would need what
	// this kind of upstream lacks).
	skipWrongKind bool
	decode        func(p *parser, f pair, path string, b *upstreamBuild)
	// after, when set, runs next whether or not the key is set.
	after func(p *parser, b *upstreamBuild)
}

// upstreamFields lists the keys of an upstream in the order they are read:
// command and url first, as what the others may be depends on them, and auth
// after headers, which it must not contradict. Problems at one position are
// reported in this order.
func upstreamFields() []upstreamField {
	return []upstreamField{
		{key: "command", decode: (*parser).upstreamCommand},
		{key: "url", decode: (*parser).upstreamURL, after: (*parser).checkTransport},
		{key: "args", only: stdioUpstream, wrongKind: "args only applies to a command (stdio) upstream; remove it",
			decode: func(p *parser, f pair, path string, b *upstreamBuild) {
				b.u.Args, b.src.args, _ = p.stringList(f.val, path, true)
			}},
		{key: "env", only: stdioUpstream, wrongKind: "env only applies to a command (stdio) upstream; for a remote server use headers",
			decode: func(p *parser, f pair, path string, b *upstreamBuild) {
				b.u.Env = p.stringMap(f.val, path, checkEnvName)
			}},
		{key: "envPassthrough", only: stdioUpstream, wrongKind: "envPassthrough only applies to a command (stdio) upstream; remove it",
			decode: (*parser).upstreamEnvPassthrough},
		{key: "cwd", only: stdioUpstream, wrongKind: "cwd only applies to a command (stdio) upstream; remove it",
			decode: func(p *parser, f pair, path string, b *upstreamBuild) {
				b.u.Cwd, b.src.cwd, _ = p.expanded(f.val, path)
			}},
		{key: "headers", only: httpUpstream, wrongKind: "headers only apply to a url (HTTP) upstream; for a command use env",
			decode: (*parser).upstreamHeaders},
		{key: "session", decode: (*parser).upstreamSession},
		{key: "protocol", decode: (*parser).upstreamProtocol},
		{key: "prefix", nullOK: true, decode: (*parser).upstreamPrefix},
		{key: "timeout", decode: func(p *parser, f pair, path string, b *upstreamBuild) {
			b.m.timeoutNode = resolve(f.val)
			b.u.Timeout, _ = p.duration(f.val, path, b.imported)
		}},
		{key: "maxInstances", decode: (*parser).upstreamMaxInstances},
		{key: "idleTimeout", decode: func(p *parser, f pair, path string, b *upstreamBuild) {
			b.m.idleNode = resolve(f.val)
			b.u.IdleTimeout, _ = p.duration(f.val, path, b.imported)
		}},
		{key: "tasks", decode: func(p *parser, f pair, path string, b *upstreamBuild) {
			b.u.Tasks, _ = p.oneOf(f, path, "task support", []string{TaskForbidden, TaskOptional, TaskRequired},
				"optional (a tool runs as a task the gateway holds when the client can take one and the call is slow), required (only as a task) or forbidden (never, the default)", "optional, required or forbidden")
			if b.u.Tasks == TaskForbidden {
				b.u.Tasks = ""
			}
		}},
		{key: "disabled", decode: func(p *parser, f pair, path string, b *upstreamBuild) { b.u.Disabled, _ = p.boolean(f.val, path) }},
		{key: "auth", only: httpUpstream, skipWrongKind: true,
			wrongKind: "auth only applies to a url (HTTP) upstream; a local program gets its credentials from env",
			decode:    (*parser).upstreamAuthField},
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
	b := &upstreamBuild{path: o.path, u: u, m: m, imported: imported}
	for _, fs := range upstreamFields() {
		f, ok := o.get(fs.key)
		if fs.nullOK {
			f, ok = o.fields[fs.key]
		}
		if ok {
			path := join(b.path, fs.key)
			wrong := b.misplaced(fs.only)
			if wrong {
				p.errorf(f.key, path, "%s", fs.wrongKind)
			}
			if !wrong || !fs.skipWrongKind {
				fs.decode(p, f, path, b)
			}
		}
		if fs.after != nil {
			fs.after(p, b)
		}
	}
	return b.src
}

func (p *parser) upstreamCommand(f pair, path string, b *upstreamBuild) {
	b.cmdNode = resolve(f.val)
	b.m.hasCommand = true
	if v, raw, ok := p.expanded(f.val, path); ok {
		if strings.TrimSpace(v) == "" {
			p.errorf(b.cmdNode, path, "is empty; give the program to run, such as npx")
		}
		b.u.Command, b.src.command = v, raw
	}
}

func (p *parser) upstreamURL(f pair, path string, b *upstreamBuild) {
	b.urlNode = resolve(f.val)
	b.m.hasURL, b.m.urlNode = true, b.urlNode
	if v, raw, ok := p.expanded(f.val, path); ok {
		if msg := checkHTTPURL(v, raw != v); msg != "" {
			p.errorf(b.urlNode, path, "%s", msg)
		}
		b.u.URL, b.src.url = v, raw
	}
}

// checkTransport requires exactly one of command and url.
func (p *parser) checkTransport(b *upstreamBuild) {
	switch {
	case b.cmdNode != nil && b.urlNode != nil:
		p.errorf(b.urlNode, join(b.path, "url"), "command (at %s) and url are both set; an upstream is either a local program (command) or a remote server (url), so remove one", pos(b.cmdNode))
	case b.cmdNode == nil && b.urlNode == nil:
		p.errorf(b.m.node, b.path, "needs command (a local program, run over stdio) or url (a remote MCP server over HTTP)")
	}
}

func (p *parser) upstreamEnvPassthrough(f pair, path string, b *upstreamBuild) {
	names, _, _ := p.stringList(f.val, path, false)
	for i, k := range names {
		if msg := checkEnvPattern(k); msg != "" {
			p.errorf(resolve(f.val).Content[i], index(path, i), "%s", msg)
		}
	}
	b.u.EnvPassthrough = names
}

// upstreamHeaders reads the static headers; a value written "file:PATH" goes
// to HeaderFiles instead.
func (p *parser) upstreamHeaders(f pair, path string, b *upstreamBuild) {
	u := b.u
	b.m.headers = true
	// Header names are case-insensitive: two spellings of one name would
	// silently merge into one header, so refuse them.
	seen := map[string]string{}
	u.Headers = p.stringMap(f.val, path, func(k string) string {
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
			p.errorf(resolve(f.val), join(path, k), "value contains a line break or NUL, which HTTP does not allow (check the variable it comes from)")
		}
		if strings.EqualFold(k, "Authorization") {
			b.m.authzHeader = resolve(f.val)
		}
		if ref, ok := strings.CutPrefix(v, FileRefPrefix); ok {
			if strings.TrimSpace(ref) == "" {
				p.errorf(resolve(f.val), join(path, k), "file: names no file; write file:/path/to/secret")
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

func (p *parser) upstreamSession(f pair, path string, b *upstreamBuild) {
	if v, ok := p.oneOf(f, path, "session mode", []string{string(SessionPerClient), string(SessionShared)},
		"per-client (each client gets its own upstream session) or shared (one session for all clients)", "per-client or shared"); ok {
		b.u.Session = SessionMode(v)
	}
}

func (p *parser) upstreamProtocol(f pair, path string, b *upstreamBuild) {
	if v, ok := p.oneOf(f, path, "protocol mode", []string{string(ProtocolAuto), string(ProtocolLegacy), string(ProtocolModern)},
		"auto (detect the upstream's era), legacy (initialize and sessions) or modern (stateless "+modernVersion+")", "auto, legacy or modern"); ok {
		b.u.Protocol = ProtocolMode(v)
	}
}

// oneOf reads a scalar that must be one of valid. A wrong value is refused
// with the choices explained (use), or with the closest choice when it looks
// like a typo (the choices named in short).
func (p *parser) oneOf(f pair, path, what string, valid []string, use, short string) (string, bool) {
	v, ok := p.scalar(f.val, path)
	if !ok {
		return "", false
	}
	if contains(valid, v) {
		return v, true
	}
	msg := fmt.Sprintf("%q is not a %s; use %s", v, what, use)
	if s := suggest(v, valid); s != "" {
		msg = fmt.Sprintf("%q is not a %s; did you mean %q? (%s)", v, what, s, short)
	}
	p.errorf(resolve(f.val), path, "%s", msg)
	return "", false
}

func (p *parser) upstreamPrefix(f pair, path string, b *upstreamBuild) {
	m := b.m
	m.prefixSet, m.prefixNode = true, resolve(f.val)
	if isNull(f.val) {
		p.errorf(resolve(f.val), path, "has no value; write prefix: \"\" to keep tool names unchanged, or remove the key for the default \"<name>__\"")
		return
	}
	v, ok := p.scalar(f.val, path)
	if !ok {
		return
	}
	switch {
	case !prefixRE.MatchString(v):
		p.errorf(m.prefixNode, path, "%q may only contain letters, digits, '_' and '-', because clients reject other characters in tool names", v)
	case len(v) > MaxPrefixLen:
		p.errorf(m.prefixNode, path, "%q is %d characters; the limit is %d, to leave room in 64-character tool names", v, len(v), MaxPrefixLen)
	}
	b.u.Prefix = v
}

func (p *parser) upstreamMaxInstances(f pair, path string, b *upstreamBuild) {
	m := b.m
	m.maxInstNode, m.maxInstSet = resolve(f.val), true
	v, ok := p.integer(f.val, path)
	switch {
	case !ok:
	case v < 0 || v > 1<<20:
		p.errorf(m.maxInstNode, path, "%d is out of range; use 0 for no cap, or a positive number of live child processes", v)
	default:
		b.u.MaxInstances = int(v)
	}
}

// upstreamAuthField reads the upstream's auth block, which replaces a static
// Authorization header: both is an error.
func (p *parser) upstreamAuthField(f pair, path string, b *upstreamBuild) {
	b.u.Auth = p.upstreamAuth(f.val, path, b.u.URL)
	// With user-oauth a static Authorization header is the service credential the catalog lists with.
	if b.u.Auth != nil && b.u.Auth.UserOAuth == nil && b.m.authzHeader != nil {
		p.errorf(f.key, path, "headers (at %s) already set Authorization, which auth would replace; keep one", pos(b.m.authzHeader))
	}
}
