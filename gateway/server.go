// Package gateway is Switchboard's client-facing side: the streamable HTTP front end on /mcp, sessions as the
// client sees them, SSE streams, and the health endpoints. It turns HTTP into routing calls and routing's
// Streams back into HTTP responses; everything MCP-specific beyond the transport lives in routing.
package gateway

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/switchboard-mcp/switchboard/routing"
)

// Options configure the front end.
type Options struct {
	// AllowOrigin decides whether a request's Origin header is acceptable (it is called only when one is
	// present); nil accepts any. The origins it accepts are also granted CORS on the MCP endpoints (nil grants
	// none). Configuration owns the policy.
	AllowOrigin func(origin string) bool
	// AllowHost decides whether a request's Host header is acceptable; nil accepts any.
	AllowHost func(host string) bool
	// MaxBodyBytes limits a POST body; zero means 4 MiB.
	MaxBodyBytes int64
	// KeepAlive is the interval of SSE comment keep-alives on long-lived streams; zero means 25s.
	KeepAlive time.Duration
	// WriteTimeout bounds writing one SSE event to a client; a client that stalls longer loses the stream.
	// Zero means 30s.
	WriteTimeout time.Duration
	// InitWait bounds how long an initialize waits for the upstreams' first connection, so the first catalog a
	// client sees is complete. Zero means 10s.
	InitWait time.Duration
	// Logger receives the front end's logs; nil means slog.Default().
	Logger *slog.Logger
	// Tracer, Meter and Propagator record traces and metrics; nil means none.
	Tracer     trace.TracerProvider
	Meter      metric.MeterProvider
	Propagator propagation.TextMapPropagator
	// Metrics, when set, is served at /metrics (the Prometheus exposition).
	Metrics http.Handler
	// Auth, when set, authenticates every request to the MCP endpoints (design §8); Identify then turns the
	// request's context into the caller's identity and policy.
	Auth     Authenticator
	Identify func(context.Context) Identity
	// AuthFor, when set, returns the authenticator of an endpoint's own resource (/mcp/<name>: its audience,
	// RFC 9728 metadata and challenges), or nil for a name no endpoint could have; unset, endpoints share Auth.
	AuthFor func(endpoint string) Authenticator
	// Limits, when Limits.Limiter is set, bound each caller's requests.
	Limits Limits
	// Events, when set, is the shared SSE event log: streams resume, and standalone streams are read, on any
	// replica (design §7).
	Events EventLog
	// Ready, when set, is an extra readiness check for /readyz (the shared-state store's ping).
	Ready func(context.Context) error
	// Key, when set, returns the caller's identity key alone (checked on every request); it must agree with
	// Identify's Key.
	Key func(context.Context) string
	// Pages, when set, serves the gateway's pages for people (sign-in, connect links, /connections) at each of
	// PagePaths (chi patterns, such as "/connect/*"). They carry their own authentication (a browser sign-in),
	// not the MCP endpoints' bearer tokens.
	Pages     http.Handler
	PagePaths []string
	// Grants, when set, lets the admin API revoke per-user upstream grants.
	Grants GrantRevoker
	// ListCacheTTL is the ttlMs of a 2026-07-28 list's answer (tools, prompts, resources, templates), capped by
	// the upstreams' own lists' ttlMs; zero: immediately stale.
	ListCacheTTL time.Duration
	// ServerCard, when set, serves the server cards (experimental, SEP-2127) at /.well-known/mcp/server-card and
	// /.well-known/mcp/server-card/<endpoint> (servercard.go).
	ServerCard *ServerCard
}

// Server is the gateway's front end: it composes the components below, each of its own type holding only what it
// needs, and mounts their routes. The front ends (streamable HTTP, HTTP+SSE, stdio) reach routing through the
// seam's interfaces (seam.go); the rest of its concerns are the guards, the limits, the streams, the admin API and
// the server cards.
type Server struct {
	log     *slog.Logger
	handler http.Handler

	limits *callerLimits // limits.go
	hub    *streamHub    // streamlog.go, sharedstreams.go: SSE streams, resumption, shutdown's drain
	mcp    *streamable   // streamable.go: POST/GET/DELETE /mcp
	legacy *legacyFront  // legacy.go: GET /sse, POST /message
	stdio  stdioFront    // stdio.go
	admin  *adminAPI     // admin.go: the admin API, /healthz and /readyz
	cards  *serverCards  // servercard.go
	guards *guards       // origin.go: Host, Origin, CORS, authentication, endpoints
}

