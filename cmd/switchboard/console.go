package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/switchboard-mcp/switchboard/auth/vault"
	"github.com/switchboard-mcp/switchboard/cmd/internal/config"
	"github.com/switchboard-mcp/switchboard/gateway"
	"github.com/switchboard-mcp/switchboard/gateway/connect"
	"github.com/switchboard-mcp/switchboard/gateway/console"
	"github.com/switchboard-mcp/switchboard/routing"
	"github.com/switchboard-mcp/switchboard/routing/state"
)

// consoleSource is the running gateway as the admin console sees it (console.Source): the router (its status,
// drifts and approvals, and sessions through which the console lists and searches as a client would), the grants
// of per-user OAuth, the audit log read back, the gateway's own metrics, and the config with its reloads. It holds
// no state a page depends on beyond this replica's metrics samples and the last reload it saw.
type consoleSource struct {
	router *routing.Router
	// users is per-user upstream OAuth; nil when no upstream is user-oauth.
	users *userOAuth
	// running is the configuration now, which each applied reload replaces.
	running atomic.Pointer[config.Config]
	// reload reloads the config file; last is the result of the last reload by any path (nil before one).
	reload gateway.Reloader
	last   atomic.Pointer[console.ReloadResult]
	// replicas lists the live replicas from the shared store (nil without one: this replica alone).
	replicas state.ReplicaRegistry
	// metrics are the gateway's own, sampled; audit reads the audit log back (nil: none configured).
	metrics *recentMetrics
	audit   *auditLog
	// defs remembers the definitions the console's sessions listed, by hash, for the pins page's pinned side.
	defs *definitionCache
	log  *slog.Logger
}

var _ console.Source = (*consoleSource)(nil)

// consoleWindow is how far back the overview's rates and latencies look.
const consoleWindow = 5 * time.Minute

// newConsoleSource adapts the gateway to the console. metrics serves the gateway's Prometheus exposition.
func newConsoleSource(cfg *config.Config, r *routing.Router, users *userOAuth, store *state.Redis, metrics http.Handler, log *slog.Logger) *consoleSource {
	s := &consoleSource{
		router: r, users: users, log: log,
		metrics: newRecentMetrics(metrics, consoleWindow, time.Now),
		defs:    newDefinitionCache(),
	}
	if cfg.Console.AuditLog != "" {
		s.audit = &auditLog{path: cfg.Console.AuditLog}
	}
	if store != nil { // a nil *state.Redis in the interface would not be nil
		s.replicas = store
	}
	s.running.Store(cfg)
	return s
}

// recording wraps the gateway's reloader so that the console shows the last reload whatever asked for it (SIGHUP,
// a watched file, the admin API, the console's own button).
func (s *consoleSource) recording(reload gateway.Reloader) gateway.Reloader {
	wrapped := func() (routing.ReloadResult, error) {
		res, err := reload()
		s.last.Store(reloadResultOf(res, err, time.Now()))
		return res, err
	}
	s.reload = wrapped
	return wrapped
}

// applied records the configuration a reload applied (the reloader's apply calls it). Its restart-only keys are
// shown as the file has them; the reload's summary names them.
func (s *consoleSource) applied(cfg *config.Config) { s.running.Store(cfg) }

