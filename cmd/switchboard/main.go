// Command switchboard is an MCP gateway: one MCP endpoint in front of many MCP servers, with one merged,
// namespaced catalog of their tools, prompts and resources.
//
//	switchboard serve --config FILE [--listen ADDR]
//	switchboard stdio --config FILE
//	switchboard check --config FILE [serve's flags]
//	switchboard status [--url URL | --config FILE]
//	switchboard audit verify [--allow-truncated-head] FILE
//	switchboard version
package main

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"reflect"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"

	"github.com/switchboard-mcp/switchboard/auth"
	"github.com/switchboard-mcp/switchboard/cmd/internal/config"
	"github.com/switchboard-mcp/switchboard/gateway"
	"github.com/switchboard-mcp/switchboard/gateway/telemetry"
	"github.com/switchboard-mcp/switchboard/routing"
	"github.com/switchboard-mcp/switchboard/routing/state"
	"github.com/switchboard-mcp/switchboard/upstream"
)

// Exit codes: 0 success, 1 a failure at run time or an invalid config, 2 a usage error.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
)

// version is set at build time with -ldflags "-X main.version=…"; otherwise the module version is used.
var version = ""

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

const usage = `Switchboard is an MCP gateway: one MCP endpoint in front of many MCP servers.

Usage:
  switchboard serve --config FILE [--listen ADDR]   run the gateway
  switchboard stdio --config FILE                   serve one client over stdin/stdout (for desktop clients)
  switchboard check --config FILE [serve's flags]   validate a config file: every problem, and what serve refuses
  switchboard pin --config FILE                     write the lock file: the hash of every tool and prompt definition
  switchboard status [--url URL | --config FILE]    print the live state of a running gateway
  switchboard audit verify FILE                     check the hash chains of the audit records in a JSON log
  switchboard version                               print the version

Run "switchboard COMMAND -h" for a command's flags.
`

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	switch args[0] {
	case "serve":
		return serve(args[1:], stdout, stderr)
	case "stdio":
		return stdio(args[1:], pollableStdin(), stdout, stderr)
	case "check":
		return check(args[1:], stdout, stderr)
	case "status":
		return status(args[1:], stdout, stderr)
	case "pin":
		return pinCommand(args[1:], stdout, stderr)
	case sandboxWorkerCommand:
		return sandboxWorker(args[1:], stderr)
	case "audit":
		return auditCommand(args[1:], os.Stdin, stdout, stderr)
	case "version", "--version", "-v":
		fmt.Fprintln(stdout, "switchboard", buildVersion())
		return exitOK
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return exitOK
	default:
		fmt.Fprintf(stderr, "switchboard: unknown command %q\n\n%s", args[0], usage)
		return exitUsage
	}
}

func buildVersion() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

// loadConfig parses the --config flag's file, printing problems in a form a person can act on.
func loadConfig(path string, stderr io.Writer) (*config.Config, int) {
	if path == "" {
		fmt.Fprintln(stderr, "switchboard: --config FILE is required (see docs/configuration.md; deploy/examples/demo.yaml is a working example)")
		return nil, exitUsage
	}
	cfg, err := config.Load(path)
	var probs *config.Problems
	switch {
	case errors.As(err, &probs):
		fmt.Fprintf(stderr, "%s is invalid:\n%s\n", path, probs.Error())
		return nil, exitFailure
	case errors.Is(err, fs.ErrNotExist):
		fmt.Fprintf(stderr, "switchboard: config file %s does not exist\n", path)
		return nil, exitFailure
	case err != nil:
		fmt.Fprintf(stderr, "switchboard: %v\n", err)
		return nil, exitFailure
	}
	return cfg, exitOK
}

