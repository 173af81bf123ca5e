package gateway_test

// Benchmarks of the 2026-07-28 ("modern", stateless) path: what the gateway adds to one tools/call, as a ratio
// against a baseline measured in the same run. The clients are raw net/http (one keep-alive connection, a request
// built once and re-sent with a fresh id), so that the client's own cost is small and the same on both sides; the
// upstreams are the official Go SDK (v1.8.0) in process, stateless (it serves 2026-07-28; the gateway detects it
// with server/discover and forwards statelessly) or stateful (legacy only; a 2026-07-28 client reaches it through
// a pooled stateless session with a per-client upstream session). Allocations are the whole process's: client,
// gateway and upstream. Each "through" sub-benchmark reports, beside ns/op:
//
//	x-direct         its ns/op divided by the group's baseline (the first sub-benchmark of the group)
//	added-allocs/op  its allocs/op minus the baseline's
//	added-B/op       its B/op minus the baseline's
//
// The baseline and the through paths run one after the other, so load from elsewhere on a shared machine can
// skew x-direct by ±15 %; the "interleaved" sub-benchmarks of BenchmarkModernToolsCall alternate the calls within
// one loop and give the steadier time ratios (see mbInterleaved). The allocation counts are exact either way.
//
// Run with:
//
//	go test -run '^$' -bench 'Modern' -benchtime 2000x -count 3 -benchmem ./gateway

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/gateway"
	"github.com/switchboard-mcp/switchboard/routing"
	"github.com/switchboard-mcp/switchboard/upstream"
	"github.com/switchboard-mcp/switchboard/upstream/protocol"
)

const (
	mbText = "hello from the benchmark"
	// mbElicited is what the elicit tool answers once the client accepted with the name Ada.
	mbElicited = "elicited: accept Ada"
	// mbInputCaps are the capabilities of a client that can be asked for a form.
	mbInputCaps = `{"elicitation":{"form":{}}}`
)

type mbEchoIn struct {
	Text string `json:"text"`
}

type mbAskIn struct {
	Tag string `json:"tag,omitempty"`
}

// mbServer is the upstream: echo, and elicit (asks the client for a name; legacy upstreams only).
func mbServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "bench-upstream", Version: "1.0.0"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "returns its text"},
		func(ctx context.Context, req *mcp.CallToolRequest, in mbEchoIn) (*mcp.CallToolResult, any, error) {
			return text(in.Text), nil, nil
		})
	schema := map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}
	mcp.AddTool(s, &mcp.Tool{Name: "elicit", Description: "asks the client for a name"},
		func(ctx context.Context, req *mcp.CallToolRequest, in mbAskIn) (*mcp.CallToolResult, any, error) {
			res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "name for " + in.Tag, RequestedSchema: schema})
			if err != nil {
				return errText("elicit failed: " + err.Error()), nil, nil
			}
			return text(fmt.Sprintf("elicited: %s %v", res.Action, res.Content["name"])), nil, nil
		})
	return s
}

// mbUpstream serves mbServer over streamable HTTP, stateless (2026-07-28 and legacy) or stateful (legacy only).
func mbUpstream(b *testing.B, stateless bool) string {
	b.Helper()
	srv := mbServer()
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{Stateless: stateless}))
	b.Cleanup(func() {
		ts.CloseClientConnections()
		ts.Close()
	})
	return ts.URL
}

// mbGateway starts a gateway with one upstream entry per name → URL, each with per-client upstream sessions, and
// waits until it is ready (every upstream's era detected and its tools listed).
func mbGateway(b *testing.B, ups map[string]string) string {
	b.Helper()
	var cfgs []routing.UpstreamConfig
	for name, url := range ups {
		tr, err := upstream.NewTransport(upstream.Spec{Name: name, URL: url, Logger: testLogger()})
		if err != nil {
			b.Fatal(err)
		}
		cfgs = append(cfgs, routing.UpstreamConfig{Name: name, Prefix: name + "__", Mode: routing.PerClient, Transport: tr, Kind: "http"})
	}
	r, err := routing.New(routing.Options{Logger: testLogger()}, cfgs)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); r.Run(ctx) }()
	gw := httptest.NewServer(gateway.New(r, gateway.Options{Logger: testLogger()}).Handler())
	b.Cleanup(func() {
		cancel()
		<-done
		gw.CloseClientConnections()
		gw.Close()
	})
	wctx, wcancel := context.WithTimeout(ctx, guard)
	defer wcancel()
	if err := r.WaitReady(wctx); err != nil {
		b.Fatal(err)
	}
	return gw.URL + "/mcp"
}

