//lint:file-ignore SA1019 sampling, roots and logging are deprecated in 2026-07-28 but are legacy-era features the gateway must carry; the tests exercise them on purpose.

package gateway_test

// Shared helpers for the gateway's interop tests: an upstream MCP server built from the official Go SDK (served
// over stdio by re-executing this test binary, or over streamable HTTP in process), a router + front end on an
// httptest server, and clients (the Go SDK's, and raw net/http for the transport-level cases).

import (
	"bufio"
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
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/gateway"
	"github.com/switchboard-mcp/switchboard/routing"
	"github.com/switchboard-mcp/switchboard/upstream"
)

const (
	// envServer makes the test binary an upstream MCP server over stdio; its value is the server's name.
	envServer = "SWITCHBOARD_GATEWAY_TEST_SERVER"
	// envMarkers is the address of the test's marker sink, where the server reports what the tests observe
	// from the upstream side ("cancel-<tag>" when a handler's context is cancelled); see markerSink.
	envMarkers = "SWITCHBOARD_GATEWAY_TEST_MARKERS"

	// legacyVersion is what the SDK clients ask for: the gateway speaks the legacy era.
	legacyVersion = "2025-11-25"

	// guard bounds every wait in these tests. It is a failure guard, never a timed assertion.
	guard = 30 * time.Second

	// logToken is a progress token the test server's sending middleware turns into notifications/message, so
	// that logs can be sent without the client having set a level first (the SDK otherwise suppresses them).
	logToken = "__switchboard_test_log__"
)

