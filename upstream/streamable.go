package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
	"github.com/switchboard-mcp/switchboard/upstream/sse"
)

const (
	headerSessionID       = "Mcp-Session-Id"
	headerProtocolVersion = "Mcp-Protocol-Version"
	headerLastEventID     = "Last-Event-ID"

	mediaJSON        = "application/json"
	mediaEventStream = "text/event-stream"

	// maxResumeFailures bounds consecutive resumptions of a POST's SSE stream
	// that bring no new event; a stream that makes progress may be resumed
	// any number of times (servers may "poll" by closing the connection).
	maxResumeFailures = 5
	// deleteTimeout bounds the best-effort DELETE sent by Close.
	deleteTimeout = 5 * time.Second
	// maxErrorBody bounds how much of an HTTP error body is read to find a
	// JSON-RPC error message in it.
	maxErrorBody = 4 << 10
)

// HTTPTransport connects to a remote MCP server over Streamable HTTP. [Dial]
// first probes for the stateless modern era (2026-07-28, see
// Spec.Protocol); a legacy server gets Streamable HTTP (2025-11-25), falling
// back to the legacy HTTP+SSE transport (2024-11-05) when the server rejects
// the initialize POST.
type HTTPTransport struct {
	spec   Spec
	url    *url.URL
	client *http.Client
	eras   eraCache
}

// do sends a request, keeping the URL's query string (where API keys often live) out of the error: errors
// travel to logs, /readyz and clients' error messages.
func (t *HTTPTransport) do(req *http.Request) (*http.Response, error) {
	resp, err := t.client.Do(req)
	var ue *url.Error
	if err != nil && errors.As(err, &ue) {
		if u, perr := url.Parse(ue.URL); perr == nil {
			u.RawQuery, u.User, u.Fragment = "", nil, ""
			ue.URL = u.String()
		}
	}
	return resp, err
}

func newHTTPTransport(spec Spec, u *url.URL) *HTTPTransport {
	t := &HTTPTransport{spec: spec, url: u, client: spec.HTTPClient}
	if t.client == nil {
		// No overall timeout: SSE streams are long-lived. Every request is
		// bound to the connection's context instead.
		tr := http.DefaultTransport.(*http.Transport).Clone()
		// Many calls run at once on one upstream: keep their connections for reuse (the default keeps two per
		// host, so most requests would dial anew; the benchmark showed dialing at 15% of the gateway's CPU).
		tr.MaxIdleConns = 0
		tr.MaxIdleConnsPerHost = 1024
		t.client = &http.Client{Transport: tr}
	}
	return t
}

func (t *HTTPTransport) upstreamSpec() Spec { return t.spec }

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
	initReq   []byte // our initialize request, resent on session expiry
	initID    []byte // its id (aliases initReq)
	getLoop   bool   // the standalone GET stream has been started
	legacy    *legacySession

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
func (c *httpConn) Write(ctx context.Context, raw []byte) error {
	raw = bytes.Clone(raw) // the POST may outlive the caller's buffer
	msg, err := jsonrpc.Parse(raw)
	if err != nil {
		return fmt.Errorf("upstream %s: write: %w", c.name, err)
	}
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
	handed := make(chan struct{})
	var once sync.Once
	onHanded := func() { once.Do(func() { close(handed) }) }
	// The POST lives as long as the connection, not the caller's ctx, but carries the caller's values (trace
	// context, identity) into RequestHeaders.
	rctx, stop := c.bind(context.WithoutCancel(ctx))
	if !c.spawn(func() { defer stop(); defer onHanded(); c.roundTrip(rctx, msg, onHanded) }) {
		stop()
		return fmt.Errorf("upstream %s: write: %w", c.name, errClosed)
	}
	select {
	case <-handed:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("upstream %s: write: %w", c.name, ctx.Err())
	}
}

