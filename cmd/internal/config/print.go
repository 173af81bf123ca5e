package config

import (
	"cmp"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// lineWriter collects the lines of String.
type lineWriter struct{ strings.Builder }

// String renders the configuration in the file's own key names, with secrets
// redacted as by Redacted, for `switchboard check` and startup logs: each
// top-level key's table entry prints its lines.
func (c *Config) String() string {
	r := c.Redacted()
	w := &lineWriter{}
	if c.File != "" {
		w.line("# %s", c.File)
	}
	fields := topLevelFields()
	slices.SortStableFunc(fields, func(a, b topField) int { return cmp.Compare(a.show, b.show) })
	for _, f := range fields {
		if f.print != nil {
			f.print(r, w)
		}
	}
	return w.String()
}

// Summary is one line on what the configuration serves, for `switchboard
// check`: "3 upstreams (1 disabled), /mcp in search mode, 2 endpoints
// (/mcp/research, /mcp/ops; search: /mcp/ops), hybrid search (model
// text-embedding-3-small), 4 overrides (1 with argument presets), pins from
// pins.lock (changes blocked)". Search mode, of /mcp or of an endpoint, is
// mentioned where it is used; pinning when it is not the default (trust on
// first use, changes served with a warning).
func (c *Config) Summary() string {
	parts := []string{plural(len(c.Upstreams), "upstream")}
	if d := countFunc(c.Upstreams, func(u Upstream) bool { return u.Disabled }); d > 0 {
		parts[0] += fmt.Sprintf(" (%d disabled)", d)
	}
	if c.Discovery.Searches() {
		parts = append(parts, "/mcp in "+string(c.Discovery)+" mode")
	}
	if len(c.Endpoints) > 0 {
		var paths, searched []string
		for _, e := range c.Endpoints {
			paths = append(paths, "/mcp/"+e.Name)
			if e.Discovery.Searches() {
				searched = append(searched, "/mcp/"+e.Name)
			}
		}
		s := strings.Join(paths, ", ")
		if len(searched) > 0 {
			s += "; search: " + strings.Join(searched, ", ")
		}
		parts = append(parts, plural(len(c.Endpoints), "endpoint")+" ("+s+")")
	}
	if em := c.Search.Embeddings; em != nil {
		parts = append(parts, "hybrid search (model "+em.Model+")")
	}
	if len(c.Overrides) > 0 {
		s := plural(len(c.Overrides), "override")
		var presets int
		for _, o := range c.Overrides {
			if len(o.Arguments) > 0 {
				presets++
			}
		}
		if presets > 0 {
			s += fmt.Sprintf(" (%d with argument presets)", presets)
		}
		parts = append(parts, s)
	}
	if pn := c.Pinning; pn != (Pinning{OnChange: PinWarn}) {
		s := "pins trusted on first use"
		if pn.LockFile != "" {
			s = "pins from " + filepath.Base(pn.LockFile)
		}
		if pn.OnChange == PinBlock {
			s += " (changes blocked)"
		} else {
			s += " (changes served with a warning)"
		}
		if pn.StripInvisible {
			s += ", invisible characters stripped"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", ")
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

func countFunc[T any](s []T, f func(T) bool) int {
	n := 0
	for _, x := range s {
		if f(x) {
			n++
		}
	}
	return n
}

func (c *Config) writeOrigins(w *lineWriter) {
	switch {
	case len(c.AllowedOrigins) > 0:
		w.line("allowedOrigins: %s", list(c.AllowedOrigins))
	case IsLoopback(c.Listen):
		w.line("allowedOrigins: []  # default: loopback origins, and publicURL's")
	default:
		w.line("allowedOrigins: []  # default: only publicURL's origin, if set")
	}
}

func (c *Config) writeHosts(w *lineWriter) {
	switch {
	case len(c.AllowedHosts) > 0:
		w.line("allowedHosts: %s", list(c.AllowedHosts))
	case IsLoopback(c.Listen):
		w.line("allowedHosts: []  # default: localhost, 127.0.0.1, [::1] and publicURL's host")
	default:
		w.line("allowedHosts: []  # default: any host")
	}
}

// writeCursorSecret says whether a secret is set, and its length, never the
// secret: c is a redacted copy.
func (c *Config) writeCursorSecret(w *lineWriter) {
	if c.cursorSecretLen > 0 {
		w.line("cursorSecret: %s  # %d bytes", redactedValue, c.cursorSecretLen)
	} else {
		w.line("cursorSecret: \"\"  # generated at start; single replica only")
	}
}

func (c *Config) writeAuth(w *lineWriter) {
	line := w.line
	a := c.Auth
	if a == nil {
		line("auth: none  # clients are not authenticated")
		return
	}
	line("auth:")
	line("  issuer: %s", strconv.Quote(a.Issuer))
	line("  audience: %s", strconv.Quote(a.Audience))
	if len(a.Scopes) > 0 {
		line("  scopes: %s", list(a.Scopes))
	}
	if a.JWKSURL != "" {
		line("  jwksURL: %s", strconv.Quote(a.JWKSURL))
	}
	if len(a.Algorithms) > 0 {
		line("  algorithms: %s", list(a.Algorithms))
	} else {
		line("  algorithms: []  # default: %s", strings.Join(SupportedAlgorithms(), ", "))
	}
	line("  clockSkew: %s", a.ClockSkew)
	if in := a.Introspection; in != nil {
		line("  introspection: {url: %s, clientId: %s, clientSecret: %s, cacheTTL: %s}",
			strconv.Quote(in.URL), strconv.Quote(in.ClientID), redactedValue, in.CacheTTL)
	}
	if b := a.Browser; b != nil {
		line("  browser: {clientId: %s, clientSecret: %s}", strconv.Quote(b.ClientID), redactedValue)
	}
	if a.TokenKeys != "" {
		line("  tokenKeys: %s", redactedValue)
	}
}

func (c *Config) writePolicy(w *lineWriter) {
	line := w.line
	if c.Policy == nil {
		return
	}
	line("policy:  # %d rules; deny wins, default deny", len(c.Policy))
	writeRules(w, "", c.Policy)
}

// writeRules writes policy rules, each line after indent.
func writeRules(w *lineWriter, indent string, rules []PolicyRule) {
	for i, pr := range rules {
		name := pr.Name
		if name == "" {
			name = fmt.Sprintf("policy[%d]", i)
		}
		w.line("%s  - name: %s", indent, strconv.Quote(name))
		if len(pr.Allow) > 0 {
			w.line("%s    allow: %s", indent, list(pr.Allow))
		}
		if len(pr.Deny) > 0 {
			w.line("%s    deny: %s", indent, list(pr.Deny))
		}
	}
}

func (c *Config) writeUpstreams(w *lineWriter) {
	if len(c.Upstreams) == 0 {
		w.line("upstreams: []")
		return
	}
	w.line("upstreams:")
	for _, u := range c.Upstreams {
		u.write(w)
	}
}

func (u Upstream) write(w *lineWriter) {
	line := w.line
	line("  - name: %s  # %s", u.Name, u.Transport())
	if u.Command != "" {
		line("    command: %s", strconv.Quote(u.Command))
	}
	if len(u.Args) > 0 {
		line("    args: %s", list(u.Args))
	}
	if u.Cwd != "" {
		line("    cwd: %s", strconv.Quote(u.Cwd))
	}
	if len(u.Env) > 0 {
		line("    env: %s", keysOnly(u.Env))
	}
	if u.URL != "" {
		line("    url: %s", strconv.Quote(u.URL))
	}
	if len(u.Headers) > 0 {
		line("    headers: %s", keysOnly(u.Headers))
	}
	for _, k := range slices.Sorted(maps.Keys(u.HeaderFiles)) {
		line("    headers.%s: %s", k, strconv.Quote(FileRefPrefix+u.HeaderFiles[k]))
	}
	if ua := u.Auth; ua != nil && ua.ClientCredentials != nil {
		c := ua.ClientCredentials
		if c.PrivateKeyFile != "" {
			line("    auth: {clientCredentials: {tokenURL: %s, clientId: %s, privateKeyFile: %s, assertionAudience: %s, resource: %s}}",
				strconv.Quote(c.TokenURL), strconv.Quote(c.ClientID), strconv.Quote(c.PrivateKeyFile), strconv.Quote(cmp.Or(c.AssertionAudience, c.TokenURL)), strconv.Quote(c.Resource))
		} else {
			line("    auth: {clientCredentials: {tokenURL: %s, clientId: %s, clientSecret: %s, resource: %s}}",
				strconv.Quote(c.TokenURL), strconv.Quote(c.ClientID), redactedValue, strconv.Quote(c.Resource))
		}
	} else if ua != nil && ua.TokenExchange != nil {
		t := ua.TokenExchange
		line("    auth: {tokenExchange: {tokenURL: %s, clientId: %s, clientSecret: %s, resource: %s}}",
			strconv.Quote(t.TokenURL), strconv.Quote(t.ClientID), redactedValue, strconv.Quote(t.Resource))
	} else if ua != nil && ua.IDJAG != nil {
		j := ua.IDJAG
		subject := "each client's token"
		if j.IdP.IDTokenFile != "" {
			subject = strconv.Quote(FileRefPrefix + j.IdP.IDTokenFile)
		}
		line("    auth: {type: id-jag, idp: {tokenURL: %s, clientId: %s, idToken: %s}, issuer: %s, tokenURL: %s, clientId: %s, clientSecret: %s, scopes: %s, resource: %s}",
			strconv.Quote(j.IdP.TokenURL), strconv.Quote(j.IdP.ClientID), subject, strconv.Quote(j.Issuer), strconv.Quote(j.TokenURL),
			strconv.Quote(j.ClientID), redactedValue, list(j.Scopes), strconv.Quote(j.Resource))
	} else if ua != nil && ua.WorkloadIdentity != nil {
		w := ua.WorkloadIdentity
		line("    auth: {type: workload-identity, tokenFile: %s, tokenURL: %s, clientId: %s, scopes: %s, resource: %s}",
			strconv.Quote(w.TokenFile), strconv.Quote(w.TokenURL), strconv.Quote(w.ClientID), list(w.Scopes), strconv.Quote(w.Resource))
	} else if ua != nil && ua.UserOAuth != nil {
		uo := ua.UserOAuth
		client := "registered by the gateway"
		if uo.ClientID != "" {
			client = strconv.Quote(uo.ClientID)
		}
		resource := "send"
		if uo.OmitResource {
			resource = "omit"
		}
		line("    auth: {type: user-oauth, scopes: %s, clientId: %s, resourceParameter: %s}", list(uo.Scopes), client, resource)
	}
	line("    session: %s", u.Session)
	line("    protocol: %s", u.Protocol)
	line("    prefix: %s", strconv.Quote(u.Prefix))
	line("    timeout: %s", u.Timeout)
	if u.Transport() == "stdio" && u.Session == SessionPerClient {
		line("    maxInstances: %d", u.MaxInstances)
	}
	if u.Session == SessionPerClient {
		line("    idleTimeout: %s", u.IdleTimeout)
	}
	if u.Tasks != "" {
		line("    tasks: %s", u.Tasks)
	}
	if u.Disabled {
		line("    disabled: true")
	}
}

func (c *Config) writeEndpoints(w *lineWriter) {
	if c.Endpoints == nil {
		return
	}
	w.line("endpoints:")
	for _, e := range c.Endpoints {
		w.line("  - name: %s  # /mcp/%s", e.Name, e.Name)
		if e.Include != nil {
			w.line("    include: %s", list(e.Include))
		} else {
			w.line("    include: []  # everything")
		}
		if len(e.Exclude) > 0 {
			w.line("    exclude: %s", list(e.Exclude))
		}
		switch e.Discovery {
		case DiscoverySearch:
			w.line("    discovery: search  # tools/list: search_tools, call_tool and alwaysList")
		case DiscoveryCode:
			w.line("    discovery: code  # tools/list: search_tools, call_tool, describe_tools, run_script and alwaysList")
		}
		if e.CodeMode != nil {
			w.line("    codeMode: %s", e.CodeMode.text())
		}
		if e.AlwaysList != nil {
			w.line("    alwaysList: %s", list(e.AlwaysList))
		}
		if e.ExposeFound {
			w.line("    exposeFound: true")
		}
		if e.Policy != nil {
			w.line("    policy:  # %d rules, on top of the global policy", len(e.Policy))
			writeRules(w, "    ", e.Policy)
		}
	}
}

func (c *Config) writeOverrides(w *lineWriter) {
	if c.Overrides == nil {
		return
	}
	keys := slices.SortedFunc(maps.Keys(c.Overrides), func(a, b OverrideKey) int {
		return strings.Compare(a.String(), b.String())
	})
	w.line("overrides:")
	for _, k := range keys {
		o := c.Overrides[k]
		w.line("  %s:", strconv.Quote(k.String()))
		if o.Name != "" {
			w.line("    name: %s", strconv.Quote(o.Name))
		}
		if o.Title != "" {
			w.line("    title: %s", strconv.Quote(o.Title))
		}
		if o.Description != "" {
			w.line("    description: %s", strconv.Quote(o.Description))
		}
		if len(o.Annotations) > 0 {
			w.line("    annotations: %s", o.Annotations)
		}
		if len(o.Arguments) > 0 {
			parts := make([]string, 0, len(o.Arguments))
			for _, a := range slices.Sorted(maps.Keys(o.Arguments)) {
				parts = append(parts, strconv.Quote(a)+": "+string(o.Arguments[a]))
			}
			w.line("    arguments: {%s}", strings.Join(parts, ", "))
		}
		if o.TaskSupport != "" {
			w.line("    taskSupport: %s", o.TaskSupport)
		}
	}
}

func (c *Config) writePinning(w *lineWriter) {
	pn := c.Pinning
	if pn == (Pinning{OnChange: PinWarn}) {
		return // the block is absent: nothing is pinned (pins are not enforced by this version yet)
	}
	if pn.LockFile == "" {
		w.line("pinning: {onChange: %s, stripInvisible: %t}", pn.OnChange, pn.StripInvisible)
		return
	}
	w.line("pinning: {lockFile: %s, onChange: %s, stripInvisible: %t}", strconv.Quote(pn.LockFile), pn.OnChange, pn.StripInvisible)
}

// writeDiscovery writes /mcp's discovery mode, when it is not the default
// (list every tool) or alwaysList or exposeFound, printed next, are set.
func (c *Config) writeDiscovery(w *lineWriter) {
	if c.Discovery == DiscoverySearch {
		w.line("discovery: search  # /mcp; tools/list: search_tools, call_tool and alwaysList")
	} else if c.Discovery == DiscoveryCode {
		w.line("discovery: code  # /mcp; tools/list: search_tools, call_tool, describe_tools, run_script and alwaysList")
	} else if c.AlwaysList != nil || c.ExposeFound {
		w.line("discovery: %s  # /mcp", c.Discovery)
	}
}

// writeSearch writes the search: block when search mode is used somewhere or
// the block is not the default. The API key is never written: only the name
// of its variable.
func (c *Config) writeSearch(w *lineWriter) {
	used := c.Discovery.Searches() || slices.ContainsFunc(c.Endpoints, func(e Endpoint) bool { return e.Discovery.Searches() })
	s := c.Search
	if !used && s.Embeddings == nil && s.Timeout == DefaultSearchTimeout {
		return
	}
	em := s.Embeddings
	if em == nil {
		w.line("search: {timeout: %s}  # BM25 only: no embeddings", s.Timeout)
		return
	}
	w.line("search:")
	key := ""
	if em.APIKeyEnv != "" {
		key = ", apiKeyEnv: " + em.APIKeyEnv
	}
	w.line("  embeddings: {url: %s, model: %s%s}  # hybrid: BM25 and embeddings", strconv.Quote(em.URL), strconv.Quote(em.Model), key)
	w.line("  timeout: %s", s.Timeout)
}

func (c *Config) writeServerCard(w *lineWriter) {
	sc := c.ServerCard
	if sc == nil {
		return
	}
	w.line("serverCard:  # experimental: /.well-known/mcp/server-card[/<endpoint>]")
	w.line("  name: %s", strconv.Quote(sc.Name))
	if sc.Title != "" {
		w.line("  title: %s", strconv.Quote(sc.Title))
	}
	if sc.Description != "" {
		w.line("  description: %s", strconv.Quote(sc.Description))
	}
	w.line("  primitives: %t", sc.Primitives)
}

func (c *Config) writeTasks(w *lineWriter) {
	if c.Tasks == DefaultTasks() {
		return
	}
	t := c.Tasks
	w.line("tasks: {ttl: %s, pollInterval: %s, syncWindow: %s, maxRunning: %d, maxPerPrincipal: %d, maxResultBytes: %d, maxResultBytesPerPrincipal: %d}",
		t.TTL, t.PollInterval, t.SyncWindow, t.MaxRunning, t.MaxPerPrincipal, t.MaxResultBytes, t.MaxResultBytesPerPrincipal)
}

func (w *lineWriter) line(format string, args ...any) { fmt.Fprintf(w, format+"\n", args...) }

func list(vals []string) string {
	q := make([]string, len(vals))
	for i, v := range vals {
		q[i] = strconv.Quote(v)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// keysOnly prints a redacted map with sorted keys for stable output.
func keysOnly(m map[string]string) string {
	parts := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, strconv.Quote(k)+": "+strconv.Quote(m[k]))
	}
	return "{" + strings.Join(parts, ", ") + "}"
}
