package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
	"github.com/switchboard-mcp/switchboard/upstream/protocol"
)

// httpFixture wraps an MCP HTTP handler from the Go SDK to observe and
// perturb the traffic.
type httpFixture struct {
	t    *testing.T
	next http.Handler

	forget    atomic.Bool // the next POST carrying a session id gets 404
	dropGET   atomic.Bool // cut the standalone GET stream after its next event
	fail500   string      // a POST whose body contains this gets 500
	inits     atomic.Int32
	discovers atomic.Int32
	deletes   atomic.Int32
	resumes   atomic.Int32 // GETs with Last-Event-ID
	mu        sync.Mutex
	problems  []string // protocol violations by the client
}

func (f *httpFixture) problem(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.problems = append(f.problems, fmt.Sprintf(format, args...))
}

func (f *httpFixture) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodPost:
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		m, err := jsonrpc.Parse(body)
		if err != nil {
			f.problem("POST body is not a message: %v", err)
		}
		if a := r.Header.Get("Accept"); !strings.Contains(a, "application/json") || !strings.Contains(a, "text/event-stream") {
			f.problem("POST Accept = %q", a)
		}
		if r.Header.Get("X-Test-Token") != "secret" {
			f.problem("Spec.Headers missing on POST")
		}
		pv := r.Header.Get("MCP-Protocol-Version")
		if m.MethodIs("server/discover") {
			// Dial's era probe; the SDK's stateful handler answers it with
			// legacy versions only.
			f.discovers.Add(1)
			if pv != "2026-07-28" || r.Header.Get("Mcp-Session-Id") != "" {
				f.problem("server/discover POST has MCP-Protocol-Version %q or a session id", pv)
			}
		} else if m.MethodIs("initialize") {
			f.inits.Add(1)
			if pv != "" || r.Header.Get("Mcp-Session-Id") != "" {
				f.problem("initialize POST carries a session id or protocol version")
			}
		} else if pv != "2025-11-25" {
			f.problem("%s POST has MCP-Protocol-Version %q", m.Method(), pv)
		}
		if r.Header.Get("Mcp-Session-Id") != "" && f.forget.CompareAndSwap(true, false) {
			http.Error(w, "session not found", http.StatusNotFound)
			return
		}
		if f.fail500 != "" && bytes.Contains(body, []byte(f.fail500)) {
			http.Error(w, "boom", http.StatusInternalServerError)
			return
		}
	case http.MethodGet:
		if r.Header.Get("Last-Event-ID") != "" {
			f.resumes.Add(1)
		}
		if f.dropGET.Load() {
			// Cancelling the request makes the SDK end the response, as if
			// the connection had dropped.
			ctx, cancel := context.WithCancel(r.Context())
			defer cancel()
			r = r.WithContext(ctx)
			w = &cutWriter{ResponseWriter: w, f: f, cancel: cancel}
		}
	case http.MethodDelete:
		f.deletes.Add(1)
	}
	f.next.ServeHTTP(w, r)
}

// cutWriter cancels its request after writing an SSE event with data.
type cutWriter struct {
	http.ResponseWriter
	f      *httpFixture
	cancel context.CancelFunc
}

func (w *cutWriter) Write(p []byte) (int, error) {
	n, err := w.ResponseWriter.Write(p)
	if bytes.Contains(p, []byte("data:")) && w.f.dropGET.CompareAndSwap(true, false) {
		http.NewResponseController(w.ResponseWriter).Flush()
		w.cancel()
	}
	return n, err
}

func (w *cutWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (f *httpFixture) check(t *testing.T) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range f.problems {
		t.Error(p)
	}
}

// getWatcher is a RoundTripper that reports when a standalone GET stream
// has been accepted: from then on the SDK delivers unrelated notifications
// instead of dropping them.
type getWatcher struct {
	next http.RoundTripper
	once sync.Once
	ok   chan struct{}
}

func (g *getWatcher) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := g.next.RoundTrip(r)
	if err == nil && r.Method == http.MethodGet && r.Header.Get("Last-Event-ID") == "" && resp.StatusCode == http.StatusOK {
		g.once.Do(func() { close(g.ok) })
	}
	return resp, err
}

