package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/switchboard-mcp/switchboard/cmd/internal/config"
	"github.com/switchboard-mcp/switchboard/gateway"
	"github.com/switchboard-mcp/switchboard/gateway/telemetry"
	"github.com/switchboard-mcp/switchboard/routing"
	"github.com/switchboard-mcp/switchboard/routing/state"
)

// serveFlags are serve's command line, which check takes too (parseServeFlags).
type serveFlags struct {
	path, listen, adminListen string
	insecure, allowEmpty      bool
	grace                     time.Duration
	// checkOnly builds the gateway as check does: every refusal of the start, but nothing listens and no
	// identity provider is contacted (idp is offlineIdP's).
	checkOnly bool
	// idp reaches the identity provider of the auth: block for its discovery and keys; nil means the default
	// clients.
	idp *http.Client
}

// serve runs the gateway: start constructs it, run serves until a signal. A SIGINT or SIGTERM during the start
// stops the gateway before it serves, as the signal context spans both.
func serve(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	g, code := start(ctx, args, stderr, nil)
	if g == nil {
		return code
	}
	defer g.close()
	if err := g.run(ctx); err != nil && !errors.Is(err, context.Canceled) {
		g.log.Error("server stopped", "err", err)
		return exitFailure
	}
	g.log.Info("switchboard stopped")
	return exitOK
}

// start is serve up to serving: the flags, the config, then build, which holds every refusal of the start. It
// returns the gateway built, or nil and the exit code. idp, when set, makes the client that reaches the
// config's identity provider (a test's; serve's is the default).
func start(ctx context.Context, args []string, stderr io.Writer, idp func(*config.Config) *http.Client) (*gatewayProcess, int) {
	f, code := parseServeFlags("serve", args, stderr)
	if code != exitOK {
		return nil, code
	}
	cfg, code := loadConfig(f.path, stderr)
	if cfg == nil {
		return nil, code
	}
	log, level := newLogger(cfg.Log, stderr)
	for _, w := range cfg.Warnings {
		log.Warn("config", "problem", w.String())
	}
	if idp != nil {
		f.idp = idp(cfg)
	}
	g, err := build(ctx, cfg, f, log, level)
	if err != nil {
		logStartError(log, err)
		return nil, exitFailure
	}
	return g, exitOK
}

// parseServeFlags parses serve's command line, which check takes too (name is the command's): check given the
// flags serve runs with refuses what serve would refuse. It refuses the flags that can never start a gateway.
func parseServeFlags(name string, args []string, stderr io.Writer) (serveFlags, int) {
	var f serveFlags
	fl := flag.NewFlagSet(name, flag.ContinueOnError)
	fl.SetOutput(stderr)
	fl.StringVar(&f.path, "config", "", "config file (YAML, or an mcpServers JSON file)")
	fl.StringVar(&f.listen, "listen", "", "address to listen on, overriding the config's listen (e.g. 127.0.0.1:8080)")
	fl.StringVar(&f.adminListen, "admin-listen", "", "loopback address for the admin API (e.g. 127.0.0.1:9090); off when empty")
	fl.BoolVar(&f.insecure, "insecure-no-auth", false, "allow listening on a non-loopback address without an auth: block (anyone who can reach it can use every tool)")
	fl.DurationVar(&f.grace, "shutdown-grace", 10*time.Second, "how long calls in flight may finish on shutdown")
	fl.BoolVar(&f.allowEmpty, "allow-empty", false, "let a reload apply a config with no enabled upstream (by default such a reload is refused: it is what a truncated file looks like)")
	if err := fl.Parse(args); err != nil {
		return f, exitUsage
	}
	if msg := config.ListenProblem(f.listen); f.listen != "" && msg != "" {
		fmt.Fprintf(stderr, "switchboard: --listen: %s\n", msg)
		return f, exitUsage
	}
	if f.adminListen != "" && !config.IsLoopback(f.adminListen) {
		fmt.Fprintf(stderr, "switchboard: --admin-listen %s is not a loopback address: the admin API has no authentication of its own\n", f.adminListen)
		return f, exitUsage
	}
	return f, exitOK
}

// startError is a failure to build the gateway: what failed, with the attributes that say where, logged as one
// event.
type startError struct {
	what  string
	attrs []any
	err   error
}

func (e *startError) Error() string { return e.what + ": " + e.err.Error() }

func (e *startError) Unwrap() error { return e.err }

func logStartError(log *slog.Logger, err error) {
	var se *startError
	if errors.As(err, &se) {
		log.Error(se.what, append(se.attrs, "err", se.err)...)
		return
	}
	log.Error("cannot start", "err", err)
}

