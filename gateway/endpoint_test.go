package gateway_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-mcp/switchboard/gateway"
	"github.com/switchboard-mcp/switchboard/routing"
)

// toolNames lists a client's tools through the SDK (which follows the cursors).
func toolNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	var out []string
	for tool, err := range cs.Tools(ctxGuard(t), nil) {
		if err != nil {
			t.Fatalf("tools/list: %v", err)
		}
		out = append(out, tool.Name)
	}
	slices.Sort(out)
	return out
}

// TestEndpoints: /mcp/<name> serves the endpoint's part of the catalog over streamable HTTP in both eras and over
// the legacy HTTP+SSE twin, with its own paging; an unknown endpoint is 404; a session of one endpoint is not
// found on another; /mcp keeps the whole catalog.
func TestEndpoints(t *testing.T) {
	alpha := newUpstream(t, kindStdio, "alpha", routing.Shared, "")
	beta := newUpstream(t, kindStdio, "beta", routing.Shared, "")
	h := startGateway(t, routing.Options{PageSize: 1, Shape: routing.Shape{Endpoints: []routing.Endpoint{
		{Name: "team-a", Include: []string{"alpha__*"}, Exclude: []string{"alpha__slow"}},
		{Name: "echoes", Include: []string{"*__echo"}},
	}}}, gateway.Options{}, alpha, beta)
	all := toolNames(t, h.connect(t, "whole", nil))
	for _, c := range []struct {
		endpoint string
		want     []string
	}{
		{"team-a", without(filterPrefix(all, "alpha__"), "alpha__slow")},
		{"echoes", []string{"alpha__echo", "beta__echo"}},
	} {
		echo := c.want[slices.IndexFunc(c.want, func(n string) bool { return strings.HasSuffix(n, "__echo") })]
		for _, front := range []string{"streamable", "modern", "sse"} {
			t.Run(c.endpoint+"/"+front, func(t *testing.T) {
				cs := connectAt(t, h.ts.URL+"/mcp/"+c.endpoint, front)
				if got := toolNames(t, cs); !slices.Equal(got, c.want) {
					t.Errorf("lists %v, want %v", got, c.want)
				}
				if got := call(t, cs, echo, map[string]any{"text": "hi"}); got != "hi" {
					t.Errorf("%s answered %q", echo, got)
				}
				if _, err := cs.CallTool(ctxGuard(t), &mcp.CallToolParams{Name: "beta__whoami", Arguments: map[string]any{}}); err == nil {
					t.Error("a tool outside the endpoint was called")
				}
			})
		}
	}
	if len(all) <= 4 {
		t.Fatalf("the whole catalog lists only %v", all)
	}

	const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`
	at := func(path string) *rawClient { c := h.raw(t); c.url = h.ts.URL + path; return c }
	if resp := at("/mcp/nope").do(initialize, nil); resp.status != 404 {
		t.Errorf("an unknown endpoint answered %d, want 404", resp.status)
	}
	// A session opened on team-a is not found on echoes, nor on /mcp.
	teamA := at("/mcp/team-a")
	teamA.initialize(legacyVersion)
	for _, path := range []string{"/mcp/echoes", "/mcp"} {
		c := at(path)
		c.session, c.version = teamA.session, legacyVersion
		if resp := c.do(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, nil); resp.status != 404 {
			t.Errorf("team-a's session on %s answered %d, want 404", path, resp.status)
		}
	}
}

func filterPrefix(names []string, prefix string) []string {
	var out []string
	for _, n := range names {
		if len(n) >= len(prefix) && n[:len(prefix)] == prefix {
			out = append(out, n)
		}
	}
	return out
}

func without(names []string, drop string) []string {
	return slices.DeleteFunc(slices.Clone(names), func(n string) bool { return n == drop })
}

// connectAt connects the SDK client to an MCP URL over a front end: streamable HTTP (legacy era), streamable
// HTTP in the 2026-07-28 era, or legacy HTTP+SSE (url + "/sse").
func connectAt(t *testing.T, url, front string) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "endpoint-test", Version: "1.0.0"}, nil)
	// The SSE transport's stream lives as long as the context it connects with: the test's, not a step's.
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	var tr mcp.Transport
	var so *mcp.ClientSessionOptions
	switch front {
	case "sse":
		tr = &mcp.SSEClientTransport{Endpoint: url + "/sse"}
	case "modern":
		tr = &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1}
	default:
		tr = &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1}
		so = &mcp.ClientSessionOptions{ProtocolVersion: legacyVersion}
	}
	cs, err := c.Connect(ctx, tr, so)
	if err != nil {
		t.Fatalf("connect to %s over %s: %v", url, front, err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}
