package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
	"github.com/switchboard-mcp/switchboard/upstream/protocol"
	"github.com/switchboard-mcp/switchboard/upstream/sse"
)

const (
	methodCancelled = "notifications/cancelled"
	// maxStatusBody bounds how much of a non-200 answer is read for the
	// JSON-RPC error it may carry (a -32022's data lists versions, a
	// -32021's the missing capabilities: more than maxErrorBody allows).
	maxStatusBody = 64 << 10
)

// modernConn is a Connection to a modern (2026-07-28) Streamable HTTP
// upstream. There is no session: "The client sends every JSON-RPC request
// or notification as its own HTTP POST", with no initialize, no
// Mcp-Session-Id, no GET stream and no resumption ("Resumable SSE streams
// via Last-Event-ID are not supported").
//
// Goroutines: one per request POST, from Write until its response has been
// delivered, its stream has ended, the caller cancelled it, or Close. Close
// cancels them all and waits for them.
type modernConn struct {
	t      *HTTPTransport
	name   string
	log    *slog.Logger
	maxMsg int
	meta   *requestMeta

	ctx    context.Context // cancelled by Close
	cancel context.CancelFunc
	queue  chan Incoming // bounded; producers block (back-pressure) until their request or ctx ends

	mu       sync.Mutex
	closing  bool
	inflight map[string]*modernCall // by idKey
	wg       sync.WaitGroup

	closeOnce sync.Once

	// quiet is set during the server/discover probe, whose failures against
	// a legacy server are expected: they are logged at debug level.
	quiet atomic.Bool
}

// modernCall is one request whose POST is in flight.
type modernCall struct {
	id     []byte
	key    string          // idKey(id)
	ctx    context.Context // the POST's: ends with Close, the cancellation or the call
	cancel context.CancelFunc
	// aborted is set when the caller cancelled the request: its POST is
	// aborted and nothing more is delivered for it, not even an error (the
	// caller has stopped waiting).
	aborted atomic.Bool
}

// connectStateless returns a stateless connection; it does no I/O.
func (t *HTTPTransport) connectStateless(ctx context.Context, meta *requestMeta) *modernConn {
	// The connection outlives ctx but keeps its values (a session's identity for credentials).
	cctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	return &modernConn{
		t:        t,
		name:     t.spec.Name,
		log:      t.spec.logger(),
		maxMsg:   t.spec.maxMessageBytes(),
		meta:     meta,
		ctx:      cctx,
		cancel:   cancel,
		queue:    make(chan Incoming, queueLen),
		inflight: map[string]*modernCall{},
	}
}

// Read returns the next message: a response, or a notification sent on a
// request's response stream, with Related set to that request's id.
func (c *modernConn) Read(ctx context.Context) (Incoming, error) {
	select {
	case in := <-c.queue:
		return in, nil
	case <-c.ctx.Done():
		return Incoming{}, fmt.Errorf("upstream %s: %w", c.name, errClosed)
	case <-ctx.Done():
		return Incoming{}, ctx.Err()
	}
}

// Write sends msg.
//
//   - A request is POSTed by a goroutine of its own, with its params._meta
//     completed (see requestMeta.inject) and the request metadata headers.
//     Write returns once the body has been handed to the HTTP transport; the
//     outcome arrives through Read. The POST is bound to no timeout of ours:
//     a subscriptions/listen stream stays open until the server ends it or
//     the caller cancels it.
//   - notifications/cancelled aborts the POST of the request it names:
//     "Closing the SSE response stream MUST be treated by the server as
//     cancellation of that request", and the notification itself "is used
//     only on the stdio transport". Nothing is delivered for that request
//     afterwards.
//   - Other notifications and every response are dropped (logged at debug
//     level): "This revision of the core protocol defines no
//     client-to-server notifications over Streamable HTTP", and "The client
//     MUST NOT send JSON-RPC responses".
func (c *modernConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if msg.Kind() == jsonrpc.KindInvalid {
		return fmt.Errorf("upstream %s: write: %w", c.name, errNotMessage)
	}
	if c.ctx.Err() != nil {
		return fmt.Errorf("upstream %s: write: %w", c.name, errClosed)
	}
	switch msg.Kind() {
	case jsonrpc.KindRequest:
		return c.request(ctx, msg, nil)
	case jsonrpc.KindNotification:
		if msg.MethodIs(methodCancelled) {
			c.abort(msg)
			return nil
		}
		c.log.Debug("dropping notification: a stateless HTTP upstream takes none", "method", msg.Method())
	default:
		c.log.Debug("dropping response: a stateless HTTP upstream sends no requests")
	}
	return nil
}