type httpSetup struct {
	fixture *httpFixture
	srv     *httptest.Server
	client  *http.Client
	getOK   chan struct{}
	log     *logCapture
	spec    Spec
}

func newHTTPSetup(t *testing.T, handler http.Handler) *httpSetup {
	f := &httpFixture{t: t, next: handler}
	srv := httptest.NewServer(f)
	gw := &getWatcher{next: http.DefaultTransport.(*http.Transport).Clone(), ok: make(chan struct{})}
	client := &http.Client{Transport: gw}
	log := newLogCapture()
	s := &httpSetup{fixture: f, srv: srv, client: client, getOK: gw.ok, log: log}
	s.spec = Spec{
		Name:       "http",
		URL:        srv.URL + "/mcp",
		Headers:    map[string]string{"X-Test-Token": "secret"},
		HTTPClient: client,
		Logger:     slog.New(log),
	}
	return s
}

func (s *httpSetup) close() {
	s.srv.Close()
	s.client.CloseIdleConnections()
}

func (s *httpSetup) waitGET(t *testing.T) {
	t.Helper()
	select {
	case <-s.getOK:
	case <-waitCtx(t).Done():
		t.Fatal("no standalone GET stream")
	}
}

var rootsHello = ClientHello{Capabilities: json.RawMessage(`{"roots":{"listChanged":true}}`)}

func streamableHandler(jsonResponse bool, store mcp.EventStore) http.Handler {
	s := newTestServer()
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{JSONResponse: jsonResponse, EventStore: store})
}

func TestStreamableHTTP(t *testing.T) {
	tests := []struct {
		name         string
		jsonResponse bool
	}{
		{"sse responses", false},
		{"json responses", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := runtime.NumGoroutine()
			s := newHTTPSetup(t, streamableHandler(tt.jsonResponse, nil))
			conn := mustDial(t, s.spec, rootsHello)
			if conn.Server.ProtocolVersion != "2025-11-25" {
				t.Errorf("protocol version %q", conn.Server.ProtocolVersion)
			}
			if sid, _ := conn.Connection.(*httpConn).headers(); sid == "" {
				t.Error("no session id")
			}
			s.waitGET(t)

			t.Run("tools/list", func(t *testing.T) {
				resp, _ := roundTrip(t, conn, 1, "tools/list", `{}`)
				if !bytes.Contains(resp.Msg.Result(), []byte(`"echo"`)) || string(resp.Related) != "1" {
					t.Errorf("response %s related %s", resp.Msg.Raw(), resp.Related)
				}
			})
			t.Run("progress on the POST stream", func(t *testing.T) {
				if tt.jsonResponse {
					t.Skip("with JSON responses the SDK sends progress on the GET stream")
				}
				_, before := roundTrip(t, conn, 2, "tools/call", `{"name":"progress","arguments":{"steps":3},"_meta":{"progressToken":7}}`)
				if len(before) != 3 {
					t.Fatalf("want 3 progress notifications, got %s", describe(before))
				}
				for _, in := range before {
					if in.Msg.Method() != "notifications/progress" || string(in.Related) != "2" {
						t.Errorf("got %s related %s", in.Msg.Raw(), in.Related)
					}
				}
			})
			t.Run("server-to-client request", func(t *testing.T) {
				// JSON responses cannot carry a server request, so the SDK
				// sends it on the GET stream, unrelated.
				wantRelated := "3"
				if tt.jsonResponse {
					wantRelated = ""
				}
				if err := conn.Write(waitCtx(t), request(3, "tools/call", `{"name":"roots"}`)); err != nil {
					t.Fatal(err)
				}
				for {
					in, err := conn.Read(waitCtx(t))
					if err != nil {
						t.Fatal(err)
					}
					m := in.Msg
					if m.Kind() == jsonrpc.KindRequest && m.Method() == "roots/list" {
						if string(in.Related) != wantRelated {
							t.Errorf("roots/list related %q, want %q", in.Related, wantRelated)
						}
						answer := mustParse(jsonrpc.AppendResult(nil, m.ID(), []byte(`{"roots":[{"uri":"file:///tmp/a","name":"alpha"}]}`)))
						if err := conn.Write(waitCtx(t), answer); err != nil {
							t.Fatal(err)
						}
						continue
					}
					if m.Kind() == jsonrpc.KindResponse && string(m.ID()) == "3" {
						if !bytes.Contains(m.Result(), []byte("roots: alpha")) {
							t.Errorf("response %s", m.Raw())
						}
						break
					}
				}
			})
			t.Run("notification on the GET stream", func(t *testing.T) {
				if err := conn.Write(waitCtx(t), request(4, "tools/call", `{"name":"addtool"}`)); err != nil {
					t.Fatal(err)
				}
				gotResp, gotNote := false, false
				for !gotResp || !gotNote {
					in, err := conn.Read(waitCtx(t))
					if err != nil {
						t.Fatal(err)
					}
					switch m := in.Msg; {
					case m.Method() == "notifications/tools/list_changed":
						gotNote = true
						if in.Related != nil {
							t.Errorf("GET stream message has Related %s", in.Related)
						}
					case m.Kind() == jsonrpc.KindResponse && string(m.ID()) == "4":
						gotResp = true
					}
				}
			})

			conn.Close()
			if n := s.fixture.deletes.Load(); n != 1 {
				t.Errorf("%d DELETEs, want 1", n)
			}
			s.fixture.check(t)
			s.close()
			waitGoroutines(t, before)
		})
	}
}