func TestMain(m *testing.M) {
	if name := os.Getenv(envServer); name != "" {
		srv := newUpstreamServer(name, os.Getenv(envMarkers), true)
		if err := srv.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			fmt.Fprintln(os.Stderr, "test server:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// ---------------------------------------------------------------------------------------------------------------
// The upstream test server.

type echoIn struct {
	Text string `json:"text"`
}

type slowIn struct {
	Tag string `json:"tag"`
	// MS, when positive, ends the call after that many milliseconds; otherwise it waits for cancellation.
	MS int `json:"ms,omitempty"`
	// Late makes a cancelled call answer anyway (a response crossing the cancellation).
	Late bool `json:"late,omitempty"`
}

type progressIn struct {
	Tag   string `json:"tag"`
	Steps int    `json:"steps"`
	// Group and N form a barrier: the call emits its progress only once N calls of the group are in flight.
	Group string `json:"group,omitempty"`
	N     int    `json:"n,omitempty"`
}

type tagIn struct {
	Tag string `json:"tag,omitempty"`
}

type logIn struct {
	N    int `json:"n"`
	Size int `json:"size"`
}

type empty struct{}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

func errText(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// barriers make concurrent calls meet inside the (single) server process.
var barriers = struct {
	sync.Mutex
	m map[string]*barrier
}{m: map[string]*barrier{}}

type barrier struct {
	n    int
	done chan struct{}
}

func meet(ctx context.Context, group string, n int) error {
	if group == "" || n <= 1 {
		return nil
	}
	barriers.Lock()
	b := barriers.m[group]
	if b == nil {
		b = &barrier{done: make(chan struct{})}
		barriers.m[group] = b
	}
	b.n++
	if b.n == n {
		close(b.done)
	}
	barriers.Unlock()
	select {
	case <-b.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// mark tells the test's marker sink at addr (see markerSink) that the upstream reached name. It runs in the
// upstream, in this process or in a stdio child.
func mark(addr, name string) {
	if addr == "" {
		return
	}
	c, err := net.DialTimeout("tcp", addr, guard)
	if err != nil {
		fmt.Fprintf(os.Stderr, "test server: marker %s: %v\n", name, err)
		return
	}
	defer c.Close()
	_, _ = io.WriteString(c, name+"\n")
}

// rpcCode describes the JSON-RPC error inside err, for tool results the tests read.
func rpcCode(err error) string {
	var we *jsonrpc.Error
	if errors.As(err, &we) {
		return fmt.Sprintf("code=%d message=%s", we.Code, we.Message)
	}
	return "error=" + err.Error()
}

// newUpstreamServer builds the SDK server used over stdio and HTTP. name identifies it in results.
func newUpstreamServer(name, markers string, stdio bool) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: name, Version: "1.0.0"}, &mcp.ServerOptions{
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}, Logging: &mcp.LoggingCapabilities{}},
	})
	s.AddSendingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if p, ok := req.GetParams().(*mcp.ProgressNotificationParams); ok && method == "notifications/progress" && p.ProgressToken == logToken {
				ss, _ := req.GetSession().(*mcp.ServerSession)
				lreq := &mcp.ServerRequest[*mcp.LoggingMessageParams]{Session: ss, Params: &mcp.LoggingMessageParams{Level: "info", Logger: name, Data: p.Message}}
				return next(ctx, "notifications/message", lreq)
			}
			return next(ctx, method, req)
		}
	})
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "returns its text"}, func(ctx context.Context, req *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
		return text(in.Text), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "whoami", Description: "returns the server's name"}, func(ctx context.Context, req *mcp.CallToolRequest, _ empty) (*mcp.CallToolResult, any, error) {
		return text(name), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "slow", Description: "waits for cancellation"}, func(ctx context.Context, req *mcp.CallToolRequest, in slowIn) (*mcp.CallToolResult, any, error) {
		if tok := req.Params.GetProgressToken(); tok != nil {
			_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: 1, Message: in.Tag + " started"})
		}
		var timer <-chan time.Time
		if in.MS > 0 {
			t := time.NewTimer(time.Duration(in.MS) * time.Millisecond)
			defer t.Stop()
			timer = t.C
		}
		select {
		case <-ctx.Done():
			mark(markers, "cancel-"+in.Tag)
			if in.Late {
				return text("late " + in.Tag), nil, nil
			}
			return nil, nil, ctx.Err()
		case <-timer:
			return text("slow done " + in.Tag), nil, nil
		}
	})
	mcp.AddTool(s, &mcp.Tool{Name: "progress", Description: "reports progress"}, func(ctx context.Context, req *mcp.CallToolRequest, in progressIn) (*mcp.CallToolResult, any, error) {
		if err := meet(ctx, in.Group, in.N); err != nil {
			return nil, nil, err
		}
		tok := req.Params.GetProgressToken()
		for i := 1; i <= in.Steps && tok != nil; i++ {
			err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: float64(i), Total: float64(in.Steps), Message: fmt.Sprintf("%s step %d", in.Tag, i)})
			if err != nil {
				return nil, nil, err
			}
		}
		return text(in.Tag + " done"), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "sample", Description: "asks the client to sample"}, func(ctx context.Context, req *mcp.CallToolRequest, in tagIn) (*mcp.CallToolResult, any, error) {
		res, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{
			Messages:  []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: in.Tag}}},
			MaxTokens: 16,
		})
		if err != nil {
			return errText("sampling failed: " + rpcCode(err)), nil, nil
		}
		tc, _ := res.Content.(*mcp.TextContent)
		if tc == nil {
			return errText("sampling returned no text"), nil, nil
		}
		return text("sampled: " + tc.Text), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "roots", Description: "lists the client's roots"}, func(ctx context.Context, req *mcp.CallToolRequest, _ empty) (*mcp.CallToolResult, any, error) {
		res, err := req.Session.ListRoots(ctx, nil)
		if err != nil {
			return errText("roots failed: " + rpcCode(err)), nil, nil
		}
		var names []string
		for _, r := range res.Roots {
			names = append(names, r.Name)
		}
		return text("roots: " + strings.Join(names, ",")), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "crash", Description: "exits the process"}, func(ctx context.Context, req *mcp.CallToolRequest, _ empty) (*mcp.CallToolResult, any, error) {
		if stdio {
			os.Exit(3)
		}
		return errText("crash is only for stdio"), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "log", Description: "sends log messages"}, func(ctx context.Context, req *mcp.CallToolRequest, in logIn) (*mcp.CallToolResult, any, error) {
		if err := sendLogs(ctx, req.Session, in.N, in.Size); err != nil {
			return nil, nil, err
		}
		return text(fmt.Sprintf("logged %d", in.N)), nil, nil
	})
	return s
}

