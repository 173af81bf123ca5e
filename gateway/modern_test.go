//lint:file-ignore SA1019 sampling and roots are deprecated in 2026-07-28 but legacy upstreams use them; bridging them is what these tests exercise.

package gateway_test

// The 2026-07-28 ("modern", stateless) front end on POST /mcp (gateway/modern.go) and the bridge from legacy
// upstreams' server→client requests to input_required results (routing/mrtr.go): the wire checked field by field
// with raw HTTP, and the whole path exercised with the Go SDK on both sides.

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"reflect"
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

// ---------------------------------------------------------------------------------------------------------------
// A legacy upstream that asks its client for input during calls.

type askIn struct {
	Tag string `json:"tag,omitempty"`
}

// nameSchema is the form an elicitation asks for: one string, "name".
var nameSchema = map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}

// addInputTools adds to an SDK server the tools that need the client's input beyond sample and roots (which
// newUpstreamServer has): "elicit" asks for a name; "pair" asks for a name and a sample at the same time. Their
// questions wait at most guard: should a broken gateway never answer them, nor cancel the call, the test fails
// instead of hanging (the SDK's session Close waits for its handlers).
func addInputTools(s *mcp.Server) {
	elicit := func(ctx context.Context, ss *mcp.ServerSession, tag string) (string, error) {
		ctx, cancel := context.WithTimeout(ctx, guard)
		defer cancel()
		res, err := ss.Elicit(ctx, &mcp.ElicitParams{Message: "name for " + tag, RequestedSchema: nameSchema})
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("%s %v", res.Action, res.Content["name"]), nil
	}
	sample := func(ctx context.Context, ss *mcp.ServerSession, tag string) (string, error) {
		ctx, cancel := context.WithTimeout(ctx, guard)
		defer cancel()
		res, err := ss.CreateMessage(ctx, &mcp.CreateMessageParams{
			Messages:  []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: tag}}},
			MaxTokens: 16,
		})
		if err != nil {
			return "", err
		}
		tc, _ := res.Content.(*mcp.TextContent)
		if tc == nil {
			return "", fmt.Errorf("sampling returned no text")
		}
		return tc.Text, nil
	}
	mcp.AddTool(s, &mcp.Tool{Name: "elicit", Description: "asks the client for a name"}, func(ctx context.Context, req *mcp.CallToolRequest, in askIn) (*mcp.CallToolResult, any, error) {
		got, err := elicit(ctx, req.Session, in.Tag)
		if err != nil {
			return errText("elicit failed: " + rpcCode(err)), nil, nil
		}
		return text("elicited: " + got), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "pair", Description: "asks for a name and a sample concurrently"}, func(ctx context.Context, req *mcp.CallToolRequest, in askIn) (*mcp.CallToolResult, any, error) {
		var wg sync.WaitGroup
		var name, sampled string
		var errName, errSample error
		wg.Go(func() { name, errName = elicit(ctx, req.Session, in.Tag) })
		wg.Go(func() { sampled, errSample = sample(ctx, req.Session, in.Tag) })
		wg.Wait()
		if errName != nil || errSample != nil {
			return errText(fmt.Sprintf("pair failed: %v / %v", errName, errSample)), nil, nil
		}
		return text("pair: " + name + " + " + sampled), nil, nil
	})
}

// inputUpstream is a stateful SDK server over streamable HTTP with every input-asking tool, one upstream session
// per client, which the gateway talks to in the legacy era (the SDK server would speak 2026-07-28 too): the
// upstream that sends server→client requests.
func inputUpstream(t *testing.T, markers string) (routing.UpstreamConfig, *httpServer) {
	t.Helper()
	cfg, h := httpUpstream(t, "alpha", routing.PerClient, markers)
	addInputTools(h.srv)
	tr, err := upstream.NewTransport(upstream.Spec{Name: cfg.Name, URL: h.ts.URL, Logger: testLogger(), Protocol: upstream.ProtocolLegacy})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Transport, cfg.Protocol = tr, upstream.ProtocolLegacy
	t.Cleanup(func() {
		// A failing test can leave a call waiting for an answer or a cancellation that will not come. Ending the
		// upstream's sessions ends such calls, so that the failure is reported instead of the upstream's shutdown
		// (the httptest server's Close) waiting for them for ever.
		h.mu.Lock()
		sessions := slices.Clone(h.sessions)
		h.mu.Unlock()
		for _, ss := range sessions {
			_ = ss.Close()
		}
	})
	return cfg, h
}

// inputClient counts what its handlers were asked.
type inputClient struct {
	mu      sync.Mutex
	elicits []string
	samples []string
}