// New returns a front end for the router.
func New(r *routing.Router, opts Options) *Server {
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = 4 << 20
	}
	if opts.KeepAlive <= 0 {
		opts.KeepAlive = 25 * time.Second
	}
	if opts.WriteTimeout <= 0 {
		opts.WriteTimeout = 30 * time.Second
	}
	if opts.InitWait <= 0 {
		opts.InitWait = 10 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	s := &Server{log: opts.Logger}
	inst, err := newInstruments(opts)
	if err != nil {
		// The instruments are still usable (they record nothing); a bad instrument must not stop the gateway.
		s.log.Error("metrics unavailable", "err", err)
	}
	who := callers{identifyFn: opts.Identify, keyFn: opts.Key}
	obs := &observer{inst: inst, offer: r, sessions: r} // observe.go
	s.limits = &callerLimits{who: who, log: opts.Logger}
	s.limits.set(opts.Limits)
	s.hub = &streamHub{events: opts.Events, peers: r, keepAlive: opts.KeepAlive, writeTimeout: opts.WriteTimeout,
		log: opts.Logger, draining: make(chan struct{})}
	open := &opener{sessions: r, offer: r, who: who, initWait: opts.InitWait, log: opts.Logger}
	// The 2026-07-28 requests of every front end (modern.go).
	modern := &modernFront{sessions: r, offer: r, peers: r, who: who, limits: s.limits, hub: s.hub,
		initWait: opts.InitWait, keepAlive: opts.KeepAlive, listTTL: opts.ListCacheTTL, authOn: opts.Auth != nil,
		log: opts.Logger, peerClient: &http.Client{}}
	s.mcp = &streamable{sessions: r, open: open, who: who, limits: s.limits, hub: s.hub, obs: obs, modern: modern,
		maxBody: opts.MaxBodyBytes, caller: who.policy, restored: func(sess *routing.Session) { s.hub.shareSession(sess) }}
	s.legacy = &legacyFront{sessions: r, open: open, who: who, limits: s.limits, hub: s.hub, maxBody: opts.MaxBodyBytes}
	s.stdio = stdioFront{sessions: r, open: open, modern: modern, obs: obs, maxBody: opts.MaxBodyBytes, log: opts.Logger}
	s.admin = &adminAPI{op: r, grants: opts.Grants, ready: opts.Ready, log: opts.Logger}
	if opts.ServerCard != nil {
		s.cards = &serverCards{card: opts.ServerCard, offer: r, sessions: r, who: who, limits: s.limits,
			authOn: opts.Auth != nil, initWait: opts.InitWait, log: opts.Logger}
	}
	s.guards = &guards{allowOrigin: opts.AllowOrigin, allowHost: opts.AllowHost, auth: opts.Auth, authFor: opts.AuthFor,
		authFail: inst.authFail, offer: r}
	s.handler = s.routes(opts)
	return s
}

// routes mounts the components' routes.
func (s *Server) routes(opts Options) http.Handler {
	mux := chi.NewRouter()
	g := s.guards
	// Every endpoint checks Host (DNS rebinding could otherwise read /readyz or /metrics of a loopback
	// gateway); the MCP endpoints also check Origin, inside checkOrigin.
	mux.Use(g.checkHost)
	mux.Get("/healthz", s.admin.healthz)
	mux.Get("/readyz", s.admin.readyz)
	if opts.Metrics != nil {
		mux.Method(http.MethodGet, "/metrics", opts.Metrics)
	}
	if opts.Pages != nil {
		for _, p := range opts.PagePaths {
			mux.Handle(p, opts.Pages)
		}
	}
	g.routeMetadata(mux)
	if s.cards != nil {
		s.cards.route(mux)
	}
	mux.Group(func(mcp chi.Router) {
		// Preflights carry no credentials: they are answered before the guard, for allowed origins only.
		mcp.Use(g.checkOrigin, g.cors)
		for _, path := range []string{"/mcp", "/sse", "/message", "/messages", "/mcp/{endpoint}", "/mcp/{endpoint}/sse", "/mcp/{endpoint}/message", "/mcp/{endpoint}/messages"} {
			mcp.Options(path, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
		}
	})
	mux.Group(func(mcp chi.Router) {
		mcp.Use(g.checkOrigin, g.cors, g.guard)
		mcp.Post("/mcp", s.mcp.post)
		mcp.Get("/mcp", s.mcp.get)
		mcp.Delete("/mcp", s.mcp.delete)
		mcp.Get("/sse", s.legacy.get)
		mcp.Post("/message", s.legacy.post)
		mcp.Post("/messages", s.legacy.post)
	})
	mux.Group(func(mcp chi.Router) {
		mcp.Use(g.checkOrigin, g.cors)
		mcp.Route("/mcp/{endpoint}", func(ep chi.Router) {
			ep.Use(g.guardEndpoint, g.atEndpoint) // authenticated first: an endpoint's name is not public
			ep.Post("/", s.mcp.post)
			ep.Get("/", s.mcp.get)
			ep.Delete("/", s.mcp.delete)
			ep.Get("/sse", s.legacy.get)
			ep.Post("/message", s.legacy.post)
			ep.Post("/messages", s.legacy.post)
		})
	})
	return mux
}

// Handler returns the HTTP handler of every endpoint.
func (s *Server) Handler() http.Handler { return s.handler }

// Serve serves HTTP on ln until ctx ends, then shuts down gracefully: it stops accepting, ends the long-lived
// streams with a reconnection hint (a client reconnects, to another replica if there is one), lets requests in
// flight finish for up to grace, then closes what is left.
func (s *Server) Serve(ctx context.Context, ln net.Listener, grace time.Duration) error {
	srv := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
	srv.RegisterOnShutdown(s.hub.drain)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	s.log.Info("shutting down: finishing requests in flight", "grace", grace)
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	err := srv.Shutdown(sctx)
	if errors.Is(err, context.DeadlineExceeded) {
		s.log.Warn("grace period over: closing the connections left")
		err = srv.Close()
	}
	<-errc
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// SetLimits replaces the limits (a config reload): requests admitted from now on count against the new ones.
// Calls in flight keep the leases they hold.
func (s *Server) SetLimits(l Limits) { s.limits.set(l) }

// AdminHandler serves the admin API: upstream health and counters, restart, drain, and reload. It has no
// authentication of its own, so it must only be served on a separate loopback listener (cmd refuses anything
// else), and it refuses what a browser page could send there (adminGuard).
func (s *Server) AdminHandler(reload Reloader) http.Handler { return s.admin.handler(reload) }