// sendLogs sends n notifications/message of about size bytes each (see logToken).
func sendLogs(ctx context.Context, ss *mcp.ServerSession, n, size int) error {
	pad := strings.Repeat("x", max(size, 1))
	for i := range n {
		if err := ss.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: logToken, Progress: float64(i + 1), Message: fmt.Sprintf("log %d %s", i, pad)}); err != nil {
			return err
		}
	}
	return nil
}

// ---------------------------------------------------------------------------------------------------------------
// Upstreams.

// testLogger keeps the gateway's logs out of the test output unless SWITCHBOARD_TEST_LOG is set.
func testLogger() *slog.Logger {
	if os.Getenv("SWITCHBOARD_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// stdioUpstream configures an upstream that runs this test binary as an SDK server over stdio.
func stdioUpstream(t *testing.T, name string, mode routing.SessionMode, markers string) routing.UpstreamConfig {
	t.Helper()
	tr, err := upstream.NewTransport(upstream.Spec{
		Name:          name,
		Command:       os.Args[0],
		Args:          []string{"-test.run=^$"},
		Env:           map[string]string{envServer: name, envMarkers: markers},
		ShutdownGrace: 2 * time.Second,
		Logger:        testLogger(),
	})
	if err != nil {
		t.Fatal(err)
	}
	return routing.UpstreamConfig{Name: name, Prefix: name + "__", Mode: mode, Transport: tr, Kind: "stdio",
		Backoff: upstream.Backoff{Min: 20 * time.Millisecond, Max: 200 * time.Millisecond}}
}

// httpServer is an in-process streamable HTTP upstream.
type httpServer struct {
	srv *mcp.Server
	ts  *httptest.Server

	mu       sync.Mutex
	sessions []*mcp.ServerSession
}

// lastSession returns the newest upstream session that has called a method, or nil.
func (h *httpServer) lastSession() *mcp.ServerSession {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.sessions) == 0 {
		return nil
	}
	return h.sessions[len(h.sessions)-1]
}

// httpUpstream configures an upstream served by the SDK's streamable HTTP handler in an httptest server.
func httpUpstream(t *testing.T, name string, mode routing.SessionMode, markers string) (routing.UpstreamConfig, *httpServer) {
	t.Helper()
	h := &httpServer{srv: newUpstreamServer(name, markers, false)}
	h.srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if ss, ok := req.GetSession().(*mcp.ServerSession); ok {
				h.mu.Lock()
				if len(h.sessions) == 0 || h.sessions[len(h.sessions)-1] != ss {
					h.sessions = append(h.sessions, ss)
				}
				h.mu.Unlock()
			}
			return next(ctx, method, req)
		}
	})
	h.ts = httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return h.srv }, nil))
	t.Cleanup(func() {
		h.ts.CloseClientConnections()
		h.ts.Close()
	})
	tr, err := upstream.NewTransport(upstream.Spec{Name: name, URL: h.ts.URL, Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	return routing.UpstreamConfig{Name: name, Prefix: name + "__", Mode: mode, Transport: tr, Kind: "http",
		Backoff: upstream.Backoff{Min: 20 * time.Millisecond, Max: 200 * time.Millisecond}}, h
}

// upstreamKind is the table axis "which transport".
type upstreamKind string

const (
	kindStdio upstreamKind = "stdio"
	kindHTTP  upstreamKind = "http"
)

func newUpstream(t *testing.T, kind upstreamKind, name string, mode routing.SessionMode, markers string) routing.UpstreamConfig {
	t.Helper()
	if kind == kindStdio {
		return stdioUpstream(t, name, mode, markers)
	}
	c, _ := httpUpstream(t, name, mode, markers)
	return c
}

func modeName(m routing.SessionMode) string { return m.String() }

// ---------------------------------------------------------------------------------------------------------------
// The gateway.

type harness struct {
	t   *testing.T
	r   *routing.Router
	ts  *httptest.Server
	url string // the MCP endpoint
}

// startGateway runs a router over ups behind the HTTP front end and waits until it is ready. Everything it starts
// is stopped in t.Cleanup: sessions, upstream sessions (stdio children), and the HTTP server.
func startGateway(t *testing.T, ropts routing.Options, gopts gateway.Options, ups ...routing.UpstreamConfig) *harness {
	t.Helper()
	h := startGatewayNoWait(t, ropts, gopts, ups...)
	wctx, wcancel := context.WithTimeout(context.Background(), guard)
	defer wcancel()
	if err := h.r.WaitReady(wctx); err != nil {
		t.Fatalf("gateway not ready: %v", err)
	}
	return h
}

// startGatewayNoWait is startGateway without waiting for readiness.
func startGatewayNoWait(t *testing.T, ropts routing.Options, gopts gateway.Options, ups ...routing.UpstreamConfig) *harness {
	t.Helper()
	if ropts.Logger == nil {
		ropts.Logger = testLogger()
	}
	if gopts.Logger == nil {
		gopts.Logger = testLogger()
	}
	r, err := routing.New(ropts, ups)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); r.Run(ctx) }()
	ts := httptest.NewServer(gateway.New(r, gopts).Handler())
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(guard):
			t.Errorf("router did not stop within %s", guard)
		}
		ts.CloseClientConnections()
		ts.Close()
	})
	return &harness{t: t, r: r, ts: ts, url: ts.URL + "/mcp"}
}

