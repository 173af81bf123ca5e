// Package config loads and validates the gateway's configuration file.
//
// The file is YAML (the main format) or JSON. The mcpServers / servers JSON that
// Claude Desktop, Cursor and VS Code users already have is accepted as well and
// converted to upstreams, so a newcomer can point the gateway at the file they
// already use.
//
// Validation collects every problem rather than stopping at the first, and
// reports each with its file, line and column, because an admin fixing a config
// wants one round trip, not one per mistake.
package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"strings"
	"time"
)

// Defaults applied to keys the file leaves out. They are constants so callers
// (flags, docs, tests) can refer to them without a mutable package variable.
const (
	// DefaultListen is the address the gateway listens on: loopback, so a fresh
	// install is never reachable from the network by accident.
	DefaultListen = "127.0.0.1:8080"
	// DefaultMaxBodyBytes is the request body limit (4 MiB).
	DefaultMaxBodyBytes int64 = 4 << 20
	// DefaultPageSize is the number of items per page of tools/list and the
	// other list methods.
	DefaultPageSize = 100
	// MaxPageSize is the largest allowed pageSize.
	MaxPageSize = 1000
	// DefaultRequestTimeout is the per-request timeout toward upstreams.
	DefaultRequestTimeout = 60 * time.Second
	// DefaultMaxRequestTimeout is the hard cap on a request, even one that
	// keeps reporting progress.
	DefaultMaxRequestTimeout = 10 * time.Minute
	// DefaultSessionIdleTimeout ends client sessions left unused this long.
	DefaultSessionIdleTimeout = 30 * time.Minute
	// DefaultListCacheTTL is how long a 2026-07-28 client may keep a list
	// (ttlMs), and MaxListCacheTTL the longest listCacheTTL accepted.
	DefaultListCacheTTL = time.Minute
	MaxListCacheTTL     = 24 * time.Hour
	// DefaultMaxInstances caps the live stdio children of one per-client
	// upstream, so many users cannot exhaust the node with processes.
	DefaultMaxInstances = 100
	// DefaultIdleTimeout closes a per-client upstream session unused this long.
	DefaultIdleTimeout = 10 * time.Minute
	// MinCursorSecretBytes is the shortest accepted cursorSecret: an HMAC key
	// shorter than the hash output weakens cursor signatures.
	MinCursorSecretBytes = 32
	// MaxNameLen is the longest upstream name.
	MaxNameLen = 64
	// MaxPrefixLen is the longest explicit tool-name prefix; tool names are
	// limited to 64 characters by the major clients, so a prefix must leave room.
	MaxPrefixLen = 32
)

