package routing

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchboard-mcp/switchboard/routing/state"
	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
)

// Shared sessions (design §7). With a SessionStore, a session's record lives where every replica sees it, so a
// request for a session created on another replica is served where it lands: the session is restored from its
// record, its per-client upstream sessions are started afresh here (stdio children are replica-local), and the
// client is told through a log notification. A session ended by its client is ended on every replica through the
// Bus.

// sessionStore keeps session records for every replica; routing/state implements it (in Redis).
type sessionStore interface {
	Create(ctx context.Context, rec state.SessionRecord) error
	Get(ctx context.Context, id string) (state.SessionRecord, error)
	Update(ctx context.Context, id string, fn func(*state.SessionRecord) error) error
	Touch(ctx context.Context, id string) error
	Delete(ctx context.Context, id string) error
}

// replicaBus carries messages between replicas; routing/state implements it.
type replicaBus interface {
	Publish(ctx context.Context, channel string, msg []byte) error
	Subscribe(ctx context.Context, channel string) (<-chan []byte, func(), error)
}

// replicaRegistry records which replica addresses are alive; routing/state implements it. A retry is sent on only
// to a registered address (StateOwner).
type replicaRegistry interface {
	RegisterReplica(ctx context.Context, url string, ttl time.Duration) error
	ReplicaRegistered(ctx context.Context, url string) (bool, error)
}

// replicaTTL is how long a registration lives; a replica renews it every third of that, so a dead one drops out
// of the registry within replicaTTL.
const replicaTTL = 30 * time.Second

// replicas is the router's part of sharing sessions across replicas (design §7): this replica's registration,
// the records of its sessions in the store, and the bus channels that close, relay to and reread what another
// replica changed.
type replicas struct {
	core     replicaCore
	self     string          // Options.Replica
	store    sessionStore    // nil: this replica alone
	bus      replicaBus      // nil: this replica alone
	registry replicaRegistry // nil: retries are not forwarded
	log      *slog.Logger
	// lateKick wakes followLate: a session could not be written to the store.
	lateKick chan struct{}
}

// replicaCore is what sharing sees of the router: its sessions.
type replicaCore interface {
	Session(id string) *Session
	allSessions() []*Session
}

var _ replicaCore = (*Router)(nil)

// run follows the other replicas and keeps this one registered, until ctx ends.
func (rp *replicas) run(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { rp.followEnded(ctx) })
	wg.Go(func() { rp.followRelay(ctx) })
	wg.Go(func() { rp.followLate(ctx) })
	if rp.registry != nil && rp.self != "" {
		wg.Go(func() { rp.register(ctx) })
	}
}

// Replica is this replica's address as the others reach it ("" for none).
func (rp *replicas) Replica() string { return rp.self }

