// Package routing is the switchboard between client sessions and upstream sessions: the merged, namespaced,
// paginated catalog; the call table that rewrites ids and progress tokens and carries cancellations; the relay of
// server→client requests; and the fan-in of upstream notifications (design §2–5). It knows nothing of HTTP:
// front ends hand it parsed messages and drain the Streams it fills.
package routing

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/switchboard-mcp/switchboard/routing/codemode"
	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
)

// Options tune the router.
type Options struct {
	// PageSize is the number of items on one page of a list; zero means 100.
	PageSize int
	// Shape is the admin's overrides and endpoints at start (SetShape changes it later).
	Shape Shape
	// CursorSecret signs pagination cursors; it must be shared by all replicas. Empty means a random key.
	CursorSecret []byte
	// RequestTimeout bounds a forwarded request, reset on progress; zero means 60s.
	RequestTimeout time.Duration
	// MaxRequestTimeout is the hard limit even with progress; zero means 10m.
	MaxRequestTimeout time.Duration
	// SessionIdleTimeout ends client sessions unused this long; zero means 30m.
	SessionIdleTimeout time.Duration
	// Version is the gateway's own version, for serverInfo and clientInfo.
	Version string
	// Logger receives the router's logs; nil means slog.Default().
	Logger *slog.Logger
	// Replica is this replica's MCP URL as the other replicas reach it ("" for none). It is written, sealed, into
	// the requestState of a parked call (mrtr.go), so that a retry landing elsewhere can be sent here.
	Replica string
	// MaxToolNameLength bounds the exposed names of tools and prompts; longer ones are shortened deterministically
	// (names.go). Zero means defaultMaxToolNameLength.
	MaxToolNameLength int
	// Hosts are the client hosts whose name limits RejectedNames checks the exposed catalog against.
	Hosts []HostLimit
	// ResourceNamespacing says when resource URIs carry their upstream's namespace ("<upstream>+<uri>",
	// resources.go), as the config file names it: auto (also ""), always or never; New refuses anything else.
	ResourceNamespacing string
	// Store and Bus, when set, share sessions across replicas (design §7); nil means this replica alone.
	Store sessionStore
	Bus   replicaBus
	// Replicas, when set, is where replicas register their Replica address; a stateless retry is forwarded only
	// to a registered one (StateOwner). Nil turns forwarding off.
	Replicas replicaRegistry
	// Audit, when set, receives one event per forwarded call (design §10): who called what, where, and how it
	// ended. It runs on the call's completion path and must not block.
	Audit func(CallEvent)
	// Pinning, when set, pins tool and prompt definitions (pins.go); nil pins nothing. AuditDefinition, when
	// set, receives the pinning's audit events (drift, approvals, invisible characters).
	Pinning         *Pinning
	AuditDefinition func(DefinitionEvent)
	// Embedder, when set, makes tool search hybrid (embed.go): BM25 fused with vector similarity. SearchTimeout
	// bounds the wait for a query's vector (zero: 2s); past it, or on any failure, search uses BM25 alone.
	Embedder      Embedder
	SearchTimeout time.Duration
	// Connector holds the per-user grants of upstreams configured with UserGrants (connect.go); it is required
	// when one is.
	Connector Connector
	// Tasks configures the tasks the gateway makes for tools whose upstreams take none (taskhost.go).
	Tasks TaskOptions
	// Scripts runs the scripts of endpoints in code mode (codemode.go); nil: an in-process engine, made on first
	// use, bounded in everything but memory. The router closes it when Run returns.
	Scripts *codemode.Engine
	// Tracer, Meter and Propagator record traces and metrics (design §10); nil means none.
	Tracer     trace.TracerProvider
	Meter      metric.MeterProvider
	Propagator propagation.TextMapPropagator
}

// defaultMaxToolNameLength fits Claude Code, which names a tool mcp__<server>__<tool> and whose API rejects names
// over 64 characters: 64 - len("mcp__switchboard__") = 46.
const defaultMaxToolNameLength = 46

// HostLimit is a client host's rule for tool names: it shows a tool as Prefix+name and rejects names longer than
// MaxLength.
type HostLimit struct {
	Name      string // for messages, e.g. "Claude Code"
	Prefix    string // e.g. "mcp__switchboard__"
	MaxLength int
}

