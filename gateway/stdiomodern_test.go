//lint:file-ignore SA1019 sampling and elicitation are deprecated in 2026-07-28 but legacy upstreams use them; bridging them is what these tests exercise.

package gateway_test

// 2026-07-28 clients over the stdio front end (gateway/stdiomodern.go): the wire checked line by line, both eras
// on one pipe, cancellation by notifications/cancelled, subscriptions/listen interleaved with answers, the
// input_required bridge, and the Go SDK's client over the pipes.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/gateway"
	"github.com/switchboard-mcp/switchboard/routing"
	"github.com/switchboard-mcp/switchboard/upstream"
	"github.com/switchboard-mcp/switchboard/upstream/protocol"
)

// line is a request body from testdata/modern as one line.
func line(t *testing.T, name string) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(readTestdata(t, "modern/"+name))); err != nil {
		t.Fatalf("testdata/modern/%s: %v", name, err)
	}
	return b.String()
}

// TestStdioModernWire: 2026-07-28 requests over stdio are answered as over HTTP, without the header layer: the
// decorated results (resultType, ttlMs and cacheScope, serverInfo), -32602 for missing or malformed _meta
// (server/discover included), -32022 with the supported and requested versions for a version the gateway does
// not speak, -32601 for the methods 2026-07-28 removed and for unknown ones, resource-not-found as -32602, and
// nothing for a notification. Every answer echoes the request's id.
func TestStdioModernWire(t *testing.T) {
	up, _ := httpUpstream(t, "alpha", routing.Shared, markerSink(t))
	h := startGateway(t, routing.Options{}, gateway.Options{}, up)
	c := startStdio(t, h.r)
	for _, tc := range []struct {
		name  string
		body  string // a file under testdata/modern, or a literal line
		code  int    // the JSON-RPC error code; 0 for a result
		check func(t *testing.T, m rpcMsg)
	}{
		{name: "discover", body: "discover.json", check: func(t *testing.T, m rpcMsg) {
			obj := checkModernResult(t, m.Result, true, "public")
			var versions []string
			_ = json.Unmarshal(obj["supportedVersions"], &versions)
			if !slices.Contains(versions, protocol.Modern) || !slices.Contains(versions, legacyVersion) {
				t.Errorf("supportedVersions %v, want both eras", versions)
			}
		}},
		{name: "tools/list", body: "tools-list.json", check: func(t *testing.T, m rpcMsg) {
			checkModernResult(t, m.Result, true, "public")
			var res mcp.ListToolsResult
			if err := json.Unmarshal(m.Result, &res); err != nil || !slices.ContainsFunc(res.Tools, func(tl *mcp.Tool) bool { return tl.Name == "alpha__echo" }) {
				t.Errorf("tools/list lacks alpha__echo: %s", m.Result)
			}
		}},
		{name: "tools/call", body: "echo.json", check: func(t *testing.T, m rpcMsg) {
			checkModernResult(t, m.Result, false, "")
			var res mcp.CallToolResult
			if err := json.Unmarshal(m.Result, &res); err != nil || resultText(&res) != "hi" {
				t.Errorf("echo answered %s", m.Result)
			}
		}},
		{name: "a version in _meta that is not 2026-07-28", body: "body-2025-11-25.json", code: -32022},
		{name: "unsupported version", body: "body-2099-01-01.json", code: -32022, check: func(t *testing.T, m rpcMsg) {
			var data struct {
				Supported []string `json:"supported"`
				Requested string   `json:"requested"`
			}
			if err := json.Unmarshal(m.Error.Data, &data); err != nil || data.Requested != "2099-01-01" || !slices.Contains(data.Supported, protocol.Modern) {
				t.Errorf("error data %s, want the supported versions and requested 2099-01-01", m.Error.Data)
			}
		}},
		{name: "missing clientCapabilities", body: "no-capabilities.json", code: -32602},
		{name: "capabilities over 16 KiB", body: "huge-capabilities.json", code: -32602},
		{name: "discover without _meta", body: `{"jsonrpc":"2.0","id":"bare","method":"server/discover"}`, code: -32602},
		{name: "initialize is removed", body: "initialize.json", code: -32601},
		{name: "ping is removed", body: "ping.json", code: -32601},
		{name: "logging/setLevel is removed", body: "set-level.json", code: -32601},
		{name: "resources/subscribe is removed", body: "subscribe.json", code: -32601},
		{name: "unknown method", body: "unknown-method.json", code: -32601},
		{name: "unknown resource", body: "read-unknown.json", code: -32602, check: func(t *testing.T, m rpcMsg) {
			var data struct {
				URI string `json:"uri"`
			}
			if err := json.Unmarshal(m.Error.Data, &data); err != nil || data.URI != "file:///nowhere/ünïcode.txt" {
				t.Errorf("error data %s, want the uri", m.Error.Data)
			}
		}},
		{name: "listen without a filter", body: modernBodyLine(t, "nofilter", "subscriptions/listen", nil), code: -32602},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c.t = t
			body := tc.body
			if strings.HasSuffix(body, ".json") {
				body = line(t, body)
			}
			// A notification first: it is answered by nothing, so the next line is the request's answer.
			c.send(line(t, "notification.json"))
			c.send(body)
			m, before := c.answer(string(object(t, []byte(body))["id"]))
			if len(before) > 0 {
				t.Errorf("lines before the answer: %v", before)
			}
			switch {
			case tc.code == 0 && m.Error != nil:
				t.Fatalf("error %d %s, want a result", m.Error.Code, m.Error.Message)
			case tc.code != 0 && m.Error == nil:
				t.Fatalf("result %s, want error %d", m.Result, tc.code)
			case tc.code != 0 && m.Error.Code != tc.code:
				t.Fatalf("error %d (%s), want %d", m.Error.Code, m.Error.Message, tc.code)
			}
			if tc.check != nil {
				tc.check(t, m)
			}
		})
	}
}