// reloader returns the function that reloads the config file into the router: a file with problems is
// rejected, with its reasons, and the running configuration stays.
//
// A file that would remove every upstream is refused too, unless allowEmpty: a config cut short by a non-atomic
// write often still parses, and applying it stops every child and fails every call in flight.
//
// apply, when set, applies the rest of what reloads (log level, rate limits) once the file is accepted.
//
// pinStore is where the router's pins are kept (nil: its memory); the lock file is read anew on every reload.
func reloader(path string, running *config.Config, r *routing.Router, latest *principals, users *userOAuth, pols *policies, log *slog.Logger, allowEmpty bool, pinStore routing.PinStore, apply func(*config.Config)) gateway.Reloader {
	var mu sync.Mutex
	return func() (routing.ReloadResult, error) {
		mu.Lock()
		defer mu.Unlock()
		cfg, err := config.Load(path)
		if err != nil {
			log.Error("config reload rejected; the running configuration stays", "err", err)
			return routing.ReloadResult{}, fmt.Errorf("config rejected: %w", err)
		}
		ups, err := upstreamConfigs(cfg, log, latest, users)
		if err != nil {
			log.Error("config reload rejected; the running configuration stays", "err", err)
			return routing.ReloadResult{}, err
		}
		if len(ups) == 0 && !allowEmpty {
			err := fmt.Errorf("config rejected: %s enables no upstream, which would stop every upstream and fail the calls in flight; if that is meant, start the gateway with --allow-empty", path)
			log.Error("config reload rejected; the running configuration stays", "err", err)
			return routing.ReloadResult{}, err
		}
		shape := shapeOf(cfg)
		if err := routing.CheckShape(shape); err != nil {
			log.Error("config reload rejected; the running configuration stays", "err", err)
			return routing.ReloadResult{}, fmt.Errorf("config rejected: %w", err)
		}
		var set *policySet
		if running.Auth != nil {
			if set, err = newPolicySet(cfg); err != nil {
				log.Error("config reload rejected; the running configuration stays", "err", err)
				return routing.ReloadResult{}, fmt.Errorf("config rejected: %w", err)
			}
		}
		// A lock file that cannot be read (deleted, or half written by hand) must not hold back the rest of the
		// reload, a policy revocation above all: the running pins stay, and the answer says why.
		pins, pinErr := pinningOf(cfg, pinStore)
		keys := restartOnly(running, cfg)
		if len(keys) > 0 {
			log.Warn("config reload applies upstreams, endpoints, overrides, pinning, policies, rate limits and the log level; these changes take effect after a restart", "keys", keys)
		}
		res, err := r.Reconfigure(ups)
		res.RestartNeeded = keys
		if err != nil {
			return res, err
		}
		// Overrides and endpoints apply without touching sessions: each hears list_changed where its view changed.
		if err := r.SetShape(shape); err != nil {
			return res, fmt.Errorf("overrides and endpoints rejected: %w", err) // checked above: not expected
		}
		if set != nil {
			pols.cur.Store(set) // open sessions decide by the new policies from their next request
		}
		if pinErr != nil {
			log.Error("pinning not reloaded; the running pins stay", "err", pinErr)
			res.Problems = append(res.Problems, pinErr.Error())
		} else {
			r.SetPinning(*pins) // the lock file as it is now; the lists are judged again
		}
		if apply != nil {
			apply(cfg)
		}
		running = cfg
		return res, nil
	}
}

// restartOnly lists the changed keys that a reload does not apply.
func restartOnly(old, cur *config.Config) []string {
	var keys []string
	for _, f := range []struct {
		key  string
		a, b any
	}{
		{"listen", old.Listen, cur.Listen}, {"publicURL", old.PublicURL, cur.PublicURL},
		{"allowedOrigins", old.AllowedOrigins, cur.AllowedOrigins}, {"allowedHosts", old.AllowedHosts, cur.AllowedHosts},
		{"maxBodyBytes", old.MaxBodyBytes, cur.MaxBodyBytes}, {"pageSize", old.PageSize, cur.PageSize},
		{"requestTimeout", old.RequestTimeout, cur.RequestTimeout}, {"maxRequestTimeout", old.MaxRequestTimeout, cur.MaxRequestTimeout},
		{"sessionIdleTimeout", old.SessionIdleTimeout, cur.SessionIdleTimeout}, {"cursorSecret", old.CursorSecret, cur.CursorSecret},
		{"listCacheTTL", old.ListCacheTTL, cur.ListCacheTTL},
		{"log.format", old.Log.Format, cur.Log.Format}, {"auth", old.Auth, cur.Auth}, {"console", old.Console, cur.Console},
		{"maxToolNameLength", old.MaxToolNameLength, cur.MaxToolNameLength}, {"clientHosts", old.ClientHosts, cur.ClientHosts},
		{"search", old.Search, cur.Search}, {"serverCard", old.ServerCard, cur.ServerCard},
		{"resourceNamespacing", old.ResourceNamespacing, cur.ResourceNamespacing},
	} {
		if !reflect.DeepEqual(f.a, f.b) {
			keys = append(keys, f.key)
		}
	}
	return keys
}