// RejectedName is an exposed name a stated host would reject.
type RejectedName struct {
	Host   string // HostLimit.Name
	Name   string // the exposed name
	Length int    // len(Prefix + Name)
	Limit  int    // HostLimit.MaxLength
}

// CallEvent describes one forwarded call, for the audit log. It never holds arguments.
type CallEvent struct {
	Session   string // the session's short log id
	Principal string // the session's principal key ("" without auth)
	Endpoint  string // the endpoint the session is on ("" for the whole catalog)
	Upstream  string
	Method    string
	Tool      string // the exposed tool name, for tools/call
	Outcome   string // ok, error, timeout, cancelled, failed, denied, refused, not_connected
	// Reason is the rule that refused a request the gateway answered itself (denied or refused): "policy",
	// "outside the endpoint", "preset argument sent", `duplicate member "arguments"`...; "" otherwise.
	Reason   string
	Code     int // the JSON-RPC error code, when the call ended in one
	Duration time.Duration
	// DefinitionHash is the pin hash ("sha256:…") of the called tool's or prompt's definition as the catalog has
	// it; "" when unknown.
	DefinitionHash string
	// Script is the id of the code-mode run whose script made the call (codemode.go); "" for a client's own.
	Script string
}

// Router routes between client sessions and upstreams. Create it with New and start it with Run.
type Router struct {
	opts Options
	log  *slog.Logger
	set  atomic.Pointer[upstreamSet] // replaced whole on reload
	// inflight counts each upstream's requests in flight, for its metric.
	inflight inflightCounts
	cat      atomic.Pointer[catalog]
	cursors  cursorCodec
	// ctx lives from New until Run returns; sessions and links derive from it.
	ctx  context.Context
	stop context.CancelFunc

	buildMu   sync.Mutex // serialises catalog rebuilds
	profiles  profiles   // catalogs of the capability profiles in use (profile.go)
	persons   persons    // people's own lists of per-user upstreams (persons.go)
	buildReq  atomic.Uint64
	buildSeen uint64     // the highest rebuild request the current catalog covers; under buildMu
	reloadMu  sync.Mutex // serialises Reconfigure
	elicits   elicitations
	inst      instruments
	tasks     taskHost       // the gateway-made tasks this replica runs (taskhost.go)
	closing   sync.WaitGroup // pooled sessions evicted and being closed; Run waits for them
	shape     atomic.Pointer[Shape]
	embed     embeddings // tool vectors for hybrid search (embed.go)
	code      codeHost   // code mode's meta-tools and runs (codemode.go)

	// The components: each owns one feature, sees the router through a narrow interface, and runs from the one
	// list in Run. Embedded ones carry the admin methods gateway calls.
	pinBook    // pins of tool and prompt definitions (pinbook.go)
	replicas   // sessions shared with the other replicas (replicas.go)
	grants     // per-user grants: retries waiting for a person to connect (connect.go)
	modernPool // sessions of 2026-07-28 clients (pool.go)
	parkTable  // upstream calls waiting for a 2026-07-28 client's input, and their sealed requestState (mrtr.go)

	mu       sync.Mutex
	running  bool // Run has started the upstreams; reloads start new ones at once
	sessions map[string]*Session
	ready    bool
	readyCh  chan struct{}
	runSince time.Time // when Run started the upstreams: the start-up window counts from it (startwait.go)

	// starting: Run has started the upstreams and some has not had its first try yet. Meanwhile a rebuild that
	// no session would hear of waits: the lists are merged once, when the last first try ends (readyChanged),
	// or sooner for a client that reads the catalog (catchUp).
	starting atomic.Bool
	merges   atomic.Int64 // catalog merges so far (tests count them)
}