func (c *inputClient) elicit(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	c.mu.Lock()
	c.elicits = append(c.elicits, req.Params.Message)
	c.mu.Unlock()
	return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
}

func (c *inputClient) sample(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	prompt := ""
	if len(req.Params.Messages) > 0 {
		if tc, ok := req.Params.Messages[0].Content.(*mcp.TextContent); ok {
			prompt = tc.Text
		}
	}
	c.mu.Lock()
	c.samples = append(c.samples, prompt)
	c.mu.Unlock()
	return &mcp.CreateMessageResult{Model: "test", Role: "assistant", Content: &mcp.TextContent{Text: "sampled " + prompt}}, nil
}

func (c *inputClient) counts() (elicits, samples int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.elicits), len(c.samples)
}

// recorder is an http.RoundTripper that keeps every request body a client sends.
type recorder struct {
	mu     sync.Mutex
	bodies []string
}

func (rc *recorder) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		b, err := io.ReadAll(r.Body)
		r.Body.Close()
		if err != nil {
			return nil, err
		}
		rc.mu.Lock()
		rc.bodies = append(rc.bodies, string(b))
		rc.mu.Unlock()
		r = r.Clone(r.Context())
		r.Body = io.NopCloser(bytes.NewReader(b))
	}
	return http.DefaultTransport.RoundTrip(r)
}

// sent counts the recorded bodies that were JSON-RPC responses, and the tools/call retries echoing a gateway
// requestState.
func (rc *recorder) sent(t *testing.T) (responses, retries int) {
	t.Helper()
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for _, b := range rc.bodies {
		var m struct {
			Method string          `json:"method"`
			Result json.RawMessage `json:"result"`
			Params struct {
				RequestState string `json:"requestState"`
			} `json:"params"`
		}
		if json.Unmarshal([]byte(b), &m) != nil {
			continue
		}
		if m.Method == "" && m.Result != nil {
			responses++
		}
		if m.Method == "tools/call" && strings.HasPrefix(m.Params.RequestState, "sbrs1.") {
			retries++
		}
	}
	return responses, retries
}

