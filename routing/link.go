package routing

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchboard-mcp/switchboard/upstream"
	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
	"github.com/switchboard-mcp/switchboard/upstream/protocol"
)

// maxSafeID keeps minted upstream ids below 2^53: many servers are JavaScript, where larger integers lose
// precision (design §2).
const maxSafeID = 1<<53 - 1

// dialTimeout bounds one connection attempt, handshake included.
const dialTimeout = 30 * time.Second

// linkState is where a link is in its life.
type linkState uint8

const (
	linkConnecting linkState = iota
	linkReady
	linkDown
	linkClosed
)

func (s linkState) String() string {
	return [...]string{"connecting", "ready", "down", "closed"}[s]
}

// link is one upstream session: a shared one for every client, the template session that feeds the catalog of
// a per-client upstream, or one client's own. It owns the connection's reader goroutine, the id counter and the
// pending table (design §4), and reconnects with backoff when the connection is lost.
type link struct {
	r     *Router
	up    *upstreamServer
	owner *Session // nil for shared and template links
	hello upstream.ClientHello
	log   *slog.Logger

	// resumeSID and resumeProto, when set, are an upstream session recorded by another replica: the first dial
	// attaches to it instead of starting a new one (HTTP upstreams only).
	resumeSID, resumeProto string

	lastUsed atomic.Int64 // unix nanoseconds of the last call, for the idle timeout of per-client sessions

	mu        sync.Mutex
	conn      *upstream.Conn
	state     linkState
	lastErr   error
	everReady bool
	changed   chan struct{}
	// rootsAsked and rootsAnswered close when the upstream first asks for the client's roots and when the client's
	// answer has reached it (a per-client link's first calls wait for that: linkConnected).
	rootsAsked, rootsAnswered         chan struct{}
	rootsAskedOnce, rootsAnsweredOnce sync.Once
	// prep is closed once a fresh connection is brought up to the client's state (its log level): calls wait
	// for it, so that the upstream does not drop logs of the first call for want of a level.
	prep     chan struct{}
	pending  pendingTable // its map guarded by mu
	restarts int
	// relist are the lists a client's own upstream session announced changed and not fetched yet; relisting
	// says a goroutine fetches them (children.go).
	relist    [numKinds]bool
	relisting bool

	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
	// work are the goroutines the link starts for its own requests (log level, subscriptions, listens, roots);
	// they end with ctx, and run waits for them before done closes.
	work sync.WaitGroup
}

// goWork runs f on a goroutine the link owns, reporting false (and running nothing) once the link is closed.
func (l *link) goWork(f func()) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.state == linkClosed {
		return false
	}
	l.work.Go(f)
	return true
}

// newLink returns a link that is not connected yet; start connects it.
func newLink(r *Router, up *upstreamServer, owner *Session, hello upstream.ClientHello) *link {
	l := &link{
		r: r, up: up, owner: owner, hello: hello,
		log:     r.log.With("upstream", up.cfg.Name),
		changed: make(chan struct{}),
		done:    make(chan struct{}),
	}
	if owner != nil {
		l.log = l.log.With("session", owner.logID())
	}
	l.lastUsed.Store(time.Now().UnixNano())
	// Each link's ids start at a random point of [1, 2^52): an upstream that broadcasts every answer to all its
	// streams (supergateway does) would otherwise hand one client's answer to another's link, where an equal id
	// waits. A link takes only answers to ids in its own pending table, and those no longer coincide.
	l.pending.mu, l.pending.m = &l.mu, map[int64]pending{}
	l.pending.nextID.Store(randomBelow(1<<52) + 1)
	l.rootsAsked, l.rootsAnswered = make(chan struct{}), make(chan struct{})
	return l
}

// start runs the link until ctx ends or close is called.
func (l *link) start(ctx context.Context) {
	l.ctx, l.cancel = context.WithCancel(ctx)
	go l.run()
}

// stableAfter is how long a connection must last for its loss to be redialled at once; an upstream that dies
// sooner is crash-looping and gets the backoff.
const stableAfter = 5 * time.Second

