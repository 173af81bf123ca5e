package upstream

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
)

// The connections' timers (reconnect backoff, the server's retry field, resumption, and the bounds on waits)
// run on synctest's fake clock: the HTTP traffic goes to a fake RoundTripper inside the bubble, with no socket,
// so every wait is durable and time moves only when everything waits. Times are asserted exactly; none of
// this depends on the machine's speed.

// fakeRT is an http.RoundTripper that answers from a function. Like a real transport, it consumes the request
// body first (that is when a Write returns).
type fakeRT func(req *http.Request) (*http.Response, error)

func (f fakeRT) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		_, _ = io.ReadAll(req.Body)
		req.Body.Close()
	}
	return f(req)
}

var _ http.RoundTripper = fakeRT(nil)

func fakeResponse(req *http.Request, status int, contentType string, body io.Reader) *http.Response {
	h := http.Header{}
	if contentType != "" {
		h.Set("Content-Type", contentType)
	}
	return &http.Response{
		StatusCode: status,
		Status:     fmt.Sprintf("%d %s", status, http.StatusText(status)),
		Header:     h,
		Body:       io.NopCloser(body),
		Request:    req,
	}
}

// openBody is a response body that sends prefix, then stays open until its request's context ends, as a
// server that keeps a stream open does. ended receives the fake time at which that happened.
type openBody struct {
	r     *strings.Reader
	ctx   context.Context
	start time.Time
	ended chan time.Duration // buffered
	once  sync.Once
}

func newOpenBody(req *http.Request, prefix string, start time.Time) *openBody {
	return &openBody{r: strings.NewReader(prefix), ctx: req.Context(), start: start, ended: make(chan time.Duration, 1)}
}

func (b *openBody) Read(p []byte) (int, error) {
	if b.r.Len() > 0 {
		return b.r.Read(p)
	}
	<-b.ctx.Done()
	b.once.Do(func() { b.ended <- time.Since(b.start) })
	return 0, b.ctx.Err()
}

// fakeHTTPTransport is an HTTPTransport whose requests go to rt.
func fakeHTTPTransport(t *testing.T, rt http.RoundTripper) *HTTPTransport {
	t.Helper()
	return mustTransport(t, Spec{
		Name:       "fake",
		URL:        "http://upstream.test/mcp",
		HTTPClient: &http.Client{Transport: rt},
		Logger:     slog.New(newLogCapture()),
	}).(*HTTPTransport)
}

// fakeHTTPConn is a Streamable HTTP connection over rt; t.Cleanup closes it.
func fakeHTTPConn(t *testing.T, rt http.RoundTripper) *httpConn {
	t.Helper()
	conn, err := fakeHTTPTransport(t, rt).Connect(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn.(*httpConn)
}

// seen is one request the fake upstream received: when (since the test's start) and its Last-Event-ID.
type seen struct {
	at          time.Duration
	lastEventID string
}

// requestLog records requests, safely for the connection's goroutines.
type requestLog struct {
	start time.Time
	mu    sync.Mutex
	reqs  []seen
}

func (l *requestLog) add(req *http.Request) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.reqs = append(l.reqs, seen{time.Since(l.start), req.Header.Get(headerLastEventID)})
	return len(l.reqs)
}

func (l *requestLog) all() []seen {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]seen(nil), l.reqs...)
}

func initialized() jsonrpc.Message {
	return mustParse(jsonrpc.AppendNotification(nil, methodInitialized, nil))
}

// TestGETStreamRetryField: the standalone GET stream reconnects exactly when the server's retry field says,
// resuming after the last event id.
func TestGETStreamRetryField(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gets := &requestLog{start: time.Now()}
		c := fakeHTTPConn(t, fakeRT(func(req *http.Request) (*http.Response, error) {
			if req.Method != http.MethodGet {
				return fakeResponse(req, http.StatusAccepted, "", strings.NewReader("")), nil
			}
			if gets.add(req) == 1 {
				stream := "retry: 3000\nid: e1\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/x\"}\n\n"
				return fakeResponse(req, http.StatusOK, mediaEventStream, strings.NewReader(stream)), nil
			}
			return fakeResponse(req, http.StatusOK, mediaEventStream, newOpenBody(req, "", gets.start)), nil
		}))
		if err := c.Write(t.Context(), initialized()); err != nil {
			t.Fatal(err)
		}
		if in := readIncoming(t, c); in.Msg.Method() != "notifications/x" || in.Related != nil {
			t.Fatalf("got %s related %s", in.Msg.Raw(), in.Related)
		}
		time.Sleep(3*time.Second - time.Nanosecond)
		synctest.Wait()
		if n := len(gets.all()); n != 1 {
			t.Fatalf("%d GETs before the retry time, want 1", n)
		}
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		if got := gets.all(); len(got) != 2 || got[1] != (seen{3 * time.Second, "e1"}) {
			t.Fatalf("GETs %+v, want the second at 3s after e1", got)
		}
	})
}