func TestStreamableSessionExpiry(t *testing.T) {
	s := newHTTPSetup(t, streamableHandler(false, nil))
	defer s.close()
	conn := mustDial(t, s.spec, ClientHello{})
	defer conn.Close()
	hc := conn.Connection.(*httpConn)
	oldSID, _ := hc.headers()

	s.fixture.forget.Store(true)
	resp, before := roundTrip(t, conn, 1, "tools/call", `{"name":"echo","arguments":{"text":"again"}}`)
	if !bytes.Contains(resp.Msg.Result(), []byte("echo: again")) {
		t.Errorf("response %s (before: %s)", resp.Msg.Raw(), describe(before))
	}
	for _, in := range before {
		t.Errorf("the caller saw re-initialization traffic: %s", in.Msg.Raw())
	}
	if n := s.fixture.inits.Load(); n != 2 {
		t.Errorf("%d initialize requests, want 2", n)
	}
	if newSID, _ := hc.headers(); newSID == oldSID || newSID == "" {
		t.Error("session id not replaced")
	}
	if !s.log.has("re-initializing") {
		t.Error("re-initialization not logged")
	}
	s.fixture.check(t)
}

func TestStreamableResumption(t *testing.T) {
	s := newHTTPSetup(t, streamableHandler(false, mcp.NewMemoryEventStore(nil)))
	defer s.close()
	conn := mustDial(t, s.spec, ClientHello{})
	defer conn.Close()

	resp, before := roundTrip(t, conn, 1, "tools/call", `{"name":"hangup","arguments":{"steps":2},"_meta":{"progressToken":1}}`)
	if !bytes.Contains(resp.Msg.Result(), []byte("resumed")) || string(resp.Related) != "1" {
		t.Errorf("response %s related %s", resp.Msg.Raw(), resp.Related)
	}
	if len(before) != 2 {
		t.Errorf("want 2 progress notifications, got %s", describe(before))
	}
	for _, in := range before {
		if string(in.Related) != "1" {
			t.Errorf("resumed message %s has Related %s", in.Msg.Raw(), in.Related)
		}
	}
	if s.fixture.resumes.Load() == 0 {
		t.Error("no GET with Last-Event-ID")
	}
	s.fixture.check(t)
}