// send POSTs a notification or response and waits for its acceptance:
// "If the input is a JSON-RPC response or notification: If the server
// accepts the input, the server MUST return HTTP status code 202 Accepted
// with no body."
func (c *httpConn) send(ctx context.Context, msg jsonrpc.Message) error {
	ctx, stop := c.bind(ctx)
	defer stop()
	if ls := c.legacySession(); ls != nil {
		if err := ls.post(ctx, msg.Raw(), nil); err != nil {
			return fmt.Errorf("upstream %s: %w", c.name, err)
		}
		return nil
	}
	resp, err := c.post(ctx, msg.Raw(), nil)
	if err != nil {
		return fmt.Errorf("upstream %s: post %s: %w", c.name, msg.Kind(), err)
	}
	defer discard(resp)
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("upstream %s: post %s: %w", c.name, msg.Kind(), httpStatusError(resp))
	}
	if msg.MethodIs(methodInitialized) {
		c.startGetStream()
	}
	return nil
}

// bind returns a context that ends with ctx or with the connection.
func (c *httpConn) bind(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(c.ctx, cancel)
	return ctx, func() { stop(); cancel() }
}

// roundTrip POSTs a request and delivers its response, everything sent on
// its response stream, or a synthesized error.
func (c *httpConn) roundTrip(ctx context.Context, msg jsonrpc.Message, handed func()) {
	id := msg.ID()
	if ls := c.legacySession(); ls != nil {
		if err := ls.post(ctx, msg.Raw(), handed); err != nil {
			c.deliverError(id, err.Error())
		}
		return
	}
	isInit := msg.MethodIs(methodInitialize)
	resp, err := c.post(ctx, msg.Raw(), handed)
	if err != nil {
		c.deliverError(id, err.Error())
		return
	}
	if isInit && isLegacyHint(resp.StatusCode) {
		// "If it fails with an HTTP 4xx status code (e.g., 405 Method Not
		// Allowed or 404 Not Found): Issue a GET request to the server URL,
		// expecting that this will open an SSE stream and return an endpoint
		// event as the first event." (2025-11-25 narrows this to 400, 404
		// and 405.)
		status := resp.Status
		discard(resp)
		if err := c.startLegacy(msg.Raw()); err != nil {
			c.deliverError(id, fmt.Sprintf("initialize failed with HTTP %s, and the legacy HTTP+SSE fallback failed too: %v", status, err))
		}
		return
	}
	emit := func(in Incoming) bool { return c.deliver(in) }
	if isInit {
		emit = func(in Incoming) bool {
			if m := in.Msg; m.Kind() == jsonrpc.KindResponse && sameID(m.ID(), id) {
				c.learnProtocol(m.Result())
			}
			return c.deliver(in)
		}
	}
	if err := c.readResponse(id, resp, isInit, emit); err != nil {
		if c.ctx.Err() == nil {
			c.deliverError(id, err.Error())
		}
	}
}

// isLegacyHint reports whether an initialize POST's status suggests a legacy
// HTTP+SSE server.
func isLegacyHint(status int) bool {
	return status == http.StatusBadRequest || status == http.StatusNotFound || status == http.StatusMethodNotAllowed
}

// readResponse handles the response to a request POST: "the server MUST
// either return Content-Type: text/event-stream, to initiate an SSE stream,
// or Content-Type: application/json, to return one JSON object. The client
// MUST support both these cases." It returns an error if the request's
// response could not be obtained.
func (c *httpConn) readResponse(id []byte, resp *http.Response, isInit bool, emit func(Incoming) bool) error {
	defer discard(resp)
	if resp.StatusCode != http.StatusOK {
		return httpStatusError(resp)
	}
	if isInit {
		if err := c.learnSession(resp.Header); err != nil {
			return err
		}
	}
	switch ct := mediaType(resp.Header); ct {
	case mediaJSON:
		return c.readJSON(id, resp.Body, emit)
	case mediaEventStream:
		return c.readStream(id, resp.Body, emit)
	default:
		return fmt.Errorf("unexpected response content type %q", ct)
	}
}

