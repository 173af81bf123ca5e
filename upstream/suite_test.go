package upstream

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
	"github.com/switchboard-mcp/switchboard/upstream/protocol"
)

// The conformance suite: one set of behaviour tests that every kind of connection runs, against a real peer
// (the Go SDK's server, as a child process or behind an in-process HTTP server). Where the kinds differ by
// design, the kind says how (connKind); the tests hold them all to the same Connection contract.

// peer is one running upstream of some kind.
type peer struct {
	spec Spec
	log  *logCapture
	// sawOut waits until the upstream is seen to have written b, verbatim, on the wire; sawIn until it is
	// seen to have read b. Either fails the test if that never happens.
	sawOut, sawIn func(t *testing.T, b []byte)
	// kill makes the upstream die under the connection, without a goodbye.
	kill func(t *testing.T, c *Conn)
	// junk is the params of a tools/call after which the upstream sends something that is not a JSON-RPC
	// message before its answer; junkAnswer is the text of that answer.
	junk, junkAnswer string
}

// outcome is how a kind of connection reports a failure it cannot hide.
type outcome int

const (
	// readFails: Read returns an error naming the upstream; the connection is over.
	readFails outcome = iota
	// answerFails: the request's answer is an error -32603 naming the upstream; the connection goes on.
	answerFails
)

// connKind is one kind of connection under the suite.
type connKind struct {
	name string
	// start runs a fresh upstream; t.Cleanup stops it. maxMsg is Spec.MaxMessageBytes (0: the default).
	start    func(t *testing.T, maxMsg int) *peer
	protocol string // the version Dial negotiates
	connType string // the concrete Connection
	session  bool   // the upstream assigns a session id
	// related: what the upstream sends on a request's own stream carries the request's id in Related.
	related bool
	// serverRequests: the upstream may send the client requests (the modern era forbids it).
	serverRequests bool
	// rewritesRequests: requests go out with the _meta the modern era requires, not byte for byte.
	rewritesRequests bool
	dies             outcome // when the upstream dies
	oversized        outcome // when an answer is over MaxMessageBytes
}

func connKinds() []connKind {
	return []connKind{
		{name: "stdio", start: stdioPeer(ProtocolLegacy), protocol: protocol.LatestLegacy, connType: "*upstream.stdioConn",
			serverRequests: true, dies: readFails, oversized: answerFails},
		{name: "stdio-modern", start: stdioPeer(ProtocolAuto), protocol: protocol.Modern, connType: "*upstream.stdioConn",
			rewritesRequests: true, dies: readFails, oversized: answerFails},
		{name: "streamable", start: httpPeer(func(s *mcp.Server) http.Handler {
			return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
		}), protocol: protocol.LatestLegacy, connType: "*upstream.httpConn", session: true,
			related: true, serverRequests: true, dies: answerFails, oversized: answerFails},
		{name: "legacy-sse", start: httpPeer(func(s *mcp.Server) http.Handler {
			return mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return s }, nil)
		}), protocol: protocol.LatestLegacy, connType: "*upstream.httpConn",
			serverRequests: true, dies: readFails, oversized: readFails},
		{name: "stateless", start: httpPeer(func(s *mcp.Server) http.Handler {
			return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: true})
		}), protocol: protocol.Modern, connType: "*upstream.modernConn",
			related: true, rewritesRequests: true, dies: answerFails, oversized: answerFails},
	}
}

func TestSuite(t *testing.T) {
	tests := []struct {
		name string
		fn   func(*testing.T, connKind)
	}{
		{"Dial", testDial},
		{"RequestAnswerByteExact", testRequestAnswer},
		{"Notifications", testNotifications},
		{"ServerRequest", testServerRequest},
		{"CloseEndsReader", testCloseEndsReader},
		{"UpstreamDies", testUpstreamDies},
		{"OversizedAnswer", testOversized},
		{"InvalidMessage", testInvalidMessage},
	}
	for _, k := range connKinds() {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			for _, tc := range tests {
				t.Run(tc.name, func(t *testing.T) { tc.fn(t, k) })
			}
		})
	}
}

// dial starts an upstream of kind k and dials it; t.Cleanup closes the connection before the upstream stops.
func (k connKind) dial(t *testing.T, maxMsg int) (*peer, *Conn) {
	t.Helper()
	p := k.start(t, maxMsg)
	c := mustDial(t, p.spec, rootsHello)
	t.Cleanup(func() { c.Close() })
	return p, c
}

// checkRelated checks in.Related against the kind: the request's id, or nil.
func (k connKind) checkRelated(t *testing.T, in Incoming, id string) {
	t.Helper()
	if k.related && string(in.Related) != id || !k.related && in.Related != nil {
		t.Errorf("%s: Related = %q (want the request's id: %v)", in.Msg.Raw(), in.Related, k.related)
	}
}

