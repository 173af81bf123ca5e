package upstream

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
	"github.com/switchboard-mcp/switchboard/upstream/protocol"
)

// recorded is one HTTP request as the upstream received it.
type recorded struct {
	method string // HTTP method
	rpc    string // JSON-RPC method of a POST body
	header http.Header
	body   []byte
}

// recorder is an http.Handler that records every request before passing it
// to a real MCP handler. tamper, if set, may rewrite a POST (as a
// misbehaving proxy would) or answer it itself.
type recorder struct {
	next   http.Handler
	tamper func(w http.ResponseWriter, r *http.Request, body []byte) (newBody []byte, handled bool)

	mu   sync.Mutex
	reqs []recorded
}

func (rc *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rec := recorded{method: r.Method, header: r.Header.Clone(), body: body}
	if m, err := jsonrpc.Parse(body); err == nil {
		rec.rpc = m.Method()
	}
	rc.mu.Lock()
	rc.reqs = append(rc.reqs, rec)
	rc.mu.Unlock()
	if rc.tamper != nil {
		var handled bool
		if body, handled = rc.tamper(w, r, body); handled {
			return
		}
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	rc.next.ServeHTTP(w, r)
}

// requests returns the recorded requests matching f.
func (rc *recorder) requests(f func(recorded) bool) []recorded {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var out []recorded
	for _, r := range rc.reqs {
		if f(r) {
			out = append(out, r)
		}
	}
	return out
}

func (rc *recorder) count(rpc string) int {
	return len(rc.requests(func(r recorded) bool { return r.rpc == rpc }))
}

// sdkHTTP serves the SDK test server over Streamable HTTP behind a recorder.
// Stateless is the modern-capable mode; the stateful one answers
// server/discover with legacy versions only. PropagateRequestCancellation
// makes the SDK cancel a handler when its request's stream closes, as the
// specification requires ("Closing the SSE response stream MUST be treated
// by the server as cancellation of that request"); it is off by default.
func sdkHTTP(t *testing.T, stateless bool, hooks *testHooks) (*recorder, Spec) {
	rec, spec, _ := sdkHTTPStop(t, stateless, hooks)
	return rec, spec
}

// sdkHTTPStop is sdkHTTP that also returns the function (idempotent, run at
// cleanup anyway) that stops the server and the client's connections.
func sdkHTTPStop(t *testing.T, stateless bool, hooks *testHooks) (*recorder, Spec, func()) {
	t.Helper()
	s := newTestServerWith(hooks)
	opts := &mcp.StreamableHTTPOptions{Stateless: stateless, PropagateRequestCancellation: true}
	rec := &recorder{next: mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, opts)}
	srv := httptest.NewServer(rec)
	client := &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	var once sync.Once
	stop := func() {
		once.Do(func() {
			srv.Close()
			client.CloseIdleConnections()
		})
	}
	t.Cleanup(stop)
	return rec, Spec{
		Name:       "modern",
		URL:        srv.URL + "/mcp",
		Headers:    map[string]string{"X-Test-Token": "secret"},
		HTTPClient: client,
		Logger:     slog.New(newLogCapture()),
	}, stop
}

// rawStdioSpec runs this test binary as the hand-written legacy stdio server.
func rawStdioSpec(env map[string]string) Spec {
	e := map[string]string{envTestServer: "raw", "RAW_VERSION": "2025-11-25"}
	for k, v := range env {
		e[k] = v
	}
	return quickExit(Spec{Name: "raw", Command: os.Args[0], Env: e, ShutdownGrace: time.Second, Logger: slog.New(newLogCapture())})
}

// quickExit spares a child built with -race (this test binary) the race
// detector's default 1s pause at exit, which would dominate the tests that
// start many children.
func quickExit(spec Spec) Spec {
	env := map[string]string{"GORACE": "atexit_sleep_ms=0"}
	for k, v := range spec.Env {
		env[k] = v
	}
	spec.Env = env
	return spec
}

