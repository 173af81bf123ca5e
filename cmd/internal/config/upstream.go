package config

import (
	"fmt"
	"net/url"
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

// upstreamField is one key of an upstream: what it is (field) and how it is
// read.
type upstreamField struct {
	field
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
	// decode reads the key (nil: name, which the two forms read their own
	// way).
	decode func(p upstreamSection, f pair, path string, b *upstreamBuild)
	// after, when set, runs next whether or not the key is set.
	after func(p upstreamSection, b *upstreamBuild)
}

// upstreamFields lists the keys of an upstream in the order they are read.
// What the others may be depends on command and url, which upstreamFields
// looks at first; auth comes after headers, which it must not contradict, and
// url, which it defaults its resource to. Problems at one position are
// reported in this order.
func upstreamFields() []upstreamField {
	stdio := func(key, wrong, doc string, typ valueType, secret bool, decode func(upstreamSection, pair, string, *upstreamBuild)) upstreamField {
		return upstreamField{field: field{key: key, typ: typ, secret: secret, doc: doc}, only: stdioUpstream, wrongKind: wrong, decode: decode}
	}
	return []upstreamField{
		{field: field{key: "name", typ: tString, doc: fmt.Sprintf("Identifies the upstream: [a-z0-9-]+, at most %d characters, unique (required).", MaxNameLen)}},
		{field: field{key: "command", typ: tString, doc: "The program to run, over stdio; ${VAR} is expanded."}, decode: upstreamSection.upstreamCommand},
		stdio("args", "args only applies to a command (stdio) upstream; remove it", "The program's arguments (a command upstream); ${VAR} is expanded.", tScalars, false,
			func(p upstreamSection, f pair, path string, b *upstreamBuild) {
				b.u.Args, b.src.args, _ = p.stringList(f.val, path, true)
			}),
		stdio("env", "env only applies to a command (stdio) upstream; for a remote server use headers",
			"Variables set in the child's environment (a command upstream); ${VAR} is expanded.", tStringMap, true,
			func(p upstreamSection, f pair, path string, b *upstreamBuild) {
				b.u.Env = p.stringMap(f.val, path, checkEnvName)
			}),
		stdio("envPassthrough", "envPassthrough only applies to a command (stdio) upstream; remove it",
			"The gateway's variables the child (of a command upstream) inherits besides the minimal set; a trailing * matches a prefix.", tStrings, false,
			upstreamSection.upstreamEnvPassthrough),
		stdio("cwd", "cwd only applies to a command (stdio) upstream; remove it", "The child's working directory (a command upstream; default: the gateway's); ${VAR} is expanded.", tString, false,
			func(p upstreamSection, f pair, path string, b *upstreamBuild) {
				b.u.Cwd, b.src.cwd, _ = p.expanded(f.val, path)
			}),
		{field: field{key: "url", typ: tString, doc: "The remote server's MCP endpoint (streamable HTTP or HTTP+SSE, detected); ${VAR} is expanded."},
			decode: upstreamSection.upstreamURL, after: upstreamSection.checkTransport},
		{field: field{key: "headers", typ: tStringMap, secret: true,
			doc: "Headers sent with every request (a url upstream); ${VAR} is expanded, and \"file:PATH\" reads the value from a file, again when it changes."},
			only: httpUpstream, wrongKind: "headers only apply to a url (HTTP) upstream; for a command use env", decode: upstreamSection.upstreamHeaders},
		{field: field{key: "session", typ: tString, def: string(SessionPerClient), enum: enumOf(SessionPerClient, SessionShared),
			doc: "per-client gives each client its own upstream session; shared serves every client from one."}, decode: upstreamSection.upstreamSession},
		{field: field{key: "protocol", typ: tString, def: string(ProtocolAuto), enum: enumOf(ProtocolAuto, ProtocolLegacy, ProtocolModern),
			doc: "auto detects the upstream's era; legacy always uses initialize; modern requires the stateless " + modernVersion + " era."},
			decode: upstreamSection.upstreamProtocol},
		{field: field{key: "prefix", typ: tString, def: "<name>__",
			doc: fmt.Sprintf("Put before the upstream's tool and prompt names; letters, digits, _ and -, at most %d characters; \"\" keeps the names.", MaxPrefixLen)},
			nullOK: true, decode: upstreamSection.upstreamPrefix},
		{field: field{key: "timeout", typ: tDuration, def: "(requestTimeout)", doc: "The timeout of a request to this upstream, at most maxRequestTimeout."},
			decode: func(p upstreamSection, f pair, path string, b *upstreamBuild) {
				b.m.timeoutNode = resolve(f.val)
				b.u.Timeout, _ = p.duration(f.val, path, b.imported)
			}},
		{field: field{key: "maxInstances", typ: tInt, min: 0, max: 1 << 20, def: fmt.Sprint(DefaultMaxInstances),
			doc: "The live child processes of a per-client command upstream; 0 is no cap."}, decode: upstreamSection.upstreamMaxInstances},
		{field: field{key: "idleTimeout", typ: tDuration, def: durationText(DefaultIdleTimeout), doc: "A per-client upstream session unused this long closes."},
			decode: func(p upstreamSection, f pair, path string, b *upstreamBuild) {
				b.m.idleNode = resolve(f.val)
				b.u.IdleTimeout, _ = p.duration(f.val, path, b.imported)
			}},
		{field: field{key: "disabled", typ: tBool, def: "false", doc: "Validates the upstream but does not start it."},
			decode: func(p upstreamSection, f pair, path string, b *upstreamBuild) {
				b.u.Disabled, _ = p.boolean(f.val, path)
			}},
		{field: field{key: "auth", typ: tBlock, sub: upstreamAuthFields,
			doc: "How the gateway authenticates to a url upstream: its own credentials (clientCredentials, tokenExchange, type: workload-identity), or each person's (type: user-oauth or id-jag); never with the client's token."},
			only: httpUpstream, skipWrongKind: true,
			wrongKind: "auth only applies to a url (HTTP) upstream; a local program gets its credentials from env",
			decode:    upstreamSection.upstreamAuthField},
		{field: field{key: "tasks", typ: tString, def: TaskForbidden, enum: []string{TaskForbidden, TaskOptional, TaskRequired},
			doc: "Runs the upstream's tools as tasks the gateway holds when the upstream takes none: optional, required or forbidden (a tool's override wins)."},
			decode: func(p upstreamSection, f pair, path string, b *upstreamBuild) {
				b.u.Tasks, _ = p.oneOf(f, path, "task support", []string{TaskForbidden, TaskOptional, TaskRequired},
					"optional (a tool runs as a task the gateway holds when the client can take one and the call is slow), required (only as a task) or forbidden (never, the default)", "optional, required or forbidden")
				if b.u.Tasks == TaskForbidden {
					b.u.Tasks = ""
				}
			}},
	}
}

// upstreamDocs returns the upstream table's fields.
func upstreamDocs() []field {
	uf := upstreamFields()
	out := make([]field, len(uf))
	for i, f := range uf {
		out[i] = f.field
	}
	return out
}

// upstream reads one item of the upstreams list.
func (p upstreamSection) upstream(n *yaml.Node, path string, cfg *Config) *upMeta {
	o, ok := p.object(n, path, keySpec{known: keys(upstreamDocs()), hints: upstreamHints()})
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

func (p upstreamSection) addUpstream(cfg *Config, u Upstream, src upstreamSource) {
	cfg.Upstreams = append(cfg.Upstreams, u)
	if cfg.sources == nil {
		cfg.sources = map[string]upstreamSource{}
	}
	cfg.sources[u.Name] = src
}

// upstreamFields reads the keys shared by the upstreams list and the
// mcpServers form. imported relaxes timeouts to accept bare seconds.
func (p upstreamSection) upstreamFields(o *object, u *Upstream, m *upMeta, imported bool) upstreamSource {
	b := &upstreamBuild{path: o.path, u: u, m: m, imported: imported}
	// Whether a key applies depends on command and url, wherever they are.
	if f, ok := o.get("command"); ok {
		b.cmdNode = resolve(f.val)
	}
	if f, ok := o.get("url"); ok {
		b.urlNode = resolve(f.val)
	}
	for _, fs := range upstreamFields() {
		if fs.decode == nil {
			continue
		}
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

func (p upstreamSection) upstreamCommand(f pair, path string, b *upstreamBuild) {
	b.cmdNode = resolve(f.val)
	b.m.hasCommand = true
	if v, raw, ok := p.expanded(f.val, path); ok {
		if strings.TrimSpace(v) == "" {
			p.errorf(b.cmdNode, path, "is empty; give the program to run, such as npx")
		}
		b.u.Command, b.src.command = v, raw
	}
}

func (p upstreamSection) upstreamURL(f pair, path string, b *upstreamBuild) {
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
func (p upstreamSection) checkTransport(b *upstreamBuild) {
	switch {
	case b.cmdNode != nil && b.urlNode != nil:
		p.errorf(b.urlNode, join(b.path, "url"), "command (at %s) and url are both set; an upstream is either a local program (command) or a remote server (url), so remove one", pos(b.cmdNode))
	case b.cmdNode == nil && b.urlNode == nil:
		p.errorf(b.m.node, b.path, "needs command (a local program, run over stdio) or url (a remote MCP server over HTTP)")
	}
}

func (p upstreamSection) upstreamEnvPassthrough(f pair, path string, b *upstreamBuild) {
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
func (p upstreamSection) upstreamHeaders(f pair, path string, b *upstreamBuild) {
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

func (p upstreamSection) upstreamSession(f pair, path string, b *upstreamBuild) {
	if v, ok := p.oneOf(f, path, "session mode", []string{string(SessionPerClient), string(SessionShared)},
		"per-client (each client gets its own upstream session) or shared (one session for all clients)", "per-client or shared"); ok {
		b.u.Session = SessionMode(v)
	}
}

func (p upstreamSection) upstreamProtocol(f pair, path string, b *upstreamBuild) {
	if v, ok := p.oneOf(f, path, "protocol mode", []string{string(ProtocolAuto), string(ProtocolLegacy), string(ProtocolModern)},
		"auto (detect the upstream's era), legacy (initialize and sessions) or modern (stateless "+modernVersion+")", "auto, legacy or modern"); ok {
		b.u.Protocol = ProtocolMode(v)
	}
}

func (p upstreamSection) upstreamPrefix(f pair, path string, b *upstreamBuild) {
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

func (p upstreamSection) upstreamMaxInstances(f pair, path string, b *upstreamBuild) {
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
func (p upstreamSection) upstreamAuthField(f pair, path string, b *upstreamBuild) {
	b.u.Auth = authSection(p).upstreamAuth(f.val, path, b.u.URL)
	// With user-oauth a static Authorization header is the service credential the catalog lists with.
	if b.u.Auth != nil && b.u.Auth.UserOAuth == nil && b.m.authzHeader != nil {
		p.errorf(f.key, path, "headers (at %s) already set Authorization, which auth would replace; keep one", pos(b.m.authzHeader))
	}
}

// checkUpstreams applies defaults that depend on other keys, and the checks
// that need every upstream: unique names, overlapping prefixes.
func (p upstreamSection) checkUpstreams(cfg *Config, metas []*upMeta) {
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
		if u.Auth != nil && u.Auth.UserOAuth != nil {
			p.checkUserOAuth(cfg, m, u)
		}
		if u.Auth != nil && u.Auth.IDJAG != nil {
			p.checkIDJAG(cfg, m, u)
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

// checkUserOAuth says what a user-oauth upstream needs besides its own block: a person must be known (auth), be
// able to sign in on the connect page (auth.browser), their tokens sealed (auth.tokenKeys), and the links and
// callbacks need the gateway's public URL; the tokens go over https.
func (p upstreamSection) checkUserOAuth(cfg *Config, m *upMeta, u *Upstream) {
	path := join(m.path, "auth")
	switch {
	case cfg.Auth == nil:
		p.errorf(m.node, path, "type: user-oauth needs the gateway's auth: block: each person's grant is kept under their verified identity, so clients must sign in")
	case cfg.Auth.Browser == nil:
		p.errorf(m.node, path, "type: user-oauth needs auth.browser {clientId, clientSecret}: the connect page signs the browser in at %s to check it is the person the link was made for", cfg.Auth.Issuer)
	case cfg.Auth.TokenKeys == "":
		p.errorf(m.node, path, "type: user-oauth needs auth.tokenKeys, the keys that seal upstream tokens at rest, such as tokenKeys: \"${SWITCHBOARD_TOKEN_KEYS}\" holding \"k1:<openssl rand -base64 32>\"")
	}
	if cfg.PublicURL == "" {
		p.errorf(m.node, path, "type: user-oauth needs publicURL: connect links and the authorization server's callback are under it")
	}
	// Each person's token goes to the upstream: connect.NewDiscovery refuses plain http off loopback too.
	if pu, err := url.Parse(u.URL); err == nil && strings.EqualFold(pu.Scheme, "http") && !isLoopbackHost(pu.Hostname()) {
		p.errorf(m.urlNode, join(m.path, "url"), "is plain http to a non-loopback host, and type: user-oauth sends each person's token there; use https (http only on a loopback host, for development)")
	}
	if u.Session == SessionShared {
		p.errorf(m.node, join(m.path, "session"), "is shared, but type: user-oauth calls the upstream with each person's own token, which needs a session per client; remove session: shared")
	}
}

// checkIDJAG says what a type: id-jag upstream needs besides its own block: whose identity is exchanged. With an
// auth: block it is each client's own token, so the upstream needs a session per client; without one, the one
// person's ID token file (idp.idTokenFile), which must not stand in for the clients an auth: block knows.
func (p upstreamSection) checkIDJAG(cfg *Config, m *upMeta, u *Upstream) {
	path := join(m.path, "auth")
	file := u.Auth.IDJAG.IdP.IDTokenFile
	switch {
	case cfg.Auth == nil && file == "":
		p.errorf(m.node, path, "type: id-jag exchanges each client's ID token, which needs the gateway's auth: block; for a gateway that serves one person without it, set idp.idTokenFile")
	case cfg.Auth != nil && file != "":
		p.errorf(m.node, join(join(path, "idp"), "idTokenFile"), "is for a gateway without an auth: block; with auth: each client's own token is exchanged, and one person's must not stand in for the others")
	case cfg.Auth != nil && u.Session == SessionShared:
		p.errorf(m.node, join(m.path, "session"), "is shared, but type: id-jag calls the upstream with each person's own token, which needs a session per client; remove session: shared")
	}
	if pu, err := url.Parse(u.URL); err == nil && strings.EqualFold(pu.Scheme, "http") && !isLoopbackHost(pu.Hostname()) {
		p.errorf(m.urlNode, join(m.path, "url"), "is plain http to a non-loopback host, and type: id-jag sends each person's token there; use https (http only on a loopback host, for development)")
	}
}

func describeUpstream(m *upMeta, u *Upstream) string {
	if m.hasURL {
		return "a url (HTTP) upstream"
	}
	return "a " + string(u.Session) + " upstream"
}
