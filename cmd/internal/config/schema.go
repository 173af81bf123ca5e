package config

import (
	"fmt"
	"log/slog"
	"net/url"
	"regexp"
	"strings"

	"gopkg.in/yaml.v3"
)

// The key lists are functions rather than package variables so nothing in
// the package is mutable.
func topLevelKeys() []string {
	return []string{"listen", "publicURL", "replicaURL", "allowedOrigins", "allowedHosts", "maxBodyBytes", "pageSize",
		"requestTimeout", "maxRequestTimeout", "sessionIdleTimeout", "listCacheTTL", "cursorSecret", "log", "auth", "policy", "redis", "rateLimit",
		"maxToolNameLength", "clientHosts", "resourceNamespacing", "endpoints", "overrides", "pinning", "discovery", "alwaysList", "exposeFound", "search",
		"serverCard", "tasks", "upstreams", "mcpServers", "servers"}
}

func upstreamKeys() []string {
	return []string{"name", "command", "args", "env", "envPassthrough", "cwd", "url", "headers", "session", "protocol", "prefix",
		"timeout", "maxInstances", "idleTimeout", "disabled", "auth", "tasks"}
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
	authzHeader                 *yaml.Node
	namePath                    string // path of the name: the key itself in the mcpServers form
	urlNode                     *yaml.Node
	node                        *yaml.Node
	nameNode, origName          *yaml.Node
	timeoutNode, prefixNode     *yaml.Node
	maxInstNode, idleNode       *yaml.Node
	prefixSet, maxInstSet       bool
	hasCommand, hasURL, headers bool
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
		if u.Auth != nil && u.Auth.UserOAuth != nil {
			p.checkUserOAuth(cfg, m, u)
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
func (p *parser) checkUserOAuth(cfg *Config, m *upMeta, u *Upstream) {
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
