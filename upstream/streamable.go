package upstream

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
	"github.com/switchboard-mcp/switchboard/upstream/protocol"
)

// The Streamable HTTP (2025-11-25) connection: its lifetime, its goroutines, and the queue that Read drains.

// Connect returns a connection to a new legacy session. It does no I/O: the session
// starts with the initialize request written to it (see [Dial]), which also
// decides between Streamable HTTP and legacy HTTP+SSE.
func (t *HTTPTransport) Connect(ctx context.Context) (Connection, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("upstream %s: %w", t.spec.Name, err)
	}
	// The connection outlives Connect's ctx but keeps its values (a session's identity for credentials).
	cctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	return &httpConn{
		t:      t,
		name:   t.spec.Name,
		log:    t.spec.logger(),
		maxMsg: t.spec.maxMessageBytes(),
		ctx:    cctx,
		cancel: cancel,
		queue:  make(chan Incoming, queueLen),
		done:   make(chan struct{}),

		getAnswered: make(chan struct{}),
	}, nil
}

// httpConn is a Connection over Streamable HTTP, or over legacy HTTP+SSE once
// legacy is set.
//
// Goroutines: one per request POST (until its response has been delivered or
// synthesized), the standalone GET stream, and for legacy the SSE reader. All
// are started through spawn, bound to ctx, and awaited by Close.
type httpConn struct {
	t      *HTTPTransport
	name   string
	log    *slog.Logger
	maxMsg int

	ctx    context.Context // cancelled by Close or a fatal error
	cancel context.CancelFunc
	queue  chan Incoming // bounded; producers block (back-pressure) until ctx ends

	endOnce sync.Once
	done    chan struct{} // closed when the connection is finished

	getOnce     sync.Once
	getAnswered chan struct{} // closed when the first standalone GET has an answer (or failed)
	endErr      error         // set before done is closed
	userClosed  bool          // set before done is closed

	spawnMu sync.Mutex
	closing bool
	wg      sync.WaitGroup

	closeOnce sync.Once

	mu        sync.Mutex
	sessionID string // from the initialize response; "" if the server uses none
	protocol  string // negotiated version, learnt from the initialize result
	// sessionHeader and protocolHeader are the two as header values, made when learnt, shared by every request.
	sessionHeader, protocolHeader []string
	initReq                       []byte // our initialize request, resent on session expiry
	initID                        []byte // its id (aliases initReq)
	getLoop                       bool   // the standalone GET stream has been started
	legacy                        *legacySession

	// reinitMu serializes re-initializations, so that concurrent 404s
	// produce one new session.
	reinitMu sync.Mutex
}

// spawn runs f in a goroutine owned by the connection, unless it is closing.
func (c *httpConn) spawn(f func()) bool {
	c.spawnMu.Lock()
	defer c.spawnMu.Unlock()
	if c.closing {
		return false
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		f()
	}()
	return true
}

// finish ends the connection with err (the first error wins).
func (c *httpConn) finish(err error, byUser bool) {
	c.endOnce.Do(func() {
		c.endErr = err
		c.userClosed = byUser
		c.cancel()
		close(c.done)
	})
}

// Read returns the next message. After the connection ends because of the
// upstream, messages already queued are returned before the error.
func (c *httpConn) Read(ctx context.Context) (Incoming, error) {
	select {
	case in := <-c.queue:
		return in, nil
	case <-c.done:
		if !c.userClosed {
			select {
			case in := <-c.queue:
				return in, nil
			default:
			}
		}
		return Incoming{}, c.endErr
	case <-ctx.Done():
		return Incoming{}, ctx.Err()
	}
}