// modernBodyLine is modernBody with no capabilities, as one line.
func modernBodyLine(t *testing.T, id any, method string, params map[string]any) string {
	t.Helper()
	return modernBody(t, id, method, params, `{}`)
}

// TestStdioBothEras: a legacy session and 2026-07-28 requests share one pipe ("A dual-era server MAY serve both
// eras concurrently on the same endpoint or process"): an initialize selects the legacy era for the process,
// and its session answers as before, while requests that declare 2026-07-28 in _meta are served statelessly
// beside it; a request without _meta goes to the legacy session (before initialize, it is refused as
// uninitialized), and the same id in both eras is two requests.
func TestStdioBothEras(t *testing.T) {
	h := startGateway(t, routing.Options{}, gateway.Options{}, stdioUpstream(t, "alpha", routing.PerClient, markerSink(t)))
	c := startStdio(t, h.r)

	c.send(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	if m, _ := c.answer("1"); m.Error == nil || m.Error.Code != -32600 || !strings.Contains(m.Error.Message, "initialize") {
		t.Fatalf("a request without _meta before initialize: %+v, want -32600 naming initialize", m)
	}
	c.send(line(t, "echo.json"))
	if m, _ := c.answer(`"call-1"`); m.Error != nil || !strings.Contains(string(m.Result), `"resultType":"complete"`) {
		t.Fatalf("a 2026-07-28 call before any initialize: %s %+v", m.Result, m.Error)
	}

	c.initialize(legacyVersion)
	c.send(`{"jsonrpc":"2.0","id":"call-1","method":"tools/call","params":{"name":"alpha__echo","arguments":{"text":"legacy"}}}`)
	c.send(line(t, "echo.json")) // the same id, in the other era
	legacy, modern := 0, 0
	for legacy+modern < 2 {
		m := decodeMsg(t, []byte(c.next()))
		if string(m.ID) != `"call-1"` {
			t.Fatalf("unexpected line %+v", m)
		}
		switch {
		case strings.Contains(string(m.Result), "legacy") && !strings.Contains(string(m.Result), "resultType"):
			legacy++
		case strings.Contains(string(m.Result), `"hi"`) && strings.Contains(string(m.Result), `"resultType":"complete"`):
			modern++
		default:
			t.Fatalf("answer %s %+v is neither era's", m.Result, m.Error)
		}
	}
	if legacy != 1 || modern != 1 {
		t.Fatalf("answers: %d legacy and %d modern, want one each", legacy, modern)
	}
	// The legacy session still answers what 2026-07-28 removed.
	c.send(`{"jsonrpc":"2.0","id":"p","method":"ping"}`)
	if m, _ := c.answer(`"p"`); m.Error != nil || string(m.Result) != "{}" {
		t.Errorf("legacy ping: %s %+v", m.Result, m.Error)
	}
	if err := c.close(); err != nil {
		t.Fatalf("ServeStdio: %v", err)
	}
}

// TestStdioModernCancel: a 2026-07-28 client cancels over stdio with notifications/cancelled ("the client MUST
// send a notifications/cancelled notification referencing the request's ID"): the upstream's handler sees its
// context cancelled, nothing more is written for the request, and its id is free again. A second request with
// the id of one in flight is refused.
func TestStdioModernCancel(t *testing.T) {
	md := markerSink(t)
	h := startGateway(t, routing.Options{}, gateway.Options{}, stdioUpstream(t, "alpha", routing.PerClient, md))
	c := startStdio(t, h.r)

	slow := modernBodyLine(t, "slow-1", "tools/call", map[string]any{
		"name": "alpha__slow", "arguments": map[string]any{"tag": "stdio-cancel"}, "_meta": map[string]any{"progressToken": "p1"},
	})
	c.send(slow)
	var p struct {
		Method string `json:"method"`
		Params struct {
			ProgressToken string `json:"progressToken"`
		} `json:"params"`
	}
	if err := json.Unmarshal([]byte(c.next()), &p); err != nil || p.Method != "notifications/progress" || p.Params.ProgressToken != "p1" {
		t.Fatalf("first line %+v, want the call's progress under token p1", p)
	}
	c.send(slow)
	if m, _ := c.answer(`"slow-1"`); m.Error == nil || m.Error.Code != -32600 {
		t.Fatalf("a second request with an id in flight: %s %+v, want -32600", m.Result, m.Error)
	}
	c.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"slow-1","reason":"test"}}`)
	waitMarker(t, md, "cancel-stdio-cancel")

	// The id is free: a new call under it is answered, and nothing came for the cancelled one before.
	c.send(strings.Replace(line(t, "echo.json"), `"call-1"`, `"slow-1"`, 1))
	m, before := c.answer(`"slow-1"`)
	if m.Error != nil || !strings.Contains(string(m.Result), `"hi"`) {
		t.Fatalf("echo under the cancelled call's id: %s %+v", m.Result, m.Error)
	}
	if len(before) > 0 {
		t.Errorf("lines written after the cancellation: %+v", before)
	}
}

// TestStdioModernListen: subscriptions/listen over stdio acknowledges its filter and delivers the list changes it
// asked for, tagged with its id ("On stdio, where all messages share a single channel, clients MUST use this
// field to correlate notifications"), interleaved with other requests' answers; two listens are told apart by
// their ids; a listen the client cancelled with notifications/cancelled hears nothing more.
func TestStdioModernListen(t *testing.T) {
	up, hs := httpUpstream(t, "alpha", routing.Shared, markerSink(t))
	h := startGateway(t, routing.Options{}, gateway.Options{}, up)
	c := startStdio(t, h.r)
	addTool := func(name string) {
		mcp.AddTool(hs.srv, &mcp.Tool{Name: name}, func(context.Context, *mcp.CallToolRequest, empty) (*mcp.CallToolResult, any, error) {
			return text(name), nil, nil
		})
	}
	// tagged reads the next line, which must be method tagged with subscription id sub.
	tagged := func(method, sub string) rpcMsg {
		t.Helper()
		m := decodeMsg(t, []byte(c.next()))
		var p struct {
			Meta map[string]json.RawMessage `json:"_meta"`
		}
		_ = json.Unmarshal(m.Params, &p)
		if m.Method != method || string(p.Meta[metaSubID]) != sub {
			t.Fatalf("got %s %s, want %s tagged with subscription %s", m.Method, m.Params, method, sub)
		}
		return m
	}

	c.send(modernBodyLine(t, "L", "subscriptions/listen", map[string]any{"notifications": map[string]any{"toolsListChanged": true, "promptsListChanged": true}}))
	ack := tagged("notifications/subscriptions/acknowledged", `"L"`)
	var a struct {
		Notifications json.RawMessage `json:"notifications"`
	}
	if _ = json.Unmarshal(ack.Params, &a); !jsonEqual(a.Notifications, []byte(`{"toolsListChanged":true,"promptsListChanged":true}`)) {
		t.Errorf("acknowledged %s", a.Notifications)
	}
	// An answer while the listen is open.
	c.send(line(t, "echo.json"))
	if m, _ := c.answer(`"call-1"`); m.Error != nil {
		t.Fatalf("echo beside the listen: %+v", m.Error)
	}
	addTool("added1")
	tagged("notifications/tools/list_changed", `"L"`)

	c.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"L"}}`)
	c.send(modernBodyLine(t, 7, "subscriptions/listen", map[string]any{"notifications": map[string]any{"toolsListChanged": true}}))
	tagged("notifications/subscriptions/acknowledged", `7`)
	addTool("added2")
	tagged("notifications/tools/list_changed", `7`) // and nothing for the cancelled L before it
}