// Config is the validated gateway configuration. Every field holds its
// effective value: defaults are already applied.
type Config struct {
	// Listen is the host:port the HTTP server binds. The MCP endpoint is /mcp;
	// /healthz and /readyz are served beside it.
	Listen string
	// PublicURL is the canonical external URL of the gateway ("" if unset).
	// It becomes the OAuth audience, and its origin and host are accepted by
	// default by OriginAllowed and HostAllowed.
	PublicURL string
	// ReplicaURL is this replica's MCP endpoint as the other replicas reach it (for example
	// "http://${POD_IP}:8080/mcp"; "" if unset). A stateless client's retry of a multi-round call that lands on
	// another replica is forwarded here, where the upstream call waits.
	ReplicaURL string
	// AllowedOrigins lists the exact Origin values accepted (lowercased). Empty
	// means the default policy; see OriginAllowed.
	AllowedOrigins []string
	// AllowedHosts lists accepted Host header values (lowercased, "host" or
	// "host:port"). Empty means the default policy; see HostAllowed.
	AllowedHosts []string
	// MaxBodyBytes is the request body limit in bytes.
	MaxBodyBytes int64
	// PageSize is the number of items per page of the merged lists.
	PageSize int
	// RequestTimeout is the default per-request timeout toward upstreams;
	// progress notifications reset it.
	RequestTimeout time.Duration
	// MaxRequestTimeout bounds a request even when it keeps reporting progress.
	MaxRequestTimeout time.Duration
	// SessionIdleTimeout ends a client session unused this long.
	SessionIdleTimeout time.Duration
	// ListCacheTTL is the ttlMs of a 2026-07-28 list result (capped by the
	// upstreams' own); 0 makes every list immediately stale.
	ListCacheTTL time.Duration
	// CursorSecret is the HMAC key for pagination cursors. Nil means the
	// gateway generates a random key at start, which only works with a single
	// replica: every replica must share the key to accept each other's cursors.
	CursorSecret []byte
	// Log configures the gateway's own logging.
	Log LogConfig
	// Console configures the admin console at /console (off by default).
	Console Console
	// Auth makes the gateway an OAuth 2.1 resource server; nil = clients are
	// not authenticated (see NoAuthOnNetwork).
	Auth *Auth
	// Policy holds the access rules in file order. Nil means no policy (every
	// principal may use everything); a non-nil empty list denies everything.
	Policy []PolicyRule
	// Redis, when set, shares sessions across replicas (nil: one replica, in-memory state).
	Redis *Redis
	// RateLimit, when set, limits each principal's requests.
	RateLimit *RateLimit
	// MaxToolNameLength bounds exposed tool and prompt names; longer ones are shortened deterministically.
	MaxToolNameLength int
	// ResourceNamespacing says when resource URIs carry their upstream's name ("<upstream>+<uri>"):
	// NamespacingAuto (the default), NamespacingAlways or NamespacingNever.
	ResourceNamespacing ResourceNamespacing
	// ClientHosts are the hosts whose tool-name limits check and /readyz verify the names against.
	ClientHosts []ClientHost
	// Endpoints are the named parts of the catalog served at /mcp/<name>, in
	// file order (nil when the file has none: /mcp serves everything).
	Endpoints []Endpoint
	// Overrides change how clients see single tools and prompts (nil when the
	// file has none).
	Overrides map[OverrideKey]Override
	// Pinning configures the pins of tool definitions; defaults applied.
	Pinning Pinning
	// Discovery is how /mcp shows its tools: DiscoveryList (the default),
	// DiscoverySearch or DiscoveryCode. An endpoint has its own (Endpoint.Discovery); it does
	// not inherit this one.
	Discovery Discovery
	// AlwaysList are globs over client-visible tool names: in search mode,
	// /mcp's tools/list shows the tools they match besides the meta-tools
	// (nil when the file has none).
	AlwaysList []string
	// ExposeFound, in search mode, adds each tool search_tools finds to that
	// session's tools/list of /mcp (and sends list_changed).
	ExposeFound bool
	// CodeMode is /mcp's codeMode: block (nil when unset: DefaultCodeMode
	// applies with discovery: code).
	CodeMode *CodeMode
	// Search configures the tool-search index of search mode; defaults
	// applied (Timeout).
	Search Search
	// ServerCard, when set, serves the server cards (experimental, SEP-2127);
	// defaults applied (Name). Nil: no card.
	ServerCard *ServerCard
	// Tasks tunes the tasks the gateway makes (tasks: block); always set,
	// with defaults.
	Tasks Tasks
	// Upstreams are the MCP servers behind the gateway, in file order (sorted
	// by name for the mcpServers form). Disabled ones are included, with
	// Disabled set, so tools can still report on them.
	Upstreams []Upstream
	// Warnings are problems that do not stop the gateway (a normalised name,
	// an ignored key, no upstreams). `switchboard check` prints them.
	Warnings []Problem
	// File is the path (or name) the configuration was loaded from.
	File string

	// sources keeps, per upstream name, the strings as written in the file
	// before ${VAR} expansion, so String can show them without leaking the
	// expanded values.
	sources map[string]upstreamSource
	// presetSources keeps the argument presets as written, before ${VAR}
	// expansion, for String.
	presetSources map[OverrideKey]map[string]json.RawMessage
	// cursorSecretLen is, in a copy made by Redacted, the length of the
	// cursorSecret it redacted, which String shows.
	cursorSecretLen int
}

// LogConfig configures the gateway's log output.
type LogConfig struct {
	// Level is the minimum level logged.
	Level slog.Level
	// Format is "text" or "json".
	Format string
}

// SessionMode says whether an upstream session is per client or shared.
type SessionMode string

const (
	// SessionPerClient gives each client session its own upstream session
	// (its own stdio child, or its own Mcp-Session-Id): isolation between users.
	SessionPerClient SessionMode = "per-client"
	// SessionShared serves every client from one upstream session; for
	// stateless servers such as search or fetch.
	SessionShared SessionMode = "shared"
)