// everythingServer returns the path of the Go SDK conformance fixture, or
// skips the test when it has not been built.
func everythingServer(t *testing.T) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", "bin", "everything-server"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		t.Skip("bin/everything-server is missing; build it with GOBIN=$PWD/bin go install github.com/modelcontextprotocol/go-sdk/conformance/everything-server@v1.8.0")
	}
	return p
}

func TestEraDetection(t *testing.T) {
	tests := []struct {
		name     string
		spec     func(t *testing.T) (Spec, *recorder)
		protocol string
		want     string         // the ServerHello's ProtocolVersion
		server   string         // the ServerHello's serverInfo name
		wantErr  *regexp.Regexp // nil: success
		probes   int            // server/discover POSTs; -1: not HTTP
	}{
		{"http stateless sdk server is modern", httpSpec(true), "", protocol.Modern, "testserver", nil, 1},
		{"http stateful sdk server lists only legacy versions", httpSpec(false), "", "2025-11-25", "testserver", nil, 1},
		{"http forced legacy skips the probe", httpSpec(true), ProtocolLegacy, "2025-11-25", "testserver", nil, 0},
		{"http forced modern", httpSpec(true), ProtocolModern, protocol.Modern, "testserver", nil, 1},
		{"http forced modern on a legacy server fails", httpSpec(false), ProtocolModern, "", "", regexp.MustCompile(`^upstream modern: protocol is modern, but the upstream does not speak 2026-07-28: server/discover lists only \["2025-11-25"`), 1},
		{"stdio sdk server is modern", stdioSpec(quickExit(sdkStdioSpec(newLogCapture()))), "", protocol.Modern, "testserver", nil, -1},
		{"stdio everything-server fixture is modern", func(t *testing.T) (Spec, *recorder) {
			return Spec{Name: "everything", Command: everythingServer(t), Logger: slog.New(newLogCapture())}, nil
		}, "", protocol.Modern, "mcp-conformance-test-server", nil, -1},
		{"stdio legacy server answering discover is legacy", stdioSpec(rawStdioSpec(nil)), "", "2025-11-25", "raw", nil, -1},
		{"stdio forced legacy", stdioSpec(quickExit(sdkStdioSpec(newLogCapture()))), ProtocolLegacy, "2025-11-25", "testserver", nil, -1},
		{"stdio forced modern on a legacy server fails", stdioSpec(rawStdioSpec(nil)), ProtocolModern, "", "", regexp.MustCompile(`^upstream raw: protocol is modern, but the upstream does not speak 2026-07-28: bad server/discover result|lists only`), -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec, rec := tt.spec(t)
			spec.Protocol = tt.protocol
			conn, err := Dial(waitCtx(t), mustTransport(t, spec), ClientHello{})
			if rec != nil && tt.probes >= 0 {
				if n := rec.count("server/discover"); n != tt.probes {
					t.Errorf("%d server/discover POSTs, want %d", n, tt.probes)
				}
			}
			if tt.wantErr != nil {
				if err == nil || !tt.wantErr.MatchString(err.Error()) {
					t.Fatalf("Dial error = %v, want match %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			sh := conn.Server
			if sh.ProtocolVersion != tt.want || sh.Modern() != (tt.want == protocol.Modern) {
				t.Errorf("protocol version %q (stateless %v), want %q", sh.ProtocolVersion, sh.Modern(), tt.want)
			}
			var info struct{ Name string }
			if json.Unmarshal(sh.ServerInfo, &info); info.Name != tt.server {
				t.Errorf("serverInfo %s, want name %q", sh.ServerInfo, tt.server)
			}
			if sh.Modern() && (!slices.Contains(sh.SupportedVersions, protocol.Modern) || len(sh.Capabilities) == 0 || !bytes.Contains(sh.Result, []byte("supportedVersions"))) {
				t.Errorf("modern hello %+v", sh)
			}
			// The connection works in its era.
			resp, _ := roundTrip(t, conn, 1, "tools/list", `{}`)
			if resp.Msg.Error() != nil {
				t.Errorf("tools/list: %s", resp.Msg.Raw())
			}
		})
	}
}

func httpSpec(stateless bool) func(t *testing.T) (Spec, *recorder) {
	return func(t *testing.T) (Spec, *recorder) {
		rec, spec := sdkHTTP(t, stateless, nil)
		return spec, rec
	}
}

func stdioSpec(spec Spec) func(t *testing.T) (Spec, *recorder) {
	return func(*testing.T) (Spec, *recorder) { return spec, nil }
}

// TestStatelessHTTP exercises a modern HTTP connection against the SDK's
// stateless handler: one POST per request with the metadata headers, the
// _meta every request needs, streamed responses, cancellation by closing the
// stream, subscriptions/listen, and errors carried by HTTP statuses.
func TestStatelessHTTP(t *testing.T) {
	before := runtime.NumGoroutine()
	hooks := &testHooks{started: make(chan struct{}, 1), cancelled: make(chan struct{}, 1)}
	rec, spec, stop := sdkHTTPStop(t, true, hooks)
	// The Go SDK (v1.8.0) compares Mcp-Name with the body without decoding
	// it, although "servers MUST decode an encoded Mcp-Name [...] value
	// before comparing it": decode it in front of the SDK, which then checks
	// our encoding against the body.
	rec.tamper = func(_ http.ResponseWriter, r *http.Request, body []byte) ([]byte, bool) {
		v := r.Header.Get("Mcp-Name")
		if enc, ok := strings.CutPrefix(v, "=?base64?"); ok {
			if dec, err := base64.StdEncoding.DecodeString(strings.TrimSuffix(enc, "?=")); err == nil {
				r.Header.Set("Mcp-Name", string(dec))
			}
		}
		return body, false
	}
	conn := mustDial(t, spec, rootsHello)
	sc := conn.Connection.(*modernConn)

	t.Run("one POST per request with the metadata headers", func(t *testing.T) { testStatelessMetadataHeaders(t, conn, rec) })
	t.Run("mirrored arguments", func(t *testing.T) { testStatelessParamHeaders(t, conn, rec) })
	t.Run("request _meta", func(t *testing.T) { testStatelessRequestMeta(t, conn) })
	t.Run("SSE response carrying progress", func(t *testing.T) { testStatelessProgress(t, conn) })
	t.Run("cancellation closes the stream", func(t *testing.T) { testStatelessCancel(t, conn, rec, sc, hooks) })
	t.Run("subscriptions/listen stays open", func(t *testing.T) { testStatelessListen(t, conn, sc) })

	// Close aborts what is in flight.
	if err := conn.Write(waitCtx(t), request(600, "tools/call", `{"name":"block"}`)); err != nil {
		t.Fatal(err)
	}
	waitChan(t, hooks.started)
	conn.Close()
	waitChan(t, hooks.cancelled)
	stop()
	if gets := rec.requests(func(r recorded) bool { return r.method != http.MethodPost }); len(gets) != 0 {
		t.Errorf("%d non-POST requests (GET stream, DELETE): %s", len(gets), gets[0].method)
	}
	if n := rec.count("initialize"); n != 0 {
		t.Errorf("%d initialize POSTs", n)
	}
	if _, err := conn.Read(waitCtx(t)); err == nil {
		t.Error("Read after Close succeeded")
	}
	waitGoroutines(t, before)
}

// testStatelessMetadataHeaders: one POST per request, with the metadata headers and without a session.
func testStatelessMetadataHeaders(t *testing.T, conn *Conn, rec *recorder) {
	tests := []struct {
		method, params string
		wantName       string // Mcp-Name; "" for none
	}{
		{"tools/list", `{}`, ""},
		{"tools/call", `{"name":"echo","arguments":{"text":"hi"}}`, "echo"},
		// Not header-safe: carried base64-encoded, which the SDK
		// decodes and checks against the body (a mismatch is -32020).
		{"prompts/get", `{"name":"grüße"}`, "=?base64?Z3LDvMOfZQ==?="},
		{"resources/read", `{"uri":"test://résumé"}`, "=?base64?dGVzdDovL3LDqXN1bcOp?="},
	}
	for i, tt := range tests {
		t.Run(tt.method, func(t *testing.T) {
			id := 100 + i
			resp, _ := roundTrip(t, conn, id, tt.method, tt.params)
			if resp.Msg.Error() != nil || string(resp.Related) != strconv.Itoa(id) {
				t.Fatalf("response %s related %s", resp.Msg.Raw(), resp.Related)
			}
			posts := rec.requests(func(r recorded) bool { return bytes.Contains(r.body, []byte(`"id":`+strconv.Itoa(id)+`,`)) })
			if len(posts) != 1 {
				t.Fatalf("%d POSTs for the request, want 1", len(posts))
			}
			h := posts[0].header
			for k, want := range map[string]string{
				"MCP-Protocol-Version": protocol.Modern,
				"Mcp-Method":           tt.method,
				"Mcp-Name":             tt.wantName,
				"X-Test-Token":         "secret",
				"Mcp-Session-Id":       "",
				"Content-Type":         "application/json",
			} {
				if got := h.Get(k); got != want {
					t.Errorf("%s: %q, want %q", k, got, want)
				}
			}
		})
	}
}

// testStatelessParamHeaders: WriteRequest sends a tools/call's mirrored arguments as Mcp-Param-* headers, encoded
// where a value is not header-safe, and only headers of that prefix: a caller cannot override the protocol's own.
func testStatelessParamHeaders(t *testing.T, conn *Conn, rec *recorder) {
	params := []Param{
		{Header: "Mcp-Param-Region", Value: "eu-west"},
		{Header: "mcp-param-city", Value: "Zürich"},
		{Header: "Mcp-Method", Value: "tools/list"},
	}
	msg := request(150, "tools/call", `{"name":"echo","arguments":{"text":"hi"}}`)
	if err := conn.WriteRequest(waitCtx(t), msg, params); err != nil {
		t.Fatal(err)
	}
	for {
		in, err := conn.Read(waitCtx(t))
		if err != nil {
			t.Fatal(err)
		}
		if in.Msg.Kind() == jsonrpc.KindResponse && string(in.Msg.ID()) == "150" {
			break
		}
	}
	posts := rec.requests(func(r recorded) bool { return bytes.Contains(r.body, []byte(`"id":150,`)) })
	if len(posts) != 1 {
		t.Fatalf("%d POSTs for the request, want 1", len(posts))
	}
	h := posts[0].header
	for k, want := range map[string]string{
		"Mcp-Param-Region": "eu-west",
		"Mcp-Param-City":   "=?base64?WsO8cmljaA==?=",
		"Mcp-Method":       "tools/call",
	} {
		if got := h.Get(k); got != want {
			t.Errorf("%s: %q, want %q", k, got, want)
		}
	}
}

// testStatelessRequestMeta: every request carries the _meta the era requires, the end client's kept.
func testStatelessRequestMeta(t *testing.T, conn *Conn) {
	tests := []struct {
		name, meta string
		want       *regexp.Regexp
	}{
		// The SDK always reports a "roots" member; the hello's has listChanged.
		{"added from the hello", ``, regexp.MustCompile(`^version=2026-07-28 client=switchboard caps=\{"roots":\{"listChanged":true\}\}$`)},
		{"the end client's kept", `,"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}},"io.modelcontextprotocol/clientInfo":{"name":"end-client","version":"1"}}`,
			regexp.MustCompile(`^version=2026-07-28 client=end-client caps=\{"roots":\{\},"elicitation":\{`)},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, _ := roundTrip(t, conn, 200+i, "tools/call", `{"name":"whoami"`+tt.meta+`}`)
			if text := toolText(t, resp); !tt.want.MatchString(text) {
				t.Errorf("server saw %q, want match %v", text, tt.want)
			}
		})
	}
}

