package upstream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
	"github.com/switchboard-mcp/switchboard/upstream/sse"
)

// legacySession is the state of an HTTP+SSE (2024-11-05) session: the
// server's messages arrive on one long-lived GET stream, and ours are POSTed
// to the endpoint the server named in that stream's first event.
type legacySession struct {
	c        *httpConn
	endpoint *url.URL
}

// startLegacy falls back to HTTP+SSE after the initialize POST was refused:
// it opens the SSE stream, reads the endpoint event, starts the stream reader
// and POSTs initRaw to the endpoint. The initialize response then arrives on
// the stream like every other server message.
func (c *httpConn) startLegacy(initRaw []byte) error {
	req, err := c.newRequest(c.ctx, http.MethodGet, c.t.url, nil, nil, false)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", mediaEventStream)
	resp, err := c.t.do(req)
	if err != nil {
		return fmt.Errorf("GET for the SSE stream: %w", err)
	}
	if resp.StatusCode != http.StatusOK || mediaType(resp.Header) != mediaEventStream {
		what := httpStatusError(resp)
		discard(resp)
		return fmt.Errorf("GET for the SSE stream: %w, content type %q", what, mediaType(resp.Header))
	}
	r := sse.NewReader(resp.Body, c.maxMsg)
	ev, err := r.Next()
	for err == nil && len(ev.Data) == 0 && ev.Name == "" {
		ev, err = r.Next() // tolerate a priming event
	}
	if err != nil {
		resp.Body.Close()
		return fmt.Errorf("reading the SSE stream: %w", err)
	}
	// "When a client connects, the server MUST send an endpoint event
	// containing a URI for the client to use for sending messages."
	if ev.Name != "endpoint" {
		resp.Body.Close()
		return fmt.Errorf("first SSE event is %q, not \"endpoint\"", ev.Name)
	}
	ep, err := c.t.url.Parse(strings.TrimSpace(string(ev.Data)))
	if err != nil {
		resp.Body.Close()
		return fmt.Errorf("bad endpoint URI: %w", err)
	}
	// Spec.Headers often carry credentials; never send them to another
	// origin than the one configured.
	if ep.Scheme != c.t.url.Scheme || ep.Host != c.t.url.Host {
		resp.Body.Close()
		return errors.New("endpoint URI is on another origin than the SSE stream")
	}
	ls := &legacySession{c: c, endpoint: ep}
	c.mu.Lock()
	c.legacy = ls
	c.mu.Unlock()
	c.log.Info("upstream does not speak Streamable HTTP; using the legacy HTTP+SSE transport")
	if !c.spawn(func() { ls.readStream(resp.Body, r) }) {
		resp.Body.Close()
		return errClosed
	}
	return ls.post(c.ctx, initRaw, nil)
}

// readStream delivers the server's messages until the stream ends, which
// ends the session: the legacy transport has no resumption.
func (ls *legacySession) readStream(body io.ReadCloser, r *sse.Reader) {
	c := ls.c
	defer body.Close()
	for {
		ev, err := r.Next()
		if err != nil {
			if c.ctx.Err() != nil {
				return
			}
			if errors.Is(err, io.EOF) {
				c.finish(fmt.Errorf("upstream %s: legacy SSE stream ended: %w", c.name, err), false)
			} else {
				c.finish(fmt.Errorf("upstream %s: legacy SSE stream failed: %w", c.name, err), false)
			}
			return
		}
		if len(ev.Data) == 0 || ev.Name == "endpoint" {
			continue
		}
		m, ok := c.parseEvent(ev)
		if !ok {
			continue
		}
		if m.Kind() == jsonrpc.KindResponse && m.Result() != nil {
			c.learnInitResult(m)
		}
		if !c.deliver(Incoming{Msg: m}) {
			return
		}
	}
}

// learnInitResult records the protocol version from the initialize response
// passing through (legacy responses do not come on the request's own
// stream, so they are recognized by id).
func (c *httpConn) learnInitResult(m jsonrpc.Message) {
	c.mu.Lock()
	initID := c.initID
	c.mu.Unlock()
	if initID != nil && sameID(initID, m.ID()) {
		c.learnProtocol(m.Result())
	}
}

// post sends one message to the endpoint; "the server MUST [...] accept
// POSTed messages" and acknowledges them with a 2xx (the Go and TypeScript
// SDKs answer 202).
func (ls *legacySession) post(ctx context.Context, body []byte, handed *handoff) error {
	c := ls.c
	req, err := c.newRequest(ctx, http.MethodPost, ls.endpoint, body, handed, false)
	if err != nil {
		return err
	}
	resp, err := c.t.do(req)
	handed.done()
	if err != nil {
		return fmt.Errorf("post to the legacy endpoint: %w", err)
	}
	defer discard(resp)
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("post to the legacy endpoint: %w", httpStatusError(resp))
	}
	return nil
}
