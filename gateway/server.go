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
	"path"
	"sync"
	"sync/atomic"
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

// Server is the HTTP front end.
type Server struct {
	r       *routing.Router
	opts    Options
	log     *slog.Logger
	handler http.Handler
	streams streamsRegistry
	legacy  legacyConns
	fwd     forwarders
	// limits are Options.Limits, which a reload may replace (SetLimits).
	limits atomic.Pointer[Limits]
	// logDownUntil (unix ns) skips event-log appends for a while after one failed.
	logDownUntil atomic.Int64
	inst         instruments
	// replicas sends stateless retries to the replica that holds their call (replica.go); no overall timeout,
	// because the answer may be a stream.
	replicas *http.Client

	draining  chan struct{} // closed when shutdown begins
	drainOnce sync.Once
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
	s := &Server{r: r, opts: opts, log: opts.Logger, draining: make(chan struct{}), replicas: &http.Client{}}
	s.limits.Store(&opts.Limits)
	var err error
	if s.inst, err = newInstruments(opts); err != nil {
		// The instruments are still usable (they record nothing); a bad instrument must not stop the gateway.
		s.log.Error("metrics unavailable", "err", err)
	}
	mux := chi.NewRouter()
	// Every endpoint checks Host (DNS rebinding could otherwise read /readyz or /metrics of a loopback
	// gateway); the MCP endpoints also check Origin, inside checkOrigin.
	mux.Use(s.checkHost)
	mux.Get("/healthz", s.healthz)
	mux.Get("/readyz", s.readyz)
	if opts.Metrics != nil {
		mux.Method(http.MethodGet, "/metrics", opts.Metrics)
	}
	if opts.Pages != nil {
		for _, p := range opts.PagePaths {
			mux.Handle(p, opts.Pages)
		}
	}
	if opts.Auth != nil {
		// RFC 9728: the metadata of the resource, at the well-known path suffixed with the resource's own path, and
		// nowhere else (a document must name the resource its URL was built from).
		md := opts.Auth.MetadataHandler()
		mux.Method(http.MethodGet, opts.Auth.MetadataPath(), md)
		mux.Method(http.MethodHead, opts.Auth.MetadataPath(), md)
		mux.Method(http.MethodOptions, opts.Auth.MetadataPath(), md)
		// Each endpoint's metadata, at the well-known path suffixed with the endpoint's own resource path (the
		// path's last segment is the name). Served for every name an endpoint could have, configured or not,
		// naming the resource its path names: as /mcp/<name> challenges before it says whether the endpoint
		// exists, its metadata must not say it either (the challenge's resource_metadata points here).
		if opts.AuthFor != nil {
			emd := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if a := opts.AuthFor(path.Base(r.URL.Path)); a != nil && a.MetadataPath() == r.URL.Path {
					a.MetadataHandler().ServeHTTP(w, r)
					return
				}
				http.NotFound(w, r)
			})
			for _, m := range []string{http.MethodGet, http.MethodHead, http.MethodOptions} {
				mux.Method(m, "/.well-known/oauth-protected-resource/*", emd)
			}
		}
	}
	s.routeServerCards(mux)
	mux.Group(func(mcp chi.Router) {
		// Preflights carry no credentials: they are answered before the guard, for allowed origins only.
		mcp.Use(s.checkOrigin, s.cors)
		for _, path := range []string{"/mcp", "/sse", "/message", "/messages", "/mcp/{endpoint}", "/mcp/{endpoint}/sse", "/mcp/{endpoint}/message", "/mcp/{endpoint}/messages"} {
			mcp.Options(path, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
		}
	})
	mux.Group(func(mcp chi.Router) {
		mcp.Use(s.checkOrigin, s.cors, s.guard)
		mcp.Post("/mcp", s.post)
		mcp.Get("/mcp", s.get)
		mcp.Delete("/mcp", s.delete)
		mcp.Get("/sse", s.legacyGet)
		mcp.Post("/message", s.legacyPost)
		mcp.Post("/messages", s.legacyPost)
	})
	mux.Group(func(mcp chi.Router) {
		mcp.Use(s.checkOrigin, s.cors)
		mcp.Route("/mcp/{endpoint}", func(ep chi.Router) {
			ep.Use(s.guardEndpoint, s.atEndpoint) // authenticated first: an endpoint's name is not public
			ep.Post("/", s.post)
			ep.Get("/", s.get)
			ep.Delete("/", s.delete)
			ep.Get("/sse", s.legacyGet)
			ep.Post("/message", s.legacyPost)
			ep.Post("/messages", s.legacyPost)
		})
	})
	s.handler = mux
	return s
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
	srv.RegisterOnShutdown(s.drain)
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

// drain ends the standalone and legacy streams, which would otherwise hold a shutdown until its deadline.
func (s *Server) drain() { s.drainOnce.Do(func() { close(s.draining) }) }