// connectRecorded is connectVersion with the client's requests recorded.
func (h *harness) connectRecorded(t *testing.T, name string, opts *mcp.ClientOptions, version string, rec *recorder, roots ...*mcp.Root) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: name, Version: "1.0.0"}, opts)
	c.AddRoots(roots...)
	var so *mcp.ClientSessionOptions
	if version != "" {
		so = &mcp.ClientSessionOptions{ProtocolVersion: version}
	}
	cs, err := c.Connect(ctxGuard(t), &mcp.StreamableClientTransport{Endpoint: h.url, HTTPClient: &http.Client{Transport: rec}, MaxRetries: -1}, so)
	if err != nil {
		t.Fatalf("client %s: connect: %v", name, err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// TestInputBridge: a legacy (stateful) upstream's elicitation, sampling and roots requests during a call, and
// two inputs asked concurrently, reach the Go SDK client whose call caused them, and the call ends with a result
// computed from the client's answers. A 2026-07-28 client (the SDK's default) is asked through input_required
// results and answers by retrying with inputResponses and the gateway's requestState; a 2025-11-25 client still
// gets ordinary server→client requests and answers them with responses. Either way, a client without the
// elicitation capability gets the upstream's refusal instead of an input request.
func TestInputBridge(t *testing.T) {
	for _, era := range []struct {
		name      string
		ask, want string // the version the client asks for ("" for its default) and the one it must get
	}{
		{"modern", "", protocol.Modern},
		{"legacy", legacyVersion, legacyVersion},
	} {
		t.Run(era.name, func(t *testing.T) {
			t.Parallel()
			up, _ := inputUpstream(t, markerSink(t))
			h := startGateway(t, routing.Options{}, gateway.Options{}, up)

			ic, rec := &inputClient{}, &recorder{}
			cs := h.connectRecorded(t, era.name, &mcp.ClientOptions{ElicitationHandler: ic.elicit, CreateMessageHandler: ic.sample}, era.ask, rec,
				&mcp.Root{URI: "file:///work", Name: "work"})
			if v := cs.InitializeResult().ProtocolVersion; v != era.want {
				t.Fatalf("negotiated %q, want %q", v, era.want)
			}
			if st := h.r.Status(); len(st) != 1 || st[0].Protocol != legacyVersion {
				t.Fatalf("upstream status %+v, want the upstream spoken to in %s", st, legacyVersion)
			}
			for _, tc := range []struct {
				tool string
				args any
				want string
			}{
				{"alpha__elicit", askIn{Tag: "q"}, "elicited: accept Ada"},
				{"alpha__sample", tagIn{Tag: "q"}, "sampled: sampled q"},
				{"alpha__roots", empty{}, "roots: work"},
				{"alpha__pair", askIn{Tag: "q"}, "pair: accept Ada + sampled q"},
			} {
				if got := call(t, cs, tc.tool, tc.args); got != tc.want {
					t.Errorf("%s answered %q, want %q", tc.tool, got, tc.want)
				}
			}
			if e, s := ic.counts(); e != 2 || s != 2 {
				t.Errorf("the client was asked %d elicitations and %d samples, want 2 and 2", e, s)
			}
			responses, retries := rec.sent(t)
			if era.want == protocol.Modern && (responses != 0 || retries < 4) {
				t.Errorf("the 2026-07-28 client sent %d responses and %d retries with requestState, want none and at least 4", responses, retries)
			}
			if era.want != protocol.Modern && (responses < 5 || retries != 0) {
				t.Errorf("the 2025-11-25 client sent %d responses and %d retries with requestState, want at least 5 and none", responses, retries)
			}

			bare := &inputClient{}
			cs2 := h.connectVersion(t, "no-elicitation", &mcp.ClientOptions{CreateMessageHandler: bare.sample}, era.ask)
			if got, want := call(t, cs2, "alpha__elicit", askIn{Tag: "q"}), "ERROR: elicit failed: error=client does not support elicitation"; got != want {
				t.Errorf("elicit for a client without the capability answered %q, want the upstream's refusal %q", got, want)
			}
			if e, _ := bare.counts(); e != 0 {
				t.Errorf("a client without the elicitation capability was asked %d elicitations", e)
			}
		})
	}
}

// ---------------------------------------------------------------------------------------------------------------
// Raw 2026-07-28 requests.

const (
	metaVersion = "io.modelcontextprotocol/protocolVersion"
	metaCaps    = "io.modelcontextprotocol/clientCapabilities"
	metaServer  = "io.modelcontextprotocol/serverInfo"
	metaSubID   = "io.modelcontextprotocol/subscriptionId"
)

// b64Header is the spec's encoding of a header value that is not header-safe.
func b64Header(v string) string {
	return "=?base64?" + base64.StdEncoding.EncodeToString([]byte(v)) + "?="
}

// modernHeaders are the headers a correct 2026-07-28 client sends with body: the version, the method, and the
// name or URI of tools/call, prompts/get and resources/read (base64-encoded when not plain ASCII).
func modernHeaders(t *testing.T, body string) map[string]string {
	t.Helper()
	var m struct {
		Method string `json:"method"`
		Params struct {
			Name string `json:"name"`
			URI  string `json:"uri"`
		} `json:"params"`
	}
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		t.Fatalf("bad test body %s: %v", body, err)
	}
	h := map[string]string{"Mcp-Protocol-Version": protocol.Modern, "Mcp-Method": m.Method}
	name := m.Params.Name
	if m.Method == "resources/read" {
		name = m.Params.URI
	}
	if name != "" {
		h["Mcp-Name"] = name
		for _, r := range name {
			if r < 0x20 || r > 0x7e {
				h["Mcp-Name"] = b64Header(name)
				break
			}
		}
	}
	return h
}

// with returns h with edits applied (an empty value removes the header).
func with(h map[string]string, edits map[string]string) map[string]string {
	out := maps.Clone(h)
	for k, v := range edits {
		out[k] = v
	}
	return out
}

// modernBody builds a 2026-07-28 request: params plus the _meta every request of the era carries.
func modernBody(t *testing.T, id any, method string, params map[string]any, caps string) string {
	t.Helper()
	p := maps.Clone(params)
	if p == nil {
		p = map[string]any{}
	}
	meta, _ := p["_meta"].(map[string]any)
	meta = maps.Clone(meta)
	if meta == nil {
		meta = map[string]any{}
	}
	meta[metaVersion] = protocol.Modern
	meta[metaCaps] = json.RawMessage(caps)
	p["_meta"] = meta
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": p})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// modernDo sends a 2026-07-28 request with the headers its body calls for, changed by extra ("" removes one),
// and checks that the answer names no session.
func modernDo(t *testing.T, c *rawClient, body string, extra map[string]string) rawResp {
	t.Helper()
	r := c.do(body, with(modernHeaders(t, body), extra))
	if sid := r.header.Get("Mcp-Session-Id"); sid != "" {
		t.Errorf("a 2026-07-28 answer carries Mcp-Session-Id %q", sid)
	}
	return r
}

// object decodes a JSON object, failing the test when it is not one.
func object(t *testing.T, raw []byte) map[string]json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		t.Fatalf("not a JSON object: %v: %s", err, raw)
	}
	return m
}