// ReplicaGone reports whether the replica at url is known to be gone: replicas register in the shared store and
// its registration has lapsed. Without a registry, or when the store cannot be asked, nothing is known to be gone.
func (rp *replicas) ReplicaGone(ctx context.Context, url string) bool {
	if rp.registry == nil || url == "" || url == rp.self {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	ok, err := rp.registry.ReplicaRegistered(ctx, url)
	return err == nil && !ok
}

// register keeps this replica's address registered until ctx ends.
func (rp *replicas) register(ctx context.Context) {
	t := time.NewTicker(replicaTTL / 3)
	defer t.Stop()
	for {
		rctx, cancel := context.WithTimeout(ctx, storeTimeout)
		err := rp.registry.RegisterReplica(rctx, rp.self, replicaTTL)
		cancel()
		if err != nil && ctx.Err() == nil {
			rp.log.Warn("this replica could not register its address; retries parked here cannot be forwarded to it", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// endedChannel carries the ids of sessions their clients ended.
const endedChannel = "sessions:ended"

// storeTimeout bounds one store operation on the request path; a slow or absent Redis must not hold clients.
const storeTimeout = 2 * time.Second

// touchEvery throttles refreshing a session record's TTL.
const touchEvery = 30 * time.Second

// sessionRecord is a new session's record in the store.
func sessionRecord(s *Session) state.SessionRecord {
	return state.SessionRecord{
		ID: s.id, Principal: s.params.Principal, ProtocolVersion: s.params.ProtocolVersion,
		Capabilities: s.params.Capabilities, ClientInfo: s.params.ClientInfo, Endpoint: s.params.Endpoint,
	}
}

// shareLate writes the records of the sessions started while the store could not be reached (share), with what
// they hold now, so that the other replicas can serve them once it is back. followLate and the janitor call it;
// it stops at the first failure, since the store is then still away, and reports whether a session is left.
func (rp *replicas) shareLate() (pending bool) {
	if rp.store == nil {
		return false
	}
	for _, s := range rp.core.allSessions() {
		if s.record == nil || !s.record.unshared.Load() {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
		err := rp.store.Create(ctx, s.currentRecord())
		cancel()
		switch {
		case err == nil, errors.Is(err, state.ErrExists):
			s.record.unshared.Store(false)
			rp.log.Info("session shared with the other replicas now that the store is back", "session", s.logID())
		default:
			return true
		}
	}
	return false
}

// lateRetry is how often followLate tries the store again while a session waits to be written: another replica
// answers 404 for the session until then, so the write follows the store's return within this, not within the
// janitor's minute.
const lateRetry = time.Second

// followLate writes the sessions the store missed as soon as it is back: woken when one is missed, it tries every
// lateRetry (one write while the store is still away) until none is left, until ctx ends.
func (rp *replicas) followLate(ctx context.Context) {
	if rp.store == nil {
		return
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-rp.lateKick:
		}
		t := time.NewTicker(lateRetry)
		for pending := true; pending; {
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
				pending = rp.shareLate()
			}
		}
		t.Stop()
	}
}

// currentRecord is the session's record with what it holds now: its level, subscriptions and upstream sessions.
func (s *Session) currentRecord() state.SessionRecord {
	rec := sessionRecord(s)
	s.mu.Lock()
	if s.logLevel >= 0 {
		rec.LogLevel = logLevels[s.logLevel]
	}
	s.mu.Unlock() // a session's lock and a link's are never held together
	rec.Subscriptions = append(rec.Subscriptions, s.subs.uris()...)
	links := s.links.snapshot()
	slices.Sort(rec.Subscriptions)
	for up, l := range links {
		l.mu.Lock()
		conn := l.conn
		l.mu.Unlock()
		if conn != nil && conn.SessionID() != "" {
			if rec.UpstreamSessions == nil {
				rec.UpstreamSessions = map[string]string{}
			}
			rec.UpstreamSessions[up.cfg.Name] = conn.Server.ProtocolVersion + " " + conn.SessionID()
		}
	}
	return rec
}

// notice is a notifications/message of the gateway's own.
func notice(text string) []byte {
	b := []byte(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"notice","logger":"switchboard","data":`)
	b = jsonrpc.AppendQuote(b, text)
	return append(b, "}}"...)
}

// followEnded closes local copies of sessions ended on other replicas, until ctx ends.
func (rp *replicas) followEnded(ctx context.Context) {
	rp.follow(ctx, endedChannel, func(id []byte) {
		if s := rp.core.Session(string(id)); s != nil {
			s.Close()
		}
	})
}

// follow hands every message of a bus channel to handle until ctx ends, resubscribing after failures.
func (rp *replicas) follow(ctx context.Context, channel string, handle func([]byte)) {
	if rp.bus == nil {
		return
	}
	for ctx.Err() == nil {
		ch, stop, err := rp.bus.Subscribe(ctx, channel)
		if err != nil {
			rp.log.Warn("cannot follow the other replicas; retrying", "channel", channel, "err", err)
			t := time.NewTimer(5 * time.Second)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
			continue
		}
		for open := true; open; {
			select {
			case <-ctx.Done():
				stop()
				return
			case msg, ok := <-ch:
				if open = ok; ok {
					handle(msg)
				}
			}
		}
		stop()
	}
}

// sharedRecord is a legacy session's record in the store, which lets any replica serve the session. A nil
// *sharedRecord is a session that is not shared: a modern pool entry, or any session without a store; its
// methods then do nothing.
type sharedRecord struct {
	s *Session
	// touched is when the record's TTL was last refreshed (unix ns).
	touched atomic.Int64
	// unshared: the store failed when the session started; the janitor writes the record later (shareLate).
	unshared atomic.Bool
}

// share writes a new session's record; without the store the session still works on this replica.
func (rp *replicas) share(s *Session) {
	if rp.store == nil {
		return
	}
	s.record = &sharedRecord{s: s}
	s.record.touched.Store(time.Now().UnixNano()) // written fresh
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	if err := rp.store.Create(ctx, sessionRecord(s)); err != nil {
		rp.log.Warn("session not shared with other replicas yet: the store failed; it is written when the store is back", "session", s.logID(), "err", err)
		s.record.unshared.Store(true)
		select {
		case rp.lateKick <- struct{}{}: // followLate writes it once the store is back
		default:
		}
	}
}

// touch refreshes the record's TTL, at most every touchEvery.
func (sr *sharedRecord) touch() {
	if sr == nil {
		return
	}
	now := time.Now().UnixNano()
	last := sr.touched.Load()
	if now-last < int64(touchEvery) || !sr.touched.CompareAndSwap(last, now) {
		return
	}
	s := sr.s
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	if err := s.r.opts.Store.Touch(ctx, s.id); err != nil && !errors.Is(err, state.ErrNotFound) {
		s.r.log.Debug("session record not refreshed", "session", s.logID(), "err", err)
	}
}

// update changes the record, in the background (bounded by storeTimeout, joined by the session's Close).
func (sr *sharedRecord) update(fn func(*state.SessionRecord)) {
	if sr == nil {
		return
	}
	s := sr.s
	s.goWork(func() {
		ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
		defer cancel()
		err := s.r.opts.Store.Update(ctx, s.id, func(rec *state.SessionRecord) error { fn(rec); return nil })
		if err != nil && !errors.Is(err, state.ErrNotFound) {
			s.r.log.Debug("session record not updated", "session", s.logID(), "err", err)
		}
	})
}

// remove deletes the record and tells the other replicas the session ended.
func (sr *sharedRecord) remove() {
	if sr == nil {
		return
	}
	s := sr.s
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	if err := s.r.opts.Store.Delete(ctx, s.id); err != nil {
		s.r.log.Warn("session record not deleted", "session", s.logID(), "err", err)
	}
	if b := s.r.opts.Bus; b != nil {
		if err := b.Publish(ctx, endedChannel, []byte(s.id)); err != nil {
			s.r.log.Warn("other replicas not told the session ended", "session", s.logID(), "err", err)
		}
	}
}

// relayChannel carries client messages that reached a replica other than the one holding what they answer or
// cancel: an answer to a server→client request, a cancellation of a call in flight.
const relayChannel = "sessions:relay"

// relay publishes a client's message that answers or cancels nothing held here, for the replica that holds it.
func (sr *sharedRecord) relay(msg []byte) {
	if sr == nil || sr.s.r.opts.Bus == nil {
		return
	}
	s := sr.s
	b := make([]byte, 0, len(s.id)+1+len(msg))
	b = append(append(append(b, s.id...), '\n'), msg...)
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	if err := s.r.opts.Bus.Publish(ctx, relayChannel, b); err != nil {
		s.r.log.Debug("client message not relayed to other replicas", "session", s.logID(), "err", err)
	}
}

// relayCancel relays a client's cancellation of a call this replica does not run.
func (sr *sharedRecord) relayCancel(params []byte) {
	if sr != nil {
		sr.relay(jsonrpc.AppendNotification(nil, "notifications/cancelled", params))
	}
}

// followRelay delivers relayed client messages to the sessions held here, until ctx ends.
func (rp *replicas) followRelay(ctx context.Context) {
	rp.follow(ctx, relayChannel, func(msg []byte) {
		sid, raw, ok := bytes.Cut(msg, []byte{'\n'})
		if !ok {
			return
		}
		s := rp.core.Session(string(sid))
		if s == nil {
			return
		}
		m, err := jsonrpc.Parse(raw)
		if err != nil {
			return
		}
		if lc, ok := s.era.(*legacyClient); ok { // only a legacy session is recorded, and so relayed to
			lc.handleRelayed(m)
		}
	})
}

// latestUpstreamSession picks up an HTTP upstream session another replica recorded for this session after this
// replica restored it: before starting a per-client link of its own, a replica reads the record again, so that one
// client keeps one upstream session (and one upstream state) whichever replica serves it. It runs outside the
// session's lock (a store read), and only when a per-client HTTP link is about to be made with a store.
func (sr *sharedRecord) latestUpstreamSession(up *upstreamServer) {
	if sr == nil {
		return
	}
	s := sr.s
	if s.links.resumes(up.cfg.Name) {
		return
	}
	ctx, cancel := context.WithTimeout(s.ctx, storeTimeout)
	defer cancel()
	rec, err := s.r.opts.Store.Get(ctx, s.id)
	if err != nil {
		return // not recorded (yet), or the store is away: a session of this replica's own
	}
	v, ok := rec.UpstreamSessions[up.cfg.Name]
	if !ok {
		return
	}
	s.links.resume(up, v)
}

// recordUpstreamSession keeps a per-client HTTP upstream session's id in the session's record, so that another
// replica serving this session resumes it rather than starting a new one.
func (sr *sharedRecord) recordUpstreamSession(l *link) {
	if sr == nil {
		return
	}
	l.mu.Lock()
	conn := l.conn
	l.mu.Unlock()
	if conn == nil {
		return
	}
	sid := conn.SessionID()
	if sid == "" {
		return
	}
	v := conn.Server.ProtocolVersion + " " + sid
	name := l.up.cfg.Name
	sr.update(func(rec *state.SessionRecord) {
		if rec.UpstreamSessions == nil {
			rec.UpstreamSessions = map[string]string{}
		}
		rec.UpstreamSessions[name] = v
	})
}

// routing/state is imported openly, for its record type; these are the parts of its stores routing uses, and
// both implementations provide them.
var (
	_ sessionStore    = (*state.Memory)(nil)
	_ sessionStore    = (*state.Redis)(nil)
	_ replicaBus      = (*state.Memory)(nil)
	_ replicaBus      = (*state.Redis)(nil)
	_ replicaRegistry = (*state.Memory)(nil)
	_ replicaRegistry = (*state.Redis)(nil)
)
