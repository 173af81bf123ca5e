package gateway_test

// A stateless client's retry of a parked call that reaches another replica (gateway/replica.go): the replica it
// reaches forwards it to the one that parked the call, named in the signed requestState, and relays the answer.

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/gateway"
	"github.com/switchboard-mcp/switchboard/routing"
	"github.com/switchboard-mcp/switchboard/routing/state"
	"github.com/switchboard-mcp/switchboard/upstream"
)

// askingUpstream is a stateful (legacy) SDK server with one tool that elicits a name, spoken to in the legacy
// era: its elicitation is a server→client request the gateway parks for stateless clients.
func askingUpstream(t *testing.T) routing.UpstreamConfig {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "asking", Version: "1.0.0"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "ask"}, func(ctx context.Context, req *mcp.CallToolRequest, _ any) (*mcp.CallToolResult, any, error) {
		res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "name?", RequestedSchema: askNameSchema})
		if err != nil {
			return errText("elicit failed: " + err.Error()), nil, nil
		}
		return text("hello " + res.Content["name"].(string)), nil, nil
	})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(func() { ts.CloseClientConnections(); ts.Close() })
	tr, err := upstream.NewTransport(upstream.Spec{Name: "asking", URL: ts.URL, Logger: testLogger(), Protocol: upstream.ProtocolLegacy})
	if err != nil {
		t.Fatal(err)
	}
	return routing.UpstreamConfig{Name: "asking", Prefix: "", Mode: routing.PerClient, Transport: tr, Kind: "http", Protocol: upstream.ProtocolLegacy}
}

// postModern sends one 2026-07-28 tools/call and returns the decoded response.
func postModern(t *testing.T, endpoint string, id int, params map[string]any) (int, map[string]json.RawMessage) {
	t.Helper()
	params["_meta"] = map[string]any{
		"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
		"io.modelcontextprotocol/clientCapabilities": map[string]any{"elicitation": map[string]any{"form": map[string]any{}}},
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
	req, _ := http.NewRequestWithContext(ctxGuard(t), http.MethodPost, endpoint, strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", params["name"].(string))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", endpoint, err)
	}
	defer resp.Body.Close()
	r := readResp(t, resp)
	var msg map[string]json.RawMessage
	if len(r.msgs) == 0 || json.Unmarshal(r.msgs[len(r.msgs)-1], &msg) != nil {
		t.Fatalf("no JSON-RPC answer from %s (HTTP %d): %s", endpoint, r.status, r.body)
	}
	return r.status, msg
}

// TestRetryOnAnotherReplica: replica A parks the call and answers input_required; the retry goes to replica B,
// which sends it to A; the client gets the answer through B. Without the forward B would not know the call.
func TestRetryOnAnotherReplica(t *testing.T) {
	secret := []byte(strings.Repeat("k", 32))
	// A's advertised URL must be known before A starts: a small proxy stands for it and learns A's address after.
	var target atomic.Pointer[url.URL]
	var forwarded atomic.Int32
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Switchboard-Forwarded") != "" {
			forwarded.Add(1)
		}
		httputil.NewSingleHostReverseProxy(target.Load()).ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)
	up := askingUpstream(t)
	registry := state.NewMemory() // the shared store, where each replica registers its address
	a := startGateway(t, routing.Options{CursorSecret: secret, Replica: front.URL + "/mcp", Replicas: registry}, gateway.Options{}, up)
	u, _ := url.Parse(a.ts.URL)
	target.Store(u)
	b := startGateway(t, routing.Options{CursorSecret: secret, Replica: "http://replica-b.invalid/mcp", Replicas: registry}, gateway.Options{}, askingUpstream(t))
	waitRegistered(t, registry, front.URL+"/mcp")

	status, first := postModern(t, a.url, 1, map[string]any{"name": "ask", "arguments": map[string]any{}})
	var ir struct {
		ResultType    string                     `json:"resultType"`
		InputRequests map[string]json.RawMessage `json:"inputRequests"`
		RequestState  string                     `json:"requestState"`
	}
	if status != http.StatusOK || json.Unmarshal(first["result"], &ir) != nil || ir.ResultType != "input_required" || len(ir.InputRequests) != 1 {
		t.Fatalf("first call: HTTP %d %s, want an input_required result with one input request", status, first["result"])
	}
	var key string
	for k := range ir.InputRequests {
		key = k
	}
	status, second := postModern(t, b.url, 2, map[string]any{
		"name": "ask", "arguments": map[string]any{}, "requestState": ir.RequestState,
		"inputResponses": map[string]any{key: map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}}},
	})
	var done struct {
		ResultType string `json:"resultType"`
		Content    []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	if status != http.StatusOK || json.Unmarshal(second["result"], &done) != nil || done.ResultType != "complete" ||
		len(done.Content) != 1 || done.Content[0].Text != "hello Ada" {
		t.Fatalf("retry through replica B: HTTP %d %s %s, want the complete result \"hello Ada\"", status, second["result"], second["error"])
	}
	if string(second["id"]) != "2" {
		t.Errorf("the answer's id is %s, want the retry's own (2)", second["id"])
	}
	if forwarded.Load() != 1 {
		t.Errorf("%d request(s) reached replica A forwarded by B, want 1", forwarded.Load())
	}
}