// run connects, serves, and reconnects until the link is closed. A lost connection is redialled at once, and
// calls wait for it (a crashed stdio child is restarted transparently, design §3); failed dials back off, and
// calls fail fast with the reason while the upstream is down.
func (l *link) run() {
	defer close(l.done)
	defer l.work.Wait() // after the state is closed: goWork starts nothing from then on
	defer l.setState(linkClosed, nil, nil)
	backoff := upstream.Backoff{Min: l.up.cfg.Backoff.Min, Max: l.up.cfg.Backoff.Max}
	failures := 0
	for {
		dctx, cancel := context.WithTimeout(l.ctx, dialTimeout)
		conn, err := l.dial(dctx)
		cancel()
		if err != nil {
			if l.ctx.Err() != nil {
				return
			}
			failures++
			l.setState(linkDown, nil, err)
			l.log.Warn("upstream unavailable", "attempt", failures, "err", err)
			if !l.sleep(backoff.Delay(failures)) {
				return
			}
			l.setState(linkConnecting, nil, nil)
			continue
		}
		l.setState(linkReady, conn, nil)
		l.up.connected(l, conn)
		since := time.Now()
		err = l.serve(conn)
		conn.Close()
		l.r.inst.upstreamSessionEnded(l, conn, since)
		if err == nil {
			err = fmt.Errorf("connection closed: %w", io.EOF)
		}
		if l.ctx.Err() != nil {
			l.lost(err)
			return
		}
		l.setState(linkConnecting, nil, err)
		l.lost(err)
		l.log.Warn("upstream connection lost; reconnecting", "err", err)
		if time.Since(since) < stableAfter {
			failures++
			if !l.sleep(backoff.Delay(failures)) {
				return
			}
		} else {
			failures = 0
		}
	}
}

// dial connects: by resuming a recorded upstream session the first time, when there is one, else afresh.
func (l *link) dial(ctx context.Context) (*upstream.Conn, error) {
	if sid := l.resumeSID; sid != "" {
		l.resumeSID = "" // once: a reconnect after a failure starts afresh
		l.up.mu.Lock()
		hello := l.up.hello
		l.up.mu.Unlock()
		if hello != nil {
			conn, err := upstream.Resume(ctx, l.up.transport, l.hello, sid, l.resumeProto, *hello)
			if err == nil {
				return conn, nil
			}
			l.log.Info("upstream session not resumed; starting a new one", "err", err)
		}
	}
	return upstream.Dial(ctx, l.up.transport, l.hello)
}

func (l *link) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-l.ctx.Done():
		return false
	}
}

func (l *link) setState(s linkState, conn *upstream.Conn, err error) {
	l.mu.Lock()
	if s == linkReady {
		if l.everReady {
			l.restarts++
		}
		l.everReady = true
		l.lastErr = nil
	}
	l.state, l.conn = s, conn
	if s == linkReady {
		l.prep = make(chan struct{})
	}
	if err != nil {
		l.lastErr = err
	}
	close(l.changed)
	l.changed = make(chan struct{})
	l.mu.Unlock()
	l.up.stateChanged(l)
}

// ready waits until the link has a connection. While the upstream is down (its last dial failed) it fails at
// once with the reason, so that a call to a dead upstream does not hang; while a dial is under way it waits.
func (l *link) ready(ctx context.Context) (*upstream.Conn, error) {
	for {
		l.mu.Lock()
		conn, state, err, ch := l.conn, l.state, l.lastErr, l.changed
		l.mu.Unlock()
		switch {
		case state == linkReady:
			return conn, nil
		case state == linkClosed:
			return nil, &notConnectedError{Upstream: l.up.cfg.Name, Err: errSessionClosed}
		case state == linkDown:
			return nil, &unavailableError{Upstream: l.up.cfg.Name, Err: err}
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, &notConnectedError{Upstream: l.up.cfg.Name, Err: ctx.Err()}
		}
	}
}

// prepared returns the channel closed once the current connection is set up (see prep).
func (l *link) prepared() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.prep == nil {
		l.prep = make(chan struct{})
		close(l.prep)
	}
	return l.prep
}

// setUp marks the current connection as brought up to the client's state.
func (l *link) setUp(ch <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.prep != nil && (<-chan struct{})(l.prep) == ch {
		select {
		case <-l.prep:
		default:
			close(l.prep)
		}
	}
}