// TestStdioModernInputRequired: a legacy upstream's elicitation during a 2026-07-28 call over stdio comes back as
// an input_required result with the gateway's requestState; the retry with the answer (a new id, as the client
// must use) continues the parked upstream call, which completes with the client's answer.
func TestStdioModernInputRequired(t *testing.T) {
	up, _ := inputUpstream(t, markerSink(t))
	h := startGateway(t, routing.Options{}, gateway.Options{}, up)
	c := startStdio(t, h.r)
	callElicit := func(id, state string, responses map[string]any) string {
		p := map[string]any{"name": "alpha__elicit", "arguments": map[string]any{"tag": "stdio"}}
		if state != "" {
			p["requestState"], p["inputResponses"] = state, responses
		}
		return modernBody(t, id, "tools/call", p, inputCaps)
	}
	c.send(callElicit("first", "", nil))
	m, _ := c.answer(`"first"`)
	if m.Error != nil {
		t.Fatalf("first round: %+v", m.Error)
	}
	obj := object(t, m.Result)
	var state string
	if string(obj["resultType"]) != `"input_required"` || json.Unmarshal(obj["requestState"], &state) != nil || !strings.HasPrefix(state, "sbrs1.") {
		t.Fatalf("first round %s, want input_required with the gateway's requestState", m.Result)
	}
	asks := object(t, obj["inputRequests"])
	if len(asks) != 1 {
		t.Fatalf("input requests %s, want one", obj["inputRequests"])
	}
	answers := map[string]any{}
	for k := range asks {
		answers[k] = map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}}
	}
	c.send(callElicit("second", state, answers))
	m, _ = c.answer(`"second"`)
	var res mcp.CallToolResult
	if m.Error != nil || json.Unmarshal(m.Result, &res) != nil || resultText(&res) != "elicited: accept Ada" {
		t.Fatalf("the retry: %s %+v, want the upstream's result from the answer", m.Result, m.Error)
	}
	checkModernResult(t, m.Result, false, "")
}