func testDial(t *testing.T, k connKind) {
	p, c := k.dial(t, 0)
	sh := c.Server
	if sh.ProtocolVersion != k.protocol || sh.Modern() != (k.protocol == protocol.Modern) {
		t.Errorf("protocol version %q (stateless %v), want %q", sh.ProtocolVersion, sh.Modern(), k.protocol)
	}
	if !bytes.Contains(sh.ServerInfo, []byte(`"testserver"`)) {
		t.Errorf("serverInfo %s", sh.ServerInfo)
	}
	if got := typeName(c.Connection); got != k.connType {
		t.Errorf("connection %s, want %s", got, k.connType)
	}
	if (c.SessionID() != "") != k.session {
		t.Errorf("session id %q, want one: %v", c.SessionID(), k.session)
	}
	if k.protocol == protocol.Modern {
		p.sawIn(t, []byte(`"method":"server/discover"`))
	} else {
		p.sawIn(t, []byte(`"method":"notifications/initialized"`))
	}
}

// exactText survives no re-encoding unchanged: an escape, a raw non-ASCII letter, characters that encoders like
// to escape.
const exactText = `é \u2028 <&> \"q\"`

func testRequestAnswer(t *testing.T, k connKind) {
	p, c := k.dial(t, 0)
	args := `"arguments":{"text":"` + exactText + `"}`
	req := request(1, "tools/call", `{"name":"echo",`+args+`}`)
	if err := c.Write(waitCtx(t), req); err != nil {
		t.Fatal(err)
	}
	resp, before := readResponse(t, c, 1)
	if len(before) != 0 {
		t.Errorf("before the answer: %s", describe(before))
	}
	if got, want := toolText(t, resp), "echo: é \u2028 <&> \"q\""; got != want {
		t.Errorf("answer text %q, want %q", got, want)
	}
	k.checkRelated(t, resp, "1")
	p.sawOut(t, resp.Msg.Raw()) // the answer is the upstream's bytes
	if k.rewritesRequests {
		p.sawIn(t, []byte(args))
	} else {
		p.sawIn(t, req.Raw()) // the request is ours
	}
}

func testNotifications(t *testing.T, k connKind) {
	_, c := k.dial(t, 0)
	resp, before := roundTrip(t, c, 2, "tools/call", `{"name":"progress","arguments":{"steps":3},"_meta":{"progressToken":"tok"}}`)
	if got := toolText(t, resp); got != "done" {
		t.Errorf("answer text %q", got)
	}
	if len(before) != 3 {
		t.Fatalf("want 3 progress notifications before the answer, got %s", describe(before))
	}
	for i, in := range before {
		m := in.Msg
		if m.Kind() != jsonrpc.KindNotification || m.Method() != "notifications/progress" || !bytes.Contains(m.Params(), []byte(`"progressToken":"tok"`)) {
			t.Errorf("notification %d: %s", i, m.Raw())
		}
		if s, _, ok := jsonrpc.Lookup(m.Params(), "progress"); !ok || m.Params()[s] != byte('1'+i) {
			t.Errorf("notification %d out of order: %s", i, m.Raw())
		}
		k.checkRelated(t, in, "2")
	}
}