// isReady reports whether the link is connected.
func (l *link) isReady() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.state == linkReady
}

// close ends the link and waits for its goroutine.
func (l *link) close() {
	l.cancel()
	<-l.done
}

// idle reports whether the link has had no call in flight since before cutoff.
func (l *link) idle(cutoff int64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.pending.m) == 0 && l.lastUsed.Load() < cutoff
}

// add publishes p in the pending table under its upstream id, reporting false when the link is not ready.
func (l *link) add(upID int64, p pending) bool {
	l.lastUsed.Store(time.Now().UnixNano())
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.state != linkReady {
		return false
	}
	l.pending.m[upID] = p
	return true
}

// lost fails every call in flight: the connection is gone and their answers with it.
func (l *link) lost(err error) {
	l.mu.Lock()
	calls := l.pending.m
	l.pending.m = map[int64]pending{}
	l.mu.Unlock()
	reason := publicReason(err)
	for _, p := range calls {
		p.failed(outcomeFailed, protocol.CodeInternalError, fmt.Sprintf("upstream %q failed during %s: %s; retry the request", l.up.cfg.Name, p.what(), reason))
	}
	if l.owner != nil {
		l.owner.era.linkLost(l)
	} else {
		for _, s := range l.r.allSessions() {
			s.era.linkLost(l)
		}
	}
}

// writeBuilt sends a message the gateway built (jsonrpc.AppendRequest and its kin) on the current connection.
func (l *link) writeBuilt(ctx context.Context, raw []byte) error {
	m, err := jsonrpc.Parse(raw)
	if err != nil {
		return fmt.Errorf("a message the gateway built: %w", err)
	}
	return l.write(ctx, m)
}

// write sends a message on the current connection.
func (l *link) write(ctx context.Context, msg jsonrpc.Message) error {
	l.mu.Lock()
	conn := l.conn
	l.mu.Unlock()
	if conn == nil {
		return &notConnectedError{Upstream: l.up.cfg.Name}
	}
	return conn.Write(ctx, msg)
}

// writeRequest sends a client's request on the current connection, with its arguments mirrored in headers
// where the connection has them.
func (l *link) writeRequest(ctx context.Context, msg jsonrpc.Message, params []upstream.Param) error {
	l.mu.Lock()
	conn := l.conn
	l.mu.Unlock()
	if conn == nil {
		return &notConnectedError{Upstream: l.up.cfg.Name}
	}
	return conn.WriteRequest(ctx, msg, params)
}

// request sends one of the gateway's own requests and waits for its result.
func (l *link) request(ctx context.Context, method string, params []byte) ([]byte, error) {
	if _, err := l.ready(ctx); err != nil {
		return nil, err
	}
	c := &ownRequest{upID: l.pending.mint(), method: method, answer: make(chan jsonrpc.Message, 1)}
	if !l.add(c.upID, c) {
		return nil, &notConnectedError{Upstream: l.up.cfg.Name}
	}
	id := jsonrpc.AppendInt(nil, c.upID)
	if err := l.writeBuilt(ctx, jsonrpc.AppendRequest(nil, id, method, params)); err != nil {
		l.pending.take(c.upID)
		return nil, fmt.Errorf("upstream %q: %s: %w", l.up.cfg.Name, method, err)
	}
	select {
	case m := <-c.answer:
		if e := m.Error(); e != nil {
			return nil, &upstreamError{Upstream: l.up.cfg.Name, Method: method, Message: errorMessage(e)}
		}
		return m.Result(), nil
	case <-ctx.Done():
		if l.pending.take(c.upID) != nil {
			l.sendCancel(c.upID, "timed out")
		}
		return nil, fmt.Errorf("upstream %q: %s: %w", l.up.cfg.Name, method, ctx.Err())
	}
}

// sendCancel tells the upstream to stop working on a request; best effort.
func (l *link) sendCancel(upID int64, reason string) {
	p := cancelledParams(jsonrpc.AppendInt(nil, upID), reason)
	ctx, cancel := context.WithTimeout(l.ctx, 5*time.Second)
	defer cancel()
	if err := l.writeBuilt(ctx, jsonrpc.AppendNotification(nil, "notifications/cancelled", p)); err != nil {
		l.log.Debug("cancel not delivered", "err", err)
	}
}