// New returns a router for the given upstreams, in the order their items appear in the catalog.
func New(opts Options, ups []UpstreamConfig) (*Router, error) {
	if _, err := parseNamespacing(opts.ResourceNamespacing); err != nil {
		return nil, err
	}
	if opts.PageSize <= 0 {
		opts.PageSize = 100
	}
	if opts.RequestTimeout <= 0 {
		opts.RequestTimeout = 60 * time.Second
	}
	if opts.MaxRequestTimeout <= 0 {
		opts.MaxRequestTimeout = 10 * time.Minute
	}
	if opts.MaxRequestTimeout < opts.RequestTimeout {
		opts.MaxRequestTimeout = opts.RequestTimeout
	}
	if opts.SessionIdleTimeout <= 0 {
		opts.SessionIdleTimeout = 30 * time.Minute
	}
	if opts.Version == "" {
		opts.Version = "dev"
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	key := opts.CursorSecret
	if len(key) == 0 {
		key = make([]byte, 32)
		rand.Read(key)
	}
	r := &Router{
		opts: opts, log: opts.Logger,
		cursors:  cursorCodec{key: key},
		sessions: map[string]*Session{}, readyCh: make(chan struct{}),
	}
	r.ctx, r.stop = context.WithCancel(context.Background())
	r.tasks = taskHost{core: r, opts: opts.Tasks, bus: opts.Bus, registry: opts.Replicas, parks: &r.parkTable,
		inst: &r.inst, log: r.log, ctx: r.ctx, self: opts.Replica}
	if r.tasks.self == "" {
		r.tasks.self = "replica-" + newTaskID()[:16] // a name for the bus: tasks/update and tasks/cancel find it
	}
	r.code = codeHost{engine: opts.Scripts}
	r.embed = embeddings{embedder: opts.Embedder, timeout: opts.SearchTimeout, cat: &r.cat, kick: make(chan struct{}, 1)}
	r.parkTable = parkTable{stateAEAD: newStateAEAD(key), ownState: statePrefix + stateKeyID(key) + ".",
		self: opts.Replica, registry: opts.Replicas, log: r.log, streams: r}
	r.profiles.core = r
	r.grants = grants{core: r, bus: opts.Bus, log: r.log, budget: opts.nameBudget()}
	r.modernPool = modernPool{parks: &r.parkTable, idle: opts.SessionIdleTimeout, gone: &r.closing,
		spawn: func(p SessionParams, newEra func(*Session) era) *Session {
			return newSession(r, p, newSessionID(), newEra)
		}}
	r.replicas = replicas{core: r, self: opts.Replica, store: opts.Store, bus: opts.Bus, registry: opts.Replicas,
		log: r.log, lateKick: make(chan struct{}, 1)}
	set, err := r.newSet(ups, nil)
	if err != nil {
		return nil, err
	}
	r.set.Store(set)
	if err := CheckShape(opts.Shape); err != nil {
		return nil, err
	}
	r.shape.Store(&opts.Shape)
	r.pinBook = pinBook{core: r, log: r.log, audit: opts.AuditDefinition, bus: opts.Bus}
	if opts.Pinning != nil {
		r.pinBook.policy.Store(opts.Pinning)
	}
	r.cat.Store(buildCatalog(nil, nil, "", &opts.Shape, nil))
	if r.inst, err = newInstruments(r, opts); err != nil {
		return nil, fmt.Errorf("routing instruments: %w", err)
	}
	r.pinBook.changes = r.inst.definitionChanges
	return r, nil
}

// upstreams returns the configured upstreams in catalog order.
func (r *Router) upstreams() []*upstreamServer { return r.set.Load().list }

// upstream returns the upstream with the name, or nil.
func (r *Router) upstream(name string) *upstreamServer { return r.set.Load().byName[name] }

// NewStream returns an outbound stream (see newStream) whose dropped notifications are counted in metrics.
func (r *Router) NewStream(finals, maxQueued int) *Stream {
	st := newStream(finals, maxQueued)
	st.onDrop = func() { r.inst.dropped.Add(context.Background(), 1) }
	return st
}

// Run connects the upstreams and serves until ctx ends; then it closes every session and upstream and returns.
func (r *Router) Run(ctx context.Context) {
	defer r.stop()
	stop := context.AfterFunc(ctx, r.stop)
	defer stop()
	ctx = r.ctx
	r.mu.Lock()
	r.running, r.runSince = true, time.Now()
	r.starting.Store(true)
	for _, up := range r.upstreams() {
		up.start(ctx)
	}
	r.mu.Unlock()
	r.readyChanged()
	var components sync.WaitGroup // they end with ctx
	defer components.Wait()
	for _, c := range []component{&r.pinBook, &r.embed, &r.grants, &r.tasks, &r.replicas, &r.code} {
		components.Go(func() { c.run(ctx) })
	}
	t := time.NewTicker(r.janitorInterval())
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			r.tasks.wg.Wait() // each records that its replica stopped, through its session
			for _, s := range r.allSessions() {
				s.Close()
			}
			for _, s := range r.pooledSessions() {
				s.Close()
			}
			r.closing.Wait()
			for _, up := range r.upstreams() {
				up.stopAndWait()
			}
			return
		case <-t.C:
			r.expireSessions()
		}
	}
}