var _ paramWriter = (*modernConn)(nil)

// request starts the POST of a request and waits until its body is handed
// over (or ctx ends; the outcome still arrives through Read).
func (c *modernConn) request(ctx context.Context, msg jsonrpc.Message, params []Param) error {
	body, err := c.meta.inject(nil, msg)
	if err != nil {
		return fmt.Errorf("upstream %s: write %s: %w", c.name, msg.Method(), err)
	}
	method := msg.Method()
	h := http.Header{}
	h.Set(headerProtocolVersion, protocol.Modern)
	h.Set(headerMethod, method)
	if p := nameParam(method); p != "" {
		if v, ok := jsonrpc.LookupString(msg.Params(), p); ok {
			h.Set(headerName, headerSafe(v))
		}
	}
	for _, p := range params {
		if k := http.CanonicalHeaderKey(p.Header); strings.HasPrefix(k, protocol.HeaderParamPrefix) {
			h.Set(k, headerSafe(p.Value))
		}
	}
	call := &modernCall{id: bytes.Clone(msg.ID())}
	call.key = idKey(call.id)
	// The POST lives as long as the connection or until cancelled, not as
	// long as the caller's ctx, but carries the caller's values (trace
	// context, identity) into RequestHeaders.
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(c.ctx, cancel)
	call.ctx, call.cancel = rctx, func() { stop(); cancel() }

	handed := newHandoff()

	c.mu.Lock()
	switch {
	case c.closing:
		c.mu.Unlock()
		call.cancel()
		return fmt.Errorf("upstream %s: write: %w", c.name, errClosed)
	case c.inflight[call.key] != nil:
		c.mu.Unlock()
		call.cancel()
		// "MUST NOT match the ID of any other request the sender has issued
		// and not yet received a response for."
		return fmt.Errorf("upstream %s: write: request id %s is already in flight", c.name, call.id)
	}
	c.inflight[call.key] = call
	c.wg.Add(1)
	c.mu.Unlock()
	go func() {
		defer c.wg.Done()
		defer handed.done()
		defer c.done(call)
		c.roundTrip(rctx, call, body, h, handed)
	}()
	return handed.wait(ctx, c.name)
}

// done ends a call whose goroutine is finishing.
func (c *modernConn) done(call *modernCall) {
	call.cancel()
	c.forget(call)
}

// forget removes a call from the in-flight set.
func (c *modernConn) forget(call *modernCall) {
	c.mu.Lock()
	if c.inflight[call.key] == call {
		delete(c.inflight, call.key)
	}
	c.mu.Unlock()
}

// abort cancels the POST of the request a notifications/cancelled names.
func (c *modernConn) abort(msg jsonrpc.Message) {
	s, e, ok := jsonrpc.Lookup(msg.Params(), "requestId")
	if !ok {
		c.log.Debug("dropping notifications/cancelled without a requestId")
		return
	}
	key := idKey(msg.Params()[s:e])
	c.mu.Lock()
	call := c.inflight[key]
	c.mu.Unlock()
	if call == nil {
		c.log.Debug("cancelled request is not in flight (already answered)")
		return
	}
	call.aborted.Store(true)
	call.cancel()
	c.log.Debug("cancelled request: closed its response stream")
}

// roundTrip POSTs one request and delivers its response, the notifications
// on its response stream, or an error response.
func (c *modernConn) roundTrip(ctx context.Context, call *modernCall, body []byte, h http.Header, handed *handoff) {
	req, err := c.t.newRequest(ctx, http.MethodPost, c.t.url, body, handed)
	if err != nil {
		c.fail(call, err.Error())
		return
	}
	// The protocol's headers last, so that configured ones cannot override them.
	for k, v := range h {
		req.Header[k] = v
	}
	resp, err := c.t.do(req)
	handed.done() // the request is as handed over as it will ever be
	if err != nil {
		c.fail(call, err.Error())
		return
	}
	defer c.drain(call, resp)
	if resp.StatusCode != http.StatusOK {
		c.statusError(call, resp)
		return
	}
	switch ct := mediaType(resp.Header); ct {
	case mediaJSON:
		err = c.readJSON(ctx, call, resp.Body)
	case mediaEventStream:
		err = c.readStream(ctx, call, resp.Body)
	default:
		err = fmt.Errorf("unexpected response content type %q", ct)
	}
	if err != nil {
		c.fail(call, err.Error())
	}
}