// Write sends msg. A request is POSTed by a goroutine of its own and Write
// returns once the request body has been handed to the HTTP transport (or
// ctx ends; the outcome still arrives through Read). Notifications and
// responses are POSTed synchronously and any failure is returned.
func (c *httpConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if msg.Kind() == jsonrpc.KindInvalid {
		return fmt.Errorf("upstream %s: write: %w", c.name, errNotMessage)
	}
	msg = msg.Clone() // the POST may outlive the caller's buffer
	raw := msg.Raw()
	select {
	case <-c.done:
		return fmt.Errorf("upstream %s: write: %w", c.name, c.endErr)
	default:
	}
	if msg.Kind() != jsonrpc.KindRequest {
		return c.send(ctx, msg)
	}
	if msg.MethodIs(methodInitialize) {
		c.mu.Lock()
		c.initReq, c.initID = raw, msg.ID()
		c.mu.Unlock()
	}
	handed := newHandoff()
	// The POST lives as long as the connection, not the caller's ctx, but carries the caller's values (trace
	// context, identity) into RequestHeaders.
	rctx := connValues{Context: c.ctx, caller: valuesOf(ctx)}
	if !c.spawn(func() { defer handed.done(); c.roundTrip(rctx, msg, handed) }) {
		return fmt.Errorf("upstream %s: write: %w", c.name, errClosed)
	}
	return handed.wait(ctx, c.name)
}

// connValues is the context of a POST that lives as long as the connection: the connection's cancellation and
// deadline, and the caller's values (trace context, identity) first. The caller's context is stripped of its
// cancellation, so that the context package finds the connection's as the one to follow. One value, where a
// context of its own (WithCancel, and AfterFunc to end it with the connection) cost several allocations a call.
type connValues struct {
	context.Context // the connection's
	caller          context.Context
}

// valuesOf is ctx without its cancellation, for its values only. The value context on top is there for speed:
// looking a key up through it walks the chain without allocating, where WithoutCancel's own Value allocates on
// every call, and net/http makes several per POST.
func valuesOf(ctx context.Context) context.Context {
	return context.WithValue(context.WithoutCancel(ctx), valuesOnly{}, nil)
}

// valuesOnly is the key of valuesOf's value context, which holds nothing.
type valuesOnly struct{}

// Value returns the caller's value for key, or else the connection's.
func (v connValues) Value(key any) any {
	if x := v.caller.Value(key); x != nil {
		return x
	}
	return v.Context.Value(key)
}

// bind returns a context that ends with ctx or with the connection.
func (c *httpConn) bind(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(c.ctx, cancel)
	return ctx, func() { stop(); cancel() }
}

// deliver queues a message for Read, blocking while the queue is full. It
// reports false if the connection ended first.
func (c *httpConn) deliver(in Incoming) bool {
	select {
	case c.queue <- in:
		return true
	case <-c.ctx.Done():
		return false
	}
}

// deliverError synthesizes the error response for a request whose POST
// failed, so that the caller never waits forever for it; the failure goes
// with it as Incoming.Err.
func (c *httpConn) deliverError(id []byte, failure error) {
	text := fmt.Sprintf("upstream %s: %s", c.name, failure)
	c.log.Warn("upstream request failed", "error", failure)
	raw := jsonrpc.AppendError(nil, id, protocol.CodeInternalError, text, nil)
	m, err := jsonrpc.Parse(raw)
	if err != nil {
		c.log.Error("cannot build error response", "error", err)
		return
	}
	c.deliver(Incoming{Msg: m, Related: m.ID(), Err: failure})
}

// sleep waits for d unless the connection ends first.
func (c *httpConn) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-c.ctx.Done():
		return false
	}
}

// Close ends the session: it stops every stream and POST, then sends the
// DELETE that "the client SHOULD send [...] to the MCP endpoint with the
// MCP-Session-Id header, to explicitly terminate the session" (best effort;
// "the server MAY respond to this request with HTTP 405 Method Not
// Allowed").
func (c *httpConn) Close() error {
	c.closeOnce.Do(func() {
		c.spawnMu.Lock()
		c.closing = true
		c.spawnMu.Unlock()
		c.finish(fmt.Errorf("upstream %s: %w", c.name, errClosed), true)
		c.wg.Wait()
		if sid, _ := c.headers(); sid != "" && c.legacySession() == nil {
			c.deleteSession()
		}
	})
	return nil
}