// gatewayProcess is the gateway as build leaves it: everything constructed and every listener bound, nothing
// running. run runs it; close then releases what build acquired.
type gatewayProcess struct {
	path   string
	log    *slog.Logger
	router *routing.Router
	srv    *gateway.Server
	// users wires per-user upstream OAuth; nil when no upstream is user-oauth.
	users *userOAuth
	ln    net.Listener
	// admin serves the admin API on adminLn; nil when --admin-listen is not given.
	admin   *http.Server
	adminLn net.Listener
	reload  gateway.Reloader
	grace   time.Duration
	// policies are the running policies (with an auth: block), which a reload swaps.
	policies *policies
	// limiter backs the rate limits (the shared store, or memory), whether or not the config sets any now: a
	// reload may turn them on.
	limiter gateway.Limiter
	// lockFile is the running config's pinning.lockFile ("" for none), which a reload may change.
	lockFile atomic.Pointer[string]
	// closers release what build acquired, in that order; close runs them in reverse.
	closers []func()
}

// build constructs the gateway from a valid configuration: telemetry, shared state, the router, the listeners,
// authentication, the gateway server and the reloader. Every refusal of serve's start is here, and check runs it
// too (f.checkOnly), so that check refuses what serve refuses. ctx bounds what build waits for (the issuer's
// discovery); nothing it starts outlives build, so on error everything acquired is already released.
func build(ctx context.Context, cfg *config.Config, f serveFlags, log *slog.Logger, level *slog.LevelVar) (_ *gatewayProcess, err error) {
	g := &gatewayProcess{path: f.path, log: log, grace: f.grace, policies: &policies{}}
	defer func() {
		if err != nil {
			g.close()
		}
	}()
	if f.listen != "" {
		cfg.Listen = f.listen
	}
	if cfg.NoAuthOnNetwork(cfg.Listen) {
		if !f.insecure {
			return nil, &startError{what: "cannot start", err: fmt.Errorf("refusing to listen on %s without authentication: add an auth: block (docs/auth.md), listen on a loopback address, or pass --insecure-no-auth if something in front of the gateway authenticates", cfg.Listen)}
		}
		log.Warn("listening without authentication on a non-loopback address (--insecure-no-auth): anyone who reaches it can use every tool", "listen", cfg.Listen)
	}
	if f.checkOnly && f.idp == nil {
		f.idp = offlineIdP(cfg)
	}
	tel, err := telemetry.New(ctx, telemetry.Options{ServiceName: "switchboard", ServiceVersion: buildVersion()})
	if err != nil {
		return nil, &startError{what: "cannot start telemetry", err: err}
	}
	g.onClose(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = tel.Shutdown(sctx)
	})
	latest := &principals{}
	store, closeStore, err := sharedState(cfg)
	if err != nil {
		return nil, &startError{what: "cannot set up shared state", err: err}
	}
	g.onClose(closeStore)
	if latest.tokens, err = sharedTokens(cfg, store, log); err != nil {
		return nil, &startError{what: "cannot share id-jag tokens", err: err}
	}
	users, err := newUserOAuth(ctx, cfg, store, log, g.onClose, f.idp)
	if err != nil {
		return nil, &startError{what: "cannot start per-user upstream OAuth", err: err}
	}
	g.users = users
	if g.router, err = newRouter(cfg, log, tel, latest, store, users); err != nil {
		return nil, &startError{what: "cannot start", err: err}
	}
	if !f.checkOnly {
		if g.ln, err = net.Listen("tcp", cfg.Listen); err != nil {
			return nil, &startError{what: "cannot listen", attrs: []any{"addr", cfg.Listen}, err: err}
		}
		g.onClose(func() { _ = g.ln.Close() }) // the server closes it too; this covers a failure before it runs
	}
	gopts, err := g.gatewayOptions(ctx, cfg, tel, store, latest, f.idp)
	if err != nil {
		return nil, err
	}
	if users != nil {
		if gopts.Pages, gopts.PagePaths, err = users.pages(g.router); err != nil {
			return nil, &startError{what: "cannot start per-user upstream OAuth", err: err}
		}
		gopts.Grants = users
	}
	var con *consoleSource
	if cfg.Console.Enabled {
		con = newConsoleSource(cfg, g.router, users, store, tel.Metrics, log)
		signIn, mount, err := consoleSignIn(ctx, cfg, users, log, f.idp)
		if err != nil {
			return nil, &startError{what: "cannot start the console", err: err}
		}
		if gopts.Pages, gopts.PagePaths, err = consolePages(cfg, con, signIn, mount, gopts.Pages, gopts.PagePaths, log); err != nil {
			return nil, &startError{what: "cannot start the console", err: err}
		}
	}
	g.srv = gateway.New(g.router, gopts)
	g.lockFile.Store(&cfg.Pinning.LockFile)
	g.reload = reloader(f.path, cfg, g.router, latest, users, g.policies, log, f.allowEmpty, pinStoreOf(store), func(cfg *config.Config) {
		level.Set(cfg.Log.Level)
		g.srv.SetLimits(limitsOf(cfg, g.limiter))
		g.lockFile.Store(&cfg.Pinning.LockFile)
		if con != nil {
			con.applied(cfg)
		}
	})
	if con != nil {
		g.reload = con.recording(g.reload)
	}
	if f.adminListen != "" && !f.checkOnly {
		if g.adminLn, err = net.Listen("tcp", f.adminListen); err != nil {
			return nil, &startError{what: "cannot listen for the admin API", attrs: []any{"addr", f.adminListen}, err: err}
		}
		g.onClose(func() { _ = g.adminLn.Close() })
		g.admin = &http.Server{Handler: g.srv.AdminHandler(g.reload), ReadHeaderTimeout: 10 * time.Second}
		log.Info("admin API listening", "addr", g.adminLn.Addr().String())
	}
	return g, nil
}