// drainWait bounds the wait for the rest of a response body once the
// response has been read: the final response "SHOULD terminate the stream",
// and reading to its end lets the HTTP connection be reused, but a server
// that keeps the stream open must not hold the call's goroutine.
const drainWait = time.Second

// drain reads what is left of a response body, for a bounded time, and
// closes it.
func (c *modernConn) drain(call *modernCall, resp *http.Response) {
	drainWithin(resp.Body, call.cancel)
	resp.Body.Close()
}

// drainWithin reads what is left of body (at most 64 KiB, as discard does) for at most drainWait; past that, stop
// ends the read (cancelling the request, or closing the body). The timer's goroutine, if it fired, is waited for,
// so that it never outlives the read's owner.
func drainWithin(body io.Reader, stop func()) {
	fired := make(chan struct{})
	t := time.AfterFunc(drainWait, func() { defer close(fired); stop() })
	_, _ = io.Copy(io.Discard, io.LimitReader(body, 64<<10))
	if !t.Stop() {
		<-fired
	}
}

// statusError turns a non-200 answer into the request's error response.
// Modern servers answer errors with a status and a JSON-RPC error body: 400
// with -32022 (unsupported version), -32021 (missing capability), -32020
// (header mismatch) or -32602, 404 with -32601. That error is delivered as
// the upstream sent it (code, message and data), with the request's id
// ("The HTTP response body MAY comprise a JSON-RPC error response that has
// no id"); without one, an error -32603 naming the status is synthesized.
func (c *modernConn) statusError(call *modernCall, resp *http.Response) {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxStatusBody))
	body = bytes.TrimSpace(body)
	// The error object is taken whatever the id beside it (absent, null or
	// ours), and checked by parsing the response rebuilt around it.
	if s, e, ok := jsonrpc.Lookup(body, "error"); ok {
		raw := append(append(append([]byte(`{"jsonrpc":"2.0","id":`), call.id...), `,"error":`...), body[s:e]...)
		m, err := jsonrpc.Parse(append(raw, '}'))
		if _, coded := m.ErrorCode(); err == nil && coded {
			c.log.Debug("upstream answered with an error status", "status", resp.StatusCode)
			c.deliver(call, Incoming{Msg: m, Related: call.id})
			return
		}
	}
	c.fail(call, "HTTP "+resp.Status)
}

// readJSON reads an application/json response: one JSON-RPC response.
func (c *modernConn) readJSON(ctx context.Context, call *modernCall, body io.Reader) error {
	data, err := io.ReadAll(io.LimitReader(body, int64(c.maxMsg)+1))
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("reading response body: %w", err)
	}
	if len(data) > c.maxMsg {
		return fmt.Errorf("response larger than %d bytes", c.maxMsg)
	}
	m, err := jsonrpc.Parse(bytes.TrimSpace(data))
	if err != nil {
		return fmt.Errorf("bad JSON response body: %w", err)
	}
	if m.Kind() != jsonrpc.KindResponse || !sameID(m.ID(), call.id) {
		return errors.New("JSON response body did not contain the response")
	}
	c.deliver(call, Incoming{Msg: m, Related: call.id})
	return nil
}