// ProtocolMode selects the MCP protocol era the gateway speaks to an
// upstream.
type ProtocolMode string

const (
	// ProtocolAuto probes the upstream with server/discover and speaks the
	// stateless modern era (2026-07-28) if it offers it, else the legacy one
	// (initialize and sessions).
	ProtocolAuto ProtocolMode = "auto"
	// ProtocolLegacy skips the probe and always uses initialize.
	ProtocolLegacy ProtocolMode = "legacy"
	// ProtocolModern requires the modern era; connecting fails otherwise.
	ProtocolModern ProtocolMode = "modern"
)

// Upstream is one MCP server behind the gateway.
type Upstream struct {
	// Name identifies the upstream: [a-z0-9-]+, 1..64 characters, unique.
	Name string
	// Command is the program to run for a stdio upstream ("" for HTTP).
	Command string
	// Args are the program's arguments.
	Args []string
	// Env holds variables set in the child's environment.
	Env map[string]string
	// EnvPassthrough names the gateway's variables the child inherits besides the minimal set (a trailing '*'
	// matches a prefix).
	EnvPassthrough []string
	// Cwd is the child's working directory ("" = the gateway's).
	Cwd string
	// URL is the streamable HTTP endpoint of a remote upstream ("" for stdio).
	URL string
	// Headers are sent with every request to URL (static credentials).
	// Values written as "file:PATH" are not here but in HeaderFiles.
	Headers map[string]string
	// HeaderFiles maps a header name to the file its value is read from
	// (written "file:PATH" in the file; ${VAR} is expanded in PATH). The auth
	// package reads them at start and again when the file changes.
	HeaderFiles map[string]string
	// Auth is how the gateway obtains its own credentials for this upstream
	// (nil = none beyond Headers).
	Auth *UpstreamAuth
	// Session is per-client or shared.
	Session SessionMode
	// Protocol is auto (the default), legacy or modern.
	Protocol ProtocolMode
	// Prefix is prepended to the upstream's tool and prompt names. It is
	// already defaulted to Name+"__" unless the file set it, possibly to "".
	Prefix string
	// Timeout is the per-request timeout for this upstream (defaulted to
	// Config.RequestTimeout).
	Timeout time.Duration
	// MaxInstances caps live per-client stdio children; 0 means no cap.
	MaxInstances int
	// IdleTimeout closes a per-client upstream session unused this long.
	IdleTimeout time.Duration
	// Disabled upstreams are validated but not started.
	Disabled bool
	// Tasks is how the gateway runs this upstream's tools as tasks of its own
	// when the upstream takes none: TaskOptional, TaskRequired, or "" for
	// never (a tool's override taskSupport wins).
	Tasks string
}

// Transport returns "stdio" for a local program and "http" for a remote
// server. The HTTP flavour (streamable HTTP or legacy HTTP+SSE) is detected
// at connect time, not configured; the protocol era is detected too unless
// Protocol forces it.
func (u Upstream) Transport() string {
	if u.Command != "" {
		return "stdio"
	}
	return "http"
}

// Default returns a configuration with every default applied and no
// upstreams.
func Default() *Config {
	return &Config{
		Listen:              DefaultListen,
		MaxBodyBytes:        DefaultMaxBodyBytes,
		PageSize:            DefaultPageSize,
		MaxToolNameLength:   DefaultMaxToolNameLength,
		ResourceNamespacing: NamespacingAuto,
		ClientHosts:         DefaultClientHosts(),
		RequestTimeout:      DefaultRequestTimeout,
		MaxRequestTimeout:   DefaultMaxRequestTimeout,
		SessionIdleTimeout:  DefaultSessionIdleTimeout,
		ListCacheTTL:        DefaultListCacheTTL,
		Log:                 LogConfig{Level: slog.LevelInfo, Format: "text"},
		Pinning:             Pinning{OnChange: PinWarn},
		Tasks:               DefaultTasks(),
		Discovery:           DiscoveryList,
		Search:              Search{Timeout: DefaultSearchTimeout},
	}
}