// watchConfig reloads on SIGHUP and whenever the content of a watched file changes: the config file, and the
// lock file it names (polled: it works the same on every file system and with ConfigMap volumes, whose files are
// replaced through symlinks). watched returns the files to watch now; a reload may change them.
func watchConfig(ctx context.Context, watched func() []string, reload gateway.Reloader, log *slog.Logger) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	digests := func() map[string]string {
		d := map[string]string{}
		for _, p := range watched() {
			d[p] = fileDigest(p)
		}
		return d
	}
	last := digests()
	t := time.NewTicker(2 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			log.Info("SIGHUP: reloading the config")
		case <-t.C:
			files := watched()
			now := digests()
			changed, path := "", ""
			for i, p := range files {
				if now[p] != last[p] && now[p] != "" { // a file missing for a moment (a non-atomic write) waits
					changed, path = "lock file", p
					if i == 0 {
						changed = "config file"
					}
					break
				}
			}
			if changed == "" || now[files[0]] == "" {
				continue
			}
			log.Info(changed+" changed: reloading", "file", path)
		}
		last = digests()
		_, _ = reload()
	}
}

func fileDigest(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// stdio serves one client over stdin/stdout: a desktop client (Claude Desktop, Cursor, VS Code) launches
// Switchboard as its local MCP server. Logs go to stderr, which stdio clients treat as logs.
func stdio(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fl := flag.NewFlagSet("stdio", flag.ContinueOnError)
	fl.SetOutput(stderr)
	path := fl.String("config", "", "config file (YAML, or an mcpServers JSON file)")
	endpoint := fl.String("endpoint", "", "serve this endpoint's part of the catalog (an endpoints: entry) instead of all of it")
	if err := fl.Parse(args); err != nil {
		return exitUsage
	}
	cfg, code := loadConfig(*path, stderr)
	if cfg == nil {
		return code
	}
	if *endpoint != "" && !slices.ContainsFunc(cfg.Endpoints, func(e config.Endpoint) bool { return e.Name == *endpoint }) {
		fmt.Fprintf(stderr, "switchboard stdio: %s configures no endpoint named %q\n", *path, *endpoint)
		return exitUsage
	}
	log, _ := newLogger(cfg.Log, stderr)
	r, err := newRouter(cfg, log, nil, nil, nil, nil)
	if err != nil {
		log.Error("cannot start", "err", err)
		return exitFailure
	}
	srv := gateway.New(r, gateway.Options{MaxBodyBytes: cfg.MaxBodyBytes, Logger: log, ListCacheTTL: cfg.ListCacheTTL})
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	stopRouter := startRouter(r)
	err = srv.ServeStdio(gateway.WithEndpoint(ctx, *endpoint), stdin, stdout)
	stopRouter()
	if err != nil {
		log.Error("stdio session ended", "err", err)
		return exitFailure
	}
	return exitOK
}

// sharedState connects to Redis when the config has a redis: block (design §7): a single server from the URL,
// or Sentinel or Cluster. The client fails fast, so that a Redis outage makes requests degrade (sessions stay
// local) instead of hang.
func sharedState(cfg *config.Config) (*state.Redis, func(), error) {
	rc := cfg.Redis
	if rc == nil {
		return nil, func() {}, nil
	}
	opt, err := redis.ParseURL(rc.URL)
	if err != nil {
		return nil, nil, fmt.Errorf("redis.url: %w", err)
	}
	u := &redis.UniversalOptions{
		Addrs: []string{opt.Addr}, DB: opt.DB, Username: opt.Username, Password: opt.Password, TLSConfig: opt.TLSConfig,
		DialTimeout: time.Second, DialerRetries: 1, MaxRetries: 1, ContextTimeoutEnabled: true,
	}
	if rc.Password != "" {
		u.Password = rc.Password
	}
	if rc.TLS && u.TLSConfig == nil {
		u.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	switch {
	case rc.SentinelMaster != "":
		u.MasterName, u.Addrs = rc.SentinelMaster, rc.SentinelAddrs
	case len(rc.ClusterAddrs) > 0:
		u.Addrs, u.IsClusterMode = rc.ClusterAddrs, true
	}
	client := redis.NewUniversalClient(u)
	store := state.NewRedis(client, rc.KeyPrefix, state.WithSessionTTL(cfg.SessionIdleTimeout))
	return store, func() { store.Shutdown(); client.Close() }, nil
}

// startRouter runs r until the returned stop is called; stop waits until every upstream session is closed (stdio
// children stopped per spec).
func startRouter(r *routing.Router) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); r.Run(ctx) }()
	return func() { cancel(); <-done }
}