// TestStreamableGETReconnect cuts the standalone GET stream after an event
// and checks that the connection reconnects with Last-Event-ID and keeps
// delivering notifications.
func TestStreamableGETReconnect(t *testing.T) {
	s := newHTTPSetup(t, streamableHandler(false, mcp.NewMemoryEventStore(nil)))
	defer s.close()
	s.fixture.dropGET.Store(true) // applies to the first GET stream
	conn := mustDial(t, s.spec, ClientHello{})
	defer conn.Close()
	s.waitGET(t)

	for i := 1; i <= 2; i++ {
		if err := conn.Write(waitCtx(t), request(i, "tools/call", `{"name":"addtool"}`)); err != nil {
			t.Fatal(err)
		}
		for gotResp, gotNote := false, false; !gotResp || !gotNote; {
			in, err := conn.Read(waitCtx(t))
			if err != nil {
				t.Fatal(err)
			}
			switch m := in.Msg; {
			case m.Method() == "notifications/tools/list_changed":
				gotNote = true
			case m.Kind() == jsonrpc.KindResponse && string(m.ID()) == strconv.Itoa(i):
				gotResp = true
			}
		}
	}
	if s.fixture.dropGET.Load() {
		t.Fatal("the GET stream was never cut")
	}
	if s.fixture.resumes.Load() == 0 {
		t.Error("the GET stream was not resumed with Last-Event-ID")
	}
	s.fixture.check(t)
}

func TestStreamableSynthesizedErrors(t *testing.T) {
	tests := []struct {
		name         string
		jsonResponse bool
		fail500      string
		maxBytes     int
		params       string
		want         *regexp.Regexp
	}{
		{"HTTP 500", false, "boom", 0, `{"name":"echo","arguments":{"text":"boom"}}`, regexp.MustCompile(`^upstream http: HTTP 500`)},
		{"oversized JSON response", true, "", 4096, `{"name":"big","arguments":{"bytes":10000}}`, regexp.MustCompile(`^upstream http: response larger than 4096 bytes`)},
		{"oversized SSE event", false, "", 4096, `{"name":"big","arguments":{"bytes":10000}}`, regexp.MustCompile(`^upstream http: message larger than 4096 bytes`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newHTTPSetup(t, streamableHandler(tt.jsonResponse, nil))
			defer s.close()
			s.fixture.fail500 = tt.fail500
			s.spec.MaxMessageBytes = tt.maxBytes
			conn := mustDial(t, s.spec, ClientHello{})
			defer conn.Close()

			resp, _ := roundTrip(t, conn, 1, "tools/call", tt.params)
			var e struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			}
			if err := json.Unmarshal(resp.Msg.Error(), &e); err != nil {
				t.Fatalf("response %s is not an error: %v", resp.Msg.Raw(), err)
			}
			if e.Code != protocol.CodeInternalError || !tt.want.MatchString(e.Message) {
				t.Errorf("error %d %q, want %d matching %v", e.Code, e.Message, protocol.CodeInternalError, tt.want)
			}
			if string(resp.Related) != "1" {
				t.Errorf("Related = %s", resp.Related)
			}
			// The connection is still usable.
			if resp, _ := roundTrip(t, conn, 2, "tools/call", `{"name":"echo","arguments":{"text":"ok"}}`); resp.Msg.Error() != nil {
				t.Errorf("follow-up failed: %s", resp.Msg.Raw())
			}
		})
	}
}

func TestLegacySSEFallback(t *testing.T) {
	before := runtime.NumGoroutine()
	server := newTestServer()
	s := newHTTPSetup(t, mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return server }, nil))
	conn := mustDial(t, s.spec, rootsHello)
	if conn.Connection.(*httpConn).legacySession() == nil {
		t.Fatal("not using the legacy transport")
	}
	if !s.log.has("legacy HTTP+SSE") {
		t.Error("transport choice not logged")
	}

	resp, _ := roundTrip(t, conn, 1, "tools/call", `{"name":"echo","arguments":{"text":"old"}}`)
	if !bytes.Contains(resp.Msg.Result(), []byte("echo: old")) || resp.Related != nil {
		t.Errorf("response %s related %s", resp.Msg.Raw(), resp.Related)
	}

	// A server→client request over the legacy stream.
	if err := conn.Write(waitCtx(t), request(2, "tools/call", `{"name":"roots"}`)); err != nil {
		t.Fatal(err)
	}
	for done := false; !done; {
		in, err := conn.Read(waitCtx(t))
		if err != nil {
			t.Fatal(err)
		}
		switch m := in.Msg; {
		case m.Kind() == jsonrpc.KindRequest && m.Method() == "roots/list":
			if err := conn.Write(waitCtx(t), mustParse(jsonrpc.AppendResult(nil, m.ID(), []byte(`{"roots":[{"uri":"file:///b","name":"beta"}]}`)))); err != nil {
				t.Fatal(err)
			}
		case m.Kind() == jsonrpc.KindResponse && string(m.ID()) == "2":
			if !bytes.Contains(m.Result(), []byte("roots: beta")) {
				t.Errorf("response %s", m.Raw())
			}
			done = true
		}
	}
	conn.Close()
	s.close()
	waitGoroutines(t, before)
}