// TestGETStreamBackoff: without a retry field, failed GETs are retried after Backoff's delays.
func TestGETStreamBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gets := &requestLog{start: time.Now()}
		c := fakeHTTPConn(t, fakeRT(func(req *http.Request) (*http.Response, error) {
			if req.Method != http.MethodGet {
				return fakeResponse(req, http.StatusAccepted, "", strings.NewReader("")), nil
			}
			gets.add(req)
			return fakeResponse(req, http.StatusServiceUnavailable, "", strings.NewReader("")), nil
		}))
		if err := c.Write(t.Context(), initialized()); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		got := gets.all()
		if len(got) < 4 {
			t.Fatalf("%d GETs in 2s, want at least 4: %+v", len(got), got)
		}
		// Delay(0) is exactly Min; each later one lies in [base/2, base] for a doubling base.
		bounds := [][2]time.Duration{{250 * time.Millisecond, 250 * time.Millisecond}, {250 * time.Millisecond, 500 * time.Millisecond}, {500 * time.Millisecond, time.Second}}
		for i, b := range bounds {
			if gap := got[i+1].at - got[i].at; gap < b[0] || gap > b[1] {
				t.Errorf("retry %d after %v, want within [%v, %v]", i+1, gap, b[0], b[1])
			}
		}
	})
}

// TestPOSTStreamResumption: a POST's stream that ends before its answer is resumed with GET and
// Last-Event-ID, at the server's retry interval, and given up after maxResumeFailures fruitless tries, with an
// error answer that says so.
func TestPOSTStreamResumption(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gets := &requestLog{start: time.Now()}
		c := fakeHTTPConn(t, fakeRT(func(req *http.Request) (*http.Response, error) {
			if req.Method == http.MethodPost {
				// A priming event, then the stream ends without the answer.
				return fakeResponse(req, http.StatusOK, mediaEventStream, strings.NewReader("retry: 1000\nid: p1\ndata: \n\n")), nil
			}
			gets.add(req)
			return fakeResponse(req, http.StatusServiceUnavailable, "", strings.NewReader("")), nil
		}))
		resp, before := roundTrip(t, c, 1, "tools/call", `{"name":"x"}`)
		msg, _ := jsonrpc.LookupString(resp.Msg.Error(), "message")
		if want := fmt.Sprintf("gave up after %d resumptions", maxResumeFailures); !strings.Contains(msg, want) || len(before) != 0 {
			t.Errorf("answer %s (before: %s), want an error saying %q", resp.Msg.Raw(), describe(before), want)
		}
		if at := time.Since(gets.start); at != maxResumeFailures*time.Second {
			t.Errorf("answered after %v, want %v", at, maxResumeFailures*time.Second)
		}
		got := gets.all()
		if len(got) != maxResumeFailures {
			t.Fatalf("%d resumptions, want %d", len(got), maxResumeFailures)
		}
		for i, g := range got {
			if want := (seen{time.Duration(i+1) * time.Second, "p1"}); g != want {
				t.Errorf("resumption %d: %+v, want %+v", i+1, g, want)
			}
		}
	})
}

// TestGETStreamWaitBound: the handshake waits for the standalone GET stream's first answer for getStreamWait
// at most.
func TestGETStreamWaitBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := fakeHTTPConn(t, fakeRT(func(req *http.Request) (*http.Response, error) {
			if req.Method != http.MethodGet {
				return fakeResponse(req, http.StatusAccepted, "", strings.NewReader("")), nil
			}
			<-req.Context().Done() // never answers
			return nil, req.Context().Err()
		}))
		start := time.Now()
		if err := c.Write(t.Context(), initialized()); err != nil {
			t.Fatal(err)
		}
		if waited := time.Since(start); waited != getStreamWait {
			t.Errorf("Write returned after %v, want %v", waited, getStreamWait)
		}
	})
}