// ---------------------------------------------------------------------------------------------------------------
// Raw clients.

// mbBody is a request body that can be re-armed without allocating.
type mbBody struct{ bytes.Reader }

func (*mbBody) Close() error { return nil }

// mbClient sends one kind of request again and again: the request is built once, and each call only writes a new
// id into the body.
type mbClient struct {
	hc       *http.Client
	url      string
	session  string // Mcp-Session-Id of a legacy session
	version  string // the Mcp-Protocol-Version header of a legacy session
	req      *http.Request
	prefix   []byte // the body before the id
	suffix   []byte // the body after the id
	raw      []byte // the current body
	body     mbBody
	want     []byte // what the answer must contain
	buf      bytes.Buffer
	id       int64
	hasError []byte
}

func mbNewClient(b *testing.B, url string) *mbClient {
	b.Helper()
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 8
	c := &mbClient{hc: &http.Client{Transport: tr}, url: url, hasError: []byte(`"isError":true`)}
	b.Cleanup(tr.CloseIdleConnections)
	return c
}

func (c *mbClient) header(h http.Header) {
	h.Set("Content-Type", "application/json")
	h.Set("Accept", "application/json, text/event-stream")
	if c.session != "" {
		h.Set("Mcp-Session-Id", c.session)
		h.Set("Mcp-Protocol-Version", c.version)
	}
}

// do sends one request built for the occasion (set-up steps and the multi-step calls of the bridge).
func (c *mbClient) do(ctx context.Context, body string, hdr map[string]string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	c.header(req.Header)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	return c.hc.Do(req)
}

// doAll is do, reading the whole answer.
func (c *mbClient) doAll(ctx context.Context, body string, hdr map[string]string) (*http.Response, []byte, error) {
	resp, err := c.do(ctx, body, hdr)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	all, err := io.ReadAll(resp.Body)
	return resp, all, err
}

// initialize opens a legacy (2025-11-25) session: initialize, then notifications/initialized.
func (c *mbClient) initialize(b *testing.B, caps string) {
	b.Helper()
	ctx := context.Background()
	resp, body, err := c.doAll(ctx, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"`+legacyVersion+
		`","capabilities":`+caps+`,"clientInfo":{"name":"bench","version":"1"}}}`, nil)
	if err != nil {
		b.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Mcp-Session-Id") == "" {
		b.Fatalf("initialize: HTTP %d, session %q: %s", resp.StatusCode, resp.Header.Get("Mcp-Session-Id"), body)
	}
	c.session, c.version = resp.Header.Get("Mcp-Session-Id"), legacyVersion
	if resp, body, err = c.doAll(ctx, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, nil); err != nil {
		b.Fatal(err)
	}
	if resp.StatusCode != http.StatusAccepted {
		b.Fatalf("notifications/initialized: HTTP %d: %s", resp.StatusCode, body)
	}
}

// mbModernMeta is the _meta of a 2026-07-28 request from a client with capabilities caps.
func mbModernMeta(caps string) string {
	return `"_meta":{"` + protocol.MetaProtocolVersion + `":"` + protocol.Modern + `","` + protocol.MetaClientCapabilities + `":` + caps +
		`,"` + protocol.MetaClientInfo + `":{"name":"bench","version":"1"}}`
}

// mbModernHeaders are the headers of a 2026-07-28 tools/call.
func mbModernHeaders(tool string) map[string]string {
	return map[string]string{"Mcp-Protocol-Version": protocol.Modern, "Mcp-Method": "tools/call", "Mcp-Name": tool}
}