// readJSON reads an application/json response body: one response, or (in
// 2025-03-26) a batch of them.
func (c *httpConn) readJSON(id []byte, body io.Reader, emit func(Incoming) bool) error {
	data, err := io.ReadAll(io.LimitReader(body, int64(c.maxMsg)+1))
	if err != nil {
		return fmt.Errorf("reading response body: %w", err)
	}
	if len(data) > c.maxMsg {
		return fmt.Errorf("response larger than %d bytes", c.maxMsg)
	}
	elems := [][]byte{data}
	if jsonrpc.IsBatch(data) {
		if elems, err = jsonrpc.SplitBatch(data); err != nil {
			return fmt.Errorf("bad JSON response body: %w", err)
		}
	}
	found := false
	for _, e := range elems {
		m, err := jsonrpc.Parse(e)
		if err != nil {
			return fmt.Errorf("bad JSON response body: %w", err)
		}
		found = found || (m.Kind() == jsonrpc.KindResponse && sameID(m.ID(), id))
		if !emit(Incoming{Msg: m, Related: id}) {
			return c.ctx.Err()
		}
	}
	if !found {
		return errors.New("JSON response body did not contain the response")
	}
	return nil
}

// readStream reads a POST's SSE stream until the request's response arrives,
// resuming it if the connection drops: "If the SSE stream is disconnected
// [...] the client MAY [...] attempt to resume the stream by issuing an HTTP
// GET to the MCP endpoint and including the Last-Event-ID header", and "the
// client MUST respect the retry field, waiting the given number of
// milliseconds before attempting to reconnect".
func (c *httpConn) readStream(id []byte, body io.ReadCloser, emit func(Incoming) bool) error {
	var (
		cursor   string        // last event id seen: where to resume
		retry    time.Duration // the server's last retry field
		failures int           // resumptions in a row without a new event
	)
	for {
		got, progressed, err := c.readEvents(id, body, &cursor, &retry, emit)
		if got {
			return nil
		}
		if c.ctx.Err() != nil {
			return c.ctx.Err()
		}
		if errors.Is(err, sse.ErrTooLarge) {
			return fmt.Errorf("message larger than %d bytes", c.maxMsg)
		}
		if cursor == "" {
			return fmt.Errorf("response stream ended before the response and cannot be resumed (no event id): %w", err)
		}
		if progressed {
			failures = 0
		}
		body = nil
		for body == nil {
			if failures >= maxResumeFailures {
				return fmt.Errorf("response stream ended before the response; gave up after %d resumptions: %w", failures, err)
			}
			delay := retry
			if delay <= 0 {
				delay = Backoff{}.Delay(failures)
			}
			failures++
			c.log.Debug("resuming response stream", "attempt", failures, "delay", delay)
			if !c.sleep(delay) {
				return c.ctx.Err()
			}
			resp, gerr := c.get(c.ctx, cursor)
			switch {
			case gerr != nil:
				if c.ctx.Err() != nil {
					return c.ctx.Err()
				}
				err = gerr
			case resp.StatusCode == http.StatusOK && mediaType(resp.Header) == mediaEventStream:
				body = resp.Body
			case resp.StatusCode/100 == 5:
				err = httpStatusError(resp)
				discard(resp)
			default:
				// 404 (session gone), 405 (no resumption) and the like will
				// not get better by retrying.
				what := httpStatusError(resp)
				discard(resp)
				return fmt.Errorf("resuming the response stream failed: %w", what)
			}
		}
	}
}