// Load reads and validates the configuration file at path. Variables are
// expanded from the process environment.
//
// A *Problems error means the file was read but is invalid; any other error
// means it could not be read (errors.Is(err, fs.ErrNotExist) works).
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	return Parse(path, data, os.LookupEnv)
}

// Parse validates configuration data. name is used in problem locations and
// stored as Config.File; a name ending in .json or .jsonc selects the JSON
// parser (which accepts comments and trailing commas, as VS Code does), and
// data starting with "{" is tried as JSON first. env looks up variables for
// ${VAR} expansion; nil means none are set.
//
// On failure the error is a *Problems listing every error found.
func Parse(name string, data []byte, env func(string) (string, bool)) (*Config, error) {
	if env == nil {
		env = func(string) (string, bool) { return "", false }
	}
	p := &parser{reporter: &reporter{file: name}, env: env}
	root, err := decode(name, data)
	if err != nil {
		var se *syntaxError
		if errors.As(err, &se) {
			p.list = append(p.list, Problem{File: name, Line: se.line, Col: se.col, Message: se.msg})
		} else {
			p.list = append(p.list, Problem{File: name, Message: err.Error()})
		}
		return nil, p.problems()
	}
	cfg := p.config(root)
	if len(p.list) > 0 {
		return nil, p.problems()
	}
	sortProblems(p.warnings)
	cfg.Warnings = p.warnings
	cfg.File = name
	return cfg, nil
}

// IsLoopback reports whether the host part of listen ("host:port", or a bare
// host) is a loopback name or address: localhost, 127.0.0.0/8 or ::1. An empty
// host (":8080") listens on every interface and is not loopback.
func IsLoopback(listen string) bool {
	host := listen
	if h, _, err := net.SplitHostPort(listen); err == nil {
		host = h
	}
	return isLoopbackHost(strings.Trim(host, "[]"))
}

func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// OriginAllowed reports whether a request with this Origin header may be
// served. Checking Origin is what stops a web page from driving a local
// gateway through the user's browser (DNS rebinding).
//
// A request without Origin (every non-browser client) is allowed. If
// AllowedOrigins is set, the origin must be one of them (case-insensitive).
// Otherwise the default applies: the origin of PublicURL, and, when Listen is
// loopback, any http or https origin on a loopback host with any port.
func (c *Config) OriginAllowed(origin string) bool {
	if origin == "" {
		return true
	}
	if len(c.AllowedOrigins) > 0 {
		for _, o := range c.AllowedOrigins {
			if strings.EqualFold(o, origin) {
				return true
			}
		}
		return false
	}
	if c.PublicURL != "" {
		if pu, err := url.Parse(c.PublicURL); err == nil && strings.EqualFold(pu.Scheme+"://"+pu.Host, origin) {
			return true
		}
	}
	if !IsLoopback(c.Listen) {
		return false
	}
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Path != "" {
		return false
	}
	return isLoopbackHost(u.Hostname())
}

// HostAllowed reports whether a request with this Host header may be served.
//
// If AllowedHosts is set, the host must match an entry: an entry without a
// port matches any port. Otherwise, when Listen is loopback, only localhost,
// 127.0.0.1, [::1] (any port) and the host of PublicURL are accepted; when it
// is not loopback, any host is.
func (c *Config) HostAllowed(host string) bool {
	name, port := splitHost(host)
	if name == "" {
		return false
	}
	if len(c.AllowedHosts) > 0 {
		for _, h := range c.AllowedHosts {
			en, ep := splitHost(h)
			if en == name && (ep == "" || ep == port) {
				return true
			}
		}
		return false
	}
	if !IsLoopback(c.Listen) {
		return true
	}
	switch name {
	case "localhost", "127.0.0.1", "::1":
		return true
	}
	if c.PublicURL != "" {
		if pu, err := url.Parse(c.PublicURL); err == nil && strings.EqualFold(pu.Hostname(), name) {
			return true
		}
	}
	return false
}

// splitHost splits a Host header value into its lowercased host name (without
// IPv6 brackets) and port ("" if absent).
func splitHost(h string) (name, port string) {
	h = strings.ToLower(strings.TrimSpace(h))
	if n, p, err := net.SplitHostPort(h); err == nil {
		return n, p
	}
	return strings.Trim(h, "[]"), ""
}