// jsonEqual reports whether two JSON texts are the same value.
func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

// checkModernResult checks the fields a complete 2026-07-28 result carries: resultType, the server's identity in
// _meta and, for the cacheable methods, ttlMs and cacheScope.
func checkModernResult(t *testing.T, res json.RawMessage, cacheable bool, scope string) map[string]json.RawMessage {
	t.Helper()
	obj := object(t, res)
	if got := string(obj["resultType"]); got != `"complete"` {
		t.Errorf("resultType = %s, want \"complete\"", got)
	}
	var meta map[string]struct {
		Name string `json:"name"`
	}
	if err := json.Unmarshal(obj["_meta"], &meta); err != nil || meta[metaServer].Name != "switchboard" {
		t.Errorf("_meta[%q] does not name switchboard: %s", metaServer, obj["_meta"])
	}
	ttl, hasTTL := obj["ttlMs"]
	cs, hasScope := obj["cacheScope"]
	if !cacheable {
		if hasTTL || hasScope {
			t.Errorf("a result that is not cacheable carries ttlMs %s / cacheScope %s", ttl, cs)
		}
		return obj
	}
	var n float64
	if err := json.Unmarshal(ttl, &n); err != nil || n < 0 {
		t.Errorf("ttlMs = %s, want a number ≥ 0", ttl)
	}
	if string(cs) != `"`+scope+`"` {
		t.Errorf("cacheScope = %s, want %q", cs, scope)
	}
	return obj
}