func testServerRequest(t *testing.T, k connKind) {
	if !k.serverRequests {
		t.Skip("the modern era has no server→client requests: the server MUST NOT send requests on a response stream")
	}
	_, c := k.dial(t, 0)
	if err := c.Write(waitCtx(t), request(3, "tools/call", `{"name":"roots"}`)); err != nil {
		t.Fatal(err)
	}
	asked := false
	for {
		in := readIncoming(t, c)
		m := in.Msg
		if m.Kind() == jsonrpc.KindRequest && m.Method() == "roots/list" {
			asked = true
			k.checkRelated(t, in, "3")
			answer := mustParse(jsonrpc.AppendResult(nil, m.ID(), []byte(`{"roots":[{"uri":"file:///tmp/a","name":"alpha"}]}`)))
			if err := c.Write(waitCtx(t), answer); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if m.Kind() == jsonrpc.KindResponse && string(m.ID()) == "3" {
			if got := toolText(t, in); got != "roots: alpha" || !asked {
				t.Errorf("answer text %q (roots/list seen: %v)", got, asked)
			}
			return
		}
		t.Errorf("unexpected %s", m.Raw())
	}
}

func testCloseEndsReader(t *testing.T, k connKind) {
	_, c := k.dial(t, 0)
	ctx := waitCtx(t)
	errc := make(chan error, 1)
	go func() {
		for {
			if _, err := c.Read(ctx); err != nil {
				errc <- err
				return
			}
		}
	}()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	var err error
	select {
	case err = <-errc:
	case <-ctx.Done():
		t.Fatal("Read did not end with Close")
	}
	if !errors.Is(err, io.EOF) || !errors.Is(err, errClosed) || !strings.HasPrefix(err.Error(), "upstream suite") {
		t.Errorf("Read after Close = %v, want the upstream's errClosed (a clean end, io.EOF)", err)
	}
	if err := c.Write(ctx, request(4, "ping", "")); !errors.Is(err, io.EOF) {
		t.Errorf("Write after Close = %v, want an error wrapping io.EOF", err)
	}
}

func testUpstreamDies(t *testing.T, k connKind) {
	p, c := k.dial(t, 0)
	p.kill(t, c)
	werr := c.Write(waitCtx(t), request(5, "tools/call", `{"name":"echo","arguments":{"text":"anyone?"}}`))
	switch k.dies {
	case readFails:
		if werr != nil && !strings.HasPrefix(werr.Error(), "upstream suite") {
			t.Errorf("Write = %v, want an error naming the upstream", werr)
		}
		for {
			in, err := c.Read(waitCtx(t))
			if err == nil {
				// The request may fail before the connection ends: that is an answer too, if it says why.
				msg, _ := jsonrpc.LookupString(in.Msg.Error(), "message")
				if in.Msg.Kind() != jsonrpc.KindResponse || string(in.Msg.ID()) != "5" || !strings.HasPrefix(msg, "upstream suite: ") {
					t.Errorf("Read after the upstream died: %s", in.Msg.Raw())
				}
				continue
			}
			if errors.Is(err, errClosed) || !strings.HasPrefix(err.Error(), "upstream suite") {
				t.Errorf("Read = %v, want an error naming the upstream, not a Close", err)
			}
			t.Logf("Read = %v", err)
			return
		}
	case answerFails:
		if werr != nil {
			t.Fatalf("Write = %v; the failure should arrive as the answer", werr)
		}
		resp, _ := readResponse(t, c, 5)
		code, _ := resp.Msg.ErrorCode()
		msg, _ := jsonrpc.LookupString(resp.Msg.Error(), "message")
		if code != protocol.CodeInternalError || !strings.HasPrefix(msg, "upstream suite: ") {
			t.Errorf("answer %s, want -32603 naming the upstream", resp.Msg.Raw())
		}
		k.checkRelated(t, resp, "5")
		t.Logf("answer: %s", msg)
	}
}

func testOversized(t *testing.T, k connKind) {
	const limit = 4096
	_, c := k.dial(t, limit)
	if err := c.Write(waitCtx(t), request(6, "tools/call", `{"name":"big","arguments":{"bytes":10000}}`)); err != nil {
		t.Fatal(err)
	}
	switch k.oversized {
	case readFails:
		_, err := c.Read(waitCtx(t))
		if err == nil || errors.Is(err, errClosed) || !strings.HasPrefix(err.Error(), "upstream suite") || !strings.Contains(err.Error(), "too large") {
			t.Errorf("Read = %v, want an error naming the upstream and the size", err)
		}
	case answerFails:
		resp, _ := readResponse(t, c, 6)
		code, _ := resp.Msg.ErrorCode()
		msg, _ := jsonrpc.LookupString(resp.Msg.Error(), "message")
		if code != protocol.CodeInternalError || !strings.Contains(msg, "suite") || !strings.Contains(msg, "4096") {
			t.Errorf("answer %s, want -32603 naming the upstream and the limit", resp.Msg.Raw())
		}
		// The connection goes on.
		if resp, _ := roundTrip(t, c, 7, "tools/call", `{"name":"echo","arguments":{"text":"small"}}`); toolText(t, resp) != "echo: small" {
			t.Errorf("after the oversized answer: %s", resp.Msg.Raw())
		}
	}
}

func testInvalidMessage(t *testing.T, k connKind) {
	p, c := k.dial(t, 0)
	resp, before := roundTrip(t, c, 8, "tools/call", p.junk)
	if got := toolText(t, resp); got != p.junkAnswer {
		t.Errorf("answer text %q, want %q", got, p.junkAnswer)
	}
	for _, in := range before {
		if in.Msg.Kind() != jsonrpc.KindNotification {
			t.Errorf("before the answer: %s", in.Msg.Raw())
		}
	}
	if _, ok := p.log.find(func(r logRecord) bool {
		return r.Level == slog.LevelWarn && strings.Contains(r.Msg, "not a JSON-RPC message")
	}); !ok {
		t.Error("the invalid message was not logged as skipped")
	}
	if resp, _ := roundTrip(t, c, 9, "tools/call", `{"name":"echo","arguments":{"text":"still here"}}`); toolText(t, resp) != "echo: still here" {
		t.Errorf("after the invalid message: %s", resp.Msg.Raw())
	}
}

// stdioPeer runs this test binary as the SDK test server over stdio, copying its traffic to stderr, which the
// connection logs.
func stdioPeer(protocol string) func(t *testing.T, maxMsg int) *peer {
	return func(t *testing.T, maxMsg int) *peer {
		log := newLogCapture()
		spec := quickExit(Spec{
			Name:            "suite",
			Protocol:        protocol,
			Command:         os.Args[0],
			Env:             map[string]string{envTestServer: "sdk", envTestTee: "1"},
			MaxMessageBytes: maxMsg,
			ShutdownGrace:   5 * time.Second,
			Logger:          slog.New(log),
		})
		saw := func(prefix string) func(*testing.T, []byte) {
			return func(t *testing.T, b []byte) {
				t.Helper()
				log.waitFor(t, func(r logRecord) bool {
					line := r.Attrs["line"]
					return r.Msg == "stderr" && strings.HasPrefix(line, prefix) && strings.Contains(line, string(b))
				})
			}
		}
		return &peer{
			spec:   spec,
			log:    log,
			sawOut: saw(wireOut),
			sawIn:  saw(wireIn),
			kill: func(t *testing.T, c *Conn) {
				if err := syscall.Kill(stdioPID(t, c), syscall.SIGKILL); err != nil {
					t.Fatal(err)
				}
			},
			junk:       `{"name":"junk"}`,
			junkAnswer: "after junk",
		}
	}
}

// junkMarker in an SSE event makes the tap send an event that is not JSON-RPC before it.
const junkMarker = "inject-junk-here"

// httpPeer serves the SDK test server through handler behind a tap, on an in-process HTTP server.
func httpPeer(handler func(*mcp.Server) http.Handler) func(t *testing.T, maxMsg int) *peer {
	return func(t *testing.T, maxMsg int) *peer {
		tp := &tap{next: handler(newTestServer()), changed: make(chan struct{}, 1)}
		srv := httptest.NewServer(tp)
		client := &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
		var once sync.Once
		stop := func() {
			once.Do(func() {
				srv.CloseClientConnections() // long-lived streams too: Close waits for every handler
				srv.Close()
				client.CloseIdleConnections()
			})
		}
		t.Cleanup(stop)
		log := newLogCapture()
		return &peer{
			spec: Spec{
				Name:            "suite",
				URL:             srv.URL + "/mcp",
				HTTPClient:      client,
				MaxMessageBytes: maxMsg,
				Logger:          slog.New(log),
			},
			log:        log,
			sawOut:     func(t *testing.T, b []byte) { t.Helper(); tp.wait(t, &tp.out, b) },
			sawIn:      func(t *testing.T, b []byte) { t.Helper(); tp.wait(t, &tp.in, b) },
			kill:       func(*testing.T, *Conn) { stop() },
			junk:       `{"name":"echo","arguments":{"text":"` + junkMarker + `"}}`,
			junkAnswer: "echo: " + junkMarker,
		}
	}
}

// tap is an http.Handler that records the bytes of every request body and response on their way, and sends an
// event that is not JSON-RPC before an SSE event carrying junkMarker.
type tap struct {
	next    http.Handler
	changed chan struct{} // receives (non-blocking) after each record

	mu      sync.Mutex
	in, out []byte
}

func (tp *tap) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	tp.record(&tp.in, body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	tp.next.ServeHTTP(&tapWriter{ResponseWriter: w, tp: tp}, r)
}

func (tp *tap) record(to *[]byte, b []byte) {
	tp.mu.Lock()
	*to = append(*to, b...)
	tp.mu.Unlock()
	select {
	case tp.changed <- struct{}{}:
	default:
	}
}

// wait waits until the recorded bytes *of contain b.
func (tp *tap) wait(t *testing.T, of *[]byte, b []byte) {
	t.Helper()
	ctx := waitCtx(t)
	for {
		tp.mu.Lock()
		ok := bytes.Contains(*of, b)
		tp.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-tp.changed:
		case <-ctx.Done():
			t.Fatalf("the upstream never had %s on the wire", b)
		}
	}
}

type tapWriter struct {
	http.ResponseWriter
	tp *tap
}

func (w *tapWriter) Write(p []byte) (int, error) {
	if bytes.Contains(p, []byte(junkMarker)) && mediaType(w.Header()) == mediaEventStream {
		_, _ = w.ResponseWriter.Write([]byte("event: message\ndata: this is not JSON\n\n"))
	}
	w.tp.record(&w.tp.out, p)
	return w.ResponseWriter.Write(p)
}

// Unwrap lets the SDK flush through the tap (http.ResponseController).
func (w *tapWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

var _ http.Handler = (*tap)(nil)