func TestHTTPDialFailure(t *testing.T) {
	// Neither Streamable HTTP nor legacy SSE: Dial must fail with both
	// reasons, and not hang.
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	_, err := Dial(waitCtx(t), mustTransport(t, Spec{Name: "nothing", URL: srv.URL, Logger: slog.New(newLogCapture())}), ClientHello{})
	if err == nil || !strings.Contains(err.Error(), "upstream nothing") || !strings.Contains(err.Error(), "404") || !strings.Contains(err.Error(), "legacy") {
		t.Fatalf("Dial error = %v", err)
	}
}

func TestNewTransportValidation(t *testing.T) {
	tests := []struct {
		name    string
		spec    Spec
		wantErr bool
		want    string // concrete type
	}{
		{"command", Spec{Name: "a", Command: "x"}, false, "*upstream.CommandTransport"},
		{"url", Spec{Name: "a", URL: "https://example.com/mcp"}, false, "*upstream.HTTPTransport"},
		{"neither", Spec{Name: "a"}, true, ""},
		{"both", Spec{Name: "a", Command: "x", URL: "http://x"}, true, ""},
		{"relative url", Spec{Name: "a", URL: "/mcp"}, true, ""},
		{"bad scheme", Spec{Name: "a", URL: "ftp://x/mcp"}, true, ""},
		{"bad header", Spec{Name: "a", URL: "http://x/mcp", Headers: map[string]string{"Bad Header": "v"}}, true, ""},
		{"headers on command", Spec{Name: "a", Command: "x", Headers: map[string]string{"A": "b"}}, true, ""},
		{"protocol", Spec{Name: "a", Command: "x", Protocol: ProtocolModern}, false, "*upstream.CommandTransport"},
		{"bad protocol", Spec{Name: "a", URL: "http://x/mcp", Protocol: "2026-07-28"}, true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr, err := NewTransport(tt.spec)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if err != nil && !strings.Contains(err.Error(), "upstream a:") {
				t.Errorf("error %q does not name the upstream", err)
			}
			if got := typeName(tr); !tt.wantErr && got != tt.want {
				t.Errorf("type %s, want %s", got, tt.want)
			}
		})
	}
}

func typeName(v any) string { return fmt.Sprintf("%T", v) }

// TestConnValues: a POST's context carries the caller's values (and the connection's where the caller has none)
// but ends with the connection only: the caller's cancellation does not reach it, and a context derived from it
// (as net/http derives one) ends when the connection does.
func TestConnValues(t *testing.T) {
	type key string
	conn, endConn := context.WithCancel(context.WithValue(context.Background(), key("conn"), "c"))
	defer endConn()
	caller, endCaller := context.WithCancel(context.WithValue(context.Background(), key("who"), "alice"))
	v := connValues{Context: conn, caller: context.WithoutCancel(caller)}
	if v.Value(key("who")) != "alice" || v.Value(key("conn")) != "c" || v.Value(key("none")) != nil {
		t.Fatalf("values: who %v, conn %v, none %v", v.Value(key("who")), v.Value(key("conn")), v.Value(key("none")))
	}
	child, stop := context.WithCancel(v)
	defer stop()
	endCaller()
	if v.Err() != nil || child.Err() != nil {
		t.Fatalf("the caller's cancellation reached the POST: %v, %v", v.Err(), child.Err())
	}
	endConn()
	<-child.Done()
	if v.Err() == nil || child.Err() == nil {
		t.Fatalf("the connection's end did not: %v, %v", v.Err(), child.Err())
	}
}