// testStatelessProgress: notifications on a request's SSE stream relate to it.
func testStatelessProgress(t *testing.T, conn *Conn) {
	resp, before := roundTrip(t, conn, 300, "tools/call", `{"name":"progress","arguments":{"steps":3},"_meta":{"progressToken":"p"}}`)
	if len(before) != 3 {
		t.Fatalf("want 3 progress notifications, got %s", describe(before))
	}
	for _, in := range append(before, resp) {
		if string(in.Related) != "300" {
			t.Errorf("%s related %s", in.Msg.Raw(), in.Related)
		}
	}
}

// testStatelessCancel: notifications/cancelled closes the request's stream instead of being POSTed.
func testStatelessCancel(t *testing.T, conn *Conn, rec *recorder, sc *modernConn, hooks *testHooks) {
	if err := conn.Write(waitCtx(t), request(400, "tools/call", `{"name":"block"}`)); err != nil {
		t.Fatal(err)
	}
	waitChan(t, hooks.started)
	if err := conn.Write(waitCtx(t), cancelled(400)); err != nil {
		t.Fatal(err)
	}
	waitChan(t, hooks.cancelled) // the server saw the stream close
	waitIdle(t, sc)
	// Nothing came for the cancelled request, not even an error.
	resp, before := roundTrip(t, conn, 401, "tools/call", `{"name":"echo","arguments":{"text":"after"}}`)
	if len(before) != 0 || resp.Msg.Error() != nil {
		t.Errorf("after cancellation: %s, before %s", resp.Msg.Raw(), describe(before))
	}
	if n := rec.count("notifications/cancelled"); n != 0 {
		t.Errorf("notifications/cancelled was POSTed %d times", n)
	}
}