// readEvents reads one SSE connection, delivering messages, until the
// response for id arrives (got) or the stream fails. It closes body and
// reports whether any event arrived.
func (c *httpConn) readEvents(id []byte, body io.ReadCloser, cursor *string, retry *time.Duration, emit func(Incoming) bool) (got, progressed bool, err error) {
	defer body.Close()
	r := sse.NewReader(body, c.maxMsg)
	for {
		ev, err := r.Next()
		if err != nil {
			return false, progressed, err
		}
		progressed = true
		*cursor = r.LastEventID()
		if d := r.Retry(); d > 0 {
			*retry = d
		}
		if len(ev.Data) == 0 {
			continue // priming event: only an id for resumption
		}
		m, ok := c.parseEvent(ev)
		if !ok {
			continue
		}
		if !emit(Incoming{Msg: m, Related: id}) {
			return false, progressed, c.ctx.Err()
		}
		if m.Kind() == jsonrpc.KindResponse && sameID(m.ID(), id) {
			return true, progressed, nil
		}
	}
}

// parseEvent turns an SSE event into a message, logging and skipping what is
// not one.
func (c *httpConn) parseEvent(ev sse.Event) (jsonrpc.Message, bool) {
	if ev.Name != "" && ev.Name != "message" {
		c.log.Debug("skipping SSE event of unknown type", "event", ev.Name)
		return jsonrpc.Message{}, false
	}
	m, err := jsonrpc.Parse(ev.Data) // ev.Data is ours
	if err != nil {
		c.log.Warn("skipping SSE event that is not a JSON-RPC message", "error", err, "data", truncate(ev.Data, maxLoggedLine))
		return jsonrpc.Message{}, false
	}
	return m, true
}

// startGetStream opens the standalone GET stream once the session is
// initialized: "The client MAY issue an HTTP GET to the MCP endpoint. This
// can be used to open an SSE stream, allowing the server to communicate to
// the client, without the client first sending data via HTTP POST."
//
// It waits (a bounded while) for the server's first answer to the GET, so that a server that sends requests
// on the GET stream right after initialization (roots/list is typical) has the stream open before the caller's
// first request: otherwise such a request can be lost between the two.
func (c *httpConn) startGetStream() {
	c.mu.Lock()
	started := c.getLoop
	c.getLoop = true
	c.mu.Unlock()
	if started || !c.spawn(c.runGetStream) {
		return
	}
	t := time.NewTimer(getStreamWait)
	defer t.Stop()
	select {
	case <-c.getAnswered:
	case <-t.C:
	case <-c.ctx.Done():
	}
}

// getStreamWait bounds how long the handshake waits for the GET stream to open.
const getStreamWait = 5 * time.Second

// runGetStream keeps the standalone GET stream open, reconnecting with
// backoff and Last-Event-ID until the connection ends.
func (c *httpConn) runGetStream() {
	var (
		lastID, lastSession string
		attempt             int
		retry               time.Duration
	)
	for c.ctx.Err() == nil {
		sid, _ := c.headers()
		if sid != lastSession {
			lastID, lastSession = "", sid // event ids are per session
		}
		resp, err := c.get(c.ctx, lastID)
		c.getOnce.Do(func() { close(c.getAnswered) })
		switch {
		case err != nil:
			if c.ctx.Err() != nil {
				return
			}
			c.log.Debug("standalone GET stream failed", "error", err)
		case resp.StatusCode == http.StatusMethodNotAllowed:
			// "The server MUST either return Content-Type: text/event-stream
			// in response to this HTTP GET, or else return HTTP 405 Method
			// Not Allowed, indicating that the server does not offer an SSE
			// stream at this endpoint."
			discard(resp)
			c.log.Debug("upstream offers no standalone GET stream")
			return
		case resp.StatusCode == http.StatusNotFound && sid != "":
			discard(resp)
			if c.reinit(sid) != nil {
				return // the connection has ended
			}
		case resp.StatusCode == http.StatusOK && mediaType(resp.Header) == mediaEventStream:
			r := sse.NewReader(resp.Body, c.maxMsg)
			progressed := false
			for {
				ev, err := r.Next()
				if err != nil {
					if c.ctx.Err() == nil && !errors.Is(err, io.EOF) {
						c.log.Debug("standalone GET stream ended", "error", err)
					}
					break
				}
				progressed = true
				if len(ev.Data) == 0 {
					continue
				}
				if m, ok := c.parseEvent(ev); ok && !c.deliver(Incoming{Msg: m}) {
					break
				}
			}
			discard(resp)
			if id := r.LastEventID(); id != "" {
				lastID = id
			}
			retry = r.Retry()
			if progressed {
				attempt = 0
			}
		case resp.StatusCode/100 == 4 && resp.StatusCode != http.StatusRequestTimeout && resp.StatusCode != http.StatusTooManyRequests:
			c.log.Warn("standalone GET stream refused; continuing without it", "status", resp.StatusCode)
			discard(resp)
			return
		default:
			c.log.Debug("standalone GET stream failed", "status", resp.StatusCode, "contentType", mediaType(resp.Header))
			discard(resp)
		}
		delay := retry
		if delay <= 0 {
			delay = Backoff{}.Delay(attempt)
		}
		attempt++
		if !c.sleep(delay) {
			return
		}
	}
}