// eofBody is an SSE body that records whether it was read to its end before it was closed.
type eofBody struct {
	r           *strings.Reader
	atEOF, shut bool
}

func (b *eofBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err == io.EOF {
		b.atEOF = true
	}
	return n, err
}

func (b *eofBody) Close() error { b.shut = true; return nil }

// TestStreamableConnectionReuse: once a POST's answer came on its event stream, the stream is read to its end
// before it is closed, so that net/http returns the connection to the pool rather than dropping it (a dial per
// call under load; the benchmark counted 95-281 per 1,000 calls before).
func TestStreamableConnectionReuse(t *testing.T) {
	c := &httpConn{maxMsg: 1 << 20, log: slog.New(newLogCapture())}
	body := &eofBody{r: strings.NewReader("id: 1\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}}\n\n: the server ends the stream after the answer\n\n")}
	var cursor string
	var retry time.Duration
	got, _, err := c.readEvents([]byte("7"), body, &cursor, &retry, func(Incoming) bool { return true })
	if !got || err != nil {
		t.Fatalf("readEvents: got %v, %v", got, err)
	}
	if !body.atEOF || !body.shut {
		t.Errorf("the stream was read to its end: %v, closed: %v; want both", body.atEOF, body.shut)
	}
}

// TestStreamableRedirect: an upstream whose endpoint redirects (307, as a server that moved its path answers) is
// still reached: the exchange made on the transport itself hands a redirect to http.Client, with the body made
// again, and errors read as http.Client's.
func TestStreamableRedirect(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/moved", http.StatusTemporaryRedirect)
	})
	mux.Handle("/moved", streamableHandler(false, nil))
	s := newHTTPSetup(t, mux)
	defer s.close()
	conn := mustDial(t, s.spec, rootsHello)
	defer conn.Close()
	resp, _ := roundTrip(t, conn, 7, "tools/list", `{}`)
	if !bytes.Contains(resp.Msg.Result(), []byte(`"echo"`)) {
		t.Fatalf("tools/list through a redirect: %s", resp.Msg.Raw())
	}

	down := &HTTPTransport{client: &http.Client{}}
	req, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1:1/mcp?key=secret", nil)
	_, err := down.do(req)
	var ue *url.Error
	if !errors.As(err, &ue) || ue.Op != "Post" || strings.Contains(err.Error(), "secret") {
		t.Errorf("a refused exchange: %v, want a *url.Error for Post without the query", err)
	}
}

// countingConn counts the writes made on a connection.
type countingConn struct {
	net.Conn
	writes *atomic.Int32
}

func (c countingConn) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(p)
}

// TestRequestOneWrite: a POST goes out in one write, headers and body together (net/http flushes the headers on
// their own before a body it does not know to be in memory: two packets for the upstream to read), and it is
// handed over once it is written.
func TestRequestOneWrite(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{}}`))
	}))
	defer srv.Close()
	var writes atomic.Int32
	var d net.Dialer
	client := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return countingConn{Conn: c, writes: &writes}, nil
	}}}
	defer client.CloseIdleConnections()
	tr := mustTransport(t, Spec{Name: "one", URL: srv.URL + "/mcp", HTTPClient: client}).(*HTTPTransport)
	for i := range 3 {
		writes.Store(0)
		handed := newHandoff()
		req, err := tr.newRequest(t.Context(), http.MethodPost, tr.url, request(i, "tools/call", `{"name":"echo","arguments":{"text":"hi"}}`).Raw(), handed)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := tr.do(req)
		if err != nil {
			t.Fatal(err)
		}
		discard(resp)
		if n := writes.Load(); n != 1 {
			t.Errorf("request %d went out in %d writes, want 1", i, n)
		}
		select {
		case <-handed.ch:
		default:
			t.Errorf("request %d: not handed over once it was written", i)
		}
	}
}