// reloadResultOf is a reload's outcome as the config page shows it: what changed, or why nothing did, with each
// problem of the file where it is.
func reloadResultOf(res routing.ReloadResult, err error, at time.Time) *console.ReloadResult {
	out := &console.ReloadResult{At: at, OK: err == nil}
	var probs *config.Problems
	switch {
	case errors.As(err, &probs):
		out.Summary = "The file was refused; the running configuration stays."
		for _, p := range probs.List {
			msg := p.Message
			if p.Path != "" {
				msg = p.Path + ": " + msg
			}
			out.Problems = append(out.Problems, console.Problem{File: p.File, Line: p.Line, Col: p.Col, Message: msg})
		}
		return out
	case err != nil:
		out.Summary = "Refused; the running configuration stays: " + err.Error()
		return out
	}
	var parts []string
	for _, c := range []struct {
		n    int
		verb string
	}{{len(res.Added), "added"}, {len(res.Removed), "removed"}, {len(res.Replaced), "replaced"}, {len(res.Kept), "kept"}} {
		if c.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s %s", c.n, plural(c.n, "upstream", "upstreams"), c.verb))
		}
	}
	out.Summary = "Applied: " + cmp.Or(strings.Join(parts, ", "), "no upstream") + "."
	if len(res.RestartNeeded) > 0 {
		out.Summary += " These changes take effect after a restart: " + strings.Join(res.RestartNeeded, ", ") + "."
	}
	for _, p := range res.Problems {
		out.Problems = append(out.Problems, console.Problem{Message: p})
	}
	return out
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// Overview is this replica's view: every upstream's status with its recent metrics, and the sessions.
func (s *consoleSource) Overview(ctx context.Context) (console.Overview, error) {
	recent, window := s.metrics.sample(ctx)
	ov := console.Overview{Replica: s.router.Replica(), Sessions: s.router.SessionCount(), RunningTasks: -1, Window: window}
	if s.replicas != nil {
		live, err := s.replicas.Replicas(ctx)
		if err != nil {
			return console.Overview{}, fmt.Errorf("list replicas: %w", err)
		}
		for _, r := range live {
			ov.Replicas = append(ov.Replicas, console.Replica{ID: r.URL, Address: r.URL, LastSeen: r.Registered})
		}
	}
	for _, st := range s.router.Status() {
		u := console.UpstreamStatus{Name: st.Name, State: st.State, Transport: st.Transport, Restarts: st.Restarts, Error: st.Error}
		if st.Drained {
			u.State = "drained"
		}
		if st.Protocol != "" {
			u.Era = eraOf(st.Protocol) + " " + st.Protocol
		}
		if m, ok := recent[st.Name]; ok {
			u.Calls, u.CallsPerMinute, u.ErrorRate, u.P50, u.P99 = m.calls, m.perMinute, m.errorRate, m.p50, m.p99
		}
		ov.Upstreams = append(ov.Upstreams, u)
	}
	return ov, nil
}

// eraOf names a protocol version's era: the 2026-07-28 protocol and later are modern (stateless), the earlier
// ones legacy.
func eraOf(version string) string {
	if version >= "2026-07-28" {
		return "modern"
	}
	return "legacy"
}

// Connections lists each user-oauth upstream with the people holding a grant for it (at most the store's
// MaxListedGrants each).
func (s *consoleSource) Connections(ctx context.Context) ([]console.UpstreamConnections, error) {
	if s.users == nil {
		return nil, nil
	}
	out := make([]console.UpstreamConnections, 0, len(s.users.names))
	for _, name := range s.users.names {
		grants, err := s.users.store.UpstreamGrants(ctx, name)
		if err != nil {
			return nil, fmt.Errorf("listing the grants of %s: %w", name, err)
		}
		uc := console.UpstreamConnections{Upstream: name}
		for principal := range grants {
			st, err := s.users.tokens.Status(ctx, principal, name)
			if errors.Is(err, connect.ErrNotConnected) {
				continue // revoked meanwhile, or unusable
			}
			if err != nil {
				return nil, fmt.Errorf("reading a grant of %s: %w", name, err)
			}
			_, sub, _ := strings.Cut(principal, "|")
			uc.People = append(uc.People, console.Connection{Subject: principal, Name: cmp.Or(sub, principal),
				Since: st.Obtained, Expires: st.Expiry, Scopes: st.Scopes})
		}
		slices.SortFunc(uc.People, func(a, b console.Connection) int { return cmp.Compare(a.Subject, b.Subject) })
		out = append(out, uc)
	}
	return out, nil
}

// Revoke revokes and forgets one person's grant, as the admin API's revoke does.
func (s *consoleSource) Revoke(ctx context.Context, by, upstream, subject string) error {
	if s.users == nil || !s.users.Known(upstream) {
		return console.ErrNotFound
	}
	if ok, err := s.users.tokens.Connected(ctx, subject, upstream); err == nil && !ok {
		return console.ErrNotFound
	}
	s.log.Info("console: grant revoked", "by", by, "upstream", upstream, "principal", subject)
	return s.users.Revoke(ctx, subject, upstream)
}

// RevokeAll revokes every grant of an upstream.
func (s *consoleSource) RevokeAll(ctx context.Context, by, upstream string) (int, error) {
	if s.users == nil || !s.users.Known(upstream) {
		return 0, console.ErrNotFound
	}
	n, err := s.users.RevokeUpstream(ctx, upstream)
	s.log.Info("console: every grant revoked", "by", by, "upstream", upstream, "revoked", n)
	return n, err
}