// TestModernWire: the 2026-07-28 front end's answers on the wire. Header and _meta checks (-32020, -32602,
// -32022 with the supported and requested versions, all HTTP 400), the removed and unknown methods (404 +
// -32601), resource-not-found as -32602 with data.uri, the base64 form of Mcp-Name, server/discover and the
// decorated results (resultType, ttlMs, cacheScope, serverInfo), notifications (202) and responses (400). Every
// error echoes the request's id, and no answer names a session.
func TestModernWire(t *testing.T) {
	up, _ := httpUpstream(t, "alpha", routing.Shared, markerSink(t))
	h := startGateway(t, routing.Options{}, gateway.Options{}, up)
	c := h.raw(t)
	echoName := "alpha__echo"
	for _, tc := range []struct {
		name   string
		body   string            // file under testdata/modern
		edit   map[string]string // changes to the correct headers ("" removes one)
		status int
		code   int                          // the JSON-RPC error code; 0 for a result
		check  func(t *testing.T, m rpcMsg) // more checks of the answer
	}{
		{name: "discover", body: "discover.json", status: 200, check: func(t *testing.T, m rpcMsg) {
			obj := checkModernResult(t, m.Result, true, "public")
			var versions []string
			_ = json.Unmarshal(obj["supportedVersions"], &versions)
			for _, v := range []string{protocol.Modern, "2025-11-25"} {
				if !slices.Contains(versions, v) {
					t.Errorf("supportedVersions %v lacks %s", versions, v)
				}
			}
			if caps := object(t, obj["capabilities"]); caps["tools"] == nil {
				t.Errorf("capabilities %s lack tools", obj["capabilities"])
			}
		}},
		{name: "tools/list", body: "tools-list.json", status: 200, check: func(t *testing.T, m rpcMsg) {
			obj := checkModernResult(t, m.Result, true, "public")
			var res mcp.ListToolsResult
			if err := json.Unmarshal(m.Result, &res); err != nil || !slices.ContainsFunc(res.Tools, func(tl *mcp.Tool) bool { return tl.Name == echoName }) {
				t.Errorf("tools/list lacks %s: %s", echoName, obj["tools"])
			}
		}},
		{name: "tools/call", body: "echo.json", status: 200, check: func(t *testing.T, m rpcMsg) {
			checkModernResult(t, m.Result, false, "")
			var res mcp.CallToolResult
			if err := json.Unmarshal(m.Result, &res); err != nil || resultText(&res) != "hi" {
				t.Errorf("echo answered %s", m.Result)
			}
		}},
		{name: "Mcp-Name in base64", body: "echo.json", edit: map[string]string{"Mcp-Name": b64Header(echoName)}, status: 200},
		{name: "missing MCP-Protocol-Version", body: "tools-list.json", edit: map[string]string{"Mcp-Protocol-Version": ""}, status: 400, code: -32020},
		{name: "header 2026-07-28, body 2025-11-25", body: "body-2025-11-25.json", status: 400, code: -32020},
		{name: "header 2025-11-25, body 2026-07-28", body: "tools-list.json", edit: map[string]string{"Mcp-Protocol-Version": "2025-11-25"}, status: 400, code: -32020},
		{name: "unsupported version", body: "body-2099-01-01.json", edit: map[string]string{"Mcp-Protocol-Version": "2099-01-01"}, status: 400, code: -32022, check: func(t *testing.T, m rpcMsg) {
			var data struct {
				Supported []string `json:"supported"`
				Requested string   `json:"requested"`
			}
			if err := json.Unmarshal(m.Error.Data, &data); err != nil || data.Requested != "2099-01-01" ||
				!slices.Contains(data.Supported, protocol.Modern) || !slices.Contains(data.Supported, "2025-11-25") {
				t.Errorf("error data %s, want supported versions and requested 2099-01-01", m.Error.Data)
			}
		}},
		{name: "missing _meta", body: "no-meta.json", status: 400, code: -32602},
		{name: "missing clientCapabilities", body: "no-capabilities.json", status: 400, code: -32602},
		{name: "capabilities over 16 KiB", body: "huge-capabilities.json", status: 400, code: -32602, check: func(t *testing.T, m rpcMsg) {
			if !strings.Contains(m.Error.Message, "at most 16384") {
				t.Errorf("message %q does not name the limit", m.Error.Message)
			}
		}},
		{name: "client info over 16 KiB", body: "huge-clientinfo.json", status: 400, code: -32602, check: func(t *testing.T, m rpcMsg) {
			if !strings.Contains(m.Error.Message, "clientInfo") || !strings.Contains(m.Error.Message, "at most 16384") {
				t.Errorf("message %q does not name the member and the limit", m.Error.Message)
			}
		}},
		{name: "missing Mcp-Method", body: "tools-list.json", edit: map[string]string{"Mcp-Method": ""}, status: 400, code: -32020},
		{name: "Mcp-Method mismatch", body: "tools-list.json", edit: map[string]string{"Mcp-Method": "prompts/list"}, status: 400, code: -32020},
		{name: "missing Mcp-Name", body: "echo.json", edit: map[string]string{"Mcp-Name": ""}, status: 400, code: -32020},
		{name: "Mcp-Name mismatch", body: "echo.json", edit: map[string]string{"Mcp-Name": "alpha__whoami"}, status: 400, code: -32020},
		{name: "Mcp-Name mismatch in base64", body: "echo.json", edit: map[string]string{"Mcp-Name": b64Header("alpha__whoami")}, status: 400, code: -32020},
		{name: "Mcp-Name bad base64", body: "echo.json", edit: map[string]string{"Mcp-Name": "=?base64?!!!?="}, status: 400, code: -32020},
		{name: "initialize is removed", body: "initialize.json", status: 404, code: -32601},
		{name: "ping is removed", body: "ping.json", status: 404, code: -32601},
		{name: "logging/setLevel is removed", body: "set-level.json", status: 404, code: -32601},
		{name: "resources/subscribe is removed", body: "subscribe.json", status: 404, code: -32601},
		{name: "unknown method", body: "unknown-method.json", status: 404, code: -32601},
		{name: "unknown resource", body: "read-unknown.json", status: 400, code: -32602, check: func(t *testing.T, m rpcMsg) {
			var data struct {
				URI string `json:"uri"`
			}
			if err := json.Unmarshal(m.Error.Data, &data); err != nil || data.URI != "file:///nowhere/ünïcode.txt" {
				t.Errorf("error data %s, want the uri", m.Error.Data)
			}
		}},
		{name: "notification", body: "notification.json", status: 202},
		{name: "response", body: "response.json", status: 400, code: -32600},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := readTestdata(t, "modern/"+tc.body)
			r := modernDo(t, c, body, tc.edit)
			if r.status != tc.status {
				t.Fatalf("HTTP %d, want %d: %s", r.status, tc.status, r.body)
			}
			if tc.status == http.StatusAccepted {
				if len(bytes.TrimSpace(r.body)) > 0 {
					t.Errorf("202 with a body: %s", r.body)
				}
				return
			}
			if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
				t.Errorf("Content-Type %q, want JSON", ct)
			}
			m := r.final(t)
			if want := object(t, []byte(body))["id"]; !bytes.Equal(m.ID, want) {
				t.Errorf("answer id %s, want the request's %s", m.ID, want)
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

// ---------------------------------------------------------------------------------------------------------------
// Multi round-trip over raw HTTP.

// userKey carries headerAuth's caller in a request's context.
type userKey struct{}

// headerAuth is a stand-in authenticator: the caller is whoever the X-Test-User header names. It gives the
// front end principals without an OAuth issuer; the real resource server is exercised in auth_test.go.
type headerAuth struct{}

func (headerAuth) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), userKey{}, r.Header.Get("X-Test-User"))))
	})
}

