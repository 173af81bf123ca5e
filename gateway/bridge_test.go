//lint:file-ignore SA1019 sampling is deprecated in 2026-07-28 but still part of the protocol; bridging it is what these tests exercise.

package gateway_test

// The input_required bridge the other way round (routing/bridge.go): a stateless 2026-07-28 upstream asks for
// input by answering input_required, and a legacy (2025-11-25) Go SDK client behind the gateway sees ordinary
// server→client requests on its call's stream; the gateway retries the call upstream with the answers.

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/gateway"
	"github.com/switchboard-mcp/switchboard/routing"
	"github.com/switchboard-mcp/switchboard/upstream"
)

// askNameSchema is the form the test tools' elicitations ask for: one string, "name".
var askNameSchema = map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}

// mrtrServer is a stateless SDK server whose tools ask for input the 2026-07-28 way: "greet" elicits a name,
// "capital" asks for a sample, "both" asks for the two in one round, "twice" asks in two rounds, carrying the
// first answer in its requestState.
func mrtrServer(t *testing.T) (routing.UpstreamConfig, *mrtrCounter) {
	t.Helper()
	counter := &mrtrCounter{}
	srv := mcp.NewServer(&mcp.Implementation{Name: "mrtr", Version: "1.0.0"}, nil)
	elicitName := func(msg string) *mcp.ElicitParams {
		return &mcp.ElicitParams{Message: msg, RequestedSchema: askNameSchema}
	}
	sampleOf := func(q string) *mcp.CreateMessageParams {
		return &mcp.CreateMessageParams{Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: q}}}, MaxTokens: 8}
	}
	nameOf := func(r mcp.InputResponseMap, key string) (string, bool) {
		e, ok := r[key].(*mcp.ElicitResult)
		if !ok || e == nil || e.Action != "accept" {
			return "", false
		}
		n, _ := e.Content["name"].(string)
		return n, n != ""
	}
	sampledOf := func(r mcp.InputResponseMap, key string) (string, bool) {
		s, ok := r[key].(*mcp.CreateMessageWithToolsResult)
		if !ok || s == nil {
			return "", false
		}
		for _, c := range s.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				return tc.Text, true
			}
		}
		return "", false
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "greet"}, func(_ context.Context, req *mcp.CallToolRequest, _ any) (*mcp.CallToolResult, any, error) {
		counter.add()
		if n, ok := nameOf(req.Params.InputResponses, "who"); ok {
			return text("hello " + n), nil, nil
		}
		return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"who": elicitName("your name?")}}, nil, nil
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "capital"}, func(_ context.Context, req *mcp.CallToolRequest, _ any) (*mcp.CallToolResult, any, error) {
		counter.add()
		if s, ok := sampledOf(req.Params.InputResponses, "q"); ok {
			return text("capital: " + s), nil, nil
		}
		return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"q": sampleOf("capital of France?")}}, nil, nil
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "both"}, func(_ context.Context, req *mcp.CallToolRequest, _ any) (*mcp.CallToolResult, any, error) {
		counter.add()
		n, okN := nameOf(req.Params.InputResponses, "who")
		s, okS := sampledOf(req.Params.InputResponses, "q")
		if okN && okS {
			return text(n + " / " + s), nil, nil
		}
		return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"who": elicitName("your name?"), "q": sampleOf("a word?")}}, nil, nil
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "twice"}, func(_ context.Context, req *mcp.CallToolRequest, _ any) (*mcp.CallToolResult, any, error) {
		counter.add()
		switch st := req.Params.RequestState; {
		case st == "":
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"first": elicitName("first?")}, RequestState: "round1"}, nil, nil
		case st == "round1":
			n, _ := nameOf(req.Params.InputResponses, "first")
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"second": elicitName("second?")}, RequestState: "round2:" + n}, nil, nil
		default:
			n, _ := nameOf(req.Params.InputResponses, "second")
			return text(strings.TrimPrefix(st, "round2:") + " then " + n), nil, nil
		}
	})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(ts.Close)
	tr, err := upstream.NewTransport(upstream.Spec{Name: "mrtr", URL: ts.URL, Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	return routing.UpstreamConfig{Name: "mrtr", Prefix: "mrtr__", Mode: routing.PerClient, Transport: tr, Kind: "http"}, counter
}

// mrtrCounter counts the upstream's tool invocations (each round is one).
type mrtrCounter struct {
	mu sync.Mutex
	n  int
}

func (c *mrtrCounter) add() { c.mu.Lock(); c.n++; c.mu.Unlock() }

func (c *mrtrCounter) count() int { c.mu.Lock(); defer c.mu.Unlock(); return c.n }

// TestStatelessUpstreamBridge: a legacy client calls a stateless upstream's tools that ask for input; it answers
// elicitation and sampling requests as from any legacy server, and gets the results the upstream computed from
// its answers, one upstream round per input round.
func TestStatelessUpstreamBridge(t *testing.T) {
	up, counter := mrtrServer(t)
	h := startGateway(t, routing.Options{}, gateway.Options{}, up)
	var mu sync.Mutex
	var asked []string
	elicits := 0 // names are Ada<n>, n counting elicitations only: samples of the same round come in any order
	cs := h.connect(t, "legacy", &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			mu.Lock()
			asked = append(asked, "elicit "+req.Params.Message)
			elicits++
			n := elicits
			mu.Unlock()
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": fmt.Sprintf("Ada%d", n)}}, nil
		},
		CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			mu.Lock()
			asked = append(asked, "sample")
			mu.Unlock()
			return &mcp.CreateMessageResult{Model: "m", Role: "assistant", Content: &mcp.TextContent{Text: "Paris"}}, nil
		},
	})
	if v := cs.InitializeResult().ProtocolVersion; v != legacyVersion {
		t.Fatalf("the client negotiated %q, want the legacy %q", v, legacyVersion)
	}
	for _, tc := range []struct {
		tool, want string
		rounds     int // upstream invocations for the call
		asks       int // requests the client answered
	}{
		{"greet", "hello Ada1", 2, 1},
		{"capital", "capital: Paris", 2, 1},
		{"both", "Ada2 / Paris", 2, 2},
		{"twice", "Ada3 then Ada4", 3, 2},
	} {
		mu.Lock()
		before, calls := len(asked), counter.count()
		mu.Unlock()
		if got := call(t, cs, "mrtr__"+tc.tool, map[string]any{}); got != tc.want {
			t.Errorf("%s answered %q, want %q", tc.tool, got, tc.want)
		}
		mu.Lock()
		gotAsks := len(asked) - before
		mu.Unlock()
		if gotAsks != tc.asks || counter.count()-calls != tc.rounds {
			t.Errorf("%s: the client answered %d request(s) and the upstream ran %d time(s), want %d and %d",
				tc.tool, gotAsks, counter.count()-calls, tc.asks, tc.rounds)
		}
	}
}