// prepareEcho builds the tools/call of echo (named tool) that call sends: a 2026-07-28 request, or a legacy one
// on the client's session when it has one.
func (c *mbClient) prepareEcho(tool string) {
	params := `"params":{"name":"` + tool + `","arguments":{"text":"` + mbText + `"}`
	var hdr map[string]string
	if c.session == "" {
		params += "," + mbModernMeta(`{}`)
		hdr = mbModernHeaders(tool)
	}
	c.prefix = []byte(`{"jsonrpc":"2.0","id":`)
	c.suffix = []byte(`,"method":"tools/call",` + params + `}}`)
	c.want = []byte(mbText)
	req, err := http.NewRequest(http.MethodPost, c.url, nil)
	if err != nil {
		panic(err)
	}
	c.header(req.Header)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	req.Body = &c.body
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(c.raw)), nil }
	c.req = req
}

// call sends the prepared request with the next id and checks that the answer is the tool's result.
func (c *mbClient) call() error {
	c.id++
	c.raw = append(strconv.AppendInt(append(c.raw[:0], c.prefix...), c.id, 10), c.suffix...)
	c.body.Reset(c.raw)
	c.req.ContentLength = int64(len(c.raw))
	resp, err := c.hc.Do(c.req)
	if err != nil {
		return err
	}
	c.buf.Reset()
	_, err = c.buf.ReadFrom(resp.Body)
	resp.Body.Close()
	if err != nil {
		return err
	}
	if got := c.buf.Bytes(); resp.StatusCode != http.StatusOK || !bytes.Contains(got, c.want) || bytes.Contains(got, c.hasError) {
		return fmt.Errorf("HTTP %d: %s", resp.StatusCode, got)
	}
	return nil
}

// mbMessages returns the JSON-RPC messages of an answer: the JSON body, or the data of every SSE event.
func mbMessages(resp *http.Response, body []byte) []json.RawMessage {
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		return sseData(body)
	}
	return []json.RawMessage{bytes.TrimSpace(body)}
}

type mbMsg struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
}

// elicitLegacy calls tool (elicit) on the client's legacy session and answers the elicitation/create request that
// arrives on the call's stream with a response POST, as a 2025-11-25 client does; then reads the call's result.
func (c *mbClient) elicitLegacy(ctx context.Context, tool string) error {
	c.id++
	resp, err := c.do(ctx, `{"jsonrpc":"2.0","id":`+strconv.FormatInt(c.id, 10)+`,"method":"tools/call","params":{"name":"`+tool+
		`","arguments":{"tag":"bench"}}}`, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		body, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("tools/call: HTTP %d %s, want an SSE stream: %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	br := bufio.NewReader(resp.Body)
	var data []byte
	for {
		line, err := br.ReadBytes('\n')
		if err != nil {
			return fmt.Errorf("the call's stream ended before its result: %v", err)
		}
		line = bytes.TrimRight(line, "\r\n")
		if d, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			data = append(data, bytes.TrimPrefix(d, []byte(" "))...)
			continue
		}
		if len(line) != 0 || len(data) == 0 {
			continue
		}
		var m mbMsg
		if err := json.Unmarshal(data, &m); err != nil {
			return fmt.Errorf("bad event %s: %v", data, err)
		}
		data = data[:0]
		switch {
		case m.Method == "elicitation/create":
			r, body, err := c.doAll(ctx, `{"jsonrpc":"2.0","id":`+string(m.ID)+`,"result":{"action":"accept","content":{"name":"Ada"}}}`, nil)
			if err != nil {
				return err
			}
			if r.StatusCode != http.StatusAccepted {
				return fmt.Errorf("answering the elicitation: HTTP %d: %s", r.StatusCode, body)
			}
		case m.Method == "":
			if !bytes.Contains(m.Result, []byte(mbElicited)) {
				return fmt.Errorf("result %s %s, want %q", m.Result, m.Error, mbElicited)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			return nil
		}
	}
}

// elicitModern calls tool (elicit) as a 2026-07-28 client: the answer is an input_required result; the client
// retries with its inputResponses and the requestState, and gets the tool's result.
func (c *mbClient) elicitModern(ctx context.Context, tool string) error {
	hdr := mbModernHeaders(tool)
	c.id++
	params := `"params":{"name":"` + tool + `","arguments":{"tag":"bench"},` + mbModernMeta(mbInputCaps)
	resp, body, err := c.doAll(ctx, `{"jsonrpc":"2.0","id":`+strconv.FormatInt(c.id, 10)+`,"method":"tools/call",`+params+`}}`, hdr)
	if err != nil {
		return err
	}
	msgs := mbMessages(resp, body)
	var first struct {
		Result struct {
			ResultType    string                     `json:"resultType"`
			InputRequests map[string]json.RawMessage `json:"inputRequests"`
			RequestState  string                     `json:"requestState"`
		} `json:"result"`
	}
	if resp.StatusCode != http.StatusOK || len(msgs) == 0 || json.Unmarshal(msgs[len(msgs)-1], &first) != nil ||
		first.Result.ResultType != "input_required" || len(first.Result.InputRequests) != 1 {
		return fmt.Errorf("tools/call: HTTP %d, want an input_required result with one input request: %s", resp.StatusCode, body)
	}
	answers := map[string]any{}
	for k := range first.Result.InputRequests {
		answers[k] = map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}}
	}
	retry, err := json.Marshal(map[string]any{"inputResponses": answers, "requestState": first.Result.RequestState})
	if err != nil {
		return err
	}
	c.id++
	resp, body, err = c.doAll(ctx, `{"jsonrpc":"2.0","id":`+strconv.FormatInt(c.id, 10)+`,"method":"tools/call",`+params+`,`+
		string(retry[1:len(retry)-1])+`}}`, hdr)
	if err != nil {
		return err
	}
	msgs = mbMessages(resp, body)
	var last mbMsg
	if resp.StatusCode != http.StatusOK || len(msgs) == 0 || json.Unmarshal(msgs[len(msgs)-1], &last) != nil || !bytes.Contains(last.Result, []byte(mbElicited)) {
		return fmt.Errorf("the retry: HTTP %d, want %q: %s", resp.StatusCode, mbElicited, body)
	}
	return nil
}