func (headerAuth) MetadataHandler() http.Handler { return http.NotFoundHandler() }
func (headerAuth) MetadataPath() string          { return "/.well-known/oauth-protected-resource/mcp" }

func headerIdentity(ctx context.Context) gateway.Identity {
	u, _ := ctx.Value(userKey{}).(string)
	return gateway.Identity{Key: u}
}

// inputCaps are the capabilities of the raw clients that can be asked for input.
const inputCaps = `{"elicitation":{"form":{}},"sampling":{},"roots":{}}`

// inputRequired checks an input_required result and returns its input requests and requestState.
func inputRequired(t *testing.T, r rawResp) (map[string]json.RawMessage, string) {
	t.Helper()
	if r.status != http.StatusOK {
		t.Fatalf("HTTP %d, want 200: %s", r.status, r.body)
	}
	m := r.final(t)
	if m.Error != nil {
		t.Fatalf("error %d %s, want an input_required result", m.Error.Code, m.Error.Message)
	}
	obj := object(t, m.Result)
	if string(obj["resultType"]) != `"input_required"` {
		t.Fatalf("resultType %s, want input_required: %s", obj["resultType"], m.Result)
	}
	if _, ok := obj["ttlMs"]; ok {
		t.Errorf("an input_required result carries ttlMs: %s", m.Result)
	}
	var state string
	if err := json.Unmarshal(obj["requestState"], &state); err != nil || !strings.HasPrefix(state, "sbrs1.") {
		t.Fatalf("requestState %s, want the gateway's", obj["requestState"])
	}
	return object(t, obj["inputRequests"]), state
}

// rejected checks that a request was refused with HTTP 400 and -32602, echoing its id.
func rejected(t *testing.T, r rawResp, id string) {
	t.Helper()
	if r.status != http.StatusBadRequest {
		t.Fatalf("HTTP %d, want 400: %s", r.status, r.body)
	}
	m := r.final(t)
	if m.Error == nil || m.Error.Code != -32602 {
		t.Fatalf("answer %s, want error -32602", r.body)
	}
	if string(m.ID) != `"`+id+`"` {
		t.Errorf("answer id %s, want %q", m.ID, id)
	}
}

// flipLast changes the last character of s.
func flipLast(s string) string {
	last := s[len(s)-1]
	repl := byte('A')
	if last == 'A' {
		repl = 'B'
	}
	return s[:len(s)-1] + string(repl)
}