// TestStatelessUpstreamBridgeRefused: a legacy client that did not declare elicitation gets an error naming the
// missing capability, not a request it cannot answer.
func TestStatelessUpstreamBridgeRefused(t *testing.T) {
	up, _ := mrtrServer(t)
	h := startGateway(t, routing.Options{}, gateway.Options{}, up)
	cs := h.connect(t, "no-elicitation", nil)
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "mrtr__greet", Arguments: map[string]any{}})
	if err == nil || !strings.Contains(err.Error(), "elicitation") {
		t.Fatalf("CallTool = %v, want an error about the elicitation capability", err)
	}
}

// TestStatelessUpstreamBridgeCancel: a legacy client that cancels its call while the gateway asks it for a
// stateless upstream's input sees the gateway's request cancelled too (its handler's context ends), as a legacy
// server would cancel its own request.
func TestStatelessUpstreamBridgeCancel(t *testing.T) {
	up, _ := mrtrServer(t)
	h := startGateway(t, routing.Options{}, gateway.Options{}, up)
	asked, stopped := make(chan struct{}), make(chan struct{})
	cs := h.connect(t, "cancelling", &mcp.ClientOptions{
		ElicitationHandler: func(ctx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			close(asked)
			select {
			case <-ctx.Done():
				close(stopped)
				return nil, ctx.Err()
			case <-time.After(guard): // the test fails below; do not hold the session's shutdown
				return &mcp.ElicitResult{Action: "decline"}, nil
			}
		},
	})
	ctx, cancel := context.WithCancel(ctxGuard(t))
	errc := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "mrtr__greet", Arguments: map[string]any{}})
		errc <- err
	}()
	select {
	case <-asked:
	case <-ctxGuard(t).Done():
		t.Fatal("the client was never asked for the upstream's input")
	}
	cancel()
	if err := <-errc; err == nil {
		t.Fatal("the cancelled call succeeded")
	}
	select {
	case <-stopped:
	case <-ctxGuard(t).Done():
		t.Fatal("the gateway's request for input was not cancelled with the call")
	}
}