// reinit replaces an expired session: "When a client receives HTTP 404 in
// response to a request containing an MCP-Session-Id, it MUST start a new
// session by sending a new InitializeRequest without a session ID attached."
// The stored initialize request and notifications/initialized are resent;
// the caller of the connection is not involved. stale is the session id the
// failed request carried; if another goroutine has already replaced it,
// reinit returns at once. A failed re-initialization ends the connection.
func (c *httpConn) reinit(stale string) error {
	c.reinitMu.Lock()
	defer c.reinitMu.Unlock()
	sid, _ := c.headers()
	if sid != stale {
		return nil
	}
	if err := c.ctx.Err(); err != nil {
		return err
	}
	c.log.Info("upstream session expired (HTTP 404); re-initializing")
	if err := c.reinitialize(); err != nil {
		err = fmt.Errorf("upstream %s: re-initialize after session expiry: %w", c.name, err)
		c.log.Warn("re-initialization failed; ending the connection", "error", err)
		c.finish(err, false)
		return err
	}
	return nil
}

func (c *httpConn) reinitialize() error {
	c.mu.Lock()
	initReq := c.initReq
	c.mu.Unlock()
	if initReq == nil {
		return errors.New("no initialize request to resend")
	}
	init, err := jsonrpc.Parse(initReq)
	if err != nil {
		return err
	}
	id := init.ID()
	resp, err := c.do(c.ctx, http.MethodPost, c.t.url.String(), initReq, nil, false)
	if err != nil {
		return err
	}
	var result jsonrpc.Message
	err = c.readResponse(id, resp, true, func(in Incoming) bool {
		if m := in.Msg; m.Kind() == jsonrpc.KindResponse && sameID(m.ID(), id) {
			result = m
		} else {
			c.log.Debug("dropping message sent during re-initialization", "kind", m.Kind().String(), "method", m.Method())
		}
		return true
	})
	if err != nil {
		return err
	}
	if e := result.Error(); e != nil {
		return fmt.Errorf("initialize failed: %s", describeRPCError(e))
	}
	old := c.protocolVersion()
	c.learnProtocol(result.Result())
	if v := c.protocolVersion(); v != old {
		c.log.Warn("upstream negotiated a different protocol version on re-initialization", "was", old, "now", v)
	}
	resp, err = c.do(c.ctx, http.MethodPost, c.t.url.String(), jsonrpc.AppendNotification(nil, methodInitialized, nil), nil, true)
	if err != nil {
		return err
	}
	defer discard(resp)
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s: %w", methodInitialized, httpStatusError(resp))
	}
	return nil
}