// ---------------------------------------------------------------------------------------------------------------
// Measurement.

// mbCost is what one sub-benchmark measured per operation.
type mbCost struct {
	ns, allocs, bytes float64
}

// mbMeasure runs call once to warm up (upstream sessions start on first use), then in the benchmark loop. Its
// cost is reported against base (skipped when base was not measured, as when a -bench pattern leaves it out).
func mbMeasure(b *testing.B, base *mbCost, call func() error) mbCost {
	b.Helper()
	if err := call(); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for b.Loop() {
		if err := call(); err != nil {
			b.Fatal(err)
		}
	}
	runtime.ReadMemStats(&after)
	n := float64(b.N)
	got := mbCost{
		ns:     float64(b.Elapsed().Nanoseconds()) / n,
		allocs: float64(after.Mallocs-before.Mallocs) / n,
		bytes:  float64(after.TotalAlloc-before.TotalAlloc) / n,
	}
	if base != nil && base.ns > 0 {
		b.ReportMetric(got.ns/base.ns, "x-direct")
		b.ReportMetric(got.allocs-base.allocs, "added-allocs/op")
		b.ReportMetric(got.bytes-base.bytes, "added-B/op")
	}
	return got
}

// mbTarget is one way to call echo: an endpoint, the tool's name there, and the client's era.
type mbTarget struct {
	name   string
	url    string
	tool   string
	legacy bool // a 2025-11-25 session (initialize once) rather than 2026-07-28 requests
}

func (t mbTarget) client(b *testing.B) *mbClient {
	b.Helper()
	c := mbNewClient(b, t.url)
	if t.legacy {
		c.initialize(b, `{}`)
	}
	c.prepareEcho(t.tool)
	return c
}

// mbInterleaved calls every target once per iteration, in an order that rotates, and reports each one's mean
// latency (NAME-µs/op) and, for all but the first, the ratio of its total time to the first's (NAME-x-direct).
// Load from elsewhere on the machine then hits every target alike, which sequential sub-benchmarks cannot
// promise; ns/op is the sum of the targets' calls.
func mbInterleaved(b *testing.B, targets []mbTarget) {
	b.Helper()
	clients := make([]*mbClient, len(targets))
	for i, t := range targets {
		clients[i] = t.client(b)
		if err := clients[i].call(); err != nil {
			b.Fatal(err)
		}
	}
	sums := make([]time.Duration, len(targets))
	b.ReportAllocs()
	for k := 0; b.Loop(); k++ {
		for j := range clients {
			i := (j + k) % len(clients)
			t0 := time.Now()
			if err := clients[i].call(); err != nil {
				b.Fatal(err)
			}
			sums[i] += time.Since(t0)
		}
	}
	for i, t := range targets {
		b.ReportMetric(float64(sums[i].Nanoseconds())/float64(b.N)/1e3, t.name+"-µs/op")
		if i > 0 {
			b.ReportMetric(float64(sums[i])/float64(sums[0]), t.name+"-x-direct")
		}
	}
}

