package upstream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
	"github.com/switchboard-mcp/switchboard/upstream/sse"
)

// SSE streams over Streamable HTTP: a POST's response stream with its resumption by GET and Last-Event-ID, and
// the standalone GET stream that carries what the server sends unrelated to any request.

const headerLastEventID = "Last-Event-ID"

// maxResumeFailures bounds consecutive resumptions of a POST's SSE stream
// that bring no new event; a stream that makes progress may be resumed
// any number of times (servers may "poll" by closing the connection).
const maxResumeFailures = 5

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
			drainStream(body)
			return true, progressed, nil
		}
	}
}

// drainStream reads what is left of a POST's event stream once its answer came, for at most drainWait: "after
// the JSON-RPC response has been sent, the server SHOULD close the SSE stream", and a body read to its end
// returns the connection to the pool, where one closed early is dropped and the next request dials anew (the
// benchmark saw a dial every few calls). A server that keeps the stream open, or sends more than 64 KiB, only
// costs that reuse.
func drainStream(body io.ReadCloser) {
	drainWithin(body, func() { _ = body.Close() })
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
			id, r, progressed := c.readGetStream(resp)
			if id != "" {
				lastID = id
			}
			retry = r
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

// readGetStream delivers the messages of one standalone GET stream until it
// ends, and closes it. It returns the last event id (where to resume), the
// server's last retry field, and whether any event arrived.
func (c *httpConn) readGetStream(resp *http.Response) (lastEventID string, retry time.Duration, progressed bool) {
	r := sse.NewReader(resp.Body, c.maxMsg)
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
	return r.LastEventID(), r.Retry(), progressed
}

// get opens an SSE stream with GET, resuming after lastEventID if set.
func (c *httpConn) get(ctx context.Context, lastEventID string) (*http.Response, error) {
	req, err := c.newRequest(ctx, http.MethodGet, c.t.url, nil, nil, true)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", mediaEventStream)
	if lastEventID != "" {
		req.Header.Set(headerLastEventID, lastEventID)
	}
	return c.t.do(req)
}