// post POSTs body to the MCP endpoint. A 404 to a request that carried a
// session id means the session expired: post re-initializes and retries once.
func (c *httpConn) post(ctx context.Context, body []byte, handed func()) (*http.Response, error) {
	for attempt := 0; ; attempt++ {
		sid, _ := c.headers()
		resp, err := c.do(ctx, http.MethodPost, c.t.url.String(), body, handed, true)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode != http.StatusNotFound || sid == "" || attempt > 0 {
			return resp, nil
		}
		discard(resp)
		if err := c.reinit(sid); err != nil {
			return nil, err
		}
	}
}

// get opens an SSE stream with GET, resuming after lastEventID if set.
func (c *httpConn) get(ctx context.Context, lastEventID string) (*http.Response, error) {
	req, err := c.newRequest(ctx, http.MethodGet, c.t.url.String(), nil, nil, true)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", mediaEventStream)
	if lastEventID != "" {
		req.Header.Set(headerLastEventID, lastEventID)
	}
	return c.t.do(req)
}

// do sends one request to url with the MCP headers. withSession adds the
// session id and negotiated protocol version ("the client MUST include the
// MCP-Protocol-Version: <protocol-version> HTTP header on all subsequent
// requests"); an initialize request goes without either.
func (c *httpConn) do(ctx context.Context, method, target string, body []byte, handed func(), withSession bool) (*http.Response, error) {
	req, err := c.newRequest(ctx, method, target, body, handed, withSession)
	if err != nil {
		return nil, err
	}
	resp, err := c.t.do(req)
	if handed != nil {
		handed() // the request is as handed over as it will ever be
	}
	return resp, err
}

func (c *httpConn) newRequest(ctx context.Context, method, target string, body []byte, handed func(), withSession bool) (*http.Request, error) {
	req, err := c.t.newRequest(ctx, method, target, body, handed)
	if err != nil {
		return nil, err
	}
	if withSession {
		sid, proto := c.headers()
		if sid != "" {
			req.Header.Set(headerSessionID, sid)
		}
		if proto != "" {
			req.Header.Set(headerProtocolVersion, proto)
		}
	}
	return req, nil
}

// newRequest builds a request to target with the configured headers, then
// the body's: what every request of either era carries. handed, if set, is
// called once the HTTP transport has consumed the body.
func (t *HTTPTransport) newRequest(ctx context.Context, method, target string, body []byte, handed func()) (*http.Request, error) {
	var rd io.Reader
	if body != nil {
		rd = &handoffReader{r: bytes.NewReader(body), handed: handed}
	}
	req, err := http.NewRequestWithContext(ctx, method, target, rd)
	if err != nil {
		return nil, err
	}
	// Configured headers first, so that they cannot override the protocol's.
	for k, v := range t.spec.Headers {
		req.Header.Set(k, v)
	}
	if f := t.spec.RequestHeaders; f != nil {
		if err := f(ctx, req.Header); err != nil {
			return nil, fmt.Errorf("request headers: %w", err)
		}
	}
	if body != nil {
		req.ContentLength = int64(len(body))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
		req.Header.Set("Content-Type", mediaJSON)
		// "The client MUST include an Accept header, listing both
		// application/json and text/event-stream as supported content
		// types."
		req.Header.Set("Accept", mediaJSON+", "+mediaEventStream)
	}
	return req, nil
}

// handoffReader is a request body that reports when the HTTP transport has
// consumed it (read it all, or closed it): that is when Write returns.
type handoffReader struct {
	r      *bytes.Reader
	handed func()
}

func (h *handoffReader) Read(p []byte) (int, error) {
	n, err := h.r.Read(p)
	if h.r.Len() == 0 && h.handed != nil {
		h.handed()
	}
	return n, err
}

func (h *handoffReader) Close() error {
	if h.handed != nil {
		h.handed()
	}
	return nil
}

// headers returns the current session id and negotiated protocol version.
func (c *httpConn) headers() (sessionID, protocol string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sessionID, c.protocol
}

func (c *httpConn) protocolVersion() string {
	_, p := c.headers()
	return p
}

func (c *httpConn) legacySession() *legacySession {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.legacy
}