// stdioSDK connects the Go SDK's client to the stdio front end over pipes, asking for version ("" for the SDK's
// default, which probes with server/discover first).
func stdioSDK(t *testing.T, r *routing.Router, version string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	srv := gateway.New(r, gateway.Options{Logger: testLogger()})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		_ = srv.ServeStdio(ctx, inR, outW)
		outW.Close()
	})
	var so *mcp.ClientSessionOptions
	if version != "" {
		so = &mcp.ClientSessionOptions{ProtocolVersion: version}
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "sdk-over-stdio", Version: "1.0.0"}, opts).
		Connect(ctxGuard(t), &mcp.IOTransport{Reader: outR, Writer: inW}, so)
	if err != nil {
		cancel()
		inW.Close()
		wg.Wait()
		t.Fatalf("connect over stdio: %v", err)
	}
	t.Cleanup(func() {
		_ = cs.Close() // closes stdin: ServeStdio returns
		cancel()
		outR.Close()
		wg.Wait()
	})
	return cs
}

// TestStdioSDKClient: the official Go SDK's client over `switchboard stdio`'s front end, in its default
// (2026-07-28: server/discover, stateless requests, a subscriptions/listen it opens for list changes, and the
// multi round-trip middleware answering input_required) and in 2025-11-25 (initialize, server→client requests):
// the catalog, a call, a list change that reaches the client, and an elicitation a legacy upstream asks for.
func TestStdioSDKClient(t *testing.T) {
	for _, tc := range []struct {
		name, ask, want string
	}{
		{"modern", "", protocol.Modern},
		{"legacy", legacyVersion, legacyVersion},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			up, hs := inputUpstream(t, markerSink(t))
			h := startGateway(t, routing.Options{}, gateway.Options{}, up)
			ic := &inputClient{}
			changed := make(chan struct{}, 8)
			cs := stdioSDK(t, h.r, tc.ask, &mcp.ClientOptions{
				ElicitationHandler: ic.elicit,
				ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
					changed <- struct{}{}
				},
			})
			if v := cs.InitializeResult().ProtocolVersion; v != tc.want {
				t.Fatalf("negotiated %q, want %q", v, tc.want)
			}
			tools, err := cs.ListTools(ctxGuard(t), nil)
			if err != nil || !slices.ContainsFunc(tools.Tools, func(tl *mcp.Tool) bool { return tl.Name == "alpha__elicit" }) {
				t.Fatalf("tools/list: %v %v", tools, err)
			}
			if got := call(t, cs, "alpha__echo", echoIn{Text: "over stdio"}); got != "over stdio" {
				t.Errorf("echo answered %q", got)
			}
			if got := call(t, cs, "alpha__elicit", askIn{Tag: "q"}); got != "elicited: accept Ada" {
				t.Errorf("elicit answered %q", got)
			}
			if e, _ := ic.counts(); e != 1 {
				t.Errorf("the client was asked %d elicitations, want 1", e)
			}
			// The SDK's Connect returns once it has sent its subscriptions/listen, not once the gateway took it, and
			// it shows no acknowledgement: the listen's session (or the legacy client's) is there first.
			waitFor(t, "the client's session", func() bool { return h.r.SessionCount() == 1 })
			mcp.AddTool(hs.srv, &mcp.Tool{Name: "late"}, func(context.Context, *mcp.CallToolRequest, empty) (*mcp.CallToolResult, any, error) {
				return text("late"), nil, nil
			})
			select {
			case <-changed:
			case <-ctxGuard(t).Done():
				t.Fatal("the client never heard of the new tool")
			}
			tools, err = cs.ListTools(ctxGuard(t), nil)
			if err != nil || !slices.ContainsFunc(tools.Tools, func(tl *mcp.Tool) bool { return tl.Name == "alpha__late" }) {
				t.Errorf("after the change, tools/list lacks alpha__late: %v", err)
			}
		})
	}
}