// testStatelessListen: subscriptions/listen stays open, carrying notifications, until cancelled.
func testStatelessListen(t *testing.T, conn *Conn, sc *modernConn) {
	if err := conn.Write(waitCtx(t), request(500, "subscriptions/listen", `{"notifications":{"toolsListChanged":true}}`)); err != nil {
		t.Fatal(err)
	}
	ack := readIncoming(t, conn)
	if ack.Msg.Method() != "notifications/subscriptions/acknowledged" || string(ack.Related) != "500" {
		t.Fatalf("first message %s related %s", ack.Msg.Raw(), ack.Related)
	}
	if err := conn.Write(waitCtx(t), request(501, "tools/call", `{"name":"addtool"}`)); err != nil {
		t.Fatal(err)
	}
	for gotResp, gotNote := false, false; !gotResp || !gotNote; {
		in := readIncoming(t, conn)
		switch m := in.Msg; {
		case m.Method() == "notifications/tools/list_changed":
			gotNote = true
			if string(in.Related) != "500" {
				t.Errorf("list_changed related %s", in.Related)
			}
		case m.Kind() == jsonrpc.KindResponse && string(m.ID()) == "501":
			gotResp = true
		default:
			t.Errorf("unexpected %s related %s", m.Raw(), in.Related)
		}
	}
	if n := inflight(sc); n != 1 {
		t.Errorf("%d requests in flight, want the listen", n)
	}
	if err := conn.Write(waitCtx(t), cancelled(500)); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, sc)
}