// BenchmarkModernToolsCall: one tools/call of echo, serial, on one keep-alive connection per client.
//
//	stateless-upstream (the SDK's stateless handler, detected as modern; the gateway forwards statelessly):
//	  direct                  a 2026-07-28 POST to the upstream (the baseline)
//	  gateway-modern          the same POST through Switchboard
//	  gateway-legacy-session  a 2025-11-25 session (initialize once) through Switchboard
//	legacy-upstream (the SDK's stateful handler, legacy only; per-client upstream sessions):
//	  direct-legacy-session   a 2025-11-25 session to the upstream (the baseline)
//	  gateway-modern          a 2026-07-28 POST through Switchboard: a pooled stateless session, which holds
//	                          its own upstream session
//	  gateway-legacy-session  a 2025-11-25 session through Switchboard
//
// Each group ends with "interleaved": the same three calls, one of each per iteration (see mbInterleaved), for
// time ratios that drift on a shared machine does not skew.
func BenchmarkModernToolsCall(b *testing.B) {
	stateless, legacy := mbUpstream(b, true), mbUpstream(b, false)
	gw := mbGateway(b, map[string]string{"st": stateless, "lg": legacy})

	for _, g := range []struct {
		name    string
		targets []mbTarget
	}{
		{"stateless-upstream", []mbTarget{
			{name: "direct", url: stateless, tool: "echo"},
			{name: "gateway-modern", url: gw, tool: "st__echo"},
			{name: "gateway-legacy-session", url: gw, tool: "st__echo", legacy: true},
		}},
		{"legacy-upstream", []mbTarget{
			{name: "direct-legacy-session", url: legacy, tool: "echo", legacy: true},
			{name: "gateway-modern", url: gw, tool: "lg__echo"},
			{name: "gateway-legacy-session", url: gw, tool: "lg__echo", legacy: true},
		}},
	} {
		b.Run(g.name, func(b *testing.B) {
			var base mbCost
			for i, t := range g.targets {
				b.Run(t.name, func(b *testing.B) {
					c := t.client(b)
					if i == 0 {
						base = mbMeasure(b, nil, c.call)
					} else {
						mbMeasure(b, &base, c.call)
					}
				})
			}
			b.Run("interleaved", func(b *testing.B) { mbInterleaved(b, g.targets) })
		})
	}
}

// BenchmarkModernInputBridge: one call of a tool that elicits a name from its client, on a legacy (stateful)
// upstream with per-client sessions, serial.
//
//	direct-legacy-session   a 2025-11-25 client on the upstream answers the elicitation/create request that
//	                        arrives on the call's stream (the baseline)
//	gateway-legacy-session  the same through Switchboard
//	gateway-modern          a 2026-07-28 client through Switchboard: the gateway parks the upstream call and
//	                        answers input_required with a signed requestState; the client retries with
//	                        inputResponses, and the gateway answers the upstream's request and relays the result
//	                        (two POSTs from the client, against the legacy client's call + response POST)
func BenchmarkModernInputBridge(b *testing.B) {
	legacy := mbUpstream(b, false)
	gw := mbGateway(b, map[string]string{"lg": legacy})
	ctx := context.Background()

	var base mbCost
	b.Run("direct-legacy-session", func(b *testing.B) {
		c := mbNewClient(b, legacy)
		c.initialize(b, mbInputCaps)
		base = mbMeasure(b, nil, func() error { return c.elicitLegacy(ctx, "elicit") })
	})
	b.Run("gateway-legacy-session", func(b *testing.B) {
		c := mbNewClient(b, gw)
		c.initialize(b, mbInputCaps)
		mbMeasure(b, &base, func() error { return c.elicitLegacy(ctx, "lg__elicit") })
	})
	b.Run("gateway-modern", func(b *testing.B) {
		c := mbNewClient(b, gw)
		mbMeasure(b, &base, func() error { return c.elicitModern(ctx, "lg__elicit") })
	})
}