// Audit gives the latest audit records of the audit log; none when no log is configured.
func (s *consoleSource) Audit(_ context.Context, f console.AuditFilter) ([]console.AuditEvent, error) {
	if s.audit == nil {
		return nil, nil
	}
	return s.audit.latest(f)
}

// VerifyChain verifies the audit log's chains, or says why it cannot.
func (s *consoleSource) VerifyChain(context.Context) (console.ChainState, error) {
	if s.audit == nil {
		return console.ChainState{Detail: "No audit log is configured: the audit records go to the gateway's log. " +
			"Collect it (log.format: json) in a file and name it in console.auditLog to see them here; " +
			"switchboard audit verify FILE checks a copy.", At: time.Now()}, nil
	}
	return s.audit.verify(time.Now()), nil
}

// Config is the running configuration redacted, and the last reload.
func (s *consoleSource) Config(context.Context) (console.ConfigView, error) {
	cfg := s.running.Load()
	return console.ConfigView{Path: cfg.File, Text: cfg.String(), LastReload: s.last.Load()}, nil
}

// Reload reloads the config file as SIGHUP does.
func (s *consoleSource) Reload(_ context.Context, by string) (console.ReloadResult, error) {
	if s.reload == nil {
		return console.ReloadResult{}, errors.New("this gateway has no config file to reload")
	}
	s.log.Info("console: reload", "by", by)
	_, _ = s.reload() // its outcome, refused or not, is what recording stored
	return *s.last.Load(), nil
}

// consoleSignIn is the browser sign-in that tells the console's admins: per-user OAuth's when it runs (nil mount),
// else one of the console's own when the config has auth.browser with auth.tokenKeys and publicURL; nil for
// none.
func consoleSignIn(ctx context.Context, cfg *config.Config, users *userOAuth, log *slog.Logger, idp *http.Client) (s *browserSignIn, mount bool, err error) {
	if users != nil {
		return users.signIn, false, nil
	}
	a := cfg.Auth
	if a == nil || a.Browser == nil || a.TokenKeys == "" || cfg.PublicURL == "" {
		return nil, false, nil
	}
	keys, err := vault.ParseKeys(a.TokenKeys)
	if err != nil {
		return nil, false, fmt.Errorf("auth.tokenKeys: %w", err)
	}
	defer clear(keys)
	current := strings.TrimSpace(strings.Split(a.TokenKeys, ":")[0])
	s, err = newBrowserSignIn(ctx, cfg, keys[current], log, idp)
	return s, err == nil, err
}

// consolePages mounts the console beside the pages already there (pages at paths: per-user OAuth's), with the
// sign-in's routes when mount says so: for the admins of the browser sign-in (signIn), or for anyone on a
// loopback-only gateway without auth. It refuses a console that nobody could use.
func consolePages(cfg *config.Config, src *consoleSource, signIn *browserSignIn, mount bool, pages http.Handler, paths []string, log *slog.Logger) (http.Handler, []string, error) {
	opts := console.Options{Source: src, Logger: log, SecureCookie: strings.HasPrefix(cfg.PublicURL, "https://")}
	wrap := func(h http.Handler) http.Handler { return h }
	switch {
	case signIn != nil:
		opts.CSRF = csrf{signIn}
		opts.Admin = func(r *http.Request) (string, bool) {
			usr, ok := signIn.isAdmin(r)
			return cmp.Or(usr.Name, usr.Email, usr.Subject), ok
		}
		wrap = signIn.Require
	case cfg.Auth == nil && config.IsLoopback(cfg.Listen):
		opts.Admin = func(*http.Request) (string, bool) { return "local admin", true }
	case cfg.Auth == nil:
		return nil, nil, fmt.Errorf("console.enabled on %s, which is not loopback, without auth: nobody could be told an admin; add auth with auth.browser (docs/console.md), or listen on a loopback address", cfg.Listen)
	default:
		return nil, nil, errors.New("console.enabled with auth needs the browser sign-in to know its admins: auth.browser (with admins), auth.tokenKeys and publicURL (docs/console.md)")
	}
	c, err := console.New(opts)
	if err != nil {
		return nil, nil, err
	}
	mux := chi.NewRouter()
	paths = slices.Clone(paths)
	for _, p := range paths {
		mux.Handle(p, pages)
	}
	if mount {
		paths = append(paths, signIn.routes(mux)...)
	}
	mux.Handle("/console", wrap(c))
	mux.Handle("/console/*", wrap(c))
	return mux, append(paths, "/console", "/console/*"), nil
}