// TestCloseDeleteBound: Close's DELETE of the session is bounded by deleteTimeout.
func TestCloseDeleteBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var deleted []string
		c := fakeHTTPConn(t, fakeRT(func(req *http.Request) (*http.Response, error) {
			deleted = append(deleted, req.Method+" "+req.Header.Get(headerSessionID))
			<-req.Context().Done() // never answers
			return nil, req.Context().Err()
		}))
		c.mu.Lock()
		c.sessionID = "s1"
		c.mu.Unlock()
		start := time.Now()
		c.Close()
		if took := time.Since(start); took != deleteTimeout {
			t.Errorf("Close took %v, want %v", took, deleteTimeout)
		}
		if len(deleted) != 1 || deleted[0] != "DELETE s1" {
			t.Errorf("requests %q, want one DELETE of s1", deleted)
		}
	})
}

// TestStatelessDrainBound: once a stateless request is answered, a response stream the server keeps open is
// drained for drainWait, then abandoned: the call's goroutine ends.
func TestStatelessDrainBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		bodies := make(chan *openBody, 1)
		tr := fakeHTTPTransport(t, fakeRT(func(req *http.Request) (*http.Response, error) {
			b := newOpenBody(req, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n", start)
			bodies <- b
			return fakeResponse(req, http.StatusOK, mediaEventStream, b), nil
		}))
		meta, err := newRequestMeta(ClientHello{})
		if err != nil {
			t.Fatal(err)
		}
		sc := tr.connectStateless(t.Context(), meta)
		defer sc.Close()
		resp, _ := roundTrip(t, sc, 1, "ping", "")
		if resp.Msg.Error() != nil || time.Since(start) != 0 {
			t.Fatalf("answer %s after %v", resp.Msg.Raw(), time.Since(start))
		}
		body := <-bodies
		synctest.Wait()
		select {
		case at := <-body.ended:
			t.Fatalf("the stream was abandoned at once (%v), not drained", at)
		default:
		}
		time.Sleep(drainWait)
		synctest.Wait()
		select {
		case at := <-body.ended:
			if at != drainWait {
				t.Errorf("abandoned after %v, want %v", at, drainWait)
			}
		default:
			t.Fatal("the stream was never abandoned")
		}
		if n := inflight(sc); n != 0 {
			t.Errorf("%d calls in flight", n)
		}
	})
}

// silentConn is a Connection whose upstream reads everything and answers nothing.
type silentConn struct {
	written chan []byte // bounded: the tests write a few messages
	closed  chan struct{}
	once    sync.Once
}

var _ Connection = (*silentConn)(nil)

func newSilentConn() *silentConn {
	return &silentConn{written: make(chan []byte, 8), closed: make(chan struct{})}
}

func (c *silentConn) Read(ctx context.Context) (Incoming, error) {
	select {
	case <-ctx.Done():
		return Incoming{}, ctx.Err()
	case <-c.closed:
		return Incoming{}, errClosed
	}
}

func (c *silentConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	select {
	case c.written <- bytes.Clone(msg.Raw()):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c *silentConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return nil
}

// TestProbeBound: a probe nobody answers waits for its bound (stdioProbeTimeout, or half of what is left of
// Dial's context), then calls the upstream legacy, with its request left pending.
func TestProbeBound(t *testing.T) {
	tests := []struct {
		name    string
		timeout time.Duration // Dial's context; 0: none
		want    time.Duration
	}{
		{"no deadline", 0, stdioProbeTimeout},
		{"ample deadline", 10 * time.Second, stdioProbeTimeout},
		{"short deadline", 2 * time.Second, time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx := t.Context()
				if tt.timeout > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, tt.timeout)
					defer cancel()
				}
				meta, err := newRequestMeta(ClientHello{})
				if err != nil {
					t.Fatal(err)
				}
				bound := probeBound(ctx, stdioProbeTimeout)
				conn := newSilentConn()
				start := time.Now()
				res, err := probe(ctx, conn, slog.New(newLogCapture()), meta, bound)
				if err != nil {
					t.Fatal(err)
				}
				if waited := time.Since(start); bound != tt.want || waited != tt.want {
					t.Errorf("bound %v, waited %v, want %v", bound, waited, tt.want)
				}
				if res.modern || string(res.pending) != discoverIDs[0] || res.why != fmt.Sprintf("no answer to server/discover within %v", tt.want) {
					t.Errorf("result %+v", res)
				}
				if m, err := jsonrpc.Parse(<-conn.written); err != nil || !m.MethodIs(methodDiscover) {
					t.Errorf("probe sent %s (%v)", m.Raw(), err)
				}
			})
		})
	}
}