// newRouter wires the configured upstreams into a router.
func newRouter(cfg *config.Config, log *slog.Logger, tel *telemetry.Providers, latest *principals, store *state.Redis, users *userOAuth) (*routing.Router, error) {
	ups, err := upstreamConfigs(cfg, log, latest, users)
	if err != nil {
		return nil, err
	}
	audit := auth.NewAuditor(log) // one chain for the process: calls and definitions alike
	opts := routing.Options{
		PageSize:           cfg.PageSize,
		CursorSecret:       cfg.CursorSecret,
		RequestTimeout:     cfg.RequestTimeout,
		MaxRequestTimeout:  cfg.MaxRequestTimeout,
		SessionIdleTimeout: cfg.SessionIdleTimeout,
		Version:            buildVersion(),
		Logger:             log,
		Replica:            cfg.ReplicaURL,
		Audit:              auditor(audit),
		MaxToolNameLength:  cfg.MaxToolNameLength,
		Shape:              shapeOf(cfg),
		AuditDefinition:    definitionAuditor(audit),
	}
	if opts.ResourceNamespacing, err = namespacingOf(cfg); err != nil {
		return nil, err
	}
	for _, h := range cfg.ClientHosts {
		opts.Hosts = append(opts.Hosts, routing.HostLimit{Name: h.Name, Prefix: h.Prefix, MaxLength: h.MaxLength})
	}
	if tel != nil {
		opts.Tracer, opts.Meter, opts.Propagator = tel.Tracer, tel.Meter, tel.Propagator
	}
	if store != nil {
		opts.Store, opts.Bus, opts.Replicas = store, store, store
	}
	if opts.Pinning, err = pinningOf(cfg, pinStoreOf(store)); err != nil {
		return nil, err
	}
	var mp metric.MeterProvider
	if tel != nil {
		mp = tel.Meter
	}
	if opts.Embedder, err = embedderOf(cfg, store, log, mp); err != nil {
		return nil, err
	}
	opts.SearchTimeout = cfg.Search.Timeout
	if users != nil {
		opts.Connector = users
	}
	opts.Tasks = tasksOf(cfg, store)
	if opts.Scripts, err = scriptEngine(); err != nil {
		return nil, err
	}
	return routing.New(opts, ups)
}

// upstreamConfigs turns the config's upstreams into routing's, each with a fingerprint of its configuration so
// that a reload keeps the unchanged ones running.
//
// users holds the per-user grants of user-oauth upstreams; without it (the stdio front end, which has no sign-in)
// those upstreams are left out.
func upstreamConfigs(cfg *config.Config, log *slog.Logger, latest *principals, users *userOAuth) ([]routing.UpstreamConfig, error) {
	var ups []routing.UpstreamConfig
	for _, u := range cfg.Upstreams {
		if u.Disabled {
			continue
		}
		var grants *routing.UserGrants
		if isUserOAuth(u) {
			if users == nil {
				log.Warn("a user-oauth upstream is left out: it needs the HTTP front end, where people sign in", "upstream", u.Name)
				continue
			}
			if !users.Known(u.Name) {
				return nil, fmt.Errorf("upstream %q: a user-oauth upstream added or changed to user-oauth takes effect after a restart", u.Name)
			}
			grants = &routing.UserGrants{ServiceLists: hasAuthorization(u)}
		}
		spec := upstream.Spec{
			Name: u.Name, Command: u.Command, Args: u.Args, Env: u.Env, EnvPassthrough: u.EnvPassthrough, Dir: u.Cwd,
			URL: u.URL, Logger: log, RequestHeaders: injectTraceContext,
		}
		if u.URL != "" {
			// Upstream credentials come from the config, never from the client (design §8): static headers and
			// header files, client credentials, or a per-user token exchange.
			o := credentialOptions(u)
			o.Shared = latest.sharedTokens()
			src, err := auth.NewCredentialSource(context.Background(), o, nil)
			if err != nil {
				return nil, fmt.Errorf("upstream %q: %w", u.Name, err)
			}
			if src != nil {
				spec.RequestHeaders, spec.HTTPClient = credentialHeaders(src, latest), credentialClient(u, src, latest)
			}
			if grants != nil {
				spec.RequestHeaders, spec.HTTPClient = users.headers(u.Name, src), users.httpClient(u.Name)
			}
		}
		spec.Protocol, spec.Shared = string(u.Protocol), u.Session == config.SessionShared
		t, err := upstream.NewTransport(spec)
		if err != nil {
			return nil, fmt.Errorf("upstream %q: %w", u.Name, err)
		}
		mode := routing.PerClient
		if u.Session == config.SessionShared {
			mode = routing.Shared
		}
		// A canonical encoding (pointers followed, maps sorted): %#v would print pointers as addresses and
		// make every reload look like a change.
		canon, err := json.Marshal(u)
		if err != nil {
			return nil, fmt.Errorf("upstream %q: %w", u.Name, err)
		}
		sum := sha256.Sum256(canon)
		ups = append(ups, routing.UpstreamConfig{
			Name: u.Name, Prefix: u.Prefix, Mode: mode, Transport: t, Kind: u.Transport(), Protocol: string(u.Protocol),
			Timeout: u.Timeout, MaxInstances: u.MaxInstances, IdleTimeout: u.IdleTimeout,
			Fingerprint: hex.EncodeToString(sum[:]), UserGrants: grants, Tasks: u.Tasks,
		})
	}
	return ups, nil
}