// markerSink starts a loopback listener where the upstream reports what the tests observe from its side (mark),
// and returns its address, for the upstream's envMarkers. waitMarker wakes on a marker's arrival.
func markerSink(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &markers{arrived: map[string]chan struct{}{}}
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return // closed by the cleanup
			}
			wg.Go(func() {
				defer c.Close()
				sc := bufio.NewScanner(c)
				for sc.Scan() {
					s.record(sc.Text())
				}
			})
		}
	})
	sinks.Store(l.Addr().String(), s)
	t.Cleanup(func() {
		sinks.Delete(l.Addr().String())
		l.Close()
		wg.Wait()
	})
	return l.Addr().String()
}

// sinks maps a marker sink's address to what it received.
var sinks sync.Map // string -> *markers

// markers are the names a marker sink received; each has a channel closed on its arrival.
type markers struct {
	mu      sync.Mutex
	arrived map[string]chan struct{}
}

// wait returns the channel closed when name arrives.
func (m *markers) wait(name string) <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.channel(name)
}

func (m *markers) record(name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ch := m.channel(name)
	select {
	case <-ch: // reported before
	default:
		close(ch)
	}
}

// channel returns name's channel, made on first use; m.mu is held.
func (m *markers) channel(name string) chan struct{} {
	ch := m.arrived[name]
	if ch == nil {
		ch = make(chan struct{})
		m.arrived[name] = ch
	}
	return ch
}

// waitMarker waits until the upstream reported a marker to the sink at addr; the wait is bounded by guard.
func waitMarker(t *testing.T, addr, name string) {
	t.Helper()
	s, ok := sinks.Load(addr)
	if !ok {
		t.Fatalf("waitMarker: %q is not a marker sink of this test (markerSink)", addr)
	}
	timer := time.NewTimer(guard)
	defer timer.Stop()
	select {
	case <-s.(*markers).wait(name):
	case <-timer.C:
		t.Fatalf("upstream never reported marker %s within %s", name, guard)
	}
}

// poll checks cond on a ticker until it holds (true) or guard runs out (false). It is for state the code under
// test gives no change signal for (the router's session table, a Redis record, a metrics scrape, a readiness
// answer): the check is repeated, never timed, and only the failure is bounded.
func poll(cond func() bool) bool {
	if cond() {
		return true
	}
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	timer := time.NewTimer(guard)
	defer timer.Stop()
	for {
		select {
		case <-tick.C:
			if cond() {
				return true
			}
		case <-timer.C:
			return cond()
		}
	}
}

// waitFor polls cond (see poll) until it holds; the wait is bounded by guard.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	if !poll(cond) {
		t.Fatalf("gave up waiting for %s after %s", what, guard)
	}
}

// ---------------------------------------------------------------------------------------------------------------
// SDK clients.

// connect opens an SDK client session to the gateway, closed in t.Cleanup.
func (h *harness) connect(t *testing.T, name string, opts *mcp.ClientOptions, roots ...*mcp.Root) *mcp.ClientSession {
	t.Helper()
	return h.connectVersion(t, name, opts, legacyVersion, roots...)
}