// gatewayOptions are the gateway server's options: the config's limits, telemetry, shared state, and
// authentication when the config has an auth: block.
func (g *gatewayProcess) gatewayOptions(ctx context.Context, cfg *config.Config, tel *telemetry.Providers, store *state.Redis, latest *principals, idp *http.Client) (gateway.Options, error) {
	gopts := gateway.Options{
		AllowOrigin:  cfg.OriginAllowed,
		AllowHost:    cfg.HostAllowed,
		MaxBodyBytes: cfg.MaxBodyBytes,
		Logger:       g.log,
		Tracer:       tel.Tracer,
		Meter:        tel.Meter,
		Propagator:   tel.Propagator,
		Metrics:      tel.Metrics,
		ServerCard:   serverCardOptions(cfg),
		ListCacheTTL: cfg.ListCacheTTL,
	}
	if store != nil {
		gopts.Ready, gopts.Events = store.Ping, store
	}
	if store != nil {
		g.limiter = store // shared by every replica
	} else {
		mem := state.NewMemory()
		g.onClose(mem.Shutdown)
		g.limiter = mem
	}
	gopts.Limits = limitsOf(cfg, g.limiter)
	if err := wireAuth(ctx, cfg, &gopts, latest, g.policies, g.log, idp); err != nil {
		return gateway.Options{}, &startError{what: "cannot start authentication", err: err}
	}
	return gopts, nil
}

// limitsOf are the gateway's limits of a config: none without a rateLimit block.
func limitsOf(cfg *config.Config, limiter gateway.Limiter) gateway.Limits {
	rl := cfg.RateLimit
	if rl == nil {
		return gateway.Limits{}
	}
	return gateway.Limits{
		Limiter: limiter, RequestsPerSecond: rl.RequestsPerSecond, Burst: rl.Burst, ConcurrentCalls: rl.ConcurrentCalls,
		CallTTL: cfg.MaxRequestTimeout + 30*time.Second,
	}
}

func (g *gatewayProcess) onClose(f func()) { g.closers = append(g.closers, f) }

// watched are the files whose change reloads the gateway: the config file, and its lock file.
func (g *gatewayProcess) watched() []string {
	files := []string{g.path}
	if lf := g.lockFile.Load(); lf != nil && *lf != "" {
		files = append(files, *lf)
	}
	return files
}

// close releases what build acquired, the last first.
func (g *gatewayProcess) close() {
	for i := len(g.closers) - 1; i >= 0; i-- {
		g.closers[i]()
	}
	g.closers = nil
}

// run serves until ctx ends or the MCP server fails, then shuts down in order: the servers first (calls in flight
// get the grace period, and still need the router), then the router (stdio children are stopped per spec before
// the process exits). Every goroutine it starts has ended when it returns.
func (g *gatewayProcess) run(ctx context.Context) error {
	routerCtx, stopRouter := context.WithCancel(context.WithoutCancel(ctx))
	var router errgroup.Group
	router.Go(func() error { g.router.Run(routerCtx); return nil })

	servers, sctx := errgroup.WithContext(ctx)
	sctx, stopServers := context.WithCancel(sctx)
	servers.Go(func() error {
		defer stopServers() // the gateway lives as long as its MCP server
		return g.srv.Serve(sctx, g.ln, g.grace)
	})
	servers.Go(func() error { watchConfig(sctx, g.watched, g.reload, g.log); return nil })
	if g.admin != nil {
		servers.Go(func() error { serveAdmin(sctx, g.admin, g.adminLn, g.grace, g.log); return nil })
	}
	// GOMAXPROCS is logged so that an operator can see what the chart's goMaxProcs (or the CPU limit) came to.
	g.log.Info("switchboard listening", "version", buildVersion(), "mcp", "http://"+g.ln.Addr().String()+"/mcp", "upstreams", len(g.router.Status()),
		"gomaxprocs", runtime.GOMAXPROCS(0))
	err := servers.Wait()
	stopRouter()
	_ = router.Wait()
	return err
}

// serveAdmin serves the admin API until ctx ends, then lets its requests (a reload, a restart) finish within
// grace. A failure of the admin API is logged and does not stop the gateway.
func serveAdmin(ctx context.Context, srv *http.Server, ln net.Listener, grace time.Duration, log *slog.Logger) {
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		log.Error("admin API stopped", "err", err)
		return
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		_ = srv.Close()
	}
	<-errc
}