// waitRegistered waits until a replica's Run has registered its address.
func waitRegistered(t *testing.T, registry *state.Memory, url string) {
	t.Helper()
	ctx := ctxGuard(t)
	for {
		if ok, _ := registry.ReplicaRegistered(ctx, url); ok {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s never registered", url)
		case <-time.After(time.Millisecond):
		}
	}
}

// TestRetryNeverLeavesForAnUnregisteredAddress: a requestState that names an address no replica registered (what
// anyone holding the cursor secret, or a compromised upstream, could seal) is never followed: the retry is served
// where it lands and fails there, and the caller's token reaches nobody. Replica A here seals a listener of the
// attacker's as its "own" address without registering it.
func TestRetryNeverLeavesForAnUnregisteredAddress(t *testing.T) {
	secret := []byte(strings.Repeat("k", 32))
	var reached atomic.Int32
	var sawToken atomic.Value
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		sawToken.Store(r.Header.Get("Authorization"))
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(evil.Close)
	for _, tc := range []struct {
		name     string
		registry *state.Memory // B's; nil: a gateway without replicas
	}{
		{"single gateway without a registry", nil},
		{"replicas sharing a registry the address is not in", state.NewMemory()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := startGateway(t, routing.Options{CursorSecret: secret, Replica: evil.URL + "/mcp"}, gateway.Options{}, askingUpstream(t))
			bopts := routing.Options{CursorSecret: secret, Replica: "http://replica-b.invalid/mcp"}
			if tc.registry != nil {
				bopts.Replicas = tc.registry
			}
			b := startGateway(t, bopts, gateway.Options{}, askingUpstream(t))
			_, first := postModern(t, a.url, 1, map[string]any{"name": "ask", "arguments": map[string]any{}})
			var ir struct {
				InputRequests map[string]json.RawMessage `json:"inputRequests"`
				RequestState  string                     `json:"requestState"`
			}
			if json.Unmarshal(first["result"], &ir) != nil || ir.RequestState == "" || len(ir.InputRequests) != 1 {
				t.Fatalf("first call: %s, want an input_required result", first["result"])
			}
			status, second := postModern(t, b.url, 2, map[string]any{
				"name": "ask", "arguments": map[string]any{}, "requestState": ir.RequestState,
				"inputResponses": map[string]any{"x": map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}}},
			})
			var e struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			}
			if json.Unmarshal(second["error"], &e) != nil || e.Code != -32602 || !strings.Contains(e.Message, "no longer holds") {
				t.Errorf("retry on B: HTTP %d %s %s, want -32602 saying the call is not held here", status, second["result"], second["error"])
			}
			if n := reached.Load(); n != 0 {
				t.Fatalf("the unregistered address received %d request(s) (Authorization %q)", n, sawToken.Load())
			}
			// The call is still parked on A, which finishes it (and lets its upstream's handler return).
			for k := range ir.InputRequests {
				_, done := postModern(t, a.url, 3, map[string]any{
					"name": "ask", "arguments": map[string]any{}, "requestState": ir.RequestState,
					"inputResponses": map[string]any{k: map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}}},
				})
				if !strings.Contains(string(done["result"]), "hello Ada") {
					t.Errorf("retry on A: %s %s, want the complete result", done["result"], done["error"])
				}
			}
		})
	}
}