func (h *harness) connectVersion(t *testing.T, name string, opts *mcp.ClientOptions, version string, roots ...*mcp.Root) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: name, Version: "1.0.0"}, opts)
	if len(roots) > 0 {
		c.AddRoots(roots...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	var so *mcp.ClientSessionOptions
	if version != "" {
		so = &mcp.ClientSessionOptions{ProtocolVersion: version}
	}
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: h.url, MaxRetries: -1}, so)
	if err != nil {
		t.Fatalf("client %s: connect: %v", name, err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// ctxGuard is a context bounded by guard, for one step of a test.
func ctxGuard(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	t.Cleanup(cancel)
	return ctx
}

// call runs a tool and returns the text of its result; a protocol error fails the test.
func call(t *testing.T, cs *mcp.ClientSession, tool string, args any) string {
	t.Helper()
	res, err := cs.CallTool(ctxGuard(t), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("call %s: %v", tool, err)
	}
	return resultText(res)
}

func resultText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	if res.IsError {
		return "ERROR: " + b.String()
	}
	return b.String()
}

// wireError extracts the JSON-RPC error an SDK call failed with.
func wireError(t *testing.T, err error) *jsonrpc.Error {
	t.Helper()
	var we *jsonrpc.Error
	if !errors.As(err, &we) {
		t.Fatalf("want a JSON-RPC error, got %T: %v", err, err)
	}
	return we
}

// ---------------------------------------------------------------------------------------------------------------
// Raw HTTP.

// rawResp is one HTTP answer of the gateway: the status, the content type and the JSON-RPC messages it carried
// (the JSON body, or the data of every SSE event).
type rawResp struct {
	status int
	header http.Header
	body   []byte
	msgs   []json.RawMessage
}

// rpcMsg is the shape of any JSON-RPC message, with the id kept byte for byte.
type rpcMsg struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
}

func decodeMsg(t *testing.T, raw []byte) rpcMsg {
	t.Helper()
	var m rpcMsg
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("not a JSON-RPC message: %v: %s", err, raw)
	}
	return m
}

// final returns the response among the messages (the last message with a result or an error).
func (r rawResp) final(t *testing.T) rpcMsg {
	t.Helper()
	for i := len(r.msgs) - 1; i >= 0; i-- {
		m := decodeMsg(t, r.msgs[i])
		if m.Method == "" {
			return m
		}
	}
	t.Fatalf("no response in HTTP %d answer: %s", r.status, r.body)
	return rpcMsg{}
}

type rawClient struct {
	t       *testing.T
	url     string
	session string
	version string // the Mcp-Protocol-Version header to send, "" for none
	hc      *http.Client
}

func (h *harness) raw(t *testing.T) *rawClient {
	return &rawClient{t: t, url: h.url, hc: &http.Client{}}
}

// post builds one POST of body with the usual headers: the media types, and the session's id and version.
func (c *rawClient) post(body io.Reader) *http.Request {
	c.t.Helper()
	req, err := http.NewRequestWithContext(ctxGuard(c.t), http.MethodPost, c.url, body)
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if c.session != "" {
		req.Header.Set("Mcp-Session-Id", c.session)
	}
	if c.version != "" {
		req.Header.Set("Mcp-Protocol-Version", c.version)
	}
	return req
}

// do sends one POST with the usual headers (overridable through hdr; an empty value removes a header).
func (c *rawClient) do(body string, hdr map[string]string) rawResp {
	c.t.Helper()
	req := c.post(strings.NewReader(body))
	for k, v := range hdr {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		c.t.Fatalf("POST: %v", err)
	}
	defer resp.Body.Close()
	return readResp(c.t, resp)
}