// TestStdioModernInFlightBound: a stdio client may have 256 requests in flight; the next is refused at once
// (-32000, saying why) and the others are untouched; once one is answered, a new request is served.
func TestStdioModernInFlightBound(t *testing.T) {
	md := markerSink(t)
	h := startGateway(t, routing.Options{}, gateway.Options{}, stdioUpstream(t, "alpha", routing.Shared, md))
	c := startStdio(t, h.r)
	for i := range 256 {
		c.send(modernBodyLine(t, fmt.Sprintf("slow-%d", i), "tools/call", map[string]any{"name": "alpha__slow", "arguments": map[string]any{"tag": fmt.Sprintf("bound-%d", i)}}))
	}
	c.send(modernBodyLine(t, "one-too-many", "tools/call", map[string]any{"name": "alpha__slow", "arguments": map[string]any{"tag": "bound-x"}}))
	m, _ := c.answer(`"one-too-many"`)
	if m.Error == nil || m.Error.Code != -32000 || !strings.Contains(m.Error.Message, "256 requests") {
		t.Fatalf("the 257th request: %s %+v, want -32000 naming the bound", m.Result, m.Error)
	}
	c.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"slow-0","reason":"test"}}`)
	waitMarker(t, md, "cancel-bound-0")
	c.send(strings.Replace(line(t, "echo.json"), `"call-1"`, `"after"`, 1))
	if m, _ := c.answer(`"after"`); m.Error != nil || !strings.Contains(string(m.Result), `"hi"`) {
		t.Fatalf("a request once a slot is free: %s %+v", m.Result, m.Error)
	}
}

// gatedTransport connects to its upstream only once open is closed: an upstream slow to start.
type gatedTransport struct {
	upstream.Transport
	open chan struct{}
}

func (g *gatedTransport) Connect(ctx context.Context) (upstream.Connection, error) {
	select {
	case <-g.open:
		return g.Transport.Connect(ctx)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// TestModernStart (issue 31 item 7): a 2026-07-28 client that comes while an upstream is still starting gets its
// server/discover answered at once, and its first tools/list, sent before that upstream is up, lists it: the
// request is held until every upstream has had its first try, as a legacy client's initialize is. Over stdio and
// over HTTP. InitWait is longer than the tests' guard, so a discover that waited for the start would fail it.
func TestModernStart(t *testing.T) {
	for _, front := range []string{"stdio", "http"} {
		t.Run(front, func(t *testing.T) {
			alpha, _ := httpUpstream(t, "alpha", routing.Shared, markerSink(t))
			beta, _ := httpUpstream(t, "beta", routing.Shared, markerSink(t))
			gate := &gatedTransport{Transport: beta.Transport, open: make(chan struct{})}
			beta.Transport = gate
			gopts := gateway.Options{InitWait: 2 * guard}
			h := startGatewayNoWait(t, routing.Options{}, gopts, alpha, beta)
			list := modernBodyLine(t, "first-list", "tools/list", nil)
			discover := line(t, "discover.json")

			var listed rpcMsg
			switch front {
			case "stdio":
				c := startStdioWith(t, h.r, gopts)
				c.send(list) // read before discover: its request is under way when discover is answered
				c.send(discover)
				m, before := c.answer(`"discover-1"`)
				if m.Error != nil || len(before) > 0 {
					t.Fatalf("discover answered %+v after %v; want its result first, with beta still starting", m.Error, before)
				}
				close(gate.open)
				listed, _ = c.answer(`"first-list"`)
			case "http":
				c := h.raw(t)
				req := c.post(strings.NewReader(list))
				for k, v := range modernHeaders(t, list) {
					req.Header.Set(k, v)
				}
				answered := make(chan *http.Response, 1)
				failed := make(chan error, 1)
				go func() {
					resp, err := c.hc.Do(req)
					if err != nil {
						failed <- err
						return
					}
					answered <- resp
				}()
				if m := modernDo(t, c, discover, nil).final(t); m.Error != nil {
					t.Fatalf("discover answered %+v with beta still starting", m.Error)
				}
				close(gate.open)
				select {
				case resp := <-answered:
					defer resp.Body.Close()
					listed = readResp(t, resp).final(t)
				case err := <-failed:
					t.Fatalf("tools/list: %v", err)
				}
			}
			var res mcp.ListToolsResult
			if err := json.Unmarshal(listed.Result, &res); err != nil {
				t.Fatalf("tools/list answered %s: %v", listed.Result, err)
			}
			var names []string
			for _, tl := range res.Tools {
				names = append(names, tl.Name)
			}
			if !slices.Contains(names, "alpha__echo") || !slices.Contains(names, "beta__echo") {
				t.Errorf("the first tools/list, sent while beta was starting, lists %v; want both upstreams' tools", names)
			}
		})
	}
}