// bumpRound alters the sealed payload of a gateway requestState (one byte of its ciphertext), keeping the tag:
// the state is opaque to clients, so this is what a client that wants another round can do.
func bumpRound(t *testing.T, state string) string {
	t.Helper()
	// "sbrs1.<key id>.<nonce and ciphertext>.<tag>"
	parts := strings.Split(state, ".")
	if len(parts) != 4 {
		t.Fatalf("requestState %q has %d parts, want 4", state, len(parts))
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil || len(raw) < 14 {
		t.Fatalf("requestState body: %v (%d bytes)", err, len(raw))
	}
	raw[13] ^= 1 // past the 12-byte nonce: the ciphertext
	parts[2] = base64.RawURLEncoding.EncodeToString(raw)
	return strings.Join(parts, ".")
}

// TestModernRequestState: the requestState of an input_required result resumes the parked upstream call only
// for the caller it was issued to, for the same tool, in its current round. An altered state (its MAC, or its
// payload under the old MAC), another principal's replay and a retry naming another tool are refused with
// -32602 and leave the parked call alone; a retry that leaves an input unanswered gets a fresh input_required
// (a new round, which retires the old state); the right answer completes the call, after which the state is
// spent.
func TestModernRequestState(t *testing.T) {
	up, _ := inputUpstream(t, markerSink(t))
	h := startGateway(t, routing.Options{}, gateway.Options{Auth: headerAuth{}, Identify: headerIdentity}, up)
	c := h.raw(t)
	as := func(user string) map[string]string { return map[string]string{"X-Test-User": user} }
	callElicit := func(id, tool, state string, responses map[string]any) string {
		p := map[string]any{"name": tool, "arguments": map[string]any{"tag": "rs"}}
		if state != "" {
			p["requestState"], p["inputResponses"] = state, responses
		}
		return modernBody(t, id, "tools/call", p, inputCaps)
	}

	asks, state := inputRequired(t, modernDo(t, c, callElicit("first", "alpha__elicit", "", nil), as("alice")))
	if len(asks) != 1 {
		t.Fatalf("input requests %v, want one", slices.Collect(maps.Keys(asks)))
	}
	var key string
	for k, v := range asks {
		key = k
		var ask struct {
			Method string `json:"method"`
			Params struct {
				Message string `json:"message"`
			} `json:"params"`
		}
		if err := json.Unmarshal(v, &ask); err != nil || ask.Method != "elicitation/create" || ask.Params.Message != "name for rs" {
			t.Fatalf("input request %s = %s, want the upstream's elicitation", k, v)
		}
	}
	answer := map[string]any{key: map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}}}

	for _, tc := range []struct {
		name, user, tool, state string
	}{
		{"altered MAC", "alice", "alpha__elicit", flipLast(state)},
		{"altered payload", "alice", "alpha__elicit", bumpRound(t, state)},
		{"another principal", "mallory", "alpha__elicit", state},
		{"another tool", "alice", "alpha__echo", state},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rejected(t, modernDo(t, c, callElicit("bad", tc.tool, tc.state, answer), as(tc.user)), "bad")
		})
	}

	asks2, state2 := inputRequired(t, modernDo(t, c, callElicit("unanswered", "alpha__elicit", state, map[string]any{}), as("alice")))
	if !slices.Equal(slices.Sorted(maps.Keys(asks2)), []string{key}) || !jsonEqual(asks2[key], asks[key]) {
		t.Errorf("a retry without the answer got input requests %v, want %q again", asks2, key)
	}
	if state2 == state {
		t.Errorf("the new round reuses the old requestState")
	}
	rejected(t, modernDo(t, c, callElicit("stale", "alpha__elicit", state, answer), as("alice")), "stale")

	r := modernDo(t, c, callElicit("answered", "alpha__elicit", state2, answer), as("alice"))
	if r.status != http.StatusOK {
		t.Fatalf("the answered retry: HTTP %d: %s", r.status, r.body)
	}
	m := r.final(t)
	if m.Error != nil || string(m.ID) != `"answered"` {
		t.Fatalf("the answered retry got %s", r.body)
	}
	checkModernResult(t, m.Result, false, "")
	var res mcp.CallToolResult
	if err := json.Unmarshal(m.Result, &res); err != nil || resultText(&res) != "elicited: accept Ada" {
		t.Errorf("the answered retry got %s, want the upstream's result from the answer", m.Result)
	}
	rejected(t, modernDo(t, c, callElicit("again", "alpha__elicit", state2, answer), as("alice")), "again")

	// With callers authenticated but no policy, a list is what everyone sees (public, TestListCacheHints); a
	// resource read may use the caller's own upstream credentials, so it is private.
	lr := modernDo(t, c, modernBody(t, "list", "tools/list", nil, inputCaps), as("alice"))
	if lr.status != http.StatusOK {
		t.Fatalf("tools/list: HTTP %d: %s", lr.status, lr.body)
	}
	checkModernResult(t, lr.final(t).Result, true, "public")
}

// ---------------------------------------------------------------------------------------------------------------
// Streams.

// headerTransport sets (or, for "", removes) headers on every request: it turns rawClient.open into a
// 2026-07-28 client.
type headerTransport map[string]string

func (ht headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range ht {
		if v == "" {
			r.Header.Del(k)
		} else {
			r.Header.Set(k, v)
		}
	}
	return http.DefaultTransport.RoundTrip(r)
}

// openModern sends a correct 2026-07-28 request whose answer is read as a stream.
func (h *harness) openModern(t *testing.T, body string) *stream {
	t.Helper()
	hdr := with(modernHeaders(t, body), map[string]string{"Mcp-Session-Id": ""})
	c := &rawClient{t: t, url: h.url, hc: &http.Client{Transport: headerTransport(hdr)}}
	s := c.open(http.MethodPost, body)
	if sid := s.resp.Header.Get("Mcp-Session-Id"); sid != "" {
		t.Errorf("a 2026-07-28 stream carries Mcp-Session-Id %q", sid)
	}
	return s
}