func readResp(t *testing.T, resp *http.Response) rawResp {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	r := rawResp{status: resp.StatusCode, header: resp.Header, body: b}
	ct := resp.Header.Get("Content-Type")
	switch {
	case strings.HasPrefix(ct, "text/event-stream"):
		r.msgs = sseData(b)
	case len(bytes.TrimSpace(b)) > 0 && strings.HasPrefix(ct, "application/json"):
		trimmed := bytes.TrimSpace(b)
		if trimmed[0] == '[' {
			var arr []json.RawMessage
			if err := json.Unmarshal(trimmed, &arr); err != nil {
				t.Fatalf("bad JSON array answer: %v: %s", err, b)
			}
			r.msgs = arr
		} else {
			r.msgs = []json.RawMessage{trimmed}
		}
	}
	return r
}

// sseData returns the data of every event of an SSE body.
func sseData(b []byte) []json.RawMessage {
	var out []json.RawMessage
	var data []byte
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	flush := func() {
		if len(bytes.TrimSpace(data)) > 0 {
			out = append(out, json.RawMessage(bytes.Clone(data)))
		}
		data = data[:0]
	}
	for sc.Scan() {
		line := sc.Bytes()
		switch {
		case len(line) == 0:
			flush()
		case bytes.HasPrefix(line, []byte("data:")):
			d := bytes.TrimPrefix(line[5:], []byte(" "))
			if len(data) > 0 {
				data = append(data, '\n')
			}
			data = append(data, d...)
		}
	}
	flush()
	return out
}