// component is a feature of the router with goroutines of its own: run owns them, and returns once ctx ended
// and they did.
type component interface {
	run(ctx context.Context)
}

// Ready reports whether every upstream has been tried once (connected and listed, or failed), so the catalog a
// client sees right after start is complete. A failed upstream does not hold readiness back: it is reported in
// Status and retried.
func (r *Router) Ready() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ready
}

// WaitReady blocks until Ready or ctx ends.
func (r *Router) WaitReady(ctx context.Context) error {
	r.mu.Lock()
	ch := r.readyCh
	r.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (r *Router) readyChanged() {
	r.mu.Lock()
	ready := r.ready
	r.mu.Unlock()
	if ready {
		return
	}
	for _, up := range r.upstreams() {
		up.mu.Lock()
		tried := up.tried
		up.mu.Unlock()
		if !tried {
			return
		}
	}
	// The start's one merge, before readiness promises a complete catalog. It is made while starting still holds,
	// so that a reader meanwhile (catchUp) waits for it instead of reading the catalog from before the start. From
	// here on every change rebuilds at once; the second merge covers a rebuild deferred during the first (usually
	// nothing is left), and a caller that gets here concurrently waits in buildUpTo for the merge that covers it.
	r.buildUpTo(r.buildReq.Load())
	r.starting.Store(false)
	r.buildUpTo(r.buildReq.Load())
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.ready {
		r.ready = true
		close(r.readyCh)
	}
}

// rebuild merges the upstreams' lists anew and tells sessions about the lists that changed.
func (r *Router) rebuild() {
	want := r.buildReq.Add(1)
	if r.starting.Load() && r.SessionCount() == 0 {
		// Nobody would hear of this merge: a hundred upstreams that come up one after another would merge the
		// catalog a hundred times, each over all the upstreams so far. The start's merge covers this request
		// (readyChanged), or a client's read before it (catchUp). The request is counted before the sessions
		// are, and a session reads through catchUp after it is counted: this sees the session, or its read
		// sees the request.
		return
	}
	r.buildUpTo(want)
}

// catchUp merges the lists whose rebuild waits for the end of the start (rebuild), so that a client that reads
// the catalog before the router is ready sees the upstreams that are up. Once started, it does nothing.
func (r *Router) catchUp() {
	if r.starting.Load() {
		r.buildUpTo(r.buildReq.Load())
	}
}

// current is the shared catalog, caught up.
func (r *Router) current() *catalog {
	r.catchUp()
	return r.cat.Load()
}

// buildUpTo merges the catalogs unless a merge that started after request want covers it; either way the
// catalog covers it on return.
func (r *Router) buildUpTo(want uint64) {
	// Coalesce: a rebuild that starts after this request was made covers it (a hundred upstreams coming up at
	// once would otherwise merge the whole catalog a hundred times).
	r.buildMu.Lock()
	if r.buildSeen >= want {
		r.buildMu.Unlock()
		return
	}
	r.buildSeen = r.buildReq.Load()
	r.merges.Add(1)
	type change struct {
		profile    string
		prev, next *catalog
	}
	changes := []change{{"", r.cat.Load(), nil}}
	shape := r.shape.Load()
	pins := r.newPinRun(r.ctx)
	changes[0].next = buildCatalog(r.upstreams(), changes[0].prev, "", shape, pins)
	r.cat.Store(changes[0].next)
	for _, p := range r.profiles.profileNames() {
		ptr := r.profiles.profileCatalog(p)
		ch := change{profile: p, prev: ptr.Load()}
		ch.next = buildCatalog(r.upstreams(), ch.prev, p, shape, pins)
		ptr.Store(ch.next)
		changes = append(changes, ch)
	}
	pins.settle()
	r.buildMu.Unlock()
	if prev, next := changes[0].prev, changes[0].next; next.index != nil && (prev == nil || prev.index == nil || next.gen[kindTools] != prev.gen[kindTools]) {
		r.embed.wantVectors() // the tools changed, or search was just turned on
	}
	logConflicts(r.log, changes[0].prev, changes[0].next)
	for _, ch := range changes {
		if ch.prev == nil {
			continue // a new profile's first catalog: nobody has listed it yet
		}
		for k := listKind(0); k < numKinds; k++ {
			msg := jsonrpc.AppendNotification(nil, k.changedMethod(), nil)
			for _, s := range r.allSessions() {
				if s.profile != ch.profile || !listChanged(ch.prev, ch.next, k, s.params.Endpoint) {
					continue
				}
				if k == kindTemplates && listChanged(ch.prev, ch.next, kindResources, s.params.Endpoint) {
					continue // one notification covers both resource lists
				}
				s.notify(msg)
			}
		}
	}
}

// listChanged reports whether a list changed as an endpoint's clients see it ("" for the whole catalog): an
// endpoint hears list_changed only when its own view changed, or, in search mode, its own list (discovery.go).
// The whole catalog is compared by generation: prev and next are successive shared catalogs.
func listChanged(prev, next *catalog, k listKind, endpoint string) bool {
	return changedFor(prev, next, k, endpoint, false)
}

// viewChanged is listChanged by content: for two catalogs one session saw that need not be successive (its own,
// built on a shared one, and the shared one), whose generations may coincide.
func viewChanged(prev, next *catalog, k listKind, endpoint string) bool {
	return changedFor(prev, next, k, endpoint, true)
}

func changedFor(prev, next *catalog, k listKind, endpoint string, byContent bool) bool {
	if k == kindTools {
		pm, wasSearch := prev.modes[endpoint]
		nm, isSearch := next.modes[endpoint]
		switch {
		case wasSearch != isSearch:
			return true // the mode switched: the list is another one
		case isSearch && pm.hash != nm.hash:
			return true
		case isSearch && !nm.exposeFound:
			return false // the meta-tools and the AlwaysList are all it lists
		}
	}
	if endpoint == "" && byContent {
		return !sameItems(prev.items[k], next.items[k])
	}
	if endpoint == "" {
		return next.gen[k] != prev.gen[k]
	}
	pv, nv := prev.views[endpoint], next.views[endpoint]
	if pv == nil || nv == nil {
		return pv != nv
	}
	return pv.hash[k] != nv.hash[k]
}

// SetShape applies new overrides and endpoints: the catalog is rebuilt, and each session hears list_changed for
// the lists that changed as it sees them. Sessions, upstreams and calls in flight are untouched.
func (r *Router) SetShape(sh Shape) error {
	if err := CheckShape(sh); err != nil {
		return err
	}
	r.shape.Store(&sh)
	r.refresh()
	return nil
}

// refresh rebuilds the catalog for a change of configuration: a rebuild that started before it must not stand
// in for one after it.
func (r *Router) refresh() {
	r.buildReq.Add(1)
	r.rebuild()
}

// CheckShape refuses a shape the catalog cannot apply: malformed globs, duplicate endpoints, and two overrides
// that give the same name. A reload checks it before it changes anything.
func CheckShape(sh Shape) error {
	seen := map[string]bool{}
	for _, e := range sh.Endpoints {
		if e.Name == "" || seen[e.Name] {
			return fmt.Errorf("endpoint %q is empty or configured twice", e.Name)
		}
		seen[e.Name] = true
		if err := checkEndpoint(e); err != nil {
			return err
		}
	}
	names := map[string]OverrideKey{}
	for k, o := range sh.Overrides {
		if o.Name == "" {
			continue
		}
		if other, dup := names[k.Kind+"\x00"+o.Name]; dup {
			return fmt.Errorf("overrides of %s/%s and %s/%s both name a %s %q", other.Upstream, other.Name, k.Upstream, k.Name, k.Kind, o.Name)
		}
		names[k.Kind+"\x00"+o.Name] = k
	}
	return nil
}

// logConflicts logs what changed in the catalog's conflicts: each once when it appears and once when it is gone,
// not again on every rebuild (a busy gateway rebuilds on every list change of every upstream).
func logConflicts(log *slog.Logger, prev, next *catalog) {
	var before []string
	if prev != nil {
		before = prev.conflicts
	}
	for _, c := range next.conflicts {
		if !slices.Contains(before, c) {
			log.Warn("catalog conflict", "detail", c)
		}
	}
	for _, c := range before {
		if !slices.Contains(next.conflicts, c) {
			log.Info("catalog conflict resolved", "detail", c)
		}
	}
}

func (r *Router) clientInfo() json.RawMessage {
	return json.RawMessage(`{"name":"switchboard","version":` + string(jsonrpc.AppendQuote(nil, r.opts.Version)) + `}`)
}

// ServerInfo is the gateway's Implementation object for initialize results.
func (r *Router) ServerInfo() json.RawMessage {
	return json.RawMessage(`{"name":"switchboard","title":"Switchboard MCP gateway","version":` + string(jsonrpc.AppendQuote(nil, r.opts.Version)) + `}`)
}

// Capabilities returns the server capabilities the gateway advertises: the union it can honour (design §5).
// Lists always announce listChanged, because upstreams come and go.
func (r *Router) Capabilities() json.RawMessage {
	subscribe, logging, completions, tasks, unknown := false, false, false, false, false
	for _, up := range r.upstreams() {
		up.mu.Lock()
		caps := up.caps
		up.mu.Unlock()
		if caps == nil {
			unknown = true // not connected yet (server/discover is answered during start), or down
			continue
		}
		if res, ok := caps["resources"]; ok {
			var v struct{ Subscribe bool }
			_ = json.Unmarshal(res, &v)
			subscribe = subscribe || v.Subscribe
		}
		_, l := caps["logging"]
		_, c := caps["completions"]
		logging, completions = logging || l, completions || c
		tasks = tasks || up.supportsTaskCalls()
	}
	tasks = tasks || r.tasks.enabled()
	var b strings.Builder
	b.WriteString(`{"tools":{"listChanged":true},"prompts":{"listChanged":true},"resources":{"listChanged":true`)
	if subscribe || unknown {
		b.WriteString(`,"subscribe":true`)
	}
	b.WriteString(`}`)
	if logging || unknown {
		b.WriteString(`,"logging":{}`)
	}
	if completions || unknown {
		b.WriteString(`,"completions":{}`)
	}
	if tasks {
		b.WriteString(`,"tasks":{"list":{},"cancel":{},"requests":{"tools":{"call":{}}}}`)
	}
	b.WriteString(`}`)
	return json.RawMessage(b.String())
}

// Instructions joins the upstreams' instructions, each under its upstream's name, so a model learns how to use
// every server behind the gateway.
func (r *Router) Instructions() string {
	var b strings.Builder
	for _, up := range r.upstreams() {
		up.mu.Lock()
		h := up.hello
		up.mu.Unlock()
		if h == nil || strings.TrimSpace(h.Instructions) == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
		fmt.Fprintf(&b, "## %s (tools prefixed %q)\n%s", up.cfg.Name, up.cfg.Prefix, strings.TrimSpace(h.Instructions))
	}
	return b.String()
}

// janitorInterval is how often idle sessions are looked for: often enough that the shortest idle timeout is
// honoured within a quarter of itself, and at most once a minute.
func (r *Router) janitorInterval() time.Duration {
	d := r.opts.SessionIdleTimeout
	for _, up := range r.upstreams() {
		if t := up.cfg.IdleTimeout; t > 0 && t < d {
			d = t
		}
	}
	return min(max(d/4, 100*time.Millisecond), time.Minute)
}

func (r *Router) expireSessions() {
	r.shareLate()
	now := time.Now()
	r.elicits.expire(now)
	r.expirePooled(now)
	cutoff := now.Add(-r.opts.SessionIdleTimeout).UnixNano()
	for _, s := range r.allSessions() {
		if s.lastUsed.Load() < cutoff && s.streams.Load() == 0 {
			r.log.Info("session expired", "session", s.logID())
			s.Close()
			continue
		}
		for _, up := range s.links.closeIdle(now) {
			s.links.childGone(s, up)
		}
	}
}