// TestStatelessErrorStatus checks that an HTTP error status surfaces as the
// upstream's JSON-RPC error (code, message and data kept, the request's id
// put in), or as a synthesized -32603 when the body carries none.
func TestStatelessErrorStatus(t *testing.T) {
	rec, spec := sdkHTTP(t, true, nil)
	rec.tamper = func(w http.ResponseWriter, r *http.Request, body []byte) ([]byte, bool) {
		switch {
		case bytes.Contains(body, []byte("tamper-name")):
			r.Header.Set("Mcp-Name", "other") // a proxy rewriting headers
		case bytes.Contains(body, []byte("tamper-version")):
			r.Header.Set("MCP-Protocol-Version", "2099-01-01")
			body = bytes.ReplaceAll(body, []byte(protocol.Modern), []byte("2099-01-01"))
		case bytes.Contains(body, []byte("no-id")):
			// "The HTTP response body MAY comprise a JSON-RPC error
			// response that has no id", as an intermediary's would.
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"jsonrpc":"2.0","error":{"code":-32021,"message":"missing capability","data":{"requiredCapabilities":{"sampling":{}}}}}`)
			return nil, true
		case bytes.Contains(body, []byte("cut-stream")):
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":\"x\"}}\n\n")
			return nil, true // the stream ends before the response
		case bytes.Contains(body, []byte("bad-gateway")):
			http.Error(w, "upstream is down", http.StatusBadGateway)
			return nil, true
		}
		return body, false
	}
	conn := mustDial(t, spec, ClientHello{})
	defer conn.Close()
	tests := []struct {
		name, method, params string
		code                 int
		message              *regexp.Regexp
		data                 string // a substring of error.data
	}{
		{"404 unknown method", "foo/bar", `{}`, protocol.CodeMethodNotFound, regexp.MustCompile(`foo/bar`), ""},
		{"400 header mismatch", "tools/call", `{"name":"echo","arguments":{"text":"tamper-name"}}`, -32020, regexp.MustCompile(`Mcp-Name`), ""},
		{"400 unsupported version", "tools/call", `{"name":"echo","arguments":{"text":"tamper-version"}}`, protocol.CodeUnsupportedProtocolVersion, regexp.MustCompile(`unsupported protocol version`), `"supported":["2026-07-28"`},
		{"400 error without an id", "tools/call", `{"name":"echo","arguments":{"text":"no-id"}}`, -32021, regexp.MustCompile(`^missing capability$`), `"requiredCapabilities":{"sampling":{}}`},
		{"stream ended before the response", "tools/call", `{"name":"echo","arguments":{"text":"cut-stream"}}`, protocol.CodeInternalError, regexp.MustCompile(`^upstream modern: response stream ended before the response`), ""},
		{"502 without a JSON-RPC body", "tools/call", `{"name":"echo","arguments":{"text":"bad-gateway"}}`, protocol.CodeInternalError, regexp.MustCompile(`^upstream modern: HTTP 502`), ""},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, _ := roundTrip(t, conn, i+1, tt.method, tt.params)
			var e struct {
				Code    int             `json:"code"`
				Message string          `json:"message"`
				Data    json.RawMessage `json:"data"`
			}
			if err := json.Unmarshal(resp.Msg.Error(), &e); err != nil {
				t.Fatalf("response %s is not an error: %v", resp.Msg.Raw(), err)
			}
			if e.Code != tt.code || !tt.message.MatchString(e.Message) || !strings.Contains(string(e.Data), tt.data) {
				t.Errorf("error %s, want code %d, message matching %v, data with %s", resp.Msg.Error(), tt.code, tt.message, tt.data)
			}
			if string(resp.Msg.ID()) != strconv.Itoa(i+1) || string(resp.Related) != strconv.Itoa(i+1) {
				t.Errorf("id %s related %s", resp.Msg.ID(), resp.Related)
			}
		})
	}
}

// TestEraCache checks that the verdict of the first Dial spares the later
// Dials of the same transport the probe.
func TestEraCache(t *testing.T) {
	t.Run("http modern", func(t *testing.T) {
		rec, spec := sdkHTTP(t, true, nil)
		tr := mustTransport(t, spec)
		first, err := Dial(waitCtx(t), tr, ClientHello{})
		if err != nil {
			t.Fatal(err)
		}
		defer first.Close()
		n := len(rec.requests(func(recorded) bool { return true }))
		second, err := Dial(waitCtx(t), tr, ClientHello{})
		if err != nil {
			t.Fatal(err)
		}
		defer second.Close()
		if m := len(rec.requests(func(recorded) bool { return true })); m != n {
			t.Errorf("the second Dial sent %d requests, want none", m-n)
		}
		if !second.Server.Modern() || !bytes.Equal(second.Server.Result, first.Server.Result) {
			t.Errorf("second hello %+v", second.Server)
		}
		if resp, _ := roundTrip(t, second, 1, "tools/call", `{"name":"echo","arguments":{"text":"x"}}`); resp.Msg.Error() != nil {
			t.Errorf("second connection: %s", resp.Msg.Raw())
		}
	})
	t.Run("http legacy", func(t *testing.T) {
		rec, spec := sdkHTTP(t, false, nil)
		tr := mustTransport(t, spec)
		for range 2 {
			c, err := Dial(waitCtx(t), tr, ClientHello{})
			if err != nil {
				t.Fatal(err)
			}
			c.Close()
		}
		if p, i := rec.count("server/discover"), rec.count("initialize"); p != 1 || i != 2 {
			t.Errorf("%d probes and %d initialize POSTs, want 1 and 2", p, i)
		}
	})
	t.Run("stdio modern", func(t *testing.T) {
		log := newLogCapture()
		spec := quickExit(sdkStdioSpec(log))
		spec.Protocol = ""
		tr := mustTransport(t, spec)
		for i := range 2 {
			c, err := Dial(waitCtx(t), tr, ClientHello{})
			if err != nil {
				t.Fatal(err)
			}
			if resp, _ := roundTrip(t, c, 1, "tools/call", `{"name":"echo","arguments":{"text":"x"}}`); resp.Msg.Error() != nil || !c.Server.Modern() {
				t.Errorf("Dial %d: %s", i, resp.Msg.Raw())
			}
			c.Close()
		}
		probes := 0
		log.find(func(r logRecord) bool {
			if strings.Contains(r.Msg, "speaks the modern protocol") {
				probes++
			}
			return false
		})
		if probes != 1 {
			t.Errorf("%d probes, want 1", probes)
		}
	})
}

// TestStdioProbeFallback runs legacy stdio servers that do not answer the
// probe as a modern server would: Dial must fall back to initialize once the
// probe's bound has passed (TestProbeBound times that bound), on the same
// child unless it exited, and a late answer to the probe must not reach the
// caller. The second Dial skips the probe.
func TestStdioProbeFallback(t *testing.T) {
	const budget = 2 * time.Second // the probe gets half of it
	tests := []struct {
		early    string
		timedOut bool // the probe ends by its bound, not by the child
	}{
		{"silent", true},
		{"late", true},
		{"exit", false},
	}
	for _, tt := range tests {
		t.Run(tt.early, func(t *testing.T) {
			log := newLogCapture()
			spec := rawStdioSpec(map[string]string{"RAW_EARLY": tt.early})
			spec.Logger = slog.New(log)
			tr := mustTransport(t, spec)
			for i := range 2 {
				ctx, cancel := context.WithTimeout(t.Context(), budget)
				conn, err := Dial(ctx, tr, ClientHello{})
				cancel()
				if err != nil {
					t.Fatalf("Dial %d: %v", i, err)
				}
				if conn.Server.ProtocolVersion != "2025-11-25" {
					t.Errorf("protocol version %q", conn.Server.ProtocolVersion)
				}
				var reasons []string
				log.find(func(r logRecord) bool {
					if strings.Contains(r.Msg, "does not speak the modern protocol") {
						reasons = append(reasons, r.Attrs["reason"])
					}
					return false
				})
				if len(reasons) != 1 {
					t.Fatalf("Dial %d: %d fallbacks logged, want the first Dial's only: %q", i, len(reasons), reasons)
				}
				if timedOut := strings.HasPrefix(reasons[0], "no answer to server/discover within"); timedOut != tt.timedOut {
					t.Errorf("fallback reason %q, want a timeout: %v", reasons[0], tt.timedOut)
				}
				resp, before := roundTrip(t, conn, 1, "tools/list", "")
				if !bytes.Contains(resp.Msg.Result(), []byte("tools/list")) || len(before) != 0 {
					t.Errorf("response %s, before %s", resp.Msg.Raw(), describe(before))
				}
				conn.Close()
			}
		})
	}
}

// TestStdioModern checks the modern era over stdio: the same pipe, requests
// completed with _meta, notifications/cancelled sent as a message.
func TestStdioModern(t *testing.T) {
	log := newLogCapture()
	spec := quickExit(sdkStdioSpec(log))
	spec.Protocol = ProtocolModern
	conn := mustDial(t, spec, rootsHello)
	defer conn.Close()
	if _, ok := conn.Connection.(*stdioConn); !ok || !conn.Server.Modern() {
		t.Fatalf("connection %T, hello %+v", conn.Connection, conn.Server)
	}

	resp, _ := roundTrip(t, conn, 1, "tools/call", `{"name":"whoami"}`)
	if text := toolText(t, resp); !strings.HasPrefix(text, `version=2026-07-28 client=switchboard caps={"roots":{"listChanged":true}`) {
		t.Errorf("server saw %q", text)
	}
	resp, _ = roundTrip(t, conn, 2, "tools/call", `{"name":"whoami","_meta":{"io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}}`)
	if text := toolText(t, resp); !strings.Contains(text, "elicitation") || strings.Contains(text, "listChanged") {
		t.Errorf("server saw %q", text)
	}

	if err := conn.Write(waitCtx(t), request(3, "tools/call", `{"name":"block"}`)); err != nil {
		t.Fatal(err)
	}
	log.waitFor(t, func(r logRecord) bool { return r.Attrs["line"] == "block: started" })
	if err := conn.Write(waitCtx(t), cancelled(3)); err != nil {
		t.Fatal(err)
	}
	log.waitFor(t, func(r logRecord) bool { return r.Attrs["line"] == "block: cancelled" })
}

// cancelled builds the notifications/cancelled the gateway sends for id.
func cancelled(id int) jsonrpc.Message {
	return mustParse(jsonrpc.AppendNotification(nil, "notifications/cancelled", []byte(`{"requestId":`+strconv.Itoa(id)+`}`)))
}

// toolText returns the text of a tools/call result.
func toolText(t *testing.T, resp Incoming) string {
	t.Helper()
	var r struct {
		Content []struct{ Text string } `json:"content"`
	}
	if err := json.Unmarshal(resp.Msg.Result(), &r); err != nil || len(r.Content) == 0 {
		t.Fatalf("response %s", resp.Msg.Raw())
	}
	return r.Content[0].Text
}

func readIncoming(t *testing.T, c Connection) Incoming {
	t.Helper()
	in, err := c.Read(waitCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	return in
}

func waitChan(t *testing.T, ch <-chan struct{}) {
	t.Helper()
	select {
	case <-ch:
	case <-waitCtx(t).Done():
		t.Fatal("timed out")
	}
}

func inflight(c *modernConn) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.inflight)
}

// waitIdle waits until no request is in flight on c.
func waitIdle(t *testing.T, c *modernConn) {
	t.Helper()
	ctx := waitCtx(t)
	for inflight(c) > 0 {
		select {
		case <-time.After(time.Millisecond):
		case <-ctx.Done():
			t.Fatal("requests still in flight")
		}
	}
}

// TestSharedStdioPrefersLegacy: with protocol auto, a stdio upstream that speaks both eras (the Go SDK's server)
// is spoken to in the modern era, unless it is shared by every client, where it gets the initialize handshake on
// the child the probe started; the verdict is remembered, so the next Dial does not probe. Told modern, a shared
// one stays modern.
func TestSharedStdioPrefersLegacy(t *testing.T) {
	for _, tc := range []struct {
		name       string
		shared     bool
		protocol   string
		wantModern bool
	}{
		{"per-client auto", false, ProtocolAuto, true},
		{"shared auto", true, ProtocolAuto, false},
		{"shared modern", true, ProtocolModern, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := quickExit(sdkStdioSpec(newLogCapture()))
			spec.Protocol, spec.Shared = tc.protocol, tc.shared
			tr := mustTransport(t, spec)
			for i := range 2 {
				conn, err := Dial(waitCtx(t), tr, rootsHello)
				if err != nil {
					t.Fatal(err)
				}
				if conn.Server.Modern() != tc.wantModern {
					t.Errorf("dial %d: protocol version %s, want modern %v", i, conn.Server.ProtocolVersion, tc.wantModern)
				}
				resp, _ := roundTrip(t, conn, 1, "tools/call", `{"name":"whoami"}`)
				if text := toolText(t, resp); !strings.HasPrefix(text, "version="+conn.Server.ProtocolVersion) {
					t.Errorf("dial %d: server saw %q", i, text)
				}
				conn.Close()
			}
			if e, _ := tr.(*CommandTransport).eras.get(); (e == eraModern) != tc.wantModern {
				t.Errorf("era remembered: %v", e)
			}
		})
	}
}