// TestModernStreamCloseCancels: closing the SSE stream of a 2026-07-28 call is its cancellation: the upstream's
// handler sees its context cancelled, and the client's next call is served as usual.
func TestModernStreamCloseCancels(t *testing.T) {
	md := markerSink(t)
	up, _ := inputUpstream(t, md)
	h := startGateway(t, routing.Options{}, gateway.Options{}, up)

	s := h.openModern(t, modernBody(t, "slow-1", "tools/call", map[string]any{
		"name": "alpha__slow", "arguments": map[string]any{"tag": "modern-close"}, "_meta": map[string]any{"progressToken": "p1"},
	}, `{}`))
	if ct := s.resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("Content-Type %q, want an SSE stream", ct)
	}
	first, ok := s.next(t)
	if !ok {
		t.Fatal("the stream ended before the call's progress")
	}
	var p struct {
		Method string `json:"method"`
		Params struct {
			ProgressToken string `json:"progressToken"`
		} `json:"params"`
	}
	if err := json.Unmarshal(first, &p); err != nil || p.Method != "notifications/progress" || p.Params.ProgressToken != "p1" {
		t.Fatalf("first message %s, want the call's progress under token p1", first)
	}
	s.resp.Body.Close()
	waitMarker(t, md, "cancel-modern-close")

	r := modernDo(t, h.raw(t), readTestdata(t, "modern/echo.json"), nil)
	if m := r.final(t); m.Error != nil {
		t.Errorf("echo after the cancellation: %s", r.body)
	}
}

// listenBody is a subscriptions/listen request for the notifications filter.
func listenBody(t *testing.T, id any, filter map[string]any) string {
	t.Helper()
	return modernBody(t, id, "subscriptions/listen", map[string]any{"notifications": filter}, `{}`)
}

// notice is a notification read from a listen stream.
type notice struct {
	Method string `json:"method"`
	Params struct {
		Meta          map[string]json.RawMessage `json:"_meta"`
		Notifications json.RawMessage            `json:"notifications"`
	} `json:"params"`
}

// nextNotice reads a listen stream's next message and checks that it is method, tagged with subscription id.
func nextNotice(t *testing.T, s *stream, method, id string) notice {
	t.Helper()
	raw, ok := s.next(t)
	if !ok {
		t.Fatalf("the listen stream %s ended before %s", id, method)
	}
	var n notice
	if err := json.Unmarshal(raw, &n); err != nil || n.Method != method {
		t.Fatalf("listen stream %s: got %s, want %s", id, raw, method)
	}
	if got := n.Params.Meta[metaSubID]; string(got) != id {
		t.Errorf("listen stream %s: %s carries subscriptionId %s, want the listen request's id", id, method, got)
	}
	return n
}

// TestModernListen: subscriptions/listen first acknowledges the filter it honours, tagged with the listen
// request's id as subscriptionId, then carries the list changes the filter asked for, each tagged the same
// way, and nothing else: a stream asking for tools hears the upstream's new tool and not its new prompt, one
// asking for prompts the reverse. (A listen stream is FIFO and the changes come from the one upstream in
// order, so the absence of the other kind is checked without waiting.)
func TestModernListen(t *testing.T) {
	up, hs := httpUpstream(t, "alpha", routing.Shared, markerSink(t))
	promptHandler := func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "p"}}}}, nil
	}
	hs.srv.AddPrompt(&mcp.Prompt{Name: "p0"}, promptHandler)
	h := startGateway(t, routing.Options{}, gateway.Options{}, up)

	tools := h.openModern(t, listenBody(t, "listen-tools", map[string]any{"toolsListChanged": true}))
	prompts := h.openModern(t, listenBody(t, 42, map[string]any{"promptsListChanged": true}))
	for _, l := range []struct {
		s      *stream
		id     string
		filter string
	}{{tools, `"listen-tools"`, `{"toolsListChanged":true}`}, {prompts, `42`, `{"promptsListChanged":true}`}} {
		ack := nextNotice(t, l.s, "notifications/subscriptions/acknowledged", l.id)
		if !jsonEqual(ack.Params.Notifications, []byte(l.filter)) {
			t.Errorf("listen stream %s acknowledged %s, want %s", l.id, ack.Params.Notifications, l.filter)
		}
	}

	addTool := func(name string) {
		mcp.AddTool(hs.srv, &mcp.Tool{Name: name}, func(context.Context, *mcp.CallToolRequest, empty) (*mcp.CallToolResult, any, error) {
			return text(name), nil, nil
		})
	}
	addTool("added1")
	nextNotice(t, tools, "notifications/tools/list_changed", `"listen-tools"`)
	hs.srv.AddPrompt(&mcp.Prompt{Name: "p1"}, promptHandler)
	nextNotice(t, prompts, "notifications/prompts/list_changed", `42`)
	addTool("added2")
	nextNotice(t, tools, "notifications/tools/list_changed", `"listen-tools"`)
}