// hasAuthorization reports whether an upstream's configured headers carry an Authorization header.
func hasAuthorization(u config.Upstream) bool {
	for k := range u.Headers {
		if strings.EqualFold(k, "Authorization") {
			return true
		}
	}
	for k := range u.HeaderFiles {
		if strings.EqualFold(k, "Authorization") {
			return true
		}
	}
	return false
}

// credentialHeaders adds an upstream's credentials, and the trace context, to every request to it.
func credentialHeaders(src auth.CredentialSource, latest *principals) func(context.Context, http.Header) error {
	return func(ctx context.Context, h http.Header) error {
		_ = injectTraceContext(ctx, h)
		creds, err := src.Header(ctx, latest.freshest(auth.PrincipalFrom(ctx)))
		if err != nil {
			return err
		}
		for k, v := range creds {
			h[k] = v
		}
		return nil
	}
}

// principals remembers the freshest verified principal of each identity. A per-client upstream session keeps
// the principal of the request that created it, whose token expires; its own requests (reconnects, the GET
// stream) use the identity's latest token instead, so token exchange keeps working for as long as the client
// keeps sending fresh tokens.
//
// tokens, when set, is where id-jag upstreams keep each identity's token, sealed, for every replica (sharedTokens).
type principals struct {
	mu     sync.Mutex
	m      map[string]*auth.Principal
	tokens *auth.SharedTokens
}

// maxPrincipals bounds the memory; expired entries go first.
const maxPrincipals = 100000