// readStream reads the request's own SSE stream until its response. The
// server "MAY send JSON-RPC notifications [...] before the final response.
// These notifications MUST relate to the originating client request", so
// each is delivered with Related = the request's id; a subscriptions/listen
// stream carries notifications only, for as long as it stays open. Streams
// are not resumable in this era: a stream that ends before the response
// fails the request.
func (c *modernConn) readStream(ctx context.Context, call *modernCall, body io.Reader) error {
	r := sse.NewReader(body, c.maxMsg)
	for {
		ev, err := r.Next()
		if err != nil {
			switch {
			case ctx.Err() != nil:
				return ctx.Err()
			case errors.Is(err, sse.ErrTooLarge):
				return fmt.Errorf("message larger than %d bytes", c.maxMsg)
			}
			return fmt.Errorf("response stream ended before the response: %w", err)
		}
		if len(ev.Data) == 0 {
			continue
		}
		if ev.Name != "" && ev.Name != "message" {
			c.log.Debug("skipping SSE event of unknown type", "event", ev.Name)
			continue
		}
		m, err := jsonrpc.Parse(ev.Data) // ev.Data is ours
		if err != nil {
			c.log.Warn("skipping SSE event that is not a JSON-RPC message", "error", err, "data", truncate(ev.Data, maxLoggedLine))
			continue
		}
		switch m.Kind() {
		case jsonrpc.KindRequest:
			// "The server MUST NOT send independent JSON-RPC requests on
			// this stream": nobody could answer it (responses are not POSTed).
			c.log.Warn("dropping a request sent on a response stream, which the modern protocol forbids", "method", m.Method())
			continue
		case jsonrpc.KindResponse:
			if !sameID(m.ID(), call.id) {
				c.log.Debug("dropping a response to another request on a response stream")
				continue
			}
		}
		if !c.deliver(call, Incoming{Msg: m, Related: call.id}) {
			return ctx.Err()
		}
		if m.Kind() == jsonrpc.KindResponse {
			return nil
		}
	}
}

// deliver queues a message for Read, blocking while the queue is full
// (back-pressure). It reports false if the request was cancelled or the
// connection closed first: a cancelled request delivers nothing more.
func (c *modernConn) deliver(call *modernCall, in Incoming) bool {
	if call.aborted.Load() {
		return false
	}
	if in.Msg.Kind() == jsonrpc.KindResponse {
		// Answered: from now on the caller may reuse the id, and a
		// cancellation of it has nothing left to cancel.
		c.forget(call)
	}
	select {
	case c.queue <- in:
		return true
	case <-call.ctx.Done():
		return false
	}
}

// fail synthesizes the error response for a request whose POST failed, so
// that the caller never waits forever for it, unless the caller cancelled
// it (it no longer waits) or the connection is closing.
func (c *modernConn) fail(call *modernCall, what string) {
	if call.aborted.Load() || c.ctx.Err() != nil {
		c.log.Debug("request ended after cancellation", "detail", what)
		return
	}
	level := slog.LevelWarn
	if c.quiet.Load() {
		level = slog.LevelDebug
	}
	c.log.Log(context.Background(), level, "upstream request failed", "error", what)
	raw := jsonrpc.AppendError(nil, call.id, protocol.CodeInternalError, fmt.Sprintf("upstream %s: %s", c.name, what), nil)
	m, err := jsonrpc.Parse(raw)
	if err != nil {
		c.log.Error("cannot build error response", "error", err)
		return
	}
	c.deliver(call, Incoming{Msg: m, Related: call.id})
}

// Close aborts every request in flight and waits for their goroutines.
// There is no session to end.
func (c *modernConn) Close() error {
	c.closeOnce.Do(func() {
		c.mu.Lock()
		c.closing = true
		c.mu.Unlock()
		c.cancel()
		c.wg.Wait()
	})
	return nil
}

// idKey maps a raw JSON-RPC id to a comparable key that agrees with sameID:
// a string by its decoded value, a number by its numeric value.
func idKey(id []byte) string {
	if len(id) > 0 && id[0] == '"' {
		if s, err := jsonrpc.Unquote(id); err == nil {
			return "s" + s
		}
		return "r" + string(id)
	}
	var n json.Number
	if json.Unmarshal(id, &n) == nil {
		if f, err := n.Float64(); err == nil {
			return "n" + strconv.FormatFloat(f, 'g', -1, 64)
		}
	}
	return "r" + string(id)
}

// WriteParams is Write for a tools/call whose arguments the upstream wants mirrored in Mcp-Param-{Name} headers:
// "clients MUST mirror" the values of parameters marked x-mcp-header, and only the caller knows the tool's
// schema. The values are encoded as the spec has it; headers of other names are not sent, so that they cannot
// override the protocol's own.
func (c *modernConn) WriteParams(ctx context.Context, msg jsonrpc.Message, params []Param) error {
	if msg.Kind() == jsonrpc.KindInvalid {
		return fmt.Errorf("upstream %s: write: %w", c.name, errNotMessage)
	}
	if c.ctx.Err() != nil {
		return fmt.Errorf("upstream %s: write: %w", c.name, errClosed)
	}
	if msg.Kind() != jsonrpc.KindRequest {
		return c.Write(ctx, msg)
	}
	return c.request(ctx, msg, params)
}