// learnSession takes the session id from an initialize response: "A server
// using the Streamable HTTP transport MAY assign a session ID at
// initialization time, by including it in an MCP-Session-Id header on the
// HTTP response containing the InitializeResult." The value is never logged.
func (c *httpConn) learnSession(h http.Header) error {
	sid := h.Get(headerSessionID)
	for i := 0; i < len(sid); i++ {
		// "The session ID MUST only contain visible ASCII characters
		// (ranging from 0x21 to 0x7E)."
		if sid[i] < 0x21 || sid[i] > 0x7e {
			return errors.New("server sent an invalid session id")
		}
	}
	c.mu.Lock()
	c.sessionID = sid
	c.mu.Unlock()
	return nil
}

// learnProtocol records the protocol version from an initialize result
// passing through, for the MCP-Protocol-Version header.
func (c *httpConn) learnProtocol(result []byte) {
	var r struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	if result == nil || json.Unmarshal(result, &r) != nil || r.ProtocolVersion == "" {
		return
	}
	// Only values that are safe in a header.
	for i := 0; i < len(r.ProtocolVersion); i++ {
		if b := r.ProtocolVersion[i]; b < 0x21 || b > 0x7e {
			return
		}
	}
	c.mu.Lock()
	c.protocol = r.ProtocolVersion
	c.mu.Unlock()
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
// failed, so that the caller never waits forever for it.
func (c *httpConn) deliverError(id []byte, what string) {
	text := fmt.Sprintf("upstream %s: %s", c.name, what)
	c.log.Warn("upstream request failed", "error", what)
	raw := jsonrpc.AppendError(nil, id, jsonrpc.CodeInternalError, text, nil)
	m, err := jsonrpc.Parse(raw)
	if err != nil {
		c.log.Error("cannot build error response", "error", err)
		return
	}
	c.deliver(Incoming{Msg: m, Related: m.ID()})
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

func (c *httpConn) deleteSession() {
	ctx, cancel := context.WithTimeout(context.Background(), deleteTimeout)
	defer cancel()
	req, err := c.newRequest(ctx, http.MethodDelete, c.t.url.String(), nil, nil, true)
	if err != nil {
		return
	}
	resp, err := c.t.do(req)
	if err != nil {
		c.log.Debug("session DELETE failed", "error", err)
		return
	}
	discard(resp)
	if resp.StatusCode/100 != 2 && resp.StatusCode != http.StatusMethodNotAllowed && resp.StatusCode != http.StatusNotFound {
		c.log.Debug("session DELETE refused", "status", resp.StatusCode)
	}
}

// mediaType returns the lower-cased media type of a Content-Type header.
func mediaType(h http.Header) string {
	ct := h.Get("Content-Type")
	if mt, _, err := mime.ParseMediaType(ct); err == nil {
		return mt
	}
	mt, _, _ := strings.Cut(ct, ";")
	return strings.ToLower(strings.TrimSpace(mt))
}

// discard drains (a bounded amount of) a response body and closes it, so the
// HTTP connection can be reused.
func discard(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
}

// httpStatusError describes an unexpected HTTP status, including the message
// of a JSON-RPC error in the body if there is one ("The HTTP response body
// MAY comprise a JSON-RPC error response that has no id"). Header values are
// never included: they may carry credentials.
func httpStatusError(resp *http.Response) *StatusError {
	e := &StatusError{Code: resp.StatusCode, text: "HTTP " + resp.Status}
	if mediaType(resp.Header) == mediaJSON {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		if m, err := jsonrpc.Parse(body); err == nil && m.Error() != nil {
			e.text += " (" + describeRPCError(m.Error()) + ")"
		}
	}
	return e
}

// StatusError is an HTTP upstream's answer with a status that is not success: the status, and the JSON-RPC error
// the body carried, if any. It never holds the URL.
type StatusError struct {
	Code int
	text string
}

func (e *StatusError) Error() string { return e.text }