// serve reads the connection until it ends, routing every message.
func (l *link) serve(conn *upstream.Conn) error {
	conn.Preempt(l)
	for {
		in, err := conn.Read(l.ctx)
		if err != nil {
			if errors.Is(err, context.Canceled) && l.ctx.Err() != nil {
				return nil
			}
			return err
		}
		l.route(in)
	}
}

// Preempt routes a response on the connection's reader (upstream.Preempter): taking the pending request from
// the table and delivering its answer never blocks.
func (l *link) Preempt(in upstream.Incoming) bool {
	if in.Msg.Kind() != jsonrpc.KindResponse {
		return false
	}
	l.route(in)
	return true
}

var _ upstream.Preempter = (*link)(nil)

// cancelledParams builds the params of notifications/cancelled for a request id (raw JSON).
func cancelledParams(id []byte, reason string) []byte {
	p := make([]byte, 0, 48+len(id)+len(reason))
	p = append(append(append(p, `{"requestId":`...), id...), `,"reason":`...)
	return append(jsonrpc.AppendQuote(p, reason), '}')
}

func clone(b []byte) []byte { return append([]byte(nil), b...) }

// errorMessage extracts the message of a raw JSON-RPC error object for an error string.
func errorMessage(e []byte) string {
	s, end, ok := jsonrpc.Lookup(e, "message")
	if !ok {
		return string(e)
	}
	msg, err := jsonrpc.Unquote(e[s:end])
	if err != nil {
		return string(e[s:end])
	}
	return msg
}

// awaitRoots holds a fresh per-client upstream session's first calls until it has the client's roots: a server
// that limits itself to them (server-filesystem) asks with roots/list once initialized, and a call that arrives
// before the answer is refused ("Access denied … outside allowed directories"). Only servers known to ask (their
// catalog session asked, or a client's did) are waited for, so the others' first calls cost nothing; the waits
// for the request and for the client's answer are bounded (the request may sit on a standalone stream the client
// never opened).
func (l *link) awaitRoots(ctx context.Context) {
	if !l.up.asksRoots.Load() {
		return
	}
	wait := time.NewTimer(rootsAnswerWait)
	defer wait.Stop()
	select {
	case <-l.rootsAsked:
	case <-wait.C:
		return
	case <-ctx.Done():
		return
	}
	select {
	case <-l.rootsAnswered:
	case <-wait.C:
		l.log.Debug("the client did not answer roots/list in time; calls go ahead")
		return
	case <-ctx.Done():
		return
	}
	// The server applies the roots on its own time once it has them (server-filesystem resolves each on the disk
	// first), and nothing tells when it is done: a call right behind the answer would still be refused.
	settle := time.NewTimer(rootsSettle)
	defer settle.Stop()
	select {
	case <-settle.C:
	case <-ctx.Done():
	}
}

// rootsAnswerWait bounds how long first calls wait for the upstream's roots/list and the client's answer.
const rootsAnswerWait = 2 * time.Second

// rootsSettle is how long first calls wait after the client's roots answer reached the upstream, for the server
// to apply them. Sessions started when their client is initialized (warm) are past it by the first call, in
// general.
const rootsSettle = 250 * time.Millisecond

// restart drops the link's current connection; the link redials at once. The state changes first, so that new
// calls wait for the new connection instead of writing to the closing one.
func (l *link) restart() {
	l.mu.Lock()
	conn := l.conn
	l.mu.Unlock()
	if conn == nil {
		return
	}
	l.setState(linkConnecting, nil, nil)
	conn.Close()
}

// handshake is what the current connection's handshake settled: the negotiated version, the upstream's session
// id, and whether the upstream is stateless (2026-07-28).
func (l *link) handshake() (version, sessionID string, modern bool) {
	l.mu.Lock()
	conn := l.conn
	l.mu.Unlock()
	if conn == nil {
		return "", "", false
	}
	return conn.Server.ProtocolVersion, conn.SessionID(), conn.Server.Modern()
}

// version is the protocol version negotiated on the link's current connection ("" while it has none).
func (l *link) version() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conn == nil {
		return ""
	}
	return l.conn.Server.ProtocolVersion
}