// initialize starts a session with the given protocol version and sends notifications/initialized.
func (c *rawClient) initialize(version string) {
	c.t.Helper()
	body := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"` + version +
		`","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
	r := c.do(body, nil)
	if r.status != http.StatusOK {
		c.t.Fatalf("initialize: HTTP %d: %s", r.status, r.body)
	}
	c.session = r.header.Get("Mcp-Session-Id")
	if c.session == "" {
		c.t.Fatalf("initialize: no Mcp-Session-Id")
	}
	if m := r.final(c.t); m.Error != nil {
		c.t.Fatalf("initialize: %s", m.Error.Message)
	}
	if version != "2025-03-26" && version != "2024-11-05" {
		c.version = version
	}
	if r := c.do(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, nil); r.status != http.StatusAccepted {
		c.t.Fatalf("initialized: HTTP %d: %s", r.status, r.body)
	}
}

// deadAddress returns an http URL where nothing listens.
func deadAddress(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr + "/mcp"
}

// stream is an SSE response read incrementally: every event's data arrives on msgs, which is closed at the end
// of the body.
type stream struct {
	resp *http.Response
	msgs chan json.RawMessage
	done chan struct{}
}

// open sends a request whose answer is read as a stream (POST with body, or GET when body is "").
func (c *rawClient) open(method, body string) *stream {
	c.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctxGuard(c.t), method, c.url, rd)
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if method == http.MethodGet {
		req.Header.Set("Accept", "text/event-stream")
	}
	req.Header.Set("Mcp-Session-Id", c.session)
	if c.version != "" {
		req.Header.Set("Mcp-Protocol-Version", c.version)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		c.t.Fatalf("%s: %v", method, err)
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		c.t.Fatalf("%s: HTTP %d: %s", method, resp.StatusCode, b)
	}
	s := &stream{resp: resp, msgs: make(chan json.RawMessage, 1024), done: make(chan struct{})}
	c.t.Cleanup(func() { resp.Body.Close(); <-s.done })
	go func() {
		defer close(s.done)
		defer close(s.msgs)
		if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
			b, _ := io.ReadAll(resp.Body)
			if len(bytes.TrimSpace(b)) > 0 {
				s.msgs <- json.RawMessage(bytes.TrimSpace(b))
			}
			return
		}
		br := bufio.NewReaderSize(resp.Body, 64<<10)
		var data []byte
		for {
			line, err := br.ReadBytes('\n')
			line = bytes.TrimRight(line, "\r\n")
			switch {
			case len(line) == 0 && err == nil:
				if len(bytes.TrimSpace(data)) > 0 {
					s.msgs <- json.RawMessage(bytes.Clone(data))
				}
				data = data[:0]
			case bytes.HasPrefix(line, []byte("data:")):
				if len(data) > 0 {
					data = append(data, '\n')
				}
				data = append(data, bytes.TrimPrefix(line[5:], []byte(" "))...)
			}
			if err != nil {
				return
			}
		}
	}()
	return s
}

// next returns the stream's next message, or ok=false at its end; bounded by guard.
func (s *stream) next(t *testing.T) (json.RawMessage, bool) {
	t.Helper()
	select {
	case m, ok := <-s.msgs:
		return m, ok
	case <-time.After(guard):
		t.Fatalf("stream: nothing within %s", guard)
		return nil, false
	}
}

// rest collects every remaining message until the stream ends; bounded by guard.
func (s *stream) rest(t *testing.T) []json.RawMessage {
	t.Helper()
	var out []json.RawMessage
	for {
		m, ok := s.next(t)
		if !ok {
			return out
		}
		out = append(out, m)
	}
}

// legacyConn is a 2024-11-05 HTTP+SSE connection: its GET /sse stream and the endpoint the stream announced.
type legacyConn struct {
	t        *testing.T
	base     string
	endpoint string
	hdr      map[string]string
	events   chan [2]string // event name, data
}

// openLegacy opens GET /sse on base (the gateway's URL without /mcp) with the headers hdr, and reads the endpoint
// event. The stream is closed, and its reader waited for, when the test ends.
func openLegacy(t *testing.T, base string, hdr map[string]string) *legacyConn {
	t.Helper()
	req, err := http.NewRequestWithContext(ctxGuard(t), http.MethodGet, base+"/sse", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/event-stream")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET /sse: %v", err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		t.Fatalf("GET /sse: HTTP %d", resp.StatusCode)
	}
	c := &legacyConn{t: t, base: base, hdr: hdr, events: make(chan [2]string, 64)}
	done := make(chan struct{})
	t.Cleanup(func() { resp.Body.Close(); <-done })
	go func() {
		defer close(done)
		defer close(c.events)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
		var ev, data string
		for sc.Scan() {
			switch line := sc.Text(); {
			case strings.HasPrefix(line, "event:"):
				ev = strings.TrimSpace(line[6:])
			case strings.HasPrefix(line, "data:"):
				data = strings.TrimSpace(line[5:])
			case line == "":
				if data != "" {
					c.events <- [2]string{ev, data}
				}
				ev, data = "", ""
			}
		}
	}()
	ep := c.next()
	if ep[0] != "endpoint" || !strings.HasPrefix(ep[1], "/message?sessionId=") {
		t.Fatalf("first /sse event = %v, want the endpoint", ep)
	}
	c.endpoint = ep[1]
	return c
}

// next returns the stream's next event (name and data); bounded by guard.
func (c *legacyConn) next() [2]string {
	c.t.Helper()
	select {
	case e, ok := <-c.events:
		if !ok {
			c.t.Fatal("the /sse stream ended")
		}
		return e
	case <-time.After(guard):
		c.t.Fatalf("no event on /sse within %s", guard)
	}
	return [2]string{}
}

// post sends one message to the connection's endpoint with the connection's headers, changed by hdr ("" removes
// one).
func (c *legacyConn) post(body string, hdr map[string]string) rawResp {
	c.t.Helper()
	req, err := http.NewRequestWithContext(ctxGuard(c.t), http.MethodPost, c.base+c.endpoint, strings.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for _, h := range []map[string]string{c.hdr, hdr} {
		for k, v := range h {
			if v == "" {
				req.Header.Del(k)
			} else {
				req.Header.Set(k, v)
			}
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatalf("POST %s: %v", c.endpoint, err)
	}
	defer resp.Body.Close()
	return readResp(c.t, resp)
}

// batchElement finds the answer to the element with id among a batch's answers, and checks that the batch's other
// element, a ping with id 2, was answered: refusing one element loses nothing else.
func batchElement(t *testing.T, body []byte, id string) rpcMsg {
	t.Helper()
	var arr []rpcMsg
	if err := json.Unmarshal(body, &arr); err != nil {
		t.Fatalf("batch answer %s: %v", body, err)
	}
	var found rpcMsg
	pinged := false
	for _, m := range arr {
		switch string(m.ID) {
		case id:
			found = m
		case "2":
			pinged = m.Error == nil
		}
	}
	if !pinged {
		t.Errorf("batch answer %s: the ping was not answered", body)
	}
	return found
}
