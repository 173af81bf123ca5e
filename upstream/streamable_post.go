package upstream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
)

// Sending over Streamable HTTP: POSTing requests, notifications and responses, and reading a request's answer
// (one JSON body or an SSE stream).

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

// roundTrip POSTs a request and delivers its response, everything sent on
// its response stream, or a synthesized error.
func (c *httpConn) roundTrip(ctx context.Context, msg jsonrpc.Message, handed *handoff) {
	id := msg.ID()
	if ls := c.legacySession(); ls != nil {
		if err := ls.post(ctx, msg.Raw(), handed); err != nil {
			c.deliverError(id, err)
		}
		return
	}
	isInit := msg.MethodIs(methodInitialize)
	resp, err := c.post(ctx, msg.Raw(), handed)
	if err != nil {
		c.deliverError(id, err)
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
			c.deliverError(id, fmt.Errorf("initialize failed with HTTP %s, and the legacy HTTP+SSE fallback failed too: %w", status, err))
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
			c.deliverError(id, err)
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

// post POSTs body to the MCP endpoint. A 404 to a request that carried a
// session id means the session expired: post re-initializes and retries once.
func (c *httpConn) post(ctx context.Context, body []byte, handed *handoff) (*http.Response, error) {
	for attempt := 0; ; attempt++ {
		sid, _ := c.headers()
		resp, err := c.do(ctx, http.MethodPost, c.t.url, body, handed, true)
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