func (ps *principals) note(p *auth.Principal) {
	if ps == nil || p == nil {
		return
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.m == nil {
		ps.m = map[string]*auth.Principal{}
	}
	if len(ps.m) >= maxPrincipals {
		now := time.Now()
		for k, q := range ps.m {
			if q.Expiry.Before(now) {
				delete(ps.m, k)
			}
		}
		if len(ps.m) >= maxPrincipals {
			clear(ps.m)
		}
	}
	if q := ps.m[p.Key()]; q == nil || p.Expiry.After(q.Expiry) {
		ps.m[p.Key()] = p
	}
}

// freshest returns the latest principal of p's identity (p itself if it is the latest).
func (ps *principals) freshest(p *auth.Principal) *auth.Principal {
	if ps == nil || p == nil {
		return p
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if q := ps.m[p.Key()]; q != nil && q.Expiry.After(p.Expiry) {
		return q
	}
	return p
}

// wireAuth makes the gateway an OAuth resource server when the config has an auth: block: every request to the
// MCP endpoints is verified, sessions are bound to their principal, and the policy decides what each principal
// sees and calls.
func wireAuth(ctx context.Context, cfg *config.Config, o *gateway.Options, latest *principals, pols *policies, log *slog.Logger, idp *http.Client) error {
	rc, ok := resourceConfig(cfg)
	if !ok {
		return nil
	}
	rc.Logger = log
	rs, err := auth.NewResourceServer(ctx, rc, idp)
	if err != nil {
		return err
	}
	// An endpoint's own rules apply on top of the global policy: a principal sees there what both allow.
	set, err := newPolicySet(cfg)
	if err != nil {
		return err
	}
	pols.cur.Store(set)
	o.Auth = rs
	o.AuthFor = func(name string) gateway.Authenticator {
		if e := rs.ForEndpoint(name); e != nil {
			return e
		}
		return nil // not (*auth.ResourceServer)(nil): the gateway tests for no authenticator
	}
	o.Key = func(ctx context.Context) string {
		p := auth.PrincipalFrom(ctx)
		if p == nil {
			return ""
		}
		latest.note(p) // every verified request refreshes its identity's token
		return p.Key()
	}
	o.Identify = func(ctx context.Context) gateway.Identity {
		p := auth.PrincipalFrom(ctx)
		if p == nil {
			return gateway.Identity{}
		}
		latest.note(p)
		id := gateway.Identity{Key: p.Key(), Context: func(c context.Context) context.Context { return auth.WithPrincipal(c, p) }}
		id.Allow = pols.allow(p, gateway.EndpointFrom(ctx))
		return id
	}
	log.Info("authentication on", "issuer", rc.Issuer, "audience", rc.Audience, "policyRules", len(cfg.Policy))
	return nil
}

// bothAllow is the allowance of two grants together (nil grants allow everything); nil when both are nil.
func bothAllow(a, b *auth.Grant) routing.Allow {
	switch {
	case a == nil && b == nil:
		return nil
	case b == nil:
		return a.Allows
	case a == nil:
		return b.Allows
	}
	return func(upstream, kind, name string) bool {
		return a.Allows(upstream, kind, name) && b.Allows(upstream, kind, name)
	}
}

// auditor turns routing's call events into audit log entries of a's chain.
func auditor(a *auth.Auditor) func(routing.CallEvent) {
	return func(e routing.CallEvent) {
		var p *auth.Principal
		if iss, sub, ok := strings.Cut(e.Principal, "|"); ok {
			p = &auth.Principal{Issuer: iss, Subject: sub}
		}
		a.Call(context.Background(), auth.AuditEvent{
			Principal: p, Session: e.Session, Endpoint: e.Endpoint, Upstream: e.Upstream, Method: e.Method, Tool: e.Tool,
			Outcome: e.Outcome, Reason: e.Reason, Code: e.Code, Duration: e.Duration, DefinitionHash: e.DefinitionHash, Script: e.Script,
		})
	}
}

// injectTraceContext sends the W3C trace context of the upstream leg to HTTP upstreams in headers.
func injectTraceContext(ctx context.Context, h http.Header) error {
	propagation.TraceContext{}.Inject(ctx, propagation.HeaderCarrier(h))
	return nil
}

// newLogger returns the logger of a config's log block, and the level it filters by, which a reload may change
// (the format needs a restart).
func newLogger(c config.LogConfig, w io.Writer) (*slog.Logger, *slog.LevelVar) {
	level := new(slog.LevelVar)
	level.Set(c.Level)
	opts := &slog.HandlerOptions{Level: level}
	if c.Format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts)), level
	}
	return slog.New(slog.NewTextHandler(w, opts)), level
}

// tasksOf configures the tasks the gateway makes, when some upstream or tool asks for them, or code mode's
// run_script may be one (a script is a long call of the gateway's own): held in the shared store, so that any
// replica answers for a task, or in memory for a lone replica.
func tasksOf(cfg *config.Config, store *state.Redis) routing.TaskOptions {
	wanted := cfg.Discovery == config.DiscoveryCode
	for _, e := range cfg.Endpoints {
		wanted = wanted || e.Discovery == config.DiscoveryCode
	}
	for _, u := range cfg.Upstreams {
		wanted = wanted || u.Tasks != ""
	}
	for _, o := range cfg.Overrides {
		wanted = wanted || (o.TaskSupport != "" && o.TaskSupport != config.TaskForbidden)
	}
	if !wanted {
		return routing.TaskOptions{}
	}
	t := cfg.Tasks
	opts := routing.TaskOptions{TTL: t.TTL, PollInterval: t.PollInterval, SyncWindow: t.SyncWindow, MaxRunning: t.MaxRunning, MaxPerPrincipal: t.MaxPerPrincipal,
		MaxResultBytes: t.MaxResultBytes, MaxResultBytesPerPrincipal: t.MaxResultBytesPerPrincipal}
	if store != nil {
		opts.Store = store
	} else {
		opts.Store = state.NewMemory() // no goroutine of its own: nothing to stop
	}
	return opts
}
