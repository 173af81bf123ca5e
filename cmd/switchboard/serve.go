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

// serveFlags are serve's command line.
type serveFlags struct {
	path, listen, adminListen string
	insecure, allowEmpty      bool
	grace                     time.Duration
}

// serve runs the gateway: build constructs it, run serves until a signal. A SIGINT or SIGTERM during build stops
// the gateway before it serves, as the signal context spans both.
func serve(args []string, stdout, stderr io.Writer) int {
	f, code := parseServeFlags(args, stderr)
	if code != exitOK {
		return code
	}
	cfg, code := loadConfig(f.path, stderr)
	if cfg == nil {
		return code
	}
	if f.listen != "" {
		cfg.Listen = f.listen
	}
	if f.adminListen != "" && !config.IsLoopback(f.adminListen) {
		fmt.Fprintf(stderr, "switchboard: --admin-listen %s is not a loopback address: the admin API has no authentication of its own\n", f.adminListen)
		return exitUsage
	}
	log, level := newLogger(cfg.Log, stderr)
	for _, w := range cfg.Warnings {
		log.Warn("config", "problem", w.String())
	}
	if cfg.NoAuthOnNetwork(cfg.Listen) {
		if !f.insecure {
			fmt.Fprintf(stderr, "switchboard: refusing to listen on %s without authentication: add an auth: block (docs/auth.md), listen on a loopback address, or pass --insecure-no-auth if something in front of the gateway authenticates\n", cfg.Listen)
			return exitFailure
		}
		log.Warn("listening without authentication on a non-loopback address (--insecure-no-auth): anyone who reaches it can use every tool", "listen", cfg.Listen)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	g, err := build(ctx, cfg, f, log, level)
	if err != nil {
		logStartError(log, err)
		return exitFailure
	}
	defer g.close()
	if err := g.run(ctx); err != nil && !errors.Is(err, context.Canceled) {
		log.Error("server stopped", "err", err)
		return exitFailure
	}
	log.Info("switchboard stopped")
	return exitOK
}

func parseServeFlags(args []string, stderr io.Writer) (serveFlags, int) {
	var f serveFlags
	fl := flag.NewFlagSet("serve", flag.ContinueOnError)
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
	ln     net.Listener
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
// authentication, the gateway server and the reloader. ctx bounds what build waits for (the issuer's discovery);
// nothing it starts outlives build, so on error everything acquired is already released.
func build(ctx context.Context, cfg *config.Config, f serveFlags, log *slog.Logger, level *slog.LevelVar) (_ *gatewayProcess, err error) {
	g := &gatewayProcess{path: f.path, log: log, grace: f.grace, policies: &policies{}}
	defer func() {
		if err != nil {
			g.close()
		}
	}()
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
	users, err := newUserOAuth(ctx, cfg, store, log, g.onClose)
	if err != nil {
		return nil, &startError{what: "cannot start per-user upstream OAuth", err: err}
	}
	if g.router, err = newRouter(cfg, log, tel, latest, store, users); err != nil {
		return nil, &startError{what: "cannot start", err: err}
	}
	if g.ln, err = net.Listen("tcp", cfg.Listen); err != nil {
		return nil, &startError{what: "cannot listen", attrs: []any{"addr", cfg.Listen}, err: err}
	}
	g.onClose(func() { _ = g.ln.Close() }) // the server closes it too; this covers a failure before it runs
	gopts, err := g.gatewayOptions(ctx, cfg, tel, store, latest)
	if err != nil {
		return nil, err
	}
	if users != nil {
		if gopts.Pages, gopts.PagePaths, err = users.pages(g.router); err != nil {
			return nil, &startError{what: "cannot start per-user upstream OAuth", err: err}
		}
		gopts.Grants = users
	}
	g.srv = gateway.New(g.router, gopts)
	g.lockFile.Store(&cfg.Pinning.LockFile)
	g.reload = reloader(f.path, cfg, g.router, latest, users, g.policies, log, f.allowEmpty, pinStoreOf(store), func(cfg *config.Config) {
		level.Set(cfg.Log.Level)
		g.srv.SetLimits(limitsOf(cfg, g.limiter))
		g.lockFile.Store(&cfg.Pinning.LockFile)
	})
	if f.adminListen != "" {
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
func (g *gatewayProcess) gatewayOptions(ctx context.Context, cfg *config.Config, tel *telemetry.Providers, store *state.Redis, latest *principals) (gateway.Options, error) {
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
	if err := wireAuth(ctx, cfg, &gopts, latest, g.policies, g.log); err != nil {
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
