package upstream

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync"

	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
)

// The HTTP plumbing every HTTP upstream shares, whatever its era (Streamable HTTP, legacy HTTP+SSE, stateless
// 2026-07-28): the client, request building with the configured and per-caller headers, and status errors.

const (
	mediaJSON        = "application/json"
	mediaEventStream = "text/event-stream"
)

// maxErrorBody bounds how much of an HTTP error body is read to find a
// JSON-RPC error message in it.
const maxErrorBody = 4 << 10

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
	resp, err := t.send(req)
	var ue *url.Error
	if err != nil && errors.As(err, &ue) {
		if u, perr := url.Parse(ue.URL); perr == nil {
			u.RawQuery, u.User, u.Fragment = "", nil, ""
			ue.URL = u.String()
		}
	}
	return resp, err
}

// send makes the exchange on the client's transport itself: http.Client.Do would copy the headers for
// redirects, clone the URL and watch for a timeout on every call, for the rare upstream that redirects. A
// redirect is followed by Client.Do after all, with the body made again; so is every exchange of a client with
// a timeout or a cookie jar (one a caller configured). Errors read as Client.Do's do.
func (t *HTTPTransport) send(req *http.Request) (*http.Response, error) {
	c := t.client
	if c.Timeout != 0 || c.Jar != nil || c.CheckRedirect != nil {
		return c.Do(req)
	}
	rt := c.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	resp, err := rt.RoundTrip(req)
	if err != nil {
		op := req.Method[:1] + strings.ToLower(req.Method[1:])
		return nil, &url.Error{Op: op, URL: req.URL.String(), Err: err}
	}
	switch resp.StatusCode {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther, http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		if resp.Header.Get("Location") == "" || req.Body != nil && req.GetBody == nil {
			return resp, nil
		}
		discard(resp)
		again := req.Clone(req.Context())
		if req.GetBody != nil {
			body, err := req.GetBody()
			if err != nil {
				return nil, err
			}
			again.Body = body
		}
		return c.Do(again)
	}
	return resp, nil
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

// handoff is how Write waits for a request's POST, which runs on a goroutine of its own: the POST reports the
// request handed over once the transport has taken it whole (or once it never will be), and Write returns then,
// or when its caller gives up. Both eras' HTTP connections use it.
type handoff struct {
	once sync.Once
	ch   chan struct{}
}

func newHandoff() *handoff { return &handoff{ch: make(chan struct{})} }

// done reports the request handed over; later calls, and calls on a nil handoff, do nothing.
func (h *handoff) done() {
	if h != nil {
		h.once.Do(func() { close(h.ch) })
	}
}

// wait returns nil once the request is handed over, or the error of ctx if it ends first.
func (h *handoff) wait(ctx context.Context, name string) error {
	select {
	case <-h.ch:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("upstream %s: write: %w", name, ctx.Err())
	}
}

// newRequest builds a request to target with the configured headers, then
// the body's: what every request of either era carries. handed, if not nil,
// is done once the transport has taken the whole request.
func (t *HTTPTransport) newRequest(ctx context.Context, method string, target *url.URL, body []byte, handed *handoff) (*http.Request, error) {
	var rd io.Reader
	if body != nil {
		// A *bytes.Reader as it is: net/http writes the headers and a body it knows to be in memory in one write
		// (one packet for the upstream to read); any other reader gets the headers flushed first, on their own.
		rd = bytes.NewReader(body)
	}
	if handed != nil {
		// Write returns once the transport has taken the whole request (written it to its connection's buffer,
		// which it flushes next), as it did when the body reported being read to its end. A write that failed
		// may be retried by net/http; a request that never gets written is handed over when the exchange fails
		// (the caller marks it done then).
		ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{WroteRequest: func(info httptrace.WroteRequestInfo) {
			if info.Err == nil {
				handed.done()
			}
		}})
	}
	// The URL is parsed once, not printed and parsed again for every request; each request gets its own copy,
	// which net/http may change (a redirect).
	req, err := http.NewRequestWithContext(ctx, method, "", rd)
	if err != nil {
		return nil, err
	}
	u := *target
	u.Host = strings.TrimSuffix(u.Host, ":") // as NewRequest does: an empty port is no port
	req.URL, req.Host = &u, u.Host
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
		// Shared values, never written (Set replaces a slice, it does not write into it): no copy per request.
		req.Header["Content-Type"] = jsonContentType
		// "The client MUST include an Accept header, listing both
		// application/json and text/event-stream as supported content
		// types."
		req.Header["Accept"] = postAccept
	}
	return req, nil
}

// The values of the headers every POST carries, as header slices.
var (
	jsonContentType = []string{mediaJSON}
	postAccept      = []string{mediaJSON + ", " + mediaEventStream}
)

// mediaType returns the lower-cased media type of a Content-Type header.
func mediaType(h http.Header) string {
	ct := h.Get("Content-Type")
	if ct == "application/json" || ct == "text/event-stream" {
		return ct // what nearly every server sends: already what parsing would return
	}
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
